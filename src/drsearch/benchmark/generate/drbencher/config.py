"""The generator config (``--config GEN.json``): strict JSON, validated before any call.

Unknown keys are rejected; every error is :class:`ConfigError` (exit 2) as
``FILE:LINE: field: message`` (the line of the offending key or value). Paths inside the
config (``articles``) are relative to the config file.

A string value may name environment variables as ``${NAME}`` or ``${NAME:-default}`` (the
default when NAME is unset or empty), expanded before validation: the shipped config's
endpoint URLs take their ports from ``DRSEARCH_KG_PORT`` and ``DRSEARCH_MODEL_PORT`` that
way. An unset variable without a default is an error naming its line.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)

from ....agents.errors import describe_validation_error
from ....contract import check_http_url
from ..stages import ModelEndpoint
from .domainapi import (
    API_DOMAINS,
    DOMAIN_PROPERTIES,
    ENTRY_KINDS,
    WIKIDATA_ID_PROPERTY,
    DomainAPISettings,
    check_identifier,
)
from .errors import ConfigError
from .jsonpos import line_of, loads_with_lines
from .properties import GENERIC_PREDICATES, PROPERTIES
from .sparql import SparqlSettings
from .templates import TEMPLATES

QID = r"^Q[1-9][0-9]*$"
PID = r"^P[1-9][0-9]*$"


def _known_property(pid: str) -> str:
    if pid not in PROPERTIES and pid not in DOMAIN_PROPERTIES:
        known = ", ".join([*sorted(PROPERTIES), *DOMAIN_PROPERTIES])
        raise ValueError(f"unknown property {pid} (known: {known})")
    return pid


def _known_template(name: str) -> str:
    if name not in TEMPLATES:
        raise ValueError(f"unknown template {name} (known: {', '.join(sorted(TEMPLATES))})")
    return name


Qid = Annotated[str, Field(pattern=QID)]
PropertyId = Annotated[str, AfterValidator(_known_property)]
TemplateName = Annotated[str, AfterValidator(_known_template)]


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


Domain = Literal["mountains", "cities", "countries", "geography", "history", "biochemistry", "financial",
                 "security"]
"""The paper's geophysical domain is split by entity kind (mountains, cities, countries,
geography); history, and the three domains whose values come from their APIs."""


class Entry(_Strict):
    """An API domain's entry point: identifiers from an authoritative registry (the paper's
    static seed lists), each resolved through the domain API and mapped to its Wikidata
    entity by the external-id property ``wikidata_property``."""

    kind: Literal["pubchem_cid", "uniprot_accession", "ticker", "cve"]
    ids: tuple[str, ...] = Field(min_length=1)
    wikidata_property: Annotated[str, Field(pattern=PID)] | None = None
    """Default: P662 (PubChem CID), P352 (UniProt), P5531 (SEC CIK, for a ticker), P3587 (CVE)."""

    @model_validator(mode="after")
    def _ids(self) -> Entry:
        for i in self.ids:
            check_identifier(self.kind, i)
        if len(set(self.ids)) != len(self.ids):
            raise ValueError("an identifier is listed twice")
        return self

    def id_property(self) -> str:
        return self.wikidata_property or WIKIDATA_ID_PROPERTY["cik" if self.kind == "ticker" else self.kind]


class Topic(_Strict):
    """Entities of a type (``wdt:P31/wdt:P279*``) with every required property; for the API
    domains, the entities of ``entry``'s identifiers with every required property."""

    domain: Domain
    types: tuple[Qid, ...] = ()
    properties: tuple[PropertyId, ...] = Field(min_length=1)
    entry: Entry | None = None
    min_sitelinks: int = Field(default=20, ge=0)
    target: int = Field(ge=1, le=10_000)
    seed_qids: tuple[Qid, ...] = ()
    max_candidates: int = Field(default=500, ge=1, le=100_000)
    """The Discover query's LIMIT (a live endpoint times out on unbounded type closures)."""

    @model_validator(mode="after")
    def _entry_point(self) -> Topic:
        if self.domain in API_DOMAINS:
            if self.entry is None:
                raise ValueError(f"a {self.domain} topic needs an entry ({{kind, ids}}: one of "
                                 f"{', '.join(ENTRY_KINDS[self.domain])})")
            if self.entry.kind not in ENTRY_KINDS[self.domain]:
                raise ValueError(f"entry kind {self.entry.kind} is not one of {self.domain}'s "
                                 f"({', '.join(ENTRY_KINDS[self.domain])})")
            wrong = [p for p in self.properties if p not in DOMAIN_PROPERTIES]
        else:
            if self.entry is not None:
                raise ValueError(f"a {self.domain} topic is discovered by type: no entry")
            if not self.types:
                raise ValueError(f"a {self.domain} topic needs types (Wikidata classes)")
            wrong = [p for p in self.properties if p not in PROPERTIES]
        if wrong:
            raise ValueError(f"{', '.join(wrong)}: not a property of the {self.domain} domain")
        return self



class ChainSettings(_Strict):
    min_chains: int = Field(default=3, ge=1)
    max_chains: int = Field(default=8, ge=1)
    exclude_predicates: tuple[Annotated[str, Field(pattern=PID)], ...] = GENERIC_PREDICATES
    max_rows: int = Field(default=2000, ge=1)
    """The Chains query's LIMIT."""

    @model_validator(mode="after")
    def _order(self) -> ChainSettings:
        if self.max_chains < self.min_chains:
            raise ValueError(f"max_chains {self.max_chains} < min_chains {self.min_chains}")
        return self


class Generator(_Strict):
    model: str = Field(min_length=1)
    base_url: str
    temperature: float = Field(default=0.0, ge=0, le=2)
    seed: int = 7
    structured_output: bool = False
    """Ask for each stage's reply schema (``response_format``, ``json_schema``, strict): for a
    server that constrains decoding to it (docs/GENERATE.md). Off: the requests as before."""

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Off, ``structured_output`` is left out of the dump: a config without it keeps the
        stage settings (and so the digests that decide what reruns) it always had."""
        out: dict[str, Any] = handler(self)
        if not self.structured_output:
            out.pop("structured_output", None)
        return out

    def endpoint(self) -> ModelEndpoint:
        return ModelEndpoint(model=self.model, base_url=self.base_url)


class DifficultyFilter(_Strict):
    """V1 (closed-book) or V2 (tool-augmented) through the toolkit's calibration: k
    attempts of ``model``; discarded iff accuracy > tau (drbencher_bucket)."""

    enabled: bool = False
    k: int = Field(default=10, ge=1, le=100)
    tau: float = Field(default=0.5, ge=0, le=1)
    model: Generator | None = None
    temperature: float = Field(default=0.7, ge=0, le=2)
    """Sampling temperature of the k attempts (attempt n moves the seed by n × 1,000,000)."""

    @model_validator(mode="after")
    def _needs_model(self) -> DifficultyFilter:
        if self.enabled and self.model is None:
            raise ValueError("an enabled filter needs a model ({model, base_url})")
        return self


class ToolFilter(DifficultyFilter):
    """V2: :class:`DifficultyFilter` plus the corpus it searches (:mod:`.v2corpus`)."""

    corpus: str | None = None
    """A drsearch index to search (relative to the config file; e.g. a DR-256 release's
    database); None (the default): ``GEN_DIR/v2_corpus.sqlite3``, the questions' grounding
    articles plus ``distractors`` look-alike pages, built by the stage."""
    distractors: int = Field(default=20, ge=0, le=10_000)
    """How many look-alike pages the default corpus adds to the grounding articles."""
    wikipedia_api: str | None = None
    """A MediaWiki Action API (e.g. ``https://en.wikipedia.org/w/api.php``) the default corpus
    fetches a distractor's article from when the ``articles`` file lacks it; None: the file only."""
    search_url: str | None = None
    """A ``drsearch serve`` to search: of ``corpus`` when that is set (its identity is checked),
    else any drsearch server (the identity its ``/health`` reports is recorded). None (the
    default): the stage starts ``drsearch serve`` on 127.0.0.1 itself for its duration."""

    @field_validator("search_url", "wikipedia_api")
    @classmethod
    def _http_url(cls, url: str | None) -> str | None:
        return check_http_url(url)


class Diversity(_Strict):
    min_distance: float = Field(default=0.30, ge=0, le=2)


class GenConfig(_Strict):
    seed: int
    kg: SparqlSettings
    articles: str = Field(min_length=1)
    topics: tuple[Topic, ...] = Field(min_length=1)
    templates: tuple[TemplateName, ...] = Field(min_length=1)
    generator: Generator
    chains: ChainSettings = ChainSettings()
    max_per_entity: int = Field(default=3, ge=1)
    diversity: Diversity = Diversity()
    v1: DifficultyFilter = DifficultyFilter()
    v2: ToolFilter = ToolFilter()
    domain_apis: DomainAPISettings = DomainAPISettings()
    """Where the biochemistry, financial and security topics' APIs are and how fast to ask them."""

    language: str = Field(default="en", pattern=r"^[a-z]{2,3}(-[a-z0-9]+)?$")

    @field_validator("templates")
    @classmethod
    def _templates(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        if len(set(v)) != len(v):
            raise ValueError("a template is listed twice")
        return v


_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def expand_env(value: Any, environ: Mapping[str, str], where: tuple[str | int, ...] = ()) -> Any:
    """``value`` with every ``${NAME}`` / ``${NAME:-default}`` of its strings replaced from
    ``environ``; KeyError(path, NAME) for an unset variable without a default."""
    if isinstance(value, dict):
        return {k: expand_env(v, environ, (*where, k)) for k, v in value.items()}
    if isinstance(value, list):
        return [expand_env(v, environ, (*where, i)) for i, v in enumerate(value)]
    if not isinstance(value, str):
        return value

    def one(m: re.Match[str]) -> str:
        name, default = m.group(1), m.group(2)
        if environ.get(name):
            return environ[name]
        if default is None:
            raise KeyError(where, name)
        return default

    return _VARIABLE.sub(one, value)


def load_config(path: Path) -> tuple[GenConfig, Path]:
    """The validated config and the resolved articles path; ConfigError (``file:line``) else."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"{path}: cannot read ({e.strerror})") from None
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path}: not UTF-8 (byte {e.start})") from None
    try:
        data, lines = loads_with_lines(text)
    except json.JSONDecodeError as e:
        raise ConfigError(f"{path}:{e.lineno}: invalid JSON ({e.msg})") from None
    try:
        data = expand_env(data, os.environ)
    except KeyError as e:
        where, name = e.args
        field = ".".join(str(w) for w in where)
        raise ConfigError(f"{path}:{line_of(lines, where)}: {field}: ${{{name}}} is not set "
                          f"(set it, or write ${{{name}:-DEFAULT}})") from None
    try:
        config = GenConfig.model_validate(data)
    except ValidationError as e:
        first = e.errors()[0]
        loc = tuple(first["loc"])
        raise ConfigError(f"{path}:{line_of(lines, loc)}: {describe_validation_error(e)}") from None
    articles = Path(config.articles)
    if not articles.is_absolute():
        articles = (path.parent / articles).resolve()
    if not articles.is_file():
        raise ConfigError(f"{path}:{line_of(lines, ('articles',))}: articles {articles}: no such file")
    if config.v2.corpus is not None:  # relative to the config file, like articles
        corpus = Path(config.v2.corpus)
        corpus = corpus if corpus.is_absolute() else (path.parent / corpus).resolve()
        if not corpus.exists():
            raise ConfigError(f"{path}:{line_of(lines, ('v2', 'corpus'))}: v2.corpus {corpus}: no such file")
        config = config.model_copy(update={"v2": config.v2.model_copy(update={"corpus": str(corpus)})})
    return config, articles


__all__ = [
    "ChainSettings",
    "DifficultyFilter",
    "Diversity",
    "Entry",
    "GenConfig",
    "Generator",
    "ToolFilter",
    "Topic",
    "expand_env",
    "load_config",
]
