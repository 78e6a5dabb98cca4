"""Evaluations beyond one machine: ``drsearch run --shard I/N`` and ``drsearch run merge``.

A shard answers the selected questions whose qid hashes to it (:func:`shard_of`: the first
8 bytes of SHA-256 of the qid's UTF-8, big-endian, modulo N), so the partition is the same
on every machine and every rerun, needs no coordination, and does not move when questions
are added to the file. Its run.json records ``shard``: ``{"index", "count", "rule",
"selection", "qids"}`` (``selection``: the ``--ids``/``--limit`` the shard was run with, which
every shard of one run must share; ``qids``: the questions this shard answers).

:func:`merge_runs` joins the N shard directories of one run into an ordinary run directory
whose trajectories.jsonl is the one an unsharded run writes (one canonical line per
question, in benchmark index order), so ``drsearch score`` grades it as it would that run.
It refuses (RunStoreError, exit 2) shards of another questions file, prompts, corpus,
blocklist, preset, tools or model, shards counted differently, a shard given twice, a
missing shard, a shard without an episode for one of its questions (not run to the end), an
episode in the wrong shard, and an output directory that holds anything.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..contract import read_json_object
from ..contract.atomic import write_bytes_atomic, write_json_atomic
from .canonical import canonical_json
from .errors import RunStoreError
from .runstore import RunStore

SHARD_RULE = "sha256(qid)[:8] big-endian mod count"
# What every shard of one run must agree on (run.json fields), with the words a refusal uses.
MERGE_FIELDS = {"questions_sha256": "questions file", "prompt_sha256": "question prompts",
                "corpus_identity": "corpus", "blocklist_sha256": "blocklist", "preset": "preset",
                "tool_schema_sha256": "tools", "model": "model"}


def shard_of(qid: str, count: int) -> int:
    """The shard (0..count-1) that answers question ``qid``; the same everywhere, always."""
    digest = hashlib.sha256(qid.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % count


def parse_shard(text: str) -> tuple[int, int]:
    """``"I/N"`` as ``(I, N)`` with ``0 <= I < N``. Raises ValueError with a one-line reason."""
    index, sep, count = text.partition("/")
    if not sep or not index.strip().isdigit() or not count.strip().isdigit():
        raise ValueError(f"--shard must be I/N (e.g. 0/4), got {text!r}")
    i, n = int(index), int(count)
    if not 1 <= n <= 100_000 or not 0 <= i < n:
        raise ValueError(f"--shard {text}: need 0 <= I < N <= 100000 (I counts from 0, as "
                         "JOB_COMPLETION_INDEX and a 0-based SLURM_ARRAY_TASK_ID do)")
    return i, n


def _manifest(run_dir: Path) -> dict[str, Any]:
    manifest = read_json_object(run_dir / "run.json", missing=f"{run_dir}: not a run directory (no run.json)",
                                error=RunStoreError)
    if not isinstance(manifest.get("shard"), dict):
        raise RunStoreError(f"{run_dir}: not a shard (its run.json has no 'shard'; run it with --shard I/N)")
    return manifest


def _check_agree(dirs: Sequence[Path], manifests: Sequence[dict[str, Any]]) -> None:
    first = manifests[0]
    for d, m in zip(dirs[1:], manifests[1:], strict=True):
        for field, words in MERGE_FIELDS.items():
            if canonical_json(m.get(field)) != canonical_json(first.get(field)):
                raise RunStoreError(f"{d} is a shard of another run than {dirs[0]}: its {words} differs "
                                    f"({field})")
        for key in ("count", "rule", "selection"):
            if canonical_json(m["shard"].get(key)) != canonical_json(first["shard"].get(key)):
                raise RunStoreError(f"{d} is a shard of another run than {dirs[0]}: shard {key} "
                                    f"{m['shard'].get(key)!r} against {first['shard'].get(key)!r}")


def _check_cover(dirs: Sequence[Path], manifests: Sequence[dict[str, Any]]) -> int:
    count = manifests[0]["shard"]["count"]
    if not isinstance(count, int) or count < 1:
        raise RunStoreError(f"{dirs[0]}/run.json: bad shard count {count!r}")
    held: dict[int, Path] = {}
    for d, m in zip(dirs, manifests, strict=True):
        index = m["shard"].get("index")
        if not isinstance(index, int) or not 0 <= index < count:
            raise RunStoreError(f"{d}/run.json: bad shard index {index!r} of {count}")
        if index in held:
            raise RunStoreError(f"overlapping shards: {held[index]} and {d} are both shard {index}/{count}")
        held[index] = d
    missing = sorted(set(range(count)) - set(held))
    if missing:
        raise RunStoreError(f"missing shard(s) {', '.join(f'{i}/{count}' for i in missing)}: "
                            f"{len(held)} of {count} given")
    return count


def shard_record(index: int, count: int, selection: dict[str, Any], qids: list[str]) -> dict[str, Any]:
    """run.json's ``shard`` for shard ``index`` of ``count`` (module docstring)."""
    return {"count": count, "index": index, "qids": qids, "rule": SHARD_RULE, "selection": selection}


def merge_runs(dirs: Sequence[str | Path], out: str | Path) -> dict[str, Any]:
    """Join the shard directories ``dirs`` of one run into the run directory ``out``.

    Writes ``out/run.json`` (the shards' shared manifest, ``shard`` replaced by ``merged``:
    the count, the rule and each shard's directory and start time) and ``out/trajectories.jsonl``
    (every shard's latest record per question, in benchmark index order, canonical lines);
    ``timings.jsonl`` is the shards' timing lines concatenated in shard order. Returns
    ``{"out", "shards", "episodes"}``. Raises RunStoreError (module docstring) before
    anything is written.
    """
    paths = [Path(d) for d in dirs]
    target = Path(out)
    if not paths:
        raise RunStoreError("run merge: give the shard directories to join")
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise RunStoreError(f"--out {target}: exists and is not an empty directory (nothing is overwritten)")
    manifests = [_manifest(d) for d in paths]
    _check_agree(paths, manifests)
    count = _check_cover(paths, manifests)
    records: list[dict[str, Any]] = []
    timings = b""
    order = sorted(range(len(paths)), key=lambda k: manifests[k]["shard"]["index"])
    for k in order:
        store, index = RunStore(paths[k]), manifests[k]["shard"]["index"]
        latest = store.latest()
        lacking = [q for q in manifests[k]["shard"].get("qids") or [] if q not in latest]
        if lacking:
            raise RunStoreError(f"{paths[k]}: shard {index}/{count} has no episode for {len(lacking)} of its "
                                f"questions (first: {lacking[0]}); rerun that shard to finish it")
        for record in latest.values():
            if shard_of(str(record["qid"]), count) != index:
                raise RunStoreError(f"{paths[k]}: question {record['qid']} belongs to shard "
                                    f"{shard_of(str(record['qid']), count)}/{count}, not {index}/{count}")
            records.append(record)
        if store.timings.is_file():
            data = store.timings.read_bytes()
            timings += data[: data.rfind(b"\n") + 1]  # whole lines only (a torn tail is not one)
    records.sort(key=lambda r: (r["index"], r["qid"]))
    manifest = {k: v for k, v in manifests[order[0]].items() if k not in ("shard", "started_at", "base_url")}
    manifest["base_url"] = manifests[order[0]].get("base_url")  # endpoints may differ per shard: the first's
    manifest["merged"] = {"count": count, "rule": manifests[0]["shard"]["rule"],
                          "selection": manifests[0]["shard"].get("selection"),
                          "shards": [{"dir": str(paths[k]), "index": manifests[k]["shard"]["index"],
                                      "started_at": manifests[k].get("started_at")} for k in order]}
    target.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(target / "trajectories.jsonl",
                       b"".join((canonical_json(r) + "\n").encode("utf-8") for r in records))
    if timings:
        write_bytes_atomic(target / "timings.jsonl", timings)
    write_json_atomic(target / "run.json", manifest)  # last: its presence marks a whole run
    return {"episodes": len(records), "out": str(target), "shards": count}


__all__ = ["MERGE_FIELDS", "SHARD_RULE", "merge_runs", "parse_shard", "shard_of", "shard_record"]
