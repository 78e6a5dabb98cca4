"""The bodies of a shard broker's ``GET /health``, ``/stats`` and ``/metrics``.

Each has the shape a single server gives (drsearch.server.exposition), for the whole corpus the
shards split, plus a ``shards`` list (or per-shard Prometheus families) with every shard's
identity, live state and counts. The corpus-wide numbers come from what every shard reported
at start-up (its ``/stats``; a shard file is immutable and the broker checks its identity on
every answer), so they are there even while a shard is down; the live parts (a shard's state,
its request counters) come from asking each shard at the time of the request.

The sums are the whole index's own numbers: every document, chunk and posting lies in exactly
one shard, and ``meta.shard`` records the corpus' documents, chunks, tokens and vocabulary.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import __version__
from .exposition import CorpusGauges, counters_text, gauge_family, server_body
from .metrics import Snapshot

# A shard's live state: what it answered (its body) or why it did not (a problem line).
Probe = tuple[Mapping[str, Any] | None, str | None]

_VERIFY_ORDER = ("failed", "pending", "ok", "off")  # the broker's state: its worst shard's


@dataclass(frozen=True, slots=True)
class Shard:
    """One shard server as checked at start-up: its URL, index, the identity it serves, the
    blocked documents it holds, and its ``/stats`` body then (without the live ``server``
    counters)."""

    url: str
    index: int
    identity: str
    blocklist_matched: int
    stats: Mapping[str, Any] = field(default_factory=dict)


def _sum(shards: Sequence[Shard], key: str) -> int:
    return sum(int(s.stats.get(key, 0)) for s in shards)


def corpus_counts(shards: Sequence[Shard]) -> dict[str, Any]:
    """The whole corpus' counts, as one index's /stats gives them."""
    whole = shards[0].stats["shard"]
    return {"documents": int(whole["documents"]), "indexed_documents": _sum(shards, "indexed_documents"),
            "empty_documents": _sum(shards, "empty_documents"), "chunks": int(whole["chunks"]),
            "tokens": int(whole["tokens"]), "vocabulary": int(whole["vocabulary"]),
            "postings": _sum(shards, "postings"), "blocked_documents": _sum(shards, "blocked_documents")}


def _blocklist(shards: Sequence[Shard]) -> dict[str, Any]:
    listed = shards[0].stats["shard"]["blocklist"]
    return {"sha256": listed["sha256"], "count": int(listed["count"]),
            "matched": sum(int(s.stats["blocklist"]["matched"]) for s in shards)}


def _verify(states: list[dict[str, str]]) -> dict[str, str]:
    """The broker's background-verification state: the worst of its shards' (failed, pending,
    ok, off), with the first message that state came with."""
    for state in _VERIFY_ORDER:
        found = [s for s in states if s.get("state") == state]
        if found:
            messages = [s["message"] for s in found if s.get("message")]
            return {"state": state, "message": messages[0] if messages else ""}
    return {"state": "off", "message": ""}


def health_body(corpus: str, split: str, shards: Sequence[Shard], probes: Sequence[Probe]) -> dict[str, Any]:
    """``GET /health`` of the broker: ``unavailable`` (503) when a shard does not answer as at
    start-up, ``degraded`` when one says it is, else ``ok``; every shard's state."""
    problems, rows, verify = [], [], []
    unavailable = degraded = False
    for s, (body, problem) in zip(shards, probes, strict=True):
        row: dict[str, Any] = {"index": s.index, "url": s.url, "identity": s.identity,
                               "documents": int(s.stats["documents"]), "chunks": int(s.stats["chunks"])}
        if problem is not None or body is None:
            unavailable = True
            problems.append(problem or f"shard {s.index} ({s.url}) did not answer GET /health")
            row.update(status="unavailable", verify=None)
        else:
            state = dict(body.get("verify") or {"state": "off", "message": ""})
            verify.append({"state": str(state.get("state")),
                           "message": f"shard {s.index}: {state['message']}" if state.get("message") else ""})
            row.update(status=str(body.get("status")), verify=state)
            if body.get("status") != "ok":
                degraded = True
                said = body.get("problems") or [f"status {body.get('status')}"]
                problems += [f"shard {s.index} ({s.url}): {p}" for p in said]
        rows.append(row)
    counts = corpus_counts(shards)
    status = "unavailable" if unavailable else "degraded" if degraded else "ok"
    return {"status": status, "problems": problems, "verify": _verify(verify), "version": __version__,
            "corpus": {"identity": corpus, "schema_version": shards[0].stats["schema_version"],
                       "documents": counts["documents"], "chunks": counts["chunks"]},
            "blocklist": _blocklist(shards), "split": split, "shards": rows}


def stats_body(corpus: str, split: str, shards: Sequence[Shard], probes: Sequence[Probe],
               snap: Snapshot) -> dict[str, Any]:
    """``GET /stats`` of the broker: the whole corpus' counts and build, each shard's counts,
    state and live request counters (None while it does not answer), the broker's counters."""
    rows = []
    for s, (body, problem) in zip(shards, probes, strict=True):
        rows.append({"index": s.index, "url": s.url, "identity": s.identity,
                     "status": "ok" if problem is None else "unavailable", "problem": problem,
                     **{k: s.stats[k] for k in ("documents", "chunks", "tokens", "vocabulary", "postings")},
                     "file": {"bytes": int(s.stats["file"]["bytes"])},
                     "server": None if body is None else body.get("server")})
    first = shards[0].stats
    return {**corpus_counts(shards), "blocklist": _blocklist(shards), "content_identity": corpus,
            "schema_version": first["schema_version"], "scorer": first["scorer"], "build": first["build"],
            "file": {"bytes": sum(int(s.stats["file"]["bytes"]) for s in shards)}, "split": split,
            "shards": rows, "server": server_body(snap)}


def metrics_text(corpus: str, shards: Sequence[Shard], probes: Sequence[Probe], snap: Snapshot) -> str:
    """``GET /metrics`` of the broker: a server's families for its own requests and the whole
    corpus, then the shards: how many, whether each answers as at start-up, its counts."""
    counts = corpus_counts(shards)
    gauges = CorpusGauges(counts["documents"], counts["chunks"], _blocklist(shards)["count"], corpus,
                          int(shards[0].stats["schema_version"]))

    def labels(s: Shard) -> dict[str, object]:
        return {"shard": s.index, "url": s.url}

    extra = [*gauge_family("drsearch_shards", "Shards of the split behind this broker.", [({}, len(shards))]),
             *gauge_family("drsearch_shard_up", "1 when the shard answers GET /health as at start-up.",
                           [(labels(s), int(p[1] is None)) for s, p in zip(shards, probes, strict=True)]),
             *gauge_family("drsearch_shard_documents", "Documents in the shard.",
                           [(labels(s), int(s.stats["documents"])) for s in shards]),
             *gauge_family("drsearch_shard_chunks", "Chunks in the shard.",
                           [(labels(s), int(s.stats["chunks"])) for s in shards])]
    return counters_text(snap, gauges, extra)


__all__ = ["Probe", "Shard", "corpus_counts", "health_body", "metrics_text", "stats_body"]
