"""The society's prompts, byte for byte: every request its organisations send, against a recording.

`tests/fixtures/society_prompts.json` was recorded from the code before the prompts moved into
`noosphere/society/prompts.py`; benchmarks measured with those prompts are still running, so a change of
a single character (which would also miss the call cache) fails here. A prompt changed on purpose is
recorded again with `python -m tests.test_society_prompts --write`, and the change said in its commit.
"""

from __future__ import annotations

import contextlib
import json
import os
import string
import sys
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from noosphere.llm import Model, Request, ScriptedBackend
from noosphere.llm.types import ScoreRequest
from noosphere.observation import Observation
from noosphere.society import (
    Member,
    SubSociety,
    artist_critic,
    debate,
    democracy,
    economy_of_minds,
    monarchy,
    role_play,
)
from noosphere.tools.sandbox import UNSANDBOXED_ENV
from noosphere.trace import Trace

RECORDING = Path(__file__).parent / "fixtures" / "society_prompts.json"
ANSWERS = {"a": "12", "b": "13", "c": "12"}


class Responder:
    """Fills any form a society asks for, from its schema, so every phase and branch is reached; `broken`
    agents answer their first calls with what no form accepts (a forfeited turn)."""

    def __init__(self, broken: dict[str, int] | None = None) -> None:
        self.broken = dict(broken or {})
        self.calls: defaultdict[str, int] = defaultdict(int)

    def __call__(self, request: Request) -> Any:
        agent = request.agent or ""
        self.calls[agent] += 1
        if self.broken.get(agent, 0) >= self.calls[agent]:
            return "Twelve, by adding." if agent == "programmer" else "not json"  # ("not json" is Python)
        properties = (request.json_schema or {}).get("properties", {})
        answer = ANSWERS.get(agent.rsplit(".", 1)[0], "12")
        if not properties and agent == "programmer":  # a member who answers with a program
            return "```python\nprint(5 + 7)\n```"
        if not properties:  # a conversation turn (role-play)
            if agent == "specifier":
                return "Write a function f that returns 12."
            if agent == "user":
                return "Instruction: write f." if self.calls[agent] == 1 else "<TASK_DONE>"
            return "def f():\n    return 12"
        if "question" in properties:
            return {"question": f"Is step {self.calls[agent]} right?"}
        if "summary" in properties:
            return {"summary": "Most found 12.", "answer": "12"}
        if "hire" in properties:
            hired = {"a": ("b", 2), "b": ("c", 1)}.get(agent)
            return ({"hire": True, "provider": hired[0], "service": "check the sum", "price": 2.0,
                     "rounds": hired[1]} if hired else {"hire": False})
        if "valid" in properties:
            return {"reason": "a fair check", "valid": True}
        if "ranking" in properties:
            return {"reasoning": "by the working", "ranking": list(reversed(properties["ranking"]["items"]["enum"]))}
        if "choice" in properties:
            return {"reasoning": "by the working", "choice": properties["choice"]["enum"][-1]}
        working = f"{agent} adds 5 and 7" + (", then checks the sum once more" * 30 if agent == "c" else "")
        return {"reasoning": working, "answer": answer}


def _scorer(request: ScoreRequest) -> dict[str, float]:
    return {"Yes": 0.8, "No": 0.2} if "12" in request.messages[-1].content else {"Yes": 0.3, "No": 0.7}


def _model(responder: Responder, *, scores: bool = False) -> tuple[Model, ScriptedBackend]:
    backend = ScriptedBackend(responder, scorer=_scorer if scores else None)
    return Model(backend, trace=Trace(None)), backend


def _crowd(model: Model, names: tuple[str, ...] = ("a", "b", "c")) -> list[Member]:
    return [Member(name, model, f"You are member {name}.") for name in names]


def _monarchy(model: Model) -> None:
    monarchy(_crowd(model), Member("organizer", model, "You organise."), Member("leader", model, "You lead."),
             rounds=3).run_sync("What is 5 + 7?", Observation.of({"note": "count carefully"}))


def _monarchy_confidence(model: Model) -> None:
    """The leader is shown each holder's P(True) in its answer."""
    monarchy(_crowd(model), Member("organizer", model, "You organise."), Member("leader", model, "You lead."),
             rounds=1, leader_confidence=True).run_sync("What is 5 + 7?")


def _forfeits(model: Model) -> None:
    """Every mission turn forfeited: the organizer asks over an empty discussion, the member is briefed late."""
    monarchy(_crowd(model, ("a",)), Member("organizer", model, "You organise."), Member("leader", model, "You lead."),
             rounds=1).run_sync("What is 5 + 7?")


def _democracy(rule: str, *, summary: bool = False) -> Callable[[Model], None]:
    def run(model: Model) -> None:
        democracy(_crowd(model), Member("organizer", model, "You organise."), rights={"know", "execute"}, rounds=1,
                  voting_rule=rule, ballot_summary=summary).run_sync("What is 5 + 7?")
    return run


def _weighted(model: Model) -> None:
    democracy(_crowd(model), Member("organizer", model, "You organise."), rights={"know", "execute"}, rounds=1,
              vote="weighted").run_sync("What is 5 + 7?")


def _debate_split(model: Model) -> None:
    members = [Member("a", model, "You read the left.", sees=("left",)),
               Member("b", model, "You read the right.", sees=("right",))]
    debate(members, Member("editor", model, "You edit."), rounds=2).run_sync(
        "What is the sum?", Observation.of({"left": "5", "right": "7"}))


def _debate_same(model: Model) -> None:
    debate(_crowd(model), rounds=1).run_sync("What is 5 + 7?")


def _debate_programmer(model: Model, repairs: int = 0) -> None:
    """A debate with a member who answers with a program (run unconfined here, so that the recording does not
    depend on bubblewrap: the program only prints a sum)."""
    crowd = [*_crowd(model, ("a", "b")),
             Member("programmer", model, "You write programs.", answers="program", repairs=repairs)]
    with _unsandboxed():
        debate(crowd, rounds=1).run_sync("What is 5 + 7?")


def _debate_programmer_repairs(model: Model) -> None:
    _debate_programmer(model, repairs=1)


@contextlib.contextmanager
def _unsandboxed() -> Iterator[None]:
    before = os.environ.get(UNSANDBOXED_ENV)
    os.environ[UNSANDBOXED_ENV] = "1"
    try:
        yield
    finally:
        if before is None:
            del os.environ[UNSANDBOXED_ENV]
        else:
            os.environ[UNSANDBOXED_ENV] = before


def _economy(model: Model) -> None:
    society = economy_of_minds(_crowd(model), Member("arbiter", model, "You judge contracts."), rounds=2,
                               spawn_above=10.5)
    society.run_sync("What is 5 + 7?", reward=lambda answer: 5.0 if answer == "12" else 0.0)


def _economy_alone(model: Model) -> None:
    economy_of_minds(_crowd(model, ("a",)), Member("arbiter", model, "You judge contracts."), rounds=1).run_sync(
        "What is 5 + 7?")


def _roleplay(model: Model) -> None:
    role_play(Member("user", model, "You want code."), Member("assistant", model, "You write code."),
              specifier=Member("specifier", model, "You make tasks precise.")).run_sync("Write f.")


def _hierarchy(model: Model) -> None:
    """A sub-society as a member: asked the task, then the organizer's question after it, then a ballot."""
    team = monarchy(_crowd(model, ("x", "y")), Member("team-organizer", model, "You organise the team."),
                    Member("team-leader", model, "You lead the team."), rounds=1)
    democracy([*_crowd(model, ("a", "b")), SubSociety.of("team", team)], Member("organizer", model, "You organise."),
              rounds=1).run_sync("What is 5 + 7?")


def _artists(model: Model) -> None:
    artist_critic(model, ["watercolour", "ink"], ["painter", "curator"]).run_sync("A harbour at dawn")


# (name, run, agents whose first calls break, whether the model scores options)
SCENARIOS: list[tuple[str, Callable[[Model], None], dict[str, int], bool]] = [
    ("monarchy", _monarchy, {"b": 3, "organizer": 3}, False),
    ("monarchy-confidence", _monarchy_confidence, {}, True),
    ("forfeits", _forfeits, {"a": 3}, False),
    ("democracy-plurality", _democracy("plurality", summary=True), {}, False),
    ("democracy-approval", _democracy("approval"), {}, False),
    ("democracy-borda", _democracy("borda"), {}, False),
    ("democracy-weighted", _weighted, {}, True),
    ("debate-split-views", _debate_split, {"b": 3}, False),
    ("debate-same-task", _debate_same, {}, False),
    ("debate-programmer", _debate_programmer, {}, False),
    ("debate-programmer-fails", _debate_programmer, {"programmer": 1}, False),  # its first reply is no program
    ("debate-programmer-repairs", _debate_programmer_repairs, {"programmer": 1}, False),  # repaired in its turn
    ("economy", _economy, {}, False),
    ("economy-alone", _economy_alone, {}, False),
    ("roleplay", _roleplay, {}, False),
    ("hierarchy", _hierarchy, {}, False),
    ("artist-critic", _artists, {}, False),
]


def record() -> dict[str, Any]:
    """Every request of every scenario, grouped by agent in the order each agent sent them: role, text and
    the number of media parts of each message, and, for option scores, the options."""
    recorded: dict[str, Any] = {}
    for name, run, broken, scores in SCENARIOS:
        model, backend = _model(Responder(broken), scores=scores)
        run(model)
        by_agent: defaultdict[str, list[Any]] = defaultdict(list)
        for request in backend.history:
            by_agent[request.agent or ""].append([[m.role, m.content, len(m.media)] for m in request.messages])
        for scoring in backend.score_history:
            by_agent[f"{scoring.agent or ''} (scores)"].append(
                {"options": list(scoring.options), "messages": [[m.role, m.content] for m in scoring.messages]})
        recorded[name] = dict(sorted(by_agent.items()))
    return recorded


UNREACHED = {"HELD_BY_NO_ONE": "every option the leader sees is some member's answer or the summary's"}


def _texts(recorded: dict[str, Any]) -> str:
    return json.dumps(recorded, ensure_ascii=False)


def test_every_society_prompt_is_the_one_recorded() -> None:
    expected = json.loads(RECORDING.read_text(encoding="utf-8"))
    recorded = json.loads(json.dumps(record()))  # tuples to lists, as the recording holds them
    assert recorded.keys() == expected.keys()
    for scenario, agents in expected.items():
        assert recorded[scenario].keys() == agents.keys(), scenario
        for agent, requests in agents.items():
            assert len(recorded[scenario][agent]) == len(requests), (scenario, agent)
            for index, (got, want) in enumerate(zip(recorded[scenario][agent], requests, strict=True)):
                assert got == want, f"{scenario}: {agent}'s request {index + 1} changed"


def test_the_recording_reaches_every_prompt_the_society_keeps() -> None:
    """Each fixed piece of every prompt in `society/prompts.py` is in some recorded request, so the comparison
    above covers them all (a prompt no scenario reaches could change unseen)."""
    from noosphere.society import prompts

    texts = _texts(json.loads(RECORDING.read_text(encoding="utf-8")))
    constants = {name: value for name, value in vars(prompts).items() if name.isupper() and isinstance(value, str)}
    assert len(constants) >= 20
    for name, value in constants.items():
        if name in UNREACHED:
            continue
        for piece in (literal for literal, *_ in string.Formatter().parse(value) if literal.strip()):
            assert json.dumps(piece, ensure_ascii=False)[1:-1] in texts, f"{name}: {piece!r} is in no recorded prompt"


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    RECORDING.write_text(json.dumps(record(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {RECORDING}")
