"""One episode: a system drives the robot for at most S actions; the world counts what it has seen after each.

An action the system invents (anything `parse_action` cannot read as one of the world's actions) is recorded
and replaced by doing nothing, and the episode goes on; so is a turn that fails at run time (a model that
never gave valid output). Both still count as one of the S actions, as a wasted move would. `stop` ends the
episode: its coverage stands for the actions it did not take.
"""

from __future__ import annotations

from dataclasses import dataclass

from noosphere.concurrent import Forfeit, attempt
from noosphere.embodied.actions import parse_action
from noosphere.embodied.events import ActionTaken, EpisodeBegan
from noosphere.embodied.policy import Decision, Policy
from noosphere.envs.gridworld import FORWARD, OPEN, STOP, GridWorld
from noosphere.trace import Trace


@dataclass(frozen=True)
class Move:
    """One step of an episode: what the system said, the world action read from it (`None` when it named none:
    an invented action, unless the turn forfeited), and the coverage after it."""

    step: int
    said: str
    action: str | None
    invented: bool
    forfeited: bool
    coverage: float


@dataclass(frozen=True)
class Trajectory:
    """One episode of exploration: the world and seed, every move, and the coverage curve it drew."""

    world: str
    seed: int
    moves: tuple[Move, ...]
    curve: tuple[float, ...]
    """Coverage after 0, 1, ..., S actions (after a stop, the coverage it stopped at)."""
    stopped: bool

    @property
    def coverage(self) -> float:
        return self.curve[-1]

    @property
    def invented(self) -> int:
        return sum(move.invented for move in self.moves)

    @property
    def forfeited(self) -> int:
        return sum(move.forfeited for move in self.moves)


BLOCKERS = {"wall": "a wall", "door-closed": "a closed door", "door-locked": "a locked door", "lava": "lava"}


def _done_text(decision: Decision, action: str | None, forfeited: bool, effect: str = "") -> str:
    """What the step did, as the next step's prompt tells it (with `effect` when the action changed nothing)."""
    if forfeited:
        return "nothing (your turn failed)"
    if action is None:
        return f"{decision.said.strip()[:60]!r}, which is no action, so nothing"
    return f"{action}, but {effect}" if effect else action


def _no_effect(world: GridWorld, action: str, before: tuple[int, int, int], ahead: str) -> str:
    """Why an action changed nothing ("" when it did something): the 1.5B model drove into the same wall or closed
    door for twenty steps when the next prompt said only "your last action: move forward"."""
    if action == FORWARD and world.pose == before:
        return f"{BLOCKERS.get(ahead, 'a ' + ahead)} was in the way: the robot did not move"
    if action == OPEN and world.content(world.front) == ahead:
        return {"door-locked": "the door in front is locked: it did not open",
                "door-open": "the door in front was open already: nothing changed"}.get(
                    ahead, "there was no closed door in front: nothing changed")
    return ""


async def explore(world: GridWorld, policy: Policy, *, max_steps: int, trace: Trace) -> Trajectory:
    """Reset `world` and let `policy` act for up to `max_steps` actions, tracing each one."""
    world.reset()
    x, y, heading = world.pose
    trace.emit(EpisodeBegan(world=world.kind, seed=world.seed, system=policy.name, max_steps=max_steps,
                            layout=world.layout(), floor=len(world.floor), pose=[x, y, heading],
                            things=[{"kind": t.kind, "colour": t.colour, "x": t.cell[0], "y": t.cell[1],
                                     "state": t.state} for t in world.things],
                            seen=[list(cell) for cell in world.last_seen], coverage=round(world.coverage, 6),
                            view=world.view_text()))
    moves: list[Move] = []
    curve = [world.coverage]
    last, stopped = "", False
    for step in range(1, max_steps + 1):
        decided = await attempt(policy.decide(world, step, last))
        forfeited = isinstance(decided, Forfeit)
        decision = Decision("", note=f"(turn failed: {decided})") if isinstance(decided, Forfeit) else decided
        action = None if forfeited else parse_action(decision.said)
        before, ahead = world.pose, world.content(world.front)
        ended = False
        if action == STOP:
            stopped = ended = True
            world.idle()
        elif action is not None:
            ended = world.step(action).done  # the robot drove into lava
        else:
            world.idle()
        curve.append(world.coverage)
        moves.append(Move(step, decision.said, action, action is None and not forfeited, forfeited, world.coverage))
        effect = _no_effect(world, action, before, ahead) if action is not None and action != STOP else ""
        x, y, heading = world.pose
        trace.emit(ActionTaken(step=step, said=decision.said, action=action, invented=action is None and not forfeited,
                               forfeited=str(decided) if isinstance(decided, Forfeit) else None, pose=[x, y, heading],
                               seen=[list(cell) for cell in world.last_seen], coverage=round(world.coverage, 6),
                               note=decision.note, effect=effect, view=world.view_text()))
        last = _done_text(decision, action, forfeited, effect)
        if ended:
            break
    curve += [curve[-1]] * (max_steps + 1 - len(curve))
    return Trajectory(world.kind, world.seed, tuple(moves), tuple(curve), stopped)
