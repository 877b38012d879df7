"""What a society file may say: members, models, roles, organisation, rounds, voting, rights, budgets.

Every organisation has a form here: monarchy, democracy, debate, economy, role-play, interview and the
artist-critic society; a member may itself be a society (a hierarchy). `problem` says what an
organisation needs that the settings leave out, so the loader can point at the field.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from noosphere.errors import ConfigError, UnknownNameError
from noosphere.llm.registry import check_model_id
from noosphere.society.organisations import RIGHTS


def _known_model_id(model_id: str) -> str:
    """A typo in a model id is found where the file says it, not when a member first speaks."""
    try:
        check_model_id(model_id)
    except UnknownNameError as exc:
        raise ValueError(str(exc)) from None
    return model_id


ModelId = Annotated[str, AfterValidator(_known_model_id)]


def _text(value: str) -> str:
    """A YAML or JSON escape such as \\ud800 reads as a lone surrogate, which no prompt, trace or terminal can carry
    (the run's trace broke on it, mid-run): refused where the file says it."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("holds a lone surrogate (an escape such as \\ud800 that names no character), not text"
                         ) from None
    return value


Text = Annotated[str, AfterValidator(_text)]


def _name(value: str) -> str:
    """A member's name heads its lines in every prompt, ballot and trace: blank, or broken by a control
    character (a newline starts a line that reads as another member's), it is no name."""
    if not value.strip():
        raise ValueError("a member's name cannot be blank")
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise ValueError(f"a member's name cannot hold a control character (newline, tab, NUL): {value!r}")
    if value != value.strip():
        raise ValueError(f"a member's name cannot begin or end with spaces: {value!r}")
    return value


Name = Annotated[str, AfterValidator(_text), AfterValidator(_name)]


class MemberSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    name: Name = Field(min_length=1)
    role: Text = ""
    model: ModelId | None = None
    sees: list[Text] | None = None
    temperature: float | None = Field(default=None, ge=0, le=2)
    """Sampling temperature of this member's calls (the model's own otherwise). Members of one model at
    temperature 0 give near-identical answers; sampling, each member with its own seed, is what makes
    them differ, as different models did in the paper's societies."""
    society: SocietySpec | None = None
    """A whole society standing as this member (a hierarchy): in a file, the path of its society file
    (relative to the file that names it) or its settings inline."""
    human: bool = False
    """A person takes this seat: its turns are asked on the terminal (`noosphere ask`) or in the viewer page
    (`noosphere ask --human viewer`, answered in `noosphere view RUN`); `role` is the person's brief."""
    timeout: float | None = Field(default=None, gt=0)
    """A person's seconds to answer a turn; past them the turn is forfeited (None: no limit)."""
    answers: Literal["statement", "program"] = "statement"
    """How this member gives its answer to the task: a `statement` (its reasoning and answer in words), or a
    `program`: it writes a Python program, the program runs in the bubblewrap sandbox, and what it prints is the
    member's answer (`noosphere.society.programs`). A program that fails forfeits the turn."""
    repairs: int = Field(default=0, ge=0, le=3)
    """With `answers: program`: how many times a program that fails (an error, no program, nothing printed) is shown
    its failure and asked again in the same turn, before the turn is forfeited. Each repair is one call more."""

    @model_validator(mode="after")
    def _role_or_society(self) -> MemberSpec:
        if self.human and (self.model is not None or self.temperature is not None or self.society is not None):
            raise ValueError("a person (human: true) has no model, temperature or society of their own")
        if self.timeout is not None and not self.human:
            raise ValueError("timeout is a person's time to answer: it goes with human: true")
        if not self.role.strip() and self.society is None and not self.human:
            raise ValueError("a member needs a role, or a society to stand for it")
        if self.repairs and self.answers != "program":
            raise ValueError("repairs are a program member's second tries: they go with answers: program")
        if self.answers == "program" and (self.human or self.society is not None):
            raise ValueError("answers: program is for a member with a model; a person or a society answers in words")
        if self.society is not None and self.temperature is not None:
            raise ValueError("a society standing as a member has no temperature of its own; set it on its members")
        return self


class BudgetSpec(BaseModel):
    """What one run of the society (one task) may spend; spent, it decides with what it has."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    max_calls: int | None = Field(default=None, ge=1)
    max_tokens: int | None = Field(default=None, ge=1)
    max_cost_usd: float | None = Field(default=None, gt=0)


Organisation = Literal["monarchy", "democracy", "debate", "economy", "roleplay", "artist-critic", "interview"]
STAFF = ("organizer", "leader", "editor", "arbiter", "specifier")
SOCIETY_SEATS = ("leader", "editor")
"""The staff seats a whole society can fill: their turns are statements, as a member's are."""
_ECONOMY = ("economy",)
PROGRAM_ORGANISATIONS = ("monarchy", "democracy", "debate", "economy")
"""The organisations whose members answer the task in their own turns, where a member may answer with a program."""
USED_BY: dict[str, tuple[str, ...]] = {
    "rounds": ("monarchy", "democracy", "debate", "economy", "artist-critic", "interview"),
    "voting": ("democracy", "debate", "economy"), "rights": ("democracy",),
    "members": ("monarchy", "democracy", "debate", "economy", "roleplay", "interview"),
    "organizer": ("monarchy", "democracy", "interview"), "leader": ("monarchy", "democracy", "interview"),
    "editor": ("debate",), "until_consensus": ("debate",), "quorum": ("debate",), "instructions": ("interview",),
    "arbiter": _ECONOMY, "start_balance": _ECONOMY, "rent": _ECONOMY, "spawn_above": _ECONOMY,
    "brigade_share": _ECONOMY, "specifier": ("roleplay",), "max_messages": ("roleplay",),
    "token_budget": ("roleplay",), "styles": ("artist-critic",), "professions": ("artist-critic",),
    "painter": ("artist-critic",)}
"""The organisations each setting means something to: set elsewhere, it is refused rather than ignored, so
that a saved run's settings say what ran (`--rights know` on a monarchy changes nothing)."""


class InstructionsSpec(BaseModel):
    """An interview's wording of each turn (`noosphere.society.interview`); what is left out keeps its default."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    opening: Text | None = Field(default=None, min_length=1)
    """Mission: what each member is asked to report of what it perceives."""
    question: Text | None = Field(default=None, min_length=1)
    """Mindstorm: what the interviewer is asked each round."""
    summary: Text | None = Field(default=None, min_length=1)
    """Opinion gathering: what the interviewer's summary for the decider is to hold."""
    decision: Text | None = Field(default=None, min_length=1)
    """Execution: what the decider is asked to decide."""


class SocietySpec(BaseModel):
    # .inf and .nan are refused in every setting: an economy begun with .inf money endowed its children with nan
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    organisation: Organisation
    model: ModelId | None = None
    """Model id of every member that names none (the command's --model otherwise)."""
    rounds: int = Field(default=3, ge=0, le=50)
    voting: Literal["plurality", "borda", "approval"] = "plurality"
    rights: list[Literal["know", "change", "execute"]] = Field(default_factory=lambda: list(RIGHTS))
    vote: Literal["ballot", "standing", "weighted", "sequence", "every"] = "ballot"
    """Where members vote (the right to execute, a debate without an editor, an economy): each fills in a
    `ballot`, or each one's `standing` answer is counted as its vote, with no call, or `weighted`: counted
    with the weight of the member's P(True) that it is right (one scoring call a member), or `sequence`:
    with the weight of the probability the member's model gave the reply that made it its answer (from
    that reply's own call, no call more), or `every` (a debate's): every answer each member gave, its mission
statement's and each round's, with its reply's probability. The weights need models that give probabilities."""
    until_consensus: bool = False
    """Debate: a round is held only while the members disagree (all holding one answer, the rounds stop)."""
    quorum: int | None = Field(default=None, ge=2)
    """Debate: the members answer the mission in their order (the first `quorum` at once, then one at a time) until
    `quorum` of them give the same answer; no one after is asked and no round is held. Unset, all answer at once."""
    leader_confidence: bool = False
    """Monarchy, democracy without the right to execute, debate with an editor: whether the one who decides sees,
    beside each member holding an answer, that member's P(True) that it is right (one scoring call a member; its
    model must score options). Issue 26's "leaders that see each member's probability"."""
    ballot_summary: bool = False
    """Democracy with the right to execute: whether each ballot repeats the organizer's summary, as the paper's
    voters had it. Off by default: on GSM8K the summary drew votes away from the voters' own answers."""
    members: list[MemberSpec] = Field(default_factory=list)
    organizer: MemberSpec | None = None
    leader: MemberSpec | None = None
    editor: MemberSpec | None = None
    arbiter: MemberSpec | None = None
    specifier: MemberSpec | None = None
    """Role-play: turns the short task into a precise one before the conversation."""
    max_messages: int = Field(default=50, ge=1, le=500)
    token_budget: int | None = Field(default=None, ge=1)
    """Role-play: the conversation's own token budget (checked before each turn)."""
    instructions: InstructionsSpec | None = None
    """Interview: the wording of its turns (the organizer interviews the members, the leader decides)."""
    budget: BudgetSpec | None = None
    """Any organisation: what one run of the society may spend (a sub-society's counts toward it too)."""
    start_balance: float = Field(default=10.0, ge=0)
    rent: float = Field(default=1.0, ge=0)
    spawn_above: float = Field(default=30.0, gt=0)
    brigade_share: float = Field(default=0.5, ge=0, le=1)
    styles: list[Text] = Field(default_factory=list)
    """Artist-critic: one artist society per style."""
    professions: list[Text] = Field(default_factory=list)
    """Artist-critic: one critic per profession."""
    painter: Text | None = None
    """Artist-critic: an image model LiteLLM reaches (e.g. openai/dall-e-3) that draws the winner; optional."""
    max_concurrency: int = Field(default=8, ge=1, le=256)
    """Members answering at once (the rest wait their turn)."""
    seed: int = 0

    def problem(self) -> tuple[tuple[str | int, ...], str] | None:
        """(path of the field, what is wrong) for the first thing this society, or a society inline in it,
        needs and the file leaves out or gets wrong."""
        own = (self._own_problem() or self._repeated_name() or self._unused_setting() or self._misplaced_society()
               or self._misplaced_program())
        if own is not None:
            return own
        for index, member in enumerate(self.members):
            inner = member.society.problem() if member.society is not None else None
            if inner is not None:
                return ("members", index, "society", *inner[0]), inner[1]
        return None

    def _own_problem(self) -> tuple[tuple[str | int, ...], str] | None:
        needs = {"monarchy": ("organizer", "leader"), "democracy": ("organizer",), "economy": ("arbiter",),
                 "interview": ("organizer", "leader")}
        missing = [name for name in needs.get(self.organisation, ()) if getattr(self, name) is None]
        if self.organisation == "democracy" and "execute" not in self.rights and self.leader is None:
            missing.append("leader")
        if missing:
            return (missing[0],), f"{_article(self.organisation)} {self.organisation} needs: {', '.join(missing)}"
        if self.vote != "ballot" and not self._members_vote():
            return ("vote",), (f"vote: {self.vote} counts the members' answers where they vote: a democracy with the "
                               "right to execute, a debate without an editor, or an economy")
        if self.vote == "every" and self.organisation != "debate":
            return ("vote",), (f"vote: every counts each debate round's answers; a {self.organisation}'s rounds "
                               "repeat the members' standing answers: use vote: sequence")
        if self.ballot_summary and not (self.organisation == "democracy" and "execute" in self.rights
                                        and self.vote == "ballot"):
            return ("ballot_summary",), ("ballot_summary repeats the organizer's summary on the members' ballots: "
                                         "a democracy with the right to execute and vote: ballot")
        if self.organisation == "artist-critic":
            empty = [name for name in ("styles", "professions") if not getattr(self, name)]
            return ((empty[0],), "an artist-critic society needs styles (artists) and professions (critics)") \
                if empty else None
        if self.quorum is not None and self.organisation == "debate" and self.quorum > len(self.members):
            return ("quorum",), (f"a quorum of {self.quorum} needs at least {self.quorum} members, "
                                 f"not {len(self.members)}")
        if self.organisation == "roleplay" and len(self.members) != 2:
            return ("members",), "a role-play has two members: the user who instructs, then the assistant who solves"
        named = f"{_article(self.organisation)} {self.organisation}"
        return None if self.members else (("members",), f"{named} needs at least one member")

    def _unused_setting(self) -> tuple[tuple[str | int, ...], str] | None:
        for name, organisations in USED_BY.items():
            default = type(self).model_fields[name].get_default(call_default_factory=True)
            if self.organisation not in organisations and getattr(self, name) != default:
                return (name,), f"{name} means nothing to a {self.organisation} (only to: {', '.join(organisations)})"
        return None

    def _misplaced_society(self) -> tuple[tuple[str | int, ...], str] | None:
        """A society stands as a member by answering and voting (a statement or a ballot). Seats that ask for
        anything else, a question, a summary, a verdict, a hire, a conversation, it could only forfeit."""
        for name in STAFF:
            seat = getattr(self, name)
            if seat is not None and seat.society is not None and name not in SOCIETY_SEATS:
                return (name, "society"), (f"a society cannot be the {name}: it answers and votes, so it can stand "
                                           f"as a member, a leader or an editor")
        if self.organisation in ("roleplay", "economy"):
            for index, member in enumerate(self.members):
                if member.society is not None:
                    does = "converse" if self.organisation == "roleplay" else "hire and serve each other"
                    return ("members", index, "society"), (f"a {self.organisation}'s members {does}; a society only "
                                                           "answers and votes, so it cannot be one of them")
        return None

    def _misplaced_program(self) -> tuple[tuple[str | int, ...], str] | None:
        """A program gives a member's answer to the task; seats and organisations whose turns are something else (a
        question, a verdict, a conversation, a report of what a witness sees) cannot take one."""
        for name in STAFF:
            seat = getattr(self, name)
            if seat is not None and seat.answers == "program":
                return (name, "answers"), (f"the {name} does not answer the task, so it cannot answer with a program; "
                                           "answers: program is for members")
        if self.organisation in PROGRAM_ORGANISATIONS:
            return None
        for index, member in enumerate(self.members):
            if member.answers == "program":
                return ("members", index, "answers"), (
                    f"{_article(self.organisation)} {self.organisation}'s members do not answer the task in turns of "
                    f"their own; answers: program is for a {', a '.join(PROGRAM_ORGANISATIONS)}")
        return None

    def _members_vote(self) -> bool:
        """Whether the members decide by a vote (the alternatives: a leader, an editor, a collector)."""
        return (self.organisation == "economy" or (self.organisation == "debate" and self.editor is None)
                or (self.organisation == "democracy" and "execute" in self.rights))

    def _repeated_name(self) -> tuple[tuple[str | int, ...], str] | None:
        """Names address members in prompts, ballots and the trace, so two members may not share one."""
        seats: list[tuple[tuple[str | int, ...], str]] = [(("members", i, "name"), m.name)
                                                          for i, m in enumerate(self.members)]
        seats += [((name, "name"), getattr(self, name).name) for name in STAFF if getattr(self, name) is not None]
        seen: set[str] = set()
        for where, name in seats:
            if name in seen:
                return where, f"member names must be unique; {name!r} is used twice"
            seen.add(name)
        return None

    def check_staff(self, source: str | None = None, line_of: Callable[..., int | None] | None = None,
                    ) -> SocietySpec:
        wrong = self.problem()
        if wrong is not None:
            where, message = wrong
            raise ConfigError(message, source=source, field=".".join(str(step) for step in where),
                              line=line_of(*where) if line_of else None)
        return self


MemberSpec.model_rebuild()


def _article(word: str) -> str:
    """"an economy", "a monarchy"."""
    return "an" if word[:1].lower() in "aeiou" else "a"
