"""Ethernet POWERLINK (EPSG DS 301): frames, PDO mapping, NMT, threshold counters, MN and CN."""
