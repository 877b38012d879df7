"""The base and react web agents' replies are forms made for the page: no browser, a made-up page, the scripted model.

What reaches the model must name only the page's own actions and bids (constrained decoding then cannot write
`click(bid, button='next')`, as the 0.5B model did at every step), and what comes back must become the right
BrowserGym action, or be sent back for another try. The browser path is in tests/test_web.py.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from noosphere.envs.web_actions import parse_action, perform
from noosphere.envs.web_effect import NO_CHANGE
from noosphere.envs.web_page import Element, PageState
from noosphere.errors import OutputParseError
from noosphere.llm import Model, ScriptedBackend
from noosphere.llm.gbnf import schema_grammar
from noosphere.systems.web_agents import ELEMENT_ACTIONS, base, in_parts_bids, react
from noosphere.systems.web_episode import Decision, PastStep, Turn, worth_trying
from noosphere.systems.web_prompts import ACTION_SPACE
from noosphere.trace import Trace
from tests.test_web_perform import FakePage

ADMISSIBLE = ('click("12")', 'fill("14", "Kasie")', 'select_option("7", "Lesotho")')
PAGE = PageState("file:///miniwob/form.html", "Form", "<body>...</body>", "[12] button 'Submit'", elements=(
    Element("2", "body", "", "", None, True, False), Element("12", "button", "button", "Submit", None, True, True),
    Element("14", "input", "textbox", "", None, True, False), Element("7", "select", "combobox", "", None, True, True),
    Element("8", "option", "option", "Lesotho", None, False, False),
    Element("30", "div", "", "", None, False, False)), screenshot=b"")
VISIBLE = ["12", "14", "7"]  # <body>, the hidden <option> and the hidden <div> are no target
CLICK, TYPE, CHOOSE, TICK = ("click", "hover", "dblclick", "focus"), ("fill", "clear", "press"), ("select_option",), \
    ("check", "uncheck")
FORMS = {CLICK: VISIBLE, TYPE: ["14"], CHOOSE: ["7"]}  # each group of actions in parts on what it can act on


def turn(admissible: tuple[str, ...] = ADMISSIBLE, page: PageState = PAGE) -> Turn:
    return Turn('Enter "Kasie" and submit.', page, admissible, (), 1, 10)


def decide(agent: Any, script: Any, on: Turn | None = None) -> tuple[Decision, ScriptedBackend, Trace]:
    backend = ScriptedBackend(script)
    trace = Trace(None)
    decision = asyncio.run(agent(Model(backend, trace=trace))(on or turn()))
    return decision, backend, trace


def action_schema(schema: dict[str, Any]) -> tuple[list[str], dict[tuple[str, ...], dict[str, Any]]]:
    """The listed actions of a step's schema, and its forms of an action in parts' properties, by their names."""
    listed, in_parts = schema["properties"]["action"]["oneOf"]
    return listed["enum"], in_parts_forms(schema, in_parts)


def in_parts_forms(schema: dict[str, Any], union: dict[str, Any]) -> dict[tuple[str, ...], dict[str, Any]]:
    forms = [schema["$defs"][option["$ref"].rsplit("/", 1)[1]]["properties"] for option in union["oneOf"]]
    return {tuple(values(form["name"])): form for form in forms}


def values(field: dict[str, Any]) -> list[Any]:
    """An enum's values (pydantic writes an enum of one as a const)."""
    return field["enum"] if "enum" in field else [field["const"]]


@pytest.mark.parametrize("agent", [base, react])
def test_the_schema_names_exactly_the_page_s_actions_and_bids(agent: Any) -> None:
    _, backend, _ = decide(agent, [{"thought": "submit next", "action": 'click("12")'}])
    [request] = backend.history
    assert request.json_schema is not None
    listed, in_parts = action_schema(request.json_schema)
    assert listed == list(ADMISSIBLE)
    # each group of names with the bids it can act on; no check box here, so no check or uncheck
    assert {names: values(form["bid"]) for names, form in in_parts.items()} == FORMS
    assert "text" not in in_parts[CLICK] and in_parts[TYPE]["text"]["type"] == "string"
    assert set(ELEMENT_ACTIONS) - {name for names in in_parts for name in names} == set(TICK)
    assert list(request.json_schema["properties"]) == (["thought", "action"] if agent is react else ["action"])
    # the prompt lists the actions once (not again in the format instruction) and shows no placeholder to copy
    system, user = (m.content for m in request.messages)
    # each listed with what its element is, so that a bid can be told from another
    listed = ['- click("12")  on button \'Submit\'', '- fill("14", "Kasie")  on textbox',
              '- select_option("7", "Lesotho")  on combobox']
    assert all(f"{line}\n" in user for line in listed) and '"click(\\"12\\")"' not in system
    assert "(bid" not in system + user and "bid)" not in system + user
    assert all(f'{name}("' in ACTION_SPACE for name in ELEMENT_ACTIONS) and "only an example" in ACTION_SPACE


def test_the_schema_follows_the_page_from_step_to_step() -> None:
    other = PageState("u", "t", "", "", (Element("40", "a", "link", "next", None, True, True),
                                         Element("41", "p", "", "", None, True, False)), b"")
    _, backend, _ = decide(base, [{"action": 'click("40")'}], turn(('click("40")',), other))
    schema = backend.history[0].json_schema
    assert schema is not None and schema["$defs"]["ClickInParts"]["properties"]["bid"]["enum"] == ["40", "41"]
    assert schema["properties"]["action"]["oneOf"] == [{"const": 'click("40")', "type": "string"},
                                                       {"$ref": "#/$defs/ClickInParts"}]  # nothing to type in


def test_a_listed_action_is_carried_out_as_written() -> None:
    decision, _, _ = decide(react, [{"thought": "the name goes in first", "action": 'fill("14", "Kasie")'}])
    assert decision == Decision('fill("14", "Kasie")', "the name goes in first")
    page = FakePage(*VISIBLE)
    asyncio.run(perform(page, parse_action(decision.action), PAGE.bids))
    assert [(bid, method) for bid, method, _, _ in page.calls] == [("14", "fill"), ("14", "press_sequentially")]


@pytest.mark.parametrize(("parts", "action"), [
    ({"name": "click", "bid": "12"}, 'click("12")'),
    ({"name": "click", "bid": "12", "text": "ignored: click takes no text"}, 'click("12")'),
    ({"name": "fill", "bid": "14", "text": 'Kasie "K"'}, 'fill("14", "Kasie \\"K\\"")'),
    ({"name": "select_option", "bid": "7", "text": "Lesotho"}, 'select_option("7", "Lesotho")'),
    ({"name": "press", "bid": "14", "text": "Enter"}, 'press("14", "Enter")'),
    ({"name": "clear", "bid": "14"}, 'clear("14")'),
    ({"name": "hover", "bid": "7"}, 'hover("7")')])
def test_an_action_in_parts_renders_to_its_action_string(parts: dict[str, str], action: str) -> None:
    decision, _, _ = decide(base, [{"action": parts}])
    assert decision.action == action and parse_action(decision.action).render() == action


ON_THE_PAGE = "action.parts.click.bid: Input should be '12', '14' or '7'"


@pytest.mark.parametrize(("wrong", "complaint"), [
    ({"name": "click", "bid": "999"}, ON_THE_PAGE),  # no such element
    ({"name": "click", "bid": "30"}, ON_THE_PAGE),  # on the page, but hidden
    ("click(bid, button='next')", """action.listed: Input should be 'click("12")', 'fill("14", "Kasie")' or"""),
    ('click("999")', "action.listed: Input should be"),  # well formed, but not listed
    ({"name": "goto", "bid": "12"}, "action.parts: Input tag 'goto' found using 'name' does not match any of the "
                                    "expected tags: 'click', 'hover', 'dblclick', 'focus', 'fill'"),
    ({"name": "fill", "bid": "14"}, "action.parts.fill: Value error, fill needs its text (value)"),
    # an action on an element it cannot act on: a button is no text field, a text field no list
    ({"name": "fill", "bid": "12", "text": "Kasie"}, "action.parts.fill.bid: Input should be '14'"),
    ({"name": "select_option", "bid": "14", "text": "Kasie"}, "action.parts.select_option.bid: Input should be '7'"),
    ({"name": "check", "bid": "12"}, "action.parts: Input tag 'check' found using 'name' does not match")])
def test_an_action_off_the_page_fails_validation_and_is_asked_again(wrong: Any, complaint: str) -> None:
    decision, backend, trace = decide(base, [{"action": wrong}, {"action": {"name": "click", "bid": "12"}}])
    assert decision.action == 'click("12")' and len(backend.history) == 2
    [repaired] = trace.of_kind("output_repaired")
    assert repaired.repair == "invalid" and repaired.detail.startswith(complaint)
    assert complaint in backend.history[1].messages[-1].content  # what the model is told before its second try


def test_a_model_that_never_names_a_page_action_loses_the_call() -> None:
    with pytest.raises(OutputParseError):
        decide(base, lambda request: {"action": {"name": "click", "bid": "999"}})


def test_a_page_with_nothing_to_act_on_can_only_wait() -> None:
    empty = PageState("u", "t", "", "", (Element("2", "body", "", "", None, True, False),), b"")
    decision, backend, _ = decide(base, [{"action": "click(\"2\")"}, {"action": "noop()"}], turn((), empty))
    schema = backend.history[0].json_schema
    assert schema is not None and schema["properties"]["action"]["const"] == "noop()"
    assert decision.action == "noop()" and len(backend.history) == 2


def test_a_page_without_listed_actions_still_takes_actions_in_parts() -> None:
    decision, backend, _ = decide(base, [{"action": {"name": "hover", "bid": "7"}}], turn(()))
    schema = backend.history[0].json_schema
    assert schema is not None and schema["properties"]["action"] == {
        "oneOf": [{"$ref": f"#/$defs/{form}InParts"} for form in ("Click", "Type", "Choose")], "title": "Action",
        "description": "an action in parts, or one of the actions that fit this page"}
    assert decision.action == 'hover("7")'


def gbnf_literals(rule: str) -> list[str]:
    """The string literals of a rule of alternatives, read as llama.cpp's grammar parser reads them."""
    literals, i = [], 0
    while i < len(rule):
        assert rule[i] == '"', rule[i:]
        i, text = i + 1, ""
        while rule[i] != '"':
            if rule[i] == "\\":
                i += 1
                text += {"n": "\n", "r": "\r", "t": "\t"}.get(rule[i], rule[i])
            else:
                text += rule[i]
            i += 1
        literals.append(text)
        i += 1
        if rule.startswith(" | ", i):
            i += 3
        else:
            assert i == len(rule), rule[i:]
    return literals


def test_the_step_schema_compiles_to_a_llama_cpp_grammar_of_the_page() -> None:
    llama_cpp = pytest.importorskip("llama_cpp", reason="needs the local extra: pip install -e '.[local]'")
    _, backend, _ = decide(react, [{"thought": "t", "action": 'click("12")'}])
    schema = backend.history[0].json_schema
    gbnf = schema_grammar(schema)
    llama_cpp.LlamaGrammar.from_string(gbnf, verbose=False)
    rules = dict(line.split(" ::= ", 1) for line in gbnf.splitlines())
    # each listed action is one GBNF literal that reads back as its JSON string (quotes and backslashes escaped:
    # llama-cpp-python's own converter leaves backslashes bare, and llama.cpp then refuses the whole grammar)
    assert gbnf_literals(rules["action-0"]) == [json.dumps(action) for action in ADMISSIBLE]
    assert rules["ClickInParts-bid"] == ' | '.join(f'"\\"{bid}\\""' for bid in VISIBLE)
    # a text field's actions can name nothing but the text field, a list's nothing but the list: the grammar itself
    # cannot write fill on the button or check anywhere (the page has no check box)
    assert rules["TypeInParts-bid"] == '"\\"14\\""' and rules["ChooseInParts-bid"] == '"\\"7\\""'
    assert gbnf_literals(rules["TypeInParts-name"]) == [json.dumps(name) for name in TYPE]
    assert '"\\"check\\""' not in gbnf and "discriminator" not in gbnf
    assert rules["action"] == "action-0 | action-1" and rules["action-1"] == "action-1-0 | action-1-1 | action-1-2"
    assert [rules[f"action-1-{i}"] for i in range(3)] == ["ClickInParts", "TypeInParts", "ChooseInParts"]
    assert rules["action-0"].count(" | ") == len(ADMISSIBLE) - 1
    assert rules["root"].index("thought-kv") < rules["root"].index("action-kv")  # the thought is written first


def test_actions_already_taken_are_listed_last_with_their_step() -> None:
    from noosphere.systems.web_episode import PastStep

    taken = Turn('Enter "Kasie" and submit.', PAGE, ADMISSIBLE,
                 (PastStep('fill("14", "Kasie")', effect='field 14 now holds "Kasie"'),
                  PastStep('fill("14", "Kasie")', effect="no visible change on the page", repeated=True)), 3, 10)
    _, backend, _ = decide(base, [{"action": 'click("12")'}], taken)
    prompt = backend.history[0].messages[-1].content
    listed = prompt.split("Actions that fit this page:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert listed == ['- click("12")  on button \'Submit\'', '- select_option("7", "Lesotho")  on combobox',
                      '- fill("14", "Kasie")  on textbox  (already taken at step 2)']
    listed_enum, _ = action_schema(backend.history[0].json_schema)
    assert listed_enum == list(ADMISSIBLE)  # the choice itself is unchanged: only the listing's order and marks


def test_an_action_that_changed_nothing_is_not_offered_again() -> None:
    from noosphere.envs.web_effect import NO_CHANGE
    from noosphere.systems.web_episode import PastStep, worth_trying

    futile = PastStep('click("12")', effect=NO_CHANGE)
    assert worth_trying(ADMISSIBLE, [futile]) == ADMISSIBLE[1:]
    # what changed something, or failed, or changed nothing only before it last changed something, stays
    assert worth_trying(ADMISSIBLE, [PastStep('click("12")', effect="the page now shows \"x\"")]) == ADMISSIBLE
    assert worth_trying(ADMISSIBLE, [PastStep('click("12")', error="not visible")]) == ADMISSIBLE
    assert worth_trying(ADMISSIBLE, [futile, PastStep('click("12")', effect="box 12 is now checked")]) == ADMISSIBLE
    # never an empty list: with every action futile, all are offered
    every = [PastStep(action, effect=NO_CHANGE) for action in ADMISSIBLE]
    assert worth_trying(ADMISSIBLE, every) == ADMISSIBLE


def test_a_field_already_filled_is_not_offered_for_filling_again() -> None:
    from noosphere.systems.web_episode import PastStep, worth_trying

    offered = ('fill("10", "riley")', 'fill("10", "ONsLN")', 'fill("13", "riley")', 'fill("13", "ONsLN")',
               'click("14")')
    filled = PastStep('fill("10", "riley")', effect='field 10 now holds "riley"')
    assert worth_trying(offered, [filled]) == offered[2:]
    # a fill that failed, or changed nothing, fills nothing
    assert worth_trying(offered, [PastStep('fill("10", "riley")', error="not an <input>")]) == offered


def test_case_variants_of_a_goal_s_phrase_only_where_the_goal_speaks_of_case() -> None:
    from noosphere.envs.web_admissible import goal_phrases

    assert goal_phrases('Enter "Livia" into the text field and press Submit.') == ("Livia",)
    assert goal_phrases('Type "Kasie" in all upper case letters in the text field.') == ("Kasie", "kasie", "KASIE")
    assert goal_phrases("Enter the username \"riley\" and the password 'ONsLN'.") == ("riley", "ONsLN")


RADIOS = PageState("file:///miniwob/click-option.html", "Options", "", "", elements=(
    Element("3", "label", "", "r4p", None, True, False),
    Element("4", "input", "radio", "r4p", None, True, True, input_type="radio"),
    Element("5", "input", "radio", "Dale", None, True, True, input_type="radio"),
    Element("6", "input", "checkbox", "agree", None, True, True, input_type="checkbox"),
    Element("9", "input", "checkbox", "hidden", None, False, True, input_type="checkbox"),
    Element("10", "div", "checkbox", "styled box", None, True, True),
    Element("11", "textarea", "textbox", "", None, True, False),
    Element("13", "input", "", "", None, True, False, input_type="email"),
    Element("15", "select", "combobox", "", None, True, True, value="Chad", options=("Lesotho", "Chad")),
    Element("16", "select", "combobox", "", None, True, True, options=("red", "blue")),
    Element("20", "button", "button", "Submit", None, True, True)), screenshot=b"")


def test_each_action_in_parts_names_only_the_elements_it_can_act_on() -> None:
    on = turn((), RADIOS)
    assert in_parts_bids(on) == {CLICK: ("3", "4", "5", "6", "10", "11", "13", "15", "16", "20"),
                                 TYPE: ("11", "13"), CHOOSE: ("15", "16"), TICK: ("4", "5", "6", "10")}
    # a page with neither a field, a list nor a box: only the group that acts on anything
    assert in_parts_bids(turn((), PageState("u", "t", "", "", RADIOS.elements[-1:], b""))) == {CLICK: ("20",)}
    decision, backend, _ = decide(react, [{"thought": "r4p", "action": {"name": "check", "bid": "4"}}], on)
    schema = backend.history[0].json_schema
    assert schema is not None and decision.action == 'check("4")'
    forms = in_parts_forms(schema, schema["properties"]["action"])
    assert {names: values(form["bid"]) for names, form in forms.items()} == {
        names: list(bids) for names, bids in in_parts_bids(on).items()}
    # a list's option is one of the page's lists' options; what a box is ticked with, nothing
    assert forms[CHOOSE]["text"]["enum"] == ["Lesotho", "Chad", "red", "blue"] and "text" not in forms[TICK]


@pytest.mark.parametrize(("wrong", "complaint"), [
    # click-option: the 1.5B model chose a radio button with select_option, 43 times ("not a <select> element")
    ({"name": "select_option", "bid": "4", "text": "r4p"}, "action.select_option.bid: Input should be '15' or '16'"),
    ({"name": "check", "bid": "20"}, "action.check.bid: Input should be '4', '5', '6' or '10'"),
    ({"name": "press", "bid": "4", "text": "Enter"}, "action.press.bid: Input should be '11' or '13'"),
    ({"name": "select_option", "bid": "15", "text": "Mars"},
     "action.select_option.text: Input should be 'Lesotho', 'Chad', 'red' or 'blue'"),
    # an option of the other list
    ({"name": "select_option", "bid": "15", "text": "red"},
     "action: Value error, list 15 has no option 'red'; its options: 'Lesotho', 'Chad'")])
def test_an_action_in_parts_on_an_element_it_cannot_act_on_is_asked_again(wrong: Any, complaint: str) -> None:
    decision, backend, trace = decide(react, [{"thought": "r4p", "action": wrong},
                                              {"thought": "r4p", "action": {"name": "check", "bid": "4"}}],
                                      turn((), RADIOS))
    assert decision.action == 'check("4")' and len(backend.history) == 2
    [repaired] = trace.of_kind("output_repaired")
    assert repaired.detail.startswith(complaint) and complaint in backend.history[1].messages[-1].content


FILLED = PastStep('fill("14", "Kasie")', effect='field 14 now holds "Kasie"')


@pytest.mark.parametrize(("past", "again", "reason"), [
    # enter-text: the 1.5B model refilled, in parts, the field it had filled, on all ten steps
    (FILLED, {"name": "fill", "bid": "14", "text": "Kasie"},
     'field 14 was already filled at step 1 (fill("14", "Kasie")): take another action'),
    (FILLED, {"name": "fill", "bid": "14", "text": "K"}, "field 14 was already filled at step 1"),
    (PastStep('click("12")', effect=NO_CHANGE), {"name": "click", "bid": "12"},
     'click("12") changed nothing visible when taken at step 1: take another action'),
    (PastStep('press("14", "Enter")', effect=NO_CHANGE), {"name": "press", "bid": "14", "text": "Enter"},
     'press("14", "Enter") changed nothing visible when taken at step 1')])
def test_an_action_in_parts_the_list_leaves_out_as_futile_is_asked_again_with_the_reason(
        past: PastStep, again: dict[str, str], reason: str) -> None:
    on = Turn('Enter "Kasie" and submit.', PAGE, worth_trying(ADMISSIBLE, [past]), (past,), 2, 10)
    assert all(past.action != action for action in on.admissible)  # the list leaves it out
    decision, backend, trace = decide(base, [{"action": again}, {"action": {"name": "hover", "bid": "12"}}], on)
    assert decision.action == 'hover("12")' and len(backend.history) == 2
    [repaired] = trace.of_kind("output_repaired")
    assert repaired.repair == "invalid" and repaired.detail.startswith(f"action.parts: Value error, {reason}")
    assert reason in backend.history[1].messages[-1].content


def test_an_action_in_parts_that_did_something_or_failed_may_be_taken_again() -> None:
    for past in (PastStep('click("12")', effect='the page now shows "x"'), PastStep('click("12")', error="hidden"),
                 PastStep('fill("14", "Kasie")', error="not an <input>")):
        on = Turn('Enter "Kasie" and submit.', PAGE, ADMISSIBLE, (past,), 2, 10)
        again = parse_action(past.action)
        parts = {"name": again.name, "bid": "12" if again.name == "click" else "14", "text": "Kasie"}
        decision, backend, _ = decide(base, [{"action": parts}], on)
        assert decision.action == past.action and len(backend.history) == 1


def test_ctm_on_a_page_takes_the_workspace_settings_calibration_and_refuses_it_without_probabilities() -> None:
    """`calibrate` reached every STM but the web ctm's, which ignored it; now it is the STM's, refused before any
    call where the scores are the model's words."""
    from noosphere.errors import UsageError
    from noosphere.systems.web_ctm import ctm
    from noosphere.workspace import WorkspaceSettings

    backend = ScriptedBackend([])
    decide = ctm(Model(backend, trace=Trace(None)), WorkspaceSettings(calibrate=True))
    with pytest.raises(UsageError, match="contextual calibration needs a label set and probability scores"):
        asyncio.run(decide(turn(('click("12")', 'click("13")'))))
    assert backend.history == []


def test_ctm_on_a_page_with_one_action_chooses_between_it_and_waiting() -> None:
    """The STM's label set needs two labels: click-test's page has one button, and the run failed on it
    ("score at least two options (got 1)"), a usage error that ends the benchmark."""
    from noosphere.errors import UsageError
    from noosphere.systems.web_ctm import NOTHING_FITS, ctm
    from noosphere.workspace import ShortTermMemory, WorkspaceSettings

    def script(request: Any) -> Any:
        if request.agent == "stm":
            return {"answer": 'click("12")', "label": 'click("12")', "confidence": 0.95}
        return {"response": 'click("12") presses Submit', "additional_question": "", "relevance": 0.9,
                "confidence": 0.9, "surprise": 0.1}

    backend = ScriptedBackend(script)
    decide = ctm(Model(backend, trace=Trace(None)), WorkspaceSettings(max_iterations=1))
    decision = asyncio.run(decide(turn(('click("12")',))))
    assert decision.action == 'click("12")'
    [stm] = [request for request in backend.history if request.agent == "stm"]
    assert stm.json_schema is not None and stm.json_schema["properties"]["label"]["enum"] == ['click("12")',
                                                                                              NOTHING_FITS]
    # no action fits: ctm waits, with no call
    before = len(backend.history)
    assert asyncio.run(decide(turn(()))).action == NOTHING_FITS and len(backend.history) == before
    # and a label set of one is refused where it is made
    with pytest.raises(UsageError, match="at least two distinct labels"):
        ShortTermMemory(Model(ScriptedBackend([])), labels=("only",))
