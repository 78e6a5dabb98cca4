"""Ranking quality of drsearch on the Cranfield and CISI test collections.

Runs every engine on the same documents and the same queries and reports nDCG@10, MAP@100
and Recall@100 (definitions below and in docs/QUALITY.md):

``drsearch-porter`` / ``drsearch-unicode61``
    drsearch's own index (FTS5 + exact numpy BM25, k1=1.2, b=0.75), built with
    ``BuildSettings(tokenizer=...)`` and searched with ``Engine.search(query, 100)``.
``bm25s-porter`` / ``bm25s-unicode61``
    bm25s (``method="lucene"``, k1=1.2, b=0.75) over the very token lists that FTS5's
    tokenizer produces for the same text (``porter unicode61`` or ``unicode61``).
``tantivy-porter`` / ``tantivy-unicode61``
    tantivy (its BM25: k1=1.2, b=0.75) over the same FTS5 token lists, indexed through a
    whitespace-only analyzer; a query is an OR (``Occur.Should``) of its distinct terms.

So all six runs see identical terms (no stop words, no other filters): the differences
between engines are scoring only. FTS5 weighs a term by ``ln((N - n + 0.5) / (n + 0.5))``
floored at 1e-6 (so terms in half the documents or more count for almost nothing), bm25s
and tantivy by ``ln(1 + (N - n + 0.5) / (n + 0.5))``; tantivy quantises document lengths to
one byte; ties break differently. No document has more than 800 words, so each drsearch
chunk is a whole document. Queries are the distinct terms of the query text, in order,
exactly as drsearch parses them.

Documents: ``title + "\\n\\n" + text`` (``.T`` then ``.W``) is what every engine indexes.
Judgments:

* Cranfield (``cranqrel``): grade 1..4 is relevant with gain ``5 - grade`` (1 → 4, 2 → 3,
  3 → 2, 4 → 1); grade -1 is judged non-relevant (gain 0). Query ids are the position of
  the query in ``cran.qry`` (1..225), as the qrels number them.
* CISI (``CISI.REL``): every listed pair is relevant with gain 1 (binary). Only the 76
  queries with judgments are evaluated.

Metrics (per query, then the arithmetic mean over the evaluated queries; a query with no
result scores 0):

* nDCG@10: ``DCG = sum_{i=1..10} gain_i / log2(i + 1)`` (linear gain, as trec_eval's
  ``ndcg_cut``), divided by the DCG of the ideal ordering of all judged gains.
* MAP@100: average precision over the top 100 results, normalised by the number of
  relevant documents (``R``), whether or not they were retrieved.
* Recall@100: relevant documents in the top 100 divided by ``R``.

Usage::

    python benchmarks/quality.py                    # all engines, table
    python benchmarks/quality.py --json             # all engines, JSON
    python benchmarks/quality.py --check            # drsearch vs benchmarks/quality_baseline.json
    python benchmarks/quality.py --update-baseline  # raise the pinned floors (never lowers
                                                    # them without --force)
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import math
import re
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_FLOOR, Decimal
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO / "src") not in sys.path:  # run from a checkout without an installed package
    sys.path.append(str(REPO / "src"))

import apsw  # noqa: E402
import numpy as np  # noqa: E402

from drsearch.index import BuildSettings, Engine, build, parse_query  # noqa: E402
from drsearch.index.text import Tokenizer, normalize_text  # noqa: E402

DATA_DIR = REPO / "data" / "testcollections"
BASELINE_PATH = REPO / "benchmarks" / "quality_baseline.json"
BASELINE_COMMAND = ".venv/bin/python benchmarks/quality.py --update-baseline"

COLLECTIONS = ("cranfield", "cisi")
TOKENIZERS = ("porter", "unicode61")
LIBRARIES = ("drsearch", "bm25s", "tantivy")
ENGINES = tuple(f"{lib}-{tok}" for lib in LIBRARIES for tok in TOKENIZERS)
DRSEARCH_ENGINES = tuple(f"drsearch-{tok}" for tok in TOKENIZERS)
METRICS = ("ndcg@10", "map@100", "recall@100")
NDCG_DEPTH = 10
DEPTH = 100  # results per query (drsearch's maximum k)
K1 = 1.2
B = 0.75

Run = dict[str, list[str]]  # query id -> docids, best first
Qrels = dict[str, dict[str, int]]  # query id -> docid -> gain (0: judged non-relevant)
Metrics = dict[str, float]


# -- collections ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Collection:
    """A test collection: documents, the evaluated queries and their graded judgments."""

    name: str
    docs: list[dict[str, str]]  # {"docid", "url", "title", "text"}, in file order
    queries: dict[str, str]  # query id -> text; only queries with a relevant document
    qrels: Qrels

    def relevant(self, qid: str) -> set[str]:
        """Docids with a positive gain for ``qid``."""
        return {d for d, g in self.qrels.get(qid, {}).items() if g > 0}


_MARKER = re.compile(r"^\.([A-Z])(?:[ \t]+(\S+))?[ \t]*$")


def parse_records(text: str) -> list[tuple[str, dict[str, str]]]:
    """Parse SMART-format records (``.I id`` then ``.T``/``.A``/``.W``/… sections).

    A section marker repeated within one record is a stray line of the text it sits in
    (Cranfield documents 240, 576 and 578 have ``.A``/``.B``/``.W`` lines inside their
    abstracts): the marker line is dropped and the current section continues. CISI's
    repeated ``.A`` (one per author) therefore joins the authors in one section.
    Returns ``(id, {section letter: text})`` in file order; CRLF line ends are accepted.
    """
    records: list[tuple[str, dict[str, list[str]]]] = []
    current: str | None = None
    for line in text.splitlines():
        m = _MARKER.match(line)
        if m and m.group(1) == "I" and m.group(2):
            records.append((m.group(2), {}))
            current = None
            continue
        if not records:
            continue  # anything before the first record
        sections = records[-1][1]
        if m and m.group(2) is None and m.group(1) != "I":
            if m.group(1) not in sections:
                current = m.group(1)
                sections[current] = []
            continue  # a repeated marker: stray, the current section goes on
        if current is not None:
            sections[current].append(line)
    return [(rid, {k: "\n".join(v).strip() for k, v in sec.items()}) for rid, sec in records]


def _documents(name: str, records: Sequence[tuple[str, Mapping[str, str]]]
               ) -> tuple[list[dict[str, str]], dict[str, str]]:
    """drsearch documents (title + text indexed) and the map from record id to docid."""
    docs: list[dict[str, str]] = []
    ids: dict[str, str] = {}
    for rid, sec in records:
        docid = f"{name}-{int(rid):04d}"  # zero-padded: docid order = numeric order
        title, body = sec.get("T", ""), sec.get("W", "")
        text = f"{title}\n\n{body}" if title and body else title or body
        docs.append({"docid": docid, "url": f"urn:{name}:{int(rid)}", "title": title,
                     "text": text})
        ids[str(int(rid))] = docid
    return docs, ids


def _judged(name: str, docs: list[dict[str, str]], queries: Mapping[str, str],
            qrels: Qrels) -> Collection:
    """Keep only queries with at least one relevant document."""
    kept = {q: t for q, t in queries.items() if any(g > 0 for g in qrels.get(q, {}).values())}
    return Collection(name, docs, kept, {q: qrels[q] for q in kept})


def load_cranfield(data_dir: Path = DATA_DIR) -> Collection:
    """Cranfield: 1,400 documents, 225 queries, graded judgments (gain = 5 - grade)."""
    root = data_dir / "cranfield"
    docs, ids = _documents("cranfield", parse_records(
        (root / "cran.all.1400").read_text(encoding="utf-8")))
    qrecs = parse_records((root / "cran.qry").read_text(encoding="utf-8"))
    # The qrels number queries 1..225 in file order, not by their .I ids (001, 002, 004, …).
    queries = {str(n): sec.get("W", "") for n, (_, sec) in enumerate(qrecs, 1)}
    qrels: Qrels = {}
    for line in (root / "cranqrel").read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        q, d, grade = (int(x) for x in line.split()[:3])
        if grade not in (-1, 1, 2, 3, 4):
            raise ValueError(f"cranqrel: unexpected grade {grade} in {line!r}")
        gain = 5 - grade if grade > 0 else 0
        docid = ids[str(d)]
        judged = qrels.setdefault(str(q), {})
        judged[docid] = max(gain, judged.get(docid, 0))
    return _judged("cranfield", docs, queries, qrels)


def load_cisi(data_dir: Path = DATA_DIR) -> Collection:
    """CISI: 1,460 documents, 112 queries of which 76 have (binary) judgments."""
    root = data_dir / "cisi"
    docs, ids = _documents("cisi", parse_records(
        (root / "CISI.ALL").read_text(encoding="utf-8")))
    queries = {str(int(rid)): sec.get("W", "") for rid, sec in
               parse_records((root / "CISI.QRY").read_text(encoding="utf-8"))}
    qrels: Qrels = {}
    for line in (root / "CISI.REL").read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        q, d = line.split()[:2]
        qrels.setdefault(str(int(q)), {})[ids[str(int(d))]] = 1
    return _judged("cisi", docs, queries, qrels)


LOADERS: dict[str, Callable[[Path], Collection]] = {
    "cranfield": load_cranfield,
    "cisi": load_cisi,
}


def load_collection(name: str, data_dir: Path = DATA_DIR) -> Collection:
    """Load one of :data:`COLLECTIONS` from ``data_dir``."""
    return LOADERS[name](data_dir)


# -- metrics -------------------------------------------------------------------------------
def ndcg(ranking: Sequence[str], gains: Mapping[str, int], depth: int = NDCG_DEPTH) -> float:
    """nDCG@depth with linear gain: ``sum gain_i / log2(i + 1)`` over the ideal's."""
    dcg = sum(gains.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranking[:depth]))
    ideal = sorted((g for g in gains.values() if g > 0), reverse=True)[:depth]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def average_precision(ranking: Sequence[str], relevant: set[str], depth: int = DEPTH) -> float:
    """AP over the top ``depth`` results, divided by all ``len(relevant)`` relevant docs."""
    if not relevant:
        return 0.0
    hits = 0
    total = 0.0
    for i, d in enumerate(ranking[:depth], 1):
        if d in relevant:
            hits += 1
            total += hits / i
    return total / len(relevant)


def recall(ranking: Sequence[str], relevant: set[str], depth: int = DEPTH) -> float:
    """Share of the relevant documents found in the top ``depth``."""
    if not relevant:
        return 0.0
    return len(relevant.intersection(ranking[:depth])) / len(relevant)


def per_query(run: Mapping[str, Sequence[str]], coll: Collection) -> dict[str, list[float]]:
    """nDCG@10, AP@100 and Recall@100 of ``run`` for each query, in the collection's order."""
    out: dict[str, list[float]] = {m: [] for m in METRICS}
    for qid in coll.queries:
        ranking = list(dict.fromkeys(run.get(qid, [])))  # a docid counts once
        relevant = coll.relevant(qid)
        out["ndcg@10"].append(ndcg(ranking, coll.qrels[qid]))
        out["map@100"].append(average_precision(ranking, relevant))
        out["recall@100"].append(recall(ranking, relevant))
    return out


def evaluate(run: Mapping[str, Sequence[str]], coll: Collection) -> Metrics:
    """Mean nDCG@10, MAP@100 and Recall@100 of ``run`` over the collection's queries."""
    return {m: float(np.mean(v)) if v else 0.0 for m, v in per_query(run, coll).items()}


def paired_test(a: Sequence[float], b: Sequence[float], rounds: int = 10_000,
                seed: int = 0) -> dict[str, float | int]:
    """Paired comparison of per-query scores ``a`` and ``b`` (same queries, same order).

    Returns the mean difference ``a - b``, the queries where ``a`` wins, loses and ties,
    and the two-sided p-value of a paired randomisation (sign-flip) test with a fixed seed.
    """
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    observed = abs(float(d.mean())) if len(d) else 0.0
    signs = np.random.default_rng(seed).choice((-1.0, 1.0), size=(rounds, len(d)))
    null = np.abs((signs * d).mean(axis=1)) if len(d) else np.zeros(rounds)
    extreme = int(np.count_nonzero(null >= observed - 1e-12))
    return {
        "mean_difference": float(d.mean()) if len(d) else 0.0,
        "wins": int(np.count_nonzero(d > 1e-12)),
        "losses": int(np.count_nonzero(d < -1e-12)),
        "ties": int(np.count_nonzero(np.abs(d) <= 1e-12)),
        "p_value": (extreme + 1) / (rounds + 1),
    }


# -- engines -------------------------------------------------------------------------------
class Fts5Terms:
    """FTS5's own tokenizer, as drsearch uses it, for engines that take token lists."""

    def __init__(self, tokenizer: str) -> None:
        self._conn = apsw.Connection(":memory:")
        self._tok = Tokenizer(self._conn, BuildSettings(tokenizer=tokenizer).fts5_tokenize)  # type: ignore[arg-type]

    def document(self, text: str) -> list[str]:
        """The terms drsearch indexes for ``text`` (NFC-normalised, in order)."""
        return self._tok.terms(normalize_text(text))

    def query(self, text: str) -> list[str]:
        """The distinct terms drsearch searches for ``text`` (first occurrence order)."""
        return [t.term for t in parse_query(text, self._tok).terms]


def run_drsearch(coll: Collection, tokenizer: str, workdir: Path) -> Run:
    """Build a drsearch index of the collection in ``workdir`` and search every query."""
    path = workdir / f"{coll.name}-{tokenizer}.sqlite3"
    build(coll.docs, path, BuildSettings(tokenizer=tokenizer), overwrite=True)  # type: ignore[arg-type]
    with Engine.open(path) as engine:
        return {qid: [h.docid for h in engine.search(q, DEPTH, with_text=False).hits]
                for qid, q in coll.queries.items()}


def _top(scores: np.ndarray[Any, Any], docids: Sequence[str]) -> list[str]:
    """The best ``DEPTH`` matching docids: score descending, then file order."""
    order = np.lexsort((np.arange(len(scores)), -scores))[:DEPTH]
    return [docids[i] for i in order.tolist() if scores[i] > 0]


def run_bm25s(coll: Collection, tokenizer: str, workdir: Path) -> Run:
    """bm25s (lucene IDF, k1=1.2, b=0.75) over FTS5's token lists."""
    import bm25s  # type: ignore[import-untyped]

    terms = Fts5Terms(tokenizer)
    docids = [d["docid"] for d in coll.docs]
    retriever = bm25s.BM25(k1=K1, b=B, method="lucene")
    retriever.index([terms.document(d["text"]) for d in coll.docs], show_progress=False)
    run: Run = {}
    for qid, q in coll.queries.items():
        ids = retriever.get_tokens_ids(terms.query(q))
        if not ids:
            run[qid] = []
            continue
        scores = np.asarray(retriever.get_scores(ids), dtype=np.float64)
        run[qid] = _top(scores, docids)
    return run


def run_tantivy(coll: Collection, tokenizer: str, workdir: Path) -> Run:
    """tantivy (BM25, k1=1.2, b=0.75) over FTS5's token lists, queries as OR of terms."""
    import tantivy

    terms = Fts5Terms(tokenizer)
    sb = tantivy.SchemaBuilder()
    sb.add_unsigned_field("row", stored=True)
    sb.add_text_field("body", tokenizer_name="fts5_terms", index_option="freq")
    schema = sb.build()
    index = tantivy.Index(schema)  # in memory
    index.register_tokenizer(
        "fts5_terms", tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.whitespace()).build())
    writer = index.writer(heap_size=64_000_000, num_threads=1)
    for row, d in enumerate(coll.docs):
        writer.add_document(tantivy.Document(row=row, body=" ".join(terms.document(d["text"]))))
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    searcher = index.searcher()
    run: Run = {}
    for qid, q in coll.queries.items():
        qterms = terms.query(q)
        if not qterms:
            run[qid] = []
            continue
        query = tantivy.Query.boolean_query(
            [(tantivy.Occur.Should, tantivy.Query.term_query(schema, "body", t)) for t in qterms])
        hits = searcher.search(query, DEPTH).hits
        run[qid] = [coll.docs[searcher.doc(addr)["row"][0]]["docid"] for _, addr in hits]
    return run


RUNNERS: dict[str, Callable[[Collection, str, Path], Run]] = {
    "drsearch": run_drsearch,
    "bm25s": run_bm25s,
    "tantivy": run_tantivy,
}


def run_engine(engine: str, coll: Collection, workdir: Path) -> Run:
    """Run ``engine`` (e.g. ``"drsearch-porter"``) on every query of the collection."""
    library, tokenizer = engine.split("-", 1)
    if library not in RUNNERS or tokenizer not in TOKENIZERS:
        raise ValueError(f"unknown engine {engine!r}; choose from {', '.join(ENGINES)}")
    return RUNNERS[library](coll, tokenizer, workdir)


def measure(collections: Iterable[str], engines: Iterable[str], data_dir: Path = DATA_DIR,
            workdir: Path | None = None) -> dict[str, Any]:
    """Evaluate ``engines`` on ``collections``; returns the JSON report (see ``--json``)."""
    engines = list(engines)
    versions = {"sqlite": apsw.sqlite_lib_version()}
    for lib in sorted({e.split("-", 1)[0] for e in engines}):
        versions[lib] = importlib.metadata.version(lib)
    report: dict[str, Any] = {
        "settings": {"k1": K1, "b": B, "depth": DEPTH, "ndcg_depth": NDCG_DEPTH,
                     "versions": versions},
        "collections": {},
    }
    with tempfile.TemporaryDirectory(prefix="drsearch-quality-") as td:
        wd = workdir or Path(td)
        for name in collections:
            coll = load_collection(name, data_dir)
            results: dict[str, Any] = {}
            scores: dict[str, dict[str, list[float]]] = {}
            for engine in engines:
                t0 = time.perf_counter()
                run = run_engine(engine, coll, wd)
                seconds = round(time.perf_counter() - t0, 3)
                scores[engine] = per_query(run, coll)
                results[engine] = {m: float(np.mean(v)) if v else 0.0
                                   for m, v in scores[engine].items()}
                results[engine]["seconds"] = seconds
            entry: dict[str, Any] = {
                "documents": len(coll.docs),
                "queries": len(coll.queries),
                "judgments": sum(len(j) for j in coll.qrels.values()),
                "engines": results,
            }
            if all(e in scores for e in DRSEARCH_ENGINES):
                a, b = DRSEARCH_ENGINES
                entry[f"{a} vs {b}"] = {m: paired_test(scores[a][m], scores[b][m])
                                        for m in METRICS}
            report["collections"][name] = entry
    return report


# -- baseline ------------------------------------------------------------------------------
def floor3(x: float) -> float:
    """``x`` rounded down to 3 decimals (exactly, via its shortest decimal repr)."""
    return float(Decimal(repr(x)).quantize(Decimal("0.001"), rounding=ROUND_FLOOR))


def load_baseline(path: Path = BASELINE_PATH) -> dict[str, Any]:
    """The pinned floors: ``{collection: {tokenizer: {metric: floor}}}`` plus ``_`` keys."""
    return json.loads(path.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def check(report: Mapping[str, Any], baseline: Mapping[str, Any]) -> list[str]:
    """Failures of the drsearch figures in ``report`` against the floors (empty: pass).

    Every drsearch figure measured must have a floor, and reach it.
    """
    failures: list[str] = []
    for name, entry in report["collections"].items():
        for engine, metrics in entry["engines"].items():
            library, tokenizer = engine.split("-", 1)
            if library != "drsearch":
                continue
            floors = baseline.get(name, {}).get(tokenizer, {})
            for metric in METRICS:
                if metric not in floors:
                    failures.append(f"{name}/{tokenizer}/{metric}: no floor pinned")
                elif metrics[metric] < floors[metric]:
                    failures.append(f"{name}/{tokenizer}/{metric}: {metrics[metric]:.4f} "
                                    f"< floor {floors[metric]:.3f}")
    return failures


def updated_baseline(report: Mapping[str, Any], baseline: Mapping[str, Any],
                     force: bool = False) -> tuple[dict[str, Any], list[str]]:
    """New floors from the drsearch figures, and the floors kept because they would drop.

    A floor is the measured value rounded down to 3 decimals. Without ``force`` a floor
    only rises; a lower measurement keeps the old floor and is reported.
    """
    new: dict[str, Any] = json.loads(json.dumps(baseline))
    new["_command"] = BASELINE_COMMAND
    new["_comment"] = ("Floors for benchmarks/quality.py --check and "
                       "tests/index/test_quality_gate.py: measured drsearch figures rounded "
                       "down to 3 decimals. Raised by --update-baseline; lowered only with "
                       "--force (see docs/QUALITY.md).")
    kept: list[str] = []
    for name, entry in report["collections"].items():
        for engine, metrics in entry["engines"].items():
            library, tokenizer = engine.split("-", 1)
            if library != "drsearch":
                continue
            floors = new.setdefault(name, {}).setdefault(tokenizer, {})
            for metric in METRICS:
                value = floor3(metrics[metric])
                old = floors.get(metric)
                if old is not None and value < old and not force:
                    kept.append(f"{name}/{tokenizer}/{metric}: measured {metrics[metric]:.4f}"
                                f" < floor {old:.3f} (kept; --force lowers it)")
                    continue
                floors[metric] = value
    return new, kept


def write_baseline(baseline: Mapping[str, Any], path: Path = BASELINE_PATH) -> None:
    """Write the baseline file: ``_`` keys first, then collections and tokenizers sorted."""
    meta = {k: v for k, v in baseline.items() if k.startswith("_")}
    body = {k: baseline[k] for k in sorted(baseline) if not k.startswith("_")}
    path.write_text(json.dumps({**meta, **body}, indent=2) + "\n", encoding="utf-8")


# -- output --------------------------------------------------------------------------------
def format_table(report: Mapping[str, Any]) -> str:
    """A Markdown table (one row per collection and engine), then the paired comparisons."""
    lines = ["| collection | engine | nDCG@10 | MAP@100 | Recall@100 |",
             "|---|---|---:|---:|---:|"]
    for name, entry in report["collections"].items():
        label = f"{name} ({entry['documents']} docs, {entry['queries']} queries)"
        for engine, m in entry["engines"].items():
            lines.append(f"| {label} | {engine} | {m['ndcg@10']:.4f} | {m['map@100']:.4f} "
                         f"| {m['recall@100']:.4f} |")
    for name, entry in report["collections"].items():
        for key, tests in entry.items():
            if " vs " not in key:
                continue
            lines.append("")
            lines.append(f"{name}: {key} (paired, per query; p: sign-flip randomisation)")
            for metric, t in tests.items():
                lines.append(f"  {metric:<11} {t['mean_difference']:+.4f}  better on "
                             f"{t['wins']}, worse on {t['losses']}, tied on {t['ties']} "
                             f"queries, p = {t['p_value']:.4f}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point; returns the exit status."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--json", action="store_true", help="print the report as JSON")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 if a drsearch figure is below its floor in the baseline")
    ap.add_argument("--update-baseline", action="store_true",
                    help="raise the floors in the baseline to the measured drsearch figures")
    ap.add_argument("--force", action="store_true",
                    help="with --update-baseline: also lower floors")
    ap.add_argument("--collections", nargs="+", choices=COLLECTIONS, default=list(COLLECTIONS))
    ap.add_argument("--engines", nargs="+", choices=ENGINES, default=None,
                    help="default: all six; only drsearch with --check/--update-baseline")
    ap.add_argument("--data-dir", type=Path, default=DATA_DIR)
    ap.add_argument("--baseline", type=Path, default=BASELINE_PATH)
    args = ap.parse_args(argv)
    if args.force and not args.update_baseline:
        ap.error("--force only applies to --update-baseline")
    gate = args.check or args.update_baseline
    engines = args.engines or list(DRSEARCH_ENGINES if gate else ENGINES)

    report = measure(args.collections, engines, args.data_dir)
    status = 0
    if args.check:
        failures = check(report, load_baseline(args.baseline))
        report["check"] = {"passed": not failures, "failures": failures}
        status = 1 if failures else 0
    if args.update_baseline:
        old = load_baseline(args.baseline) if args.baseline.exists() else {}
        new, kept = updated_baseline(report, old, force=args.force)
        write_baseline(new, args.baseline)
        report["baseline"] = {"path": str(args.baseline), "kept_floors": kept}
        status = status or (1 if kept else 0)

    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(format_table(report))
        for line in report.get("check", {}).get("failures", []):
            print(f"FAIL {line}", file=sys.stderr)
        if args.check and not report["check"]["failures"]:
            print(f"check passed: every drsearch figure reaches its floor in {args.baseline}")
        for line in report.get("baseline", {}).get("kept_floors", []):
            print(f"WARNING {line}", file=sys.stderr)
        if args.update_baseline:
            print(f"wrote {args.baseline}")
    return status


if __name__ == "__main__":
    sys.exit(main())
