"""The replay cache: tool and LLM responses in one SQLite file, keyed by canonical JSON.

Keys: ``("tool", name, arguments, corpus identity, blocklist sha256)`` for tool calls (then
the retriever's configuration, for any retriever but BM25: docs/RETRIEVERS.md),
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

Every row carries ``digest``, the SHA-256 of canonical JSON of (key, kind, call, ok, the
body's SHA-256): an edited body or key, or damaged bytes, no longer match it. A row read
back that does not match raises :class:`~drsearch.agents.errors.CorruptCacheError` (exit 2,
naming the key and the file): it is never replayed, and never silently replaced by a live
call, because the run it belongs to would then not be the run that was recorded.
:func:`verify_cache` checks every row of a file (``drsearch cache verify``).

A cache written before rows had digests cannot tell an edited row from a recorded one: it
is refused (:class:`~drsearch.agents.errors.UnsignedCacheError`) until
:func:`upgrade_cache` (``drsearch cache upgrade FILE``) signs its rows as they are now,
which is the user's statement that they trust them. An empty old file is simply upgraded.

:class:`CachedSearcher` is the third :class:`~drsearch.agents.searcher.Searcher`: over a
live searcher, or (replay only) over nothing but the cache.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .canonical import canonical_json, sha256_hex
from .errors import CorruptCacheError, LocalIOError, ReplayMissError, UnsignedCacheError
from .searcher import CorpusInfo, Searcher, ToolResponse

CacheMode = Literal["off", "record", "replay", "replay-then-live"]
CACHE_MODES: tuple[CacheMode, ...] = ("off", "record", "replay", "replay-then-live")

_SCHEMA = """CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY, kind TEXT NOT NULL, call TEXT NOT NULL, ok INTEGER NOT NULL, body BLOB NOT NULL,
    digest TEXT NOT NULL)"""


def row_digest(key: str, kind: str, call: str, ok: int, body: bytes) -> str:
    """The digest a row carries: SHA-256 of canonical JSON of its key, kind, call, success
    flag and the body's own SHA-256."""
    return sha256_hex(canonical_json([key, kind, call, int(ok), hashlib.sha256(body).hexdigest()]))


def cache_key(kind: str, key: Any) -> str:
    """The row key of the call ``key`` of ``kind``: SHA-256 of canonical JSON of both."""
    return sha256_hex(canonical_json([kind, key]))


def _columns(db: sqlite3.Connection) -> set[str]:
    return {str(r[1]) for r in db.execute("PRAGMA table_info(responses)")}


def _unsigned(path: str | Path) -> UnsignedCacheError:
    return UnsignedCacheError(f"{path}: a cache from before row digests (an edited row cannot be told "
                              "from a recorded one); if you trust it as it is, run "
                              f"`drsearch cache upgrade {path}`, else record afresh")


def _ensure_schema(db: sqlite3.Connection, path: str | Path) -> None:
    """Make the table, or check an existing one carries digests (an empty old one is upgraded)."""
    db.execute(_SCHEMA)
    if "digest" in _columns(db):
        return
    if db.execute("SELECT 1 FROM responses LIMIT 1").fetchone() is not None:
        raise _unsigned(path)
    db.execute("ALTER TABLE responses ADD COLUMN digest TEXT")


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
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            _ensure_schema(self._db, path)
        except BaseException:
            self._db.close()
            raise

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
        ``describe`` names the call in that error. LocalIOError when the answer cannot be stored;
        CorruptCacheError when the stored row does not match its digest (whatever the mode).
        """
        digest = cache_key(kind, key)
        if self._db is not None and self.mode in ("replay", "replay-then-live"):
            with self._lock:
                row = self._db.execute("SELECT ok, body, kind, call, digest FROM responses WHERE key = ?",
                                       (digest,)).fetchone()
                if row is not None and row[4] != row_digest(digest, row[2], row[3], row[0], bytes(row[1])):
                    raise CorruptCacheError(
                        f"{self.path}: cache row {digest} ({describe[:200]}) does not match its digest "
                        f"(edited or damaged); not replayed. `drsearch cache verify {self.path}` lists "
                        "every such row")
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
        self._db.execute("INSERT OR REPLACE INTO responses (key, kind, call, ok, body, digest) "
                         "VALUES (?, ?, ?, ?, ?, ?)", (digest, kind, call, ok, body,
                                                       row_digest(digest, kind, call, ok, body)))


@dataclass
class CacheCheck:
    """What :func:`verify_cache` found: rows by kind, and the rows that fail their digest
    (``(key, kind, call)`` each, in key order)."""

    path: Path
    rows: dict[str, int] = field(default_factory=dict)
    bad: list[tuple[str, str, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.bad


def _open_existing(path: str | Path, writable: bool) -> sqlite3.Connection:
    """An existing cache file (LocalIOError when it is missing or not a cache)."""
    p = Path(path)
    if not p.is_file():
        raise LocalIOError(f"{p}: no cache file there")
    try:
        db = sqlite3.connect(f"{p.resolve().as_uri()}?mode={'rw' if writable else 'ro'}", uri=True,
                             isolation_level=None)
        db.execute("SELECT 1 FROM responses LIMIT 1")
    except sqlite3.Error as e:
        raise LocalIOError(f"{p}: not a drsearch cache ({e})") from None
    return db


def verify_cache(path: str | Path) -> CacheCheck:
    """Check every row of the cache at ``path`` against its digest (read only).

    Raises UnsignedCacheError for a cache from before digests, LocalIOError when the file is
    missing or not a cache. A row whose bytes SQLite cannot read counts as bad."""
    db = _open_existing(path, writable=False)
    check = CacheCheck(Path(path))
    try:
        if "digest" not in _columns(db):
            if db.execute("SELECT 1 FROM responses LIMIT 1").fetchone() is not None:
                raise _unsigned(path)
            return check
        try:
            for key, kind, call, ok, body, digest in db.execute(
                    "SELECT key, kind, call, ok, body, digest FROM responses ORDER BY key"):
                check.rows[kind] = check.rows.get(kind, 0) + 1
                if digest != row_digest(key, kind, call, ok, bytes(body)):
                    check.bad.append((key, kind, call))
        except sqlite3.DatabaseError as e:  # damaged pages: the file as a whole is bad
            check.bad.append(("*", "*", f"unreadable: {e}"))
    finally:
        db.close()
    check.rows = dict(sorted(check.rows.items()))
    return check


def upgrade_cache(path: str | Path) -> int:
    """Sign every unsigned row of the cache at ``path`` as it is now; returns how many.

    The caller vouches for the rows: an edit made before the upgrade is signed with them.
    Rows that already carry a digest are left alone (a bad one stays bad)."""
    db = _open_existing(path, writable=True)
    try:
        if "digest" not in _columns(db):
            db.execute("ALTER TABLE responses ADD COLUMN digest TEXT")
        rows = db.execute("SELECT key, kind, call, ok, body FROM responses WHERE digest IS NULL").fetchall()
        db.execute("BEGIN IMMEDIATE")
        for key, kind, call, ok, body in rows:
            db.execute("UPDATE responses SET digest = ? WHERE key = ?",
                       (row_digest(key, kind, call, ok, bytes(body)), key))
        db.execute("COMMIT")
    except sqlite3.Error as e:
        raise LocalIOError(f"{path}: cannot upgrade ({e})") from None
    finally:
        db.close()
    return len(rows)


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
        if c.retriever is not None and c.retriever != "bm25":  # BM25's keys stay as they were
            key.append(c.retriever)

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


__all__ = ["CACHE_MODES", "CacheCheck", "CacheMode", "CachedSearcher", "ReplayCache", "cache_key",
           "row_digest",
           "upgrade_cache", "verify_cache"]
