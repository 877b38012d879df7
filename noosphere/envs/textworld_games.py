"""TextWorld games generated locally and deterministically, in three difficulty tiers.

Nothing is downloaded or committed: each game is compiled from a fixed seed into a cache folder
the first time a benchmark asks for it (a few seconds each) and reused afterwards. The challenges
are TextWorld's own (coin collector, treasure hunter, cooking) plus a custom quest from the
generic generator (rooms, objects and a quest of a given length).
"""

from __future__ import annotations

import importlib.util
import os
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from noosphere.envs.gamefiles import check_compiled_game
from noosphere.envs.textgame import TextGame, quiet_jericho
from noosphere.errors import DataError, MissingDependencyError, UnknownNameError, UsageError

TIERS: dict[int, dict[str, dict[str, Any]]] = {
    1: {"coin_collector": {"level": 5}, "treasure_hunter": {"level": 1},
        "cooking": {"recipe": 1, "take": 1, "go": 1, "open": False, "cook": False, "cut": False, "drop": False},
        "custom": {"nb_rooms": 3, "nb_objects": 6, "quest_length": 2}},
    2: {"coin_collector": {"level": 15}, "treasure_hunter": {"level": 10},
        "cooking": {"recipe": 2, "take": 2, "go": 6, "open": True, "cook": False, "cut": False, "drop": False},
        "custom": {"nb_rooms": 5, "nb_objects": 10, "quest_length": 4}},
    3: {"coin_collector": {"level": 30}, "treasure_hunter": {"level": 20},
        "cooking": {"recipe": 3, "take": 3, "go": 9, "open": True, "cook": True, "cut": True, "drop": False},
        "custom": {"nb_rooms": 8, "nb_objects": 16, "quest_length": 6}},
}
CHALLENGES = tuple(TIERS[1])
MAX_SEED = 2**32 - 1
"""The largest seed TextWorld's generator takes (numpy's `RandomState`)."""
SEED_ATTEMPTS = 20
"""How many seeds a game is tried from (its own, then seeds derived from it) before it is refused: TextWorld cannot
lay out a quest on every map (6 of the seeds 0-19 at tier 2 for the treasure hunter)."""


def _challenge_maker(challenge: str) -> Callable[..., Any]:
    from textworld.challenges import coin_collector, cooking, treasure_hunter

    return {"coin_collector": coin_collector.make, "treasure_hunter": treasure_hunter.make,
            "cooking": cooking.make}[challenge]


def made_from(seed: int) -> Iterator[int]:
    """The seeds game `seed` is made from, in order, until TextWorld can make one: `seed` itself, then seeds drawn
    by `random.Random(seed)`, so that the game a seed names is the same on every machine."""
    yield seed
    rng = random.Random(seed)
    for _ in range(SEED_ATTEMPTS - 1):
        yield rng.randrange(MAX_SEED + 1)


def generate(challenge: str, tier: int, seed: int, folder: Path) -> Path:
    """Compile one game (if not already in `folder`) and return its path. The game keeps its seed's name; where
    TextWorld cannot lay out the challenge's quest from that seed (`QuestGenerationError` and the like), it is made
    from the next seed of `made_from(seed)` that it can, and a `DataError` says so if none of them can."""
    from textworld.generator.chaining import QuestGenerationError
    from textworld.generator.world import NoFreeExitError

    if tier not in TIERS:
        raise UnknownNameError("tier", str(tier), [str(t) for t in TIERS])
    if challenge not in TIERS[tier]:
        raise UnknownNameError("TextWorld challenge", challenge, CHALLENGES)
    path = game_path(folder, challenge, tier, seed)
    if path.exists():
        check_cached_game(path)
        return path
    make_folder(folder, path.parent)
    for tried in made_from(seed):
        try:
            return _compile(challenge, tier, tried, path)
        except (QuestGenerationError, NoFreeExitError):
            continue
    raise DataError(f"TextWorld cannot make a tier-{tier} {challenge} game from seed {seed}, nor from the "
                    f"{SEED_ATTEMPTS - 1} seeds derived from it; choose another --seed", source=str(path))


def _compile(challenge: str, tier: int, seed: int, path: Path) -> Path:
    import textworld
    from textworld.generator.game import GameOptions

    options = GameOptions()
    options.seeds = seed
    options.path = str(path)
    options.file_ext = ".z8"
    settings = dict(TIERS[tier][challenge])
    with quiet_jericho():
        if challenge == "custom":
            options.nb_rooms, options.nb_objects, options.quest_length = (
                settings["nb_rooms"], settings["nb_objects"], settings["quest_length"])
            game = textworld.generator.make_game(options)
        else:
            if challenge == "cooking":
                settings |= {"recipe_seed": seed, "split": "train"}
            game = _challenge_maker(challenge)(settings, options)
        return Path(textworld.generator.compile_game(game, options))


def game_path(folder: Path, challenge: str, tier: int, seed: int) -> Path:
    return folder / f"tier{tier}" / f"{challenge}-{seed}.z8"


def check_cached_game(path: Path) -> None:
    """A game compiled earlier: its story file (header, length, checksum) and the game description TextWorld
    writes beside it, read without loading the game (`noosphere.envs.gamefiles`)."""
    if not path.is_file() or path.stat().st_size == 0:
        raise DataError("cached game is damaged (empty, or not a file); delete it to generate it again",
                        source=str(path))
    check_compiled_game(path)


def check_games(folder: Path, *, tier: int = 1, per_challenge: int = 4, seed: int = 0,
                challenges: tuple[str, ...] = CHALLENGES, limit: int | None = None) -> None:
    """Before a run: TextWorld is installed, the games folder can hold games (its tier's folder is made, empty, if
    it is not there, and can be written if a game the run plays, the first `limit`, is still to be compiled), and
    the games already compiled there are whole. Nothing is generated."""
    check_seeds(seed, per_challenge)
    tier_folder = game_path(folder, CHALLENGES[0], tier, seed).parent
    for part in (folder, tier_folder):
        if _found(folder, part) and not part.is_dir():
            where = "" if part == folder else f": {part}"
            raise UsageError(f"--games-dir {folder}{where} is a file, not a folder")
    for i in range(per_challenge):
        for challenge in challenges:
            path = game_path(folder, challenge, tier, seed + i)
            if _found(folder, path):
                check_cached_game(path)
    if importlib.util.find_spec("textworld") is None:
        raise MissingDependencyError("textworld", "envs", "TextWorld games")
    make_folder(folder, tier_folder)
    chosen = [(challenge, seed + i) for i in range(per_challenge) for challenge in challenges][:limit]
    uncompiled = [path.name for challenge, game_seed in chosen
                  if not (path := game_path(folder, challenge, tier, game_seed)).exists()]
    if uncompiled and not os.access(tier_folder, os.W_OK | os.X_OK):  # compiled mid-run, after the run began
        more = f" and {len(uncompiled) - 2} more" if len(uncompiled) > 2 else ""
        raise UsageError(f"--games-dir {folder}: {tier_folder} is read-only, and the games not compiled yet "
                         f"({', '.join(uncompiled[:2])}{more}) would be compiled into it: make it writable (chmod u+w, "
                         "or chattr -i) and try again")


def _found(folder: Path, path: Path) -> bool:
    """Whether `path`, in the games folder `folder`, is there; a `UsageError` where the folder it would be in cannot
    be looked into (its permissions: `Path.exists` raises that)."""
    try:
        return path.exists()
    except OSError as exc:
        raise UsageError(f"--games-dir {folder}: cannot look into {path.parent} "
                         f"({exc.strerror or type(exc).__name__}): make it readable (chmod u+rx) and try again"
                         ) from None


def check_seeds(seed: int, per_challenge: int) -> None:
    """The seeds the games are made from, `seed` to `seed + per_challenge - 1`, are ones TextWorld takes."""
    last = seed + per_challenge - 1
    if seed < 0 or last > MAX_SEED:
        seeds = f"--seed {seed}" + (f" with --per-challenge {per_challenge} (seeds {seed} to {last})"
                                    if per_challenge > 1 else "")
        raise UsageError(f"{seeds}: TextWorld makes games from seeds 0 to {MAX_SEED} (2**32 - 1); choose a seed "
                         f"from 0 to {MAX_SEED - per_challenge + 1}")


def make_folder(folder: Path, tier_folder: Path) -> None:
    """The folder a tier's games are compiled into, or a `UsageError` saying why it cannot be made."""
    try:
        tier_folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--games-dir {folder}: cannot make {tier_folder} to hold the games "
                         f"({exc.strerror or type(exc).__name__})") from None


GUIDE = (
    "How this world works: rooms connect through exits (go north, south, east or west); a closed door or "
    "container must be opened first, and a locked one unlocked with its key. Take the things the task names, "
    "examine things to learn more, and read the task for the order of the steps. Do not go back and forth "
    "between the same rooms."
)


def textworld_games(folder: Path, *, tier: int = 1, per_challenge: int = 4, seed: int = 0,
                    challenges: tuple[str, ...] = CHALLENGES, max_steps: int = 50,
                    limit: int | None = None) -> list[TextGame]:
    """`per_challenge` games of each challenge, interleaved; the seeds are `seed`, `seed + 1`, ... With `limit`,
    the first `limit` of them, and only those are compiled."""
    chosen = [(challenge, seed + i) for i in range(per_challenge) for challenge in challenges][:limit]
    return [TextGame(generate(challenge, tier, game_seed, folder), name=f"tier{tier}/{challenge}-{game_seed}",
                     kind=challenge, max_steps=max_steps, guide=GUIDE)
            for challenge, game_seed in chosen]
