"""How each way of showing recalled memory moves the meta-agent's planner on a game's first decision.

On TextWorld (stop 47) the meta-agent with memory lost games the one without memory won in one action: on
treasure_hunter-0 both took `take passkey`, or would have, and the run with memory examined the passkey for
40 actions. This probe asks one question per game, cheaply: given the memory a run had when the game started,
which action does the planner (the `percept` view, ReAct's step plus the memory) choose first, under each
way of showing that memory, and is it the first action of the game's expert plan?

The memory at the start of game i is rebuilt from a finished run's memory folder (`--memory`): the episodes
and rules of the games it played before game i, recalled exactly as the run recalled them (k episodes at
random, seeded by the run's seed and the game), then shown

- `none`: no memory (the planner is asked ReAct's step word for word);
- `rules`: the learned rules alone;
- `team`: the paper's view, each episode with the belief states written during it;
- `planner`: each episode as the actions taken and what the game answered, under a title saying they are other
  worlds (`--recall-view planner`);
- `actions`: each episode as its task, outcome and the actions alone, one line;
- `kin` (with `--kin-from RUN`, stop 50): the latest won games of the same challenge (`--retrieve kin`) in the planner
  view, no rules. A run with memory rarely wins (1 of 6 games so far with both memories), so its own memory has
  almost nothing to give this view: the episodes come instead from the trace of `RUN`, a finished run without
  memory: its games that come before this one in the probe's order (the order a run with memory plays them in),
  which is what `kin` would have recalled had that run kept them.

It writes one JSON row per game and view to `--out` (appended; a resumed probe skips what is there), then a table.
The call cache makes a decision the runs already made free.

    python benchmarks/recall_probe.py --memory RUN/memory --out benchmarks/results/textworld/recall_probe.jsonl
                                      [--views none,rules,team,planner,actions] [--games 12] [--model ID]
                                      [--first-game 0|3] [--place before|after] [--kin-from RUN]

`--place after` puts the memory after the observation instead, last before the question (where the meta-agent puts
the focus note); `--first-game 3` asks the held-out games 3-5 of each challenge, with all of the run's memory.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

from noosphere.datafiles import scan_json_lines
from noosphere.llm import Message, Settings
from noosphere.llm.cache import CallCache
from noosphere.llm.registry import DEFAULT_MODEL, open_model
from noosphere.llm.weights import default_cache_dir
from noosphere.memory import (
    Episode,
    EpisodeStep,
    MemoryStore,
    Recall,
    default_embedder,
    recall,
    recall_episodes,
    sleep,
)
from noosphere.metaagent.forms import step_form
from noosphere.metaagent.prompts import planner_on_percept, react_messages
from noosphere.metaagent.recollection import OTHER_GAMES
from noosphere.metaagent.state import EpisodeState
from noosphere.runs import load_done

VIEWS = ("none", "rules", "team", "planner", "actions")
KIN = "kin"


def actions_only(found: Recall) -> str:
    """Rules as the run shows them, then each episode on one line: task, outcome, the actions in order."""
    rules = Recall((), found.concepts).render()
    lines = [f"- {e.task} ({'solved' if e.won else 'not solved'} in {e.actions} actions): "
             + ", ".join(step.action for step in e.steps if step.action) for e in found.episodes]
    episodes = "Earlier games, each in another world, and the actions taken in them:\n" + "\n".join(lines)
    return "\n\n".join(part for part in (rules, episodes if lines else "") if part)


def shown(view: str, found: Recall) -> str:
    if view == "none":
        return ""
    if view == "rules":
        return Recall((), found.concepts).render()
    if view == "team":
        return found.render()
    if view == "planner":
        return found.render(beliefs=False, episodes_title=OTHER_GAMES)
    return actions_only(found)


def episodes_of_run(run: Path, played: list[str], openings: dict[str, str]) -> dict[str, Episode]:
    """Each scored game of a run, rebuilt from its trace: the last attempt's actions and what the game answered (a
    game stopped midway and played again from its start counts as played the last time), won as the run's
    `items.jsonl` scored it. `played` is the order a run that kept them would have stored them in, which gives each
    its id; `openings` maps a game to its first observation, which the trace does not keep. Torn lines are skipped."""
    started: dict[str, dict[str, Any]] = {}
    steps: dict[str, list[EpisodeStep]] = {}
    ended: dict[str, dict[str, Any]] = {}
    events, _ = scan_json_lines(run / "trace.jsonl")
    for _, event in events:
        game = str(event.get("item_id", ""))
        if event.get("kind") == "ma_episode":
            started[game], steps[game] = event, []
            ended.pop(game, None)  # an earlier attempt does not stand for this one
        elif event.get("kind") == "ma_action" and game in steps:
            steps[game].append(EpisodeStep(event["step"], event["action"], event["observation"]))
        elif event.get("kind") == "ma_episode_end" and game in started:
            ended[game] = event
    scored = load_done(run / "items.jsonl")
    return {game: Episode(started[game]["task"], started[game]["task_type"], game,
                          (EpisodeStep(0, "", openings.get(game, "")), *steps[game]), bool(scored[game]["correct"]),
                          id=played.index(game) + 1)
            for game in ended if game in scored and game in played}


def check_kin_source(run: Path) -> None:
    """The run `kin` recalls from must have played this probe's games, without memory."""
    config = json.loads((run / "config.json").read_text()) if (run / "config.json").is_file() else None
    if config is None:
        raise SystemExit(f"recall_probe: --kin-from {run}: not a run folder (no config.json)")
    if not (run / "trace.jsonl").is_file():  # the games kin recalls are rebuilt from it: none would be, silently
        raise SystemExit(f"recall_probe: --kin-from {run}: no trace.jsonl (traces stay on the machine that ran them)")
    wanted = {"benchmark": "textworld", "tier": 1, "per_challenge": 3, "seed": 0}
    wrong = {k: config.get(k) for k, v in wanted.items() if config.get(k) != v}
    if config.get("system") == "metaagent" and config.get("memory", "none") != "none":
        wrong["memory"] = config["memory"]
    if wrong:
        raise SystemExit(f"recall_probe: --kin-from {run}: a run of other games or with memory ({wrong}); "
                         f"the probe needs {wanted}, without memory")


def memory_before(source: Path, game: str, played: list[str], folder: Path) -> MemoryStore:
    """A memory holding what `source` held from the games played before `game` (in `played` order); all of it for a
    game the run did not play (a held-out one)."""
    before = set(played[: played.index(game)]) if game in played else set(played)
    db = sqlite3.connect(f"file:{source / 'memory.sqlite'}?mode=ro", uri=True)
    episodes = db.execute("SELECT task, kind, game, won, steps FROM episodes ORDER BY id").fetchall()
    concepts = db.execute("SELECT text, source FROM concepts ORDER BY id").fetchall()
    db.close()
    store = MemoryStore(folder)
    for task, kind, name, won, steps in episodes:
        if name in before:
            store.add_episode(Episode(task, kind, name, tuple(EpisodeStep(*s) for s in json.loads(steps)), bool(won)))
    for text, name in concepts:
        if name in before:
            store.add_concept(text, name)
    return store


async def probe(args: argparse.Namespace) -> None:
    from noosphere.envs import textworld_games

    def tier1(first: int) -> list[Any]:
        return textworld_games(Path.home() / ".cache" / "noosphere" / "textworld", tier=1, per_challenge=3,
                               seed=first, challenges=("coin_collector", "treasure_hunter", "cooking", "custom"),
                               max_steps=40)

    played = [g.name for g in tier1(0)]  # the order the run whose memory this is played its games in
    games = tier1(args.first_game)[: args.games]
    done = set()
    if args.out.exists():
        done = {key(r) for r in map(json.loads, args.out.read_text().splitlines()) if r}
    model = open_model(args.model, cache=CallCache(default_cache_dir() / "calls.sqlite"),
                       settings=Settings(seed=args.seed, max_tokens=400))
    embedder = default_embedder()
    views = [v for v in args.views.split(",") if v]
    kin_episodes: dict[str, Episode] = {}
    if KIN in views and not all((g.name, KIN, args.place) in done for g in games):
        openings = {}
        for known in tier1(0):
            openings[known.name] = known.reset().observation
            known.close()
        kin_episodes = episodes_of_run(args.kin_from, played, openings)
    for game in games:
        if all((game.name, v, args.place) in done for v in views):
            continue
        found = Recall((), ())
        if any(v != KIN for v in views):
            with tempfile.TemporaryDirectory() as tmp:
                store = memory_before(args.memory, game.name, played, Path(tmp))
                sleep(store, embedder)
                rng = random.Random(f"{args.seed}:{game.name}:0:False")  # as `MemorySettings.recall_into` seeds it
                found = recall(store, "", k=args.k, method="random", rng=rng, embedder=embedder)
        before = played[: played.index(game.name)] if game.name in played else played
        kin = Recall(recall_episodes([kin_episodes[g] for g in before if g in kin_episodes], "", args.k, KIN,
                                     rng=random.Random(0), kind=game.kind), ())
        start = game.reset()
        expert = list(game.expert_actions())
        jobs = []
        for view in views:
            if (game.name, view, args.place) in done:
                continue
            state = EpisodeState(start.task, start.observation, start.admissible, start.guide)
            state.recall = shown("planner", kin) if view == KIN else shown(view, found)
            jobs.append((view, state))
        replies = await asyncio.gather(*(model.complete(asked(s, args.place), output=step_form(s.admissible),
                                                        agent="planning+motor", format_at="system")
                                         for _, s in jobs))
        with args.out.open("a") as out:
            for (view, state), reply in zip(jobs, replies, strict=True):
                action = reply.output.action
                row = {"game": game.name, "view": view, "place": args.place, "action": action,
                       "expert_first": expert[0], "first_right": action == expert[0], "in_plan": action in expert,
                       "episodes": len((kin if view == KIN else found).episodes), "memory_chars": len(state.recall)}
                out.write(json.dumps(row) + "\n")
                print(json.dumps(row), flush=True)


def key(row: dict[str, Any]) -> tuple[str, str, str]:
    return row["game"], row["view"], row.get("place", "before")


def asked(state: EpisodeState, place: str) -> list[Message]:
    """The planner's step with the memory `before` the task (as the meta-agent asks it) or `after` the observation,
    last before the question, where the focus note goes."""
    if place == "before" or not state.recall:
        return planner_on_percept(state)
    return react_messages(state, "", f"Memory: {state.recall}\n\n")


def table(rows: list[dict[str, Any]], views: list[str]) -> str:
    games = list(dict.fromkeys(r["game"] for r in rows))
    cell = {(r["game"], r["view"]): r for r in rows}
    lines = ["| game | expert's first | " + " | ".join(views) + " |", "|---|---|" + "---|" * len(views)]
    for game in games:
        first = next(r["expert_first"] for r in rows if r["game"] == game)
        marks = [("**" + c["action"] + "**" if c["first_right"] else c["action"]) if (c := cell.get((game, v)))
                 else "" for v in views]
        lines.append(f"| {game} | {first} | " + " | ".join(marks) + " |")
    right = [sum(cell[(g, v)]["first_right"] for g in games if (g, v) in cell) for v in views]
    asked = [sum((g, v) in cell for g in games) for v in views]
    lines.append("| expert's first action taken | | " + " | ".join(f"{r} of {n}" for r, n in zip(right, asked,
                                                                                               strict=True)) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memory", type=Path, help="a finished run's memory folder (every view but kin)")
    parser.add_argument("--kin-from", type=Path, help="a finished run without memory, whose games `kin` recalls")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--views", default=",".join(VIEWS))
    parser.add_argument("--games", type=int, default=12)
    parser.add_argument("--first-game", type=int, default=0,
                        help="the seed of the first game of each challenge (3: the held-out games 3-5)")
    parser.add_argument("--place", choices=("before", "after"), default="before",
                        help="the memory before the task (the meta-agent's prompt) or after the observation")
    parser.add_argument("--k", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--table-only", action="store_true")
    args = parser.parse_args()
    views = [v for v in args.views.split(",") if v]
    if unknown := [v for v in views if v not in (*VIEWS, KIN)]:
        parser.error(f"unknown view(s) {', '.join(unknown)}; choose from {', '.join((*VIEWS, KIN))}")
    if KIN in views and args.kin_from is None and not args.table_only:
        parser.error("the kin view needs --kin-from RUN (a finished run without memory)")
    if args.kin_from is not None and KIN not in views:
        parser.error("--kin-from is read by the kin view alone: add kin to --views")
    if args.kin_from is not None and not args.table_only:
        check_kin_source(args.kin_from)
    if any(v != KIN for v in views) and args.memory is None and not args.table_only:
        parser.error("every view but kin needs --memory RUN/memory")
    if not args.table_only:
        asyncio.run(probe(args))
    rows = [r for r in map(json.loads, args.out.read_text().splitlines()) if r and key(r)[2] == args.place]
    print(table(rows, [v for v in args.views.split(",") if v]))


if __name__ == "__main__":
    main()
