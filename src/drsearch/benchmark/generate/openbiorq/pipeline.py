"""The OpenBioRQ-style generator as a toolkit :class:`~..stages.Pipeline`.

Stages, in order (docs/GENERATE.md, "OpenBioRQ-style pipeline"): ``extract`` →
``refine`` → ``audit`` → ``dedup`` → ``rubric``. Every stage's settings carry the SHA-256 of
this package's sources, so editing a prompt or a rule reruns the stages from there; the
rest (resume, skip, replay) is the toolkit's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ....agents.canonical import sha256_hex
from ...datasets.openbiorq_taxonomy import DOMAIN_LABELS
from ..dedup import DEFAULT_TAU
from ..stages import ModelEndpoint, Pipeline, Stage
from .dedupstage import dedup_stage
from .evidence import PUBLIC_APIS
from .export import export_stage
from .gold import gold_stage
from .membership import membership_stage
from .openness import openness_stage
from .rubric import MAX_CRITERIA, MIN_CRITERIA, REDRAFTS, VAGUE_PHRASES
from .rubricstage import rubric_stage
from .sources import DEFAULT_TRACKS
from .textstages import audit, extract, refine

GENERATOR = "openbiorq"
STAGES = ("extract", "refine", "audit", "dedup", "gold", "rubric", "openness", "membership", "export")
TAXONOMY = DOMAIN_LABELS
"""The default taxonomy: the paper's 12 level-one biomedical domains (``--taxonomy question-types`` or
``--taxonomy FILE`` replaces it; datasets.openbiorq_taxonomy)."""
AUDIT_SAMPLE = 500


class OpenBioRQSettings(BaseModel):
    """Everything the generator's stages depend on (each stage records its part)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    sources: Path
    base_url: str
    writer_model: Annotated[str, Field(min_length=1)] = "writer"
    judge_model: Annotated[str, Field(min_length=1)] = "judge"
    gold_model: Annotated[str, Field(min_length=1)] | None = None
    """The model of the optional gold stage (reference answers as rubric-drafting context); None: off."""
    tracks: tuple[str, ...] = DEFAULT_TRACKS
    taxonomy: tuple[str, ...] = TAXONOMY
    seed: int = 15
    temperature: Annotated[float, Field(ge=0.0, le=2.0)] = 0.0
    audit_sample: Annotated[int, Field(ge=1)] = AUDIT_SAMPLE
    audit_seed: int = 15
    baseline: Literal["none", "extracted"] = "none"
    tau: Annotated[float, Field(ge=-1.0, le=1.0)] = DEFAULT_TAU
    embedding_model: Path | None = None
    vague_phrases: tuple[str, ...] = VAGUE_PHRASES
    redrafts: Annotated[int, Field(ge=0, le=10)] = REDRAFTS
    min_criteria: int = MIN_CRITERIA
    max_criteria: int = MAX_CRITERIA
    concurrency: Annotated[int, Field(ge=1, le=64)] = 1
    evidence_corpus: str | None = None
    """Base URL of a ``drsearch serve`` over follow-up records (the offline route)."""
    evidence_apis: dict[str, str] = Field(default_factory=dict)
    """Public-API routes by name → base URL (``PUBLIC_APIS`` for the real ones)."""
    evidence_k: Annotated[int, Field(ge=1, le=100)] = 5
    api_min_interval_s: Annotated[float, Field(ge=0.0)] = 1.0
    api_max_attempts: Annotated[int, Field(ge=1, le=20)] = 5
    """Tries per evidence request on 408, 429, 5xx or a transport error (``Retry-After`` honoured)."""
    api_backoff_s: Annotated[float, Field(ge=0.0, le=60.0)] = 1.0
    s2_api_key_env: str | None = None
    """The environment variable holding a Semantic Scholar API key (its name is recorded, never
    the key)."""
    controls: Path | None = None
    max_span: Annotated[int, Field(ge=1)] = 5
    difficulty_sha256: str | None = None
    """SHA-256 of ``OBRQ_DIR/difficulty.json`` when the difficulty report exists (the export then
    carries each item's bucket; a new report reruns the export)."""
    frozen_core_sha256: str | None = None
    """SHA-256 of ``OBRQ_DIR/frozen_core.txt`` once ``freeze`` wrote it (the export's frozen-core
    flags come from that file; a new frozen core reruns the export)."""

    @field_validator("evidence_corpus")
    @classmethod
    def _corpus_url(cls, url: str | None) -> str | None:
        if url is not None and not url.startswith(("http://", "https://")):
            raise ValueError(f"{url!r} is not an http:// or https:// URL")
        return url

    @field_validator("evidence_apis")
    @classmethod
    def _apis(cls, apis: dict[str, str]) -> dict[str, str]:
        unknown = sorted(set(apis) - set(PUBLIC_APIS))
        if unknown:
            raise ValueError(f"unknown evidence API(s) {unknown}; known: {sorted(PUBLIC_APIS)}")
        for url in apis.values():
            cls._corpus_url(url)
        return apis

    def routes(self) -> dict[str, str]:
        out: dict[str, str] = {name: url for name, url in sorted(self.evidence_apis.items())}
        if self.evidence_corpus:
            out["corpus"] = self.evidence_corpus
        return out

    @field_validator("base_url")
    @classmethod
    def _url(cls, url: str) -> str:
        try:  # the endpoints' own rule, checked before any stage
            ModelEndpoint(model="check", base_url=url)
        except ValidationError:
            raise ValueError(f"{url!r} is not an http:// or https:// URL") from None
        return url

    @field_validator("tracks", "taxonomy")
    @classmethod
    def _distinct(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        if not names or len(set(names)) != len(names) or not all(n.strip() for n in names):
            raise ValueError(f"needs distinct nonempty names, got {list(names)}")
        return names


def package_sha256() -> str:
    """SHA-256 over this package's sources (prompts and rules included)."""
    here = Path(__file__).parent
    return sha256_hex(b"".join(p.name.encode() + b"\0" + p.read_bytes() for p in sorted(here.glob("*.py"))))


def build_pipeline(s: OpenBioRQSettings) -> Pipeline:
    """The generator's pipeline for ``s`` (``s.sources`` made absolute)."""
    writer = ModelEndpoint(model=s.writer_model, base_url=s.base_url)
    judge = ModelEndpoint(model=s.judge_model, base_url=s.base_url)
    # no concurrency here: the outputs do not depend on it, so changing it must rerun nothing
    common = {"code_sha256": package_sha256(), "seed": s.seed, "temperature": s.temperature}
    writes = {**common, "writer_model": s.writer_model}
    judges = {**common, "judge_model": s.judge_model}
    return Pipeline(GENERATOR, [
        Stage("extract", extract, inputs=(str(s.sources.resolve()),), outputs=("extracted.jsonl",),
              settings={**writes, "tracks": list(s.tracks)}, models=(writer,)),
        Stage("refine", refine, inputs=("extracted.jsonl",), outputs=("refined.jsonl",),
              settings={**writes, "taxonomy": list(s.taxonomy)}, models=(writer,)),
        Stage("audit", audit, inputs=("refined.jsonl",), outputs=("audit.json",),
              settings={**judges, "baseline": None if s.baseline == "none" else s.baseline,
                        "sample": s.audit_sample, "sample_seed": s.audit_seed, "tracks": list(s.tracks)},
              models=(judge,)),
        Stage("dedup", dedup_stage, inputs=("refined.jsonl",), outputs=("deduped.jsonl", "dedup.json"),
              settings={"code_sha256": common["code_sha256"], "tau": s.tau, "tracks": list(s.tracks),
                        "embedding_model": str(s.embedding_model) if s.embedding_model else None}),
        Stage("gold", gold_stage, inputs=("deduped.jsonl",), outputs=("gold.jsonl",),
              settings={**common, "gold_model": s.gold_model},
              models=(ModelEndpoint(model=s.gold_model, base_url=s.base_url),) if s.gold_model else ()),
        Stage("rubric", rubric_stage, inputs=("deduped.jsonl", "gold.jsonl"), outputs=("rubrics.jsonl",),
              settings={**writes, "judge_model": s.judge_model, "max_criteria": s.max_criteria,
                        "min_criteria": s.min_criteria, "redrafts": s.redrafts,
                        "vague_phrases": list(s.vague_phrases)}, models=(writer, judge)),
        Stage("openness", openness_stage,
              inputs=("rubrics.jsonl", *((str(s.controls.resolve()),) if s.controls else ())),
              outputs=("openness.jsonl", "evidence.jsonl", "openness.json"),
              settings={**judges, "controls": str(s.controls.resolve()) if s.controls else None,
                        "api_backoff_s": s.api_backoff_s, "api_max_attempts": s.api_max_attempts,
                        "s2_api_key_env": s.s2_api_key_env,
                        "evidence_k": s.evidence_k, "min_interval_s": s.api_min_interval_s,
                        "routes": s.routes()}, models=(judge,)),
        Stage("membership", membership_stage, inputs=("rubrics.jsonl",), outputs=("membership.json",),
              settings={"code_sha256": common["code_sha256"], "max_span": s.max_span}),
        Stage("export", export_stage, inputs=("openness.jsonl", "membership.json"), outputs=("items.jsonl",),
              settings={"code_sha256": common["code_sha256"], "difficulty_sha256": s.difficulty_sha256,
                        "frozen_core_sha256": s.frozen_core_sha256}),
    ], order=STAGES)


__all__ = ["AUDIT_SAMPLE", "GENERATOR", "PUBLIC_APIS", "STAGES", "TAXONOMY", "OpenBioRQSettings",
           "build_pipeline", "package_sha256"]
