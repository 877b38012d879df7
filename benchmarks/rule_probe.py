"""What the learning agent keeps now, asked again exactly as a finished run asked it.

Stop 54 found the only rule of a TextWorld run with both memories to be the learning agent's question said back ten
times ("The task was solved. One general rule: The task was solved. ..."), and the rules of two earlier runs to open
with that question. The agent's form (`noosphere.metaagent.forms.answer_form`) now keeps what follows a question said
back and refuses a reply that is only the question or a loop, with a correction and another attempt, as it refuses
malformed JSON. This probe takes every learning call in a run's trace, checks that the form rebuilds the very prompt
the run sent, and asks it again through that form on the same model (the call cache replays the run's own first
reply, so only the corrections are new calls). One JSON row per call to `--out` (appended), then a table.

    python benchmarks/rule_probe.py RUN [RUN ...] --out benchmarks/results/textworld/rule_probe.jsonl [--model ID]
                                    [--question TEXT]
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

from noosphere.concurrent import Forfeit, attempt
from noosphere.datafiles import scan_json_lines
from noosphere.errors import UsageError
from noosphere.llm import Message
from noosphere.llm.cache import CallCache
from noosphere.llm.registry import DEFAULT_MODEL, open_model
from noosphere.llm.weights import default_cache_dir
from noosphere.metaagent.agents import FORMAT_AT
from noosphere.metaagent.forms import answer_form
from noosphere.trace import Trace, run_trace

INSTRUCTION = "\n\nReply with one JSON object only"


def learning_calls(run: Path) -> list[dict[str, Any]]:
    """The first attempt of every learning call the run's trace holds, with its game."""
    events, _ = scan_json_lines(run_trace(run))
    return [event for _, event in events
            if event.get("kind") == "model_call" and event.get("agent") == "learning" and event.get("attempt") == 1]


def question_of(messages: list[Message]) -> str:
    """The learning agent's question: the last line before the format instruction."""
    return messages[-1].content.split(INSTRUCTION)[0].rstrip().splitlines()[-1]


async def ask_again(model: Any, event: dict[str, Any], question: str | None = None) -> dict[str, Any]:
    """The run's call through the checked form; with `question`, the same prompt asking that instead."""
    sent = [Message(m["role"], m["content"]) for m in event["messages"]]
    asked = question_of(sent)
    form = answer_form(asked)
    bare = [*sent[:-1], Message(sent[-1].role, sent[-1].content.split(INSTRUCTION)[0])]
    rebuilt = list(model.instructed(bare, form, format_at=FORMAT_AT))
    if [m.content for m in rebuilt] != [m.content for m in sent]:
        raise SystemExit(f"rule_probe: {event.get('item_id')}: the form no longer rebuilds the prompt the run sent")
    if question is not None:
        form = answer_form(question)
        last = bare[-1].content
        bare = [*bare[:-1], Message(bare[-1].role, last[:last.rindex(asked)] + question)]
    before = len(model.trace.events)
    done = await attempt(model.complete(bare, output=form, agent="learning", format_at=FORMAT_AT))
    calls = [e for e in model.trace.events[before:] if e.kind == "model_call"]
    return {"game": event.get("item_id"), "question": question or asked,
            "run_reply": json.loads(event["response"])["text"],
            "kept": None if isinstance(done, Forfeit) else done.output.text,  # type: ignore[union-attr]
            "forfeited": str(done) if isinstance(done, Forfeit) else None, "attempts": len(calls),
            "replies": [c.response for c in calls]}


async def main_async(args: argparse.Namespace) -> list[dict[str, Any]]:
    model = open_model(args.model, trace=Trace(None), cache=CallCache(default_cache_dir() / "calls.sqlite"))
    rows = []
    for run in args.runs:
        for event in learning_calls(run):
            row = {"run": run.name, **await ask_again(model, event, args.question)}
            with args.out.open("a") as handle:
                handle.write(json.dumps(row) + "\n")
            rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--question", help="ask this instead of the run's question (a prompt to try)")
    args = parser.parse_args(argv)
    try:
        for run in args.runs:  # a folder without its trace is refused before the model is opened
            run_trace(run)
        rows = asyncio.run(main_async(args))
    except UsageError as exc:
        raise SystemExit(f"rule_probe: {exc}") from None
    print("| run | game | the run kept | kept now | attempts |")
    print("|---|---|---|---|---|")
    for row in rows:
        print(f"| {row['run']} | {row['game']} | {row['run_reply'][:80]} | {(row['kept'] or '(forfeited)')[:120]} | "
              f"{row['attempts']} |")


if __name__ == "__main__":
    main()
