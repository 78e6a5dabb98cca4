"""Which blocklist a verb applies, decided once for the CLI.

Two rules keep a blocklist from silently hiding nothing:

- A blocklist naming docids the corpus lacks (another docid scheme, another corpus) is
  refused (``Engine.check_blocklist_complete``, exit 2) unless ``--allow-missing-blocked``
  says the corpus is deliberately partial.
- A release's blocklist (``benchmark/blocked_docids.txt``) is part of the benchmark
  definition: serving a release's database applies it by default. Serving with no
  blocklist takes ``--blocked-docids none``; with a different file (another SHA-256),
  ``--override-release-blocklist``. Both are logged on stderr and shown in ``/health``
  (``blocklist.origin``).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..contract import BlocklistError, CorpusFileError
from ..index import sha256_file
from ..release.manifest import BLOCKED

NONE = "none"
Origin = Literal["release", "release-override", "release-none", "file", "none"]


def add_allow_missing_blocked(p: argparse.ArgumentParser) -> None:
    """``--allow-missing-blocked``: the one way to use a blocklist naming docids the corpus lacks."""
    p.add_argument("--allow-missing-blocked", action="store_true",
                   help="accept a blocklist whose docids are not all in the corpus (a deliberately "
                        "partial corpus); without it such a blocklist is refused with exit 2")


@dataclass(frozen=True, slots=True)
class ServeBlocklist:
    """The blocklist file ``serve`` applies (None: none) and where the choice came from."""

    path: Path | None
    origin: Origin
    release_sha256: str | None = None


def _warn(message: str) -> None:
    print(f"drsearch: WARNING: {message}", file=sys.stderr)


def serve_blocklist(given: str | None, release_dir: Path | None, override: bool) -> ServeBlocklist:
    """Decide the blocklist of ``drsearch serve``.

    ``given``: the ``--blocked-docids`` value (a path, ``none``, or None when omitted);
    ``release_dir``: the release the database belongs to (None: a bare database);
    ``override``: ``--override-release-blocklist``. Raises BlocklistError (exit 2) for a
    release served with a different list and no override, or CorpusFileError for a
    release without its blocklist file.
    """
    if release_dir is None:
        if override:
            raise BlocklistError("--override-release-blocklist: the database is not a release's "
                                 "(no release blocklist to override)")
        if given is None or given == NONE:
            return ServeBlocklist(None, "none")
        return ServeBlocklist(Path(given), "file")
    own = release_dir / BLOCKED
    if given == NONE:
        _warn(f"--blocked-docids none: serving release {release_dir} WITHOUT its blocklist {BLOCKED}; "
              "every document, answer-bearing artifacts included, is served")
        return ServeBlocklist(None, "release-none", sha256_file(own) if own.is_file() else None)
    if not own.is_file():
        raise CorpusFileError(f"release {release_dir} has no {BLOCKED}: give --blocked-docids FILE "
                              "--override-release-blocklist, or --blocked-docids none")
    release_sha = sha256_file(own)
    if given is None:
        return ServeBlocklist(own, "release", release_sha)
    path = Path(given)
    try:
        sha = sha256_file(path)
    except OSError as e:
        raise BlocklistError(f"cannot read blocklist {given}: {e.strerror}") from None
    if sha == release_sha:
        return ServeBlocklist(path, "release", release_sha)
    if not override:
        raise BlocklistError(f"--blocked-docids {given} (sha256 {sha[:16]}…) is not release "
                             f"{release_dir}'s {BLOCKED} (sha256 {release_sha[:16]}…): the release's "
                             "list is part of the benchmark; omit --blocked-docids to apply it, or "
                             "add --override-release-blocklist")
    _warn(f"--override-release-blocklist: serving release {release_dir} with {given} instead of its "
          f"{BLOCKED} (sha256 {sha[:16]}… vs {release_sha[:16]}…)")
    return ServeBlocklist(path, "release-override", release_sha)


__all__ = ["NONE", "Origin", "ServeBlocklist", "add_allow_missing_blocked", "serve_blocklist"]
