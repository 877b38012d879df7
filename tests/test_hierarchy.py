"""Hierarchies on the scripted model: a society as a member, and the artist-critic society at full scale."""

from __future__ import annotations

import asyncio
import base64
import json
from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest

from noosphere.errors import ModelError
from noosphere.llm.litellm_backend import import_litellm
from noosphere.llm.types import Request
from noosphere.society import Member, SubSociety, artist_critic, democracy, monarchy
from noosphere.society.artists import LiteLLMPainter
from tests.helpers import by_agent, scripted


def said(answer: str) -> str:
    return json.dumps({"reasoning": "r", "answer": answer})


def test_a_society_answers_as_one_member_of_a_larger_one_and_votes_through_its_own_decision() -> None:
    model, backend, trace = scripted(by_agent({
        "inner/a": [said("12")], "inner/o": [json.dumps({"summary": "they agree", "answer": "12"})],
        "inner/l": [said("12")],
        "solo": [said("13"), said("13"), json.dumps({"reasoning": "r", "choice": "B"})],
        "outer/o": [json.dumps({"question": "Sure?"}), json.dumps({"summary": "split", "answer": "12"})]}))
    inner = monarchy([Member("inner/a", model, "a")], Member("inner/o", model, "o"), Member("inner/l", model, "l"),
                     rounds=0)
    outer = democracy([SubSociety.of("team", inner), Member("solo", model, "s")], Member("outer/o", model, "o"),
                      rights={"execute"}, rounds=1)
    result = outer.run_sync("5 + 7?")
    said_by_team = [e for e in trace.of_kind("soc_message") if e.member == "team"]
    assert [e.answer for e in said_by_team] == ["12", "12"]  # mission and round 1 (the mission's answer stands)
    # round 1 ran a whole inner society on the sub-question, put after the task it belongs to
    inner_round = [r.messages[-1].content for r in backend.history if r.agent == "inner/a"][1]
    assert inner_round.startswith("Task: 5 + 7?\n\nThe organizer asks: Sure?")
    assert not [r for r in backend.history if "Task: Task:" in r.messages[-1].content]
    # the inner society ran three times: mission, round 1 and the ballot
    assert len([e for e in trace.of_kind("soc_started") if e.organisation == "monarchy"]) == 3
    assert not trace.of_kind("soc_forfeit")
    ballots = {e.voter: tuple(e.ranking) for e in trace.of_kind("soc_ballot")}
    assert ballots == {"team": ("12",), "solo": ("13",)}  # the team's society decided 12, which is option A
    # the inner society's events carry its path; the outer society's carry none
    assert {getattr(e, "society", None) for e in trace.of_kind("soc_started")} == {None, "team"}
    assert {e.society for e in trace.of_kind("soc_message") if e.member.startswith("inner/")} == {"team"}
    assert all(getattr(e, "society", None) is None for e in trace.of_kind("soc_message") if e.member == "team")
    [tallied] = [e for e in trace.of_kind("soc_tally") if getattr(e, "society", None) is None]
    assert tallied.tied == ["12", "13"] and result.decided_by == "vote" and result.answer == "13"  # seed 0 draws it


def test_a_sub_societys_answer_weighs_the_mean_of_its_peers_in_a_vote_by_sequence_probability() -> None:
    """A society has no probability of its own: in a vote by the replies' probability its answer stands and
    counts the mean of the members' weights, so a likely peer's answer outweighs it."""
    import math

    from noosphere.llm import Capabilities, Reply, Usage

    def likely(answer: str, logprob: float) -> Reply:
        return Reply(said(answer), usage=Usage(10, 2), logprob=logprob)

    model, _, trace = scripted(by_agent({
        "inner/a": [likely("12", -0.1)], "inner/o": [json.dumps({"summary": "agreed", "answer": "12"})],
        "inner/l": [likely("12", -0.1)], "solo": [likely("13", -0.2)], "other": [likely("13", -4.0)],
        "outer/o": [json.dumps({"question": "Sure?"}), json.dumps({"summary": "split", "answer": "12"})]}),
        capabilities=Capabilities(json_schema=True, logprobs=True))
    inner = monarchy([Member("inner/a", model, "a")], Member("inner/o", model, "o"), Member("inner/l", model, "l"),
                     rounds=0)
    outer = democracy([SubSociety.of("team", inner), Member("solo", model, "s"), Member("other", model, "x")],
                      Member("outer/o", model, "o"), rights={"execute"}, rounds=0, vote="sequence")
    result = outer.run_sync("5 + 7?")
    weights = {e.voter: e.weight for e in trace.of_kind("soc_ballot") if getattr(e, "society", None) is None}
    solo, other = math.exp(-0.1), math.exp(-2.0)
    assert weights == pytest.approx({"team": (solo + other) / 2, "solo": solo, "other": other}, abs=1e-6)
    assert (result.answer, result.decided_by) == ("13", "sequence")  # 13: solo + other outweigh the team's mean
    assert not trace.of_kind("soc_forfeit")


def by_role(queues: dict[str, list[Any]]) -> Any:
    """Each agent gets its own copy of the queue named by the last part of its name."""
    per_agent: dict[str, list[Any]] = defaultdict(list)

    def reply(request: Request) -> Any:
        agent = request.agent or ""
        if agent not in per_agent:
            per_agent[agent] = list(queues[agent.split("/")[-1].split("-")[0]])
        queue = per_agent[agent]
        item = queue.pop(0) if len(queue) > 1 else queue[0]
        return item(request) if callable(item) else item

    return reply


def test_artist_critic_runs_with_the_papers_129_members_and_critics_choose_by_count() -> None:
    votes = iter(["2"] * 20 + ["1"] * 15 + ["3"] * 15)
    model, backend, trace = scripted(by_role({
        "answerer": [said("a lighthouse in fog"), said("soft greys")],
        "questioner": [json.dumps({"question": "What mood?"}), json.dumps({"summary": "foggy", "answer": "fog"})],
        "leader": [said("proposal")],
        "critic": [lambda request: json.dumps({"reasoning": "r", "choice": next(votes)})],
        "collector": [said("A lighthouse in fog, painted in soft greys.")]}))
    styles = [f"style {i}" for i in range(26)]
    society = artist_critic(model, styles, [f"profession {i}" for i in range(50)], rounds=1)
    result = society.run_sync("the sea at night")
    agents = {request.agent for request in backend.history}
    assert len(agents) == 26 * 3 + 50 + 1 == 129
    assert len(backend.history) == 26 * 5 + 50 + 1
    [tally] = trace.of_kind("soc_tally")
    assert tally.scores["artist-2"] == 20 and tally.winner == "artist-2"
    assert result.support == 20 / 50  # the critics' ballots behind the winner
    assert result.answer == "A lighthouse in fog, painted in soft greys."


class BrokenPainter:
    async def paint(self, prompt: str) -> str:
        raise ModelError("painter", "the image service is down")


class BuggyPainter:
    async def paint(self, prompt: str) -> str:
        raise KeyError("a bug, not a provider's fault")


class FilePainter:
    async def paint(self, prompt: str) -> str:
        return f"/tmp/{len(prompt)}.png"


def test_a_failing_painter_leaves_the_decision_standing_and_says_why_in_the_trace() -> None:
    for painter, expect in ((BrokenPainter(), "ModelError: painter: the image service is down"), (FilePainter(), "")):
        model, _, trace = scripted(by_role({
            "answerer": [said("a red boat")], "leader": [said("proposal")],
            "questioner": [json.dumps({"question": "What?"}), json.dumps({"summary": "boat", "answer": "boat"})],
            "critic": [json.dumps({"reasoning": "r", "choice": "1"})], "collector": [said("A red boat at dawn.")]}))
        result = artist_critic(model, ["style a", "style b"], ["sailor"], rounds=1, painter=painter).run_sync("sea")
        [image] = trace.of_kind("soc_image")
        assert result.answer == "A red boat at dawn." and image.error == expect
        assert image.location == ("" if expect else "/tmp/19.png")  # len("A red boat at dawn.")
    model, _, _ = scripted(by_role({
        "answerer": [said("a red boat")], "leader": [said("proposal")],
        "questioner": [json.dumps({"question": "What?"}), json.dumps({"summary": "boat", "answer": "boat"})],
        "critic": [json.dumps({"reasoning": "r", "choice": "1"})], "collector": [said("A red boat at dawn.")]}))
    with pytest.raises(KeyError, match="a bug"):  # only a runtime fault is forfeited; a bug is raised
        artist_critic(model, ["style a", "style b"], ["sailor"], rounds=1, painter=BuggyPainter()).run_sync("sea")


def test_when_every_critic_forfeits_no_proposal_passes_for_their_choice() -> None:
    model, backend, trace = scripted(by_role({
        "answerer": [said("a red boat")], "leader": [said("proposal")],
        "questioner": [json.dumps({"question": "What?"}), json.dumps({"summary": "boat", "answer": "boat"})],
        "critic": ["I would rather not judge."], "collector": [said("A red boat at dawn.")]}))
    result = artist_critic(model, ["style a", "style b"], ["sailor", "baker"], rounds=1,
                           painter=FilePainter()).run_sync("sea")
    assert {e.member for e in trace.of_kind("soc_forfeit")} == {"critic-1", "critic-2"}
    assert not [b for b in trace.of_kind("soc_ballot") if not b.standing]  # no critic's ballot was made up
    assert not trace.of_kind("soc_image") and "collector" not in {r.agent for r in backend.history}
    assert result.decided_by == "fallback"  # the artists' own proposals, counted, and said to be a fallback


@pytest.mark.provider_double  # LiteLLM's image call is replaced below, and its image link served by a mock transport
def test_the_litellm_painter_saves_the_image_whether_it_comes_inline_or_by_link(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    litellm = import_litellm()  # with its bundled price map: a plain import would reach the network
    png = b"\x89PNG fake image bytes"
    replies = iter([SimpleNamespace(b64_json=base64.b64encode(png).decode(), url=None),
                    SimpleNamespace(b64_json=None, url="https://img.example/p.png?sig=secret")])
    fetched: list[str] = []

    async def image_generation(**kwargs: Any) -> Any:
        return SimpleNamespace(data=[next(replies)])

    def serve(request: httpx.Request) -> httpx.Response:
        fetched.append(str(request.url))
        return httpx.Response(200, content=png)

    monkeypatch.setattr(litellm, "aimage_generation", image_generation)
    painter = LiteLLMPainter("openai/dall-e-3", tmp_path / "paintings", transport=httpx.MockTransport(serve))
    for prompt in ("a red boat", "a blue boat"):
        path = Path(asyncio.run(painter.paint(prompt)))
        assert path.parent == tmp_path / "paintings" and path.read_bytes() == png  # a file, never the link
    assert fetched == ["https://img.example/p.png?sig=secret"]


def test_the_inner_society_perceives_the_observation_through_its_own_members() -> None:
    from noosphere.observation import Observation

    model, backend, _ = scripted(by_agent({
        "inner/a": [said("red")], "inner/o": [json.dumps({"summary": "red", "answer": "red"})],
        "inner/l": [said("red")], "solo": [said("blue")]}))
    inner = monarchy([Member("inner/a", model, "a", sees=("first",))], Member("inner/o", model, "o"),
                     Member("inner/l", model, "l"), rounds=0)
    outer = monarchy([SubSociety.of("team", inner), Member("solo", model, "s", sees=("second",))],
                     Member("inner/o", model, "o"), Member("inner/l", model, "l"), rounds=0)
    outer.run_sync("What colour is the cat?", Observation.of({"first": "The cat is red.", "second": "A blue sky."}))
    [first_ask] = [r for r in backend.history if r.agent == "inner/a"][:1]
    assert "The cat is red." in first_ask.messages[-1].content and "blue sky" not in first_ask.messages[-1].content


def test_a_sub_society_that_reaches_no_answer_forfeits_its_turn_instead_of_offering_a_placeholder() -> None:
    model, _, trace = scripted(by_agent({
        "inner/a": ["not json"] * 3, "inner/o": [json.dumps({"summary": "nothing to go on", "answer": ""})],
        "inner/l": ["not json"] * 3,
        "solo": [said("13")],
        "outer/o": [json.dumps({"summary": "only solo answered", "answer": "13"})]}))
    inner = monarchy([Member("inner/a", model, "a")], Member("inner/o", model, "o"), Member("inner/l", model, "l"),
                     rounds=0)
    outer = democracy([SubSociety.of("team", inner), Member("solo", model, "s")], Member("outer/o", model, "o"),
                      rights={"execute"}, rounds=0)
    result = outer.run_sync("5 + 7?")
    forfeits = [e for e in trace.of_kind("soc_forfeit") if getattr(e, "society", None) is None]
    assert [(e.member, e.error.split(":")[0]) for e in forfeits] == [("team", "RuntimeFault")]
    assert result.answer == "13" and not [e for e in trace.of_kind("soc_message") if e.member == "team"]
