"""A stand-in for the ``tailscale`` command: logs its argv, answers ``status --json``.

``FAKE_TAILSCALE_LOG`` is a JSON-lines file each call appends its arguments to;
``FAKE_TAILSCALE_STATUS`` a file whose text ``status --json`` prints; a call whose
arguments contain ``FAKE_TAILSCALE_FAIL`` (when set) fails with a message.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def main() -> int:
    args = sys.argv[1:]
    with open(os.environ["FAKE_TAILSCALE_LOG"], "a", encoding="utf-8") as log:
        log.write(json.dumps(args) + "\n")
    failing = os.environ.get("FAKE_TAILSCALE_FAIL")
    if failing and failing in args:
        print(f"fake tailscale: {failing} refused", file=sys.stderr)
        return 1
    if args[:2] == ["status", "--json"]:
        print(Path(os.environ["FAKE_TAILSCALE_STATUS"]).read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
