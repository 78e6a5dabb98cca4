"""Which blocklist a verb applies: the CLI's side of the one rule.

Two rules keep a blocklist from silently hiding nothing:

- A blocklist naming docids the corpus lacks (another docid scheme, another corpus) is
  refused (``Engine.check_blocklist_complete``, exit 2) unless ``--allow-missing-blocked``
  says the corpus is deliberately partial; one naming no docid at all (an empty or
  comments-only file) is refused always: no blocklist is ``--blocked-docids none``.
- A release's blocklist (``benchmark/blocked_docids.txt``) is part of the benchmark
  definition: every verb that opens a release's database applies it by default
  (``drsearch.index.releases``, below every front-end). Opening it with no blocklist takes
  ``--blocked-docids none``; with a different file (another SHA-256),
  ``--override-release-blocklist``. Both are one WARNING line on stderr (``serve``: and in
  ``/health``, ``blocklist.origin``; ``run``: in run.json).
"""

from __future__ import annotations

import argparse
import logging
import sys
from dataclasses import dataclass
from pathlib import Path

from ..index import BlockList
from ..index.releases import Origin, Release, ReleasePolicy, choose_blocklist

NONE = "none"


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
    """Decide the blocklist of ``drsearch serve`` by the one rule (``choose_blocklist``).

    ``given``: the ``--blocked-docids`` value (a path, ``none``, or None when omitted);
    ``release_dir``: the release the database belongs to (None: a bare database);
    ``override``: ``--override-release-blocklist``. Raises BlocklistError (exit 2) for a
    release served with a different list and no override, or CorpusFileError for a
    release without its blocklist file. A warning it implies is printed here, once.
    """
    release = None if release_dir is None else Release(release_dir)
    given_list = None if given is None or given == NONE else BlockList.from_file(given)
    choice = choose_blocklist(release, given_list, policy(given, override))
    if choice.warning:
        _warn(choice.warning)
    if choice.origin in ("none", "release-none"):
        return ServeBlocklist(None, choice.origin, choice.release_sha256)
    path = Path(str(given)) if given_list is not None else None if release is None else release.blocked
    return ServeBlocklist(path, choice.origin, choice.release_sha256)


def policy(given: str | None, override: bool) -> ReleasePolicy:
    """The release policy ``--blocked-docids``/``--override-release-blocklist`` ask for."""
    return "none" if given == NONE else "override" if override else "apply"


def add_blocklist_options(p: argparse.ArgumentParser) -> None:
    """``--blocked-docids FILE|none``, ``--override-release-blocklist``, ``--allow-missing-blocked``."""
    p.add_argument("--blocked-docids", metavar="FILE|none",
                   help="docids to hide (one per line, # comments); default: a release's own "
                        "benchmark/blocked_docids.txt, else none; `none`: no blocklist (said on stderr)")
    p.add_argument("--override-release-blocklist", action="store_true",
                   help="open a release's database with a --blocked-docids file other than the "
                        "release's own (said on stderr)")
    add_allow_missing_blocked(p)


def requested_blocklist(args: argparse.Namespace) -> tuple[BlockList | None, ReleasePolicy]:
    """The blocklist file the options name (None: none named) and the release policy."""
    given: str | None = getattr(args, "blocked_docids", None)
    given = None if given is None else str(given)
    override = bool(getattr(args, "override_release_blocklist", False))
    listed = None if given is None or given == NONE else BlockList.from_file(given)
    return listed, policy(given, override)


class _CurrentStderr(logging.Handler):
    """Writes to whatever sys.stderr is when a record comes (as logging's last resort does)."""

    def emit(self, record: logging.LogRecord) -> None:
        print(self.format(record), file=sys.stderr)


def show_release_warnings() -> None:
    """Print the release rule's warnings (``Engine.open``) as one stderr line each."""
    log = logging.getLogger("drsearch.index.releases")
    if not any(isinstance(h, _CurrentStderr) for h in log.handlers):
        log.addHandler(_CurrentStderr(logging.WARNING))
        log.propagate = False


__all__ = ["NONE", "ServeBlocklist", "add_allow_missing_blocked", "add_blocklist_options", "policy",
           "requested_blocklist", "serve_blocklist", "show_release_warnings"]
