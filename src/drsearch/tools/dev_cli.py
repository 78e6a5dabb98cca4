"""``drsearch dev``: the scripted models the demo, the docs and the tests run against.

::

    drsearch dev model --script agent|judge|drbencher|rerank [--host 127.0.0.1] [--port 0]
    drsearch dev wait URL [URL ...] [--timeout 30]
    drsearch dev apis [--fixtures FILE] [--endpoints-out FILE.json] [--no-mcp]

``dev apis`` serves local stand-ins of the biomedical tools' ten APIs (drsearch.dev.apis)
and prints the ``--tool-endpoints`` JSON of ``drsearch run`` as one line once they listen.

``dev model`` serves the OpenAI-compatible chat API (``POST /v1/chat/completions``,
``GET /v1/models``) with one of the scripted responders of :mod:`drsearch.dev`, prints its
base URL (``http://HOST:PORT/v1``) as one line on stdout once it listens, and serves until
Ctrl-C or SIGTERM. ``dev wait`` returns once every URL answers over HTTP (any status), so a
shell script can start servers with ``&`` and go on when they listen.
"""

from __future__ import annotations

import argparse
import json
import signal
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

from .argtypes import int_in, seconds

SCRIPTS = ("agent", "judge", "drbencher", "rerank", "bioagent")


class _Guarded:
    """A responder whose failures are answers: a request its script cannot read is a 400 naming
    why (the client sees a reason, never a dropped connection)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        if hasattr(inner, "list_models"):
            self.list_models = inner.list_models

    def respond(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        from ..dev.chat import error_body

        try:
            answer: tuple[int, dict[str, Any]] = self.inner.respond(body)
        except Exception as e:  # the script's own parsing of an unexpected prompt
            return 400, error_body(f"the script cannot answer this request ({e.__class__.__name__}: {e})",
                                   "no_rule")
        return answer


def _responder(script: str) -> Any:
    if script == "agent":
        from ..dev.agent import ReaderAgent

        return ReaderAgent()
    if script == "rerank":
        from ..dev.rerank import RerankResponder

        return RerankResponder()
    if script == "bioagent":
        from ..dev.bioagent import BioToolAgent

        return BioToolAgent()
    if script == "judge":
        from ..dev.judge import FakeJudge

        return FakeJudge()
    from ..dev.chat import RuleResponder
    from ..dev.drbencher import RULES

    return RuleResponder(RULES)


def cmd_dev_model(args: argparse.Namespace, out: TextIO) -> int:
    from ..contract import InvalidInputError
    from ..dev.chat import base_url, make_server

    responder = _Guarded(_responder(args.script))
    try:
        server = make_server(responder, args.host, args.port)
    except OSError as e:
        raise InvalidInputError(f"--host {args.host} --port {args.port}: cannot listen "
                                f"({e.strerror or e})") from None

    print(base_url(server), file=out, flush=True)
    return _until_stopped(server.serve_forever, server.server_close)


def _until_stopped(run: Callable[[], object], close: Callable[[], object]) -> int:
    """Run ``run`` (a server's loop, or a sleep) until Ctrl-C or SIGTERM, then ``close``: `kill
    PID` ends a dev server as Ctrl-C does, cleanly, exit 0."""
    def stop(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        run()
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        close()
    return 0


def _sleep_forever() -> None:
    while True:
        time.sleep(3600)


def cmd_dev_apis(args: argparse.Namespace, out: TextIO) -> int:
    from ..contract import InvalidInputError
    from ..dev.apis import DEFAULT_FIXTURES, start_apis

    fixtures = args.fixtures or DEFAULT_FIXTURES
    if not fixtures.is_file():
        raise InvalidInputError(f"--fixtures {fixtures}: no fixture file there (data/biotools/fixtures.json "
                                "in a checkout of the repository)")
    try:
        apis = start_apis(fixtures, args.host, args.port, mcp=not args.no_mcp)
    except OSError as e:
        raise InvalidInputError(f"--host {args.host} --port {args.port}: cannot listen "
                                f"({e.strerror or e})") from None
    except ValueError as e:
        raise InvalidInputError(f"--fixtures {fixtures}: not a fixture file ({e})") from None

    text = json.dumps(apis.endpoints, sort_keys=True)
    try:
        if args.endpoints_out:
            args.endpoints_out.write_text(text + "\n", encoding="utf-8")
    except BaseException:
        apis.stop()
        raise
    print(text, file=out, flush=True)
    return _until_stopped(_sleep_forever, apis.stop)


def cmd_dev_domain_apis(args: argparse.Namespace, out: TextIO) -> int:
    from ..contract import InvalidInputError
    from ..dev.domainapis import DEFAULT_FIXTURES, start_domain_apis

    fixtures = args.fixtures or DEFAULT_FIXTURES
    if not fixtures.is_file():
        raise InvalidInputError(f"--fixtures {fixtures}: no fixture file there (data/domains/fixtures.json "
                                "in a checkout of the repository)")
    try:
        apis = start_domain_apis(fixtures, args.port, host=args.host)
    except OSError as e:
        raise InvalidInputError(f"--host {args.host} --port {args.port}: cannot listen "
                                f"({e.strerror or e})") from None
    except ValueError as e:
        raise InvalidInputError(f"--fixtures {fixtures}: not a fixture file ({e})") from None

    print(apis.url, file=out, flush=True)
    return _until_stopped(_sleep_forever, apis.stop)


def _answers(url: str) -> bool:
    """True when ``url`` answers over HTTP, whatever the status."""
    import urllib.error  # here, not at the top: every `drsearch` command imports this module
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=1.0):
            return True
    except urllib.error.HTTPError:
        return True
    except (OSError, ValueError):  # not listening yet, reset mid-answer
        return False


def cmd_dev_wait(args: argparse.Namespace, out: TextIO) -> int:
    from ..contract import DrsearchError, InvalidInputError

    bad = [u for u in args.urls if not u.startswith(("http://", "https://"))]
    if bad:
        raise InvalidInputError(f"{bad[0]}: not an http:// or https:// URL")
    deadline = time.monotonic() + args.timeout
    waiting = list(args.urls)
    while waiting:
        waiting = [u for u in waiting if not _answers(u)]
        if waiting and time.monotonic() > deadline:
            raise DrsearchError(f"{waiting[0]}: no answer within {args.timeout:g} s")
        if waiting:
            time.sleep(0.1)
    return 0


def register(sub: Any) -> None:
    """Add the ``dev`` verb (``dev model``, ``dev wait``) to the CLI's subparsers."""
    dev = sub.add_parser("dev", help="scripted models for the demo, the docs and offline runs")
    verbs = dev.add_subparsers(dest="dev_verb", required=True)
    p = verbs.add_parser("model", help="serve a scripted OpenAI-compatible model on 127.0.0.1")
    p.add_argument("--script", required=True, choices=SCRIPTS,
                   help="agent: reads the first search hit and answers from it; judge: correct iff the "
                        "answer equals the reference; drbencher: the DrBencher generator's rule-based model")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int_in(0, 65535), default=0, help="port (default 0: a free one, printed)")
    p.set_defaults(handler=cmd_dev_model)
    p = verbs.add_parser("apis", help="serve local stand-ins of the ten biomedical tools' APIs on 127.0.0.1")
    p.add_argument("--fixtures", type=Path, metavar="FILE",
                   help="fixture records (default data/biotools/fixtures.json of this checkout)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int_in(0, 65535), default=0, help="HTTP port (default 0: a free one)")
    p.add_argument("--endpoints-out", type=Path, metavar="FILE.json",
                   help="also write the endpoints (the --tool-endpoints file of drsearch run) here")
    p.add_argument("--no-mcp", action="store_true", help="no BioMCP stand-in (it needs the mcp extra)")
    p.set_defaults(handler=cmd_dev_apis)
    p = verbs.add_parser("domain-apis", help="serve local stand-ins of DrBencher's domain APIs (PubChem, "
                                             "UniProt, SEC EDGAR, NVD, EPSS, CISA KEV) on 127.0.0.1")
    p.add_argument("--fixtures", type=Path, metavar="FILE",
                   help="fixture records (default data/domains/fixtures.json of this checkout)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int_in(0, 65535), default=0,
                   help="HTTP port (default 0: a free one, printed)")
    p.set_defaults(handler=cmd_dev_domain_apis)
    p = verbs.add_parser("wait", help="wait until URLs answer over HTTP (servers started with &)")
    p.add_argument("urls", nargs="+", metavar="URL", help="e.g. http://127.0.0.1:8000/health")
    p.add_argument("--timeout", type=seconds(3600), default=30.0, metavar="S",
                   help="give up after S seconds, exit 1 (default 30)")
    p.set_defaults(handler=cmd_dev_wait)
