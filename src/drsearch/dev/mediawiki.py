"""A local stand-in of the MediaWiki Action API (tests, offline grounding-article fetches).

One HTTP server on 127.0.0.1 answers ``GET /w/api.php?action=query&format=json&formatversion=2
&prop=extracts|pageprops&ppprop=wikibase_item&explaintext=1&redirects=1&titles=T`` in the Action
API's documented shape (``query.normalized``, ``query.redirects``, ``query.pages[]`` with
``title``, ``extract``, ``pageprops.wikibase_item``, or ``missing``) and serves a
``/robots.txt``. Its pages are an articles file's rows (``{"qid", "title", "text"}``, e.g.
data/kg/docs.jsonl: articles written for the fixture, not Wikipedia's text) plus optional
redirects; it is shape-faithful, not Wikipedia.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from .standin import RecordingServer, Running, TextHandler


class _Handler(TextHandler):
    server: _Server

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        with self.server.lock:
            self.server.requests.append(self.path)
        if url.path == "/robots.txt":
            self._send(200, "text/plain", self.server.robots)
            return
        if url.path != "/w/api.php":
            self._send(404, "text/plain", "Not Found")
            return
        q = {k: v[-1] for k, v in parse_qs(url.query).items()}
        if q.get("action") != "query" or q.get("format") != "json":
            self._send(200, "application/json", json.dumps(
                {"error": {"code": "badvalue", "info": "only action=query&format=json is served here"}}))
            return
        self._send(200, "application/json; charset=utf-8", json.dumps(self.server.answer(q), sort_keys=True))


class _Server(RecordingServer):
    def __init__(self, pages: dict[str, dict[str, str]], redirects: Mapping[str, str], robots: str) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.pages, self.redirects, self.robots = pages, dict(redirects), robots

    def answer(self, q: Mapping[str, str]) -> dict[str, Any]:
        out: dict[str, Any] = {"batchcomplete": True, "query": {"pages": []}}
        for asked in q.get("titles", "").split("|"):
            title = asked.replace("_", " ").strip()
            title = title[:1].upper() + title[1:]
            if title != asked:
                out["query"].setdefault("normalized", []).append({"from": asked, "to": title})
            if q.get("redirects") and title in self.redirects:
                out["query"].setdefault("redirects", []).append({"from": title, "to": self.redirects[title]})
                title = self.redirects[title]
            page = self.pages.get(title)
            if page is None:
                out["query"]["pages"].append({"missing": True, "ns": 0, "title": title})
                continue
            row: dict[str, Any] = {"ns": 0, "pageid": int(page["pageid"]), "title": title}
            if "extracts" in q.get("prop", "").split("|"):
                row["extract"] = page["text"]
            if "pageprops" in q.get("prop", "").split("|"):
                row["pageprops"] = {"wikibase_item": page["qid"]}
            out["query"]["pages"].append(row)
        return out


class MediaWiki(Running):
    """A running stand-in: ``api`` (its ``/w/api.php`` URL), ``requests``, ``stop()``."""

    def __init__(self, server: _Server) -> None:
        super().__init__(server)
        self.api = self.url + "/w/api.php"


def pages_from_articles(path: Path) -> dict[str, dict[str, str]]:
    """Title → page of an articles file (``qid``, ``title``, ``text``)."""
    pages: dict[str, dict[str, str]] = {}
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        row = json.loads(line)
        pages[row["title"]] = {"pageid": str(i), "qid": row["qid"], "text": row["text"]}
    return pages


@contextmanager
def serve_mediawiki(articles: Path, redirects: Mapping[str, str] | None = None,
                    robots: str = "User-agent: *\nDisallow: /wiki/Special:\n") -> Iterator[MediaWiki]:
    wiki = MediaWiki(_Server(pages_from_articles(articles), redirects or {}, robots))
    try:
        yield wiki
    finally:
        wiki.stop()


__all__ = ["MediaWiki", "pages_from_articles", "serve_mediawiki"]
