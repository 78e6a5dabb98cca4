"""The openness stage's evidence servers for the tests, both real and on 127.0.0.1:

- a real ``drsearch serve`` over a corpus of follow-up records (data/openbiorq/followups.jsonl,
  the controls' records included);
- a loopback server answering in the shapes of Europe PMC REST (``/europepmc/MED/{pmid}/citations``),
  ClinicalTrials.gov API v2 (``/ctgov/studies/{nct}``) and the Semantic Scholar graph API
  (``/s2/paper/arXiv:{id}/citations``), with the records below; it logs every request path.

The records are written for the tests (made-up ids and findings, like the fixture).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from drsearch.index import build

from ....helpers import DATA
from ....helpers import drsearch_serve as serve

EUROPEPMC = {"31000007": [{"id": "39990001", "source": "MED", "title": "Intermittent senolytic dosing and gait "
                           "speed in frail older adults: a pilot", "pubYear": "2024", "journalAbbreviation": "Age"}]}
CTGOV = {"NCT04000003": {"overallStatus": "COMPLETED", "date": "2023-05", "hasResults": True},
         "NCT04000010": {"overallStatus": "ACTIVE_NOT_RECRUITING", "date": "2027-01", "hasResults": False}}
S2 = {"2301.00005": [{"paperId": "s2-aa01", "title": "Predicted aligned error and measured affinity of designed "
                      "binders: no correlation yet established", "year": 2024}]}


FOLLOW_UPS_FILE = DATA / "openbiorq/followups.jsonl"
CONTROLS_FILE = DATA / "openbiorq/controls.jsonl"
"""The follow-up records (3 about the fixture's questions, then one per control) and the controls:
34 known-resolved ones, whose record 'reported that' settles them, then 12 genuinely open ones,
whose record says the trial is still recruiting (data/README.md)."""


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def control_rows() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(controls, their follow-up records)`` of data/openbiorq/."""
    return _jsonl(CONTROLS_FILE), [d for d in _jsonl(FOLLOW_UPS_FILE) if d["docid"].startswith("fu-ctrl-")]


def follow_up_docs() -> list[dict[str, Any]]:
    return _jsonl(FOLLOW_UPS_FILE)


@contextmanager
def drsearch_serve(tmp: Path) -> Iterator[str]:
    """A real ``drsearch serve`` (1 worker) over the follow-up records; yields its base URL."""
    database = tmp / "followups.sqlite3"
    build(follow_up_docs(), database)
    with serve(database, tmp / "serve.log") as base:
        yield base


class _ApiHandler(BaseHTTPRequestHandler):
    server: _ApiServer

    def do_GET(self) -> None:
        path = unquote(urlsplit(self.path).path)
        self.server.log.append(self.path)
        parts = path.strip("/").split("/")
        status, body = 404, {"error": "not found"}
        if parts[:2] == ["europepmc", "MED"] and len(parts) == 4 and parts[3] == "citations":
            found = EUROPEPMC.get(parts[2], [])
            status, body = 200, {"hitCount": len(found), "citationList": {"citation": found}}
        elif parts[:2] == ["ctgov", "studies"] and len(parts) == 3 and parts[2] in CTGOV:
            c = CTGOV[parts[2]]
            status, body = 200, {"hasResults": c["hasResults"], "protocolSection": {
                "identificationModule": {"nctId": parts[2]},
                "statusModule": {"completionDateStruct": {"date": c["date"]}, "overallStatus": c["overallStatus"]}}}
        elif parts[:2] == ["s2", "paper"] and len(parts) == 4 and parts[3] == "citations" \
                and parts[2].startswith("arXiv:"):
            papers = S2.get(parts[2].removeprefix("arXiv:"), [])
            status, body = 200, {"data": [{"citingPaper": {**p, "externalIds": {}}} for p in papers], "offset": 0}
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


class _ApiServer(ThreadingHTTPServer):
    log: list[str]


@contextmanager
def api_shapes() -> Iterator[tuple[str, list[str]]]:
    """The loopback API-shape server: ``(base URL, request log)``."""
    server = _ApiServer(("127.0.0.1", 0), _ApiHandler)
    server.log = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", server.log
    finally:
        server.shutdown()
        server.server_close()
