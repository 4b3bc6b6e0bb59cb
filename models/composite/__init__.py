"""Composite models of robots made of serial sub-robots (Gastebois 2017, ch. 3)."""
