"""The run options every bench command shares, and `--deterministic` reaching the model."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
import typer.main

from noosphere.cli import make_app
from noosphere.cli.bench_run import RunOptions, member_models
from noosphere.errors import UsageError
from noosphere.llm import Model, open_model
from noosphere.llm.local import LocalBackend
from tests.test_cli import invoke

BENCH_COMMANDS = ("mustard", "bfcl", "gsm8k", "roleplay", "alfworld", "textworld")


def recording_opener(models: list[Model]) -> Any:
    """`open_model` on the scripted backend (every GSM8K answer 7), keeping each model it opens."""
    def opener(model_id: str, **kwargs: Any) -> Model:
        model = open_model(model_id, script=lambda request: json.dumps({"reasoning": "3 + 4", "answer": "7"}),
                           **kwargs)
        models.append(model)
        return model

    return opener


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "gsm.jsonl"
    path.write_text(json.dumps({"question": "Tom has 3 apples and buys 4 more. How many?",
                                "answer": "3+4=7\n#### 7"}) + "\n")
    return path


def gsm8k(data: Path, out: Path, *options: str, model: str = "scripted") -> list[str]:
    return ["bench", "gsm8k", "--system", "base", "--model", model, "--data", str(data), "--out", str(out),
            "--no-cache", "--quiet", *options]


def test_every_bench_command_takes_the_same_run_options() -> None:
    bench = typer.main.get_command(make_app()).commands["bench"]  # type: ignore[attr-defined]
    shared = {field.name for field in fields(RunOptions)}
    for name in BENCH_COMMANDS:
        params = {param.name: param for param in bench.commands[name].params}
        assert shared <= params.keys(), (name, shared - params.keys())
        assert params["deterministic"].default is False and params["parallel"].default == 1, name
        assert "--deterministic" in params["deterministic"].opts and "-m" in params["model"].opts, name
    # the option groups of the workspace and game benchmarks, each command with its own defaults
    workspace = {"system", "iterations", "threshold", "scores"}
    game = {"system", "memory", "retrieve", "k", "max_actions", "graph", "create_only"}
    for name, group, iterations in (("mustard", workspace, 3), ("bfcl", workspace, 2), ("alfworld", game, None),
                                    ("textworld", game, None)):
        params = {param.name: param for param in bench.commands[name].params}
        assert group <= params.keys(), (name, group - params.keys())
        if iterations is not None:
            assert params["iterations"].default == iterations, name


def test_deterministic_reaches_the_backend_is_saved_and_kept_on_resume(data: Path, tmp_path: Path) -> None:
    models: list[Model] = []
    code, _, err = invoke(gsm8k(data, tmp_path / "det", "--deterministic", "--parallel", "2"),
                          recording_opener(models))
    assert code == 0, err
    [run_dir] = list((tmp_path / "det").iterdir())
    assert json.loads((run_dir / "config.json").read_text())["deterministic"] is True
    assert [model.backend.deterministic for model in models] == [True]  # type: ignore[attr-defined]
    assert json.loads((run_dir / "items.jsonl").read_text())["correct"] is True

    (run_dir / "items.jsonl").write_text("")  # the item is scored again, by a resumed session without the flag
    code, _, err = invoke(["bench", "gsm8k", "--resume", str(run_dir), "--no-cache", "--quiet"],
                          recording_opener(models))
    assert code == 0, err
    assert [model.backend.deterministic for model in models] == [True, True]  # type: ignore[attr-defined]


def test_without_the_flag_decoding_is_batched_and_the_config_says_nothing_new(data: Path, tmp_path: Path) -> None:
    models: list[Model] = []
    code, _, err = invoke(gsm8k(data, tmp_path / "plain"), recording_opener(models))
    assert code == 0, err
    [run_dir] = list((tmp_path / "plain").iterdir())
    assert "deterministic" not in json.loads((run_dir / "config.json").read_text())
    assert [model.backend.deterministic for model in models] == [False]  # type: ignore[attr-defined]
    code, _, err = invoke(["bench", "gsm8k", "--resume", str(run_dir), "--deterministic", "--quiet"],
                          recording_opener(models))
    assert code == 2 and "--deterministic True (the run has False)" in err, err  # not silently batched


def test_deterministic_on_a_provider_is_refused_before_a_run_folder_is_made(data: Path, tmp_path: Path) -> None:
    models: list[Model] = []
    code, _, err = invoke(gsm8k(data, tmp_path / "provider", "--deterministic", model="litellm:openai/gpt-4o"),
                          recording_opener(models))
    assert code == 2 and "cannot decode deterministically" in err and "local:" in err, err
    assert models == [] and not (tmp_path / "provider").exists()
    with pytest.raises(UsageError, match="cannot decode deterministically"):
        open_model("litellm:openai/gpt-4o", deterministic=True)


def test_deterministic_decoding_keeps_its_own_cache_entries() -> None:
    """An answer decoded in a batch is never taken from the cache for a deterministic run (nothing is loaded)."""
    batched = LocalBackend("local:x", Path("x.gguf"), fingerprint="gguf:abc")
    alone = LocalBackend("local:x", Path("x.gguf"), fingerprint="gguf:abc", deterministic=True)
    assert batched.fingerprint == "gguf:abc" and alone.fingerprint != batched.fingerprint


def test_a_society_member_of_another_model_is_opened_beside_the_run_s_with_its_options() -> None:
    """`member_models`: the run's own model for its id; another id into the same trace, ledger, cache and settings,
    and deterministic when the run is (an embodied or GSM8K society's second model decodes as the first does)."""
    asked: list[tuple[str, dict[str, Any]]] = []
    llm = open_model("scripted", script=["7"])

    def opener(model_id: str, **kwargs: Any) -> Model:
        asked.append((model_id, kwargs))
        return open_model("scripted", script=["7"], **kwargs)

    members = member_models(opener, {"model": "scripted", "deterministic": True}, llm)
    assert members("scripted") is llm and asked == []
    other = members("local:another")
    assert other is not llm and other.backend.deterministic  # type: ignore[attr-defined]
    assert asked == [("local:another", {"trace": llm.trace, "ledger": llm.ledger, "cache": llm.cache,
                                        "settings": llm.settings, "deterministic": True})]
    member_models(opener, {"model": "scripted"}, llm)("local:another")
    assert "deterministic" not in asked[-1][1]


def test_a_resume_refuses_a_setting_other_than_the_runs_own_and_takes_the_same_again(data: Path,
                                                                                    tmp_path: Path) -> None:
    """`--system society` on a base run was ignored silently; now it is refused, before the run reopens, as is a
    limit smaller than the run's own. Repeating the run's own settings, or changing how it goes on (`--parallel`,
    `--budget`), is fine."""
    models: list[Model] = []
    data.write_text(data.read_text() * 3)  # three problems
    code, _, err = invoke(gsm8k(data, tmp_path / "runs", "--limit", "2"), recording_opener(models))
    assert code == 0, err
    [run_dir] = list((tmp_path / "runs").iterdir())
    before = (run_dir / "result.json").read_text(), (run_dir / "config.json").read_text()
    for changed, says in ((["--limit", "1"], "--limit 1 (the run has 2; a resume may grow a run's limit, never "
                                             "shrink it)"), (["--system", "society"], "--system")):
        code, _, err = invoke(["bench", "gsm8k", "--resume", str(run_dir), *changed, "--no-cache", "--quiet"],
                              recording_opener(models))
        assert code == 2 and says in err and "keeps the settings it was made with" in err, err
        assert ((run_dir / "result.json").read_text(), (run_dir / "config.json").read_text()) == before
    code, _, err = invoke(["bench", "gsm8k", "--resume", str(run_dir), "--limit", "2", "--data", str(data),
                           "--parallel", "2", "--no-cache", "--quiet"], recording_opener(models))
    assert code == 0, err


def test_a_larger_limit_grows_a_finished_run_and_scores_only_the_new_items(data: Path, tmp_path: Path) -> None:
    """A run sized to the compute at hand grows later: `--resume RUN --limit N` scores items it had not reached,
    keeps the rows it has, reports them all, and the next resume keeps the new limit. A run made without a limit
    scores every item already and is not grown."""
    data.write_text("".join(json.dumps({"question": f"What is {n} + 4?", "answer": f"#### {n + 4}"}) + "\n"
                            for n in range(4)))
    asked: list[str] = []

    def opener(model_id: str, **kwargs: Any) -> Model:
        def answer(request: Any) -> str:
            asked.append(request.messages[-1].content)
            return json.dumps({"reasoning": "adding", "answer": "4"})
        return open_model(model_id, script=answer, **kwargs)

    code, _, err = invoke(gsm8k(data, tmp_path / "runs", "--limit", "1"), opener)
    assert code == 0, err
    [run_dir] = list((tmp_path / "runs").iterdir())
    first = (run_dir / "items.jsonl").read_text()
    assert len(asked) == 1 and "0 + 4" in asked[0]
    code, _, err = invoke(["bench", "gsm8k", "--resume", str(run_dir), "--limit", "3", "--no-cache", "--quiet"],
                          opener)
    assert code == 0, err
    assert len(asked) == 3 and "1 + 4" in asked[1] + asked[2] and "2 + 4" in asked[1] + asked[2]
    rows = [json.loads(line) for line in (run_dir / "items.jsonl").read_text().splitlines()]
    assert (run_dir / "items.jsonl").read_text().startswith(first) and len(rows) == 3
    assert json.loads((run_dir / "config.json").read_text())["limit"] == 3
    report = json.loads((run_dir / "report.json").read_text())
    assert report["metrics"]["n"] == 3 and report["metrics"]["accuracy"] == round(100 / 3, 2)
    assert json.loads((run_dir / "result.json").read_text())["status"] == "ok"
    code, _, err = invoke(["bench", "gsm8k", "--resume", str(run_dir), "--no-cache", "--quiet"], opener)
    assert code == 0 and len(asked) == 3, err  # the grown limit is the run's own now: nothing left to score

    code, _, err = invoke(gsm8k(data, tmp_path / "all"), opener)
    assert code == 0, err
    [whole] = list((tmp_path / "all").iterdir())
    code, _, err = invoke(["bench", "gsm8k", "--resume", str(whole), "--limit", "9", "--no-cache", "--quiet"],
                          opener)
    assert code == 2 and "--limit 9 (the run has no limit: it scores every item)" in err, err


def test_a_run_keeps_its_own_calls_so_a_resume_on_a_fresh_machine_replays_them(
        data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each session here starts on a new machine with an empty user cache: the run folder's `calls.sqlite`, kept
    with the results, is what lets a resume replay the calls of a game that was cut short."""
    import noosphere.cli.ask as ask

    asked: list[str] = []

    def opener(model_id: str, **kwargs: Any) -> Model:
        def answer(request: Any) -> str:
            asked.append(request.messages[-1].content)
            return json.dumps({"reasoning": "3 + 4", "answer": "7"})
        model = open_model(model_id, script=answer, **kwargs)
        model.backend._identity = "the same model"  # type: ignore[attr-defined]  # as weights are, session to session
        return model

    monkeypatch.setattr(ask, "default_cache_dir", lambda: tmp_path / "first-machine")
    args = [arg for arg in gsm8k(data, tmp_path / "runs") if arg != "--no-cache"]
    code, _, err = invoke(args, opener)
    assert code == 0, err
    assert len(asked) == 1
    [run_dir] = list((tmp_path / "runs").iterdir())
    assert (run_dir / "calls.sqlite").exists() and (tmp_path / "first-machine" / "calls.sqlite").exists()
    (run_dir / "items.jsonl").write_text("")  # the item was in flight when the session ended
    monkeypatch.setattr(ask, "default_cache_dir", lambda: tmp_path / "second-machine")  # an empty user cache
    code, _, err = invoke(["bench", "gsm8k", "--resume", str(run_dir), "--quiet"], opener)
    assert code == 0, err
    assert len(asked) == 1  # replayed from the run's own calls, not asked again
    assert json.loads((run_dir / "items.jsonl").read_text())["correct"] is True
    (run_dir / "calls.sqlite").unlink()
    (run_dir / "items.jsonl").write_text("")
    monkeypatch.setattr(ask, "default_cache_dir", lambda: tmp_path / "third-machine")
    code, _, err = invoke(["bench", "gsm8k", "--resume", str(run_dir), "--quiet"], opener)
    assert code == 0 and len(asked) == 2, err  # without the run's file the call is asked again


def test_a_resume_refuses_another_out_and_takes_the_folder_the_run_is_in(data: Path, tmp_path: Path) -> None:
    """--out is not saved: on a resume another folder was ignored silently, the results written to the run's own
    folder elsewhere; now it is refused, naming where the run is, and the folder the run is in is taken."""
    models: list[Model] = []
    code, _, err = invoke(gsm8k(data, tmp_path / "runs"), recording_opener(models))
    assert code == 0, err
    [run_dir] = list((tmp_path / "runs").iterdir())
    before = (run_dir / "result.json").read_text()
    code, _, err = invoke(["bench", "gsm8k", "--resume", str(run_dir), "--out", str(tmp_path / "elsewhere"),
                           "--quiet", "--no-cache"], recording_opener(models))
    assert code == 2 and f"--out {tmp_path / 'elsewhere'} (the run's folder is in {tmp_path / 'runs'})" in err, err
    assert (run_dir / "result.json").read_text() == before and not (tmp_path / "elsewhere").exists()
    assert len(models) == 1  # the first run's
    code, _, err = invoke(["bench", "gsm8k", "--resume", str(run_dir), "--out", str(tmp_path / "runs"), "--quiet",
                           "--no-cache"], recording_opener(models))
    assert code == 0, err
