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

``--vocabulary large`` is the same corpus with rare entity-like names injected: in each
document a seeded ``--entity-rate`` (5%) of the words are replaced, each by a name drawn from
a Zipf distribution (s = 1) over ``--entity-types`` (2,000,000) synthetic names such as
``Bakuziroto``, so word and chunk counts are those of the normal corpus and the vocabulary
grows by about 1.7 M types at 121,272 documents. Per name, its count and the first document
it went into are kept (``.entities.npz``); they give two more query classes: *entity*
queries (1-2 rare names + 2 content words of the page the first name went into, in a seeded
order) and *rare* queries (one rare name alone). "Rare": at most one occurrence per 1,000
chunks, drawn log-uniformly over the Zipf ranks that occur.

``--passages N`` writes a passage corpus shaped as Search-R1's and Pyserini's wiki-18 is
shipped instead: lines ``{"id", "contents"}``, ids ``"0"``, ``"1"``, ... in order, ``contents``
the article's title in double quotes, a newline, then 100 words (DPR's split of Wikipedia: an
article cut into consecutive 100-word passages, its last one shorter). The articles are the
documents above (with ``--vocabulary large``, their entity names), as many as give N passages;
they are longer than Wikipedia's (about 57 passages each against wiki-18's ~6.6), which only
changes how often a title repeats. ``drsearch build`` takes the file as is (one chunk each).

Usage::

    python benchmarks/corpus_gen.py [--docs 30318] [--queries 300] [--seed 1] [--vocabulary large]
    python benchmarks/corpus_gen.py --passages 2000000 [--seed 1] [--vocabulary large]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import sys
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

GENERATOR_VERSION = 1
REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "data" / "sample" / "docs.jsonl"
# Generated corpora, queries and indexes (DRSEARCH_BENCH_CACHE: elsewhere, e.g. a bigger disk).
CACHE = Path(os.environ.get("DRSEARCH_BENCH_CACHE") or Path(__file__).resolve().parent / ".cache")

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
        self.chars: I64 = np.array([len(p) for p in self.text], dtype=np.int64)
        self._offsets: tuple[I64, I64, I64] | None = None
        self._content: tuple[I64, I64, I64, I64] | None = None

    @property
    def content_count(self) -> I64:
        """Content words per paragraph (``content_spans``)."""
        return self.content_spans()[3]

    def content_spans(self) -> tuple[I64, I64, I64, I64]:
        """The content words of every paragraph, where the web vocabulary puts its tail types:
        whitespace tokens whose letters (punctuation around them left out) are all alphabetic,
        longer than 3 and not a stop word. Flat start and end character spans of those
        letters, each paragraph's first index into them, and its count."""
        if self._content is None:
            starts: list[int] = []
            ends: list[int] = []
            count = np.zeros(len(self.text), dtype=np.int64)
            for j, t in enumerate(self.text):
                n = 0
                for m in _WORD_SPAN.finditer(t):
                    core = _CORE.fullmatch(m.group())
                    if core is None:
                        continue
                    word = core.group(1)
                    if len(word) <= 3 or word.lower() in _STOP:
                        continue
                    starts.append(m.start() + core.start(1))
                    ends.append(m.start() + core.end(1))
                    n += 1
                count[j] = n
            first = np.concatenate(([0], np.cumsum(count)[:-1])).astype(np.int64)
            self._content = (np.array(starts, dtype=np.int64), np.array(ends, dtype=np.int64),
                             first, count)
        return self._content

    def word_offsets(self) -> tuple[I64, I64, I64]:
        """Every paragraph's words as character spans (the ``str.split()`` words): flat start
        and end arrays, and each paragraph's first index into them."""
        if self._offsets is None:
            spans = [(m.start(), m.end()) for t in self.text for m in _WORD_SPAN.finditer(t)]
            flat = np.array(spans, dtype=np.int64).reshape(-1, 2)
            first = np.concatenate(([0], np.cumsum(self.words)[:-1]))
            if len(flat) != int(self.words.sum()):
                raise RuntimeError("word spans disagree with str.split()")
            self._offsets = (flat[:, 0].copy(), flat[:, 1].copy(), first)
        return self._offsets


_WORD_SPAN = re.compile(r"\S+")  # the words of str.split() (both use Unicode's whitespace)
_CORE = re.compile(r"[^\w]*([^\W\d_]+)[^\w]*")  # a word's letters, punctuation around them


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


def iter_documents(sources: Sequence[Source], plan: CorpusPlan,
                   entities: EntityInjector | WebInjector | None = None
                   ) -> Iterator[dict[str, str]]:
    """The synthetic documents, in sorted docid order (one at a time: nothing accumulates).

    ``entities``: replace some words of each document by rare names (``--vocabulary large``)
    or by the fitted tail types (``--vocabulary web``); the injector records what it injected
    as the documents are generated.
    """
    paras = _Paragraphs(sources)
    width = max(5, len(str(len(plan.para_ids))))
    for i, (src, ids) in enumerate(zip(plan.source_of_doc.tolist(), plan.para_ids, strict=True)):
        s = sources[src]
        host = s.url.split("/")[2] if s.url.count("/") >= 2 else "example.org"
        docid = f"syn-{i:0{width}d}"
        if entities is not None:
            text = entities.inject(i, ids, paras)
        else:
            text = "\n\n".join(paras.text[j] for j in ids.tolist())
        yield {
            "docid": docid,
            "url": f"https://{host}/drsearch-bench/{docid}",
            "title": s.title,
            "text": text,
            "source_docid": s.docid,
        }


# -- large vocabulary: rare entity-like names ------------------------------------------------

ENTITY_VERSION = 1
DEFAULT_ENTITY_TYPES = 2_000_000
DEFAULT_ENTITY_RATE = 0.05
DEFAULT_ENTITY_QUERIES = 100
ZIPF_S = 1.0
RARE_PER_CHUNKS = 1000  # a "rare" name occurs at most once per this many chunks
VOCABULARIES = ("web", "synthetic15k", "large")
VOCABULARY_ALIASES = {"normal": "synthetic15k"}  # its name until the web vocabulary came
QUERY_CLASSES = ("normal", "web", "entity", "rare", "single", "pair-rare")
# A name is 4 consonant-vowel syllables, a consonant and "o" (``Bakuziroto``): ten letters,
# capitalised. A final consonant + "o" matches no suffix of the Porter stemmer, so each name is
# one FTS5 term under both tokenizers, and distinct names stay distinct terms.
_CONS = "bcdfghjklmnprstvz"
_VOWELS = "aeiou"
_SYLLABLES = tuple(c + v for c in _CONS for v in _VOWELS)
NAME_CODES = len(_SYLLABLES) ** 4 * len(_CONS)  # 887,410,625 possible names
_NAME_MULT, _NAME_ADD = 1_000_003, 123_456_791  # rank -> code: a bijection of [0, NAME_CODES)
NAME_RE = re.compile(r"\b[BCDFGHJKLMNPRSTVZ][aeiou](?:[bcdfghjklmnprstvz][aeiou]){3}"
                     r"[bcdfghjklmnprstvz]o\b")


def entity_names(ranks: I64) -> list[str]:
    """The names of Zipf ranks (0 = the most frequent), vectorised."""
    code = (np.asarray(ranks, dtype=np.int64) * _NAME_MULT + _NAME_ADD) % NAME_CODES
    code, last = np.divmod(code, len(_CONS))
    letters = np.empty((len(code), 10), dtype=np.uint8)
    syl = np.frombuffer("".join(_SYLLABLES).encode(), dtype=np.uint8).reshape(-1, 2)
    for k in range(4):
        code, d = np.divmod(code, len(_SYLLABLES))
        letters[:, 2 * k:2 * k + 2] = syl[d]
    letters[:, 8] = np.frombuffer(_CONS.encode(), dtype=np.uint8)[last]
    letters[:, 9] = ord("o")
    letters[:, 0] -= 32  # capitalise (ASCII)
    out: list[str] = letters.view("S10").ravel().astype("U10").tolist()
    return out


def entity_rank(name: str) -> int:
    """The Zipf rank of a name made by ``entity_names`` (ValueError if it is not one)."""
    if not NAME_RE.fullmatch(name):
        raise ValueError(f"{name!r} is not an injected entity name")
    low = name.lower()
    value = 0  # entity_names peels the final consonant first, then syllables 0..3
    for k in range(3, -1, -1):
        value = value * len(_SYLLABLES) + _SYLLABLES.index(low[2 * k:2 * k + 2])
    value = value * len(_CONS) + _CONS.index(low[8])
    return ((value - _NAME_ADD) * pow(_NAME_MULT, -1, NAME_CODES)) % NAME_CODES


def zipf_cdf(types: int, s: float = ZIPF_S) -> F64:
    """Cumulative probabilities of ranks 0..types-1 under Zipf: p(r) proportional to (r+1)^-s."""
    w = np.arange(1, types + 1, dtype=np.float64) ** -s
    cdf: F64 = np.cumsum(w)
    cdf /= cdf[-1]
    return cdf


def zipf_draw(cdf: F64, rng: np.random.Generator, k: int) -> I64:
    """k ranks drawn from ``zipf_cdf``'s distribution (inverse transform)."""
    out: I64 = np.minimum(np.searchsorted(cdf, rng.random(k), side="right"),
                          len(cdf) - 1).astype(np.int64)
    return out


class EntityInjector:
    """Replaces a seeded fraction of each document's words by Zipf-drawn names, and records
    each name's occurrences and the first document it went into.

    Document ``i``'s draws come from its own RNG (seed, 3, i): the same (corpus, seed, types,
    rate) always gives the same bytes. Words are whitespace tokens, replaced in place with the
    whitespace around them kept, so every document keeps its word (and chunk) count.
    """

    def __init__(self, seed: int, types: int, rate: float) -> None:
        if not 1 <= types <= NAME_CODES:
            raise ValueError(f"entity types must be in 1..{NAME_CODES:,}, not {types}")
        if not 0.0 < rate < 1.0:
            raise ValueError(f"entity rate must be in (0, 1), not {rate}")
        self.seed, self.types, self.rate = seed, types, rate
        self.cdf = zipf_cdf(types)
        self.names = entity_names(np.arange(types, dtype=np.int64))
        self.counts: I64 = np.zeros(types, dtype=np.int64)
        self.first_doc = np.full(types, -1, dtype=np.int32)
        self.injected = 0

    def draw(self, rng: np.random.Generator, k: int) -> I64:
        """k Zipf ranks."""
        return zipf_draw(self.cdf, rng, k)

    def inject(self, doc: int, ids: I64, paras: _Paragraphs) -> str:
        """Document ``doc`` (paragraphs ``ids``, joined by blank lines) with names put in.

        Works on character spans (one slice per name), not on split words: a document has
        ~5,600 words and ~100 paragraphs but only ~280 names.
        """
        text = "\n\n".join([paras.text[j] for j in ids.tolist()])
        words = paras.words[ids]
        total = int(words.sum())
        rng = np.random.default_rng([self.seed, 3, doc])
        k = int(rng.binomial(total, self.rate))
        if k == 0:
            return text
        pos = np.sort(rng.choice(total, size=k, replace=False))
        ranks = self.draw(rng, k)
        np.add.at(self.counts, ranks, 1)
        fresh = ranks[self.first_doc[ranks] < 0]
        self.first_doc[fresh] = doc
        self.injected += k
        starts, ends, first = paras.word_offsets()
        word0 = np.concatenate(([0], np.cumsum(words)[:-1]))  # each paragraph's first word
        char0 = np.concatenate(([0], np.cumsum(paras.chars[ids] + 2)[:-1]))  # + "\n\n"
        para = np.searchsorted(word0, pos, side="right") - 1
        flat = first[ids[para]] + (pos - word0[para])
        # the kept text: [0, start of name 0), [end of name 0, start of name 1), ..., [end, len)
        cuts = np.empty(2 * k + 2, dtype=np.int64)
        cuts[0], cuts[-1] = 0, len(text)
        cuts[1:-1:2], cuts[2:-1:2] = char0[para] + starts[flat], char0[para] + ends[flat]
        c = cuts.tolist()
        kept = [text[c[j]:c[j + 1]] for j in range(0, 2 * k + 2, 2)]
        names = self.names
        out = [x for pair in zip(kept, [names[r] for r in ranks.tolist()], strict=False)
               for x in pair]  # kept has one more
        out.append(kept[-1])
        return "".join(out)


def check_no_name_collisions(sources: Sequence[Source]) -> None:
    """Fail loudly if a real word of the sample looks like an injected name (its counts and
    the rare-name queries would then be wrong)."""
    for s in sources:
        for text in (s.title, *s.paragraphs):
            m = NAME_RE.search(text)
            if m:
                raise SystemExit(f"{SAMPLE}: {s.docid} has the word {m.group()!r}, which has the "
                                 "form of an injected entity name: change the name pattern")


# -- web vocabulary: a fitted Zipf-Mandelbrot tail (vocab_fit.py) ---------------------------

WEB_VERSION = 1
FIT_FILE = Path(__file__).resolve().parent / "vocab_fit.json"
WEB_KINDS = ("name", "word", "number", "alnum")
WEB_QUERY_DOCS = 1_000  # documents whose tail tokens are kept for the web query classes
_KIND_MULT = 2_654_435_761  # rank -> a fixed pseudo-random kind (Knuth's multiplicative hash)
NUMBER_BASE = 10_000_000  # tail numbers have 8 or 9 digits: no real number of the sample has


@dataclass(frozen=True, slots=True)
class WebModel:
    """The tail of ``vocab_fit.json``'s model: ranks 1..types with p(r) ~ (r + q)^-s, each
    rank one type of a fixed kind (name, word, number, letters with digits)."""

    rate: float
    q: float
    s: float
    types: int
    kinds: tuple[tuple[str, float], ...]
    digest: str

    @classmethod
    def load(cls, path: Path = FIT_FILE) -> WebModel:
        raw = path.read_bytes()
        m = json.loads(raw)["model"]
        return cls(float(m["rate"]), float(m["tail_q"]), float(m["tail_s"]), int(m["tail_types"]),
                   tuple((k, float(m["kinds"][k])) for k in WEB_KINDS),
                   hashlib.sha256(raw).hexdigest()[:12])

    def draw(self, rng: np.random.Generator, k: int) -> I64:
        """k ranks (1-based) by inverting the continuous CDF (vocab_fit.tail_cdf)."""
        a = (0.5 + self.q) ** (1 - self.s)
        b = (self.types + 0.5 + self.q) ** (1 - self.s)
        x = (a - rng.random(k) * (a - b)) ** (1 / (1 - self.s)) - self.q
        out: I64 = np.clip(np.floor(x + 0.5), 1, self.types).astype(np.int64)
        return out

    def kind_of(self, ranks: I64) -> I64:
        """Each rank's kind (index into WEB_KINDS): fixed per rank, in the fitted shares."""
        u = ((np.asarray(ranks, dtype=np.uint64) * np.uint64(_KIND_MULT)) % np.uint64(2 ** 32)) \
            .astype(np.float64) / 2 ** 32
        bounds = np.cumsum([share for _, share in self.kinds])
        out: I64 = np.minimum(np.searchsorted(bounds, u, side="right"),
                              len(WEB_KINDS) - 1).astype(np.int64)
        return out

    def tokens(self, ranks: I64) -> list[str]:
        """The text of tail ranks: a name (``Bakuziroto``), a word (``bakuziroto``), a number
        (8-9 digits) or letters with digits (``ba1234``). Every rank gets its own FTS5 term:
        names and words come from one bijection of the ranks, so no two fold to one term."""
        ranks = np.asarray(ranks, dtype=np.int64)
        kinds = self.kind_of(ranks).tolist()
        names = entity_names(ranks - 1)
        codes = ((ranks - 1) * _NAME_MULT + _NAME_ADD) % NAME_CODES
        out = []
        for kind, name, code in zip(kinds, names, codes.tolist(), strict=True):
            if kind == 0:
                out.append(name)
            elif kind == 1:
                out.append(name.lower())
            elif kind == 2:
                out.append(str(NUMBER_BASE + code))
            else:
                out.append(f"{_SYLLABLES[code % len(_SYLLABLES)]}{code // len(_SYLLABLES) + 1000}")
        return out


class WebInjector:
    """Replaces a fraction ``rate`` of each document's content words by tail types drawn from
    the fitted model, keeping the punctuation around them (so word and chunk counts are the
    normal corpus's). Document ``i`` draws from its own RNG (seed, 5, i). Records every drawn
    rank (to count types) and, for the documents in ``query_docs``, the tokens put in."""

    def __init__(self, seed: int, model: WebModel, query_docs: set[int]) -> None:
        self.seed, self.model, self.query_docs = seed, model, query_docs
        self._ranks: list[I64] = []
        self._pending = 0
        self.uniq: I64 = np.zeros(0, dtype=np.int64)
        self.counts: I64 = np.zeros(0, dtype=np.int64)
        self.injected = 0
        self.kept: dict[int, list[int]] = {}

    def inject(self, doc: int, ids: I64, paras: _Paragraphs) -> str:
        text = "\n\n".join([paras.text[j] for j in ids.tolist()])
        starts, ends, first, count = paras.content_spans()
        cc = count[ids]
        total = int(cc.sum())
        rng = np.random.default_rng([self.seed, 5, doc])
        k = int(rng.binomial(total, self.model.rate)) if total else 0
        if k == 0:
            return text
        pos = np.sort(rng.choice(total, size=k, replace=False))
        ranks = self.model.draw(rng, k)
        self._record(ranks)
        if doc in self.query_docs:
            self.kept[doc] = ranks.tolist()
        c0 = np.concatenate(([0], np.cumsum(cc)[:-1]))  # each paragraph's first content word
        char0 = np.concatenate(([0], np.cumsum(paras.chars[ids] + 2)[:-1]))  # + "\n\n"
        para = np.searchsorted(c0, pos, side="right") - 1
        flat = first[ids[para]] + (pos - c0[para])
        cuts = np.empty(2 * k + 2, dtype=np.int64)
        cuts[0], cuts[-1] = 0, len(text)
        cuts[1:-1:2], cuts[2:-1:2] = char0[para] + starts[flat], char0[para] + ends[flat]
        c = cuts.tolist()
        kept = [text[c[j]:c[j + 1]] for j in range(0, 2 * k + 2, 2)]
        out = [x for pair in zip(kept, self.model.tokens(ranks), strict=False) for x in pair]
        out.append(kept[-1])
        return "".join(out)

    def _record(self, ranks: I64) -> None:
        self.injected += len(ranks)
        self._ranks.append(ranks)
        self._pending += len(ranks)
        if self._pending >= 4_000_000:
            self._merge()

    def _merge(self) -> None:
        """Fold the pending draws into (unique ranks, counts): memory stays ~ the types seen."""
        if not self._ranks:
            return
        allr = np.concatenate([self.uniq, *self._ranks])
        weights = np.concatenate([self.counts, np.ones(self._pending, dtype=np.int64)])
        self.uniq, inv = np.unique(allr, return_inverse=True)
        self.counts = np.bincount(inv, weights=weights).astype(np.int64)
        self._ranks, self._pending = [], 0

    def finish(self) -> tuple[I64, I64]:
        """(ranks seen, their occurrence counts), ranks ascending."""
        self._merge()
        return self.uniq, self.counts


def check_no_web_collisions(sources: Sequence[Source]) -> None:
    """Fail loudly if a real word of the sample has the form of a tail type (any case): its
    type counts and the web queries would then be wrong."""
    alnum = re.compile(r"\b[bcdfghjklmnprstvz][aeiou]\d{4,}\b", re.IGNORECASE)
    number = re.compile(r"\b\d{8,9}\b")
    name = re.compile(NAME_RE.pattern, re.IGNORECASE)
    for s in sources:
        for text in (s.title, *s.paragraphs):
            for pattern in (name, alnum, number):
                m = pattern.search(text)
                if m:
                    raise SystemExit(f"{SAMPLE}: {s.docid} has the word {m.group()!r}, which has "
                                     "the form of a web-vocabulary tail type: change the forms")


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


def make_entity_queries(sources: Sequence[Source], counts: I64, first_doc: npt.NDArray[np.int32],
                        source_of_doc: I64, chunks: int, n: int,
                        seed: int) -> dict[str, list[str]]:
    """``n`` entity queries and ``n`` single-rare-name queries over the injected names.

    Names are drawn among those that occur (``counts``) at most once per ``RARE_PER_CHUNKS``
    chunks, log-uniformly over their Zipf ranks (weight 1/rank), so the draws span the whole
    range from about ``chunks / 1000`` occurrences down to one. An entity query is 1 name (even
    positions) or 2 names (odd) and 2 content words of the page the first name first went
    into, shuffled: the shape of an agent asking about a person or place (``Bakuziroto
    election turnout``). A rare query is one name alone.
    """
    cap = max(1, chunks // RARE_PER_CHUNKS)
    rare = np.flatnonzero((counts > 0) & (counts <= cap))
    if len(rare) < 2:
        raise SystemExit(f"only {len(rare)} injected names occur at most {cap} times: "
                         "raise --entity-types or the corpus size")
    cdf = np.cumsum(1.0 / (rare + 1.0))
    cdf /= cdf[-1]
    rng = np.random.default_rng([seed, 4])
    maker = _QueryMaker(sources, rng)

    def draw(k: int) -> list[int]:
        picked: list[int] = []
        while len(picked) < k:
            r = int(rare[min(int(np.searchsorted(cdf, rng.random(), side="right")), len(rare) - 1)])
            if r not in picked:
                picked.append(r)
        return picked

    entity, single = [], []
    for i in range(n):
        ranks = draw(1 + i % 2)
        src = int(source_of_doc[int(first_doc[ranks[0]])])
        words = entity_names(np.array(ranks)) + maker.pick(maker.content[src] or ["news"], 2)
        entity.append(" ".join(words[j] for j in rng.permutation(len(words)).tolist()))
        single.append(entity_names(np.array(draw(1)))[0])
    return {"entity": entity, "rare": single}


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


@dataclass(frozen=True, slots=True)
class Vocabulary:
    """Which corpus variant: ``web`` (the fitted tail, vocab_fit.py), ``synthetic15k`` (the
    sample's own ~15K terms; called ``normal`` before, which still names it), or ``large``
    (synthetic15k with entity names, with their parameters)."""

    name: str = "web"
    types: int = DEFAULT_ENTITY_TYPES
    rate: float = DEFAULT_ENTITY_RATE

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", VOCABULARY_ALIASES.get(self.name, self.name))
        if self.name not in VOCABULARIES:
            raise ValueError(f"vocabulary must be one of {VOCABULARIES}, not {self.name!r}")

    @property
    def tag(self) -> str:
        """The cache-name suffix ("" for synthetic15k: that corpus keeps its old file names)."""
        if self.name == "synthetic15k":
            return ""
        if self.name == "web":
            return f"-web{WEB_VERSION}-{WebModel.load().digest}"
        return f"-large{ENTITY_VERSION}-t{self.types}-r{self.rate:g}-z{ZIPF_S:g}"


NORMAL = Vocabulary("synthetic15k")
WEB = Vocabulary("web")


def _corpus_stem(n_docs: int, seed: int, vocab: Vocabulary) -> str:
    return f"corpus-v{GENERATOR_VERSION}-{_sample_digest()}-n{n_docs}-s{seed}{vocab.tag}"


def ensure_corpus(n_docs: int = DR256_DOCS, seed: int = DEFAULT_SEED, cache: Path = CACHE,
                  vocab: Vocabulary = WEB) -> tuple[Path, dict[str, float | int | str]]:
    """Generate (or reuse) the corpus JSONL; returns its path and summary statistics.

    The large vocabulary also writes ``<stem>.entities.npz`` (per name: ``counts`` and
    ``first_doc``; per document: ``source_of_doc``), the web vocabulary ``<stem>.web.npz``
    (the tail ranks seen and their counts, ``source_of_doc``, and the ranks put into each of
    the ``WEB_QUERY_DOCS`` query documents), both before the meta file, whose presence marks a
    complete cache entry.
    """
    cache.mkdir(parents=True, exist_ok=True)
    stem = _corpus_stem(n_docs, seed, vocab)
    path, meta_path = cache / f"{stem}.jsonl", cache / f"{stem}.meta.json"
    if path.is_file() and meta_path.is_file():
        meta = json.loads(meta_path.read_text())
        meta.setdefault("vocabulary", "synthetic15k")
        return path, meta
    sources = load_sources()
    plan = plan_corpus(sources, n_docs, seed)
    injector: EntityInjector | WebInjector | None = None
    if vocab.name == "large":
        check_no_name_collisions(sources)
        injector = EntityInjector(seed, vocab.types, vocab.rate)
    elif vocab.name == "web":
        check_no_web_collisions(sources)
        injector = WebInjector(seed, WebModel.load(), web_query_docs(n_docs, seed))
    _atomic_write(path, (json.dumps(d, ensure_ascii=False) + "\n"
                         for d in iter_documents(sources, plan, injector)))
    chunks = int(n_chunks(plan.words).sum())
    meta: dict[str, float | int | str] = {
        "documents": n_docs, "seed": seed, "chunks": chunks,
        "chunks_per_doc": chunks / n_docs, "words": int(plan.words.sum()),
        "mu": plan.mu, "sigma": SIGMA, "same_source": SAME_SOURCE,
        "bytes": path.stat().st_size, "sample_sha256_12": _sample_digest(),
        "generator_version": GENERATOR_VERSION, "vocabulary": vocab.name,
    }
    if isinstance(injector, WebInjector):
        meta.update(_save_web(cache / f"{stem}.web.npz", injector, plan))
    elif injector is not None:
        tmp = cache / f".{stem}.entities.tmp-{os.getpid()}.npz"
        np.savez_compressed(tmp, counts=injector.counts, first_doc=injector.first_doc,
                            source_of_doc=plan.source_of_doc.astype(np.int32))
        os.replace(tmp, cache / f"{stem}.entities.npz")
        meta.update({"entity_version": ENTITY_VERSION, "entity_types": vocab.types,
                     "entity_rate": vocab.rate, "zipf_s": ZIPF_S,
                     "entity_tokens": injector.injected,
                     "entity_types_present": int((injector.counts > 0).sum())})
    meta_path.write_text(json.dumps(meta, indent=2) + "\n")
    return path, meta


def web_query_docs(n_docs: int, seed: int) -> set[int]:
    """The documents whose tail tokens the web query classes are drawn from (seeded)."""
    rng = np.random.default_rng([seed, 6])
    k = min(WEB_QUERY_DOCS, n_docs)
    return set(rng.choice(n_docs, size=k, replace=False).tolist())


def _save_web(path: Path, injector: WebInjector, plan: CorpusPlan) -> dict[str, float | int | str]:
    """Write the web vocabulary's record (``ensure_corpus``) and return its meta entries:
    the tail's size and the types the fitted model expected (``vocab_fit.py``)."""
    import vocab_fit

    ranks, counts = injector.finish()
    docs = np.array(sorted(injector.kept), dtype=np.int64)
    kept = [np.array(injector.kept[d], dtype=np.int64) for d in docs.tolist()]
    offsets = np.concatenate(([0], np.cumsum([len(k) for k in kept]))).astype(np.int64)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}.npz")
    np.savez_compressed(tmp, ranks=ranks, counts=counts,
                        source_of_doc=plan.source_of_doc.astype(np.int32), query_docs=docs,
                        query_offsets=offsets,
                        query_ranks=np.concatenate(kept) if kept else np.zeros(0, np.int64))
    os.replace(tmp, path)
    model = injector.model
    fit = vocab_fit.load_fit(FIT_FILE)["model"]
    expected = vocab_fit.expected_tail_types(injector.injected, model.q, model.s, model.types)
    return {"web_version": WEB_VERSION, "fit_sha256_12": model.digest, "tail_rate": model.rate,
            "tail_tokens": injector.injected, "tail_types": len(ranks),
            "tail_types_expected": round(expected), "tail_hapax": int((counts == 1).sum()),
            "backbone_types": int(fit["backbone_types"]),
            "types": int(fit["backbone_types"]) + len(ranks)}


def make_web_queries(sources: Sequence[Source], model: WebModel,
                     web: Mapping[str, npt.NDArray[Any]], chunks: int, n: int,
                     seed: int) -> dict[str, list[str]]:
    """Three classes of ``n`` queries over a web-vocabulary corpus, each from one query
    document's own words (the page it was cut from, and the tail types put into it):

    - *web*: 2-8 words, as agents write them: 1-3 tail types (names, rare words, numbers,
      codes) and content words of the page, with a real number of the page (a year, a count)
      in a third of them, in a seeded order;
    - *entity*: a tail name (or any tail type if the document got no name) and 2 content
      words: the two-words-and-a-rare-name shape;
    - *rare*: one tail type alone that occurs at most once per ``RARE_PER_CHUNKS`` chunks.
    """
    rng = np.random.default_rng([seed, 7])
    maker = _QueryMaker(sources, rng)
    counts = dict(zip(web["ranks"].tolist(), web["counts"].tolist(), strict=True))
    cap = max(1, chunks // RARE_PER_CHUNKS)
    offsets = web["query_offsets"].tolist()
    docs = web["query_docs"].tolist()
    per_doc = [web["query_ranks"][offsets[i]:offsets[i + 1]] for i in range(len(docs))]
    usable = [i for i, r in enumerate(per_doc) if len(r)]
    if not usable:
        raise SystemExit("no query document got a tail type: the corpus is too small")
    numbers = [[w for p in s.paragraphs for w in re.findall(r"\b\d{2,4}\b", p)] for s in sources]
    out: dict[str, list[str]] = {"web": [], "entity": [], "rare": []}
    rare_pool = sorted({r for i in usable for r in per_doc[i].tolist() if counts[r] <= cap})
    for _ in range(n):
        i = usable[int(rng.integers(len(usable)))]
        src = int(web["source_of_doc"][docs[i]])
        content = maker.content[src] or ["news"]
        ranks = per_doc[i]
        length = int(rng.integers(2, 9))
        m = min(length, len(ranks), 1 + int(rng.binomial(2, 0.35)))
        picked = ranks[rng.choice(len(ranks), size=m, replace=False)]
        words = model.tokens(picked) + maker.pick(content, length - m)
        if numbers[src] and length - m >= 1 and rng.random() < 1 / 3:
            words[-1] = numbers[src][int(rng.integers(len(numbers[src])))]
        out["web"].append(" ".join(words[j] for j in rng.permutation(len(words)).tolist()))
        kinds = model.kind_of(ranks)
        named = ranks[kinds == 0]
        one = named if len(named) else ranks
        ent = model.tokens(one[int(rng.integers(len(one)))][None]) + maker.pick(content, 2)
        out["entity"].append(" ".join(ent[j] for j in rng.permutation(len(ent)).tolist()))
        if rare_pool:
            out["rare"].append(model.tokens(np.array([rare_pool[int(rng.integers(
                len(rare_pool)))]]))[0])
    if not out["rare"]:
        del out["rare"]
    return out


def ensure_web_queries(corpus: Path, meta: Mapping[str, Any], n: int,
                       seed: int) -> tuple[Path, dict[str, list[str]]]:
    """Generate (or reuse) the web, entity and rare query classes of a web-vocabulary corpus
    (``ensure_corpus``'s path and meta); returns their path and the classes."""
    stem = corpus.name.removesuffix(".jsonl")
    path = corpus.with_name(f"{stem}.queries-w{n}-s{seed}.json")
    if not path.is_file():
        web = dict(np.load(corpus.with_name(f"{stem}.web.npz")))
        queries = make_web_queries(load_sources(), WebModel.load(), web, int(meta["chunks"]),
                                   n, seed)
        _atomic_write(path, iter([json.dumps(queries, ensure_ascii=False, indent=0,
                                             sort_keys=True) + "\n"]))
    out: dict[str, list[str]] = json.loads(path.read_text(encoding="utf-8"))
    return path, out


# -- the per-query fixed cost: one-term and two-word queries ---------------------------------

SHORT_CLASSES = ("single", "pair-rare")
# A content word among the sample's FREQUENT_TYPES most common ones is "frequent" (in a
# fifth to a half of the chunks at DR-256 scale), any other content word "mid".
FREQUENT_TYPES = 300
# Pages (tail names) a large-vocabulary corpus's short queries are drawn from.
SHORT_PAGES = 1_000
# (source page, its rare types, of them its names): where the short queries are drawn from
ShortPage = tuple[int, list[str], list[str]]


def make_short_queries(sources: Sequence[Source], pages: Sequence[ShortPage], n: int,
                       seed: int) -> dict[str, list[str]]:
    """Two classes of ``n`` queries whose cost is the per-query fixed cost, not postings:

    - *single*: one term, in turn (as the web class's words are) a frequent content word of a
      page (among the sample's FREQUENT_TYPES most common), a mid-frequency one (any other)
      and one of the page's rare types (names, rare words, numbers, codes);
    - *pair-rare*: one content word of a page and one rare name of it (any rare type where
      the page has no name), in a seeded order.

    Seeded by (seed, 8), apart from every other class, so adding them changed none."""
    rng = np.random.default_rng([seed, 8])
    maker = _QueryMaker(sources, rng)
    counts = Counter(w for words in maker.content for w in words)
    frequent = [w for w, _ in counts.most_common(FREQUENT_TYPES)]
    top = set(frequent)
    out: dict[str, list[str]] = {"single": [], "pair-rare": []}
    for i in range(n):
        src, rare, names = pages[int(rng.integers(len(pages)))]
        content = maker.content[src] or ["news"]
        if i % 3 == 2:
            out["single"].append(rare[int(rng.integers(len(rare)))])
        else:
            # (a page without a frequent word: one of the sample's; without a mid one: any)
            pool = [w for w in content if (w in top) == (i % 3 == 0)] or (
                frequent if i % 3 == 0 else content)
            out["single"].append(maker.pick(pool, 1)[0])
        named = names or rare
        pair = [named[int(rng.integers(len(named)))], *maker.pick(content, 1)]
        out["pair-rare"].append(" ".join(pair[j] for j in rng.permutation(2).tolist()))
    return out


def web_short_pages(model: WebModel, web: Mapping[str, npt.NDArray[Any]]) -> list[ShortPage]:
    """The web vocabulary's query documents as :data:`ShortPage`: each one's page and the
    tail types put into it."""
    offsets = web["query_offsets"].tolist()
    pages: list[ShortPage] = []
    for i, doc in enumerate(web["query_docs"].tolist()):
        ranks = web["query_ranks"][offsets[i]:offsets[i + 1]]
        if len(ranks):
            pages.append((int(web["source_of_doc"][doc]), model.tokens(ranks),
                          model.tokens(ranks[model.kind_of(ranks) == 0])))
    return pages


def large_short_pages(stats: Mapping[str, npt.NDArray[Any]], chunks: int,
                      seed: int) -> list[ShortPage]:
    """A large-vocabulary corpus's rare names (at most once per RARE_PER_CHUNKS chunks; up to
    SHORT_PAGES of them, seeded) as :data:`ShortPage`: each one with the page it first went
    into."""
    cap = max(1, chunks // RARE_PER_CHUNKS)
    rare = np.flatnonzero((stats["counts"] > 0) & (stats["counts"] <= cap))
    rng = np.random.default_rng([seed, 9])
    picked = np.sort(rng.choice(rare, size=min(SHORT_PAGES, len(rare)), replace=False))
    names = entity_names(picked)
    return [(int(stats["source_of_doc"][int(stats["first_doc"][r])]), [name], [name])
            for r, name in zip(picked.tolist(), names, strict=True)]


def ensure_short_queries(corpus: Path, meta: Mapping[str, Any], n: int,
                         seed: int) -> tuple[Path, dict[str, list[str]]]:
    """Generate (or reuse) the single and pair-rare classes (:func:`make_short_queries`) of a
    web- or large-vocabulary corpus (``ensure_corpus``'s path and meta)."""
    stem = corpus.name.removesuffix(".jsonl")
    path = corpus.with_name(f"{stem}.queries-f{n}-s{seed}.json")
    if not path.is_file():
        if meta.get("vocabulary") == "web":
            pages = web_short_pages(WebModel.load(), dict(np.load(corpus.with_name(f"{stem}.web.npz"))))
        else:
            stats = dict(np.load(corpus.with_name(f"{stem}.entities.npz")))
            pages = large_short_pages(stats, int(meta["chunks"]), seed)
        if not pages:
            raise SystemExit("no page got a rare type: the corpus is too small")
        queries = make_short_queries(load_sources(), pages, n, seed)
        _atomic_write(path, iter([json.dumps(queries, ensure_ascii=False, indent=0,
                                             sort_keys=True) + "\n"]))
    out: dict[str, list[str]] = json.loads(path.read_text(encoding="utf-8"))
    return path, {cls: out[cls] for cls in SHORT_CLASSES}


PASSAGE_WORDS = 100  # DPR's and wiki-18's passage length


def iter_passages(docs: Iterator[dict[str, str]], n: int) -> Iterator[dict[str, str]]:
    """The first ``n`` 100-word passages of ``docs``, in order (module docstring: the shape)."""
    made = 0
    for doc in docs:
        title = '"' + " ".join(doc["title"].split()) + '"'
        words = doc["text"].split()
        for start in range(0, len(words), PASSAGE_WORDS):
            if made == n:
                return
            yield {"id": str(made), "contents": f"{title}\n{' '.join(words[start:start + PASSAGE_WORDS])}"}
            made += 1


def ensure_passages(n: int, seed: int = DEFAULT_SEED, cache: Path = CACHE,
                    vocab: Vocabulary = WEB) -> tuple[Path, dict[str, float | int | str]]:
    """Generate (or reuse) a passage corpus of ``n`` passages; returns its path and statistics."""
    cache.mkdir(parents=True, exist_ok=True)
    stem = f"passages-v{GENERATOR_VERSION}-{_sample_digest()}-n{n}-s{seed}{vocab.tag}"
    path, meta_path = cache / f"{stem}.jsonl", cache / f"{stem}.meta.json"
    if path.is_file() and meta_path.is_file():
        return path, json.loads(meta_path.read_text())
    sources = load_sources()
    articles = max(1, -(-n // 40))
    while True:  # enough articles for n passages (the plan's lengths are seeded, not guessed)
        plan = plan_corpus(sources, articles, seed)
        if int((-(-plan.words // PASSAGE_WORDS)).sum()) >= n:
            break
        articles *= 2
    injector: EntityInjector | WebInjector | None = None
    if vocab.name == "large":
        check_no_name_collisions(sources)
        injector = EntityInjector(seed, vocab.types, vocab.rate)
    elif vocab.name == "web":
        check_no_web_collisions(sources)
        injector = WebInjector(seed, WebModel.load(), set())
    _atomic_write(path, (json.dumps(p, ensure_ascii=False) + "\n"
                         for p in iter_passages(iter_documents(sources, plan, injector), n)))
    meta: dict[str, float | int | str] = {
        "passages": n, "articles_planned": articles, "seed": seed, "passage_words": PASSAGE_WORDS,
        "bytes": path.stat().st_size, "sample_sha256_12": _sample_digest(),
        "generator_version": GENERATOR_VERSION, "vocabulary": vocab.name}
    meta_path.write_text(json.dumps(meta, indent=2) + "\n")
    return path, meta


def ensure_entity_queries(corpus: Path, meta: dict[str, float | int | str], n: int,
                          seed: int) -> tuple[Path, dict[str, list[str]]]:
    """Generate (or reuse) the entity and rare-name queries of a large-vocabulary corpus
    (``ensure_corpus``'s path and meta); returns their path and ``{"entity": [...], "rare":
    [...]}``."""
    stem = corpus.name.removesuffix(".jsonl")
    path = corpus.with_name(f"{stem}.queries-e{n}-s{seed}.json")
    if not path.is_file():
        stats = np.load(corpus.with_name(f"{stem}.entities.npz"))
        queries = make_entity_queries(load_sources(), stats["counts"], stats["first_doc"],
                                      stats["source_of_doc"], int(meta["chunks"]), n, seed)
        _atomic_write(path, iter([json.dumps(queries, ensure_ascii=False, indent=0,
                                             sort_keys=True) + "\n"]))
    out: dict[str, list[str]] = json.loads(path.read_text(encoding="utf-8"))
    return path, out


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


def add_entity_args(ap: argparse.ArgumentParser) -> None:
    """The large vocabulary's parameters (they name its cache files)."""
    ap.add_argument("--entity-types", type=int, default=DEFAULT_ENTITY_TYPES,
                    help="Zipf-distributed entity names of --vocabulary large (default 2,000,000)")
    ap.add_argument("--entity-rate", type=float, default=DEFAULT_ENTITY_RATE,
                    help="fraction of each document's words replaced by names (default 0.05)")
    ap.add_argument("--entity-queries", type=int, default=DEFAULT_ENTITY_QUERIES,
                    help="queries of each extra class: web, entity, rare, single and "
                         "pair-rare (default 100)")


def add_vocabulary_arg(ap: argparse.ArgumentParser) -> None:
    """``--vocabulary``: one corpus variant (web, the default; synthetic15k; large)."""
    ap.add_argument("--vocabulary", type=_vocabulary_name, default="web",
                    help="web (default: the sample's text with a tail of types fitted to real "
                         "text, vocab_fit.py), synthetic15k (the sample's ~15K terms only; "
                         "'normal' still names it) or large (synthetic15k + entity names)")


def _vocabulary_name(value: str) -> str:
    name = VOCABULARY_ALIASES.get(value, value)
    if name not in VOCABULARIES:
        raise argparse.ArgumentTypeError(f"one of {', '.join(VOCABULARIES)}, not {value!r}")
    return name


def check_entity_args(ap: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """argparse errors (exit 2) for entity options out of range."""
    if not 1 <= args.entity_types <= NAME_CODES:
        ap.error(f"--entity-types must be in 1..{NAME_CODES}")
    if not 0.0 < args.entity_rate < 1.0:
        ap.error("--entity-rate must be in (0, 1)")
    if args.entity_queries < 1:
        ap.error("--entity-queries must be positive")


def bench_dir_for(docs: int, seed: int, tokenizer: str, vocab: Vocabulary = NORMAL) -> Path:
    """Where search_bench.py keeps the indexes built for one configuration."""
    return CACHE / f"bench-n{docs}-s{seed}-{tokenizer}{vocab.tag}"


def bench_dir(args: argparse.Namespace) -> Path:
    """Where search_bench.py keeps the indexes built for these scale options (normal vocabulary)."""
    return bench_dir_for(args.docs, args.seed, args.tokenizer)


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: generate the corpus and queries, print their paths and statistics."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=DR256_DOCS, help="documents (default: DR-256's)")
    ap.add_argument("--queries", type=int, default=DEFAULT_QUERIES)
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    add_vocabulary_arg(ap)
    ap.add_argument("--passages", type=int, metavar="N",
                    help="write N Search-R1-shaped passages ({id, contents}) instead of documents")
    add_entity_args(ap)
    args = ap.parse_args(argv)
    if args.docs < 1 or args.queries < 1 or (args.passages is not None and args.passages < 1):
        ap.error("--docs, --queries and --passages must be positive")
    check_entity_args(ap, args)
    vocab = Vocabulary(args.vocabulary, args.entity_types, args.entity_rate)
    if args.passages is not None:
        ppath, pmeta = ensure_passages(args.passages, args.seed, cache=CACHE, vocab=vocab)
        print(f"passages {ppath}\n         {json.dumps(pmeta)}")
        return 0
    corpus, meta = ensure_corpus(args.docs, args.seed, vocab=vocab)
    qpath, queries = ensure_queries(args.queries, args.seed)
    print(f"corpus  {corpus}\n        {json.dumps(meta)}")
    print(f"queries {qpath} ({len(queries)})")
    for q in queries[:12]:
        print(f"  {q}")
    if vocab.name in ("large", "web"):
        ensure = ensure_entity_queries if vocab.name == "large" else ensure_web_queries
        epath, extra = ensure(corpus, meta, args.entity_queries, args.seed)
        print(f"{'/'.join(extra)} queries {epath}")
        for cls, qs in extra.items():
            for q in qs[:6]:
                print(f"  {cls:<6} {q}")
        spath, short = ensure_short_queries(corpus, meta, args.entity_queries, args.seed)
        print(f"{'/'.join(short)} queries {spath}")
        for cls, qs in short.items():
            for q in qs[:6]:
                print(f"  {cls:<9} {q}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
