"""The ACP agents that need behaviour of their own beyond a row in catalog.toml."""
