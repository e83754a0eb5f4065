"""Live brains and what the user does to a running session."""
