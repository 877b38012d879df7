"""The CLI in a process of its own on a scripted CTM model, for tests that cannot run a benchmark in theirs (a
Playwright browser holds the test process's event loop): `python -m tests.ctm_driver ARGS`.

Every view of an item holds "Case N"; every processor bids a chunk naming its case, and the STM is sure at once for
every third case (the workspace stops after one iteration) and never for the others (it runs all three).
"""

from __future__ import annotations

import re
import sys
from typing import Any

from noosphere.cli import make_app, run
from noosphere.llm import Model, ScriptedBackend
from noosphere.llm.types import Request
from tests.helpers import chunk_reply, stm_reply


def script(request: Request) -> Any:
    case = int(re.findall(r"[Cc]ase (\d+)", " ".join(m.content for m in request.messages))[-1])
    if request.agent == "stm":
        return stm_reply("it mocks", 0.9 if case % 3 == 0 else 0.3, label="sarcastic")
    return chunk_reply(f"case {case}: {request.agent} view", "what does the tone say?", 0.7, 0.7)


def main() -> int:
    backend = ScriptedBackend(script, latency_s=0.005)

    def opener(model_id: str, **kwargs: Any) -> Model:
        return Model(backend, **kwargs)

    return run(make_app(opener), sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
