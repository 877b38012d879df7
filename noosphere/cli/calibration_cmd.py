"""`noosphere calibration fit RUN... -o MAP`, `apply MAP RUN` and `cross RUN...`: calibration held out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, cast

import typer
from rich.console import Console
from rich.table import Table

from noosphere.bench.calibration import write_reliability_diagram
from noosphere.bench.calibration_map import (
    METHODS,
    CalibrationMap,
    HeldOut,
    Method,
    RunRows,
    apply_map,
    cross_fitted,
    fit_map,
    read_run,
)
from noosphere.errors import UsageError
from noosphere.printable import markup_safe


def add_calibration(app: typer.Typer) -> None:
    calibration_app = typer.Typer(
        help="Fit a calibration map on some benchmark runs of an engine; measure it on another run of it.",
        no_args_is_help=True)
    app.add_typer(calibration_app, name="calibration")

    @calibration_app.command("fit")
    def fit(
        runs: Annotated[list[Path], typer.Argument(help="benchmark run folders of one engine, on different items")],
        out: Annotated[Path, typer.Option("-o", "--out", help="the map's JSON file to write")],
        method: Annotated[str, typer.Option(help=f"the map: {' or '.join(METHODS)}")] = "platt",
    ) -> None:
        """Fit a map of the runs' confidences to how often they are right (Platt scaling, isotonic steps, or
        Platt scaling with its penalty chosen by cross-validation)."""
        _outside(out, runs, "-o")
        chosen = _method(method)
        calibration_map = fit_map([_read(run) for run in runs], chosen)
        calibration_map.save(out)
        Console(emoji=False).print(
            f"wrote {markup_safe(out)}: {calibration_map.describe()}, fitted on {len(calibration_map.items)} items "
            f"of {len(runs)} run(s), {calibration_map.accuracy:.1%} right", highlight=False, soft_wrap=True)

    @calibration_app.command("apply")
    def apply(
        map_file: Annotated[Path, typer.Argument(metavar="MAP", help="a map written by `noosphere calibration fit`")],
        run: Annotated[Path, typer.Argument(help="a run of the same engine on other items")],
        diagram: Annotated[Path | None, typer.Option(
            help="draw the mapped confidences' reliability diagram here (.png or .svg)")] = None,
        as_json: Annotated[bool, typer.Option("--json", help="print the figures as JSON")] = False,
    ) -> None:
        """Map a run's confidences through the map and measure them, beside the run's own."""
        if diagram is not None:
            _outside(diagram, [run], "--diagram")
        calibration_map = CalibrationMap.load(map_file)
        rows = _read(run)
        held = apply_map(calibration_map, rows)
        if diagram is not None:
            write_reliability_diagram(held.mapped_confidences, rows.correct, diagram,
                                      f"{run.resolve().name} · held-out {calibration_map.method} map")
        console = Console(emoji=False)
        if as_json:
            console.print_json(json.dumps(_figures(held)))
            return
        console.print(_table(held, run.resolve().name), soft_wrap=True)
        console.print(f"map fitted on {len(calibration_map.items)} items of {len(calibration_map.runs)} run(s); "
                      f"{held.raw.n} items of {markup_safe(run.resolve().name)}, none of them in the fit.",
                      highlight=False, soft_wrap=True)
        if diagram is not None:
            console.print(f"wrote {markup_safe(diagram)}", highlight=False, soft_wrap=True)

    @calibration_app.command("cross")
    def cross(
        runs: Annotated[list[Path], typer.Argument(help="two or more benchmark run folders of one engine, on "
                                                        "different items")],
        method: Annotated[str, typer.Option(help=f"the map: {' or '.join(METHODS)}")] = "platt",
        diagram: Annotated[Path | None, typer.Option(
            help="draw the mapped confidences' reliability diagram here (.png or .svg)")] = None,
        as_json: Annotated[bool, typer.Option("--json", help="print the figures as JSON")] = False,
    ) -> None:
        """Map each run by a map fitted on the other runs, and measure every mapped item together."""
        chosen = _method(method)
        if diagram is not None:
            _outside(diagram, runs, "--diagram")
        rows = [_read(run) for run in runs]
        held = cross_fitted(rows, chosen)
        if diagram is not None:
            write_reliability_diagram(held.mapped_confidences, [t for r in rows for t in r.correct], diagram,
                                      f"{len(rows)} runs, each through a {chosen} map fitted on the others")
        console = Console(emoji=False)
        if as_json:
            console.print_json(json.dumps(_figures(held)))
            return
        console.print(_table(held, f"{len(rows)} runs, each mapped by the others"), soft_wrap=True)
        article = "an" if chosen == "isotonic" else "a"
        console.print(f"{held.raw.n} items of {len(rows)} runs; each run mapped by {article} {chosen} map fitted on "
                      "the other runs, none of its items in that fit.", highlight=False, soft_wrap=True)
        if diagram is not None:
            console.print(f"wrote {markup_safe(diagram)}", highlight=False, soft_wrap=True)


def _method(method: str) -> Method:
    if method not in METHODS:
        raise UsageError(f"--method {method!r}: give one of {', '.join(METHODS)}")
    return cast(Method, method)


def _outside(path: Path, runs: list[Path], option: str) -> None:
    """Refuse an output inside a run folder: the run's own files live there."""
    for run in runs:
        if run.resolve() in path.resolve().parents:
            raise UsageError(f"{option} {path} is inside the run folder {run}: write it elsewhere")


def _read(run: Path) -> RunRows:
    """The run's rows, telling on stderr of lines that could not be read (left out)."""
    rows = read_run(run)
    warnings = Console(stderr=True, emoji=False)
    for line in rows.bad_lines:
        warnings.print(f"warning: {markup_safe(line)} (left out)", highlight=False, soft_wrap=True)
    return rows


def _figures(held: HeldOut) -> dict[str, object]:
    """The figures of both confidences, without the in-run recalibration (not run on these)."""
    floor = None if held.floor is None else [round(f, 4) for f in held.floor]
    shown = [{k: v for k, v in c.as_dict().items() if k not in ("ece_recalibrated", "ece_floor")}
             for c in (held.raw, held.mapped)]
    return {"raw": shown[0], "mapped": shown[1], "mapped_floor": floor, "within_floor": held.within_floor}


def _figure(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _table(held: HeldOut, name: str) -> Table:
    table = Table(title=f"{name}: confidence as written and through the map")
    for column in ("", "ECE", "Brier", "AUROC", "mean confidence", "accuracy"):
        table.add_column(column)
    for name, result in (("as written", held.raw), ("mapped", held.mapped)):
        table.add_row(name, _figure(result.ece), _figure(result.brier), _figure(result.auroc),
                      _figure(result.mean_confidence), _figure(result.accuracy))
    if held.floor is not None:
        table.caption = (f"a perfectly calibrated confidence of the mapped values shows ECE {held.floor[0]:.3f} on "
                         f"these items, up to {held.floor[1]:.3f} in 95 % of draws "
                         f"({'within' if held.within_floor else 'above'} it)")
    return table
