"""Other embedding models (``drsearch embed --model DIR|NAME``) and the device route
(``--device cuda``): an ONNX model directory, a sentence-transformers name without the
package, and CUDA refused where onnxruntime has no CUDA provider (docs/RETRIEVERS.md)."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from drsearch.dense import Embedder, default_sidecar
from drsearch.dense.embed import default_model_path, default_tokenizer_path, file_sha256
from drsearch.dense.models import OnnxDirEmbedder
from drsearch.dense.sidecar import open_records
from drsearch.index import BuildSettings, build
from drsearch.tools.cli import main

from ..helpers import cranfield_docs

ort = pytest.importorskip("onnxruntime", reason="the embed extra (onnxruntime) is not installed")

QUERY = "pressure distribution on a cone at hypersonic speed"


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled MiniLM as an ONNX model directory (model.onnx + tokenizer.json)."""
    d = tmp_path_factory.mktemp("models") / "minilm-copy"
    d.mkdir()
    shutil.copyfile(default_model_path(), d / "model.onnx")
    shutil.copyfile(default_tokenizer_path(), d / "tokenizer.json")
    return d


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "cran8.sqlite3"
    build(cranfield_docs()[:8], path, BuildSettings())
    return path


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_an_onnx_directory_embeds_like_the_pinned_model(model_dir: Path) -> None:
    texts = ["supersonic flow past a wedge", QUERY, "a"]
    got = OnnxDirEmbedder(model_dir).embed(texts)
    want = Embedder().embed(texts)
    assert got.shape == (3, 384)
    assert np.abs(got - want).max() < 1e-4  # the same model; padding is masked out
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)


def test_embed_with_an_onnx_directory_records_it_and_search_needs_it(
        model_dir: Path, corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _cli(capsys, "embed", str(corpus), "--model", str(model_dir), "--pooling", "cls",
                          "--no-normalise", "--max-tokens", "64", "--quiet", "--json")
    assert code == 0, err
    header, records = open_records(default_sidecar(corpus))
    assert json.loads(out)["header"] == header
    assert header["model"] == "onnx:minilm-copy" and header["route"] == "onnx"
    assert header["model_sha256"] == file_sha256(model_dir / "model.onnx")
    assert header["tokenizer_sha256"] == file_sha256(model_dir / "tokenizer.json")
    assert (header["pooling"], header["normalised"], header["max_tokens"], header["dimension"]) == \
        ("cls", False, 64, 384)
    assert "device" not in header and len(records) == header["rows"]
    # the query side: the same directory (its options come from the header) ranks ...
    code, out, err = _cli(capsys, "search", "--database", str(corpus), "--retriever", "dense",
                          "--embed-model", str(model_dir), "--k", "3", "--json", QUERY)
    assert code == 0, err
    assert len(json.loads(out)["results"]) == 3
    # ... and the pinned model (no --embed-model) is refused: another model's vectors
    code, out, err = _cli(capsys, "search", "--database", str(corpus), "--retriever", "dense", QUERY)
    assert code == 2 and out == "" and "vectors of another model" in err and len(err.strip().splitlines()) == 1


def test_a_changed_model_directory_is_refused_at_query_time(
        model_dir: Path, corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _cli(capsys, "embed", str(corpus), "--model", str(model_dir), "--quiet")[0] == 0
    other = tmp_path / "minilm-copy"  # same name, another tokenizer file: its SHA-256 differs
    shutil.copytree(model_dir, other)
    tok = json.loads((other / "tokenizer.json").read_text())
    tok["truncation"] = None
    (other / "tokenizer.json").write_text(json.dumps(tok))
    code, out, err = _cli(capsys, "search", "--database", str(corpus), "--retriever", "hybrid",
                          "--embed-model", str(other), QUERY)
    assert code == 2 and out == "" and "vectors of another model" in err


def test_serve_and_run_with_another_models_vectors(model_dir: Path, corpus: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    import httpx

    from drsearch.server import ServeProcess

    assert _cli(capsys, "embed", str(corpus), "--model", str(model_dir), "--quiet")[0] == 0
    with ServeProcess(corpus, "--verify", "none", "--retriever", "dense", "--embed-model", str(model_dir)) as server:
        r = httpx.post(server.url + "/search", json={"query": QUERY, "k": 3})
        assert r.status_code == 200 and len(r.json()["results"]) == 3
        assert "onnx:minilm-copy" in r.headers["x-drsearch-identity"]
    code, _, err = _cli(capsys, "run", "--questions", str(corpus), "--out", str(tmp_path / "run"),
                          "--database", str(corpus), "--retriever", "dense", "--embed-model", str(model_dir),
                          "--model", "m", "--base-url", "http://127.0.0.1:9/v1")
    assert code == 2 and "--embed-model: not yet with drsearch run" in err and not (tmp_path / "run").exists()


@pytest.mark.skipif(importlib.util.find_spec("sentence_transformers") is not None,
                    reason="sentence-transformers is installed here")
def test_a_sentence_transformers_name_without_the_package_is_one_line(
        corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _cli(capsys, "embed", str(corpus), "--model", "sentence-transformers/all-mpnet-base-v2")
    assert code == 2 and out == ""
    assert "sentence-transformers package is not installed" in err and len(err.strip().splitlines()) == 1
    assert not default_sidecar(corpus).exists()
    assert list(corpus.parent.glob("*.partial")) == []


def test_a_directory_without_model_onnx_is_one_line(corpus: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "not-a-model"
    empty.mkdir()
    code, out, err = _cli(capsys, "embed", str(corpus), "--model", str(empty))
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_onnx_options_need_an_onnx_directory(corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _cli(capsys, "embed", str(corpus), "--pooling", "cls")
    assert code == 2 and "only with --model naming an ONNX model directory" in err
    code, _, err = _cli(capsys, "search", "--database", str(corpus), "--embed-model", "x", QUERY)
    assert code == 2 and "--embed-model: only with --retriever dense or hybrid" in err


@pytest.mark.skipif("CUDAExecutionProvider" in ort.get_available_providers(),
                    reason="onnxruntime has a CUDA provider here: the refusal cannot be shown")
@pytest.mark.parametrize("which", ["pinned", "directory"])
def test_device_cuda_without_a_cuda_provider_is_refused_not_run_on_the_cpu(
        which: str, model_dir: Path, corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = ["--model", str(model_dir)] if which == "directory" else []
    code, out, err = _cli(capsys, "embed", str(corpus), *model, "--device", "cuda", "--quiet")
    assert code == 2 and out == ""
    assert "--device cuda: onnxruntime has no CUDA provider here" in err and "no fall back" in err
    assert len(err.strip().splitlines()) == 1
    assert not default_sidecar(corpus).exists() and list(corpus.parent.glob("*.partial")) == []


def test_idle_onnx_threads_sleep_rather_than_spin() -> None:
    """A text is one short run: spinning workers between runs burn CPU that a shared machine's
    other processes need (the server's workers, a build); the same vectors either way."""
    from drsearch.dense.models import onnx_session

    session = onnx_session(default_model_path(), "cpu", None)
    assert session.get_session_options().get_session_config_entry("session.intra_op.allow_spinning") == "0"
    assert onnx_session(default_model_path(), "cpu", 2).get_session_options().get_session_config_entry(
        "session.intra_op.allow_spinning") == "0"
