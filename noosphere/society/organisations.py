"""The organisations of the paper as constructors: each picks the four phases and the staff."""

from __future__ import annotations

from collections.abc import Iterable

from noosphere.errors import CapabilityError, UnknownNameError, UsageError
from noosphere.society.decisions import GatherOpinions, LeaderDecides, MembersVote, VoteWeights
from noosphere.society.economy import Economy
from noosphere.society.hierarchy import SubSociety
from noosphere.society.human import HumanMember
from noosphere.society.market import MarketRounds, PayReward
from noosphere.society.member import Member
from noosphere.society.phases import DebateRounds, OrganizerRounds, SolveAlone
from noosphere.society.society import Society

RIGHTS = ("know", "change", "execute")
"""Democracy's rights: to know the others' answers each round, to change to another's answer, to vote."""

VOTES = ("ballot", "standing", "weighted", "sequence", "every")
"""How members vote where they do: each fills in a ballot, or each one's standing answer is counted, or
counted with the weight of the member's probability that it is right (`weighted`: P(True), as CISC weighs
samples, one scoring call a member), or of the probability its model gave the reply that made it the member's
answer (`sequence`: taken in that call, no call more), or every answer each member gave in the run, each
with its reply's probability (`every`: each answering call a weighted sample, as best-of-N counts them)."""
WEIGHTS_OF_VOTE: dict[str, VoteWeights] = {"weighted": "p-true", "sequence": "sequence", "every": "sequence"}


def _weights(vote: str) -> VoteWeights:
    return WEIGHTS_OF_VOTE.get(vote, "none")


def _by_standing(vote: str, *, decider: Member | None = None) -> bool:
    """Whether the members' standing answers are counted; `decider`: the leader or editor who decides instead
    of a vote, with whom there is nothing to count."""
    if vote not in VOTES:
        raise UnknownNameError("way of voting", vote, VOTES)
    if vote != "ballot" and decider is not None:
        raise UsageError(f"vote={vote!r} counts the members' answers where they vote, but {decider.name} decides")
    return vote != "ballot"


def _every_in_debate(organisation: str, vote: str) -> None:
    """`every` counts each answer a member gave: in a debate each round's statement is a new answer, where a
    democracy's or an economy's rounds repeat the standing one (it would be counted once a round)."""
    if vote == "every":
        raise UsageError(f"vote='every' counts each debate round's answers; a {organisation}'s rounds repeat the "
                         "members' standing answers: use vote='sequence'")


def _weighable(members: list[Member], vote: str) -> None:
    """A weighted vote asks each member's model for a probability: one that cannot give it is refused now,
    before any call, rather than forfeiting every weight (a sub-society, which has none, forfeits its own)."""
    if vote in WEIGHTS_OF_VOTE:
        _scorable(members, f"vote={vote!r} weighs {{name}}'s answer by its probability", "use vote='standing'",
                  "a model that gives token log-probabilities")


def _scorable(members: list[Member], what: str, setting: str, model: str) -> None:
    """Every member can give the probability `what` needs; else refused, advising the `setting` that needs none or,
    for a model member, a `model` that gives it (a person has no model to change)."""
    for member in members:
        if isinstance(member, HumanMember):
            raise UsageError(f"{member.name} is a person, who gives no probability ({what.format(name=member.name)}); "
                             f"{setting}, or leave the person out of this society")
        if not isinstance(member, SubSociety) and not member.model.capabilities.logprobs:
            raise CapabilityError(member.model.id, f"logprobs ({what.format(name=member.name)}); {setting} or use "
                                                   f"{model}")


def _leader(decider: Member, members: list[Member], shows_confidence: bool) -> LeaderDecides:
    """The decider's phase; `shows_confidence`: it sees each member's P(True) in its answer, so every member's
    model must score (refused now, before any call)."""
    if shows_confidence:
        _scorable(members, "the leader is shown {name}'s probability that its answer is right",
                  "leave leader_confidence off", "a model that scores options")
    return LeaderDecides(decider, shows_confidence=shows_confidence)


def _no_leader(shows_confidence: bool) -> None:
    if shows_confidence:
        raise UsageError("leader_confidence shows the members' probabilities to a leader or editor who decides, "
                         "but here the members vote")


def monarchy(members: list[Member], organizer: Member, leader: Member, *, rounds: int = 3, seed: int = 0,
             leader_confidence: bool = False) -> Society:
    """The organizer asks, members answer without seeing each other, the organizer sums up, the leader decides
    (`leader_confidence`: seeing each member's probability that its answer is right)."""
    return Society("monarchy", members, [SolveAlone(), OrganizerRounds(organizer), GatherOpinions(organizer),
                                         _leader(leader, members, leader_confidence)],
                   rounds=rounds, staff=[organizer, leader], seed=seed)


def democracy(members: list[Member], organizer: Member, leader: Member | None = None, *,
              rights: Iterable[str] = RIGHTS, rounds: int = 3, voting_rule: str = "plurality",
              vote: str = "ballot", ballot_summary: bool = False, seed: int = 0,
              leader_confidence: bool = False) -> Society:
    """A monarchy with rights given to the members; without the right to execute the leader still decides.
    `vote`: under the right to execute, members fill in a `ballot`, or their `standing` answers are counted;
    `ballot_summary`: each ballot repeats the organizer's summary (the paper's way; see `MembersVote`)."""
    granted = frozenset(rights)
    for right in granted:
        if right not in RIGHTS:
            raise UnknownNameError("right", right, RIGHTS)
    if "execute" not in granted and leader is None:
        raise UsageError("a democracy without the right to execute needs a leader to decide")
    decider = None if "execute" in granted else leader
    by_standing = _by_standing(vote, decider=decider)
    _every_in_debate("democracy", vote)
    _weighable(members, vote)
    if ballot_summary and (decider is not None or by_standing):
        raise UsageError("ballot_summary=True puts the summary on ballots, but the members fill in none here")
    if decider is None:
        _no_leader(leader_confidence)
    execution = (MembersVote(by_standing=by_standing, shows_summary=ballot_summary, weights=_weights(vote))
                 if decider is None
                 else _leader(decider, members, leader_confidence))
    staff = [organizer] + ([leader] if leader is not None and "execute" not in granted else [])
    return Society("democracy", members, [
        SolveAlone(), OrganizerRounds(organizer, right_to_know="know" in granted),
        GatherOpinions(organizer, right_to_change="change" in granted), execution],
        rounds=rounds, voting_rule=voting_rule, rights=granted, staff=staff, seed=seed)


def debate(members: list[Member], editor: Member | None = None, *, rounds: int = 2, voting_rule: str = "plurality",
           vote: str = "ballot", seed: int = 0, leader_confidence: bool = False,
           until_consensus: bool = False, quorum: int | None = None) -> Society:
    """Members with different views of the input exchange statements; an editor decides, or they vote.
    `until_consensus`: the rounds stop once every member holds the same answer. `quorum`: the members answer the
    mission in turn until that many give one answer, and then no one else is asked and no round is held."""
    if quorum is not None and not 2 <= quorum <= len(members):
        raise UsageError(f"a quorum is 2 to the number of members ({len(members)}), not {quorum}")
    by_standing = _by_standing(vote, decider=editor)
    _weighable(members, vote)
    if editor is None:
        _no_leader(leader_confidence)
    execution = (_leader(editor, members, leader_confidence) if editor is not None
                 else MembersVote(by_standing=by_standing, weights=_weights(vote), every_answer=vote == "every"))
    return Society("debate", members, [SolveAlone(quorum), DebateRounds(until_consensus), GatherOpinions(), execution],
                   rounds=rounds,
                   voting_rule=voting_rule, staff=[editor] if editor is not None else [], seed=seed)


def economy_of_minds(members: list[Member], arbiter: Member, *, rounds: int = 2, start: float = 10.0,
                     rent: float = 1.0, spawn_above: float = 30.0, brigade_share: float = 0.5,
                     voting_rule: str = "plurality", vote: str = "ballot", seed: int = 0) -> Society:
    """Members trade services under contracts, pay rent, vote; the reward flows back along the contracts.

    The ledger lives as long as the society, so wealth, departures and spawned variants carry over
    from one task to the next (`society.economy`).
    """
    _every_in_debate("economy", vote)
    _weighable(members, vote)
    ledger = Economy({m.name: start for m in members}, rent=rent, brigade_share=brigade_share)
    return Society("economy", members, [SolveAlone(), MarketRounds(ledger, arbiter, spawn_above),
                                        MembersVote(by_standing=_by_standing(vote), weights=_weights(vote)),
                                        PayReward(ledger)], rounds=rounds, voting_rule=voting_rule, staff=[arbiter],
                   seed=seed, economy=ledger)
