"""Short-term memory: a stateless model call that answers the query from the winning chunk alone."""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

from pydantic import BaseModel, Field, create_model

from noosphere.concurrent import Forfeit, gather_turns
from noosphere.errors import CapabilityError, UnknownNameError, UsageError
from noosphere.llm import Completion, Message, Model
from noosphere.llm.scoring import NO, YES, contextual_calibration
from noosphere.workspace.chunk import Chunk
from noosphere.workspace.prompts import STM_FRAME, STM_FRAME_SCORED, STM_LABEL_PROMPT, STM_LABELS
from noosphere.workspace.scores import (
    ANSWER_CORRECT_QUESTION,
    SAMPLES,
    SCORE_SOURCES,
    ScoreSource,
    probability,
)

StmAlpha = Literal["label", "judged"]
STM_ALPHAS: tuple[str, ...] = ("label", "judged")


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
    share of the N samples that agree with the most common label (or answer): a sample that failed (output that
    never parsed, a provider's fault) gives no answer, and so counts against the agreement.

    With `scores="logprob"` (or `"samples"`) alpha is a probability instead: with labels, every label is
    scored as the STM's reply and the most probable one is the answer (alpha its probability); without,
    the STM writes its answer and alpha is P(True) that it is right. `calibrate=True` (labels only)
    divides out the label prior the model shows on a content-free input (contextual calibration, Zhao
    et al. 2021: "Calibrate Before Use"), scored once per label set and query.

    `alpha="judged"` (labels with probability scores) keeps the most probable label as the answer but takes
    alpha from the STM's P(True) that this answer is right, asked after it in the same conversation: CTM-AI's
    STM "evaluates the prediction and assigns a quality score". With `"label"` (the default) alpha is the
    label's own probability, which a small model puts near 1 whenever the winning gist names a label.
    """

    def __init__(self, model: Model, *, labels: tuple[str, ...] = (), name: str = "stm", samples: int = 1,
                 sample_temperature: float = 0.8, scores: ScoreSource = "verbal", calibrate: bool = False,
                 alpha: StmAlpha = "label") -> None:
        if samples < 1:
            raise UsageError(f"the STM needs at least one sample, not {samples}")
        if scores not in SCORE_SOURCES:
            raise UnknownNameError("score source", scores, SCORE_SOURCES)
        if scores == "logprob" and not model.capabilities.logprobs:
            raise CapabilityError(model.id, "logprobs (the STM takes alpha from probabilities); use scores='samples' "
                                            "or 'verbal'")
        if len(labels) == 1 or len(set(labels)) != len(labels):
            raise UsageError(f"a label set needs at least two distinct labels, not {list(labels)}")
        if calibrate and (scores != "logprob" or not labels):  # a sampled prior has zeros a division cannot take
            raise UsageError("contextual calibration needs a label set and probability scores (scores='logprob'), "
                             f"not scores={scores!r}")
        if alpha not in STM_ALPHAS:
            raise UnknownNameError("STM alpha", str(alpha), STM_ALPHAS)
        if alpha == "judged" and (scores == "verbal" or not labels):  # without labels alpha is judged already
            raise UsageError("a judged alpha is the STM's P(True) of its label: it needs a label set and probability "
                             f"scores (scores='logprob' or 'samples'), not scores={scores!r}"
                             + ("" if labels else " without labels"))
        if scores != "verbal" and samples != 1:
            raise UsageError("stm samples are the verbal STM's vote; with probability scores leave samples at 1")
        if scores != "verbal":  # the options it will score are known now: refused before any processor's call
            model.check_scoring(labels or (YES, NO), method="samples" if scores == "samples" else "logprob")
        self.scores = scores
        self.calibrate = calibrate
        self.alpha = alpha
        self._priors: dict[str, tuple[float, ...]] = {}
        self.model = model
        self.labels = labels
        self.name = name
        self.samples = samples
        self.sample_temperature = sample_temperature
        self.output = _labelled(labels) if labels else StmOutput

    async def answer(self, query: str, winner: Chunk) -> StmAnswer:
        if self.scores != "verbal":
            return await (self._scored_label(query, winner) if self.labels else self._judged_answer(query, winner))
        system = STM_FRAME + ("\n" + STM_LABELS.format(labels=", ".join(self.labels)) if self.labels else "")
        user = f"Information (from processor {winner.processor}):\n{winner.gist}\n\nQuery: {query}"
        messages = [Message.system(system), Message.user(user)]
        if self.samples == 1:
            completion = await self.model.complete(messages, output=self.output, agent=self.name)
            output: Any = completion.output
            return StmAnswer(output.answer, output.confidence, getattr(output, "label", None))
        settings = self.model.settings

        def sample(index: int) -> Awaitable[Completion]:
            return self.model.complete(messages, output=self.output, agent=self.name,
                                       settings=settings.with_(temperature=self.sample_temperature,
                                                               seed=settings.seed + index))

        drawn = await gather_turns(partial(sample, i) for i in range(self.samples))  # a failed sample agrees with none
        outputs: list[Any] = [c.output for c in drawn if not isinstance(c, Forfeit)]
        if not outputs:  # every sample failed: the STM forfeits with the first one's fault
            raise next(c.error for c in drawn if isinstance(c, Forfeit))

        def key(output: Any) -> str:
            return getattr(output, "label", None) or " ".join(output.answer.lower().split())

        votes = Counter(key(o) for o in outputs)
        top, count = votes.most_common(1)[0]
        chosen = next(o for o in outputs if key(o) == top)
        return StmAnswer(chosen.answer, count / self.samples, getattr(chosen, "label", None))

    def _label_messages(self, query: str, gist: str, processor: str) -> list[Message]:
        user = (f"Information (from processor {processor}):\n{gist}\n\nQuery: {query}\n\n"
                + STM_LABEL_PROMPT.format(labels=", ".join(self.labels)))
        return [Message.system(STM_FRAME_SCORED), Message.user(user)]

    async def _label_probs(self, messages: list[Message]) -> tuple[float, ...]:
        method: Literal["logprob", "samples"] = "samples" if self.scores == "samples" else "logprob"
        scored = await self.model.score_options(messages, self.labels, method=method, samples=SAMPLES,
                                                agent=self.name)
        return scored.probs

    async def _scored_label(self, query: str, winner: Chunk) -> StmAnswer:
        messages = self._label_messages(query, winner.gist, winner.processor)
        probs = await self._label_probs(messages)
        if self.calibrate:
            probs = contextual_calibration(probs, await self._prior(query))
        best = max(range(len(self.labels)), key=lambda i: (probs[i], -i))
        label = self.labels[best]
        if self.alpha == "label":
            return StmAnswer(label, probs[best], label)
        judged = await probability(self.model, [*messages, Message.assistant(label),
                                                Message.user(ANSWER_CORRECT_QUESTION)], self.scores, agent=self.name)
        return StmAnswer(label, judged, label)

    async def _prior(self, query: str) -> tuple[float, ...]:
        """The label probabilities after a content-free input, once per query (cached on the STM)."""
        if query not in self._priors:
            self._priors[query] = await self._label_probs(self._label_messages(query, CONTENT_FREE, "none"))
        return self._priors[query]

    async def _judged_answer(self, query: str, winner: Chunk) -> StmAnswer:
        user = f"Information (from processor {winner.processor}):\n{winner.gist}\n\nQuery: {query}"
        messages = [Message.system(STM_FRAME_SCORED.replace(" with one label", "")), Message.user(user)]
        written = await self.model.complete(messages, output=StmText, agent=self.name)
        assert written.output is not None
        alpha = await probability(self.model, [*messages, Message.assistant(written.output.answer),
                                               Message.user(ANSWER_CORRECT_QUESTION)], self.scores, agent=self.name)
        return StmAnswer(written.output.answer, alpha)


CONTENT_FREE = "N/A"
"""The content-free input of contextual calibration (one of the paper's three; the others are "" and
"[MASK]", which a chat model reads as an empty message)."""


class StmText(BaseModel):
    answer: str = Field(min_length=1, max_length=400, description="the answer to the query")


