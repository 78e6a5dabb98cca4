# The two commands a new user runs (README): `make demo` and `make test`.
# Both create .venv/ themselves; nothing needs installing by hand.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-dev

.PHONY: install demo test lint typecheck importlint unit bench quality load sample-release smoke clean

$(STAMP): pyproject.toml setup.py src/drsearch/index/_kernels.c
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

# The main job on the bundled sample crawl (181 real pages + 3 leak artifacts): extract → dedup + index → search.
demo: $(STAMP)
	@mkdir -p demo-out
	$(VENV)/bin/drsearch corpus extract data/sample/crawl --out demo-out/docs.jsonl --force --quiet
	$(VENV)/bin/drsearch corpus build demo-out/docs.jsonl --out demo-out/sample.sqlite3 --force --quiet
	$(VENV)/bin/drsearch stats --database demo-out/sample.sqlite3
	$(VENV)/bin/drsearch search --database demo-out/sample.sqlite3 --k 5 "video game streaming subscription"
	$(VENV)/bin/drsearch search --database demo-out/sample.sqlite3 --k 2 --json "Stadia launch price" | head -c 300; echo
	@echo "next: .venv/bin/drsearch serve --database demo-out/sample.sqlite3 --port 8000 (docs/SERVER.md)"

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks scripts

typecheck: $(STAMP)
	$(VENV)/bin/mypy

importlint: $(STAMP)
	$(VENV)/bin/lint-imports

unit: $(STAMP)
	$(VENV)/bin/pytest

test: lint typecheck importlint unit

# The bundled sample release (docs/RELEASE.md): assembled from the inputs the top-level
# manifest.json names, then validated the way a user validates DR-256.
sample-release: $(STAMP)
	$(PY) scripts/make_sample_release.py --out out/sample-release --force
	$(VENV)/bin/drsearch validate --release-dir out/sample-release --deep

# Long benchmarks: not part of `make test`. See docs/BENCHMARKS.md.
bench: $(STAMP)
	$(PY) benchmarks/search_bench.py

quality: $(STAMP)
	$(PY) benchmarks/quality.py

# HTTP load test of `drsearch serve` (docs/SERVER.md): 64 agents, 2 workers, 20 s, sample corpus.
# Extra flags: make load LOAD_ARGS="--kill-worker --duration 60 --database X.sqlite3"
load: $(STAMP)
	$(PY) benchmarks/load_test.py $(LOAD_ARGS)

# Opt-in real-model smoke test (README): SmolLM2-135M on llama.cpp drives `drsearch run` on
# three sample questions. The first install compiles llama.cpp (several minutes on 2 cores).
smoke: $(STAMP)
	CMAKE_BUILD_PARALLEL_LEVEL=$${CMAKE_BUILD_PARALLEL_LEVEL:-2} $(PY) -m pip install -q -e '.[smoke]'
	$(VENV)/bin/pytest -m smoke tests/agents/test_smoke_smollm2.py -s -rs

clean:
	rm -rf $(VENV) demo-out .pytest_cache .mypy_cache .ruff_cache
