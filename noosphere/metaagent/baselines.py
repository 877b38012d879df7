"""Baselines on the same model and environment: ReAct and Reflexion.

ReAct: one call per step that thinks and then picks one admissible action (the action field is
constrained to the admissible list, as the meta-agent's motor is). Reflexion: ReAct trials on the
same game; after a failed trial the model reads how it went (the task and the trial's last steps)
and writes a lesson, and the next trial starts with every lesson so far. A Reflexion game counts as
won if any trial wins; its actions are the winning trial's.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Protocol

from noosphere.concurrent import Forfeit, attempt
from noosphere.envs import Environment
from noosphere.llm import Message, Model
from noosphere.metaagent.engine import EpisodeResult
from noosphere.metaagent.events import ActionTaken, EpisodeEnded, EpisodeStarted, TurnForfeited
from noosphere.metaagent.forms import Note, step_form
from noosphere.metaagent.prompts import ROLES, react_messages
from noosphere.metaagent.state import EpisodeState


class Decide(Protocol):
    """How a ReAct step turns its prompt into the action taken (a failed step still costs an action)."""

    async def __call__(self, model: Model, messages: list[Message], state: EpisodeState, agent: str) -> str: ...


async def written_action(model: Model, messages: list[Message], state: EpisodeState, agent: str) -> str:
    """ReAct's own decision: the action the model writes after its thought; `look` when the call failed, as a
    wasted move would cost."""
    completion = await attempt(model.complete(messages, output=step_form(state.admissible), agent=agent))
    if isinstance(completion, Forfeit):
        model.trace.emit(TurnForfeited(step=state.t + 1, agent=agent, error=str(completion), instead="look"))
        return "look"
    return completion.output.action  # type: ignore[union-attr]


async def react(model: Model, env: Environment, *, max_actions: int = 50, lessons: tuple[str, ...] = (),
                system: str = "react", decide: Decide = written_action) -> EpisodeResult:
    start = env.reset()
    state = EpisodeState(start.task, start.observation, start.admissible, start.guide)
    model.trace.emit(EpisodeStarted(game=env.name, task_type=env.kind, task=start.task, system=system))
    advice = "".join(f"- {lesson}\n" for lesson in lessons)
    advice = f"Lessons from your earlier attempts:\n{advice}\n" if lessons else ""
    while not state.done and state.t < max_actions:
        messages = react_messages(state, advice)
        action = await decide(model, messages, state, system)
        result = env.step(action)
        state.record(action, result.observation, result.admissible, result.done, result.won)
        model.trace.emit(ActionTaken(step=state.t, action=action, observation=result.observation,
                                     reward=result.reward, done=result.done, won=result.won))
    model.trace.emit(EpisodeEnded(game=env.name, won=state.won, actions=state.t, transitions=state.t))
    return EpisodeResult(env.name, env.kind, state.won, state.t, state.t, 0, task=state.task, steps=tuple(state.steps))


REFLECTED_STEPS = 20
"""The last steps of a failed attempt its reflection reads: where it went wrong is usually near the end."""


def _trajectory(result: EpisodeResult) -> str:
    return "\n".join(step.line(120) for step in result.steps[-REFLECTED_STEPS:])


async def reflexion(model: Model, env: Environment, *, trials: int = 3, max_actions: int = 50) -> EpisodeResult:
    lessons: list[str] = []
    result = None
    taken = 0
    for _ in range(trials):
        result = await react(model, env, max_actions=max_actions, lessons=tuple(lessons), system="reflexion")
        taken += result.actions
        result = replace(result, actions_taken=taken)
        if result.won:
            return result
        completion = await attempt(model.complete(
            [Message.system(ROLES["reflection"]),
             Message.user(f"{result.task}\nThe attempt used {result.actions} actions and did not complete the "
                          f"task. How it went{' (the end)' if len(result.steps) > REFLECTED_STEPS else ''}:\n"
                          f"{_trajectory(result)}\nEarlier lessons: {lessons or 'none'}. What should change?")],
            output=Note, agent="reflection"))
        if isinstance(completion, Forfeit):  # a reflection that failed teaches nothing
            model.trace.emit(TurnForfeited(step=result.actions, agent="reflection", error=str(completion),
                                           instead="no lesson from this trial"))
        else:
            lessons.append(completion.output.text)  # type: ignore[union-attr]
    assert result is not None
    return result
