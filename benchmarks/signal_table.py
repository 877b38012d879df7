"""The signal table: where does the model's probability separate right from wrong at all?

Before asking an organisation of a model to beat the model alone on a task, check that the model's
own probabilities carry signal there. For each task this measures, on dev items, the AUROC of the
model's probability against the truth, with a 95 % interval (DeLong):

- `mustard` (per view and whole): P("sarcastic" | the view, the question), scored over the two
  labels, against whether the utterance is sarcastic. Views as the workspace splits the item
  (utterance alone, dialogue + utterance, speaker + utterance); "whole" is the base prompt.
- `gsm8k`: the model solves each problem greedily (as `bench gsm8k --system base`); then P(True),
  its probability of "Yes" to "is the final answer correct?", against whether it was.
- `bfcl`: the model answers with function calls (as `bench bfcl --system base`); then P(True) to
  "do these calls do exactly what the request asks?", against the AST matcher's verdict.
- `miniwob`: no browser; reads a finished `noosphere bench miniwob` run folder (`--miniwob-run`, a base or
  react run). For each episode, its first step's call as the trace holds it (the prompt, without the model
  layer's format instruction, and the agent's reply, the chosen action) and then P(True) to "does the action
  above move the task toward its goal?", against whether the episode was won. An episode whose first call
  the trace lacks is skipped, and counted.
- `textworld`: no game; reads a finished `noosphere bench textworld --system react` run folder
  (`--textworld-run`). For every action of every game, the call that chose it (prompt and reply, as the trace
  holds them) and then P(True) to "does the action above bring the game closer to its goal?", against whether
  the game's score rose at that action (TextWorld's own progress signal, step by step).

Rows are appended per item to `OUT/TASK.jsonl` (a rerun resumes); the table goes to `OUT/signal.md`
and `OUT/signal.json`. `--table-only` writes the table again from the rows files of the tasks named, every row
in each, with no model, data or run folder (the miniwob and textworld rows need their run's trace, which a clone
does not have).

    python benchmarks/signal_table.py [--tasks mustard,gsm8k,bfcl,miniwob,textworld] [--limit-mustard 200]
                                [--limit-gsm8k 50] [--bfcl-per-category 10] [--miniwob-run RUN_DIR]
                                [--textworld-run RUN_DIR] [--model ID] [--parallel 4] [--out DIR]
    python benchmarks/signal_table.py --table-only [--tasks ...] [--out DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from noosphere.bench import bfcl as bfcl_bench
from noosphere.bench import gsm8k as gsm_bench
from noosphere.bench import mustard as mustard_bench
from noosphere.bench.bfcl_data import CATEGORIES, load_bfcl
from noosphere.bench.calibration import auroc, auroc_interval
from noosphere.bench.script_args import at_least_one
from noosphere.errors import UsageError
from noosphere.llm import Message, Model, open_model
from noosphere.llm.scoring import NO, YES
from noosphere.metaagent.scored import PROGRESS_QUESTION
from noosphere.runs import load_done
from noosphere.society import Statement
from noosphere.trace import read_trace

OUT = Path(__file__).parent / "results" / "signal"
MUSTARD_SYSTEM = "You are an expert in pragmatics and humour."
CORRECT_QUESTION = "Is the final answer above correct? Answer Yes or No."
CALLS_QUESTION = bfcl_bench.CALLS_QUESTION  # the call motor's gate asks the same (`bfcl_bench.calls_judged`)
MINIWOB_QUESTION = "Does the action above move the task toward its goal? Answer Yes or No."
MINIWOB_AGENTS = ("base", "react")
TEXTWORLD_QUESTION = PROGRESS_QUESTION  # the scored ReAct step (`--system react-scored`) asks the same
FORMAT_INSTRUCTION = "\n\nReply with one JSON object only"
"""Where the format instruction the model layer adds to a system message (`schema_instruction`) starts: the probe
shows the prompt as the agent wrote it, as GSM8K's and BFCL's do."""


def mustard_prompts(item: mustard_bench.MustardItem) -> dict[str, str]:
    whole = (f"{item.speaker_card()}\n\nDialogue so far:\n{item.dialogue()}\n\n"
             f"Final utterance, by {item.speaker}: \"{item.utterance}\"")
    views = {view.name: view.text for view in mustard_bench.mustard_observation(item).views}
    question = f"{mustard_bench.TASK} Answer with one label: sarcastic or not sarcastic."
    return {name: f"{text}\n\n{question}" for name, text in {"whole": whole, **views}.items()}


async def mustard_row(model: Model, item: mustard_bench.MustardItem) -> dict[str, Any]:
    prompts = mustard_prompts(item)
    scores = await asyncio.gather(*(model.score_options([Message.system(MUSTARD_SYSTEM), Message.user(prompt)],
                                                        mustard_bench.LABELS, agent=name)
                                    for name, prompt in prompts.items()))
    return {"id": item.id, "truth": item.sarcastic,
            **{f"p_{name}": round(s.prob("sarcastic"), 6) for name, s in zip(prompts, scores, strict=True)}}


async def gsm8k_row(model: Model, item: gsm_bench.GsmItem) -> dict[str, Any]:
    messages = [Message.system(gsm_bench.SOLVER_ROLE), Message.user(item.question)]
    done = await model.complete(messages, output=Statement, agent="base")
    assert done.output is not None
    prediction = gsm_bench.normalise_number(done.output.answer)
    p = await model.p_true([*messages, Message.assistant(done.text), Message.user(CORRECT_QUESTION)], agent="judge")
    return {"id": item.id, "truth": prediction == item.gold, "prediction": prediction, "gold": item.gold,
            "p_true": round(p, 6)}


async def bfcl_row(model: Model, item: Any) -> dict[str, Any]:
    scored = await bfcl_bench.solve_base(model, item)
    p = await model.p_true(bfcl_bench.calls_judged(item, scored.prediction), agent="judge")
    return {"id": item.id, "truth": bool(scored.correct), "category": item.category, "calls": scored.prediction,
            "p_true": round(p, 6)}


@dataclass(frozen=True)
class MiniwobEpisode:
    """One episode of a finished MiniWoB run, as its first step: the prompt the agent was given (format instruction
    left out), the reply it wrote (the JSON of the chosen action), the action taken, and whether it was won."""

    id: str
    run: str
    task: str | None
    seed: int | None
    won: bool
    reward: float | None
    steps: int | None
    agent: str
    prompt: tuple[Message, ...]
    reply: str
    action: str


@dataclass(frozen=True)
class _FirstStep:
    prompt: tuple[Message, ...]
    reply: str
    agent: str
    action: str


def run_files(run: Path, flag: str, command: str) -> tuple[Path, Path]:
    """A finished run folder's `items.jsonl` and `trace.jsonl`; `UsageError` naming `flag` if either is missing."""
    items, trace = run / "items.jsonl", run / "trace.jsonl"
    for path, what in ((run, "folder"), (items, "items.jsonl"), (trace, "trace.jsonl")):
        if not path.exists():
            raise UsageError(f"{flag} {run}: no {what} there; give the folder of a finished {command} run")
    return items, trace


def miniwob_episodes(run: Path) -> tuple[list[MiniwobEpisode], int]:
    """The episodes of a finished `bench miniwob` run folder (rows of `items.jsonl`) whose first step's call is in
    `trace.jsonl`, and how many episodes were skipped for lack of it. The first step's call is the first `model_call`
    of a base or react agent tagged with the episode after its (last) start; its reply is the last attempt's
    before the episode's first `web_step` (a reply sent back for repair is not the action). Cached calls are traced
    like the others. Raises `UsageError` if the folder lacks either file."""
    items, trace = run_files(run, "--miniwob-run", "`noosphere bench miniwob --system base` (or react)")
    calls: dict[str, list[Any]] = {}
    first: dict[str, _FirstStep] = {}
    for event in read_trace(trace):
        item = getattr(event, "item_id", None)
        if not isinstance(item, str):
            continue
        if event.kind in ("bench_item_started", "web_episode_started"):  # a resumed run may play an episode again
            calls[item] = []
            first.pop(item, None)
        elif event.kind == "model_call" and getattr(event, "agent", None) in MINIWOB_AGENTS and item not in first:
            calls.setdefault(item, []).append(event)
        elif event.kind == "web_step" and item not in first and calls.get(item):
            made = calls[item]
            first[item] = _FirstStep(_prompt(made[0].messages), made[-1].response, made[0].agent,
                                     str(getattr(event, "action", "")))
    episodes: list[MiniwobEpisode] = []
    skipped = 0
    for row in load_done(items).values():
        step = first.get(row["id"])
        if step is None:
            skipped += 1
            continue
        episodes.append(MiniwobEpisode(row["id"], run.name, row.get("task"), row.get("seed"), bool(row.get("correct")),
                                       row.get("reward"), row.get("steps"), step.agent, step.prompt, step.reply,
                                       step.action))
    return episodes, skipped


def _prompt(messages: list[dict[str, Any]]) -> tuple[Message, ...]:
    """A traced prompt as messages, the format instruction cut from its system message."""
    out = []
    for m in messages:
        content = str(m.get("content", ""))
        if m.get("role") == "system":
            content = content.split(FORMAT_INSTRUCTION, 1)[0]
        out.append(Message(m["role"], content, name=m.get("name")))
    return tuple(out)


def miniwob_judged(episode: MiniwobEpisode) -> list[Message]:
    """The first step's prompt, the agent's reply as its turn, then `MINIWOB_QUESTION`."""
    return [*episode.prompt, Message.assistant(episode.reply), Message.user(MINIWOB_QUESTION)]


async def miniwob_row(model: Model, episode: MiniwobEpisode) -> dict[str, Any]:
    p = await model.p_true(miniwob_judged(episode), agent="judge")
    return {"id": episode.id, "truth": episode.won, "run": episode.run, "task": episode.task, "seed": episode.seed,
            "reward": episode.reward, "steps": episode.steps, "agent": episode.agent, "action": episode.action,
            "p_true": round(p, 6)}


@dataclass(frozen=True)
class GameStep:
    """One action of a finished TextWorld game: the prompt that chose it (format instruction left out), the reply,
    the action, and whether the game's score rose at it."""

    id: str
    run: str
    game: str
    step: int
    prompt: tuple[Message, ...]
    reply: str
    action: str
    scored: bool


def textworld_steps(run: Path) -> tuple[list[GameStep], int]:
    """Every action of every finished game of a `bench textworld --system react` run folder with the call that chose
    it, and how many actions had no call in the trace (skipped). The call of an action is the first `model_call` of
    the react agent tagged with the game since its previous action (the prompt) and the last one (the reply: a
    reply sent back for repair is not the action); an action the reply does not name (the fallback of a step whose
    repairs all failed) is skipped. The score of an `ma_action` is the game's running score, so an
    action scored if it is above the score before it. A game played again on resume starts afresh. Raises
    `UsageError` if the folder lacks a file, or holds no react game."""
    items, trace = run_files(run, "--textworld-run", "`noosphere bench textworld --system react`")
    pending: dict[str, list[Any]] = {}
    score: dict[str, float] = {}
    steps: dict[str, list[GameStep]] = {}
    skipped: dict[str, int] = {}
    for event in read_trace(trace):
        game = getattr(event, "item_id", None)
        if not isinstance(game, str):
            continue
        if event.kind == "bench_item_started":
            pending[game], score[game], steps[game], skipped[game] = [], 0.0, [], 0
        elif event.kind == "model_call" and getattr(event, "agent", None) == "react":
            pending.setdefault(game, []).append(event)
        elif event.kind == "ma_action":
            made, before = pending.get(game, []), score.get(game, 0.0)
            reward = float(getattr(event, "reward", 0.0) or 0.0)
            score[game], pending[game] = reward, []
            action = str(getattr(event, "action", ""))
            if not made or _replied_action(made[-1].response) != action:  # no call, or a forfeited step's fallback
                skipped[game] = skipped.get(game, 0) + 1
                continue
            step = int(getattr(event, "step", len(steps.get(game, [])) + 1))
            steps.setdefault(game, []).append(GameStep(f"{game}#{step}", run.name, game, step,
                                                       _prompt(made[0].messages), made[-1].response,
                                                       action, reward > before))
    finished = list(load_done(items))
    found = [step for game in finished for step in steps.get(game, [])]
    if not found:
        raise UsageError(f"--textworld-run {run}: no action of the react agent in its trace")
    return found, sum(skipped.get(game, 0) for game in finished)


def _replied_action(response: str) -> str | None:
    """The action a react reply names, or None for a reply that is not one (a step whose every repair failed
    plays a fallback action the model never wrote: the probe would ask about an action not taken)."""
    try:
        reply = json.loads(response)
    except (json.JSONDecodeError, TypeError):
        return None
    return str(reply.get("action")) if isinstance(reply, dict) and "action" in reply else None


def textworld_judged(step: GameStep) -> list[Message]:
    """The step's prompt, the agent's reply as its turn, then `TEXTWORLD_QUESTION`."""
    return [*step.prompt, Message.assistant(step.reply), Message.user(TEXTWORLD_QUESTION)]


async def textworld_row(model: Model, step: GameStep) -> dict[str, Any]:
    p = await model.p_true(textworld_judged(step), agent="judge")
    return {"id": step.id, "truth": step.scored, "run": step.run, "game": step.game, "step": step.step,
            "action": step.action, "p_true": round(p, 6)}


def _check_same_run(path: Path, run: str) -> None:
    """Rows are resumed by episode id, which repeats across runs: refuse a rows file of another run."""
    if not path.exists():
        return
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            other = json.loads(line).get("run")
        except (json.JSONDecodeError, AttributeError):
            continue
        if other is not None and other != run:
            raise UsageError(f"{path} holds the rows of run {other}, not {run}; give another --out or move it away")


async def run_task(name: str, items: list[Any], solve: Callable[[Any], Awaitable[dict[str, Any]]], out: Path,
                   parallel: int) -> list[dict[str, Any]]:
    path = out / f"{name}.jsonl"
    done = {row["id"]: row for row in read_rows(path)} if path.exists() else {}
    todo = [item for item in items if item.id not in done]
    gate = asyncio.Semaphore(parallel)
    started = time.perf_counter()
    with path.open("a", encoding="utf-8") as handle:
        async def one(item: Any) -> None:
            async with gate:
                row = await solve(item)
            done[row["id"]] = row
            handle.write(json.dumps(row) + "\n")
            handle.flush()
            print(f"{name} {len(done)}/{len(items)} ({time.perf_counter() - started:.0f} s)", flush=True)

        await asyncio.gather(*(one(item) for item in todo))
    return [done[item.id] for item in items if item.id in done]


def signal_rows(task: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    keys = sorted(k for k in rows[0] if k.startswith("p_")) if rows else []
    table = []
    for key in keys:
        probs = [row[key] for row in rows]
        truth = [bool(row["truth"]) for row in rows]
        area = auroc(probs, truth)
        interval = auroc_interval(probs, truth)
        label = f"{task} ({key[2:]})" if key != "p_true" else task
        table.append({"task": label, "n": len(rows), "positives": sum(truth), "auroc": area,
                      "ci95": list(interval) if interval else None,
                      "mean_p_positive": _mean([p for p, t in zip(probs, truth, strict=True) if t]),
                      "mean_p_negative": _mean([p for p, t in zip(probs, truth, strict=True) if not t]),
                      "signal": bool(area is not None and area >= 0.6)})
    return table


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def write_table(table: list[dict[str, Any]], out: Path, model_id: str) -> None:
    (out / "signal.json").write_text(json.dumps({"model": model_id, "rows": table}, indent=2) + "\n")
    lines = [f"# Signal table ({model_id})", "",
             "AUROC of the model's probability against the truth (95 % DeLong interval); signal = AUROC >= 0.6.", "",
             "| task | n | positives | AUROC | 95 % CI | mean p (positives) | mean p (negatives) | signal |",
             "|---|---|---|---|---|---|---|---|"]
    for row in table:
        ci = f"{row['ci95'][0]:.2f} - {row['ci95'][1]:.2f}" if row["ci95"] else "-"
        area = f"{row['auroc']:.3f}" if row["auroc"] is not None else "-"
        lines.append(f"| {row['task']} | {row['n']} | {row['positives']} | {area} | {ci} | {row['mean_p_positive']} "
                     f"| {row['mean_p_negative']} | {'yes' if row['signal'] else 'no'} |")
    (out / "signal.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


TASKS = ("mustard", "gsm8k", "bfcl", "miniwob", "textworld")


def read_rows(path: Path) -> list[dict[str, Any]]:
    """The rows of a task's file, one per item id (the last one written wins); torn lines are skipped."""
    done: dict[str, dict[str, Any]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
            done[row["id"]] = row
        except (json.JSONDecodeError, KeyError, TypeError):
            continue  # a torn line from a killed run: scored again
    return list(done.values())


def table_only(tasks: list[str], out: Path, model_id: str) -> None:
    """Write the table from the rows files alone. Every file is read before anything is written, so a missing
    one leaves the table as it was."""
    missing = [task for task in tasks if not (out / f"{task}.jsonl").exists()]
    if missing:
        raise UsageError(f"--table-only: no rows for {', '.join(missing)} in {out} (`{missing[0]}.jsonl`)")
    rows = {task: read_rows(out / f"{task}.jsonl") for task in tasks}
    empty = [task for task in tasks if not rows[task]]
    if empty:
        raise UsageError(f"--table-only: {out / (empty[0] + '.jsonl')} holds no row")
    write_table([line for task in tasks for line in signal_rows(task, rows[task])], out, model_id)


async def main_async(args: argparse.Namespace) -> None:
    out = Path(args.out)
    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    unknown = [task for task in tasks if task not in TASKS]
    if unknown:
        raise UsageError(f"unknown task {unknown[0]!r}: {', '.join(TASKS)}")
    if not tasks:
        raise UsageError(f"--tasks names no task: give some of {', '.join(TASKS)}")
    if getattr(args, "table_only", False):
        table_only(tasks, out, args.model)
        return
    episodes: list[MiniwobEpisode] = []
    if "miniwob" in tasks:  # read and checked before any model call
        if not getattr(args, "miniwob_run", None):
            raise UsageError("the miniwob task reads a finished run: give its folder with --miniwob-run")
        episodes, skipped = miniwob_episodes(Path(args.miniwob_run))
        _check_same_run(out / "miniwob.jsonl", Path(args.miniwob_run).name)
        print(f"miniwob: {len(episodes)} episodes with their first call in the trace; {skipped} skipped "
              "(first call not in the trace)", flush=True)
    game_steps: list[GameStep] = []
    if "textworld" in tasks:
        if not getattr(args, "textworld_run", None):
            raise UsageError("the textworld task reads a finished run: give its folder with --textworld-run")
        game_steps, missing = textworld_steps(Path(args.textworld_run))
        _check_same_run(out / "textworld.jsonl", Path(args.textworld_run).name)
        print(f"textworld: {len(game_steps)} actions with their call in the trace, {sum(s.scored for s in game_steps)} "
              f"of them scored; {missing} skipped (no call in the trace)", flush=True)
    model = open_model(args.model)
    for task in tasks:  # what each task scores, refused before any call or file (mustard its labels, others P(True))
        model.check_scoring(mustard_bench.LABELS if task == "mustard" else (YES, NO))
    items = {task: task_items(task, args, episodes, game_steps) for task in tasks}  # every task's data, before a call
    out.mkdir(parents=True, exist_ok=True)
    rowers: dict[str, Callable[[Any], Awaitable[dict[str, Any]]]] = {
        "mustard": partial(mustard_row, model), "gsm8k": partial(gsm8k_row, model), "bfcl": partial(bfcl_row, model),
        "miniwob": partial(miniwob_row, model), "textworld": partial(textworld_row, model)}
    table: list[dict[str, Any]] = []
    for task in tasks:
        rows = await run_task(task, items[task], rowers[task], out, args.parallel)
        table += signal_rows(task, rows)
        write_table(table, out, model.id)


def task_items(task: str, args: argparse.Namespace, episodes: list[MiniwobEpisode],
               game_steps: list[GameStep]) -> list[Any]:
    """The items a task scores, loaded (and so checked) before any call: a data file missing for the last task was
    found only after the first tasks had been scored."""
    if task == "mustard":
        return list(mustard_bench.load_mustard(limit=args.limit_mustard))
    if task == "gsm8k":
        return list(gsm_bench.load_gsm8k(limit=args.limit_gsm8k))
    if task == "bfcl":
        return [item for category in CATEGORIES for item in load_bfcl(category, limit=args.bfcl_per_category)]
    return list(episodes) if task == "miniwob" else list(game_steps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", default="gsm8k,bfcl,mustard")
    parser.add_argument("--limit-mustard", type=at_least_one, default=200)
    parser.add_argument("--limit-gsm8k", type=at_least_one, default=50)
    parser.add_argument("--bfcl-per-category", type=at_least_one, default=10)
    parser.add_argument("--miniwob-run", default=None, help="a finished `bench miniwob` run folder (task miniwob)")
    parser.add_argument("--textworld-run", default=None,
                        help="a finished `bench textworld --system react` run folder (task textworld)")
    parser.add_argument("--model", default="local:qwen2.5-coder-1.5b")
    parser.add_argument("--parallel", type=at_least_one, default=4)
    parser.add_argument("--out", default=str(OUT))
    parser.add_argument("--table-only", action="store_true",
                        help="write the table from OUT's rows files for --tasks, with no model call")
    try:
        asyncio.run(main_async(parser.parse_args()))
    except UsageError as exc:
        raise SystemExit(f"signal_table: {exc}") from None


if __name__ == "__main__":
    main()
