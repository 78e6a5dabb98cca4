"""The docs a user's clone ships: self-contained, pointing at docs/DESIGN.md, and the
README's Python example runs as written against the bundled sample corpus."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import REPO

# Everything a user's clone holds that explains or implements the project.
SCANNED = ["README.md", "Makefile", "docs", "src", "tests", "benchmarks", "scripts"]
SUFFIXES = {".md", ".py", ".pyi", ".c", ".toml", ".txt", ""}
DESIGN = REPO / "docs/DESIGN.md"
MAX_TEXT_BYTES = 4 << 20
"""The clone's text files are all under 100 KB; a scanned file this large is not one of them
(and decoding it would take minutes)."""
IGNORED_DIRS = {"__pycache__", "build", "dist"}


def _files(root: Path = REPO) -> list[Path]:
    """The clone's files under SCANNED with a scanned suffix: what git lists (tracked, or new
    and not ignored), else (no git) a walk that skips what .gitignore names.

    Never the ignored build and benchmark outputs: benchmarks/.cache holds multi-GB index files
    without a suffix (PISA's ``fwd``), whose decoding made this module run for many minutes on a
    loaded machine (a suite timeout)."""
    listed = _git_files(root)
    if listed is None:
        listed = []
        for name in SCANNED:
            top = root / name
            paths = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file())
            listed += [p for p in paths if not any(
                part.startswith(".") or part in IGNORED_DIRS or part.endswith(".egg-info")
                for part in p.relative_to(root).parts[:-1])]
    return sorted(p for p in listed if p.suffix in SUFFIXES and p.is_file())


def _git_files(root: Path) -> list[Path] | None:
    """The files git lists under SCANNED (tracked, or untracked and not ignored); None when
    ``root`` is not a git work tree or git is missing."""
    try:
        p = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--cached", "--others",
                            "--exclude-standard", "--", *SCANNED], capture_output=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if p.returncode != 0:
        return None
    return [root / name for name in p.stdout.decode("utf-8", "surrogateescape").split("\0") if name]


def _hits(pattern: re.Pattern[str]) -> list[str]:
    hits = []
    for path in _files():
        size = path.stat().st_size
        assert size <= MAX_TEXT_BYTES, f"{path.relative_to(REPO)}: {size} bytes, not a text file of the clone"
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
    first = subprocess.run([sys.executable, "-c", blocks[0]], cwd=tmp_path, capture_output=True, text=True,
                           timeout=300)
    assert first.returncode == 0, first.stderr
    # a user runs it again (after an edit, say): the same output, not "already exists"
    p = subprocess.run([sys.executable, "-c", blocks[0]], cwd=tmp_path, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stdout == first.stdout
    lines = p.stdout.splitlines()
    assert [line.split()[0] for line in lines[:5]] == ["1", "2", "3", "4", "5"]
    assert lines[5].startswith("d-8b601c6f3f2c9567 369 200 Gaming used to be so simple.")
    assert (tmp_path / "corpus.sqlite3").is_file()


def test_the_scan_reads_the_clones_files_not_its_ignored_outputs(tmp_path: Path) -> None:
    """A benchmark cache (multi-GB index files without a suffix) is neither scanned through git
    nor by the walk used without it; tracked files and new, not ignored ones are."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    for rel, text in {"README.md": "x", "docs/a.md": "x", "benchmarks/new.py": "x", "benchmarks/.cache/pisa/fwd": "",
                      ".gitignore": "benchmarks/.cache/\n__pycache__/\n", "src/p/__pycache__/m.py": ""}.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, timeout=60)
    subprocess.run(["git", "-C", str(tmp_path), "add", "README.md", "docs"], check=True, timeout=60)
    expected = ["README.md", "benchmarks/new.py", "docs/a.md"]
    assert [p.relative_to(tmp_path).as_posix() for p in _files(tmp_path)] == expected
    shutil.rmtree(tmp_path / ".git")  # not a git work tree (a tarball): the walk
    assert _git_files(tmp_path) is None
    assert [p.relative_to(tmp_path).as_posix() for p in _files(tmp_path)] == expected


# A reference to a section of the benchmark page or of its run log: `docs/BENCHMARKS.md, "Build"`,
# `docs/BENCHMARKS.md ("Build")`, `benchmarks/HISTORY.md, "Window sizes"`; the quoted name may be
# the start of the heading and may be cut by a line break (in a comment, after its `#` or `*`).
SECTION_REF = re.compile(r"\b(BENCHMARKS|HISTORY)\.md(?:,\s*|\s*\(\s*)\"([^\"]+)\"")
SECTION_FILES = {"BENCHMARKS": "docs/BENCHMARKS.md", "HISTORY": "benchmarks/HISTORY.md"}
BENCHMARKS_MAX_LINES = 500
"""The benchmark page holds the current results, how to reproduce them and what they mean; the
run log lives in benchmarks/HISTORY.md. A page past this has become a log again."""


def _flat(text: str) -> str:
    """The text with line breaks, and the comment markers that start the next line, as one space."""
    return re.sub(r"\s*\n\s*(?:#+|\*+(?!\*)|//)?\s*", " ", text)


def _headings(path: Path) -> list[str]:
    return [" ".join(h.split()) for h in re.findall(r"^#+ (.+)$", path.read_text(encoding="utf-8"), re.M)]


def _names_a_heading(name: str, headings: list[str]) -> bool:
    """Whether ``name`` is a heading, or the start of one up to a word's end."""
    name = " ".join(name.split())
    return any(h == name or (h.startswith(name) and not h[len(name)].isalnum()) for h in headings)


def _broken_section_refs(root: Path = REPO) -> list[str]:
    headings = {key: _headings(root / rel) if (root / rel).is_file() else []
                for key, rel in SECTION_FILES.items()}
    broken = []
    for path in _files(root):
        if path.resolve() == Path(__file__).resolve():
            continue  # this module's own examples
        text = _flat(path.read_text(encoding="utf-8", errors="replace"))
        for m in SECTION_REF.finditer(text):
            if not _names_a_heading(m.group(2), headings[m.group(1)]):
                broken.append(f'{path.relative_to(root)}: {SECTION_FILES[m.group(1)]}, "{m.group(2)}"')
    return broken


def test_every_benchmark_section_reference_names_a_heading() -> None:
    refs = [m for path in _files() if path.resolve() != Path(__file__).resolve()
            for m in SECTION_REF.finditer(_flat(path.read_text(encoding="utf-8", errors="replace")))]
    assert {m.group(1) for m in refs} == {"BENCHMARKS", "HISTORY"}  # both files are cited by section
    assert _broken_section_refs() == []


def test_a_reference_to_a_missing_or_moved_section_is_reported(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "docs/BENCHMARKS.md").write_text("# Speed\n\n## Build (`build_bench.py`)\n", encoding="utf-8")
    (tmp_path / "benchmarks/HISTORY.md").write_text("# Log\n\n## Window sizes and c-auto's k\n", encoding="utf-8")
    (tmp_path / "docs/ENGINE.md").write_text(
        'ok (docs/BENCHMARKS.md ("Build")), ok (benchmarks/HISTORY.md, "Window\nsizes"),\n'
        'moved (docs/BENCHMARKS.md, "Window sizes"), gone (benchmarks/HISTORY.md, "Buil"),\n', encoding="utf-8")
    (tmp_path / "src").mkdir()
    (tmp_path / "src/k.c").write_text('/* chosen (docs/BENCHMARKS.md, "Block-max\n   pruning") */\n', encoding="utf-8")
    (tmp_path / "src/s.py").write_text('# (benchmarks/HISTORY.md, "Window\n# sizes and c-auto\'s k")\n', encoding="utf-8")
    assert _broken_section_refs(tmp_path) == [
        'docs/ENGINE.md: docs/BENCHMARKS.md, "Window sizes"',
        'docs/ENGINE.md: benchmarks/HISTORY.md, "Buil"',
        'src/k.c: docs/BENCHMARKS.md, "Block-max pruning"',
    ]


def test_the_benchmark_page_is_results_not_a_log() -> None:
    page = REPO / "docs/BENCHMARKS.md"
    lines = page.read_text(encoding="utf-8").splitlines()
    assert len(lines) < BENCHMARKS_MAX_LINES, f"docs/BENCHMARKS.md has {len(lines)} lines"
    assert "benchmarks/HISTORY.md" in page.read_text(encoding="utf-8")
    history = REPO / "benchmarks/HISTORY.md"
    assert history.is_file()
    assert not (REPO / "docs/HISTORY.md").exists()  # the log stays out of the user's docs
    for section in ("Current results", "Why the threads ratio flips between runs", "Build", "Embedding throughput"):
        assert _names_a_heading(section, _headings(page)), section
