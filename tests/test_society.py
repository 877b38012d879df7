"""Societies on the scripted model: organisations, rights, voting and forfeits, asserted on the trace."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from noosphere.errors import CapabilityError, OutputParseError, UnknownNameError, UsageError
from noosphere.llm import Model
from noosphere.observation import Observation
from noosphere.society import Ballot, Member, debate, democracy, monarchy, tally
from noosphere.society.phases import SNIPPET, excerpt
from tests.helpers import by_agent, scripted


def said(answer: str, reasoning: str = "because") -> dict[str, str]:
    """A statement; in an organizer's round the same fields make a reply to the sub-question."""
    return {"reasoning": reasoning, "answer": answer}


def members(model, names=("a", "b", "c")) -> list[Member]:
    return [Member(name, model, f"You are member {name}.") for name in names]


# voting --------------------------------------------------------------------------------------------
def test_plurality_borda_and_approval_count_as_defined() -> None:
    ballots = [Ballot("v1", ("x", "y", "z")), Ballot("v2", ("y", "z", "x")), Ballot("v3", ("y", "x", "z")),
               Ballot("v4", ("x", "z", "y")), Ballot("v5", ("z", "x", "y"))]
    rng = random.Random(0)
    assert tally(ballots, ["x", "y", "z"], "plurality", rng=rng).scores == {"x": 2, "y": 2, "z": 1}
    borda = tally(ballots, ["x", "y", "z"], "borda", rng=rng)
    assert borda.scores == {"x": 6, "y": 5, "z": 4} and borda.winner == "x"
    approval = tally([Ballot("v1", ("x", "y")), Ballot("v2", ("y",))], ["x", "y"], "approval", rng=rng)
    assert approval.scores == {"x": 1, "y": 2} and approval.winner == "y"


def test_ties_are_broken_by_the_seed_not_by_position() -> None:
    ballots = [Ballot("v1", ("x",)), Ballot("v2", ("y",))]
    winners = Counter(tally(ballots, ["x", "y"], rng=random.Random(seed)).winner for seed in range(200))
    assert set(winners) == {"x", "y"} and min(winners.values()) > 60
    assert tally(ballots, ["x", "y"], rng=random.Random(7)).winner == tally(ballots, ["y", "x"],
                                                                             rng=random.Random(7)).winner
    with pytest.raises(UnknownNameError, match="Did you mean borda"):
        tally(ballots, ["x"], "borad", rng=random.Random(0))
    weighted = [Ballot("v1", ("x",)), Ballot("v2", ("x",)), Ballot("v3", ("y",))]
    weights = {"v1": 0.1, "v2": 0.2, "v3": 0.3}  # 0.1 + 0.2 is 0.30000000000000004 in floats: still a tie
    assert tally(weighted, ["x", "y"], rng=random.Random(0), weights=weights).tied == ("x", "y")


# monarchy ------------------------------------------------------------------------------------------
def test_monarchy_runs_the_four_phases_and_the_leader_decides() -> None:
    model, backend, trace = scripted(by_agent({
        "a": [said("12")], "b": [said("12")], "c": [said("13")],
        "organizer": [{"question": "Did you add the tens?"}, {"question": "And the units?"},
                      {"summary": "Most found 12.", "answer": "12"}],
        "leader": [said("12", "the summary is convincing")]}))
    society = monarchy(members(model), Member("organizer", model, "You organise."),
                       Member("leader", model, "You lead."), rounds=2)
    result = society.run_sync("What is 5 + 7?")
    assert (result.answer, result.decided_by) == ("12", "leader")
    assert result.support == pytest.approx(2 / 3)  # the leader decided: a and b hold 12, c holds 13
    phases = [(e.phase, e.round) for e in trace.of_kind("soc_phase")]
    assert phases == [("mission", 0), ("mindstorm", 1), ("mindstorm", 2), ("opinion", 3), ("execution", 4)]
    assert len(backend.history) == 3 + 2 * (1 + 3) + 1 + 1
    # Without the right to know, a member never sees another member's words.
    member_b_prompts = [m.content for r in backend.history if r.agent == "b" for m in r.messages]
    assert not any("Answer1" in text or "(answer: 13)" in text for text in member_b_prompts)
    # A round asks the organizer's question alone; the member's answer to the task stands from its first statement.
    round_one = next(r for r in backend.history if r.agent == "c" and "organizer asks" in r.messages[-1].content)
    assert round_one.messages[-1].content == "The organizer asks: Did you add the tens?"
    assert [e.answer for e in trace.of_kind("soc_message") if e.member == "c"] == ["13", "13", "13"]
    # The organizer is reminded of what it asked, so a second round asks about another step.
    asking = [r.messages[-1].content for r in backend.history if r.agent == "organizer"][:2]
    assert "You already asked" not in asking[0] and "You already asked:\n- Did you add the tens?" in asking[1]
    # The organizer asks its questions in one conversation: each turn extends the last one's messages with only
    # what was said since, so the conversation stays a cached prefix. It summarises from a fresh, whole brief.
    organizer = [r.messages for r in backend.history if r.agent == "organizer"]
    assert [len(messages) for messages in organizer] == [2, 4, 2]
    assert organizer[1][:2] == organizer[0] and '"SubQuestion"' in organizer[0][0].content
    assert "What is 5 + 7?" in organizer[0][1].content and "What is 5 + 7?" not in organizer[1][-1].content
    news = organizer[1][-1].content  # round 1's replies, not the first statements again
    assert "Question 1: Did you add the tens?" in news and "c: because (answer: 13)" not in news
    summarise = organizer[2][-1].content
    assert summarise.startswith("Task: What is 5 + 7?") and "c: because (answer: 13)" in summarise
    assert "Question 1: Did you add the tens?" in summarise and "Question 2: And the units?" in summarise
    assert len(society.staff[0].history) == 4  # the summary, asked alone, did not join the conversation
    # The leader weighs each member's reasoning and sees who holds each answer, not only the summary.
    leader = next(r for r in backend.history if r.agent == "leader").messages[-1].content
    assert "c: because" in leader and "(answer: 13)" in leader
    assert "(A) a, b, the organizer's summary" in leader and "(B) c" in leader


def test_a_leader_who_answers_with_an_options_letter_decides_that_options_answer() -> None:
    """Shown lettered options, small models often reply "B": the society's answer is B's text, not "B"."""
    def run(leader_says: str, answers: tuple[str, str]) -> str:
        model, _, _ = scripted(by_agent({
            "a": [said(answers[0])], "b": [said(answers[1])], "organizer": [{"question": "Sure?"}, {
                "summary": "Two answers.", "answer": answers[1]}], "leader": [said(leader_says)]}))
        return monarchy(members(model, ("a", "b")), Member("organizer", model, "o"), Member("leader", model, "l"),
                        rounds=1).run_sync("7 + 6?").answer

    assert run("B", ("12", "13")) == "13" and run("(A).", ("12", "13")) == "12"
    assert run("14", ("12", "13")) == "14"  # an answer of its own stands
    assert run("A", ("C", "A")) == "A"  # an answer that is itself an option is that option, not a label
    assert run("(b) 13 apples", ("12", "13")) == "13"  # an option copied with its label is that option
    assert run("(B) 14, not 13", ("12", "13")) == "14, not 13"  # a label before an answer of its own is dropped


def test_the_leader_may_take_the_organizers_correction_when_every_member_is_wrong() -> None:
    model, backend, _ = scripted(by_agent({
        "a": [said("12")], "b": [said("more feed")], "organizer": [{"question": "Sure?"}, {
            "summary": "Both slipped: 7 + 6 is 13.", "answer": "13"}], "leader": [said("C")]}))
    society = monarchy(members(model, ("a", "b")), Member("organizer", model, "o"), Member("leader", model, "l"),
                       rounds=1)
    assert society.run_sync("7 + 6?").answer == "13"
    leader_prompt = next(r for r in backend.history if r.agent == "leader").messages[-1].content
    assert "(A) 12\n(B) more feed\n(C) 13" in leader_prompt


def test_a_member_whose_replies_never_parse_forfeits_and_the_society_still_answers() -> None:
    model, _, trace = scripted(by_agent({
        "a": [said("4")], "b": ["not json at all"], "organizer": [{"question": "Sure?"}, {"summary": "4",
                                                                                           "answer": "4"}],
        "leader": [said("4")]}))
    result = monarchy(members(model, ("a", "b")), Member("organizer", model, "o"), Member("leader", model, "l"),
                      rounds=1).run_sync("2 + 2?")
    assert result.answer == "4"
    forfeits = trace.of_kind("soc_forfeit")
    assert {e.member for e in forfeits} == {"b"} and len(forfeits) == 2  # mission and round 1


def test_later_turns_keep_the_picture_and_a_member_who_missed_the_mission_is_briefed(tmp_path) -> None:
    """A member's history holds what it perceived, media and all; one whose mission turn forfeited has no
    history, so its first round question comes after its view of the input and the task."""
    picture = tmp_path / "p.png"
    picture.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 16)
    observation = Observation.of({"caption": "a chart of sales"}, {"chart": picture})
    broken = ["not json"] * 3  # the first try and both retries
    model, backend, trace = scripted(by_agent({
        "a": [said("4")], "b": [*broken, said("5")],
        "organizer": [{"question": "Which bar is tallest?"}, {"summary": "s", "answer": "4"}],
        "leader": [said("4")]}))
    monarchy(members(model, ("a", "b")), Member("organizer", model, "o"), Member("leader", model, "l"),
             rounds=1).run_sync("How many bars?", observation)
    assert [e.member for e in trace.of_kind("soc_forfeit")] == ["b"]
    [a_round] = [r for r in backend.history if r.agent == "a" and "organizer asks" in r.messages[-1].content]
    assert [part.kind for m in a_round.messages for part in m.media] == ["image"]  # from the mission turn
    [b_round] = [r for r in backend.history if r.agent == "b" and "organizer asks" in r.messages[-1].content]
    assert b_round.messages[-1].content.startswith("caption:\na chart of sales\n\nTask: How many bars?")
    assert [part.kind for part in b_round.messages[-1].media] == ["image"]


# democracy -----------------------------------------------------------------------------------------
def test_right_to_know_shows_last_rounds_answers_to_every_member() -> None:
    model, backend, _ = scripted(by_agent({
        "a": [said("12")], "b": [said("13")], "organizer": [{"question": "Check?"}, {"summary": "s", "answer": "12"}],
        "leader": [said("12")]}))
    democracy(members(model, ("a", "b")), Member("organizer", model, "o"), Member("leader", model, "l"),
              rights={"know"}, rounds=1).run_sync("5 + 7?")
    round_one_b = [r for r in backend.history if r.agent == "b"][1]
    assert "(answer: 12)" in round_one_b.messages[-1].content


def test_right_to_change_lets_a_member_adopt_anothers_answer() -> None:
    model, _, trace = scripted(by_agent({
        "a": [said("12")], "b": [said("13"), said("13"), {"reasoning": "a is right", "choice": "A"}],
        "organizer": [{"question": "Check?"}, {"summary": "s", "answer": "12"}], "leader": [said("12")]}))
    democracy(members(model, ("a", "b")), Member("organizer", model, "o"), Member("leader", model, "l"),
              rights={"know", "change"}, rounds=1).run_sync("5 + 7?")
    opinions = [e for e in trace.of_kind("soc_message") if e.phase == "opinion" and e.member == "b"]
    assert opinions[0].answer == "12"


@pytest.mark.parametrize("ballot_summary", [False, True])
def test_right_to_execute_counts_the_members_votes_in_code(ballot_summary: bool) -> None:
    choose_a = {"reasoning": "r", "choice": "A"}
    model, backend, trace = scripted(by_agent({
        "a": [said("12"), said("12"), choose_a], "b": [said("13"), said("13"), {"reasoning": "r", "choice": "B"}],
        "c": [said("12"), said("12"), choose_a], "organizer": [{"question": "Check?"}, {"summary": "all agree on 13",
                                                                                         "answer": "13"}]}))
    result = democracy(members(model), Member("organizer", model, "o"), rights={"know", "execute"},
                       rounds=1, ballot_summary=ballot_summary).run_sync("5 + 7?")
    [tally_event] = trace.of_kind("soc_tally")
    assert tally_event.scores == {"12": 2, "13": 1}
    assert (result.answer, result.decided_by) == ("12", "vote")
    assert len(trace.of_kind("soc_ballot")) == 3
    assert [(b.voter, b.ranking) for b in result.ballots] == [("a", ("12",)), ("b", ("13",)), ("c", ("12",))]
    assert result.support == pytest.approx(2 / 3)
    ballots = [r.messages[-1].content for r in backend.history if "Vote for" in r.messages[-1].content]
    # by default each voter judges on its own; the paper's voters had the organizer's summary in front of them
    assert len(ballots) == 3 and all(("all agree on 13" in b) == ballot_summary for b in ballots)
    asked = [e for e in trace.of_kind("soc_message") if e.member == "organizer" and e.phase != "opinion"]
    assert [(e.round, e.text) for e in asked] == [(1, "Check?")]  # the organizer's sub-question is a message too


def test_a_vote_by_standing_answers_counts_them_without_asking_for_ballots() -> None:
    model, backend, trace = scripted(by_agent({
        "a": [said("12"), said("12")], "b": [said("13"), said("13")], "c": [said("12"), said("12")],
        "organizer": [{"question": "Check?"}, {"summary": "all say 13", "answer": "13"}]}))
    result = democracy(members(model), Member("organizer", model, "o"), rights={"know", "execute"}, rounds=1,
                       vote="standing").run_sync("5 + 7?")
    assert (result.answer, result.decided_by) == ("12", "count")  # two of three stand by 12, whatever the summary says
    assert [(b.voter, b.ranking, b.standing) for b in trace.of_kind("soc_ballot")] == [
        ("a", ["12"], True), ("b", ["13"], True), ("c", ["12"], True)]
    [tally_event] = trace.of_kind("soc_tally")
    assert tally_event.scores == {"12": 2, "13": 1}
    assert len(backend.history) == 3 + (1 + 3) + 1  # mission, one round, summary: no ballot asked for
    assert trace.of_kind("soc_started")[0].vote == "standing"
    with pytest.raises(UnknownNameError, match="ballot"):
        democracy(members(model), Member("organizer", model, "o"), vote="standng")
    with pytest.raises(UsageError, match="leader decides"):  # nothing to count where a leader decides
        democracy(members(model), Member("organizer", model, "o"), Member("leader", model, "l"), rights={"know"},
                  vote="standing")
    with pytest.raises(UsageError, match="editor decides"):
        debate(members(model), Member("editor", model, "e"), vote="standing")
    with pytest.raises(UsageError, match="fill in none"):  # no ballot to put the summary on
        democracy(members(model), Member("organizer", model, "o"), vote="standing", ballot_summary=True)


def test_a_weighted_vote_counts_each_standing_answer_by_its_members_belief_in_it() -> None:
    """Two debaters hold 5 and doubt it; one holds 6 and believes it: the weighted count decides 6."""
    def scorer(request):
        question = request.messages[-1].content
        assert request.options == ("Yes", "No") and "Is your answer to the task" in question
        assert request.messages[-2].role == "assistant"  # asked after the member's own conversation
        return {"Yes": 0.9, "No": 0.1} if "6" in question else {"Yes": 0.2, "No": 0.8}

    model, backend, trace = scripted(by_agent({"a": [said("6"), said("6")], "b": [said("5"), said("5")],
                                               "c": [said("5"), said("5")]}), scorer=scorer)
    result = debate(members(model), rounds=1, vote="weighted").run_sync("What is 3 x 2?")
    assert (result.answer, result.decided_by) == ("6", "weighted")
    assert result.support == pytest.approx(0.9 / 1.3)
    assert [(b.voter, b.ranking, b.weight) for b in trace.of_kind("soc_ballot")] == [
        ("a", ["6"], 0.9), ("b", ["5"], 0.2), ("c", ["5"], 0.2)]
    [tally_event] = trace.of_kind("soc_tally")
    assert tally_event.scores == pytest.approx({"6": 0.9, "5": 0.4})
    assert len(backend.score_history) == 3 and len(backend.history) == 3 + 3  # no ballot asked for
    unweighted = debate(members(scripted(by_agent({"a": [said("6"), said("6")], "b": [said("5"), said("5")],
                                                   "c": [said("5"), said("5")]}))[0]), rounds=1,
                        vote="standing").run_sync("What is 3 x 2?")
    assert unweighted.answer == "5"


@pytest.mark.parametrize("vote", ["weighted", "sequence"])
def test_a_weighted_vote_is_refused_before_any_call_on_a_model_that_cannot_score(vote: str) -> None:
    """By P(True) or by the replies' own probability: a model that gives no probabilities is refused at once."""
    model, backend, _ = scripted([])
    with pytest.raises(CapabilityError, match=f"vote='{vote}'"):
        debate(members(model), rounds=1, vote=vote)
    with pytest.raises(CapabilityError, match="logprobs"):
        democracy(members(model), Member("organizer", model, "o"), vote=vote)
    assert backend.history == []


def test_a_weighted_vote_with_a_person_among_the_members_says_a_person_has_no_probability() -> None:
    from noosphere.human import HumanBackend
    from noosphere.human.channel import ListChannel
    from noosphere.society.human import HumanMember

    model, backend, _ = scripted([], scorer=lambda request: {"Yes": 0.5, "No": 0.5})
    person = HumanMember("you", Model(HumanBackend("you", channel := ListChannel([]))), "r")
    with pytest.raises(UsageError, match=r"you is a person, who gives no probability .*use vote='standing', or leave"):
        debate([*members(model), person], rounds=1, vote="weighted")
    assert backend.history == [] and channel.asked == []


def test_a_member_whose_belief_forfeits_counts_as_no_information() -> None:
    from noosphere.errors import ModelError

    def scorer(request):
        if "5" in request.messages[-1].content:
            return ModelError("scripted", "scoring failed")
        return {"Yes": 0.3, "No": 0.7}

    model, _, trace = scripted(by_agent({"a": [said("6"), said("6")], "b": [said("5"), said("5")],
                                         "c": [said("5"), said("5")]}), scorer=scorer)
    result = debate(members(model), rounds=1, vote="weighted").run_sync("What is 3 x 2?")
    assert result.answer == "5" and len(trace.of_kind("soc_forfeit")) == 2  # 0.5 + 0.5 outweigh 0.3
    assert [b.weight for b in trace.of_kind("soc_ballot")] == [0.3, 0.5, 0.5]


def likely(answer: str, logprob: float, tokens: int = 4):
    """A statement with its reply's own log-probability, as a model that gives one returns it."""
    import json

    from noosphere.llm import Reply, Usage
    return Reply(json.dumps(said(answer)), usage=Usage(10, tokens), logprob=logprob)


def test_a_vote_by_sequence_probability_weighs_each_answer_by_its_replys_own_probability_at_no_call() -> None:
    """One debater holds 6 in a reply its model found likely; two hold 5 in replies it found unlikely: 6 wins,
    with the calls of a plain count of standing answers (which takes 5) and no scoring call."""
    import math

    from noosphere.llm import Capabilities

    script = {"a": [likely("6", -0.4), likely("6", -0.2)], "b": [likely("5", -6.0), likely("5", -8.0)],
              "c": [likely("5", -6.0), likely("5", -8.0)]}
    model, backend, trace = scripted(by_agent(script), capabilities=Capabilities(json_schema=True, logprobs=True))
    result = debate(members(model), rounds=1, vote="sequence").run_sync("What is 3 x 2?")
    assert (result.answer, result.decided_by) == ("6", "sequence")
    weights = {"a": math.exp(-0.2 / 4), "b": math.exp(-8.0 / 4), "c": math.exp(-8.0 / 4)}  # each one's last reply
    assert [(b.voter, b.ranking) for b in trace.of_kind("soc_ballot")] == [("a", ["6"]), ("b", ["5"]), ("c", ["5"])]
    assert [b.weight for b in trace.of_kind("soc_ballot")] == pytest.approx(list(weights.values()), abs=1e-6)
    assert result.support == pytest.approx(weights["a"] / sum(weights.values()), abs=1e-5)
    spoken = [(e.member, e.round, e.probability) for e in trace.of_kind("soc_message")]
    assert spoken == [("a", 0, pytest.approx(math.exp(-0.1))), ("b", 0, pytest.approx(math.exp(-1.5))),
                      ("c", 0, pytest.approx(math.exp(-1.5))), ("a", 1, pytest.approx(weights["a"])),
                      ("b", 1, pytest.approx(weights["b"])), ("c", 1, pytest.approx(weights["c"]))]
    assert [r.probability for r in result.records] == [e[2] for e in spoken]
    assert len(backend.history) == 3 + 3 and backend.score_history == []
    assert all(r.logprobs for r in backend.history)  # every answering turn took its own probability
    model, backend, _ = scripted(by_agent(script), capabilities=Capabilities(json_schema=True, logprobs=True))
    counted = debate(members(model), rounds=1, vote="standing").run_sync("What is 3 x 2?")
    assert (counted.answer, len(backend.history)) == ("5", 6)  # the plain count, at the same calls
    assert not any(r.logprobs for r in backend.history) and {r.probability for r in counted.records} == {None}


def test_a_democracy_weighs_each_standing_answer_by_the_reply_that_made_it_the_members() -> None:
    """The organizer's rounds leave a member's answer standing with the mission's probability; a member who
    changes its answer in the opinion phase stands by the pick, weighed by that reply's probability."""
    import json
    import math

    from noosphere.llm import Capabilities, Reply, Usage

    def pick(letter: str, logprob: float) -> Reply:
        return Reply(json.dumps({"reasoning": "on reflection", "choice": letter}), usage=Usage(10, 2),
                     logprob=logprob)

    model, backend, trace = scripted(by_agent({
        "a": [likely("12", -4.0), likely("sub", -0.1), pick("A", -3.0)],
        "b": [likely("13", -0.4), likely("sub", -0.1), pick("B", -0.2)],
        "c": [likely("12", -4.0), likely("sub", -0.1), pick("B", -0.2)],
        "organizer": [{"question": "Check?"}, {"summary": "13 it is", "answer": "13"}]}),
        capabilities=Capabilities(json_schema=True, logprobs=True))
    result = democracy(members(model), Member("organizer", model, "o"), rights={"change", "execute"}, rounds=1,
                       vote="sequence").run_sync("5 + 7?")
    rounds = {(r.member, r.phase): r.probability for r in result.records}
    assert rounds[("a", "mindstorm")] == pytest.approx(math.exp(-1.0))  # the mission's answer, still standing
    assert rounds[("c", "opinion")] == pytest.approx(math.exp(-0.1))  # c took 13 in a likely pick
    assert (result.answer, result.decided_by) == ("13", "sequence")  # b and c on 13 outweigh a on 12
    assert [(b.voter, b.ranking) for b in trace.of_kind("soc_ballot")] == [("a", ["12"]), ("b", ["13"]), ("c", ["13"])]
    assert [b.weight for b in trace.of_kind("soc_ballot")] == pytest.approx(
        [math.exp(-1.5), math.exp(-0.1), math.exp(-0.1)], abs=1e-6)  # each one's pick, kept or changed
    organizer_calls = [r for r in backend.history if r.agent == "organizer"]
    assert organizer_calls and not any(r.logprobs for r in organizer_calls)  # only the members' answers are taken
    assert backend.score_history == []


def test_a_standing_answer_recorded_without_its_probability_is_refused_not_counted_plainly() -> None:
    """A phase that gives answers with `member.ask` and `session.say` leaves them without a probability: in a
    vote by the replies' probability that is the phase's mistake, said so, not a silent plain count."""
    from noosphere.llm import Capabilities
    from noosphere.society import MembersVote, Society, SolveAlone
    from noosphere.society.session import Statement

    class AskedPlainly:
        name = "plain"

        async def run(self, session) -> None:
            session.phase(self.name, 1)
            for member in session.members:
                session.say(member.name, self.name, 1, await member.ask("Again?", Statement))

    script = {name: [likely(answer, -1.0), likely(answer, -1.0)] for name, answer in zip("abc", "665", strict=True)}
    model, _, trace = scripted(by_agent(script), capabilities=Capabilities(json_schema=True, logprobs=True))
    society = Society("custom", members(model), [SolveAlone(), AskedPlainly(),
                                                  MembersVote(by_standing=True, weights="sequence")], rounds=1)
    with pytest.raises(UsageError, match="a, b, c's standing answer was recorded without one"):
        society.run_sync("What is 3 x 2?")
    assert trace.of_kind("soc_started")[0].vote == "sequence"
    with pytest.raises(UsageError, match="by_standing=True"):
        MembersVote(weights="sequence")
    with pytest.raises(UsageError, match="weights='sequence'"):
        MembersVote(by_standing=True, every_answer=True)
    every = Society("custom", members(model), [SolveAlone(), AskedPlainly(),
                                               MembersVote(by_standing=True, weights="sequence", every_answer=True)],
                    rounds=1)
    with pytest.raises(UsageError, match="a, b, c gave one without it"):
        every.run_sync("What is 3 x 2?")


def test_until_consensus_is_a_debate_setting_and_every_a_debate_vote() -> None:
    from noosphere.society.spec import SocietySpec

    members_ = [{"name": "a", "role": "r"}, {"name": "b", "role": "r"}]
    organizer = {"name": "o", "role": "r"}
    spec = SocietySpec.model_validate({"organisation": "democracy", "members": members_, "organizer": organizer,
                                       "until_consensus": True})
    assert spec.problem() == (("until_consensus",), "until_consensus means nothing to a democracy (only to: debate)")
    spec = SocietySpec.model_validate({"organisation": "democracy", "members": members_, "organizer": organizer,
                                       "vote": "every"})
    assert spec.problem()[0] == ("vote",) and "vote: sequence" in spec.problem()[1]
    model, _, _ = scripted([])
    with pytest.raises(UsageError, match="vote='every' counts each debate round's answers"):
        democracy(members(model), Member("o", model, "r"), vote="every")
    assert SocietySpec.model_validate({"organisation": "debate", "members": members_, "vote": "every",
                                       "until_consensus": True}).problem() is None


def test_a_reply_without_a_probability_forfeits_its_turn_in_a_vote_by_sequence_probability() -> None:
    """A reply of no tokens has nothing to weigh it by: that member forfeits its mission, the others count."""
    from noosphere.llm import Capabilities

    script = {"a": [likely("6", -0.2)], "b": [likely("5", -1.0, tokens=0)], "c": [likely("5", -3.0)]}
    model, _, trace = scripted(by_agent(script), capabilities=Capabilities(json_schema=True, logprobs=True))
    result = debate(members(model), rounds=0, vote="sequence").run_sync("What is 3 x 2?")
    assert [(e.member, e.phase) for e in trace.of_kind("soc_forfeit")] == [("b", "mission")]
    assert (result.answer, result.decided_by) == ("6", "sequence")  # 0.90 for 6 against 0.47 for 5
    assert [b.voter for b in trace.of_kind("soc_ballot")] == ["a", "c"]


def test_a_member_who_forfeits_in_the_first_wave_is_not_part_of_the_quorum() -> None:
    """Quorum 2 of three: a forfeits, so b's 5 stands alone and c is asked; its 5 makes two, and no round is held."""
    from noosphere.llm import Capabilities

    script = {"a": [likely("6", -0.2, tokens=0)], "b": [likely("5", -1.0)], "c": [likely("5", -3.0)]}
    model, _, trace = scripted(by_agent(script), capabilities=Capabilities(json_schema=True, logprobs=True))
    result = debate(members(model), rounds=1, vote="every", quorum=2).run_sync("What is 3 x 2?")
    assert [(e.member, e.phase) for e in trace.of_kind("soc_forfeit")] == [("a", "mission")]
    [quorum] = trace.of_kind("soc_quorum")
    assert (quorum.answer, quorum.holders, quorum.asked) == ("5", 2, 3)
    assert result.answer == "5" and [e.phase for e in trace.of_kind("soc_phase")].count("debate") == 0
    with pytest.raises(UsageError, match="a quorum is 2 to the number of members"):
        debate(members(model), quorum=4)


def test_debaters_without_an_editor_may_be_counted_by_their_standing_answers() -> None:
    model, backend, trace = scripted(by_agent({"a": [said("6"), said("6")], "b": [said("5"), said("6")],
                                               "c": [said("5"), said("5")]}))
    result = debate(members(model), rounds=1, vote="standing").run_sync("What is 3 x 2?")
    assert (result.answer, result.decided_by) == ("6", "count")  # b came round to 6 in the debate
    assert len(backend.history) == 3 + 3 and trace.of_kind("soc_started")[0].vote == "standing"


def test_democracy_checks_its_rights_and_needs_a_leader_without_the_vote() -> None:
    model, _, _ = scripted(by_agent({}))
    with pytest.raises(UnknownNameError, match="know"):
        democracy(members(model), Member("o", model, "o"), Member("l", model, "l"), rights={"knwo"})
    with pytest.raises(UsageError, match="leader"):
        democracy(members(model), Member("o", model, "o"), rights={"know"})


# debate --------------------------------------------------------------------------------------------
def test_debaters_see_only_their_part_of_the_input_then_each_others_statements() -> None:
    model, backend, trace = scripted(by_agent({
        "left": [said("cat", "I saw whiskers"), {"reasoning": "r", "choice": "A"}],
        "right": [said("cat", "I heard a meow"), {"reasoning": "r", "choice": "A"}]}))
    debaters = [Member("left", model, "l", sees=("first",)), Member("right", model, "r", sees=("second",))]
    observation = Observation.of({"first": "whiskers in the frame", "second": "a meow on the track"})
    result = debate(debaters, rounds=1).run_sync("Which animal is it?", observation)
    left_requests = [r for r in backend.history if r.agent == "left"]
    first_left = left_requests[0].messages[-1].content
    assert "whiskers in the frame" in first_left and "a meow on the track" not in first_left
    round_one_left = left_requests[1].messages[-1].content
    assert "I heard a meow" in round_one_left
    assert result.answer == "cat" and result.decided_by == "unanimous"
    assert trace.of_kind("soc_tally")[0].scores == {"cat": 2}
    calls = len(backend.history)
    mistyped = Observation.of({"first": "whiskers in the frame", "secnd": "a meow on the track"})
    with pytest.raises(UnknownNameError, match="Did you mean secnd"):  # right would see nothing: refused, no call
        debate(debaters, rounds=1).run_sync("Which animal is it?", mistyped)
    assert len(backend.history) == calls


def test_debaters_who_read_the_same_problem_are_not_told_the_others_saw_more() -> None:
    model, backend, _ = scripted(by_agent({
        "a": [said("6", "3 x 2"), said("6", "still 6")], "b": [said("5", "3 + 2"), said("6", "a slip: 6")]}))
    result = debate([Member("a", model, "a"), Member("b", model, "b")], rounds=1).run_sync("What is 3 x 2?")
    round_one = [r for r in backend.history if r.agent == "b"][1].messages[-1].content
    assert "3 x 2" in round_one and "same task" in round_one and "parts of the input" not in round_one
    assert result.answer == "6"


def test_a_debates_editor_reads_every_statement_and_decides_among_the_options() -> None:
    model, backend, trace = scripted(by_agent({
        "left": [said("cat", "I saw whiskers"), said("cat", "whiskers still say cat")],
        "right": [said("dog", "I heard a bark"), said("dog", "a bark is no meow")],
        "editor": [said("B", "a bark outweighs whiskers")]}))
    debaters = [Member("left", model, "l", sees=("first",)), Member("right", model, "r", sees=("second",))]
    observation = Observation.of({"first": "whiskers in the frame", "second": "a bark on the track"})
    result = debate(debaters, Member("editor", model, "e"), rounds=1).run_sync("Which animal is it?", observation)
    assert (result.answer, result.decided_by) == ("dog", "editor")  # the letter names the second option
    [editor_request] = [r for r in backend.history if r.agent == "editor"]
    brief = editor_request.messages[-1].content
    assert "whiskers still say cat" in brief and "a bark is no meow" in brief
    assert not trace.of_kind("soc_tally")
    [decision] = [e for e in trace.of_kind("soc_message") if e.member == "editor"]
    assert (decision.text, decision.answer) == ("a bark outweighs whiskers", "dog")


def test_a_large_democracy_labels_more_than_26_options_and_votes_on_them() -> None:
    names = [f"m{i}" for i in range(30)]
    script: dict[str, list[object]] = {name: [said(str(i)), said(str(i)), {"reasoning": "r", "choice": "AB"}]
                                       for i, name in enumerate(names)}
    script["organizer"] = [{"question": "Sure?"}, {"summary": "s", "answer": "0"}]
    model, backend, _ = scripted(by_agent(script))
    result = democracy(members(model, names), Member("organizer", model, "o"), rights={"execute"},
                       rounds=1).run_sync("Pick a number.")
    assert (result.answer, result.decided_by) == ("27", "vote")  # AB is the 28th label
    ballot = next(r for r in backend.history if r.agent == "m0" and "Vote" in r.messages[-1].content)
    assert "(AD) 29" in ballot.messages[-1].content


def test_borda_and_approval_ballots_are_asked_for_and_counted_inside_a_society() -> None:
    for rule, rankings, scores, support in (
            # Borda: 2, 1 and 0 points by place; two of three put the winner first
            ("borda", {"a": ["A", "B", "C"], "b": ["B", "A", "C"], "c": ["B", "C", "A"]}, {"12": 3, "13": 5, "14": 1},
             2 / 3),
            ("approval", {"a": ["A", "B"], "b": ["B"], "c": ["C", "B"]}, {"12": 1, "13": 3, "14": 1}, 1.0)):
        script = {name: [said(answer), said(answer), {"reasoning": "r", "ranking": rankings[name]}]
                  for name, answer in (("a", "12"), ("b", "13"), ("c", "14"))}
        script["organizer"] = [{"question": "Sure?"}, {"summary": "s", "answer": "13"}]
        model, backend, trace = scripted(by_agent(script))
        result = democracy(members(model), Member("organizer", model, "o"), rights={"execute"}, rounds=1,
                           voting_rule=rule).run_sync("Which?")
        [tallied] = trace.of_kind("soc_tally")
        assert tallied.rule == rule and tallied.scores == scores and result.answer == "13"
        assert result.support == pytest.approx(support)  # the share of voters behind the answer
        assert any(r.agent == "a" and "ranking" in (r.json_schema or {}).get("properties", {})
                   for r in backend.history)  # the members were asked for rankings, not a single choice


def test_members_answer_at_most_max_concurrency_at_a_time() -> None:
    import asyncio

    from noosphere.society.session import Session
    from noosphere.trace import Trace

    model, _, _ = scripted(by_agent({}))
    crowd = members(model, tuple(f"m{i}" for i in range(7)))
    session = Session("t", None, crowd, Trace(None), random.Random(0), 1, "plurality", str, 3, None)
    running, peak = 0, 0

    async def turn(member: Member) -> str:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.3 if member.name == "m1" else 0.01 * (7 - int(member.name[1:])))  # first ones last
        running -= 1
        if member.name in ("m1", "m5"):
            raise OutputParseError("scripted", "Statement", 3, "", ["no JSON"])
        return member.name

    done = asyncio.run(session.each(crowd, "p", 1, turn))
    assert list(done) == ["m0", "m2", "m3", "m4", "m6"] and peak == 3  # member order, never more than 3 at once
    assert [e.member for e in session.trace.of_kind("soc_forfeit")] == ["m1", "m5"]  # m5 failed first


def test_images_reach_only_members_whose_model_can_see(tmp_path) -> None:
    from noosphere.llm import Capabilities, Model, ScriptedBackend

    picture = tmp_path / "p.png"
    picture.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 16)
    observation = Observation.of({"caption": "a chart of sales"}, {"chart": picture})
    blind = Member("blind", Model(ScriptedBackend([], capabilities=Capabilities(vision=False))), "r")
    seeing = Member("seeing", Model(ScriptedBackend([], capabilities=Capabilities(vision=True))), "r")
    text, media = blind.perception(observation)
    assert "a chart of sales" in text and media == ()
    assert [part.kind for part in seeing.perception(observation)[1]] == ["image"]
    narrow = Member("narrow", seeing.model, "r", sees=("caption",))
    assert narrow.perception(observation)[1] == ()


def test_others_see_the_end_of_a_long_reasoning_where_the_working_is() -> None:
    reasoning = "Restating the task. " * 60 + "So 60 - 20 - 15 = 25 miles."
    shown = excerpt(reasoning)
    assert shown.startswith("Restating the task.") and shown.endswith("60 - 20 - 15 = 25 miles.")
    assert "[...]" in shown and len(shown) <= SNIPPET + len(" [...] ")
    assert excerpt("short") == "short"


def test_a_round_reply_answers_the_sub_question_and_the_task_answer_stands() -> None:
    """Members answer the organizer's question only; what they answered to the task stays theirs."""
    model, backend, trace = scripted(by_agent({
        "a": [{"reasoning": "3 sprints a week, 60 m each: 180", "answer": "180"},
              {"reasoning": "3 sprints, 3 times a week: 9 sprints", "answer": "9"}],
        "organizer": [{"question": "How many sprints a week?"}, {"summary": "9 sprints of 60 m.", "answer": "540"}],
        "leader": [said("540")]}))
    society = monarchy(members(model, ("a",)), Member("organizer", model, "o"), Member("leader", model, "l"), rounds=1)
    result = society.run_sync("James runs 3 sprints of 60 m, 3 times a week. How many metres a week?")
    spoken = [(e.phase, e.answer, e.text) for e in trace.of_kind("soc_message") if e.member == "a"]
    assert spoken[1] == ("mindstorm", "180", "3 sprints, 3 times a week: 9 sprints (to the question: 9)")
    assert backend.history[2].messages[-1].content == "The organizer asks: How many sprints a week?"
    mission, round_one = (r.messages for r in backend.history if r.agent == "a")
    assert round_one[1] == mission[1] and round_one[2].role == "assistant" and "180" in round_one[2].content
    reply_form = round_one[0].content  # its own form: the task's answer is not asked for again
    assert '"title":"Reply"' in reply_form and "short answer to the organizer's question" in reply_form
    leader = next(r for r in backend.history if r.agent == "leader").messages[-1].content
    assert "(A) 180" in leader and "(B) 540" in leader and "(A) a\n(B) the organizer's summary" in leader
    assert result.answer == "540"


def test_a_member_without_a_first_answer_still_replies_but_holds_no_option() -> None:
    model, _, trace = scripted(by_agent({
        "a": [said("12")], "b": ["not json", "not json", "not json", {"reasoning": "7 + 5", "answer": "12"}],
        "organizer": [{"question": "Sure?"}, {"summary": "12", "answer": "12"}], "leader": [said("12")]}))
    result = democracy(members(model, ("a", "b")), Member("organizer", model, "o"), rights={"know", "execute"},
                       rounds=1).run_sync("What is 7 + 5?")
    b_said = [(e.phase, e.answer) for e in trace.of_kind("soc_message") if e.member == "b"]
    assert b_said == [("mindstorm", "")]
    assert [e.voter for e in trace.of_kind("soc_ballot")] == ["a"] and result.answer == "12"


def test_when_every_vote_forfeits_the_members_standing_answers_are_counted() -> None:
    model, _, trace = scripted(by_agent({
        "a": [said("13"), said("r1"), "no vote", "no vote", "no vote"],
        "b": [said("12"), said("r1"), "no vote"], "c": [said("13"), said("r1"), "no vote"],
        "organizer": [{"question": "Sure?"}, {"summary": "s", "answer": "12"}]}))
    result = democracy(members(model), Member("organizer", model, "o"), rights={"execute"},
                       rounds=1).run_sync("What is 7 + 5?")
    assert (result.answer, result.decided_by) == ("13", "standing")  # two of the three still stand by 13
    assert [(b.voter, b.ranking, b.standing) for b in trace.of_kind("soc_ballot")] == [
        ("a", ["13"], True), ("b", ["12"], True), ("c", ["13"], True)]


def test_a_borda_count_scores_over_every_option_even_one_nobody_ranked() -> None:
    model, _, trace = scripted(by_agent({
        "a": [said("12"), said("12"), {"reasoning": "r", "ranking": ["A"]}],
        "b": [said("13"), said("13"), {"reasoning": "r", "ranking": ["B", "A"]}],
        "c": [said("14"), said("14"), "no vote", "no vote", "no vote"],
        "organizer": [{"question": "Sure?"}, {"summary": "s", "answer": "13"}]}))
    result = democracy(members(model), Member("organizer", model, "o"), rights={"execute"}, rounds=1,
                       voting_rule="borda").run_sync("Which?")
    [tallied] = trace.of_kind("soc_tally")
    # a field of three: 2 points for a first place, 1 for a second; counted over the two named options
    # alone, 12 and 13 would have tied at 1
    assert tallied.scores == {"12": 3, "13": 2, "14": 0} and tallied.tied == ["12"] and result.answer == "12"


def test_a_phase_can_be_swapped_and_an_undecided_society_counts_its_members_answers() -> None:
    from dataclasses import dataclass, replace

    from noosphere.society.session import Session

    @dataclass(frozen=True)
    class Abstain:
        """An execution phase that decides nothing."""
        name: str = "execution"

        async def run(self, session: Session) -> None:
            session.phase(self.name)

    model, _, trace = scripted(by_agent({
        "a": [said("12"), said("r1")], "b": [said("13"), said("r1")], "c": [said("12"), said("r1")],
        "organizer": [{"question": "Sure?"}, {"summary": "s", "answer": "13"}]}))
    society = democracy(members(model), Member("organizer", model, "o"), rights={"execute"}, rounds=1)
    swapped = replace(society, phases=[*society.phases[:-1], Abstain()])
    result = swapped.run_sync("What is 7 + 5?")
    assert (result.answer, result.decided_by) == ("12", "fallback")
    assert [e.phase for e in trace.of_kind("soc_phase")][-1] == "execution"
    assert [t.scores for t in trace.of_kind("soc_tally")] == [{"12": 2, "13": 1}]


def test_a_spent_budget_and_a_bug_stop_the_society_as_themselves() -> None:
    from noosphere.errors import BudgetExceededError
    from noosphere.llm.usage import Budget, UsageLedger

    model, _, _ = scripted(by_agent({name: [said("12")] * 3 for name in ("a", "b", "c")}))
    budgeted = model.bind(ledger=UsageLedger(Budget(max_calls=2)))
    with pytest.raises(BudgetExceededError):  # not an ExceptionGroup, which no caller catches
        democracy(members(budgeted), Member("organizer", budgeted, "o"), rights={"execute"},
                  rounds=1).run_sync("What is 7 + 5?")

    def broken(request):
        if request.agent == "a":
            raise KeyError("a bug, not a member's failure")
        return said("12")

    model, _, trace = scripted(broken)
    with pytest.raises(KeyError):  # surfaces, rather than passing for a forfeit
        democracy(members(model), Member("organizer", model, "o"), rights={"execute"},
                  rounds=0).run_sync("What is 7 + 5?")
    assert not trace.of_kind("soc_forfeit")


def test_a_leader_who_forfeits_leaves_the_decision_to_the_members_standing_answers() -> None:
    model, _, trace = scripted(by_agent({
        "a": [said("12"), said("r1")], "b": [said("12"), said("r1")], "c": [said("13"), said("r1")],
        "organizer": [{"question": "Sure?"}, {"summary": "s", "answer": "13"}],
        "leader": ["not json", "not json", "not json"]}))
    result = monarchy(members(model), Member("organizer", model, "o"), Member("leader", model, "l"),
                      rounds=1).run_sync("What is 7 + 5?")
    assert (result.answer, result.decided_by) == ("12", "standing")
    assert [e.member for e in trace.of_kind("soc_forfeit")] == ["leader"]
    assert all(b.standing for b in trace.of_kind("soc_ballot"))


def budgeted_monarchy(model, prefix: str = ""):
    from noosphere.llm import Budget

    return replace_budget(monarchy(members(model, tuple(f"{prefix}{n}" for n in "abc")),
                                   Member(f"{prefix}organizer", model, "o"), Member(f"{prefix}leader", model, "l"),
                                   rounds=2), Budget(max_calls=4))


def replace_budget(society, budget):
    from dataclasses import replace

    return replace(society, budget=budget)


def test_a_society_whose_budget_runs_out_stops_there_and_decides_with_what_it_has() -> None:
    model, backend, trace = scripted(by_agent({
        "a": [said("12"), said("r")], "b": [said("12"), said("r")], "c": [said("13"), said("r")],
        "organizer": [{"question": "Sure?"}, {"question": "Really?"}, {"summary": "s", "answer": "13"}],
        "leader": [said("13")]}))
    result = budgeted_monarchy(model).run_sync("What is 7 + 5?")
    assert len(backend.history) == 4  # the three answers to the task and the organizer's first question
    [spent] = trace.of_kind("soc_budget_spent")
    assert (spent.phase, spent.budget, spent.limit) == ("mindstorm", "calls", 4)
    assert (result.answer, result.decided_by) == ("12", "budget")  # the standing answers, counted


def test_budgets_of_societies_run_at_once_on_one_model_are_their_own() -> None:
    import asyncio

    script = {f"{p}{n}": [said("12"), said("r")] for p in ("x-", "y-") for n in "abc"}
    script |= {f"{p}organizer": [{"question": "Sure?"}] for p in ("x-", "y-")}
    model, backend, trace = scripted(by_agent(script))

    async def both() -> list:
        return await asyncio.gather(budgeted_monarchy(model, "x-").run("1?"), budgeted_monarchy(model, "y-").run("1?"))

    results = asyncio.run(both())
    assert [r.answer for r in results] == ["12", "12"] and len(trace.of_kind("soc_budget_spent")) == 2
    assert sorted(Counter(r.agent[0] for r in backend.history).items()) == [("x", 4), ("y", 4)]


def test_an_outer_budget_spent_inside_a_sub_society_stops_the_outer_society() -> None:
    from noosphere.llm import Budget
    from noosphere.society import SubSociety

    model, backend, trace = scripted(by_agent({
        "inner/a": [said("12")] * 3, "inner/o": [{"summary": "s", "answer": "12"}] * 3, "inner/l": [said("12")] * 3,
        "solo": [said("13")] * 3, "outer/o": [{"question": "Sure?"}]}))
    inner = replace_budget(monarchy([Member("inner/a", model, "a")], Member("inner/o", model, "o"),
                                    Member("inner/l", model, "l"), rounds=0), Budget(max_calls=10))
    outer = replace_budget(democracy([SubSociety.of("team", inner), Member("solo", model, "s")],
                                     Member("outer/o", model, "o"), rights={"execute"}, rounds=1), Budget(max_calls=3))
    result = outer.run_sync("5 + 7?")
    [spent] = trace.of_kind("soc_budget_spent")
    assert getattr(spent, "society", None) is None and spent.phase == "mission"  # the outer society's, not team's
    assert len(backend.history) == 3 and result.decided_by == "budget"


def test_members_who_start_their_calls_together_cannot_overshoot_a_budget_of_calls() -> None:
    from noosphere.llm import Budget

    model, backend, trace = scripted(by_agent({
        "a": [said("12"), said("r")], "b": [said("12"), said("r")], "c": [said("13"), said("r")],
        "organizer": [{"question": "Sure?"}, {"question": "Really?"}], "leader": [said("13")]}), latency_s=0.01)
    society = replace_budget(monarchy(members(model), Member("organizer", model, "o"), Member("leader", model, "l"),
                                      rounds=2), Budget(max_calls=5))
    society.run_sync("What is 7 + 5?")
    assert len(backend.history) == 5  # three answers, a question, and one of the three replies started together
    assert len([e for e in trace.of_kind("soc_forfeit") if e.phase == "mindstorm"]) >= 2


def test_calls_a_society_refuses_do_not_count_against_the_run_around_it() -> None:
    from noosphere.llm import Budget, UsageLedger

    model, backend, _ = scripted(by_agent({
        name: [said("12"), said("r")] * 3 for name in "abc"} | {"organizer": [{"question": "Sure?"}] * 3}))
    run_ledger = UsageLedger(Budget(max_calls=13))  # room for one more call than the three societies make
    model = model.bind(ledger=run_ledger)
    for _ in range(3):  # three tasks, each stopped by its society's budget of 4 calls: 12 calls in all
        assert budgeted_monarchy(model).run_sync("What is 7 + 5?").decided_by == "budget"
    assert len(backend.history) == 12 and run_ledger.calls == 12


def test_a_role_play_society_whose_budget_runs_out_answers_with_the_last_solution() -> None:
    from noosphere.llm import Budget
    from noosphere.society.roleplay import role_play

    model, _, trace = scripted(by_agent({"user": [f"Step {i}." for i in range(9)],
                                         "assistant": [f"def f(): return {i}" for i in range(9)]}))
    society = replace_budget(role_play(Member("user", model, "u"), Member("assistant", model, "a")),
                             Budget(max_calls=4))
    result = society.run_sync("write f")
    assert (result.answer, result.decided_by) == ("def f(): return 1", "assistant (budget)")
    assert trace.of_kind("soc_budget_spent")[0].phase == "roleplay"


def test_a_leader_with_confidence_sees_each_holders_probability_and_nothing_else_changes() -> None:
    """a and b hold 12 and doubt it, c holds 13 and believes it: the leader's prompt shows each P(True)."""
    def scorer(request):
        question = request.messages[-1].content
        assert "Is your answer to the task" in question and request.messages[-2].role == "assistant"
        return {"Yes": 0.95, "No": 0.05} if "13" in question else {"Yes": 0.25, "No": 0.75}

    def society(confidence: bool, scorer=scorer):
        model, backend, trace = scripted(by_agent({
            "a": [said("12"), said("12")], "b": [said("12"), said("12")], "c": [said("13"), said("13")],
            "organizer": [{"question": "Check?"}, {"summary": "Most found 12.", "answer": "12"}],
            "leader": [said("13", "c is sure")]}), scorer=scorer)
        made = monarchy(members(model), Member("organizer", model, "o"), Member("leader", model, "l"), rounds=1,
                        leader_confidence=confidence)
        return made, backend, trace

    made, backend, _ = society(True)
    result = made.run_sync("What is 6 + 7?")
    assert (result.answer, result.decided_by) == ("13", "leader")
    [asked] = [r.messages[-1].content for r in backend.history if r.agent == "leader"]
    assert "(A) a (0.25), b (0.25)" in asked and "(B) c (0.95)" in asked and "own probability" in asked
    assert sorted(r.agent for r in backend.score_history) == ["a", "b", "c"]
    plain, plain_backend, _ = society(False)
    plain.run_sync("What is 6 + 7?")
    [shown] = [r.messages[-1].content for r in plain_backend.history if r.agent == "leader"]
    assert "(A) a, b" in shown and "(0.25)" not in shown and plain_backend.score_history == []
    with pytest.raises(CapabilityError, match="leader is shown a's probability"):
        model, _, _ = scripted([])
        monarchy(members(model), Member("organizer", model, "o"), Member("leader", model, "l"), leader_confidence=True)
    with pytest.raises(UsageError, match="the members vote"):
        model, _, _ = scripted([], scorer=scorer)
        debate(members(model), leader_confidence=True)
