"""The CLI in a process of its own on a scripted society, for tests of a person in a society that stop the run
(`python -m tests.human_driver ARGS`): `python -m tests.human_driver ask --system society --society FILE ...`.

The scripted members answer from their prompts alone (`society_script`), and their backend has a fingerprint
that does not change from one process to the next, as a real model's does not: a resumed run finds their
replies in the run's own cache.
"""

from __future__ import annotations

import sys
from typing import Any

from noosphere.cli import make_app, run
from noosphere.llm import Model, ScriptedBackend
from noosphere.llm.types import Request


def society_script(request: Request) -> Any:
    """A democracy's model members: the organizer asks one question and sums up, the others say 42 and vote A."""
    last = request.messages[-1].content
    properties = (request.json_schema or {}).get("properties", {})
    if request.agent == "organizer":
        if "summary" in properties:
            return {"summary": "Most members found 42.", "answer": "42"}
        return {"question": "Which step could be wrong?"}
    if "choice" in properties:
        return {"reasoning": "A holds up.", "choice": "A"}
    if "Keep your answer" in last:
        return {"reasoning": "I keep mine.", "choice": "A"}
    return {"reasoning": f"{request.agent} multiplies 6 by 7.", "answer": "42"}


class SteadyScripted(ScriptedBackend):
    @property
    def fingerprint(self) -> str:
        return "scripted:society-script"


def opener() -> Any:
    backend = SteadyScripted(society_script)

    def open_(model_id: str, **kwargs: Any) -> Model:
        return Model(backend, **kwargs)

    open_.backend = backend  # type: ignore[attr-defined]
    return open_


def main() -> int:
    return run(make_app(opener()), sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
