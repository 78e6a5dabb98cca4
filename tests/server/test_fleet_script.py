"""The fleet script (benchmarks/fleet.py) in its short CI version: three replicas behind the
system's HAProxy, one killed mid-load, one restarted on another blocklist. Skipped where
``haproxy`` is not installed (``make fleet`` installs it on Debian)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ..helpers import REPO

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("haproxy") is None, reason="haproxy is not installed")]


def test_fleet_short_run_kill_and_wrong_blocklist(sample_index: Path, tmp_path: Path) -> None:
    out = tmp_path / "fleet.json"
    p = subprocess.run(
        [sys.executable, str(REPO / "benchmarks/fleet.py"), "--database", str(sample_index),
         "--clients", "8", "--duration", "5", "--json", str(out)],
        capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-2000:]
    rep = json.loads(out.read_text())
    assert rep["requests"]["ok"] > 50 and rep["requests"]["foreign_identity"] == 0
    kill = rep["kill"]
    assert kill["haproxy_marked_down_after_s"] is not None and kill["failed_requests"] <= 8, kill
    wrong = rep["wrong_blocklist"]
    assert wrong["identity"] != rep["identity"]
    assert wrong["checked_backend_state"].startswith("DOWN"), wrong  # the identity check keeps it out
    assert wrong["plain_backend_up_after_s"] is not None  # a 200-only check lets it in ...
    assert wrong["client"]["detected"], wrong  # ... and the client refuses its answer
    assert rep["identity"] in wrong["client"]["message"] and wrong["identity"] in wrong["client"]["message"]


def test_the_documented_haproxy_config_is_valid(tmp_path: Path) -> None:
    doc = (REPO / "docs/SCALING.md").read_text()
    block = doc.split("```haproxy\n", 1)[1].split("```", 1)[0]
    assert 'http-check expect hdr name x-drsearch-identity value "' in block
    cfg = tmp_path / "haproxy.cfg"
    cfg.write_text(block)
    p = subprocess.run(["haproxy", "-c", "-f", str(cfg)], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stdout + p.stderr
    # and with the optional status rule the text suggests
    cfg.write_text(block.replace("    default-server check", "    http-check expect string '\"status\":\"ok\"'\n"
                                 "    default-server check"))
    p = subprocess.run(["haproxy", "-c", "-f", str(cfg)], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stdout + p.stderr
