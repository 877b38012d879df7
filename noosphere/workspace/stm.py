"""Short-term memory: a stateless model call that answers the query from the winning chunk alone."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field, create_model

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
    """With `labels`, the answer also carries one label of a closed set (classification tasks)."""

    def __init__(self, model: Model, *, labels: tuple[str, ...] = (), name: str = "stm") -> None:
        self.model = model
        self.labels = labels
        self.name = name
        self.output = _labelled(labels) if labels else StmOutput

    async def answer(self, query: str, winner: Chunk) -> StmAnswer:
        system = STM_FRAME + ("\n" + STM_LABELS.format(labels=", ".join(self.labels)) if self.labels else "")
        user = f"Information (from processor {winner.processor}):\n{winner.gist}\n\nQuery: {query}"
        completion = await self.model.complete([Message.system(system), Message.user(user)], output=self.output,
                                               agent=self.name)
        output: Any = completion.output
        return StmAnswer(output.answer, output.confidence, getattr(output, "label", None))
