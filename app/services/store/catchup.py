"""What a live stream sends a client that has fallen behind: the same events, with each
run of text pieces of one message joined into one.

A client that keeps up finds one event at a time in its queue and gets it as it was
stored. One that falls behind a flood (a slow link, a busy tab, or the server itself
busy with the flood) finds many, and one frame per piece would keep it, and the server,
behind for as long as the flood lasts. Joined, every piece's text still arrives once and
in order; the joined event carries the last piece's ``seq`` and says how many stored
events it stands for (``joined``: their seqs are the ones just before its own), so a
reconnect resumes after everything it holds, and a replay from the log
(``Last-Event-ID``) gives the pieces exactly as they were stored.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.services.store.records import StoredEvent, encode_payload

JOINED_KIND = "text_delta"
# How many stored events a joined one stands for: their seqs end at its own.
JOINED_FIELD = "joined"


def join_text_runs(events: Sequence[StoredEvent]) -> list[StoredEvent]:
    """``events`` with each run of text pieces that differ only in their text joined."""
    out: list[StoredEvent] = []
    run: list[StoredEvent] = []
    for event in events:
        joinable = event.kind == JOINED_KIND and isinstance(event.payload.get("text"), str)
        if joinable and (not run or _same_message(run[0], event)):
            run.append(event)
            continue
        _end_run(run, out)
        if joinable:
            run.append(event)
        else:
            out.append(event)
    _end_run(run, out)
    return out


def _same_message(a: StoredEvent, b: StoredEvent) -> bool:
    rest_a = {k: v for k, v in a.payload.items() if k != "text"}
    rest_b = {k: v for k, v in b.payload.items() if k != "text"}
    return rest_a == rest_b


def _end_run(run: list[StoredEvent], out: list[StoredEvent]) -> None:
    if len(run) == 1:
        out.append(run[0])
    elif run:
        last = run[-1]
        text = "".join(e.payload["text"] for e in run)
        payload = {**last.payload, "text": text, JOINED_FIELD: len(run)}
        out.append(
            StoredEvent(
                last.session_id, last.seq, last.kind, last.created, encode_payload(payload), payload
            )
        )
    run.clear()
