"""Model backends; each is the only place that imports its framework, and only when loaded."""
