"""Robot descriptions from other formats into the robot YAML."""
