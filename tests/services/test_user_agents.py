"""User-Agents as the names the Signed-in browsers page shows, from real browsers' strings."""

from __future__ import annotations

import pytest

from app.services.access.user_agents import describe

CHROME_LINUX = (
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/126.0.0.0 Safari/537.36"
)
SAFARI_IPHONE = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1"
)
SAFARI_MAC = (
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Version/17.5 Safari/605.1.15"
)
FIREFOX_WINDOWS = "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:127.0) Gecko/20100101 Firefox/127.0"
EDGE_WINDOWS = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/126.0.0.0 Safari/537.36 Edg/126.0.2592.68"
)
CHROME_ANDROID = (
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/126.0.6478.122 Mobile Safari/537.36"
)
CHROME_IPAD = (
    "Mozilla/5.0 (iPad; CPU OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "CriOS/126.0.6478.153 Mobile/15E148 Safari/604.1"
)
OPERA_MAC = (
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/126.0.0.0 Safari/537.36 OPR/111.0.0.0"
)
HEADLESS = (
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "HeadlessChrome/156.0.0.0 Safari/537.36"
)


@pytest.mark.parametrize(
    ("user_agent", "name"),
    [
        (CHROME_LINUX, "Chrome on Linux"),
        (SAFARI_IPHONE, "Safari on iPhone"),
        (SAFARI_MAC, "Safari on macOS"),
        (FIREFOX_WINDOWS, "Firefox on Windows"),
        (EDGE_WINDOWS, "Edge on Windows"),
        (CHROME_ANDROID, "Chrome on Android"),
        (CHROME_IPAD, "Chrome on iPad"),
        (OPERA_MAC, "Opera on macOS"),
        (HEADLESS, "Headless Chrome on Linux"),
        ("curl/8.5.0", "curl"),
        ("python-httpx/0.28.1", "python-httpx"),
        ("Mozilla/5.0 (X11; Linux x86_64)", "Unknown browser on Linux"),
        ("unknown browser", "Unknown browser"),
        ("Browser A", "Unknown browser"),
        ("", "Unknown browser"),
    ],
)
def test_a_user_agent_reads_as_browser_on_system(user_agent: str, name: str) -> None:
    assert describe(user_agent) == name
