"""``drsearch corpus build --urls``: fetch → extract → build in one call.

``build_from_urls(urls.txt, corpus.sqlite3)`` runs the three stages exactly as the separate
verbs do, into a crawl directory (by default ``<corpus>.crawl/`` beside the corpus):

- fetch into ``<crawl>/`` (resumable: a rerun skips URLs already fetched and retries only
  transient failures, as ``drsearch corpus fetch`` does);
- extract into ``<crawl>/docs.jsonl`` and its report ``<crawl>/docs.report.json`` (redone
  on every run: it is deterministic and cheap next to fetching);
- build ``corpus.sqlite3`` with ``coverage_summary.json`` and ``source_manifest_summary.json``
  beside it, the same files the two-step path writes.

The corpus is checked first (it must not exist unless ``overwrite``, and its directory must),
so a run that would fail at the end fetches nothing.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from ..contract import BuildError, InvalidInputError
from ..index import BuildSettings
from .build_run import CorpusBuild, build_corpus
from .crawl import FETCH_SUMMARY, FetchRecord
from .extract import ExtractSettings, PageText
from .extract_run import extract_crawl
from .fetch import FetchSettings, fetch_urls

DOCS_FILE = "docs.jsonl"


def default_crawl_dir(out: str | os.PathLike[str]) -> Path:
    """Where ``build_from_urls`` keeps its crawl when none is given: ``corpus.sqlite3`` →
    ``corpus.sqlite3.crawl/`` beside it."""
    p = Path(out)
    return p.with_name(p.name + ".crawl")


@dataclass(frozen=True)
class UrlBuild:
    """What ``build_from_urls`` did: the crawl and documents it used and each stage's result."""

    crawl: Path
    docs: Path
    fetch: dict[str, Any]
    extract: dict[str, Any]
    build: CorpusBuild


@dataclass(frozen=True)
class Progress:
    """Optional callbacks, one set per stage (the CLI's progress bars)."""

    fetch_start: Callable[[int], None] | None = None
    fetch: Callable[[FetchRecord], None] | None = None
    extract: Callable[[PageText], None] | None = None
    build: Callable[[int], None] | None = None
    extract_start: Callable[[int], None] | None = None
    build_start: Callable[[int], None] | None = None


def build_from_urls(
    url_file: str | os.PathLike[str],
    out: str | os.PathLike[str],
    crawl: str | os.PathLike[str] | None = None,
    *,
    fetch_settings: FetchSettings | None = None,
    extract_settings: ExtractSettings | None = None,
    build_settings: BuildSettings | None = None,
    overwrite: bool = False,
    transport: httpx.AsyncBaseTransport | None = None,
    progress: Progress | None = None,
) -> UrlBuild:
    """Fetch the URLs of ``url_file`` into ``crawl`` (default ``default_crawl_dir(out)``),
    extract them and build the corpus ``out`` with its reports.

    Raises, before fetching, BuildError when ``out`` exists (and not ``overwrite``) and
    InvalidInputError when its directory does not; otherwise the errors of ``fetch_urls``,
    ``extract_crawl`` and ``build_corpus``. What a stage has written stays when a later one fails.
    """
    dest = Path(out)
    if dest.exists() and not overwrite:
        raise BuildError(f"{dest} already exists (use --force to replace it)")
    if not dest.parent.is_dir():
        raise InvalidInputError(f"directory {dest.parent} does not exist (create it first)")
    root = Path(crawl) if crawl is not None else default_crawl_dir(dest)
    cb = progress or Progress()
    fetched = fetch_urls(url_file, root, fetch_settings, transport=transport, progress=cb.fetch,
                         on_start=cb.fetch_start)
    docs = root / DOCS_FILE
    extracted = extract_crawl(root, docs, extract_settings, overwrite=True, progress=cb.extract,
                              on_start=cb.extract_start)
    try:
        built = build_corpus(docs, dest, build_settings, overwrite=overwrite, progress=cb.build,
                             on_start=cb.build_start)
    except InvalidInputError as e:  # say why nothing could be built when the fetches are why
        run = fetched.get("run", {})
        if run.get("ok", 0) == 0 and run.get("attempted", 0) > 0:
            reasons = ", ".join(f"{r}: {n}" for r, n in run.get("by_reason", {}).items())
            raise InvalidInputError(
                f"{e.message}: no page was fetched: of {run['attempted']} URLs asked for, {run['failed']} "
                f"failed and {run.get('disallowed', 0)} were not fetched under robots.txt"
                f"{f' ({reasons})' if reasons else ''}; {fetched.get('already_fetched', 0)} done by an "
                "earlier run "
                f"(see {root / FETCH_SUMMARY})") from None
        raise
    return UrlBuild(root, docs, fetched, extracted, built)


__all__ = ["DOCS_FILE", "Progress", "UrlBuild", "build_from_urls", "default_crawl_dir"]
