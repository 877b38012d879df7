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

from noosphere.errors import MissingWeightsError, NodeMissingWeightsError, RuntimeFault


@dataclass(frozen=True)
class Carried:
    kind: type[BaseException]
    args: tuple[Any, ...]
    state: dict[str, Any]
    message: str = ""
    """`str(error)` on the worker: what the driver is told when the error cannot be rebuilt."""
    pickled: bytes | None = None
    """The error pickled whole, when pickling gives it back as it was (Python's own errors, pydantic's)."""

    @classmethod
    def of(cls, error: BaseException) -> Carried:
        state = {}
        for name, value in vars(error).items() if hasattr(error, "__dict__") else ():
            try:  # what will not travel (a lock, an open file) is left behind
                pickle.dumps(value)
            except Exception:
                continue
            state[name] = value
        return cls(type(error), tuple(error.args), state, str(error), _round_trip(error))

    def rebuild(self) -> BaseException:
        if self.pickled is not None:
            return pickle.loads(self.pickled)  # our own bytes, made by `of` on our worker
        try:
            error = self.kind.__new__(self.kind)
            error.args = self.args
            error.__dict__.update(self.state)
        except Exception:  # a class that cannot be made without its __init__: said, with the worker's message
            return RuntimeFault(f"{self.kind.__name__} on a worker: {self.message}")
        return error

    def raise_on(self, node: object) -> None:
        """Raise the error; missing weights are told with the node that lacks them."""
        error = self.rebuild()
        if isinstance(error, MissingWeightsError) and not isinstance(error, NodeMissingWeightsError):
            raise NodeMissingWeightsError(error.model, error.pip_command, str(node))
        raise error


def _round_trip(error: BaseException) -> bytes | None:
    """The error pickled, if unpickling gives back one of its class with the same message; else None (noosphere's
    errors, whose pickling calls the class with the message alone)."""
    try:
        pickled = pickle.dumps(error)
        back = pickle.loads(pickled)  # bytes made one line above
    except Exception:
        return None
    return pickled if type(back) is type(error) and str(back) == str(error) else None


def unwrap(value: Any) -> Any:
    """A worker's answer: the value itself, or its carried error raised here."""
    if isinstance(value, Carried):
        raise value.rebuild()
    return value
