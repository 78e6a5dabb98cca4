"""A loopback record service for the citation audit's L1 existence (``--record-url KIND=URL``):
a real HTTP server on 127.0.0.1 answering ``GET /abs/{arXiv id}`` in the shape of arXiv's public
abstract pages (``https://arxiv.org/abs/{id}``: HTML with ``citation_*`` meta tags, 404 for an
id arXiv does not have) and ``GET /pmid/{pmid}`` with a plain-text record. Every request path is
logged. The records are written for the tests (made-up findings, like the OpenBioRQ fixture)."""

from __future__ import annotations

import html
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlsplit

from ..helpers import serving_in_thread

ARXIV = {"2301.00005": ("Predicted aligned error and measured affinity of designed binders",
                        "We ask whether predicted aligned error predicts measured binding affinity."),
         "hep-th/9901001": ("A note on dualities", "An old-style identifier's abstract.")}
PMID = {"31000001": "Early anticoagulation after minor ischaemic stroke: an observational cohort."}


def arxiv_abs_page(arxiv_id: str, title: str, abstract: str) -> str:
    """An abstract page as arXiv serves it, reduced to the parts a reader of the record needs."""
    t, a = html.escape(title), html.escape(abstract)
    return (f'<!DOCTYPE html>\n<html lang="en"><head><title>[{arxiv_id}] {t}</title>\n'
            f'<meta name="citation_title" content="{t}" />\n<meta name="citation_arxiv_id" content="{arxiv_id}" />\n'
            f'</head><body><h1 class="title mathjax">{t}</h1>\n'
            f'<blockquote class="abstract mathjax">Abstract: {a}</blockquote></body></html>\n')


class _Handler(BaseHTTPRequestHandler):
    server: RecordServer

    def do_GET(self) -> None:
        path = unquote(urlsplit(self.path).path)
        self.server.log.append(path)
        kind, _, value = path.strip("/").partition("/")
        status, body, kind_of_body = 404, "no such record", "text/plain"
        if kind == "abs" and value in self.server.arxiv:
            title, abstract = self.server.arxiv[value]
            status, body, kind_of_body = 200, arxiv_abs_page(value, title, abstract), "text/html"
        elif kind == "pmid" and value in self.server.pmid:
            status, body = 200, self.server.pmid[value]
        data = body.encode()
        self.send_response(status)
        self.send_header("content-type", f"{kind_of_body}; charset=utf-8")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


class RecordServer(ThreadingHTTPServer):
    url: str
    log: list[str]
    arxiv: Mapping[str, tuple[str, str]]
    pmid: Mapping[str, str]


@contextmanager
def serve_records(arxiv: Mapping[str, tuple[str, str]] = ARXIV,
                  pmid: Mapping[str, str] = PMID) -> Iterator[RecordServer]:
    """The server (``url``, request ``log``); ``--record-url arxiv={url}/abs/{id}``, ``pmid={url}/pmid/{id}``."""
    server = RecordServer(("127.0.0.1", 0), _Handler)
    server.log, server.arxiv, server.pmid = [], dict(arxiv), dict(pmid)
    server.url = f"http://127.0.0.1:{server.server_address[1]}"
    with serving_in_thread(server):
        yield server
