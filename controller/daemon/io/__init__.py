"""I/O process and tools: ZMQ commands and telemetry, protocol validation, client, logs."""
