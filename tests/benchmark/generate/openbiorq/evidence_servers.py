"""The openness stage's evidence servers for the tests, both real and on 127.0.0.1:

- a real ``drsearch serve`` over a corpus of follow-up records (built here from
  :data:`FOLLOW_UPS` and the controls' records);
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

from ....helpers import drsearch_serve as serve

FOLLOW_UPS = [
    ("fu-anticoag", "Early anticoagulation trial results",
     "A randomised trial reported that early anticoagulation lowered recurrent stroke at 90 days in patients "
     "with atrial fibrillation after minor ischaemic stroke."),
    ("fu-backpain", "Remote graded activity for chronic low back pain: trials under way",
     "Two ongoing trials compare graded activity programmes delivered remotely with in-person programmes for "
     "chronic low back pain; neither has finished."),
    ("fu-fmt", "Capsule transplantation in children: a protocol",
     "A protocol for oral capsule transplantation in children under 12 with recurrent Clostridioides difficile "
     "was registered; recruitment has not started."),
]
EUROPEPMC = {"31000007": [{"id": "39990001", "source": "MED", "title": "Intermittent senolytic dosing and gait "
                           "speed in frail older adults: a pilot", "pubYear": "2024", "journalAbbreviation": "Age"}]}
CTGOV = {"NCT04000003": {"overallStatus": "COMPLETED", "date": "2023-05", "hasResults": True},
         "NCT04000010": {"overallStatus": "ACTIVE_NOT_RECRUITING", "date": "2027-01", "hasResults": False}}
S2 = {"2301.00005": [{"paperId": "s2-aa01", "title": "Predicted aligned error and measured affinity of designed "
                      "binders: no correlation yet established", "year": 2024}]}


def control_rows(resolved: int = 34, negatives: int = 12) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(controls, follow-up records)``: known-resolved controls with a record that 'reported that'
    settles them, and genuinely open ones whose record says the trial is still running."""
    controls, records = [], []
    for i in range(resolved + negatives):
        drug, expected = f"zentamab{i:02d}", "resolved" if i < resolved else "open"
        sid = f"PMID:4100{i:04d}"
        question = f"Is it known whether {drug} reduces relapse frequency in adults with condition-{i:02d}?"
        controls.append({"expected": expected, "question": question, "source_id": sid, "task_id": f"{sid}#0",
                         "text": f"It remains unknown whether {drug} reduces relapse frequency.",
                         "title": f"{drug} for condition-{i:02d}", "track": "clinical", "year": 2020})
        finding = (f"A phase 3 trial reported that {drug} reduced relapse frequency in adults with condition-{i:02d}."
                   if expected == "resolved" else
                   f"A phase 3 trial of {drug} for relapse frequency in condition-{i:02d} is still recruiting.")
        records.append({"docid": f"fu-ctrl-{i:02d}", "text": finding, "title": f"{drug} follow-up",
                        "url": f"https://followups.example/ctrl/{i:02d}"})
    return controls, records


def follow_up_docs() -> list[dict[str, Any]]:
    docs = [{"docid": d, "text": text, "title": title, "url": f"https://followups.example/{d}"}
            for d, title, text in FOLLOW_UPS]
    return docs + control_rows()[1]


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
