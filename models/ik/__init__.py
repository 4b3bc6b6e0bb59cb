"""Inverse geometric models: numerical (stacked frame tasks) and closed form."""
