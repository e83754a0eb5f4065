"""A browser's User-Agent as a name a person recognises: "Chrome on Linux", "Safari on
iPhone". Only shown, never trusted: any browser can send any User-Agent.

The order of the checks matters, because browsers borrow each other's tokens: Edge and
Opera say "Chrome", Chrome says "Safari", an iPad says "like Mac OS X", Android "Linux".
"""

from __future__ import annotations

import re

UNKNOWN = "Unknown browser"

# (token in the User-Agent, the name shown), first match wins.
_BROWSERS: tuple[tuple[str, str], ...] = (
    ("Edg/", "Edge"),
    ("EdgA/", "Edge"),
    ("EdgiOS/", "Edge"),
    ("OPR/", "Opera"),
    ("Opera", "Opera"),
    ("SamsungBrowser/", "Samsung Internet"),
    ("Vivaldi/", "Vivaldi"),
    ("FxiOS/", "Firefox"),
    ("Firefox/", "Firefox"),
    ("CriOS/", "Chrome"),
    ("HeadlessChrome/", "Headless Chrome"),
    ("Chromium/", "Chromium"),
    ("Chrome/", "Chrome"),
)
_SYSTEMS: tuple[tuple[str, str], ...] = (
    ("iPhone", "iPhone"),
    ("iPad", "iPad"),
    ("Android", "Android"),
    ("CrOS", "ChromeOS"),
    ("Windows", "Windows"),
    ("Macintosh", "macOS"),
    ("Mac OS X", "macOS"),
    ("Linux", "Linux"),
)
# A program that names itself first ("curl/8.5.0", "python-httpx/0.28"), not a browser.
_PROGRAM = re.compile(r"([A-Za-z][A-Za-z0-9_.-]{0,40})/\d")


def _browser(user_agent: str) -> str | None:
    for token, name in _BROWSERS:
        if token in user_agent:
            return name
    # Safari names itself only by what the others add to it.
    if "Safari/" in user_agent and "Version/" in user_agent:
        return "Safari"
    if not user_agent.startswith("Mozilla/"):
        program = _PROGRAM.match(user_agent)
        if program:
            return program.group(1)
    return None


def _system(user_agent: str) -> str | None:
    return next((name for token, name in _SYSTEMS if token in user_agent), None)


def describe(user_agent: str) -> str:
    """The browser and its system, as much of them as the User-Agent tells."""
    browser = _browser(user_agent)
    system = _system(user_agent)
    if browser and system:
        return f"{browser} on {system}"
    if browser:
        return browser
    return f"{UNKNOWN} on {system}" if system else UNKNOWN
