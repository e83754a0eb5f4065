"""Looking back: cost, changes, export and import, forks."""
