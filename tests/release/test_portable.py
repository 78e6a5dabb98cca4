"""A release's construction evidence names no directory of the machine that built it."""

from __future__ import annotations

from drsearch.release.construct.portable import portable, portable_path


def test_a_path_under_the_work_directory_is_written_relative_to_it() -> None:
    assert portable_path("/home/ann/run.work/pool", "/home/ann/run.work") == "pool"
    assert portable_path("/home/ann/run.work/rollouts/attempt-0/", "/home/ann/run.work/") == "rollouts/attempt-0"
    assert portable_path("/home/ann/run.work", "/home/ann/run.work") == "."


def test_another_absolute_path_keeps_only_its_name_and_a_relative_one_is_kept() -> None:
    assert portable_path("/data/crawls/corpus.sqlite3", "/home/ann/run.work") == "corpus.sqlite3"
    assert portable_path("/home/ann/run.workshop/x.jsonl", "/home/ann/run.work") == "x.jsonl"  # no prefix match
    assert portable_path("pool/questions.jsonl", "/home/ann/run.work") == "pool/questions.jsonl"
    assert portable_path("not a path", "/w") == "not a path"


def test_the_paths_of_a_record_are_made_portable_and_nothing_else_changes() -> None:
    record = {"runs": ["/w/rollouts/a", "/w/rollouts/b"], "n": 3, "ok": True, "none": None, "questions": 18,
              "nested": {"database": "/w/corpus/c.sqlite3", "seed": "7", "prompt": "/w/ is text here"}}
    assert portable(record, "/w") == {"runs": ["rollouts/a", "rollouts/b"], "n": 3, "ok": True, "none": None,
                                      "questions": 18,
                                      "nested": {"database": "corpus/c.sqlite3", "seed": "7",
                                                 "prompt": "/w/ is text here"}}
