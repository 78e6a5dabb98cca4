"""V2 offers the domain tools of the config's API topics beside search, open and python (the
paper's tool-augmented filter): a V2 agent on the financial topics calls ``sec_tickers`` against the
local stand-in (``drsearch dev domain-apis``), the call goes through the replay cache as
``drsearch run`` records it, and a replay with every server down is byte-identical."""

from __future__ import annotations

import json
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from drsearch.benchmark.generate.drbencher.domainapi import DomainAPISettings, agent_tools
from drsearch.biotools import BIOTOOLS, LiveBioTools

from ....helpers import DATA
from ..test_stages import assert_same_tree
from .kgserver import kg_serve
from .test_kg_stages import generate, rows

pytest.importorskip("pyoxigraph", reason="drsearch kg serve needs the kg extra (pyoxigraph)")

SERVICES = ("pubchem", "uniprot", "sec_files", "sec_data", "nvd", "epss", "kev")


def test_the_tools_of_each_identifier_kind_at_the_configs_servers() -> None:
    s = DomainAPISettings.model_validate(
        {"nvd": {"base_url": "http://127.0.0.1:9/nvd", "rate_per_s": 1}, "kev": {"base_url": "http://k", "rate_per_s": 1}})
    assert agent_tools({"cve"}, s) == {"cisa_kev": "http://k", "epss": "https://api.first.org",
                                       "nvd": "http://127.0.0.1:9/nvd"}
    assert list(agent_tools({"ticker", "pubchem_cid", "uniprot_accession"}, s)) == [
        "pubchem", "sec_tickers", "sec_xbrl", "uniprot"]
    assert agent_tools(set(), s) == {}


def test_each_domain_tool_reads_the_stand_in() -> None:
    """Every domain tool against ``drsearch dev domain-apis``: the documented request, the
    record of the fixture (filtered to the one asked, where the service answers a whole file)."""
    from drsearch.dev.domainapis import serve_domain_apis

    calls = {"sec_tickers": ({"ticker": "aapl"}, '"cik_str":320193'),
             "sec_xbrl": ({"cik": "320193", "concept": "NetIncomeLoss"}, '"entityName":"Apple Inc."'),
             "nvd": ({"cve_id": "CVE-2021-44228"}, '"id":"CVE-2021-44228"'),
             "epss": ({"cve_id": "CVE-2021-44228"}, '"epss":"0.97565"'),
             "cisa_kev": ({"cve_id": "CVE-2021-44228"}, '"dateAdded":"2021-12-10"')}
    with serve_domain_apis() as apis:
        live = LiveBioTools(dict.fromkeys(calls, apis.url), env={})
        for tool, (args, expect) in calls.items():
            body = json.loads(live.call(tool, BIOTOOLS[tool].check(args)))
            assert body["ok"] and expect in body["content"], (tool, body)
        kev = json.loads(json.loads(live.call("cisa_kev", {"cve_id": "CVE-2021-44228"}))["content"])
        assert [v["cveID"] for v in kev["vulnerabilities"]] == ["CVE-2021-44228"]  # one entry, not the feed
        missing = json.loads(live.call("sec_xbrl", {"cik": "1", "concept": "Revenues"}))
        assert missing["ok"] is False and missing["status"] == 404  # the service's refusal, as an answer
        live.close()


def test_v2_calls_a_domain_tool_through_the_replay_cache_and_replays_offline(tmp_path: Path) -> None:
    from drsearch.dev.chat import serve_rules
    from drsearch.dev.domainapis import start_domain_apis
    from drsearch.dev.drbencher import RULES, SOLVER_DOMAIN

    graph = tmp_path / "kg-all.ttl"
    graph.write_bytes((DATA / "kg/kg.ttl").read_bytes() + (DATA / "domains/kg.ttl").read_bytes())
    articles = tmp_path / "docs-all.jsonl"
    articles.write_bytes((DATA / "kg/docs.jsonl").read_bytes() + (DATA / "domains/docs.jsonl").read_bytes())
    config = json.loads((DATA / "domains/gen.json").read_text())
    config["topics"] = [t for t in config["topics"] if t["domain"] == "financial"]
    config["templates"] = ["net_margin", "revenue_cagr"]
    config["articles"] = str(articles)
    out = tmp_path / "gen"
    with kg_serve(graph) as endpoint, serve_rules(RULES) as llm:
        apis = start_domain_apis()
        config["kg"]["endpoint"] = endpoint
        config["generator"]["base_url"] = llm.url
        config["domain_apis"] = {**{s: {"base_url": apis.url, "rate_per_s": 20} for s in SERVICES},
                                 "user_agent": "acme-bench (ops@acme.example)"}
        config["v2"] = {"enabled": True, "k": 1, "tau": 0.5, "model": {"base_url": llm.url, "model": SOLVER_DOMAIN}}
        (tmp_path / "gen.json").write_text(json.dumps(config))
        rc, summary, err = generate(tmp_path / "gen.json", out, "--until", "v2")
        apis.stop()
        assert rc == 0, err
        # the generator's clients and V2's domain tools alike send the config's User-Agent
        assert apis.user_agents and set(apis.user_agents) == {"acme-bench (ops@acme.example)"}
        v2_calls = [b for b in llm.requests if b["model"] == SOLVER_DOMAIN and "seed" in b]
    assert summary is not None and summary["counts"]["v2"]["in"] >= 1
    offered = {t["function"]["name"] for t in v2_calls[0]["tools"]}
    assert offered == {"search", "open", "python", "sec_tickers", "sec_xbrl"}
    # the model read the tool's answer (the stand-in's row of AAPL) and answered with it
    assert any('"cik_str":320193' in str(m.get("content")) for b in v2_calls for m in b["messages"]
               if m["role"] == "tool")
    cache = tmp_path / "cache.sqlite3"
    shutil.copy(out / "cache.sqlite3", cache)
    with closing(sqlite3.connect(tmp_path / "inspect.sqlite3")) as db:
        db.execute("ATTACH ? AS c", (str(cache),))
        tools = db.execute("SELECT call, body FROM c.responses WHERE kind = 'tool'").fetchall()
    assert [call for call, _ in tools] == ['sec_tickers({"ticker":"AAPL"})']  # recorded once, then a hit
    envelope = json.loads(tools[0][1])
    assert envelope["biotool"] == "sec_tickers" and envelope["requests"] == ["GET /files/company_tickers.json"]
    assert json.loads(summary_settings(out))["domain_tools"] == {"sec_tickers": apis.url, "sec_xbrl": apis.url}
    kept = rows(out / "v2.jsonl")
    assert kept and all(c["v2"]["solved"] == 0 for c in kept)  # a CIK is no margin: nothing solved
    # replay: every server is down, the cache answers the model and the tool, byte for byte
    again = tmp_path / "again"
    rc, _, err = generate(tmp_path / "gen.json", again, "--until", "v2", "--cache-mode", "replay", "--cache",
                          str(cache))
    assert rc == 0, err
    shutil.copy(cache, again / "cache.sqlite3")
    assert_same_tree(out, again)


def summary_settings(out: Path) -> str:
    return json.dumps(json.loads((out / "manifest.json").read_text())["stages"]["v2"]["settings"])


def test_v2_domain_tools_take_the_configs_user_agent_and_rate(tmp_path: Path) -> None:
    """The V2 domain tools ask at the config's ``domain_apis`` politeness, as the generator's own
    clients do: its ``User-Agent`` reaches the stand-in, and its ``rate_per_s`` spaces the calls
    (counted through the limiter's waits, even on 127.0.0.1 where the toolkit's own rule is none)."""
    from drsearch.benchmark.generate.drbencher.domainapi import agent_services
    from drsearch.dev.domainapis import serve_domain_apis

    waits: list[float] = []
    with serve_domain_apis() as apis:
        settings = DomainAPISettings.model_validate(
            {"epss": {"base_url": apis.url, "rate_per_s": 2}, "user_agent": "acme-bench (ops@acme.example)"})
        live = agent_services(agent_tools({"cve"}, settings), settings, sleep=waits.append)
        for _ in range(4):
            body = json.loads(live.call("epss", {"cve_id": "CVE-2021-44228"}))
            assert body["ok"], body
        live.close()
        assert apis.user_agents == ["acme-bench (ops@acme.example)"] * 4
    # four starts at 2 per second: the second, third and fourth each wait for their slot
    assert len(waits) == 3 and all(w > 0.1 for w in waits), waits

