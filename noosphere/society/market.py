"""The market phases of an economy of minds: hiring under contracts, rent, spawning, rewards.

Each round every member present may hire one other member for a service at a price and a deadline
it names; the ledger checks what it can (parties present, funds, deadline) and an arbiter member
judges the rest (is this a real, lawful service at a sane price?). A provider performs one service a
round, the one due soonest; it is paid on delivery, and the client answers the task again with what
it bought. A contract not served by its deadline (or by the end of the task) is in default, unpaid.
Rent is due at the end of the round; whoever cannot pay leaves. A member richer than `spawn_above`
spawns a variant of itself and endows it with half its wealth. After the society decides,
`PayReward` pays the environment's reward to the members whose answer won, and the bucket brigade
passes it back along the contracts of this task.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

from noosphere.errors import UsageError
from noosphere.society import prompts
from noosphere.society.economy import Contract, Economy
from noosphere.society.events import MemberSpoke
from noosphere.society.member import Member
from noosphere.society.session import Session, Statement


class HireDecision(BaseModel):
    hire: bool = Field(description="true to buy a service from another member this round")
    provider: str = Field(default="", max_length=80, description="the member to hire, by name")
    service: str = Field(default="", max_length=300, description="what you want them to do")
    price: float = Field(default=0.0, ge=0.0, description="what you offer to pay on delivery")
    rounds: int = Field(default=1, ge=1, le=5, description="rounds the provider has to deliver (1: this round)")


class ContractVerdict(BaseModel):
    reason: str = Field(max_length=400)
    valid: bool


@dataclass(frozen=True)
class MarketRounds:
    economy: Economy
    arbiter: Member
    spawn_above: float = 30.0
    name: str = "market"

    async def run(self, session: Session) -> None:
        self.economy.report(0)
        open_contracts: list[Contract] = []
        for round_ in session.phase_rounds(self.name):
            open_contracts += await self._hire(session, round_)
            delivered, open_contracts = await self._deliver(session, round_, open_contracts)
            await self._answer_again(session, round_, delivered)
            for name in self.economy.charge_rent(round_):
                session.members[:] = [m for m in session.members if m.name != name]
            self._spawn(session)
            self.economy.report(round_)
        for contract in open_contracts:  # due after the last round: the task ended first
            self.economy.settle(contract, session.rounds + 1, delivered=False)

    def _market_report(self, session: Session, member: Member) -> str:
        others = "\n".join(prompts.MARKET_OTHER.format(member=m.name, balance=self.economy.balances[m.name],
                                                       answer=r.answer)
                           for m in session.members if m.name != member.name
                           for r in [session.latest([m]).get(m.name)] if r is not None)
        return prompts.MARKET_REPORT.format(balance=self.economy.balances[member.name], rent=self.economy.rent,
                                            others=others or prompts.NO_OTHERS)

    async def _hire(self, session: Session, round_: int) -> list[Contract]:
        async def decide(member: Member) -> HireDecision:
            return await member.ask(prompts.HIRE.format(task=session.task, report=self._market_report(session, member)),
                                    HireDecision)

        decisions = await session.each(session.members, self.name, round_, decide)
        contracts = []
        for client, decision in decisions.items():
            session.trace.emit(MemberSpoke(phase=self.name, round=round_, member=client, text=(
                f"offers {decision.provider.strip()} {decision.price:.1f} for: {decision.service} "
                f"(due {_due(decision.rounds)})" if decision.hire else "hires no one")))
            if not decision.hire:
                continue
            contract = self.economy.propose(client, decision.provider.strip(), decision.service, decision.price,
                                            deadline=round_ + decision.rounds - 1)
            problem = self.economy.check(contract, round_) or await self._arbitrate(session, round_, contract)
            if problem:
                self.economy.reject(contract, problem)
            else:
                contracts.append(contract)
        return contracts

    async def _arbitrate(self, session: Session, round_: int, contract: Contract) -> str | None:
        verdict = await session.each([self.arbiter], "arbiter", round_, lambda arbiter: arbiter.ask(
            prompts.ARBITRATE.format(client=contract.client, provider=contract.provider, price=contract.price,
                                     due=_due(contract.deadline - round_ + 1), service=contract.service),
            ContractVerdict))
        judged = verdict.get(self.arbiter.name)
        if judged is None:
            return "the arbiter could not judge the contract"
        session.trace.emit(MemberSpoke(phase="arbiter", round=round_, member=self.arbiter.name, to=contract.client,
                                       text=judged.reason, answer="valid" if judged.valid else "refused"))
        return None if judged.valid else f"the arbiter refused: {judged.reason}"

    async def _deliver(self, session: Session, round_: int,
                       contracts: list[Contract]) -> tuple[dict[str, str], list[Contract]]:
        """Providers perform in parallel, each the open contract due soonest; returns client -> what it
        received, and the contracts still open (not served yet, deadline not passed)."""
        by_provider: dict[str, Contract] = {}
        for contract in sorted(contracts, key=lambda c: (c.deadline, c.id)):
            by_provider.setdefault(contract.provider, contract)
        providers = [m for m in session.members if m.name in by_provider]

        async def perform(member: Member) -> Statement:
            contract = by_provider[member.name]
            return await member.ask(prompts.PERFORM.format(task=session.task, client=contract.client,
                                                           price=contract.price, service=contract.service), Statement)

        done = await session.each(providers, "service", round_, perform)
        for provider, result in done.items():  # the service itself is a message, to the client who bought it
            session.trace.emit(MemberSpoke(phase="service", round=round_, member=provider,
                                           to=by_provider[provider].client, text=result.reasoning,
                                           answer=result.answer))
        received, still_open = {}, []
        for contract in contracts:
            served = by_provider.get(contract.provider) is contract
            if not served and contract.deadline > round_ and self.economy.check(contract, round_ + 1) is None:
                still_open.append(contract)
                continue
            result = done.get(contract.provider) if served else None
            if self.economy.settle(contract, round_, delivered=result is not None) and result is not None:
                received[contract.client] = prompts.DELIVERED.format(
                    provider=contract.provider, service=contract.service, reasoning=result.reasoning,
                    answer=result.answer)
        return received, still_open

    async def _answer_again(self, session: Session, round_: int, received: dict[str, str]) -> None:
        async def answer(member: Member) -> tuple[Statement, float | None]:
            bought = prompts.BOUGHT.format(delivered=received[member.name]) if member.name in received else ""
            return await session.answering(member, prompts.ANSWER_AGAIN.format(bought=bought, task=session.task),
                                        Statement)

        for name, (statement, probability) in (await session.each(session.members, self.name, round_,
                                                                  answer)).items():
            session.say(name, self.name, round_, statement, probability)

    def _spawn(self, session: Session) -> None:
        for parent in list(session.members):
            wealth = self.economy.balances.get(parent.name, 0.0)
            if wealth <= self.spawn_above:
                continue
            child = variant_of(parent, self.economy.free_name(parent.name))
            self.economy.spawn(parent.name, child.name, wealth / 2)
            session.members.append(child)


def variant_of(parent: Member, name: str) -> Member:
    """A spawned variant: the parent's model, perception and way of answering (a programmer's variant writes
    programs too: its role, the parent's, asks for them), its role with a push to try something else."""
    return Member(name, parent.model, prompts.VARIANT_ROLE.format(role=parent.role, parent=parent.name), parent.sees,
                  answers=parent.answers, repairs=parent.repairs)


def restore_market(members: list[Member], economy: Economy, snapshot: dict[str, Any]) -> None:
    """Bring an economy's members and ledger (built afresh from its file) to where `snapshot` left them:
    departed members leave `members`, and spawned variants (`parent.N`) join, rebuilt from their parents."""
    economy.restore(snapshot)
    known = {member.name: member for member in members}

    def member_named(name: str) -> Member:
        if name not in known:  # a variant; its parent may itself be one, or have left since
            if "." not in name:
                raise UsageError(f"the saved ledger names {name!r}, who is not a member of this economy")
            known[name] = variant_of(member_named(name.rsplit(".", 1)[0]), name)
        return known[name]

    members[:] = [member_named(name) for name in economy.balances]  # founders first, then variants as spawned


@dataclass(frozen=True)
class PayReward:
    """The environment's reward (from `Session.reward`) goes to the members whose answer won."""

    economy: Economy
    name: str = "reward"
    settles: bool = True
    """It makes no model call: a society whose budget ran out before it still pays the reward."""

    async def run(self, session: Session) -> None:
        self.economy.trace = session.trace
        if session.reward is None or session.answer is None:
            return
        amount = session.reward(session.answer)
        winners = [name for name, r in session.latest().items()
                   if session.answer_key(r.answer) == session.answer_key(session.answer)]
        self.economy.reward(amount, winners)
        self.economy.report(session.rounds + 1)


def _due(rounds: int) -> str:
    return prompts.DUE_NOW if rounds <= 1 else prompts.DUE_LATER.format(rounds=rounds)
