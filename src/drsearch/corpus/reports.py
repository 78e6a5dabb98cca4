"""``coverage_summary.json`` and ``source_manifest_summary.json``, as DR-256 ships them.

Both files carry the corpus counts that release validation compares with the index
(``documents``, ``indexed_documents``, ``empty_documents``, ``chunks``, ``content_identity``;
see drsearch.release.checks) plus the crawl's own accounting, whose numbers add up
(``coverage_problems`` lists every equation that does not hold; a test checks them):

    url_records      = fetched_ok + failed + robots_disallowed
    fetched_ok       = extracted + extraction_empty + skipped
    extracted        = input_documents                 (docs.jsonl is the extract output)
    input_documents  = rejected_documents + duplicates + documents
    documents        = indexed_documents + empty_documents
    failed           = Σ failed_by_reason;  skipped = Σ skipped_by_reason;
    rejected_documents = Σ rejected_by_reason
    url_records      = Σ hosts[*].records;  documents = Σ hosts[*].documents

The fetch and extract lines are present only when the documents came from
``drsearch corpus extract`` (its report lies beside docs.jsonl).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from ..index import BuildReport
from .urllist import host_of

TOP_DOMAINS = 20
FETCH_KEYS = ("url_records", "fetched_ok", "failed", "failed_by_reason", "robots_disallowed",
              "malformed_url_lines", "invalid_records", "superseded_records")
EXTRACT_KEYS = ("extracted", "extraction_empty", "skipped", "skipped_by_reason", "extractors")


def _domain(host: str) -> str:
    return host.removeprefix("www.") or "(none)"


def coverage_summary(extract: Mapping[str, Any] | None, rejected: Mapping[str, int], duplicates: int,
                     input_documents: int, report: BuildReport) -> dict[str, Any]:
    """The coverage summary of one corpus build (see the module docstring for the keys)."""
    out: dict[str, Any] = {}
    if extract is not None:
        out.update({k: extract[k] for k in (*FETCH_KEYS, *EXTRACT_KEYS) if k in extract})
    out.update({
        "input_documents": input_documents,
        "rejected_documents": sum(rejected.values()),
        "rejected_by_reason": dict(sorted(rejected.items())),
        "duplicates": duplicates,
        "documents": report.documents,
        "indexed_documents": report.indexed_documents,
        "empty_documents": report.empty_documents,
        "chunks": report.chunks,
        "chunks_per_document": round(report.chunks / max(1, report.indexed_documents), 4),
        "url_collisions": report.url_collisions,
        "content_identity": report.content_identity,
    })
    return out


def source_summary(docs: Iterable[Mapping[str, Any]], extract: Mapping[str, Any] | None, input_name: str,
                   input_sha256: str) -> dict[str, Any]:
    """Per-host counts (records, outcomes, bytes, documents), content types and bytes.

    Keeps the keys of the release tooling's source summary (``input``, ``documents``,
    ``sources``, ``domains``, ``top_domains``) so a corpus built here can go into a release.
    """
    hosts: dict[str, dict[str, int]] = {
        h: {**c, "documents": 0} for h, c in ((extract or {}).get("hosts") or {}).items()
    }
    domains: Counter[str] = Counter()
    sources: set[str] = set()
    n = 0
    for doc in docs:
        n += 1
        host = host_of(str(doc.get("url", "")))
        entry = hosts.setdefault(host, {"records": 0, "ok": 0, "failed": 0, "disallowed": 0, "bytes": 0,
                                        "documents": 0})
        entry["documents"] += 1
        domains[_domain(host)] += 1
        sources.add(str(doc.get("source_id", doc.get("docid"))))
    top = sorted(domains.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_DOMAINS]
    return {
        "input": {"name": input_name, "sha256": input_sha256},
        "documents": n,
        "sources": len(sources),
        "domains": len(domains),
        "top_domains": [{"domain": d, "documents": c} for d, c in top],
        "hosts": dict(sorted(hosts.items())),
        "content_types": dict((extract or {}).get("content_types") or {}),
        "bytes": int((extract or {}).get("bytes") or 0),
    }


def _sum(mapping: Any) -> int:
    return sum(mapping.values()) if isinstance(mapping, Mapping) else 0


def coverage_problems(coverage: Mapping[str, Any], sources: Mapping[str, Any] | None = None) -> list[str]:
    """Every accounting equation of the module docstring that does not hold ([] if all do)."""
    c = coverage
    eqs: list[tuple[str, int, int]] = [
        ("input_documents = rejected_documents + duplicates + documents", c["input_documents"],
         c["rejected_documents"] + c["duplicates"] + c["documents"]),
        ("documents = indexed_documents + empty_documents", c["documents"],
         c["indexed_documents"] + c["empty_documents"]),
        ("rejected_documents = Σ rejected_by_reason", c["rejected_documents"], _sum(c["rejected_by_reason"])),
    ]
    if "url_records" in c:
        eqs += [
            ("url_records = fetched_ok + failed + robots_disallowed", c["url_records"],
             c["fetched_ok"] + c["failed"] + c["robots_disallowed"]),
            ("failed = Σ failed_by_reason", c["failed"], _sum(c["failed_by_reason"])),
        ]
    if "extracted" in c:
        eqs += [
            ("fetched_ok = extracted + extraction_empty + skipped", c["fetched_ok"],
             c["extracted"] + c["extraction_empty"] + c["skipped"]),
            ("skipped = Σ skipped_by_reason", c["skipped"], _sum(c["skipped_by_reason"])),
            ("extracted = input_documents", c["extracted"], c["input_documents"]),
        ]
    if sources is not None:
        hosts = sources["hosts"].values()
        eqs.append(("documents = Σ hosts.documents", c["documents"], sum(h["documents"] for h in hosts)))
        eqs.append(("documents = source summary documents", c["documents"], sources["documents"]))
        if "url_records" in c:
            eqs.append(("url_records = Σ hosts.records", c["url_records"], sum(h["records"] for h in hosts)))
    return [f"{name}: {left} != {right}" for name, left, right in eqs if left != right]


__all__ = ["coverage_problems", "coverage_summary", "source_summary"]
