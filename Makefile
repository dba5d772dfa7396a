# Two entry points (README): `make demo` runs the main job end to end, `make test` runs every check CI runs.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test lint typecheck pytest jars bench clean

$(VENV)/.installed: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[all,dev]'
	touch $@

# Spark's JVM jars (Delta, Iceberg runtime, sqlite JDBC) from Maven Central via mvn, into a project cache.
jars: $(VENV)/.installed
	$(BIN)/python -m carriers.spark.jars

demo: $(VENV)/.installed jars
	$(BIN)/python examples/demo.py

lint: $(VENV)/.installed
	$(BIN)/ruff check attest carriers tests benchmarks examples notebooks/build_notebooks.py

typecheck: $(VENV)/.installed
	$(BIN)/mypy

pytest: $(VENV)/.installed jars
	$(BIN)/pytest

test: lint typecheck pytest

bench: $(VENV)/.installed jars
	for b in benchmarks/bench_*.py; do $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) demo-out .pytest_cache .mypy_cache .ruff_cache
