"""DR-256 question rows (``benchmark/questions.jsonl``) and the pinned release identities.

Row schema (../shared/DESIGN.md). Fields whose types the design states are validated
strictly; fields it only names (``teacher_correct``, ``dataset_rows``, ``row_fingerprints``,
``selection_bucket``, ``base_pilot``) must be present with a plain JSON value, so that the
real DR-256 rows (whose exact value types we have not seen) are not rejected for a guess.
Unknown extra keys are allowed: a row may carry more than we read.

Pinned identities come from the DR-256 v1.1.0 release notes; :func:`pinned_for` finds
the pin a release names (manifest ``release.name``/``revision``).
"""

from __future__ import annotations

import json
import os
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError

Tier = Literal["frontier", "challenge"]
NonEmpty = Annotated[StrictStr, Field(min_length=1)]
JsonScalar = StrictStr | StrictInt | float | bool | None
JsonValue = JsonScalar | list[Any] | dict[str, Any]


class _Row(BaseModel):
    model_config = ConfigDict(frozen=True, extra="allow")


class PromptMessage(_Row):
    """One frozen chat message of a question's prompt."""

    role: Literal["system", "user"]
    content: NonEmpty


class BenchmarkInfo(_Row):
    """``metadata.benchmark``: position, calibration tier and construction metadata."""

    index: Annotated[StrictInt, Field(ge=0)]
    calibration_tier: Tier
    selection_bucket: JsonValue
    base_pilot: JsonValue
    clean_provenance_answer_docids: list[NonEmpty]


class QuestionMetadata(_Row):
    question: NonEmpty
    qid: NonEmpty
    difficulty: Literal[1, 2, 3]
    teacher_correct: JsonValue
    dataset_rows: JsonValue
    row_fingerprints: JsonValue
    benchmark: BenchmarkInfo


class QuestionRow(_Row):
    """One line of ``benchmark/questions.jsonl``: reference answer, prompt, metadata."""

    label: NonEmpty
    prompt: Annotated[list[PromptMessage], Field(min_length=1)]
    metadata: QuestionMetadata


@dataclass(frozen=True)
class QuestionSet:
    """Parsed questions plus every problem found (``problems`` empty = schema-valid)."""

    rows: list[QuestionRow]
    lines: int
    problems: list[str] = field(default_factory=list)

    @property
    def tiers(self) -> dict[str, int]:
        return dict(sorted(Counter(r.metadata.benchmark.calibration_tier for r in self.rows).items()))

    @property
    def difficulties(self) -> dict[str, int]:
        return {str(k): v for k, v in sorted(Counter(r.metadata.difficulty for r in self.rows).items())}

    @property
    def answer_docids(self) -> set[str]:
        return {d for r in self.rows for d in r.metadata.benchmark.clean_provenance_answer_docids}


def _describe(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "row"
    more = f" (+{error.error_count() - 1} more)" if error.error_count() > 1 else ""
    return f"{where}: {first['msg']}{more}"


def _row_problems(row: QuestionRow) -> list[str]:
    roles = [m.role for m in row.prompt]
    if "user" not in roles:
        return ["prompt: no user message"]
    return []


def load_questions(path: str | os.PathLike[str], max_problems: int = 20) -> QuestionSet:
    """Parse and check a questions file: schema, indices 0..N-1 unique, qids unique.

    Never raises for bad content: every problem becomes a message naming the file and
    line (at most ``max_problems`` are kept). Raises OSError if the file cannot be read.
    """
    name = os.fspath(path)
    rows: list[QuestionRow] = []
    problems: list[str] = []
    lines = 0
    with open(path, "rb") as fh:
        for n, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            lines += 1
            try:
                row = QuestionRow.model_validate(json.loads(raw))
            except (UnicodeDecodeError, json.JSONDecodeError) as e:
                problems.append(f"{name}:{n}: not valid JSON ({e})")
                continue
            except ValidationError as e:
                problems.append(f"{name}:{n}: {_describe(e)}")
                continue
            problems.extend(f"{name}:{n}: {p}" for p in _row_problems(row))
            rows.append(row)
    if not problems:
        problems.extend(f"{name}: {p}" for p in _numbering_problems(rows))
    return QuestionSet(rows, lines, problems[:max_problems])


def _numbering_problems(rows: list[QuestionRow]) -> list[str]:
    problems = []
    indices = Counter(r.metadata.benchmark.index for r in rows)
    dups = sorted(i for i, c in indices.items() if c > 1)
    if dups:
        problems.append(f"duplicate benchmark.index {dups[:10]}")
    missing = sorted(set(range(len(rows))) - set(indices))
    if missing:
        problems.append(f"benchmark.index must be 0..{len(rows) - 1}; missing {missing[:10]}")
    qids = Counter(r.metadata.qid for r in rows)
    dup_qids = sorted(q for q, c in qids.items() if c > 1)
    if dup_qids:
        problems.append(f"duplicate qid {dup_qids[:5]}")
    return problems


def normalise_question(text: str) -> str:
    """NFKC, case-folded, single-spaced: the form a qid is derived from."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


# -- pinned release identities ------------------------------------------------------------


@dataclass(frozen=True)
class PinnedRelease:
    """The published identity of a release: what ``validate`` compares it against."""

    name: str
    revision: str
    questions_sha256: str
    database_sha256: str
    database_bytes: int
    questions: int
    tiers: dict[str, int]

    @property
    def label(self) -> str:
        return f"{self.name} {self.revision}"


DR256_V1_1_0 = PinnedRelease(
    name="DR-256",
    revision="v1.1.0",
    questions_sha256="6c1bbdfad639b84224976d4a49d28e1eb060cb0a38f3f7284b9050b6963e7a85",
    database_sha256="09172388ed6c0ae91cb43dff3a663bcfb219673ed991ff5c9922904eb61ee77e",
    database_bytes=3_499_802_624,
    questions=256,
    tiers={"challenge": 128, "frontier": 128},
)
PINNED_RELEASES: tuple[PinnedRelease, ...] = (DR256_V1_1_0,)


def _norm_name(text: str) -> str:
    return "".join(c for c in text.casefold() if c.isalnum())


def _norm_revision(text: str) -> str:
    return text.strip().casefold().removeprefix("v")


def pinned_for(name: str, revision: str,
               pins: tuple[PinnedRelease, ...] = PINNED_RELEASES) -> PinnedRelease | None:
    """The pin of release ``name``/``revision`` ("dr256", "DR-256", "v1.1.0", "1.1.0" all match)."""
    for pin in pins:
        if _norm_name(pin.name) == _norm_name(name) and \
                _norm_revision(pin.revision) == _norm_revision(revision):
            return pin
    return None


def pins_named(name: str, pins: tuple[PinnedRelease, ...] = PINNED_RELEASES) -> list[PinnedRelease]:
    """Every pinned revision of release ``name``."""
    return [p for p in pins if _norm_name(p.name) == _norm_name(name)]


__all__ = [
    "DR256_V1_1_0",
    "PINNED_RELEASES",
    "BenchmarkInfo",
    "PinnedRelease",
    "PromptMessage",
    "QuestionMetadata",
    "QuestionRow",
    "QuestionSet",
    "load_questions",
    "normalise_question",
    "pinned_for",
    "pins_named",
]
