"""The floor of the HTTP stack for ``http_bench.py --floor``: a bare ASGI app under the same
uvicorn, httptools and uvloop as ``drsearch serve``, answering every POST with the bytes of the
file named by ``DRSEARCH_FLOOR_BODY`` (a real /search answer) after reading the request body.
No engine, no validation, no JSON: what a request costs the stack itself.

    DRSEARCH_FLOOR_BODY=body.json uvicorn --app-dir benchmarks http_floor_app:app \
        --http httptools --loop uvloop --no-access-log
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

BODY = Path(os.environ.get("DRSEARCH_FLOOR_BODY", os.devnull)).read_bytes()
_HEADERS = [(b"content-length", b"%d" % len(BODY)), (b"content-type", b"application/json")]


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body", False):
        pass
    await send({"type": "http.response.start", "status": 200, "headers": _HEADERS})
    await send({"type": "http.response.body", "body": BODY})
