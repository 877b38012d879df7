# The two commands of the README. `make test` is what CI runs.
PIP ?= python -m pip

.PHONY: install test lint

install:
	$(PIP) install -e ".[qwen15]"

test:
	$(PIP) install -e ".[test]"
	ruff check noosphere tests benchmarks
	python -m pytest
