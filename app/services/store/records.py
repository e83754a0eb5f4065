"""One stored event, encoded once.

The payload is turned into JSON a single time, when the event is appended; that text is
what SQLite stores and, with the event's own fields added at the end, what every SSE
client of the event receives. Events read back from SQLite keep the stored text as it
is, so replaying them costs no second encoding either.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

EventDict = dict[str, Any]


def iso(at: datetime) -> str:
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    return at.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def encode_payload(payload: dict[str, Any]) -> str:
    # ASCII only: an agent's lone surrogate (half an emoji cut off) stays an escape
    # instead of text that SQLite and UTF-8 sockets cannot take.
    return json.dumps(payload, separators=(",", ":"))


class StoredEvent:
    __slots__ = ("_json", "_payload", "at", "created", "kind", "payload_json", "seq", "session_id")

    def __init__(
        self,
        session_id: str,
        seq: int,
        kind: str,
        created: datetime,
        payload_json: str,
        payload: dict[str, Any] | None = None,
    ) -> None:
        self.session_id = session_id
        self.seq = seq
        self.kind = kind
        self.created = created
        self.at = iso(created)
        self.payload_json = payload_json
        self._payload = payload
        self._json: str | None = None

    @property
    def payload(self) -> dict[str, Any]:
        if self._payload is None:
            decoded = json.loads(self.payload_json)
            self._payload = decoded if isinstance(decoded, dict) else {}
        return self._payload

    @property
    def json(self) -> str:
        """The API shape as JSON: the payload's fields, then seq, session_id, kind and at.

        The event's own fields come last, so they win over payload keys of the same name
        for every JSON reader, as they do in ``as_dict``.
        """
        if self._json is None:
            tail = (
                f'"seq":{self.seq},"session_id":{json.dumps(self.session_id)},'
                f'"kind":{json.dumps(self.kind)},"at":"{self.at}"}}'
            )
            body = self.payload_json.rstrip()[:-1].rstrip()
            self._json = body + ("," if body != "{" else "") + tail
        return self._json

    def stand_in(self, **fields: Any) -> str:
        """The event's own fields (seq, session_id, kind, at) and ``fields`` as JSON, with
        none of its payload: what a stream sends in place of an event too big to send."""
        out: EventDict = dict(fields)
        out.update(seq=self.seq, session_id=self.session_id, kind=self.kind, at=self.at)
        return json.dumps(out, separators=(",", ":"))

    def as_dict(self) -> EventDict:
        out: EventDict = dict(self.payload)
        out.update(seq=self.seq, session_id=self.session_id, kind=self.kind, at=self.at)
        return out
