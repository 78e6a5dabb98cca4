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
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from drsearch.index import build
from drsearch.server import ServeProcess

from ....helpers import DATA, serving_in_thread

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
    with ServeProcess(database, log=tmp / "serve.log") as server:
        yield server.url


S2_FIELDS = {"paperId", "title", "year", "externalIds", "authors", "venue", "abstract", "url", "citationCount"}
"""Fields the loopback S2 server knows (the real API refuses an unknown one with HTTP 400)."""


def _page(items: list[Any], offset: int, size: int) -> list[Any]:
    return items[offset:offset + size]


class _ApiHandler(BaseHTTPRequestHandler):
    server: _ApiServer

    def _answer(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        split = urlsplit(self.path)
        path, query = unquote(split.path), dict(parse_qsl(split.query))
        self.server.log.append(self.path)
        self.server.agents.append(self.headers.get("user-agent", ""))
        self.server.keys.append((path.strip("/").split("/")[0], self.headers.get("x-api-key")))
        parts = path.strip("/").split("/")
        queued = self.server.throttle.get(parts[0], [])
        if queued:  # a scripted refusal first (rate limit, busy), as the real services answer
            status, retry_after = queued.pop(0)
            self._answer(status, {"message": "Too Many Requests" if status == 429 else "busy"},
                         {"retry-after": retry_after} if retry_after is not None else None)
            return
        status, body = 404, {"error": "not found"}
        if parts[:2] == ["europepmc", "MED"] and len(parts) == 4 and parts[3] == "citations":
            # Europe PMC REST: page (1-based) and pageSize (1-1000), format json
            if query.get("format") != "json":
                self._answer(400, {"error": "format must be json here"})
                return
            found = EUROPEPMC.get(parts[2], [])
            page, size = int(query.get("page", "1")), int(query.get("pageSize", "25"))
            status, body = 200, {"hitCount": len(found), "request": {"id": parts[2], "page": page, "pageSize": size,
                                                                     "source": "MED"},
                                 "citationList": {"citation": _page(found, (page - 1) * size, size)},
                                 "version": "6.9"}
        elif parts[:2] == ["ctgov", "studies"] and len(parts) == 3 and parts[2] in CTGOV:
            c = CTGOV[parts[2]]
            status, body = 200, {"hasResults": c["hasResults"], "protocolSection": {
                "identificationModule": {"nctId": parts[2]},
                "statusModule": {"completionDateStruct": {"date": c["date"]}, "overallStatus": c["overallStatus"]}}}
        elif parts[:2] == ["s2", "paper"] and len(parts) == 4 and parts[3] == "citations" \
                and parts[2].startswith("arXiv:"):
            # Semantic Scholar graph API: fields (validated), offset and limit (at most 1000), next when more
            fields = [f for f in query.get("fields", "paperId,title").split(",") if f]
            if unknown := sorted(set(fields) - S2_FIELDS):
                self._answer(400, {"error": f"Unrecognized or unsupported fields: {unknown}"})
                return
            papers = S2.get(parts[2].removeprefix("arXiv:"), [])
            offset, limit = int(query.get("offset", "0")), int(query.get("limit", "100"))
            page = [{"citingPaper": {"paperId": p["paperId"], **{f: p.get(f, {} if f == "externalIds" else None)
                                                                  for f in fields if f != "paperId"}}}
                    for p in _page(papers, offset, limit)]
            body = {"data": page, "offset": offset}
            if offset + limit < len(papers):
                body["next"] = offset + limit
            status = 200
        self._answer(status, body)

    def log_message(self, *args: Any) -> None:
        pass


class _ApiServer(ThreadingHTTPServer):
    url: str
    log: list[str]
    agents: list[str]
    keys: list[tuple[str, str | None]]
    throttle: dict[str, list[tuple[int, str | None]]]


@contextmanager
def api_server(throttle: dict[str, list[tuple[int, str | None]]] | None = None) -> Iterator[_ApiServer]:
    """The loopback API-shape server itself: its ``url``, request ``log`` (paths), the User-Agent
    of each request (``agents``) and its ``(api, x-api-key header)`` (``keys``). ``throttle``: per API (``europepmc``, ``ctgov``, ``s2``),
    ``(status, Retry-After)`` answers given before the real ones (e.g. ``[(429, "0")]``)."""
    server = _ApiServer(("127.0.0.1", 0), _ApiHandler)
    server.log = []
    server.agents = []
    server.keys = []
    server.throttle = {k: list(v) for k, v in (throttle or {}).items()}
    server.url = f"http://127.0.0.1:{server.server_address[1]}"
    with serving_in_thread(server):
        yield server


@contextmanager
def api_shapes() -> Iterator[tuple[str, list[str]]]:
    """The loopback API-shape server: ``(base URL, request log)``."""
    with api_server() as server:
        yield server.url, server.log
