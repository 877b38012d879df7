"""Run model-written Python in a bubblewrap sandbox, with limits, and kill everything it started.

Confinement (`bwrap.py`): a read-only minimal root, no network, no host files beyond what the
interpreter needs, uid 65534, private size-limited /tmp and working folder. Limits, set by a tiny
launcher inside the sandbox before the code runs: CPU seconds, address space, processes (so a fork bomb
stops at the limit) and file size. A wall-clock timeout kills the whole process group, and with it the
sandbox's PID namespace, so no child outlives the call (`process.py`).

Without bubblewrap, code tools fail with one line saying how to install it. Running unconfined needs
an explicit opt-in (`Sandbox(unsandboxed=True)` or the environment variable NOOSPHERE_UNSANDBOXED=1),
which is logged as a warning and recorded as a `sandbox_unconfined` trace event on every run. Then only the
limits and the group kill remain, and both can be got round: the kernel does not hold root to the process
limit, and a child that starts its own session (`os.setsid`) leaves the group and outlives the call.

The memory limit is each process's address space, and, where a control group can be made (`cgroup.py`: as
root on cgroup v1, or in a delegated v2 subtree), the memory of all its processes together, files in memory
included; the group also counts its processes apart from other sandboxes and kills whatever is left at the end,
unsandboxed too. Without one, memory held outside the address space (`memfd_create`, each file under the
file-size limit) or spread over several processes adds up past the limit: `ProgramRun.memory_bounded` says
which held.

`run_python_program` runs a whole program (model-written code and its tests); `run_python_expression`
evaluates one expression with a few builtins, after refusing any name or attribute that starts with
an underscore (the way from `()` to `os.system`).
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import logging
import math
import os
import secrets
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from noosphere.errors import RuntimeFault, UsageError
from noosphere.syntax import parse
from noosphere.tools.bwrap import NOBODY, WORKDIR, bwrap_command, bwrap_path
from noosphere.tools.cgroup import Cgroup
from noosphere.tools.process import Finished, run_in_group
from noosphere.trace import Event, Trace

UNSANDBOXED_ENV = "NOOSPHERE_UNSANDBOXED"
MB = 1024 * 1024
SHARED_BACKSTOP = 16
"""With a control group counting a sandbox's own processes, the per-user limit is this many times higher."""
INSTALL = "apt-get install bubblewrap"
log = logging.getLogger(__name__)


class SandboxError(RuntimeFault):
    """Sandboxed code failed, was refused, or was stopped by a limit."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"sandboxed code failed: {reason}")


class SandboxUnavailableError(UsageError):
    """bubblewrap is missing or cannot create a sandbox on this machine, and no one opted out of it."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"model-written code runs only in a bubblewrap sandbox, and {reason}; install it with: "
                         f"{INSTALL} (or set {UNSANDBOXED_ENV}=1 to run such code unconfined, at your own risk)")


class SandboxUnconfined(Event):
    """Model-written code ran without bubblewrap because someone opted in (`Sandbox.run`, at every run of code, when the
    sandbox has a trace): what ran (`program` or `expression`) and the opt-in that allowed it."""

    kind: str = "sandbox_unconfined"
    what: str
    reason: str


@dataclass(frozen=True)
class Limits:
    timeout_s: float = 10.0
    """Wall clock. The CPU-time limit is one second more (rounded up), so a single-threaded loop meets the
    deadline first and is reported as timed out; the CPU limit catches only work spread over threads."""
    memory_mb: int = 512
    """Address space of each process (not of the sandbox as a whole: see the module's note)."""
    processes: int = 64
    """Processes and threads of uid 65534: of this sandbox under a user namespace; as root, of all sandboxes
    running at that moment on the machine (the kernel counts them per real uid)."""
    file_mb: int = 16
    """Largest file it may write."""
    tmpfs_mb: int = 64
    """Size of each of its writable folders (/tmp and the working folder)."""


# Runs inside the sandbox (as the first program, without site-packages: it starts in a tenth of the time):
# become nobody for real when bwrap ran as root, set the limits, then become the interpreter running the code.
_LAUNCHER = r"""
import os, resource, sys
cpu, memory, processes, file_size, drop = (int(v) for v in sys.argv[1:6])
if drop and os.getuid() == 0:
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)
for limit, soft, hard in ((resource.RLIMIT_CPU, cpu, cpu + 1), (resource.RLIMIT_AS, memory, memory),
                          (resource.RLIMIT_NPROC, processes, processes), (resource.RLIMIT_FSIZE, file_size, file_size),
                          (resource.RLIMIT_CORE, 0, 0)):
    resource.setrlimit(limit, (soft, hard))
os.execv(sys.executable, [sys.executable, "-I", *sys.argv[6:]])
""".replace("NOBODY", str(NOBODY))

_PROBE = "import os; assert os.getuid() == NOBODY".replace("NOBODY", str(NOBODY))


@functools.cache
def _probe(bwrap: str, euid: int) -> str | None:
    """Why bwrap cannot run the interpreter confined here, or None when it can (asked once per process)."""
    with tempfile.TemporaryDirectory(prefix="noosphere-sandbox-") as folder:
        main = Path(folder, "main.py")
        main.write_text(_PROBE)
        command = bwrap_command(bwrap, {"main.py": main}, tmpfs_bytes=1 << 20)
        finished = run_in_group([*command, *_launch(Limits(), True), "main.py"], timeout_s=30)
    if finished.returncode == 0:
        return None
    lines = (finished.stderr.strip() or f"exit status {finished.returncode}").splitlines()
    return f"bubblewrap cannot start a sandbox here ({lines[-1][:200]})"


def _launch(limits: Limits, drop: bool, processes: int | None = None) -> list[str]:
    return [sys.executable, "-I", "-S", "-c", _LAUNCHER, str(math.ceil(limits.timeout_s) + 1),
            str(limits.memory_mb * MB), str(processes or limits.processes), str(limits.file_mb * MB), str(int(drop))]


@dataclass(frozen=True)
class Ran(Finished):
    """A sandbox's run: its exit, output and what its control group saw."""

    memory_bounded: bool = False
    """A control group held the memory of all its processes together (else each process's address space only)."""
    memory_kills: int = 0
    """Processes the kernel killed for going over that memory limit."""


def _signal_of(returncode: int | None, sandboxed: bool) -> int | None:
    """The signal that killed the code: bwrap reports it as 128 + the signal, a plain child as minus it."""
    if returncode is None:
        return None
    if returncode < 0:
        return -returncode
    return returncode - 128 if sandboxed and 128 < returncode < 160 else None


def _as_if_confined(finished: Finished, folder: str) -> Finished:
    """Output of code run unconfined in `folder`, its paths written as inside the sandbox (`WORKDIR`): a traceback
    names the same file whichever way the code ran, not a temporary folder's random name (which would make a repair
    prompt that quotes it differ on every run, and miss the call cache)."""
    def written(text: str) -> str:
        for prefix in dict.fromkeys((os.path.realpath(folder), folder)):
            text = text.replace(prefix, WORKDIR)
        return text

    return dataclasses.replace(finished, stdout=written(finished.stdout), stderr=written(finished.stderr))


class Sandbox:
    """Where code tools run code: bubblewrap, or (opted in, loudly) the bare machine."""

    def __init__(self, *, unsandboxed: bool | None = None, trace: Trace | None = None) -> None:
        opted = os.environ.get(UNSANDBOXED_ENV, "")
        if unsandboxed is None:
            self.unsandboxed = opted not in ("", "0")
            self.reason = f"{UNSANDBOXED_ENV}={opted}"
        else:
            self.unsandboxed = unsandboxed
            self.reason = "Sandbox(unsandboxed=True)"
        self.trace = trace
        if self.unsandboxed:
            log.warning("model-written code will run WITHOUT a sandbox (%s): it can read and write whatever this "
                        "user can, and reach the network", self.reason)

    def check(self) -> None:
        """Raise `SandboxUnavailableError` now if code could not run confined and no one opted out of the sandbox
        (`unsandboxed`: code runs without bubblewrap, so whether it is there does not matter)."""
        if not self.unsandboxed:
            self._bwrap()

    def _bwrap(self) -> str:
        bwrap = bwrap_path()
        if bwrap is None:
            raise SandboxUnavailableError("bubblewrap (bwrap) is not installed")
        if (problem := _probe(bwrap, os.geteuid())) is not None:
            raise SandboxUnavailableError(problem)
        return bwrap

    @property
    def confined(self) -> bool:
        return not self.unsandboxed

    def run(self, files: dict[str, str], argv: list[str], limits: Limits, *, what: str = "program") -> Ran:
        """Run `python -I ARGV` in a fresh working folder holding `files` (name -> text, read-only inside); in a
        control group of its own where one can be made (`cgroup.py`), which holds its memory and processes as a
        whole and in which nothing it started survives the call."""
        bwrap = None if self.unsandboxed else self._bwrap()
        group = Cgroup.make(limits.memory_mb * MB, limits.processes)
        try:
            finished = self._run(bwrap, files, argv, limits, what, group)
            return Ran(finished.returncode, finished.stdout, finished.stderr, memory_bounded=group is not None,
                       memory_kills=group.memory_kills() if group is not None else 0)
        finally:
            if group is not None:
                group.remove()

    def _run(self, bwrap: str | None, files: dict[str, str], argv: list[str], limits: Limits, what: str,
             group: Cgroup | None) -> Finished:
        def inside(command: list[str]) -> list[str]:
            return group.command(command) if group is not None else command

        # With a group holding the processes of this sandbox alone, the per-user limit (shared by every sandbox
        # running as uid 65534 at that moment) is only a backstop.
        processes = limits.processes * SHARED_BACKSTOP if group is not None else limits.processes
        with tempfile.TemporaryDirectory(prefix="noosphere-sandbox-") as folder:
            paths = {name: Path(folder, name) for name in files}
            for name, text in files.items():
                paths[name].write_text(text, encoding="utf-8")
                paths[name].chmod(0o644)
            if bwrap is None:
                log.warning("running a model-written %s WITHOUT a sandbox (%s)", what, self.reason)
                if self.trace is not None:
                    self.trace.emit(SandboxUnconfined(what=what, reason=self.reason))
                ran = run_in_group(inside([*_launch(limits, False, processes), *argv]), timeout_s=limits.timeout_s,
                                   cwd=Path(folder))
                return _as_if_confined(ran, folder)
            report = os.pipe()  # bwrap names the sandbox's first process on it: its death ends the sandbox
            command = bwrap_command(bwrap, paths, tmpfs_bytes=limits.tmpfs_mb * MB, info_fd=report[1])
            return run_in_group(inside([*command, *_launch(limits, True, processes), *argv]),
                                timeout_s=limits.timeout_s, report=report)

    def stopped(self, finished: Finished, limits: Limits) -> str | None:
        """Why the code was stopped (the deadline, its processes' memory together, or a signal: over a limit), or
        None if it exited itself."""
        if finished.timed_out:
            return f"timed out after {limits.timeout_s}s"
        if isinstance(finished, Ran) and finished.memory_kills:
            return f"stopped: its processes together went over the memory limit of {limits.memory_mb} MB"
        signal = _signal_of(finished.returncode, self.confined)
        return None if signal is None else f"stopped by signal {signal}: over its CPU-time or memory limit"


@dataclass(frozen=True)
class ProgramRun:
    passed: bool
    """The program ran to its last line and exited with status 0, within its limits."""
    output: str
    network_isolated: bool
    """It ran in the sandbox (no network, no host files); False only when unsandboxed was opted into."""
    memory_bounded: bool = False
    """Its memory limit held for all its processes together (a control group), not only each one's."""
    printed: str = ""
    """What it wrote to standard output alone (its last 2000 characters): `output` follows it with standard error,
    where Python writes its warnings and tracebacks, so the last line of `output` need not be one it printed."""


def run_python_program(source: str, *, timeout_s: float = 10.0, memory_mb: int = 512,
                       sandbox: Sandbox | None = None, early_exit_passes: bool = False) -> ProgramRun:
    """Run `source` as a script; it passes only if it runs to its last line and exits with status 0.

    A failing assert, an exception, a timeout or a limit means not passed, and so does an early exit:
    the script ends by printing a random token, so code that calls `sys.exit(0)` before the tests
    does not pass them. The child gets no stdin (an `input()` fails at once instead of waiting).
    `early_exit_passes`: an exit with status 0 before the last line passes too (`sys.exit(main())`), for a program
    whose output is what counts, not tests it must run through.
    """
    if not _encodable(source):
        return ProgramRun(False, "the program is not valid text (a lone surrogate cannot be written as UTF-8)",
                          (sandbox or Sandbox()).confined)
    sandbox = sandbox or Sandbox()
    limits = Limits(timeout_s=timeout_s, memory_mb=memory_mb)
    token = secrets.token_hex(12)
    finished = sandbox.run({"main.py": f"{source}\nprint({token!r})\n"}, ["main.py"], limits)
    reached_end = token in finished.stdout
    printed = finished.stdout.replace(token, "").strip()[-2000:]
    output = (finished.stdout.replace(token, "") + finished.stderr).strip()[-2000:]
    if (stopped := sandbox.stopped(finished, limits)) is not None:
        output = f"{output}\n{stopped}".strip()
    elif finished.returncode == 0 and not reached_end and not early_exit_passes:
        output = f"{output}\nthe program exited before its last line (its tests did not all run)".strip()
    passed = (finished.returncode == 0 and (reached_end or early_exit_passes)
              and stopped is None)  # a child killed for memory fails it too
    return ProgramRun(passed, output, sandbox.confined, finished.memory_bounded, printed)


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


_CHILD = r"""
SAFE = {name: getattr(__builtins__, name) for name in (
    "abs", "all", "any", "bool", "chr", "dict", "divmod", "enumerate", "filter", "float", "frozenset", "int",
    "len", "list", "map", "max", "min", "ord", "pow", "range", "repr", "reversed", "round", "set", "sorted",
    "str", "sum", "tuple", "zip", "isinstance", "True", "False", "None")}
with open("expression.txt", encoding="utf-8") as handle:
    source = handle.read()
print(repr(eval(compile(source, "<expression>", "eval"), {"__builtins__": SAFE}, {}))[:10000])
"""


MAX_EXPRESSION_CHARS = 4000
INTROSPECTION = ("gi_", "cr_", "ag_", "f_", "co_", "tb_")
"""Attribute prefixes of generators, coroutines, frames, code and tracebacks: from a generator's frame to the
globals of the evaluating module, and from there to the real builtins, without an underscore in any name."""


def _screen(expression: str) -> None:
    """Refuse what is not one short expression, any name or attribute that starts with an underscore or walks
    frames, and any string that names a dunder (a subscript such as `globals['__builtins__']`)."""
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise SandboxError(f"refused: an expression of {len(expression)} characters (at most {MAX_EXPRESSION_CHARS})")
    try:
        tree = parse(expression, mode="eval")
    except SyntaxError as exc:
        raise SandboxError(f"SyntaxError: {exc.msg}") from None
    except (MemoryError, RecursionError, ValueError) as exc:  # nesting too deep for the parser, a NUL byte
        raise SandboxError(f"refused: the expression cannot be parsed ({type(exc).__name__})") from None
    for node in ast.walk(tree):
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        if name is not None and name.startswith("_"):
            raise SandboxError(f"refused: {name!r} (names starting with '_' reach the interpreter's internals)")
        if isinstance(node, ast.Attribute) and node.attr.startswith(INTROSPECTION):
            raise SandboxError(f"refused: {node.attr!r} (frames and code objects reach the interpreter's internals)")
        if isinstance(node, ast.Constant) and isinstance(node.value, str | bytes) and (
                "__" in (node.value if isinstance(node.value, str) else node.value.decode("latin-1"))):
            raise SandboxError("refused: a string naming a '__' attribute (the way to the interpreter's internals)")


def run_python_expression(expression: str, *, timeout_s: float = 5.0, memory_mb: int = 256,
                          sandbox: Sandbox | None = None) -> str:
    """The repr of one Python expression, evaluated in the sandbox with a few builtins (no imports, no files)."""
    if not _encodable(expression):
        raise SandboxError("refused: the expression is not valid text (a lone surrogate)")
    _screen(expression)
    sandbox = sandbox or Sandbox()
    limits = Limits(timeout_s=timeout_s, memory_mb=memory_mb)
    finished = sandbox.run({"main.py": _CHILD, "expression.txt": expression}, ["main.py"], limits, what="expression")
    if (stopped := sandbox.stopped(finished, limits)) is not None:
        raise SandboxError(stopped)
    if finished.returncode != 0:
        last = (finished.stderr.strip().splitlines() or [f"exit code {finished.returncode}"])[-1]
        raise SandboxError(last)
    return finished.stdout.strip()
