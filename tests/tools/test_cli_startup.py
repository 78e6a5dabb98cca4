"""Starting ``drsearch`` does not import what only some commands need.

Every command builds the whole parser first (``drsearch --help`` lists every verb), so a
module-level import of a heavy dependency anywhere under a verb's ``register`` is paid by
``drsearch search`` too: ``scipy.stats`` alone cost about a second per call, and the agents'
HTTP client, imported through the generators' option definitions, about half a second.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

_PROBE = """
import json, sys
from drsearch.tools.cli import make_parser
make_parser()
print(json.dumps(sorted(m for m in ("scipy", "scipy.stats") if m in sys.modules)))
"""


def test_building_the_parser_does_not_import_scipy() -> None:
    done = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == []


_EXTRAS_PROBE = """
import json, sys
from drsearch.tools.cli import make_parser
from drsearch.tools.extras import EXTRAS
make_parser()
print(json.dumps(sorted({m for ms in EXTRAS.values() for m in ms} & {k.partition(".")[0] for k in sys.modules})))
"""


def test_building_the_parser_imports_no_extras_module() -> None:
    # all installed here: the parser (every verb's options) still imports none of them, so
    # `drsearch --help` and the core commands pay for no web framework, HTTP client or SDK
    done = subprocess.run([sys.executable, "-c", _EXTRAS_PROBE], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == []


def test_the_statistics_still_use_scipy_when_called() -> None:
    from drsearch.benchmark.stats import spearman, wilson_interval

    lo, hi = wilson_interval(5, 10)
    assert 0.23 < lo < 0.24 and 0.76 < hi < 0.77  # z = 1.959964 from scipy's normal quantile
    assert spearman([1, 2, 3], [1, 3, 2]) == 0.5
    assert "scipy.stats" in sys.modules


# What no `drsearch` process pays for until a command needs it (a fresh
# `drsearch search` answers in <= 0.5 s): the web stack, HTTP clients, model runtimes,
# pydantic (the build settings, the benchmark's dataset rows) and the layers above the index
# (drsearch.dense is not among them: `drsearch search` picks its retriever through it).
COSTLY = ("fastapi", "starlette", "uvicorn", "httpx", "onnxruntime", "pydantic", "pydantic_core", "scipy",
          "tqdm", "orjson", "trafilatura", "selectolax", "http.client", "drsearch.server", "drsearch.release",
          "drsearch.corpus", "drsearch.benchmark", "drsearch.agents")

_COSTLY_PROBE = """
import json, sys
from drsearch.tools.cli import main, make_parser
make_parser()
if len(sys.argv) > 1:
    code = main(sys.argv[1:])
    assert code == 0, code
print(json.dumps(sorted(m for m in COSTLY if m in sys.modules)), file=sys.stderr)
""".replace("COSTLY", repr(COSTLY))


def _costly_modules(*argv: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", _COSTLY_PROBE, *argv], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    loaded: list[str] = json.loads(done.stderr.strip().splitlines()[-1])
    return loaded


def test_building_the_parser_imports_nothing_costly() -> None:
    assert _costly_modules() == []


def test_drsearch_search_imports_nothing_costly(sample_index: Path) -> None:
    # the engine's own numpy and SQLite, and nothing more (the answer printed as a user sees it)
    assert _costly_modules("search", "--database", str(sample_index), "tide pools") == []
    assert _costly_modules("search", "--database", str(sample_index), "--json", "tide pools") == []


def test_score_choices_are_the_benchmark_layers() -> None:
    # score_cli spells them itself so that the parser does not import the benchmark layer
    from drsearch.benchmark import ANSWER_TYPES, DATASET_KINDS
    from drsearch.tools import score_cli

    assert score_cli.DATASET_KINDS == DATASET_KINDS
    assert score_cli.ANSWER_TYPES == ANSWER_TYPES
