"""docs/QUICKSTART.md runs as written: every bash block, in order, in one shell (servers
started with ``&`` on free ports given through the variables the doc names), and the main job
it walks leaves what it says: two graded runs and their comparison. ``make demo``
(scripts/demo.sh) runs the same path in one go (tests/tools/test_cli.py runs it)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from .docblocks import SHELLS, bash_blocks, fenced, free_ports, run_blocks
from .helpers import REPO

QUICKSTART = REPO / "docs/QUICKSTART.md"


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_every_shell_block_of_the_quickstart_is_bash_and_walks_the_main_job() -> None:
    blocks = fenced(QUICKSTART)
    assert all(info == "bash" for info, _ in blocks if info in SHELLS or info == ""), \
        "a shell block not fenced as bash would not be run by the test"
    script = "\n".join(bash_blocks(QUICKSTART))
    for step in ("drsearch corpus build", "drsearch serve", "drsearch dev model --script agent", "drsearch run",
                 "drsearch dev model --script judge", "drsearch score", "drsearch compare",
                 "drsearch report"):
        assert step in script, step


def test_the_quickstart_runs_as_written(tmp_path: Path) -> None:
    search, model, judge = free_ports(3)
    env = {"DRSEARCH_PORT": str(search), "DRSEARCH_MODEL_PORT": str(model), "DRSEARCH_JUDGE_PORT": str(judge)}
    done = run_blocks(bash_blocks(QUICKSTART), tmp_path, env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    assert "accuracy" in out and "exact McNemar p" in out, out
    qs = tmp_path / "qs"
    for run in ("run-a", "run-b"):
        graded = [json.loads(line) for line in (qs / run / "scores.graded.jsonl").read_text().splitlines()]
        assert len(graded) == 12 and {g["episode_status"] for g in graded} == {"answered"}
        assert any(g["correct"] for g in graded) and not all(g["correct"] for g in graded)
    # the episode printout of "Where to look"
    first = json.loads((qs / "run-a/trajectories.jsonl").read_text().splitlines()[0])
    assert f"{first['qid']} answered final answer: {first['final_answer']}" in out
    assert "  tool call: search" in out and "  tool call: open" in out
    # the report of both runs: the page, its rows, and the blocked leak artifacts only from run B
    assert "wrote qs/report/index.html (24 episode(s)" in out and out.count("run-a,q-") >= 2
    page = (qs / "report/index.html").read_text()
    assert "exact McNemar p" in page and (qs / "report/tool_calls.csv").is_file()
    # the last block stopped every server it started
    assert not any(_listening(p) for p in (search, model, judge))


def test_make_demo_runs_the_demo_script() -> None:
    makefile = (REPO / "Makefile").read_text()
    recipe = makefile.split("\ndemo: ", 1)[1].split("\n\n", 1)[0]
    assert "scripts/demo.sh" in recipe
