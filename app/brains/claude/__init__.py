"""Claude Code's brain: its stream-json wire, the control protocol and what it reports."""
