"""Kinematic trees rooted at any body: Model/Data, recursive kernels, the whole BIP 2000."""
