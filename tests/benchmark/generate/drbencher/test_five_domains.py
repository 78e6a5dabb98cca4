"""docs/GENERATE.md's run over the paper's five domains (``data/domains/gen.json``) runs as
written against ``drsearch kg serve``, the scripted model and ``drsearch dev domain-apis``; its
stage counts are the docs table's; its export holds the financial question whose gold comes
from SEC XBRL values; replayed offline from its cache it is byte-identical. A domain API that
cannot answer is one line, exit 2, nothing written."""

from __future__ import annotations

import filecmp
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from ....docblocks import bash_blocks, free_ports, run_blocks
from ....helpers import DATA, REPO
from .kgserver import CLI, kg_serve

pytest.importorskip("pyoxigraph", reason="drsearch kg serve needs the kg extra (pyoxigraph)")

SECTION = "## The DrBencher-style generator (`drsearch generate drbencher`)"
SUBSECTION = "### The paper's five domains (`data/domains/gen.json`)\n"


@pytest.fixture(scope="module")
def kg_endpoint() -> Iterator[str]:
    """One ``drsearch kg serve`` of the bundled graph for the tests below (it is only read)."""
    with kg_serve() as endpoint:
        yield endpoint


def docs_table() -> dict[str, tuple[int, int, dict[str, int]]]:
    text = (REPO / "docs/GENERATE.md").read_text(encoding="utf-8")
    section = text.split(SUBSECTION, 1)[1].split("\n### ", 1)[0]
    table: dict[str, tuple[int, int, dict[str, int]]] = {}
    for line in section.split("| stage |", 1)[1].splitlines()[2:]:
        if not line.startswith("| "):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        rejected = {} if cells[3] == "—" else {k: int(n) for k, n in (r.rsplit(" ", 1) for r in cells[3].split("; "))}
        table[cells[0]] = (int(cells[1]), int(cells[2]), rejected)
    return table


def test_the_five_domain_block_runs_as_written_gives_the_docs_counts_and_replays(tmp_path: Path) -> None:
    (block,) = [b for b in bash_blocks(REPO / "docs/GENERATE.md", SECTION) if "data/domains/gen.json" in b]
    kg, model, domain = free_ports(3)
    env = {"DRSEARCH_KG_PORT": str(kg), "DRSEARCH_MODEL_PORT": str(model), "DRSEARCH_DOMAIN_PORT": str(domain)}
    done = run_blocks([block], tmp_path, env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    summary = json.loads(done.stdout[done.stdout.index("{"):].split("\n", 1)[0])
    table = docs_table()
    assert {s: (summary["counts"][s]["in"], summary["counts"][s]["out"], summary["counts"][s]["rejected"])
            for s in table} == table
    rows = [json.loads(line) for line in (tmp_path / "gen-all/questions.jsonl").read_text().splitlines()]
    apple = [r for r in rows if r["metadata"]["qid"] == "drbencher-Q312:net_margin"]
    assert len(apple) == 1 and apple[0]["label"] == "25.31 %" and apple[0]["metadata"]["category"] == "financial"
    assert "Use fiscal_year = 2023." in json.dumps(apple[0]["prompt"])
    used = apple[0]["metadata"]["drbencher"]["properties"]
    assert {u["pid"]: u["source"] for u in used} == {
        p: f"http://127.0.0.1:{domain}/api/xbrl/companyfacts/CIK0000320193.json"
        for p in ("sec:net_income_fy0", "sec:revenue_fy0")}
    # biochemistry reaches export through caffeine's and p53's Wikidata chains (data/domains/kg.ttl):
    # 0.1 g / 194.19 g/mol and 43,653 Da / 393 residues, the values PubChem and UniProt list
    bio = {r["metadata"]["qid"]: r["label"] for r in rows if r["metadata"]["category"] == "biochemistry"}
    assert bio == {"drbencher-Q60235:molar_amount": "0.51", "drbencher-Q283350:mean_residue_mass": "111.08"}
    chained = {json.loads(line)["qid"] for line in (tmp_path / "gen-all/chains.jsonl").read_text().splitlines()}
    assert {"Q60235", "Q283350"} <= chained and not {"Q18216", "Q110068433"} & chained

    # the servers are gone: the recorded cache alone regenerates every file but timings.json
    replay_env = {**os.environ, **env, "PYTHONPATH": str(REPO / "src"),
                  "DRSEARCH_ARTICLES": str(tmp_path / "docs-all.jsonl")}
    again = subprocess.run([*CLI, "generate", "drbencher", "--config", "data/domains/gen.json", "--out", "gen-re",
                            "--cache-mode", "replay", "--cache", "gen-all/cache.sqlite3", "--quiet"],
                           cwd=tmp_path, env=replay_env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    cmp = filecmp.dircmp(tmp_path / "gen-all", tmp_path / "gen-re", ignore=["timings.json", "cache.sqlite3"])
    assert not cmp.diff_files and not cmp.left_only and not cmp.right_only
    for sub in cmp.subdirs.values():
        assert not sub.diff_files and not sub.left_only and not sub.right_only


@pytest.mark.parametrize("fault", ["429", "not_json", "down"])
def test_a_domain_api_that_cannot_answer_is_one_line_exit_2_nothing_written(tmp_path: Path, fault: str,
                                                                           kg_endpoint: str) -> None:
    from drsearch.dev.domainapis import start_domain_apis

    apis = start_domain_apis(fault=None if fault == "down" else fault)
    url = apis.url
    if fault == "down":
        apis.stop()
    config = json.loads((DATA / "domains/gen.json").read_text())
    config["kg"]["endpoint"] = kg_endpoint
    config["articles"] = str(DATA / "kg/docs.jsonl")
    config["domain_apis"] = {**{s: {"base_url": url, "rate_per_s": 20} for s in config["domain_apis"]},
                             "max_attempts": 2, "timeout_s": 5}
    path = tmp_path / "gen.json"
    path.write_text(json.dumps(config))
    run = subprocess.run([*CLI, "generate", "drbencher", "--config", str(path), "--out", str(tmp_path / "out"),
                          "--until", "discover"],
                         env={**os.environ, "PYTHONPATH": str(REPO / "src")}, capture_output=True, text=True,
                         timeout=120)
    if fault != "down":
        apis.stop()
    assert run.returncode == 2, run.stderr
    assert len(run.stderr.strip().splitlines()) == 1 and "domain_apis." in run.stderr, run.stderr
    assert {"429": "HTTP 429", "not_json": "not JSON", "down": "unreachable"}[fault] in run.stderr
    assert not (tmp_path / "out").exists()


def test_a_domain_api_failing_mid_stage_stops_it_and_keeps_what_was_written(tmp_path: Path,
                                                                           kg_endpoint: str) -> None:
    """A service that answers the probe, then rate-limits forever in the middle of discover: exit 1,
    one line naming the call; the earlier run's outputs stay byte for byte."""
    from drsearch.dev.domainapis import start_domain_apis

    config = json.loads((DATA / "domains/gen.json").read_text())
    config["topics"] = [t for t in config["topics"] if t["domain"] == "security"]
    config["templates"] = ["kev_remediation_window"]
    config["articles"] = str(DATA / "kg/docs.jsonl")
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    out = tmp_path / "out"

    def run(url: str, target: int) -> subprocess.CompletedProcess[str]:
        config["topics"][0]["target"] = target
        config["domain_apis"] = {**{s: {"base_url": url, "rate_per_s": 20} for s in SERVICES},
                                 "max_attempts": 2, "timeout_s": 5}
        (tmp_path / "gen.json").write_text(json.dumps(config))
        return subprocess.run([*CLI, "generate", "drbencher", "--config", str(tmp_path / "gen.json"), "--out",
                               str(out), "--until", "discover", "--quiet"], env=env, capture_output=True, text=True,
                              timeout=120)

    config["kg"]["endpoint"] = kg_endpoint
    good = start_domain_apis()
    first = run(good.url, 2)
    good.stop()
    assert first.returncode == 0, first.stderr
    before = {p.relative_to(out): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()
              and p.name not in ("timings.json", "cache.sqlite3")}
    failing = start_domain_apis(fault="429", fault_after=3)  # the probe's three requests pass
    second = run(failing.url, 1)  # a changed setting: discover runs again, and fails
    failing.stop()
    assert second.returncode == 1, second.stderr
    assert len(second.stderr.strip().splitlines()) == 1 and "HTTP 429" in second.stderr, second.stderr
    after = {p.relative_to(out): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()
             and p.name not in ("timings.json", "cache.sqlite3") and "journal" not in p.name}
    assert after == before


SERVICES = ("pubchem", "uniprot", "sec_files", "sec_data", "nvd", "epss", "kev")


def test_the_staleness_audit_asks_the_domain_api_again(tmp_path: Path) -> None:
    """``refresh`` on a financial question: the same SEC answer flags nothing; Apple's FY2023 net
    income restated in companyfacts moves the net-margin gold beyond 2 % (flagged ``moved``)."""
    import io

    from drsearch.dev.chat import serve_rules
    from drsearch.dev.domainapis import start_domain_apis
    from drsearch.dev.drbencher import RULES
    from drsearch.tools.cli import main

    from .test_kg_stages import generate

    graph = tmp_path / "kg-all.ttl"
    graph.write_bytes((DATA / "kg/kg.ttl").read_bytes() + (DATA / "domains/kg.ttl").read_bytes())
    articles = tmp_path / "docs-all.jsonl"
    articles.write_bytes((DATA / "kg/docs.jsonl").read_bytes() + (DATA / "domains/docs.jsonl").read_bytes())
    fixture = json.loads((DATA / "domains/fixtures.json").read_text())
    config = json.loads((DATA / "domains/gen.json").read_text())
    config["topics"] = [t for t in config["topics"] if t["domain"] == "financial"]
    config["templates"] = ["net_margin"]
    config["articles"] = str(articles)
    restated = tmp_path / "restated.json"
    facts = fixture["sec"]["companyfacts"]["0000320193"]["facts"]["us-gaap"]["NetIncomeLoss"]["units"]["USD"]
    facts.append({**facts[-1], "accn": "0000320193-24-000123", "filed": "2024-11-01", "val": 90000000000})
    restated.write_text(json.dumps(fixture))

    def audit() -> dict[str, object]:
        buf = io.StringIO()
        main(["generate", "drbencher", "refresh", str(tmp_path / "gen"), "--json"], buf)
        return dict(json.loads(buf.getvalue()))

    with kg_serve(graph) as endpoint, serve_rules(RULES) as llm:
        config["kg"]["endpoint"] = endpoint
        config["generator"]["base_url"] = llm.url
        for fixtures, expect in ((DATA / "domains/fixtures.json", "ok"), (restated, "moved")):
            apis = start_domain_apis(fixtures)
            config["domain_apis"] = {s: {"base_url": apis.url, "rate_per_s": 20} for s in SERVICES}
            (tmp_path / "gen.json").write_text(json.dumps(config))
            if expect == "ok":
                rc, _, err = generate(tmp_path / "gen.json", tmp_path / "gen")
                assert rc == 0, err
            else:  # the audit reads the base URL the discover stage recorded: the new server is another port
                manifest = json.loads((tmp_path / "gen/manifest.json").read_text())
                manifest["stages"]["discover"]["settings"]["domain_apis"] = config["domain_apis"]
                (tmp_path / "gen/manifest.json").write_text(json.dumps(manifest))
            result = audit()
            apis.stop()
            (item,) = result["items"]  # type: ignore[misc]
            assert item["item"] == "drbencher-Q312:net_margin" and item["status"] == expect, item["reason"]
    assert item["gold_then"] == "25.31 %" and item["gold_now"] == "23.48 %"  # 90,000 / 383,285
