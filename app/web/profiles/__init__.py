"""Profiles: their pages and form, the folder picker, the first-run wizard."""
