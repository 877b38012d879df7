"""Processors that propose function calls without running them.

Used where the calls themselves are the product (BFCL scores the calls a system would make) or
where running them needs approval first. `FunctionProposer` owns one function: one model call per
execute, the proposed calls, constrained to the function's argument schema, together with the usual
response, follow-up question and scores. Proposals for the task's own query are kept apart from
answers to other processors' questions, so the final decision uses the former only.
`GeneralistProposer` sees every function: for the task's query it bids the calls of one
function-calling request with all of them offered, scored by P(True) that they are right.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from pydantic import BaseModel, Field, create_model

from noosphere.errors import UsageError
from noosphere.llm import Message, Model, ToolCall, ToolSpec
from noosphere.observation import Observation
from noosphere.workspace.chunk import Chunk, ProcessorOutput, ProcessorText, WeightRule
from noosphere.workspace.processor import LLMProcessor, Perceive, nothing
from noosphere.workspace.scores import SURPRISE_QUESTION, ScoreSource, judge_response, probability

# Small models write their verdict first and rationalise it after, so `calls` comes first in the
# output: the proposer decides on the calls, then explains them. The argument schema is shown as well as
# enforced, because the names and descriptions of the arguments are what ties them to the request.
PROPOSE = """
You own one function, {name}: {description}
Its arguments, as a JSON schema: {parameters}
First fill "calls": every call of your function that the request asks for, each one an object of
arguments taken from the request; an empty list if the request does not ask for what your function
does. Then "response": the calls you propose and why, in a sentence or two. Score relevance by how
much the request needs your function: 1.0 if it asks for exactly what your function does, 0.0 if it
does not need it at all."""


SERVES_QUESTION = ("Does the request ask for exactly these calls of your function, with these arguments? "
                   "Answer Yes or No.")
PROPOSE_TEXT = """
You own one function, {name}: {description}
Its arguments, as a JSON schema: {parameters}
First fill "calls": every call of your function that the request asks for, each one an object of
arguments taken from the request; an empty list if the request does not ask for what your function
does. Then "response": the calls you propose and why, in a sentence or two."""


def _proposal_model(spec: ToolSpec, base: type[BaseModel] = ProcessorOutput) -> type[BaseModel]:
    """`calls`, whose items are constrained to the function's argument schema, then the processor's fields."""
    calls = Field(description="argument objects, one per call; empty if the request does not need the function",
                  json_schema_extra={"items": spec.parameters})
    fields: dict[str, Any] = {"calls": (list[dict[str, Any]], calls),
                              **{name: (info.annotation, info) for name, info in base.model_fields.items()}}
    return create_model("Proposal", **fields)


class FunctionProposer(LLMProcessor):
    def __init__(self, name: str, model: Model, function: ToolSpec, *, perceive: Perceive = nothing,
                 weights: WeightRule | None = None, scores: ScoreSource = "verbal") -> None:
        """With probability scores, relevance is P(True) that the request asks for exactly the proposed calls
        (0 when it proposes none); confidence and surprise as for any processor."""
        super().__init__(name, model, role=f"You represent the function {function.name}.", perceive=perceive,
                         weights=weights, scores=scores)
        self.function = function
        self.output = _proposal_model(function, ProcessorOutput if scores == "verbal" else ProcessorText)
        self.proposals: dict[str, tuple[Chunk, tuple[ToolCall, ...]]] = {}
        """Latest proposal per question asked."""

    def system_prompt(self) -> str:
        return super().system_prompt() + (PROPOSE if self.scores == "verbal" else PROPOSE_TEXT).format(
            name=self.function.name, description=self.function.description,
            parameters=json.dumps(self.function.parameters, separators=(",", ":")))

    async def execute(self, query: str, observation: Observation, *, tick: int) -> Chunk:
        perception = self.perceive(observation)
        messages = [Message.system(self.system_prompt()),
                    Message("user", self.user_prompt(query, perception), perception.media)]
        completion = await self.model.complete(messages, output=self.output, agent=self.name)
        output: Any = completion.output
        calls = tuple(ToolCall(self.function.name, arguments) for arguments in output.calls
                      if isinstance(arguments, dict))
        if self.scores == "verbal":
            chunk = Chunk.from_output(self.name, tick, ProcessorOutput.model_validate(
                output.model_dump(exclude={"calls"})), self.weights)
        else:
            text = ProcessorText.model_validate(output.model_dump(exclude={"calls"}))
            judged = await judge_response(self.model, messages, completion.text, self.scores, agent=self.name)
            relevance = await probability(self.model, [*messages, Message.assistant(completion.text),
                                                       Message.user(SERVES_QUESTION)], self.scores,
                                          agent=self.name) if calls else 0.0
            chunk = Chunk.scored(self.name, tick, text, self.weights, relevance, judged.confidence, judged.surprise)
        self.proposals[query] = (chunk, calls)
        return chunk

    def proposal_for(self, query: str) -> tuple[Chunk, tuple[ToolCall, ...]] | None:
        return self.proposals.get(query)


CallsJudged = Callable[[tuple[ToolCall, ...]], list[Message]]
"""The messages whose P(True) says whether calls are right: the request, the calls, then a yes/no question last."""


def calls_gist(calls: Sequence[ToolCall]) -> str:
    """What a chunk of calls says to the STM and to the processors it is broadcast to."""
    if not calls:
        return "No function call: none of the functions does what the request asks."
    return "Function calls for the request:\n" + "\n".join(
        f"- {call.name}({json.dumps(call.arguments)})" for call in calls)


class GeneralistProposer(LLMProcessor):
    """A processor that sees every function and bids, for the task's query, the calls of one function-calling
    request with all of them offered: `request` (the conversation as the user wrote it, under its own system
    prompt) asked of the model with `tools`, the request a model alone would make.

    Probability scores only. Its relevance and its confidence are both P(True) of the question `judged(calls)`
    ends with (asked after its calls): for a bid that is the whole set of calls, "does the request need this?"
    and "is it right?" are one question, whether these calls do exactly what the request asks. Its surprise is
    P(True) of the surprise question after the same calls. Unlike a `FunctionProposer`, proposing no call is a
    bid like any other (the right answer to a request no function serves), scored the same way.

    What is broadcast to it does not enter that request: its bid is the model's own reply to the request,
    asked once per query and bid again as it is in later iterations. It answers other processors' questions
    (links, fusion) as any processor does, from its memory and the functions' descriptions."""

    def __init__(self, name: str, model: Model, request: Sequence[Message], tools: Sequence[ToolSpec], *,
                 task: str, judged: CallsJudged, perceive: Perceive = nothing, weights: WeightRule | None = None,
                 scores: ScoreSource = "logprob") -> None:
        """`task`: the workspace's query, the one answered by the function-calling request."""
        if scores == "verbal":
            raise UsageError("the generalist's scores are P(True) of its calls: give it probability scores")
        offered = "; ".join(f"{tool.name}: {tool.description}" for tool in tools)
        super().__init__(name, model, role=f"You see every function offered ({offered}) and call those the "
                                           "request needs.", perceive=perceive, weights=weights, scores=scores)
        self.request = tuple(request)
        self.tools = tuple(tools)
        self.task = task
        self.judged = judged
        self.proposals: dict[str, tuple[Chunk, tuple[ToolCall, ...]]] = {}
        """Latest proposal per query (the task's only)."""

    async def execute(self, query: str, observation: Observation, *, tick: int) -> Chunk:
        if query != self.task:
            return await super().execute(query, observation, tick=tick)
        known = self.proposals.get(query)
        if known is not None:
            chunk, calls = replace(known[0], tick=tick), known[1]
        else:
            completion = await self.model.complete(list(self.request), tools=list(self.tools), agent=self.name)
            calls = tuple(completion.tool_calls)
            judged = self.judged(calls)
            right, surprise = await asyncio.gather(
                probability(self.model, judged, self.scores, agent=self.name),
                probability(self.model, [*judged[:-1], Message.user(SURPRISE_QUESTION)], self.scores,
                            agent=self.name))
            chunk = Chunk(self.name, tick, calls_gist(calls), "", self.weights(right, right, surprise), right, right,
                          surprise)
        self.proposals[query] = (chunk, calls)
        return chunk

    def proposal_for(self, query: str) -> tuple[Chunk, tuple[ToolCall, ...]] | None:
        return self.proposals.get(query)
