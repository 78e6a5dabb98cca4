"""Make the bundled sample release by running the construction recipe; refresh the data manifest.

Run from the repository root::

    python scripts/make_sample_release.py [--out out/sample-release] [--force]
    python scripts/make_sample_release.py --write-data-manifest   # after changing data/

The sample release is the output of the whole DR-256 construction recipe, run offline on
the fixture that the top-level manifest.json names (``data/construct/``; docs/CONSTRUCT.md):
the loopback crawl site, a real ``drsearch serve``, the offline stand-in for the reference
agent (a scripted chat server replaying ``data/construct/reference_agent.json``), the oracle
judge, ``construct calibrate`` and ``construct select``, which validates the release
``--deep`` itself. Its working files (pool, corpus, rollouts) stay in ``OUT.work/``. Fetch
times are recorded as null (as the bundled sample crawl's are), so the output is
deterministic: the same command in the same place gives the same bytes. Validate it with
``drsearch validate --release-dir OUT --deep`` (``make sample-release`` does).
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from offline_recipe.driver import RecipeError, run_recipe  # beside this script (scripts/offline_recipe)

from drsearch.release.repo_data import data_manifest_problems, write_data_manifest
from drsearch.server import ServeError

REPO = Path(__file__).resolve().parents[1]


def sample_release(out: Path, force: bool) -> int:
    """Run the construction recipe into ``out`` (working files in ``out.work``)."""
    work = out.with_name(out.name + ".work")
    for path in (out, work):
        if path.exists() and (not path.is_dir() or any(path.iterdir())) and not force:
            print(f"{path} exists and is not empty (use --force to replace it)", file=sys.stderr)
            return 2
    for path in (out, work):
        shutil.rmtree(path, ignore_errors=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        recipe = run_recipe(work, frozen_fetch_times=True, release=out)
    except (RecipeError, ServeError) as e:  # a step failed: one line, not a traceback
        print(f"sample release: {' '.join(str(e).split())}", file=sys.stderr)
        return 1
    for line in recipe.lines.values():
        print(line)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=REPO / "out" / "sample-release",
                    help="the release directory (default out/sample-release)")
    ap.add_argument("--force", action="store_true", help="replace an existing release in --out")
    ap.add_argument("--write-data-manifest", action="store_true",
                    help="rewrite manifest.json from the files under data/ and exit")
    args = ap.parse_args()
    if args.write_data_manifest:
        print(f"wrote {write_data_manifest(REPO)}")
        return 0
    problems = data_manifest_problems(REPO)
    if problems:  # the recipe's inputs must be the ones manifest.json records
        print("shipped data differs from manifest.json: " + "; ".join(problems), file=sys.stderr)
        return 1
    return sample_release(args.out.resolve(), args.force)


if __name__ == "__main__":
    sys.exit(main())
