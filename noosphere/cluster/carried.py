"""Errors raised on a worker, carried back to the driver as data and raised there as themselves.

noosphere's errors take their facts as arguments (`ModelError(model, message, retryable=...)`), so the
default pickling of an exception, which calls the class again with its message alone, cannot rebuild
them. A `Carried` keeps the class, the arguments `Exception` holds and the attributes, and rebuilds
the error without calling its `__init__`; the driver then handles it as if it had been raised there
(a spent budget stops the run, a usage error is shown in one line).
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from typing import Any

from noosphere.errors import MissingWeightsError, NodeMissingWeightsError


@dataclass(frozen=True)
class Carried:
    kind: type[BaseException]
    args: tuple[Any, ...]
    state: dict[str, Any]

    @classmethod
    def of(cls, error: BaseException) -> Carried:
        state = {}
        for name, value in vars(error).items():  # what will not travel (a lock, an open file) is left behind
            try:
                pickle.dumps(value)
            except Exception:
                continue
            state[name] = value
        return cls(type(error), tuple(error.args), state)

    def rebuild(self) -> BaseException:
        error = self.kind.__new__(self.kind)
        error.args = self.args
        error.__dict__.update(self.state)
        return error

    def raise_on(self, node: object) -> None:
        """Raise the error; missing weights are told with the node that lacks them."""
        error = self.rebuild()
        if isinstance(error, MissingWeightsError) and not isinstance(error, NodeMissingWeightsError):
            raise NodeMissingWeightsError(error.model, error.pip_command, str(node))
        raise error


def unwrap(value: Any) -> Any:
    """A worker's answer: the value itself, or its carried error raised here."""
    if isinstance(value, Carried):
        raise value.rebuild()
    return value
