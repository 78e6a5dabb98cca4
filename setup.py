"""Build the optional C loops of the ranking; everything else is configured in pyproject.toml.

``optional=True``: on a machine without a C compiler the install still succeeds and the engine
ranks with numpy alone (identical results, slower; see docs/ENGINE.md).
"""

from setuptools import Extension, setup

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
                       for part in ("query", "rank", "entry", "snippet", "texts", "hits", "dense"))],
            optional=True,
            # -ffp-contract=off: no fused multiply-add, so sums stay bit-identical to numpy's.
            extra_compile_args=["-O3", "-ffp-contract=off"],
        )
    ]
)
