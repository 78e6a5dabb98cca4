"""DR-256 question rows (``benchmark/questions.jsonl``) and the pinned release identities.

Row schema (docs/RELEASE.md and docs/DESIGN.md, after the DR-256 dataset card). Exact where the card is exact,
any JSON value where it only names a field (``data/sample/questions.jsonl`` follows the
release's format):

- ``label``: the reference answer (non-empty string);
- ``prompt``: the frozen chat messages (roles ``system``/``user``, at least one ``user``);
- ``metadata.question``, ``metadata.qid``: non-empty strings;
- ``metadata.difficulty``: the upstream difficulty, the integer 1, 2 or 3;
- ``metadata.teacher_correct``: whether the teacher model answered correctly, or null;
- ``metadata.dataset_rows``: "source row identifiers": any JSON value (strings, integers,
  objects, a list of them, ...), present;
- ``metadata.row_fingerprints``: "source-row fingerprints": a list of non-empty strings, in
  whatever scheme the source uses (not necessarily hex SHA-256);
- ``metadata.category`` (optional, not in the card): the question's domain, a non-empty
  string (DrBencher rows carry it); it becomes the grading task's ``category``;
- ``metadata.benchmark``: ``index`` (int ≥ 0), ``calibration_tier`` (``frontier`` |
  ``challenge``; null only in a questions file *before* calibration, which grading reads
  (:func:`read_dr256`) and a release refuses (:func:`load_questions`)), ``selection_bucket``
  (non-empty string), ``base_pilot`` ("calibration
  behavior of the reference agent": any JSON value, present), ``clean_provenance_answer_docids``
  (non-empty strings).

Unknown extra keys are allowed at every level: a row may carry more than we read.
``clean_provenance_answer_docids`` is construction metadata: :meth:`QuestionRow.agent_question`
(what an agent sees) and :meth:`QuestionRow.to_task` (what a judge sees) both leave it out.

Pinned identities come from the DR-256 v1.1.0 release notes; :func:`pinned_for` finds
the pin a release names (manifest ``release.name``/``revision``).
"""

from __future__ import annotations

import json
import os
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    JsonValue,
    StrictBool,
    StrictInt,
    ValidationError,
)

from ...contract import InvalidInputError
from ._jsonl import describe_validation
from .tasks import GradingTask, NonEmpty

if TYPE_CHECKING:
    from ...agents import Question

Tier = Literal["frontier", "challenge"]


def _exact_int(value: object) -> object:
    """Let only true ints reach a Literal of ints (lax mode would take True or "2")."""
    if type(value) is not int:
        raise ValueError("Input should be 1, 2 or 3")
    return value


class _Row(BaseModel):
    model_config = ConfigDict(frozen=True, extra="allow")


class PromptMessage(_Row):
    """One frozen chat message of a question's prompt."""

    role: Literal["system", "user"]
    content: NonEmpty


class BenchmarkInfo(_Row):
    """``metadata.benchmark``: position, calibration tier and construction metadata."""

    index: Annotated[StrictInt, Field(ge=0)]
    # null: a pool question not calibrated yet (the construction's kept-questions file, which
    # the calibration rollouts answer and grading reads); a release's rows need a tier.
    calibration_tier: Tier | None
    selection_bucket: NonEmpty
    # The card describes it only as the reference agent's calibration behaviour: any JSON
    # value is accepted (a boolean, a label, an object of pilot results), but it must be there.
    base_pilot: JsonValue
    clean_provenance_answer_docids: list[NonEmpty]


class QuestionMetadata(_Row):
    question: NonEmpty
    qid: NonEmpty
    difficulty: Annotated[Literal[1, 2, 3], BeforeValidator(_exact_int)]
    teacher_correct: StrictBool | None
    # "Source row identifiers" / "source-row fingerprints": the card fixes neither their
    # type nor their scheme, so nothing here guesses one from the sample rows.
    dataset_rows: JsonValue
    row_fingerprints: list[NonEmpty]
    benchmark: BenchmarkInfo
    # Not in the card: the question's domain where the generator knows it (DrBencher rows:
    # biochemistry, financial, geophysical, history, security). Grading breaks accuracy down
    # by it, and the numeric grader matches the history domain exactly (docs/GRADING.md).
    category: NonEmpty | None = None


class QuestionRow(_Row):
    """One line of ``benchmark/questions.jsonl``: reference answer, prompt, metadata."""

    label: NonEmpty
    prompt: Annotated[list[PromptMessage], Field(min_length=1)]
    metadata: QuestionMetadata

    def agent_question(self) -> Question:
        """What the agent harness sends a model: the frozen prompt, qid and index only.

        Needs the agents extra (imported here so that release validation, which reads
        rows too, runs on a core install).
        """
        from ...agents.questions import Question

        prompt = [{"content": m.content, "role": m.role} for m in self.prompt]
        return Question.model_validate({"index": self.metadata.benchmark.index, "prompt": prompt,
                                        "qid": self.metadata.qid})

    def to_task(self) -> GradingTask:
        """What a judge needs: question, label and the breakdown fields (no answer docids)."""
        meta = self.metadata
        return GradingTask(kind="dr256", question_id=meta.qid, index=meta.benchmark.index,
                           question=meta.question, reference=self.label, category=meta.category,
                           tier=meta.benchmark.calibration_tier, difficulty=str(meta.difficulty))


@dataclass(frozen=True)
class QuestionSet:
    """Parsed questions plus every problem found (``problems`` empty = schema-valid)."""

    rows: list[QuestionRow]
    lines: int
    problems: list[str] = field(default_factory=list)

    @property
    def tiers(self) -> dict[str, int]:
        counts = Counter(r.metadata.benchmark.calibration_tier or "uncalibrated" for r in self.rows)
        return dict(sorted(counts.items()))

    @property
    def difficulties(self) -> dict[str, int]:
        return {str(k): v for k, v in sorted(Counter(r.metadata.difficulty for r in self.rows).items())}

    @property
    def answer_docids(self) -> set[str]:
        return {d for r in self.rows for d in r.metadata.benchmark.clean_provenance_answer_docids}

    def tasks(self) -> list[GradingTask]:
        """The grading tasks, in benchmark index order."""
        return [r.to_task() for r in sorted(self.rows, key=lambda r: r.metadata.benchmark.index)]


def _row_problems(row: QuestionRow, uncalibrated: bool) -> list[str]:
    roles = [m.role for m in row.prompt]
    problems = [] if "user" in roles else ["prompt: no user message"]
    if row.metadata.benchmark.calibration_tier is None and not uncalibrated:
        problems.append("metadata.benchmark.calibration_tier: null (a question before calibration); "
                        "a release's rows are 'frontier' or 'challenge'")
    return problems


def load_questions(path: str | os.PathLike[str], max_problems: int = 20, *,
                   uncalibrated: bool = False) -> QuestionSet:
    """Parse and check a questions file: schema, indices 0..N-1 unique, qids unique.

    Never raises for bad content: every problem becomes a message naming the file and
    line (at most ``max_problems`` are kept). Raises OSError if the file cannot be read.
    A null ``calibration_tier`` is a problem unless ``uncalibrated`` (a construction pool's
    questions before calibration: gradable, never a release).
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
                problems.append(f"{name}:{n}: {describe_validation(e)}")
                continue
            problems.extend(f"{name}:{n}: {p}" for p in _row_problems(row, uncalibrated))
            rows.append(row)
    if not problems:
        problems.extend(f"{name}: {p}" for p in _numbering_problems(rows))
    return QuestionSet(rows, lines, problems[:max_problems])


def read_dr256(path: str | os.PathLike[str]) -> QuestionSet:
    """:func:`load_questions` (uncalibrated rows accepted: grading reads a construction pool's
    questions before their tiers exist), raising InvalidInputError (file:line) for the first problem."""
    try:
        qs = load_questions(path, uncalibrated=True)
    except OSError as e:
        raise InvalidInputError(f"{os.fspath(path)}: cannot read questions ({e.strerror})") from None
    if qs.problems:
        more = f" (+{len(qs.problems) - 1} more)" if len(qs.problems) > 1 else ""
        raise InvalidInputError(qs.problems[0] + more)
    if not qs.rows:
        raise InvalidInputError(f"{os.fspath(path)}: no questions")
    return qs


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
    "read_dr256",
]
