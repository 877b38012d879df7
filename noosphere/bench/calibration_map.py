"""A calibration map fitted on some runs of an engine and applied to another run of it, on items it never saw.

Leave-one-out Platt scaling (`calibration.recalibrated`) estimates, inside one run, what a map learnt on the other
items would do. Deployed, an engine's confidence is mapped the other way round: the map is fitted once, on dev
runs, and applied to new items. `fit_map` fits one on the rows of one or more runs, by one of two `METHODS`:

- `platt`: Platt scaling, p -> sigmoid(slope * logit(p) + intercept), a logistic regression on logit(p) (p clipped
  to [1e-4, 1 - 1e-4]). Two parameters; but a confidence of exactly 1 (every sample agreed) sits at logit 9.2, far
  from the rest, and the one slope cannot bring it down without flattening everything else.
- `isotonic`: the monotone step map of least squared error (scikit-learn's `IsotonicRegression`, clipped to the
  fitted range), stored as its steps' corners and interpolated between them. It maps each confidence level to
  the accuracy the fit saw there, so "every sample agreed" gets its own accuracy; it needs more items per step.
- `platt-cv`: Platt scaling with an L2 penalty on the slope whose strength is chosen by stratified k-fold log loss
  on the fit's own rows (`CV_STRENGTHS`, k = 5 or the fewer of its right and wrong answers). Where the confidence
  carries no signal the held-out folds pick a strong penalty and the map is nearly the fit's accuracy for every
  item; where it carries signal they pick a weak one and it is Platt scaling. The other two maps fit their
  parameters freely, so on 20-40 items of a score that tells nothing they fit noise.

`apply_map` maps another run's confidences and measures them (`HeldOut`).

A map belongs to one engine: the run's `config.json` less what names the run and where its items start
(`ENGINE_IGNORED`: the seed, `offset` and `limit`, the data path, the parallelism). A map fitted on one engine's
confidence says nothing about another's, so fitting on runs of two engines, or applying a map to a run of another
engine, is refused and the keys that differ are named. A key one config lacks stands for the value the run played
(`noosphere.bench.saved.ABSENT_MEANS`: an option added later, or saved only when given), else null. Keys that
choose items some other way (BFCL's `categories`, a game suite's `worlds`) stay part of the engine, so runs that
differ in them are not paired. Applying a map to an item
it was fitted on is refused too: that is not held out. Items are told apart by their ids.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from noosphere.bench.calibration import (
    RECALIBRATION_MINIMUM,
    Calibration,
    calibrate,
    checked,
    ece_noise_floor,
    logit_feature,
)
from noosphere.bench.saved import saved_value
from noosphere.datafiles import describe
from noosphere.errors import UsageError
from noosphere.runs import load_done

ENGINE_IGNORED = frozenset({"run_id", "command", "seed", "limit", "offset", "data", "society_file", "matched_run",
                            "parallel", "first_seed"})
"""Keys of a run's config that do not change the engine: which run it was and which items it scored."""
FORMAT = "noosphere-calibration-map"
SHOWN_IDS = 5
FLOOR_TOLERANCE = 1e-9
"""With few confidence levels an ECE and the floor's percentile can be the same number up to rounding."""
Method = Literal["platt", "isotonic", "platt-cv"]
METHODS: tuple[str, ...] = ("platt", "isotonic", "platt-cv")
CV_STRENGTHS: tuple[float, ...] = tuple(float(10.0 ** power) for power in range(-4, 5))
"""The inverse penalties `platt-cv` chooses among (scikit-learn's C, 1e-4 to 1e4): the map of the one with the least
held-out log loss is fitted on every row; a tie goes to the stronger penalty, the simpler map."""
CV_FOLDS = 5


def engine_of(config: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a run's config that says which engine gave its confidences."""
    return {key: value for key, value in config.items() if key not in ENGINE_IGNORED}


def engine_difference(first: Mapping[str, Any], second: Mapping[str, Any]) -> list[str]:
    """The keys on which two engines differ, sorted; a key one lacks stands for the value the run played
    (`noosphere.bench.saved.ABSENT_MEANS`), else null."""
    return sorted(key for key in set(first) | set(second) if saved_value(first, key) != saved_value(second, key))


@dataclass(frozen=True)
class RunRows:
    """The rows of one benchmark run that carry a confidence."""

    folder: Path
    engine: Mapping[str, Any]
    ids: tuple[str, ...]
    confidences: tuple[float, ...]
    correct: tuple[bool, ...]
    bad_lines: tuple[str, ...] = ()
    """Lines of items.jsonl that could not be read (a line torn by a kill): left out, for the caller to tell."""


class NoConfidence(UsageError):
    """A run none of whose rows carries a confidence: nothing to calibrate."""


def read_run(folder: Path) -> RunRows:
    """A run folder's engine and its rows with a confidence; a `UsageError` for a folder that is no benchmark run or
    a row whose confidence or correctness is not one (naming the file and the item), `NoConfidence` when no row
    carries a confidence."""
    config_path, items = folder / "config.json", folder / "items.jsonl"
    if not config_path.is_file() or not items.is_file():
        raise UsageError(f"{folder} is not a benchmark run: it needs config.json and items.jsonl")
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise UsageError(f"{config_path} cannot be read as JSON ({exc})") from None
    if not isinstance(config, dict):
        raise UsageError(f"{config_path} is not a JSON object")
    bad: list[str] = []
    rows = [row for row in load_done(items, on_bad_line=lambda line: bad.append(str(line))).values()
            if row.get("confidence") is not None]
    if not rows:
        raise NoConfidence(f"{folder}: no row of items.jsonl carries a confidence, so there is nothing to calibrate")
    for row in rows:
        try:
            checked([row["confidence"]], [row.get("correct")])
        except UsageError as exc:
            raise UsageError(f"{items}: item {row['id']}: {exc}") from None
    return RunRows(folder, engine_of(config), tuple(str(row["id"]) for row in rows),
                   tuple(float(row["confidence"]) for row in rows), tuple(bool(row["correct"]) for row in rows),
                   tuple(bad))


class MapFile(BaseModel):
    """A calibration map as written to disk (`CalibrationMap.save`), checked when read."""

    model_config = ConfigDict(extra="forbid")

    format: Literal["noosphere-calibration-map"]
    version: Literal[1]
    method: Method
    parameters: list[float]
    """platt and platt-cv: [slope, intercept]; isotonic: the steps' corners, [x1, ..., xk, y1, ..., yk], x rising."""
    engine: dict[str, Any]
    runs: list[str]
    items: list[str]
    accuracy: float

    @model_validator(mode="after")
    def _parameters_fit_method(self) -> MapFile:
        values = self.parameters
        if not all(math.isfinite(v) for v in values):
            raise ValueError("parameters must be finite numbers")
        if self.method != "isotonic" and len(values) != 2:
            raise ValueError(f"a {self.method} map has 2 parameters (slope, intercept), not {len(values)}")
        if self.method == "isotonic":
            half = len(values) // 2
            xs, ys = values[:half], values[half:]
            if not values or len(values) % 2 or any(b < a for a, b in pairwise(xs)):
                raise ValueError("an isotonic map's parameters are k rising x values, then k y values")
            if any(not 0 <= y <= 1 for y in ys) or any(b < a for a, b in pairwise(ys)):
                raise ValueError("an isotonic map's y values are probabilities that never fall")
        return self


@dataclass(frozen=True)
class CalibrationMap:
    """A map of confidences fitted on `items` of `runs` of one `engine` (see the module's `METHODS`)."""

    method: Method
    parameters: tuple[float, ...]
    engine: Mapping[str, Any]
    runs: tuple[str, ...]
    items: frozenset[str]
    accuracy: float

    def apply(self, confidences: Sequence[float]) -> list[float]:
        confidence = np.asarray(confidences, dtype=float)
        if self.method == "isotonic":
            half = len(self.parameters) // 2
            return np.interp(confidence, self.parameters[:half], self.parameters[half:]).tolist()
        slope, intercept = self.parameters
        score = slope * logit_feature(confidence)[:, 0] + intercept
        return (1.0 / (1.0 + np.exp(-score))).tolist()

    def describe(self) -> str:
        if self.method != "isotonic":
            return f"p -> sigmoid({self.parameters[0]:.3f} * logit(p) {self.parameters[1]:+.3f})"
        return f"an isotonic step map of {len(self.parameters) // 2} corners"

    def save(self, path: Path) -> Path:
        data = MapFile(format=FORMAT, version=1, method=self.method, parameters=list(self.parameters),
                       engine=dict(self.engine), runs=list(self.runs), items=sorted(self.items),
                       accuracy=self.accuracy)
        try:
            path.write_text(data.model_dump_json(indent=2) + "\n", encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot write {path} ({exc.strerror or exc})") from None
        return path

    @classmethod
    def load(cls, path: Path) -> CalibrationMap:
        try:
            data = MapFile.model_validate_json(path.read_bytes())
        except OSError as exc:
            raise UsageError(f"cannot read the calibration map {path} ({exc.strerror or exc})") from None
        except ValidationError as exc:
            raise UsageError(f"{path} is not a calibration map ({describe(exc, 'a calibration map')}); write one "
                             "with `noosphere calibration fit`") from None
        return cls(data.method, tuple(data.parameters), data.engine, tuple(data.runs), frozenset(data.items),
                   data.accuracy)


def fit_map(runs: Sequence[RunRows], method: Method = "platt") -> CalibrationMap:
    """A map fitted by `method` on every row with a confidence of `runs`: runs of one engine, on different items."""
    if method not in METHODS:
        raise UsageError(f"unknown calibration method {method!r}: one of {', '.join(METHODS)}")
    if not runs:
        raise UsageError("a calibration map is fitted on at least one run")
    first = runs[0]
    for run in runs[1:]:
        if differ := engine_difference(first.engine, run.engine):
            raise UsageError(f"{run.folder} and {first.folder} are runs of different engines (they differ in "
                             f"{', '.join(differ)}): a map is fitted on one engine's confidences")
    folders = [run.folder.resolve() for run in runs]
    if len(set(folders)) < len(folders):
        raise UsageError("a run folder is given twice: give each run once")
    seen: set[str] = set()
    for run in runs:
        if twice := sorted(seen.intersection(run.ids)):
            raise UsageError(f"{run.folder} scores items another of the runs also scores ({_shown(twice)}): fit on "
                             "runs of different items, so no item counts twice")
        seen.update(run.ids)
    confidence = np.array([c for run in runs for c in run.confidences])
    truth = np.array([t for run in runs for t in run.correct], dtype=bool)
    if min(int(truth.sum()), int((~truth).sum())) < RECALIBRATION_MINIMUM:
        raise UsageError(f"a calibration map needs at least {RECALIBRATION_MINIMUM} right and "
                         f"{RECALIBRATION_MINIMUM} wrong answers; these runs have {int(truth.sum())} right and "
                         f"{int((~truth).sum())} wrong")
    if method == "platt":
        parameters: tuple[float, ...] = _logistic(confidence, truth, 1e6)
    elif method == "platt-cv":
        parameters = _logistic(confidence, truth, _chosen_strength(confidence, truth))
    else:
        from sklearn.isotonic import IsotonicRegression

        steps = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(confidence, truth.astype(float))
        parameters = (*map(float, steps.X_thresholds_), *map(float, steps.y_thresholds_))
    return CalibrationMap(method, parameters, dict(first.engine), tuple(str(run.folder) for run in runs),
                          frozenset(seen), float(truth.mean()))


def _logistic(confidence: np.ndarray, truth: np.ndarray, strength: float) -> tuple[float, float]:
    """(slope, intercept) of a logistic regression of `truth` on logit(confidence), its slope penalised at inverse
    `strength` (scikit-learn's lbfgs leaves the intercept unpenalised)."""
    from sklearn.linear_model import LogisticRegression

    fit = LogisticRegression(C=strength).fit(logit_feature(confidence), truth)
    return float(fit.coef_[0, 0]), float(fit.intercept_[0])


def _chosen_strength(confidence: np.ndarray, truth: np.ndarray) -> float:
    """The `CV_STRENGTHS` value whose maps, each fitted on k-1 folds, give the fold left out the least log loss."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold

    folds = min(CV_FOLDS, int(truth.sum()), int((~truth).sum()))
    feature = logit_feature(confidence)
    losses = []
    for strength in CV_STRENGTHS:
        loss = 0.0
        for fit_rows, test_rows in StratifiedKFold(folds).split(feature, truth):
            fit = LogisticRegression(C=strength).fit(feature[fit_rows], truth[fit_rows])
            right = np.clip(fit.predict_proba(feature[test_rows])[:, 1], 1e-15, 1 - 1e-15)
            loss -= float(np.where(truth[test_rows], np.log(right), np.log1p(-right)).sum())
        losses.append(loss)
    best = min(losses)
    return next(s for s, loss in zip(CV_STRENGTHS, losses, strict=True) if loss <= best + 1e-9)


@dataclass(frozen=True)
class HeldOut:
    """A run's confidences as written (`raw`) and through a map fitted on other items (`mapped`), with the ECE a
    perfectly calibrated confidence of the mapped values would show on these items (mean, 95th percentile)."""

    raw: Calibration
    mapped: Calibration
    floor: tuple[float, float] | None
    mapped_confidences: tuple[float, ...] = ()

    @property
    def within_floor(self) -> bool | None:
        if self.floor is None or self.mapped.ece is None:
            return None
        return self.mapped.ece <= self.floor[1] + FLOOR_TOLERANCE


def apply_map(calibration_map: CalibrationMap, run: RunRows) -> HeldOut:
    """`run`'s calibration before and after the map; refused for a run of another engine or on fitted items."""
    if differ := engine_difference(calibration_map.engine, run.engine):
        raise UsageError(f"the map was fitted on another engine's runs than {run.folder} (they differ in "
                         f"{', '.join(differ)}): a map only means something for the engine it was fitted on")
    if seen := sorted(calibration_map.items.intersection(run.ids)):
        raise UsageError(f"{len(seen)} of {run.folder}'s items were in the map's fit ({_shown(seen)}): apply it to "
                         "items it never saw, or fit it on other runs")
    mapped = calibration_map.apply(run.confidences)
    return HeldOut(calibrate(run.confidences, run.correct, recalibrate=False),
                   calibrate(mapped, run.correct, recalibrate=False), ece_noise_floor(mapped), tuple(mapped))


def cross_fitted(runs: Sequence[RunRows], method: Method = "platt") -> HeldOut:
    """Cross-fitting with the runs as folds: each run's confidences mapped by a map fitted on the other runs, and all
    the mapped rows measured together. Every item is mapped by a map that never saw it, and the ECE is measured on
    every item of the runs, where one run alone leaves a noise floor too high to tell 0.10 apart. Runs of one engine,
    on different items (as `fit_map` checks), at least two."""
    if len(runs) < 2:
        raise UsageError("cross-fitting needs at least two runs: each is mapped by a map fitted on the others")
    fit_map(runs, method)  # one engine, each run once, no item twice: refused before any fold
    confidences: list[float] = []
    correct: list[bool] = []
    mapped: list[float] = []
    for at, run in enumerate(runs):
        mapped += fit_map([*runs[:at], *runs[at + 1:]], method).apply(run.confidences)
        confidences += run.confidences
        correct += run.correct
    return HeldOut(calibrate(confidences, correct, recalibrate=False), calibrate(mapped, correct, recalibrate=False),
                   ece_noise_floor(mapped), tuple(mapped))


def engine_folds(runs: Sequence[RunRows]) -> list[tuple[RunRows, ...]]:
    """The runs grouped by engine, each group the runs that share no item (largest first, then by folder): the folds
    `cross_fitted` takes. Groups of one run are left out."""
    groups: list[list[RunRows]] = []
    for run in runs:
        group = next((g for g in groups if not engine_difference(g[0].engine, run.engine)), None)
        if group is None:
            groups.append([run])
        else:
            group.append(run)
    folds = []
    for group in groups:
        chosen: list[RunRows] = []
        for run in sorted(group, key=lambda r: (-len(r.ids), str(r.folder))):
            if not any(set(run.ids) & set(c.ids) for c in chosen):
                chosen.append(run)
        if len(chosen) >= 2:
            folds.append(tuple(chosen))
    return folds


def held_out_fits(runs: Sequence[RunRows]) -> dict[Path, tuple[RunRows, ...]]:
    """For each run, the other runs of its engine that a map is fitted on: those whose items it does not share,
    taken largest first while they share no item among themselves. Runs with none are left out."""
    fits: dict[Path, tuple[RunRows, ...]] = {}
    for run in runs:
        others = sorted((o for o in runs if o is not run and not engine_difference(o.engine, run.engine)
                         and not set(o.ids) & set(run.ids)), key=lambda o: (-len(o.ids), str(o.folder)))
        chosen: list[RunRows] = []
        for other in others:
            if not any(set(other.ids) & set(c.ids) for c in chosen):
                chosen.append(other)
        if chosen:
            fits[run.folder] = tuple(chosen)
    return fits


def _shown(ids: Sequence[str]) -> str:
    more = f" and {len(ids) - SHOWN_IDS} more" if len(ids) > SHOWN_IDS else ""
    return ", ".join(ids[:SHOWN_IDS]) + more
