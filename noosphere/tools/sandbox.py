"""Run untrusted Python in a separate interpreter with limits.

The child is `python -I` (isolated: no user site, no environment variables, no cwd on the path),
started with an empty environment, CPU-time and address-space limits, and a wall-clock timeout.
`run_python_expression` evaluates one expression with a small set of builtins (no `open`, no
`__import__`); the expression travels on stdin and the value comes back as text on stdout.
`run_python_program` runs a whole program (model-written code and its tests) in an empty temporary
directory, without network where the machine lets us create a network namespace (`unshare -n`).
"""

from __future__ import annotations

import resource
import secrets
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass

from noosphere.errors import RuntimeFault

_CHILD = r"""
import sys
SAFE = {name: getattr(__builtins__, name) for name in (
    "abs", "all", "any", "bool", "chr", "dict", "divmod", "enumerate", "filter", "float", "frozenset", "int",
    "len", "list", "map", "max", "min", "ord", "pow", "range", "repr", "reversed", "round", "set", "sorted",
    "str", "sum", "tuple", "zip", "isinstance", "True", "False", "None")}
source = sys.stdin.read()
print(repr(eval(compile(source, "<expression>", "eval"), {"__builtins__": SAFE}, {})))
"""


class SandboxError(RuntimeFault):
    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"sandboxed code failed: {reason}")


def _limits(timeout_s: float, memory_mb: int):  # type: ignore[no-untyped-def]
    def limit() -> None:  # runs in the child before exec
        cpu = max(1, int(timeout_s))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
        memory = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    return limit


@dataclass(frozen=True)
class ProgramRun:
    passed: bool
    """The program ran to its last line and exited with status 0, within its limits."""
    output: str
    network_isolated: bool


def _can_unshare_network() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True, check=False)
    return probe.returncode == 0


def run_python_program(source: str, *, timeout_s: float = 10.0, memory_mb: int = 512) -> ProgramRun:
    """Run `source` as a script; it passes only if it runs to its last line and exits with status 0.

    A failing assert, an exception, a timeout or a limit means not passed, and so does an early exit:
    the script ends by printing a random token, so code that calls `sys.exit(0)` before the tests
    does not pass them. The child gets no stdin (an `input()` fails at once instead of waiting).
    """
    isolated = _can_unshare_network()
    token = secrets.token_hex(12)
    command = [*(["unshare", "-n"] if isolated else []), sys.executable, "-I", "-c", f"{source}\nprint({token!r})\n"]
    with tempfile.TemporaryDirectory(prefix="noosphere-sandbox-") as workdir:
        try:
            completed = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, env={},
                                       cwd=workdir, stdin=subprocess.DEVNULL,
                                       preexec_fn=_limits(timeout_s, memory_mb), check=False)
        except subprocess.TimeoutExpired:
            return ProgramRun(False, f"timed out after {timeout_s}s", isolated)
    finished = token in completed.stdout
    output = (completed.stdout.replace(token, "") + completed.stderr).strip()[-2000:]
    if completed.returncode == 0 and not finished:
        output = f"{output}\nthe program exited before its last line (its tests did not all run)".strip()
    return ProgramRun(completed.returncode == 0 and finished, output, isolated)


def run_python_expression(expression: str, *, timeout_s: float = 5.0, memory_mb: int = 256) -> str:
    limit = _limits(timeout_s, memory_mb)
    try:
        completed = subprocess.run([sys.executable, "-I", "-c", _CHILD], input=expression, capture_output=True,
                                   text=True, timeout=timeout_s, env={}, preexec_fn=limit, check=False)
    except subprocess.TimeoutExpired as exc:
        raise SandboxError(f"timed out after {timeout_s}s") from exc
    if completed.returncode < 0:  # killed by the kernel: RLIMIT_CPU sends SIGXCPU, then SIGKILL
        raise SandboxError(f"stopped by signal {-completed.returncode}: over its CPU-time or memory limit")
    if completed.returncode != 0:
        last = (completed.stderr.strip().splitlines() or [f"exit code {completed.returncode}"])[-1]
        raise SandboxError(last)
    return completed.stdout.strip()
