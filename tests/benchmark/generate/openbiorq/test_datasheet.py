"""The export's datasheet: as-of date, endpoints with access dates where given, counts per domain,
track, bucket, identifier kind and openness label, licences of the sources; bad input exit 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .conftest import generate

ROWS = [  # task id, domain, track, bucket, frozen, id kind, label
    ("PMID:1#0", "oncology", "retrieval_verified", "core", True, "pmid", "open"),
    ("PMID:1#1", "oncology", "retrieval_verified", "core", False, "pmid", "unknown"),
    ("NCT00000002#0", "clinical_medicine", "expert_consensus", "easy", None, "nct", "open"),
    ("DOC:x#0", "genomics", "expand", None, None, "other", "answered"),
]


def obrq(tmp: Path) -> Path:
    out = tmp / "obrq"
    out.mkdir()
    sources = tmp / "sources.jsonl"
    sources.write_text("".join(json.dumps(r) + "\n" for r in (
        {"source_id": "PMID:1", "licence": "CC-BY-4.0"}, {"source_id": "NCT00000002", "license": "public domain"},
        {"source_id": "DOC:x"})))
    (out / "items.jsonl").write_text("".join(json.dumps({
        "metadata": {"openbiorq": {"difficulty": {"bucket": b, "frozen_core": f}, "openness": {"label": label},
                                   "source": {"id_kind": kind, "source_id": t.split("#")[0]}, "taxonomy": d}},
        "task_id": t, "track": track}) + "\n" for t, d, track, b, f, kind, label in ROWS))
    llm = [{"base_url": "http://llm/v1", "model": "writer"}]
    (out / "manifest.json").write_text(json.dumps({"generator": "openbiorq", "stage_order": ["extract", "openness",
                                                                                            "export"], "stages": {
        "extract": {"inputs": {str(sources): "0" * 64}, "models": llm},
        "openness": {"models": [{"base_url": "http://llm/v1", "model": "judge"}],
                     "settings": {"routes": {"ctgov": "https://ct/api/v2", "europepmc": "https://epmc/rest"}}},
        "export": {"settings_sha256": "e" * 64}}}))
    (out / "frozen_core.json").write_text(json.dumps({"count": 1, "frozen_core_sha256": "f" * 64}))
    return out


def test_the_datasheet_counts_endpoints_and_licences(tmp_path: Path) -> None:
    out = obrq(tmp_path)
    rc, _, err = generate("datasheet", out, "--as-of", "2026-11-30", "--accessed", "europepmc=2026-11-28",
                          "--accessed", "model:judge=2026-11-29", sources=None)
    assert rc == 0, err
    sheet: dict[str, Any] = json.loads((out / "datasheet.json").read_text())
    assert sheet["as_of"]["date"] == "2026-11-30"
    c = sheet["counts"]
    assert c["items"] == 4 and c["frozen_core"] == 1
    assert c["domain"] == {"Clinical Medicine": 1, "Genomics": 1, "Oncology": 2}
    assert c["track"] == {"expand": 1, "expert_consensus": 1, "retrieval_verified": 2}
    assert c["bucket"] == {"core": 2, "easy": 1, "not bucketed": 1}
    assert c["identifier_kind"] == {"nct": 1, "other": 1, "pmid": 2}
    assert c["openness_label"] == {"answered": 1, "open": 2, "unknown": 1}
    # items per licence of their source: PMID:1's two, NCT's one (spelled license), DOC:x none
    assert sheet["licences"]["by_licence"] == {"CC-BY-4.0": 2, "not recorded": 1, "public domain": 1}
    ends = {e["name"]: (e["url"], e["stages"], e["access_date"], e["access_date_recorded"]) for e in sheet["endpoints"]}
    assert ends == {"ctgov": ("https://ct/api/v2", ["openness"], None, False),
                    "europepmc": ("https://epmc/rest", ["openness"], "2026-11-28", True),
                    "model:judge": ("http://llm/v1", ["openness"], "2026-11-29", True),
                    "model:writer": ("http://llm/v1", ["extract"], None, False)}
    assert sheet["frozen_core"] == {"count": 1, "sha256": "f" * 64}
    assert "retrieval_verified" in sheet["tracks"] and "patient care" in sheet["intended_use"]
    md = (out / "datasheet.md").read_text()
    assert "| europepmc | https://epmc/rest | openness | 2026-11-28 |" in md and "| CC-BY-4.0 | 2 |" in md
    assert md.index("| Clinical Medicine |") < md.index("| Oncology |") < md.index("| Genomics |")  # paper order
    assert md.index("| retrieval_verified |") < md.index("| expert_consensus |") < md.index("| expand |")
    first = (out / "datasheet.json").read_bytes()  # deterministic
    rc, _, _ = generate("datasheet", out, "--as-of", "2026-11-30", "--accessed", "europepmc=2026-11-28",
                        "--accessed", "model:judge=2026-11-29", sources=None)
    assert rc == 0 and (out / "datasheet.json").read_bytes() == first


def test_datasheet_bad_input_is_one_line_exit_2(tmp_path: Path) -> None:
    out = obrq(tmp_path)
    for args, message in [
        ((), "datasheet needs --as-of YYYY-MM-DD"),
        (("--as-of", "30/11/2026"), "--as-of: '30/11/2026' is not a date"),
        (("--as-of", "2026-11-30", "--accessed", "pubmed=2026-11-01"), "--accessed pubmed: the export names no such"),
        (("--as-of", "2026-11-30", "--accessed", "europepmc"), "expected NAME=YYYY-MM-DD"),
    ]:
        rc, _, err = generate("datasheet", out, *args, sources=None)
        assert rc == 2 and message in err and err.count("\n") == 1, (args, err)
    rc, _, err = generate("datasheet", tmp_path / "empty", "--as-of", "2026-11-30", sources=None)
    assert rc == 2 and "no export (items.jsonl and manifest.json)" in err
    assert not (out / "datasheet.json").exists()


def test_the_datasheet_names_the_tool_snapshot_the_agents_answer_from(tmp_path: Path) -> None:
    """--tool-snapshot: each tool's service, endpoints and the dates its rows were fetched, and
    the snapshot's digest; a damaged snapshot is one line, exit 2."""
    import httpx

    from drsearch.agents.snapshot import tool_key, write_snapshot
    from drsearch.biotools import BIOTOOLS, LiveBioTools

    def esearch(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"esearchresult": {"count": "0", "idlist": []}})

    rows = []
    for day, query in (("2026-12-01", "BNT162b2"), ("2026-12-03", "mRNA-1273")):
        args = BIOTOOLS["pubmed"].check({"query": query})
        body = LiveBioTools(env={}, transport=httpx.MockTransport(esearch), today=lambda d=day: d).call(
            "pubmed", args)
        rows.append({"arguments": args, "body": body.decode(), "key": tool_key("pubmed", args), "tool": "pubmed"})
    snap = write_snapshot(rows, tmp_path / "snap")
    out = obrq(tmp_path)
    rc, _, err = generate("datasheet", out, "--as-of", "2026-11-30", "--tool-snapshot", str(snap.path), sources=None)
    assert rc == 0, err
    sheet = json.loads((out / "datasheet.json").read_text())["tool_snapshot"]
    assert sheet["digest"] == snap.digest and sheet["rows"] == 2 and list(sheet["tools"]) == ["pubmed"]
    pubmed = sheet["tools"]["pubmed"]
    assert pubmed["access_dates"] == ["2026-12-01", "2026-12-03"] and pubmed["endpoints"]
    assert "## Tool snapshot" in (out / "datasheet.md").read_text()
    (snap.path / "rows.jsonl").write_text((snap.path / "rows.jsonl").read_text().replace("BNT162b2", "BNT162b3"))
    rc, _, err = generate("datasheet", out, "--as-of", "2026-11-30", "--tool-snapshot", str(snap.path), sources=None)
    assert rc == 2 and err.count("\n") == 1 and "tool snapshot" in err, err
