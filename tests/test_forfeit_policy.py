"""The one forfeit policy (`noosphere.concurrent`): a runtime fault forfeits a turn, a usage error never does.

Each engine and baseline is run on the scripted model with a turn whose call raises `CapabilityError` (a usage
error: the caller asked a model for something it cannot do). The run must stop with that error, not pass
it off as a forfeited turn, a wasted move or a hallucination.
"""

from __future__ import annotations

import asyncio
import json
from functools import partial

import pytest

from noosphere.concurrent import Forfeit, attempt, forfeits, gather_turns
from noosphere.envs import Reset, Step
from noosphere.errors import (
    BudgetExceededError,
    CapabilityError,
    ConfigError,
    ModelError,
    OutputParseError,
    TurnRefused,
    UsageError,
)
from noosphere.metaagent import MetaAgent, react, reflexion
from noosphere.observation import Observation
from noosphere.society import Member, SubSociety, monarchy
from noosphere.society.roleplay import RolePlay
from noosphere.workspace import ShortTermMemory, Workspace, sensory
from tests.helpers import by_agent, chunk_reply, scripted, stm_reply

UNABLE = CapabilityError("scripted", "images")
"""What a turn's call raises in these tests: a usage error, which no engine may forfeit."""


# the policy itself -----------------------------------------------------------------------------------------------
def test_only_a_runtime_fault_that_is_not_a_spent_budget_forfeits() -> None:
    assert forfeits(ModelError("m", "boom")) and forfeits(OutputParseError("m", "S", 3, "", []))
    assert forfeits(TurnRefused("a society has no probability"))
    assert not forfeits(BudgetExceededError("calls", 1, 1))
    assert not forfeits(UNABLE) and not forfeits(ConfigError("bad")) and not forfeits(KeyError("bug"))


async def _after(delay: float, value: object) -> object:
    await asyncio.sleep(delay)
    if isinstance(value, BaseException):
        raise value
    return value


def test_turns_come_back_in_the_order_given_with_forfeits_in_their_places() -> None:
    fault = ModelError("m", "boom")
    turns = [partial(_after, 0.03, "slow"), partial(_after, 0.0, fault), partial(_after, 0.01, "fast")]
    results = asyncio.run(gather_turns(turns))
    assert results == ["slow", Forfeit(fault), "fast"]
    assert str(results[1]) == "ModelError: m: boom"


@pytest.mark.parametrize("error", [UNABLE, BudgetExceededError("calls", 2, 2), KeyError("bug")])
def test_a_usage_error_a_spent_budget_or_a_bug_is_raised_as_itself_and_cancels_the_other_turns(
        error: BaseException) -> None:
    finished: list[str] = []

    async def slow() -> str:
        await asyncio.sleep(0.2)
        finished.append("slow")
        return "slow"

    with pytest.raises(type(error)) as raised:
        asyncio.run(gather_turns([slow, partial(_after, 0.0, error)]))
    assert raised.value is error and not finished
    with pytest.raises(type(error)):
        asyncio.run(attempt(_after(0.0, error)))


def test_the_gate_bounds_how_many_turns_run_at_once_and_turns_left_waiting_never_start() -> None:
    running, most, started = [0], [0], []

    async def turn(index: int) -> int:
        started.append(index)
        running[0] += 1
        most[0] = max(most[0], running[0])
        await asyncio.sleep(0.01)
        running[0] -= 1
        return index

    assert asyncio.run(gather_turns((partial(turn, i) for i in range(7)), limit=2)) == list(range(7))
    assert most[0] == 2
    started.clear()
    with pytest.raises(CapabilityError):
        asyncio.run(gather_turns([partial(_after, 0.0, UNABLE), *(partial(turn, i) for i in range(5))], limit=1))
    assert started == []  # the first turn's usage error stopped the run before any other turn began


# one test per engine and baseline: a usage error propagates --------------------------------------------------------
OBSERVATION = Observation.of({"a": "view of a", "b": "view of b"})


@pytest.mark.parametrize("who", ["b", "stm"])  # a processor's bid, or the STM's answer
def test_the_workspace_raises_a_usage_error_instead_of_forfeiting_the_processor(who: str) -> None:
    script: dict[str, list[object]] = {"a": [chunk_reply("A", "", 0.9, 0.9)], "b": [chunk_reply("B", "", 0.5, 0.5)],
                                       "stm": [stm_reply("yes", 0.95)]}
    script[who] = [UNABLE]
    model, _, trace = scripted(by_agent(script))
    workspace = Workspace([sensory(name, model, name) for name in "ab"], ShortTermMemory(model))
    with pytest.raises(CapabilityError):
        workspace.run_sync("is it so?", OBSERVATION)
    assert not trace.of_kind("ws_forfeit")


def test_stm_samples_raise_a_usage_error_instead_of_dropping_the_sample() -> None:
    from noosphere.workspace import Chunk

    model, _, _ = scripted([stm_reply("yes", 1.0), UNABLE, stm_reply("yes", 1.0)])
    stm = ShortTermMemory(model, samples=3)
    with pytest.raises(CapabilityError):
        asyncio.run(stm.answer("q", Chunk("a", 1, "gist", "", 1.0, 1.0, 1.0, 0.0)))


def _said(answer: str) -> str:
    return json.dumps({"reasoning": "because", "answer": answer})


def test_a_society_raises_a_members_usage_error_instead_of_forfeiting_the_members_turn() -> None:
    model, _, trace = scripted(by_agent({
        "a": [_said("4")], "b": [UNABLE], "organizer": [json.dumps({"summary": "4", "answer": "4"})],
        "leader": [_said("4")]}))
    society = monarchy([Member("a", model, "a"), Member("b", model, "b")], Member("organizer", model, "o"),
                       Member("leader", model, "l"), rounds=0)
    with pytest.raises(CapabilityError):
        society.run_sync("2 + 2?")
    assert not trace.of_kind("soc_forfeit")


def test_a_sub_society_that_cannot_take_a_turn_still_forfeits_it_as_a_refused_turn() -> None:
    """What a society standing as a member cannot do is a runtime fault of that turn (`TurnRefused`), not a
    usage error of the caller: the weighted vote goes on without it."""
    model, _, _ = scripted([])
    inner = monarchy([Member("x", model, "x")], Member("xo", model, "o"), Member("xl", model, "l"), rounds=0)
    team = SubSociety.of("team", inner)
    outcome = asyncio.run(attempt(team.belief("Is 4 right?")))
    assert isinstance(outcome, Forfeit) and isinstance(outcome.error, TurnRefused)
    assert not isinstance(outcome.error, UsageError)


def test_a_role_play_raises_a_usage_error_instead_of_ending_as_a_forfeit() -> None:
    model, _, trace = scripted(by_agent({"user": ["Write it."], "assistant": [UNABLE]}))
    with pytest.raises(CapabilityError):
        asyncio.run(RolePlay(Member("user", model, "u"), Member("assistant", model, "a")).run("t"))
    assert not trace.of_kind("soc_forfeit")


class OneRoom:
    name, kind = "one-room", "fetch"

    def reset(self) -> Reset:
        return Reset("Your task is to: take the key.", "A key lies here.", ("take key", "look"))

    def step(self, action: str) -> Step:
        won = action == "take key"
        return Step("You take the key." if won else "Nothing happens.", float(won), won, won, ("take key", "look"))

    def close(self) -> None:
        pass


def test_the_meta_agent_raises_a_usage_error_instead_of_counting_a_hallucination() -> None:
    model, backend, trace = scripted([UNABLE])
    with pytest.raises(CapabilityError):
        asyncio.run(MetaAgent(model).play(OneRoom()))
    assert len(backend.history) == 1 and not trace.of_kind("ma_focus")


@pytest.mark.parametrize("baseline", [react, reflexion])
def test_react_and_reflexion_raise_a_usage_error_instead_of_wasting_a_move(baseline) -> None:
    model, backend, trace = scripted([UNABLE])
    with pytest.raises(CapabilityError):
        asyncio.run(baseline(model, OneRoom()))
    assert len(backend.history) == 1 and not trace.of_kind("ma_action")


def test_best_of_n_raises_a_usage_error_instead_of_dropping_the_sample() -> None:
    from noosphere.bench.gsm8k import GsmItem, solve_best_of_n

    model, _, _ = scripted([_said("7"), UNABLE, _said("7")])
    with pytest.raises(CapabilityError):
        asyncio.run(solve_best_of_n(model, 3, GsmItem("q", "3 + 4?", "7")))


def test_best_of_n_counts_a_sample_that_failed_at_run_time_as_failed() -> None:
    from noosphere.bench.gsm8k import GsmItem, solve_best_of_n

    model, _, _ = scripted([_said("7"), ModelError("scripted", "boom"), _said("7")])
    scored = asyncio.run(solve_best_of_n(model, 3, GsmItem("q", "3 + 4?", "7")))
    assert scored.correct and scored.detail["failed"] == 1 and scored.detail["votes"] == {"7": 2}
