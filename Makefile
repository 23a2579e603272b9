# The two commands of the README. Both create .venv with the project installed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench clean chromium

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test,dask]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/scoreframe demo --out demo_out --overwrite  # a re-run replaces the earlier demo

# The report's browser test needs Debian's chromium: installed where apt-get can (root), else skipped.
chromium:
	@command -v chromium >/dev/null 2>&1 || { command -v apt-get >/dev/null 2>&1 \
	  && { apt-get install -y --no-install-recommends chromium >/dev/null 2>&1 \
	       || { apt-get update >/dev/null 2>&1 \
	            && apt-get install -y --no-install-recommends chromium >/dev/null 2>&1; }; }; } \
	  || echo "note: no Debian chromium here; the report's browser test will be skipped" >&2

test: $(STAMP) chromium
	$(BIN)/python -m ruff check scoreframe tests benchmarks
	$(BIN)/python -m mypy
	$(BIN)/python -m pytest -q --doctest-modules scoreframe tests

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[bench]"
	$(BIN)/python benchmarks/bench_evaluate.py
	$(BIN)/python benchmarks/bench_calibration.py
	$(BIN)/python benchmarks/bench_report.py

clean:
	rm -rf $(VENV) demo_out .pytest_cache .ruff_cache
