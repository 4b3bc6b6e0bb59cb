"""Tools around the daemon: the operator client, demos, scenarios, campaigns, benchmarks, plots."""
