"""`noosphere models`: the known model ids and whether each one's weights are installed."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.table import Table

from noosphere.llm import DEFAULT_MODEL, known_models


def _state(installed: bool | None) -> str:
    return "-" if installed is None else "[green]yes[/]" if installed else "[red]no[/]"


def add_models(app: typer.Typer) -> None:
    @app.command()
    def models() -> None:
        """List known model ids, which are installed, and how to install the others."""
        table = Table(title="models")
        table.add_column("id", no_wrap=True)
        table.add_column("description")
        table.add_column("installed", no_wrap=True)
        table.add_column("install with", overflow="fold")
        for row in known_models():
            marker = " (default)" if row.model_id == DEFAULT_MODEL else ""
            table.add_row(row.model_id + marker, row.description,
                          _state(row.installed), "" if row.installed else row.install)
        console = Console(emoji=False)
        if not console.is_terminal:  # piped: 80 columns cut the descriptions short
            console = Console(emoji=False, width=200)
        console.print(table)
