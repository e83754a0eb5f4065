"""The board of running agents: its page, its JSON and the same prompt in N worktrees."""
