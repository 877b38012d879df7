"""The structured outputs the meta-agent's calls fill in.

Every action a form names is constrained to the admissible list, so a small model cannot name a
command the game does not take. Where agents that always follow each other share one call, each
keeps its own field of the form: the planning agent's `plan` and the motor agent's `action`; the
orchestrator's `next_agent` after the fields of the agent it follows.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import cache

from pydantic import BaseModel, Field, create_model, field_validator

from noosphere.llm.forms import LISTED, choice_form
from noosphere.metaagent.state import ADMISSIBLE_SHOWN

PICK = "next_agent"
"""The orchestrator's field in the call of the agent it follows."""


class Belief(BaseModel):
    # One field per part of the belief state: as one free text, the 1.5B model copied the observation
    # and then its own role into it, step after step (ALFWorld, stop 16).
    location: str = Field(min_length=1, max_length=120,
                          description="where the team is now")
    progress: str = Field(max_length=160, description="what has been achieved so far, and what is held")
    known: str = Field(max_length=240, description="where the things the task needs are, and which places "
                                                   "were searched and found empty")
    next: str = Field(min_length=1, max_length=160, description="the next step towards the task: where to go or "
                                                                 "what to do there")

    def text(self) -> str:
        parts = (("At", self.location), ("Done", self.progress), ("Known", self.known), ("Next", self.next))
        return " ".join(f"{title}: {value.strip().rstrip('.')}." for title, value in parts if value.strip())


LOOP_GRAM = 6
"""A free-text note in which some run of this many words comes back three times is a decoding loop, not a note (a
shorter run, "I should go to", comes back in plain sentences)."""


class Note(BaseModel):
    text: str = Field(min_length=1, max_length=400)

    @field_validator("text")
    @classmethod
    def _not_a_loop(cls, text: str) -> str:
        words = _words(text)
        runs = Counter(tuple(words[i:i + LOOP_GRAM]) for i in range(len(words) - LOOP_GRAM + 1))
        if runs and max(runs.values()) >= 3:
            raise ValueError("the text repeats the same words over and over; say it once, in one or two sentences")
        return text


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower())


@cache
def answer_form(question: str) -> type[Note]:
    """A `Note` that answers `question` and is not the question said back. The 1.5B model, asked for a rule after the
    stem "The task was solved. One general rule:", wrote the stem back ten times (TextWorld, stop 54), and the loop
    became the memory's only rule; in two earlier runs it opened the rule with the stem. A reply that opens with a
    label made of the question's words ("General lesson: ...") keeps what follows it; a reply that adds no word of its
    own to the question's, or holds the whole question twice, is refused. The form is still called `Note`, so its
    schema, and so the prompt, is unchanged: only a reply that fails the check costs a correction and another
    attempt."""
    asked, vocabulary = _words(question), set(_words(question))

    def _not_the_question(cls: type[Note], text: str) -> str:
        answer = text.strip()
        head, colon, rest = answer.partition(":")
        if colon and _words(head) and set(_words(head)) <= vocabulary:  # a label made of the question's words
            answer = rest.strip()
        if not set(_words(answer)) - vocabulary or _occurrences(asked, _words(text)) > 1:
            raise ValueError(f"the text restates the question ({question.strip()!r}); give the answer itself")
        return answer

    checks = {"_not_the_question": field_validator("text")(classmethod(_not_the_question))}
    return create_model("Note", __base__=Note, __validators__=checks)  # type: ignore[call-overload, no-any-return]


def _occurrences(phrase: list[str], words: list[str]) -> int:
    """How often `phrase` occurs in `words`, word for word."""
    n = len(phrase)
    return sum(1 for i in range(len(words) - n + 1) if n and words[i:i + n] == phrase)


def action_form(name: str, admissible: tuple[str, ...], *, description: str = "one admissible action",
                reason: str | None = None, about: str | None = None) -> type[BaseModel]:
    """A form whose `action` can only be one of this step's admissible actions, after an optional
    free-text field `reason` (described by `about`) that the model writes first.

    The percept lists up to `ADMISSIBLE_SHOWN` actions; when it lists them all, the format instruction
    need not list them again."""
    return choice_form(name, "action", admissible or ("look",), description, reason=reason, reason_chars=200,
                       reason_description=about, listed=len(admissible) <= ADMISSIBLE_SHOWN)


THOUGHT = "what the last observation showed and where the task leads next"


def step_form(admissible: tuple[str, ...]) -> type[BaseModel]:
    """ReAct's reply: a `thought`, then an `action` that can only be one of this step's admissible actions."""
    return action_form("ReactStep", admissible, reason="thought", about=THOUGHT)


def plan_form(admissible: tuple[str, ...]) -> type[BaseModel]:
    """The planning and motor agents' shared call: the planner's `plan`, then the motor's `action`, one of
    the admissible actions, as the paper's planning prompt asks. Free to write any command, the 1.5B
    planner wrote the task itself ("look at alarmclock under the desklamp") step after step, and the
    motor turned it into `look` (ALFWorld, stop 16); asked apart, the motor only repeated the planner's
    admissible proposal, for one call more per action."""
    return action_form("PlanAndAction", admissible,
                       description="the motor agent's action: the admissible action that carries out the plan",
                       reason="plan", about="the planning agent's plan: what the last observation showed, and "
                                            "which step makes progress now")


def focus_form(admissible: tuple[str, ...]) -> type[BaseModel]:
    """Where things stand, then an admissible action: asked for two sentences, the 1.5B focus agent
    repeated the replayed observation until its length ran out (ALFWorld, stop 16)."""
    return action_form("FocusNote", admissible, description="the admissible action that comes next",
                       reason="situation", about="where things stand, in one sentence")


def orchestrator_output(successors: tuple[str, ...]) -> type[BaseModel]:
    """The orchestrator's own call, after a code agent. No reason field: the 1.5B model's reason repeated
    the planner's last reason (ALFWorld, stop 16), and cost more tokens than the pick."""
    return choice_form("NextAgent", "next", successors, "the agent to act next")


def with_pick(form: type[BaseModel], successors: tuple[str, ...]) -> type[BaseModel]:
    """`form` with the orchestrator's pick as its last field, written after the agent's own output.

    The schema lists the successors as an enum (constrained decoding can produce nothing else), but the
    field takes any text: a pick outside the graph is replaced by the default successor rather than
    costing the agent its whole reply, as a failed validation would."""
    pick = (str, Field(description="the agent to act next",
                       json_schema_extra={"enum": list(dict.fromkeys(successors)), LISTED: True}))
    return create_model(f"{form.__name__}AndNext", __base__=form, **{PICK: pick})  # type: ignore[call-overload]
