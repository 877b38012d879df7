"""Whether a game file will load, found out before a run starts, without playing it.

The interpreters behind TextWorld do not raise on a file they cannot read: they end the process. Frotz prints
"Fatal error: Unknown Z-code version" and exits on a story file that is not one; Fast Downward's PDDL translator
raises `SystemExit` on an undeclared predicate. A damaged game met in the middle of a benchmark would take every
game after it down too, so each game a run will play is read here first and a fault is one `DataError` naming
the file:

- a compiled TextWorld game (`.z1`-`.z8`): the Z-machine header (Z-Machine Standards Document 1.1, section 11)
  gives the story's version, its length and a checksum of its bytes; a file of another version, cut short or
  with bytes changed does not match them. TextWorld's description of the game (the `.json` beside it) must
  hold what TextWorld reads back from it;
- an ALFWorld game (`.tw-pddl`): its PDDL domain and problem must parse (Fast Downward's own parser), and its
  grammar too (TextWorld's).
"""

from __future__ import annotations

import contextlib
import functools
import io
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, TypeAdapter

from noosphere.datafiles import read_json
from noosphere.errors import DataError

HEADER_BYTES = 64
"""The Z-machine header; the checksum covers every byte after it, up to the story's length."""
LENGTH_SCALE = {1: 2, 2: 2, 3: 2, 4: 4, 5: 4, 6: 8, 7: 8, 8: 8}
"""The header's length field counts units of this many bytes, by version."""
BLANK_LENGTH_UP_TO = 3
"""The last version whose story files may leave length and checksum blank (the standard marks both "3+": some
early version 3 files lack them). TextWorld always writes them; a later file with a length of 0 is damaged."""


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except IsADirectoryError:
        raise DataError("is a folder, not a compiled game", source=str(path)) from None
    except OSError as exc:
        raise DataError(f"cannot be read ({exc.strerror or exc})", source=str(path)) from None


def check_story_file(path: Path) -> None:
    """A Z-machine story file whose header matches its version (by its suffix), length and checksum."""
    data = _read_bytes(path)
    fix = "; delete it to compile it again" if path.suffix == ".z8" else ""
    if len(data) < HEADER_BYTES:
        raise DataError(f"does not load: {len(data)} bytes, shorter than a story file's header{fix}",
                        source=str(path))
    version = data[0]
    expected = int(path.suffix[2:]) if path.suffix[:2] == ".z" and path.suffix[2:].isdigit() else None
    if version not in LENGTH_SCALE or (expected is not None and version != expected):
        wanted = f"version {expected}" if expected is not None else "a Z-machine version (1-8)"
        raise DataError(f"does not load: its first byte says Z-machine version {version}, not {wanted}{fix}",
                        source=str(path))
    length = int.from_bytes(data[0x1A:0x1C], "big") * LENGTH_SCALE[version]
    if not length:
        if version <= BLANK_LENGTH_UP_TO:  # early story files leave length and checksum blank
            return
        raise DataError(f"does not load: its header gives a length of 0, which a version {version} story file "
                        f"never has (damaged){fix}", source=str(path))
    if length > len(data):
        raise DataError(f"does not load: cut short, {len(data)} of the {length} bytes its header gives{fix}",
                        source=str(path))
    if sum(data[HEADER_BYTES:length]) & 0xFFFF != int.from_bytes(data[0x1C:0x1E], "big"):
        raise DataError(f"does not load: its bytes do not match the checksum in its header (damaged){fix}",
                        source=str(path))


class GameDescription(BaseModel):
    """What TextWorld reads back from the `.json` it writes beside a compiled game (`Game.deserialize`)."""

    model_config = ConfigDict(extra="allow", strict=True)
    KB: dict[str, Any]
    world: list[Any]
    grammar: dict[str, Any]
    quests: list[Any]
    infos: list[Any]


DESCRIPTION: TypeAdapter[GameDescription] = TypeAdapter(GameDescription)
DESCRIBED = "TextWorld's description of a compiled game (an object with KB, world, grammar, quests, infos)"


def check_compiled_game(path: Path) -> None:
    """A compiled TextWorld game: the story file, and the description TextWorld reads beside it, read back as
    TextWorld reads it when the game loads (where TextWorld is installed)."""
    check_story_file(path)
    description = path.with_suffix(".json")
    read_json(description, DESCRIPTION, expected=f"{DESCRIBED}; delete the game to compile it again")
    stat = description.stat()
    _check_description(str(description), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=64)  # runs played together in one process check their shared games once
def _check_description(source: str, mtime: int, size: int) -> None:
    """TextWorld's own reading of a game's description (`Game.load`, a few milliseconds): what its top-level keys
    hold must be whole too (the knowledge base's logic, the world's facts, the quests)."""
    try:
        from textworld.generator.game import Game
    except ImportError:  # the benchmark says TextWorld is missing
        return
    told = io.StringIO()
    try:
        with contextlib.redirect_stdout(told), contextlib.redirect_stderr(told):
            Game.load(source)
    except (SystemExit, Exception) as exc:
        said = " ".join(str(exc.code if isinstance(exc, SystemExit) else exc).split())[:200]
        raise DataError(f"does not load: TextWorld cannot read it back ({type(exc).__name__}: {said}); delete the "
                        "game to compile it again", source=source) from None


def check_pddl_game(path: Path, domain: str, problem: str, grammar: str) -> None:
    """An ALFWorld game whose domain, problem and grammar parse. Checked once per file and content in a process
    (runs played together share their games)."""
    stat = path.stat()
    _check_pddl(str(path), stat.st_mtime_ns, stat.st_size, domain, problem, grammar)


@functools.lru_cache(maxsize=64)  # runs played together in one process check their shared games once
def _check_pddl(source: str, mtime: int, size: int, domain: str, problem: str, grammar: str) -> None:
    parse_task, parse_nested_list = _pddl_parser()
    parsed: list[Any] = []
    fault = _fault(lambda: parsed.append(parse_task(parse_nested_list(domain.split("\n")),
                                                    parse_nested_list(problem.split("\n")))))
    if fault:
        raise DataError(f"does not load: its pddl_domain and pddl_problem do not parse ({fault})", source=source)
    undeclared = _undeclared(parsed[0])
    if undeclared:
        names = ", ".join(undeclared[:3]) + (f" and {len(undeclared) - 3} more" if len(undeclared) > 3 else "")
        raise DataError(f"does not load: its pddl_problem uses {names} in :init or :goal, not declared in :objects "
                        "(nor as the domain's :constants)", source=source)
    fault = _fault(lambda: _grammar(domain, grammar))
    if fault:
        raise DataError(f"does not load: its grammar does not parse ({fault})", source=source)


def _undeclared(task: Any) -> list[str]:
    """The names the problem's initial facts and goal use that it never declares. TextWorld looks up the type of
    every argument of an initial fact and of every fact of the translated task (the goal's among them) by name, and
    an undeclared one is a `KeyError` when the game loads."""
    declared = {obj.name for obj in task.objects}
    used: set[str] = set()
    for fact in task.init:
        fluent = getattr(fact, "fluent", None)  # `(= (f a b) v)`: TextWorld reads the fluent's arguments
        used.update(fluent.args if fluent is not None else getattr(fact, "args", ()))
    pending = [task.goal]
    while pending:
        condition = pending.pop()
        used.update(getattr(condition, "args", ()))
        pending.extend(getattr(condition, "parts", ()))
    return sorted(name for name in used - declared if not name.startswith("?"))


def _fault(parse: Any) -> str | None:
    """What went wrong, in a line, or None. The parsers print their warnings and exit on some errors."""
    told = io.StringIO()
    try:
        with contextlib.redirect_stdout(told), contextlib.redirect_stderr(told):
            parse()
    except (SystemExit, Exception) as exc:  # SystemExit: Fast Downward's way of refusing a predicate
        text = " ".join(str(exc.code if isinstance(exc, SystemExit) else exc).split()) or type(exc).__name__
        return text[:200]
    return None


@functools.cache
def _pddl_parser() -> tuple[Any, Any]:
    """Fast Downward's PDDL parser. Its options module parses `sys.argv` when imported, as the translator's
    command line, so it is imported with the arguments TextWorld gives it, and the real ones put back."""
    given = sys.argv
    sys.argv = ["translate.py", "domain", "task"]
    try:
        from fast_downward.translate.pddl_parser import lisp_parser, parsing_functions
    finally:
        sys.argv = given
    return parsing_functions.parse_task, lisp_parser.parse_nested_list


def _grammar(domain: str, grammar: str) -> None:
    from textworld.envs.pddl.logic import GameLogic

    GameLogic(domain=domain, grammar=grammar)
