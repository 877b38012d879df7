"""`noosphere ask` on a society: its people (members with `human: true`) and resuming a run from its folder.

Every society run keeps its own call cache in its folder (`noosphere.replay`), and its people's answers and
forfeits in `human/answers.jsonl`; `--resume RUN` runs the society again from the top with the saved settings,
serves every turn an earlier session completed from those, and goes on live from the first one it did not.
So a run that was stopped while it waited for a person (Ctrl-C, a closed terminal, a killed process) loses
nothing, and the person may answer in the viewer page in the meantime.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from rich.console import Console

from noosphere.datafiles import describe
from noosphere.errors import UnknownNameError, UsageError
from noosphere.human import AnswerBook, Channel, TerminalChannel, ViewerChannel
from noosphere.human.backend import QUESTION_ID_CHARS
from noosphere.llm import CallCache, Model
from noosphere.printable import markup_safe
from noosphere.replay import Replay
from noosphere.runs import Run
from noosphere.society import People, Society
from noosphere.society.config import build_society, has_people, saved_society_spec
from noosphere.society.spec import SocietySpec
from noosphere.trace import Trace

CHANNELS = ("terminal", "viewer")
HumanOption = Annotated[str, typer.Option(
    "--human", help="society: where its people (members with human: true) answer: terminal, or viewer (the "
                    "text box of `noosphere view RUN`, which may be opened any time, even while the run is stopped)")]
ResumeAskOption = Annotated[Path | None, typer.Option(
    "--resume", help="society: go on with a run that stopped (waiting for a person, interrupted, killed) from its "
                     "run folder, with its saved settings; turns already taken are not asked again")]
Opener = Callable[[str, Trace, CallCache], Model]
"""Opens a model id for a member, reporting into the given trace and cache (and the run's ledger)."""


def check_channel(human: str) -> None:
    if human not in CHANNELS:
        raise UnknownNameError("place for people to answer (--human)", human, CHANNELS)


class SavedAsk(BaseModel):
    """What going on with a society run needs of its `config.json` besides the society (edited by hand, say)."""

    model_config = ConfigDict(extra="allow", strict=True)
    query: str = Field(min_length=1)
    model: str
    seed: int
    max_tokens: int = Field(default=512, ge=1)
    cache: bool = True
    text: list[str] | None = None
    media: list[str] | None = None


def saved_society_run(folder: Path) -> tuple[dict[str, Any], SocietySpec]:
    """A society run's saved `ask` settings and society, checked: only an unfinished society run can be resumed,
    and one whose config.json no longer reads as one is refused before it is reopened."""
    saved = Run.saved_config(folder)
    if saved.get("command") != "ask" or saved.get("system") != "society" or not isinstance(saved.get("society"), dict):
        raise UsageError(f"{folder} is not a society run of `noosphere ask`: --resume goes on with those")
    try:
        status = json.loads((folder / "result.json").read_text(encoding="utf-8")).get("status")
    except (OSError, ValueError, AttributeError):
        status = "running"  # killed before it wrote any result
    if status == "ok":
        raise UsageError(f"{folder} finished already (status ok): there is nothing to resume")
    try:
        SavedAsk.model_validate(saved)
    except ValidationError as exc:
        raise UsageError(f"{folder} is not a society run that can be resumed (config.json: "
                         f"{describe(exc, 'the settings of a society run')})") from None
    return saved, saved_society_spec(saved["society"], str(folder / "config.json"))


@dataclass
class SocietySession:
    """One session of a society run: the society, built to replay what earlier sessions did, and how its
    people are asked."""

    society: Society
    replay: Replay
    people: list[str]
    channel: Channel | None

    def close(self) -> None:
        self.replay.close()


def open_session(run: Run, spec: SocietySpec, open_member: Opener, default_model: str, *, human: str,
                 resuming: bool, fallback: CallCache | None, console: Console) -> SocietySession:
    book = AnswerBook(run.directory / "human")
    replay = Replay(run.trace, run.directory, resuming=resuming, fallback=fallback,
                    replays=lambda key: book.forfeited(key[:QUESTION_ID_CHARS]))
    people = has_people(spec)
    channel: Channel | None = None
    if people:
        channel = TerminalChannel(sys.stdin, console) if human == "terminal" else ViewerChannel(book)
    society = build_society(
        spec, lambda model_id: open_member(model_id, replay.trace, replay.cache), default_model,
        paintings=run.directory / "paintings",
        people=People(channel, book, lambda backend: Model(backend, trace=replay.trace, ledger=run.ledger,
                                                           cache=replay.cache)) if channel is not None else None)
    if people and human == "viewer":
        console.print(f"{markup_safe(', '.join(people))} answer in the viewer: "
                      f"[bold]noosphere view {markup_safe(run.directory)}"
                      "[/] (a text box shows each question)", highlight=False, soft_wrap=True)
    return SocietySession(society, replay, people, channel)


def tell_stopped(console: Console, run: Run) -> None:
    console.print(f"stopped; the run folder keeps every turn taken. Go on with: [bold]noosphere ask --resume "
                  f"{markup_safe(run.directory)}[/]", highlight=False, soft_wrap=True)
