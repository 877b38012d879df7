"""The economy of minds: conservation over random runs, contracts, rent, spawning, the bucket brigade."""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest

from noosphere.errors import UsageError
from noosphere.llm.types import Request
from noosphere.society import Economy, Member, economy_of_minds
from noosphere.society.market import restore_market
from noosphere.trace import Trace
from tests.helpers import by_agent, scripted


def random_run(seed: int) -> Economy:
    """Random trading, rewards, spawning and rent, with the money the test expects kept apart from the
    ledger's own counters, so that a bug that moves a balance and its counter together still shows."""
    rng = random.Random(seed)
    economy = Economy({f"m{i}": rng.uniform(0, 20) for i in range(rng.randint(2, 6))}, Trace(None),
                      rent=rng.uniform(0, 3), brigade_share=rng.random())
    expected = sum(economy.balances.values())
    spawned = 0
    for round_ in range(1, 15):
        for _ in range(rng.randint(0, 6)):
            present = list(economy.balances)
            if len(present) < 2:
                break
            client, provider = rng.sample(present, 2)
            deadline = round_ + rng.randint(-1, 1)
            contract = economy.propose(client, provider, "help", rng.uniform(0.1, 8), deadline=deadline)
            if economy.check(contract, round_) is None:
                economy.settle(contract, round_, delivered=rng.random() < 0.8)
            else:
                economy.reject(contract, "checked")
        if economy.balances and rng.random() < 0.4:
            amount = rng.uniform(0, 30)
            economy.reward(amount, rng.sample(list(economy.balances), k=1))
            expected += amount  # one present earner takes all of it, whatever it then passes back
        rich = [n for n, b in economy.balances.items() if b > 15]
        if rich:
            spawned += 1
            economy.spawn(rich[0], f"child{spawned}", economy.balances[rich[0]] / 2)
        expected -= sum(min(economy.rent, b) for b in economy.balances.values())  # who cannot pay pays all it has
        economy.charge_rent(round_)
        assert economy.total == pytest.approx(expected, abs=1e-6), f"seed {seed}, round {round_}"
        assert economy.conserved(), f"seed {seed}, round {round_}"
        assert all(b > 0 for b in economy.balances.values())
    return economy


def test_money_is_conserved_except_for_rewards_and_rent_over_many_random_runs() -> None:
    departures = 0
    for seed in range(300):
        economy = random_run(seed)
        departures += len(economy.departed)
    assert departures > 50  # the runs did exercise bankruptcy


def test_the_bucket_brigade_passes_reward_back_along_paid_contracts() -> None:
    economy = Economy({"a": 10.0, "b": 10.0, "c": 10.0}, Trace(None), rent=0.0, brigade_share=0.5)
    economy.settle(economy.propose("a", "b", "check my sums", 4.0, deadline=1), 1, delivered=True)
    economy.settle(economy.propose("b", "c", "look up a rate", 2.0, deadline=1), 1, delivered=True)
    economy.reward(10.0, ["a"])
    # a: 10 - 4 + 10 - 5 = 11; b: 10 + 4 - 2 + 5 - 2.5 = 14.5; c: 10 + 2 + 2.5 = 14.5
    assert economy.balances == pytest.approx({"a": 11.0, "b": 14.5, "c": 14.5})
    assert economy.conserved() and economy.rewards_in == 10.0


def test_rent_bankrupts_and_a_departed_member_cannot_trade() -> None:
    trace = Trace(None)
    economy = Economy({"rich": 5.0, "poor": 0.5}, trace, rent=1.0)
    assert economy.charge_rent(1) == ["poor"]
    assert economy.departed == {"poor": 0.0} and economy.balances == {"rich": 4.0}
    assert trace.of_kind("econ_departure")[0].agent == "poor"
    contract = economy.propose("rich", "poor", "anything", 1.0, deadline=2)
    assert "present" in (economy.check(contract, 2) or "")
    with pytest.raises(UsageError):
        economy.transfer("rich", "poor", 1.0, "gift")


def test_an_unaffordable_or_late_contract_defaults_unpaid() -> None:
    economy = Economy({"a": 1.0, "b": 1.0}, Trace(None))
    assert "afford" in (economy.check(economy.propose("a", "b", "x", 5.0, deadline=1), 1) or "")
    late = economy.propose("a", "b", "x", 0.5, deadline=1)
    assert economy.settle(late, 2, delivered=True) is False and economy.balances == {"a": 1.0, "b": 1.0}


def said(answer: str) -> str:
    return json.dumps({"reasoning": "worked it out", "answer": answer})


def test_an_economy_society_hires_under_an_arbiter_pays_rent_votes_and_rewards() -> None:
    hire = json.dumps({"hire": True, "provider": "b", "service": "check my sum", "price": 3.0})
    no_hire = json.dumps({"hire": False})
    vote_a = json.dumps({"reasoning": "r", "choice": "A"})
    model, _, trace = scripted(by_agent({
        "a": [said("13"), hire, said("12"), vote_a],
        "b": [said("12"), no_hire, said("12 (checked)"), said("12"), vote_a],
        "arbiter": [json.dumps({"reason": "a real service", "valid": True})]}))
    society = economy_of_minds([Member("a", model, "ra"), Member("b", model, "rb")], Member("arbiter", model, "rz"),
                               rounds=1, start=10.0, rent=1.0, spawn_above=100.0, brigade_share=0.5)
    result = society.run_sync("5 + 7?", reward=lambda answer: 8.0 if answer == "12" else 0.0)
    assert result.answer == "12"
    [contract] = [e for e in trace.of_kind("econ_contract") if e.status == "delivered"]
    assert (contract.client, contract.provider, contract.price) == ("a", "b", 3.0)
    [service] = [e for e in trace.of_kind("soc_message") if e.phase == "service"]
    assert (service.member, service.to, service.answer) == ("b", "a", "12 (checked)")  # a message to its buyer
    offers = [(e.member, e.text) for e in trace.of_kind("soc_message") if e.phase == "market"]
    assert offers[:2] == [("a", "offers b 3.0 for: check my sum (due this round)"), ("b", "hires no one")]
    [verdict] = [e for e in trace.of_kind("soc_message") if e.phase == "arbiter"]
    assert (verdict.member, verdict.to, verdict.text, verdict.answer) == ("arbiter", "a", "a real service", "valid")
    ledger = society.economy
    assert ledger is not None and ledger.conserved()
    # a: 10 - 3 - 1 rent + 4 reward - 2 brigade = 8; b: 10 + 3 - 1 + 4 + 2 = 18
    assert ledger.balances == pytest.approx({"a": 8.0, "b": 18.0})


def test_a_society_whose_members_all_went_bankrupt_still_answers_with_what_they_said() -> None:
    model, _, trace = scripted(by_agent({"a": [said("12"), json.dumps({"hire": False}), said("12")],
                                         "b": [said("13"), json.dumps({"hire": False}), said("11")]}))
    society = economy_of_minds([Member("a", model, "ra"), Member("b", model, "rb")], Member("arbiter", model, "rz"),
                               rounds=1, start=0.5, rent=1.0)
    result = society.run_sync("5 + 7?")
    assert {e.agent for e in trace.of_kind("econ_departure")} == {"a", "b"} and society.members == []
    assert (result.answer, result.decided_by) == ("11", "fallback")  # the last answer given before they left


def test_a_rich_member_spawns_a_variant_that_joins_the_next_rounds() -> None:
    model, _, trace = scripted(by_agent({
        "a": [said("1"), json.dumps({"hire": False}), said("1")],
        "a.1": [json.dumps({"hire": False}), said("1")],
        "arbiter": [json.dumps({"reason": "ok", "valid": True})]}))
    society = economy_of_minds([Member("a", model, "ra")], Member("arbiter", model, "rz"), rounds=2, start=50.0,
                               rent=1.0, spawn_above=30.0)
    society.run_sync("1?")
    [spawn] = trace.of_kind("econ_spawn")
    assert (spawn.parent, spawn.child, spawn.endowment) == ("a", "a.1", pytest.approx(24.5))
    assert [m.name for m in society.members] == ["a", "a.1"]
    assert society.economy is not None and society.economy.conserved()


def test_a_spawned_name_is_never_reused_even_after_its_holder_left() -> None:
    economy = Economy({"a": 40.0}, Trace(None), rent=1.0)
    economy.spawn("a", economy.free_name("a"), 0.5)  # a.1
    economy.spawn("a", economy.free_name("a"), 10.0)  # a.2
    assert economy.charge_rent(1) == ["a.1"]
    assert economy.free_name("a") == "a.3"


def test_the_brigade_pays_back_only_services_bought_for_the_task_rewarded() -> None:
    economy = Economy({"a": 10.0, "b": 10.0}, Trace(None), rent=0.0, brigade_share=0.5)
    economy.settle(economy.propose("a", "b", "old help", 2.0, deadline=1), 1, delivered=True)
    economy.start_task()
    economy.reward(10.0, ["a"])
    assert economy.balances == pytest.approx({"a": 18.0, "b": 12.0}) and economy.conserved()


def test_a_contract_with_a_later_deadline_waits_for_a_busy_provider() -> None:
    hire_b = json.dumps({"hire": True, "provider": "b", "service": "check", "price": 1.0, "rounds": 2})
    no_hire = json.dumps({"hire": False})
    valid = json.dumps({"reason": "fine", "valid": True})
    model, _, trace = scripted(by_agent({
        "a": [said("1"), hire_b, said("1"), no_hire, said("1"), json.dumps({"reasoning": "r", "choice": "A"})],
        "c": [said("1"), hire_b, said("1"), no_hire, said("1"), json.dumps({"reasoning": "r", "choice": "A"})],
        "b": [said("1"), no_hire, said("1"), said("1"), no_hire, said("1"), said("1"),
              json.dumps({"reasoning": "r", "choice": "A"})],
        "arbiter": [valid]}))
    members = [Member(name, model, f"r{name}") for name in ("a", "b", "c")]
    society = economy_of_minds(members, Member("arbiter", model, "rz"), rounds=2, start=10.0, rent=0.5,
                               spawn_above=100.0)
    society.run_sync("1?")
    delivered = [(e.client, e.deadline) for e in trace.of_kind("econ_contract") if e.status == "delivered"]
    assert delivered == [("a", 2), ("c", 2)]  # b served one client a round, the other in the next
    assert society.economy is not None and society.economy.conserved()


def environment_net(trace: Trace) -> float:
    """Money in from the environment (rewards) less money out to it (rent), as the trace shows the payments."""
    payments = trace.of_kind("econ_payment")
    return (sum(p.amount for p in payments if p.payer == "environment")
            - sum(p.amount for p in payments if p.payee == "environment"))


def test_scripted_economies_conserve_money_through_hiring_spawning_departures_and_rewards() -> None:
    seen: Counter[str] = Counter()
    for seed in range(25):
        rng = random.Random(seed)
        names = [f"m{i}" for i in range(rng.randint(2, 4))]

        def reply(request: Request, rng: random.Random = rng, names: list[str] = names) -> str:
            schema = request.json_schema or {}
            fields = schema.get("properties", {})
            if "hire" in fields:
                return json.dumps({"hire": rng.random() < 0.7, "provider": rng.choice([*names, "nobody", "m1.1"]),
                                   "service": "check", "price": round(rng.uniform(0, 12), 2),
                                   "rounds": rng.randint(1, 3)})
            if "valid" in fields:
                return json.dumps({"reason": "judged", "valid": rng.random() < 0.8})
            if "choice" in fields:
                return json.dumps({"reasoning": "r", "choice": rng.choice(fields["choice"]["enum"])})
            return json.dumps({"reasoning": "r", "answer": str(rng.randint(1, 3))})

        model, _, trace = scripted(reply)
        society = economy_of_minds([Member(n, model, "r") for n in names], Member("arbiter", model, "rz"),
                                   rounds=3, start=rng.uniform(2, 12), rent=rng.uniform(0.5, 3),
                                   spawn_above=rng.uniform(6, 15))
        start = society.economy.total if society.economy is not None else 0.0
        for _ in range(4):  # the ledger carries over from task to task
            society.run_sync("1 + 1?", reward=lambda answer: 6.0 if answer == "2" else 0.0)
            assert society.economy is not None and society.economy.conserved(), seed
            assert society.economy.total == pytest.approx(start + environment_net(trace), abs=1e-6), seed
        seen.update(e.kind if e.kind != "econ_contract" else e.status for e in trace.events)
    # the random runs did go through every way money moves
    assert all(seen[kind] >= 5 for kind in ("delivered", "rejected", "econ_spawn", "econ_departure"))


def test_a_contract_the_arbiter_refuses_moves_no_money() -> None:
    hire = json.dumps({"hire": True, "provider": "b", "service": "write my answer for me", "price": 3.0})
    no_hire = json.dumps({"hire": False})
    model, _, trace = scripted(by_agent({
        "a": [said("12"), hire, said("12")], "b": [said("12"), no_hire, said("12")],
        "arbiter": [json.dumps({"reason": "that is not a service, it is the task", "valid": False})]}))
    society = economy_of_minds([Member("a", model, "ra"), Member("b", model, "rb")], Member("arbiter", model, "rz"),
                               rounds=1, start=10.0, rent=1.0, spawn_above=100.0)
    society.run_sync("5 + 7?")
    assert [e.status for e in trace.of_kind("econ_contract")] == ["proposed", "rejected"]
    assert "arbiter refused" in trace.of_kind("econ_contract")[-1].note
    assert not [p for p in trace.of_kind("econ_payment") if p.reason != "rent"]
    assert society.economy is not None and society.economy.balances == pytest.approx({"a": 9.0, "b": 9.0})


def test_an_economy_whose_budget_runs_out_still_pays_the_reward_for_its_answer() -> None:
    from dataclasses import replace

    from noosphere.llm import Budget

    model, backend, trace = scripted(by_agent({"a": [said("12")], "b": [said("12")]}))
    society = economy_of_minds([Member("a", model, "ra"), Member("b", model, "rb")], Member("arbiter", model, "rz"),
                               rounds=2, start=10.0, rent=1.0, spawn_above=100.0)
    society = replace(society, budget=Budget(max_calls=2))  # the two answers, then no market at all
    result = society.run_sync("5 + 7?", reward=lambda answer: 8.0 if answer == "12" else 0.0)
    assert (result.answer, result.decided_by, len(backend.history)) == ("12", "budget", 2)
    assert trace.of_kind("soc_budget_spent")[0].phase == "market"
    ledger = society.economy
    assert ledger is not None and ledger.rewards_in == 8.0 and ledger.conserved()
    assert ledger.balances == pytest.approx({"a": 13.0, "b": 13.0})  # 10, one round's rent, half the reward


def test_a_saved_ledger_brings_back_who_left_and_variants_of_variants() -> None:
    model, _, _ = scripted(by_agent({}))
    economy = Economy({"a": 40.0, "b": 0.5}, Trace(None), rent=1.0)
    economy.spawn("a", "a.1", 39.5)  # a keeps 0.5, so it leaves at the rent below, as b does
    economy.spawn("a.1", "a.1.1", 10.0)
    assert economy.charge_rent(1) == ["a", "b"]
    economy.reward(5.0, ["a.1.1"])
    saved = json.loads(json.dumps(economy.snapshot()))  # as a benchmark row keeps it
    members = [Member("a", model, "You add.", ("question",)), Member("b", model, "You check.")]
    fresh = Economy({m.name: 10.0 for m in members}, Trace(None), rent=1.0)  # the society as its file builds it
    restore_market(members, fresh, saved)
    assert [m.name for m in members] == ["a.1", "a.1.1"]  # founders who left are gone; a's variants stay
    assert members[1].role.startswith("You add.") and "variant of a.1" in members[1].role
    assert members[1].sees == ("question",) and members[1].model is model
    assert fresh.snapshot() == economy.snapshot() and fresh.conserved() and fresh.free_name("a") == "a.2"
    with pytest.raises(UsageError, match="'zed'"):
        restore_market([Member("a", model, "r")], fresh, {**saved, "balances": {"zed": 1.0}})


def test_a_task_whose_market_never_ran_passes_no_reward_along_the_last_tasks_contracts() -> None:
    from dataclasses import replace

    from noosphere.llm import Budget

    hire = json.dumps({"hire": True, "provider": "b", "service": "check", "price": 3.0})
    model, _, trace = scripted(by_agent({
        "a": [said("12"), hire, said("12"), said("12")], "b": [said("13"), json.dumps({"hire": False}), said("12")],
        "arbiter": [json.dumps({"reason": "ok", "valid": True})]}))
    society = economy_of_minds([Member("a", model, "ra"), Member("b", model, "rb")], Member("arbiter", model, "rz"),
                               rounds=1, start=10.0, rent=0.0, spawn_above=100.0)
    society.run_sync("5 + 7?")
    assert [e.reason for e in trace.of_kind("econ_payment")] == ["contract 1"]  # a bought b's service in task 1
    second = len(trace.events)
    replace(society, budget=Budget(max_calls=1)).run_sync("5 + 7?", reward=lambda answer: 8.0)  # no market
    paid = [(e.payer, e.payee, e.reason) for e in trace.events[second:] if e.kind == "econ_payment"]
    assert paid == [("environment", "a", "reward")]
