"""The orchestrator: who acts next, asked only where the graph leaves a real choice.

A single allowed successor is taken by code, and a hallucination sends the team round the focus loop
without asking. Otherwise the orchestrator picks among the successors, told what each one does (the
graph's default first and marked): as the last field of the call of the language agent that just
acted (so the conscious agent's turn costs one call, not two), or in a call of its own after a code
agent, or after an agent whose call failed. A pick outside the graph is replaced by the default
successor. Every choice says how it was made, so the trace tells code from the model.

The focus loop runs at most once per timestep, whoever sends the team round it: once it has, it is
no longer a way forward until the next action, neither forced nor offered. (Offered again, the 0.5B
model's belief call picked it after every replay, and the team never acted.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from noosphere.concurrent import Forfeit, attempt
from noosphere.llm import Model
from noosphere.metaagent.events import TurnForfeited
from noosphere.metaagent.forms import PICK, orchestrator_output
from noosphere.metaagent.graph import TransitionGraph
from noosphere.metaagent.prompts import DUTIES, briefed
from noosphere.metaagent.state import EpisodeState

FOCUS = "focus"

ChosenBy = Literal["graph", "focus", "orchestrator"]


@dataclass(frozen=True)
class Offer:
    """A real choice after `source`: its successors, the usual one first."""

    source: str
    successors: tuple[str, ...]
    usual: str

    def described(self) -> str:
        # the graph's default first and marked: on ALFWorld the 1.5B model, offered five equal lines,
        # sent the team into the focus loop at timestep 0, before anything had gone wrong
        ordered = sorted(self.successors, key=lambda name: name != self.usual)
        return "\n".join(f"- {name}{' (the usual next step)' if name == self.usual else ''}: "
                         f"{DUTIES.get(name, name)}" for name in ordered)

    def question(self) -> str:
        """The orchestrator's question at the end of the call of the agent it follows."""
        return f"Last, as the team's orchestrator, pick in `{PICK}` who acts next:\n{self.described()}"


@dataclass(frozen=True)
class Choice:
    target: str
    by: ChosenBy
    valid: bool = True
    """False when the orchestrator's pick was not an allowed successor, or not open now (the focus loop
    after it has run at this timestep), or it gave none."""

    @property
    def fallback(self) -> bool:
        return not self.valid


def focus_decided(graph: TransitionGraph, node: str, state: EpisodeState) -> bool:
    """Before `node`'s turn: the focus loop follows it whatever it says (a hallucination is pending, the
    loop has not run at this timestep, and it is open from here)."""
    return bool(state.needs_focus) and state.focused_at != state.t and FOCUS in graph.successors(node)


def open_successors(graph: TransitionGraph, node: str, state: EpisodeState) -> tuple[str, ...]:
    """Where the team may go after `node` now: its successors, less the focus loop once it has run at
    this timestep (unless it is the only way on)."""
    successors = graph.successors(node)
    if state.focused_at != state.t:
        return successors
    return tuple(name for name in successors if name != FOCUS) or successors


def _usual(graph: TransitionGraph, node: str, open_now: tuple[str, ...]) -> str:
    default = graph.default(node)
    return default if default in open_now else open_now[0]


def offer(graph: TransitionGraph, node: str, state: EpisodeState) -> Offer | None:
    """The choice to put to the orchestrator after `node`'s turn, or None where code decides. Asked
    before the turn; the agent's own output may still open the focus loop, which overrides the pick."""
    open_now = open_successors(graph, node, state)
    if len(open_now) < 2 or focus_decided(graph, node, state):
        return None
    return Offer(node, open_now, _usual(graph, node, open_now))


async def choose(graph: TransitionGraph, node: str, state: EpisodeState, model: Model,
                 pick: str | None) -> Choice:
    """Who acts after `node`: the focus loop, the only way on, or the orchestrator's pick (`pick`, made in
    the agent's own call, or asked now). A pick outside the ways open now gives the usual one."""
    if focus_decided(graph, node, state):
        return Choice(FOCUS, "focus")
    open_now = open_successors(graph, node, state)
    if len(open_now) == 1:
        return Choice(open_now[0], "graph")
    usual = _usual(graph, node, open_now)
    if pick is None:
        pick = await _ask(model, state, Offer(node, open_now, usual))
    if pick in open_now:
        return Choice(pick, "orchestrator")
    return Choice(usual, "orchestrator", valid=False)


async def _ask(model: Model, state: EpisodeState, choice: Offer) -> str | None:
    """The orchestrator's own call; None when it gives no usable pick."""
    completion = await attempt(model.complete(
        briefed(state, "orchestrator", f"The {choice.source} agent just acted. Who acts next?\n"
                                       f"{choice.described()}"),
        output=orchestrator_output(choice.successors), agent="orchestrator", format_at="end"))
    if isinstance(completion, Forfeit):
        model.trace.emit(TurnForfeited(step=state.t, agent="orchestrator", error=str(completion),
                                       instead="the usual successor"))
        return None
    return str(completion.output.next)  # type: ignore[union-attr]
