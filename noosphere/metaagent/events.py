"""Trace events of the meta-agent (the viewer draws its path, heatmap, beliefs and recoveries)."""

from __future__ import annotations

from pydantic import Field

from noosphere.trace import Event


class EpisodeStarted(Event):
    """A game begins: `MetaAgent.play`, or a ReAct baseline episode (each Reflexion trial is one). The game, its task
    type and task, and the `system` playing it (`metaagent`, `react`, `react-scored` or `reflexion`)."""

    kind: str = "ma_episode"
    game: str
    task_type: str
    task: str
    system: str


class StepEvent(Event):
    """Fields shared by the events of one step of an episode (not a kind of its own: subclasses name theirs)."""

    step: int


class AgentSpoke(StepEvent):
    """One turn of an agent of the transition graph (`MetaAgent.play`), traced after it acted: the agent and the text
    that speaks for its turn (its model call's output, or what a code agent did or read)."""

    kind: str = "ma_step"
    agent: str
    output: str
    call: str = ""
    """The model call the output came from, named by every role it served ("planning+motor": the motor's
    action came from the call it shares with the planning agent); empty when the agent is code."""


class Transition(StepEvent):
    """The choice of the agent that acts next, traced after each turn (`MetaAgent.play`, via `orchestrator.choose`):
    from `source` to `target`, who chose, and whether the orchestrator's pick was valid."""

    kind: str = "ma_transition"
    source: str
    target: str
    valid: bool = True
    """False when the orchestrator's pick was not an allowed successor (or it gave none)."""
    fallback: bool = False
    by: str = "orchestrator"
    """Who chose: `graph` (the only allowed successor, taken by code), `focus` (a hallucination opened the
    focus loop) or `orchestrator` (the model's pick, or the default successor in its place)."""


class TurnForfeited(StepEvent):
    """A model call of a game's team failed at run time (`noosphere.concurrent`: the turn is forfeited, the game goes
    on): the `agent` whose call it was, the `error`, and what was done `instead` (ReAct's step plays `look`, the
    orchestrator's pick gives way to the usual successor, a reflection teaches nothing, ...)."""

    kind: str = "ma_forfeit"
    agent: str
    error: str
    instead: str


class ActionTaken(StepEvent):
    """An action carried out in the game: the motor's action, by the meta-agent's external-perception agent, or a ReAct
    step's. `step` counts the actions so far, this one included; then the game's observation and reward, and whether
    the game is over and won."""

    kind: str = "ma_action"
    action: str
    observation: str
    reward: float
    done: bool
    won: bool


class BeliefWritten(StepEvent):
    """The conscious agent wrote the team's belief state (what it takes to be true of the game now), at the timestep
    `step`."""

    kind: str = "ma_belief"
    belief: str


class MemoryRetrieved(StepEvent):
    """What memory gave the team (`MemorySettings.recall_into`), when the game starts (or the first focus loop opens,
    `MemorySettings.at` `stuck`) and at each turn of the retrieve-memory agent: one event per kind of memory kept,
    with `items` the tasks of the past episodes recalled (`episodic`) or the representative of each rule recalled
    (`conceptual`)."""

    kind: str = "ma_retrieval"
    memory: str  # episodic or conceptual
    method: str
    items: list[str] = Field(default_factory=list)


class FocusTriggered(StepEvent):
    """The team goes round the focus loop (the `loop`-th of the episode), sent by a hallucination (`reason` says
    which), the orchestrator's pick or the graph; `struck` lists the actions the focus agent is kept from (`--focus
    strike`: those that just did nothing), empty otherwise."""

    kind: str = "ma_focus"
    reason: str
    loop: int
    struck: list[str] = Field(default_factory=list)


class FocusOutcome(StepEvent):
    """The first action after focus loop `loop`: it recovered if that action did something."""

    kind: str = "ma_focus_outcome"
    loop: int
    action: str
    recovered: bool


class EpisodeEnded(Event):
    """A game is over (`MetaAgent.play`, or a ReAct episode): it was done, or the action or transition limit was
    reached. Whether it was won, the actions taken and the transitions between agents (a baseline counts one per
    action)."""

    kind: str = "ma_episode_end"
    game: str
    won: bool
    actions: int
    transitions: int


class ActionsJudged(StepEvent):
    """A scored ReAct step (`noosphere.metaagent.scored`): the action the model wrote, the candidates with the
    policy's probability of each and the judge's P(True) that it brings the game closer to its goal, and the action
    taken."""

    kind: str = "ma_judged"
    written: str
    chosen: str
    candidates: list[str]
    policy: list[float | None]
    """The policy's probability of each candidate; None where it was not scored (every action a candidate anyway, or
    its call failed: a `TurnForfeited` event before this one says so)."""
    p_true: list[float | None]
    """The judge's P(True) of each candidate; None where its call failed or there was nothing to judge."""
    forfeits: int = 0
