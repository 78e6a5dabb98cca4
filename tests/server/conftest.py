"""Server test fixtures: apps over the bundled sample corpus, driven in-process.

``Client`` wraps ``httpx.AsyncClient`` over ``httpx.ASGITransport`` (no sockets) with a
private event loop, so tests stay plain synchronous functions.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from drsearch.index import BlockList, Engine
from drsearch.server import ServerSettings, create_app

# The top hit of this query is blocked in the "blocked" fixtures; the demo opens it.
BLOCK_QUERY = "video game streaming subscription"


class Client:
    """A synchronous facade over an in-process ASGI client for one app."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self._loop = asyncio.new_event_loop()
        self._client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                         base_url="http://drsearch.test")

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        return self._loop.run_until_complete(self._client.request(method, path, **kwargs))

    def get(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, body: Any = None, **kwargs: Any) -> httpx.Response:
        if body is not None:
            kwargs["json"] = body
        return self.request("POST", path, **kwargs)

    def close(self) -> None:
        self._loop.run_until_complete(self._client.aclose())
        self._loop.close()


def make_client(index: Path, blocklist: BlockList | None = None,
                settings: ServerSettings | None = None) -> Client:
    return Client(create_app(Engine.open(index, blocklist), settings))


@pytest.fixture(scope="session")
def blocked_docid(sample_index: Path) -> str:
    with Engine.open(sample_index) as engine:
        return engine.search(BLOCK_QUERY, 1).hits[0].docid


@pytest.fixture(scope="session")
def blocklist(blocked_docid: str) -> BlockList:
    return BlockList.from_bytes(f"# blocked for tests\n{blocked_docid}\n".encode(), "blocked.txt")


@pytest.fixture(scope="module")
def client(sample_index: Path) -> Iterator[Client]:
    """An app without a blocklist and default settings."""
    c = make_client(sample_index)
    yield c
    c.close()


@pytest.fixture(scope="module")
def blocked_client(sample_index: Path, blocklist: BlockList) -> Iterator[Client]:
    """An app whose blocklist hides the top hit of BLOCK_QUERY."""
    c = make_client(sample_index, blocklist)
    yield c
    c.close()


def error_of(response: httpx.Response) -> tuple[int, str, str]:
    """(status, type, message) of an error response; fails unless the body has our shape."""
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"type", "message"}, body
    assert response.headers["content-type"] == "application/json"
    assert "Traceback" not in response.text
    return response.status_code, body["error"]["type"], body["error"]["message"]
