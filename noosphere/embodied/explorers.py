"""The two systems in code: a uniformly random explorer (the paper's baseline) and a frontier explorer that goes
to the nearest cell it has not seen (the classical reference above them)."""

from __future__ import annotations

import random
from collections import deque

from noosphere.embodied.policy import Decision
from noosphere.envs.gridworld import FORWARD, MOVES, OPEN, STEP, STOP, TURN_LEFT, TURN_RIGHT, GridWorld

WALKABLE = ("floor", "door-open", "goal", "door-closed")
"""Cells the frontier explorer plans through (a closed door costs the action that opens it)."""


class RandomExplorer:
    """Each step one of the movement actions (turn left, turn right, move forward, open door), uniformly, from a
    seeded generator: never `stop`."""

    name = "random"

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    async def decide(self, world: GridWorld, step: int, last: str) -> Decision:
        return Decision(self.rng.choice(MOVES))


class FrontierExplorer:
    """Breadth-first search over (cell, heading) through the cells it has seen, to the nearest pose that faces a
    cell it has not seen; it takes the first action of that path, and plans again after every step. It stops when
    no unseen cell can be reached."""

    name = "frontier"

    async def decide(self, world: GridWorld, step: int, last: str) -> Decision:
        return Decision(next_action(world))


def next_action(world: GridWorld) -> str:
    known = world.known()
    width, height = world.size

    def ahead(x: int, y: int, heading: int) -> tuple[int, int]:
        return x + STEP[heading][0], y + STEP[heading][1]

    def faces_unseen(state: tuple[int, int, int]) -> bool:
        cell = ahead(*state)
        return 0 <= cell[0] < width and 0 <= cell[1] < height and cell not in known

    start = world.pose
    first: dict[tuple[int, int, int], str | None] = {start: None}
    queue = deque([start])
    while queue:
        state = queue.popleft()
        if state != start and faces_unseen(state):
            action = first[state]
            assert action is not None
            if action == FORWARD and known.get(ahead(*start)) == "door-closed":
                return OPEN
            return action
        x, y, heading = state
        cell = ahead(x, y, heading)
        moves = [(TURN_LEFT, (x, y, (heading - 1) % 4)), (TURN_RIGHT, (x, y, (heading + 1) % 4))]
        if known.get(cell) in WALKABLE:
            moves.append((FORWARD, (cell[0], cell[1], heading)))
        for action, following in moves:
            if following not in first:
                first[following] = first[state] or action
                queue.append(following)
    return STOP
