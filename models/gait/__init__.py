"""Offline walking gait: LIPM preview-control pattern (Kajita et al. 2003), whole-body IK on
the tree models, and the checks a gait file must pass before it is played."""
