"""Load time, decode speed, and the overhead of noosphere's model layer over raw llama-cpp-python.

Both paths run the same prompt with the same sampling settings on the same loaded weights and
the same thread, interleaved round by round (alternating which goes first) so that warm-up and
prompt-cache effects hit both equally. On a shared 2-core machine single calls vary by about 10%,
so the overhead compares the fastest call of each path (noise only ever adds time); medians are
printed too. The last line is `overhead_pct=<number>`.

    python benchmarks/model_overhead.py [--model local:qwen2.5-coder-1.5b] [--tokens 128] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

from noosphere.llm import Message, Settings, open_model

PROMPT = [Message.system("You are a storyteller."),
          Message.user("Tell a long story about a lighthouse keeper who finds a map. Keep going until stopped.")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="local:qwen2.5-coder-1.5b")
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()

    started = time.perf_counter()
    model = open_model(args.model)
    opened = time.perf_counter()
    llama = model.backend.llama  # loads the weights
    loaded = time.perf_counter()
    print(f"model={args.model} assemble_or_verify_s={opened - started:.2f} load_s={loaded - opened:.2f}")

    settings = Settings(temperature=0.0, max_tokens=args.tokens, seed=0)
    raw_messages = [m.to_openai() for m in PROMPT]

    def raw_call() -> tuple[float, int]:
        # The same llama-cpp-python call on the model's own thread, so both paths share one OpenMP team.
        begin = time.perf_counter()
        response = model.backend.run_on_model_thread(lambda: llama.create_chat_completion(
            messages=raw_messages, temperature=settings.temperature, top_p=settings.top_p,
            max_tokens=settings.max_tokens, seed=settings.seed, stop=None, grammar=None))
        return time.perf_counter() - begin, response["usage"]["completion_tokens"]

    def layer_call() -> tuple[float, int]:
        begin = time.perf_counter()
        completion = model.complete_sync(PROMPT, settings=settings)
        return time.perf_counter() - begin, completion.usage.completion_tokens

    raw_call()  # warm-up: first evaluation of the prompt, allocations
    raw_times, layer_times = [], []
    for round_index in range(args.rounds):
        order = (raw_call, layer_call) if round_index % 2 == 0 else (layer_call, raw_call)
        for call in order:
            seconds, tokens = call()
            (raw_times if call is raw_call else layer_times).append((seconds, tokens))
    raw_median = statistics.median(s for s, _ in raw_times)
    layer_median = statistics.median(s for s, _ in layer_times)
    raw_best = min(s for s, _ in raw_times)
    layer_best = min(s for s, _ in layer_times)
    tokens = raw_times[0][1]
    assert all(t == tokens for _, t in raw_times + layer_times), "both paths must decode the same tokens"
    print(f"completion_tokens={tokens} rounds={args.rounds}")
    print(f"raw_median_s={raw_median:.3f} layer_median_s={layer_median:.3f} "
          f"median_overhead_pct={(layer_median - raw_median) / raw_median * 100:.2f}")
    print(f"raw_best_s={raw_best:.3f} layer_best_s={layer_best:.3f}")
    print(f"tokens_per_s_raw={tokens / raw_best:.1f} tokens_per_s_layer={tokens / layer_best:.1f}")
    print(f"overhead_pct={(layer_best - raw_best) / raw_best * 100:.2f}")


if __name__ == "__main__":
    main()
