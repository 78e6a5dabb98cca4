"""A release's dense vectors: named by manifest.json, checked by ``validate --deep``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from drsearch.dense import embed_corpus
from drsearch.dense.embed import pinned_description
from drsearch.dense.sidecar import read_header
from drsearch.index import Engine
from drsearch.release.manifest import DATABASE, VECTORS, write_release_manifest
from drsearch.release.report import ValidationReport
from drsearch.release.validate import validate_release
from drsearch.tools.cli import main


class _Synthetic:
    """Deterministic unit vectors, described as the pinned model (no model needed)."""

    def describe(self) -> dict[str, Any]:
        return pinned_description()

    def embed(self, texts: Sequence[str]) -> np.ndarray[Any, np.dtype[np.float32]]:
        seed = sum(len(t) for t in texts)
        v = np.random.default_rng(seed).standard_normal((len(texts), 384)).astype(np.float32)
        out: np.ndarray[Any, np.dtype[np.float32]] = v / np.linalg.norm(v, axis=1, keepdims=True)
        return out


def _embed(release: Path) -> Path:
    with Engine.open(release / DATABASE, release_blocklist="ignore") as engine:
        embed_corpus(engine, release / VECTORS, _Synthetic())
    return release / VECTORS


def _vectors_check(report: ValidationReport) -> tuple[str, str]:
    check = report.by_name("corpus vectors")
    return check.status, check.message


@pytest.fixture()
def with_vectors(release: Path) -> Path:
    _embed(release)
    write_release_manifest(release)
    return release


def test_the_manifest_names_the_sidecar_and_deep_passes(with_vectors: Path) -> None:
    manifest = json.loads((with_vectors / "manifest.json").read_text())
    header, _ = read_header(with_vectors / VECTORS)
    assert manifest["vectors"]["path"] == VECTORS
    assert manifest["vectors"]["model_sha256"] == header["model_sha256"]
    assert manifest["vectors"]["rows"] == manifest["corpus"]["chunks"]
    assert {f["path"]: f["role"] for f in manifest["files"]}[VECTORS] == "corpus_vectors"
    report = validate_release(with_vectors, deep=True)
    assert report.ok(strict=True), [c for c in report.checks if c.status != "PASS"]
    assert _vectors_check(report)[0] == "PASS"


def test_a_release_without_vectors_has_no_vectors_section(release: Path) -> None:
    before = (release / "manifest.json").read_bytes()
    write_release_manifest(release)
    assert (release / "manifest.json").read_bytes() == before
    assert "vectors" not in json.loads(before)
    with pytest.raises(KeyError):
        validate_release(release, deep=True).by_name("corpus vectors")


def test_a_truncated_sidecar_fails_deep(with_vectors: Path) -> None:
    side = with_vectors / VECTORS
    side.write_bytes(side.read_bytes()[:-100])
    status, message = _vectors_check(validate_release(with_vectors, deep=True))
    assert status == "FAIL" and "truncated" in message


def test_a_damaged_record_fails_deep(with_vectors: Path) -> None:
    side = with_vectors / VECTORS
    data = bytearray(side.read_bytes())
    data[-4:] = np.float32(np.nan).tobytes()  # the last record's scale
    side.write_bytes(bytes(data))
    write_release_manifest(with_vectors)  # a fresh manifest does not make it sound
    status, message = _vectors_check(validate_release(with_vectors, deep=True))
    assert status == "FAIL" and "1 record(s)" in message


def test_a_sidecar_of_another_model_than_the_manifest_says_fails_deep(with_vectors: Path) -> None:
    manifest = json.loads((with_vectors / "manifest.json").read_text())
    manifest["vectors"]["model_sha256"] = "0" * 64
    (with_vectors / "manifest.json").write_text(json.dumps(manifest))
    status, message = _vectors_check(validate_release(with_vectors, deep=True))
    assert status == "FAIL" and "model_sha256" in message


def test_a_named_sidecar_that_is_missing_fails_deep(with_vectors: Path) -> None:
    (with_vectors / VECTORS).unlink()
    report = validate_release(with_vectors, deep=True)
    assert _vectors_check(report)[0] == "FAIL"
    assert report.by_name(f"file {VECTORS}").status == "FAIL"


def test_a_sidecar_of_another_corpus_is_refused_by_the_manifest_writer(release: Path, tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    side = _embed(release)
    header, start = read_header(side)
    header["content_identity"] = "another"
    body = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    data = side.read_bytes()
    side.write_bytes(b"DRSVEC01" + len(body).to_bytes(4, "little") + body + data[start:])
    before = (release / "manifest.json").read_bytes()
    assert main(["release", "manifest", str(release)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "another corpus" in err
    assert (release / "manifest.json").read_bytes() == before
