"""benchmarks/overhead_ab.py: two source trees' searches interleaved on one index, their
answers compared, per-class latencies and stages reported; bad arguments refused in one line."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import overhead_ab
import pytest

from .conftest import BENCH

REPO = BENCH.parent


def _is_checkout() -> bool:
    if shutil.which("git") is None:
        return False
    probe = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--verify", "--quiet", "HEAD"],
                           capture_output=True)
    return probe.returncode == 0


@pytest.mark.skipif(not _is_checkout(), reason="needs a git checkout (the 'before' tree is a commit)")
def test_head_against_the_worktree_answers_identically(sample_index: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    queries = tmp_path / "q.json"
    queries.write_text(json.dumps({"some": ["video game streaming", "Stadia launch price"],
                                   "none": ["zzqqxx"]}))
    report = tmp_path / "ab.json"
    rc = overhead_ab.main(["--index", str(sample_index), "--queries", str(queries), "--before", "HEAD",
                           "--rounds", "2", "--warmup", "1", "--stages", "--json", str(report)])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "4/4" in out and "2/2" in out  # every query run answered alike by both trees
    data = json.loads(report.read_text())
    assert set(data["report"]) == {"some", "none"}
    for cls in data["report"].values():
        assert cls["mismatched"] == 0
        for tree in (k for k in cls if k not in ("n", "mismatched")):
            assert cls[tree]["p50_ms"] > 0
            assert set(cls[tree]["stages_p50_ms"]) == set(overhead_ab.STAGES)


def test_bad_arguments_are_one_line(sample_index: Path, tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    queries = tmp_path / "q.json"
    queries.write_text("[]")
    with pytest.raises(SystemExit, match="no such index"):
        overhead_ab.main(["--index", str(tmp_path / "none.sqlite3"), "--queries", str(queries)])
    if _is_checkout():
        assert overhead_ab.main(["--index", str(sample_index), "--queries", str(queries),
                                 "--before", "no-such-commit"]) == 2
        assert capsys.readouterr().err.strip().endswith("not a commit of " + str(REPO))


def test_digest_covers_the_scores_exact_bits() -> None:
    from drsearch.contract.models import Hit

    a = Hit(1, "d", "u", "t", 1.0, 0, "", "")
    b = a._replace(score=1.0 + 2**-52)
    assert overhead_ab.digest([a]) != overhead_ab.digest([b])
    assert overhead_ab.digest([a]) == overhead_ab.digest([a._replace(title="other")])


@pytest.mark.skipif(not _is_checkout(), reason="needs a git checkout (the 'before' tree is a commit)")
def test_before_kernel_puts_that_module_in_the_before_tree(sample_index: Path, tmp_path: Path) -> None:
    """``--before-kernel SO``: the before tree imports SO under the kernel's module name (so a
    commit's own kernel build can be compared with this checkout's), never this checkout's."""
    built = sorted((REPO / "src" / "drsearch" / "index").glob("_kernels*.so"))
    if not built:
        pytest.skip("the C kernel is not built in this checkout")
    fake = tmp_path / "other-kernel.so"
    fake.write_bytes(b"not this checkout's kernel")
    src = overhead_ab.before_tree("HEAD", tmp_path / "tree", fake)
    copied = src / "drsearch" / "index" / built[0].name
    assert copied.read_bytes() == fake.read_bytes()
    queries = tmp_path / "q.json"
    queries.write_text("[]")
    with pytest.raises(SystemExit, match="no such file"):
        overhead_ab.main(["--index", str(sample_index), "--queries", str(queries),
                          "--before-kernel", str(tmp_path / "missing.so")])
