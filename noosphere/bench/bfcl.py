"""BFCL function calling: one request of the base model against a workspace of function processors.

base: one function-calling request of the model with every candidate function offered.
ctm: every candidate function becomes a `FunctionProposer`; they bid on the request; the STM
judges from the winner whether the request is handled; broadcast and fusion let the proposers
revise. The calls made are those proposed for the request itself, in the last iteration, by the
processors that still find their function relevant (relevance >= `min_relevance`).
"""

from __future__ import annotations

from noosphere.bench.bfcl_data import BfclItem
from noosphere.bench.bfcl_match import score
from noosphere.bench.runner import Scored
from noosphere.llm import Message, Model, ToolCall
from noosphere.workspace import ShortTermMemory, Workspace, WorkspaceSettings
from noosphere.workspace.proposer import FunctionProposer

BASE_SYSTEM = "You are a precise assistant that calls functions to fulfil requests."
MIN_RELEVANCE = 0.5


def _scored(item: BfclItem, calls: tuple[ToolCall, ...]) -> Scored:
    correct, reason = score(item, calls)
    predicted = [{call.name: call.arguments} for call in calls]
    return Scored(predicted, correct, {"reason": reason, "category": item.category})


async def solve_base(model: Model, item: BfclItem) -> Scored:
    completion = await model.complete([Message.system(BASE_SYSTEM), *item.messages], tools=item.tools, agent="base")
    return _scored(item, completion.tool_calls)


def _processor_name(index: int, function_name: str) -> str:
    return f"f{index}:{function_name}"


async def solve_ctm(model: Model, settings: WorkspaceSettings, item: BfclItem) -> Scored:
    request = "\n".join(message.content for message in item.messages if message.role == "user")
    proposers = [FunctionProposer(_processor_name(i, spec.name), model, spec) for i, spec in enumerate(item.tools)]
    workspace = Workspace(list(proposers), ShortTermMemory(model), settings)
    query = f"Request: {request}\nWhich function calls, with which arguments, does this request need?"
    await workspace.run(query)
    calls: list[ToolCall] = []
    for proposer in proposers:
        proposal = proposer.proposal_for(query)
        if proposal is not None and proposal[0].relevance >= MIN_RELEVANCE:
            calls.extend(proposal[1])
    return _scored(item, tuple(calls))
