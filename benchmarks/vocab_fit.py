"""The web-like vocabulary model of the benchmark corpus, fitted to real text.

The benchmark corpus (``corpus_gen.py``) is cut from the 181 real pages of
``data/sample/docs.jsonl``, repeated and reshuffled to DR-256's 243,615 chunks: its vocabulary
stops at the sample's ~15K FTS5 terms, where real web text of that size (163M words) has on
the order of 10^6 (Heaps' law). This script measures how vocabulary grows in real text and
turns it into the parameters ``corpus_gen.py --vocabulary web`` uses to add the missing tail.

Measured, on FTS5 terms (SQLite's own ``porter`` over ``unicode61`` tokenizer, the benchmark's
default; ``unicode61`` alone reported beside it), for the sample pages (web text: what the
model is fitted to) and for Cranfield and CISI (abstracts: reported for comparison):

- Heaps' law V(n) = K n^beta, least squares on log V against log n over 200 evenly spaced
  prefixes of the token stream, dropping the first 10% (the early curve bends);
- Zipf's exponent of the rank-frequency curve, least squares over ranks 10 .. V/2;
- what the rare types are (seen at most twice): capitalised names, lowercase words, numbers,
  letters with digits — counted on the raw tokens before case folding.

The model (``model`` in the JSON): the backbone is the real text as the corpus already has it
(``backbone_types`` terms); a fraction ``rate`` of its content words (alphabetic, longer than
3 letters, not stop words) is replaced, each by a type drawn from a Zipf-Mandelbrot tail
p(r) ~ (r + q)^-s over r = 1 .. ``tail_types``, with q = the backbone's type count (the tail
continues the backbone's rank-frequency curve) and s = 1/beta (a Zipf tail of exponent s gives
Heaps growth n^(1/s): the corpus's vocabulary then grows with its size as real text does). Each
tail type is a name, a word, a number or a letters-and-digits token in the proportions measured
on the sample's rare types. ``rate`` is solved so that the DR-256-sized corpus (1x: 30,318
documents, seed 1) has the Heaps prediction K W^beta types; at 4x the same rate gives
4^beta = 2.36x the tail's types, as Heaps' law says.

The fit is written to ``benchmarks/vocab_fit.json`` (committed; a test checks that a fresh fit
gives the same bytes). Usage::

    python benchmarks/vocab_fit.py            # print the fit
    python benchmarks/vocab_fit.py --write    # rewrite benchmarks/vocab_fit.json
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import apsw
import numpy as np

HERE = Path(__file__).resolve().parent
FIT_FILE = HERE / "vocab_fit.json"
FIT_VERSION = 1
HEAPS_POINTS = 200
HEAPS_SKIP = 0.1  # the first 10% of the prefixes are left out of the fit
RARE_MAX = 2  # "rare" types: seen at most this often
_RAW = re.compile(r"[^\W_]+")  # unicode61's token characters: letters and digits


def real_texts() -> dict[str, list[str]]:
    """The real collections: name -> texts (title and body), in file order."""
    import corpus_gen
    import quality

    sample = [f"{s.title}\n\n" + "\n\n".join(s.paragraphs) for s in corpus_gen.load_sources()]
    out = {"sample": sample}
    for name, load in (("cranfield", quality.load_cranfield), ("cisi", quality.load_cisi)):
        out[name] = [d["text"] for d in load().docs]
    return out


def fts5_terms(texts: Iterable[str], tokenizer: Sequence[str]) -> list[str]:
    """Every text's FTS5 terms in order (SQLite's own tokenizer, as the index sees them)."""
    tok = apsw.Connection(":memory:").fts5_tokenizer(tokenizer[0], list(tokenizer[1:]))
    out: list[str] = []
    for text in texts:
        out.extend(t[2] for t in tok(text.encode("utf-8"), apsw.FTS5_TOKENIZE_DOCUMENT, None))
    return out


def heaps_fit(terms: Sequence[str]) -> tuple[float, float]:
    """(K, beta) of V(n) = K n^beta over the stream's prefixes."""
    n = len(terms)
    marks = set(np.linspace(n / HEAPS_POINTS, n, HEAPS_POINTS).round().astype(int).tolist())
    seen: set[str] = set()
    xs, ys = [], []
    for i, t in enumerate(terms, 1):
        seen.add(t)
        if i in marks and i >= HEAPS_SKIP * n:
            xs.append(math.log(i))
            ys.append(math.log(len(seen)))
    beta, log_k = np.polyfit(xs, ys, 1)
    return math.exp(float(log_k)), float(beta)


def zipf_fit(counts: Counter[str]) -> float:
    """The exponent of the rank-frequency curve over ranks 10 .. V/2."""
    freqs = np.array(sorted(counts.values(), reverse=True), dtype=np.float64)
    ranks = np.arange(1, len(freqs) + 1, dtype=np.float64)
    sel = (ranks >= 10) & (ranks <= len(freqs) // 2)
    slope = np.polyfit(np.log(ranks[sel]), np.log(freqs[sel]), 1)[0]
    return float(-slope)


def rare_kinds(texts: Iterable[str]) -> dict[str, int]:
    """How many of the types seen at most ``RARE_MAX`` times are names (always capitalised),
    words, numbers or letters with digits (raw tokens, case folded to count)."""
    counts: Counter[str] = Counter()
    capital: Counter[str] = Counter()
    for text in texts:
        for tok in _RAW.findall(text):
            low = tok.lower()
            counts[low] += 1
            if tok[0].isupper():
                capital[low] += 1
    kinds: Counter[str] = Counter()
    for w, c in counts.items():
        if c > RARE_MAX:
            continue
        if w.isdigit():
            kinds["number"] += 1
        elif any(ch.isdigit() for ch in w):
            kinds["alnum"] += 1
        elif capital[w] == c:
            kinds["name"] += 1
        else:
            kinds["word"] += 1
    return {k: kinds[k] for k in ("name", "word", "number", "alnum")}


def measure(texts: Sequence[str]) -> dict[str, Any]:
    """One collection's statistics under both tokenizers."""
    out: dict[str, Any] = {"texts": len(texts)}
    for label, tokenizer in (("porter", ("porter", "unicode61")), ("unicode61", ("unicode61",))):
        terms = fts5_terms(texts, tokenizer)
        counts = Counter(terms)
        k, beta = heaps_fit(terms)
        out[label] = {"tokens": len(terms), "types": len(counts),
                      "hapax": sum(1 for c in counts.values() if c == 1),
                      "heaps_k": _round(k), "heaps_beta": _round(beta),
                      "zipf_s": _round(zipf_fit(counts))}
    out["rare_kinds"] = rare_kinds(texts)
    return out


def _round(x: float) -> float:
    """Six significant digits: the JSON stays byte-stable across BLAS and libm builds."""
    return float(f"{x:.6g}")


# -- the tail model (shared with corpus_gen.py) ------------------------------------------------

def tail_bins(tail_types: int) -> tuple[np.ndarray, np.ndarray]:
    """Rank bins [lo, hi) covering 1 .. tail_types: single ranks up to 10,000, then 100,000
    geometric bins (the expected-types sum is exact up there and smooth beyond)."""
    head = np.arange(1, min(10_000, tail_types) + 1, dtype=np.int64)
    edges = head
    if tail_types > 10_000:
        geo = np.geomspace(10_001, tail_types + 1, 100_000).astype(np.int64)
        edges = np.unique(np.concatenate([head, geo, [tail_types + 1]]))
    else:
        edges = np.concatenate([head, [tail_types + 1]])
    return edges[:-1], edges[1:]


def tail_cdf(x: np.ndarray, q: float, s: float, tail_types: int) -> np.ndarray:
    """CDF of the continuous Zipf-Mandelbrot density (x + q)^-s on [0.5, tail_types + 0.5):
    rank r has the mass between r - 0.5 and r + 0.5 (corpus_gen draws it by inversion)."""
    a, b = (0.5 + q) ** (1 - s), (tail_types + 0.5 + q) ** (1 - s)
    out: np.ndarray = (a - (x + q) ** (1 - s)) / (a - b)
    return out


def expected_tail_types(draws: float, q: float, s: float, tail_types: int) -> float:
    """Expected distinct tail types among ``draws`` independent draws: sum of 1 - (1-p)^n."""
    lo, hi = tail_bins(tail_types)
    mass = tail_cdf(hi.astype(np.float64) - 0.5, q, s, tail_types) - \
        tail_cdf(lo.astype(np.float64) - 0.5, q, s, tail_types)
    width = (hi - lo).astype(np.float64)
    p = mass / width  # each rank of a bin: its share (the bins beyond 10,000 are nearly flat)
    return float((width * -np.expm1(draws * np.log1p(-p))).sum())


def solve_rate(target_tail: float, content_words: int, q: float, s: float,
               tail_types: int) -> float:
    """The replacement rate whose expected tail types at ``content_words`` is the target."""
    lo, hi = 0.0, 1.0
    if expected_tail_types(content_words, q, s, tail_types) < target_tail:
        raise SystemExit("even replacing every content word cannot reach the Heaps target")
    for _ in range(60):
        mid = (lo + hi) / 2
        if expected_tail_types(mid * content_words, q, s, tail_types) >= target_tail:
            hi = mid
        else:
            lo = mid
    return hi


def fit() -> dict[str, Any]:
    """Measure the collections and derive the model (module docstring)."""
    import corpus_gen as cg

    texts = real_texts()
    collections = {name: measure(t) for name, t in texts.items()}
    web = collections["sample"]["porter"]
    k, beta = web["heaps_k"], web["heaps_beta"]
    sources = cg.load_sources()
    plan = cg.plan_corpus(sources, cg.DR256_DOCS, cg.DEFAULT_SEED)
    paras = cg._Paragraphs(sources)
    content_1x = int(sum(int(paras.content_count[ids].sum()) for ids in plan.para_ids))
    words_1x = int(plan.words.sum())
    backbone = web["types"]
    q, s = float(backbone), _round(1.0 / beta)
    target = k * words_1x ** beta - backbone
    rate = _round(solve_rate(target, content_1x, q, s, cg.NAME_CODES))
    kinds = collections["sample"]["rare_kinds"]
    total = sum(kinds.values())
    return {
        "version": FIT_VERSION,
        "collections": collections,
        "model": {
            "fitted_to": "sample (porter)", "heaps_k": k, "heaps_beta": beta,
            "backbone_types": backbone, "tail_q": q, "tail_s": s,
            "tail_types": cg.NAME_CODES, "rate": rate,
            "kinds": {kind: _round(n / total) for kind, n in kinds.items()},
            "reference": {"documents": cg.DR256_DOCS, "seed": cg.DEFAULT_SEED,
                          "words": words_1x, "content_words": content_1x,
                          "heaps_types": round(k * words_1x ** beta),
                          "heaps_types_4x": round(k * (4 * words_1x) ** beta)},
        },
    }


def dumps(result: dict[str, Any]) -> str:
    return json.dumps(result, indent=2, sort_keys=True) + "\n"


def load_fit(path: Path = FIT_FILE) -> dict[str, Any]:
    """The committed fit (``corpus_gen.py`` reads it; its digest names the cache files)."""
    out: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    if out.get("version") != FIT_VERSION:
        raise SystemExit(f"{path}: fit version {out.get('version')!r}, expected {FIT_VERSION}: "
                         "run python benchmarks/vocab_fit.py --write")
    return out


def table(result: dict[str, Any]) -> str:
    lines = [f"{'collection':<10} {'tokenizer':<9} {'tokens':>9} {'types':>7} {'hapax':>7} "
             f"{'Heaps K':>8} {'beta':>6} {'Zipf s':>7}"]
    for name, c in result["collections"].items():
        for label in ("porter", "unicode61"):
            m = c[label]
            lines.append(f"{name:<10} {label:<9} {m['tokens']:>9,} {m['types']:>7,} "
                         f"{m['hapax']:>7,} {m['heaps_k']:>8.3f} {m['heaps_beta']:>6.3f} "
                         f"{m['zipf_s']:>7.3f}")
    m = result["model"]
    ref = m["reference"]
    lines.append(f"model: tail s = 1/beta = {m['tail_s']}, q = {m['tail_q']:,.0f}, rate "
                 f"{m['rate']:.4f} of content words; kinds {m['kinds']}")
    lines.append(f"1x ({ref['documents']:,} docs, {ref['words']:,} words): Heaps predicts "
                 f"{ref['heaps_types']:,} types; 4x: {ref['heaps_types_4x']:,}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true", help=f"rewrite {FIT_FILE.name}")
    args = ap.parse_args(argv)
    result = fit()
    print(table(result))
    if args.write:
        FIT_FILE.write_text(dumps(result), encoding="utf-8")
        print(f"wrote {FIT_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
