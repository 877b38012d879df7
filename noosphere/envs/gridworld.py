"""MiniGrid and BabyAI worlds as an `Environment`: a robot in a house of rooms, seen one egocentric view at a time.

Any `MiniGrid-*` or `BabyAI-*` world of the `minigrid` package (`pip install -e ".[embodied]"`), laid out by a
seed. The robot turns left, turns right, moves forward, opens the door in front of it, or stops (the
paper's PointNav actions, and a door, which a MiniGrid house needs). The world knows which of its floor
cells the robot has seen: the cells of its rooms, every cell that is not a wall and is connected to the
start through doors, locked or not. Coverage is the share of them seen so far. Rooms are the floor
between walls and doors; a room gets its number (1, 2, ...) when the robot first sees a cell of it,
as a robot names the rooms of a house it explores.

What the robot sees each step is rendered as text (`noosphere.envs.gridview`), or as the RGB frame of
its point of view for a model that can see images (`frame_png`).
"""

from __future__ import annotations

import contextlib
import functools
import io
import warnings
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from noosphere.envs.base import Reset, Step
from noosphere.envs.gridview import ViewCell, describe
from noosphere.errors import MissingDependencyError, UsageError, closest

TURN_LEFT, TURN_RIGHT, FORWARD, OPEN, STOP = "turn left", "turn right", "move forward", "open door", "stop"
ACTIONS = (TURN_LEFT, TURN_RIGHT, FORWARD, OPEN, STOP)
"""What the robot can do; `stop` ends the episode."""
MOVES = (TURN_LEFT, TURN_RIGHT, FORWARD, OPEN)
"""The actions that move the robot or open its way (what a random explorer draws from)."""
THINGS = ("door", "key", "ball", "box", "goal", "lava")
"""The kinds of object a world may hold (walls and empty floor are not objects)."""
DIRECTIONS = ("east", "south", "west", "north")
"""MiniGrid's headings 0 to 3; x grows to the east, y to the south."""
STEP = ((1, 0), (0, 1), (-1, 0), (0, -1))
PREFIXES = ("MiniGrid-", "BabyAI-")
UNUSABLE = "MiniGrid-WFC-"
"""The wave-function-collapse worlds: registered, but the `minigrid` wheel (3.0) ships without the pattern images
they are drawn from, so none of them can be laid out."""
GUIDE = ("How this world works: a house of rooms on a grid, seen from the robot's eyes. The robot turns left or "
         "right on its cell, moves forward one cell, or opens the door right in front of it. Walls, closed doors, "
         "balls, boxes and keys block the way; open doors and empty floor do not. A closed door also hides what "
         "is behind it.")

Cell = tuple[int, int]


def require_minigrid() -> None:
    try:
        import minigrid  # noqa: F401
    except ModuleNotFoundError:
        raise MissingDependencyError("minigrid", "embodied", "MiniGrid and BabyAI worlds") from None


@functools.cache
def world_names() -> tuple[str, ...]:
    """Every MiniGrid and BabyAI world id the installed `minigrid` registers and can lay out (not the `UNUSABLE`)."""
    require_minigrid()
    import gymnasium
    import minigrid  # noqa: F401  (registers its worlds)

    return tuple(sorted(name for name in gymnasium.registry
                        if name.startswith(PREFIXES) and not name.startswith(UNUSABLE)))


def check_world(name: str) -> str:
    """`name` if it is a known world; otherwise a usage error with the closest names (172 of them)."""
    known = world_names()
    if name in known:
        return name
    if name.startswith(UNUSABLE):
        raise UsageError(f"{name!r} cannot be laid out here: the minigrid package ships the WFC worlds without the "
                         "pattern images they are drawn from. Choose another world, e.g. MiniGrid-MultiRoom-N4-S5-v1.")
    near = closest(name, known)
    hint = f" Did you mean {', '.join(near)}?" if near else ""
    raise UsageError(f"unknown world {name!r}.{hint} Worlds are the MiniGrid-* and BabyAI-* ids of the minigrid "
                     f"package ({len(known)} here), e.g. MiniGrid-MultiRoom-N4-S5-v1, BabyAI-SynthS5R2-v0.")


@dataclass(frozen=True)
class Thing:
    """An object of the world as it was laid out: its kind, colour, cell and room (None for a door, which
    stands between rooms), and a door's state (open, closed or locked)."""

    kind: str
    colour: str
    cell: Cell
    room: int | None
    state: str = ""

    @property
    def name(self) -> str:
        return f"{self.colour} {self.kind}"


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """BabyAI prints its level generator's rejected samples; gymnasium warns about old world versions."""
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        yield


class GridWorld:
    """One world laid out by one seed. `name` (the world and the seed) identifies the episode in a benchmark;
    `kind` is the world."""

    def __init__(self, world: str, seed: int) -> None:
        self.world, self.seed = check_world(world), seed
        self.name, self.kind = f"{world}#{seed}", world
        self._env: Any = None
        self.seen: set[Cell] = set()
        """Every cell the robot has had in view (walls included)."""
        self.floor: frozenset[Cell] = frozenset()
        self.things: tuple[Thing, ...] = ()
        self._rooms: dict[Cell, int] = {}
        self._room_numbers: dict[int, int] = {}
        self.last_seen: tuple[Cell, ...] = ()
        """The cells that came into view for the first time at the last reset or step."""

    # the Environment protocol ---------------------------------------------------------------------------------
    def reset(self) -> Reset:
        require_minigrid()
        import gymnasium

        with _quiet():
            if self._env is None:
                self._env = gymnasium.make(self.world, disable_env_checker=True).unwrapped
            self._env.reset(seed=self.seed)
        self.seen, self._room_numbers = set(), {}
        x, y, _ = self.pose
        self.floor = self._reachable((x, y))
        self._rooms = self._segment_rooms()
        self.things = self._lay_out()
        self._look()
        return Reset("Explore the house: see as much of it as you can.", self.view_text(), ACTIONS, GUIDE)

    def step(self, action: str) -> Step:
        """Take one of `ACTIONS`. `open door` opens a closed, unlocked door in front and does nothing otherwise
        (it never closes one, nor opens a box); `stop` changes nothing and ends the episode."""
        if action not in ACTIONS:
            raise UsageError(f"{action!r} is not an action of this world; actions: {', '.join(ACTIONS)}")
        env = self._env
        if action == STOP:
            self.idle()
            return Step(self.view_text(), 0.0, True, False, ACTIONS)
        from minigrid.minigrid_env import MiniGridEnv

        front = env.grid.get(*self.front)
        died = False
        if action == OPEN:
            if front is not None and front.type == "door" and not front.is_open and not front.is_locked:
                MiniGridEnv.step(env, env.actions.toggle)
        else:
            move = {TURN_LEFT: env.actions.left, TURN_RIGHT: env.actions.right, FORWARD: env.actions.forward}[action]
            # the plain grid physics, without a BabyAI level's check of its own instruction
            MiniGridEnv.step(env, move)
            died = action == FORWARD and front is not None and front.type == "lava"
        self._look()
        return Step(self.view_text(), 0.0, died, False, ACTIONS)

    def idle(self) -> None:
        """A step in which the robot does nothing (an action it was given that is none of `ACTIONS`)."""
        self.last_seen = ()

    def close(self) -> None:
        if self._env is not None:
            self._env.close()
            self._env = None

    # what the world knows -------------------------------------------------------------------------------------
    @property
    def pose(self) -> tuple[int, int, int]:
        """The robot's cell and heading (0 east, 1 south, 2 west, 3 north)."""
        x, y = self._env.agent_pos
        return int(x), int(y), int(self._env.agent_dir)

    @property
    def front(self) -> Cell:
        x, y, heading = self.pose
        return x + STEP[heading][0], y + STEP[heading][1]

    @property
    def coverage(self) -> float:
        """The share of the world's floor cells seen so far."""
        return len(self.seen & self.floor) / len(self.floor) if self.floor else 0.0

    @property
    def size(self) -> tuple[int, int]:
        return int(self._env.grid.width), int(self._env.grid.height)

    def content(self, cell: Cell) -> str:
        """What is at `cell` now: `wall`, `floor`, a thing's kind, or `door-open`, `door-closed`, `door-locked`."""
        width, height = self.size
        if not (0 <= cell[0] < width and 0 <= cell[1] < height):
            return "wall"
        obj = self._env.grid.get(*cell)
        if obj is None or obj.type in ("empty", "floor"):
            return "floor"
        if obj.type == "door":
            return "door-locked" if obj.is_locked else "door-open" if obj.is_open else "door-closed"
        return str(obj.type)

    def known(self) -> dict[Cell, str]:
        """The content of every cell the robot has seen (what a map drawn from its views would hold)."""
        return {cell: self.content(cell) for cell in self.seen}

    @property
    def rooms(self) -> int:
        """How many rooms the house has (seen or not)."""
        return len(set(self._rooms.values()))

    def room_number(self, cell: Cell) -> int | None:
        """The number the robot gave the room of `cell`, None if it is in no room or its room is unseen."""
        room = self._rooms.get(cell)
        return self._room_numbers.get(room) if room is not None else None

    def layout(self) -> list[str]:
        """The whole map, one string a row: `#` wall, `.` floor, a space for what lies outside the house, and
        the first letter of a thing (`D` door, `K` key, `A` ball, `B` box, `G` goal, `L` lava)."""
        letters = {"door": "D", "key": "K", "ball": "A", "box": "B", "goal": "G", "lava": "L"}
        width, height = self.size
        at = {thing.cell: letters.get(thing.kind, "?") for thing in self.things}
        return ["".join(at.get((x, y), "." if (x, y) in self.floor else "#" if self.content((x, y)) == "wall"
                                else " ") for x in range(width)) for y in range(height)]

    def view_text(self) -> str:
        x, y, heading = self.pose
        return describe(self._view(), DIRECTIONS[heading], self.room_number((x, y)),
                        self._env.agent_view_size)

    def frame_png(self, tile_size: int = 24) -> bytes:
        """The robot's point of view as a PNG (what a vision model's camera would give)."""
        from PIL import Image

        buffer = io.BytesIO()
        Image.fromarray(self._env.get_frame(agent_pov=True, tile_size=tile_size)).save(buffer, format="PNG")
        return buffer.getvalue()

    # inside -----------------------------------------------------------------------------------------------------
    def _visible(self) -> Iterator[tuple[Cell, int, int]]:
        """Each cell in view now, with how far ahead and how far to the right of the robot it is."""
        env = self._env
        _, mask = env.gen_obs_grid()
        size, half = env.agent_view_size, env.agent_view_size // 2
        x0, y0, heading = self.pose
        dx, dy = STEP[heading]
        rx, ry = -dy, dx
        tx, ty = x0 + dx * (size - 1) - rx * half, y0 + dy * (size - 1) - ry * half
        width, height = self.size
        for vx in range(size):
            for vy in range(size):
                if mask[vx, vy]:
                    cell = (tx + vx * rx - vy * dx, ty + vx * ry - vy * dy)
                    if 0 <= cell[0] < width and 0 <= cell[1] < height:
                        yield cell, size - 1 - vy, vx - half

    def _look(self) -> None:
        new = []
        here = self._rooms.get(self.pose[:2])
        if here is not None and here not in self._room_numbers:  # the robot's own room first: it starts in room 1
            self._room_numbers[here] = len(self._room_numbers) + 1
        for cell, _, _ in self._visible():
            if cell not in self.seen:
                self.seen.add(cell)
                new.append(cell)
            room = self._rooms.get(cell)
            if room is not None and room not in self._room_numbers:
                self._room_numbers[room] = len(self._room_numbers) + 1
        self.last_seen = tuple(sorted(new))

    def _view(self) -> list[ViewCell]:
        cells = []
        for cell, ahead, right in self._visible():
            content = self.content(cell)
            obj = self._env.grid.get(*cell)
            colour = str(obj.color) if obj is not None and obj.type in THINGS else ""
            cells.append(ViewCell(ahead, right, content, colour, self.room_number(cell)))
        return cells

    def _reachable(self, start: Cell) -> frozenset[Cell]:
        """The house's floor: cells that are not walls, connected to `start` (through doors of any state)."""
        seen, queue = {start}, deque([start])
        while queue:
            x, y = queue.popleft()
            for dx, dy in STEP:
                cell = (x + dx, y + dy)
                if cell not in seen and self.content(cell) != "wall":
                    seen.add(cell)
                    queue.append(cell)
        return frozenset(seen)

    def _segment_rooms(self) -> dict[Cell, int]:
        """Rooms: the floor split by doors, each connected part one room, numbered in reading order."""
        rooms: dict[Cell, int] = {}
        for start in sorted(self.floor, key=lambda c: (c[1], c[0])):
            if start in rooms or self.content(start).startswith("door"):
                continue
            room, queue = len(set(rooms.values())), deque([start])
            rooms[start] = room
            while queue:
                x, y = queue.popleft()
                for dx, dy in STEP:
                    cell = (x + dx, y + dy)
                    if cell in self.floor and cell not in rooms and not self.content(cell).startswith("door"):
                        rooms[cell] = room
                        queue.append(cell)
        return rooms

    def _lay_out(self) -> tuple[Thing, ...]:
        things = []
        for cell in sorted(self.floor, key=lambda c: (c[1], c[0])):
            obj = self._env.grid.get(*cell)
            if obj is not None and obj.type in THINGS:
                state = self.content(cell).removeprefix("door-") if obj.type == "door" else ""
                things.append(Thing(str(obj.type), str(obj.color), (int(cell[0]), int(cell[1])), self._rooms.get(cell),
                                    state))
        return tuple(things)

    def thing_room(self, thing: Thing) -> int | None:
        """The robot's number for the room `thing` is in (None: a door, or a room it never saw)."""
        return self._room_numbers.get(thing.room) if thing.room is not None else None


def gridworld(world: str, seed: int) -> GridWorld:
    """A world laid out by `seed`; the world name is checked now (a usage error with "did you mean")."""
    return GridWorld(world, seed)

