"""The actions worth trying on a page: a finite list, as a text game's admissible commands are.

A web page's action space is not finite (`fill` takes any text), so the list is made from the page and the goal: a
click on every visible element that can be clicked (the browser says so, or it is a control, or the page gives it a
hand pointer; a `<label>` wrapping a control is left to its control), `select_option` for every option of a list but
the one it shows, and `fill` on every text field with each quoted phrase of the goal (as written, and lower- and
upper-cased where the goal speaks of case) but the text it holds. An action that can change nothing is not worth
trying: the 1.5B model chose the option a list already showed, and filled a field with the text it already held, on
every step of choose-list and enter-text. An agent may still write any action; a workspace's short-term memory
chooses among these (`noosphere.systems.web_ctm`).
"""

from __future__ import annotations

import re

from noosphere.envs.web_actions import WebAction
from noosphere.envs.web_page import Element, PageState

TEXT_INPUTS = frozenset({"", "text", "password", "email", "search", "tel", "url", "number"})
CONTROL_TAGS = frozenset({"button", "a", "input", "select", "textarea", "summary", "option"})
CONTROL_ROLES = frozenset({"button", "link", "checkbox", "radio", "tab", "menuitem", "menuitemcheckbox",
                           "menuitemradio", "option", "treeitem", "switch", "combobox", "textbox", "searchbox",
                           "spinbutton", "slider", "listbox", "gridcell", "row"})
MAX_ADMISSIBLE = 80
_CASE = re.compile(r"\b(lower|upper)[ -]?case\b|\bcapital", re.IGNORECASE)
_QUOTED = re.compile(r"\"([^\"]{1,80})\"|“([^”]{1,80})”|'([^']{1,80})'(?![a-z])")


def goal_phrases(goal: str) -> tuple[str, ...]:
    """The quoted phrases of a goal, each as written, and lower-cased and upper-cased where the goal speaks of
    case (enter-text-2's "in all upper case letters"): offered always, the variants drew the 1.5B model into
    filling a field with "Livia" and "LIVIA" in turn until its steps ran out."""
    cased = _CASE.search(goal) is not None
    found: list[str] = []
    for match in _QUOTED.finditer(goal):
        phrase = next(group for group in match.groups() if group is not None)
        found += [phrase, phrase.lower(), phrase.upper()] if cased else [phrase]
    return tuple(dict.fromkeys(found))


def is_text_field(element: Element) -> bool:
    return element.tag == "textarea" or (element.tag == "input" and element.input_type in TEXT_INPUTS) or (
        element.role in ("textbox", "searchbox", "combobox") and element.tag not in ("select", "input"))


def is_clickable(element: Element) -> bool:
    if element.tag == "input" and element.input_type == "hidden":
        return False
    return (element.clickable or element.pointer or element.tag in CONTROL_TAGS or element.role in CONTROL_ROLES)


def admissible(state: PageState, goal: str) -> tuple[str, ...]:
    """The candidate actions, in the page's order, at most `MAX_ADMISSIBLE`."""
    phrases = goal_phrases(goal)
    labelled = {e.parent for e in state.elements if e.tag in ("input", "select", "textarea") and e.parent}
    found: list[str] = []
    for element in state.elements:
        if not element.visible or element.tag in ("body", "html"):
            continue
        if element.tag == "label" and element.bid in labelled:
            continue  # clicking it is clicking its control, offered already (and named by the label's text)
        if element.tag == "select":
            found += [_render("select_option", element.bid, option) for option in element.options
                      if option != element.value]
            continue
        if element.tag == "option":
            continue  # chosen through its <select>
        if is_text_field(element):
            found += [_render("fill", element.bid, phrase) for phrase in phrases if phrase != element.value]
        if is_clickable(element):
            found.append(_render("click", element.bid))
    return tuple(dict.fromkeys(found))[:MAX_ADMISSIBLE]


def _render(name: str, bid: str, text: str | None = None) -> str:
    if name == "click":
        return WebAction("click", (("bid", bid), ("button", "left"))).render()
    key = "value" if name == "fill" else "options"
    return WebAction(name, (("bid", bid), (key, text))).render()
