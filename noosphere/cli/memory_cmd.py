"""`noosphere memory show|reset DIR`: look into, or empty, an agent's persistent memory."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from noosphere.memory import MemoryStore
from noosphere.memory.check import check_memory, check_writable
from noosphere.printable import markup_safe
from noosphere.runs import LOCK_FILE, lock_folder

DirArgument = Annotated[Path, typer.Argument(help="a memory folder (it holds memory.sqlite)")]


def _existing(folder: Path) -> MemoryStore:
    """The memory in `folder`, checked whole (and writable, as `reset` empties it) before anything reads or writes
    it."""
    check_memory(folder)
    check_writable(folder)
    return MemoryStore(folder)


def _run_held(folder: Path) -> Any:
    """The lock of the run whose memory `folder` is (`RUN/memory`), taken for the reset, or None for a memory of no
    run: a run playing with it refuses it, as it refuses a second process resuming it."""
    run = folder.resolve().parent
    return lock_folder(run) if folder.resolve().name == "memory" and (run / LOCK_FILE).exists() else None


def add_memory(app: typer.Typer) -> None:
    memory_app = typer.Typer(help="Inspect or reset a persistent memory folder.", no_args_is_help=True)
    app.add_typer(memory_app, name="memory")

    @memory_app.command("show")
    def show(folder: DirArgument,
             episodes: Annotated[int, typer.Option(min=1, help="latest episodes to list")] = 10,
             rules: Annotated[int, typer.Option(min=0, help="latest learned rules to list")] = 10) -> None:
        """Episodes (task, outcome, actions), learned rules and their clusters."""
        # tasks, rules and clusters were written by a model: shown as text, their control characters as escapes
        store = MemoryStore(folder, read_only=True)  # checked whole, then read: the file is left byte for byte
        console = Console(emoji=False)
        stored = store.episodes()
        learned = store.concepts()
        won = sum(e.won for e in stored)
        console.print(f"{len(stored)} episodes ({won} solved), {len(learned)} concepts, "
                      f"{len(store.clusters())} clusters", highlight=False)
        table = Table(title="latest episodes")
        for column in ("id", "task", "type", "outcome", "actions"):
            table.add_column(column)
        for episode in stored[-episodes:]:
            table.add_row(str(episode.id), markup_safe(episode.task), markup_safe(episode.kind),
                          "solved" if episode.won else "failed", str(episode.actions))
        console.print(table)
        if learned and rules:  # the rules themselves: a run clusters them only when a game begins
            console.print(f"[bold]latest learned rules[/] ({min(rules, len(learned))} of {len(learned)}):",
                          highlight=False)
            for rule in learned[-rules:]:
                console.print(f"- {markup_safe(rule)}", highlight=False)
        for cluster in store.clusters():
            console.print(f"[bold]cluster {cluster.label}[/] ({cluster.size}): {markup_safe(cluster.representative)}",
                          highlight=False)

    @memory_app.command("reset")
    def reset(folder: DirArgument, yes: Annotated[bool, typer.Option("--yes", help="do not ask")] = False) -> None:
        """Forget every episode, concept and cluster in FOLDER."""
        store = _existing(folder)
        held = _run_held(folder)  # a run playing with this memory would go on with it emptied under it
        if not yes and not typer.confirm(f"Forget everything in {folder}?"):
            raise typer.Exit(1)
        try:
            store.reset()
        finally:
            if held is not None:
                held.close()
        Console(emoji=False).print(f"memory at {markup_safe(folder)} is empty", highlight=False)
