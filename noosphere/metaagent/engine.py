"""The memory-driven meta-agent: agents taking turns along the transition graph until the game ends.

Each turn the current agent acts (a model call, or code for perception and memory); then the next
agent is chosen among the graph's successors: directly when there is one, by the orchestrator model
otherwise. An orchestrator pick that is not allowed is retried by the model layer and then replaced
by the default successor. A hallucination (an agent that says nothing usable, such as a planner that
keeps proposing no admissible action, actions that keep doing nothing or repeat to the same result,
a belief or idea that gives up, claims a success
the game has not granted, or names objects it never showed) sends the conscious agent into the focus loop,
which replays the last real observation and the task. Memory is recalled when the game starts,
consolidated ("sleep") first, and the episode is stored when it ends; its rules only if it was won.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from noosphere.envs import Environment
from noosphere.errors import BudgetExceededError, NoosphereError
from noosphere.llm import Model
from noosphere.memory import EpisodeStep
from noosphere.metaagent.agents import CODE_AGENTS, DUTIES, LANGUAGE_AGENTS, Note, briefed, orchestrator_output
from noosphere.metaagent.events import (
    ActionTaken,
    AgentSpoke,
    BeliefWritten,
    EpisodeEnded,
    EpisodeStarted,
    FocusOutcome,
    FocusTriggered,
    Transition,
)
from noosphere.metaagent.graph import DEFAULT_GRAPH, MEMORY_AGENTS, START, TransitionGraph
from noosphere.metaagent.hallucination import flag_hallucination
from noosphere.metaagent.recollection import MemorySettings
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
    """Every transition taken, (from, to), in order: what the transition heatmaps count."""
    focus_recoveries: int = 0
    """Focus loops whose next action did something (the loop put the team back on track)."""
    task: str = ""
    steps: tuple[EpisodeStep, ...] = ()
    """The trajectory: what a reflection on a failed attempt reads."""


class MetaAgent:
    def __init__(self, model: Model, *, graph: TransitionGraph = DEFAULT_GRAPH, memory: MemorySettings | None = None,
                 max_actions: int = 50, max_transitions: int | None = None, seed: int = 0) -> None:
        graph.check_agents(set(LANGUAGE_AGENTS) | CODE_AGENTS)
        self.model, self.memory = model, memory
        remembers = memory is not None and memory.active
        # without a memory those agents would only spend turns: the orchestrator is not offered them
        self.graph = graph if remembers else graph.without(*MEMORY_AGENTS)
        self.max_actions = max_actions
        self.max_transitions = max_transitions or 8 * max_actions
        self.seed = seed

    async def play(self, env: Environment) -> EpisodeResult:
        start = env.reset()
        state = EpisodeState(start.task, start.observation, start.admissible, start.guide)
        trace = self.model.trace
        trace.emit(EpisodeStarted(game=env.name, task_type=env.kind, task=start.task, system="metaagent"))
        if self.memory is not None:
            self.memory.recall_into(state, env.name, trace, seed=self.seed)
        node, focus_loops, recoveries, moves = START, 0, 0, []
        while not state.done and state.t < self.max_actions and state.transitions < self.max_transitions:
            said = await self._turn(node, state, env)
            trace.emit(AgentSpoke(step=state.t, agent=node, output=said))
            if node == "conscious" and said:
                state.belief_at = state.t
                trace.emit(BeliefWritten(step=state.t, belief=state.belief))
                # the belief state for this timestep goes with its step (or the opening) into episodic memory
                if state.steps:
                    state.steps[-1] = replace(state.steps[-1], belief=state.belief)
                else:
                    state.opening = replace(state.opening, belief=state.belief)
            if node == "internal_perception":
                state.needs_focus = None
            if node == "external_perception" and state.focus_pending:
                recovered = state.invalid_streak == 0
                trace.emit(FocusOutcome(step=state.t, loop=state.focus_pending, action=state.steps[-1].action,
                                        recovered=recovered))
                recoveries, state.focus_pending = recoveries + recovered, 0
                state.focus_note = ""  # it advised this action; left in the context it would go stale
            flag_hallucination(node, state)
            if state.needs_focus and state.focused_at == state.t:
                state.needs_focus = None  # already focused at this timestep: carry on and let an action decide
            target = await self._next(node, state)
            if target == "focus" and state.needs_focus:
                focus_loops += 1
                state.focused_at, state.focus_pending = state.t, focus_loops
                trace.emit(FocusTriggered(step=state.t, reason=state.needs_focus, loop=focus_loops))
            moves.append((node, target))
            node, state.transitions = target, state.transitions + 1
        await self._remember(state, env)
        trace.emit(EpisodeEnded(game=env.name, won=state.won, actions=state.t, transitions=state.transitions))
        return EpisodeResult(env.name, env.kind, state.won, state.t, state.transitions, focus_loops, tuple(moves),
                             recoveries, state.task, tuple(state.steps))

    # one turn --------------------------------------------------------------------------------------
    async def _turn(self, node: str, state: EpisodeState, env: Environment) -> str:
        if node == "external_perception":
            return self._perceive(state, env)
        if node == "internal_perception":
            state.observation = state.last_valid_observation
            return f"{state.task}\nLast real observation: {state.last_valid_observation}"
        if node == "retrieve_memory":
            if self.memory is not None:
                self.memory.recall_into(state, env.name, self.model.trace, seed=self.seed,
                                        query=f"{state.task} {state.belief}")
            return state.recall or "(no memory)"
        if node == "record_memory":
            return f"{len(state.rules)} rules kept for after the game"
        agent = LANGUAGE_AGENTS[node]
        try:
            completion = await self.model.complete(agent.messages(state), output=agent.output(state), agent=node,
                                                   format_at="end")
        except BudgetExceededError:
            raise
        except NoosphereError as exc:  # the agent forfeits its turn; saying nothing usable is a hallucination
            state.needs_focus = f"{node} gave no usable output ({type(exc).__name__})"
            if node == "planning":
                state.plan = ""  # the motor must not carry out the previous step's plan again
            return ""
        return agent.apply(state, completion.output)

    def _perceive(self, state: EpisodeState, env: Environment) -> str:
        action = state.pending_action or "look"
        state.pending_action = None
        result = env.step(action)
        state.record(action, result.observation, result.admissible, result.done, result.won)
        self.model.trace.emit(ActionTaken(step=state.t, action=action, observation=result.observation,
                                          reward=result.reward, done=result.done, won=result.won))
        return result.observation

    async def _next(self, node: str, state: EpisodeState) -> str:
        successors = self.graph.successors(node)
        trace = self.model.trace
        if state.needs_focus and "focus" in successors:
            target = "focus"
        elif len(successors) == 1:
            target = successors[0]
        else:
            # the graph's default first and marked: on ALFWorld the 1.5B model, offered five equal lines,
            # sent the team into the focus loop at timestep 0, before anything had gone wrong
            usual = self.graph.default(node)
            described = "\n".join(f"- {name}{' (the usual next step)' if name == usual else ''}: "
                                  f"{DUTIES.get(name, name)}"
                                  for name in sorted(successors, key=lambda name: name != usual))
            try:
                completion = await self.model.complete(
                    briefed(state, "orchestrator", f"The {node} agent just acted. Who acts next?\n{described}"),
                    output=orchestrator_output(successors), agent="orchestrator", format_at="end")
                target = completion.output.next  # type: ignore[union-attr]
            except BudgetExceededError:
                raise
            except NoosphereError:
                target = self.graph.default(node)
                trace.emit(Transition(step=state.t, source=node, target=target, valid=False, fallback=True))
                return target
        trace.emit(Transition(step=state.t, source=node, target=target))
        return target

    async def _remember(self, state: EpisodeState, env: Environment) -> None:
        """Store what the memory mode keeps: the episode (episodic) and, after a win, its rules
        (conceptual). Model calls come first and writes last, so a run killed in between replays
        the game without leaving half an episode behind."""
        memory = self.memory
        if memory is None or not memory.active:
            return
        if memory.episodic and state.steps and not state.steps[-1].belief:  # the belief after the last action
            said = await self._turn("conscious", state, env)
            if said:
                state.belief_at = state.t
                self.model.trace.emit(BeliefWritten(step=state.t, belief=state.belief))
                state.steps[-1] = replace(state.steps[-1], belief=state.belief)
        if memory.conceptual and state.won and not state.rules:  # a won game teaches at least one rule
            try:
                completion = await self.model.complete(
                    briefed(state, "learning", "The task was solved. One general rule:"), output=Note, agent="learning",
                    format_at="end")
                state.rules.append(completion.output.text)  # type: ignore[union-attr]
            except BudgetExceededError:
                raise
            except NoosphereError:
                pass
        memory.keep(state, env.name, env.kind)
