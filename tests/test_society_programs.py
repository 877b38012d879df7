"""Members that answer with a program (`answers: program`): the program runs in the sandbox, its output is the answer,
and a program that fails forfeits the member's turn."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from noosphere.errors import ConfigError
from noosphere.llm import Capabilities, Reply, Usage
from noosphere.society import Member, debate, economy_of_minds
from noosphere.society.config import build_society, load_society_spec
from noosphere.society.programs import ProgramFailed, printed_answer, program_of
from noosphere.society.spec import SocietySpec
from noosphere.tools import SandboxUnavailableError
from noosphere.tools import sandbox as sandbox_module
from noosphere.tools.bwrap import bwrap_path
from tests.helpers import by_agent, opener_for, scripted

needs_bwrap = pytest.mark.skipif(bwrap_path() is None,
                                 reason="bubblewrap is not installed (apt-get install bubblewrap; .ci/run installs it)")


def said(answer: str) -> dict[str, str]:
    return {"reasoning": "because", "answer": answer}


def program(source: str, logprob: float | None = None) -> Reply:
    return Reply(f"Here it is:\n```python\n{source}\n```\n", usage=Usage(10, 6), logprob=logprob)


def mixed(model, programmers=("p",)) -> list[Member]:
    """Two members who answer in words, then the programmers."""
    return [Member(name, model, f"You are {name}.") for name in ("a", "b")] + [
        Member(name, model, "You write programs.", answers="program") for name in programmers]


# reading a reply ---------------------------------------------------------------------------------------------
def test_the_program_is_the_last_fenced_block_or_the_whole_reply_when_it_is_python() -> None:
    assert program_of("Draft:\n```python\nprint(1)\n```\nFixed:\n```py\nprint(2)\n```") == "print(2)\n"
    assert program_of("```\nx = 3\nprint(x)\n```") == "x = 3\nprint(x)\n"
    assert program_of("x = 3\nprint(x * 2)") == "x = 3\nprint(x * 2)"  # no fence, but Python: repaired
    with pytest.raises(ProgramFailed, match="no ```python block"):
        program_of("First we add 3 and 4, which gives 7.")
    with pytest.raises(ProgramFailed, match="empty"):
        program_of("   ")


def test_the_program_is_the_python_block_not_a_block_of_its_output_or_one_in_another_language() -> None:
    """Fences are read line by line: a block of the program's output after it was taken as the program, and the
    closing fence of a block in another language opened a "block" of the prose up to the program's fence."""
    assert program_of("```python\nprint(6 * 7)\n```\n\nOutput:\n```\n42\n```") == "print(6 * 7)\n"
    assert program_of("Data:\n```text\n3 apples\n```\nThe program:\n```python\nprint(3 + 4)\n```") == "print(3 + 4)\n"
    assert program_of("1. The program:\n   ```python\n   x = 3\n   print(x)\n   ```") == "x = 3\nprint(x)\n"
    assert program_of("Here it is: ```python\r\nprint(1)\r\n```") == "print(1)\n"
    with pytest.raises(ProgramFailed, match="no ```python block"):
        program_of("```bash\nls\n```")


def test_tilde_fences_are_read_and_a_block_left_open_is_told_as_such() -> None:
    assert program_of("~~~python\nprint(5)\n~~~\nOutput:\n```\n5\n```") == "print(5)\n"
    assert program_of("~~~\nx = '```'\nprint(x)\n~~~") == "x = '```'\nprint(x)\n"  # closed by its own marker
    with pytest.raises(ProgramFailed, match="opens a ```python block and never closes it"):
        program_of("Here:\n```python\nx = 3\ny = x *")


def test_the_answer_is_the_last_line_printed() -> None:
    assert printed_answer("step 1: 12\nstep 2: 30\n\n42\n") == "42"
    assert printed_answer("\x1b[31m42\x1b[0m\n") == "[31m42[0m"  # the escape character itself is left out
    assert printed_answer("\u202e24\u202c\n") == "24"  # a right-to-left override would show 42
    with pytest.raises(ProgramFailed, match="printed nothing"):
        printed_answer("\u200b\n")
    with pytest.raises(ProgramFailed, match="printed nothing"):
        printed_answer("\n  \n")
    # not cut to a statement's 300 characters: that is another answer than the one printed (a statement's longer
    # answer forfeits too)
    with pytest.raises(ProgramFailed, match="an answer of 301 characters; an answer has at most 300"):
        printed_answer("1" * 301 + "\n")
    assert printed_answer("1" * 300) == "1" * 300


# in a society ------------------------------------------------------------------------------------------------
@needs_bwrap
def test_a_programmers_answer_is_what_its_program_prints_and_the_others_read_the_program() -> None:
    model, backend, trace = scripted(by_agent({
        "a": [said("41"), said("42")], "b": [said("42"), said("42")],
        "p": [program("apples = 6\nprint(apples * 7)"), program("print(6 * 7)")]}))
    result = debate(mixed(model), rounds=1, vote="standing").run_sync("What is 6 times 7?")
    assert result.answer == "42"
    spoken = {(e.member, e.round): e for e in trace.of_kind("soc_message")}
    assert spoken[("p", 0)].answer == "42" and "apples = 6" in spoken[("p", 0)].text
    assert spoken[("p", 0)].text.endswith("It prints: 42")
    programmer_asked = [r for r in backend.history if r.agent == "p"]
    assert all(r.json_schema is None for r in programmer_asked)  # free text, not the statement's JSON form
    assert "```python block" in programmer_asked[0].messages[-1].content
    # in the round, the others read the program and what it printed
    round_prompt = next(r for r in backend.history if r.agent == "a" and len(r.messages) > 2).messages[-1].content
    assert "apples = 6" in round_prompt and "It prints: 42" in round_prompt


@needs_bwrap
def test_a_program_that_fails_forfeits_the_turn_with_its_error_and_the_others_decide() -> None:
    model, _, trace = scripted(by_agent({"a": [said("12")], "b": [said("12")],
                                         "p": [program("print(1 / 0)")]}))
    result = debate(mixed(model), rounds=0, vote="standing").run_sync("5 + 7?")
    forfeits = trace.of_kind("soc_forfeit")
    assert [f.member for f in forfeits] == ["p"] and "ZeroDivisionError" in forfeits[0].error
    assert "its program failed" in forfeits[0].error
    assert result.answer == "12" and {r.member for r in result.records} == {"a", "b"}


@needs_bwrap
def test_a_reply_in_prose_forfeits_and_a_program_that_prints_nothing_too() -> None:
    model, _, trace = scripted(by_agent({"a": [said("3")], "b": [said("3")],
                                         "p": ["Three.", program("x = 3")], "q": [program("x = 3")]}))
    debate(mixed(model, ("p", "q")), rounds=0, vote="standing").run_sync("1 + 2?")
    errors = {f.member: f.error for f in trace.of_kind("soc_forfeit")}
    assert "no ```python block" in errors["p"] and "printed nothing" in errors["q"]


@needs_bwrap
def test_a_vote_by_reply_probability_weighs_a_program_by_the_reply_that_holds_it() -> None:
    model, backend, trace = scripted(by_agent({
        "a": [Reply('{"reasoning": "r", "answer": "5"}', usage=Usage(10, 4), logprob=-8.0)],
        "b": [Reply('{"reasoning": "r", "answer": "5"}', usage=Usage(10, 4), logprob=-8.0)],
        "p": [program("print(2 * 3)", logprob=-0.6)]}), capabilities=Capabilities(json_schema=True, logprobs=True))
    result = debate(mixed(model), rounds=0, vote="sequence").run_sync("What is 3 x 2?")
    assert (result.answer, result.decided_by) == ("6", "sequence")
    assert [b.weight for b in trace.of_kind("soc_ballot")] == pytest.approx(
        [math.exp(-2.0), math.exp(-2.0), math.exp(-0.1)], abs=1e-6)
    assert all(r.logprobs for r in backend.history)


# the society file ----------------------------------------------------------------------------------------------
def _spec(**change: object) -> SocietySpec:
    data: dict[str, object] = {"organisation": "debate", "members": [
        {"name": "a", "role": "r"}, {"name": "p", "role": "You write programs.", "answers": "program"}]}
    return SocietySpec.model_validate(data | change)


def test_only_members_of_organisations_whose_members_answer_may_answer_with_a_program(tmp_path: Path) -> None:
    assert _spec().problem() is None
    assert _spec(editor={"name": "e", "role": "r", "answers": "program"}).problem() == (
        ("editor", "answers"), "the editor does not answer the task, so it cannot answer with a program; "
                               "answers: program is for members")
    where, message = _spec(organisation="roleplay").problem()
    assert where == ("members", 1, "answers") and "a roleplay's members do not answer" in message
    path = tmp_path / "s.toml"
    path.write_text('organisation = "debate"\n[[members]]\nname = "h"\nrole = "r"\nhuman = true\n'
                    'answers = "program"\n')
    with pytest.raises(ConfigError, match="a person or a society answers in words"):
        load_society_spec(path)


def test_without_bubblewrap_a_society_with_a_programmer_is_refused_before_any_call(monkeypatch) -> None:
    monkeypatch.setattr(sandbox_module, "bwrap_path", lambda: None)
    monkeypatch.delenv(sandbox_module.UNSANDBOXED_ENV, raising=False)
    opener = opener_for(lambda request: said("1"))
    with pytest.raises(SandboxUnavailableError, match="bubblewrap"):
        build_society(_spec(), opener, "scripted")
    assert opener.backend.history == []
    build_society(_spec(members=[{"name": "a", "role": "r"}]), opener, "scripted")  # no programmer: no sandbox


def test_with_the_sandbox_opted_out_of_a_society_with_a_programmer_builds_without_bubblewrap(monkeypatch) -> None:
    """NOOSPHERE_UNSANDBOXED=1 is the way out that the refusal itself names: the check before any call honours it."""
    monkeypatch.setattr(sandbox_module, "bwrap_path", lambda: None)
    monkeypatch.setenv(sandbox_module.UNSANDBOXED_ENV, "1")
    build_society(_spec(), opener_for(lambda request: said("1")), "scripted")
    with pytest.raises(SandboxUnavailableError, match="bubblewrap"):
        sandbox_module.Sandbox(unsandboxed=False).check()


def answered_and_forfeited(answering: str, forfeiting: str) -> tuple[Any, Any]:
    """A debate whose programmer p runs `answering` and whose programmer q runs `forfeiting`: p's statement and q's
    forfeit (each asserted to be the only one)."""
    model, _, trace = scripted(by_agent({"a": [said("7")], "b": [said("8")], "p": [program(answering)],
                                         "q": [program(forfeiting)]}))
    debate(mixed(model, ("p", "q")), rounds=0, vote="standing").run_sync("3 + 4?")
    [spoken] = [e for e in trace.of_kind("soc_message") if e.member == "p"]
    [forfeit] = trace.of_kind("soc_forfeit")
    assert forfeit.member == "q"
    return spoken, forfeit


@needs_bwrap
def test_the_answer_is_the_last_line_on_standard_output_not_a_warning_written_after_it() -> None:
    """The sandbox's output is standard output, then standard error: a warning the program raised after printing
    its answer was the member's answer ("warnings.warn(...)"), and a program that wrote only to standard error
    answered with its error."""
    spoken, forfeit = answered_and_forfeited(
        "import sys, warnings\nprint(7)\nwarnings.warn('rounded')\nprint('note', file=sys.stderr)",
        "import sys\nprint(7, file=sys.stderr)")
    assert spoken.answer == "7" and spoken.text.endswith("It prints: 7")
    assert "printed nothing to standard output; it wrote: 7" in forfeit.error


@needs_bwrap
def test_a_program_that_exits_with_status_0_after_printing_answers_and_one_that_exits_with_another_forfeits() -> None:
    """`sys.exit(main())` ends a program well: it forfeited, told its tests did not all run."""
    spoken, forfeit = answered_and_forfeited("import sys\n\ndef main():\n    print(3 + 4)\n\nsys.exit(main())",
                                             "import sys\nprint(7)\nsys.exit(2)")
    assert spoken.answer == "7"
    assert "tests" not in forfeit.error


@needs_bwrap
def test_a_programmers_variant_in_an_economy_answers_with_a_program_too() -> None:
    """A spawned variant keeps its parent's role, which asks for programs; it was asked for a statement instead."""
    no_hire = json.dumps({"hire": False})
    model, backend, trace = scripted(by_agent({
        "p": [program("print(1)"), no_hire, program("print(1)"), no_hire, program("print(1)")],
        "p.1": [no_hire, program("print(1)")],
        "arbiter": [json.dumps({"reason": "ok", "valid": True})]}))
    society = economy_of_minds([Member("p", model, "You write programs.", answers="program")],
                               Member("arbiter", model, "rz"), rounds=2, start=50.0, rent=1.0, spawn_above=30.0)
    society.run_sync("1?")
    [spawn] = trace.of_kind("econ_spawn")
    assert spawn.child == "p.1" and society.members[1].answers == "program"
    assert [e.answer for e in trace.of_kind("soc_message") if e.member == "p.1" and e.answer] == ["1"]
    assert not trace.of_kind("soc_forfeit")
    answered = [r for r in backend.history if r.agent == "p.1" and "```python block" in r.messages[-1].content]
    assert len(answered) == 1 and answered[0].json_schema is None


@needs_bwrap
def test_a_programmer_reads_in_its_later_turns_what_its_program_printed_or_why_it_failed() -> None:
    """Its history kept the reply alone: asked in the round to say where it agrees and answer again, it did not
    know the answer its program had given (the others did), nor that its program had failed."""
    model, backend, _ = scripted(by_agent({
        "a": [said("41"), said("42")], "b": [said("42"), said("42")],
        "p": [program("print(6 * 7)"), program("print(42)")], "q": [program("print(1 / 0)"), program("print(42)")]}))
    debate(mixed(model, ("p", "q")), rounds=1, vote="standing").run_sync("What is 6 times 7?")
    for name, came in (("p", "It prints: 42"), ("q", "It gave no answer: its program failed:")):
        [round_request] = [r for r in backend.history if r.agent == name and len(r.messages) > 2]
        [kept] = [m for m in round_request.messages if m.role == "assistant"]
        assert kept.content.startswith("Here it is:\n```python\n") and came in kept.content
    assert "ZeroDivisionError" in kept.content


@needs_bwrap
def test_a_program_member_with_a_repair_is_shown_its_failure_and_answers_with_the_corrected_program() -> None:
    """`repairs: 1`: a NameError no longer forfeits the turn at once; the second program is the answer, weighed by
    the reply that held it; without repairs (q) the same failure forfeits."""
    model, backend, trace = scripted(by_agent({
        "a": [Reply('{"reasoning": "r", "answer": "41"}', usage=Usage(10, 4), logprob=-8.0)],
        "b": [Reply('{"reasoning": "r", "answer": "41"}', usage=Usage(10, 4), logprob=-8.0)],
        "p": [program("print(totl)", logprob=-1.0), program("total = 6 * 7\nprint(total)", logprob=-0.3)],
        "q": [program("print(totl)", logprob=-1.0)]}), capabilities=Capabilities(json_schema=True, logprobs=True))
    members = mixed(model, ("p", "q"))
    members[2].repairs = 1
    result = debate(members, rounds=0, vote="sequence").run_sync("What is 6 times 7?")
    [repair] = trace.of_kind("soc_program_repair")
    assert (repair.member, repair.attempt) == ("p", 1) and "NameError" in repair.reason
    asked = [r for r in backend.history if r.agent == "p"]
    assert len(asked) == 2 and "NameError" in asked[1].messages[-1].content
    assert "corrected program" in asked[1].messages[-1].content
    # the failed reply is in the conversation the repair is asked in, and why it failed is said once, in the ask
    assert "print(totl)" in asked[1].messages[-2].content
    assert sum(m.content.count("NameError") for m in asked[1].messages if isinstance(m.content, str)) == 1
    spoken = [e for e in trace.of_kind("soc_message") if e.member == "p"]
    assert [e.answer for e in spoken] == ["42"] and "total = 6 * 7" in spoken[0].text
    assert spoken[0].probability == pytest.approx(math.exp(-0.3 / 6), abs=1e-6)
    assert [f.member for f in trace.of_kind("soc_forfeit")] == ["q"]
    assert result.answer == "42"  # the repaired program's weight e^-0.05 outweighs two replies of e^-2 each


@needs_bwrap
def test_a_repair_that_fails_too_forfeits_the_turn_with_the_last_failure() -> None:
    model, backend, trace = scripted(by_agent({"a": [said("7")], "b": [said("7")],
                                               "p": [program("print(1 / 0)"), "Seven."]}))
    members = mixed(model)
    members[2].repairs = 1
    debate(members, rounds=0, vote="standing").run_sync("3 + 4?")
    [forfeit] = trace.of_kind("soc_forfeit")
    assert forfeit.member == "p" and "no ```python block" in forfeit.error
    assert len([r for r in backend.history if r.agent == "p"]) == 2


def test_repairs_go_with_a_member_who_answers_with_a_program() -> None:
    from noosphere.errors import UsageError

    model, backend, _ = scripted(by_agent({"a": [said("7")], "b": [said("7")], "p": [program("print(7)")]}))
    members = mixed(model)
    members[2].repairs = -1  # set in Python, past the file's bounds: refused before its program is asked for
    with pytest.raises(UsageError, match="repairs are a count"):
        debate(members, rounds=0, vote="standing").run_sync("3 + 4?")
    assert not [r for r in backend.history if r.agent == "p"]
    with pytest.raises(ValueError, match="repairs are a program member's"):
        SocietySpec.model_validate({"organisation": "debate", "members": [{"name": "a", "role": "r", "repairs": 1}]})
    spec = SocietySpec.model_validate({"organisation": "debate", "members": [
        {"name": "a", "role": "r"}, {"name": "p", "role": "r", "answers": "program", "repairs": 2}]})
    assert spec.members[1].repairs == 2
