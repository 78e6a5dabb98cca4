"""The pipeline's input: ``SOURCES.jsonl``, one source document a line.

Each line is a JSON object ``{source_id, track, title, text, url, year}`` (extra keys such
as ``docid`` from ``drsearch corpus extract`` are allowed and ignored). ``source_id``
carries its identifier kind in its prefix, which decides how openness evidence is looked
up later (:data:`ID_PREFIXES`): ``PMID:<digits>`` (a PubMed article: its citing articles),
``NCT<8 digits>`` (a trial registration: its status and results), ``arXiv:<id>`` (a
preprint: its citing papers), ``doi:…`` or ``DOC:…`` (other documents: no follow-up route).
Ids become task ids ``source_id#k``, so they hold no whitespace and no ``#``.

:func:`read_sources` checks the whole file before any stage runs: a malformed line is
``file:line: reason``; unknown tracks and unknown identifier prefixes are all listed in one
message (InvalidInputError, CLI exit 2).
"""

from __future__ import annotations

import os
import re
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr

from ....contract import InvalidInputError
from ...datasets._jsonl import check_unique, parse_row, read_objects
from ...datasets.openbiorq_taxonomy import TRACK_NAMES

ID_PREFIXES: dict[str, str] = {"PMID:": "pmid", "NCT": "nct", "arXiv:": "arxiv", "doi:": "other",
                               "DOC:": "other"}
"""Identifier prefix → kind (``pmid``, ``nct``, ``arxiv`` have a follow-up route; ``other`` none)."""
_ID_SHAPES: dict[str, re.Pattern[str]] = {
    "pmid": re.compile(r"PMID:\d{1,9}"),
    "nct": re.compile(r"NCT\d{8}"),
    # new style, or an old-style archive with its optional subject class (math.GT, cs.AI: upper case)
    "arxiv": re.compile(r"arXiv:(\d{4}\.\d{4,5}|[a-z-]+(?:\.[A-Za-z-]+)?/\d{7})(v\d+)?"),
    "other": re.compile(r"(doi:|DOC:)[^#\s]+"),
}
DEFAULT_TRACKS = TRACK_NAMES
"""The tracks a sources file may use unless told otherwise (dedup walks them in this order): the paper's
four, retrieval_verified, expert_consensus, priority_setting, expand (datasets.openbiorq_taxonomy)."""

SourceId = Annotated[StrictStr, Field(pattern=r"^[^#\s]+$", min_length=1)]
Text = Annotated[StrictStr, Field(min_length=1)]


class Source(BaseModel):
    """One source document that frames open problems."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    source_id: SourceId
    track: Text
    title: Text
    text: Text
    url: StrictStr | None = None
    year: StrictInt | None = None

    @property
    def id_kind(self) -> str:
        """``pmid`` | ``nct`` | ``arxiv`` | ``other`` (the source id is checked on reading)."""
        kind = id_kind(self.source_id)
        assert kind is not None
        return kind

    def as_row(self) -> dict[str, Any]:
        return {"id_kind": self.id_kind, "source_id": self.source_id, "text": self.text, "title": self.title,
                "track": self.track, "url": self.url, "year": self.year}


def id_kind(source_id: str) -> str | None:
    """The identifier kind of ``source_id``, or None when its prefix or shape is unknown."""
    for prefix, kind in ID_PREFIXES.items():
        if source_id.startswith(prefix):
            return kind if _ID_SHAPES[kind].fullmatch(source_id) else None
    return None


def read_sources(path: str | os.PathLike[str], tracks: tuple[str, ...] = DEFAULT_TRACKS) -> list[Source]:
    """Every source of ``path`` in file order, checked.

    Raises InvalidInputError: ``file:line: field: reason`` for a malformed line; one message
    listing every unknown track and every unknown identifier prefix (with their lines); a
    duplicate source id; an empty file.
    """
    name = os.fspath(path)
    sources: list[Source] = []
    bad_tracks: list[str] = []
    bad_ids: list[str] = []
    for where, value in read_objects(path):
        source = parse_row(Source, value, where)
        line = where.rsplit(":", 1)[1]
        if source.track not in tracks:
            bad_tracks.append(f"{source.track!r} (line {line})")
        if id_kind(source.source_id) is None:
            bad_ids.append(f"{source.source_id!r} (line {line})")
        sources.append(source)
    problems = []
    if bad_tracks:
        problems.append(f"unknown track(s) {', '.join(bad_tracks)}; known: {', '.join(tracks)}")
    if bad_ids:
        problems.append(f"unknown identifier prefix or shape {', '.join(bad_ids)}; known: "
                        "PMID:<digits>, NCT<8 digits>, arXiv:<id>, doi:<doi>, DOC:<name>")
    if problems:
        raise InvalidInputError(f"{name}: {'; '.join(problems)}")
    if not sources:
        raise InvalidInputError(f"{name}: no sources")
    check_unique([s.source_id for s in sources], name, "source ids")
    return sources


__all__ = ["DEFAULT_TRACKS", "ID_PREFIXES", "Source", "id_kind", "read_sources"]
