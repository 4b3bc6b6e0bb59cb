"""Shared vocabulary every package may import: errors, YAML reading and validation, support phases."""
