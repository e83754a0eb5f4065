"""Makes this folder the package app.static, so app/resources.py can find it."""
