"""The docs a user's clone ships: self-contained, pointing at docs/DESIGN.md, and the
README's Python example runs as written against the bundled sample corpus."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from .helpers import REPO

# Everything a user's clone holds that explains or implements the project.
SCANNED = ["README.md", "Makefile", "docs", "src", "tests", "benchmarks", "scripts"]
SUFFIXES = {".md", ".py", ".pyi", ".c", ".toml", ".txt", ""}
DESIGN = REPO / "docs/DESIGN.md"


def _files() -> list[Path]:
    out = []
    for name in SCANNED:
        root = REPO / name
        paths = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        # Build outputs (egg-info copies the README at install time) are not the clone's text.
        out += [
            p
            for p in paths
            if p.suffix in SUFFIXES
            and "__pycache__" not in p.parts
            and not any(part.endswith(".egg-info") for part in p.parts)
        ]
    return out


def _hits(pattern: re.Pattern[str]) -> list[str]:
    hits = []
    for path in _files():
        for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if pattern.search(line):
                hits.append(f"{path.relative_to(REPO)}:{n}: {line.strip()[:100]}")
    return hits


def test_nothing_points_outside_the_clone() -> None:
    outside = re.compile(re.escape("..") + "/" + "shared")  # spelled apart so this file does not match
    assert _hits(outside) == []


def test_no_issue_numbers() -> None:
    assert _hits(re.compile("[Ii]ssue" + r" [0-9#]")) == []


def test_every_design_reference_is_docs_design_md() -> None:
    assert DESIGN.is_file()
    bare = re.compile(r"(?<!docs/)DESIGN\.md")
    assert _hits(bare) == []
    assert len(_hits(re.compile(r"docs/DESIGN\.md"))) >= 15  # the contract is cited where it applies


def test_design_md_covers_the_contracts_and_points_to_every_doc() -> None:
    text = DESIGN.read_text(encoding="utf-8")
    headings = re.findall(r"^##+ (.+)$", text, re.M)
    for topic in ("Layers", "File formats", "Command line", "HTTP API", "Determinism", "Errors"):
        assert any(topic in h for h in headings), topic
    for doc in sorted((REPO / "docs").glob("*.md")):
        if doc != DESIGN:
            assert f"docs/{doc.name}" in text, doc.name
    for endpoint in ("/health", "/stats", "/search", "/open", "/metrics"):
        assert f"`{endpoint}" in text or f"{endpoint}`" in text, endpoint


def test_readme_python_example_runs_against_the_sample_corpus(tmp_path: Path) -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```python\n(.*?)^```", readme, re.S | re.M)
    assert len(blocks) == 1
    (tmp_path / "data").symlink_to(REPO / "data")  # "run from the repository root", without writing there
    p = subprocess.run([sys.executable, "-c", blocks[0]], cwd=tmp_path, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert [line.split()[0] for line in lines[:5]] == ["1", "2", "3", "4", "5"]
    assert lines[5].startswith("d-8b601c6f3f2c9567 369 200 Gaming used to be so simple.")
    assert (tmp_path / "corpus.sqlite3").is_file()
