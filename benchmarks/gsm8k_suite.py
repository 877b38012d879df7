"""Every GSM8K configuration of the NLSOM issue on the same problems, resumable, with one summary table.

Configurations: base; best-of-N with N equal to the monarchy's calls; the monarchy; the democracy
with its rights added one at a time (the paper's table 4: know; know + change; know + change +
execute); the debate; the monarchy with 1, 3 and 5 rounds (table 3). Each writes its run folder
under `--out/<name>/`; a killed suite picks every run up where it stopped. The summary prints
accuracy, calls, tokens and seconds per problem (its own latency, and wall time per problem with
`--parallel` problems at once).

    python benchmarks/gsm8k_suite.py [--limit 50] [--model ID] [--only NAME ...] [--parallel 2]
                                     [--out runs/gsm8k-suite]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

SOCIETIES = Path(__file__).resolve().parent.parent / "examples" / "societies"
MONARCHY, DEMOCRACY, DEBATE = (str(SOCIETIES / name) for name in ("monarchy.yaml", "democracy.yaml", "debate.toml"))

CONFIGS: dict[str, list[str]] = {
    "base": ["--system", "base"],
    "monarchy": ["--system", "society", "--society", MONARCHY],
    "best-of-n": ["--system", "best-of-n", "--society", MONARCHY],
    "democracy-know": ["--system", "society", "--society", DEMOCRACY, "--rights", "know"],
    "democracy-know-change": ["--system", "society", "--society", DEMOCRACY, "--rights", "know,change"],
    "democracy-all": ["--system", "society", "--society", DEMOCRACY, "--rights", "know,change,execute"],
    "debate": ["--system", "society", "--society", DEBATE],
    "monarchy-r1": ["--system", "society", "--society", MONARCHY, "--rounds", "1"],
    "monarchy-r3": ["--system", "society", "--society", MONARCHY, "--rounds", "3"],
    "monarchy-r5": ["--system", "society", "--society", MONARCHY, "--rounds", "5"],
}


def run(name: str, args: argparse.Namespace) -> None:
    folder = args.out / name
    existing = sorted(p for p in folder.glob("*") if (p / "config.json").exists()) if folder.exists() else []
    command = [sys.executable, "-m", "noosphere", "bench", "gsm8k", "--quiet", "--parallel", str(args.parallel)]
    if existing:
        command += ["--resume", str(existing[-1])]
    else:
        command += [*CONFIGS[name], "--limit", str(args.limit), "--model", args.model, "--out", str(folder)]
    print(f"== {name}: {' '.join(command[3:])}", flush=True)
    subprocess.run(command, check=False)


def summary(out: Path) -> None:
    print("| configuration | n | accuracy | calls/problem | tokens/problem | seconds/problem | wall s/problem |")
    print("|---|---|---|---|---|---|---|")
    for name in CONFIGS:
        reports = sorted((out / name).glob("*/report.json")) if (out / name).exists() else []
        if not reports:
            continue
        report = json.loads(reports[-1].read_text())
        metrics, costs = report["metrics"], report.get("costs", {})
        print(f"| {name} | {metrics['n']} | {metrics['accuracy']} | {costs.get('calls_per_item')} | "
              f"{costs.get('tokens_per_item')} | {costs.get('seconds_per_item')} | "
              f"{costs.get('wall_seconds_per_item', '-')} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=50)
    parser.add_argument("--model", default="local:qwen2.5-coder-1.5b")
    parser.add_argument("--only", nargs="*", choices=list(CONFIGS))
    parser.add_argument("--out", type=Path, default=Path("runs/gsm8k-suite"))
    parser.add_argument("--parallel", type=int, default=2, help="problems solved at once (batched decoding)")
    parser.add_argument("--summary-only", action="store_true")
    args = parser.parse_args()
    if not args.summary_only:
        for name in args.only or CONFIGS:
            run(name, args)
    summary(args.out)


if __name__ == "__main__":
    main()
