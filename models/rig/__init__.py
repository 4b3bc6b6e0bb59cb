"""The Stewart-Gough ground-motion rig (Staicu 2008): geometry, kinematics, dynamics."""
