"""Recount a weighted best-of-N run (`bench gsm8k --system best-of-n --weights p-true|sequence`) at every budget.

Each row keeps every sample's number and weight, so one run answers several questions at once:
the plain majority and the weighted vote (CISC) over the first k samples, for every k. With P(True)
a weighted vote over k samples costs 2k calls (k generations, k scoring calls), a plain vote k, so
the table also pairs them at equal calls; with the sample's own sequence probability both cost k.
It prints a markdown table and the signal of the weight on the samples (AUROC of the weight against
the sample being right, with a 95 % DeLong interval).

A society run whose vote weighs standing answers by their replies' probability (`bench gsm8k --system society
--vote sequence`) is recounted the same way, its members' standing answers standing for the samples: the plain
count and the weighted vote over the same answers, in the same run, at the society's calls.

A debate that counts every answer its members gave (`--vote every`) is recounted over all of them, in the order
given (each member's mission answer first, then each round's).

`--adaptive F` recounts a best-of-N run as adaptive self-consistency: the first F samples, and only where they do
not all give the same number, the rest up to k; each k with the mean calls it spent, beside the fixed vote at the
nearest k. It is what a society that stops once its members agree (`until_consensus`) spends its calls like, with
samples where the society holds a round.

`--quorum Q` recounts it as a jury with a quorum (`quorum: Q` in a debate's file): the first Q samples, then one more
at a time until Q of them give one number, up to k; the weighted vote of those drawn, beside the fixed vote at the k
nearest its mean calls. It is the stopping rule of `examples/societies/programmer-jury.toml` applied to best-of-N's
samples.

`--against OTHER_RUN` sets two such runs side by side on the problems both scored (a society and best-of-N at the
calls it measured): each one's calls a problem, plain and weighted votes over all its answers, and the problems
the first run's weighted vote gets right and the other's wrong, and the other way round, with the two-sided sign
test of those counts. `--at K` counts the other run over its first K samples only (best-of-K from a best-of-N
run: the other side at the calls the first spent). With `--against`, RUN_DIR and OTHER_RUN may each be several
folders, runs of one configuration on different problems (blocks), pooled.

`--mix OTHER_RUN` recounts two best-of-N runs on the same problems, their samples of two forms (say statements and
programs: `--form program`) pooled: at every k, the vote over the first ceil(k/2) samples of the first run and the
first floor(k/2) of the other, beside each run alone at k; a society of members of both forms without any discussion.

    python benchmarks/cisc_table.py RUN_DIR... [--against OTHER_RUN... [--at K] | --adaptive F | --quorum Q
                                    | --mix OTHER_RUN] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from noosphere.bench.calibration import auroc, auroc_interval
from noosphere.bench.gsm8k import majority, weighted_votes
from noosphere.runs import load_done

WEIGHT_FIELDS = {"p_true": ("P(True)", 2), "token_probability": ("sequence probability", 1)}
"""A row's per-sample weight field: what it is, and the calls a weighted sample costs (a scoring call for P(True);
none more for the sample's own probability)."""


def weight_field(rows: list[dict[str, Any]]) -> str:
    found = {name for row in rows for s in row["samples"] for name in WEIGHT_FIELDS if name in s}
    if len(found) != 1:
        raise SystemExit(f"cisc_table: the rows' samples carry {sorted(found) or 'no'} weights; expected one of "
                         f"{sorted(WEIGHT_FIELDS)}")
    return found.pop()


def verdicts(rows: list[dict[str, Any]], k: int, weighted: bool, field: str = "p_true") -> list[bool]:
    """For each row, whether the vote over its first k samples (plain, or weighted by `field`) gives the gold."""
    right = []
    for row in rows:
        samples = [(s["number"], s.get(field)) for s in row["samples"][:k]]
        numbers = [number for number, _ in samples if number is not None]
        votes: dict[str, float] = (weighted_votes(samples) if weighted
                                   else {n: float(c) for n, c in Counter(numbers).items()})
        right.append(majority(votes, numbers) == row["gold"])
    return right


def recount(rows: list[dict[str, Any]], k: int, weighted: bool, field: str = "p_true") -> float:
    return 100 * sum(verdicts(rows, k, weighted, field)) / len(rows)


def paired(rows: list[dict[str, Any]], k: int, field: str) -> tuple[int, int]:
    """Problems the weighted vote of k samples gets right and the plain one wrong, and the other way round."""
    plain, weighted = verdicts(rows, k, False, field), verdicts(rows, k, True, field)
    return (sum(w and not p for p, w in zip(plain, weighted, strict=True)),
            sum(p and not w for p, w in zip(plain, weighted, strict=True)))


def with_samples(row: dict[str, Any]) -> dict[str, Any]:
    """A society row's answers as samples weighted by their replies' probability: every answer given, where its vote
    counted them all (`answers`), else the standing answers in member order."""
    if "samples" in row:
        return row
    if "answers" in row:
        given = [a for a in row["answers"] if a.get("number") is not None or a.get("token_probability") is not None]
        known = [a["token_probability"] for a in given if a.get("token_probability") is not None]
        fill = sum(known) / len(known) if known else 1.0
        return {**row, "samples": [{"number": a.get("number"), "token_probability": a["token_probability"]
                                    if a.get("token_probability") is not None else fill} for a in given]}
    if "standing_probability" not in row:
        return row
    likely = row["standing_probability"]
    known = [p for p in likely.values() if p is not None]
    fill = sum(known) / len(known) if known else 1.0  # a sub-society's answer, as the society counted it
    return {**row, "samples": [{"number": number, "token_probability": likely.get(member) if likely.get(member)
                                is not None else fill} for member, number in row["standing"].items()]}


def adaptive(rows: list[dict[str, Any]], first: int, k: int, field: str) -> tuple[list[bool], float]:
    """Adaptive self-consistency over each row's samples: the weighted vote of the first `first` where they all
    gave one number, else of the first `k`; whether each is right, and the mean samples drawn."""
    right, calls = [], 0
    for row in rows:
        head = row["samples"][:first]
        numbers = {s["number"] for s in head}
        agreed = len(head) == first and len(numbers) == 1 and None not in numbers
        drawn = head if agreed else row["samples"][:k]
        calls += len(drawn)
        samples = [(s["number"], s.get(field)) for s in drawn]
        votes = weighted_votes(samples)
        right.append(majority(votes, [n for n, _ in samples if n is not None]) == row["gold"])
    return right, calls / len(rows) if rows else 0.0


def drawn_until_quorum(samples: list[dict[str, Any]], quorum: int, k: int) -> list[dict[str, Any]]:
    """The first `quorum` samples, then one more at a time until `quorum` of them give one number, `k` at most."""
    for end in range(quorum, k + 1):
        held = Counter(s["number"] for s in samples[:end] if s["number"] is not None)
        if held and held.most_common(1)[0][1] >= quorum:
            return samples[:end]
    return samples[:k]


def by_quorum(rows: list[dict[str, Any]], quorum: int, k: int, field: str) -> tuple[list[bool], float]:
    """A quorum's stopping rule over each row's samples (`drawn_until_quorum`): whether the weighted vote of the
    samples drawn is right, and the mean samples drawn."""
    right, calls = [], 0
    for row in rows:
        drawn = drawn_until_quorum(row["samples"], quorum, k)
        calls += len(drawn)
        samples = [(s["number"], s.get(field)) for s in drawn]
        right.append(majority(weighted_votes(samples), [n for n, _ in samples if n is not None]) == row["gold"])
    return right, calls / len(rows) if rows else 0.0


STOPPING_RULES = {"adaptive": (adaptive, "F"), "quorum": (by_quorum, "Q")}
"""`--adaptive F` and `--quorum Q`: how each decides the samples a row draws, and its option's letter."""


def adaptive_table(run: Path, first: int, stop: str = "adaptive") -> dict[str, Any]:
    """`adaptive` (or, with `stop="quorum"`, `by_quorum` with quorum `first`) at every k above `first`, each beside
    the fixed weighted vote at the k nearest its mean calls."""
    rows = sorted((r for r in load_done(run / "items.jsonl").values() if r.get("samples")), key=lambda r: r["id"])
    if not rows:
        raise SystemExit(f"cisc_table: {run} has no best-of-N rows with samples")
    field, n = weight_field(rows), min(len(r["samples"]) for r in rows)
    rule, letter = STOPPING_RULES[stop]
    if not 1 <= first < n:
        raise SystemExit(f"cisc_table: --{stop} {first} needs 1 <= {letter} < {n}, the samples every row has")
    if stop == "quorum" and first < 2:
        raise SystemExit("cisc_table: --quorum is 2 or more (one sample is a quorum of one: no vote)")
    per_sample = WEIGHT_FIELDS[field][1]  # a P(True) sample costs its scoring call too
    results = []
    for k in range(first + 1, n + 1):
        right, drawn = rule(rows, first, k, field)
        nearest = min(n, max(1, round(drawn)))
        fixed = verdicts(rows, nearest, True, field)
        results.append({"k": k, "calls": round(per_sample * drawn, 2),
                        stop: round(100 * sum(right) / len(rows), 1),
                        "fixed_k": nearest, "fixed": round(100 * sum(fixed) / len(rows), 1),
                        "won_lost": [sum(a and not f for a, f in zip(right, fixed, strict=True)),
                                     sum(f and not a for a, f in zip(right, fixed, strict=True))]})
    return {"run": str(run), "problems": len(rows), "first": first, "stop": stop, "weight": field, "rows": results}


def table(run: Path) -> dict[str, Any]:
    rows = sorted((with_samples(r) for r in load_done(run / "items.jsonl").values()), key=lambda r: r["id"])
    rows = [r for r in rows if r.get("samples")]
    if not rows:
        raise SystemExit(f"cisc_table: {run} has no weighted best-of-N rows with samples, "
                         "nor society rows with probabilities")
    n = max(len(r["samples"]) for r in rows)  # an economy's spawned variants add members
    field = weight_field(rows)
    per_sample = WEIGHT_FIELDS[field][1]
    results = [{"samples": k, "plain": round(recount(rows, k, False, field), 1), "plain_calls": k,
                "weighted": round(recount(rows, k, True, field), 1), "weighted_calls": per_sample * k,
                "won_lost": list(paired(rows, k, field))}
               for k in range(1, n + 1)]
    scored = [(s[field], s["number"] == row["gold"]) for row in rows for s in row["samples"]
              if s["number"] is not None and s.get(field) is not None]
    probs, truth = [p for p, _ in scored], [t for _, t in scored]
    interval = auroc_interval(probs, truth)
    society = "standing" in rows[0]  # the row's own prediction is the society's decision (its vote, weighted)
    return {"run": str(run), "problems": len(rows), "rows": results, "weight": field,
            "society": round(100 * sum(bool(r["correct"]) for r in rows) / len(rows), 1) if society else None,
            "signal": {"samples": len(scored), "right": sum(truth), "auroc": auroc(probs, truth),
                       "ci95": list(interval) if interval else None}}


def weighted_rows(run: Path) -> dict[str, dict[str, Any]]:
    """A run's rows with samples (or a society's standing answers as samples), by problem id."""
    rows = {i: with_samples(r) for i, r in load_done(run / "items.jsonl").items()}
    return {i: r for i, r in rows.items() if r.get("samples")}


def pooled_rows(runs: Sequence[Path]) -> dict[str, dict[str, Any]]:
    """The rows of several runs of one configuration on different problems, by problem id; a problem two of them
    scored is refused (it would count twice, or once by whichever came last)."""
    pooled: dict[str, dict[str, Any]] = {}
    for run in runs:
        rows = weighted_rows(run)
        if twice := sorted(set(pooled) & set(rows)):
            raise SystemExit(f"cisc_table: {run} scored problems another of the pooled runs also scored "
                             f"({', '.join(twice[:3])}{' ...' if len(twice) > 3 else ''}): pool runs of different "
                             "problems")
        pooled.update(rows)
    return pooled


def sign_test(won: int, lost: int) -> float:
    """Two-sided exact sign test of `won` against `lost` (ties left out): the probability of a split at least this
    uneven if each differing problem went either way with probability 1/2."""
    n = won + lost
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, j) for j in range(min(won, lost) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def side_by_side(first: Path | Sequence[Path], other: Path | Sequence[Path], at: int | None = None
                 ) -> dict[str, Any]:
    """Two weighted runs (or blocks of runs, pooled) on the problems both scored: calls, plain and weighted accuracy
    over all their answers (the other's over its first `at` samples when given), and the weighted votes compared
    problem by problem."""
    sides = [[first] if isinstance(first, Path) else list(first), [other] if isinstance(other, Path) else list(other)]
    rows = [pooled_rows(side) for side in sides]
    common = sorted(set(rows[0]) & set(rows[1]))
    names = [", ".join(str(run) for run in side) for side in sides]
    if not common:
        raise SystemExit(f"cisc_table: {names[0]} and {names[1]} scored no problem in common")
    runs, verdict = [], []
    for index, (name, by_id) in enumerate(zip(names, rows, strict=True)):
        chosen = [by_id[i] for i in common]
        field, k = weight_field(chosen), max(len(r["samples"]) for r in chosen)
        if index == 1 and at is not None:
            if not 1 <= at <= k:
                raise SystemExit(f"cisc_table: --at {at}: the other run has 1 to {k} samples a problem")
            k = at
        weighted = verdicts(chosen, k, True, field)
        verdict.append(weighted)
        calls = (k if index == 1 and at is not None
                 else round(sum(r.get("calls", 0) for r in chosen) / len(chosen), 2))
        runs.append({"run": name if index == 0 or at is None else f"{name} (first {k} samples)", "calls": calls,
                     "plain": round(100 * sum(verdicts(chosen, k, False, field)) / len(chosen), 1),
                     "weighted": round(100 * sum(weighted) / len(chosen), 1),
                     "decided": (round(100 * sum(bool(r["correct"]) for r in chosen) / len(chosen), 1)
                                 if index == 0 or at is None else None)})
    won = [i for i, a, b in zip(common, *verdict, strict=True) if a and not b]
    lost = [i for i, a, b in zip(common, *verdict, strict=True) if b and not a]
    return {"problems": common, "runs": runs, "won": won, "lost": lost, "sign_test_p": sign_test(len(won), len(lost))}


def mixed_table(first: Path, other: Path) -> dict[str, Any]:
    """Both runs' samples pooled at every k (the first run's first, then alternating), beside each run alone."""
    runs = [{i: r for i, r in weighted_rows(run).items() if "standing" not in r} for run in (first, other)]
    common = sorted(set(runs[0]) & set(runs[1]))
    if not common:
        raise SystemExit(f"cisc_table: {first} and {other} have no best-of-N problem in common")
    fields = {weight_field([runs[0][i] for i in common]), weight_field([runs[1][i] for i in common])}
    if len(fields) != 1:
        raise SystemExit(f"cisc_table: --mix needs two runs weighted alike, not by {' and '.join(sorted(fields))}")
    field = fields.pop()
    n = min(len(run[i]["samples"]) for run in runs for i in common)
    pooled = []
    for i in common:
        a, b = runs[0][i]["samples"], runs[1][i]["samples"]
        pooled.append({**runs[0][i], "samples": [s for pair in zip(a, b, strict=False) for s in pair]})
    results = []
    for k in range(1, n + 1):
        alone = [verdicts([run[i] for i in common], k, True, field) for run in runs]
        mixed = verdicts(pooled, k, True, field)
        results.append({"k": k, "first": round(100 * sum(alone[0]) / len(common), 1),
                        "other": round(100 * sum(alone[1]) / len(common), 1),
                        "mixed": round(100 * sum(mixed) / len(common), 1),
                        "mixed_plain": round(100 * sum(verdicts(pooled, k, False, field)) / len(common), 1),
                        "won_lost": [sum(m and not f for m, f in zip(mixed, alone[0], strict=True)),
                                     sum(f and not m for m, f in zip(mixed, alone[0], strict=True))]})
    return {"first": str(first), "other": str(other), "problems": len(common), "weight": field, "rows": results}


def print_table(title: str, header: list[str], rows: list[list[Any]]) -> None:
    """A title, then a markdown table."""
    print(f"{title}\n\n| {' | '.join(header)} |\n|{'---|' * len(header)}")
    for cells in rows:
        print(f"| {' | '.join(str(cell) for cell in cells)} |")


def won_lost(row: dict[str, Any]) -> str:
    won, lost = row["won_lost"]
    return f"+{won} / -{lost}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", type=Path, nargs="+", help="a run folder (with --against, several: pooled)")
    parser.add_argument("--against", type=Path, nargs="+",
                        help="another weighted run (or several, pooled), compared on the problems both scored")
    parser.add_argument("--at", type=int, metavar="K", help="with --against: count the other run's first K samples")
    parser.add_argument("--adaptive", type=int, metavar="F",
                        help="recount a best-of-N run adaptively: F samples, the rest only where they disagree")
    parser.add_argument("--quorum", type=int, metavar="Q",
                        help="recount a best-of-N run as a jury: Q samples, then one at a time until Q agree")
    parser.add_argument("--mix", type=Path,
                        help="another best-of-N run on the same problems: both runs' samples pooled")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if sum(option is not None for option in (args.adaptive, args.quorum, args.against, args.mix)) > 1:
        parser.error("--adaptive, --quorum, --against and --mix each make a table of their own: give one")
    if args.at is not None and args.against is None:
        parser.error("--at K counts the other run of --against over its first K samples: give --against")
    if len(args.run) > 1 and args.against is None:
        parser.error("several runs are pooled with --against only; the other tables take one run")
    firsts = args.run
    args.run = firsts[0]
    for folder in (*firsts, *(args.against or ()), args.mix):
        if folder is not None and not (folder / "items.jsonl").is_file():
            raise SystemExit(f"cisc_table: {folder} is not a run folder (no items.jsonl)")
    if args.adaptive is not None or args.quorum is not None:
        found = (adaptive_table(args.run, args.adaptive) if args.adaptive is not None
                 else adaptive_table(args.run, args.quorum, stop="quorum"))
        if args.json:
            print(json.dumps(found, indent=2))
            return
        print_table(f"{found['problems']} problems of {found['run']}, weighted by "
                    f"{WEIGHT_FIELDS[found['weight']][0]}",
                    [f"first {found['first']}, then " + ("up to k" if found["stop"] == "adaptive"
                                                         else f"one at a time until {found['first']} agree, up to k"),
                     "mean calls", found["stop"], "fixed, at the nearest k", f"{found['stop']} vs fixed"],
                    [[row["k"], row["calls"], row[found["stop"]], f"{row['fixed']} (k = {row['fixed_k']})",
                      won_lost(row)] for row in found["rows"]])
        return
    if args.mix is not None:
        mixed = mixed_table(args.run, args.mix)
        if args.json:
            print(json.dumps(mixed, indent=2))
            return
        print_table(f"{mixed['problems']} problems of both runs, weighted by {WEIGHT_FIELDS[mixed['weight']][0]}",
                    ["samples k", f"{mixed['first']} alone", f"{mixed['other']} alone",
                     "pooled (ceil(k/2) + floor(k/2))", "pooled, plain count", "pooled vs the first alone"],
                    [[row["k"], row["first"], row["other"], row["mixed"], row["mixed_plain"], won_lost(row)]
                     for row in mixed["rows"]])
        return
    if args.against is not None:
        compared = side_by_side(firsts, args.against, args.at)
        if args.json:
            print(json.dumps(compared, indent=2))
            return
        print(f"{len(compared['problems'])} problems scored by both ({compared['problems'][0]} to "
              f"{compared['problems'][-1]})\n\n| run | calls / problem | plain | weighted | as the run decided |\n"
              "|---|---|---|---|---|")
        for run in compared["runs"]:
            decided = "-" if run["decided"] is None else run["decided"]
            print(f"| {run['run']} | {run['calls']} | {run['plain']} | {run['weighted']} | {decided} |")
        print(f"\nweighted, the first against the other: +{len(compared['won'])} / -{len(compared['lost'])}, "
              f"sign test p = {compared['sign_test_p']:.2f} (won: {', '.join(compared['won']) or 'none'}; lost: "
              f"{', '.join(compared['lost']) or 'none'})")
        return
    result = table(args.run)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{result['problems']} problems of {result['run']}\n")
    what, per_sample = WEIGHT_FIELDS[result["weight"]]
    calls = f"{per_sample}k calls" if per_sample > 1 else "k calls"
    if result["society"] is not None:  # the first k members' standing answers; every k costs the society's calls
        print(f"The society decided {result['society']} (its own vote, ties broken by its seed).\n")
        calls = "the society's calls"
    first = "members k" if result["society"] is not None else "samples k"
    plain_calls = "same calls" if result["society"] is not None else "k calls"
    print(f"| {first} | plain majority ({plain_calls}) | weighted by {what} ({calls}) | weighted vs plain, problem by "
          "problem |\n|---|---|---|---|")
    for row in result["rows"]:
        won, lost = row["won_lost"]
        print(f"| {row['samples']} | {row['plain']} | {row['weighted']} | +{won} / -{lost} |")
    signal = result["signal"]
    ci = f" (95 % CI {signal['ci95'][0]:.2f}-{signal['ci95'][1]:.2f})" if signal["ci95"] else ""
    area = f"{signal['auroc']:.3f}" if signal["auroc"] is not None else "undefined"
    print(f"\n{what} against an answer being right: AUROC {area}{ci} over {signal['samples']} samples "
          f"({signal['right']} right)")


if __name__ == "__main__":
    main()
