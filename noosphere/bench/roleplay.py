"""Role-play benchmark: a user/assistant pair writes code for each task; hidden tests judge it.

The program is the last version of every definition in the assistant's Python code blocks (a later
fix replaces an earlier one), followed by the task's hidden asserts, run in the sandbox.
"""

from __future__ import annotations

import ast
import re

from noosphere.bench.roleplay_tasks import CodingTask
from noosphere.bench.runner import Scored
from noosphere.llm import Model
from noosphere.society.member import Member
from noosphere.society.roleplay import RolePlay
from noosphere.tools.sandbox import run_python_program

USER_ROLE = ("You are a product owner who needs a piece of Python code. You instruct a programmer one step at a "
             "time, check what they wrote against the task, and ask for fixes until it is right.")
ASSISTANT_ROLE = ("You are an expert Python programmer. You carry out each instruction and always reply with the "
                  "complete, current code in one ```python block.")
_CODE = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.DOTALL)


_KEPT = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Assign, ast.AnnAssign)


def _defined(node: ast.stmt) -> str:
    """What a kept statement defines: a later statement defining the same replaces it."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return node.name
    if isinstance(node, ast.Assign | ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return "=" + ",".join(ast.unparse(target) for target in targets)
    return ast.unparse(node)  # an import stands for itself


def program_from(solutions: list[str]) -> str:
    """The module the assistant's code blocks amount to: imports, constants, functions and classes, each
    in its last version; top-level code that runs (usage examples, prints, the assistant's own asserts,
    `input()`) is left out, and so is a block that is not Python.

    Joining the blocks whole failed correct solutions: an early fragment (a loop over a function
    defined only later) raised before the hidden tests ran.
    """
    last: dict[str, tuple[int, ast.stmt]] = {}
    position = 0
    for text in solutions:
        for block in _CODE.findall(text):
            try:
                body = ast.parse(block).body
            except SyntaxError:
                continue
            for node in body:
                if isinstance(node, _KEPT):
                    position += 1
                    last[_defined(node)] = (position, node)
    return "\n\n".join(ast.unparse(node) for _, node in sorted(last.values(), key=lambda kept: kept[0]))


def pair(model: Model) -> RolePlay:
    return RolePlay(Member("user", model, USER_ROLE), Member("assistant", model, ASSISTANT_ROLE))


async def solve(model: Model, max_messages: int, task: CodingTask) -> Scored:
    roleplay = pair(model)
    roleplay.max_messages = max_messages
    result = await roleplay.run(task.task)
    code = program_from(result.solutions)
    outcome = run_python_program(f"{code}\n\n{task.tests}\n") if code else None
    passed = bool(outcome and outcome.passed)
    return Scored("pass" if passed else "fail", passed, {
        "stopped_by": result.stopped_by, "messages": len(result.transcript), "code_chars": len(code),
        "test_output": outcome.output[-500:] if outcome else "no code block in the assistant's messages",
        "network_isolated": outcome.network_isolated if outcome else None})
