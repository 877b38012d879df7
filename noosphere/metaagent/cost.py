"""What an action of a game costs: model calls, tokens and seconds, per action taken.

`benchmarks/game_step_cost.py` prints it for real models; the tests measure the same figure on the
scripted model.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from noosphere.llm import Model
from noosphere.metaagent.engine import EpisodeResult


@dataclass(frozen=True)
class StepCost:
    actions: int
    calls: int
    """Every call the model answered, retries and calls served from the cache included."""
    tokens: int
    """Prompt and completion tokens, as the calls report them."""
    seconds: float

    @classmethod
    def of(cls, model: Model, results: Iterable[EpisodeResult], seconds: float = 0.0) -> StepCost:
        """The cost of the games in `results`, played on a `model` that played nothing else."""
        ledger = model.ledger
        actions = sum(result.actions_taken or result.actions for result in results)  # Reflexion: every trial's
        return cls(actions, ledger.calls, ledger.total.total_tokens, seconds)

    def _per_action(self, amount: float) -> float:
        return amount / self.actions if self.actions else float("nan")

    @property
    def calls_per_action(self) -> float:
        return self._per_action(self.calls)

    @property
    def tokens_per_action(self) -> float:
        return self._per_action(self.tokens)

    @property
    def seconds_per_action(self) -> float:
        return self._per_action(self.seconds)

    def line(self) -> str:
        return (f"calls_per_action={self.calls_per_action:.2f} tokens_per_action={self.tokens_per_action:.0f} "
                f"seconds_per_action={self.seconds_per_action:.2f}")
