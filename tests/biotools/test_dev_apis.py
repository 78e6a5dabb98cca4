"""`drsearch dev apis` and `drsearch dev model --script bioagent` as a user starts them: real
processes, their first stdout line, a tool call against the stand-ins, SIGTERM ends them."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import httpx

from drsearch.biotools import BIOTOOL_NAMES, BIOTOOLS, LiveBioTools

from .conftest import FIXTURES


def _exe() -> str:
    return shutil.which("drsearch") or str(Path(sys.executable).with_name("drsearch"))


def test_dev_apis_serves_the_ten_stand_ins_until_sigterm(tmp_path: Path) -> None:
    out = tmp_path / "endpoints.json"
    proc = subprocess.Popen([_exe(), "dev", "apis", "--fixtures", str(FIXTURES), "--endpoints-out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        endpoints = json.loads(proc.stdout.readline())
        assert set(endpoints) == set(BIOTOOL_NAMES) and json.loads(out.read_text()) == endpoints
        live = LiveBioTools(endpoints, env={})
        for tool, args in (("kegg", {"operation": "get", "query": "hsa:7157"}),
                           ("biomcp", {"action": "fetch", "domain": "article", "id": "33301246"})):
            assert json.loads(live.call(tool, BIOTOOLS[tool].check(args)))["ok"]
    finally:
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(30)
    assert rc == 0, proc.stderr.read() if proc.stderr else ""


def test_dev_apis_refuses_a_missing_fixture_file_in_one_line(tmp_path: Path) -> None:
    r = subprocess.run([_exe(), "dev", "apis", "--fixtures", str(tmp_path / "none.json")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "no fixture file there" in r.stderr


def test_dev_model_bioagent_calls_the_tools_natively() -> None:
    proc = subprocess.Popen([_exe(), "dev", "model", "--script", "bioagent"], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        base = proc.stdout.readline().strip()
        body = {"messages": [{"content": "Question: x", "role": "user"}], "model": "m", "seed": 1}
        reply = httpx.post(f"{base}/chat/completions", json=body, timeout=30).json()
        calls = reply["choices"][0]["message"]["tool_calls"]
        assert [c["function"]["name"] for c in calls] == ["pubmed", "clinicaltrialsgov", "openfda",
                                                          "opentargets", "chembl"]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
