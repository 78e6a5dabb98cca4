"""The compat layer: IR-toolkit habits over the engine (sits on ``drsearch.index`` only).

Public API (pinned by tests/compat/test_public_api.py)::

    LuceneSearcher(index, blocked_docids=None)   Pyserini-shaped: .search, .batch_search, .doc
    read_topics(tsv), read_run(path), read_qrels(path), write_run(ranked, out, tag)
    evaluate(qrels, run) -> Evaluation   (trec_eval's ndcg_cut_10, map, P_10, recall_1000)

``drsearch.compat.langchain.DrsearchRetriever`` (a LangChain retriever) needs the
``langchain`` extra and is imported from its module, so this package imports without it.
"""

from .pyserini import Document, Hit, LuceneSearcher
from .trec import (
    MEASURES,
    Evaluation,
    TrecFormatError,
    check_run_field,
    evaluate,
    query_measures,
    read_qrels,
    read_run,
    read_topics,
    run_lines,
    write_run,
)

__all__ = [
    "MEASURES",
    "Document",
    "Evaluation",
    "Hit",
    "LuceneSearcher",
    "TrecFormatError",
    "check_run_field",
    "evaluate",
    "query_measures",
    "read_qrels",
    "read_run",
    "read_topics",
    "run_lines",
    "write_run",
]
