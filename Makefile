# The two commands a fresh clone needs: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip

.PHONY: demo test venv clean bench system-deps api-docs docs serve-demo mutation

# Debian packages some tests need: the Fashion-MNIST IDX files, a headless browser for
# the web-page tests, and WordNet 3.0 (related-tag exclusion, read by nltk offline).
# Installed where we can (root with apt-get); otherwise those tests skip and say why in
# pytest's summary.
SYSTEM_PACKAGES := dataset-fashion-mnist chromium chromium-driver wordnet-base wordnet-sense-index

# The demo venv also holds what the README walkthrough runs on your own images:
# dense SIFT (OpenCV, the bow extra) and the default CNN features (torch, the cnn extra).
$(VENV)/.installed-demo: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	# torch first, pinned: the CPU build; an unpinned one pulls multi-GB CUDA packages.
	$(PIP) install --quiet "torch==2.13.0"
	$(PIP) install --quiet -e ".[data,bow,cnn]"
	touch $@

$(VENV)/.installed-test: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	# torch first, pinned: the CPU build; an unpinned one pulls multi-GB CUDA packages.
	$(PIP) install --quiet "torch==2.13.0"
	$(PIP) install --quiet -e ".[test,data,cnn,bow,distributed,serve,text,conse,wordnet,docs]"
	touch $@ $(VENV)/.installed-demo

demo: $(VENV)/.installed-demo
	$(VENV)/bin/hardneg demo --out demo-output

system-deps:
	@missing=$$(for p in $(SYSTEM_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || printf '%s ' $$p; done); \
	if [ -z "$$missing" ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing Debian packages for the tests: $$missing"; \
		(apt-get install -y -qq $$missing >/dev/null 2>&1 || (apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq $$missing >/dev/null 2>&1)) \
		|| echo "could not install $$missing; the tests that need them will skip"; \
	else echo "not installing $$missing (needs root and apt-get): the tests that need them will skip; 'sudo apt-get install $$missing' enables them"; fi

test: $(VENV)/.installed-test system-deps
	$(VENV)/bin/ruff check hardneg tests benchmarks docs/generate.py docs/hooks.py
	$(VENV)/bin/mypy
	# two workers, one test file each at a time (module fixtures are built once): both cores busy
	$(PY) -m pytest -q -n 2 --dist loadfile

$(VENV)/.installed-serve: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -e ".[data,serve]"
	touch $@

# The search service and its web page over a demo store (prints the URL).
serve-demo: $(VENV)/.installed-serve
	$(VENV)/bin/hardneg serve-demo --out serve-demo

# The documentation site into site/ (MkDocs + Material + mkdocstrings; warnings are errors).
# docs/hooks.py runs docs/generate.py first: every results table and figure is rebuilt
# from benchmarks/results/*.json; it then turns docstring roles into links, marks up the
# formulas and copies MathJax (the docs extra's django-static-mathjax) into the site, which
# works offline. tests/docs/test_docs_site.py (part of `make test`) builds it too.
docs: $(VENV)/.installed-demo
	$(PIP) install --quiet -e ".[docs]"
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

# kept as an alias of `make docs` (the API reference is now part of the site)
api-docs: docs

# Mutation kill rate of the learners' tests on a seeded sample of mutmut's mutants
# (a full run is ~7,000 mutants, about two hours on two cores); JSON in benchmarks/results/.
mutation: $(VENV)/.installed-test
	$(PIP) install --quiet -e ".[mutation]"
	$(VENV)/bin/python benchmarks/mutation_sample.py

clean:
	rm -rf $(VENV) demo-output serve-demo .pytest_cache site docs/generated
