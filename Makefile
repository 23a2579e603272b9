# The two commands of the README. Both create .venv with the project installed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test docs lint bench clean chromium

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

# The documentation site (Sphinx, PyData theme, executed MyST-NB pages), built offline; any
# warning or failing example is an error. Open docs/_build/html/index.html.
docs: $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[docs]"
	rm -rf docs/_build docs/generated docs/jupyter_execute
	$(BIN)/python -m sphinx -b html -W --keep-going -q docs docs/_build/html

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[bench]"
	$(BIN)/python benchmarks/bench_evaluate.py
	$(BIN)/python benchmarks/bench_calibration.py
	$(BIN)/python benchmarks/bench_report.py

clean:
	rm -rf $(VENV) demo_out .pytest_cache .ruff_cache docs/_build docs/generated docs/jupyter_execute
