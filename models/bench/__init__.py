"""Benchmarks of the models against Pinocchio and the thesis figures, measured in one run (printed, not tests)."""
