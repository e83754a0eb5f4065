"""Which folders' file lists are kept for ``@`` mentions, listed ahead and refreshed.

Listing a large repository takes far longer than a keystroke may (seconds for 100,000
files), so a session's folder starts being listed when the session starts (it is made,
its agent starts, its page opens), in a thread of its own and at a lower priority, so the
composer's first "@" finds the list ready or well under way. A query that arrives while
that first listing runs answers from what it has found so far, marked partial; only a
query that finds nothing found yet waits, for the first part. There is one listing per
folder at a time, whoever asks: sessions sharing a folder share it. A listing nobody needs
any more (every session that started it stopped, and no query asked for it) is stopped,
its git killed.

A kept list is refreshed in the background once a query finds it a few seconds old; a
query only filters the kept list.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

from app.errors import AppError
from app.services.git.repo import GitPlace
from app.services.sessions.file_listing import (
    GIT_TIMEOUT_S,
    Gathering,
    ListingStopped,
    list_folder,
)
from app.services.sessions.files import MAX_RESULTS, FileList

log = logging.getLogger(__name__)

# A folder's list is refreshed when a query finds it older than this.
REFRESH_AFTER_S = 5.0
# Folders whose lists are kept at once (the least recently asked is dropped), and
# first listings run ahead of a query at once: each holds up to MAX_FILES paths.
MAX_FOLDERS = 8

# A folder and the git dir and work tree recorded for it (None outside git).
Folder = tuple[Path, GitPlace | None]


class _Listing:
    """A folder's first listing while it runs."""

    def __init__(self, *, asked: bool) -> None:
        # Set once a first part or the end is there.
        self.ready = threading.Event()
        self.gathering = Gathering(on_part=self.ready.set)
        # The sessions that started it ahead of their first query.
        self.owners: set[str] = set()
        # A query waits on it: it runs to its end whoever stops.
        self.asked = asked
        self.result: FileList | None = None
        self.error: Exception | None = None


class FolderFiles:
    """Each folder's kept list and running first listing; safe to share between threads."""

    def __init__(self, refresh_after: float = REFRESH_AFTER_S) -> None:
        self.refresh_after = refresh_after
        self._lists: OrderedDict[Folder, FileList] = OrderedDict()
        self._listings: dict[Folder, _Listing] = {}
        self._refreshing: set[Folder] = set()
        self._lock = threading.Lock()
        # First listings started so far (each folder's, once per listing).
        self.listings_started = 0

    def cached(self, root: Folder) -> FileList | None:
        """The kept list, starting a background refresh when it is old."""
        with self._lock:
            found = self._lists.get(root)
            if found is not None:
                self._lists.move_to_end(root)
                self._refresh_if_old(root, found)
        return found

    def warm(self, root: Folder, owner: str) -> None:
        """Start listing ``root`` for ``owner`` (a session) unless it is kept or listing."""
        with self._lock:
            found = self._lists.get(root)
            if found is not None:
                self._refresh_if_old(root, found)
                return
            listing = self._listings.get(root)
            if listing is None:
                if len(self._listings) >= MAX_FOLDERS:
                    return  # memory stays bounded; the first query lists it then
                listing = self._start(root, asked=False)
            listing.owners.add(owner)

    def current(self, root: Folder) -> FileList:
        """The kept list, or what its first listing found so far (``partial``), waiting
        only for a first part. Blocking: call it off the event loop."""
        with self._lock:
            found = self._lists.get(root)
            if found is not None:
                return found
            listing = self._listings.get(root) or self._start(root, asked=True)
            listing.asked = True
        # The tracked files (or the first folder walked) come in well under the timeout.
        listing.ready.wait(2 * GIT_TIMEOUT_S)
        partial = listing.gathering.latest
        if listing.result is not None:
            return listing.result
        if listing.error is not None:
            raise listing.error
        if partial is None:
            raise AppError("Listing the session's files was stopped; try again.")
        return partial

    def release(self, owner: str) -> None:
        """``owner`` stopped: the listings it started that nobody else needs are stopped."""
        with self._lock:
            for listing in self._listings.values():
                listing.owners.discard(owner)
                if not listing.owners and not listing.asked:
                    listing.gathering.stop.set()

    def stop_all(self) -> None:
        """Stop every first listing (the server is stopping)."""
        with self._lock:
            for listing in self._listings.values():
                listing.gathering.stop.set()

    def running(self) -> int:
        """First listings running now."""
        with self._lock:
            return len(self._listings)

    def _start(self, root: Folder, *, asked: bool) -> _Listing:
        listing = self._listings[root] = _Listing(asked=asked)
        self.listings_started += 1
        threading.Thread(target=self._list, args=(root, listing), daemon=True).start()
        return listing

    def _list(self, root: Folder, listing: _Listing) -> None:
        gathering = listing.gathering
        try:
            # Ahead of any query it runs beside the session's start: at a lower priority.
            listing.result = list_folder(
                root[0], place=root[1], gathering=gathering, nice=not listing.asked
            )
        except ListingStopped:
            pass
        except Exception as exc:
            log.warning("could not list %s", root, exc_info=True)
            listing.error = exc
        finally:
            with self._lock:
                if listing.result is not None:
                    self._store(root, listing.result)
                self._listings.pop(root, None)
            listing.ready.set()

    def _refresh_if_old(self, root: Folder, found: FileList) -> None:
        # A listing that takes long (a huge tree, a busy machine) is repeated less
        # often, so that refreshing never becomes most of the machine's work.
        wait = max(self.refresh_after, 3 * found.took)
        stale = time.monotonic() - found.built_at > wait
        if stale and root not in self._refreshing:
            self._refreshing.add(root)
            threading.Thread(target=self._refresh, args=(root,), daemon=True).start()

    def _refresh(self, root: Folder) -> None:
        try:
            with self._lock:
                previous = self._lists.get(root)
            files = list_folder(root[0], previous, root[1], nice=True)
            with self._lock:
                self._store(root, files)
        except OSError:
            log.warning("could not list %s again", root, exc_info=True)
        finally:
            with self._lock:
                self._refreshing.discard(root)

    def _store(self, root: Folder, files: FileList) -> None:
        """Keep ``files`` for ``root`` (the lock held)."""
        self._lists[root] = files
        self._lists.move_to_end(root)
        while len(self._lists) > MAX_FOLDERS:
            self._lists.popitem(last=False)


# One per process: lists depend only on the folder, whoever asks.
FOLDER_FILES = FolderFiles()


async def find(
    root: Path, place: GitPlace | None, query: str, limit: int = MAX_RESULTS
) -> tuple[list[str], FileList]:
    """The paths under ``root`` that match ``query``, and the list they came from
    (``partial`` while the folder's first listing still runs); ``place`` is the
    session's recorded git dir and work tree (None outside git)."""
    files = FOLDER_FILES.cached((root, place))
    if files is None:
        files = await asyncio.to_thread(FOLDER_FILES.current, (root, place))
    # Off the loop: between matches the thread lets the other sessions' streams run.
    found = await asyncio.to_thread(files.search, query, limit)
    return found, files


def warm(owner: str, root: Path, place_of: Callable[[], GitPlace | None]) -> None:
    """Start listing ``root`` for the session ``owner`` in the background, so its first
    ``@`` finds the list ready; ``place_of`` (blocking: it may run git) says where git
    runs for it. Returns at once: nothing of it runs on the caller's thread."""
    threading.Thread(target=_warm, args=(owner, root, place_of), daemon=True).start()


def _warm(owner: str, root: Path, place_of: Callable[[], GitPlace | None]) -> None:
    try:
        place = place_of()
    except (AppError, OSError) as exc:
        # A re-pointed worktree (the mention list then says why) or a folder gone.
        log.info("no listing ahead for %s: %s", root, exc)
        return
    if root.is_dir():
        FOLDER_FILES.warm((root, place), owner)
