"""Role-play benchmark: a user/assistant pair writes code for each task; hidden tests judge it.

The program is what the assistant's Python code blocks define, each definition in its last version
(`program.py`), followed by the task's hidden asserts, run in the sandbox.
"""

from __future__ import annotations

import asyncio

from noosphere.bench.program import program_from
from noosphere.bench.roleplay_tasks import CodingTask
from noosphere.bench.runner import Scored
from noosphere.llm import Model
from noosphere.society.member import Member
from noosphere.society.roleplay import RolePlay
from noosphere.tools.sandbox import run_python_program

USER_ROLE = ("You are a product owner who needs a piece of Python code. You instruct a programmer one step at a "
             "time, check what they wrote against the task, and ask for fixes until it is right.")
SPECIFIER_ROLE = ("You turn a short programming request into a precise specification: the inputs to expect, "
                  "the edge cases to handle and the exact result, keeping every name and signature it gives.")
ASSISTANT_ROLE = ("You are an expert Python programmer. You carry out each instruction and always reply with the "
                  "complete, current code in one ```python block.")


def pair(model: Model, *, specify: bool = False, max_messages: int = 50) -> RolePlay:
    specifier = Member("specifier", model, SPECIFIER_ROLE) if specify else None
    return RolePlay(Member("user", model, USER_ROLE), Member("assistant", model, ASSISTANT_ROLE), specifier,
                    max_messages)


async def solve(model: Model, max_messages: int, task: CodingTask, *, specify: bool = False) -> Scored:
    roleplay = pair(model, specify=specify, max_messages=max_messages)
    result = await roleplay.run(task.task)
    if result.spent is not None:  # the run's budget: the task stays unscored for a resume with more
        raise result.spent
    code = program_from(result.solutions)
    # the tests run in a subprocess for up to seconds: off the event loop, so other tasks' calls go on meanwhile
    outcome = await asyncio.to_thread(run_python_program, f"{code}\n\n{task.tests}\n") if code else None
    passed = bool(outcome and outcome.passed)
    detail = {"stopped_by": result.stopped_by, "messages": len(result.transcript), "code_chars": len(code),
              "test_output": outcome.output[-500:] if outcome else "no code block in the assistant's messages",
              "network_isolated": outcome.network_isolated if outcome else None}
    # its confidence, as a role-play society's support: 1.0 when the user agent declared the task done, else 0.5
    return Scored("pass" if passed else "fail", passed, detail, 1.0 if result.stopped_by == "done" else 0.5)
