"""Short-term memory: a stateless model call that answers the query from the winning chunk alone."""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field, create_model

from noosphere.errors import BudgetExceededError, UsageError
from noosphere.llm import Message, Model
from noosphere.workspace.chunk import Chunk
from noosphere.workspace.prompts import STM_FRAME, STM_LABELS


class StmOutput(BaseModel):
    answer: str = Field(min_length=1, max_length=400, description="the answer to the query")
    confidence: float = Field(ge=0.0, le=1.0, description="probability that the answer is correct")


@dataclass(frozen=True)
class StmAnswer:
    answer: str
    confidence: float
    label: str | None = None


def _labelled(labels: tuple[str, ...]) -> type[BaseModel]:
    fields: dict[str, Any] = {
        "answer": (str, Field(min_length=1, max_length=400,
                              description="the answer to the query, with the main reason")),
        "label": (Literal[labels], Field(description="the label that answers the query")),  # type: ignore[valid-type]
        "confidence": (float, Field(ge=0.0, le=1.0, description="probability that the label is correct")),
    }
    return create_model("StmLabelledOutput", **fields)


class ShortTermMemory:
    """With `labels`, the answer also carries one label of a closed set (classification tasks).

    alpha is the model's own confidence by default. Small models report 1.0 almost always, so the
    loop never goes on; with `samples=N` the STM answers N times at `sample_temperature` (seeded,
    in parallel, so a batching backend serves them in about one call's time) and alpha becomes the
    share of samples that agree with the most common label (or answer).
    """

    def __init__(self, model: Model, *, labels: tuple[str, ...] = (), name: str = "stm", samples: int = 1,
                 sample_temperature: float = 0.8) -> None:
        if samples < 1:
            raise UsageError(f"the STM needs at least one sample, not {samples}")
        self.model = model
        self.labels = labels
        self.name = name
        self.samples = samples
        self.sample_temperature = sample_temperature
        self.output = _labelled(labels) if labels else StmOutput

    async def answer(self, query: str, winner: Chunk) -> StmAnswer:
        system = STM_FRAME + ("\n" + STM_LABELS.format(labels=", ".join(self.labels)) if self.labels else "")
        user = f"Information (from processor {winner.processor}):\n{winner.gist}\n\nQuery: {query}"
        messages = [Message.system(system), Message.user(user)]
        if self.samples == 1:
            completion = await self.model.complete(messages, output=self.output, agent=self.name)
            output: Any = completion.output
            return StmAnswer(output.answer, output.confidence, getattr(output, "label", None))
        settings = self.model.settings
        completions = await asyncio.gather(*[self.model.complete(
            messages, output=self.output, agent=self.name,
            settings=settings.with_(temperature=self.sample_temperature, seed=settings.seed + i))
            for i in range(self.samples)], return_exceptions=True)
        spent = next((c for c in completions if isinstance(c, BudgetExceededError)), None)
        if spent is not None:  # the run's budget: not a sample that failed
            raise spent
        outputs: list[Any] = [c.output for c in completions if not isinstance(c, BaseException)]
        if not outputs:
            raise next(c for c in completions if isinstance(c, BaseException))

        def key(output: Any) -> str:
            return getattr(output, "label", None) or " ".join(output.answer.lower().split())

        votes = Counter(key(o) for o in outputs)
        top, count = votes.most_common(1)[0]
        chosen = next(o for o in outputs if key(o) == top)
        return StmAnswer(chosen.answer, count / self.samples, getattr(chosen, "label", None))
