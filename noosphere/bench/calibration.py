"""Calibration of a system's confidence against its correctness: ECE, Brier score, AUROC, reliability diagram.

Every function takes `confidences` (the system's probability that its answer is right, each in [0, 1];
anything else, NaN included, is refused with a `UsageError`) and `correct` (one truth value per item).

- **ECE** (expected calibration error, Guo et al. 2017): the items fall into 10 equal-width bins of
  confidence, [0, 0.1), [0.1, 0.2), ..., [0.9, 1.0] (the last bin includes 1.0); ECE is the mean over
  items of |accuracy of the item's bin - mean confidence of the item's bin|, i.e. the sum over bins of
  (items in bin / items) x |accuracy - mean confidence|. 0 is perfectly calibrated; empty bins add nothing.
- **Brier score**: the mean of (confidence - correct)^2, correct as 1 or 0. 0 is best; always saying 0.5
  scores 0.25.
- **AUROC** of confidence against correctness: the probability that a right answer has a higher
  confidence than a wrong one, ties counting one half (scikit-learn's `roc_auc_score`). 0.5 is no
  signal. It is undefined (None, with a note saying why) when every answer is right or every one wrong.
- **95 % interval for AUROC**: DeLong's method by default (DeLong, DeLong & Clarke-Pearson 1988, with
  midranks for ties as in Sun & Xu 2014): a normal interval around the AUROC from its DeLong variance,
  clipped to [0, 1]; deterministic, and it needs at least two right and two wrong answers. It is
  degenerate (zero width) at AUROC 0 or 1, and at 0.5 when every confidence is the same (as when a small model
  says 1.0 every time): a constant separates nothing in any sample, so [0.5, 0.5] is what it shows.
  `method="bootstrap"` instead resamples right and wrong answers apart (stratified, so every resample has both)
  `resamples` times with `numpy.random.default_rng(seed)` and takes the 2.5th and 97.5th percentiles.

`calibration_summary` gives all of it as a dict; `write_reliability_diagram` draws the diagram (matplotlib,
imported when called). `calibrate_run` is what a benchmark report uses: it reads the `confidence` of each
item row (rows without one, such as failed items, are left out and counted) and draws `reliability.png`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from statistics import NormalDist
from typing import Any, Literal

import numpy as np

from noosphere.errors import MissingDependencyError, UsageError

BINS = 10
"""Equal-width confidence bins of ECE and of the reliability diagram."""
LEVEL = 0.95
RESAMPLES = 2000
DIAGRAM = "reliability.png"
"""The diagram a benchmark run writes next to its report.md."""
IntervalMethod = Literal["delong", "bootstrap"]
INTERVAL_METHODS: tuple[str, ...] = ("delong", "bootstrap")


@dataclass(frozen=True)
class ReliabilityBin:
    """One confidence bin: [lower, upper) (the last one closed), its items, their mean confidence and accuracy
    (None for an empty bin)."""

    lower: float
    upper: float
    count: int
    confidence: float | None
    accuracy: float | None


@dataclass(frozen=True)
class Calibration:
    """Calibration of `n` items. A figure that is undefined is None, and `notes` says why."""

    n: int
    accuracy: float | None
    mean_confidence: float | None
    ece: float | None
    brier: float | None
    auroc: float | None
    auroc_ci95: tuple[float, float] | None
    interval_method: str
    bins: tuple[ReliabilityBin, ...]
    notes: tuple[str, ...] = ()
    ece_recalibrated: float | None = None
    """ECE after Platt scaling fitted leave-one-out (see `recalibrated`): what the confidence is worth once
    mapped through a calibration learnt on other items; None when there are too few right or wrong ones."""
    ece_floor: tuple[float, float] | None = None
    """The ECE a perfectly calibrated confidence would still show on these items (`ece_noise_floor` of the
    recalibrated confidences): its mean and 95th percentile. An ECE inside it is sampling noise, not
    miscalibration; a target below it cannot be shown with this many items. None with the recalibrated ECE."""

    def as_dict(self, digits: int = 4) -> dict[str, Any]:
        """Plain JSON-able values, rounded to `digits`."""
        def rounded(value: Any) -> Any:
            if isinstance(value, float):
                return round(value, digits)
            if isinstance(value, (list, tuple)):
                return [rounded(v) for v in value]
            if isinstance(value, dict):
                return {k: rounded(v) for k, v in value.items()}
            return value

        data = asdict(self)
        data["bins"] = [asdict(b) for b in self.bins]
        return {key: rounded(value) for key, value in data.items()}


def checked(confidences: Iterable[float], correct: Iterable[bool]) -> tuple[np.ndarray, np.ndarray]:
    """The inputs as arrays (float, bool), or a UsageError: unequal lengths, a confidence that is not a number
    in [0, 1], a correctness that is not a truth value (True/False, 1/0)."""
    values, truths = list(confidences), list(correct)
    if len(values) != len(truths):
        raise UsageError(f"calibration needs one correctness per confidence: {len(values)} confidences, "
                         f"{len(truths)} correctness values")
    for index, value in enumerate(values):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise UsageError(f"confidence {index} is {value!r}, not a number in [0, 1]")
        if not 0.0 <= float(value) <= 1.0:  # NaN fails this too
            raise UsageError(f"confidence {index} is {value!r}, outside [0, 1]")
    for index, truth in enumerate(truths):
        if not isinstance(truth, (bool, np.bool_)) and truth not in (0, 1):
            raise UsageError(f"correctness {index} is {truth!r}, not True or False")
    return np.asarray(values, dtype=float), np.asarray([bool(t) for t in truths], dtype=bool)


def _bin_index(confidence: np.ndarray, bins: int) -> np.ndarray:
    return np.minimum(np.floor(confidence * bins), bins - 1).astype(int)


def reliability_bins(confidences: Iterable[float], correct: Iterable[bool], bins: int = BINS, *,
                     binned_by: Sequence[float] | None = None) -> tuple[ReliabilityBin, ...]:
    """The `bins` equal-width bins of [0, 1] with their items' count, mean confidence and accuracy. `binned_by`
    places each item by another value than its confidence (see `recalibrated_ece`)."""
    confidence, truth = checked(confidences, correct)
    if binned_by is not None:
        place, _ = checked(binned_by, truth.tolist())
    index = _bin_index(confidence if binned_by is None else place, bins)
    out = []
    for b in range(bins):
        members = index == b
        count = int(members.sum())
        out.append(ReliabilityBin(b / bins, (b + 1) / bins, count,
                                  float(confidence[members].mean()) if count else None,
                                  float(truth[members].mean()) if count else None))
    return tuple(out)


def expected_calibration_error(confidences: Iterable[float], correct: Iterable[bool], bins: int = BINS, *,
                               binned_by: Sequence[float] | None = None) -> float | None:
    """ECE over `bins` equal-width bins (see the module's docstring); None without items."""
    table = reliability_bins(confidences, correct, bins, binned_by=binned_by)
    n = sum(b.count for b in table)
    if not n:
        return None
    return float(sum(b.count / n * abs(b.accuracy - b.confidence) for b in table
                     if b.count and b.accuracy is not None and b.confidence is not None))


def brier_score(confidences: Iterable[float], correct: Iterable[bool]) -> float | None:
    """Mean squared difference between confidence and correctness (1 or 0); None without items."""
    confidence, truth = checked(confidences, correct)
    return float(np.mean((confidence - truth) ** 2)) if confidence.size else None


def _undefined_auroc(truth: np.ndarray) -> str | None:
    if not truth.size:
        return "no items"
    if truth.all():
        return "AUROC undefined: every answer is correct"
    if not truth.any():
        return "AUROC undefined: every answer is wrong"
    return None


def auroc(confidences: Iterable[float], correct: Iterable[bool]) -> float | None:
    """Area under the ROC curve of confidence as a predictor of correctness (ties count one half); None when
    there are no items, or all are right or all wrong."""
    confidence, truth = checked(confidences, correct)
    if _undefined_auroc(truth) is not None:
        return None
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(truth, confidence))


def auroc_interval(confidences: Iterable[float], correct: Iterable[bool], *, method: IntervalMethod = "delong",
                   level: float = LEVEL, seed: int = 0, resamples: int = RESAMPLES) -> tuple[float, float] | None:
    """A `level` interval for the AUROC (DeLong, or a seeded stratified percentile bootstrap: see the module's
    docstring); None where it cannot be computed (AUROC undefined; DeLong with fewer than two right or two
    wrong answers)."""
    if method not in INTERVAL_METHODS:
        raise UsageError(f"unknown interval method {method!r}; known: {', '.join(INTERVAL_METHODS)}")
    if not 0.0 < level < 1.0:
        raise UsageError(f"the interval's level must be between 0 and 1, not {level}")
    confidence, truth = checked(confidences, correct)
    if _undefined_auroc(truth) is not None:
        return None
    right, wrong = confidence[truth], confidence[~truth]
    if method == "delong":
        return _delong(right, wrong, level)
    if resamples < 1:
        raise UsageError(f"the bootstrap needs at least one resample, not {resamples}")
    rng = np.random.default_rng(seed)
    samples = np.concatenate([rng.choice(right, size=(resamples, right.size)),
                              rng.choice(wrong, size=(resamples, wrong.size))], axis=1)
    areas = _mann_whitney(samples, right.size)
    tail = (1.0 - level) / 2
    low, high = np.quantile(areas, [tail, 1.0 - tail])
    return float(low), float(high)


def _mann_whitney(samples: np.ndarray, positives: int) -> np.ndarray:
    """AUROC of each row of `samples`, whose first `positives` columns are the right answers' confidences."""
    from scipy.stats import rankdata

    ranks = rankdata(samples, axis=1)
    negatives = samples.shape[1] - positives
    return (ranks[:, :positives].sum(axis=1) - positives * (positives + 1) / 2) / (positives * negatives)


def _delong(right: np.ndarray, wrong: np.ndarray, level: float) -> tuple[float, float] | None:
    from scipy.stats import rankdata

    m, n = right.size, wrong.size
    if m < 2 or n < 2:
        return None
    together = rankdata(np.concatenate([right, wrong]))
    area = (together[:m].sum() - m * (m + 1) / 2) / (m * n)
    # structural components: for each right answer, the share of wrong ones it beats, and the converse
    v_right = (together[:m] - rankdata(right)) / n
    v_wrong = 1.0 - (together[m:] - rankdata(wrong)) / m
    variance = float(np.var(v_right, ddof=1) / m + np.var(v_wrong, ddof=1) / n)
    half = NormalDist().inv_cdf(0.5 + level / 2) * math.sqrt(max(variance, 0.0))
    return max(0.0, float(area) - half), min(1.0, float(area) + half)


def calibrate(confidences: Iterable[float], correct: Iterable[bool], *, interval: IntervalMethod = "delong",
              seed: int = 0, resamples: int = RESAMPLES, recalibrate: bool = True) -> Calibration:
    """Every figure at once, with notes on those that are undefined. `recalibrate=False` leaves out the
    leave-one-out Platt scaling (one fit an item) and its floor, for confidences already mapped."""
    confidence, truth = checked(confidences, correct)
    values, truths = confidence.tolist(), truth.tolist()
    notes = [note] if (note := _undefined_auroc(truth)) is not None else []
    area = auroc(values, truths)
    band = auroc_interval(values, truths, method=interval, seed=seed, resamples=resamples)
    if area is not None and band is None:
        notes.append("no AUROC interval: DeLong's needs at least two right and two wrong answers")
    platt = _platt(values, truths) if recalibrate else None
    mapped = None if platt is None else platt[0]
    if recalibrate and mapped is None and truth.any() and not truth.all():
        notes.append(f"no recalibrated ECE: Platt scaling needs at least {RECALIBRATION_MINIMUM} right and "
                     f"{RECALIBRATION_MINIMUM} wrong answers")
    return Calibration(
        ece_recalibrated=None if platt is None else expected_calibration_error(platt[0], truths, binned_by=platt[1]),
        ece_floor=None if platt is None else ece_noise_floor(platt[1], seed=seed),  # binned as the ECE beside it
        n=int(confidence.size), accuracy=float(truth.mean()) if truth.size else None,
        mean_confidence=float(confidence.mean()) if confidence.size else None,
        ece=expected_calibration_error(values, truths), brier=brier_score(values, truths), auroc=area,
        auroc_ci95=band, interval_method=interval if interval == "delong" else f"bootstrap ({resamples}, seed {seed})",
        bins=reliability_bins(values, truths), notes=tuple(notes))


RECALIBRATION_MINIMUM = 2
"""Right and wrong answers each that Platt scaling needs (every fit then sees both)."""
MAX_LEAVE_ONE_OUT = 1000


def recalibrated(confidences: Sequence[float], correct: Sequence[bool]) -> list[float] | None:
    """The confidences after Platt scaling (a logistic regression on logit(confidence)), each item mapped by a
    fit on the other items (leave-one-out, so no item calibrates itself). No seed and no split: the result
    does not depend on the order of the rows (a random two-fold split moved the ECE of 30 items between 0.06
    and 0.33 with the order alone). Above `MAX_LEAVE_ONE_OUT` items, ten folds of items taken in turn by
    (confidence, correctness) order. None with fewer than `RECALIBRATION_MINIMUM` right or wrong answers."""
    platt = _platt(confidences, correct)
    return None if platt is None else platt[0]


CLIP = 1e-4
"""Confidences are clipped to [CLIP, 1 - CLIP] before their logit: 0 and 1 have none."""


def logit_feature(confidence: np.ndarray) -> np.ndarray:
    """The one feature of Platt scaling: logit(confidence) as a column, the confidence clipped to [CLIP, 1 - CLIP]."""
    clipped = np.clip(confidence, CLIP, 1 - CLIP)
    return np.log(clipped / (1 - clipped)).reshape(-1, 1)


def _platt(confidences: Sequence[float], correct: Sequence[bool]) -> tuple[list[float], list[float]] | None:
    """The `recalibrated` confidences, and for each item the mean of them over the items of its confidence (which
    puts items of equal confidence in one bin)."""
    confidence, truth = checked(confidences, correct)
    if min(int(truth.sum()), int((~truth).sum())) < RECALIBRATION_MINIMUM:
        return None
    from sklearn.linear_model import LogisticRegression

    feature = logit_feature(confidence)
    if truth.size <= MAX_LEAVE_ONE_OUT:
        fold = np.arange(truth.size)
    else:
        fold = np.empty(truth.size, dtype=int)
        fold[np.lexsort((truth, confidence))] = np.arange(truth.size) % 10
    mapped = np.empty(truth.size)
    for k in np.unique(fold):
        train, test = fold != k, fold == k
        if truth[train].all() or not truth[train].any():  # only when the folds are not single items
            mapped[test] = float(truth[train].mean())
            continue
        fit = LogisticRegression(C=1e6).fit(feature[train], truth[train])
        mapped[test] = fit.predict_proba(feature[test])[:, 1]
    # where items tie: their mean mapped value, the same for all of them (see `recalibrated_ece`)
    tied = np.array([mapped[confidence == value].mean() for value in confidence])
    return mapped.tolist(), tied.tolist()


def recalibrated_ece(confidences: Sequence[float], correct: Sequence[bool]) -> float | None:
    """ECE of the `recalibrated` confidences; None where they are.

    Items of equal confidence are binned together, by the mean of their leave-one-out values. A fit without the item
    moves the item's value against its own answer (a right item's down, a wrong one's up, by about 1/n); binned by
    those values, tied items near a bin's edge were sorted into bins by their own correctness. A constant
    confidence 0.5 that is right half the time had a recalibrated ECE of 0.51 that way (right items mapped to 0.487,
    wrong ones to 0.513, two bins); binned together it is 0. Items that do not tie are binned by their own values,
    as before: a simulation of 200 sets of 30 items whose confidence is calibrated gave 0.182 this way against 0.189
    for a map fitted on the 30 and measured on 30 new items; binning every item by a map fitted on all of them
    (tried first) gave 0.134, too good."""
    platt = _platt(confidences, correct)
    return None if platt is None else expected_calibration_error(platt[0], correct, binned_by=platt[1])


ISOTONIC_SPLITS = 200


def isotonic_ece(confidences: Sequence[float], correct: Sequence[bool], *, splits: int = ISOTONIC_SPLITS,
                 seed: int = 0) -> float | None:
    """A second calibrator beside Platt's, for confidences with few distinct values (a vote share of a few samples),
    which a one-feature logistic map fits badly; `benchmarks/calibration_table.py` reports it beside Platt's,
    never instead of it (run reports do not: it costs as much as Platt's leave-one-out again).

    ECE after isotonic regression (a monotone step map of the confidence, clipped to the range it was fitted
    on), each half of the items mapped by a fit on the other half, averaged over `splits` random halvings
    (`numpy.random.default_rng(seed)`) of the items in (confidence, correctness) order, so the figure depends
    neither on the order of the rows nor on one split. Not leave-one-out, as Platt's is: a step map fitted
    without one item moves that item's own step against it (a right item's step down, a wrong one's up), and
    ten bins then sort each step's items by correctness. None with fewer than `RECALIBRATION_MINIMUM` right or
    wrong answers."""
    if splits < 1:
        raise UsageError(f"isotonic_ece needs at least one split, not {splits}")
    confidence, truth = checked(confidences, correct)
    if min(int(truth.sum()), int((~truth).sum())) < RECALIBRATION_MINIMUM:
        return None
    from sklearn.isotonic import IsotonicRegression

    order = np.lexsort((truth, confidence))
    confidence, truth = confidence[order], truth[order]
    rng = np.random.default_rng(seed)
    figures = []
    for _ in range(splits):
        first = rng.permutation(truth.size) < truth.size // 2
        mapped = np.empty(truth.size)
        for test in (first, ~first):
            train = ~test
            if truth[train].all() or not truth[train].any():
                mapped[test] = float(truth[train].mean())
                continue
            steps = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip")
            mapped[test] = steps.fit(confidence[train], truth[train].astype(float)).predict(confidence[test])
        figures.append(expected_calibration_error(mapped.tolist(), truth.tolist()))
    return float(np.mean(figures))


FLOOR_DRAWS = 2000


def ece_noise_floor(confidences: Sequence[float], *, seed: int = 0, draws: int = FLOOR_DRAWS,
                    bins: int = BINS) -> tuple[float, float] | None:
    """The ECE of a perfectly calibrated system that gives these confidences: each draw makes every item right
    with probability equal to its confidence (`numpy.random.default_rng(seed)`) and measures the ECE; the
    mean and the 95th percentile over `draws`. ECE is biased upwards on few items (each bin's accuracy is a
    small sample), so this is the scale an observed ECE is read against. None without items."""
    confidence, _ = checked(confidences, [True] * len(confidences))
    if not confidence.size:
        return None
    if draws < 1:
        raise UsageError(f"the noise floor needs at least one draw, not {draws}")
    rng = np.random.default_rng(seed)
    index = _bin_index(confidence, bins)
    outcomes = rng.random((draws, confidence.size)) < confidence  # draws x items
    total = np.zeros(draws)
    for b in np.unique(index):
        members = index == b
        gap = np.abs(outcomes[:, members].mean(axis=1) - confidence[members].mean())
        total += members.sum() / confidence.size * gap
    return float(total.mean()), float(np.quantile(total, 0.95))


def calibration_summary(confidences: Iterable[float], correct: Iterable[bool], *,
                        interval: IntervalMethod = "delong", seed: int = 0, resamples: int = RESAMPLES
                        ) -> dict[str, Any]:
    """`calibrate(...)` as a plain dict: n, accuracy, mean_confidence, ece, brier, auroc, auroc_ci95
    ([low, high] or None), interval_method, bins (lower, upper, count, confidence, accuracy) and notes."""
    return calibrate(confidences, correct, interval=interval, seed=seed, resamples=resamples).as_dict()


def write_reliability_diagram(confidences: Iterable[float], correct: Iterable[bool], path: Path | str,
                              title: str = "Reliability diagram") -> Path:
    """Draw accuracy against confidence per bin, with the diagonal, each bin's count and the ECE in the title;
    PNG or SVG by the file's suffix. Needs matplotlib (`MissingDependencyError` otherwise)."""
    path = Path(path)
    if path.suffix.lower() not in (".png", ".svg"):
        raise UsageError(f"a reliability diagram is written as .png or .svg, not {path.name!r}")
    result = calibrate(confidences, correct)
    try:
        import matplotlib

        matplotlib.use("Agg")  # no display on a benchmark machine
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise MissingDependencyError("matplotlib", "envs", "reliability diagrams") from exc
    # SVG: text kept as text (searchable, small) and ids salted the same way each time (the same file for the same data)
    with plt.rc_context({"svg.hashsalt": "noosphere", "svg.fonttype": "none", "font.size": 9}):
        figure, (top, bottom) = plt.subplots(2, 1, figsize=(5.2, 6.0), sharex=True,
                                             gridspec_kw={"height_ratios": [3, 1]})
        _draw(top, bottom, result)
        figure.suptitle(_diagram_title(title, result), fontsize=10)
        figure.tight_layout()
        path.parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(path, dpi=120, metadata={"Date": None} if path.suffix.lower() == ".svg" else None)
        plt.close(figure)
    return path


def _figure(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _diagram_title(title: str, result: Calibration) -> str:
    figures = (f"ECE {_figure(result.ece)} · Brier {_figure(result.brier)} · AUROC {_figure(result.auroc)} · "
               f"n {result.n}")
    return f"{title}\n{figures}"


def _draw(top: Any, bottom: Any, result: Calibration) -> None:
    width = 1.0 / len(result.bins)
    filled = [b for b in result.bins if b.count]
    top.plot([0, 1], [0, 1], linestyle="--", color="#6b7280", linewidth=1, label="perfect calibration")
    top.bar([b.lower for b in filled], [b.accuracy for b in filled], width=width, align="edge", color="#93c5fd",
            edgecolor="#1d4ed8", linewidth=0.8, label="accuracy in bin")
    top.scatter([b.confidence for b in filled], [b.accuracy for b in filled], color="#b91c1c", s=14, zorder=3,
                label="mean confidence in bin")
    for b in filled:
        assert b.accuracy is not None
        top.annotate(str(b.count), (b.lower + width / 2, b.accuracy), textcoords="offset points", xytext=(0, 3),
                     ha="center", fontsize=7, color="#374151")
    top.set_xlim(0, 1)
    top.set_ylim(0, 1.08)
    top.set_ylabel("accuracy")
    top.legend(loc="upper left", fontsize=7, frameon=False)
    if not filled:
        top.text(0.5, 0.5, "no items", ha="center", va="center", color="#6b7280")
    bottom.bar([b.lower for b in result.bins], [b.count for b in result.bins], width=width, align="edge",
               color="#d1d5db", edgecolor="#6b7280", linewidth=0.8)
    bottom.set_xlabel("confidence")
    bottom.set_ylabel("items")
    bottom.set_xticks([i / 10 for i in range(11)])


# benchmark runs --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RunCalibration:
    """What a benchmark report gains from its rows' confidences: `metrics` to add to the report's (empty when
    no row has a confidence), the files written, and a warning when the diagram could not be drawn."""

    metrics: dict[str, Any]
    written: tuple[Path, ...] = ()
    warning: str | None = None


def row_confidences(rows: Sequence[dict[str, Any]]) -> tuple[list[float], list[bool], int]:
    """Confidences and correctness of the rows that have a confidence, and how many rows have none."""
    kept = [row for row in rows if row.get("confidence") is not None]
    return [row["confidence"] for row in kept], [bool(row["correct"]) for row in kept], len(rows) - len(kept)


def calibrate_run(folder: Path, rows: Sequence[dict[str, Any]], title: str) -> RunCalibration:
    """ECE, Brier and AUROC (flat, so reports and comparisons show them as metrics) and the whole calibration
    (bins, notes, which rows were left out) under `calibration`; `reliability.png` drawn into `folder`."""
    confidences, correct, missing = row_confidences(rows)
    if not confidences:
        return RunCalibration({})
    summary = calibration_summary(confidences, correct)
    summary["without_confidence"] = missing
    path, warning = folder / DIAGRAM, None
    try:
        written: tuple[Path, ...] = (write_reliability_diagram(confidences, correct, path, title),)
    except MissingDependencyError as exc:
        written, warning = (), f"reliability diagram not drawn: {exc}"
        path.unlink(missing_ok=True)  # an older session's diagram would not show these rows
    summary["diagram"] = DIAGRAM if written else None
    metrics = {"ece": summary["ece"], "ece_recalibrated": summary["ece_recalibrated"],
               "ece_floor": summary["ece_floor"], "brier": summary["brier"],
               "auroc": summary["auroc"], "auroc_ci95": summary["auroc_ci95"], "calibration": summary}
    return RunCalibration(metrics, written, warning)


def _floor(floor: Sequence[float] | None) -> str:
    if not floor:
        return ""
    return (f" (a perfectly calibrated confidence would show {floor[0]:.3f} on these items, "
            f"up to {floor[1]:.3f} in 95 % of draws)")


def calibration_markdown(summary: dict[str, Any]) -> list[str]:
    """The report.md section for a run's `calibration` summary."""
    band = summary.get("auroc_ci95")
    interval = f" (95 % interval {band[0]:.3f}-{band[1]:.3f}, {summary['interval_method']})" if band else ""
    left_out = summary.get("without_confidence") or 0
    lines = ["", "## Calibration", "",
             f"Confidence against correctness on the {summary['n']} items with a confidence"
             + (f" ({left_out} without one left out)" if left_out else "")
             + f": ECE {_figure(summary['ece'])} ({BINS} equal-width bins), Brier {_figure(summary['brier'])}, "
               f"AUROC {_figure(summary['auroc'])}{interval}; mean confidence {_figure(summary['mean_confidence'])}, "
               f"accuracy {_figure(summary['accuracy'])}; ECE after leave-one-out Platt scaling "
               f"{_figure(summary.get('ece_recalibrated'))}{_floor(summary.get('ece_floor'))}."]
    lines += [f"- {note}" for note in summary.get("notes", ())]
    if summary.get("diagram"):
        lines += ["", f"![reliability diagram]({summary['diagram']})"]
    lines += ["", "| confidence bin | items | mean confidence | accuracy |", "|---|---|---|---|"]
    lines += [f"| {b['lower']:.1f}-{b['upper']:.1f} | {b['count']} | {_figure(b['confidence'])} | "
              f"{_figure(b['accuracy'])} |" for b in summary["bins"]]
    return lines
