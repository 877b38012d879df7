"""Every MiniWoB++ task through the web environment, no model: does each page load, state a goal, offer actions and
take them? A check of the environment on the tasks the table does not use (issue 28 is checked on "tasks and seeds
the developers did not use").

For each task (all 130 by default) and seed, the episode is reset and up to `--steps` actions are taken, each drawn
from the admissible ones by a seeded `random.Random` (a uniformly random agent, so the rewards are a floor, not a
result). A line per episode is appended to `--out` (JSON lines; a task already there is skipped, so a killed sweep
resumes), then a summary: how many tasks loaded, stated a goal, offered at least one action, ended, and which
failed and how.

    python benchmarks/miniwob_sweep.py [--tasks a,b] [--seed 7] [--steps 3] [--out FILE.jsonl]
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections import Counter
from pathlib import Path

from noosphere.envs.miniwob import MiniWob, WebSettings, check_tasks, task_names
from noosphere.envs.web_browser import Browser
from noosphere.errors import NoosphereError

OUT = Path(__file__).resolve().parent / "results" / "miniwob" / "sweep.jsonl"


def play(browser: Browser, task: str, seed: int, steps: int) -> dict[str, object]:
    """One episode of a uniformly random agent over the admissible actions; what went wrong, if anything."""
    rng = random.Random(f"sweep/{task}/{seed}")
    env = MiniWob(browser, task, seed, settings=WebSettings(step_timeout_s=20.0, settle_s=0.2))
    row: dict[str, object] = {"task": task, "seed": seed, "goal": "", "offered": 0, "steps": 0, "done": False,
                              "won": False, "reason": "", "lost_steps": 0, "error": None}
    started = time.perf_counter()
    try:
        reset = env.reset()
        row["goal"], row["offered"] = reset.task, len(reset.admissible)
        admissible = reset.admissible
        for _ in range(steps):
            if not admissible:
                break
            action = rng.choice(admissible)
            step = env.step(action)
            row["steps"] = int(row["steps"]) + 1  # type: ignore[call-overload]
            if env.last is not None and env.last.error:
                row["lost_steps"] = int(row["lost_steps"]) + 1  # type: ignore[call-overload]
            admissible = step.admissible
            if step.done:
                break
        row.update(done=env.done, won=env.won, reason=env.reason)
    except NoosphereError as error:
        row["error"] = f"{type(error).__name__}: {error}"[:300]
    finally:
        try:
            env.close()
        except NoosphereError as error:
            row["error"] = row["error"] or f"closing: {type(error).__name__}: {error}"[:300]
    row["seconds"] = round(time.perf_counter() - started, 2)
    return row


def summary(rows: list[dict[str, object]]) -> str:
    n = len(rows)
    loaded = [r for r in rows if r["error"] is None or r["goal"]]
    lines = [f"{n} episodes: loaded {len(loaded)}, goal stated {sum(1 for r in rows if r['goal'])}, "
             f"at least one admissible action {sum(1 for r in rows if r['offered'])}, ended within the steps "
             f"{sum(1 for r in rows if r['done'])}, won by the random agent {sum(1 for r in rows if r['won'])}, "
             f"steps lost to an action error {sum(int(r['lost_steps']) for r in rows)}"]  # type: ignore[call-overload]
    reasons = Counter(str(r["reason"]) for r in rows if r["done"])
    lines.append("ended by: " + ", ".join(f"{k} {v}" for k, v in reasons.most_common()))
    for r in rows:
        if r["error"]:
            lines.append(f"  error  {r['task']}-{r['seed']}: {r['error']}")
    for r in rows:
        if not r["error"] and not r["offered"]:
            lines.append(f"  no admissible action  {r['task']}-{r['seed']}: goal {str(r['goal'])[:90]!r}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", default="", help="comma-separated task names (default: every task)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    tasks = [t for t in args.tasks.split(",") if t] or list(task_names())
    check_tasks(tasks)
    done: list[dict[str, object]] = []
    if args.out.exists():
        done = [json.loads(line) for line in args.out.read_text().splitlines() if line.strip()]
    seen = {(r["task"], r["seed"]) for r in done}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with Browser() as browser, args.out.open("a") as out:
        for task in tasks:
            if (task, args.seed) in seen:
                continue
            row = play(browser, task, args.seed, args.steps)
            done.append(row)
            out.write(json.dumps(row) + "\n")
            out.flush()
            print(f"{task}-{args.seed}: offered {row['offered']}, {row['steps']} steps, {row['reason'] or '-'}"
                  f"{', ' + str(row['error']) if row['error'] else ''}", flush=True)
    print(summary([r for r in done if r["seed"] == args.seed]))


if __name__ == "__main__":
    main()
