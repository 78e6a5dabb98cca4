"""Local stand-ins for the ten public APIs of the biomedical tools (tests, demos, offline work).

:func:`serve_apis` starts, on 127.0.0.1, one HTTP server speaking the documented request and
response shapes of NCBI E-utilities, ClinicalTrials.gov API v2, openFDA, the Open Targets
Platform GraphQL API, ChEMBL REST, UniProt REST, PubChem PUG-REST, KEGG REST (plain text) and
NCBI Datasets v2 (their paths do not overlap, so one server holds them all), and an MCP
server (streamable HTTP at ``/mcp``) with BioMCP's ``search`` and ``fetch`` tools. Answers
come from a fixture file of public records (data/biotools/fixtures.json; provenance in
data/biotools/README.md). Searching is naive (a record matches when it contains a word of
the query) and the GraphQL endpoint answers ``target(ensemblId:)`` queries only: these are
shape-faithful stand-ins, not the services. ``drsearch dev apis`` serves them until Ctrl-C.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from ..contract.listen import tcp_listener
from .standin import TextHandler

DEFAULT_FIXTURES = Path(__file__).resolve().parents[3] / "data" / "biotools" / "fixtures.json"
HTTP_TOOLS = (
    "pubmed",
    "clinicaltrialsgov",
    "openfda",
    "opentargets",
    "chembl",
    "uniprot",
    "pubchem",
    "kegg",
    "ncbi_datasets",
)
_WORD = re.compile(r"[A-Za-z0-9]{3,}")
Answer = tuple[int, str, str]  # status, content type, body
JSON, TEXT = "application/json; charset=utf-8", "text/plain; charset=utf-8"


def _matches(query: str, record: Any) -> bool:
    text = json.dumps(record).casefold()
    return any(w.casefold() in text for w in _WORD.findall(query))


def _json(value: Any, status: int = 200) -> Answer:
    return status, JSON, json.dumps(value, sort_keys=True)


class Fixtures:
    """The fixture records and, per API, the answer to one request (path, query, body)."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.d = data

    @classmethod
    def load(cls, path: Path = DEFAULT_FIXTURES) -> Fixtures:
        return cls(json.loads(path.read_text(encoding="utf-8")))

    def answer(self, method: str, path: str, q: dict[str, str], body: Any) -> Answer:
        for prefix, handler in (
            ("/entrez/eutils/", self.eutils),
            ("/api/v2/studies", self.trials),
            ("/api/v4/graphql", self.graphql),
            ("/chembl/api/data/", self.chembl),
            ("/uniprotkb/", self.uniprot),
            ("/rest/pug/compound/", self.pubchem),
            ("/datasets/v2/gene/", self.datasets),
        ):
            if path.startswith(prefix):
                return handler(path, q, body)
        if re.fullmatch(r"/(drug|device)/[a-z]+\.json", path):
            return self.openfda(path, q, body)
        if re.fullmatch(r"/(info|list|find|get|link|conv)/.+", path):
            return self.kegg(path, q, body)
        return 404, TEXT, f"no such endpoint {path}"

    def eutils(self, path: str, q: dict[str, str], body: Any) -> Answer:
        records = self.d["pubmed"]
        if path.endswith("/esearch.fcgi"):
            ids = [i for i, r in sorted(records.items()) if _matches(q.get("term", ""), r)]
            shown = ids[: int(q.get("retmax", 20))]
            return _json(
                {
                    "esearchresult": {
                        "count": str(len(ids)),
                        "idlist": shown,
                        "querytranslation": q.get("term"),
                        "retmax": str(len(shown)),
                        "retstart": "0",
                        "translationset": [],
                    },
                    "header": {"type": "esearch", "version": "0.3"},
                }
            )
        wanted = [i for i in q.get("id", "").split(",") if i]
        if path.endswith("/esummary.fcgi"):
            found = {i: records[i]["summary"] for i in wanted if i in records}
            return _json(
                {"header": {"type": "esummary", "version": "0.3"}, "result": {"uids": list(found), **found}}
            )
        if path.endswith("/efetch.fcgi"):
            return 200, TEXT, "\n\n".join(records[i]["abstract"] for i in wanted if i in records)
        return 404, TEXT, "unknown E-utility"

    def trials(self, path: str, q: dict[str, str], body: Any) -> Answer:
        studies = self.d["clinicaltrials"]
        nct = path.removeprefix("/api/v2/studies").strip("/")
        if nct:
            if nct in studies:
                return _json(studies[nct])
            return 404, TEXT, f"Study {nct} not found"  # shape not verified (data/biotools/README.md)
        found = [s for _, s in sorted(studies.items()) if _matches(q.get("query.term", ""), s)]
        return _json({"studies": found[: int(q.get("pageSize", 10))]})

    def openfda(self, path: str, q: dict[str, str], body: Any) -> Answer:
        records = self.d["openfda"].get(path.removeprefix("/").removesuffix(".json"), [])
        terms = re.sub(r"[A-Za-z_.]+:", " ", q.get("search", ""))
        found = [r for r in records if _matches(terms, r)]
        if not found:
            return _json({"error": {"code": "NOT_FOUND", "message": "No matches found!"}}, 404)
        limit = int(q.get("limit", 1))
        return _json(
            {
                "meta": {
                    "disclaimer": "fixture",
                    "results": {"limit": limit, "skip": 0, "total": len(found)},
                },
                "results": found[:limit],
            }
        )

    def graphql(self, path: str, q: dict[str, str], body: Any) -> Answer:
        text = str((body or {}).get("query", ""))
        variables = (body or {}).get("variables") or {}
        m = re.search(r'target\s*\(\s*ensemblId\s*:\s*(?:"([^"]+)"|\$(\w+))', text)
        if not m:
            return _json({"errors": [{"message": "fixture server: only target(ensemblId:) queries"}]}, 400)
        ensembl = m.group(1) or str(variables.get(m.group(2), ""))
        record = self.d["opentargets"]["targets"].get(ensembl)
        if record is not None:  # the fields the query names
            record = {k: v for k, v in record.items() if re.search(rf"\b{k}\b", text)}
        return _json({"data": {"target": record}})

    def chembl(self, path: str, q: dict[str, str], body: Any) -> Answer:
        rest = path.removeprefix("/chembl/api/data/")
        resource, _, tail = rest.partition("/")
        plural = {"activity": "activities"}.get(
            resource.removesuffix(".json"), resource.removesuffix(".json") + "s"
        )
        table = self.d["chembl"].get(resource.removesuffix(".json"), {})
        limit = int(q.get("limit", 20))
        if tail == "search.json":
            found = [r for _, r in sorted(table.items()) if _matches(q.get("q", ""), r)]
        elif tail.endswith(".json"):
            record = table.get(tail.removesuffix(".json"))
            if record is None:
                return _json(
                    {"error_message": "No resource found matching the query.", "error_type": "not found"}, 404
                )
            return _json(record)
        else:
            filters = {k: v for k, v in q.items() if k not in ("limit", "offset", "format")}
            found = [
                r for _, r in sorted(table.items()) if all(str(r.get(k)) == v for k, v in filters.items())
            ]
        return _json(
            {
                plural: found[:limit],
                "page_meta": {
                    "limit": limit,
                    "next": None,
                    "offset": 0,
                    "previous": None,
                    "total_count": len(found),
                },
            }
        )

    def uniprot(self, path: str, q: dict[str, str], body: Any) -> Answer:
        entries = self.d["uniprot"]
        acc = path.removeprefix("/uniprotkb/")
        if acc == "search":
            found = [e for _, e in sorted(entries.items()) if _matches(q.get("query", ""), e)]
            return _json({"results": found[: int(q.get("size", 25))]})
        if acc in entries:
            return _json(entries[acc])
        return _json({"messages": [f"Resource not found: {acc}"], "url": path}, 404)

    def pubchem(self, path: str, q: dict[str, str], body: Any) -> Answer:
        parts = [unquote(p) for p in path.removeprefix("/rest/pug/compound/").split("/")]
        ns, ident, op = parts[0], parts[1], parts[2]
        pc = self.d["pubchem"]
        cid = (
            pc["names"].get(ident.casefold())
            if ns == "name"
            else int(ident)
            if ns == "cid" and ident.isdigit()
            else next(
                (
                    int(c)
                    for c, r in pc["compounds"].items()
                    if ident in (r["CanonicalSMILES"], r["InChIKey"])
                ),
                None,
            )
        )
        if cid is None or str(cid) not in pc["compounds"]:
            return _json(
                {
                    "Fault": {
                        "Code": "PUGREST.NotFound",
                        "Details": [f"No CID found for {ident}"],
                        "Message": "No CID found",
                    }
                },
                404,
            )
        record = pc["compounds"][str(cid)]
        if op == "property":
            props = parts[3].split(",")
            return _json(
                {
                    "PropertyTable": {
                        "Properties": [{"CID": cid, **{p: record[p] for p in props if p in record}}]
                    }
                }
            )
        if op == "synonyms":
            return _json(
                {
                    "InformationList": {
                        "Information": [{"CID": cid, "Synonym": pc["synonyms"].get(str(cid), [])}]
                    }
                }
            )
        if op == "cids":
            return _json({"IdentifierList": {"CID": [cid]}})
        return _json(
            {"InformationList": {"Information": [{"CID": cid, "Title": pc["synonyms"][str(cid)][0].title()}]}}
        )

    def kegg(self, path: str, q: dict[str, str], body: Any) -> Answer:
        op, _, rest = path.strip("/").partition("/")
        kegg = self.d["kegg"]
        rest = unquote(rest)
        if op == "find":
            db, _, query = rest.partition("/")
            text = kegg["find"].get(db, "")
            lines = [line for line in text.splitlines(keepends=True) if _matches(query, line)]
            return 200, TEXT, "".join(lines)  # no hit: an empty 200, as KEGG answers
        if op == "get":
            found = [kegg["get"][e] for e in rest.split("+") if e in kegg["get"]]
            return (200, TEXT, "".join(found)) if found else (404, TEXT, "")
        if op == "info":
            return 200, TEXT, f"{rest}            KEGG fixture (data/biotools)\n"
        table = kegg.get(op, {})
        return (200, TEXT, table[rest]) if rest in table else (400, TEXT, "")

    def datasets(self, path: str, q: dict[str, str], body: Any) -> Answer:
        genes = self.d["datasets"]
        rest = path.removeprefix("/datasets/v2/gene/")
        if rest.startswith("id/"):
            found = [genes[i] for i in unquote(rest.removeprefix("id/")).split(",") if i in genes]
        else:
            m = re.fullmatch(r"symbol/([^/]+)/taxon/([^/]+)", rest)
            if not m:
                return _json({"error": "Bad Request", "message": "unknown gene endpoint"}, 400)
            symbols = set(unquote(m.group(1)).upper().split(","))
            taxon = unquote(m.group(2))
            found = [
                g
                for _, g in sorted(genes.items())
                if g["symbol"] in symbols and taxon in (g["tax_id"], g["taxname"], "human")
            ]
        if not found:
            return _json({})  # Datasets answers an empty object when nothing matches
        return _json({"reports": [{"gene": g} for g in found], "total_count": len(found)})


class _Handler(TextHandler):
    server: _Server

    def _do(self, method: str) -> None:
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        body = None
        if method == "POST":
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            try:
                body = json.loads(raw or b"null")
            except ValueError:
                self._send(400, TEXT, "body is not JSON")
                return
        self.server.requests.append(f"{method} {url.path}")
        try:
            status, ctype, text = self.server.fixtures.answer(method, url.path, query, body)
        except (KeyError, ValueError, IndexError) as e:  # a request the stand-in cannot read: a 400
            status, ctype, text = 400, TEXT, f"bad request ({e.__class__.__name__}: {e})"
        self._send(status, ctype, text)

    def do_GET(self) -> None:
        self._do("GET")

    def do_POST(self) -> None:
        self._do("POST")


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], fixtures: Fixtures) -> None:
        super().__init__(address, _Handler)
        self.fixtures = fixtures
        self.requests: list[str] = []


def build_biomcp(fixtures: Fixtures) -> Any:
    """An MCP server with BioMCP's ``search(query, domain?)`` and ``fetch(domain, id)``."""
    import mcp_types as types
    from mcp.server.lowlevel import Server

    records: dict[str, str] = fixtures.d["biomcp"]
    schema = {
        "type": "object",
        "properties": {"domain": {"type": "string"}, "query": {"type": "string"}, "id": {"type": "string"}},
    }
    tools = [
        types.Tool(name="search", description="search BioMCP records", input_schema=schema),
        types.Tool(name="fetch", description="fetch one BioMCP record", input_schema=schema),
    ]

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        a = dict(params.arguments or {})
        if params.name == "fetch":
            text = records.get(f"{a.get('domain')}:{a.get('id')}")
            found = [] if text is None else [text]
        else:
            found = [
                t
                for k, t in sorted(records.items())
                if (not a.get("domain") or k.startswith(f"{a['domain']}:"))
                and _matches(str(a.get("query", "")), t)
            ]
        if params.name not in ("search", "fetch") or not found:
            return types.CallToolResult(
                content=[types.TextContent(type="text", text="No results found.")],
                is_error=params.name not in ("search", "fetch") or params.name == "fetch",
            )
        return types.CallToolResult(
            content=[types.TextContent(type="text", text="\n\n".join(found))], is_error=False
        )

    return Server("biomcp-fixture", on_list_tools=list_tools, on_call_tool=call)


def run_biomcp_stdio(fixtures: Path = DEFAULT_FIXTURES) -> None:
    """Serve the BioMCP stand-in to one client on stdin/stdout (the transport of ``biomcp run``):
    ``python -c 'from drsearch.dev.apis import run_biomcp_stdio; run_biomcp_stdio()'``."""
    import anyio
    from mcp.server.stdio import stdio_server

    server = build_biomcp(Fixtures.load(fixtures))

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)


class _Uvicorn:
    """A uvicorn server on a bound socket in a thread (stopped by :meth:`stop`)."""

    def __init__(self, app: Any, host: str) -> None:
        import uvicorn

        self.sock = tcp_listener(host, 0)  # TCP_NODELAY on every connection (contract.listen)
        self.port = self.sock.getsockname()[1]
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="error", lifespan="on"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)
        self.thread.start()
        for _ in range(500):
            if self.server.started:
                break
            threading.Event().wait(0.01)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)
        self.sock.close()


class LocalApis:
    """The running stand-ins: ``endpoints`` maps each tool to its base URL (the biomcp tool to
    its MCP URL), the ``--tool-endpoints`` file of ``drsearch run``; ``requests`` lists every
    HTTP request served (``METHOD /path``)."""

    def __init__(self, http: _Server, mcp: _Uvicorn | None) -> None:
        self.http, self.mcp = http, mcp
        host, port = str(http.server_address[0]), int(http.server_address[1])
        base = f"http://{host}:{port}"
        self.endpoints: dict[str, str] = dict.fromkeys(HTTP_TOOLS, base)
        if mcp is not None:
            self.endpoints["biomcp"] = f"http://{host}:{mcp.port}/mcp"
        self._thread = threading.Thread(target=http.serve_forever, daemon=True)
        self._thread.start()

    @property
    def requests(self) -> list[str]:
        return self.http.requests

    def stop(self) -> None:
        self.http.shutdown()
        self.http.server_close()
        if self.mcp is not None:
            self.mcp.stop()


def start_apis(
    fixtures: Path = DEFAULT_FIXTURES, host: str = "127.0.0.1", port: int = 0, mcp: bool = True
) -> LocalApis:
    """Start the stand-ins (``mcp``: the BioMCP one too, which needs the ``mcp`` extra)."""
    data = Fixtures.load(fixtures)
    http = _Server((host, port), data)
    server = None
    if mcp:
        app = build_biomcp(data).streamable_http_app(host=host)
        server = _Uvicorn(app, host)
    return LocalApis(http, server)


@contextmanager
def serve_apis(fixtures: Path = DEFAULT_FIXTURES, mcp: bool = True) -> Iterator[LocalApis]:
    """:func:`start_apis` for the duration of a ``with`` block."""
    apis = start_apis(fixtures, mcp=mcp)
    try:
        yield apis
    finally:
        apis.stop()


__all__ = ["DEFAULT_FIXTURES", "Fixtures", "LocalApis", "build_biomcp", "run_biomcp_stdio", "serve_apis",
           "start_apis"]
