"""Makes this folder the package app.migrations, so app/resources.py can find it."""
