"""BFCL function calling: one request of the base model against a workspace of function processors.

base: one function-calling request of the model with every candidate function offered; with a gate G
(probability scores only), its calls are made only if P(True) of `CALLS_QUESTION` after them reaches G (the
ablation of the ctm's gated call motor: the same gate, no workspace).
ctm: every candidate function becomes a `FunctionProposer`; they bid on the request; the STM
judges from the winner whether the request is handled; broadcast and fusion let the proposers
revise. The calls proposed for the request itself, in the last iteration, by the processors that
still find their function relevant (relevance >= `MIN_RELEVANCE`) go to a motor step that makes
those the request needs. Two motors: `select` lists the request's asks and picks one proposed call per
ask; `call` is one function-calling request with every function offered (as `base`), given the
workspace's conclusion and the proposed calls as hints. With a gate G (probability scores only), the
call motor's calls are then made only if P(True) of `CALLS_QUESTION` after them reaches G.

ctm with `processors="functions+generalist"` (probability scores only): beside the function processors, one
`GeneralistProposer` that sees every function. Its chunk's content is the base's own calls (the same
function-calling request, `BASE_SYSTEM` and the item's messages, every function offered), and its relevance and
confidence are P(True) of `CALLS_QUESTION` after them: the signal the signal table found (AUROC 0.84 on the dev
items' base calls), where a function processor's relevance, asked of its own function in isolation, was 0.52-0.74
whether it was the right function or not. In the paper's terms it is one more LTM processor, the "tool caller"
that holds every API at once beside the one-API tool processors: all of them bid chunks (weight = relevance +
confidence + 0.2 surprise), the up-tree competition puts one into the STM, which answers from it; while the STM's
alpha is below the threshold the winner is broadcast, links form and fusion lets the processors revise, and the
next iteration's competition decides again. The motor then acts on the last winner (CTM's motor processors act on
what reached consciousness): if the generalist won, its calls are made, through the gate G if given (the gate's
P(True) is the generalist's relevance: the same question after the same calls, not asked twice); if a function
processor won, the motor chosen above runs on the function processors' proposals as without the generalist. No
call is made, and no motor asked, when the generalist wins with a relevance below `MIN_RELEVANCE` (its bid says
its calls are likely wrong) or when no processor's relevance reaches `MIN_RELEVANCE` (nothing the workspace
holds calls for acting; an irrelevant request expects no call). Designed after looking at the dev items' results:
measure it on held-out items (`--offset 10`).
"""

from __future__ import annotations

import json
import string
from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field, create_model

from noosphere.bench.bfcl_data import BfclItem
from noosphere.bench.bfcl_match import score
from noosphere.bench.runner import Scored
from noosphere.concurrent import Forfeit, attempt
from noosphere.errors import UnknownNameError, UsageError
from noosphere.llm import Message, Model, ToolCall
from noosphere.workspace import ShortTermMemory, Workspace, WorkspaceSettings
from noosphere.workspace.chunk import Chunk
from noosphere.workspace.proposer import FunctionProposer, GeneralistProposer
from noosphere.workspace.scores import ScoreSource, probability

BASE_SYSTEM = "You are a precise assistant that calls functions to fulfil requests."
SELECT_SYSTEM = "You decide which function calls to make for a request, precisely: no more and no fewer than it asks."
MIN_RELEVANCE = 0.5
CALLS_QUESTION = "Do these function calls do exactly what the request asks, with the right arguments? Answer Yes or No."
"""The question whose P(True), asked after calls (`calls_judged`), the signal table measured on BFCL (AUROC 0.84 on
the dev items' base calls) and the gate (`_gated`, of the base's or the call motor's calls) asks."""
Motor = Literal["select", "call"]
MOTORS: tuple[str, ...] = ("select", "call")
Processors = Literal["functions", "functions+generalist"]
PROCESSORS: tuple[str, ...] = ("functions", "functions+generalist")
GENERALIST = "generalist"
"""The generalist processor's name (a function processor's is `f{index}:{function name}`)."""


def _scored(item: BfclItem, calls: tuple[ToolCall, ...], confidence: float | None = None) -> Scored:
    correct, reason = score(item, calls)
    predicted = [{call.name: call.arguments} for call in calls]
    return Scored(predicted, correct, {"reason": reason, "category": item.category}, confidence)


def calls_judged(item: BfclItem, prediction: Sequence[dict[str, Any]]) -> list[Message]:
    """The request, the calls made for it (as a `Scored` prediction: `{name: arguments}` each), then
    `CALLS_QUESTION`: the messages whose P(True) says whether the calls are right."""
    return [Message.system(BASE_SYSTEM), *item.messages, Message.assistant(f"Function calls: {json.dumps(prediction)}"),
            Message.user(CALLS_QUESTION)]


def _judged_for(item: BfclItem) -> Callable[[tuple[ToolCall, ...]], list[Message]]:
    """`calls_judged` of calls as the generalist holds them."""
    return lambda calls: calls_judged(item, [{call.name: call.arguments} for call in calls])


async def _gated(model: Model, item: BfclItem, made: tuple[ToolCall, ...], scores: ScoreSource, gate: float | None,
                 confidence: float | None, made_key: str, asked: float | None = None) -> Scored:
    """`made` scored after the gate: with a `gate`, P(True) of `CALLS_QUESTION` after the calls decides (below the
    gate no call is made) and is the item's confidence; without one, the calls stand with `confidence`. `asked`:
    that P(True) when it was already asked of these calls (the generalist's relevance), then not asked again.
    Detail: `made_key` (the calls before the gate), `gate_p_true`, `gated` (whether the gate dropped calls)."""
    prediction = [{call.name: call.arguments} for call in made]
    p_true: float | None = None
    calls = made
    if gate is not None:
        p_true = asked if asked is not None else await probability(model, calls_judged(item, prediction), scores,
                                                                   agent="gate")
        calls = made if p_true >= gate else ()
    scored = _scored(item, calls, p_true if gate is not None else confidence)
    scored.detail.update({made_key: prediction, "gate_p_true": round(p_true, 6) if p_true is not None else None,
                          "gated": bool(made) and not calls})
    return scored


def _check_gate(gate: float | None, scores: ScoreSource) -> None:
    if gate is not None and (scores == "verbal" or not 0.0 < gate < 1.0):
        raise UsageError("a gate in (0, 1) needs probability scores")


async def solve_base(model: Model, item: BfclItem, *, scores: ScoreSource = "verbal",
                     gate: float | None = None) -> Scored:
    """One function-calling request with every function offered. `gate` (probability `scores`): the P(True)
    below which its calls are dropped (detail `base_calls`, `gate_p_true`, `gated`; see `_gated`)."""
    _check_gate(gate, scores)
    completion = await model.complete([Message.system(BASE_SYSTEM), *item.messages], tools=item.tools, agent="base")
    if gate is None:
        return _scored(item, completion.tool_calls)
    return await _gated(model, item, completion.tool_calls, scores, gate, None, "base_calls")


def _processor_name(index: int, function_name: str) -> str:
    return f"f{index}:{function_name}"


async def solve_ctm(model: Model, settings: WorkspaceSettings, item: BfclItem, *, motor: Motor = "select",
                    gate: float | None = None, processors: Processors = "functions") -> Scored:
    """`motor`: `select` or `call` (see the module); `gate` (call motor, probability scores): the P(True) below
    which the call motor's calls (and a winning generalist's) are dropped (no call is made). `processors`:
    `functions` (one per function) or `functions+generalist` (probability scores: see the module)."""
    if processors not in PROCESSORS:
        raise UnknownNameError("processors", processors, PROCESSORS)
    if gate is not None and motor != "call":
        raise UsageError("a gate needs the call motor")
    _check_gate(gate, settings.scores)
    if processors == "functions+generalist" and settings.scores == "verbal":
        raise UsageError("the generalist's relevance is P(True) of its calls: it needs probability scores")
    request = "\n".join(message.content for message in item.messages if message.role == "user")
    query = f"Request: {request}\nWhich function calls, with which arguments, does this request need?"
    proposers = [FunctionProposer(_processor_name(i, spec.name), model, spec, scores=settings.scores)
                 for i, spec in enumerate(item.tools)]
    generalists = ([GeneralistProposer(GENERALIST, model, [Message.system(BASE_SYSTEM), *item.messages], item.tools,
                                       task=query, judged=_judged_for(item), scores=settings.scores)]
                   if processors == "functions+generalist" else [])
    stm = ShortTermMemory(model, scores=settings.scores, calibrate=settings.calibrate, alpha=settings.stm_alpha)
    workspace = Workspace([*proposers, *generalists], stm, settings)
    result = await workspace.run(query)
    proposals = {proposer.name: found for proposer in [*proposers, *generalists]
                 if (found := proposer.proposal_for(query)) is not None}
    proposed: list[ToolCall] = []
    for name, (chunk, proposal_calls) in proposals.items():
        if chunk.relevance >= MIN_RELEVANCE and name != GENERALIST:  # the function processors' proposals
            proposed += [call for call in proposal_calls if call not in proposed]
    winner = result.winners[-1] if result.winners else None
    if generalists and (path := _path(winner, proposals)) != "motor":
        scored = await _honour_generalist(model, settings, item, proposals, gate, result.confidence, path)
    elif motor == "call":
        scored = await _call_motor(model, settings, item, request, result.answer, proposed, gate,
                                   result.confidence)
    else:
        calls = await _select(model, request, result.answer, proposed) if proposed else ()
        scored = _scored(item, calls, result.confidence)  # the STM's confidence in the workspace's conclusion
    if generalists:  # the generalist's own calls are kept whichever path was taken
        scored.detail.setdefault("path", "motor")
        held = proposals.get(GENERALIST)
        scored.detail.setdefault("generalist_calls", [{call.name: call.arguments} for call in held[1]]
                                 if held is not None else None)
        scored.detail["winner_relevance"] = (round(proposals[winner][0].relevance, 4)
                                             if winner is not None and winner in proposals else None)
    scored.detail.update({"proposed": len(proposed), **competition_detail(item, result.winners, proposals)})
    return scored


def _path(winner: str | None, proposals: dict[str, tuple[Chunk, tuple[ToolCall, ...]]]) -> str:
    """What the workspace with a generalist acts on: `generalist` (it won and clears `MIN_RELEVANCE`), `none` (it
    won below that bar, or no processor reaches it) or `motor` (a function processor won: the chosen motor)."""
    if winner == GENERALIST and winner in proposals:
        return "generalist" if proposals[winner][0].relevance >= MIN_RELEVANCE else "none"
    if not any(chunk.relevance >= MIN_RELEVANCE for chunk, _ in proposals.values()):
        return "none"
    return "motor"


async def _honour_generalist(model: Model, settings: WorkspaceSettings, item: BfclItem,
                             proposals: dict[str, tuple[Chunk, tuple[ToolCall, ...]]], gate: float | None,
                             confidence: float, path: str) -> Scored:
    """The generalist's calls, through the gate if given (its relevance is the gate's P(True)), or no call, with the
    STM's `confidence` where no gate speaks. Detail: `path`, `generalist_calls` (before the gate), `gate_p_true`,
    `gated`."""
    if path == "none":
        scored = _scored(item, (), confidence)
        scored.detail.update({"gate_p_true": None, "gated": False})
    else:
        chunk, calls = proposals[GENERALIST]
        scored = await _gated(model, item, calls, settings.scores, gate, confidence, "generalist_calls",
                              asked=chunk.relevance)
    scored.detail["path"] = path
    return scored


def _listed(calls: Sequence[ToolCall]) -> str:
    return "\n".join(f"- {call.name}({json.dumps(call.arguments)})" for call in calls) or "(none)"


async def _call_motor(model: Model, settings: WorkspaceSettings, item: BfclItem, request: str, conclusion: str,
                      proposed: list[ToolCall], gate: float | None, confidence: float | None) -> Scored:
    """The call motor: one function-calling request with every function offered, the workspace's conclusion and
    proposals as hints (asked even when nothing was proposed: the hints are not the choice), its calls then through
    the `gate` if given (see `_gated`: P(True) of `CALLS_QUESTION`, the signal table's question). Detail: `motor`,
    `motor_calls` (before the gate), `gate_p_true`, `gated`."""
    prompt = (f"Request: {request}\n\nThe workspace concluded: {conclusion}\n\nHints: the workspace's processors, "
              f"one per function, proposed these calls:\n{_listed(proposed)}\n\nMake the calls the request needs: "
              "no more and no fewer than it asks, none if it asks for nothing a function does.")
    completion = await attempt(model.complete([Message.system(BASE_SYSTEM), Message.user(prompt)], tools=item.tools,
                                              agent="motor"))
    made = tuple(proposed) if isinstance(completion, Forfeit) else completion.tool_calls  # a forfeit: proposals stand
    scored = await _gated(model, item, made, settings.scores, gate, confidence, "motor_calls")
    scored.detail["motor"] = "call"
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
