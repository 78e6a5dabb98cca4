"""Checks of the files around a release's benchmark and corpus: every file's role, the
release documents (README.md, TERMS.md, LICENSE-CODE where code ships) and the baselines.

Roles (:func:`drsearch.release.manifest.role_of`) follow from a file's path: the release
files (``questions``, ``corpus_database``, …), the documents (``readme``, ``terms``,
``license_code``), a top-level folder's (``baseline``, ``code``, ``selection``, ``audit``),
else ``extra``. The manifest must record each file under the role its path has.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..index import BlockList
from .documents import BASELINES, LICENSE_CODE, README, TERMS, placeholders
from .manifest import Manifest, role_of
from .report import Check, check


def role_check(manifest: Manifest) -> Check:
    """FAIL for every manifest entry whose role is not the one its path has."""
    wrong = [f"{f.path}: role {f.role!r}, expected {role_of(f.path)!r}" for f in manifest.files
             if f.role != role_of(f.path)]
    counts: dict[str, int] = {}
    for f in manifest.files:
        counts[f.role] = counts.get(f.role, 0) + 1
    shown = ", ".join(f"{n} {role}" for role, n in sorted(counts.items()))
    return check("roles", wrong, f"every file has its path's role ({shown})", roles=counts)


def documents_checks(root: Path, manifest: Manifest | None) -> list[Check]:
    """README.md and TERMS.md present (WARN if not: a DR-256 release carries them) and
    complete (WARN for each ``{{FILL: …}}`` left); LICENSE-CODE present where code ships (FAIL)."""
    out = []
    missing = [name for name in (README, TERMS) if not (root / name).is_file()]
    if missing:
        out.append(Check("documents", "WARN", f"no {' or '.join(missing)}: a DR-256 release carries "
                         "README.md and TERMS.md (`release assemble --readme F --terms F`)",
                         {"missing": missing}))
    else:
        left = {name: placeholders((root / name).read_text(encoding="utf-8", errors="replace"))
                for name in (README, TERMS)}
        if any(left.values()):
            where = "; ".join(f"{name}: {len(p)} (e.g. {{{{{p[0]}}}}})" for name, p in left.items() if p)
            out.append(Check("documents", "WARN", f"placeholders left to complete: {where}",
                             {"placeholders": left}))
        else:
            out.append(Check("documents", "PASS", "README.md and TERMS.md present, no placeholder left"))
    code = [f.path for f in manifest.files if f.role == "code"] if manifest is not None else []
    if code and not (root / LICENSE_CODE).is_file():
        out.append(Check("license_code", "FAIL", f"{len(code)} code file(s) ship (e.g. {code[0]}) without "
                         f"{LICENSE_CODE}", {"code": code}))
    elif code:
        out.append(Check("license_code", "PASS", f"{LICENSE_CODE} covers the {len(code)} code file(s)"))
    return out


def _read(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def baselines_check(root: Path, identity: str | None, blocklist: BlockList | None) -> Check | None:
    """The reference runs in baselines/: each ``*/run.json`` readable, over this release's
    corpus (content identity) and blocklist, with its trajectories (WARN otherwise: runs over
    another corpus are no baseline for this one); None without baselines/."""
    folder = root / BASELINES
    if not folder.is_dir():
        return None
    runs = sorted(p.parent for p in folder.glob("*/run.json"))
    problems = [] if runs else [f"{BASELINES}/ holds no run (no */run.json)"]
    for run in runs:
        rel = run.relative_to(root).as_posix()
        recorded = _read(run / "run.json")
        if recorded is None:
            problems.append(f"{rel}/run.json: not a JSON object")
            continue
        if identity is not None and recorded.get("corpus_identity") != identity:
            problems.append(f"{rel}: ran over corpus {recorded.get('corpus_identity')}, not this release's "
                            f"{identity}")
        if blocklist is not None and recorded.get("blocklist_sha256") != blocklist.sha256:
            other = str(recorded.get("blocklist_sha256"))[:12]
            problems.append(f"{rel}: ran with another blocklist ({other}…) than this release's")
        if not (run / "trajectories.jsonl").is_file():
            problems.append(f"{rel}: no trajectories.jsonl")
    if problems:  # not the release's fault as such: its baselines are not comparable with runs on it
        return Check("baselines", "WARN", "; ".join(problems[:4]) + " (not comparable with runs on this "
                     "release)", {"problems": problems, "runs": [r.name for r in runs]})
    return check("baselines", [], f"{len(runs)} reference run(s) over this corpus and blocklist",
                 runs=[r.name for r in runs])


__all__ = ["baselines_check", "documents_checks", "role_check"]
