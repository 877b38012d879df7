"""ALFWorld's text games (the Episodex environment), loaded from game files by path.

The released games carry the PDDL problem and an expert walkthrough; ALFWorld's own loader also
wants a `traj_data.json` per trial and a download step, neither of which is needed to play: the
game file is registered with TextWorld directly, with ALFWorld's demangler (object names such as
"alarmclock 2") and its info wrapper.
"""

from __future__ import annotations

import functools
import json
from collections import defaultdict
from pathlib import Path

from noosphere.bench.data import shared_data
from noosphere.envs.demonstration import demonstration, with_demonstration
from noosphere.envs.textgame import TextGame
from noosphere.errors import UsageError

TASK_TYPES = ("pick_and_place_simple", "look_at_obj_in_light", "pick_clean_then_place_in_recep",
              "pick_heat_then_place_in_recep", "pick_cool_then_place_in_recep", "pick_two_obj_and_place")


GUIDE = (
    "How this world works: things lie in or on receptacles (tables, counters, shelves, drawers, cabinets, the "
    "fridge, the microwave...). Go to a receptacle to see what is on it, and open a closed one to see inside. You "
    "hold one thing at a time: take it from where it lies, carry it, then move it to where the task wants it. To "
    "heat, cool or clean something, take it to a microwave, a fridge or a sinkbasin and heat, cool or clean it "
    "with that. To look at something in the light, find it and use a desklamp or floorlamp where it is. Search "
    "the likeliest places first, and do not search a place twice."
)
"""ALFWorld's affordances in our words: the six task types are made of these moves."""


def alfworld_game(path: Path, *, max_steps: int = 50, guide: str = GUIDE) -> TextGame:
    from alfworld.agents.environment.alfred_tw_env import AlfredDemangler, AlfredInfos

    trial = path.parent
    name = f"{trial.parent.name}/{trial.name}"
    return TextGame(path, name=name, kind=_kind(path), max_steps=max_steps,
                    wrappers=(AlfredDemangler(), AlfredInfos), guide=guide)


def walkthrough(path: Path) -> list[str]:
    return list(json.loads(path.read_text())["walkthrough"])


def load_alfworld(root: Path | None = None, *, split: str = "valid_seen", per_type: int | None = None,
                  max_steps: int = 50, demo: bool = False) -> list[TextGame]:
    """Games in a fixed order: sorted by folder, then (with `per_type`) the first N of each task type,
    interleaved by type so that any prefix of the list is balanced.

    With `demo`, the last game of each type (of two or more) is kept back and played by its walkthrough,
    and the solved game is added to the guide of every game of that type (see `demonstration`). All
    six are replayed on every load, including a resume: about 15 s."""
    base = shared_data("alfworld", "json_2.1.1", root)
    folder = base / split if (base / split).is_dir() else base
    files = sorted(folder.glob("*/trial_*/game.tw-pddl"))
    if not files and (folder / "json_2.1.1").is_dir():  # given the data folder rather than json_2.1.1 itself
        return load_alfworld(folder / "json_2.1.1", split=split, per_type=per_type, max_steps=max_steps, demo=demo)
    if not files:
        raise UsageError(f"no ALFWorld games (*/trial_*/game.tw-pddl) under {folder}; give --data the "
                         "json_2.1.1 folder or its split folder")
    by_type: dict[str, list[Path]] = defaultdict(list)
    for path in files:
        by_type[_kind(path)].append(path)
    guides = {kind: GUIDE for kind in by_type}
    if demo:
        for kind, paths in by_type.items():
            if len(paths) > 1:  # a type's only game is played, without a demonstration
                guides[kind] = with_demonstration(GUIDE, _solved(paths.pop()))  # the kept-back game is never played
    chosen = {kind: paths[:per_type] if per_type else paths for kind, paths in by_type.items()}
    interleaved = [paths[i] for i in range(max(map(len, chosen.values()), default=0))
                   for kind, paths in sorted(chosen.items()) if i < len(paths)]
    return [alfworld_game(path, max_steps=max_steps, guide=guides[_kind(path)]) for path in interleaved]


@functools.cache
def _solved(path: Path) -> str:
    """Replaying a game takes seconds (TextWorld compiles it): once per process, for runs played together."""
    return demonstration(alfworld_game(path))


def _kind(path: Path) -> str:
    return path.parent.parent.name.split("-", 1)[0]
