"""The replay cache: tool and LLM responses in one SQLite file, keyed by canonical JSON.

Keys: ``("tool", name, arguments, corpus identity, blocklist sha256)`` for tool calls,
``("llm", model, request body)`` for chat completions, each as canonical JSON hashed with
SHA-256. Values: the exact response bytes and whether they were a success. Modes:

- ``off``: every call live, nothing stored;
- ``record``: every call live, each response stored (replacing an older one);
- ``replay``: only stored responses; a miss raises ReplayMissError naming the call;
- ``replay-then-live``: stored successes, else live and stored (a recorded failure, such as
  a request the model endpoint refused, is tried live again).

Only answers are stored: a live call that raises (an infrastructure failure such as an
unreachable endpoint or search server) stores nothing, so a rerun asks again. A store that
fails (disk full, read-only file) raises :class:`~drsearch.agents.errors.LocalIOError`.

:class:`CachedSearcher` is the third :class:`~drsearch.agents.searcher.Searcher`: over a
live searcher, or (replay only) over nothing but the cache.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from .canonical import canonical_json, sha256_hex
from .errors import LocalIOError, ReplayMissError
from .searcher import CorpusInfo, Searcher, ToolResponse

CacheMode = Literal["off", "record", "replay", "replay-then-live"]
CACHE_MODES: tuple[CacheMode, ...] = ("off", "record", "replay", "replay-then-live")

_SCHEMA = """CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY, kind TEXT NOT NULL, call TEXT NOT NULL, ok INTEGER NOT NULL, body BLOB NOT NULL)"""


class ReplayCache:
    """A thread-safe SQLite response cache with per-kind hit/miss/stored counters."""

    def __init__(self, path: str | Path | None, mode: CacheMode) -> None:
        """``path`` None only with mode ``off``. Replay mode needs an existing file."""
        self.mode = mode
        self.path = path
        self._lock = threading.Lock()
        self._stats: dict[str, dict[str, int]] = {}
        self._db: sqlite3.Connection | None = None
        if mode == "off":
            return
        if path is None:
            raise ValueError(f"cache mode {mode!r} needs a cache file")
        if mode == "replay" and not Path(path).is_file():
            raise ReplayMissError(f"{path}: no replay cache there")
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(_SCHEMA)

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def _count(self, kind: str, what: str) -> None:
        counts = self._stats.setdefault(kind, {"hits": 0, "misses": 0, "stored": 0})
        counts[what] += 1

    def stats(self) -> dict[str, dict[str, int]]:
        """``{kind: {hits, misses, stored}}`` so far (sorted kinds)."""
        with self._lock:
            return {k: dict(v) for k, v in sorted(self._stats.items())}

    def fetch(self, kind: str, key: Any, describe: str,
              live: Callable[[], tuple[bool, bytes]] | None) -> tuple[bool, bytes]:
        """The response to the call ``key`` as the mode dictates.

        ``live`` computes it (None when there is no live backend: then a miss raises
        ReplayMissError whatever the mode); what it raises passes through, nothing stored.
        ``describe`` names the call in that error. LocalIOError when the answer cannot be stored.
        """
        digest = sha256_hex(canonical_json([kind, key]))
        if self._db is not None and self.mode in ("replay", "replay-then-live"):
            with self._lock:
                row = self._db.execute("SELECT ok, body FROM responses WHERE key = ?", (digest,)).fetchone()
                usable = row is not None and (bool(row[0]) or self.mode == "replay")
                self._count(kind, "hits" if usable else "misses")
            if usable:
                return bool(row[0]), bytes(row[1])
            if self.mode == "replay" or live is None:
                raise ReplayMissError(f"replay cache has no response for {describe} (key {digest[:16]})")
        elif live is None:
            raise ReplayMissError(f"no live backend for {describe}")
        ok, body = live()
        if self._db is not None:
            with self._lock:
                try:
                    self._store(digest, kind, describe[:500], int(ok), body)
                except (OSError, sqlite3.Error) as e:  # e.g. "database or disk is full"
                    raise LocalIOError(f"replay cache {self.path}: cannot store the response to "
                                       f"{describe} ({e})") from None
                self._count(kind, "stored")
        return ok, body

    def _store(self, digest: str, kind: str, call: str, ok: int, body: bytes) -> None:
        """One row written (a separate method: the fault-injection seam of the I/O tests)."""
        assert self._db is not None
        self._db.execute("INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?)",
                         (digest, kind, call, ok, body))


class CachedSearcher:
    """A :class:`Searcher` answering from a :class:`ReplayCache`, falling back to ``live``.

    With ``live=None`` it is a pure replay searcher over a recorded run: ``corpus`` must then
    be given (from the recorded run.json), and every miss raises ReplayMissError.
    """

    def __init__(self, cache: ReplayCache, live: Searcher | None, corpus: CorpusInfo | None = None) -> None:
        if corpus is None:
            if live is None:
                raise ValueError("a replay-only searcher needs the recorded corpus identity")
            corpus = live.corpus()
        self._cache = cache
        self._live = live
        self._corpus = corpus

    def corpus(self) -> CorpusInfo:
        return self._corpus

    def _call(self, tool: str, args: dict[str, Any], live: Callable[[], ToolResponse] | None) -> ToolResponse:
        c = self.corpus()
        key = ["tool", tool, args, c.identity, c.blocklist_sha256]

        def run() -> tuple[bool, bytes]:
            assert live is not None
            r = live()
            return r.ok, r.body

        ok, body = self._cache.fetch("tool", key, f"{tool}({canonical_json(args)})",
                                     None if live is None else run)
        return ToolResponse(ok, body)

    def search(self, query: str, k: int) -> ToolResponse:
        live = self._live
        return self._call("search", {"k": k, "query": query},
                          None if live is None else lambda: live.search(query, k))

    def open(self, *, docid: str | None, url: str | None, offset: int, length: int | None) -> ToolResponse:
        live = self._live
        args = {"docid": docid, "length": length, "offset": offset, "url": url}
        return self._call("open", args, None if live is None else
                          lambda: live.open(docid=docid, url=url, offset=offset, length=length))


__all__ = ["CACHE_MODES", "CacheMode", "CachedSearcher", "ReplayCache"]
