"""ALFWorld's text games (the Episodex environment), loaded from game files by path.

The released games carry the PDDL problem and an expert walkthrough; ALFWorld's own loader also
wants a `traj_data.json` per trial and a download step, neither of which is needed to play: the
game file is registered with TextWorld directly, with ALFWorld's demangler (object names such as
"alarmclock 2") and its info wrapper.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from collections import Counter, defaultdict
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from noosphere.data import shared_data
from noosphere.datafiles import read_json
from noosphere.envs.demonstration import demonstration, with_demonstration
from noosphere.envs.gamefiles import check_pddl_game
from noosphere.envs.textgame import TextGame
from noosphere.errors import DataError, MissingDependencyError, UnknownNameError, UsageError

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


class GameFile(BaseModel):
    """What a `game.tw-pddl` must hold to be played and, kept back, replayed as a demonstration."""

    model_config = ConfigDict(strict=True, frozen=True, extra="allow")
    pddl_domain: str = Field(min_length=1)
    pddl_problem: str = Field(min_length=1)
    grammar: str = Field(min_length=1)
    solvable: bool = True
    walkthrough: list[str]


GAME_FILE = TypeAdapter(GameFile)
EXPECTED = "an ALFWorld game: a JSON object {pddl_domain, pddl_problem, grammar, solvable, walkthrough: [actions]}"


def walkthrough(path: Path) -> list[str]:
    return read_json(path, GAME_FILE, expected=EXPECTED).walkthrough


SPLITS = ("train", "valid_seen", "valid_unseen", "valid_train")
"""ALFWorld's split folders under json_2.1.1."""
DEFAULT_SPLIT = "valid_seen"


def data_split(root: Path | None, split: str | None) -> str:
    """The split a run plays: `split` where it is given (`--split`); else the split folder `root` is, where it
    is one (`--data .../valid_unseen` plays valid_unseen); else valid_seen."""
    if split is not None:
        if split not in SPLITS:
            raise UnknownNameError("ALFWorld split", split, SPLITS)
        return split
    return root.name if root is not None and root.name in SPLITS else DEFAULT_SPLIT


def game_files(root: Path | None = None, *, split: str = DEFAULT_SPLIT) -> list[Path]:
    """The game files under the data folder, every one validated (a `DataError` names a bad one), sorted by folder.
    Nothing of ALFWorld or TextWorld is needed: a run checks its data with this before its folder is made."""
    base = shared_data("alfworld", "json_2.1.1", root)
    if not base.is_dir():
        raise UsageError(f"{base} is not a folder; give --data the json_2.1.1 folder or its split folder")
    _looked_into([base])
    folder = base / split if (base / split).is_dir() else base
    _looked_into([folder])
    plays = (f"and the run plays {split}: give --split {{other}} to play {{it}}, or --data the {split} folder or a "
             f"json_2.1.1 folder that holds it")
    if folder == base and base.name in SPLITS and base.name != split:
        raise UsageError(f"{base} is the {base.name} split, " + plays.format(other=base.name, it="it"))
    others = sorted(p.name for p in base.iterdir() if p.name in SPLITS and p.is_dir()) if folder == base else []
    if others:
        raise UsageError(f"{base} has no {split} folder (it holds {', '.join(others)}), "
                         + plays.format(other=others[0], it="it" if len(others) == 1 else "one of them"))
    # the games of a folder that cannot be looked into would be left out of the run, silently
    _looked_into([path for pattern in ("*", "*/trial_*") for path in sorted(folder.glob(pattern)) if path.is_dir()])
    files = sorted(folder.glob("*/trial_*/game.tw-pddl"))
    if not files and (folder / "json_2.1.1").is_dir():  # given the data folder rather than json_2.1.1 itself
        return game_files(folder / "json_2.1.1", split=split)
    if not files:
        raise UsageError(f"no ALFWorld games (*/trial_*/game.tw-pddl) under {folder}; give --data the "
                         "json_2.1.1 folder or its split folder")
    for path in files:
        read_json(path, GAME_FILE, expected=EXPECTED)
    return files


def _looked_into(folders: list[Path]) -> None:
    """Each folder of the data can be listed and looked into, or a usage error naming the first that cannot (its
    permissions): `Path.is_dir` raised inside it, and `Path.glob` passes it by."""
    closed = [folder for folder in folders if not os.access(folder, os.R_OK | os.X_OK)]
    if closed:
        more = f" (and {len(closed) - 1} more)" if len(closed) > 1 else ""
        raise UsageError(f"cannot look into the ALFWorld data folder {closed[0]}{more} (permission denied): make it "
                         "readable (chmod u+rx) and try again")


def require_alfworld() -> None:
    """ALFWorld's package, or a usage error saying how to install it."""
    if importlib.util.find_spec("alfworld") is None:
        raise MissingDependencyError("alfworld", "envs", "ALFWorld games")


def load_alfworld(root: Path | None = None, *, split: str = DEFAULT_SPLIT, per_type: int | None = None,
                  max_steps: int = 50, demo: bool = False) -> list[TextGame]:
    """Games in a fixed order: sorted by folder, then (with `per_type`) the first N of each task type,
    interleaved by type so that any prefix of the list is balanced.

    With `demo`, the last game of each type (of two or more) is kept back and played by its walkthrough,
    and the solved game is added to the guide of every game of that type (see `demonstration`). All
    six are replayed on every load, including a resume: about 15 s."""
    files = game_files(root, split=split)
    require_alfworld()
    played, kept_back = chosen_games(files, per_type=per_type, demo=demo)
    guides = {_kind(path): GUIDE for path in played}
    for kind, path in kept_back.items():
        guides[kind] = with_demonstration(GUIDE, _solved(path))  # the kept-back game is never played
    return [alfworld_game(path, max_steps=max_steps, guide=guides[_kind(path)]) for path in played]


def chosen_games(files: list[Path], *, per_type: int | None, demo: bool) -> tuple[list[Path], dict[str, Path]]:
    """The games played, interleaved by task type, and (with `demo`) the game kept back of each type that has
    two or more, to be replayed as its demonstration."""
    by_type: dict[str, list[Path]] = defaultdict(list)
    for path in files:
        by_type[_kind(path)].append(path)
    kept_back = {}
    if demo:
        for kind, paths in by_type.items():
            if len(paths) > 1:  # a type's only game is played, without a demonstration
                kept_back[kind] = paths.pop()
    chosen = {kind: paths[:per_type] if per_type else paths for kind, paths in by_type.items()}
    interleaved = [paths[i] for i in range(max(map(len, chosen.values()), default=0))
                   for kind, paths in sorted(chosen.items()) if i < len(paths)]
    return interleaved, kept_back


def check_games(root: Path | None = None, *, split: str = DEFAULT_SPLIT, per_type: int | None = None,
                demo: bool = False) -> list[Path]:
    """Before a run: every game file validated, ALFWorld installed, and each game the run will play or replay
    parsed as TextWorld will load it (`noosphere.envs.gamefiles`): a `DataError` names a game that would not."""
    files = game_files(root, split=split)
    require_alfworld()
    played, kept_back = chosen_games(files, per_type=per_type, demo=demo)
    chosen = [*played, *kept_back.values()]
    for path in chosen:
        if path.read_bytes()[:3] == b"\xef\xbb\xbf":  # our reader takes it; TextWorld's, mid-run, would not
            raise DataError(f"starts with a UTF-8 byte-order mark, which ALFWorld's loader cannot read; expected "
                            f"{EXPECTED} (save it without the mark)", source=str(path))
    for path in chosen:
        game = read_json(path, GAME_FILE, expected=EXPECTED)
        check_pddl_game(path, game.pddl_domain, game.pddl_problem, game.grammar)
    return played


def shortfall(played: list[Path], per_type: int | None) -> str | None:
    """What a run of `played` will not get that it asked for, in words (None if nothing): the task types with
    fewer games than `per_type` (with no `per_type`, those with none), and the folders of no ALFWorld task type
    (each played as a kind of its own)."""
    counts = Counter(_kind(path) for path in played)
    short = [f"{kind} {counts[kind]}" for kind in TASK_TYPES if counts[kind] < (per_type or 1)]
    strange = sorted(set(counts) - set(TASK_TYPES))
    said = []
    if short:
        asked = f"--per-type {per_type} asks for" if per_type else "the run plays every game, and"
        said.append(f"{asked} more games of a task type than the data has ({', '.join(short)})")
    if strange:
        said.append(f"games of no ALFWorld task type ({', '.join(strange)}) are played as kinds of their own")
    return f"{'; '.join(said)}; the data gives {len(played)} games" if said else None


@functools.cache
def _solved(path: Path) -> str:
    """Replaying a game takes seconds (TextWorld compiles it): once per process, for runs played together."""
    return demonstration(alfworld_game(path))


def _kind(path: Path) -> str:
    return path.parent.parent.name.split("-", 1)[0]
