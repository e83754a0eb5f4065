"""Makes this folder the package app.templates, so app/resources.py can find it."""
