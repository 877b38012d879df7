"""The `noosphere` command line.

`make_app` takes the function that opens models, so tests drive the real CLI with a scripted
model instead of patching anything. Errors that noosphere raises on purpose are shown as one line
(exit 2 for usage errors, 1 for runtime faults); a traceback means a bug.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import typer
from rich.console import Console

from noosphere.cli.ask import ModelOpener, add_ask
from noosphere.cli.bench import add_bench
from noosphere.cli.calibration_cmd import add_calibration
from noosphere.cli.memory_cmd import add_memory
from noosphere.cli.models import add_models
from noosphere.cli.serve_cmd import add_serve
from noosphere.cli.trace_cmd import add_trace
from noosphere.cli.view import add_view
from noosphere.errors import NoosphereError, UsageError
from noosphere.llm import open_model
from noosphere.printable import markup_safe


def make_app(opener: ModelOpener = open_model) -> typer.Typer:
    app = typer.Typer(name="noosphere", help="Societies of mind over language models.", add_completion=False,
                      pretty_exceptions_enable=False, no_args_is_help=True)
    add_ask(app, opener)
    add_bench(app, opener)
    add_calibration(app)
    add_models(app)
    add_memory(app)
    add_trace(app)
    add_view(app)
    add_serve(app, opener)
    return app


def check_arguments(args: Sequence[str]) -> None:
    """Arguments that are no UTF-8 text (bytes the shell passed through, which Python keeps as lone surrogates) are
    refused before anything runs: a run keeps its arguments in its UTF-8 trace, which could not be written (a
    traceback, with the run folder left behind)."""
    for arg in args:
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            raise UsageError(f"the argument '{_shown(arg)}' is not UTF-8 text; give it in UTF-8") from None


def _shown(arg: str) -> str:
    """The argument as typed, its stray bytes as \\xNN."""
    try:
        return arg.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate no byte became (a Python caller's string)
        return arg.encode("utf-8", "backslashreplace").decode("utf-8")


def run(app: typer.Typer, args: Sequence[str], *, stderr: Console | None = None) -> int:
    """Run the CLI and return its exit code, turning noosphere errors into one clear line."""
    stderr = stderr or Console(stderr=True, emoji=False)
    try:
        check_arguments(args)
        returned = app(list(args), standalone_mode=False)
        if isinstance(returned, int):  # typer hands back the code of a `typer.Exit` instead of raising it
            return returned
    except typer.Exit as exc:
        return exc.exit_code
    except typer.Abort:
        stderr.print("aborted")
        return 130
    except typer.TyperException as exc:  # typer's parser: unknown option, missing argument, bad value
        show = getattr(exc, "show", None)
        if show is None:
            stderr.print(f"[bold red]error:[/] {markup_safe(exc.format_message())}", highlight=False, soft_wrap=True,
                         emoji=False)
        else:
            show()
        return exc.exit_code
    except NoosphereError as exc:
        # a message may quote data (a file's line, a model's reply), brackets and control characters included: shown
        # as written, a control character as its escape
        stderr.print(f"[bold red]error:[/] {markup_safe(exc)}", highlight=False, soft_wrap=True, emoji=False)
        return 2 if isinstance(exc, UsageError) else 1
    return 0


def main() -> None:
    sys.exit(run(make_app(), sys.argv[1:]))
