"""Text from a model, a run folder or a memory reaches the terminal as text: a control character in it is shown as
its escape (`\\x1b`), never sent raw for the terminal to act on (ESC[2J clears the screen, OSC 52 writes the
clipboard), while the run folder keeps the exact text."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from noosphere.human.channel import Question
from noosphere.human.forms import Field
from noosphere.human.terminal import TerminalChannel
from noosphere.memory import ConceptCluster, Episode, EpisodeStep, MemoryStore
from noosphere.printable import markup_safe, terminal_safe
from noosphere.runs import Run
from tests.test_cli import invoke, scripted_opener

CLEAR = "\x1b[2J"
CLIPBOARD = "\x1b]52;c;aGVsbG8=\x07"
"""OSC 52: writes "hello" to the clipboard of a terminal that allows it."""
HOSTILE = f"before{CLEAR}after {CLIPBOARD} end"
SHOWN = "before\\x1b[2Jafter \\x1b]52;c;aGVsbG8=\\x07 end"


@pytest.fixture(autouse=True)
def _wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "240")


def _clean(out: str) -> None:
    assert "\x1b" not in out and "\x07" not in out, repr(out)


@pytest.mark.parametrize(("text", "shown"), [
    (HOSTILE, SHOWN),
    ("keeps\ttab and\nnewline", "keeps\ttab and\nnewline"),
    ("a\rb, a windows end\r\n", "a\\x0db, a windows end\n"),
    ("nul\x00 del\x7f csi\x9b2J nel\x85 é ü", "nul\\x00 del\\x7f csi\\x9b2J nel\\x85 é ü"),
    # Trojan Source: drawn, the override shows "answer: yes" for text that says "answer: sey"
    ("answer: \u202esey\u202c", "answer: \\u202esey\\u202c"),
    ("isolate \u2066x\u2069 and \u2067y\u2069", "isolate \\u2066x\\u2069 and \\u2067y\\u2069"),
    ("שלום\u200f, joiner 👩\u200d💻", "שלום\u200f, joiner 👩\u200d💻"),  # marks and joiners shape, they stay
])
def test_control_characters_are_shown_as_escapes(text: str, shown: str) -> None:
    assert terminal_safe(text) == shown


def test_markup_safe_escapes_brackets_and_shows_controls() -> None:
    out = io.StringIO()
    Console(file=out, emoji=False, width=200).print(f"[bold]x:[/] {markup_safe('[red]' + CLEAR + '[/]')}")
    assert out.getvalue() == "x: [red]\\x1b[2J[/]\n"


def test_ask_shows_an_answer_holding_escapes_as_text(tmp_path: Path) -> None:
    """Before, the answer went to the terminal as the model wrote it: its ESC[2J cleared the screen and its OSC 52
    wrote the clipboard."""
    opener = scripted_opener([json.dumps({"answer": HOSTILE, "confidence": 0.9})])
    code, out, err = invoke(["ask", "hi", "--out", str(tmp_path), "--no-cache"], opener)
    assert code == 0, err
    _clean(out)
    assert SHOWN in out
    [run_dir] = list(tmp_path.iterdir())
    assert json.loads((run_dir / "result.json").read_text())["answer"] == HOSTILE  # the run keeps the exact text


def test_trace_show_shows_escapes_in_a_trace_as_text(tmp_path: Path) -> None:
    with Run.create(tmp_path / "runs", command="ask" + CLEAR, config={"query": "q"}) as made:
        made.finish({"answer": HOSTILE + " csi\x9b2J"})
    call = {"kind": "model_call", "model": "m", "agent": "a" + CLIPBOARD, "messages": [], "response": "r" + CLEAR,
            "prompt_tokens": 1, "completion_tokens": 1, "latency_s": 0.1}
    with (made.directory / "trace.jsonl").open("a") as trace:
        trace.write(json.dumps(call) + "\n")
    code, out, err = invoke(["trace", "show", str(made.directory)])
    assert code == 0, err
    _clean(out)
    assert "\x9b" not in out and "csi\\x9b2J" in out  # the result's C1 CSI, which JSON leaves as it is
    assert "command=ask\\x1b[2J" in out and "r\\x1b[2J" in out and "a\\x1b]52;c;aGVsbG8=\\x07" in out


def test_memory_show_shows_escapes_in_tasks_rules_and_clusters_as_text(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path)
    step = EpisodeStep(0, "", "a kitchen")
    store.add_episode(Episode("task" + CLEAR, "pick" + CLIPBOARD, "g", (step,), won=True))
    store.add_concept("rule " + HOSTILE, "g")
    store.save_clusters([ConceptCluster(0, "cluster " + CLEAR, 1, ("cluster " + CLEAR,))])
    code, out, err = invoke(["memory", "show", str(tmp_path)])
    assert code == 0, err
    _clean(out)
    assert "task\\x1b[2J" in out and "pick\\x1b]52;c;aGVsbG8=\\x07" in out
    assert f"- rule {SHOWN}" in out and "cluster \\x1b[2J" in out


def test_the_terminal_person_sees_escapes_in_a_question_as_text() -> None:
    """The prompt, role and form were written by other members: before, a member could clear the person's screen
    or write their clipboard."""
    out = io.StringIO()
    channel = TerminalChannel(io.StringIO("42\n"), Console(file=out, width=240, highlight=False, soft_wrap=True,
                                                           emoji=False))
    question = Question("q1", "you" + CLEAR, "What is 6 x 7? " + HOSTILE,
                        (Field("answer" + CLEAR, "text", "the number" + CLIPBOARD),), role="a role" + CLEAR)
    answer = asyncio.run(channel.ask(question))
    assert answer == {"answer" + CLEAR: "42"}  # what was typed goes back unchanged
    shown = out.getvalue()
    _clean(shown)
    assert f"What is 6 x 7? {SHOWN}" in shown and "you\\x1b[2J" in shown and "a role\\x1b[2J" in shown
    assert "answer\\x1b[2J — the number\\x1b]52;c;aGVsbG8=\\x07" in shown


def test_an_error_quoting_a_path_shows_its_escapes_as_text(tmp_path: Path) -> None:
    """The one-line error may quote a path, a file's line or a model's reply: before, its ESC reached the terminal."""
    code, out, err = invoke(["ask", "hi", "--image", f"x{CLEAR}.png", "--out", str(tmp_path)])
    assert code == 2 and "no file at x\\x1b[2J.png" in err, err
    _clean(out + err)
