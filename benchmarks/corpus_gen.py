"""Deterministic DR-256-shaped benchmark corpus and agent-style queries.

The corpus is synthetic but built only from real text: the 181 articles vendored in
``data/sample/docs.jsonl``. Recipe (docs/BENCHMARKS.md, docs/DESIGN.md "Benchmark corpus"):

- document ``i`` takes a real page (sources are dealt out evenly in a seeded order), its title
  and all its paragraphs, in order;
- it is then filled to a log-normal target length (sigma = 1) with paragraphs drawn 70% from
  the same page and 30% from any page, until the target word count is reached;
- the log-normal mean is solved for (bisection on the exact outcome) so that the corpus has
  DR-256's 243,615 / 30,318 = 8.035 chunks per document (800-word windows, 700-word stride).

Each document's fill stream comes from its own RNG (seed, i), so the corpus is identical for a
given (sample file, document count, seed). The same seed gives 300 agent-style queries: 3-20
words from real titles and content words with quotes, colons, ``?``, ``*``, ``--``,
hyphens, apostrophes, years and ``NOT``/``OR``. Files are cached under ``benchmarks/.cache/``.

Usage::

    python benchmarks/corpus_gen.py [--docs 30318] [--queries 300] [--seed 1]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

GENERATOR_VERSION = 1
REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "data" / "sample" / "docs.jsonl"
CACHE = Path(__file__).resolve().parent / ".cache"

DR256_DOCS = 30_318
DR256_CHUNKS = 243_615
CHUNKS_PER_DOC = DR256_CHUNKS / DR256_DOCS  # 8.035
CHUNK_WORDS = 800  # DR-256's rule (drsearch.index.chunking)
CHUNK_STRIDE = 700
SIGMA = 1.0
SAME_SOURCE = 0.7
Z_CLIP = 4.0  # no document longer than exp(mu + 4) words (~180K at full scale)
DEFAULT_SEED = 1
DEFAULT_QUERIES = 300

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Source:
    """A real page: its title, URL and paragraphs (split on blank lines)."""

    docid: str
    url: str
    title: str
    paragraphs: tuple[str, ...]


def load_sources(path: Path = SAMPLE) -> list[Source]:
    """Read the vendored sample pages; paragraphs are blank-line separated blocks. The
    sample's leak-artifact pages (written by this project, data/README.md) are skipped."""
    out = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            d = json.loads(line)
            if d.get("source_id", "").startswith("drsearch-leak-artifact:"):
                continue
            paras = tuple(p.strip() for p in d["text"].split("\n\n") if p.strip())
            if paras:
                out.append(Source(d["docid"], d["url"], d["title"], paras))
    if not out:
        raise SystemExit(f"{path}: no usable pages")
    return out


def n_chunks(words: I64) -> I64:
    """Chunks per document for word counts (vectorised ``chunk_spans``): 1 up to 800 words."""
    extra = np.maximum(words - CHUNK_WORDS, 0)
    return np.where(words > 0, 1 + (extra + CHUNK_STRIDE - 1) // CHUNK_STRIDE, 0)


@dataclass(frozen=True, slots=True)
class CorpusPlan:
    """Which paragraphs make up each synthetic document (indices into the global list)."""

    source_of_doc: I64  # source page index per document
    para_ids: list[I64]  # per document: global paragraph ids, in order
    words: I64  # words per document
    mu: float  # the solved log-normal mean (of ln words)


class _Paragraphs:
    """All paragraphs of all sources, with word counts and per-source id ranges."""

    def __init__(self, sources: Sequence[Source]) -> None:
        self.text: list[str] = [p for s in sources for p in s.paragraphs]
        self.words: I64 = np.array([len(p.split()) for p in self.text], dtype=np.int64)
        sizes = np.array([len(s.paragraphs) for s in sources], dtype=np.int64)
        self.start: I64 = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        self.size: I64 = sizes
        self.source_words: I64 = np.add.reduceat(self.words, self.start)


def _fill_stream(paras: _Paragraphs, src: int, rng: np.random.Generator,
                 need_words: float) -> I64:
    """The source's own paragraphs, then 70/30 draws, until ``need_words`` is reached.

    Draws are prefix-stable (one uniform pair per slot), so a longer stream extends a shorter
    one: the document for any mean is a prefix of this stream.
    """
    own = np.arange(paras.start[src], paras.start[src] + paras.size[src], dtype=np.int64)
    have = int(paras.source_words[src])
    parts = [own]
    mean_words = float(paras.words.mean())
    while have < need_words:
        n = max(16, int((need_words - have) / mean_words * 1.2) + 1)
        u = rng.random((n, 2))
        same = paras.start[src] + np.minimum((u[:, 1] * paras.size[src]).astype(np.int64),
                                             paras.size[src] - 1)
        anywhere = np.minimum((u[:, 1] * len(paras.text)).astype(np.int64), len(paras.text) - 1)
        ids = np.where(u[:, 0] < SAME_SOURCE, same, anywhere)
        parts.append(ids)
        have += int(paras.words[ids].sum())
    return np.concatenate(parts)


def plan_corpus(sources: Sequence[Source], n_docs: int, seed: int,
                chunks_per_doc: float = CHUNKS_PER_DOC) -> CorpusPlan:
    """Choose every document's paragraphs so the corpus averages ``chunks_per_doc`` chunks."""
    paras = _Paragraphs(sources)
    rng = np.random.default_rng([seed, 0])
    reps = -(-n_docs // len(sources))
    source_of_doc = rng.permutation(np.tile(np.arange(len(sources)), reps))[:n_docs]
    z = np.clip(rng.standard_normal(n_docs), -Z_CLIP, Z_CLIP)
    src_words = paras.source_words[source_of_doc]
    target_chunks = round(chunks_per_doc * n_docs)

    def approx_total(mu: float) -> int:
        return int(n_chunks(np.maximum(src_words, np.ceil(np.exp(mu + SIGMA * z))
                                       .astype(np.int64))).sum())

    mu_a = _bisect(approx_total, target_chunks, 0.0, 16.0)
    mu_hi = mu_a + 0.5
    streams = [_fill_stream(paras, int(s), np.random.default_rng([seed, 1, i]),
                            math.exp(mu_hi + SIGMA * float(z[i])))
               for i, s in enumerate(source_of_doc.tolist())]
    # Global cumulative word counts; doc i's stream is segment [seg[i], seg[i+1]).
    flat = np.concatenate(streams)
    cum = np.cumsum(paras.words[flat])
    seg = np.concatenate(([0], np.cumsum([len(s) for s in streams])))
    base = np.concatenate(([0], cum))[seg[:-1]]
    n_own = paras.size[source_of_doc]

    def take(mu: float) -> I64:
        """Paragraphs per document for mean ``mu`` (at least the source's own)."""
        target = np.exp(mu + SIGMA * z)
        pos = np.searchsorted(cum, base + target, side="left")  # first prefix reaching it
        n = pos - seg[:-1] + 1
        out: I64 = np.clip(np.maximum(n, n_own), 1, np.diff(seg))
        return out

    def words_for(n: I64) -> I64:
        return cum[seg[:-1] + n - 1] - base

    def exact_total(mu: float) -> int:
        return int(n_chunks(words_for(take(mu))).sum())

    mu = _bisect(exact_total, target_chunks, mu_a - 1.0, mu_hi)
    n = take(mu)
    if np.any((n == np.diff(seg)) & (words_for(n) < np.exp(mu + SIGMA * z))):
        raise RuntimeError("fill stream too short: raise mu_hi")
    return CorpusPlan(source_of_doc, [s[:k] for s, k in zip(streams, n.tolist(), strict=True)],
                      words_for(n), mu)


def _bisect(f: Callable[[float], int], target: int, lo: float, hi: float) -> float:
    """Smallest x in [lo, hi] (to 1e-9) with f(x) >= target, for nondecreasing f."""
    for _ in range(80):
        mid = (lo + hi) / 2
        if f(mid) >= target:
            hi = mid
        else:
            lo = mid
        if hi - lo < 1e-9:
            break
    return hi


def iter_documents(sources: Sequence[Source], plan: CorpusPlan) -> Iterator[dict[str, str]]:
    """The synthetic documents, in sorted docid order."""
    paras = _Paragraphs(sources)
    width = max(5, len(str(len(plan.para_ids))))
    for i, (src, ids) in enumerate(zip(plan.source_of_doc.tolist(), plan.para_ids, strict=True)):
        s = sources[src]
        host = s.url.split("/")[2] if s.url.count("/") >= 2 else "example.org"
        docid = f"syn-{i:0{width}d}"
        yield {
            "docid": docid,
            "url": f"https://{host}/drsearch-bench/{docid}",
            "title": s.title,
            "text": "\n\n".join(paras.text[j] for j in ids.tolist()),
            "source_docid": s.docid,
        }


# -- queries ---------------------------------------------------------------------------------

_STOP_WORDS = """a about above after again against all also am an and any are as at be
because been before being below between both but by can could did do does doing down during
each few for from further had has have having he her here hers him his how i if in into is it
its itself just more most my no nor not now of off on once only or other our out over own same
she should so some such than that the their them then there these they this those through to
too under until up very was we were what when where which while who whom why will with would
you your said says like one two new also get got make made year years time just"""
_STOP = frozenset(_STOP_WORDS.split())
_WORD = re.compile(r"[^\W\d_](?:[^\W\d_]|['’-])*[^\W\d_]")
_YEARS = ("2017", "2018", "2019", "2020", "2021")
_WH = ("what", "who", "when", "how", "why", "which", "where")


def _clean_title(title: str) -> str:
    for sep in (" | ", " - ", " — ", " – "):
        head, _, tail = title.rpartition(sep)
        if head and len(tail.split()) <= 4:
            title = head
    return title.strip()


class _QueryMaker:
    """Agent-style query strings from one page's title and text."""

    def __init__(self, sources: Sequence[Source], rng: np.random.Generator) -> None:
        self.sources = sources
        self.rng = rng
        self.content: list[list[str]] = []
        self.proper: list[list[str]] = []
        for s in sources:
            words = [w.replace("’", "'") for p in s.paragraphs for w in _WORD.findall(p)]
            self.content.append([w.lower() for w in words
                                 if len(w) > 3 and w.lower() not in _STOP and "'" not in w])
            self.proper.append([w for w in words if w[0].isupper() and w.lower() not in _STOP
                                and len(w) > 2 and "'" not in w])

    def pick(self, seq: Sequence[str], n: int) -> list[str]:
        if not seq:
            return []
        idx = self.rng.integers(0, len(seq), size=n)
        return [seq[i] for i in idx.tolist()]

    def phrase(self, src: int, n: int) -> str:
        paras = self.sources[src].paragraphs
        words = paras[int(self.rng.integers(len(paras)))].split()
        if len(words) <= n:
            return " ".join(words)
        start = int(self.rng.integers(0, len(words) - n))
        return " ".join(words[start:start + n]).strip(".,;:!?\"'“”()")

    def make(self, i: int) -> str:
        rng = self.rng
        src = int(rng.integers(len(self.sources)))
        title = _clean_title(self.sources[src].title)
        content, proper = self.content[src] or ["news"], self.proper[src] or ["Report"]
        kind = i % 12
        w = self.pick(content, 6)
        year = _YEARS[int(rng.integers(len(_YEARS)))]
        if kind == 0:
            tw = title.split()
            n = int(rng.integers(3, min(12, max(3, len(tw))) + 1))
            q = " ".join(tw[:n])
        elif kind == 1:
            q = f"{_WH[int(rng.integers(len(_WH)))]} {self.pick(proper, 1)[0]} {' '.join(w[:3])}?"
        elif kind == 2:
            q = f'"{self.phrase(src, int(rng.integers(2, 5)))}" {w[0]} {year}'
        elif kind == 3:
            q = f"{self.pick(proper, 1)[0]}: {' '.join(w[:int(rng.integers(2, 5))])}"
        elif kind == 4:
            q = f"{w[0]}* {w[1]} {w[2]}"
        elif kind == 5:
            q = f"{' '.join(w[:2])} -- {' '.join(w[2:4])}"
        elif kind == 6:
            q = f"{w[0]}-{w[1]} {w[2]} {year}"
        elif kind == 7:
            q = f"{self.pick(proper, 1)[0]}'s {' '.join(w[:int(rng.integers(2, 5))])}"
        elif kind == 8:
            q = f"{' '.join(w[:2])} NOT {w[2]}"
        elif kind == 9:
            q = f"{w[0]} OR {w[1]} {w[2]}"
        elif kind == 10:
            other = int(rng.integers(len(self.sources)))
            q = " ".join(self.pick(content, 8) + self.pick(self.content[other] or ["news"], 8)
                         + [year])
        else:
            q = f"{title}? {self.phrase(src, int(rng.integers(3, 8)))}"
        if 1 <= kind <= 9 and rng.random() < 0.5:  # agents often add a few more keywords
            q += " " + " ".join(self.pick(content, int(rng.integers(1, 6))))
        return self._shape(q, content)

    def _shape(self, q: str, content: Sequence[str]) -> str:
        words = q.split()
        while len(words) < 3:
            words.append(self.pick(content, 1)[0])
        return " ".join(words[:20])


def make_queries(sources: Sequence[Source], n: int, seed: int) -> list[str]:
    """``n`` deterministic agent-style queries (3-20 words each)."""
    maker = _QueryMaker(sources, np.random.default_rng([seed, 2]))
    return [maker.make(i) for i in range(n)]


# -- cache -----------------------------------------------------------------------------------

def _sample_digest(path: Path = SAMPLE) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:12]


def _atomic_write(path: Path, lines: Iterator[str]) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            for line in lines:
                fh.write(line)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def ensure_corpus(n_docs: int = DR256_DOCS, seed: int = DEFAULT_SEED,
                  cache: Path = CACHE) -> tuple[Path, dict[str, float | int | str]]:
    """Generate (or reuse) the corpus JSONL; returns its path and summary statistics."""
    cache.mkdir(parents=True, exist_ok=True)
    stem = f"corpus-v{GENERATOR_VERSION}-{_sample_digest()}-n{n_docs}-s{seed}"
    path, meta_path = cache / f"{stem}.jsonl", cache / f"{stem}.meta.json"
    if path.is_file() and meta_path.is_file():
        return path, json.loads(meta_path.read_text())
    sources = load_sources()
    plan = plan_corpus(sources, n_docs, seed)
    _atomic_write(path, (json.dumps(d, ensure_ascii=False) + "\n"
                         for d in iter_documents(sources, plan)))
    chunks = int(n_chunks(plan.words).sum())
    meta: dict[str, float | int | str] = {
        "documents": n_docs, "seed": seed, "chunks": chunks,
        "chunks_per_doc": chunks / n_docs, "words": int(plan.words.sum()),
        "mu": plan.mu, "sigma": SIGMA, "same_source": SAME_SOURCE,
        "bytes": path.stat().st_size, "sample_sha256_12": _sample_digest(),
        "generator_version": GENERATOR_VERSION,
    }
    meta_path.write_text(json.dumps(meta, indent=2) + "\n")
    return path, meta


def ensure_queries(n: int = DEFAULT_QUERIES, seed: int = DEFAULT_SEED,
                   cache: Path = CACHE) -> tuple[Path, list[str]]:
    """Generate (or reuse) the query list (JSON array); returns its path and the queries."""
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / f"queries-v{GENERATOR_VERSION}-{_sample_digest()}-n{n}-s{seed}.json"
    if not path.is_file():
        queries = make_queries(load_sources(), n, seed)
        _atomic_write(path, iter([json.dumps(queries, ensure_ascii=False, indent=0) + "\n"]))
    return path, json.loads(path.read_text(encoding="utf-8"))


def add_scale_args(ap: argparse.ArgumentParser) -> None:
    """The options every benchmark script shares: corpus size, queries, seed, tokenizer."""
    ap.add_argument("--docs", type=int, default=DR256_DOCS, help="documents (default: DR-256's)")
    ap.add_argument("--queries", type=int, default=DEFAULT_QUERIES)
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--tokenizer", choices=("porter", "unicode61"), default="porter")


def bench_dir(args: argparse.Namespace) -> Path:
    """Where search_bench.py keeps the indexes built for these scale options."""
    return CACHE / f"bench-n{args.docs}-s{args.seed}-{args.tokenizer}"


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: generate the corpus and queries, print their paths and statistics."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=DR256_DOCS, help="documents (default: DR-256's)")
    ap.add_argument("--queries", type=int, default=DEFAULT_QUERIES)
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    args = ap.parse_args(argv)
    if args.docs < 1 or args.queries < 1:
        ap.error("--docs and --queries must be positive")
    corpus, meta = ensure_corpus(args.docs, args.seed)
    qpath, queries = ensure_queries(args.queries, args.seed)
    print(f"corpus  {corpus}\n        {json.dumps(meta)}")
    print(f"queries {qpath} ({len(queries)})")
    for q in queries[:12]:
        print(f"  {q}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
