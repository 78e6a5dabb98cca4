"""Human validation: ``drsearch generate drbencher annotate`` (the paper's sheet for a stratified
sample) and ``... agreement`` (raw agreement, Krippendorff's α, the error-taxonomy tally), with
α cross-checked on Krippendorff's own reliability-data examples and bad sheets refused."""

from __future__ import annotations

import copy
import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

from drsearch.benchmark.generate.drbencher.annotation import COLUMNS, krippendorff_alpha, stratified_sample
from drsearch.tools.cli import main

from ....helpers import DATA
from .test_tables import META


def test_krippendorff_alpha_on_krippendorffs_textbook_examples() -> None:
    """Krippendorff (2011), "Computing Krippendorff's alpha-reliability": (A) binary data, two
    observers, ten units: α = 1 − (n − 1)·o01 / (n0·n1) = 1 − 19·4 / (14·6) = 0.095; (C) nominal data,
    four observers, twelve units with missing values: α = 0.743."""
    a = ["0", "1", "0", "0", "0", "0", "0", "0", "1", "0"]
    b = ["1", "1", "1", "0", "0", "1", "0", "0", "0", "0"]
    assert krippendorff_alpha([a, b]) == pytest.approx(1 - 19 * 4 / (14 * 6), abs=1e-12)
    n = None
    observers = [["1", "2", "3", "3", "2", "1", "4", "1", "2", n, n, n],
                 ["1", "2", "3", "3", "2", "2", "4", "1", "2", "5", n, "3"],
                 [n, "3", "3", "3", "2", "3", "4", "2", "2", "5", "1", n],
                 ["1", "2", "3", "3", "2", "4", "4", "1", "2", "5", "1", n]]
    assert krippendorff_alpha(observers) == pytest.approx(0.743, abs=5e-4)
    assert krippendorff_alpha([["yes", "yes"], ["yes", "yes"]]) is None  # one label: undefined


def gen_dir(root: Path, copies: dict[str, int]) -> Path:
    """A generator directory whose questions.jsonl holds ``copies[q]`` copies of the fixture's q
    (ids q1-0, q1-1, ...), DR-256 rows as the sample's."""
    template = json.loads((DATA / "sample/questions.jsonl").read_text().splitlines()[0])
    rows = []
    for q, k in copies.items():
        for i in range(k):
            row, meta = copy.deepcopy(template), copy.deepcopy(META[q])
            row["label"] = "1000 days" if meta["domain"] == "history" else "40.17"
            row["metadata"].update({"category": meta.pop("domain"), "qid": f"{q}-{i}", "question": f"Q {q}-{i}?"})
            row["metadata"]["drbencher"] = {**meta, "unit": "days" if q == "q3" else "s/day",
                                            "computation": "86400 × ..."}
            rows.append(row)
    root.mkdir()
    (root / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


def cli(*argv: str) -> tuple[int, str]:
    buf = io.StringIO()
    return main(list(argv), buf), buf.getvalue()


def test_the_sample_is_stratified_by_domain_and_deterministic(tmp_path: Path) -> None:
    gen = gen_dir(tmp_path / "gen", {"q1": 6, "q2": 2, "q3": 4})  # geophysical 8, history 4
    rows = [json.loads(line) for line in (gen / "questions.jsonl").read_text().splitlines()]
    picked = stratified_sample(rows, 6, seed=3)
    domains = [r["metadata"]["category"] for r in picked]
    assert domains.count("geophysical") == 4 and domains.count("history") == 2  # 6 × 8/12, 6 × 4/12
    assert [r["metadata"]["qid"] for r in stratified_sample(rows, 6, seed=3)] == [r["metadata"]["qid"] for r in picked]
    seeds = {tuple(r["metadata"]["qid"] for r in stratified_sample(rows, 6, seed=s)) for s in range(8)}
    assert len(seeds) > 1  # the seed decides which items, not how many per domain
    one = stratified_sample(rows, 2, seed=0)  # n covers both domains: one each, not 2 of the larger
    assert sorted(r["metadata"]["category"] for r in one) == ["geophysical", "history"]
    assert len(stratified_sample(rows, None, seed=0)) == 12


def test_annotate_writes_the_papers_sheet(tmp_path: Path) -> None:
    gen = gen_dir(tmp_path / "gen", {"q1": 2, "q2": 1, "q3": 1})
    rc, text = cli("generate", "drbencher", "annotate", str(gen), "--out", str(tmp_path / "s.csv"),
                   "--sample", "3", "--seed", "5")
    assert rc == 0 and "3 item(s)" in text
    sheet = list(csv.DictReader((tmp_path / "s.csv").open(encoding="utf-8")))
    assert tuple(sheet[0]) == COLUMNS and len(sheet) == 3
    assert {r["domain"] for r in sheet} == {"geophysical", "history"}
    assert all(r[c] == "" for r in sheet for c in ("entity_correct", "question_clear", "error_class", "notes"))
    q2 = [r for r in sheet if r["item"] == "q2-0"]
    if q2:  # the two-entity question shows both entities, both articles and all six grounded facts
        assert q2[0]["entities"] == "answer: Munich (Q2); partner: Berlin (Q64)" and q2[0]["articles"] == "A2 A3"
        assert len(q2[0]["clues"].splitlines()) == 6
    history = next(r for r in sheet if r["domain"] == "history")
    assert history["gold"] == "1000 days" and history["cci"] == "3 (E 1, P 2)"
    first = (tmp_path / "s.csv").read_bytes()
    rc, _ = cli("generate", "drbencher", "annotate", str(gen), "--out", str(tmp_path / "s.csv"), "--sample", "3",
                "--seed", "5", "--force")
    assert rc == 0 and (tmp_path / "s.csv").read_bytes() == first  # same seed, same bytes
    rc, text = cli("generate", "drbencher", "annotate", str(gen), "--out", str(tmp_path / "s.csv"), "--sample", "3",
                   "--seed", "5", "--force", "--json")
    assert rc == 0 and json.loads(text) == {"items": 3, "out": str(tmp_path / "s.csv"), "sample": 3, "seed": 5}


def test_annotate_never_overwrites_a_sheet_and_needs_questions(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    gen = gen_dir(tmp_path / "gen", {"q1": 1})
    (tmp_path / "s.csv").write_text("filled by hand")
    rc, _ = cli("generate", "drbencher", "annotate", str(gen), "--out", str(tmp_path / "s.csv"))
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "--force" in err
    assert (tmp_path / "s.csv").read_text() == "filled by hand"
    rc, _ = cli("generate", "drbencher", "annotate", str(tmp_path), "--out", str(tmp_path / "t.csv"))
    err = capsys.readouterr().err
    assert rc == 2 and "no questions.jsonl" in err and len(err.strip().splitlines()) == 1


def write_sheet(path: Path, rows: list[dict[str, str]], columns: tuple[str, ...] = COLUMNS) -> Path:
    with path.open("w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({c: "" for c in columns} | r)
    return path


def verdicts(spec: str) -> list[dict[str, str]]:
    """``"yy- yn- nyAmb ..."``: per item entity_correct, question_clear (y/n) and an error class."""
    out = []
    for i, word in enumerate(spec.split()):
        yes = {"y": "yes", "n": "no"}
        out.append({"item": f"i{i}", "entity_correct": yes[word[0]], "question_clear": yes[word[1]],
                    "error_class": word[2:].strip("-")})
    return out


# Ten items. Validity, A: V V V V V V x x x x (x: DB, Amb, LLM, DB); B: V V V V V x V x x x (x: Amb, MH, LLM, DB)
SHEET_A = "yy- yy- yy- yy- yy- yy- nyDB ynAmb ynLLM nyDB"
SHEET_B = "yy- yy- yy- yy- yy- ynAmb yy- nnMH ynLLM nyDB"


def test_agreement_by_hand(tmp_path: Path) -> None:
    a = write_sheet(tmp_path / "a.csv", verdicts(SHEET_A))
    b = write_sheet(tmp_path / "b.csv", verdicts(SHEET_B))
    rc, text = cli("generate", "drbencher", "agreement", str(a), str(b), "--json")
    assert rc == 0
    r: dict[str, Any] = json.loads(text)
    assert r["n"] == 10 and r["disagreements"] == ["i5", "i6"]
    valid = r["fields"]["valid"]
    # validity: 8 of 10 agree; of the 20 values 12 are valid (6 per sheet) and 8 not: n1 = 12, n0 = 8;
    # two disagreeing units → o01 = 2: α = 1 − 19·2 / (8·12) = 0.604167
    assert valid["agreement"] == 0.8 and valid["krippendorff_alpha"] == pytest.approx(1 - 38 / 96, abs=1e-12)
    assert r["fields"]["error_class"]["agreement"] == 0.7  # i5, i6, i7 differ
    assert r["fields"]["entity_correct"]["agreement"] == 0.8  # i6 (A no) and i7 (B no)
    assert r["tally"]["a"] == {"accuracy": 0.6, "accuracy_excluding_db": 0.75, "errors": 4, "n": 10, "valid": 6,
                               "by_class": {"DB": 2, "LLM": 1, "MH": 0, "Amb": 1, "Ent": 0, "unclassified": 0}}
    assert r["tally"]["b"]["by_class"] == {"DB": 1, "LLM": 1, "MH": 1, "Amb": 1, "Ent": 0, "unclassified": 0}
    # i5: B says Amb, A valid; i6: A says DB, B valid
    assert r["disagreements_by_class"] == {"DB": 1, "LLM": 0, "MH": 0, "Amb": 1, "Ent": 0, "unclassified": 0}
    rc, printed = cli("generate", "drbencher", "agreement", str(a), str(b))
    assert rc == 0 and "\nvalid                80.0%  0.6042\n" in printed
    assert "\nA          10    4    60.0    75.0     2     1     0     1     0             0\n" in printed
    assert "validity disagreements (2): i5 i6" in printed


@pytest.mark.parametrize(("edit", "message"), [
    (lambda rows, cols: (rows, tuple(c for c in cols if c != "error_class")), "missing column(s) error_class"),
    (lambda rows, cols: ([{**rows[0], "error_class": "Typo"}, *rows[1:]], cols), "unknown error_class 'Typo'"),
    (lambda rows, cols: ([{**rows[0], "entity_correct": ""}, *rows[1:]], cols), "entity_correct must be yes or no"),
    (lambda rows, cols: ([*rows, rows[0]], cols), "item i0 appears twice"),
    (lambda rows, cols: (rows[1:], cols), "the sheets cover different items: 1 only in"),
])
def test_a_bad_sheet_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            edit: Any, message: str) -> None:
    a = write_sheet(tmp_path / "a.csv", verdicts(SHEET_A))
    rows, cols = edit(verdicts(SHEET_B), COLUMNS)
    b = write_sheet(tmp_path / "b.csv", rows, cols)
    rc, out = cli("generate", "drbencher", "agreement", str(a), str(b))
    err = capsys.readouterr().err
    assert rc == 2 and out == "" and message in err and len(err.strip().splitlines()) == 1, err


def test_the_generator_form_still_needs_its_config(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _ = cli("generate", "drbencher", "--out", "gen/")
    err = capsys.readouterr().err
    assert rc == 2 and "required: --config" in err and len(err.strip().splitlines()) == 1
