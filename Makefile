# The README's commands. Each target creates .venv on first use, installs what it needs, then runs:
# `make tour` only minigrad and its dependencies (numpy, Graphviz in WebAssembly); `make lab` adds
# threadpoolctl; `make lessons` the `lessons` extra; `make test` and the others every extra.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
TOUR_STAMP := $(VENV)/.installed-tour
LAB_STAMP  := $(VENV)/.installed-lab
LESSONS_STAMP := $(VENV)/.installed-lessons
ALL_EXTRAS := [dev,lessons,lab]
LESSONS_EXTRAS := [lessons,lab]
# `make lessons LESSONS="3 4"` (or lessons-verdicts) runs some lessons only; by default every one
LESSONS ?= $(foreach f,$(notdir $(wildcard lessons/[0-9][0-9]_*.py)),$(firstword $(subst _, ,$(f))))

.PHONY: tour test test-quick lint bench bench-tinygpt lab browser lessons lessons-verdicts clean

# $(call install,EXTRAS): a .venv with minigrad installed (editable) with those extras (pass a list
# such as [a,b] through a variable: make splits a call's arguments at commas)
define install
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# an older .venv has this project installed under its former distribution name
	$(BIN)/python -m pip uninstall --quiet --yes minigrad 2>/dev/null || true
	$(BIN)/python -m pip install --quiet -e ".$(1)"
endef

$(STAMP): pyproject.toml
	$(call install,$(ALL_EXTRAS))
	touch $(STAMP) $(LESSONS_STAMP) $(LAB_STAMP) $(TOUR_STAMP)

$(LESSONS_STAMP): pyproject.toml
	$(call install,$(LESSONS_EXTRAS))
	touch $(LESSONS_STAMP) $(LAB_STAMP) $(TOUR_STAMP)

$(LAB_STAMP): pyproject.toml
	$(call install,[lab])
	touch $(LAB_STAMP) $(TOUR_STAMP)

$(TOUR_STAMP): pyproject.toml
	$(call install,)
	touch $(TOUR_STAMP)

tour: $(TOUR_STAMP)
	$(BIN)/minigrad tour

# ruff, the type checker (mypy, configured in pyproject.toml: the engine in strict mode), the
# whole test suite (the lessons run there in their small mode), then every lesson at full size
# with its verdict checks, two at a time on one BLAS thread each: a lesson whose check fails, or
# that takes over 3 CPU minutes, fails the run (scripts/lesson_verdicts.py)
test: $(STAMP) browser
	$(BIN)/ruff check minigrad tests benchmarks lessons
	$(BIN)/mypy
	$(BIN)/python -m pytest -q
	$(BIN)/python scripts/lesson_verdicts.py --budget 3 --jobs 2

# The same without the slow tests (whole lessons, notebooks, the browser, the sdist build) and
# without the full-size lessons
test-quick: $(STAMP)
	$(BIN)/ruff check minigrad tests benchmarks lessons
	$(BIN)/mypy
	$(BIN)/python -m pytest -q -m "not slow"

# Chromium + chromedriver for the lab's browser tests (installed when missing and root), and axe-core,
# the accessibility checker those tests run in the page (from the npm registry, into .venv/axe-core)
browser:
	sh scripts/install-browser.sh
	sh scripts/install-axe.sh

lab: $(LAB_STAMP)
	$(BIN)/minigrad lab

lint: $(STAMP)
	$(BIN)/ruff check minigrad tests benchmarks lessons
	$(BIN)/mypy

# Every lesson at full size, with the checks inside it, one after the other, stopping at the first
# that fails. One BLAS thread each: on 2 cores that is the fastest for these sizes.
lessons: $(LESSONS_STAMP)
	@for n in $(LESSONS); do \
		echo "== lesson $$n"; \
		OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 $(BIN)/minigrad lesson $$n --no-pause \
			|| exit 1; \
	done

# The full-size run `make test` ends with, on its own: every lesson (or LESSONS="9 12"), two at a
# time, going on past a failing lesson, with each lesson's CPU and wall time and a summary (logs in
# minigrad-out/lesson-verdicts/); a lesson over 3 CPU minutes fails (docs/lessons.md has the times)
lessons-verdicts: $(LESSONS_STAMP)
	$(BIN)/python scripts/lesson_verdicts.py --budget 3 --jobs 2 $(LESSONS)

bench: $(STAMP)
	$(BIN)/python benchmarks/run.py

bench-tinygpt: $(STAMP)
	$(BIN)/python benchmarks/tinygpt.py --threads 1 --profile

clean:
	rm -rf $(VENV) minigrad-out .pytest_cache .hypothesis
