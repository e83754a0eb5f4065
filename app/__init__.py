"""Angelia: chat with coding-agent CLIs from a browser tab on localhost."""

__version__ = "0.1.0"
