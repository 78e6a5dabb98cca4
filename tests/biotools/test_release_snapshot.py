"""A release may carry a tool snapshot beside its corpus (``tool-snapshot/``): `drsearch
validate --deep` checks it digest by digest, and fails the release when it was edited."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import httpx

from drsearch.agents.snapshot import tool_key, write_snapshot
from drsearch.biotools import BIOTOOLS, LiveBioTools
from drsearch.tools.cli import main


def _snapshot(out: Path) -> Path:
    """A one-row snapshot of a real pubmed call (answered by an in-process transport)."""

    def esearch(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"esearchresult": {"count": "0", "idlist": []}})

    args = BIOTOOLS["pubmed"].check({"query": "BNT162b2"})
    body = LiveBioTools(env={}, transport=httpx.MockTransport(esearch), today=lambda: "2026-12-07").call(
        "pubmed", args)
    write_snapshot([{"arguments": args, "body": body.decode(), "key": tool_key("pubmed", args),
                     "tool": "pubmed"}], out)
    return out


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = main(list(argv), out=out)
    return rc, out.getvalue(), err.getvalue()


def _checks(report: str) -> dict[str, dict[str, str]]:
    return {c["name"]: c for c in json.loads(report)["checks"]}


def test_validate_deep_checks_a_releases_tool_snapshot(release: Path) -> None:
    shutil.copytree(_snapshot(release.parent / "snap"), release / "tool-snapshot")
    assert _cli("release", "manifest", str(release), "--quiet")[0] == 0  # lists it with its hashes
    rc, out, err = _cli("validate", "--release-dir", str(release), "--deep", "--json")
    assert rc == 0, err
    check = _checks(out)["tool snapshot"]
    assert check["status"] == "PASS" and "1 answer(s) of pubmed (accessed 2026-12-07)" in check["message"]
    # edited after the release manifest was made: the file hashes and the snapshot's own digests fail
    rows = release / "tool-snapshot/rows.jsonl"
    assert "BNT162b2" in rows.read_text()
    rows.write_text(rows.read_text().replace("BNT162b2", "BNT162b3"))
    rc, out, err = _cli("validate", "--release-dir", str(release), "--deep", "--json")
    checks = _checks(out)
    assert rc != 0
    assert checks["tool snapshot"]["status"] == "FAIL"
    assert "rows.jsonl does not match the manifest's rows_sha256" in checks["tool snapshot"]["message"]
    assert checks["file tool-snapshot/rows.jsonl"]["status"] == "FAIL"


def test_fast_validation_leaves_the_snapshot_to_deep(release: Path) -> None:
    shutil.copytree(_snapshot(release.parent / "snap"), release / "tool-snapshot")
    assert _cli("release", "manifest", str(release), "--quiet")[0] == 0
    rc, out, _err = _cli("validate", "--release-dir", str(release), "--json")
    assert rc == 0 and "tool snapshot" not in _checks(out)
