"""A real HTTP server on 127.0.0.1 for the fetch tests (no test reaches the internet).

It serves the 181 vendored pages (data/sample/crawl) under their original paths, one
virtual host per original host (dispatch on the Host header), plus hosts made for the
cases the fetcher must handle: robots.txt rules, redirects (and a loop), 404, 429 with
Retry-After, 503, slow answers, a duplicate page under a second URL, a PDF, a text file,
oversized bodies (declared and streamed) and an unavailable robots.txt.
``LocalTransport`` sends every request to this server, whatever its URL's host, keeping
the Host header: the fetcher runs unchanged with real sockets and real HTTP.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import threading
import time
from collections import defaultdict
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import httpx

REPO = Path(__file__).resolve().parents[2]
CRAWL = REPO / "data" / "sample" / "crawl"
SLOW_S = 1.5
MAX_BYTES = 3_000_000  # above the largest sample page


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    content_type: str = "text/html; charset=utf-8"
    headers: tuple[tuple[str, str], ...] = ()
    delay: float = 0.0
    streamed: bool = False  # no Content-Length; the body ends when the connection closes


def sample_pages() -> dict[str, bytes]:
    """url → raw HTML of the 181 vendored pages."""
    pages = {}
    for line in (CRAWL / "fetches.jsonl").read_text().splitlines():
        rec = json.loads(line)
        pages[rec["url"]] = gzip.decompress((CRAWL / rec["body"]).read_bytes())
    return pages


def _key(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return (parts.hostname or "").lower(), (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


class Site:
    """The routes, the request log and the special URLs the tests use."""

    def __init__(self) -> None:
        self.pages = sample_pages()
        self.routes: dict[tuple[str, str], Reply] = {_key(u): Reply(body=b) for u, b in self.pages.items()}
        self.hits: dict[tuple[str, str], list[float]] = defaultdict(list)
        self.user_agents: set[str] = set()
        self.busy_served = False
        self.lock = threading.Lock()
        # Two real pages of one real host: robots.txt disallows exactly one of them.
        by_host: dict[str, list[str]] = defaultdict(list)
        for u in sorted(self.pages):
            by_host[_key(u)[0]].append(u)
        host, urls = next((h, us) for h, us in sorted(by_host.items()) if len(us) == 2)
        self.real_host, self.real_allowed, self.real_disallowed = host, urls[0], urls[1]
        self.robots_txt = {
            host: f"User-agent: *\nDisallow: {_key(urls[1])[1]}\n",
            "robots.test": "User-agent: *\nDisallow: /private/\n",
            "flaky-robots.test": None,  # 500
        }
        html = self.pages[self.real_allowed]
        page = b"<html><head><title>Test page</title></head><body><article><p>%s</p></article></body></html>"
        text = (b"An ordinary paragraph about crawling politely and respecting rules of sites. " * 8)
        self.routes.update({
            ("robots.test", "/public/a"): Reply(body=page % text),
            ("robots.test", "/private/b"): Reply(body=page % (b"secret " + text)),
            ("redirect.test", "/old"): Reply(301, headers=(("Location", "https://redirect.test/new"),)),
            ("redirect.test", "/new"): Reply(body=page % (b"moved " + text)),
            ("redirect.test", "/loop"): Reply(302, headers=(("Location", "https://redirect.test/loop"),)),
            ("errors.test", "/missing"): Reply(404, body=b"not found"),
            ("errors.test", "/down"): Reply(503, body=b"down"),
            ("errors.test", "/slow"): Reply(body=page % text, delay=SLOW_S),
            ("errors.test", "/slowish"): Reply(body=page % (b"patience " + text), delay=0.3),
            ("mirror.test", "/copy"): Reply(body=html),
            ("files.test", "/report.pdf"): Reply(body=b"%PDF-1.4 fake", content_type="application/pdf"),
            ("files.test", "/notes.txt"): Reply(body=b"Plain notes. " * 30, content_type="text/plain"),
            ("files.test", "/huge.html"): Reply(body=b"<html>" + b"x" * (MAX_BYTES + 10)),
            ("files.test", "/huge-stream.html"): Reply(body=b"<html>" + b"y" * (MAX_BYTES + 10),
                                                       streamed=True),
            ("flaky-robots.test", "/page"): Reply(body=page % text),
        })

    def reply(self, host: str, path: str) -> Reply:
        with self.lock:
            self.hits[(host, path)].append(time.monotonic())
        if path == "/robots.txt":
            if host not in self.robots_txt:
                return Reply(404, body=b"no robots", content_type="text/plain")
            rules = self.robots_txt[host]
            return Reply(500) if rules is None else Reply(body=rules.encode(), content_type="text/plain")
        if (host, path) == ("errors.test", "/busy"):
            with self.lock:
                first, self.busy_served = not self.busy_served, True
            if first:
                return Reply(429, body=b"slow down", headers=(("Retry-After", "1"),))
            return Reply(body=b"<html><body><p>" + b"Worth the wait. " * 20 + b"</p></body></html>")
        return self.routes.get((host, path), Reply(404, body=b"not found"))

    @property
    def special_urls(self) -> list[str]:
        return [f"https://{h}{p}" for h, p in self.routes if h.endswith(".test")] + ["https://errors.test/busy"]


def make_handler(site: Site) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:  # quiet
            pass

        def do_GET(self) -> None:
            host = (self.headers.get("Host") or "").split(":")[0].lower()
            site.user_agents.add(self.headers.get("User-Agent", ""))
            r = site.reply(host, self.path)
            if r.delay:
                time.sleep(r.delay)
            self.send_response(r.status)
            self.send_header("Content-Type", r.content_type)
            for k, v in r.headers:
                self.send_header(k, v)
            if r.streamed:
                self.send_header("Connection", "close")
                self.close_connection = True
            else:
                self.send_header("Content-Length", str(len(r.body)))
            self.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.wfile.write(r.body)

    return Handler


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # clients that give up (timeouts, too_large) reset connections: expected here


class CrawlServer:
    """The server in a background thread; ``transport()`` routes httpx requests to it."""

    def __init__(self) -> None:
        self.site = Site()
        self.httpd = _Server(("127.0.0.1", 0), make_handler(self.site))
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> CrawlServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def transport(self) -> LocalTransport:
        return LocalTransport(self.port)


class LocalTransport(httpx.AsyncBaseTransport):
    """Connects every request to 127.0.0.1:port over plain HTTP, keeping its Host header."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.inner = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        local = request.url.copy_with(scheme="http", host="127.0.0.1", port=self.port)
        routed = httpx.Request(request.method, local, headers=request.headers, stream=request.stream,
                               extensions=request.extensions)
        return await self.inner.handle_async_request(routed)

    async def aclose(self) -> None:
        await self.inner.aclose()
