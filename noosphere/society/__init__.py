"""Natural-language societies of mind (NLSOM): members, organisations, mindstorms and voting."""

from noosphere.society.economy import Contract, Economy
from noosphere.society.market import MarketRounds, PayReward
from noosphere.society.member import Member
from noosphere.society.organisations import RIGHTS, debate, democracy, economy_of_minds, monarchy
from noosphere.society.phases import (
    DebateRounds,
    GatherOpinions,
    LeaderDecides,
    MembersVote,
    OrganizerRounds,
    Phase,
    SolveAlone,
)
from noosphere.society.session import Contribution, Session, Statement
from noosphere.society.society import Society, SocietyResult
from noosphere.society.voting import Ballot, Tally, tally

__all__ = [
    "RIGHTS",
    "Ballot",
    "Contract",
    "Contribution",
    "DebateRounds",
    "Economy",
    "GatherOpinions",
    "LeaderDecides",
    "MarketRounds",
    "Member",
    "MembersVote",
    "OrganizerRounds",
    "PayReward",
    "Phase",
    "Session",
    "Society",
    "SocietyResult",
    "SolveAlone",
    "Statement",
    "Tally",
    "debate",
    "democracy",
    "economy_of_minds",
    "monarchy",
    "tally",
]
