"""The robot's egocentric view as text: where it is, what lies ahead, each object with its colour and its
position relative to the robot, and the view's cells as a small picture.

This is the observer's sense when its model cannot see images: the text says what a camera frame of the
same view shows, and nothing the frame does not (no cell out of view or hidden behind a wall or a closed door).
"""

from __future__ import annotations

from dataclasses import dataclass

FREE = ("floor", "door-open", "goal")
"""What the robot can walk onto."""
SYMBOLS = {"wall": "#", "floor": ".", "door-open": "/", "door-closed": "D", "door-locked": "D", "key": "k",
           "ball": "o", "box": "x", "goal": "G", "lava": "~"}
LEGEND = ("^ you (facing up), # wall, . floor, ? hidden, D closed door, / open door, k key, o ball, x box, G goal, "
          "~ lava")


@dataclass(frozen=True)
class ViewCell:
    """One cell in view: `ahead` cells in front of the robot (0: its own row), `right` cells to its right
    (negative: left); its content (`floor`, `wall`, a thing's kind, `door-open|closed|locked`), colour, room."""

    ahead: int
    right: int
    content: str
    colour: str = ""
    room: int | None = None


def name_of(cell: ViewCell) -> str:
    if cell.content.startswith("door-"):
        return f"{cell.content.removeprefix('door-')} {cell.colour} door".strip()
    if cell.content == "goal":
        return "goal square" if not cell.colour else f"{cell.colour} goal square"
    return f"{cell.colour} {cell.content}".strip()


def where(cell: ViewCell) -> str:
    """`2 ahead and 1 to the left`, `right next to you on the right`, `1 ahead`."""
    parts = [f"{cell.ahead} ahead"] if cell.ahead else []
    if cell.right:
        parts.append(f"{abs(cell.right)} to the {'right' if cell.right > 0 else 'left'}")
    return " and ".join(parts) or "here"


def _ahead_line(at: dict[tuple[int, int], ViewCell], depth: int) -> str:
    free = 0
    for ahead in range(1, depth):
        cell = at.get((ahead, 0))
        if cell is None:
            return f"Straight ahead: {free} free cell{'s' if free != 1 else ''}, then what you cannot see."
        if cell.content not in FREE:
            blocker = "a wall" if cell.content == "wall" else f"a {name_of(cell)}"
            return f"Straight ahead: {free} free cell{'s' if free != 1 else ''}, then {blocker}."
        free += 1
    return f"Straight ahead: at least {free} free cells."


def _side(at: dict[tuple[int, int], ViewCell], right: int) -> str:
    cell = at.get((0, right))
    side = "right" if right > 0 else "left"
    if cell is None:
        return f"On your {side}: hidden."
    return f"On your {side}: {'free floor' if cell.content in FREE[:1] else 'a ' + name_of(cell)}."


def describe(cells: list[ViewCell], facing: str, room: int | None, size: int) -> str:
    """The view as the observer reads it."""
    at = {(c.ahead, c.right): c for c in cells}
    here = f"You are in room {room}" if room is not None else "You stand in a doorway"
    lines = [f"{here}, facing {facing}.", _ahead_line(at, size), f"{_side(at, -1)} {_side(at, 1)}"]
    things = sorted((c for c in cells if c.content not in ("wall", "floor") and (c.ahead, c.right) != (0, 0)),
                    key=lambda c: (c.ahead, abs(c.right), c.right))
    if things:
        lines.append("You see:")
        lines += [f"- a {name_of(c)}, {where(c)}" + (f", in room {c.room}" if c.room is not None and c.room != room
                                                      else "") for c in things]
    else:
        lines.append("You see no objects, only floor and walls.")
    half = size // 2
    rows = ["".join("^" if (ahead, right) == (0, 0) else SYMBOLS.get(at[ahead, right].content, "?")
                    if (ahead, right) in at else "?" for right in range(-half, half + 1))
            for ahead in range(size - 1, -1, -1)]
    lines += [f"Your view ({LEGEND}):", *rows]
    return "\n".join(lines)
