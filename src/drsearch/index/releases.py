"""A release's database is never opened without the release's blocklist.

The one rule, applied by :meth:`Engine.open` and so by every verb and front-end above it
(CLI ``search``/``open``/``stats``/``run``/``mcp``/``serve``/``score``, the Pyserini shim,
the LangChain retriever, a Python caller):

- A database belongs to a release when its real path (symlinks resolved) is
  ``REL/search/NAME`` beside ``REL/manifest.json`` (the DR-256 layout), or when the path
  names the release directory ``REL`` itself (then the database is
  ``REL/search/corpus.sqlite3``). A copy of the file elsewhere is a bare database: the rule
  follows the file's place, not its bytes.
- Such a database gets the release's own ``benchmark/blocked_docids.txt`` (a list with
  the same SHA-256 under another name counts as the release's) unless the caller says
  otherwise: policy ``none`` opens it with no blocklist, ``override`` with a different one;
  both come back with a warning line the front-end shows (and :meth:`Engine.open` logs).
  Policy ``ignore`` is for tools that read the whole file to check or describe it
  (``validate``, manifests, construction): the given list or none, no release rule.
- A blocklist that lists no docid at all (an empty or comments-only file) is refused
  (except under ``ignore``): it hides nothing, like a list that matches nothing; "no
  blocklist" is said with ``none``.

This module lives in ``drsearch.index`` (below every front-end, which may not import the
release layer); it knows only the layout's three paths, which ``drsearch.release`` reuses.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from ..contract.errors import BlocklistError, CorpusFileError, InvalidInputError
from .blocklist import BlockList
from .integrity import sha256_file

MANIFEST = "manifest.json"
DATABASE = "search/corpus.sqlite3"
BLOCKED = "benchmark/blocked_docids.txt"

ReleasePolicy = Literal["apply", "none", "override", "ignore"]
"""How a release's own blocklist is treated (see the module docstring)."""
Origin = Literal["release", "release-override", "release-none", "file", "none"]
"""Where the applied blocklist came from (``/health`` ``blocklist.origin``, run.json)."""
POLICIES: tuple[ReleasePolicy, ...] = ("apply", "none", "override", "ignore")


@dataclass(frozen=True)
class Release:
    """The release a database belongs to: its directory, as found from the database's path."""

    root: Path

    @property
    def blocked(self) -> Path:
        return self.root / BLOCKED

    @cached_property
    def manifest(self) -> dict[str, Any]:
        """The parsed manifest.json ({} when it cannot be read: the rule still applies)."""
        try:
            data = json.loads((self.root / MANIFEST).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    @property
    def name(self) -> str | None:
        return _text(self.manifest.get("release"), "name")

    @property
    def revision(self) -> str | None:
        return _text(self.manifest.get("release"), "revision")

    def blocklist_sha256(self) -> str | None:
        """The SHA-256 of the release's own list (None: the file is missing)."""
        return sha256_file(self.blocked) if self.blocked.is_file() else None


def _text(section: object, key: str) -> str | None:
    value = section.get(key) if isinstance(section, dict) else None
    return value if isinstance(value, str) and value else None


def locate(path: str | os.PathLike[str]) -> tuple[Path, Release | None]:
    """The database file ``path`` names and the release it belongs to (None: a bare database).

    ``path`` may be the file (relative, absolute or through symlinks) or a release
    directory (a directory holding manifest.json). Never raises: a path that does not exist
    is returned as given, for the opener to report.
    """
    given = Path(path)
    try:
        real = given.resolve()
    except (OSError, RuntimeError):  # a symlink loop: the opener names it
        return given, None
    if real.is_dir() and (real / MANIFEST).is_file():
        return given / DATABASE, Release(real)
    root = real.parent.parent
    if real.parent.name == "search" and (root / MANIFEST).is_file():
        return given, Release(root)
    return given, None


def release_holding(path: str | os.PathLike[str]) -> Release | None:
    """The release a file of its ``benchmark/`` directory belongs to (``REL/benchmark/NAME``
    beside ``REL/manifest.json``, symlinks resolved), e.g. its questions; None otherwise."""
    try:
        real = Path(path).resolve()
    except (OSError, RuntimeError):
        return None
    root = real.parent.parent
    return Release(root) if real.parent.name == "benchmark" and (root / MANIFEST).is_file() else None


@dataclass(frozen=True)
class BlocklistChoice:
    """The blocklist a database is opened with, where it came from, and what to say about it."""

    blocklist: BlockList
    origin: Origin
    release: Release | None = None
    release_sha256: str | None = None
    warning: str | None = None


def choose_blocklist(release: Release | None, given: BlockList | None,
                     policy: ReleasePolicy = "apply") -> BlocklistChoice:
    """Apply the rule: the blocklist to open a database of ``release`` with.

    ``given``: the caller's list (None: none given). Raises BlocklistError (exit 2) for a
    list read from a file or bytes with no docids (``BlockList.empty()`` is "none"), a
    release opened with another list and no ``override``, or
    ``override`` on a bare database; CorpusFileError for a release missing its list;
    InvalidInputError for a policy that is not one of :data:`POLICIES`.
    """
    if policy not in POLICIES:
        raise InvalidInputError(f"release blocklist policy {policy!r}: one of {', '.join(POLICIES)}")
    # a list read from a file or bytes that names nothing is refused (a mistake that would
    # hide nothing); BlockList.empty() is the library's own spelling of "no blocklist"
    if given is not None and not given.docids and given.source and policy != "ignore":
        raise BlocklistError(f"blocklist {given.source or '<bytes>'} lists no docids (empty or only "
                             "comments): it would hide nothing; say --blocked-docids none for no blocklist")
    if policy == "none" and given is not None:
        raise InvalidInputError("--blocked-docids none: no blocklist, so no blocklist file as well")
    if policy == "ignore" or release is None:
        if policy == "override":
            raise BlocklistError("--override-release-blocklist: the database is not a release's "
                                 "(no release blocklist to override)")
        return BlocklistChoice(given or BlockList.empty(), "none" if given is None else "file", release)
    own = release.blocklist_sha256()
    if policy == "none":
        return BlocklistChoice(
            BlockList.empty(), "release-none", release, own,
            f"--blocked-docids none: release {release.root} opened WITHOUT its blocklist {BLOCKED}; "
            "every document, answer-bearing artifacts included, is searchable")
    if own is None:
        raise CorpusFileError(f"release {release.root} has no {BLOCKED}: give --blocked-docids FILE "
                              "--override-release-blocklist, or --blocked-docids none")
    if given is None:
        return BlocklistChoice(BlockList.from_file(release.blocked), "release", release, own)
    if given.sha256 == own:
        return BlocklistChoice(given, "release", release, own)
    if policy != "override":
        raise BlocklistError(f"--blocked-docids {given.source or '<bytes>'} (sha256 {given.sha256[:16]}…) is "
                             f"not release {release.root}'s {BLOCKED} (sha256 {own[:16]}…): the release's "
                             "list is part of the benchmark; omit --blocked-docids to apply it, or add "
                             "--override-release-blocklist")
    return BlocklistChoice(
        given, "release-override", release, own,
        f"--override-release-blocklist: release {release.root} opened with {given.source or '<bytes>'} "
        f"instead of its {BLOCKED} (sha256 {given.sha256[:16]}… vs {own[:16]}…)")


def policy_for(origin: Origin | None) -> ReleasePolicy:
    """The policy that reopens a database as a decided ``origin`` did (a serve worker)."""
    if origin == "release-none":
        return "none"
    return "override" if origin == "release-override" else "apply"


__all__ = ["BLOCKED", "DATABASE", "MANIFEST", "POLICIES", "BlocklistChoice", "Origin", "Release",
           "ReleasePolicy", "choose_blocklist", "locate",
           "policy_for", "release_holding"]
