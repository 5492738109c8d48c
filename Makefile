# numalab: `make help` lists the targets. The two a new user needs: `make run` and `make test`.
SHELL := /bin/bash
.DEFAULT_GOAL := help
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
NUMALAB := $(VENV)/bin/numalab
# pytest workers (pytest-xdist): one per CPU and one more by default, as much of the suite waits
# rather than computes (guest boots, CLI subprocesses, timeouts); `make test PYTEST_WORKERS=0` runs
# serially.
PYTEST_WORKERS ?= $(shell echo $$(($$(nproc) + 1)))
STAMP := $(VENV)/.deps-stamp
MATURIN_STAMP := $(VENV)/.maturin-stamp
RUST_SRC := $(shell find crates -name '*.rs' -o -name Cargo.toml) Cargo.toml

.PHONY: help venv build run test test-rust rust-tests test-python bytecode bench lint lint-rust lint-python clean kernels agent

help: ## list the targets
	@grep -E '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN{FS=":.*?## "}{printf "  make %-12s %s\n", $$1, $$2}'

# maturin goes in first, on its own: the Rust core then compiles while pip fetches the rest (on a
# fresh machine pip's downloads take longer than its CPU time).
$(MATURIN_STAMP):
	python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q "maturin>=1.7,<2"
	touch $@

$(STAMP): pyproject.toml $(MATURIN_STAMP)
	$(PIP) install -q "pytest>=8" "pytest-xdist>=3.6" "typer==0.20.0" "click==8.1.8" "rich>=13" "pydantic>=2.7,<3" "numpy>=1.26" "pandas>=2.1" "matplotlib>=3.8" "dask[distributed]>=2024.1" "pyarrow>=14" "defusedxml>=0.7" "orjson==3.13.0" "hypothesis>=6.100" "scipy>=1.11" "pymetis>=2025.2" "dask-jobqueue>=0.9" "ruff==0.17.6" "mypy==2.4.1"
	touch $@

venv: $(STAMP) ## create .venv with the Python dependencies (from PyPI)

# The extension module needs only maturin: it is built in place (--skip-install), under `make -j`
# beside pip's install of the rest; installing numalab into .venv (its dependencies with it) waits
# for that install and reuses the build (cargo has nothing left to compile).
MATURIN_DEVELOP := VIRTUAL_ENV=$(abspath $(VENV)) PATH=$(abspath $(VENV))/bin:$$PATH $(VENV)/bin/maturin develop -q --release

$(VENV)/.ext-stamp: $(MATURIN_STAMP) $(RUST_SRC)
	+set -o pipefail; $(MATURIN_DEVELOP) --skip-install 2>&1 | sed '/Requirement already satisfied/d'
	touch $@

$(VENV)/.build-stamp: $(STAMP) $(VENV)/.ext-stamp
	+set -o pipefail; $(MATURIN_DEVELOP) 2>&1 | sed '/Requirement already satisfied/d'
	touch $@

build: $(VENV)/.build-stamp kernels agent ## build the Rust core, the agent and the kernels; install numalab into .venv (editable)

kernels: ## build the C/OpenMP kernels (kernels/dgemv, stream, stencil, barrier, chase; static if libgomp.a links)
	$(MAKE) -s -C kernels

# The guest's agent is linked static (+crt-static) from the release build's compiled crates: only
# its own crate is compiled again, with the flag given to the last rustc alone (`cargo rustc`). A
# build for `--target` with RUSTFLAGS compiled every dependency a second time (about 30 CPU s).
# `cargo test` builds the same binary dynamic at the same place, so the static one is copied out;
# `make test` builds it after the cargo tests, not beside them.
AGENT := target/static/numalab-agent

agent: $(AGENT) ## build the static numalab-agent (target/static/numalab-agent)

$(AGENT): $(RUST_SRC)
	+cargo rustc --release --quiet -p numalab-agent --bin numalab-agent -- -C target-feature=+crt-static -C strip=debuginfo
	mkdir -p $(@D) && cp target/release/numalab-agent $@.tmp && mv $@.tmp $@

# The example study is simulated: it needs the Rust core only (not the agent or the C kernels).
run: $(VENV)/.build-stamp ## build the Rust core, then run the example study and write its report (the main job)
	$(NUMALAB) topo --machine e5-2620v4-2s
	$(NUMALAB) study studies/example.toml --results results
	$(NUMALAB) report studies/example.toml --results results -o results/example.md --format md
	@sed -n '/^## Speedup/,/^## [^S]/p' results/example.md | sed '$$d'
	$(NUMALAB) report studies/example.toml --results results -o results/example.html
	@echo "report: $(abspath results/example.html) (open it in a browser; figures beside it)"

# --release: the extension's profile, whose compiled crates the tests reuse (Cargo.toml says why).
# The whole workspace, numalab-py too (it has no tests): the same packages give the same features,
# so the same builds of the shared crates (crates/numalab-py/Cargo.toml).
CARGO_TEST := cargo test --release --workspace --quiet
# Tests that reuse one guest's runs share a worker (xdist_group marks; --dist loadgroup), handed out
# in the order conftest.py sorts them (the guest groups first).
PYTEST := $(PY) -m pytest -n $(PYTEST_WORKERS) --dist loadgroup --no-loadscope-reorder
# Parallel builds in `make test`: one per CPU (cargo takes its jobs from make's jobserver), and one
# more for pip's install, which mostly waits on the network on a fresh machine.
BUILD_JOBS ?= $(shell echo $$(($$(nproc) + 1)))

# Compiling is half of a fresh clone's `make test`: the cargo tests, the Python extension and the
# kernels are built side by side first (the agent after them, from their crates), then the tests
# run one suite after the other. The parallel pass's errors are ignored: the second pass meets (and
# reports) them again, so that a failing build stops only its own suite, under `make -k` too.
test: ## run every test (Rust, then Python)
	-+$(MAKE) --no-print-directory -j$(BUILD_JOBS) rust-tests $(VENV)/.build-stamp kernels
	+$(MAKE) --no-print-directory test-rust test-python

rust-tests: kernels
	+$(CARGO_TEST) --no-run

test-rust: rust-tests ## cargo tests of every crate
	$(CARGO_TEST)

test-python: build bytecode ## pytest (unit, CLI, integration), in parallel (PYTEST_WORKERS)
	$(PYTEST)

# The tests start hundreds of Python processes (CLI subprocesses, study workers): byte-compiled
# once here, they do not each compile numalab again where Python may not write its cache
# (PYTHONDONTWRITEBYTECODE; a fifth of the CPU time of the subprocess-heavy tests). A file that
# does not compile is pytest's to report.
bytecode:
	$(PY) -m compileall -qq python/numalab tests/python || true

bench: build ## print the benchmark figures (simulator speed, ...)
	@ls bench/*.py >/dev/null 2>&1 && for b in bench/*.py; do $(PY) $$b; done || echo "no benchmarks yet"

lint: lint-rust lint-python ## every linter: rustfmt and clippy, ruff and mypy

lint-rust: ## rustfmt and clippy
	cargo fmt --all --check
	cargo clippy --workspace --all-targets -- -D warnings

lint-python: $(STAMP) ## ruff and mypy (configured in pyproject.toml)
	$(VENV)/bin/ruff check python tests bench
	$(VENV)/bin/mypy python/numalab

clean: ## remove build outputs and the venv
	cargo clean
	$(MAKE) -s -C kernels clean
	rm -rf $(VENV) python/numalab/*.so
