# The two commands a new user runs (README): `make demo` and `make test`.
# Both create .venv/ themselves; nothing needs installing by hand.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-dev

.PHONY: install demo test lint typecheck importlint unit browser bench quality load fleet sample-release smoke clean

# The dev install compiles the packages' bytecode on every core afterwards (compileall -j 0) rather
# than in pip's one process: with one core free, `pip install -e '.[dev]'` took 51.0 s and with
# --no-compile 29.0 s, and compileall of its ~10,000 files 22.2 CPU-s (2026-12-08), which two cores
# share. A file compileall cannot compile (a package's deliberately
# broken test data) is left to Python, as pip leaves it.
$(STAMP): pyproject.toml setup.py src/drsearch/index/_kernels.c src/drsearch/index/_gil.c src/drsearch/index/_gil.h src/drsearch/index/_topk.h src/drsearch/index/_pages.h src/drsearch/index/_fts5.h \
		$(wildcard src/drsearch/index/_k_*.h)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q --no-compile -e '.[dev]'
	$(PY) -m compileall -qq -j 0 $(VENV)/lib || true
	touch $(STAMP)

install: $(STAMP)

# What `make demo` needs, and no more: the serve, run, score and extract extras (a ~20 s install,
# not the dev tools). A venv that already has the dev install has all of them: nothing is
# reinstalled there (the kernel is not rebuilt under a running test suite).
DEMO_STAMP  := $(VENV)/.installed-demo
DEMO_EXTRAS := server,agents,extract,grading
$(DEMO_STAMP): pyproject.toml setup.py src/drsearch/index/_kernels.c src/drsearch/index/_gil.c src/drsearch/index/_gil.h src/drsearch/index/_topk.h src/drsearch/index/_pages.h src/drsearch/index/_fts5.h \
		$(wildcard src/drsearch/index/_k_*.h)
	@if [ -f $(STAMP) ] && [ $(STAMP) -nt pyproject.toml ]; then touch $@; else \
	  { [ -x $(PY) ] || $(PYTHON) -m venv $(VENV); } && \
	  $(PY) -m pip install -q --upgrade pip && \
	  $(PY) -m pip install -q -e '.[$(DEMO_EXTRAS)]' && touch $@; fi

# The main job on the bundled sample, offline, through the real components (scripts/demo.sh,
# docs/QUICKSTART.md): extract -> dedup + index -> drsearch serve -> drsearch run (the agent's
# model: `drsearch dev model --script agent`) -> drsearch score (`--script judge`) -> drsearch
# report (demo-out/report/index.html). Servers on free ports, stopped at the end; results in demo-out/.
demo: $(DEMO_STAMP)
	@bash scripts/demo.sh

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks scripts

typecheck: $(STAMP)
	$(VENV)/bin/mypy

importlint: $(STAMP)
	$(VENV)/bin/lint-imports

# pytest on TEST_WORKERS processes (pytest-xdist), one test file per worker at a time so a
# module's fixtures are built once (--dist loadfile). One more worker than cores: many tests
# wait on a server or a child process, and the extra worker uses those waits (the suite needs
# ~13 CPU-minutes, ~6.5 min on each of 2 cores; with 2 workers it took ~9 min). A plain
# `.venv/bin/pytest tests/x.py` runs in one process; `make unit TEST_WORKERS=0` runs the whole
# suite that way.
# PYTHONDONTWRITEBYTECODE emptied: with it set (some shells and CI images set it), every worker
# re-rewrote the asserts of ~750 test and plugin modules (~10 CPU-s a worker) and every
# `drsearch` child the tests start compiled src/ again from source; the bytecode goes to the
# ignored __pycache__ folders and is reused by the next run.
TEST_WORKERS ?= $(shell echo $$(( $$(nproc 2>/dev/null || echo 1) + 1 )))
unit: $(STAMP)
	PYTHONDONTWRITEBYTECODE= $(VENV)/bin/pytest $(if $(filter-out 0,$(TEST_WORKERS)),-n $(TEST_WORKERS) --dist loadfile)

# The headless browser the report's browser test drives (tests/benchmark/report/test_report_browser.py):
# Debian's chromium and chromium-driver, installed with apt-get when missing and this user may (root,
# or passwordless sudo). Never fails: where it cannot install, the test skips and says why.
# DRSEARCH_NO_APT=1 leaves the system alone.
browser:
	@if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then :; \
	elif [ -n "$$DRSEARCH_NO_APT" ] || ! command -v apt-get >/dev/null 2>&1; then \
	  echo "make browser: chromium not installed (no apt-get, or DRSEARCH_NO_APT): the browser test will skip"; \
	else \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo "sudo -n" ); \
	  { $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq \
	      chromium chromium-driver >/dev/null; } \
	    || echo "make browser: could not install chromium chromium-driver: the browser test will skip"; \
	fi

# `make test`: ruff, mypy and import-linter (one process each: 14 s wall, 14.3 CPU-s, with their
# caches cold on a fresh clone: `time make -k lint typecheck importlint`, 2026-12-08, quiet) run
# beside pytest rather than before it: alone they kept one of two cores idle for those 14 s, and
# beside it they use the share of the cores that the suite's workers leave while they wait on
# servers and children. Their output goes to .venv/checks.log, printed after pytest's; the
# target fails when any of the four fails (each check runs even when another failed: -k).
CHECKS_LOG := $(VENV)/checks.log
test: $(STAMP) browser
	@$(MAKE) --no-print-directory -k lint typecheck importlint >$(CHECKS_LOG) 2>&1 & checks=$$!; \
	$(MAKE) --no-print-directory unit; unit=$$?; \
	wait $$checks; rc=$$?; \
	echo "make test: ruff, mypy and import-linter (run beside pytest; $(CHECKS_LOG)):"; cat $(CHECKS_LOG); \
	[ $$rc = 0 ] || echo "make test: FAILED: lint, typecheck or importlint (above)"; \
	[ $$unit = 0 ] && [ $$rc = 0 ]

# The bundled sample release (docs/RELEASE.md): the DR-256 construction recipe run offline on
# the fixture the top-level manifest.json names (data/construct, docs/CONSTRUCT.md), then
# validated the way a user validates DR-256.
sample-release: $(STAMP)
	$(PY) scripts/make_sample_release.py --out out/sample-release --force
	$(VENV)/bin/drsearch validate --release-dir out/sample-release --deep

# Long benchmarks: not part of `make test`. See docs/BENCHMARKS.md.
bench: $(STAMP)
	$(PY) benchmarks/search_bench.py

# Both scales (30,318 and 121,272 documents, ~1M chunks) x both vocabularies in one run, one
# table (docs/BENCHMARKS.md; about 2 hours, ~30 GB of disk with --drop-indexes).
.PHONY: bench-scales
bench-scales: $(STAMP)
	$(PY) benchmarks/search_bench.py --scales 1,4 --vocabulary web,synthetic15k --drop-indexes \
		--json bench-scales.json $(BENCH_ARGS)

quality: $(STAMP)
	$(PY) benchmarks/quality.py

# HTTP load test of `drsearch serve` (docs/SERVER.md): 64 agents, 2 workers, 20 s, sample corpus.
# Extra flags: make load LOAD_ARGS="--kill-worker --duration 60 --database X.sqlite3"
load: $(STAMP)
	$(PY) benchmarks/load_test.py $(LOAD_ARGS)

# Three replicas behind the system's HAProxy, one killed and one restarted on another blocklist
# mid-load (docs/SCALING.md). Installs HAProxy on Debian when it is missing (apt-get, as root or
# via sudo). Extra flags: make fleet FLEET_ARGS="--clients 16 --duration 10 --database X.sqlite3"
fleet: $(STAMP)
	@command -v haproxy >/dev/null 2>&1 || { \
	  command -v apt-get >/dev/null 2>&1 || { echo "make fleet: install haproxy (not Debian: no apt-get)" >&2; exit 2; }; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq haproxy; }
	$(PY) benchmarks/fleet.py $(FLEET_ARGS)

# Opt-in real-model smoke test (README): SmolLM2-135M on llama.cpp drives `drsearch run` on
# three sample questions, then a small `drsearch generate drbencher`. The first install compiles
# llama.cpp (README gives the time), portably (AVX2/FMA/F16C) unless SMOKE_NATIVE=1; a build
# with other flags is replaced (scripts/smoke_install.py).
SMOKE_NATIVE ?=
smoke: $(STAMP)
	SMOKE_NATIVE='$(SMOKE_NATIVE)' $(PY) scripts/smoke_install.py
	$(VENV)/bin/pytest -m smoke tests/agents/test_smoke_smollm2.py \
		tests/benchmark/generate/drbencher/test_smoke_smollm2.py -s -rs

clean:
	rm -rf $(VENV) demo-out .pytest_cache .mypy_cache .ruff_cache
