"""The loop's reference generators: what produces q_ref, q̇_ref, q̈_ref in each state.

Each generator is an object of its own module (hold, move, squat, playback, stop,
stabilize), preallocated when the loop is built, and answers to

* ``start(t, ...)``: plan from the current reference, between cycles (a command, or the
  previous generator's outcome); it may refuse (the command's error) before anything moves;
* ``sample(t, q_ref, qd_ref, qdd_ref) -> Outcome``: one cycle, written into the loop's
  buffers through the Numba kernels, nothing allocated; ``Outcome.RUNNING`` (0) while it
  runs, then the outcome the state table (``controller.daemon.loop.states.AFTER``) maps to the
  next state.

The loop holds the active generator and switches only between cycles' samples, as the
controller manager of ros2_control switches controllers between ``update`` calls.
"""
