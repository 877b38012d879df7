"""A person in the society: the forms they fill in, asked on the terminal and in the viewer page, forfeits on a
timeout, and a run stopped while it waits for them that is resumed from its folder with nothing lost."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import re
import shutil
import signal
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from noosphere.errors import ConfigError, UsageError
from noosphere.human import (
    AnswerBook,
    Field,
    FormError,
    HumanAsked,
    HumanBackend,
    ListChannel,
    NoAnswer,
    Question,
    fields_of,
)
from noosphere.human.forms import read_value
from noosphere.llm import Model, ScriptedBackend
from noosphere.llm.messages import Message
from noosphere.llm.types import Request
from noosphere.runs import Run
from noosphere.society import Member, democracy, human_member
from noosphere.society.ballots import choice_model, ranking_model
from noosphere.society.config import build_society, load_society_spec
from noosphere.society.session import Statement
from noosphere.trace import Trace, read_trace
from noosphere.viewer import make_server
from tests.human_driver import opener, society_script
from tests.test_cli import invoke

REPO = Path(__file__).parent.parent
HUMAN_DEMOCRACY = REPO / "examples" / "societies" / "democracy-human.yaml"
ASK = ["ask", "What is 6 times 7?", "--system", "society", "--society", str(HUMAN_DEMOCRACY), "--no-cache"]


# the forms ---------------------------------------------------------------------------------------------------
def test_a_form_is_read_off_the_schema_a_model_would_get() -> None:
    statement = fields_of(Statement.model_json_schema())
    assert [(f.name, f.kind, f.max_length, f.min_length) for f in statement] == [
        ("reasoning", "text", 2000, 0), ("answer", "text", 300, 1)]
    [_, choice] = fields_of(choice_model(3).model_json_schema())
    assert (choice.kind, choice.options, choice.hint()) == ("choice", ("A", "B", "C"), "one of A, B, C")
    [_, ranking] = fields_of(ranking_model(3).model_json_schema())
    assert (ranking.kind, ranking.options, ranking.max_length) == ("ranking", ("A", "B", "C"), 3)
    assert [f.name for f in fields_of(None)] == ["reply"]  # a conversation turn: free text


@pytest.mark.parametrize(("field", "typed", "value"), [
    (Field("choice", "choice", options=("A", "B")), " (b) ", "B"),
    (Field("ranking", "ranking", options=("A", "B", "C"), min_length=1, max_length=3), "c, a", ["C", "A"]),
    (Field("hire", "yes/no"), "Yes", True),
    (Field("price", "number", minimum=0), "2.5", 2.5),
    (Field("rounds", "integer", minimum=1, maximum=5), "3", 3),
    (Field("reasoning", "text", max_length=10, required=True), "", ""),
])
def test_what_a_person_types_becomes_the_field_value(field: Field, typed: str, value: Any) -> None:
    assert read_value(field, typed) == value


@pytest.mark.parametrize(("field", "typed", "said"), [
    (Field("choice", "choice", options=("A", "B")), "C", "choice: one of A, B"),
    (Field("ranking", "ranking", options=("A", "B")), "A A", "each once"),
    (Field("answer", "text", max_length=5, min_length=1), "far too long", "at most 5 characters (this is 12)"),
    (Field("answer", "text", min_length=1), "  ", "answer is needed (text)"),
    (Field("rounds", "integer", minimum=1, maximum=5), "9", "at least 1 and at most 5"),
    (Field("hire", "yes/no"), "perhaps", "yes or no"),
    (Field("answer", "text", min_length=1), ["4", "2"], 'answer: text, not ["4", "2"]'),  # was "['4', '2']"
    (Field("answer", "text", min_length=1), {"n": 42}, 'answer: text, not {"n": 42}'),
    (Field("price", "number", minimum=0), True, "price: at least 0"),  # was 1.0
])
def test_what_does_not_fit_is_explained(field: Field, typed: str, said: str) -> None:
    with pytest.raises(FormError, match=re.escape(said)):
        read_value(field, typed)


@pytest.mark.parametrize("saved", [5, [1, 2], ["reasoning"], "42"], ids=["number", "numbers", "names", "text"])
def test_a_saved_answer_that_is_no_form_forfeits_the_turn(tmp_path: Path, saved: Any) -> None:
    """An answer in human/answers.jsonl that is no object of field values (the file edited by hand, or written by
    another program): a TypeError or AttributeError from the person's turn before, which no forfeit caught."""
    request = Request((Message("user", "What is 6 times 7?"),), json_schema=Statement.model_json_schema())
    book = AnswerBook(tmp_path / "human")
    backend = HumanBackend("you", ListChannel([]), book=book)
    book._append({"question": backend.question_id(request), "member": "you", "answer": saved, "by": "viewer"})
    with pytest.raises(NoAnswer, match="the saved answer does not fit the form"):
        asyncio.run(backend.generate(request))


# the society file ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("member", "said"), [
    ("{name: you, human: true, model: scripted}", "has no model, temperature or society"),
    ("{name: you, role: r, timeout: 30}", "timeout is a person's time to answer"),
    ("{name: you, human: true, timeout: 0}", "greater than 0"),
])
def test_a_person_in_a_society_file_is_checked(tmp_path: Path, member: str, said: str) -> None:
    path = tmp_path / "society.yaml"
    path.write_text(f"organisation: debate\nmembers:\n  - {{name: a, role: r}}\n  - {member}\n")
    with pytest.raises(ConfigError, match=said) as refused:
        load_society_spec(path)
    assert refused.value.line == 4


def test_a_society_with_people_needs_a_way_to_ask_them() -> None:
    spec = load_society_spec(HUMAN_DEMOCRACY)
    with pytest.raises(UsageError, match=r"you is a person .* through `noosphere ask`"):
        build_society(spec, lambda model_id: Model(ScriptedBackend([])), "scripted")


# on the terminal ---------------------------------------------------------------------------------------------
def events(folder: Path) -> list[Any]:
    return list(read_trace(folder / "trace.jsonl"))


def test_a_democracy_with_a_person_on_the_terminal_stopped_and_resumed(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The person answers the mission, then the terminal's input ends while the organizer's question waits: the
    run stops. Resumed, they are asked that question (not the mission again) and then, as they hold another
    answer than the two models, whether to change it and how to vote; a letter that is no option is asked again."""
    open_model = opener()
    monkeypatch.setattr(sys, "stdin", io.StringIO("I count 6 sevens.\n41\n"))
    code, out, _ = invoke([*ASK, "--out", str(tmp_path)], open_model)
    [folder] = list(tmp_path.iterdir())
    assert code == 130
    assert f"noosphere ask --resume {folder}" in out.replace("\n", "")
    assert out.count("your turn") == 2  # the mission, then the organizer's question, whose input never came
    first = json.loads((folder / "result.json").read_text())
    assert first["status"] == "interrupted" and "the terminal's input ended" in first["error"]
    book = AnswerBook(folder / "human")
    [mission] = [e for e in events(folder) if e.kind == "human_answered"]
    assert book.entry(mission.question)["answer"] == {"reasoning": "I count 6 sevens.", "answer": "41"}
    backend = open_model.backend  # the scripted members' backend: every request it got
    calls_before = len(backend.history)

    monkeypatch.setattr(sys, "stdin", io.StringIO("Counting is slow but sure.\n41\n"  # the organizer's question
                                                  "I keep mine.\nZ\nB\n"  # change? "Z" is no option
                                                  "41 it is.\nB\n"))  # the ballot
    code, out, _ = invoke(["ask", "--resume", str(folder)], open_model)
    assert code == 0, out
    assert out.count("your turn") == 3  # the organizer's question, the change, the ballot: the mission is not asked
    assert "The organizer asks: Which step could be wrong?" in out.split("your turn")[1]
    assert "choice: one of A, B" in out  # "Z" was explained and asked again
    assert "answer: 42" in out  # two models against one person: 42 by plurality
    result = json.loads((folder / "result.json").read_text())
    assert result["status"] == "ok" and result["sessions"] == 2 and result["answer"] == "42"

    trace = events(folder)
    kinds = Counter(e.kind for e in trace)
    assert kinds["run_started"] == 2 and kinds["soc_started"] == 1 and kinds["soc_finished"] == 1
    mission_messages = [e for e in trace if e.kind == "soc_message" and e.phase == "mission"]
    assert [m.member for m in mission_messages] == ["planner", "calculator", "you"]  # told once, not replayed
    answered = [e for e in trace if e.kind == "human_answered"]
    assert len(answered) == 4 and len({e.question for e in answered}) == 4
    assert [e.voter for e in trace if e.kind == "soc_ballot"] == ["planner", "calculator", "you"]
    you = next(e for e in trace if e.kind == "soc_ballot" and e.voter == "you")
    assert you.ranking == ["41"]
    # what the models had said before the stop was served from the run's cache, not asked again
    resumed = backend.history[calls_before:]
    assert not [r for r in resumed if r.messages[-1].content == "Task: What is 6 times 7?"]  # the mission
    assert [r.agent for r in resumed].count("organizer") == 1  # its summary; its question was asked before
    assert (folder / "calls.sqlite").is_file()


def test_only_a_society_run_that_stopped_can_be_resumed(tmp_path: Path) -> None:
    code, _, err = invoke(["ask", "Is it sarcastic?", "--out", str(tmp_path), "--no-cache"],
                          lambda model_id, **kw: Model(ScriptedBackend([{"answer": "yes", "confidence": 0.9}]), **kw))
    [folder] = list(tmp_path.iterdir())
    assert code == 0, err
    code, _, err = invoke(["ask", "--resume", str(folder)])
    assert code == 2 and "is not a society run of `noosphere ask`" in err
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "system": "society", "society": {}}))
    code, _, err = invoke(["ask", "--resume", str(folder)])
    assert code == 2 and "finished already (status ok)" in err
    code, _, err = invoke(["ask", "q", "--resume", str(folder)])
    assert code == 2 and "give neither" in err
    code, _, err = invoke(["ask"])
    assert code == 2 and "ask needs a QUERY (or --resume RUN" in err


def stopped_society_run(tmp_path: Path) -> Path:
    """A society run of `noosphere ask` killed before its first turn: its folder holds only its config."""
    folder = tmp_path / "run"
    folder.mkdir()
    config = {"run_id": "run", "command": "ask", "system": "society", "query": "What is 6 times 7?",
              "model": "scripted", "seed": 0, "society": {"organisation": "debate", "rounds": 1,
                                                          "members": [{"name": "a", "role": "r"},
                                                                      {"name": "b", "role": "r"}]}}
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def test_a_budget_given_to_a_resume_holds_and_is_kept(tmp_path: Path) -> None:
    """Before, `ask --resume RUN --budget calls=1` ran on with no budget at all (cli.md: the limits given replace
    those saved)."""
    folder = stopped_society_run(tmp_path)
    code, _, err = invoke(["ask", "--resume", str(folder), "--budget", "calls=1"], opener())
    assert code == 1 and "calls budget of 1 exceeded" in err, err
    assert json.loads((folder / "config.json").read_text())["budget"] == {"max_calls": 1}
    assert json.loads((folder / "result.json").read_text())["usage"]["total"]["calls"] == 1


@pytest.mark.parametrize("given", [["--system", "ctm"], ["--seed", "5"], ["--model", "other"], ["--text", "a=b"],
                                   ["--max-tokens", "9"], ["--no-cache"], ["--out", "elsewhere"]])
def test_a_resume_refuses_the_settings_it_would_ignore(tmp_path: Path, given: list[str]) -> None:
    """Before, `ask --resume RUN --seed 5` (or --system ctm, --model, --text...) ran the society with its saved
    settings and said nothing of the ones given."""
    folder = stopped_society_run(tmp_path)
    code, _, err = invoke(["ask", "--resume", str(folder), *given], opener())
    assert code == 2 and f"the run's own settings, not {given[0]}" in err, err
    assert sorted(p.name for p in folder.iterdir()) == ["config.json"]  # not reopened


@pytest.mark.parametrize(("edit", "said"), [
    ({"query": None}, "key 'query': Input should be a valid string"),
    ({"seed": "7"}, "key 'seed': Input should be a valid integer"),
    ({"society": {"organisation": "senate", "members": [{"name": "a", "role": "r"}]}},
     "field 'society.organisation': Input should be"),
    ({"society": {"organisation": "monarchy", "members": [{"name": "a", "role": "r"}]}},
     "field 'society.organizer': a monarchy needs: organizer, leader"),
], ids=["query", "seed", "organisation", "staff"])
def test_a_society_run_whose_config_was_edited_into_nonsense_is_refused_before_it_is_reopened(
        tmp_path: Path, edit: dict[str, Any], said: str) -> None:
    """A ValidationError or a KeyError traceback before (the society, the query, the seed were read unchecked)."""
    folder = tmp_path / "run"
    folder.mkdir()
    config = {"run_id": "run", "command": "ask", "system": "society", "query": "What is 6 times 7?",
              "model": "scripted", "seed": 0, "society": {"organisation": "debate",
                                                          "members": [{"name": "a", "role": "r"}]}, **edit}
    (folder / "config.json").write_text(json.dumps(config))
    code, _, err = invoke(["ask", "--resume", str(folder)])
    assert code == 2 and said in err and str(folder) in err
    assert sorted(p.name for p in folder.iterdir()) == ["config.json"]  # not reopened


# a timeout ---------------------------------------------------------------------------------------------------
class Silent:
    """A person who never answers."""

    name = "silent"

    def __init__(self) -> None:
        self.asked: list[Question] = []

    async def ask(self, question: Question) -> dict[str, Any]:
        self.asked.append(question)
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


def society_with(person: Member) -> Any:
    backend = ScriptedBackend(society_script)

    def member(name: str) -> Member:
        return Member(name, Model(backend), f"You are {name}.")

    return democracy([member("planner"), member("calculator"), person], member("organizer"), rounds=1)


def test_a_person_who_does_not_answer_in_time_forfeits_the_turn_and_forfeits_it_again_on_a_resume(
        tmp_path: Path) -> None:
    book = AnswerBook(tmp_path / "human")
    silent = Silent()
    trace = Trace(None)
    result = society_with(human_member("you", silent, timeout_s=0.05, book=book)).run_sync("What is 6 times 7?",
                                                                                           trace=trace)
    assert result.answer == "42"
    forfeits = trace.of_kind("soc_forfeit")
    assert [(f.member, f.phase) for f in forfeits] == [("you", "mission"), ("you", "mindstorm")]
    assert "NoAnswer: you gave no answer within 0.05 s" in forfeits[0].error
    assert [e.kind for e in trace.events if e.kind.startswith("human_")] == ["human_asked", "human_forfeited"] * 2
    assert len(silent.asked) == 2 and all(book.forfeited(q.id) for q in silent.asked)

    again = Silent()
    replayed = Trace(None)
    society_with(human_member("you", again, timeout_s=30, book=book)).run_sync("What is 6 times 7?", trace=replayed)
    assert again.asked == []  # the same turns, forfeited as before without asking
    assert [(f.member, f.phase) for f in replayed.of_kind("soc_forfeit")] == [("you", "mission"), ("you", "mindstorm")]


# the viewer's live page, without a browser ----------------------------------------------------------------------
def asked_run(folder: Path) -> HumanAsked:
    asked = HumanAsked(question="q-1", member="you", prompt="Task: What is 6 times 7?", channel="viewer",
                       fields=[f.to_json() for f in fields_of(choice_model(2).model_json_schema())])
    run = Run(folder, command="ask", config={"system": "society"})
    run.trace.emit(asked)
    run.trace.close()
    return asked


def request(url: str, *, token: str | None = None, body: Any = None, raw: bytes | None = None
            ) -> tuple[int, dict[str, Any]]:
    """A GET, or a POST of `body` as JSON (or of `raw` bytes as they are), with the page's token if given."""
    headers = {"Content-Type": "application/json"} if body is not None or raw is not None else {}
    if token is not None:
        headers["X-Noosphere-Token"] = token
    data = raw if raw is not None else json.dumps(body).encode() if body is not None else None
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=data, headers=headers), timeout=10) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read())


@contextlib.contextmanager
def served(folder: Path) -> Iterator[tuple[str, str]]:
    """The view server on `folder`, in a thread: its base URL and the token its page carries."""
    server = make_server(folder, port=0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        with urllib.request.urlopen(base + "/", timeout=10) as reply:
            page = reply.read().decode()
        assert "connect-src 'self'" in page
        yield base, json.loads(re.search(r'"live":(\{.*?\})', page).group(1))["token"]
    finally:
        server.shutdown()
        server.server_close()


def test_the_view_server_takes_a_persons_answer_only_from_its_page(tmp_path: Path) -> None:
    asked_run(tmp_path / "run")
    with served(tmp_path / "run") as (base, token):
        assert request(base + "/live")[0] == 403  # another site's page cannot read it
        status, state = request(base + "/live", token=token)
        assert status == 200 and state["status"] == "running"  # no result.json: it has not finished
        assert [(q["question"], q["member"]) for q in state["waiting"]] == [("q-1", "you")]
        answer = {"question": "q-1", "answer": {"reasoning": "both are 42", "choice": "B"}}
        assert request(base + "/answer", body=answer)[0] == 403  # no token: not from the page
        assert request(base + "/answer", token=token, body={**answer, "question": "q-2"})[0] == 404
        status, said = request(base + "/answer", token=token, body={"question": "q-1", "answer": {"choice": "D"}})
        assert status == 400 and said["error"] == "choice: one of A, B"
        assert request(base + "/answer", token=token, body=answer) == (200, {"ok": True, "message": "answered"})
        assert request(base + "/answer", token=token, body=answer)[0] == 409  # answered once
        assert request(base + "/live", token=token)[1]["waiting"][0]["answered"] is True
    book = AnswerBook(tmp_path / "run" / "human")
    assert book.entry("q-1") == {"question": "q-1", "member": "you", "by": "viewer",
                                 "answer": {"reasoning": "both are 42", "choice": "B"}}


def test_an_answer_nested_too_deeply_is_a_bad_request_not_a_dropped_connection(tmp_path: Path) -> None:
    """Before, json.loads raised RecursionError in the handler: a traceback on the terminal and no reply."""
    asked_run(tmp_path / "run")
    with served(tmp_path / "run") as (base, token):
        status, said = request(base + "/answer", token=token, raw=b"[" * 100_000 + b"]" * 100_000)
        assert status == 400 and said["error"] == "the answer is not JSON"
    assert not (tmp_path / "run" / "human" / "answers.jsonl").exists()


def test_an_answer_with_a_lone_surrogate_is_a_bad_request_and_the_question_still_waits(tmp_path: Path) -> None:
    """Before, the answer book's UTF-8 write raised UnicodeEncodeError in the handler: a traceback, no reply."""
    asked_run(tmp_path / "run")
    with served(tmp_path / "run") as (base, token):
        body = b'{"question": "q-1", "answer": {"reasoning": "\\ud800", "choice": "B"}}'
        status, said = request(base + "/answer", token=token, raw=body)
        assert status == 400 and "lone surrogate" in said["error"]
        answer = {"question": "q-1", "answer": {"reasoning": "both are 42", "choice": "B"}}
        assert request(base + "/answer", token=token, body=answer)[0] == 200


@pytest.mark.parametrize(("fields", "given"), [
    (5, {}), (["reply"], {"reply": "hi"}), ([{"name": "n", "kind": "number", "minimum": "one"}], {"n": "3"}),
    ([{"name": "c", "kind": "choice", "options": [1, 2]}], {"c": "1"})])
def test_a_question_whose_form_is_damaged_in_the_trace_is_refused_in_a_line(tmp_path: Path, fields: Any,
                                                                              given: dict[str, str]) -> None:
    """Before, building or checking the form raised TypeError or AttributeError in the handler: a traceback, no
    reply."""
    from noosphere.viewer.live import LiveRun

    (tmp_path / "trace.jsonl").write_text(json.dumps({"kind": "human_asked", "ts": 1.0, "question": "q-1",
                                                      "member": "you", "prompt": "?", "fields": fields}) + "\n")
    status, message = LiveRun(tmp_path).answer("q-1", given)
    assert (status, message) == (400, "the form of this question cannot be read from the trace (is it damaged?)")
    assert not (tmp_path / "human" / "answers.jsonl").exists()


def test_the_live_view_reads_a_trace_cut_back_by_a_withdrawn_session_anew(tmp_path: Path) -> None:
    """A resumed session refused before any turn is withdrawn: its lines are cut from the trace (`Run.withdraw`).
    Before, the live view went on from its old offset, past the start of the next session's lines: a question that
    session asked was never shown, and its answer was refused as waiting for nothing."""
    from noosphere.viewer.live import LiveRun

    def line(**event: Any) -> str:
        return json.dumps({"ts": 1.0, **event}) + "\n"

    trace = tmp_path / "trace.jsonl"
    trace.write_text(line(kind="run_started", config={}) + line(kind="human_asked", question="q-1", fields=[]))
    live = LiveRun(tmp_path)
    assert [q["question"] for q in live.state()["waiting"]] == ["q-1"]
    kept = trace.stat().st_size
    with trace.open("a") as session:
        session.write(line(kind="run_started", config={"budget": {"max_calls": 1}}))
    assert live.state()["waiting"] == []  # a new session asks its questions again
    with trace.open("r+b") as withdrawn:
        withdrawn.truncate(kept)
    live.state()
    with trace.open("a") as session:
        session.write(line(kind="run_started", config={}) + line(kind="human_asked", question="q-2", fields=[]))
    state = live.state()
    assert [q["question"] for q in state["waiting"]] == ["q-2"] and state["events"] == 4
    assert live.answer("q-2", {}) == (200, "answered")


def test_a_run_folder_replaced_by_a_file_while_served_is_answered_in_json_not_a_dropped_connection(
        tmp_path: Path) -> None:
    """Before, the live state and the answer raised NotADirectoryError in the handler: a traceback on the terminal
    at every poll of the page, and no reply."""
    asked_run(tmp_path / "run")
    with served(tmp_path / "run") as (base, token):
        shutil.rmtree(tmp_path / "run")
        (tmp_path / "run").write_text("not a run folder any more")
        status, said = request(base + "/live", token=token)
        assert status == 410 and said["error"].startswith("the run can no longer be read")
        answer = {"question": "q-1", "answer": {"reasoning": "both are 42", "choice": "B"}}
        status, said = request(base + "/answer", token=token, body=answer)
        assert status == 409 and said["error"].startswith("the answer could not be kept")


def test_a_written_report_has_no_live_panel_and_fetches_nothing(tmp_path: Path) -> None:
    asked_run(tmp_path / "run")
    code, _, err = invoke(["report", str(tmp_path / "run"), "-o", str(tmp_path / "page.html")])
    assert code == 0, err
    page = (tmp_path / "page.html").read_text()
    assert "connect-src" not in page and '"live":null' in page


# in the browser ------------------------------------------------------------------------------------------------
CHROMIUM = Path(os.environ.get("NOOSPHERE_CHROMIUM", "/usr/bin/chromium"))


def launch(playwright: Any) -> Any:
    if CHROMIUM.exists():
        return playwright.chromium.launch(executable_path=str(CHROMIUM))
    if Path(playwright.chromium.executable_path).exists():
        return playwright.chromium.launch()
    raise AssertionError(f"needs Chromium: no {CHROMIUM} (sudo apt-get install chromium) and no Playwright download")


def answer_in_page(form: Any, **values: str) -> None:
    for name, value in values.items():
        form.get_by_label(f"{name} (you)").fill(value)
    form.get_by_role("button", name="Answer as you").click()


class Person:
    """A person at the viewer page, in a thread of their own (the run takes the main thread, where SIGTERM is
    handled): types the answers, stops the run, answers while it is stopped, goes on after the resume."""

    def __init__(self, out: Path, sync_api: Any) -> None:
        self.out, self.sync_api = out, sync_api
        self.stopped = threading.Event()
        self.failure: BaseException | None = None
        self.errors: list[str] = []
        self.seen: list[str] = []
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            with self.sync_api.sync_playwright() as playwright:
                browser = launch(playwright)
                try:
                    self._answer(browser)
                finally:
                    browser.close()
        except BaseException as failed:  # told to the test's thread
            self.failure = failed
        finally:
            self.stopped.set()

    def _answer(self, browser: Any) -> None:
        deadline = time.monotonic() + 30
        while not list(self.out.glob("*/trace.jsonl")):  # the run's folder, once the run has made it
            assert time.monotonic() < deadline, "no run folder"
            time.sleep(0.02)
        [folder] = list(self.out.iterdir())
        server = make_server(folder, port=0)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        page = browser.new_page(viewport={"width": 1100, "height": 900})
        page.on("pageerror", lambda error: self.errors.append(str(error)))
        try:
            page.goto(f"http://127.0.0.1:{server.server_address[1]}/")
            live = page.locator("#live")
            mission = live.locator("form.question[data-member=you]", has_text="Task: What is 6 times 7?")
            mission.wait_for(timeout=20_000)
            self.seen.append(live.locator(".turn").inner_text())
            answer_in_page(mission, reasoning="Six sevens, counted: 41.", answer="41")

            question = live.locator("form.question", has_text="The organizer asks: Which step could be wrong?")
            question.wait_for(timeout=20_000)
            self.seen.append(live.locator(".turn").inner_text())
            # the run waits for this answer, inside `ask`, whose handler turns SIGTERM into a clean stop
            assert callable(signal.getsignal(signal.SIGTERM))
            os.kill(os.getpid(), signal.SIGTERM)
            live.and_(page.locator("[data-status=interrupted]")).wait_for(timeout=20_000)
            self.seen.append(live.locator(".turn").inner_text())
            answer_in_page(question, reasoning="I may have miscounted.", answer="the count")
            question.wait_for(state="detached", timeout=10_000)
            self.stopped.set()  # the test's thread resumes the run now

            change = live.locator("form.question", has_text="Keep your answer or change")
            change.wait_for(timeout=20_000)
            answer_in_page(change, reasoning="I keep mine.", choice="Z")  # no such option: said, and asked again
            change.locator(".error").wait_for(timeout=10_000)
            self.seen.append(change.locator(".error").inner_text())
            answer_in_page(change, reasoning="I keep mine.", choice="B")
            ballot = live.locator("form.question", has_text="Vote for the final answer")
            ballot.wait_for(timeout=20_000)
            answer_in_page(ballot, reasoning="41, still.", choice="B")
            live.and_(page.locator("[data-status=ok]")).wait_for(timeout=20_000)
            self.seen.append(live.locator(".turn").inner_text())
            page.screenshot(path=str(self.out.parent / "live.png"), full_page=True)
        finally:
            page.close()
            server.shutdown()
            server.server_close()


def test_a_person_answers_in_the_viewer_page_through_a_stop_and_a_resume(tmp_path: Path) -> None:
    """The run asks in the viewer page. The person types the mission's answer (41, against the models' 42); the run
    is stopped (SIGTERM) while the organizer's question waits; the page says so, and the person answers it there
    all the same. Resumed, the run takes that answer and asks on: whether to change their answer, and their
    ballot, both typed in the page; then the page says the run is over."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="needs playwright (pip install -e '.[test]')")
    society = tmp_path / "democracy-human.yaml"  # a person who is slow to answer forfeits: a broken test ends
    society.write_text(HUMAN_DEMOCRACY.read_text().replace("timeout: 300", "timeout: 20"))
    ask = ["ask", "What is 6 times 7?", "--system", "society", "--society", str(society), "--no-cache",
           "--human", "viewer"]
    out = tmp_path / "runs"
    person = Person(out, sync_api)
    person.thread.start()
    code, said, err = invoke([*ask, "--out", str(out)], opener())
    assert code == 130, (said, err, person.failure)
    [folder] = list(out.iterdir())
    assert f"noosphere ask --resume {folder}" in said.replace("\n", "")
    assert person.stopped.wait(timeout=30) and person.failure is None, person.failure
    code, said, err = invoke(["ask", "--resume", str(folder), "--human", "viewer"], opener())
    person.thread.join(timeout=30)
    if person.failure is not None:
        raise person.failure
    assert code == 0 and "answer: 42" in said, err
    assert not person.errors, person.errors
    assert person.seen[0].startswith("waiting for you · mission")
    assert person.seen[1].startswith("waiting for you · mindstorm round 1")
    assert person.seen[2].startswith("stopped (interrupted) while waiting for you")
    assert person.seen[3] == "choice: one of A, B"
    assert person.seen[4] == "the run is over (ok)"
    if os.environ.get("NOOSPHERE_ARTIFACTS"):
        target = Path(os.environ["NOOSPHERE_ARTIFACTS"])
        target.mkdir(parents=True, exist_ok=True)
        (target / "human-live.png").write_bytes((tmp_path / "live.png").read_bytes())

    trace = events(folder)
    answered = [e.by for e in trace if e.kind == "human_answered"]
    assert answered == ["viewer", "saved", "viewer", "viewer"]  # the second was typed while the run was stopped
    assert [(b.voter, b.ranking) for b in trace if b.kind == "soc_ballot"] == [
        ("planner", ["42"]), ("calculator", ["42"]), ("you", ["41"])]
    result = json.loads((folder / "result.json").read_text())
    assert result["status"] == "ok" and result["sessions"] == 2 and result["answer"] == "42"
    assert Counter(e.kind for e in trace)["soc_started"] == 1
