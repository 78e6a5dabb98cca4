"""What a score cites about the corpus its runs searched, and whether that was the release's.

A DR-256 score is only the benchmark's when the run searched the release's corpus with the
release's own blocklist: without it the agent can read the leak artifacts (the questions
with their answers). ``corpus_provenance`` reads what each run.json recorded (blocklist
SHA-256 and origin, content identity, the SQLite file's SHA-256, the release name and
revision) and compares it with the release the questions file belongs to
(``REL/benchmark/questions.jsonl``: ``drsearch.index.releases.release_holding``). It
returns the ``corpus`` block of scores.json and the warnings to print (they are in the
block too).
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

from ..index.releases import release_holding
from .datasets.dr256 import PINNED_RELEASES, PinnedRelease
from .grade import RunEpisodes

NO_BLOCKLIST_SHA256 = hashlib.sha256(b"").hexdigest()
RUN_FIELDS = ("blocklist_count", "blocklist_origin", "blocklist_sha256", "corpus_identity", "database_bytes",
              "database_sha256", "release", "release_blocklist_sha256")


def _named(pin: PinnedRelease | None) -> dict[str, str] | None:
    return None if pin is None else {"name": pin.name, "revision": pin.revision}


def _pin_of_run(manifest: dict[str, Any], pins: tuple[PinnedRelease, ...]) -> PinnedRelease | None:
    """The pinned release whose corpus file the run searched (its SHA-256 and size), if any."""
    sha, size = manifest.get("database_sha256"), manifest.get("database_bytes")
    return next((p for p in pins if (p.database_sha256, p.database_bytes) == (sha, size)), None)


def _problem(manifest: dict[str, Any], own: str | None, revision: str | None) -> str | None:
    """Why a run's blocklist (or release) is not the questions' release's; None if it is."""
    sha, origin = manifest.get("blocklist_sha256"), manifest.get("blocklist_origin")
    without = sha == NO_BLOCKLIST_SHA256 or manifest.get("blocklist_count") == 0
    if own is not None and isinstance(sha, str) and sha != own:
        return ("was made without the release's blocklist" if without else
                f"was made with another blocklist (SHA-256 {sha[:12]}…) than the release's ({own[:12]}…)")
    if origin == "release-none":
        return "was made without its release's blocklist (--blocked-docids none)"
    if origin == "release-override":
        return "was made with another blocklist than its release's (--override-release-blocklist)"
    if without and isinstance(manifest.get("release"), dict):  # a release's file, e.g. a pinned copy
        return "was made without any blocklist on a release's corpus file"
    searched = manifest.get("release")
    ran = searched.get("revision") if isinstance(searched, dict) else None
    if revision is not None and ran is not None and ran != revision:
        return f"searched release revision {ran}, not the questions' revision {revision}"
    return None


def corpus_provenance(questions: str | os.PathLike[str], questions_sha256: str, runs: list[RunEpisodes],
                      pins: tuple[PinnedRelease, ...] = PINNED_RELEASES) -> dict[str, Any]:
    """The scores.json ``corpus`` block: the questions' release (name, revision, its
    blocklist's SHA-256; from the release directory the questions file is in, else from the
    pinned release whose questions have this SHA-256; null when neither), each run's
    recorded corpus facts with ``pinned_release`` (the pin whose corpus file the run
    searched), and ``warnings`` (one line each: a run made without the release's blocklist,
    with another one, or on another revision). ``runs`` is in the order of the runs given
    (scores.json ``grading.runs``), so the same runs under other paths give the same block."""
    release = release_holding(questions)
    own = release.blocklist_sha256() if release is not None else None
    pin = next((p for p in pins if p.questions_sha256 == questions_sha256), None)
    revision = release.revision if release is not None and release.revision else pin.revision if pin else None
    named = (release.name if release is not None else None) or (pin.name if pin else None)
    block: dict[str, Any] = {
        "release": None if release is None and pin is None else
        {"blocklist_sha256": own, "name": named, "revision": revision},
        "runs": [], "warnings": []}
    for run in runs:
        run_pin = _pin_of_run(run.manifest, pins)
        facts = {k: run.manifest.get(k) for k in RUN_FIELDS}
        block["runs"].append({**facts, "pinned_release": _named(run_pin)})
        manifest = dict(run.manifest)
        if run_pin is not None and not isinstance(manifest.get("release"), dict):
            manifest["release"] = _named(run_pin)
        problem = _problem(manifest, own, revision)
        if problem is not None:
            where = f" of release {named}" if named else ""
            block["warnings"].append(f"{run.path}: the run {problem}{where}: its score is not the "
                                     "benchmark's (the leak artifacts may have been readable)")
    return block


__all__ = ["NO_BLOCKLIST_SHA256", "corpus_provenance"]
