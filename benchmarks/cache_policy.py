"""Replays the model calls of run traces through the batch engine's cache placement, offline, under cache policies.

A trace's `model_call` events give each call's messages, reply, start (its end minus its latency) and end. Their
token sequences (the model's own chat template; the reply's tokens appended, as the engine keeps them) are
placed as `BatchEngine` places them: a free sequence that continues its own cache or an empty one, else the
least recently used; the longest cached prefix anywhere is shared by reference; caches are dropped least
recently used first when the cells run out. Under each policy it counts the prompt tokens evaluated (not
reused) and the cells held while tokens are decoded: in llama.cpp's unified cache every token attends over
all the cells in use, so idle caches slow everything beside them (`benchmarks/idle_cells.py` measures by how
much). Calls answered by the call cache never reached the engine and are left out. No model runs: only its
tokenizer is loaded.

Policies: `keep` (the engine's: up to `caches` sequences, dropped only when cells run out) and
`idle=N` (besides, idle caches are dropped least recently used first whenever the cells held by idle caches
alone exceed N).

    python benchmarks/cache_policy.py RUN_DIR [RUN_DIR ...] [--policies keep idle=2048 idle=4096]
"""

from __future__ import annotations

import argparse
import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from noosphere.errors import UsageError
from noosphere.llm.batching import CACHES_PER_SLOT, MIN_SHARED_PREFIX, common_prefix
from noosphere.llm.llama_loader import CELLS_PER_SLOT
from noosphere.llm.local import DEFAULT_SLOTS
from noosphere.trace import run_trace


@dataclass(frozen=True)
class Call:
    start: float
    end: float
    prompt: tuple[int, ...]
    reply: tuple[int, ...]


@dataclass
class Seq:
    cells: list[int] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    busy_until: float = -1.0
    last_used: int = -1


def load_calls(run: Path, tokenize: Any) -> list[Call]:
    calls = []
    for line in (run / "trace.jsonl").open(encoding="utf-8"):
        event = json.loads(line)
        if event.get("kind") != "model_call" or event.get("cached") or not event.get("messages"):
            continue
        prompt, reply = tokenize(event["messages"], event.get("response") or "")
        end = float(event["ts"])
        calls.append(Call(end - float(event.get("latency_s") or 0.0), end, prompt, reply))
    return sorted(calls, key=lambda call: call.start)


def replay(calls: list[Call], *, idle_budget: int | None = None, slots: int = DEFAULT_SLOTS) -> dict[str, float]:
    seqs = [Seq() for _ in range(slots * CACHES_PER_SLOT)]
    n_ctx = slots * CELLS_PER_SLOT
    fresh = itertools.count()
    evaluated = reused = decoded = held = 0

    def used() -> int:
        return len({cell for seq in seqs for cell in seq.cells})

    def idle_only(now: float) -> int:
        busy = {cell for seq in seqs if seq.busy_until > now for cell in seq.cells}
        return len({cell for seq in seqs if seq.busy_until <= now for cell in seq.cells} - busy)

    def drop_lru(now: float, keep: set[int]) -> bool:
        idle = [i for i, seq in enumerate(seqs) if seq.busy_until <= now and seq.cells and i not in keep]
        if not idle:
            return False
        oldest = seqs[min(idle, key=lambda i: seqs[i].last_used)]
        oldest.cells, oldest.tokens = [], []
        return True

    for n, call in enumerate(calls):
        now = call.start
        free = [i for i, seq in enumerate(seqs) if seq.busy_until <= now]
        if not free:  # more calls in flight than sequences: the engine would queue it; count it on the LRU
            free = [min(range(len(seqs)), key=lambda i: seqs[i].busy_until)]

        def reusable(i: int, call: Call = call) -> int:
            return min(common_prefix(seqs[i].tokens, call.prompt), len(call.prompt) - 1)

        intact = [i for i in free if len(seqs[i].tokens) - reusable(i) < MIN_SHARED_PREFIX]
        own = max(intact, key=reusable) if intact else min(free, key=lambda i: seqs[i].last_used)
        source = max(range(len(seqs)), key=reusable)
        if reusable(source) <= reusable(own):
            source = own
        reuse = max(reusable(source), 0)
        prefix = seqs[source].cells[:reuse]
        seqs[own].cells, seqs[own].tokens = [], []
        need = len(call.prompt) - reuse + len(call.reply)
        while used() + need > n_ctx and drop_lru(now, {own, source}):
            pass
        seq = seqs[own]
        seq.cells = [*prefix, *(next(fresh) for _ in range(need))]
        seq.tokens = [*call.prompt, *call.reply]
        seq.busy_until, seq.last_used = call.end, n
        if idle_budget is not None:
            while idle_only(now) > idle_budget and drop_lru(now, {own}):
                pass
        cells = used()
        evaluated += len(call.prompt) - reuse
        reused += reuse
        decoded += len(call.prompt) - reuse + len(call.reply)
        held += (len(call.prompt) - reuse + len(call.reply)) * cells
    return {"calls": len(calls), "prompt_tokens": evaluated + reused, "evaluated": evaluated,
            "reused_pct": 100 * reused / max(1, evaluated + reused),
            "cells_per_decoded_token": held / max(1, decoded)}


def tokenizer(model_id: str) -> Any:
    from llama_cpp import Llama
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    from noosphere.llm.weights import LOCAL_WEIGHTS, ensure_gguf

    path = ensure_gguf(LOCAL_WEIGHTS[model_id.removeprefix("local:")])
    llama = Llama(model_path=str(path), vocab_only=True, verbose=False)
    formatter = Jinja2ChatFormatter(template=llama.metadata["tokenizer.chat_template"],
                                    eos_token=llama._model.token_get_text(llama.token_eos()),
                                    bos_token=llama._model.token_get_text(llama.token_bos()))

    def tokenize(messages: list[dict[str, Any]], reply: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
        result = formatter(messages=[{"role": m["role"], "content": m["content"]} for m in messages])
        prompt = llama.tokenize(result.prompt.encode(), add_bos=not result.added_special, special=True)
        return tuple(prompt), tuple(llama.tokenize(reply.encode(), add_bos=False, special=False))

    return tokenize


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", type=Path, nargs="+", help="run folders with a trace.jsonl (replayed together)")
    parser.add_argument("--model", default="local:qwen2.5-coder-1.5b")
    parser.add_argument("--policies", nargs="+",
                        default=["keep", "idle=2048", "idle=4096", "idle=8192"])
    args = parser.parse_args(argv)
    budgets = []
    for policy in args.policies:
        name, _, value = policy.partition("=")
        if name not in ("keep", "idle") or (name == "idle") != value.isdigit():
            parser.error(f"unknown policy {policy!r}: keep or idle=N")
        budgets.append(int(value) if value else None)
    try:
        for run in args.runs:
            run_trace(run)
    except UsageError as exc:
        raise SystemExit(f"cache_policy: {exc}") from None
    tokenize = tokenizer(args.model)
    calls = sorted((call for run in args.runs for call in load_calls(run, tokenize)), key=lambda call: call.start)
    for policy, budget in zip(args.policies, budgets, strict=True):
        result = replay(calls, idle_budget=budget)
        print(f"policy={policy} " + " ".join(f"{k}={v:.1f}" if isinstance(v, float) else f"{k}={v}"
                                             for k, v in result.items()), flush=True)


if __name__ == "__main__":
    main()
