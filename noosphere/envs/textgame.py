"""A TextWorld game file played through `textworld.gym`: the shared engine of ALFWorld and TextWorld."""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from noosphere.envs.base import Reset, Step
from noosphere.errors import DataError, UsageError


@contextmanager
def quiet_jericho() -> Iterator[None]:
    """Jericho warns that generated games lack its score detection; TextWorld reports wins itself."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*is not fully supported.*")
        yield


_BANNER_LINE = re.compile(r"^[\s$|\\/_<>()-]*$")
_PROMPT_AND_STATUS = re.compile(r"\n>[^\n]*\s*\Z")


def readable(observation: str) -> str:
    """The game's text without the interpreter's furniture: TextWorld's ASCII-art title, the `>` prompt
    with the status bar after it (room, score/moves), and runs of blank lines. They cost a small model
    hundreds of prompt tokens a step and tell it nothing."""
    text = _PROMPT_AND_STATUS.sub("", "\n" + observation.replace("\r", ""))
    lines = [line.rstrip() for line in text.split("\n")]
    art = [i for i, line in enumerate(lines) if line.strip() and _BANNER_LINE.match(line) and "$$" in line]
    if len(art) >= 3:  # the title block: keep what follows its last line
        lines = lines[art[-1] + 1:]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


class TextGame:
    """One compiled game (`.z8`, `.ulx` or ALFWorld's `.tw-pddl`), with a step budget."""

    def __init__(self, path: Path, *, name: str, kind: str, max_steps: int = 50, wrappers: tuple[Any, ...] = (),
                 task_marker: str = "Your task is to:", guide: str = "") -> None:
        self.path, self.name, self.kind, self.max_steps, self.guide = path, name, kind, max_steps, guide
        self._wrappers, self._task_marker = wrappers, task_marker
        self._env: Any = None

    def _make(self) -> Any:
        import textworld
        import textworld.gym

        infos = textworld.EnvInfos(won=True, admissible_commands=True, objective=True, policy_commands=True,
                                   extras=["walkthrough"])
        env_id = textworld.gym.register_game(str(self.path), infos, max_episode_steps=self.max_steps,
                                             wrappers=list(self._wrappers))
        return textworld.gym.make(env_id)

    def _start(self) -> tuple[str, dict[str, Any]]:
        """Load the game if it is not loaded, and start it. A game that will not load is a `DataError` naming its
        file: Fast Downward's translator raises `SystemExit` on a PDDL it cannot read, which would otherwise end
        the whole benchmark (`noosphere.envs.gamefiles` finds most such games before a run starts)."""
        with quiet_jericho():
            if self._env is not None:
                return self._env.reset()
            try:
                self._env = self._make()
                return self._env.reset()
            except (SystemExit, Exception) as exc:
                self.close()
                said = " ".join(str(exc.code if isinstance(exc, SystemExit) else exc).split())[:200]
                raise DataError(f"does not load ({type(exc).__name__}: {said})", source=str(self.path)) from None

    def reset(self) -> Reset:
        observation, info = self._start()
        task = self._task(observation, info)
        return Reset(task, readable(observation), tuple(info.get("admissible_commands") or ()), self.guide)

    def _task(self, observation: str, info: dict[str, Any]) -> str:
        if self._task_marker in observation:
            rest = observation.split(self._task_marker, 1)[1].strip().splitlines()[0]
            return f"{self._task_marker} {rest}"
        return str(info.get("objective") or "").strip()

    def step(self, action: str) -> Step:
        if self._env is None:
            raise UsageError(f"{self.name}: reset the game before its first step")
        observation, score, done, info = self._env.step(action)
        won = bool(info.get("won"))
        return Step(readable(observation), float(score), bool(done) or won, won,
                    tuple(info.get("admissible_commands") or ()))

    def expert_actions(self) -> list[str]:
        """The game's own solution from the start (ALFWorld's walkthrough, TextWorld's policy)."""
        _, info = self._start()
        return list(info.get("policy_commands") or info.get("extra.walkthrough") or [])

    def close(self) -> None:
        if self._env is not None:
            self._env.close()
            self._env = None
