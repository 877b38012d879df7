"""Nothing silently skipped: CI fails on a skip it does not expect, and `make test` gets Chromium and bubblewrap
or fails naming the command to run."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SKIPPING = '''
import pytest

def test_runs():
    assert True

def test_needs_shared():
    pytest.skip("../shared/data/alfworld is not here")
'''
BROWSER = '''
import pytest

def test_in_the_browser():
    pytest.skip("needs Chromium: no /usr/bin/chromium")
'''
EXTRAS = '''
import pytest

pytest.importorskip("no_such_module_for_the_skip_policy", reason="needs the game extras")

def test_game():
    assert True
'''


def pytest_run(folder: Path, expect: bool, *files: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("NOOSPHERE_EXPECT_NO_SKIPS", None)
    if expect:
        env["NOOSPHERE_EXPECT_NO_SKIPS"] = "1"
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "tests.skip_policy", "-p", "no:cacheprovider",
                           "-ra", "-q", *files], cwd=folder, env=env, capture_output=True, text=True, timeout=120)


def test_a_skip_ci_does_not_expect_fails_the_session_and_says_why(tmp_path: Path) -> None:
    (tmp_path / "test_shared.py").write_text(SKIPPING)
    (tmp_path / "test_browser.py").write_text(BROWSER)
    (tmp_path / "test_extras.py").write_text(EXTRAS)
    relaxed = pytest_run(tmp_path, False, ".")
    assert relaxed.returncode == 0, relaxed.stdout
    assert "SKIPPED" in relaxed.stdout and "needs Chromium" in relaxed.stdout  # -ra: every reason is printed
    strict = pytest_run(tmp_path, True, ".")
    assert strict.returncode == 1, strict.stdout
    section = strict.stdout.split("CI expects them to run")[1]
    assert "test_browser.py::test_in_the_browser: needs Chromium" in section
    assert "test_extras.py: needs the game extras" in section  # skipped at collection counts too
    assert "../shared" not in section.split("Allowed skips")[0]


def test_a_missing_shared_folder_stays_an_allowed_reported_skip(tmp_path: Path) -> None:
    (tmp_path / "test_shared.py").write_text(SKIPPING)
    strict = pytest_run(tmp_path, True, "test_shared.py")
    assert strict.returncode == 0, strict.stdout
    assert "../shared/data/alfworld is not here" in strict.stdout and "1 passed, 1 skipped" in strict.stdout


def test_ci_turns_the_rule_on_and_make_test_gets_the_system_packages_first() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    assert "export NOOSPHERE_EXPECT_NO_SKIPS=1" in ci and "bubblewrap" in ci
    recipe = (ROOT / "Makefile").read_text().split("\ntest:")[1]
    assert recipe.index(".ci/system-deps") < recipe.index("pytest")


def test_system_deps_fails_naming_the_commands_when_it_cannot_install(tmp_path: Path) -> None:
    """No Chromium, no bubblewrap, no apt-get and no Playwright: the script stops make with the commands to run."""
    tools = tmp_path / "bin"
    tools.mkdir()
    for name in ("bash", "cat", "env", "id", "timeout", "true"):
        found = shutil.which(name)
        assert found, name
        (tools / name).symlink_to(found)
    env = {"PATH": str(tools), "NOOSPHERE_CHROMIUM": str(tmp_path / "no-chromium"), "PYTHON": "false"}
    done = subprocess.run([str(tools / "bash"), str(ROOT / ".ci" / "system-deps")], env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 1, done.stderr
    assert "make test needs chromium bubblewrap" in done.stderr
    assert "sudo apt-get install -y chromium bubblewrap" in done.stderr
    assert "python -m playwright install chromium" in done.stderr
