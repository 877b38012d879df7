"""The economy of minds: balances, contracts, rent, bankruptcy, spawning and the bucket brigade.

Pure bookkeeping, no models: the market phase (`market.py`) decides who hires whom; this ledger
makes the money move and keeps one invariant, which a property test checks over random runs: the
total held by all agents, present and departed, changes only by rewards paid in and rent paid out.

The bucket brigade follows the paper's sketch (after Holland): the environment rewards the agents
whose work produced the answer, and each of them passes a share of what it receives back to the
agents it paid for services that went into that work, who pass a share on to theirs, and so on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from noosphere.errors import UsageError
from noosphere.trace import Event, Trace

ContractStatus = Literal["proposed", "rejected", "delivered", "defaulted"]


class PaymentMade(Event):
    """Money moved in the economy's ledger (`Economy`): a payment between members (`contract N`, or `bucket brigade`
    passing a reward back), rent paid to the environment (`rent`) or a reward from it (`reward`)."""

    kind: str = "econ_payment"
    payer: str  # "environment" for rewards
    payee: str  # "environment" for rent
    amount: float
    reason: str


class ContractEvent(Event):
    """A step in the life of a market contract (`MarketRounds`, through the ledger): `proposed` when a member offers to
    hire another, then `rejected` (by the ledger's check or the arbiter), `delivered` (the provider is paid) or
    `defaulted` (not served by its deadline, or no longer payable); `note` says why."""

    kind: str = "econ_contract"
    contract: int
    client: str
    provider: str
    service: str
    price: float
    deadline: int
    status: str
    note: str = ""


class AgentLeft(Event):
    """A member left the society after paying rent (`Economy.charge_rent`, after a market round): it could not pay the
    rent in full, or paying it left it nothing. It paid what it had; `balance` is what it was left holding (0 or
    less)."""

    kind: str = "econ_departure"
    agent: str
    balance: float
    round: int


class AgentSpawned(Event):
    """A member endowed a new variant of itself, `child` (named `parent.N`), with `endowment` (`Economy.spawn`): after
    each market round, every member holding more than `spawn_above` gives half its wealth."""

    kind: str = "econ_spawn"
    parent: str
    child: str
    endowment: float


class BalancesReported(Event):
    """The balance of every member still present (`Economy.report`): before the first market round (`round` 0), after
    each round, and after the reward is paid (`round` R + 1). The viewer draws them over time."""

    kind: str = "econ_balances"
    round: int
    balances: dict[str, float]


@dataclass(frozen=True)
class Contract:
    id: int
    client: str
    provider: str
    service: str
    price: float
    deadline: int
    """The last round in which the service may be delivered and paid."""


@dataclass
class Economy:
    balances: dict[str, float]
    trace: Trace = field(default_factory=lambda: Trace(None, keep=False))
    """Where payments and contracts are recorded; the market phases point it at the running society's trace."""
    rent: float = 1.0
    brigade_share: float = 0.5
    """Share of a reward an agent passes back to the providers it paid (split by what it paid them);
    they pass the same share of that on to their own providers, and so on down the chain."""
    departed: dict[str, float] = field(default_factory=dict)
    rewards_in: float = 0.0
    rent_out: float = 0.0
    _paid: dict[str, dict[str, float]] = field(default_factory=dict)
    _next_contract: int = 1

    def __post_init__(self) -> None:
        if any(b < 0 for b in self.balances.values()):
            raise UsageError("starting balances cannot be negative")
        self._initial = sum(self.balances.values())

    @property
    def total(self) -> float:
        return sum(self.balances.values()) + sum(self.departed.values())

    def conserved(self) -> bool:
        """The invariant: the total moved only by rewards and rent."""
        return abs(self.total - (self._initial + self.rewards_in - self.rent_out)) < 1e-6

    def snapshot(self) -> dict[str, Any]:
        """What the ledger holds between tasks, as JSON: a benchmark saves it after each problem, and a resumed
        run goes on from it (`restore`) instead of starting everyone afresh."""
        return {"balances": dict(self.balances), "departed": dict(self.departed), "initial": self._initial,
                "rewards_in": self.rewards_in, "rent_out": self.rent_out, "next_contract": self._next_contract}

    def restore(self, snapshot: dict[str, Any]) -> None:
        """Take up the state `snapshot` saved (between tasks: no contract is open, no service paid for)."""
        self.balances = {name: float(v) for name, v in snapshot["balances"].items()}
        self.departed = {name: float(v) for name, v in snapshot["departed"].items()}
        self._initial, self.rewards_in = float(snapshot["initial"]), float(snapshot["rewards_in"])
        self.rent_out, self._next_contract = float(snapshot["rent_out"]), int(snapshot["next_contract"])
        self._paid.clear()

    def report(self, round_: int) -> None:
        """Put the balances of everyone present into the trace (the viewer draws them over time)."""
        self.trace.emit(BalancesReported(round=round_, balances={n: round(b, 4) for n, b in self.balances.items()}))

    def active(self, name: str) -> bool:
        return name in self.balances

    def start_task(self) -> None:
        """A new task begins: the brigade will pass its reward back only along services bought for it."""
        self._paid.clear()

    def free_name(self, parent: str) -> str:
        """The first `parent.N` that no agent, present or departed, has ever had."""
        n = 1
        while f"{parent}.{n}" in self.balances or f"{parent}.{n}" in self.departed:
            n += 1
        return f"{parent}.{n}"

    def transfer(self, payer: str, payee: str, amount: float, reason: str) -> None:
        if amount <= 0:
            raise UsageError(f"a payment must be positive, not {amount}")
        if not (self.active(payer) and self.active(payee)) or payer == payee:
            raise UsageError(f"no payment from {payer!r} to {payee!r}: both must be distinct members present")
        if self.balances[payer] < amount:
            raise UsageError(f"{payer} holds {self.balances[payer]:.2f}, cannot pay {amount:.2f}")
        self.balances[payer] -= amount
        self.balances[payee] += amount
        self.trace.emit(PaymentMade(payer=payer, payee=payee, amount=amount, reason=reason))

    # contracts ----------------------------------------------------------------------------------
    def propose(self, client: str, provider: str, service: str, price: float, deadline: int) -> Contract:
        contract = Contract(self._next_contract, client, provider, service, price, deadline)
        self._next_contract += 1
        self._contract_event(contract, "proposed")
        return contract

    def check(self, contract: Contract, round_: int) -> str | None:
        """Why the ledger cannot honour this contract (the arbiter judges the rest), or None."""
        if contract.client == contract.provider:
            return "an agent cannot contract with itself"
        if not (self.active(contract.client) and self.active(contract.provider)):
            return "both parties must be members still present"
        if contract.price <= 0:
            return "the price must be positive"
        if contract.deadline < round_:
            return "the deadline has passed"
        if self.balances[contract.client] < contract.price:
            return f"{contract.client} cannot afford {contract.price:.2f}"
        return None

    def reject(self, contract: Contract, reason: str) -> None:
        self._contract_event(contract, "rejected", reason)

    def settle(self, contract: Contract, round_: int, delivered: bool) -> bool:
        """Pay the provider on delivery by the deadline; otherwise the contract is in default, unpaid."""
        problem = self.check(contract, round_)
        if not delivered or problem is not None:
            self._contract_event(contract, "defaulted", problem or "the service was not delivered")
            return False
        self.transfer(contract.client, contract.provider, contract.price, f"contract {contract.id}")
        paid = self._paid.setdefault(contract.client, {})
        paid[contract.provider] = paid.get(contract.provider, 0.0) + contract.price
        self._contract_event(contract, "delivered")
        return True

    def _contract_event(self, contract: Contract, status: ContractStatus, note: str = "") -> None:
        self.trace.emit(ContractEvent(contract=contract.id, client=contract.client, provider=contract.provider,
                                      service=contract.service, price=contract.price, deadline=contract.deadline,
                                      status=status, note=note))

    # rent, departures, spawning -----------------------------------------------------------------
    def charge_rent(self, round_: int) -> list[str]:
        """Everyone pays rent; whoever cannot pay it in full pays what it has and leaves. Returns who left."""
        left = []
        for name in list(self.balances):
            due = min(self.rent, self.balances[name])
            self.balances[name] -= due
            self.rent_out += due
            if due:
                self.trace.emit(PaymentMade(payer=name, payee="environment", amount=due, reason="rent"))
            if due < self.rent or self.balances[name] <= 0:
                self.departed[name] = self.balances.pop(name)
                self.trace.emit(AgentLeft(agent=name, balance=self.departed[name], round=round_))
                left.append(name)
        return left

    def spawn(self, parent: str, child: str, endowment: float) -> None:
        if child in self.balances or child in self.departed:
            raise UsageError(f"an agent named {child!r} already exists")
        if not self.active(parent) or not 0 < endowment <= self.balances[parent]:
            raise UsageError(f"{parent} cannot endow a child with {endowment:.2f}")
        self.balances[parent] -= endowment
        self.balances[child] = endowment
        self.trace.emit(AgentSpawned(parent=parent, child=child, endowment=endowment))

    # rewards ------------------------------------------------------------------------------------
    def reward(self, amount: float, earners: list[str]) -> None:
        """Pay `amount` from the environment, split among `earners`, then run the bucket brigade."""
        present = [name for name in dict.fromkeys(earners) if self.active(name)]
        if amount <= 0 or not present:
            return
        share = amount / len(present)
        for name in present:
            self.balances[name] += share
            self.rewards_in += share
            self.trace.emit(PaymentMade(payer="environment", payee=name, amount=share, reason="reward"))
        frontier = {name: share for name in present}
        for _ in range(len(self.balances)):  # credit chains are at most as long as the society is large
            passed_on: dict[str, float] = {}
            for name, received in frontier.items():
                suppliers = {p: v for p, v in self._paid.get(name, {}).items() if self.active(p)}
                spent = sum(suppliers.values())
                passed = min(received * self.brigade_share, self.balances[name])
                if not spent or passed <= 0:
                    continue
                for supplier, value in suppliers.items():
                    self.transfer(name, supplier, passed * value / spent, "bucket brigade")
                    passed_on[supplier] = passed_on.get(supplier, 0.0) + passed * value / spent
            frontier = passed_on
