"""The usage page and its API: cost and tokens by day, model and profile."""
