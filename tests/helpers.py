"""Test helpers: real data vendored in data/ (nothing outside the repository, no network)."""

from __future__ import annotations

import json
import re
import socketserver
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from drsearch.index import BlockList
from drsearch.server import free_port as free_port

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "data"


def cranfield_docs() -> list[dict[str, Any]]:
    """The 1,400 Cranfield abstracts as drsearch documents (title + text)."""
    text = (DATA / "testcollections/cranfield/cran.all.1400").read_text(errors="replace")
    docs = []
    for rec in re.split(r"^\.I ", text, flags=re.M)[1:]:
        num = rec.split("\n", 1)[0].strip()
        title = re.search(r"^\.T\n(.*?)(?=^\.[A-Z]\n|\Z)", rec, re.S | re.M)
        body = re.search(r"^\.W\n(.*)", rec, re.S | re.M)
        docs.append({"docid": f"cran-{num}", "url": f"https://cranfield.example/doc/{num}",
                     "title": title.group(1).strip() if title else "",
                     "text": body.group(1).strip() if body else ""})
    return docs


def cranfield_queries() -> list[str]:
    text = (DATA / "testcollections/cranfield/cran.qry").read_text(errors="replace")
    return [re.sub(r"\s+", " ", q.split(".W\n", 1)[1]).strip()
            for q in re.split(r"^\.I ", text, flags=re.M)[1:]]


def cranfield_qrels_lines() -> list[str]:
    """``cranqrel`` as TREC qrels: query ids are positions in cran.qry (1..225), docids
    ``cran-N``, grade 1..4 -> relevance 5 - grade, grade -1 -> 0 (judged non-relevant)."""
    lines = []
    for row in (DATA / "testcollections/cranfield/cranqrel").read_text().splitlines():
        qid, doc, grade = row.split()
        rel = 0 if int(grade) < 0 else 5 - int(grade)
        lines.append(f"{qid} 0 cran-{doc} {rel}\n")
    return lines


def sample_docs() -> list[dict[str, Any]]:
    """The demo corpus: 181 real web articles and 3 leak-artifact pages written by this project."""
    with open(DATA / "sample/docs.jsonl", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def blocklist_of(*docids: str) -> BlockList:
    return BlockList.from_bytes(("\n".join(docids) + "\n").encode())


_FTS5_RANKINGS: dict[tuple[Any, ...], tuple[np.ndarray, np.ndarray]] = {}


def fts5_oracle(engine: Any, query: str, limit: int = 100_000) -> list[tuple[int, float]]:
    """``engine.fts5_rank(query, limit)``, asked once per index file and query in this process.

    FTS5's ranking is a function of the file and the query alone, not of the scorer, pruning or
    posting-read settings that the oracle tests vary, and it is their slow side (no top-k
    pruning: most of a second per Cranfield query): the modules that compare every scorer mode,
    k or threshold with it on all Cranfield queries asked it the same question up to 8 times.
    The key names the file's identity, size and mtime, so a rewritten index is asked again; the
    rows and scores are kept as arrays (a million tuples would take over 100 MB) and given back
    as the same (rowid, float) pairs, bit for bit."""
    st = Path(engine.path).stat()
    key = (str(Path(engine.path).resolve()), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, query, limit)
    if key not in _FTS5_RANKINGS:
        ranked = engine.fts5_rank(query, limit)
        _FTS5_RANKINGS[key] = (np.array([r for r, _ in ranked], dtype=np.int64),
                               np.array([s for _, s in ranked], dtype=np.float64))
    rows, scores = _FTS5_RANKINGS[key]
    return list(zip(rows.tolist(), scores.tolist(), strict=True))


def best_chunk_per_doc(engine: Any, ranked: list[tuple[int, float]], k: int) -> list[tuple[int, float]]:
    """Group an FTS5 chunk ranking to the best chunk per document, first k documents."""
    seen: set[int] = set()
    out = []
    for chunk, score in ranked:
        doc = int(engine._chunk_doc[chunk])
        if doc not in seen:
            seen.add(doc)
            out.append((chunk, score))
            if len(out) == k:
                break
    return out


def strict_mode_problems(schema: dict[str, Any], where: str = "$") -> list[str]:
    """Why ``schema`` would be refused by OpenAI's strict mode (structured outputs), if it would:
    an object root, every object closed (``additionalProperties: false``) with every property
    in ``required`` (optional ones are nullable instead), no root-level combinators."""
    problems = []
    if where == "$":
        if schema.get("type") != "object":
            problems.append("$: the root must be an object")
        problems += [f"$: {kw} at the root" for kw in ("anyOf", "oneOf", "allOf", "not", "enum") if kw in schema]
    types = schema.get("type")
    if types == "object" or (isinstance(types, list) and "object" in types):
        props = schema.get("properties", {})
        if schema.get("additionalProperties") is not False:
            problems.append(f"{where}: additionalProperties must be false")
        if sorted(schema.get("required", [])) != sorted(props):
            problems.append(f"{where}: required {schema.get('required')} != properties {sorted(props)}")
        for name, sub in props.items():
            problems += strict_mode_problems(sub, f"{where}.{name}")
    for sub in schema.get("anyOf", []):
        problems += strict_mode_problems(sub, f"{where}|")
    if isinstance(schema.get("items"), dict):
        problems += strict_mode_problems(schema["items"], f"{where}[]")
    return problems


@contextmanager
def serving_in_thread(server: socketserver.BaseServer) -> Iterator[None]:
    """Serve a loopback test server from a daemon thread; shut it down and close it on exit."""
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield
    finally:
        server.shutdown()
        server.server_close()
