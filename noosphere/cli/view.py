"""`noosphere view RUN` serves a run's page on loopback; `noosphere report RUN -o FILE.html` writes it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from noosphere.errors import UsageError
from noosphere.printable import markup_safe
from noosphere.viewer import serve, write_page
from noosphere.viewer.bundle import load_bundle
from noosphere.viewer.server import DEFAULT_HOST, DEFAULT_PORT

RunArgument = Annotated[Path, typer.Argument(help="a run folder (runs/<time>-<id>)")]
CompareOption = Annotated[Path | None, typer.Option(
    "--compare", help="a second run folder to set side by side (two benchmark runs, say)")]


def add_view(app: typer.Typer) -> None:
    @app.command()
    def view(
        run: RunArgument,
        port: Annotated[int, typer.Option(min=0, max=65535, help="port to listen on (0: any free port)")] = (
            DEFAULT_PORT),
        host: Annotated[str, typer.Option(help="address to bind; the default keeps the page on this machine")] = (
            DEFAULT_HOST),
        compare: CompareOption = None,
    ) -> None:
        """Watch a run in the browser: serve its page until Ctrl-C."""
        console = Console(emoji=False)
        _check_comparable(run, compare)
        _tell_bad_lines(run, compare)
        try:
            serve(run, host=host, port=port, compare=compare,
                  announce=lambda url: console.print(f"viewing {markup_safe(run)} at {url} (Ctrl-C stops)",
                                                     highlight=False, soft_wrap=True))
        except OSError as exc:  # the port is taken, the host is not this machine's
            raise UsageError(f"cannot listen on {host}:{port} ({exc.strerror or exc})") from None
        console.print("stopped")

    @app.command()
    def report(
        run: RunArgument,
        out: Annotated[Path, typer.Option("-o", "--out", help="the HTML file to write")],
        compare: CompareOption = None,
    ) -> None:
        """Write a run's page as one self-contained HTML file that opens offline."""
        for folder in (run, compare):  # -o RUN/trace.jsonl replaced the trace with the page of it
            if (folder is not None and out.resolve().parent == folder.resolve() and out.exists()
                    and out.suffix != ".html"):
                raise UsageError(f"-o {out} is one of the run's own files: write the page to a new .html file")
        _check_comparable(run, compare)
        _tell_bad_lines(run, compare)
        try:
            written = write_page(run, out, compare)
        except OSError as exc:
            raise UsageError(f"cannot write {out} ({exc.strerror or exc}); give -o a file you can write") from None
        Console(emoji=False).print(f"wrote {markup_safe(written)} ({written.stat().st_size / 1024:.0f} KB)",
                                   highlight=False, soft_wrap=True)


def _benchmark_of(run: Path) -> str | None:
    try:
        config = json.loads((run / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None  # not a run, or a damaged one: the page says so
    return config.get("benchmark") if isinstance(config, dict) else None


def _check_comparable(run: Path, compare: Path | None) -> None:
    """Two benchmark runs set side by side measure the same thing, or their differences mean nothing (MUStARD's
    accuracy less GSM8K's)."""
    if compare is None:
        return
    first, second = _benchmark_of(run), _benchmark_of(compare)
    if first and second and first != second:
        raise UsageError(f"{run} is a {first} run and {compare} a {second} run: --compare sets side by side runs of "
                         "one benchmark")


def _tell_bad_lines(*runs: Path | None) -> None:
    """Lines of a run's trace or results that cannot be read are left out of the page: say which, on stderr."""
    stderr = Console(stderr=True, emoji=False)
    for run in runs:
        if run is not None:
            load_bundle(run, on_bad_line=lambda bad: stderr.print(f"warning: {markup_safe(bad)}", highlight=False,
                                                                  soft_wrap=True))
