"""One web episode: a system decides each step from the page, the environment carries it out, the trace keeps it.

The systems (`web_agents.base`, `web_agents.react`, `web_ctm.ctm`) differ only in how they decide; the loop,
the observations, the step budget and what is recorded are the same for all of them:

- a decision that fails (the model gave nothing valid) loses its step, which is recorded, and the episode
  goes on; so does an action that does not parse, is refused or names no element (the environment says why);
- a reset or step that overruns its time (a page that never loads, a script that never returns) ends the
  episode as failed (`reason="timeout"`), as does a page the browser cannot load or read (`reason="error"`);
  the benchmark goes on with the next one;
- each past step is shown to the system with what it visibly did to the page, as the environment measured it
  (`noosphere.envs.web_effect`: a field's new value, a box ticked or unticked, text that appeared, or no visible
  change), and a step that repeats the one before it and changed nothing says so;
- an action that changed nothing visible the last time it was taken, and a fill of a field already filled, are
  not offered again (`worth_trying`), nor accepted from the agents written in parts (`futility`), so a model
  that repeats itself must try something else;
- each step's screenshot (the page before the action) is written to `<run>/web/<episode>/step-N.png`, and
  its `web_step` event names it with the box of the element acted on, for the viewer.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from noosphere.concurrent import Forfeit, attempt
from noosphere.envs.miniwob import MiniWob
from noosphere.envs.web_actions import WebActionError, parse_action
from noosphere.envs.web_browser import WebTimeout
from noosphere.envs.web_effect import NO_CHANGE
from noosphere.envs.web_events import WebEpisodeEnded, WebEpisodeStarted, WebRefused, WebStepTaken
from noosphere.envs.web_page import PageState
from noosphere.errors import RuntimeFault
from noosphere.trace import Trace

REPEATED = "(repeated; nothing changed)"


@dataclass(frozen=True)
class PastStep:
    action: str
    error: str | None = None
    effect: str = ""
    """What the action visibly did to the page, measured by the environment; "" when not known."""
    repeated: bool = False
    """The same action as the step before, and this time the page did not change."""

    def line(self) -> str:
        """The step as every system sees it in its history: the action, then why it was lost or what it did."""
        outcome = f"lost: {self.error}" if self.error else self.effect
        return (f"{self.action or '(no action)'}" + (f"  -> {outcome}" if outcome else "")
                + (f" {REPEATED}" if self.repeated else ""))


@dataclass(frozen=True)
class Turn:
    """What a system decides a step from."""

    goal: str
    state: PageState
    admissible: tuple[str, ...]
    history: tuple[PastStep, ...]
    step: int
    max_steps: int


def worth_trying(admissible: tuple[str, ...], history: list[PastStep] | tuple[PastStep, ...]) -> tuple[str, ...]:
    """The admissible actions but those that changed nothing visible the last time they were taken, and but the
    fills of a field this episode already filled (unless that would leave none). Offered again, the 1.5B model
    took the same futile click until the step budget ran out (click-option), and filled the username's field with
    the username and the password in turn (login-user). The base and react agents' actions in parts are held to
    the same rules (`futility`)."""
    futile = futility(history)
    kept = tuple(action for action in admissible if not futile(action))
    return kept or admissible


def futility(history: list[PastStep] | tuple[PastStep, ...]) -> Callable[[str], str]:
    """A judge of actions by the steps so far: why an action is not worth trying again ("" when it is): it changed
    nothing visible the last time it was taken, or it fills a field this episode already filled."""
    last: dict[str, int] = {step.action: number for number, step in enumerate(history, 1) if step.action}
    filled: dict[str, int] = {}
    for number, step in enumerate(history, 1):
        if step.action.startswith("fill(") and not step.error and step.effect != NO_CHANGE:
            filled |= dict.fromkeys(action_bids(step.action), number)

    def why(action: str) -> str:
        number = last.get(action)
        if number is not None and not history[number - 1].error and history[number - 1].effect == NO_CHANGE:
            return f"{action} changed nothing visible when taken at step {number}: take another action"
        for bid in action_bids(action) if action.startswith("fill(") else ():
            if bid in filled:
                return (f"field {bid} was already filled at step {filled[bid]} ({history[filled[bid] - 1].action}):"
                        " take another action")
        return ""

    return why


def action_bids(action: str) -> tuple[str, ...]:
    """The bids an action string names; none when it does not parse."""
    try:
        return parse_action(action).bids
    except WebActionError:
        return ()


@dataclass(frozen=True)
class Decision:
    action: str
    thought: str = ""


Decide = Callable[[Turn], Awaitable[Decision]]


@dataclass(frozen=True)
class WebEpisode:
    env: str
    task: str
    seed: int
    goal: str
    won: bool
    reward: float
    steps: int
    lost_steps: int
    reason: str
    actions: tuple[str, ...]
    error: str | None = None


async def play(env: MiniWob, decide: Decide, *, system: str, trace: Trace, max_steps: int = 10,
               media: Path | None = None) -> WebEpisode:
    """Play `env` to its end or `max_steps`, deciding with `decide`; screenshots go under `media` (a run folder)."""
    history: list[PastStep] = []
    lost, reason, error = 0, "max_steps", None
    try:
        try:
            await env.areset()
        except (WebTimeout, RuntimeFault) as fault:
            reason, error = ("timeout" if isinstance(fault, WebTimeout) else "error"), str(fault)
            return _ended(env, trace, history, lost, reason, error)
        assert env.state is not None
        trace.emit(WebEpisodeStarted(env=env.name, task=env.task, seed=env.seed, goal=env.goal, system=system,
                                     url=env.url))
        for step in range(1, max_steps + 1):
            state = env.state
            turn = Turn(env.goal, state, worth_trying(env.admissible, history), tuple(history), step, max_steps)
            decided = await attempt(decide(turn))
            action, thought = ("", "") if isinstance(decided, Forfeit) else (decided.action, decided.thought)
            ran, failed = False, ""
            if isinstance(decided, Forfeit):
                step_error: str | None = f"no action: {decided}"
            else:
                try:
                    await env.astep(action)
                    ran = True
                    step_error = env.last.error if env.last is not None else None
                except RuntimeFault as fault:  # overran its time, or the page failed: the episode ends
                    step_error, failed = str(fault), "timeout" if isinstance(fault, WebTimeout) else "error"
            lost += step_error is not None
            change = env.last.change if ran and env.last is not None else None
            repeated = bool(action) and bool(history) and history[-1].action == action and \
                (change is None or not change.changed)
            history.append(PastStep(action, step_error, change.text if change is not None else "", repeated))
            _record(env, trace, step, state, action, thought, step_error, media, ran)
            if failed:
                reason, error = failed, step_error
                break
            if env.done:
                reason = env.reason
                break
        return _ended(env, trace, history, lost, reason, error)
    finally:
        await env.aclose()


def _record(env: MiniWob, trace: Trace, step: int, state: PageState, action: str, thought: str,
            error: str | None, media: Path | None, ran: bool) -> None:
    last = env.last if ran else None
    performed = last.performed if last is not None else None
    bid = performed.bids[0] if performed is not None and performed.bids else None
    element = state.element(bid) if bid else None
    trace.emit(WebStepTaken(
        env=env.name, step=step, action=action, performed=performed.render() if performed and not error else None,
        error=error, bid=bid, box=element.box.to_json() if element is not None and element.box is not None else None,
        screenshot=_save(media, env.name, step, state.screenshot), thought=thought or None,
        message=(last.effect.message or None) if last is not None else None,
        effect=last.change.text if last is not None and last.change is not None else None,
        reward=env.reward if env.done else 0.0, done=env.done, won=env.won))
    for refusal in last.refusals if last is not None else ():
        trace.emit(WebRefused(env=env.name, step=step, what=refusal.what, url=refusal.url))


def _save(media: Path | None, episode: str, step: int, png: bytes) -> str | None:
    if media is None or not png:
        return None
    relative = Path("web") / episode / f"step-{step}.png"
    (media / relative).parent.mkdir(parents=True, exist_ok=True)
    (media / relative).write_bytes(png)
    return relative.as_posix()


def _ended(env: MiniWob, trace: Trace, history: list[PastStep], lost: int, reason: str,
           error: str | None) -> WebEpisode:
    won = env.won and reason == "done"
    reward = env.reward if reason == "done" else 0.0
    trace.emit(WebEpisodeEnded(env=env.name, task=env.task, seed=env.seed, won=won, reward=reward,
                               steps=len(history), lost_steps=lost, reason=reason, error=error))
    return WebEpisode(env.name, env.task, env.seed, env.goal, won, reward, len(history), lost, reason,
                      tuple(step.action for step in history), error)
