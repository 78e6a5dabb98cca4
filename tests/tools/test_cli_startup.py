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
