"""Build the optional C loops of the ranking; everything else is configured in pyproject.toml.

``optional=True``: on a machine without a C compiler the install still succeeds and the engine
ranks with numpy alone (identical results, slower; see docs/ENGINE.md).
"""

import os
import sysconfig

from setuptools import Extension, setup


def _zlib() -> bool:
    """Whether zlib's header is where the compiler looks (Debian: zlib1g-dev, which Python's own
    development package depends on): the kernel then cuts schema version 4's chunk texts from the
    documents' compressed text (_k_texts.h); without it, the engine cuts them in Python."""
    dirs = [sysconfig.get_paths().get("include", ""), "/usr/include", "/usr/local/include",
            *os.environ.get("CPATH", "").split(os.pathsep)]
    return any(d and os.path.exists(os.path.join(d, "zlib.h")) for d in dirs)


ZLIB = _zlib()

setup(
    ext_modules=[
        Extension(
            "drsearch.index._kernels",
            sources=["src/drsearch/index/_kernels.c", "src/drsearch/index/_gil.c"],
            # headers: the top-k heap (shared with benchmarks' C probes), the page reader, the
            # FTS5 leaf decoder, the GIL's lock word (_gil.c), and the kernel's own parts
            # (_k_*.h: query, ranking loop, entry points, snippets, texts, hits), one job each,
            # included once by _kernels.c
            depends=["src/drsearch/index/_topk.h", "src/drsearch/index/_pages.h",
                     "src/drsearch/index/_fts5.h", "src/drsearch/index/_gil.h",
                     *(f"src/drsearch/index/_k_{part}.h"
                       for part in ("query", "rank", "entry", "snippet", "lz", "texts", "hits", "dense"))],
            optional=True,
            define_macros=[("DRS_ZLIB", "1")] if ZLIB else [],
            libraries=["z"] if ZLIB else [],
            # -ffp-contract=off: no fused multiply-add, so sums stay bit-identical to numpy's.
            extra_compile_args=["-O3", "-ffp-contract=off"],
        )
    ]
)
