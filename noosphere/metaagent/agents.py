"""The specialised agents, all of one shape: a name, and a turn that reads and writes the episode state.

Language-model agents: conscious (writes the belief state, in four parts), planning and motor (one
shared call: the planner's plan, then the motor's admissible action that carries it out), focus
(says where things stand after a replay, and what to do next), idea, learning (a general rule) and
reflection (a lesson after a failed episode, outside the graph). A motor reached without a plan the
shared call decided (the planner's call failed, or a replacement graph leads elsewhere into it) asks
the model itself. Every action a form names is constrained to the admissible list.
Code agents: external perception (acts in the environment and reports), internal perception
(replays the last valid observation and the task), retrieve-memory and record-memory. Twelve with
the orchestrator (`orchestrator.py`) and reflection (`baselines.py`).

A language agent's call also carries the orchestrator's pick when a real choice follows it (the
`Offer` of its turn); its label names every role it serves ("conscious+orchestrator", "planning+motor").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel

from noosphere.concurrent import Forfeit, attempt
from noosphere.envs import Environment
from noosphere.llm import Message, Model
from noosphere.llm.model import FormatPlace
from noosphere.metaagent.events import ActionTaken, BeliefWritten, FocusOutcome, TurnForfeited
from noosphere.metaagent.forms import (
    PICK,
    Belief,
    action_form,
    answer_form,
    focus_form,
    plan_form,
    step_form,
    with_pick,
)
from noosphere.metaagent.orchestrator import Offer
from noosphere.metaagent.prompts import (
    PLAN_QUESTION,
    asking_also,
    belief_question,
    briefed,
    focus_messages,
    planner_on_percept,
)
from noosphere.metaagent.state import EpisodeState
from noosphere.trace import Trace

if TYPE_CHECKING:
    from noosphere.metaagent.recollection import MemorySettings
    from noosphere.metaagent.scored import ScoredDecision


PlannerView = Literal["team", "percept"]
PLANNER_VIEWS: tuple[PlannerView, ...] = ("team", "percept")
"""What the planning agent reads: the team's shared context (the belief state, its own last plan and the percept,
as the paper has it), or the game as ReAct reads it plus the team's memory, idea and focus note."""
FocusMode = Literal["replay", "strike", "mask"]
FOCUS_MODES: tuple[FocusMode, ...] = ("replay", "strike", "mask")
"""What the team may do after actions that did nothing: the focus agent chooses from every admissible action after the
replay (`replay`, the paper); from those left when the actions that just did nothing are struck out, which it is told
(`strike`); or those actions are struck from every choice of an action, the planner's and the motor's too (`mask`)."""


@dataclass(frozen=True)
class Turn:
    """What an agent's turn may use besides the episode state."""

    model: Model
    env: Environment
    memory: MemorySettings | None = None
    seed: int = 0
    offer: Offer | None = None
    """The orchestrator's choice after this agent, asked in the same call when the agent makes one."""
    refocus: bool = False
    """The focus loop follows this turn whatever the agent says."""
    judge: ScoredDecision | None = None
    """With a judge, the motor's action is the judge's choice by P(True) among the likeliest admissible actions
    (issue 26's `react-scored` step, on the planning and motor agents' reply); without, the action as written."""
    planner_view: PlannerView = "team"

    @property
    def trace(self) -> Trace:
        return self.model.trace


@dataclass(frozen=True)
class Said:
    """What one turn produced: the text that speaks for it in the trace, the label of the model call it
    came from (empty for code) and the orchestrator's pick when the call carried it."""

    text: str
    call: str = ""
    pick: str | None = None


class Agent(Protocol):
    @property
    def name(self) -> str: ...

    async def act(self, state: EpisodeState, turn: Turn) -> Said: ...


FORMAT_AT: FormatPlace = "end"
"""Where a language agent's call puts its format instruction: after its role's question, so that consecutive agents'
prompts share the whole context before it."""


def _nothing(state: EpisodeState) -> None:
    return None


@dataclass(frozen=True)
class LanguageAgent:
    """How one model agent is asked, and where its answer goes in the state."""

    name: str
    messages: Callable[[EpisodeState], list[Message]]
    output: Callable[[EpisodeState], type[BaseModel]]
    apply: Callable[[EpisodeState, Any, Turn], str]
    """Writes the output into the state; returns the text that speaks for it in the trace."""
    shares: tuple[str, ...] = ()
    """The other roles whose fields this agent's form carries (planning: the motor's action)."""
    forfeit: Callable[[EpisodeState], None] = _nothing
    """What a failed call withdraws from the state."""
    format_at: FormatPlace = FORMAT_AT
    judged: bool = False
    """Its reply ends in the motor's `action`, which the turn's judge (if any) may replace. Where the call also carried
    the orchestrator's pick (a custom graph that offers a choice after it), the judge reads the reply without it, as
    if it ended at the action."""

    def label(self, offer: Offer | None) -> str:
        return "+".join((self.name, *self.shares, *(("orchestrator",) if offer else ())))

    async def act(self, state: EpisodeState, turn: Turn) -> Said:
        label, messages, output = self.label(turn.offer), self.messages(state), self.output(state)
        if turn.offer is not None:
            messages, output = asking_also(messages, turn.offer.question()), with_pick(output, turn.offer.successors)
        completion = await attempt(turn.model.complete(messages, output=output, agent=label, format_at=self.format_at))
        if isinstance(completion, Forfeit):  # the agent forfeits its turn; saying nothing usable is a hallucination
            turn.trace.emit(TurnForfeited(step=state.t, agent=label, error=str(completion),
                                          instead="nothing said; the focus loop next"))
            state.needs_focus = f"{self.name} gave no usable output ({type(completion.error).__name__})"
            self.forfeit(state)
            return Said("", label)
        pick = getattr(completion.output, PICK) if turn.offer is not None else None
        reply = completion.output
        if self.judged and turn.judge is not None:
            step = {name: value for name, value in reply.model_dump().items() if name != PICK}
            read = turn.model.instructed(messages, output, format_at=self.format_at)  # the prompt the reply answered
            action = await turn.judge.choose(turn.model, list(read), step, state, label)
            reply = reply.model_copy(update={"action": action})
        return Said(self.apply(state, reply, turn), label, pick)


def _in_context(node: str, question: Callable[[EpisodeState], str]) -> Callable[[EpisodeState], list[Message]]:
    return lambda state: briefed(state, node, question(state))


def _believe(state: EpisodeState, output: Any, turn: Turn) -> str:
    state.write_belief(output.text())
    turn.trace.emit(BeliefWritten(step=state.t, belief=state.belief))
    return state.belief


def _plan(state: EpisodeState, action: str, why: str) -> str:
    state.plan, state.planned_action = f"{action.strip()} (because {why.strip()})", action.strip()
    state.proposal = action
    return state.plan


def _forget_plan(state: EpisodeState) -> None:
    state.plan, state.planned_action, state.proposal = "", "", None  # the motor must not carry out this plan


def _act(state: EpisodeState, output: Any, turn: Turn) -> str:
    state.pending_action = output.action
    return str(output.action)


def _refocus(state: EpisodeState, output: Any, turn: Turn) -> str:
    state.focus_note = f"{output.situation.strip()} Next action: {output.action}."
    return state.focus_note


def _idea(state: EpisodeState, output: Any, turn: Turn) -> str:
    state.idea = output.text.strip()
    return state.idea


def _rule(state: EpisodeState, output: Any, turn: Turn) -> str:
    state.rules.append(output.text.strip())
    return state.rules[-1]


PLANNING = LanguageAgent("planning", _in_context("planning", lambda s: PLAN_QUESTION),
                         lambda s: plan_form(s.choices()),
                         lambda state, output, turn: _plan(state, output.action, output.plan), shares=("motor",),
                         forfeit=_forget_plan,
                         judged=True)
PLANNING_ON_PERCEPT = replace(PLANNING, messages=planner_on_percept, output=lambda s: step_form(s.choices()),
                              apply=lambda state, output, turn: _plan(state, output.action, output.thought),
                              format_at="system")
"""The planning and motor agents' call in the `percept` view: ReAct's step (a `thought`, then the action), asked as
ReAct is asked."""
MOTOR_ALONE = LanguageAgent("motor", _in_context("motor", lambda s: "Choose the action that carries out the plan."),
                            lambda s: action_form("MotorAction", s.choices()), _act, judged=True)
MOTOR_ON_PERCEPT = replace(MOTOR_ALONE, messages=planner_on_percept, format_at="system")
"""The motor asked alone in the `percept` view (the planner's call failed): ReAct's prompt, an admissible action."""
def _asked(node: str, question: str, apply: Callable[[EpisodeState, Any, Turn], str]) -> LanguageAgent:
    """An agent that answers `question` with a note of its own (not the question said back)."""
    return LanguageAgent(node, _in_context(node, lambda s: question), lambda s: answer_form(question), apply)


LESSON_QUESTION = ("The team has completed this task. Which general lesson from this game would help in other games "
                   "of this kind? Answer in one sentence.")
LESSON = _asked("learning", LESSON_QUESTION, _rule)
"""The learning agent after a won game that taught no rule on the way: a won game teaches at least one. Asked "The
task was solved. One general rule:", the 1.5B model wrote the question back in a loop on 2 of the 3 wins of stop 54's
run, and again on each correction; asked this question, it wrote a rule at the first attempt on all three
(`benchmarks/rule_probe.py`, `benchmarks/results/textworld/rule_probe.jsonl`)."""


@dataclass(frozen=True)
class Conscious:
    """Writes the belief state once per timestep, from the last observation the team acts on. When the
    focus loop is decided before its turn, the belief waits for the replay (written now, it would be
    rewritten at the same timestep, and nobody would read it): the turn only hands over to the loop."""

    own: LanguageAgent
    name: str = "conscious"

    async def act(self, state: EpisodeState, turn: Turn) -> Said:
        if turn.refocus:
            return Said(f"(to the focus loop first: {state.needs_focus})")
        return await self.own.act(state, turn)


@dataclass(frozen=True)
class Planning:
    """The planning and motor agents' shared call, on the view the turn names (`PlannerView`)."""

    views: tuple[tuple[PlannerView, LanguageAgent], ...] = (("team", PLANNING), ("percept", PLANNING_ON_PERCEPT))
    name: str = "planning"

    async def act(self, state: EpisodeState, turn: Turn) -> Said:
        return await dict(self.views)[turn.planner_view].act(state, turn)


@dataclass(frozen=True)
class Motor:
    """Carries out the action the planning and motor agents' shared call chose; with none, asks the model, on the
    view the turn names (in the `percept` view, ReAct's step without its thought)."""

    views: tuple[tuple[PlannerView, LanguageAgent], ...] = (("team", MOTOR_ALONE), ("percept", MOTOR_ON_PERCEPT))
    name: str = "motor"

    async def act(self, state: EpisodeState, turn: Turn) -> Said:
        if state.proposal is None:
            return await dict(self.views)[turn.planner_view].act(state, turn)
        state.pending_action, state.proposal = state.proposal, None
        return Said(state.pending_action, PLANNING.label(None))


@dataclass(frozen=True)
class ExternalPerception:
    """Carries the motor's action out in the environment and reports what came of it (and of a focus loop)."""

    name: str = "external_perception"

    async def act(self, state: EpisodeState, turn: Turn) -> Said:
        action = state.pending_action or "look"
        state.pending_action = state.proposal = None
        result = turn.env.step(action)
        state.record(action, result.observation, result.admissible, result.done, result.won)
        turn.trace.emit(ActionTaken(step=state.t, action=action, observation=result.observation,
                                    reward=result.reward, done=result.done, won=result.won))
        if state.invalid_streak == 0:  # an action that did something answers a flag raised before it (an idea's
            state.needs_focus = None   # text, a failed plan) that had no way into the focus loop yet
        if state.focus_pending:  # the first action after a focus loop tells whether it recovered
            recovered = state.invalid_streak == 0
            turn.trace.emit(FocusOutcome(step=state.t, loop=state.focus_pending, action=action, recovered=recovered))
            state.focus_recoveries += recovered
            state.focus_pending = 0
            state.focus_note = ""  # it advised this action; left in the context it would go stale
        return Said(result.observation)


@dataclass(frozen=True)
class InternalPerception:
    """Replays the last real observation and the task: the focus loop's way back."""

    name: str = "internal_perception"

    async def act(self, state: EpisodeState, turn: Turn) -> Said:
        state.observation = state.last_valid_observation
        state.needs_focus = None
        return Said(f"{state.task}\nLast real observation: {state.last_valid_observation}")


@dataclass(frozen=True)
class RetrieveMemory:
    name: str = "retrieve_memory"

    async def act(self, state: EpisodeState, turn: Turn) -> Said:
        if turn.memory is not None:
            turn.memory.recall_into(state, turn.env.name, turn.trace, seed=turn.seed,
                                    query=f"{state.task} {state.belief}", kind=turn.env.kind)
        return Said(state.recall or "(no memory)")


@dataclass(frozen=True)
class RecordMemory:
    name: str = "record_memory"

    async def act(self, state: EpisodeState, turn: Turn) -> Said:
        return Said(f"{len(state.rules)} rules kept for after the game")


LANGUAGE_AGENTS: dict[str, Agent] = {agent.name: agent for agent in (
    Conscious(LanguageAgent("conscious", _in_context("conscious", belief_question), lambda s: Belief, _believe)),
    Planning(),
    Motor(),
    LanguageAgent("focus", focus_messages, lambda s: focus_form(s.focus_choices()), _refocus),
    _asked("idea", "One new idea:", _idea),
    _asked("learning", "Which general lesson from this game so far would help in other games of this kind? Answer in "
                       "one sentence.", _rule),
)}
CODE_AGENTS_BY_NAME: dict[str, Agent] = {agent.name: agent for agent in (
    ExternalPerception(), InternalPerception(), RetrieveMemory(), RecordMemory())}
CODE_AGENTS = frozenset(CODE_AGENTS_BY_NAME)
"""Agents that are code, not model calls: perception acts and replays, the memory agents read and write."""
AGENTS: dict[str, Agent] = {**LANGUAGE_AGENTS, **CODE_AGENTS_BY_NAME}
