"""The daemon: what runs on the robot (loop process, I/O process, shared memory, config, codes)."""
