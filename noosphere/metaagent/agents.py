"""The specialised agents: each a role, a structured output and what it changes in the episode state.

Language-model agents: conscious (writes the belief state, in four parts), planning (proposes the
next action, with its reason), motor (emits exactly one admissible action, carrying out the plan),
focus (says where things stand after a replay, and what to do next), idea, learning (a general rule)
and reflection (a lesson after a failed episode, outside the graph). Every action the planner, motor
and focus agent name is constrained to the admissible list, so a small model cannot name a command
the game does not take.
Code agents: external perception (acts in the environment and reports), internal perception
(replays the last valid observation and the task), retrieve-memory and record-memory. Twelve with
the orchestrator.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

from noosphere.llm import Message
from noosphere.llm.forms import choice_form
from noosphere.metaagent.state import ADMISSIBLE_SHOWN, EpisodeState

TEAM = ("You are one agent of a team of specialised agents that plays a text game to complete a task. The team "
        "shares what it knows; your own duty and question come last.")
"""The system prompt every agent of the team shares. Each agent's role follows the shared context
instead of opening the prompt, so consecutive agents' prompts share everything up to the role and the
local backend evaluates the percept twice per step (for the conscious agent, and once more after its
new belief, which precedes the percept), not once per agent."""

ROLES = {
    "conscious": "You are the conscious agent. You keep the team's belief state: "
                 "what the task needs, what has been done, what is known about where things are, what is next.",
    "planning": "You are the planning agent. Propose the single next action that makes progress on the task. "
                "Choose one of the admissible actions; do not repeat actions that did nothing; search likely places "
                "first.",
    "motor": "You are the motor agent. Choose exactly one of the admissible actions: the one that carries out the "
             "plan.",
    "focus": "You are the focus agent. The team lost track. From the task, the last real observation and the "
             "admissible actions, say where things stand and choose the admissible action that comes next.",
    "idea": "You are the idea agent. Suggest one concrete idea the team has not tried that could solve the task.",
    "learning": "You are the learning agent. State one short general rule for this kind of task that would help "
                "in other games (not specific object numbers).",
    "reflection": "You review a failed attempt at a text game and state in two sentences what went wrong and what "
                  "to do differently next time.",
    "orchestrator": "You are the orchestrator: you direct the team by picking which agent acts next.",
}


DUTIES = {
    "conscious": "updates the belief state: what is done, what is known, what comes next",
    "planning": "proposes the next action; then the motor agent acts",
    "motor": "chooses one admissible action and carries it out",
    "external_perception": "reports the new observation and the admissible actions",
    "focus": "when the team has lost track: says where things stand and which action comes next",
    "internal_perception": "replays the last real observation and the task",
    "retrieve_memory": "looks up past episodes and learned rules that match the situation",
    "idea": "suggests something new to try, then planning turns it into an action",
    "learning": "states a general rule learned so far, to keep for later games",
    "record_memory": "stores the rules learned in this game in long-term memory",
}
"""What the orchestrator is told each successor does: its picks, and so the transition heatmaps,
rest on these lines, not on bare agent names."""


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


class Note(BaseModel):
    text: str = Field(min_length=1, max_length=400)


def action_form(name: str, admissible: tuple[str, ...], *, description: str = "one admissible action",
                reason: str | None = None, about: str | None = None) -> type[BaseModel]:
    """A form whose `action` can only be one of this step's admissible actions, after an optional
    free-text field `reason` (described by `about`) that the model writes first.

    The percept lists up to `ADMISSIBLE_SHOWN` actions; when it lists them all, the format instruction
    need not list them again."""
    return choice_form(name, "action", admissible or ("look",), description, reason=reason, reason_chars=200,
                       reason_description=about, listed=len(admissible) <= ADMISSIBLE_SHOWN)


def proposal_form(admissible: tuple[str, ...]) -> type[BaseModel]:
    """The planner proposes one of the admissible actions, as the paper's planning prompt asks: free to
    write any command, the 1.5B planner wrote the task itself ("look at alarmclock under the desklamp")
    step after step, and the motor turned it into `look` (ALFWorld, stop 16)."""
    return action_form("Proposal", admissible, description="the next action, one of the admissible ones",
                       reason="reason", about="what the last observation showed, and why this action")


def focus_form(admissible: tuple[str, ...]) -> type[BaseModel]:
    """Where things stand, then an admissible action: asked for two sentences, the 1.5B focus agent
    repeated the replayed observation until its length ran out (ALFWorld, stop 16)."""
    return action_form("FocusNote", admissible, description="the admissible action that comes next",
                       reason="situation", about="where things stand, in one sentence")


def orchestrator_output(successors: tuple[str, ...]) -> type[BaseModel]:
    # no reason field: the 1.5B model's reason repeated the planner's last reason (ALFWorld, stop 16), and
    # cost more tokens than the pick
    return choice_form("NextAgent", "next", successors, "the agent to act next")


@dataclass(frozen=True)
class LanguageAgent:
    """How one model agent is asked, and where its answer goes in the state."""

    name: str
    messages: Callable[[EpisodeState], list[Message]]
    output: Callable[[EpisodeState], type[BaseModel]]
    apply: Callable[[EpisodeState, Any], str]
    """Writes the output into the state; returns the text that speaks for it in the trace."""


def _set(attribute: str, field_name: str) -> Callable[[EpisodeState, Any], str]:
    def apply(state: EpisodeState, output: Any) -> str:
        value = str(getattr(output, field_name)).strip()
        setattr(state, attribute, value)
        return value

    return apply


def _refocus(state: EpisodeState, output: Any) -> str:
    state.focus_note = f"{output.situation.strip()} Next action: {output.action}."
    return state.focus_note


def _believe(state: EpisodeState, output: Any) -> str:
    state.belief = output.text()
    return state.belief


def _plan(state: EpisodeState, output: Any) -> str:
    state.plan = f"{output.action.strip()} (because {output.reason.strip()})"
    return state.plan


def _act(state: EpisodeState, output: Any) -> str:
    state.pending_action = output.action
    return output.action


def _rule(state: EpisodeState, output: Any) -> str:
    state.rules.append(output.text.strip())
    return output.text.strip()


def team(state: EpisodeState) -> Message:
    """The system message every agent shares: the team's prompt and how the world works."""
    return Message.system(f"{TEAM}\n\n{state.guide}" if state.guide else TEAM)


def briefed(state: EpisodeState, node: str, question: str) -> list[Message]:
    """The messages for one agent's turn: the team's prompt, the shared context, then its role and question."""
    return [team(state), Message.user(f"{state.context()}\n\n{ROLES[node]}\n{question}")]


def _in_context(node: str, question: Callable[[EpisodeState], str]) -> Callable[[EpisodeState], list[Message]]:
    return lambda state: briefed(state, node, question(state))


def _belief_question(state: EpisodeState) -> str:
    if state.t == 0:
        return "Write the belief state for timestep 0, before any action."
    if state.observation != state.steps[-1].observation:  # after the focus loop: the last real one, replayed
        return (f"Write the belief state for timestep {state.t} from the task and the last real observation, "
                "replayed above. Say where you are now, what is done and what comes next.")
    return (f"Write the belief state for timestep {state.t}: the current observation is the result of the last "
            "action. Say where you are now, what is done and what comes next.")


def _focus_messages(state: EpisodeState) -> list[Message]:
    """The focus agent sees only the task, the last real observation and what can be done now: the rest
    may be what misled the team."""
    actions = ", ".join(state.admissible[:ADMISSIBLE_SHOWN])
    return [team(state), Message.user(
        f"Task: {state.task}\nLast real observation: {state.last_valid_observation}\n"
        f"Admissible actions: {actions}\nActions taken: {state.t}.\n"
        f"Why the team lost track: {state.needs_focus or 'unclear'}.\n\n{ROLES['focus']}\n"
        "Where do things stand, what next?")]


LANGUAGE_AGENTS = {agent.name: agent for agent in (
    LanguageAgent("conscious", _in_context("conscious", _belief_question),
                  lambda s: Belief, _believe),
    LanguageAgent("planning", _in_context("planning", lambda s: "Propose the next action."),
                  lambda s: proposal_form(s.admissible), _plan),
    LanguageAgent("motor", _in_context("motor", lambda s: "Choose the action that carries out the plan."),
                  lambda s: action_form("MotorAction", s.admissible), _act),
    LanguageAgent("focus", _focus_messages, lambda s: focus_form(s.admissible), _refocus),
    LanguageAgent("idea", _in_context("idea", lambda s: "One new idea:"), lambda s: Note, _set("idea", "text")),
    LanguageAgent("learning", _in_context("learning", lambda s: "One general rule:"), lambda s: Note, _rule),
)}

CODE_AGENTS = frozenset({"external_perception", "internal_perception", "retrieve_memory", "record_memory"})
"""Agents that are code, not model calls: perception acts and replays, the memory agents read and write."""
