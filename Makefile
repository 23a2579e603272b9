# The two commands of the README. Both create .venv with the project installed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test,dask]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/scoreframe demo --out demo_out

test: $(STAMP)
	$(BIN)/python -m ruff check scoreframe tests benchmarks
	$(BIN)/python -m pytest -q --doctest-modules scoreframe tests

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[bench]"
	$(BIN)/python benchmarks/bench_evaluate.py
	$(BIN)/python benchmarks/bench_calibration.py
	$(BIN)/python benchmarks/bench_report.py

clean:
	rm -rf $(VENV) demo_out .pytest_cache .ruff_cache
