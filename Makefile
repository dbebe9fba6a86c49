# migrate-cron — the two commands a new user needs: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# Three pytest processes on CI's 2 cores: a third of the suite's time is spent waiting on
# processes, servers and leases (the fault tests), not on a core; every test bounds its own
# time and holds on a loaded machine. worksteal hands a long test's queue to an idle worker.
PYTEST_WORKERS ?= 3

.PHONY: install test test-fast check lint format demo bench bench-console bench-peers screenshots clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[dev]"
	touch $(STAMP)

# The whole suite on SQLite, PostgreSQL and MariaDB. Without CI=true an unreachable server
# skips its suite with a message; with CI=true it fails. pytest's exit 5 (no tests) fails too.
# Tests never write into the checkout (issue 32): the tree's state (git status, with ignored
# files other than tools' caches, and the diff) is compared before and after; a change fails.
TREE_STATE = { git status --porcelain --ignored --untracked-files=all 2>/dev/null | \
	grep -vE '^!! (\.venv/|\.pytest_cache/|\.ruff_cache/|\.mypy_cache/|\.hypothesis/|.*__pycache__/|.*\.egg-info/)'; \
	git diff --no-ext-diff 2>/dev/null | cksum; }

test: $(STAMP)
	@before=$$(mktemp); after=$$(mktemp); $(TREE_STATE) >$$before; \
	$(BIN)/pytest -q -n $(PYTEST_WORKERS) --dist worksteal --durations=15 $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make test: pytest collected no tests" >&2; rc=1; fi; \
	$(TREE_STATE) >$$after; \
	if ! cmp -s $$before $$after; then \
		echo "make test: the tests changed the checkout (they must write only to temporary directories):" >&2; \
		diff $$before $$after | grep '^[<>]' >&2; rc=1; \
	fi; rm -f $$before $$after; exit $$rc

# Tests that need no database and are not slow: seconds, for the edit-test loop.
test-fast: $(STAMP)
	$(BIN)/pytest -q -m "not db and not slow" $(PYTEST_ARGS)

# What CI runs: lint and types (ruff, mypy --strict), then the whole suite.
check: lint test

lint: $(STAMP)
	$(BIN)/ruff check migrate_cron tests bench
	$(BIN)/ruff format --check migrate_cron tests bench
	$(BIN)/mypy

format: $(STAMP)
	$(BIN)/ruff format migrate_cron tests bench
	$(BIN)/ruff check --fix migrate_cron tests bench

# The README's screenshots (docs/img/*.png), retaken by the browser test (needs chromium and
# PostgreSQL). Tests never write into the tree: only this target does.
screenshots: $(STAMP)
	MIGRATE_CRON_SCREENSHOTS="$(CURDIR)/docs/img" $(BIN)/pytest -q -p no:cacheprovider \
		tests/web/test_browser.py -k postgresql

# The whole journey on the embedded default (SQLite) in a temporary directory.
demo: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" bash samples/demo.sh

# Benchmarks (speed and memory targets); results are written down in docs/benchmarks.md.
bench: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" bash bench/run.sh

# The console's pages on 1,000,000 jobs with 30 days of history, on SQLite, PostgreSQL and
# MariaDB (one of the scripts `make bench` runs; ~10 minutes alone).
bench-console: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python bench/bench_console.py $(BENCH_ARGS)

# migrate-cron next to PgQueuer and Procrastinate on one PostgreSQL (issue 18). The peers come
# from the optional `bench` extra, installed into this .venv only for this target.
BENCH_STAMP := $(VENV)/.installed-bench
$(BENCH_STAMP): $(STAMP)
	$(BIN)/pip install --quiet -e ".[dev,bench]"
	touch $(BENCH_STAMP)

bench-peers: $(BENCH_STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python bench/bench_peers.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache .hypothesis
