"""Claude Code's own JSONL transcripts: read, imported, followed live."""
