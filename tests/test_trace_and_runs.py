"""Run folders and traces: typed events round-trip, secrets never reach disk."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from noosphere.bench.runner import Scored, run_items
from noosphere.errors import BudgetExceededError, UsageError
from noosphere.llm import Budget, Model, ScriptedBackend
from noosphere.runs import Run
from noosphere.trace import REDACTED, Event, ModelCall, Redactor, Trace, read_trace


async def test_run_folder_has_trace_config_and_result(tmp_path: Path) -> None:
    with Run.create(tmp_path, command="ask", config={"query": "q"}) as run:
        model = Model(ScriptedBackend(["an answer"]), trace=run.trace, ledger=run.ledger)
        await model.complete("q", agent="base")
        run.finish({"answer": "an answer"})
    assert (run.directory / "config.json").is_file()
    result = json.loads((run.directory / "result.json").read_text())
    assert result["status"] == "ok" and result["answer"] == "an answer"
    assert result["usage"]["by_agent"]["base"]["calls"] == 1
    events = list(read_trace(run.directory / "trace.jsonl"))
    assert [e.kind for e in events] == ["run_started", "model_call", "run_finished"]
    assert isinstance(events[1], ModelCall) and events[1].response == "an answer"


async def test_a_resumed_run_reports_what_every_session_spent(tmp_path: Path) -> None:
    with Run.create(tmp_path, command="bench", config={"benchmark": "toy"}) as first:
        model = Model(ScriptedBackend(["one", "two"]), trace=first.trace, ledger=first.ledger)
        await model.complete("q", agent="a")
        await model.complete("q", agent="b")
    before = json.loads((first.directory / "result.json").read_text())
    before["seconds"] = 1000.0  # as if the first session had run long
    (first.directory / "result.json").write_text(json.dumps(before))
    with Run.resume(first.directory) as again:
        await Model(ScriptedBackend(["three"]), trace=again.trace, ledger=again.ledger).complete("q", agent="a")
    after = json.loads((first.directory / "result.json").read_text())
    assert after["sessions"] == 2 and 1000.0 <= after["seconds"] < 1100.0
    assert [p.name for p in first.directory.iterdir() if p.name.endswith(".partial")] == []  # no partial file left
    assert after["usage"]["total"]["calls"] == 3
    assert {name: row["calls"] for name, row in after["usage"]["by_agent"].items()} == {"a": 2, "b": 1}
    tokens = after["usage"]["total"]["prompt_tokens"]
    assert tokens > before["usage"]["total"]["prompt_tokens"] and after["usage"]["total"]["cost_usd"] is None
    with Run.resume(first.directory):  # a finished run resumed with nothing left to do loses nothing
        pass
    assert json.loads((first.directory / "result.json").read_text())["usage"]["total"]["calls"] == 3


async def test_a_budget_bounds_a_resumed_run_across_its_sessions(tmp_path: Path) -> None:
    with Run.create(tmp_path, command="bench", config={}, budget=Budget(max_calls=3)) as first:
        model = Model(ScriptedBackend(["one", "two"]), trace=first.trace, ledger=first.ledger)
        await model.complete("q", agent="a")
        await model.complete("q", agent="a")
    with Run.resume(first.directory, budget=Budget(max_calls=3)) as again:
        model = Model(ScriptedBackend(["three", "four"]), trace=again.trace, ledger=again.ledger)
        await model.complete("q", agent="a")  # the third call of the run
        with pytest.raises(BudgetExceededError) as raised:
            await model.complete("q", agent="a")
    assert (raised.value.limit, raised.value.used) == (3, 3)
    assert json.loads((first.directory / "result.json").read_text())["usage"]["total"]["calls"] == 3


async def test_a_session_killed_outright_still_counts_toward_the_budget_of_the_resume(tmp_path: Path) -> None:
    first = Run.create(tmp_path, command="bench", config={}, budget=Budget(max_calls=3))
    model = Model(ScriptedBackend(["one", "two"]), trace=first.trace, ledger=first.ledger)

    async def solve(item: str) -> Scored:
        return Scored((await model.complete(item, agent="a")).text, True, {})

    await run_items(first, [("1", "q1", None), ("2", "q2", None)], solve, show_progress=False)
    first.trace.close()  # killed here: `finish` never ran, so only the checkpoint after each item is left
    saved = json.loads((first.directory / "result.json").read_text())
    assert (saved["status"], saved["sessions"], saved["usage"]["total"]["calls"]) == ("running", 1, 2)
    with Run.resume(first.directory, budget=Budget(max_calls=3)) as again:
        model = Model(ScriptedBackend(["three", "four"]), trace=again.trace, ledger=again.ledger)
        await model.complete("q", agent="a")  # the third call of the run
        with pytest.raises(BudgetExceededError):
            await model.complete("q", agent="a")
    after = json.loads((first.directory / "result.json").read_text())
    assert (after["sessions"], after["usage"]["total"]["calls"]) == (2, 3)


def test_a_created_run_has_had_no_session_yet(tmp_path: Path) -> None:
    Run.create(tmp_path, command="bench", config={"benchmark": "toy"}).finish({}, status="created")
    [folder] = list(tmp_path.iterdir())
    with Run.resume(folder):
        pass
    assert json.loads((folder / "result.json").read_text())["sessions"] == 1


def test_failed_run_still_writes_its_result(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), Run.create(tmp_path, command="ask") as run:
        raise RuntimeError("boom")
    result = json.loads((run.directory / "result.json").read_text())
    assert result["status"] == "failed" and "boom" in result["error"]


def test_secrets_from_environment_and_key_shapes_are_redacted(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_PROVIDER_API_KEY", "very-secret-value-123")
    path = tmp_path / "trace.jsonl"
    trace = Trace(path, redactor=Redactor.from_environment())
    trace.emit(ModelCall(model="m", messages=[{"role": "user", "content": "key very-secret-value-123"}],
                         response="use sk-abcdefghijklmnopqrstuvwx please"))
    trace.emit(Event(kind="soc_image", location="https://img.example/p.png?se=2026&sp=r&sig=AbC%2Bd3&Key=k"))
    trace.emit(Event(kind="code", text='requests.get("https://api.example/v1?token=tok123")\nprint(1)'))
    trace.emit(Event(kind="html", text='<img src="https://img.example/q.png?se=1&amp;sig=Zz9x">'))
    trace.close()
    text = path.read_text()
    [_, _, code, _] = [json.loads(line) for line in text.splitlines()]  # every line still JSON: quotes stay escaped
    assert code["text"] == 'requests.get("https://api.example/v1?token=[REDACTED]")\nprint(1)'
    assert "very-secret-value-123" not in text and "sk-abcdefghijklmnop" not in text and "AbC" not in text
    assert "Zz9x" not in text  # a parameter after `&amp;` (a link copied out of HTML) is found too
    assert "https://img.example/p.png?se=2026&sp=r&sig=" in text  # where the image is stays readable
    assert text.count(REDACTED) == 6


def test_credentials_in_urls_and_secrets_with_slashes_are_redacted(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")  # base64 has "/"
    monkeypatch.setenv("MY_KEY_FILE", str(tmp_path))  # a path under a secret-sounding name is not a secret
    redact = Redactor.from_environment()
    assert redact("failed: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY") == f"failed: {REDACTED}"
    assert redact(f"read {tmp_path}") == f"read {tmp_path}"
    assert redact("litellm:openai/m@https://bob:hunter2@h.example/v1") == (
        f"litellm:openai/m@https://{REDACTED}@h.example/v1")
    assert redact("see http://h.example/v1 and mailto:a@b") == "see http://h.example/v1 and mailto:a@b"


def test_a_long_run_of_letters_is_redacted_in_one_pass() -> None:
    """A prompt holding a long run of letters (a DNA sequence, a hash, a view given with `--text`): every letter
    began a scan for a URL's scheme to the run's end, so writing one trace event of 200,000 of them took minutes
    (a run that looked hung). A credential after the run is still found."""
    text = "ACGT" * 50_000 + " https://bob:hunter2@h.example/v1"
    assert Redactor()(text) == "ACGT" * 50_000 + f" https://{REDACTED}@h.example/v1"


def test_a_model_id_with_a_credential_in_its_url_is_refused() -> None:
    from noosphere.errors import UsageError
    from noosphere.llm.registry import split_api_base

    assert split_api_base("openai/m@http://127.0.0.1:8000/v1") == ("openai/m", "http://127.0.0.1:8000/v1")
    for url in ("https://bob:hunter2@h.example/v1", "https://h.example/v1?api_key=abc"):
        with pytest.raises(UsageError, match="in the environment"):
            split_api_base(f"openai/m@{url}")


def test_a_session_after_a_kill_mid_line_starts_its_events_on_a_line_of_their_own(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    path.write_text('{"kind": "before", "ts": 1.0}\n{"kind": "model_call", "ts": 2.0, "respo')  # killed mid-line
    trace = Trace(path)
    trace.emit(Event(kind="after"))
    trace.close()
    assert [event.kind for event in read_trace(path)] == ["before", "after"]  # the torn line alone is lost


def test_unknown_event_kinds_load_as_plain_events_and_torn_lines_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    path.write_text('{"kind": "from_the_future", "ts": 1.0, "x": 1}\n{"kind": "model_ca')
    [event] = list(read_trace(path))
    assert type(event) is Event and event.kind == "from_the_future"


def test_a_run_folder_in_use_is_refused_to_a_second_run_until_the_first_finishes(tmp_path: Path) -> None:

    import subprocess
    import sys

    first = Run.create(tmp_path, command="test", config={"n": 1})
    def files() -> dict[str, bytes]:  # not the lock: closing any handle on it would release this process's lock
        return {p.name: p.read_bytes() for p in first.directory.iterdir() if p.is_file() and p.name != ".lock"}

    before = files()
    other = [sys.executable, "-c", f"from noosphere.runs import Run; Run.resume({str(first.directory)!r})"]
    refused = subprocess.run(other, capture_output=True, text=True, timeout=120)
    assert refused.returncode != 0 and "is in use by another run" in refused.stderr
    assert files() == before  # untouched
    first.finish({"done": True})
    assert subprocess.run(other, capture_output=True, text=True, timeout=120).returncode == 0


def test_a_resumed_session_withdrawn_before_any_item_leaves_the_folder_as_it_was(tmp_path: Path) -> None:
    """A usage error while a resumed run prepares (a model that cannot do what it asks, a missing package): its
    report, totals, config (a new --budget) and trace stay as the earlier session left them."""
    with Run.create(tmp_path, command="bench", config={"benchmark": "toy"}) as first:
        first.finish({"report": {"accuracy": 1.0}})

    def files() -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in first.directory.iterdir() if p.is_file() and p.name != ".lock"}

    before = files()
    with Run.resume(first.directory, budget=Budget(max_calls=5)) as again:
        assert again.config["budget"] == {"max_calls": 5}
        again.withdraw()
    assert files() == before
    new = Run.create(tmp_path / "new", command="bench", config={})
    new.withdraw()  # a new run's folder goes
    assert not new.directory.exists()


@pytest.mark.parametrize(("budget", "said"), [
    ({"max_call": 5}, "budget key 'max_call': Extra inputs are not permitted"),
    ({"max_calls": "5"}, "budget key 'max_calls': Input should be a valid integer"),
    ({"max_cost_usd": 0}, "budget key 'max_cost_usd': Input should be greater than 0"),
    ([500], "budget Input should be a valid dictionary"),
], ids=["unknown limit", "text", "zero", "a list"])
def test_a_saved_budget_edited_by_hand_is_refused_before_the_run_is_reopened(tmp_path: Path, budget: object,
                                                                            said: str) -> None:
    """Budget(**saved) was a TypeError traceback from every --resume (ask, bench, together); "5" calls a TypeError at
    the first call, mid-run."""
    with Run.create(tmp_path, command="bench", config={"benchmark": "toy"}) as first:
        pass
    config = json.loads((first.directory / "config.json").read_text())
    (first.directory / "config.json").write_text(json.dumps({**config, "budget": budget}))
    with pytest.raises(UsageError, match=f"{first.directory} is not a run folder that can be resumed") as refused:
        Run.resume(first.directory)
    assert said in str(refused.value)


def test_a_run_folder_whose_config_cannot_be_written_is_a_usage_error(tmp_path: Path) -> None:
    """A resumed folder made read-only (`chattr +i`): a PermissionError traceback from writing config.json before.
    A folder in the way of the temporary file fails the same write, as root too."""
    with Run.create(tmp_path, command="bench", config={"benchmark": "toy"}) as first:
        first.finish({"report": {"accuracy": 1.0}})
    (first.directory / ".config.json.partial").mkdir()
    before = {p.name: p.read_bytes() for p in first.directory.iterdir() if p.is_file()}
    with pytest.raises(UsageError, match=r"cannot write .*config\.json \(Is a directory\); the run folder must be "
                                         "writable"):
        Run.resume(first.directory)
    assert {p.name: p.read_bytes() for p in first.directory.iterdir() if p.is_file()} == before
    (first.directory / ".config.json.partial").rmdir()
    Run.resume(first.directory).finish({})  # its lock was let go


def test_a_discarded_run_takes_the_out_folder_it_made_and_leaves_one_that_was_there(tmp_path: Path) -> None:
    """A run refused as its model opened (`--model nosuch`) left an empty `--out` folder behind (and a suite, one
    per configuration)."""
    run = Run.create(tmp_path / "new" / "runs", command="bench", config={})
    assert run.directory.is_dir()
    run.discard()
    assert list(tmp_path.iterdir()) == []
    kept = tmp_path / "kept"
    (kept / "runs").mkdir(parents=True)
    (kept / "notes.txt").write_text("mine")
    beside = Run.create(kept / "runs" / "deeper", command="bench", config={})
    beside.discard()
    assert sorted(p.relative_to(kept).as_posix() for p in kept.rglob("*")) == ["notes.txt", "runs"]


def test_trace_show_says_how_many_workspace_steps_it_left_out(tmp_path: Path) -> None:
    """Before, a workspace of more than 200 steps was cut at 200 without a word."""
    from noosphere.workspace.events import LinkChanged
    from tests.test_cli import invoke

    with Run(tmp_path / "run", command="ask", config={}) as run:
        for step in range(250):
            run.trace.emit(LinkChanged(iteration=1, a="x", b=f"p{step}", change="created", weight=1.0))
    code, out, _ = invoke(["trace", "show", str(tmp_path / "run")])
    assert code == 0 and "link x - p199 created" in out and "link x - p200" not in out
    assert "... and 50 more steps" in out
