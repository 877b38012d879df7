"""Every MiniGrid and BabyAI world through the embodied setting, no model: does each one lay out, count its floor,
name its rooms and things, let the two code explorers move, and ask its questions? A check of the environment on
the worlds and seeds the table does not use (issue 30 is checked on "seeds and worlds the developers did not use").

For each world (all of them by default) at `--seed` (7: the suite plays seeds 0-9), the frontier explorer plays up
to `--frontier-steps` actions and the random explorer `--steps` actions. A line per world is appended to `--out`
(JSON lines; a world already there at that seed is skipped, so a killed sweep resumes): the floor cells, rooms and
things, random's coverage after `--steps`, frontier's after `--steps` and at its end (and the action it got there),
the questions made per kind and how many have "not seen" for gold, and any error. Then a summary: worlds laid
out, worlds where frontier sees everything, and why it does not where it does not: the floor behind a locked
door, a box, ball or key in the way (the robot cannot pick things up), lava, or the step budget.

    python benchmarks/embodied_sweep.py [--worlds A,B] [--seed 7] [--steps 36] [--frontier-steps 300] [--out FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any

from noosphere.embodied.episode import explore
from noosphere.embodied.eqa import NOT_SEEN, make_questions
from noosphere.embodied.explorers import WALKABLE, FrontierExplorer, RandomExplorer
from noosphere.envs.gridworld import STEP, GridWorld, check_world, world_names
from noosphere.errors import NoosphereError
from noosphere.trace import Trace

OUT = Path(__file__).resolve().parent / "results" / "embodied" / "sweep.jsonl"


def _short_of_whole(world: GridWorld) -> list[str]:
    """Why the robot could not see the whole floor with the world's actions, from the world's ground truth: the
    contents that border the cells it can reach (turning, moving forward, opening closed doors) where floor lies
    beyond them. Empty when every floor cell is reachable: then only the step budget stood in the way."""
    start = world.pose[:2]
    reach, queue = {start}, [start]
    while queue:
        x, y = queue.pop()
        for dx, dy in STEP:
            cell = (x + dx, y + dy)
            if cell not in reach and world.content(cell) in WALKABLE:
                reach.add(cell)
                queue.append(cell)
    if world.floor <= reach:
        return []
    borders = set()
    for x, y in reach:
        for dx, dy in STEP:
            cell = (x + dx, y + dy)
            if cell not in reach and cell in world.floor | {t.cell for t in world.things}:
                borders.add(world.content(cell))
    return sorted(borders - {"wall", "floor"})


def play(name: str, seed: int, steps: int, frontier_steps: int) -> dict[str, Any]:
    row: dict[str, Any] = {"world": name, "seed": seed, "floor": 0, "rooms": 0, "things": {}, "error": None}
    started = time.perf_counter()
    world = GridWorld(name, seed)
    try:
        trajectory = asyncio.run(explore(world, RandomExplorer(random.Random(f"sweep/{name}/{seed}")),
                                         max_steps=steps, trace=Trace(None)))
        row.update(floor=len(world.floor), rooms=world.rooms,
                   things=dict(Counter(thing.kind for thing in world.things)),
                   random_coverage=round(trajectory.coverage, 4))
        trajectory = asyncio.run(explore(world, FrontierExplorer(), max_steps=frontier_steps, trace=Trace(None)))
        curve = trajectory.curve
        final = curve[-1]
        row.update(frontier_coverage_at_steps=round(curve[min(steps, len(curve) - 1)], 4),
                   frontier_coverage=round(final, 4), frontier_actions=curve.index(final),
                   frontier_stopped=trajectory.stopped,
                   frontier_blocked_by=_short_of_whole(world) if final < 1.0 else [])
        questions = make_questions(world, random.Random(f"eqa/{name}/{seed}"))
        row.update(questions=dict(Counter(q.kind for q in questions)),
                   not_seen=sum(q.gold == NOT_SEEN for q in questions))
    except NoosphereError as error:
        row["error"] = f"{type(error).__name__}: {error}"[:300]
    except Exception as error:
        row["error"] = f"unexpected {type(error).__name__}: {error}"[:300]
    finally:
        world.close()
    row["seconds"] = round(time.perf_counter() - started, 2)
    return row


def summary(rows: list[dict[str, Any]]) -> str:
    fine = [r for r in rows if not r["error"]]
    whole = [r for r in fine if r["frontier_coverage"] >= 1.0]
    lines = [f"{len(rows)} worlds: laid out and explored {len(fine)}, errors {len(rows) - len(fine)}; frontier saw "
             f"every floor cell in {len(whole)} (median {_median([r['frontier_actions'] for r in whole])} actions)",
             "coverage after the random explorer's actions: random median "
             f"{_median([r['random_coverage'] for r in fine])}, frontier median "
             f"{_median([r['frontier_coverage_at_steps'] for r in fine])}",
             "questions made: " + ", ".join(f"{k} {v}" for k, v in sorted(
                 sum((Counter(r["questions"]) for r in fine), Counter()).items()))
             + f"; with 'not seen' for gold after frontier's episode: {sum(r['not_seen'] for r in fine)}"]
    blocked = Counter(tuple(r["frontier_blocked_by"]) for r in fine if r["frontier_coverage"] < 1.0)
    for why, count in blocked.most_common():
        lines.append("  frontier short of the whole floor: " + (f"the rest lies behind {', '.join(why)}" if why
                     else "every cell reachable, the step budget ran out") + f": {count} worlds")
    lines += [f"  error  {r['world']}#{r['seed']}: {r['error']}" for r in rows if r["error"]]
    return "\n".join(lines)


def _median(values: list[float]) -> float | str:
    if not values:
        return "-"
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worlds", default="", help="comma-separated world ids (default: every one)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--steps", type=int, default=36)
    parser.add_argument("--frontier-steps", type=int, default=300)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    worlds = [check_world(w.strip()) for w in args.worlds.split(",") if w.strip()] or list(world_names())
    done: list[dict[str, Any]] = []
    if args.out.exists():
        done = [json.loads(line) for line in args.out.read_text().splitlines() if line.strip()]
    have = {(r["world"], r["seed"]) for r in done}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("a") as out:
        for name in worlds:
            if (name, args.seed) in have:
                continue
            row = play(name, args.seed, args.steps, args.frontier_steps)
            done.append(row)
            out.write(json.dumps(row) + "\n")
            out.flush()
            print(f"{name}#{args.seed}: " + (row["error"] or f"floor {row['floor']}, random {row['random_coverage']}, "
                                              f"frontier {row['frontier_coverage']} in {row['frontier_actions']}"),
                  flush=True)
    print(summary([r for r in done if r["seed"] == args.seed and r["world"] in worlds]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
