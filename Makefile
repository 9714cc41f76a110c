# The two set-up commands of the README: `make demo` (the main job) and `make test` (the
# whole suite). Each creates .venv and installs the pinned dependencies when missing.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml requirements-cuda-nodeps.txt | sha1sum | cut -c1-12)

.PHONY: demo test bench lint chromium docs kernel

$(STAMP): pyproject.toml requirements-cuda-nodeps.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade "pip>=24"
	$(PY) -m pip install -q -e ".[test,docs]"
	# dask-cuda needs rapids-dask-dependency, which only the RAPIDS index has: take it
	# without dependencies plus what it really imports (it is imported only on GPU machines).
	$(PY) -m pip install -q --no-deps -r requirements-cuda-nodeps.txt
	# the kernel the notebooks name, for a JupyterLab of this environment (`make kernel`:
	# for one of another environment)
	$(PY) -m ipykernel install --sys-prefix --name hypersched-nb --display-name "Python (hypersched_nb)"
	rm -f $(VENV)/.installed-*
	touch $@

demo: $(STAMP)
	$(PY) -m hypersched_nb demo

test: $(STAMP) chromium
	$(PY) -m pytest -q --nbval-lax --nbval-current-env

# The notebooks' kernel, registered for this user: a JupyterLab or VS Code of another
# environment then runs them here (docs/guide/notebooks.md).
kernel: $(STAMP)
	$(PY) -m ipykernel install --user --name hypersched-nb --display-name "Python (hypersched_nb)"

# The browser tests drive Debian's chromium through Playwright (never `playwright install`,
# which downloads a browser); without root or apt-get they skip and say why.
chromium:
	@if command -v chromium >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		{ apt-get install -y -q chromium || { apt-get update -q && apt-get install -y -q chromium; }; } >/dev/null || echo "chromium: apt-get failed, browser tests will skip"; \
	else echo "chromium: not installed and not root, browser tests will skip"; fi

# ruff's rules, its formatting and the import-linter contracts of pyproject.toml
LINTED := hypersched_nb tests benchmarks scripts notebooks docs/_ext
lint: $(STAMP)
	$(PY) -m ruff check $(LINTED)
	$(PY) -m ruff format --check $(LINTED)
	$(VENV)/bin/lint-imports
	$(PY) scripts/check_module_size.py hypersched_nb --max-lines 450

# The documentation site (mkdocs.yml): strict, so a broken link or cross-reference fails;
# into site/ (git-ignored). The notebooks are shown with their saved outputs, not run.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet
