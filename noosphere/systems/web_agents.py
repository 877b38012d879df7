"""Two web agents over the model alone: `base` (one call a step, the accessibility tree, the action) and `react`
(one call a step that thinks before it acts, as in ReAct).

Neither writes an action string freely: asked for one, the 0.5B model copied the signature it was shown,
`click(bid, button='next')`, at every step of click-button. Each step's reply is a form made for the page
(`step_form`): its `action` is either one of the page's admissible actions, as listed, or an action written in
parts, `{name, bid, text}`, whose name is one of `ELEMENT_ACTIONS` and whose bid is one of the page's visible
elements (rendered to BrowserGym's string by `WebAction`). Both lists are enums of the JSON schema, so a model
decoding under its grammar can write nothing else, and any other model's reply that names anything else fails
validation and is sent back by the model layer, with the reason, for another try.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Discriminator, Field, Tag, create_model, model_validator

from noosphere.envs.web_actions import ACTIONS, WebAction
from noosphere.llm import Message, Model
from noosphere.llm.forms import LISTED
from noosphere.systems.web_episode import Decide, Decision, Turn
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
IN_PARTS = ("An action written in parts, for when no listed action is right: its name, the bid of its element, "
            "and for fill, select_option and press the text to type, the option to choose or the key to press.")


class ActionInParts(BaseModel):
    """An action named by its parts; `step_form` narrows `bid` to an enum of the page's."""

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
    return tuple(dict.fromkeys(e.bid for e in turn.state.elements if e.visible and e.tag not in ("html", "body")))


def step_form(turn: Turn, *, thought: bool = False) -> type[BaseModel]:
    """This step's reply: an optional `thought` first, then `action`, one of the page's admissible actions or an
    action in parts on one of its bids (whichever the page has; `NOTHING_FITS` when it has neither)."""
    bids = page_bids(turn)
    fields: dict[str, Any] = {}
    if thought:
        fields["thought"] = (str, Field(min_length=1, max_length=400, description=THOUGHT))
    # the admissible actions are listed in the prompt: the format instruction need not list them again
    fields["action"] = (_action_kind(turn.admissible, bids),
                        Field(description=ACTION if bids else LISTED_ONLY if turn.admissible else WAIT,
                              json_schema_extra={LISTED: True} if turn.admissible else None))
    return create_model("ReactStep" if thought else "BaseStep", **fields)  # type: ignore[call-overload]


def _action_kind(admissible: tuple[str, ...], bids: tuple[str, ...]) -> Any:
    listed: Any = Literal[tuple(dict.fromkeys(admissible))]  # type: ignore[misc]
    if not bids:
        return listed if admissible else Literal[NOTHING_FITS]
    bid: Any = Literal[bids]  # type: ignore[valid-type]
    in_parts = create_model("ActionInParts", __base__=ActionInParts, __doc__=IN_PARTS,
                            bid=(bid, Field(description="the bid of its element on this page")))
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
