"""docs/CLIENTS.md's snippets work as printed: the Pyserini-style script runs on the sample
corpus, the Claude Desktop configuration is valid JSON naming a command line the CLI accepts."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

from drsearch.tools.cli import make_parser

from ..helpers import REPO

DOC = (REPO / "docs/CLIENTS.md").read_text(encoding="utf-8")


def test_pyserini_snippet_runs_against_the_sample_corpus(sample_index: Path, tmp_path: Path) -> None:
    (block,) = [b for b in re.findall(r"^```python\n(.*?)^```", DOC, re.S | re.M) if "LuceneSearcher" in b]
    shutil.copyfile(sample_index, tmp_path / "corpus.sqlite3")
    (tmp_path / "data").symlink_to(REPO / "data")
    p = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert [line.split()[0] for line in lines[:10]] == [str(i) for i in range(1, 11)]
    assert lines[-1].startswith("{'q1': ") and "'q2': " in lines[-1]


def test_claude_desktop_config_names_a_valid_command_line() -> None:
    (block,) = re.findall(r"^```json\n(.*?)^```", DOC, re.S | re.M)
    server = json.loads(block)["mcpServers"]["drsearch"]
    assert server["command"].endswith("/.venv/bin/drsearch")
    args = make_parser().parse_args(server["args"])
    assert args.verb == "mcp" and args.transport == "stdio" and args.k == 5
