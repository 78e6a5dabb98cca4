"""LLM judges: correctness (DR-256, BrowseComp style), DeepSearchQA item matching, checklists.

Every judge calls an OpenAI-compatible endpoint through :class:`~drsearch.agents.ChatClient`
at temperature 0 with a fixed seed, through a :class:`~drsearch.benchmark.judge_cache.JudgeCache`
keyed by (judge model, prompt SHA-256, question fields, answer), so grading the same run
twice asks the judge nothing the second time and gives the same verdicts.

Prompts are versioned files in ``drsearch/benchmark/prompts/`` (``<name>_v<N>.md``); the
SHA-256 of the file goes into every verdict record. The graded answer (and any other
untrusted text, such as a cited web page) is placed between marker lines whose tag is
derived from the text's own hash, after every ``<<<``/``>>>`` in it has been neutralised:
an answer cannot close the block early or forge a marker, whatever it says.

A judge reply that cannot be parsed (not one JSON object, a missing or out-of-range
field, an empty ``Correctness Details``) is asked again up to ``parse_attempts`` times;
then the verdict is ``judge_failed``, which scoring counts as incorrect, and that outcome is
cached like any verdict. A judge endpoint that fails for good is ``judge_failed`` too but is
asked again on the next grading. Before its first live judgement a judge sends a one-token
probe; if that fails, grading stops (:class:`JudgeUnavailableError`). An empty answer
is ``incorrect`` with reason ``empty_model_response`` and the judge is not called.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from ..agents import ChatClient, LLMError
from ..agents.canonical import canonical_bytes, canonical_json, sha256_hex
from ..contract import InvalidInputError
from .datasets import Criterion, DatasetKind, GradingTask
from .judge_cache import JudgeCache

JUDGE_SEED = 20260811
EMPTY_RESPONSE = "empty_model_response"
PROMPT_FILES: dict[str, str] = {
    "correctness": "correctness_v1.md",
    "deepsearchqa": "deepsearchqa_v1.md",
    "checklist": "checklist_v1.md",
    "citation_support": "citation_support_v1.md",
}
"""The prompt version each judge uses by default (a new version is a new file)."""


class JudgeParseError(ValueError):
    """A judge reply that does not carry a well-formed verdict (the message says why)."""


class JudgeUnavailableError(InvalidInputError):
    """The judge endpoint failed before giving any reply: a wrong URL or model, or a server
    that is down (CLI exit 2; nothing is cached, nothing is written)."""


# -- prompts and delimiting ---------------------------------------------------------------

_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")
_SECTION = re.compile(r"^<!-- (system|user) -->\n", re.M)


def neutralise(text: str) -> str:
    """``text`` with every ``<<<`` and ``>>>`` replaced by look-alikes that are not markers."""
    return text.replace("<<<", "‹‹‹").replace(">>>", "›››")


def delimit(text: str, label: str = "RESPONSE") -> tuple[str, str]:
    """``(tag, block)``: ``text`` neutralised between ``<<<BEGIN tag>>>`` / ``<<<END tag>>>`` lines.

    The tag is ``label-`` + 16 hex digits of the neutralised text's SHA-256, so a text
    cannot contain its own markers, and equal texts get equal (cacheable) prompts.
    """
    safe = neutralise(text)
    tag = f"{label}-{sha256_hex(safe)[:16]}"
    return tag, f"<<<BEGIN {tag}>>>\n{safe}\n<<<END {tag}>>>"


@dataclass(frozen=True)
class JudgePrompt:
    """One versioned prompt file: a system and a user template with ``{{name}}`` fields."""

    name: str
    system: str
    user: str
    sha256: str

    @classmethod
    def from_text(cls, name: str, text: str) -> JudgePrompt:
        """Parse a prompt file's text: ``<!-- system -->`` and ``<!-- user -->`` sections."""
        parts = _SECTION.split(text)
        sections = dict(zip(parts[1::2], parts[2::2], strict=True))
        if set(sections) != {"system", "user"}:
            raise ValueError(f"prompt {name}: needs one <!-- system --> and one <!-- user --> section")
        return cls(name, sections["system"].strip(), sections["user"].strip(), sha256_hex(text))

    @classmethod
    def load(cls, filename: str) -> JudgePrompt:
        """A prompt shipped in ``drsearch/benchmark/prompts/`` (package data)."""
        text = resources.files("drsearch.benchmark").joinpath("prompts", filename).read_text("utf-8")
        return cls.from_text(filename.removesuffix(".md"), text)

    def render(self, fields: Mapping[str, str], untrusted: Mapping[str, str]) -> list[dict[str, str]]:
        """The chat messages: ``fields`` inserted as is, each ``untrusted`` value delimited.

        An untrusted field ``x`` fills ``{{x}}`` with its block and ``{{x_tag}}`` with its
        tag. Substitution is one pass over the template: values are never re-scanned, so a
        value containing ``{{...}}`` stays literal. KeyError for a field the template lacks.
        """
        values = dict(fields)
        for key, text in untrusted.items():
            values[f"{key}_tag"], values[key] = delimit(text, key.upper())

        def fill(template: str) -> str:
            return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)

        return [{"content": fill(self.system), "role": "system"},
                {"content": fill(self.user), "role": "user"}]


def default_prompt(judge: str) -> JudgePrompt:
    return JudgePrompt.load(PROMPT_FILES[judge])


# -- reading judge replies ----------------------------------------------------------------

_THINK = re.compile(r"<think>.*?</think>", re.S)
_FENCE = re.compile(r"^```(?:json)?\s*\n?|\n?```\s*$")


def reply_content(raw: bytes) -> str:
    """The assistant text of a chat completion, reasoning (``<think>``) removed."""
    try:
        content = json.loads(raw)["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError) as e:
        raise JudgeParseError(f"not a chat completion ({e.__class__.__name__})") from None
    if not isinstance(content, str) or not content.strip():
        raise JudgeParseError("the judge's reply is empty")
    return _THINK.sub("", content).strip()


def json_object(content: str) -> dict[str, Any]:
    """The one JSON object of a reply (code fences allowed around it)."""
    text = _FENCE.sub("", content.strip()).strip()
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        raise JudgeParseError("no JSON object in the judge's reply")
    try:
        value = json.loads(text[start : end + 1])
    except ValueError as e:
        raise JudgeParseError(f"malformed JSON in the judge's reply ({e})") from None
    if not isinstance(value, dict):
        raise JudgeParseError("the judge's reply is not a JSON object")
    return value


def _yes_no(value: object, name: str) -> Literal["yes", "no"]:
    if isinstance(value, bool):
        return "yes" if value else "no"
    word = str(value).strip().strip("*\"'.").strip().casefold() if isinstance(value, str) else None
    if word == "yes":
        return "yes"
    if word == "no":
        return "no"
    raise JudgeParseError(f"{name} must be yes or no, got {value!r}")


def _confidence(value: object) -> int | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str):
        m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*%?\s*", value)
        value = float(m.group(1)) if m else None
    if isinstance(value, int | float) and 0 <= value <= 100:
        return round(value)
    return None


_LINE_FIELD = re.compile(
    r"^[ \t*]*(extracted_final_answer|reasoning|correct|confidence)[ \t*]*:[ \t*]*(.*?)[ \t*]*$", re.I | re.M)


def browsecomp_fields(content: str) -> dict[str, str]:
    """The ``field: value`` lines of BrowseComp's text verdict format.

    Each value is the field's own text (the second group), never the whole matched line:
    the public BrowseComp grader compared the whole match (``"correct: yes"``) to
    ``"yes"`` and so marked every answer wrong. ``correct`` must occur exactly once.
    """
    found: dict[str, list[str]] = {}
    for m in _LINE_FIELD.finditer(content):
        found.setdefault(m.group(1).casefold(), []).append(m.group(2))
    if len(found.get("correct", [])) != 1:
        raise JudgeParseError(f"expected one 'correct:' line, found {len(found.get('correct', []))}")
    return {k: v[0] for k, v in found.items()}


def parse_correctness(content: str) -> dict[str, Any]:
    """``{extracted_final_answer, reasoning, correct: "yes"|"no", confidence}`` from a reply.

    A JSON object is preferred; BrowseComp's line format is accepted too. The verdict is
    exactly the ``correct`` field; a reply without a clear yes/no raises JudgeParseError.
    """
    try:
        obj: Mapping[str, Any] = json_object(content)
    except JudgeParseError as json_error:
        if "{" in content:  # meant as JSON: report the JSON problem
            raise
        try:
            obj = browsecomp_fields(content)
        except JudgeParseError as line_error:
            raise JudgeParseError(f"{json_error}; nor BrowseComp lines: {line_error}") from None
    if "correct" not in obj:
        raise JudgeParseError("the judge's reply has no 'correct' field")
    extracted = obj.get("extracted_final_answer")
    return {"confidence": _confidence(obj.get("confidence")), "correct": _yes_no(obj["correct"], "correct"),
            "extracted_final_answer": None if extracted is None else str(extracted),
            "reasoning": str(obj.get("reasoning") or "")}


def _norm_item(text: str) -> str:
    return " ".join(text.casefold().split())


def _excess(value: object) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise JudgeParseError("'Excessive Answers' must be a list of strings")
    return [v for v in value if v.strip() and _norm_item(v) not in ("none", "n/a")]


def parse_deepsearchqa(content: str, items: Sequence[str]) -> dict[str, Any]:
    """``{hits: {item: bool}, excessive: [...], explanation}`` from a DeepSearchQA reply.

    Every expected item needs a true/false in ``Correctness Details`` (keys compared
    case- and space-insensitively); an empty or missing object is a parse failure, not
    a pass. ``Excessive Answers`` must be present (a list; "None" entries are dropped).
    """
    obj = json_object(content)
    details = obj.get("Correctness Details")
    if not isinstance(details, dict) or not details:
        raise JudgeParseError("empty or missing 'Correctness Details'")
    if "Excessive Answers" not in obj:
        raise JudgeParseError("missing 'Excessive Answers'")
    by_norm = {_norm_item(str(k)): v for k, v in details.items()}
    hits: dict[str, bool] = {}
    for item in items:
        hit = by_norm.get(_norm_item(item))
        if not isinstance(hit, bool):
            raise JudgeParseError(f"'Correctness Details' has no true/false for expected item {item!r}")
        hits[item] = hit
    return {"excessive": _excess(obj["Excessive Answers"]), "explanation": str(obj.get("Explanation") or ""),
            "hits": hits}


CriterionVerdict = Literal["met", "partial", "not_met"]
VERDICT_VALUES: dict[str, float] = {"met": 1.0, "partial": 0.5, "not_met": 0.0}


def _criterion_verdict(value: object) -> CriterionVerdict:
    word = "_".join(str(value).strip().casefold().replace("-", " ").split()) if isinstance(value, str) else ""
    if word == "met":
        return "met"
    if word == "partial":
        return "partial"
    if word == "not_met":
        return "not_met"
    raise JudgeParseError(f"a verdict must be met, partial or not_met, got {value!r}")


def parse_checklist(content: str, n_criteria: int) -> list[dict[str, Any]]:
    """``[{id, verdict, reason}]``, one per criterion in order, from a checklist reply."""
    entries = json_object(content).get("criteria")
    if not isinstance(entries, list) or len(entries) != n_criteria:
        got = len(entries) if isinstance(entries, list) else "no"
        raise JudgeParseError(f"expected {n_criteria} criteria verdicts, got {got}")
    out = []
    for i, entry in enumerate(entries, 1):
        if not isinstance(entry, dict):
            raise JudgeParseError(f"criterion {i}: not an object")
        if entry.get("id", i) != i:
            raise JudgeParseError(f"criterion {i}: id {entry.get('id')!r} out of order")
        out.append({"id": i, "reason": str(entry.get("reason") or ""),
                    "verdict": _criterion_verdict(entry.get("verdict"))})
    return out


def checklist_score(criteria: Sequence[Criterion], verdicts: Sequence[CriterionVerdict]) -> tuple[float,
                                                                                                    list[float]]:
    """``(score, values)``: met/partial/not_met = 1/0.5/0, inverted for must_avoid; Σw·v/Σw."""
    values = [1.0 - VERDICT_VALUES[v] if c.type == "must_avoid" else VERDICT_VALUES[v]
              for c, v in zip(criteria, verdicts, strict=True)]
    total = sum(c.weight for c in criteria)
    return sum(c.weight * v for c, v in zip(criteria, values, strict=True)) / total, values


# -- asking a judge -----------------------------------------------------------------------


RAW_REPLY_CHARS = 16_384
"""How much of an unparseable judge reply a verdict keeps (``raw_response``)."""


class JudgeSettings(BaseModel):
    """How judges are called: model, temperature 0 and a fixed seed, bounded re-asks."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str = Field(min_length=1)
    temperature: float = Field(default=0.0, ge=0.0)
    seed: int = JUDGE_SEED
    max_tokens: int | None = Field(default=None, ge=1)
    parse_attempts: int = Field(default=3, ge=1, le=10)

    def body(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        body: dict[str, Any] = {"messages": messages, "model": self.model, "seed": self.seed,
                                "temperature": self.temperature}
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        return body


@dataclass(frozen=True)
class JudgeReply:
    """One judgement: the parsed verdict fields, or why there are none."""

    ok: bool
    parsed: Any
    error: str | None
    attempts: int
    raw: str | None = None
    """The judge's last reply when it could not be parsed (AgentCompass's ``raw_response``),
    at most :data:`RAW_REPLY_CHARS` characters; None when it parsed or never came."""
    usage: dict[str, int] | None = None
    """Tokens of every try of this judgement as the endpoint reported them (``prompt_tokens``,
    ``completion_tokens``), kept in the cache with the reply so that re-grading reports the
    same cost; None for a cache row written before usage was kept."""


def _usage_of(raw: bytes) -> dict[str, int]:
    """A chat completion's reported usage (zeros where it reports none)."""
    try:
        usage = json.loads(raw).get("usage") or {}
        return {k: int(usage.get(k) or 0) for k in ("completion_tokens", "prompt_tokens")}
    except (ValueError, AttributeError, TypeError):
        return {"completion_tokens": 0, "prompt_tokens": 0}


class LLMJudge:
    """Asks a judge model through the cache; ``client`` None answers from the cache only."""

    def __init__(self, client: ChatClient | None, settings: JudgeSettings,
                 cache: JudgeCache | None = None, *, fail_fast: bool = True) -> None:
        """``fail_fast``: probe the endpoint before the first live judgement (JudgeUnavailableError)."""
        self.client = client
        self.settings = settings
        self.cache = cache if cache is not None else JudgeCache(None)
        self.fail_fast = fail_fast
        self._reached = False
        self._probe_error: str | None = None
        self._probe_lock = threading.Lock()
        # tokens of every judgement asked through this judge (verdicts and citation support),
        # as recorded with each reply: the judge's cost (drsearch score --prices)
        self.usage = {"completion_tokens": 0, "prompt_tokens": 0}
        self.judgements = 0
        self.judgements_without_usage = 0
        self._usage_lock = threading.Lock()

    def _check_endpoint(self) -> None:
        """Before the first live judgement: one tiny request, so a dead endpoint fails fast.

        Raises JudgeUnavailableError when it fails (after the client's retries): a wrong
        URL, model or key, or a server that is down. Asked at most once per judge, and only
        when some verdict is not cached, so re-grading from the cache sends nothing. Once
        it has answered, a failing judgement is that judgement's problem (say, an answer
        too long for the judge): ``judge_failed``, asked again on the next grading.
        """
        with self._probe_lock:
            if self._probe_error is None and not self._reached:
                assert self.client is not None
                probe = self.settings.body([{"content": "Reply with the word OK.", "role": "user"}])
                probe["max_tokens"] = 1
                try:
                    self.client.complete(probe)
                    self._reached = True
                except LLMError as e:
                    self._probe_error = e.message
            if self._probe_error is not None:
                raise JudgeUnavailableError(f"judge endpoint {self.settings.model!r} does not answer: "
                                            f"{self._probe_error}")

    def _live(self, body: dict[str, Any], parse: Callable[[str], Any]) -> tuple[bool, bytes]:
        """Ask the judge; ``(True, …)`` is a final answer (cached), ``(False, …)`` is asked again later.

        A reply still unparseable after ``parse_attempts`` tries is final: at temperature 0
        with a fixed seed asking again gives the same reply, and caching it keeps re-grading
        free and byte-identical. An endpoint failure is not final (stored as a failure, asked
        again next time). With ``fail_fast`` the endpoint is checked first (:meth:`_check_endpoint`).
        """
        assert self.client is not None
        if self.fail_fast:
            self._check_endpoint()
        error, unparsed = "", ""
        tries = self.settings.parse_attempts
        usage = {"completion_tokens": 0, "prompt_tokens": 0}
        for attempt in range(1, tries + 1):
            try:
                raw, _ = self.client.complete(body)
            except LLMError as e:
                error = f"judge endpoint failed: {e.message}"
                return False, canonical_bytes({"attempts": attempt, "error": error})
            usage = {k: v + _usage_of(raw)[k] for k, v in usage.items()}
            try:
                # a reply that is not a chat completion is kept as the bytes that came
                unparsed = raw.decode("utf-8", "replace")
                content = unparsed = reply_content(raw)
                parse(content)
            except JudgeParseError as e:
                error = str(e)
                continue
            return True, canonical_bytes({"attempts": attempt, "content": content, "usage": usage})
        # kept so that a person can see what the judge said (and fix the prompt or parser)
        return True, canonical_bytes({"attempts": tries, "error": f"unparseable judge reply after {tries} "
                                                                  f"attempt(s): {error}",
                                      "raw_response": unparsed[:RAW_REPLY_CHARS], "usage": usage})

    def ask(self, prompt: JudgePrompt, fields: Mapping[str, str], untrusted: Mapping[str, str],
            parse: Callable[[str], Any], describe: str) -> JudgeReply:
        """Render ``prompt``, ask (or read the cache), parse; never raises for a bad reply.

        Raises ReplayMissError only in replay-only mode (or without a client) on a miss, and
        JudgeUnavailableError when the endpoint does not answer (:meth:`_check_endpoint`).
        """
        body = self.settings.body(prompt.render(fields, untrusted))
        key_fields = {**fields, **untrusted}
        live = None if self.client is None else (lambda: self._live(body, parse))
        _, data = self.cache.fetch(self.settings.model, prompt.sha256, key_fields, describe, live)
        stored = json.loads(data)
        usage = stored.get("usage")  # absent: an endpoint failure, or a cache row of before
        self._count(usage)
        if "error" in stored:
            raw = stored.get("raw_response")  # absent: an endpoint failure, or a cache row of before
            return JudgeReply(False, None, str(stored["error"]), int(stored["attempts"]),
                              None if raw is None else str(raw), usage)
        try:
            parsed = parse(stored["content"])
        except JudgeParseError as e:  # a cached reply that this version's parser rejects
            return JudgeReply(False, None, f"cached judge reply does not parse: {e}", int(stored["attempts"]),
                              str(stored["content"])[:RAW_REPLY_CHARS], usage)
        return JudgeReply(True, parsed, None, int(stored["attempts"]), usage=usage)

    def _count(self, usage: dict[str, int] | None) -> None:
        with self._usage_lock:
            self.judgements += 1
            if usage is None:
                self.judgements_without_usage += 1
                return
            for key in self.usage:
                self.usage[key] += int(usage.get(key) or 0)

    def record(self, prompt: JudgePrompt, reply: JudgeReply) -> dict[str, Any]:
        """The part of a verdict record every judge shares."""
        record: dict[str, Any] = {"attempts": reply.attempts, "error": reply.error,
                                  "model": self.settings.model,
                  "prompt": prompt.name, "prompt_sha256": prompt.sha256}
        if reply.raw is not None:
            record["raw_response"] = reply.raw
        if reply.usage is not None:
            record["usage"] = reply.usage
        return record


# -- the judges ---------------------------------------------------------------------------

VerdictOutcome = Literal["correct", "incorrect", "judge_failed"]


@dataclass(frozen=True)
class Verdict:
    """A judge's decision on one answer; ``record`` is stored with the graded question."""

    outcome: VerdictOutcome
    reason: str | None = None
    score: float | None = None
    record: dict[str, Any] = field(default_factory=dict)

    @property
    def correct(self) -> bool:
        return self.outcome == "correct"


def is_empty(answer: str | None) -> bool:
    return answer is None or not answer.strip()


class Judge(Protocol):
    """Grades one answer to one task with one versioned prompt."""

    prompt: JudgePrompt

    def grade(self, task: GradingTask, answer: str | None) -> Verdict:
        ...


class _PromptedJudge:
    """What every judge shares: an :class:`LLMJudge`, a prompt (``PROMPT`` by default), verdicts."""

    PROMPT: str

    def __init__(self, llm: LLMJudge, prompt: JudgePrompt | None = None) -> None:
        self.llm = llm
        self.prompt = prompt or default_prompt(self.PROMPT)

    def _failed(self, reply: JudgeReply) -> Verdict:
        record = {**self.llm.record(self.prompt, reply), "verdict": None}
        return Verdict("judge_failed", reply.error, None, record)

    def _decided(self, reply: JudgeReply, correct: bool, reason: str, verdict: Any,
                 score: float | None = None) -> Verdict:
        """``correct``, or ``incorrect`` because of ``reason``; ``verdict`` goes into the record."""
        return Verdict("correct" if correct else "incorrect", None if correct else reason, score,
                       {**self.llm.record(self.prompt, reply), "verdict": verdict})


class CorrectnessJudge(_PromptedJudge):
    """DR-256 / BrowseComp: is the response's final answer the reference answer?"""

    PROMPT = "correctness"

    def grade(self, task: GradingTask, answer: str | None) -> Verdict:
        if answer is None or is_empty(answer):
            return Verdict("incorrect", EMPTY_RESPONSE)
        fields = {"question": task.question, "reference": task.reference or ""}
        reply = self.llm.ask(self.prompt, fields, {"response": answer}, parse_correctness,
                             f"correctness of {task.question_id}")
        if not reply.ok:
            return self._failed(reply)
        return self._decided(reply, reply.parsed["correct"] == "yes", "judged incorrect", reply.parsed)


class DeepSearchQAJudge(_PromptedJudge):
    """DeepSearchQA: correct iff every expected item is hit and nothing excessive is given."""

    PROMPT = "deepsearchqa"

    def grade(self, task: GradingTask, answer: str | None) -> Verdict:
        if answer is None or is_empty(answer):
            return Verdict("incorrect", EMPTY_RESPONSE)
        items = task.expected_items or ((task.reference,) if task.reference else ())
        fields = {"answer_type": task.answer_type or "Single Answer", "items": canonical_json(list(items)),
                  "question": task.question}
        reply = self.llm.ask(self.prompt, fields, {"response": answer},
                             lambda content: parse_deepsearchqa(content, items),
                             f"deepsearchqa grading of {task.question_id}")
        if not reply.ok:
            return self._failed(reply)
        parsed = reply.parsed
        missed = [item for item, hit in parsed["hits"].items() if not hit]
        excessive = parsed["excessive"]
        reason = "; ".join(([f"missed {len(missed)} of {len(items)} item(s)"] if missed else [])
                           + ([f"{len(excessive)} excessive answer(s)"] if excessive else []))
        return self._decided(reply, not missed and not excessive, reason, parsed)


class ChecklistJudge(_PromptedJudge):
    """OpenBioRQ: a weighted checklist score in [0, 1]; solved iff score ≥ ``threshold``."""

    PROMPT = "checklist"

    def __init__(self, llm: LLMJudge, prompt: JudgePrompt | None = None, threshold: float = 0.5) -> None:
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"threshold must be in [0, 1], got {threshold}")
        super().__init__(llm, prompt)
        self.threshold = threshold

    def grade(self, task: GradingTask, answer: str | None) -> Verdict:
        if answer is None or is_empty(answer):
            return Verdict("incorrect", EMPTY_RESPONSE, 0.0 if task.checklist else None)
        criteria = task.checklist
        listed = [{"id": i, "text": c.text, "type": c.type} for i, c in enumerate(criteria, 1)]
        reply = self.llm.ask(self.prompt, {"criteria": canonical_json(listed), "question": task.question},
                             {"response": answer}, lambda content: parse_checklist(content, len(criteria)),
                             f"checklist of {task.question_id}")
        if not reply.ok:
            return self._failed(reply)
        score, values = checklist_score(criteria, [e["verdict"] for e in reply.parsed])
        per_criterion = [{**e, "type": c.type, "value": v, "weight": c.weight}
                         for e, c, v in zip(reply.parsed, criteria, values, strict=True)]
        solved = score >= self.threshold
        verdict = {"criteria": per_criterion, "score": score, "solved": solved, "threshold": self.threshold}
        return self._decided(reply, solved, f"checklist score {score:.3f} < {self.threshold}", verdict, score)


def judge_for(kind: DatasetKind, llm: LLMJudge, *, threshold: float = 0.5) -> Judge:
    """The judge a dataset is graded with."""
    if kind == "dr256":
        return CorrectnessJudge(llm)
    if kind == "deepsearchqa":
        return DeepSearchQAJudge(llm)
    return ChecklistJudge(llm, threshold=threshold)


__all__ = [
    "EMPTY_RESPONSE",
    "JUDGE_SEED",
    "PROMPT_FILES",
    "VERDICT_VALUES",
    "ChecklistJudge",
    "CorrectnessJudge",
    "DeepSearchQAJudge",
    "Judge",
    "JudgeParseError",
    "JudgePrompt",
    "JudgeReply",
    "JudgeSettings",
    "JudgeUnavailableError",
    "LLMJudge",
    "Verdict",
    "browsecomp_fields",
    "checklist_score",
    "default_prompt",
    "delimit",
    "is_empty",
    "json_object",
    "judge_for",
    "neutralise",
    "parse_checklist",
    "parse_correctness",
    "parse_deepsearchqa",
    "reply_content",
]
