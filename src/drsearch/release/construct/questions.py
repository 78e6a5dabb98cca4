"""``construct questions``: the audit's kept questions as a questions file, and the frozen prompt.

``POOL/questions/kept.jsonl`` holds one DR-256 row per question the shortcut audit kept, in
the audit's order, ``benchmark.index`` 0..N−1: the pool's question and answer (``label``),
the prompt rendered from the prompt template, the pool's ``qid``, ``dataset_rows`` and
``row_fingerprints``, the first upstream row's ``difficulty`` and ``teacher_correct``, the
answer documents as ``clean_provenance_answer_docids``, and no tier yet
(``calibration_tier`` null, ``selection_bucket`` ``"uncalibrated"``, ``base_pilot`` null).
It is what the three calibration rollouts answer (``drsearch run --questions``) and what
``drsearch score`` grades them against; a release refuses such rows (they have no tier), and
``construct select`` writes the release's own rows with the same prompts.

A prompt template is a JSON file ``{"format": "drsearch-prompt-template", "format_version":
1, "messages": [{"role": "system"|"user", "content": "…"}, …]}``; in each content
``{question}`` becomes the question (``{{`` and ``}}`` are literal braces). Any other
placeholder, a format spec or conversion, or a malformed file is exit 2 naming the file.
:data:`DEFAULT_TEMPLATE` (shipped beside this module) is the sample release's prompt.
"""

from __future__ import annotations

import json
import string
from pathlib import Path
from typing import Any

from ...agents.canonical import sha256_json
from ...benchmark.generate import StageContext
from ...contract import InvalidInputError
from .work import ANSWERS_FILE, POOL_FILE, SHORTCUTS_FILE, read_rows, run_stage, stage_input

DEFAULT_TEMPLATE = Path(__file__).with_name("prompt_template.json")
PLACEHOLDERS = ("question",)
KEPT_FILE = "questions/kept.jsonl"
UNCALIBRATED = "uncalibrated"


def read_template(path: str | Path) -> list[dict[str, str]]:
    """The messages of a prompt template; InvalidInputError (exit 2) naming the file for a
    malformed one or an unknown placeholder."""
    where = str(path)
    try:
        body = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        raise InvalidInputError(f"{where}: cannot read the prompt template ({e.strerror})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InvalidInputError(f"{where}: not a JSON prompt template ({e})") from None
    if not isinstance(body, dict) or body.get("format") != "drsearch-prompt-template" \
            or body.get("format_version") != 1:
        raise InvalidInputError(f"{where}: not a prompt template (want \"format\": "
                                "\"drsearch-prompt-template\", \"format_version\": 1)")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise InvalidInputError(f"{where}: \"messages\" must be a non-empty list")
    out = []
    for n, m in enumerate(messages, 1):
        if not isinstance(m, dict) or m.get("role") not in ("system", "user") \
                or not isinstance(m.get("content"), str) or not m["content"].strip():
            raise InvalidInputError(f"{where}: message {n} must be {{\"role\": \"system\"|\"user\", "
                                    "\"content\": non-empty text}")
        try:
            fields = list(string.Formatter().parse(m["content"]))
        except ValueError as e:
            raise InvalidInputError(f"{where}: message {n}: {e} "
                                    "(write a literal brace as {{ or }})") from None
        for _, name, spec, conversion in fields:
            if name is None:
                continue
            if name not in PLACEHOLDERS or spec or conversion:
                extra = (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "")
                shown = "{" + name + extra + "}"
                raise InvalidInputError(f"{where}: message {n}: unknown placeholder {shown} (known: "
                                        + ", ".join("{" + p + "}" for p in PLACEHOLDERS) + ")")
        out.append({"content": m["content"], "role": m["role"]})
    if "user" not in [m["role"] for m in out]:
        raise InvalidInputError(f"{where}: no user message")
    return out


def render(template: list[dict[str, str]], question: str) -> list[dict[str, str]]:
    """The frozen prompt of ``question``."""
    return [{"content": m["content"].format(question=question), "role": m["role"]} for m in template]


def prompt_sha256(prompt: list[dict[str, str]]) -> str:
    """What ``drsearch run`` records per question in ``run.json`` (``prompt_sha256``)."""
    return sha256_json(prompt)


def upstream_fields(row: dict[str, Any]) -> tuple[int, bool | None]:
    """(difficulty, teacher_correct) of a pool line: its first upstream row's.
    InvalidInputError (exit 2) when the difficulty is not DR-256's 1, 2 or 3."""
    difficulty = (row.get("difficulty") or [None])[0]
    teacher = (row.get("teacher_correct") or [None])[0]
    if type(difficulty) is not int or difficulty not in (1, 2, 3):
        raise InvalidInputError(f"{row['qid']}: upstream difficulty {difficulty!r} is not 1, 2 or 3, which a "
                                "DR-256 row needs (map the upstream field with --map difficulty=FIELD)")
    if teacher is not None and not isinstance(teacher, bool):
        raise InvalidInputError(f"{row['qid']}: upstream teacher_correct {teacher!r} is not true, false or "
                                "null")
    return difficulty, teacher


def question_row(row: dict[str, Any], answer_docids: list[str], prompt: list[dict[str, str]], *, index: int,
                 tier: str | None, bucket: str, pilot: Any) -> dict[str, Any]:
    """One DR-256 row of a pool question (see the module doc)."""
    difficulty, teacher = upstream_fields(row)
    return {"label": row["answer"], "prompt": prompt,
            "metadata": {"benchmark": {"base_pilot": pilot, "calibration_tier": tier,
                                       "clean_provenance_answer_docids": sorted(answer_docids),
                                       "index": index, "selection_bucket": bucket},
                         "dataset_rows": row["dataset_rows"], "difficulty": difficulty, "qid": row["qid"],
                         "question": row["question"], "row_fingerprints": row["row_fingerprints"],
                         "teacher_correct": teacher}}


def kept_rows(root: Path, template: list[dict[str, str]]) -> list[dict[str, Any]]:
    """The rows of ``kept.jsonl`` (every refusal checked)."""
    pool = {r["qid"]: r for r in read_rows(stage_input(root, POOL_FILE))}
    answers = {r["qid"]: r["answer_docids"] for r in read_rows(stage_input(root, ANSWERS_FILE))}
    kept = [line["qid"] for line in read_rows(stage_input(root, SHORTCUTS_FILE)) if not line["removed"]]
    if not kept:
        raise InvalidInputError(f"{root / SHORTCUTS_FILE}: the shortcut audit kept no question")
    return [question_row(pool[q], answers[q], render(template, pool[q]["question"]), index=i, tier=None,
                         bucket=UNCALIBRATED, pilot=None) for i, q in enumerate(kept)]


def _run(ctx: StageContext) -> None:
    rows = kept_rows(Path(ctx.settings["pool"]), read_template(ctx.stage.inputs[-1]))
    ctx.count_in(len(rows))
    ctx.count_out(len(rows))
    ctx.write_jsonl("kept.jsonl", rows)
    ctx.write_json("facts.json", {"questions": len(rows)})


def write_kept_questions(pool: str | Path, template: str | Path | None = None) -> dict[str, Any]:
    """Write ``POOL/questions/kept.jsonl``; returns the stage's record. ``template``: a
    prompt template file (default :data:`DEFAULT_TEMPLATE`)."""
    root = Path(pool)
    source = Path(template) if template is not None else DEFAULT_TEMPLATE
    kept_rows(root, read_template(source))  # bad input is refused before the stage runs
    inputs = (stage_input(root, POOL_FILE), stage_input(root, ANSWERS_FILE),
              stage_input(root, SHORTCUTS_FILE), source.resolve())
    return run_stage(pool, "questions", _run, inputs=inputs, outputs=("kept.jsonl", "facts.json"),
                     settings={"pool": str(root.resolve()), "placeholders": list(PLACEHOLDERS)})


__all__ = ["DEFAULT_TEMPLATE", "KEPT_FILE", "PLACEHOLDERS", "UNCALIBRATED", "kept_rows", "prompt_sha256",
           "question_row", "read_template", "render", "upstream_fields", "write_kept_questions"]
