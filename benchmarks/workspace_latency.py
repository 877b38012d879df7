"""Wall time of one workspace iteration against the ideal of three model latencies.

A scripted model that takes 200 ms per call serves K = 8 processors; the replies make processor
p0 win and exactly three processors (p1..p3) link to it, so the iteration has K bids, K - 1 link
answers, 2L = 6 fusion calls and one STM call. The phases run concurrently, so the iteration
should cost about 3 x 200 ms. The last line is `ratio=<iteration wall time / (3 x 200 ms)>`.

    python benchmarks/workspace_latency.py [--latency 0.2] [--processors 8] [--links 3]
"""

from __future__ import annotations

import argparse
import json

from noosphere.llm import Model, ScriptedBackend
from noosphere.llm.types import Request
from noosphere.trace import Trace
from noosphere.workspace import Observation, ShortTermMemory, Workspace, WorkspaceSettings, sensory


def script(links: int):
    def reply(request: Request) -> str:
        if request.agent == "stm":
            return json.dumps({"answer": "not yet", "confidence": 0.1})
        index = int((request.agent or "p0")[1:])
        relevance = 1.0 if index == 0 else 0.9 if index <= links else 0.5
        return json.dumps({"response": f"{request.agent} sees something", "additional_question": "what else?",
                           "relevance": relevance, "confidence": relevance, "surprise": 0.0})

    return reply


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--processors", type=int, default=8)
    parser.add_argument("--links", type=int, default=3)
    args = parser.parse_args()

    backend = ScriptedBackend(script(args.links), latency_s=args.latency)
    trace = Trace(None)
    model = Model(backend, trace=trace)
    names = [f"p{i}" for i in range(args.processors)]
    observation = Observation.of({name: f"view {name}" for name in names})
    processors = [sensory(name, model, name) for name in names]
    workspace = Workspace(processors, ShortTermMemory(model), WorkspaceSettings(max_iterations=2))
    workspace.run_sync("what is going on?", observation)

    starts = [event.ts for event in trace.of_kind("ws_iteration")]
    first_iteration_s = starts[1] - starts[0]
    calls = sum(1 for event in trace.of_kind("model_call") if event.ts < starts[1])
    links = len(workspace.links)
    print(f"processors={args.processors} links={links} calls_in_iteration={calls} "
          f"expected_calls={args.processors + (args.processors - 1) + 2 * links + 1}")
    print(f"iteration_s={first_iteration_s:.3f} ideal_s={3 * args.latency:.3f}")
    print(f"ratio={first_iteration_s / (3 * args.latency):.3f}")


if __name__ == "__main__":
    main()
