# The README's commands. Each target creates .venv on first use, then runs.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: tour test lint bench bench-tinygpt clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev,lessons]"
	touch $(STAMP)

tour: $(STAMP)
	$(BIN)/minigrad tour

test: $(STAMP)
	$(BIN)/ruff check minigrad tests benchmarks lessons
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check minigrad tests benchmarks lessons

bench: $(STAMP)
	$(BIN)/python benchmarks/run.py

bench-tinygpt: $(STAMP)
	$(BIN)/python benchmarks/tinygpt.py --threads 1 --profile

clean:
	rm -rf $(VENV) minigrad-out .pytest_cache .hypothesis
