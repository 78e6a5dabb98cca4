"""The documented end-to-end sequence on the fixture, run exactly as docs/GENERATE.md shows it.

The commands are read from the page's "End to end on the fixture" block and run in order, in a
work directory holding a ``data`` link to the repository's data/: ``drsearch`` commands through
the CLI's ``main`` (in process), ``mkdir -p`` and ``cp`` as the shell would, and the one line
ending in ``&`` (``drsearch serve --database FILE ...``) as a real ``drsearch serve`` subprocess
on a free port (tests/helpers.py), whose URL becomes ``$CORPUS``. The other servers are the
tests' own, on 127.0.0.1: ``$LLM`` the rule-based responder playing writer, judge
(tests/benchmark/generate/openbiorq/rules.py) and the three roster models (roster.py),
``$GRADER`` the checklist judge (drsearch.dev.judge), ``$APIS`` the loopback server in
the shapes of Europe PMC, ClinicalTrials.gov v2 and Semantic Scholar (evidence_servers.py).

Run it as one command from the repository root::

    python -m tests.benchmark.generate.openbiorq.e2e WORKDIR

(it prints each command and leaves every output under WORKDIR).
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from string import Template
from typing import Any

from drsearch.dev.chat import serve_rules
from drsearch.dev.judge import serve_judge
from drsearch.server import ServeProcess
from drsearch.tools.cli import main

from ....helpers import DATA, REPO
from . import roster
from .evidence_servers import api_shapes
from .rules import RULES

DOC = REPO / "docs/GENERATE.md"
HEADING = "### End to end on the fixture"


def documented_commands(doc: Path = DOC) -> list[str]:
    """The commands of the first fenced block after :data:`HEADING`, continuation lines joined,
    comments and blank lines dropped."""
    text = doc.read_text(encoding="utf-8")
    after = text.split(HEADING, 1)[1]
    block = after.split("```\n", 2)[1]
    joined = re.sub(r"\\\n\s*", " ", block)
    return [line.strip() for line in joined.splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def strip_comment(line: str) -> str:
    return line.split("  #", 1)[0].strip()


@contextlib.contextmanager
def servers(work: Path) -> Iterator[dict[str, Any]]:
    """The tests' servers (``LLM``, ``GRADER``, ``APIS``) and a stack to start ``drsearch serve`` on."""
    with serve_rules([*RULES, *roster.RULES]) as llm, serve_judge() as grader, api_shapes() as (apis, log), \
            contextlib.ExitStack() as stack:
        yield {"vars": {"APIS": apis, "GRADER": grader.url, "LLM": llm.url}, "stack": stack, "llm": llm,
               "api_log": log, "work": work}


def run_commands(commands: list[str], env: dict[str, Any], echo: bool = False) -> dict[str, str]:
    """Run ``commands`` in ``env['work']``: each ``drsearch`` command's stdout by its position."""
    work: Path = env["work"]
    outputs: dict[str, str] = {}
    for n, raw in enumerate(commands):
        line = Template(strip_comment(raw)).substitute(env["vars"])
        if echo:
            print(f"$ {line}", file=sys.stderr)
        background = line.endswith("&")
        argv = shlex.split(line.rstrip("&"))
        if background:
            if argv[:2] != ["drsearch", "serve"] or "--database" not in argv:
                raise AssertionError(f"command {n}: only `drsearch serve --database FILE ... &` runs in the "
                                     f"background here, not {line!r}")
            database = work / argv[argv.index("--database") + 1]
            server = env["stack"].enter_context(ServeProcess(database, log=work / "serve.log"))
            env["vars"]["CORPUS"] = server.url
            continue
        if argv[0] == "mkdir" and argv[1] == "-p":
            for d in argv[2:]:
                (work / d).mkdir(parents=True, exist_ok=True)
            continue
        if argv[0] == "cp" and len(argv) == 3:
            shutil.copyfile(work / argv[1], work / argv[2])
            continue
        if argv[0] != "drsearch":
            raise AssertionError(f"command {n}: {argv[0]!r} is not a command this runner knows")
        buf, err = io.StringIO(), io.StringIO()
        with contextlib.chdir(work), contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err):
            rc = main(argv[1:], out=buf)
        if rc != 0:
            raise AssertionError(f"command {n} ({line}) exited {rc}: {err.getvalue()[-2000:]}")
        outputs[str(n)] = buf.getvalue()
    return outputs


def prepare(work: Path) -> None:
    work.mkdir(parents=True, exist_ok=True)
    link = work / "data"
    if not link.exists():
        link.symlink_to(DATA, target_is_directory=True)


def cli(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m tests.benchmark.generate.openbiorq.e2e WORKDIR", file=sys.stderr)
        return 2
    work = Path(argv[0]).resolve()
    prepare(work)
    with servers(work) as env:
        run_commands(documented_commands(), env, echo=True)
    print(f"done: the frozen, graded, replayable benchmark is in {work / 'obrq'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(cli(sys.argv[1:]))
