"""Chunks: what a processor puts up for the competition, and how its weight is computed."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, Field


class ProcessorOutput(BaseModel):
    """The structured reply of one processor call (the edge where model text becomes data)."""

    response: str = Field(min_length=1, max_length=400, description="your answer to the query, from what you can see")
    additional_question: str = Field(
        max_length=160, description="one short question another processor could answer to improve the answer, "
                                    "or an empty string")
    relevance: float = Field(ge=0.0, le=1.0, description="how directly the response answers the query")
    confidence: float = Field(ge=0.0, le=1.0, description="how sure the response is")
    surprise: float = Field(ge=0.0, le=1.0, description="how unexpected or novel the response is")


class ProcessorText(BaseModel):
    """A processor's reply when its scores come from probabilities: the response and question only."""

    response: str = Field(min_length=1, max_length=400, description="your answer to the query, from what you can see")
    additional_question: str = Field(
        max_length=160, description="one short question another processor could answer to improve the answer, "
                                    "or an empty string")


@dataclass(frozen=True)
class WeightRule:
    """weight = relevance x w_relevance + confidence x w_confidence + surprise x w_surprise (paper: 1 : 1 : 0.2)."""

    relevance: float = 1.0
    confidence: float = 1.0
    surprise: float = 0.2

    def __call__(self, relevance: float, confidence: float, surprise: float) -> float:
        return self.relevance * relevance + self.confidence * confidence + self.surprise * surprise


@dataclass(frozen=True)
class Chunk:
    """A processor's bid for the workspace: its gist, its follow-up question, and the weight it earned."""

    processor: str
    tick: int
    gist: str
    question: str
    weight: float
    relevance: float
    confidence: float
    surprise: float

    @classmethod
    def from_output(cls, processor: str, tick: int, output: ProcessorOutput, rule: WeightRule) -> Chunk:
        return cls.scored(processor, tick, output, rule, output.relevance, output.confidence, output.surprise)

    @classmethod
    def scored(cls, processor: str, tick: int, output: ProcessorText | ProcessorOutput, rule: WeightRule,
               relevance: float, confidence: float, surprise: float) -> Chunk:
        return cls(processor, tick, output.response.strip(), output.additional_question.strip(),
                   rule(relevance, confidence, surprise), relevance, confidence, surprise)
