"""Draw the app's PNG icons from the one glyph in static/favicon.svg.

The manifest names a 192 and a 512 px icon (Android's launcher and splash screen), a 512 px
"maskable" one whose glyph stays inside the central 80 % circle a launcher may crop to, and
iOS takes a 180 px apple-touch-icon with no transparency (it rounds the corners itself). The
PNGs are committed; run this again only when the glyph changes:

    python scripts/make_icons.py [--chromium /usr/bin/chromium]
"""

from __future__ import annotations

import argparse
import asyncio
import re
from pathlib import Path

from playwright.async_api import async_playwright

STATIC = Path(__file__).resolve().parent.parent / "static"
BLUE = "#0969da"


def glyph() -> str:
    """The favicon's letter path, so that every icon draws the same shape."""
    svg = (STATIC / "favicon.svg").read_text()
    found = re.search(r'<path d="([^"]+)"', svg)
    if found is None:
        raise SystemExit("static/favicon.svg has no <path d=...>")
    return found.group(1)


def drawn(size: int, *, rounded: bool, scale: float) -> str:
    """An SVG page of ``size`` px: the letter at ``scale`` of the favicon's own size,
    centred on the blue square (rounded like the favicon, or full bleed)."""
    radius = 7 if rounded else 0
    offset = 16 * (1 - scale)
    return (
        f'<html><body style="margin:0"><svg xmlns="http://www.w3.org/2000/svg" '
        f'width="{size}" height="{size}" viewBox="0 0 32 32">'
        f'<rect width="32" height="32" rx="{radius}" fill="{BLUE}"/>'
        f'<path transform="translate({offset} {offset}) scale({scale})" d="{glyph()}" '
        'fill="#fff"/></svg></body></html>'
    )


# name: (size, rounded corners, letter scale). The maskable letter is 0.55 of the icon high,
# inside the 0.8 safe circle; the others keep the favicon's proportions.
ICONS = {
    "icon-192.png": (192, True, 1.0),
    "icon-512.png": (512, True, 1.0),
    "icon-maskable-512.png": (512, False, 0.55 / 0.625),
    "apple-touch-icon.png": (180, False, 0.8),
}


async def main(chromium: str) -> None:
    out = STATIC / "icons"
    out.mkdir(exist_ok=True)
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=chromium)
        for name, (size, rounded, scale) in ICONS.items():
            page = await browser.new_page(viewport={"width": size, "height": size})
            await page.set_content(drawn(size, rounded=rounded, scale=scale))
            await page.screenshot(path=str(out / name), omit_background=rounded)
            await page.close()
        await browser.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    asyncio.run(main(parser.parse_args().chromium))
