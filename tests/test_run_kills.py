"""Run folders survive kills: a benchmark killed outright (mid-run, mid-write) resumes with every item exactly once,
and `ask` stopped by SIGTERM still writes its result. Each test that kills runs the CLI in a process of its own
(`tests/bench_driver.py`, a scripted model) and kills it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ROW = {"question": "Tom has 3 apples and buys 4 more. How many now?", "answer": "3 + 4 = 7\n#### 7"}
ITEMS = 12


def _driver(args: list[str], **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "tests.bench_driver", *args], cwd=REPO, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "COLUMNS": "200", **env})


def _finish(process: subprocess.Popen[str], timeout: float = 120) -> tuple[int, str]:
    _, err = process.communicate(timeout=timeout)
    return process.returncode, err


def _data(tmp_path: Path) -> Path:
    path = tmp_path / "gsm8k.jsonl"
    path.write_text("".join(json.dumps(ROW) + "\n" for _ in range(ITEMS)))
    return path


def _start(tmp_path: Path, **env: str) -> subprocess.Popen[str]:
    return _driver(["bench", "gsm8k", "--system", "base", "--data", str(_data(tmp_path)), "--out",
                    str(tmp_path / "runs"), "--no-cache", "--quiet"], **env)


def _valid_ids(items: Path) -> Counter[str]:
    ids: Counter[str] = Counter()
    for line in items.read_bytes().splitlines():
        try:
            ids[json.loads(line)["id"]] += 1
        except (ValueError, KeyError):
            continue
    return ids


def _resume(folder: Path) -> tuple[int, str]:
    return _finish(_driver(["bench", "gsm8k", "--resume", str(folder), "--no-cache", "--quiet"]))


def _wait_for_rows(items: Path, rows: int, process: subprocess.Popen[str], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if items.exists() and len(items.read_bytes().splitlines()) >= rows:
            return
        assert process.poll() is None, process.communicate()
        time.sleep(0.05)
    raise AssertionError(f"no {rows} rows in {items} after {timeout} s")


def _expected_ids() -> list[str]:
    return [f"gsm8k-{index:04d}" for index in range(ITEMS)]


def test_sigkill_mid_run_then_resume_scores_every_item_exactly_once(tmp_path: Path) -> None:
    process = _start(tmp_path, DRIVER_LATENCY="0.3")
    runs = tmp_path / "runs"
    deadline = time.monotonic() + 120
    while not (runs.exists() and any(runs.iterdir())) and time.monotonic() < deadline:
        time.sleep(0.05)
    [folder] = runs.iterdir()
    _wait_for_rows(folder / "items.jsonl", 3, process)
    process.send_signal(signal.SIGKILL)
    code, _ = _finish(process)
    assert code == -signal.SIGKILL
    before = _valid_ids(folder / "items.jsonl")
    assert 3 <= sum(before.values()) < ITEMS  # killed mid-run: some scored, not all
    assert json.loads((folder / "result.json").read_text())["status"] == "running"  # what a kill leaves

    code, err = _resume(folder)
    assert code == 0, err
    after = _valid_ids(folder / "items.jsonl")
    assert sorted(after) == _expected_ids() and set(after.values()) == {1}, after  # each item exactly once
    result = json.loads((folder / "result.json").read_text())
    assert result["status"] == "ok" and result["sessions"] == 2 and result["report"]["metrics"]["n"] == ITEMS


def test_killed_while_writing_a_row_the_torn_row_is_told_and_scored_again(tmp_path: Path) -> None:
    code, _ = _finish(_start(tmp_path, DRIVER_KILL_ROW="4"))
    assert code == -signal.SIGKILL
    [folder] = (tmp_path / "runs").iterdir()
    items = folder / "items.jsonl"
    assert not items.read_bytes().endswith(b"\n")  # the fourth row is torn: half a line, no newline
    assert sum(_valid_ids(items).values()) == 3

    code, err = _resume(folder)
    assert code == 0, err
    assert "items.jsonl:4: not JSON" in err.replace("\n", ""), err  # told by its line, then skipped
    after = _valid_ids(items)
    assert sorted(after) == _expected_ids() and set(after.values()) == {1}, after
    assert json.loads((folder / "result.json").read_text())["status"] == "ok"


def test_killed_while_replacing_result_json_leaves_the_last_one_whole(tmp_path: Path) -> None:
    code, _ = _finish(_start(tmp_path, DRIVER_KILL_RESULT="3"))  # the 3rd: after the second row is scored
    assert code == -signal.SIGKILL
    [folder] = (tmp_path / "runs").iterdir()
    result = json.loads((folder / "result.json").read_text())  # whole: the one written before the kill
    assert result["status"] == "running"
    assert (folder / ".result.json.partial").exists()  # the new one never replaced it

    code, err = _resume(folder)
    assert code == 0, err
    after = _valid_ids(folder / "items.jsonl")
    assert sorted(after) == _expected_ids() and set(after.values()) == {1}
    assert json.loads((folder / "result.json").read_text())["status"] == "ok"


def test_ask_stopped_by_sigterm_still_writes_result_json(tmp_path: Path) -> None:
    process = _driver(["ask", "Is it sarcastic?", "--out", str(tmp_path), "--no-cache"], DRIVER_LATENCY="60")
    deadline = time.monotonic() + 120
    trace = None
    while time.monotonic() < deadline:
        found = list(tmp_path.glob("*/trace.jsonl"))
        if found and found[0].stat().st_size:
            trace = found[0]
            break
        assert process.poll() is None, process.communicate()
        time.sleep(0.05)
    assert trace is not None
    time.sleep(0.5)  # into the model call
    process.send_signal(signal.SIGTERM)
    code, err = _finish(process, timeout=60)
    assert code == 130, err
    assert "Traceback" not in err
    result = json.loads((trace.parent / "result.json").read_text())
    assert result["status"] == "interrupted"


@pytest.mark.parametrize("limit", ["0", "-3"])
def test_a_limit_below_one_is_a_usage_error(limit: str, tmp_path: Path) -> None:
    """Nothing to kill here: the CLI runs as `main` runs it, in this process rather than one of its own."""
    from tests.test_hostile_inputs import cli

    outcome = cli(["bench", "gsm8k", "--system", "base", "--data", str(_data(tmp_path)), "--out",
                   str(tmp_path / "runs"), "--limit", limit])
    assert outcome.code == 2 and "--limit" in outcome.err and "Traceback" not in outcome.err
    assert not (tmp_path / "runs").exists()


def test_sigterm_inside_the_event_loop_cancels_its_task_as_ctrl_c_does() -> None:
    """Raised at once, SIGTERM's KeyboardInterrupt came out of whichever task was running (a benchmark item writing
    its row): the loop's teardown printed that task's traceback ("Task exception was never retrieved"). Now the
    loop stops as on Ctrl-C: the running task is cancelled, then asyncio.run raises KeyboardInterrupt."""
    import asyncio

    from noosphere.cli.signals import terminate_as_interrupt

    seen: list[str] = []

    async def item() -> None:
        os.kill(os.getpid(), signal.SIGTERM)  # its handler runs at the next instruction, inside this task
        seen.append("went on")
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    async def main() -> None:
        await asyncio.gather(item())

    # as in the command line's process; a pytest-xdist worker ignores SIGINT, and asyncio.run then leaves Ctrl-C alone
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with terminate_as_interrupt(), pytest.raises(KeyboardInterrupt):
            asyncio.run(main())
    finally:
        signal.signal(signal.SIGINT, before)
    assert seen == ["went on", "cancelled"]
