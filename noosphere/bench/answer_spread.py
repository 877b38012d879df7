"""How a decision compares with the answers it chose among: the members' standing answers to a problem
(a society) or the samples (best-of-N).

A society's accuracy alone does not say where it lost: its members may rarely have had the right
number, or had it and been overruled. Over the rows that record their answers (`standing`: member ->
number; `answers`: every answer each member gave, where a debate's vote counted them all; `votes`: number ->
count, with `failed` and `no_number` samples) this gives the accuracy of
one answer on its own (an answer without a number is a wrong one), how often the right number was
among the answers (what a perfect judge could reach), how often it was the strict plurality (what
counting alone would reach), and how often the decision went against a right plurality or was right
without one. A monarchy's leader may also pick the organizer's summary answer, which is not counted
among the members' answers. Where the members voted (`ballots`: voter -> its first choice), it also
counts how many ballots went to the voter's own standing answer: a vote adds nothing over counting the
standing answers unless voters leave their own answer for a better one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any


def answers_of(row: dict[str, Any]) -> Counter[str | None] | None:
    """The answers a row's decision chose among, counted; None when the row does not record them."""
    if isinstance(row.get("answers"), list):  # a vote over every answer given (`vote: every`), not only the last
        return Counter(answer.get("number") for answer in row["answers"])
    if isinstance(row.get("standing"), dict):
        return Counter(row["standing"].values())
    if isinstance(row.get("votes"), dict):  # rows from before `no_number` was recorded count only failures
        answers: Counter[str | None] = Counter({number: int(count) for number, count in row["votes"].items()})
        answers[None] += int(row.get("failed", 0)) + int(row.get("no_number", 0))
        return answers
    return None


def plurality_of(answers: Counter[str | None]) -> str | None:
    """The number more answers gave than any other (None on a tie at the top or with no numbers)."""
    ranked = [(number, count) for number, count in answers.most_common() if number is not None]
    if not ranked or (len(ranked) > 1 and ranked[1][1] == ranked[0][1]):
        return None
    return ranked[0][0]


def answer_spread(rows: Iterable[dict[str, Any]]) -> dict[str, float | int]:
    """Percentages (and two counts of rows) over the rows that record their answers (`rows_with_answers`
    of them); {} if none does."""
    counted = [(answers, row) for row in rows if (answers := answers_of(row)) is not None]
    if not counted:
        return {}
    given = sum(sum(answers.values()) for answers, _ in counted)
    right = sum(answers[row["gold"]] for answers, row in counted)
    among = sum(row["gold"] in answers for answers, row in counted)
    by_plurality = [(plurality_of(answers) == row["gold"], bool(row["correct"])) for answers, row in counted]
    n = len(counted)
    return {"answer_accuracy": round(100 * right / max(given, 1), 2),
            "gold_among_answers": round(100 * among / n, 2),
            "plurality_accuracy": round(100 * sum(p for p, _ in by_plurality) / n, 2),
            "decided_against_right_plurality": sum(p and not decided for p, decided in by_plurality),
            "right_without_plurality": sum(decided and not p for p, decided in by_plurality),
            "rows_with_answers": n, **ballot_loyalty(row for _, row in counted)}


def ballot_loyalty(rows: Iterable[dict[str, Any]]) -> dict[str, int]:
    """How many ballots were cast over the rows that record them, and how many of those were for the
    voter's own standing answer; {} when no row records ballots."""
    cast = own = 0
    for row in rows:
        for voter, choice in (row.get("ballots") or {}).items():
            cast += 1
            own += choice is not None and choice == row.get("standing", {}).get(voter)  # no number is nobody's
    return {"ballots_cast": cast, "ballots_for_own_answer": own} if cast else {}
