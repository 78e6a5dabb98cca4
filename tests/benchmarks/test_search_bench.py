"""benchmarks/search_bench.py: the table of every configuration, the threads throughput mode,
its options; and (marked ``bench``, deselected by default) a tiny run end to end."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import search_bench as sb

from .conftest import BENCH


def _lat(ours: tuple[float, float], pisa: tuple[float, float] | None,
         ours100: float, pisa100: float | None) -> dict[str, Any]:
    """latency_ms of one class: ranked k=10 (p50, p99) and k=100 p50 of ours and PISA."""
    k10: dict[str, Any] = {"ours": {"p50": ours[0], "p99": ours[1]},
                           "tantivy": {"p50": 2 * ours[0], "p99": 2 * ours[1]}}
    k100: dict[str, Any] = {"ours": {"p50": ours100, "p99": 3 * ours100},
                            "tantivy": {"p50": 2 * ours100, "p99": 6 * ours100}}
    if pisa is not None and pisa100 is not None:
        k10["pisa"] = {"p50": pisa[0], "p99": pisa[1]}
        k10["pisa_bmw"] = {"p50": 1.1 * pisa[0], "p99": 1.1 * pisa[1]}
        k100["pisa"] = {"p50": pisa100, "p99": 3 * pisa100}
        k100["pisa_bmw"] = {"p50": pisa100, "p99": 3 * pisa100}
    return {"ranked_k10": k10, "ranked_k100": k100}


def _run(docs: int, vocab: str, lat: dict[str, dict[str, Any]],
         fts: dict[str, tuple[int, int]], qps: dict[str, float]) -> dict[str, Any]:
    def t(q: float, threads: int = 1) -> dict[str, Any]:
        return {"qps": q, "threads": threads}

    return {
        "corpus": {"documents": docs}, "builds": {"ours": {"chunks": 8 * docs}},
        "vocabulary": vocab, "latency_ms": lat["normal"], "latency_ms_by_class": lat,
        "fts5": {"same_docs": fts["normal"][0], "queries": fts["normal"][1]},
        "fts5_by_class": {c: {"same_docs": s, "queries": n} for c, (s, n) in fts.items()},
        "throughput": {"ours": {"1": t(qps["1"]), "2": t(qps["2"]),
                                "threads": t(qps["threads"], 2)},
                       "burn": {"1": t(100.0), "2": t(199.0)},
                       "burn_nogil": {"1": t(100.0), "threads": t(198.0, 2)}},
    }


def _rows(table: str) -> list[list[str]]:
    return [line.split() for line in table.splitlines()]


def test_the_table_has_a_row_per_scale_vocabulary_and_class_with_each_ratio_against_its_goal() -> None:
    normal = _run(1000, "normal",
                  {"normal": _lat((0.9, 1.4), (1.0, 2.0), 1.6, 2.0)},  # 0.90 ok, 0.70 ok, 0.80 ok
                  {"normal": (299, 300)}, {"1": 100.0, "threads": 190.0, "2": 188.0})
    # JSON order: the classes come back sorted, the table keeps normal, entity, rare
    large = json.loads(json.dumps(_run(
        4000, "large",
        {"normal": _lat((1.1, 1.5), (1.0, 2.0), 1.7, 2.0),  # 1.10 NO, 0.75 NO, 0.85 NO
         "entity": _lat((1.4, 3.0), (1.0, 2.0), 1.0, 1.0),  # 1.40 ok, 1.50 ok, 1.00 ok
         "rare": _lat((0.4, 0.8), (0.25, 0.5), 0.4, 0.25)},  # 1.60 NO, 1.60 NO, 1.60 NO
        {"normal": (298, 300), "entity": (100, 100), "rare": (100, 100)},
        {"1": 100.0, "threads": 120.0, "2": 195.0}), sort_keys=True))
    table = sb.scale_table([normal, large])
    rows = [r for r in _rows(table) if r and r[0].replace(",", "").isdigit()]
    lat_rows, tp_rows = rows[:4], rows[4:]
    assert [r[:4] for r in lat_rows] == [["1,000", "8,000", "normal", "normal"],
                                         ["4,000", "32,000", "large", "normal"],
                                         ["4,000", "32,000", "large", "entity"],
                                         ["4,000", "32,000", "large", "rare"]]
    # n, 8 latencies, then three "ratio mark" pairs and the FTS5 agreement
    assert lat_rows[0][4:6] == ["300", "0.900"]
    assert lat_rows[0][13:] == ["0.90", "ok", "0.70", "ok", "0.80", "ok", "299/300", "ok"]
    assert lat_rows[1][13:] == ["1.10", "NO", "0.75", "NO", "0.85", "NO", "298/300", "NO"]
    assert lat_rows[2][13:] == ["1.40", "ok", "1.50", "ok", "1.00", "ok", "100/100", "ok"]
    assert lat_rows[3][13:] == ["1.60", "NO", "1.60", "NO", "1.60", "NO", "100/100", "ok"]
    # throughput: 1 thread, T, T threads, ratio + mark, control, 2 procs, ratio + mark, control
    assert tp_rows[0][:12] == ["1,000", "normal", "100", "2", "190", "1.90", "ok", "1.98", "188",
                               "1.88", "NO", "1.99"]
    assert tp_rows[1][5:7] == ["1.20", "NO"] and tp_rows[1][9:11] == ["1.95", "ok"]
    assert tp_rows[0][-5:] == ["100", "/", "95", "/", "94"]  # q/s per core: 1t / Tt / 2p


def test_without_pisa_its_cells_are_dashes_and_the_table_says_so() -> None:
    run = _run(500, "normal", {"normal": _lat((0.5, 1.0), None, 0.8, None)},
               {"normal": (300, 300)}, {"1": 100.0, "threads": 150.0, "2": 150.0})
    table = sb.scale_table([run])
    row = next(r for r in _rows(table) if r and r[0] == "500")
    assert row[5:8] == ["0.500", "1.000", "1.000"] and row[8:11] == ["-", "-", "-"]
    assert row[13:16] == ["-", "-", "-"]
    assert "no PISA in this run" in table


def test_threads_share_one_engine_and_every_thread_serves(sample_index: Path) -> None:
    queries = ["climate change", "football transfer", "election results", "new phone"]
    two = sb.throughput("ours", sample_index, {}, queries, 1, 0.3, threads=2)
    assert (two["procs"], two["threads"]) == (1, 2)
    assert two["queries"] > 0 and two["cpu_qps"] > 0 and two["cores_busy"] > 0
    assert len(two["private_bytes"]) == 1  # one process
    ctl = sb.throughput("burn_nogil", sample_index, {}, queries, 1, 0.2, threads=2)
    assert ctl["threads"] == 2 and ctl["queries"] > 0
    assert two["scorer"] == sb._scorer_kind("ours", str(sample_index)) and ctl["scorer"] is None
    # what the timed window cost, per query: the process's CPU (every thread's), its switches
    assert two["cpu_us_per_query"] == pytest.approx(two["user_us_per_query"] + two["sys_us_per_query"])
    window_cpu_s = two["cpu_us_per_query"] * two["queries"] / 1e6
    assert 0 < window_cpu_s <= 2 * 0.3 * 2  # two threads' CPU over a ~0.3 s window, with slack
    assert min(two[f"{k}_per_query"] for k in ("waits", "preempted", "faults")) >= 0
    # the kernel's GIL account: a complete search lets the GIL go about once; the rest of a
    # thread's time is the GIL held (not for the loops, which are not ours)
    if two["scorer"].startswith("c"):
        assert two["gil_releases_per_query"] > 0.5 and two["nogil_us_per_query"] > 0
        assert 0 < two["gil_held_share"] < 1 and two["gil_held_us_per_query"] > 0
        assert two["gil_wait_us_per_query"] >= 0
    assert "gil_held_share" not in ctl


def test_per_query_costs_sum_the_processes_and_divide_by_every_query() -> None:
    def proc(queries: int, user: float, sys_s: float, waits: int) -> dict[str, Any]:
        return {"queries": queries, "rusage": {"user_s": user, "sys_s": sys_s, "waits": waits,
                                               "preempted": 1, "faults": 4}}
    got = sb.per_query_costs([proc(100, 0.05, 0.01, 30), proc(300, 0.15, 0.03, 10)])
    assert got["user_us_per_query"] == pytest.approx(500.0)
    assert got["sys_us_per_query"] == pytest.approx(100.0)
    assert got["cpu_us_per_query"] == pytest.approx(600.0)
    assert (got["waits_per_query"], got["preempted_per_query"], got["faults_per_query"]) == \
        (pytest.approx(0.1), pytest.approx(0.005), pytest.approx(0.02))


def test_the_cost_table_gives_each_mode_its_cpu_change_and_waits_and_dashes_for_old_runs() -> None:
    run = _run(1000, "normal", {"normal": _lat((0.9, 1.4), None, 1.6, None)},
               {"normal": (300, 300)}, {"1": 100.0, "threads": 190.0, "2": 196.0})
    for m, cpu, waits in (("1", 500.0, 0.0), ("threads", 540.0, 0.19), ("2", 505.0, 0.01)):
        run["throughput"]["ours"][m].update(cpu_us_per_query=cpu, waits_per_query=waits)
    run["throughput"]["ours"]["threads"].update(gil_held_us_per_query=100.0, gil_held_share=0.18,
                                                nogil_us_per_query=430.0, gil_wait_us_per_query=22.5)
    old = _run(4000, "large", {"normal": _lat((0.9, 1.4), None, 1.6, None)},
               {"normal": (300, 300)}, {"1": 100.0, "threads": 190.0, "2": 196.0})
    rows = [r for r in _rows(sb.cost_table([run, old])) if r and r[0].replace(",", "").isdigit()]
    assert rows[0] == ["1,000", "normal", "500", "/", "0.00", "540", "(+8%)", "/", "0.19",
                       "505", "(+1%)", "/", "0.01"]
    assert rows[1] == ["4,000", "large", "-", "-", "-"]
    # the GIL account's table: only the mode that has one gets cells
    assert rows[2] == ["1,000", "normal", "-", "100", "(18%)", "/", "430", "/", "22.5", "-"]
    assert rows[3] == ["4,000", "large", "-", "-", "-"]
    line = sb.cost_line(run["throughput"]["ours"])
    assert line is not None and "1 thread 500 / 0.00, 2 threads 540 (+8%) / 0.19, 2 procs 505 (+1%)" in line
    assert "waiting to take it back: 2 threads 100 (18%) / 430 / 22.5" in line
    assert sb.cost_line(old["throughput"]["ours"]) is None


def test_the_gil_account_splits_each_threads_time_per_query() -> None:
    def proc(queries: int, seconds: float, free: float, wait: float, releases: int) -> dict[str, Any]:
        return {"queries": queries, "thread_seconds": seconds, "gil": [free, wait, releases]}
    got = sb.gil_account([proc(1000, 1.0, 0.7, 0.05, 950), proc(1000, 1.0, 0.75, 0.0, 1000)])
    assert got is not None
    assert got["gil_held_us_per_query"] == pytest.approx(250.0)  # (2 s - 1.45 - 0.05) / 2000
    assert got["nogil_us_per_query"] == pytest.approx(725.0)
    assert got["gil_wait_us_per_query"] == pytest.approx(25.0)
    assert got["gil_releases_per_query"] == pytest.approx(0.975)
    assert got["gil_held_share"] == pytest.approx(0.25)
    assert sb.gil_account([{"queries": 1, "thread_seconds": 1.0, "gil": None}]) is None


def test_results_are_written_whole_after_each_configuration(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    out.write_text("{}")
    sb.write_results(out, [{"corpus": {"documents": 1}}], 4)
    assert json.loads(out.read_text()) == {"configurations": 4, "runs": [{"corpus": {"documents": 1}}]}
    assert [p.name for p in tmp_path.iterdir()] == ["bench.json"]  # no temporary file left


def test_a_serving_process_that_ranks_otherwise_stops_the_run(sample_index: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A serving process whose scorer is not this process's (its C kernel refused: the code or
    the kernel changed during the run) must not pass for a throughput result."""
    real = sb._scorer_kind("ours", str(sample_index))
    monkeypatch.setattr(sb, "_scorer_kind", lambda kind, index: "other" if kind == "ours" else None)
    with pytest.raises(SystemExit, match=f"ranked with scorer {real}, this process with other"):
        sb.throughput("ours", sample_index, {}, ["climate change"], 1, 0.2)


@pytest.mark.parametrize("argv", [["--docs", "100,x"], ["--docs", "0"], ["--docs", "100,100"],
                                  ["--scales", "one"], ["--vocabulary", "normal,huge"],
                                  ["--threads", "0"], ["--entity-rate", "0"],
                                  ["--engines", "ours,pisa"]])
def test_bad_options_are_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        sb.main(argv)
    assert exc.value.code == 2
    assert "error:" in capsys.readouterr().err


def test_scales_are_multiples_of_dr256() -> None:
    ap = sb.argparse.ArgumentParser()
    ns = sb.argparse.Namespace(scales="1,4", docs="ignored")
    assert sb._docs_list(ap, ns) == [30_318, 121_272]
    assert sb._docs_list(ap, sb.argparse.Namespace(scales=None, docs="500,1000")) == [500, 1000]


@pytest.mark.bench
def test_a_tiny_run_prints_every_configuration_and_the_table(tmp_path: Path) -> None:
    """Two scales x both vocabularies end to end (builds, latency, FTS5, throughput): ~3 min."""
    out = tmp_path / "bench.json"
    env = {**os.environ, "DRSEARCH_BENCH_CACHE": str(tmp_path / "cache")}
    proc = subprocess.run(
        [sys.executable, str(BENCH / "search_bench.py"), "--docs", "60,90", "--vocabulary",
         "normal,large", "--entity-types", "20000", "--queries", "12", "--entity-queries", "6",
         "--duration", "0.3", "--repeats", "1", "--rounds", "1", "--warmup", "2",
         "--engines", "ours,tantivy,pisa", "--json", str(out)],
        capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    runs = json.loads(out.read_text())["runs"]
    assert [(r["corpus"]["documents"], r["vocabulary"]) for r in runs] == [
        (60, "synthetic15k"), (60, "large"), (90, "synthetic15k"), (90, "large")]
    assert runs[1]["classes"] == {"normal": 12, "entity": 6, "rare": 6, "single": 6, "pair-rare": 6}
    assert runs[1]["corpus"]["entity_types"] == 20000
    table = proc.stdout[proc.stdout.index("all configurations:"):]
    for docs, vocab, cls in [("60", "synthetic15k", "normal"), ("60", "large", "entity"),
                             ("90", "large", "rare"), ("60", "large", "single"), ("90", "large", "pair-rare")]:
        assert any(line.split()[:4:2] == [docs, vocab] and line.split()[3] == cls
                   for line in table.splitlines() if len(line.split()) > 4), (docs, vocab, cls)
    assert "throughput (complete k=10, q/s)" in table
    if "pisa skipped" not in proc.stderr:  # the fixed cost's classes against PISA's bare call
        assert "single: ours/PISA-q8 MaxScore ranked_k10 p50" in proc.stdout
        assert any(line.startswith("pair-rare: ") and "engine-only call" in line and "goal <= 1.0x" in line
                   for line in proc.stdout.splitlines())
    assert (tmp_path / "cache").is_dir()
    # the CPUs' placement sampled before each of ours' throughput runs (where it can be)
    if shutil.which("cc") and {0, 1} <= os.sched_getaffinity(0):
        ours = runs[0]["throughput"]["ours"]
        assert all(len(ours[m]["all_vcpu_round_trip_ns"]) == 1 and ours[m]["vcpu_round_trip_ns"] > 0
                   for m in ("1", "threads", "2"))
        assert "the two CPUs' cache-line round trip before each run, ns" in proc.stdout


def test_the_placement_line_lists_each_modes_samples_and_none_without() -> None:
    ours = {"1": {"all_vcpu_round_trip_ns": [101.2, 99.0]}, "threads": {"threads": 2, "all_vcpu_round_trip_ns": [430.0, 98.6]},
            "2": {"all_vcpu_round_trip_ns": [97.0, 410.4]}}
    line = sb.placement_line(ours)
    assert line is not None and line.endswith("1 thread 101 / 99; 2 threads 430 / 99; 2 procs 97 / 410")
    assert sb.placement_line({"1": {}, "threads": {"threads": 2}, "2": {}}) is None


def test_build_time_and_file_size_are_judged_at_dr256_scale_only() -> None:
    assert sb.scale_verdict("file_bytes", 5e9, 30_318) == "FAIL"
    assert sb.scale_verdict("file_bytes", 3e9, 30_318) == "PASS"
    assert "info" in sb.scale_verdict("file_bytes", 5e9, 121_272)
    assert "info" in sb.scale_verdict("build_seconds", 900.0, 121_272)
    assert sb.scale_verdict("build_peak_rss_bytes", 3e9, 121_272) == "FAIL"  # at any scale


def test_pisa_is_skipped_with_a_reason_where_the_wheel_is_missing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "pyterrier_pisa" else real(name, *a))
    module, why = sb.load_pisathon()
    assert module is None and "pyterrier-pisa is not installed" in why


def test_the_file_line_names_only_the_peers_that_were_built() -> None:
    builds = {"tantivy": {"bytes": 2 << 20}, "bm25s": None, "PISA": {"bytes": 3 << 20}}
    assert sb._peers(builds, "bytes") == "   (tantivy 2 MiB; PISA 3 MiB)"  # bm25s left out at 4x
    assert sb._peers({"bm25s": None}, "bytes") == ""


def test_the_peak_rss_line_names_each_peer_built_pisa_included() -> None:
    """Without bm25s (left out at 4x, or not asked for) the line once read ``PASS tantivy
    95 MiB)``, and it never gave PISA's build peak."""
    ours, tv, pisa = {"peak_rss_bytes": 100 << 20}, {"peak_rss_bytes": 95 << 20}, {
        "peak_rss_bytes": 3_430_000_000}
    assert sb._rss_peers({"ours": ours, "tantivy": tv, "pisa": pisa}) == (
        "   (tantivy 95 MiB; PISA 3.43 GB)")
    assert sb._rss_peers({"ours": ours, "tantivy": tv, "bm25s": {"peak_rss_bytes": 550 << 20}}) == (
        "   (bm25s 550 MiB = ours x5.50; tantivy 95 MiB)")
    assert sb._rss_peers({"ours": ours, "bm25s": None}) == ""


def test_a_child_reports_its_own_peak_rss_not_its_parents(tmp_path: Path) -> None:
    """Children started from a process holding a large allocation report their own peak:
    Linux's ``ru_maxrss`` would carry the parent's (pre-exec) size into the child."""
    script = (
        "import subprocess, sys\n"
        "ballast = bytearray(400 * 1024 * 1024)\n"
        "ballast[::4096] = b'x' * len(ballast[::4096])  # touch every page: resident\n"
        "child = ('import search_bench as sb; print(sb._max_rss_bytes())')\n"
        "out = subprocess.run([sys.executable, '-c', child], capture_output=True, text=True,"
        " check=True)\n"
        "print(out.stdout.strip())\n"
    )
    bench_dir = Path(sb.__file__).resolve().parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(bench_dir), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, env=env, cwd=tmp_path)
    child_peak = int(out.stdout.strip())
    assert child_peak < 300 * 1024 * 1024, child_peak


def test_reuse_keeps_only_what_the_same_code_built_unless_told(tmp_path: Path) -> None:
    """``--reuse`` rebuilds indexes of other code; ``--reuse-other-code`` keeps them and names
    that code; a PISA index of the old plain-text feed (no term-code file) is rebuilt either way."""
    old, new = {"module": "m", "commit": "a" * 40}, {"module": "m", "commit": "b" * 40}
    f, pisa = tmp_path / "builds.json", tmp_path / "pisa"
    pisa.mkdir()
    f.write_text(json.dumps({"source": old, "ours": {"chunks": 3}, "pisa": {"chunks": 3}}))
    said: list[str] = []
    assert sb.reused_builds(tmp_path / "absent.json", new, pisa, said.append) == {}
    assert sb.reused_builds(f, new, pisa, said.append) == {} and "rebuilding" in said[-1]
    kept = sb.reused_builds(f, new, pisa, said.append, other_code=True)
    assert kept["built_by"] == old and "ours" in kept and "pisa" not in kept
    assert "aaaaaaaaaa" in said[-2] and sb.PISA_TERMS_FILE in said[-1]
    (pisa / sb.PISA_TERMS_FILE).write_text("[]")
    assert "pisa" in sb.reused_builds(f, old, pisa, said.append)
    f.write_text(json.dumps(kept))  # reused twice: still the code that built them
    assert sb.reused_builds(f, {"commit": "c" * 40}, pisa, said.append, other_code=True)["built_by"] == old
