"""Looking back: the sessions list, search, imports, terminal sessions, changes, the audit log."""
