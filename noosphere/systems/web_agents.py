"""Two web agents over the model alone: `base` (one call a step, the accessibility tree, the action) and `react`
(one call a step that thinks before it acts, as in ReAct).

Neither writes an action string freely: asked for one, the 0.5B model copied the signature it was shown,
`click(bid, button='next')`, at every step of click-button. Each step's reply is a form made for the page
(`step_form`): its `action` is either one of the page's admissible actions, as listed, or an action written in
parts, `{name, bid, text}` (rendered to BrowserGym's string by `WebAction`). An action in parts is one of a few
small forms, one per group of `ELEMENT_ACTIONS` (`IN_PARTS`), each naming only the page's visible elements its
actions can act on: `fill`, `clear` and `press` a text field, `select_option` a `<select>` (and one of its
options), `check` and `uncheck` a check box or radio button, `click`, `hover`, `dblclick` and `focus` any
element; a group with no such element on the page is left out. All of it is enums of the JSON schema, so a model
decoding under its grammar can write nothing else (the 1.5B model, thinking first, wrote `select_option` on a
radio button 43 times on click-option), and any other model's reply that names anything else fails validation and
is sent back by the model layer, with the reason, for another try. So does an action in parts that the page's
list leaves out as futile (`web_episode.futility`: it changed nothing the last time, or refills a filled field):
the 1.5B model refilled a field it had filled on all ten steps of enter-text, in parts.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from functools import reduce
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, Discriminator, Field, Tag, create_model, model_validator
from pydantic.annotated_handlers import GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue, SkipJsonSchema

from noosphere.envs.web_actions import ACTIONS, WebAction
from noosphere.envs.web_admissible import is_text_field
from noosphere.envs.web_page import Element
from noosphere.llm import Message, Model
from noosphere.llm.forms import LISTED
from noosphere.systems.web_episode import Decide, Decision, Turn, futility
from noosphere.systems.web_prompts import AGENT_ROLE, NEXT_ACTION, REACT_ROLE, brief, page_view

ELEMENT_ACTIONS = ("click", "fill", "select_option", "check", "uncheck", "press", "hover", "dblclick", "focus",
                   "clear")
"""The actions an action in parts may name: one element each, and at most one text."""
TEXT_PARAMS = {"fill": "value", "select_option": "options", "press": "key_comb"}
"""The actions in parts that take a text, and the parameter it fills."""
NOTHING_FITS = "noop()"
"""The only action of a page with no visible element and no admissible action (the agent waits a step)."""
MAX_TEXT = 200
THOUGHT = "what the page shows and what remains to do, in one or two sentences"
ACTION = "an action in parts, or one of the actions that fit this page"
LISTED_ONLY = "one of the actions that fit this page"
WAIT = "nothing on this page can be acted on: wait a step"
CHECKABLE = ("checkbox", "radio")


def _any(element: Element) -> bool:
    return True


def _select(element: Element) -> bool:
    return element.tag == "select"


def _checkable(element: Element) -> bool:
    return element.input_type in CHECKABLE if element.tag == "input" else element.role in CHECKABLE


IN_PARTS: tuple[tuple[str, tuple[str, ...], Callable[[Element], bool], str], ...] = (
    ("Click", ("click", "hover", "dblclick", "focus"), _any, "click, hover, dblclick or focus any element"),
    ("Type", ("fill", "clear", "press"), is_text_field,
     "fill, clear or press in a text field: the text to type, none, or the key to press"),
    ("Choose", ("select_option",), _select, "select_option in a list (<select>): the option to choose"),
    ("Tick", ("check", "uncheck"), _checkable, "check or uncheck a check box or radio button"))
"""The forms of an action in parts, one per group of `ELEMENT_ACTIONS` that act on the same elements: its name in
the schema, its actions, the elements they can act on, and what it says to the model."""


class ActionInParts(BaseModel):
    """An action named by its parts; `step_form` narrows it, per group of `IN_PARTS`, to the page's elements."""

    name: Literal[ELEMENT_ACTIONS] = Field(description="the action")  # type: ignore[valid-type]
    bid: str
    text: str = Field("", max_length=MAX_TEXT, description="the text, option or key; left out otherwise")

    @model_validator(mode="after")
    def _text_when_taken(self) -> ActionInParts:
        if self.name in TEXT_PARAMS and not self.text:
            raise ValueError(f"{self.name} needs its text ({TEXT_PARAMS[self.name]})")
        return self

    def render(self) -> str:
        """The BrowserGym action string, e.g. `fill("14", "Kasie")`; a text the action does not take is left out."""
        values: dict[str, Any] = {"bid": self.bid}
        if self.name in TEXT_PARAMS:
            values[TEXT_PARAMS[self.name]] = self.text
        return WebAction(self.name, tuple((key, values.get(key, default))
                                          for key, _, default in ACTIONS[self.name])).render()


def page_bids(turn: Turn) -> tuple[str, ...]:
    """The bids an action in parts may name: the page's visible elements, in its order (not <html>, <body>)."""
    return tuple(_page_elements(turn))


def in_parts_bids(turn: Turn) -> dict[tuple[str, ...], tuple[str, ...]]:
    """The bids each group of actions in parts may name on this page (see `IN_PARTS`); a group with none is left
    out."""
    elements = _page_elements(turn).values()
    groups = {names: tuple(e.bid for e in elements if fits(e)) for _, names, fits, _ in IN_PARTS}
    return {names: bids for names, bids in groups.items() if bids}


def _page_elements(turn: Turn) -> dict[str, Element]:
    found: dict[str, Element] = {}
    for element in turn.state.elements:
        if element.visible and element.tag not in ("html", "body"):
            found.setdefault(element.bid, element)
    return found


def step_form(turn: Turn, *, thought: bool = False) -> type[BaseModel]:
    """This step's reply: an optional `thought` first, then `action`, one of the page's admissible actions or an
    action in parts on one of its bids (whichever the page has; `NOTHING_FITS` when it has neither). An action in
    parts that the page's list leaves out as futile (`futility`) fails validation, with the reason."""
    fields: dict[str, Any] = {}
    if thought:
        fields["thought"] = (str, Field(min_length=1, max_length=400, description=THOUGHT))
    # the admissible actions are listed in the prompt: the format instruction need not list them again
    in_parts = _in_parts(turn)
    fields["action"] = (_action_kind(turn.admissible, in_parts),
                        Field(description=ACTION if in_parts is not None else LISTED_ONLY if turn.admissible else WAIT,
                              json_schema_extra={LISTED: True} if turn.admissible else None))
    return create_model("ReactStep" if thought else "BaseStep", **fields)  # type: ignore[call-overload]


def _in_parts(turn: Turn) -> Any:
    """The page's action in parts: a union of the forms of `IN_PARTS` that have an element here, told apart by
    `name`; None when the page has no visible element."""
    groups = in_parts_bids(turn)
    if not groups:
        return None
    options = {e.bid: e.options for e in _page_elements(turn).values() if _select(e)}
    forms = [_in_parts_form(model, names, groups[names], what, options)
             for model, names, _, what in IN_PARTS if names in groups]
    union: Any = forms[0] if len(forms) == 1 else Annotated[reduce(operator.or_, forms), Field(discriminator="name"),
                                                            WithoutMapping]
    return Annotated[union, AfterValidator(_acceptable(turn, options))]


class WithoutMapping:
    """Leaves a discriminated union's `discriminator` out of its JSON schema: the model needs only the forms (each
    names its actions), and the mapping of every name to its form would lengthen every prompt."""

    @classmethod
    def __get_pydantic_json_schema__(cls, core: Any, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        schema = handler(core)
        schema.pop("discriminator", None)
        return schema


def _in_parts_form(model: str, names: tuple[str, ...], bids: tuple[str, ...], what: str,
                   options: dict[str, tuple[str, ...]]) -> type[ActionInParts]:
    text: Any = (SkipJsonSchema[str], "")  # the group takes no text: the schema leaves it out, a reply's is ignored
    if "fill" in names:
        text = (str, Field("", max_length=MAX_TEXT, description="the text to type, or the key to press"))
    elif "select_option" in names:
        listed = tuple(dict.fromkeys(option for bid in bids for option in options[bid]))
        text = ((Literal[listed], Field(description="the option to choose"))  # type: ignore[valid-type]
                if listed and all(options[bid] for bid in bids)
                else (str, Field(min_length=1, max_length=MAX_TEXT, description="the option to choose")))
    return create_model(f"{model}InParts", __base__=ActionInParts, __doc__=what,  # type: ignore[no-any-return]
                        name=(Literal[names], Field(description="the action")),  # type: ignore[valid-type]
                        bid=(Literal[bids], Field(description="the bid of its element on this page")),  # type: ignore[valid-type]
                        text=text)


def _acceptable(turn: Turn, options: dict[str, tuple[str, ...]]) -> Callable[[ActionInParts], ActionInParts]:
    """The check of an action in parts that its form cannot express: an option of its own list, and not futile."""
    futile = futility(turn.history)

    def check(action: ActionInParts) -> ActionInParts:
        if action.name == "select_option" and options.get(action.bid) and action.text not in options[action.bid]:
            raise ValueError(f"list {action.bid} has no option {action.text!r}; its options: "
                             + ", ".join(repr(option) for option in options[action.bid]))
        if why := futile(action.render()):
            raise ValueError(why)
        return action

    return check


def _action_kind(admissible: tuple[str, ...], in_parts: Any) -> Any:
    listed: Any = Literal[tuple(dict.fromkeys(admissible))]  # type: ignore[misc]
    if in_parts is None:
        return listed if admissible else Literal[NOTHING_FITS]
    if not admissible:
        return in_parts
    # a string is a listed action, an object an action in parts: a reply is checked against its own kind only,
    # so that what is sent back after a wrong one is that kind's complaint alone
    return Annotated[Annotated[listed, Tag("listed")] | Annotated[in_parts, Tag("parts")],
                     Discriminator(_kind_of_action)]


def _kind_of_action(value: Any) -> str:
    return "listed" if isinstance(value, str) else "parts"


def chosen_action(output: Any) -> str:
    """The action string a validated step form names."""
    action = output.action
    return action.render() if isinstance(action, ActionInParts) else str(action)


def _messages(role: str, turn: Turn) -> list[Message]:
    return [Message.system(role),
            Message.user(f"{brief(turn)}\n\n{page_view('axtree', turn.state.axtree)}\n\n{NEXT_ACTION}")]


def base(model: Model) -> Decide:
    async def decide(turn: Turn) -> Decision:
        completion = await model.complete(_messages(AGENT_ROLE, turn), output=step_form(turn), agent="base")
        assert completion.output is not None
        return Decision(chosen_action(completion.output))

    return decide


def react(model: Model) -> Decide:
    async def decide(turn: Turn) -> Decision:
        completion = await model.complete(_messages(REACT_ROLE, turn), output=step_form(turn, thought=True),
                                          agent="react")
        assert completion.output is not None
        return Decision(chosen_action(completion.output), completion.output.thought)

    return decide
