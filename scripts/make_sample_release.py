"""Assemble the bundled sample release, or the construction recipe's release; refresh the data manifest.

Run from the repository root::

    python scripts/make_sample_release.py [--out out/sample-release] [--force]
    python scripts/make_sample_release.py --recipe [--out out/recipe-release] [--force]
    python scripts/make_sample_release.py --write-data-manifest   # after changing data/

The sample release is built from the inputs that the top-level manifest.json names (sample
corpus, sample questions, blocked docids). ``--recipe`` instead runs the whole DR-256
construction recipe offline on the construction tests' fixture (docs/CONSTRUCT.md): the
loopback crawl server, a real ``drsearch serve``, the scripted reference agent, the oracle
judge, ``construct calibrate`` and ``construct select --per-tier 2``, which validates the
release ``--deep`` itself; its working files (pool, corpus, rollouts) stay in ``OUT.work/``.
Fetch times are recorded as null (as the bundled sample crawl's are), so both outputs are
deterministic: the same command in the same place gives the same bytes. Validate either with
``drsearch validate --release-dir OUT --deep``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from drsearch.release.repo_data import assemble_sample_release, data_manifest_problems, write_data_manifest

REPO = Path(__file__).resolve().parents[1]


def recipe_release(out: Path, force: bool) -> int:
    """Run the construction recipe into ``out`` (working files in ``out.work``)."""
    work = out.with_name(out.name + ".work")
    for path in (out, work):
        if path.exists() and any(path.iterdir()) and not force:
            print(f"{path} exists and is not empty (use --force to replace it)", file=sys.stderr)
            return 2
    for path in (out, work):
        shutil.rmtree(path, ignore_errors=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    from offline_recipe.driver import run_recipe  # beside this script (scripts/offline_recipe)

    recipe = run_recipe(work, frozen_fetch_times=True, release=out)
    for line in recipe.lines.values():
        print(line)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None,
                    help="the release directory (default out/sample-release, or out/recipe-release)")
    ap.add_argument("--force", action="store_true", help="replace an existing release in --out")
    ap.add_argument("--recipe", action="store_true",
                    help="run the construction recipe on its test fixture instead (docs/CONSTRUCT.md)")
    ap.add_argument("--write-data-manifest", action="store_true",
                    help="rewrite manifest.json from the files under data/ and exit")
    args = ap.parse_args()
    if args.write_data_manifest:
        print(f"wrote {write_data_manifest(REPO)}")
        return 0
    if args.recipe:
        return recipe_release((args.out or REPO / "out" / "recipe-release").resolve(), args.force)
    problems = data_manifest_problems(REPO)
    if problems:
        print("shipped data differs from manifest.json:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 1
    out = args.out or REPO / "out" / "sample-release"
    manifest = assemble_sample_release(REPO, out, overwrite=args.force)
    print(f"assembled {out}: {manifest.release.name} {manifest.release.revision}, "
          f"{manifest.counts['questions']} questions, {manifest.counts['documents']} documents")
    return 0


if __name__ == "__main__":
    sys.exit(main())
