"""Any ACP agent: the client, the session and its helpers, through the official SDK."""
