"""BFCL function calling: one request of the base model against a workspace of function processors.

base: one function-calling request of the model with every candidate function offered.
ctm: every candidate function becomes a `FunctionProposer`; they bid on the request; the STM
judges from the winner whether the request is handled; broadcast and fusion let the proposers
revise. The calls proposed for the request itself, in the last iteration, by the processors that
still find their function relevant (relevance >= `MIN_RELEVANCE`) go to a motor step that makes
those the request needs.
"""

from __future__ import annotations

import json
import string
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field, create_model

from noosphere.bench.bfcl_data import BfclItem
from noosphere.bench.bfcl_match import score
from noosphere.bench.runner import Scored
from noosphere.concurrent import Forfeit, attempt
from noosphere.llm import Message, Model, ToolCall
from noosphere.workspace import ShortTermMemory, Workspace, WorkspaceSettings
from noosphere.workspace.chunk import Chunk
from noosphere.workspace.proposer import FunctionProposer

BASE_SYSTEM = "You are a precise assistant that calls functions to fulfil requests."
SELECT_SYSTEM = "You decide which function calls to make for a request, precisely: no more and no fewer than it asks."
MIN_RELEVANCE = 0.5


def _scored(item: BfclItem, calls: tuple[ToolCall, ...], confidence: float | None = None) -> Scored:
    correct, reason = score(item, calls)
    predicted = [{call.name: call.arguments} for call in calls]
    return Scored(predicted, correct, {"reason": reason, "category": item.category}, confidence)


async def solve_base(model: Model, item: BfclItem) -> Scored:
    completion = await model.complete([Message.system(BASE_SYSTEM), *item.messages], tools=item.tools, agent="base")
    return _scored(item, completion.tool_calls)


def _processor_name(index: int, function_name: str) -> str:
    return f"f{index}:{function_name}"


async def solve_ctm(model: Model, settings: WorkspaceSettings, item: BfclItem) -> Scored:
    request = "\n".join(message.content for message in item.messages if message.role == "user")
    proposers = [FunctionProposer(_processor_name(i, spec.name), model, spec, scores=settings.scores)
                 for i, spec in enumerate(item.tools)]
    workspace = Workspace(list(proposers), ShortTermMemory(model, scores=settings.scores), settings)
    query = f"Request: {request}\nWhich function calls, with which arguments, does this request need?"
    result = await workspace.run(query)
    proposals = {proposer.name: found for proposer in proposers if (found := proposer.proposal_for(query)) is not None}
    proposed: list[ToolCall] = []
    for chunk, proposal_calls in proposals.values():
        if chunk.relevance >= MIN_RELEVANCE:
            proposed += [call for call in proposal_calls if call not in proposed]
    calls = await _select(model, request, result.answer, proposed) if proposed else ()
    scored = _scored(item, calls, result.confidence)  # the STM's confidence in the workspace's conclusion
    scored.detail.update({"proposed": len(proposed), **competition_detail(item, result.winners, proposals)})
    return scored


def competition_detail(item: BfclItem, winners: Sequence[str],
                       proposals: dict[str, tuple[Chunk, tuple[ToolCall, ...]]]) -> dict[str, Any]:
    """What the workspace's competition decided, kept with the item so that a run can be analysed without running
    it again: `winner`, the processor whose chunk won the last competition (None if none was held); `relevance`,
    each proposer's relevance for the request in its latest proposal (processor name -> relevance); and
    `winner_only`, whether the winner's own proposed calls alone would have been scored correct (None without a
    winner's proposal)."""
    winner = winners[-1] if winners else None
    won = proposals.get(winner) if winner is not None else None
    return {"winner": winner,
            "relevance": {name: round(chunk.relevance, 4) for name, (chunk, _) in proposals.items()},
            "winner_only": score(item, won[1])[0] if won is not None else None}


def selection_form(letters: Sequence[str]) -> type[BaseModel]:
    """The motor's form: first the separate things the request asks for, then the call for each."""
    room = len(letters) + 2
    option = Literal[(*letters, "none")]  # type: ignore[valid-type]
    return create_model(
        "Selection",
        asks=(list[str], Field(min_length=1, max_length=room, description="each separate thing the request asks "
                                                                          "to be done, one entry each")),
        make=(list[option], Field(min_length=1, max_length=room,  # type: ignore[valid-type]
                                  description="for each entry of asks, in order, the letter of the one call that "
                                              "does it, or none if no proposed call does")))


async def _select(model: Model, request: str, conclusion: str, proposed: list[ToolCall]) -> tuple[ToolCall, ...]:
    """The motor step: from the calls the proposers put forward, make those the request needs.

    Every proposer tends to propose its own function, so on its own a proposal says little; one
    decision that sees them side by side, with the workspace's conclusion, first lists what the
    request asks for and then picks one call per ask (or none), so that a request with one ask gets
    one call however many functions could be stretched to fit it.
    """
    letters = string.ascii_uppercase[: len(proposed)]
    listed = "\n".join(f"({letter}) {call.name}({json.dumps(call.arguments)})" for letter, call in zip(
        letters, proposed, strict=False))
    prompt = (f"Request: {request}\nThe workspace concluded: {conclusion}\n\nProposed calls:\n{listed}\n\n"
              "List the separate things the request asks to be done (often just one), then for each the one "
              "proposed call that does it exactly, or none if no proposed call does.")
    completion = await attempt(model.complete([Message.system(SELECT_SYSTEM), Message.user(prompt)],
                                              output=selection_form(letters), agent="motor"))
    if isinstance(completion, Forfeit):
        return tuple(proposed)  # the motor forfeits: the proposals stand as they are
    chosen: Any = completion.output
    picked = [letter for letter in chosen.make[: len(chosen.asks)] if letter != "none"]
    return tuple(proposed[letters.index(letter)] for letter in dict.fromkeys(picked))
