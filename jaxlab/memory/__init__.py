"""Memory experiments: proactive memory values that decide when an agent speaks first."""
