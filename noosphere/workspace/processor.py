"""Long-term-memory processors: execute, read, write, over a private memory.

A processor is an `LLMProcessor` given a name, a role and a *perception*: the function that picks
what it sees of an observation. The families are small constructors over that one class:

- `sensory(...)`: one named view of the observation (text, image or audio) and nothing else;
- `cognitive(...)`: the query and its memory only;
- `FreeProcessor`: starts unspecialised and keeps the exchanges that earned positive feedback.

A user adds a processor by writing another perception, subclassing, or implementing `Processor`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from noosphere.errors import CapabilityError, UnknownNameError
from noosphere.llm import Message, Model
from noosphere.llm.messages import MediaPart
from noosphere.observation import Observation
from noosphere.workspace.chunk import Chunk, ProcessorOutput, ProcessorText, WeightRule
from noosphere.workspace.memory import ProcessorMemory
from noosphere.workspace.prompts import PROCESSOR_FRAME, PROCESSOR_FRAME_TEXT, PROCESSOR_IDENTITY, perception_text
from noosphere.workspace.scores import SCORE_SOURCES, ScoreSource, judge_response


@runtime_checkable
class Processor(Protocol):
    name: str
    memory: ProcessorMemory

    async def execute(self, query: str, observation: Observation, *, tick: int) -> Chunk:
        """Answer `query` (the task's query, or another processor's question) from what it sees."""
        ...

    def read(self) -> ProcessorMemory: ...

    def write(self, memory: ProcessorMemory) -> None: ...


@dataclass(frozen=True)
class Perception:
    """What a processor perceives of an observation: text and media."""

    text: str
    media: tuple[MediaPart, ...] = ()


Perceive = Callable[[Observation], Perception]


def nothing(_: Observation) -> Perception:
    return Perception("")


class LLMProcessor:
    """A processor backed by one model call per execute, returning a scored chunk."""

    def __init__(self, name: str, model: Model, *, role: str = "", perceive: Perceive = nothing,
                 weights: WeightRule | None = None, scores: ScoreSource = "verbal") -> None:
        """`scores` says where relevance, confidence and surprise come from (see `workspace.scores`)."""
        if scores not in SCORE_SOURCES:
            raise UnknownNameError("score source", scores, SCORE_SOURCES)
        if scores == "logprob" and not model.capabilities.logprobs:
            raise CapabilityError(model.id, f"logprobs (processor {name!r} takes its scores from probabilities); "
                                            "use scores='samples' or 'verbal'")
        self.scores = scores
        self.name = name
        self.model = model
        self.role = role
        self.perceive = perceive
        self.weights = weights or WeightRule()
        self.memory = ProcessorMemory()

    def read(self) -> ProcessorMemory:
        return self.memory

    def write(self, memory: ProcessorMemory) -> None:
        self.memory = memory

    def system_prompt(self) -> str:
        return PROCESSOR_FRAME if self.scores == "verbal" else PROCESSOR_FRAME_TEXT

    def user_prompt(self, query: str, perception: Perception) -> str:
        identity = PROCESSOR_IDENTITY.format(name=self.name, role=self.role)
        sections = [identity, self.memory.render(), perception.text, f"Query: {query}"]
        return "\n\n".join(section for section in sections if section)

    async def execute(self, query: str, observation: Observation, *, tick: int) -> Chunk:
        perception = self.perceive(observation)
        messages = [Message.system(self.system_prompt()),
                    Message("user", self.user_prompt(query, perception), perception.media)]
        if self.scores == "verbal":
            completion = await self.model.complete(messages, output=ProcessorOutput, agent=self.name)
            assert completion.output is not None
            return Chunk.from_output(self.name, tick, completion.output, self.weights)
        written = await self.model.complete(messages, output=ProcessorText, agent=self.name)
        assert written.output is not None
        judged = await judge_response(self.model, messages, written.output.response, self.scores, agent=self.name)
        return Chunk.scored(self.name, tick, written.output, self.weights, judged.relevance, judged.confidence,
                            judged.surprise)


def sensory(name: str, model: Model, view: str, *, role: str = "", media_kind: str | None = None,
            weights: WeightRule | None = None, scores: ScoreSource = "verbal") -> LLMProcessor:
    """A processor that sees only the observation's view called `view`.

    `media_kind` ("image" or "audio") declares a media view up front, so a model that cannot take
    it fails here, at construction, rather than in the middle of a run.
    """
    needed = {"image": "vision", "audio": "audio"}.get(media_kind or "")
    if needed and not getattr(model.capabilities, needed):
        raise CapabilityError(model.id, f"{needed} (processor {name!r} reads the {media_kind} view {view!r})")

    def perceive(observation: Observation) -> Perception:
        seen = observation.view(view)
        missing = model.capabilities.missing(seen.needs)
        if missing:
            raise CapabilityError(model.id, ", ".join(missing))
        return Perception(perception_text(view, seen.text), seen.media)

    return LLMProcessor(name, model, role=role or f"You perceive the {view}.", perceive=perceive, weights=weights,
                        scores=scores)


def cognitive(name: str, model: Model, *, role: str, weights: WeightRule | None = None,
              scores: ScoreSource = "verbal") -> LLMProcessor:
    """A processor that reasons over the query and its memory only."""
    return LLMProcessor(name, model, role=role, weights=weights, scores=scores)


class FreeProcessor(LLMProcessor):
    """Starts without a speciality; keeps the exchanges that earned positive feedback as examples."""

    def __init__(self, name: str, model: Model, *, perceive: Perceive = nothing, max_examples: int = 4,
                 weights: WeightRule | None = None, scores: ScoreSource = "verbal") -> None:
        super().__init__(name, model, role="You have no fixed speciality yet.", perceive=perceive, weights=weights,
                         scores=scores)
        self.max_examples = max_examples
        self.examples: tuple[tuple[str, str], ...] = ()

    def feedback(self, query: str, chunk: Chunk, reward: float) -> None:
        """Keep (query, answer) when the reward was positive; the newest examples are kept."""
        if reward > 0:
            self.examples = ((*self.examples, (query, chunk.gist)))[-self.max_examples:]

    def user_prompt(self, query: str, perception: Perception) -> str:
        prompt = super().user_prompt(query, perception)
        if not self.examples:
            return prompt
        shown = "\n".join(f"- Query: {q}\n  Good answer: {a}" for q, a in self.examples)
        return f"Answers of yours that were judged good, to learn from:\n{shown}\n\n{prompt}"
