"""What a web step visibly did to the page, as each system's history shows it: no browser, made-up pages.

`page_effect` is measured from two observations (tests/test_web.py measures it on real MiniWoB++ pages); the
episode loop carries it into the history every system sees and into the `web_step` event. A made-up environment
here works its page as a browser would (a fill writes the field, a click toggles the box), so that the loop's
plumbing is tested on the real `page_effect`.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from noosphere.envs.miniwob import LastStep
from noosphere.envs.web_actions import parse_action
from noosphere.envs.web_effect import MAX_CHARS, NO_CHANGE, PageEffect, page_effect
from noosphere.envs.web_events import WebStepTaken
from noosphere.envs.web_page import Element, PageState
from noosphere.llm import Model, ScriptedBackend
from noosphere.systems.web_agents import base, react
from noosphere.systems.web_ctm import ctm
from noosphere.systems.web_episode import REPEATED, PastStep, play
from noosphere.trace import Trace, read_trace
from noosphere.workspace import WorkspaceSettings

URL = "file:///miniwob/enter-text.html"
AXTREE = """RootWebArea 'Enter Text Task', focused
  [7] textbox ''{value}
  [9] checkbox 'kHd'{checked}
  [11] button 'Submit'"""


def page(value: str = "", checked: bool = False, *, focused: str = "2", url: str = URL, extra: str = "",
         elements: tuple[Element, ...] = ()) -> PageState:
    """A field (7), a box (9) and a button (11) in <body> (2); `extra` is more accessibility tree."""
    axtree = AXTREE.format(value=f", value='{value}'" if value else "", checked=", checked" if checked else "")
    return PageState(url, "Enter Text", "<body>...</body>", axtree + extra, (
        Element("2", "body", "", "", None, True, False),
        Element("7", "input", "textbox", "", None, True, False, input_type="text", value=value),
        Element("9", "input", "checkbox", "kHd", None, True, True, input_type="checkbox", checked=checked),
        Element("11", "button", "button", "Submit", None, True, True), *elements), b"", focused)


def effect(before: PageState, after: PageState) -> str:
    return page_effect(before, after).text


# the effect of one step ------------------------------------------------------------------------------
def test_a_filled_field_says_what_it_now_holds() -> None:
    assert page_effect(page(), page("Livia")) == PageEffect('field 7 now holds "Livia"', True)
    assert effect(page("Livia"), page("")) == "field 7 is now empty"
    # the focus the fill gave the field is not said again
    assert effect(page(), page("Livia", focused="7")) == 'field 7 now holds "Livia"'


def test_a_toggled_box_says_whether_it_is_now_checked() -> None:
    assert page_effect(page(), page(checked=True)) == PageEffect("box 9 is now checked", True)
    assert effect(page(checked=True), page(checked=False, focused="9")) == "box 9 is now unchecked"
    radio = Element("20", "input", "radio", "yes", None, True, True, input_type="radio")
    assert effect(page(elements=(radio,)), page(elements=(replace(radio, checked=True),))) == \
        "radio button 20 is now selected"


def test_an_action_that_changed_nothing_says_so() -> None:
    before = page("Livia")
    # a new screenshot, or the focus going back to <body>, is no visible change
    after = replace(page("Livia"), screenshot=b"other pixels", focused="2")
    assert page_effect(replace(before, focused="7"), after) == PageEffect(NO_CHANGE, False)
    assert page_effect(before, before) == PageEffect("no visible change on the page", False)


def test_a_click_that_focuses_a_field_says_so() -> None:
    assert page_effect(page(), page(focused="7")) == PageEffect("field 7 is now focused", True)


def test_navigation_and_new_text_are_named() -> None:
    assert effect(page(), page(url="file:///miniwob/other.html")) == 'the page went to "file:///miniwob/other.html"'
    assert effect(page(), page(url=URL + "#done")) == 'the page went to "#done"'
    said = "\n  StaticText 'You won\\'t believe it'"
    assert effect(page(), page(extra=said)) == 'the page now shows "You won\'t believe it"'
    assert effect(page(extra=said), page()) == 'the text "You won\'t believe it" is gone'
    panel = Element("30", "div", "tabpanel", "", None, False, False)
    assert effect(page(elements=(panel,)), page(elements=(replace(panel, visible=True),))) == "tabpanel 30 appeared"
    assert effect(page(elements=(panel,)), page()) == NO_CHANGE  # it was hidden: its going is not visible
    renamed = Element("11", "button", "button", "Sent", None, True, True)
    after = replace(page(), elements=tuple(renamed if e.bid == "11" else e for e in page().elements))
    assert effect(page(), after) == 'button 11 now reads "Sent"'


def test_a_list_s_new_choice_is_named() -> None:
    choice = Element("5", "select", "combobox", "", None, True, True, options=("Lesotho", "Uganda"))
    before = page(elements=(choice,), extra="\n  [5] combobox '', value='Lesotho'")
    after = page(elements=(choice,), extra="\n  [5] combobox '', value='Uganda'")
    assert effect(before, after) == 'list 5 now shows "Uganda"'


def test_many_changes_are_counted_and_the_line_is_short() -> None:
    long = "a very long text that goes on and on " * 5
    few = effect(page(), page("Livia", True, extra="\n  StaticText 'saved'", focused="11"))
    assert few == 'field 7 now holds "Livia"; box 9 is now checked; the page now shows "saved"; and 1 more change'
    far = "file:///miniwob/" + "x" * 80 + "/next.html"
    after = page(long, url=far, extra=f"\n  StaticText 'Saved: {long}'", focused="11")
    line = effect(page(), after)
    cut = '"a very long text that goes on and on a …"'  # every quoted text is cut
    assert line.startswith(f'the page went to "…{far[-39:]}"; field 7 now holds {cut}; '
                           'the page now shows "Saved: a')
    assert line.endswith("…") and len(line) == MAX_CHARS  # and so is the line, before "and 1 more change"
    assert effect(page(), after) == line  # the same states, the same line


# the history every system sees ------------------------------------------------------------------------
def test_a_past_step_line_says_what_it_did_why_it_was_lost_and_that_it_repeated() -> None:
    assert PastStep('fill("7", "Livia")', effect='field 7 now holds "Livia"').line() == \
        'fill("7", "Livia")  -> field 7 now holds "Livia"'
    assert PastStep('fill("7", "Livia")', effect=NO_CHANGE, repeated=True).line() == \
        'fill("7", "Livia")  -> no visible change on the page (repeated; nothing changed)'
    assert PastStep('click("3")', "no element with bid '3' on this page", NO_CHANGE).line() == \
        "click(\"3\")  -> lost: no element with bid '3' on this page"
    assert PastStep("", "no action: OutputParseError").line() == "(no action)  -> lost: no action: OutputParseError"
    assert PastStep('hover("9")').line() == 'hover("9")'  # a step whose effect is not known says nothing of it


ADMISSIBLE = ('fill("7", "Livia")', 'click("9")', 'click("11")')


class PageOfAFieldAndABox:
    """A MiniWob stand-in: a fill writes field 7, a click toggles box 9, anything else changes nothing; each
    step's change is measured as MiniWob measures it (`LastStep.change`)."""

    name, task, seed, url = "enter-text-0", "enter-text", 0, URL
    goal = 'Enter "Livia" into the text field and press Submit.'
    admissible = ADMISSIBLE

    def __init__(self) -> None:
        self.state: PageState | None = None
        self.last: LastStep | None = None
        self.done, self.won, self.reward, self.reason = False, False, 0.0, ""

    async def areset(self) -> None:
        self.state = page()

    async def astep(self, action: str) -> None:
        before = self.state
        assert before is not None
        value, checked = before.element("7").value, before.element("9").checked  # type: ignore[union-attr]
        performed = parse_action(action)
        if performed.name == "fill":
            value = performed.arg("value")
        elif performed.name == "click" and performed.bids == ("9",):
            checked = not checked
        self.state = page(value, checked)
        self.last = LastStep(action, performed, change=page_effect(before, self.state))

    async def aclose(self) -> None:
        pass


def episode(agent: Any, actions: list[str], **options: Any) -> tuple[list[str], Trace]:
    """Play `actions` with the agent on the scripted model; each call's user messages, and the trace."""
    plays = iter(actions)
    current = {"action": ""}

    def script(request: Any) -> Any:
        if request.agent in ("base", "react"):
            return {"thought": "go on", "action": next(plays)}
        if request.agent == "stm":  # the workspace decides a step once its STM is sure
            return {"answer": current["action"], "label": current["action"], "confidence": 0.95}
        if request.agent == "html":  # ctm's first processor of a step
            current["action"] = next(plays)
        return {"response": current["action"], "additional_question": "", "relevance": 0.9, "confidence": 0.9,
                "surprise": 0.1}

    backend = ScriptedBackend(script)
    trace = Trace(None)
    decide = agent(Model(backend, trace=trace), **options)
    asyncio.run(play(PageOfAFieldAndABox(), decide, system="test", trace=trace,  # type: ignore[arg-type]
                     max_steps=len(actions)))
    return ["\n".join(m.content for m in request.messages if m.role == "user") for request in backend.history], trace


SEEN = ['1. fill("7", "Livia")  -> field 7 now holds "Livia"', '2. click("11")  -> no visible change on the page']


@pytest.mark.parametrize(("agent", "options"), [(base, {}), (react, {}),
                                                (ctm, {"settings": WorkspaceSettings(max_iterations=1)})])
def test_every_system_sees_what_each_step_did_and_a_repeat_that_changed_nothing(agent: Any,
                                                                               options: dict[str, Any]) -> None:
    prompts, _ = episode(agent, ['fill("7", "Livia")', 'click("11")', 'click("9")'], **options)
    last = [prompt for prompt in prompts if "(step 3 of" in prompt]
    assert last and all("\n".join(SEEN) in prompt for prompt in last)
    assert all(REPEATED not in prompt for prompt in prompts if "(step 2 of" in prompt)
    # and what cannot help is no longer offered: the field is filled, the click changed nothing
    listed = [prompt.split("Actions that fit this page:\n", 1)[1].split("\n\n", 1)[0] for prompt in last]
    assert all(line.startswith('- click("9")') for block in listed for line in block.splitlines())


def test_a_box_clicked_again_is_shown_toggling_not_repeating() -> None:
    prompts, trace = episode(base, ['click("9")'] * 3)
    assert '1. click("9")  -> box 9 is now checked\n2. click("9")  -> box 9 is now unchecked\n' in prompts[2]
    assert REPEATED not in prompts[2]
    assert [step.effect for step in trace.of_kind("web_step")] == [  # type: ignore[attr-defined]
        "box 9 is now checked", "box 9 is now unchecked", "box 9 is now checked"]


# the trace ----------------------------------------------------------------------------------------------
def test_the_step_event_holds_the_effect_and_old_traces_still_load(tmp_path: Path) -> None:
    _, trace = episode(base, ['fill("7", "Livia")', 'click("11")'])
    steps = trace.of_kind("web_step")
    assert [s.effect for s in steps] == ['field 7 now holds "Livia"', NO_CHANGE]  # type: ignore[attr-defined]
    old = {"kind": "web_step", "ts": 1.0, "env": "enter-text-0", "step": 1, "action": 'click("9")',
           "performed": 'click("9")', "reward": 0.0, "done": False, "won": False}
    path = tmp_path / "trace.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in [old, steps[0].model_dump()]) + "\n")
    bad: list[Any] = []
    loaded = list(read_trace(path, on_bad_line=bad.append))
    assert bad == [] and [type(e) for e in loaded] == [WebStepTaken, WebStepTaken]
    assert [e.effect for e in loaded] == [None, 'field 7 now holds "Livia"']  # type: ignore[attr-defined]
