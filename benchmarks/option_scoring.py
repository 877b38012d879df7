"""What scoring two to four options costs against one short generation, on the same prompt and model.

Each trial evaluates the same MUStARD-sized prompt from scratch (a trial number at the start of the
system message keeps the engine from reusing an earlier trial's cache), once generated (the label,
up to `--tokens` tokens, greedy) and once scored with 2, 3 and 4 options; the order alternates by
trial so warm-up and machine noise hit every path alike. Scoring evaluates the prompt once and each
option's tokens once (the options share the prompt's cache); the generation evaluates the prompt and
then decodes token by token. The call cache is off. Medians of the trials are compared; the last
line is `option_overhead_pct=` of the most expensive option count (the worst case of 2 to 4).

    python benchmarks/option_scoring.py [--model local:qwen2.5-coder-1.5b] [--trials 7] [--tokens 8]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time

from noosphere.bench.script_args import at_least_one
from noosphere.errors import UsageError
from noosphere.llm import Message, Settings, open_model

OPTIONS = ("sarcastic", "not sarcastic", "unclear", "joking")
DIALOGUE = """Sheldon: I've been thinking about our friendship agreement.
Leonard: Oh good, I was hoping we'd spend the evening on paperwork.
Sheldon: Excellent. I've drafted several amendments, each with a preamble.
Penny: Wow, a preamble. Leonard, you must be thrilled.
Leonard: You have no idea how much I've been looking forward to this.
Sheldon: Splendid. Amendment one concerns the thermostat, which you have touched without a permit.
Penny: Without a permit? That's practically a felony around here."""
QUESTION = ("Is the speaker being sarcastic in the final utterance? Sarcasm means saying something whose intended "
            "meaning differs from its literal meaning, usually to mock or joke. Answer with one label: "
            + ", ".join(OPTIONS) + ".")


def messages(trial: int, kind: str) -> list[Message]:
    return [Message.system(f"[trial {trial} {kind}] You are an expert in pragmatics and humour."),
            Message.user(f"The speakers are characters of The Big Bang Theory.\n\nDialogue:\n{DIALOGUE}\n\n"
                         f"Final utterance, by Leonard: \"Oh, fantastic. More rules.\"\n\n{QUESTION}")]


async def run(args: argparse.Namespace) -> dict[str, object]:
    model = open_model(args.model)
    model.check_scoring(OPTIONS)  # a model that cannot score them is refused before the warm-up call
    settings = Settings(temperature=0.0, max_tokens=args.tokens)
    await model.complete(messages(-1, "warm"), settings=settings)  # load the weights, warm the engine

    async def generate(trial: int) -> tuple[float, int]:
        begin = time.perf_counter()
        done = await model.complete(messages(trial, "generate"), settings=settings)
        return time.perf_counter() - begin, done.usage.completion_tokens

    async def score(trial: int, n: int) -> float:
        begin = time.perf_counter()
        await model.score_options(messages(trial, f"score{n}"), OPTIONS[:n])
        return time.perf_counter() - begin

    generated: list[float] = []
    tokens: list[int] = []
    scored: dict[int, list[float]] = {2: [], 3: [], 4: []}
    for trial in range(args.trials):
        jobs: list[str] = ["generate", "2", "3", "4"]
        if trial % 2:
            jobs.reverse()
        for job in jobs:
            if job == "generate":
                seconds, n_tokens = await generate(trial)
                generated.append(seconds)
                tokens.append(n_tokens)
            else:
                scored[int(job)].append(await score(trial, int(job)))
    base = statistics.median(generated)
    overhead = {n: 100 * (statistics.median(times) / base - 1) for n, times in scored.items()}
    return {"model": args.model, "trials": args.trials, "generation_max_tokens": args.tokens,
            "generation_median_s": round(base, 3), "generated_tokens_median": statistics.median(tokens),
            "prompt_tokens": model.backend.count_tokens(tuple(messages(0, "score4"))),
            "score_median_s": {n: round(statistics.median(t), 3) for n, t in scored.items()},
            "overhead_pct": {n: round(v, 1) for n, v in overhead.items()}, "worst": round(max(overhead.values()), 1)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="local:qwen2.5-coder-1.5b")
    parser.add_argument("--trials", type=at_least_one, default=7)
    parser.add_argument("--tokens", type=at_least_one, default=8, help="the generation's max_tokens (a short label)")
    args = parser.parse_args(argv)
    try:
        result = asyncio.run(run(args))
    except UsageError as exc:
        raise SystemExit(f"option_scoring: {exc}") from None
    print(json.dumps(result, indent=2))
    print(f"option_overhead_pct={result['worst']}")


if __name__ == "__main__":
    main()
