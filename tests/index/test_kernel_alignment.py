"""The C kernel reads posting lists where the file format puts them: block maxima start at byte
12*df of a posting BLOB, only 4-byte aligned when df is odd. The kernel, compiled with
UndefinedBehaviorSanitizer's alignment check (any misaligned load aborts), ranks real queries
over such lists exactly as numpy does; and a misaligned buffer where the kernel needs an
aligned one is refused with ValueError, never read."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import numpy as np
import pytest

from drsearch.index import build, read_jsonl

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data" / "sample" / "docs.jsonl"
KERNEL = ROOT / "src" / "drsearch" / "index" / "_kernels.c"
GIL_WORD = KERNEL.with_name("_gil.c")  # the extension's second source (setup.py)

# Common sparse terms of the sample with odd df > 64 (so with block maxima at an odd multiple
# of 4 bytes into their BLOB): we 129, about 125, can 121, their 115, over 111, who 111, ...
QUERIES = ["we about can", "their over who what", "would work were now", "how those take them",
           "we", "can if their make over who what into would no work", "back even month last"]

_RUN = """
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("drsearch.index._kernels", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
sys.modules["drsearch.index._kernels"] = mod
from drsearch.index import Engine
scoring = importlib.import_module("drsearch.index.scoring")
scoring.BLOCK_ROWS = 64  # windows of 64 rowids: many per query, so block maxima are read
out = {}
for name, kw in (("maxscore", {"pruning": "always"}), ("blocks", {"pruning": "never"}),
                 ("numpy", {"native": False})):
    with Engine.open(sys.argv[2], **kw) as e:
        out[name] = [[(h.docid, h.score) for h in e.search(q, k).hits]
                     for q in json.loads(sys.argv[3]) for k in (1, 3, 10)]
        if name != "numpy":
            assert e.stats()["scorer"] == "c-" + name, e.stats()["scorer"]
print(json.dumps(out))
"""


def _compile_with_ubsan(tmp: Path) -> Path:
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.skip("no C compiler")
    flags = ["-fsanitize=alignment", "-fno-sanitize-recover=alignment"]
    trivial = tmp / "trivial.c"
    trivial.write_text("int main(void) { return 0; }\n")
    p = subprocess.run([cc, *flags, str(trivial), "-o", str(tmp / "trivial")], capture_output=True, text=True,
                       timeout=60)
    if p.returncode != 0:  # the compiler lacks the sanitizer: nothing to check with
        pytest.skip(f"{cc} cannot build with -fsanitize=alignment: {p.stderr.strip()[-200:]}")
    so = tmp / f"_kernels{sysconfig.get_config_var('EXT_SUFFIX')}"
    p = subprocess.run([cc, "-shared", "-fPIC", "-O2", "-ffp-contract=off", *flags,
                        f"-I{sysconfig.get_paths()['include']}", str(KERNEL), str(GIL_WORD), "-o", str(so)],
                       capture_output=True, text=True, timeout=120)
    # the kernel itself failing to build is a defect here, never a skip
    assert p.returncode == 0, f"{cc} could not build the kernel with -fsanitize=alignment: {p.stderr[-500:]}"
    return so


def test_the_kernel_ranks_odd_df_lists_without_a_misaligned_load(tmp_path: Path) -> None:
    import json

    so = _compile_with_ubsan(tmp_path)
    db = tmp_path / "sample.sqlite3"
    build(read_jsonl(SAMPLE), db)
    p = subprocess.run([sys.executable, "-c", _RUN, str(so), str(db), json.dumps(QUERIES)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and "runtime error" not in p.stderr, p.stderr[-2000:]
    out = json.loads(p.stdout)
    assert out["maxscore"] == out["blocks"] == out["numpy"]
    assert all(out["numpy"])  # every query ranked something


def _kernels() -> object:
    try:
        from drsearch.index import _kernels  # type: ignore[attr-defined]
    except ImportError:
        pytest.skip("the C kernel is not built")
    return _kernels


@pytest.mark.parametrize("which", ["chunks", "impacts"])
def test_a_misaligned_list_buffer_is_refused(which: str) -> None:
    kernels: object = _kernels()
    ids = np.array([1, 2, 3], dtype=np.uint32)
    imps = np.array([0.5, 0.25, 0.125])
    raw = np.zeros(8 * 4 + 1, dtype=np.uint8)  # a view one byte in: misaligned for any type
    if which == "chunks":
        bad = raw[1 : 1 + 12]
        bad[:] = np.frombuffer(ids.tobytes(), dtype=np.uint8)
        args = ([bad], [imps])
    else:
        bad = raw[1 : 1 + 24]
        bad[:] = np.frombuffer(imps.tobytes(), dtype=np.uint8)
        args = ([ids], [bad])
    n_rows = 4
    docs = np.arange(n_rows + 1, dtype=np.int32)
    buf = np.zeros(64, dtype=np.float64)
    out_ids = np.zeros(n_rows + 1, dtype=np.int64)
    out_scores = np.zeros(n_rows + 1, dtype=np.float64)
    with pytest.raises(ValueError, match=f"{which}: not 8-byte aligned|{which}: not 4-byte aligned"):
        kernels.rank_blocks(*args, n_rows, None, docs, 3, -1.0, buf, out_ids,  # type: ignore[attr-defined]
                            out_scores, 0.0)
    # The same lists, aligned: ranked.
    n, _, _ = kernels.rank_blocks([ids], [imps], n_rows, None, docs, 3, -1.0, buf,  # type: ignore[attr-defined]
                                  out_ids, out_scores, 0.0)
    assert n == 3 and out_ids[:3].tolist() == [1, 2, 3]
