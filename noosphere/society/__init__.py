"""Natural-language societies of mind (NLSOM): members, organisations, mindstorms, voting, economies."""

from noosphere.society.artists import LiteLLMPainter, Painter, artist_critic
from noosphere.society.decisions import GatherOpinions, LeaderDecides, MembersVote
from noosphere.society.economy import Contract, Economy
from noosphere.society.hierarchy import SubSociety
from noosphere.society.human import HumanMember, People, human_member
from noosphere.society.interview import (
    ChooseOnReport,
    Debrief,
    DecideOnReport,
    Instructions,
    InterviewRounds,
    Report,
    interview,
)
from noosphere.society.market import MarketRounds, PayReward
from noosphere.society.member import Member
from noosphere.society.organisations import RIGHTS, debate, democracy, economy_of_minds, monarchy
from noosphere.society.phases import DebateRounds, OrganizerRounds, Phase, SolveAlone
from noosphere.society.roleplay import Converse, RolePlay, RolePlayResult, role_play
from noosphere.society.session import Contribution, Session, Statement
from noosphere.society.society import Society, SocietyResult
from noosphere.society.voting import Ballot, Tally, tally

__all__ = [
    "RIGHTS",
    "Ballot",
    "ChooseOnReport",
    "Contract",
    "Contribution",
    "Converse",
    "DebateRounds",
    "Debrief",
    "DecideOnReport",
    "Economy",
    "GatherOpinions",
    "HumanMember",
    "Instructions",
    "InterviewRounds",
    "LeaderDecides",
    "LiteLLMPainter",
    "MarketRounds",
    "Member",
    "MembersVote",
    "OrganizerRounds",
    "Painter",
    "PayReward",
    "People",
    "Phase",
    "Report",
    "RolePlay",
    "RolePlayResult",
    "Session",
    "Society",
    "SocietyResult",
    "SolveAlone",
    "Statement",
    "SubSociety",
    "Tally",
    "artist_critic",
    "debate",
    "democracy",
    "economy_of_minds",
    "human_member",
    "interview",
    "monarchy",
    "role_play",
    "tally",
]
