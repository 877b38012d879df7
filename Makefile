# The two commands of the README. `make test` is what CI runs.
PIP ?= python -m pip

.PHONY: install test lint docs

install:
	$(PIP) install -e ".[qwen15]"

# Chromium (browser tests) and bubblewrap (sandbox tests) come from the system: .ci/system-deps installs them
# (apt-get as root or with password-less sudo, else Playwright's download) or stops, naming the command to run.
# pytest prints every skip's reason; CI (.ci/run) also fails on any skip but a missing ../shared.
# The suite runs on TEST_WORKERS pytest-xdist workers (two cores here: 7.5 minutes instead of 10 in one process);
# `python -m pytest` alone runs it in one process, `-n 0` too.
TEST_WORKERS ?= 2
test:
	$(PIP) install -e ".[test,docs]"
	bash .ci/system-deps
	ruff check noosphere tests benchmarks
	lint-imports  # the import layers of pyproject's [tool.importlinter]
	$(MAKE) --no-print-directory docs
	python -m pytest -n $(TEST_WORKERS)

# The docs site (mkdocs.yml, docs/; needs the docs extra, which `make test` installs): the README's and the pages'
# examples run on the scripted model, then a strict build into build/site (any warning, a broken link too, fails it).
docs:
	python docs/check_examples.py
	NO_MKDOCS_2_WARNING=1 python -m mkdocs build --strict
