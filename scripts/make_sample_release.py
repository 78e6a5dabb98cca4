"""Assemble the bundled sample release and refresh the repository's data manifest.

Run from the repository root::

    python scripts/make_sample_release.py [--out out/sample-release] [--force]
    python scripts/make_sample_release.py --write-data-manifest   # after changing data/

The release is built from the inputs that the top-level manifest.json names (sample
corpus, sample questions, blocked docids); validate it with
``drsearch validate --release-dir out/sample-release --deep``. Output is deterministic.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from drsearch.release.repo_data import assemble_sample_release, data_manifest_problems, write_data_manifest

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=REPO / "out" / "sample-release")
    ap.add_argument("--force", action="store_true", help="replace an existing release in --out")
    ap.add_argument("--write-data-manifest", action="store_true",
                    help="rewrite manifest.json from the files under data/ and exit")
    args = ap.parse_args()
    if args.write_data_manifest:
        print(f"wrote {write_data_manifest(REPO)}")
        return 0
    problems = data_manifest_problems(REPO)
    if problems:
        print("shipped data differs from manifest.json:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 1
    manifest = assemble_sample_release(REPO, args.out, overwrite=args.force)
    print(f"assembled {args.out}: {manifest.release.name} {manifest.release.revision}, "
          f"{manifest.counts['questions']} questions, {manifest.counts['documents']} documents")
    return 0


if __name__ == "__main__":
    sys.exit(main())
