"""GSM8K: grade-school word problems, scored by exact match on the final number.

Three systems on the same model: `base` (one call that reasons, then answers), `best-of-n` (N
samples at a temperature, the most frequent final number wins; N is the society's call count, as
the NLSOM paper compared a society with best-of-N at equal cost) and `society` (a declared society
whose options are compared by their number, so "12", "12.0" and "$12" are one option).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from noosphere.bench.data import shared_data
from noosphere.bench.runner import Scored
from noosphere.concurrent import Forfeit, attempt, gather_turns
from noosphere.datafiles import read_json_lines
from noosphere.errors import CapabilityError
from noosphere.llm import Completion, Message, Model
from noosphere.society import MembersVote, Society, Statement, prompts
from noosphere.society.programs import ProgramFailed, with_repairs
from noosphere.society.spec import SocietySpec
from noosphere.tools.sandbox import Sandbox

SOLVER_ROLE = ("You solve grade-school maths word problems. In the reasoning, compute step by step: write each "
               "calculation with its numbers and its result (like 3 * 60 = 180). Then give only the final number "
               "as the answer.")
PROGRAM_ROLE = ("You solve grade-school maths word problems by writing a short Python program. Give each quantity in "
                "the problem a named variable, compute the answer step by step, and end with print() of the final "
                "number only.")
"""A best-of-N sample's role with `form="program"` (the programmer's of `examples/societies/debate-programmer.toml`)."""
SAMPLE_TEMPERATURE = 0.7
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?|-?\.\d+")


@dataclass(frozen=True)
class GsmItem:
    id: str
    question: str
    gold: str


def normalise_number(text: str) -> str | None:
    """The last number in `text`, without thousands separators or a needless decimal part ("1,200.00" -> "1200")."""
    matches = _NUMBER.findall(text.replace("$", ""))
    if not matches:
        return None
    raw = matches[-1].replace(",", "")
    try:
        value = float(raw)
    except ValueError:
        return None
    return str(int(value)) if value.is_integer() else f"{value:g}"


def answer_key(answer: str) -> str:
    """Society options are the same when their numbers are; answers without a number stay as written."""
    return normalise_number(answer) or answer.strip().lower()


class GsmRow(BaseModel):
    """One line of GSM8K's JSONL: the problem, and the worked answer that ends in `#### <number>`."""

    model_config = ConfigDict(strict=True, frozen=True)
    question: str = Field(min_length=1)
    answer: str

    @field_validator("answer")
    @classmethod
    def _ends_in_a_number(cls, answer: str) -> str:
        if "####" not in answer or normalise_number(answer.rsplit("####", 1)[-1]) is None:
            raise ValueError("the answer must end in '#### <number>'")
        return answer


EXPECTED = 'one JSON object a line: {"question": "...", "answer": "... #### <number>"}'


def load_gsm8k(path: Path | None = None, *, limit: int | None = None) -> list[GsmItem]:
    """Problems in file order (the dev file is already a fixed sample); any file in the original format works.
    The whole file is validated first: a bad line is a `DataError` naming it."""
    source = shared_data("gsm8k", "test_dev.jsonl", path)
    rows = read_json_lines(source, GsmRow, expected=EXPECTED)
    items = []
    for line, row, _ in rows:  # an item's id is its line's index, as in every run so far
        gold = normalise_number(row.answer.rsplit("####", 1)[-1])
        assert gold is not None  # checked by GsmRow
        items.append(GsmItem(f"gsm8k-{line - 1:04d}", row.question, gold))
    return items[:limit] if limit else items


def _scored(item: GsmItem, answer: str | None, confidence: float | None = None, **detail: object) -> Scored:
    prediction = normalise_number(answer) if answer else None
    return Scored(prediction, prediction == item.gold, {"answer": (answer or "")[:300], **detail}, confidence)


async def solve_base(model: Model, item: GsmItem) -> Scored:
    completion = await model.complete([Message.system(SOLVER_ROLE), Message.user(item.question)], output=Statement,
                                      agent="base")
    assert completion.output is not None
    return _scored(item, completion.output.answer)


CORRECT_QUESTION = "Is the final answer above correct? Answer Yes or No."


Weights = Literal["none", "p-true", "sequence"]
WEIGHTS: tuple[Weights, ...] = ("none", "p-true", "sequence")
Form = Literal["statement", "program"]
FORMS: tuple[Form, ...] = ("statement", "program")


def check_weights(model: Model, weights: str) -> None:
    """Refuse weights the model cannot give before any problem: both kinds come from token probabilities."""
    if weights != "none" and not model.capabilities.logprobs:
        raise CapabilityError(model.id, f"logprobs (best-of-N weighted by {weights} reads token probabilities)")


async def solve_best_of_n(model: Model, n: int, item: GsmItem, *, weights: Weights = "none",
                          form: Form = "statement", sandbox: Sandbox | None = None, repairs: int = 0) -> Scored:
    """N seeded samples in parallel; the most frequent number wins (ties: the one seen first).

    Weighted votes (confidence-informed self-consistency, CISC) count each sample's confidence instead of 1:
    - `p-true`: P(True), the model's probability of "Yes" to "is the final answer correct?" asked after that
      sample, so a number the model believes in outweighs one it doubts. That costs one scoring call a sample
      (the sample's own conversation is still in the engine's cache: only the question is evaluated).
    - `sequence`: the sample's own probability, length-normalised (`Completion.token_probability`, the geometric
      mean of its tokens' probabilities), read while it was generated: no call more than the plain vote's, so
      the plain and the weighted vote of the same samples are a comparison at equal calls.
    The row keeps every sample's number and weight, and the plain vote, so any vote can be recounted.

    `form="program"`: each sample is a Python program (program-aided samples), run in `sandbox` as a society's
    programmer's is (`noosphere.society.programs`); its answer is the last line it printed, and a program that fails
    is a failed sample, unless `repairs` lets it see its failure and write again (one call each; the weight is then
    the reply's that ran, and the row counts each sample's repairs).
    """
    program = form == "program"
    messages = ([Message.system(PROGRAM_ROLE), Message.user(prompts.PROGRAM_FORM.format(prompt=item.question))]
                if program else [Message.system(SOLVER_ROLE), Message.user(item.question)])

    repaired = [0] * n

    async def sample(index: int) -> tuple[str | None, float | None]:
        settings = model.settings.with_(temperature=SAMPLE_TEMPERATURE, seed=model.settings.seed + index)
        conversation = list(messages)

        async def write(failure: ProgramFailed | None) -> tuple[str, Completion]:
            if failure is not None:  # its failed reply is already in the conversation
                repaired[index] += 1
                conversation.append(Message.user(prompts.PROGRAM_REPAIR.format(reason=failure)))
            written = await model.complete(conversation, settings=settings, agent=f"sample-{index}",
                                           logprobs=weights == "sequence")
            conversation.append(Message.assistant(written.text))
            return written.text, written

        if program:
            _, printed, completion, _ = await with_repairs(write, sandbox or Sandbox(), repairs)
            number = normalise_number(printed)
        else:
            completion = await model.complete(messages, output=Statement, settings=settings, agent=f"sample-{index}",
                                              logprobs=weights == "sequence")
            number = normalise_number(completion.output.answer) if completion.output else None
            conversation.append(Message.assistant(completion.text))
        if weights == "sequence":
            return number, completion.token_probability
        if weights == "none" or number is None:
            return number, None
        judged = await attempt(model.p_true([*conversation, Message.user(CORRECT_QUESTION)], agent=f"judge-{index}"))
        return number, None if isinstance(judged, Forfeit) else judged  # unjudged, the number still counts

    # a sample that fails at run time costs only itself; a spent budget, a usage error or a bug stops the run
    results = await gather_turns(partial(sample, i) for i in range(n))
    drawn = [r if isinstance(r, tuple) else (None, None) for r in results]
    numbers = [number for number, _ in drawn if number is not None]
    votes = Counter(numbers)
    plain = majority(votes, numbers)
    failed = sum(1 for r in results if isinstance(r, Forfeit))
    detail: dict[str, object] = {"votes": dict(votes), "failed": failed,
                                 "no_number": sum(1 for r in results if isinstance(r, tuple) and r[0] is None)}
    if repairs:
        detail["repairs"] = repaired
    if weights == "none":
        # its confidence: the share of the N samples that gave the winning number (self-consistency)
        return _scored(item, plain, votes[plain] / n if plain is not None else None, **detail)
    weight = weighted_votes(drawn)
    best = majority(weight, numbers)
    total = sum(weight.values())
    field = "p_true" if weights == "p-true" else "token_probability"
    detail |= {"unweighed": sum(1 for number, p in drawn if number is not None and p is None)}  # a failed judge
    detail |= {"plain": plain, "weights": {k: round(v, 4) for k, v in weight.items()},
               "samples": [{"number": number, field: round(p, 6) if p is not None else None}
                           for number, p in drawn]}
    # its confidence: the share of the weight behind the winning number
    return _scored(item, best, weight[best] / total if best is not None and total > 0 else None, **detail)


def majority(votes: Mapping[str, float], order: list[str]) -> str | None:
    """The number with the most votes (or weight); ties go to the one seen first."""
    return max(votes, key=lambda number: (votes[number], -order.index(number))) if votes else None


def weighted_votes(samples: list[tuple[str | None, float | None]]) -> dict[str, float]:
    """Each number's total P(True) over the samples that gave it (a sample without a score weighs 0)."""
    weights: dict[str, float] = {}
    for number, p in samples:
        if number is not None:
            weights[number] = weights.get(number, 0.0) + (p or 0.0)
    return weights


REWARD = 20.0
"""What an economy of minds earns for a right answer (paid to the members who gave it)."""


async def solve_society(society: Society, item: GsmItem) -> Scored:
    def reward(answer: str) -> float:
        return REWARD if normalise_number(answer) == item.gold else 0.0

    result = await society.run(item.question, answer_key=answer_key, reward=reward)
    present = {m.name for m in society.members}  # an economy's bankrupt members left: their answers count no more
    standing = {r.member: normalise_number(r.answer) for r in result.records if r.member in present}
    # each member's last number, the answers the decision chose among (see `answer_spread`)
    detail: dict[str, object] = {"decided_by": result.decided_by, "standing": standing}
    likely = {r.member: r.probability for r in result.records if r.member in present}
    if any(p is not None for p in likely.values()):  # a vote by sequence probability: what each answer weighed
        detail["standing_probability"] = likely
    if _counts_every_answer(society):  # each answer any member gave, with its reply's probability: the vote's samples
        detail["answers"] = [{"member": r.member, "round": r.round, "number": normalise_number(r.answer),
                              "token_probability": round(r.probability, 6) if r.probability is not None else None}
                             for r in result.records if r.member in present and r.answer.strip()]
    if result.ballots:  # each voter's first choice: with `standing`, whether it voted for its own answer
        detail["ballots"] = {b.voter: normalise_number(b.ranking[0]) if b.ranking else None for b in result.ballots}
    if society.economy is not None:  # the ledger lives across problems: record how it stands after each
        detail["balances"] = {name: round(v, 2) for name, v in society.economy.balances.items()}
        detail["ledger"] = society.economy.snapshot()  # exact, so that a resumed run goes on from here
    return _scored(item, result.answer, result.support, **detail)  # confidence: the share of the society behind it


def _counts_every_answer(society: Society) -> bool:
    return any(isinstance(phase, MembersVote) and phase.every_answer for phase in society.phases)


async def solve_in_new_society(build: Callable[[], Society], item: GsmItem) -> Scored:
    """A fresh society for this problem alone, so that problems can be solved at the same time."""
    return await solve_society(build(), item)


def planned_calls(spec: SocietySpec) -> int:
    """Model calls one problem costs this society at most, when nobody retries and the members disagree:
    the N of a best-of-N baseline planned before the society has run (`--match-run` measures it instead).
    A member that is a society costs a whole run of that society each time it speaks; a society's
    budget of calls caps it."""
    unbounded = _planned_calls(spec)
    cap = spec.budget.max_calls if spec.budget is not None else None
    return min(unbounded, cap) if cap is not None else unbounded


def _planned_calls(spec: SocietySpec) -> int:
    rounds = spec.rounds
    if spec.organisation == "roleplay":  # every message of the conversation, the specified task first
        return spec.max_messages + (spec.specifier is not None)
    if spec.organisation == "artist-critic":  # each artist a one-answerer monarchy; every critic votes; a collector
        return len(spec.styles) * (3 + 2 * rounds) + len(spec.professions) + 1
    every_member = sum(planned_calls(m.society) if m.society is not None else 1 for m in spec.members)  # one turn each
    ballots = every_member if spec.vote == "ballot" else 0  # counted standing answers cost no call
    if spec.organisation == "economy":
        # a decision, a verdict, a service and an answer a round from each founder; variants spawned since add
        # theirs, so this is no bound for an economy that has grown: `--match-run` measures the fair N instead
        return every_member + rounds * 4 * every_member + ballots
    if spec.organisation == "debate":
        return every_member + rounds * every_member + (1 if spec.editor is not None else ballots)
    calls = every_member + rounds * (1 + every_member) + 1  # mission, rounds of question and answers, summary
    rights = set(spec.rights) if spec.organisation == "democracy" else set()
    calls += every_member if "change" in rights else 0
    calls += ballots if "execute" in rights else 1
    return calls
