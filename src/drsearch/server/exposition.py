"""The bodies of /health, /stats and /metrics, built from the engine and the counters.

/health is static for the life of a worker (built once). /stats is the engine's own
``stats()`` (exactly what ``drsearch stats --json`` prints) plus a ``server`` object of
live counters aggregated over all workers. /metrics renders the same counters in the
Prometheus text format (0.0.4); latency percentiles appear as a ``summary``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .. import __version__
from ..contract import Retriever
from .metrics import EndpointCounts, Snapshot

PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def blocklist_enabled(engine: Retriever) -> bool:
    """True when the engine was given a blocklist (even an empty file)."""
    return bool(engine.blocklist.source) or len(engine.blocklist) > 0


def health_body(engine: Retriever, state: dict[str, Any] | None = None, origin: str | None = None,
                release_sha256: str | None = None) -> dict[str, Any]:
    """``GET /health``: status, corpus identity and counts, version, ``state``
    (``HealthState.body()``: status, problems, background verification), and the blocklist:
    its hash, docids listed (``count``) and found in this corpus (``matched``), where it came
    from (``origin``, see ``ServeConfig``) and the release's own list's hash if any."""
    meta = engine.meta
    return {
        "status": "ok",
        "problems": [],
        "verify": {"state": "off", "message": ""},
        **(state or {}),
        "version": __version__,
        "corpus": {
            "identity": meta["content_identity"],
            "schema_version": meta["schema_version"],
            "documents": meta["documents"],
            "chunks": meta["chunks"],
        },
        "blocklist": {
            "enabled": blocklist_enabled(engine),
            "sha256": engine.blocklist.sha256,
            "count": len(engine.blocklist),
            "matched": engine.blocked_matched,
            "origin": origin or ("file" if blocklist_enabled(engine) else "none"),
            "release_sha256": release_sha256,
        },
        # only for a retriever other than BM25 (a BM25 server's body is as it always was)
        **({"retriever": meta["retriever"]} if meta.get("retriever") not in (None, "bm25") else {}),
    }


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000.0, 3)


def _endpoint_body(c: EndpointCounts) -> dict[str, Any]:
    mean = c.latency_sum_s / c.requests if c.requests else None
    return {
        "requests": c.requests,
        "errors": c.errors,
        "server_errors": c.server_errors,
        "client_disconnects": c.client_disconnects,
        "latency_ms": {"p50": _ms(c.p50_s), "p95": _ms(c.p95_s), "p99": _ms(c.p99_s),
                       "mean": _ms(mean)},
    }


def server_body(snap: Snapshot) -> dict[str, Any]:
    """The ``server`` object of /stats: counters over all workers of this run."""
    return {
        "version": __version__,
        "uptime_s": round(snap.uptime_s, 3),
        "workers": {"live": snap.workers_live, "started": snap.workers_started},
        "requests": sum(c.requests for c in snap.endpoints.values()),
        "errors": sum(c.errors for c in snap.endpoints.values()),
        "client_disconnects": sum(c.client_disconnects for c in snap.endpoints.values()),
        "endpoints": {name: _endpoint_body(c) for name, c in snap.endpoints.items()},
    }


def stats_body(engine: Retriever, snap: Snapshot) -> dict[str, Any]:
    """``GET /stats``: the engine's stats (the file by its name only: where the server keeps
    it is none of a client's business) plus the ``server`` counters."""
    stats = engine.stats()
    stats["file"] = {**stats["file"], "path": engine.path.name}
    return {**stats, "server": server_body(snap)}


def _label(value: object) -> str:
    text = str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{text}"'


def _num(value: float | None) -> str:
    return "NaN" if value is None else repr(float(value))


def _family(lines: list[str], name: str, kind: str, help_text: str) -> None:
    lines.append(f"# HELP {name} {help_text}")
    lines.append(f"# TYPE {name} {kind}")


def metrics_text(engine: Retriever, snap: Snapshot) -> str:
    """``GET /metrics``: the counters of /stats in the Prometheus text exposition format."""
    meta = engine.meta
    return counters_text(snap, CorpusGauges(meta["documents"], meta["chunks"], len(engine.blocklist),
                                            meta["content_identity"], meta["schema_version"]))


@dataclass(frozen=True, slots=True)
class CorpusGauges:
    """What /metrics says of the corpus served: one index's, or a shard broker's whole corpus."""

    documents: int
    chunks: int
    blocklist_docids: int
    identity: str
    schema_version: int


def counters_text(snap: Snapshot, corpus: CorpusGauges, extra: Sequence[str] = ()) -> str:
    """The Prometheus text of ``snap``'s counters and ``corpus``'s gauges, then the lines
    ``extra`` (families of their own, HELP and TYPE included)."""
    lines: list[str] = []
    per_endpoint = (
        ("drsearch_requests_total", "Requests answered, by endpoint.", "requests"),
        ("drsearch_request_errors_total", "Requests answered with status >= 400.", "errors"),
        ("drsearch_request_server_errors_total", "Requests answered with status >= 500.",
         "server_errors"),
        ("drsearch_client_disconnects_total", "Clients gone before their answer (counted as 499).",
         "client_disconnects"),
    )
    for name, help_text, attr in per_endpoint:
        _family(lines, name, "counter", help_text)
        lines += [f"{name}{{endpoint={_label(ep)}}} {getattr(c, attr)}"
                  for ep, c in snap.endpoints.items()]
    name = "drsearch_request_duration_seconds"
    _family(lines, name, "summary", "Request latency (estimated from log buckets, +-5%).")
    for ep, c in snap.endpoints.items():
        for q, v in (("0.5", c.p50_s), ("0.95", c.p95_s), ("0.99", c.p99_s)):
            lines.append(f"{name}{{endpoint={_label(ep)},quantile={_label(q)}}} {_num(v)}")
        lines.append(f"{name}_sum{{endpoint={_label(ep)}}} {_num(c.latency_sum_s)}")
        lines.append(f"{name}_count{{endpoint={_label(ep)}}} {c.requests}")
    gauges = (
        ("drsearch_uptime_seconds", "Seconds since the first worker of this run started.",
         _num(snap.uptime_s)),
        ("drsearch_workers_live", "Worker processes of this run now alive.", str(snap.workers_live)),
        ("drsearch_workers_started", "Worker processes started in this run (restarts included).",
         str(snap.workers_started)),
        ("drsearch_corpus_documents", "Documents in the index.", str(corpus.documents)),
        ("drsearch_corpus_chunks", "Chunks in the index.", str(corpus.chunks)),
        ("drsearch_blocklist_docids", "Docids in the blocklist.", str(corpus.blocklist_docids)),
    )
    for name, help_text, value in gauges:
        _family(lines, name, "gauge", help_text)
        lines.append(f"{name} {value}")
    _family(lines, "drsearch_info", "gauge", "Server version and corpus identity.")
    lines.append(f"drsearch_info{{version={_label(__version__)},"
                 f"identity={_label(corpus.identity)},"
                 f"schema_version={_label(corpus.schema_version)}}} 1")
    lines.extend(extra)
    return "\n".join(lines) + "\n"


def gauge_family(name: str, help_text: str,
                 samples: Sequence[tuple[dict[str, object], float | int]]) -> list[str]:
    """One gauge family's lines: HELP, TYPE and a sample per (labels, value)."""
    lines: list[str] = []
    _family(lines, name, "gauge", help_text)
    for labels, value in samples:
        inner = ",".join(f"{k}={_label(v)}" for k, v in labels.items())
        lines.append(f"{name}{{{inner}}} {value}" if inner else f"{name} {value}")
    return lines


__all__ = [
    "PROMETHEUS_CONTENT_TYPE",
    "CorpusGauges",
    "blocklist_enabled",
    "counters_text",
    "gauge_family",
    "health_body",
    "metrics_text",
    "server_body",
    "stats_body",
]
