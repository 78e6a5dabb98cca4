"""A core-only install (``pip install drsearch``: apsw, numpy, pydantic, xxhash, tqdm) runs the
core commands, and every other command says in one line which extra to install.

The CLI runs in real subprocesses whose interpreter cannot import any module of an optional
extra: a ``sitecustomize.py`` put first on PYTHONPATH installs a ``sys.meta_path`` finder that
raises ModuleNotFoundError for each module of ``drsearch.tools.extras.EXTRAS`` (the one list,
checked here against pyproject.toml's extras and against every import under src/), as if they
were not installed. The same commands run without the blocker must print the same bytes.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from drsearch.tools.cli import make_parser
from drsearch.tools.extras import COMMAND_EXTRAS, EXTRAS, MissingExtraError, command_extra, missing_extra
from drsearch.tools.run_cli import MERGE_VERB

from ..helpers import DATA, REPO

BLOCKED = sorted({module for modules in EXTRAS.values() for module in modules})

_SITECUSTOMIZE = """
import sys

BLOCKED = frozenset({blocked!r})


class NotInstalled:
    # every module of an optional extra is missing, as on `pip install drsearch`
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None


sys.meta_path.insert(0, NotInstalled())
"""

# The distributions of pyproject's extras whose top-level module is not their normalised name
# (None: no Python module at all).
_MODULE_OF = {"llama-cpp-python": "llama_cpp", "tbb": None}


@pytest.fixture(scope="module")
def envs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, str]]:
    """The environment of a full install (this test suite's) and of a core-only one."""
    blocker = tmp_path_factory.mktemp("core-only")
    (blocker / "sitecustomize.py").write_text(_SITECUSTOMIZE.format(blocked=BLOCKED), encoding="utf-8")
    full = {**os.environ, "COLUMNS": "100"}
    path = full.get("PYTHONPATH")
    core = {**full, "PYTHONPATH": os.pathsep.join([str(blocker), *([path] if path else [])])}
    return {"full": full, "core": core}


def _exe() -> str:
    return shutil.which("drsearch") or str(Path(sys.executable).with_name("drsearch"))


def drsearch(env: dict[str, str], *args: str) -> tuple[int, str, str]:
    p = subprocess.run([_exe(), *args], capture_output=True, text=True, timeout=300, env=env, check=False)
    return p.returncode, p.stdout, p.stderr


def both(envs: dict[str, dict[str, str]], *args: str) -> tuple[int, str, str]:
    """Run a command on both installs; it must succeed with the same output on each."""
    full, core = drsearch(envs["full"], *args), drsearch(envs["core"], *args)
    assert core[0] == 0, core[2][-2000:]
    assert core == full, args
    return core


# -- the blocker is a core-only install ------------------------------------------------------------

_PROBE = """
import importlib, json, sys
missing = []
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except ModuleNotFoundError as e:
        missing.append(e.name)
import drsearch.index, drsearch.tools.cli  # the core and the CLI import
print(json.dumps(missing))
"""


def test_the_blocker_hides_every_extra_module_and_nothing_else(envs: dict[str, dict[str, str]]) -> None:
    core = ["numpy", "apsw", "pydantic", "pydantic_core", "xxhash", "tqdm"]
    done = subprocess.run([sys.executable, "-c", _PROBE, *core, *BLOCKED], capture_output=True, text=True,
                          env=envs["core"], timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == BLOCKED


# -- the extras table is pyproject's ------------------------------------------------------------


def _pyproject() -> dict[str, object]:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]  # type: ignore[no-any-return]


def _distribution(requirement: str) -> str:
    found = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
    assert found, requirement
    return found.group(0)


def _module(distribution: str) -> str | None:
    return _MODULE_OF.get(distribution, re.sub(r"[-.]+", "_", distribution).lower())


def test_extras_are_pyprojects_extras_and_name_their_distributions_modules() -> None:
    extras = _pyproject()["optional-dependencies"]
    assert isinstance(extras, dict)
    assert list(EXTRAS) == [name for name in extras if name not in ("dev", "all")]  # pyproject's order
    # `all` is every extra a verb or the library needs (not the benchmark, fp32 or smoke ones)
    (meta,) = extras["all"]
    named = set(meta.split("[", 1)[1].rstrip("]").split(","))
    assert meta.startswith("drsearch[") and named == set(EXTRAS) - {"bench", "embed-fp32", "smoke"}
    for name, modules in EXTRAS.items():
        own = [_module(_distribution(r)) for r in extras[name]]
        assert {m for m in own if m is not None} <= set(modules), name
    assert set(COMMAND_EXTRAS.values()) <= set(EXTRAS)


def _third_party_imports() -> dict[str, set[str]]:
    """Top-level modules imported anywhere under src/drsearch (not the standard library's), with
    the files importing each."""
    found: dict[str, set[str]] = {}
    for path in sorted((REPO / "src/drsearch").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
                     else [])
            for name in names:
                top = name.partition(".")[0]
                if top not in sys.stdlib_module_names and top != "drsearch":
                    found.setdefault(top, set()).add(str(path.relative_to(REPO)))
    return found


def test_every_import_is_the_cores_or_an_extras() -> None:
    core = {_module(_distribution(r)) for r in _pyproject()["dependencies"]}  # type: ignore[attr-defined]
    core.add("pydantic_core")  # pydantic's own half
    imported = _third_party_imports()
    assert {m: sorted(files) for m, files in imported.items() if m not in core and m not in BLOCKED} == {}
    extras = _pyproject()["optional-dependencies"]
    assert isinstance(extras, dict)
    for name, modules in EXTRAS.items():  # nothing listed that is neither installed by the extra nor imported
        own = {_module(_distribution(r)) for r in extras[name]}
        assert [m for m in modules if m not in own and m not in imported] == [], name


# -- which extra a command names -------------------------------------------------------------------


def _missing(name: str) -> ModuleNotFoundError:
    return ModuleNotFoundError(f"No module named {name!r}", name=name)


def _extra(command: str, module: str) -> str | None:
    err = missing_extra(command, _missing(module))
    return None if err is None else err.extra


def test_a_missing_module_names_the_extra_the_command_needs() -> None:
    err = missing_extra("serve", _missing("fastapi.routing"))
    assert isinstance(err, MissingExtraError) and err.exit_code == 2
    assert err.message == "serve needs the 'server' extra: pip install 'drsearch[server]' (missing module fastapi)"
    # httpx is in agents, grading and mcp: each command names its own, others the first
    assert [_extra(c, "httpx") for c in ("run", "score", "mcp", "corpus build")] == [
        "agents", "grading", "mcp", "agents"]
    assert _extra("construct urls", "scipy") == "grading"  # not the command's: the module's
    # no extra's module: a broken install or a bug, not reported as a missing extra
    assert _extra("serve", "fastapi_typo") is None
    assert missing_extra("serve", ModuleNotFoundError("no name")) is None


def test_a_command_needs_its_own_extra_else_its_verbs() -> None:
    assert command_extra("construct calibrate") == "grading"
    assert command_extra("construct urls") == command_extra("construct") == "agents"
    assert command_extra("kg serve") == "kg"
    assert command_extra("corpus build") is command_extra("build") is command_extra("validate") is None


# -- the parser needs no extra ------------------------------------------------------------------------

_HELPS = """
import argparse, json
from drsearch.tools.cli import make_parser

def leaves(parser, words=()):
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    yield " ".join(words), parser.format_help()
    for sub in subs:
        for name, child in sub.choices.items():
            yield from leaves(child, (*words, name))

print(json.dumps(dict(leaves(make_parser()))))
"""


def test_every_verbs_help_is_the_same_without_extras(envs: dict[str, dict[str, str]]) -> None:
    helps = {}
    for kind, env in envs.items():
        done = subprocess.run([sys.executable, "-c", _HELPS], capture_output=True, text=True, env=env, timeout=120,
                              check=False)
        assert done.returncode == 0, done.stderr[-2000:]
        helps[kind] = json.loads(done.stdout)
    assert helps["core"] == helps["full"]
    assert {"serve", "run", "score", "generate drbencher", "mcp", "kg serve", "construct audit"} <= set(helps["core"])


def test_help_lists_every_verb_without_extras(envs: dict[str, dict[str, str]]) -> None:
    _, out, _ = both(envs, "--help")
    verbs = next(a for a in make_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices
    listed = re.findall(r"^    (\S+)", out, re.M)
    # run-merge: the verb `drsearch run merge` is parsed as, internal and not listed
    assert listed == [v for v in verbs if v != MERGE_VERB] and len(listed) >= 18


# -- core commands: the same output -------------------------------------------------------------


@pytest.fixture(scope="module")
def corpus(envs: dict[str, dict[str, str]], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample corpus built on the core-only install: the same bytes and report as on a full one."""
    root = tmp_path_factory.mktemp("core-build")
    reports = {}
    for kind in ("core", "full"):
        code, out, err = drsearch(envs[kind], "build", str(DATA / "sample/docs.jsonl"), "--out",
                                  str(root / f"{kind}.sqlite3"), "--quiet", "--json")
        assert code == 0 and err == "", err[-2000:]
        reports[kind] = json.loads(out)
    assert (root / "core.sqlite3").read_bytes() == (root / "full.sqlite3").read_bytes()
    assert reports["core"].pop("path") == str(root / "core.sqlite3")
    assert reports["full"].pop("path") == str(root / "full.sqlite3")
    assert reports["core"] == reports["full"] and reports["core"]["documents"] == 184
    return root / "core.sqlite3"


def test_search_open_and_stats_without_extras(envs: dict[str, dict[str, str]], corpus: Path) -> None:
    _, out, _ = both(envs, "search", "--database", str(corpus), "--k", "5", "video game streaming")
    assert out.lstrip().startswith("1.")
    _, out, _ = both(envs, "search", "--database", str(corpus), "--json", "cloud gaming subscription price")
    docid = json.loads(out)["results"][0]["docid"]
    _, out, _ = both(envs, "open", "--database", str(corpus), "--docid", docid, "--length", "100", "--json")
    assert json.loads(out)["docid"] == docid
    blocked = str(DATA / "sample/blocked_docids.txt")
    _, out, _ = both(envs, "stats", "--database", str(corpus), "--blocked-docids", blocked, "--json")
    assert json.loads(out)["documents"] == 184


def test_batch_search_and_eval_without_extras(envs: dict[str, dict[str, str]], corpus: Path,
                                              tmp_path: Path) -> None:
    topics = tmp_path / "topics.tsv"
    topics.write_text("1\tvideo game streaming\n2\tcloud gaming subscription price\n", encoding="utf-8")
    runs = {}
    for kind in ("core", "full"):
        run = tmp_path / f"{kind}.trec"
        code, _, err = drsearch(envs[kind], "search", "--database", str(corpus), "--topics", str(topics),
                                "--output", str(run), "--k", "20")
        assert code == 0, err[-2000:]
        runs[kind] = run.read_bytes()
    assert runs["core"] == runs["full"] and runs["core"].count(b"\n") == 40
    first = runs["core"].split(b"\n", 1)[0].split()
    qrels = tmp_path / "qrels"
    qrels.write_text(f"1 0 {first[2].decode()} 1\n", encoding="utf-8")
    _, out, _ = both(envs, "eval", "--qrels", str(qrels), "--run", str(tmp_path / "core.trec"), "--json")
    assert json.loads(out)


def test_import_and_corpus_build_without_extras(envs: dict[str, dict[str, str]], tmp_path: Path) -> None:
    docs = str(DATA / "sample/docs.jsonl")
    _, out, _ = both(envs, "import", "--from", docs, "--inspect", "--json")
    assert json.loads(out)
    outputs = {}
    for kind in ("core", "full"):
        (tmp_path / kind).mkdir()
        code, out, err = drsearch(envs[kind], "corpus", "build", docs, "--out", str(tmp_path / kind / "c.sqlite3"),
                                  "--quiet", "--json")
        assert code == 0, err[-2000:]
        outputs[kind] = json.loads(out)["coverage"], (tmp_path / kind / "c.sqlite3").read_bytes()
    assert outputs["core"] == outputs["full"]


def _untimed(report: str) -> str:
    """A validation report without its timings (hashing speed and time, each check's seconds in
    its message: the parts that vary from run to run)."""
    report = re.sub(r'"(mb_per_s|seconds)":[0-9.]+', r'"\1":0', report)
    report = re.sub(r"\([0-9.]+ s\)", "(0 s)", report)
    return re.sub(r"in [0-9.,]+ s, [0-9,]+ MB/s", "in 0 s, 0 MB/s", report)  # 1,136 MB/s


def test_validate_and_release_manifest_without_extras(envs: dict[str, dict[str, str]], release: Path) -> None:
    args = ("validate", "--release-dir", str(release), "--deep", "--json")
    (code, core, err), (_, full, _) = drsearch(envs["core"], *args), drsearch(envs["full"], *args)
    assert code == 0, err[-2000:]
    assert _untimed(core) == _untimed(full) and core != _untimed(core)  # the masking masks something
    assert {c["status"] for c in json.loads(core)["checks"]} == {"PASS"}
    _, out, _ = both(envs, "release", "manifest", str(release), "--quiet", "--json")  # the same manifest rewritten
    assert json.loads(out) == json.loads((release / "manifest.json").read_bytes())


# -- commands needing an extra: one line naming it, exit 2 ------------------------------------------


def _needing_extras(tmp: Path) -> list[tuple[list[str], str]]:
    kg, gen = str(DATA / "kg/kg.ttl"), str(DATA / "kg/gen.json")
    items = tmp / "items.jsonl"  # dedup reads its items before it loads the model
    items.write_text('{"id": 1, "text": "a question"}\n{"id": 2, "text": "another question"}\n', encoding="utf-8")
    sources, db = str(DATA / "openbiorq/sources.jsonl"), str(tmp / "absent.sqlite3")
    return [
        (["serve", "--database", db], "serve needs the 'server' extra: pip install 'drsearch[server]' "
                                      "(missing module fastapi)"),
        (["run", "--questions", str(DATA / "sample/questions.jsonl"), "--database", db, "--out", str(tmp / "run")],
         "run needs the 'agents' extra: pip install 'drsearch[agents]' (missing module httpx)"),
        (["corpus", "fetch", "--urls", str(tmp / "urls.txt"), "--out", str(tmp / "crawl")],
         "corpus fetch needs the 'agents' extra: pip install 'drsearch[agents]' (missing module httpx)"),
        (["corpus", "extract", str(DATA / "sample/crawl"), "--out", str(tmp / "docs.jsonl"), "--workers", "2"],
         "corpus extract needs the 'extract' extra: pip install 'drsearch[extract]' (missing module trafilatura)"),
        (["score", "--compare", str(tmp / "a"), str(tmp / "b")],
         "score needs the 'grading' extra: pip install 'drsearch[grading]' (missing module httpx)"),
        (["compare", str(tmp / "a"), str(tmp / "b")],
         "compare needs the 'grading' extra: pip install 'drsearch[grading]' (missing module httpx)"),
        (["agreement", str(tmp / "a"), str(tmp / "b")],
         "agreement needs the 'grading' extra: pip install 'drsearch[grading]' (missing module httpx)"),
        (["calibrate", "--questions", str(tmp / "q.jsonl"), "--runs", str(tmp / "r"), "--rule", "dr256",
          "--out", str(tmp / "cal.json")],
         "calibrate needs the 'grading' extra: pip install 'drsearch[grading]' (missing module scipy)"),
        (["dedup", str(items), "--out", str(tmp / "dedup.json")],
         "embeddings need the 'embed' extra: pip install 'drsearch[embed]' (missing module onnxruntime)"),
        (["kg", "serve", "--data", kg],
         "kg serve needs the 'kg' extra: pip install 'drsearch[kg]' (missing module pyoxigraph)"),
        (["mcp", "--database", db],
         "mcp needs the 'mcp' extra: pip install 'drsearch[mcp]' (missing module httpx)"),
        (["generate", "drbencher", "--config", gen, "--out", str(tmp / "gen")],
         "generate drbencher needs the 'agents' extra: pip install 'drsearch[agents]' (missing module httpx)"),
        (["generate", "openbiorq", "extract", str(tmp / "obrq"), "--sources", sources, "--base-url",
          "http://127.0.0.1:9/v1"],
         "generate openbiorq needs the 'agents' extra: pip install 'drsearch[agents]' (missing module httpx)"),
        (["construct", "urls", str(tmp / "pool")],
         "construct urls needs the 'agents' extra: pip install 'drsearch[agents]' (missing module httpx)"),
        (["construct", "calibrate", str(tmp / "pool"), "--runs", str(tmp / "r")],
         "construct calibrate needs the 'grading' extra: pip install 'drsearch[grading]' (missing module scipy)"),
    ]


def test_commands_needing_an_extra_name_it_in_one_line(envs: dict[str, dict[str, str]], tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    cases = _needing_extras(work)
    assert {re.findall(r"'(\w+)'", line)[0] for _, line in cases} == set(COMMAND_EXTRAS.values())
    for argv, line in cases:
        assert drsearch(envs["core"], *argv) == (2, "", f"drsearch: error: {line}\n"), argv
    assert sorted(p.name for p in work.iterdir()) == ["items.jsonl"]  # refused before anything is written


def test_main_reports_a_missing_module_as_an_extra_only_when_it_is_one(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import drsearch.tools.cli as cli

    def raising(name: str) -> object:
        def handler(args: argparse.Namespace, out: object) -> int:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return handler

    monkeypatch.setattr(cli, "cmd_stats", raising("scipy.stats"))
    assert cli.main(["stats", "--database", "x.sqlite3"]) == 2
    assert capsys.readouterr().err == ("drsearch: error: stats needs the 'grading' extra: pip install "
                                       "'drsearch[grading]' (missing module scipy)\n")
    monkeypatch.setattr(cli, "cmd_stats", raising("drsearch_no_such_module"))
    assert cli.main(["stats", "--database", "x.sqlite3"]) == 1
    assert capsys.readouterr().err == ("drsearch: internal error: ModuleNotFoundError: "
                                       "No module named 'drsearch_no_such_module'\n")
