"""CI's rule on skipped tests: nothing it expects to run may be skipped silently.

pytest prints every skip with its reason (`-ra` in pyproject.toml). With NOOSPHERE_EXPECT_NO_SKIPS=1 (set by
`.ci/run`) a skipped test also fails the session, unless its reason names one of the `ALLOWED` conditions:
things a clean clone on a CI machine legitimately lacks. A missing Chromium, bubblewrap, weights package or
extra (the game environments, MiniLM) is not among them: `make test` installs those, so a skip for one of them
means the setup is broken, and CI says so instead of going green with fewer tests.

The hooks are imported by `tests/conftest.py`; `python -m pytest -p tests.skip_policy` loads them elsewhere.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import pytest

ENV = "NOOSPHERE_EXPECT_NO_SKIPS"

ALLOWED: dict[str, str] = {
    "../shared": "benchmark data and games live beside a clone, in ../shared; a fresh clone (CI's) has none",
    "as another user": "a sandbox check that only means something when the tests run as root",
    "no control group can be made here": "a machine that gives this user no cgroup (not root, no delegated v2 "
                                         "subtree): the sandbox then has per-process limits only, and says so",
}
"""Reason fragment -> why a skip with it is no fault of the setup."""

GAME_EXTRAS = "needs the game extras (pip install -e '.[envs]'; make test installs them)"
"""The reason of every test that needs TextWorld or ALFWorld's package (not a fault CI allows)."""


def shared_data(name: str) -> str:
    """The reason of a test that needs benchmark data from ../shared (allowed: a fresh clone has none)."""
    return f"needs ../shared/data/{name} beside the clone (a fresh clone has none)"


def expecting_no_skips() -> bool:
    return os.environ.get(ENV, "") not in ("", "0")


def skip_reason(report: Any) -> str:
    """The reason a skip report gives (`Skipped: ` and the like taken off)."""
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return reason.removeprefix("Skipped: ")


def allowed(reason: str) -> bool:
    return any(fragment in reason for fragment in ALLOWED)


def unexpected_skips(reports: Iterable[Any]) -> list[tuple[str, str]]:
    """(test or file, reason) of every skip CI does not allow, in the order they happened."""
    return [(report.nodeid or str(getattr(report, "fspath", "")), reason) for report in reports
            if not allowed(reason := skip_reason(report))]


def _skipped(config: pytest.Config) -> list[Any]:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    return list(reporter.stats.get("skipped", [])) if reporter is not None else []


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if not expecting_no_skips():
        return
    found = unexpected_skips(_skipped(config))
    if not found:
        return
    terminalreporter.section(f"skipped, but CI expects them to run ({ENV}=1)", sep="=", red=True, bold=True)
    for where, reason in found:
        terminalreporter.line(f"{where}: {reason}")
    terminalreporter.line("Allowed skips name one of: " + "; ".join(f"{k!r} ({v})" for k, v in ALLOWED.items()))


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if expecting_no_skips() and unexpected_skips(_skipped(session.config)) and session.exitstatus in (
            pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
