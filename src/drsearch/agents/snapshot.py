"""Tool snapshots: the biomedical tools' recorded answers, frozen into a checksummed artefact.

A snapshot is a directory of two files:

- ``rows.jsonl``: one line per recorded call, sorted by key: ``{"arguments", "body",
  "digest", "key", "tool"}``. ``key`` is the replay cache's row key of the call
  (:func:`~drsearch.agents.replay.cache_key` of ``("tool", [tool, arguments])``: the tool and
  its canonical arguments), ``body`` the exact answer bytes as UTF-8 text (the envelope of
  :func:`drsearch.biotools.envelope`: service, requests, access date, content), ``digest``
  the SHA-256 of canonical JSON of ``[key, tool, arguments, body]``;
- ``manifest.json``: ``format``, ``tools`` (each tool's service and endpoints),
  ``access_dates`` (every date a row was fetched), ``rows`` (their number), ``row_digests``
  (in row order), ``rows_sha256`` (of rows.jsonl's bytes) and ``digest`` (SHA-256 of
  canonical JSON of the manifest without ``digest``).

:func:`load_snapshot` checks all of it before a row is used (one mismatch: SnapshotError,
exit 2); :meth:`ToolSnapshot.check_preset` refuses a snapshot holding tools the preset does
not offer or recorded against other endpoints. :func:`freeze` builds one from run caches;
:func:`coverage` says which biomedical calls of recorded runs a snapshot answers.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..biotools import BIOTOOLS, InvalidArgumentsError, signatures
from .canonical import canonical_json, sha256_hex, sha256_json
from .errors import LocalIOError, SnapshotError
from .replay import cache_key, row_digest

FORMAT = "drsearch-tool-snapshot/1"
MANIFEST = "manifest.json"
ROWS = "rows.jsonl"


def tool_key(tool: str, arguments: dict[str, Any]) -> str:
    """The cache row key of ``tool(**arguments)`` (arguments canonical)."""
    return cache_key("tool", ["tool", tool, arguments])


def _row_digest(key: str, tool: str, arguments: dict[str, Any], body: str) -> str:
    return sha256_json([key, tool, arguments, body])


@dataclass
class ToolSnapshot:
    """A loaded, checked snapshot: ``rows`` maps a key to the answer's bytes."""

    path: Path
    manifest: dict[str, Any]
    rows: dict[str, bytes]
    entries: list[dict[str, Any]] = field(default_factory=list)

    @property
    def digest(self) -> str:
        return str(self.manifest["digest"])

    @property
    def tools(self) -> dict[str, Any]:
        return dict(self.manifest["tools"])

    def get(self, key: str) -> bytes | None:
        return self.rows.get(key)

    def check_preset(self, offered: tuple[str, ...] | list[str]) -> None:
        """SnapshotError unless every tool of the snapshot is offered, with the endpoints this
        code calls (a snapshot of another API version would answer calls it never made)."""
        bio = [t for t in offered if t in BIOTOOLS]
        if not bio:
            raise SnapshotError(f"tool snapshot {self.path}: the preset offers none of the biomedical tools")
        foreign = sorted(set(self.tools) - set(bio))
        if foreign:
            raise SnapshotError(
                f"tool snapshot {self.path}: recorded tool(s) {', '.join(foreign)} that the "
                f"preset does not offer (it offers {', '.join(bio)})"
            )
        now = signatures(bio)
        for name, sig in sorted(self.tools.items()):
            if sig != now[name]:
                raise SnapshotError(
                    f"tool snapshot {self.path}: tool {name!r} was recorded against other "
                    f"endpoints ({sig.get('service')}: {', '.join(sig.get('endpoints', []))[:200]}) "
                    "than this version calls"
                )


def _bad(path: Path, why: str) -> SnapshotError:
    return SnapshotError(f"tool snapshot {path}: {why}; not used (`drsearch snapshot verify {path}`)")


def load_snapshot(path: str | Path) -> ToolSnapshot:
    """The snapshot at ``path``, every digest checked. Raises SnapshotError (one line) when
    it is missing, not a snapshot, or any digest does not match."""
    p = Path(path)
    try:
        manifest = json.loads((p / MANIFEST).read_text(encoding="utf-8"))
        raw = (p / ROWS).read_bytes()
    except FileNotFoundError:
        raise SnapshotError(f"tool snapshot {p}: no {MANIFEST} and {ROWS} there") from None
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise _bad(p, f"unreadable ({e.__class__.__name__}: {e})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise _bad(p, f"not a {FORMAT} manifest")
    claimed = manifest.get("digest")
    if claimed != sha256_json({k: v for k, v in manifest.items() if k != "digest"}):
        raise _bad(p, "manifest digest does not match the manifest (edited)")
    if sha256_hex(raw) != manifest.get("rows_sha256"):
        raise _bad(p, f"{ROWS} does not match the manifest's rows_sha256 (edited or damaged)")
    rows: dict[str, bytes] = {}
    entries = []
    for n, line in enumerate(raw.decode("utf-8").splitlines(), 1):
        try:
            row = json.loads(line)
            key, tool, arguments, body = row["key"], row["tool"], row["arguments"], row["body"]
        except (ValueError, KeyError, TypeError):
            raise _bad(p, f"row {n} is not a snapshot row") from None
        if row.get("digest") != _row_digest(key, tool, arguments, body) or key != tool_key(tool, arguments):
            raise _bad(p, f"row {n} ({tool}) does not match its digest")
        rows[key] = body.encode("utf-8")
        entries.append(row)
    if [e["digest"] for e in entries] != manifest.get("row_digests") or len(rows) != manifest.get("rows"):
        raise _bad(p, "rows do not match the manifest's row digests")
    return ToolSnapshot(p, manifest, rows, entries)


def _cache_rows(source: Path) -> list[dict[str, Any]]:
    """The biomedical tool rows of a run directory's cache.sqlite3 (or a cache file), each
    checked against its cache digest (CorruptCacheError-like SnapshotError otherwise)."""
    path = source / "cache.sqlite3" if source.is_dir() else source
    if not path.is_file():
        raise SnapshotError(f"{source}: no replay cache there (a run directory or a cache.sqlite3)")
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        found = db.execute(
            "SELECT key, kind, call, ok, body, digest FROM responses WHERE kind = 'tool' ORDER BY key"
        ).fetchall()
        db.close()
    except sqlite3.Error as e:
        raise SnapshotError(f"{path}: not a drsearch cache ({e})") from None
    out = []
    for key, kind, call, ok, body, digest in found:
        if digest != row_digest(key, kind, call, ok, bytes(body)):
            raise SnapshotError(
                f"{path}: cache row {key} does not match its digest; not frozen "
                f"(`drsearch cache verify {path}`)"
            )
        try:
            env = json.loads(bytes(body))
        except ValueError:
            continue
        if not isinstance(env, dict) or "biotool" not in env:
            continue  # a search/open answer: not a biomedical tool's
        tool, arguments = env["biotool"], env["arguments"]
        if key != tool_key(tool, arguments):
            raise SnapshotError(
                f"{path}: cache row {key} does not belong to {tool}({canonical_json(arguments)})"
            )
        out.append({"arguments": arguments, "body": bytes(body).decode("utf-8"), "key": key, "tool": tool})
    return out


def _entries(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {**r, "digest": _row_digest(r["key"], r["tool"], r["arguments"], r["body"])}
        for r in sorted(rows, key=lambda r: r["key"])
    ]


def write_snapshot(rows: list[dict[str, Any]], out: Path, *, replace: bool = False) -> ToolSnapshot:
    """Write ``rows`` (``{arguments, body, key, tool}``, one per key) as a snapshot at ``out``
    (atomically: a temporary directory renamed into place). An existing ``out`` is refused
    (SnapshotError) unless ``replace``."""
    if out.exists() and not replace:
        raise SnapshotError(f"{out}: already exists; a snapshot is never overwritten (choose another path)")
    entries = _entries(rows)
    raw = "".join(canonical_json(e) + "\n" for e in entries).encode("utf-8")
    tools = sorted({e["tool"] for e in entries})
    dates = sorted({str(json.loads(e["body"]).get("accessed")) for e in entries})
    manifest: dict[str, Any] = {
        "access_dates": dates,
        "format": FORMAT,
        "row_digests": [e["digest"] for e in entries],
        "rows": len(entries),
        "rows_sha256": sha256_hex(raw),
        "tools": signatures(tools),
    }
    manifest["digest"] = sha256_json(manifest)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
        (tmp / ROWS).write_bytes(raw)
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        if out.exists():
            shutil.rmtree(out)
        os.replace(tmp, out)
    except OSError as e:
        raise LocalIOError(f"{out}: cannot write the snapshot ({e.strerror or e})") from None
    return load_snapshot(out)


def freeze(
    sources: list[Path], out: Path, base: ToolSnapshot | None = None, *, replace: bool = False
) -> ToolSnapshot:
    """A snapshot at ``out`` of every biomedical tool answer in ``sources`` (run directories or
    cache files), plus ``base``'s rows (a base row wins over a re-recorded one: a snapshot is
    only ever extended). SnapshotError when there is nothing to freeze."""
    rows: dict[str, dict[str, Any]] = {}
    if base is not None:
        rows = {e["key"]: {k: e[k] for k in ("arguments", "body", "key", "tool")} for e in base.entries}
    for source in sources:
        for r in _cache_rows(source):
            rows.setdefault(r["key"], r)
    if not rows:
        raise SnapshotError(
            f"no biomedical tool answers in {', '.join(map(str, sources))}: nothing to freeze"
        )
    return write_snapshot(list(rows.values()), out, replace=replace)


def _run_calls(run: Path) -> list[tuple[str, str, str]]:
    """``(qid, tool, key)`` of every biomedical call a run's episodes made with valid arguments."""
    path = run / "trajectories.jsonl"
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise SnapshotError(
            f"--runs {run}: no trajectories.jsonl readable there ({e.strerror or e})"
        ) from None
    calls = []
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        for c in record.get("tool_calls", []):
            tool = BIOTOOLS.get(str(c.get("name")))
            if tool is None or c.get("malformed"):
                continue
            try:
                args = tool.check(c.get("arguments"))
            except InvalidArgumentsError:  # refused before any service was asked: nothing to cover
                continue
            calls.append((str(record.get("qid")), tool.name, tool_key(tool.name, args)))
    return calls


def coverage(snapshot: ToolSnapshot, runs: list[Path]) -> dict[str, Any]:
    """Per run: its biomedical calls, how many the snapshot answers, and the ones it does not
    (``qid``, tool, key); the totals over all runs."""
    report: dict[str, Any] = {"runs": {}, "snapshot": str(snapshot.path), "snapshot_digest": snapshot.digest}
    total = covered = 0
    for run in runs:
        calls = _run_calls(run)
        missing = [{"key": k, "qid": q, "tool": t} for q, t, k in calls if snapshot.get(k) is None]
        report["runs"][str(run)] = {
            "calls": len(calls),
            "covered": len(calls) - len(missing),
            "missing": missing,
        }
        total += len(calls)
        covered += len(calls) - len(missing)
    report["calls"], report["covered"] = total, covered
    return report


__all__ = ["FORMAT", "ToolSnapshot", "coverage", "freeze", "load_snapshot", "tool_key", "write_snapshot"]
