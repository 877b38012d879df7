"""Every test can fail: the AST pass of `tests/assert_check.py` over this folder, and what it accepts."""

from __future__ import annotations

from pathlib import Path

from tests.assert_check import unchecked, unchecked_in

HELPERS = '''
def check_total(x):
    assert x == 3

class Page:
    def close(self):
        assert not self.errors

def opens():
    return Page()

def build():
    return 1
'''


def names(test_source: str) -> list[str]:
    return [found.name for found in unchecked({"tests/helpers.py": HELPERS, "tests/test_x.py": test_source})]


def test_every_test_in_this_folder_checks_something() -> None:
    found = unchecked_in(Path(__file__).parent)
    assert not found, "tests that cannot fail:\n" + "\n".join(map(str, found))


def test_a_test_without_a_check_is_found_and_one_with_any_kind_of_check_is_not() -> None:
    assert names("def test_runs():\n    build()\n") == ["test_runs"]
    assert names("async def test_runs():\n    await build()\n") == ["test_runs"]
    assert names("class TestIt:\n    def test_runs(self):\n        build()\n") == ["test_runs"]
    assert names("def test_a():\n    assert build() == 1\n") == []
    assert names("import pytest\ndef test_a():\n    with pytest.raises(ValueError):\n        build()\n") == []
    assert names("import pytest\ndef test_a():\n    with pytest.warns(UserWarning):\n        build()\n") == []
    assert names("def test_a():\n    if build():\n        raise AssertionError('built')\n") == []
    assert names("def test_a():\n    def inner():\n        assert build()\n    inner()\n") == []


def test_a_helper_that_checks_counts_through_calls_classes_and_fixtures() -> None:
    assert names("def test_a():\n    check_total(3)\n") == []
    assert names("def test_a():\n    opens().close()\n") == []  # the class's method checks
    assert names("def helper():\n    check_total(3)\ndef test_a():\n    helper()\n") == []  # two levels down
    assert names("def test_a(check_total):\n    build()\n") == []  # a fixture that checks, taken as an argument
    assert names("def test_a(build):\n    build()\n") == ["test_a"]


def test_the_marker_needs_a_reason() -> None:
    assert names("def test_a():  # noassert: only that importing the CLI works\n    build()\n") == []
    assert names("import pytest\n@pytest.mark.slow  # noassert: a smoke run\ndef test_a():\n    build()\n") == []
    assert names("def test_a():  # noassert:\n    build()\n") == ["test_a"]
    assert names("def test_a():\n    build()  # noassert: too late, not on the def line\n") == ["test_a"]
