"""The memory-driven meta-agent: agents taking turns along the transition graph until the game ends.

Each turn the current agent acts (a model call, or code for perception and memory); then the next
agent is chosen among the graph's successors (`orchestrator.py`): by code where the graph leaves no
choice, by the orchestrator model otherwise, its pick a field of the call of the agent that just
acted. On the autopilot loop an action costs two calls: the conscious agent's belief with the
orchestrator's pick, then the planning and motor agents' plan and action. A hallucination (an agent
that says nothing usable, such as a planner that keeps proposing no admissible action, actions that
keep doing nothing or repeat to the same result, a belief or idea that gives up, claims a success
the game has not granted, or names objects it never showed) sends the conscious agent into the focus loop,
which replays the last real observation and the task; the loop runs at most once per timestep, whether a
hallucination or the orchestrator's pick sent the team round it. Memory is consolidated ("sleep") when the game
starts and recalled then, or when the focus loop first opens (`MemorySettings.at`: until then the memory agents
are not offered either); the episode is stored when the game ends, its rules only if it was won.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from noosphere.envs import Environment
from noosphere.errors import UnknownNameError
from noosphere.llm import Model
from noosphere.memory import EpisodeStep
from noosphere.metaagent.agents import AGENTS, FOCUS_MODES, LESSON, PLANNER_VIEWS, FocusMode, PlannerView, Turn
from noosphere.metaagent.events import AgentSpoke, EpisodeEnded, EpisodeStarted, FocusTriggered, Transition
from noosphere.metaagent.graph import DEFAULT_GRAPH, MEMORY_AGENTS, START, TransitionGraph, unused_memory_agents
from noosphere.metaagent.hallucination import flag_hallucination
from noosphere.metaagent.orchestrator import FOCUS, choose, focus_decided, offer
from noosphere.metaagent.recollection import MemorySettings
from noosphere.metaagent.scored import ScoredDecision
from noosphere.metaagent.state import EpisodeState


@dataclass(frozen=True)
class EpisodeResult:
    game: str
    kind: str
    won: bool
    actions: int
    transitions: int
    focus_loops: int
    moves: tuple[tuple[str, str], ...] = ()
    """Every transition taken, (from, to), in order: what the transition heatmaps count. Roles that
    share a call (planning and motor) still hand over to each other here, one move each."""
    focus_recoveries: int = 0
    """Focus loops whose next action did something (the loop put the team back on track)."""
    task: str = ""
    steps: tuple[EpisodeStep, ...] = ()
    """The trajectory: what a reflection on a failed attempt reads."""
    actions_taken: int | None = None
    """Every action the game cost, where that is more than `actions` (Reflexion: all its trials, while `actions`
    counts the last); what the costs per action divide by."""


class MetaAgent:
    def __init__(self, model: Model, *, graph: TransitionGraph = DEFAULT_GRAPH, memory: MemorySettings | None = None,
                 max_actions: int = 50, max_transitions: int | None = None, seed: int = 0,
                 judge: ScoredDecision | None = None, planner_view: PlannerView = "team",
                 focus: FocusMode = "replay") -> None:
        if planner_view not in PLANNER_VIEWS:
            raise UnknownNameError("planner view", planner_view, PLANNER_VIEWS)
        if focus not in FOCUS_MODES:
            raise UnknownNameError("focus mode", focus, FOCUS_MODES)
        self.focus = focus
        graph.check_agents(set(AGENTS))
        self.planner_view = planner_view
        if judge is not None:
            judge.check(model)
        self.judge = judge
        self.model, self.memory = model, memory
        # agents of a memory the run does not keep would only spend turns: the orchestrator is not offered them
        self.graph = graph.without(*unused_memory_agents(memory is not None and memory.episodic,
                                                         memory is not None and memory.conceptual))
        self.graph.check_agents(set(AGENTS))  # what is left must still reach an action
        # memory recalled only when stuck stays out of the game until then, its agents too: the team plays the game
        # the team without memory plays, prompt for prompt, until its first focus loop
        self.unrecalled = (self.graph.without(*MEMORY_AGENTS) if memory is not None and memory.at == "stuck"
                           else self.graph)
        self.unrecalled.check_agents(set(AGENTS))
        self.max_actions = max_actions
        self.max_transitions = max_transitions or 8 * max_actions
        self.seed = seed

    async def play(self, env: Environment) -> EpisodeResult:
        start = env.reset()
        state = EpisodeState(start.task, start.observation, start.admissible, start.guide,
                             strike_futile=self.focus != "replay", mask_futile=self.focus == "mask")
        turn = Turn(self.model, env, self.memory, self.seed, judge=self.judge, planner_view=self.planner_view)
        trace = self.model.trace
        trace.emit(EpisodeStarted(game=env.name, task_type=env.kind, task=start.task, system="metaagent"))
        if self.memory is not None:
            self.memory.begin(state, env.name, trace, seed=self.seed, kind=env.kind)
        node, focus_loops, moves = START, 0, []
        while not state.done and state.t < self.max_actions and state.transitions < self.max_transitions:
            graph = self.graph if state.recalled else self.unrecalled
            said = await AGENTS[node].act(state, replace(turn, offer=offer(graph, node, state),
                                                         refocus=focus_decided(graph, node, state)))
            trace.emit(AgentSpoke(step=state.t, agent=node, output=said.text, call=said.call))
            flag_hallucination(node, state)
            if state.needs_focus and state.focused_at == state.t:
                state.needs_focus = None  # already focused at this timestep: carry on and let an action decide
            choice = await choose(graph, node, state, self.model, said.pick)
            trace.emit(Transition(step=state.t, source=node, target=choice.target, valid=choice.valid,
                                  fallback=choice.fallback, by=choice.by))
            if choice.target == FOCUS:  # whoever sent the team round it (once per timestep), counted alike
                state.focused_at = state.t
                focus_loops += 1
                state.focus_pending = focus_loops
                reason = {"focus": state.needs_focus, "orchestrator": "the orchestrator picked it"}.get(
                    choice.by, "the graph's only way on")
                trace.emit(FocusTriggered(step=state.t, reason=reason or "", loop=focus_loops,
                                          struck=list(state.struck())))
                if self.memory is not None:
                    self.memory.stuck(state, env.name, trace, seed=self.seed, kind=env.kind)
            moves.append((node, choice.target))
            node, state.transitions = choice.target, state.transitions + 1
        await self._remember(state, turn)
        trace.emit(EpisodeEnded(game=env.name, won=state.won, actions=state.t, transitions=state.transitions))
        return EpisodeResult(env.name, env.kind, state.won, state.t, state.transitions, focus_loops, tuple(moves),
                             state.focus_recoveries, state.task, tuple(state.steps))

    async def _remember(self, state: EpisodeState, turn: Turn) -> None:
        """Store what the memory mode keeps: the episode (episodic) and, after a win, its rules
        (conceptual). Model calls come first and writes last, so a run killed in between replays
        the game without leaving half an episode behind."""
        memory = self.memory
        if memory is None or not memory.active:
            return
        if memory.episodic and state.steps and not state.steps[-1].belief:  # the belief after the last action
            await AGENTS[START].act(state, turn)
        if memory.conceptual and state.won and not state.rules:  # a won game teaches at least one rule
            await LESSON.act(state, turn)
        memory.keep(state, turn.env.name, turn.env.kind)
