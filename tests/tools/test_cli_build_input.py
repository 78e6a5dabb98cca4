"""``drsearch build`` on input UTF-8 cannot encode: one line, exit 2, nothing written."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

GOOD = {"docid": "a", "url": "https://example.org/a", "title": "t", "text": "hello world"}
DRSEARCH = shutil.which("drsearch") or str(Path(sys.executable).with_name("drsearch"))


def test_cli_build_refuses_a_lone_surrogate_in_one_line_exit_2(tmp_path: Path) -> None:
    """``drsearch build`` on a JSONL file whose 3rd line's text holds ``\\ud800``: exit 2, one
    line naming the file, the line and the docid, nothing at the output path."""
    src = tmp_path / "docs.jsonl"
    lines = [json.dumps(dict(GOOD, docid=f"d{i}")) for i in range(3)]
    lines[2] = lines[2].replace("hello world", "hello \\ud800 world")
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    for threads in ("1", "2"):
        p = subprocess.run([DRSEARCH, "build", str(src), "--out",
                            str(tmp_path / "x.sqlite3"), "--threads", threads],
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 2, p.stderr
        assert p.stderr.count("\n") == 1 and "Traceback" not in p.stderr
        assert p.stderr.startswith(f"drsearch: error: {src}:3: 'text' is not valid Unicode")
        assert "docid 'd2'" in p.stderr
        assert sorted(x.name for x in tmp_path.iterdir()) == ["docs.jsonl"]
