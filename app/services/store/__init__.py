"""What is stored: profiles, sessions, the event log, its writer thread, full-text search."""
