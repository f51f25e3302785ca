# make book : venv + install + execute every notebook (quick profile, two at a time) + HTML in _build/html/
# make test : unit tests, nbval over every notebook, book build (stored outputs) with warnings as errors (CI)
# make test-fast : unit tests not marked slow (development)
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.symlib-installed

.PHONY: book test test-fast install unit nbval book-check sync clean
.DEFAULT_GOAL := book

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[book,test]"
	$(PY) -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (symlib)" >/dev/null
	touch $@

install: $(STAMP)

# The notebooks execute two at a time (scripts/execute_notebooks.py --jobs 2, longest first;
# an artifact two chapters need is computed once) into Jupyter Book's execution cache, which
# the build then reads; unchanged notebooks are skipped by both.
book: install
	$(PY) scripts/execute_notebooks.py --jobs 2 --jupyter-cache _build/.jupyter_cache notebooks/[0-9][0-9]_*.py
	$(VENV)/bin/jupyter-book build . --keep-going
	@echo "Open _build/html/index.html"

# --durations: every run lists its 40 slowest tests (candidates for the `slow` marker).
# -n 2: two pytest-xdist workers (the tests are independent; 2 cores: about 6.5 instead of 9 minutes).
# --dist loadscope: each test module runs whole on one worker, so its module fixtures and the
# programs its tests compile are made once, not once per worker (tests/inference: 424 instead of
# 516 s, CPU time 13.1 instead of 16.0 minutes, 2026-11-30).
# tests/conftest.py asks XLA for less optimization (JAX_DISABLE_MOST_OPTIMIZATIONS=1; measured there).
unit: install
	$(PY) -m pytest tests -n 2 --dist loadscope --durations=40

# The inner loop of development: unit tests without those marked slow (CI runs `make test`).
test-fast: install
	$(PY) -m pytest tests -n 2 --dist loadscope -m "not slow" -q

nbval: install
	$(PY) -m pytest --nbval-lax --nbval-current-env notebooks

# The book build with warnings as errors, on the outputs stored in the notebooks: nbval (the
# step before) has just executed every notebook and compared them, so the check does not
# execute them a second time (`make book` does execute them). _config-stored-outputs.yml is
# _config.yml with execution off (generated; it must sit beside _config.yml for its paths).
# check_pages.py: every built page in headless Chromium (skipped with a message where none is
# installed, a failure under CI=true); screenshots in _build/screenshots/.
book-check: install
	sed 's/^  execute_notebooks: cache$$/  execute_notebooks: "off"/' _config.yml > _config-stored-outputs.yml
	grep -q '^  execute_notebooks: "off"$$' _config-stored-outputs.yml || { echo "error: _config.yml has no 'execute_notebooks: cache' line to turn off" >&2; exit 1; }
	$(VENV)/bin/jupyter-book build . -W --keep-going --config _config-stored-outputs.yml
	$(PY) scripts/check_book.py _build/html
	$(PY) scripts/check_pages.py _build/html

# Run in this order (unit tests first: fastest to fail).
test: unit nbval book-check

# After editing notebooks/*.py: re-execute and store outputs in the paired .ipynb
# (all notebooks, or NB=notebooks/02_rebasin_barriers.py for one).
NB ?= notebooks/*.py
sync: install
	$(PY) scripts/execute_notebooks.py $(NB)

clean:
	rm -rf _build
