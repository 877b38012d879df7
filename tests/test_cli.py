"""The CLI end to end on the scripted model, through the same entry point users run."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from noosphere.cli import make_app, run
from noosphere.llm import Model, ScriptedBackend


def scripted_opener(replies: list[str]) -> Any:
    backend = ScriptedBackend(replies)

    def opener(model_id: str, **kwargs: Any) -> Model:
        return Model(backend, **kwargs)

    opener.backend = backend  # type: ignore[attr-defined]
    return opener


@pytest.fixture(autouse=True)
def _wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "240")


def invoke(args: list[str], opener: Any = None) -> tuple[int, str, str]:
    """Run the CLI as `main` does; return the exit code, stdout and stderr."""
    err = Console(record=True, width=240)
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = run(make_app(opener or scripted_opener([])), args, stderr=err)
    return code, buffer.getvalue(), err.export_text()


def test_ask_prints_answer_confidence_and_run_folder(tmp_path: Path) -> None:
    opener = scripted_opener(['{"answer": "Yes, it is sarcastic.", "confidence": 0.9}'])
    code, out, _ = invoke(["ask", "Is it sarcastic? 'Oh great, another Monday.'", "--out", str(tmp_path),
                           "--no-cache", "--seed", "3"], opener)
    assert code == 0, out
    assert "Yes, it is sarcastic." in out and "0.90" in out
    [run_dir] = list(tmp_path.iterdir())
    assert str(run_dir) in out.replace("\n", "")
    result = json.loads((run_dir / "result.json").read_text())
    assert result["answer"] == "Yes, it is sarcastic." and result["confidence"] == 0.9
    config = json.loads((run_dir / "config.json").read_text())
    assert config["seed"] == 3 and config["system"] == "base"
    assert opener.backend.history[0].settings.seed == 3

    code, shown, _ = invoke(["trace", "show", str(run_dir)])
    assert code == 0
    assert "model_call=1" in shown and "Yes, it is sarcastic." in shown and "status=ok" in shown


@pytest.mark.parametrize("answer", ["use [/] to close it", "a list[int], not [bold]x[/bold]"])
def test_an_answer_with_brackets_is_printed_as_written(tmp_path: Path, answer: str) -> None:
    """The answer (and the run folder) went to the terminal as rich markup: `[/]` was a MarkupError traceback after
    the run had finished, `list[int]` printed as `list`. A folder under --out with brackets failed the same way."""
    out = tmp_path / "[/x]"
    code, shown, _ = invoke(["ask", "q", "--out", str(out), "--no-cache"],
                            scripted_opener([json.dumps({"answer": answer, "confidence": 0.5})]))
    [run_dir] = list(out.iterdir())
    assert code == 0 and f"answer: {answer}" in shown and str(run_dir) in shown.replace("\n", ""), shown


def test_a_model_id_with_brackets_is_shown_as_written(tmp_path: Path) -> None:
    """The "loading MODEL" line read the id as rich markup: `--model 'x[/]'` was a MarkupError traceback."""
    code, shown, _ = invoke(["ask", "q", "--model", "x[/]", "--out", str(tmp_path), "--no-cache"],
                            scripted_opener(['{"answer": "ok", "confidence": 0.5}']))
    assert code == 0 and "answer: ok" in shown, shown


def test_unknown_system_is_one_line_with_suggestion(tmp_path: Path) -> None:
    code, _, err = invoke(["ask", "q", "--system", "bse", "--out", str(tmp_path)])
    assert code == 2
    assert err.strip().startswith("error: unknown system 'bse'. Did you mean base")
    assert "Traceback" not in err


def test_unknown_option_is_a_usage_error_not_a_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, _ = invoke(["bench", "gsm8k", "--limt", "3"])
    shown = capsys.readouterr().err
    assert code == 2
    assert "No such option: --limt" in shown and "--limit" in shown


def test_unknown_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, _ = invoke(["aks", "q"])
    assert code == 2 and "No such command 'aks'" in capsys.readouterr().err


def test_unknown_model_is_one_line_with_suggestion(tmp_path: Path) -> None:
    from noosphere.llm import open_model

    code, _, err = invoke(["ask", "q", "--model", "local:smollm2", "--out", str(tmp_path)], open_model)
    assert code == 2 and "Did you mean local:smollm2-135m" in err


def test_unparseable_model_output_fails_cleanly_and_keeps_the_run(tmp_path: Path) -> None:
    opener = scripted_opener(["no idea", "still no idea", "nope"])
    code, _, err = invoke(["ask", "q", "--out", str(tmp_path), "--no-cache"], opener)
    assert code == 1 and "gave no valid Answer in 3 attempts" in err
    [run_dir] = list(tmp_path.iterdir())
    assert json.loads((run_dir / "result.json").read_text())["status"] == "failed"


def test_models_lists_ids_and_install_state() -> None:
    code, out, _ = invoke(["models"])
    assert code == 0
    for model_id in ("local:qwen2.5-coder-1.5b", "local:qwen2.5-coder-0.5b", "local:smollm2-135m", "litellm:"):
        assert model_id in out


def test_trace_show_on_a_non_run_folder(tmp_path: Path) -> None:
    code, _, err = invoke(["trace", "show", str(tmp_path)])
    assert code == 2 and "not a run folder" in err


def test_a_missing_folder_or_a_file_is_named_as_such_not_as_a_folder_without_a_trace(tmp_path: Path) -> None:
    """Before, both were "no trace.jsonl in ...": the user looked for a trace in a folder that is not there."""
    (tmp_path / "notes.txt").write_text("x")
    for path, says in ((tmp_path / "gone", "does not exist"), (tmp_path / "notes.txt", "is a file, not a run folder")):
        for command in (["trace", "show", str(path)], ["report", str(path), "-o", str(tmp_path / "x.html")]):
            code, _, err = invoke(command)
            assert code == 2 and says in err and "no trace.jsonl" not in err, (command, err)


def test_trace_show_prints_the_result_one_field_a_line(tmp_path: Path) -> None:
    """Before, result.json was one line however long, cut by the terminal."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "trace.jsonl").write_text("")
    (run_dir / "config.json").write_text(json.dumps({"command": "ask"}))
    (run_dir / "result.json").write_text(json.dumps({"status": "ok", "answer": "fine", "confidence": 0.5}))
    code, shown, _ = invoke(["trace", "show", str(run_dir)])
    lines = shown.splitlines()
    assert code == 0 and '  "answer": "fine",' in lines and '  "confidence": 0.5' in lines, shown


@pytest.mark.parametrize("args", [["--help"], ["ask", "--help"]])
def test_help(args: list[str]) -> None:
    code, out, _ = invoke(args)
    assert code == 0 and "Usage" in out


def test_ask_ctm_builds_a_processor_per_view_and_trace_show_tells_the_story(tmp_path: Path) -> None:
    from noosphere.llm.types import Request
    from tests.helpers import chunk_reply, stm_reply

    def reply(request: Request) -> Any:
        if request.agent == "stm":
            return stm_reply("Sarcastic: praise for a bad day.", 0.85)
        return chunk_reply(f"{request.agent} says sarcastic", "", 0.8, 0.7)

    backend = ScriptedBackend(reply)

    def opener(model_id: str, **kwargs: Any) -> Model:
        return Model(backend, **kwargs)

    code, out, err = invoke(["ask", "Is it sarcastic?", "--system", "ctm", "--text", "utterance=Oh great, Monday.",
                             "--text", "speaker=Chandler from Friends", "--out", str(tmp_path), "--no-cache"], opener)
    assert code == 0, err
    assert "Sarcastic: praise for a bad day." in out and "0.85" in out
    assert {r.agent for r in backend.history} == {"utterance", "speaker", "stm"}
    [run_dir] = list(tmp_path.iterdir())
    code, shown, _ = invoke(["trace", "show", str(run_dir)])
    assert code == 0 and "iteration 1" in shown and "winner (argmax)" in shown and "alpha=0.85" in shown


def test_ask_ctm_breaks_ties_with_the_seed_it_is_given(tmp_path: Path) -> None:
    """Before, `--seed` reached the model's sampling but not the workspace: its ties were drawn with seed 0."""
    import random

    from noosphere.llm.types import Request
    from noosphere.systems.ctm import THINKERS
    from tests.helpers import chunk_reply, stm_reply

    def reply(request: Request) -> Any:
        return stm_reply("yes", 0.9) if request.agent == "stm" else chunk_reply("same", "", 0.5, 0.5)

    for seed in range(4):
        out = tmp_path / str(seed)
        code, _, err = invoke(["ask", "q", "--system", "ctm", "--seed", str(seed), "--out", str(out), "--no-cache"],
                              lambda model_id, **kw: Model(ScriptedBackend(reply), **kw))
        assert code == 0, err
        [run_dir] = list(out.iterdir())
        events = [json.loads(line) for line in (run_dir / "trace.jsonl").read_text().splitlines()]
        [held] = [e for e in events if e["kind"] == "ws_competition"]
        assert held["winner"] == random.Random(seed).choice(list(THINKERS)), seed


@pytest.mark.parametrize("system", ["base", "ctm"])
def test_ask_refuses_a_place_for_people_without_a_society(tmp_path: Path, system: str) -> None:
    """Before, `--human viewer` on the base or the workspace was taken and ignored: they have no people to ask."""
    code, _, err = invoke(["ask", "q", "--system", system, "--human", "viewer", "--out", str(tmp_path / "runs")])
    assert code == 2 and "it is for --system society" in err, err
    assert not (tmp_path / "runs").exists()


def test_ask_rejects_a_malformed_view(tmp_path: Path) -> None:
    code, _, err = invoke(["ask", "q", "--system", "ctm", "--text", "no-equals-sign", "--out", str(tmp_path)])
    assert code == 2 and "--text expects NAME=VALUE" in err


@pytest.mark.parametrize("views", [["--text", "a=1", "--text", "a=2"], ["--text", "a=1", "--image", "IMAGE"],
                                   ["--image", "IMAGE", "--audio", "a=IMAGE"]], ids=["texts", "text-image", "media"])
def test_ask_refuses_two_views_of_one_name_before_any_run_folder(tmp_path: Path, views: list[str]) -> None:
    """Two --text views of one name: the second replaced the first silently; a text and a media view of one name
    made two processors of one name, refused by the workspace only after the run folder was made."""
    image = tmp_path / "a.png"
    image.write_bytes(b"\x89PNG\r\n\x1a\n")
    out = tmp_path / "runs"
    given = [v.replace("IMAGE", str(image)) for v in views]
    for system in ("base", "ctm"):
        code, _, err = invoke(["ask", "q", "--system", system, *given, "--out", str(out), "--no-cache"])
        assert code == 2 and "two views are named 'a'" in err, err
    code, _, err = invoke(["ask", "q", "--image", f"={image}", "--out", str(out), "--no-cache"])
    assert code == 2 and "a view needs a name" in err, err
    assert not out.exists()


@pytest.mark.parametrize("limit", ["0", "-5"])
def test_ask_refuses_an_output_token_limit_below_one(tmp_path: Path, limit: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Before, --max-tokens 0 or -5 was taken and sent with every call (serve refused it already)."""
    code, _, _ = invoke(["ask", "q", "--max-tokens", limit, "--out", str(tmp_path / "runs"), "--no-cache"],
                        scripted_opener(['{"answer": "ok", "confidence": 0.5}']))
    assert code == 2 and "--max-tokens" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(("option", "file", "data", "said"), [
    ("--image", "notes.txt", b"hello", "is no image file (its name says text/plain)"),
    ("--image", "song.mp3", b"ID3", "is no image file (its name says audio/mpeg)"),
    ("--audio", "photo.png", b"\x89PNG", "is no audio file (its name says image/png)"),
    ("--image", "photo", b"\x89PNG", "is no image file (its name does not say what it is)"),
    ("--image", "photo.png", b"", "photo.png is empty"),
], ids=["text", "audio-as-image", "image-as-audio", "no-suffix", "empty"])
def test_ask_refuses_a_media_file_that_is_not_what_its_option_says(tmp_path: Path, option: str, file: str,
                                                                   data: bytes, said: str) -> None:
    """Before, a text file went to the model as an image, an mp3 given to --image became an audio view and a png
    given to --audio an image view, and an empty file was sent as it was."""
    (tmp_path / file).write_bytes(data)
    out = tmp_path / "runs"
    code, _, err = invoke(["ask", "q", option, str(tmp_path / file), "--out", str(out), "--no-cache"],
                          scripted_opener(['{"answer": "ok", "confidence": 0.5}']))
    assert code == 2 and said in err, err
    assert not out.exists()


@pytest.mark.parametrize("system", ["base", "ctm"])
def test_ask_refuses_an_image_for_a_model_without_vision_before_any_run_folder(tmp_path: Path, system: str) -> None:
    """Before, the base's first call (or the workspace's sensory processor) refused it: the run folder was left."""
    from noosphere.llm.types import Capabilities

    (tmp_path / "a.png").write_bytes(b"\x89PNG")
    backend = ScriptedBackend(['{"answer": "ok", "confidence": 0.5}'], capabilities=Capabilities(json_schema=True))
    out = tmp_path / "runs"
    code, _, err = invoke(["ask", "q", "--system", system, "--image", str(tmp_path / "a.png"), "--out", str(out),
                           "--no-cache"], lambda model_id, **kw: Model(backend, **kw))
    assert code == 2 and "does not support vision" in err, err
    assert not list(out.glob("*"))


def test_ask_ctm_refuses_a_tool_for_a_model_without_tool_calls_before_any_run_folder(tmp_path: Path) -> None:
    """Before, the tool processor's first call refused it, which stopped the run: the run folder was left."""
    from noosphere.llm.types import Capabilities

    backend = ScriptedBackend([], capabilities=Capabilities(json_schema=True))
    out = tmp_path / "runs"
    code, _, err = invoke(["ask", "q", "--system", "ctm", "--tool", "calculator", "--out", str(out), "--no-cache"],
                          lambda model_id, **kw: Model(backend, **kw))
    assert code == 2 and "does not support tools" in err, err
    assert not list(out.glob("*")) and not backend.history


def test_ask_ctm_with_a_builtin_tool(tmp_path: Path) -> None:
    from noosphere.llm.types import Request
    from tests.helpers import chunk_reply, stm_reply

    calls = {"calculator": 0}

    def reply(request: Request) -> Any:
        if request.agent == "stm":
            return stm_reply("391", 0.95)
        if request.agent == "calculator":
            calls["calculator"] += 1
            if calls["calculator"] == 1:
                return {"tool_calls": [{"name": "calculator", "arguments": {"expression": "17*23"}}]}
            return chunk_reply("17*23 = 391", "", 1.0, 1.0)
        return chunk_reply("about 400", "", 0.5, 0.3)

    backend = ScriptedBackend(reply)
    code, out, err = invoke(["ask", "What is 17 * 23?", "--system", "ctm", "--tool", "calculator", "--out",
                             str(tmp_path), "--no-cache"], lambda model_id, **kw: Model(backend, **kw))
    assert code == 0, err
    assert "391" in out
    [run_dir] = list(tmp_path.iterdir())
    kinds = [json.loads(line)["kind"] for line in (run_dir / "trace.jsonl").read_text().splitlines()]
    assert "ws_tool" in kinds
    code, _, err = invoke(["ask", "q", "--tool", "calculator", "--out", str(tmp_path)])
    assert code == 2 and "--system ctm" in err
    code, _, err = invoke(["ask", "q", "--system", "ctm", "--tool", "calculater", "--out", str(tmp_path)])
    assert code == 2 and "Did you mean calculator" in err


@pytest.mark.parametrize("given", [["--tool", "calculator", "--tool", "calculator"],
                                   ["--tool", "calculator", "--text", "calculator=17 * 23"]], ids=["twice", "a-view"])
def test_ask_ctm_refuses_a_tool_that_would_be_a_second_processor_of_one_name(tmp_path: Path, given: list[str]) -> None:
    """Before, the workspace refused the two processors of one name when the run began: the run folder was left."""
    out = tmp_path / "runs"
    code, _, err = invoke(["ask", "q", "--system", "ctm", *given, "--out", str(out), "--no-cache"])
    assert code == 2 and "calculator" in err and "distinct names" not in err, err
    assert not out.exists()


def test_ask_with_probability_scores_takes_the_confidence_from_p_true(tmp_path: Path) -> None:
    backend = ScriptedBackend(['{"answer": "Yes, it is sarcastic."}'], scorer=lambda r: {"Yes": 0.6, "No": 0.4})

    def opener(model_id: str, **kwargs: Any) -> Model:
        return Model(backend, **kwargs)

    code, out, _ = invoke(["ask", "Is it sarcastic? 'Oh great.'", "--scores", "logprob", "--out", str(tmp_path),
                           "--no-cache"], opener)
    assert code == 0, out
    assert "Yes, it is sarcastic." in out and "0.60" in out
    [request] = backend.score_history
    assert request.messages[-2].content == "Yes, it is sarcastic." and "correct" in request.messages[-1].content
    code, _, err = invoke(["ask", "q", "--scores", "logprob", "--out", str(tmp_path / "x")])
    assert code == 2 and "logprobs" in err and not list((tmp_path / "x").glob("*"))  # refused: no run folder left
    code, _, err = invoke(["ask", "q", "--scores", "logprb", "--out", str(tmp_path / "y")])
    assert code == 2 and "logprob" in err and not (tmp_path / "y").exists()


def test_ask_ctm_whose_every_processor_forfeits_answers_that_it_has_none(tmp_path: Path) -> None:
    """Every bid unparsable three times over: the workspace stops with no chunk, and `ask` ended in a pydantic
    traceback (an empty answer) that a small model can reach."""
    backend = ScriptedBackend(lambda request: "not a bid")
    code, out, err = invoke(["ask", "Is it sarcastic?", "--system", "ctm", "--text", "utterance=Oh great.",
                             "--out", str(tmp_path), "--no-cache"], lambda model_id, **kw: Model(backend, **kw))
    assert code == 0 and "Traceback" not in err, err
    assert "(no answer)" in out and "0.00" in out
    [run_dir] = list(tmp_path.iterdir())
    result = json.loads((run_dir / "result.json").read_text())
    assert result["status"] == "ok" and result["answer"] == "(no answer)"


@pytest.mark.parametrize(("args", "says"), [
    (["", "--system", "base"], "the QUERY is empty"),
    (["   ", "--system", "ctm"], "the QUERY is empty"),
    (["q", "--system", "nosuch"], "Known: base, ctm, society"),
    # a byte that is no UTF-8, as a shell passes it: a traceback writing the trace, the run folder left behind
    ([b"hi \xff there".decode("utf-8", "surrogateescape"), "--system", "base"],
     "the argument 'hi \\xff there' is not UTF-8 text"),
], ids=["empty", "blank", "unknown system", "not utf-8"])
def test_ask_refuses_before_a_folder_or_a_call(args: list[str], says: str, tmp_path: Path) -> None:
    backend = ScriptedBackend(lambda request: pytest.fail("a model call"))
    code, _, err = invoke(["ask", *args, "--out", str(tmp_path / "runs")], lambda model_id, **kw: Model(backend, **kw))
    assert code == 2 and says in err and not (tmp_path / "runs").exists(), err


def test_a_path_with_colons_is_printed_as_it_is_not_as_an_emoji(tmp_path: Path) -> None:
    """rich turned `:smile:` in an error, and `:100:` in a warning's `trace.jsonl:100:`, into emoji."""
    code, _, err = invoke(["trace", "show", str(tmp_path / ":smile:" / ":100:")])
    assert code == 2 and ":smile:/:100:" in err, err
