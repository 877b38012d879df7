"""Embodied question answering: questions made from the world's ground truth about what the robot saw, and
answers scored by exact match on their canonical form.

After an episode, up to two questions of each kind, each about something the robot saw or about something it
never saw (chosen half and half where the world allows):

- present: "Did you see a red ball?": `yes`, or `not seen` (a "no" means the same);
- colour: "What colour is the key?" (a kind the world holds once): its colour, or `not seen`;
- count: "How many boxes did you see?": the number seen, or `not seen` (so are "0" and "none");
- room: "Which room is the red ball in?" (a thing the world holds once): `room N`, the number the robot gave
  the room when it first saw it, or `not seen`.

An answer is reduced to that form (a colour word, a number, `room N`, yes, `not seen`) and compared exactly.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import cache, partial
from typing import Literal

from pydantic import BaseModel, Field, create_model

from noosphere.concurrent import Forfeit, gather_turns
from noosphere.embodied.events import QuestionAnswered
from noosphere.envs.gridworld import GridWorld, Thing
from noosphere.llm import Message, Model
from noosphere.trace import Trace

NOT_SEEN = "not seen"
COLOURS = ("red", "green", "blue", "purple", "yellow", "grey")
KINDS = ("key", "ball", "box", "door", "goal", "lava")
PLURALS = {"box": "boxes", "goal": "goal squares", "lava": "lava cells"}
NUMBERS = {"zero": 0, "none": 0, "no": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
           "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12}
FORMS: dict[str, tuple[str, tuple[str, ...]]] = {
    "present": ("Answer yes, or 'not seen' if it was never seen.", ("yes", NOT_SEEN)),
    "colour": ("Answer with its colour, or 'not seen' if it was never seen.", (*COLOURS, NOT_SEEN)),
    "count": ("Answer with the number of them that were seen, or 'not seen' if none was seen.",
              (*(str(n) for n in range(1, 21)), NOT_SEEN)),
    "room": ("Answer with its room as 'room N', or 'not seen' if it was never seen.",
             (*(f"room {n}" for n in range(1, 13)), NOT_SEEN)),
}
"""Each kind's instruction and the answers a constrained decoder may write. With one rule for every kind ("yes; a
colour; a number; 'room N'; or 'not seen'") the 1.5B model answered "yes" to 40 of 40 "how many" questions."""
RULES = "Answer from what was seen during the exploration only."
_NOT_SEEN = re.compile(r"\bnot seen\b|\bnever (saw|seen|observed)\b|\bunseen\b|\b(did|do|have|has) ?n[o']?t "
                       r"(see|seen|observe)|\bnot (observed|visible)\b|\bno sign\b")


@dataclass(frozen=True)
class Question:
    """One question about the explored world, of a kind (what the question asks about), with its gold answer."""

    id: str
    kind: str
    text: str
    gold: str


def thing_name(kind: str, colour: str = "") -> str:
    noun = "goal square" if kind == "goal" else "lava cell" if kind == "lava" else kind
    return f"{colour} {noun}".strip()


def _balanced(rng: random.Random, seen: list, unseen: list, n: int = 2) -> list:
    """Up to `n` candidates, one seen and one unseen where both exist."""
    seen, unseen = seen[:], unseen[:]
    rng.shuffle(seen)
    rng.shuffle(unseen)
    picked = [group.pop() for group in (seen, unseen) if group]
    rest = seen + unseen
    rng.shuffle(rest)
    return (picked + rest)[:n]


def make_questions(world: GridWorld, rng: random.Random) -> list[Question]:
    """The episode's questions, from the world's objects and the cells the robot saw (after the episode)."""
    things = world.things
    saw = [t for t in things if t.cell in world.seen]
    seen_names = {(t.kind, t.colour) for t in saw}
    in_world = {(t.kind, t.colour) for t in things}
    questions: list[Question] = []

    def add(kind: str, text: str, gold: str) -> None:
        if kind in FORMS and gold not in FORMS[kind][1]:
            return  # no answer the decoder may write could be right (34 lava cells seen in LavaCrossingS11N5)
        questions.append(Question(f"{kind}-{sum(q.kind == kind for q in questions) + 1}", kind, text, gold))

    absent = [(kind, colour) for kind in ("key", "ball", "box", "door") for colour in COLOURS
              if (kind, colour) not in in_world]
    unseen = sorted(in_world - seen_names) or absent
    for kind, colour in _balanced(rng, sorted(seen_names), unseen):
        add("present", f"Did you see a {thing_name(kind, colour)}?",
            "yes" if (kind, colour) in seen_names else NOT_SEEN)
    alone = [kind for kind, n in Counter(t.kind for t in things).items() if n == 1]
    alone_seen = [k for k in alone if any(t.kind == k for t in saw)]
    for kind in _balanced(rng, sorted(alone_seen), sorted(set(alone) - set(alone_seen))):
        thing = next(t for t in things if t.kind == kind)
        add("colour", f"What colour is the {thing_name(kind)}?", thing.colour if thing in saw else NOT_SEEN)
    kinds = sorted({t.kind for t in things})
    counts = Counter(t.kind for t in saw)
    for kind in _balanced(rng, [k for k in kinds if counts[k]], [k for k in kinds if not counts[k]]):
        plural = PLURALS.get(kind, f"{kind}s")
        add("count", f"How many {plural} did you see?", str(counts[kind]) if counts[kind] else NOT_SEEN)
    placed = Counter((t.kind, t.colour) for t in things if t.room is not None)
    unique = [t for t in things if t.room is not None and placed[t.kind, t.colour] == 1]
    for thing in _balanced(rng, [t for t in unique if t in saw], [t for t in unique if t not in saw]):
        room = world.thing_room(thing)
        add("room", f"Which room is the {thing_name(thing.kind, thing.colour)} in?",
            f"room {room}" if thing in saw and room is not None else NOT_SEEN)
    return questions


def canonical(kind: str, answer: str) -> str:
    """The answer in the form gold answers have: `not seen`, yes, a colour, a number, `room N` (or the text itself,
    lowered, when it holds none of them)."""
    text = " ".join(answer.lower().replace("gray", "grey").split())
    if _NOT_SEEN.search(text):
        return NOT_SEEN
    words = re.findall(r"[a-z]+|\d+", text)
    if kind == "present":
        return "yes" if words[:1] == ["yes"] else NOT_SEEN if words[:1] == ["no"] else text
    if kind == "colour":
        return next((w for w in words if w in COLOURS), text)
    if kind == "count":
        number = next((int(w) if w.isdigit() else NUMBERS[w] for w in words if w.isdigit() or w in NUMBERS), None)
        return text if number is None else NOT_SEEN if number == 0 else str(number)
    if kind == "room":
        found = re.search(r"\broom\s*(\d+)\b", text) or re.fullmatch(r"(\d+)", text.strip(". "))
        return f"room {found.group(1)}" if found else text
    return text


class Reply(BaseModel):
    answer: str = Field(min_length=1, max_length=80, description="a word or two: yes, a colour, a number, "
                                                                 "'room N' or 'not seen'")


@cache
def reply_form(kind: str) -> type[BaseModel]:
    """The reply of one kind of question: its answer one of the kind's forms (a kind without forms: `Reply`)."""
    if kind not in FORMS:
        return Reply
    forms = FORMS[kind][1]
    return create_model(f"{kind.capitalize()}Reply", answer=(Literal[forms], Field(description=FORMS[kind][0])))


Answer = Callable[[Question], Awaitable[str]]
"""One answerer: a question in, its answer out."""


def seen_text(world: GridWorld) -> str:
    """Everything the robot saw, as text: the rooms it saw and each object it saw, with its room."""
    rooms = sorted({n for cell in world.seen if (n := world.room_number(cell)) is not None})
    lines = [f"Rooms seen: {', '.join(f'room {n}' for n in rooms) or 'none'}.", "Objects seen:"]
    for thing in world.things:
        if thing.cell in world.seen:
            lines.append(f"- a {_described(thing, world)}"
                         + (f" in room {room}" if (room := world.thing_room(thing)) else ""))
    if len(lines) == 2:
        lines.append("- none")
    return "\n".join(lines)


def _described(thing: Thing, world: GridWorld) -> str:
    """A thing as seen last: a door the robot opened is open, not as the world was laid out."""
    if thing.kind != "door":
        return thing_name(thing.kind, thing.colour)
    state = world.content(thing.cell).removeprefix("door-")
    return f"{state if state in ('open', 'closed', 'locked') else thing.state} {thing.colour} door"


def memory_answerer(model: Model, agent: str, role: str, memory: Callable[[], str], opening: str) -> Answer:
    """An answerer that reads a text (a log, the record of what was seen) and answers in one call."""

    async def answer(question: Question) -> str:
        rule = FORMS[question.kind][0] if question.kind in FORMS else ""
        completion = await model.complete([Message.system(role), Message.user(
            f"{opening}\n{memory()}\n\nQuestion: {question.text}\n{RULES} {rule}".rstrip())],
            output=reply_form(question.kind), agent=agent)
        assert completion.output is not None
        return str(completion.output.answer)  # type: ignore[attr-defined]

    return answer


@dataclass(frozen=True)
class Graded:
    question: Question
    answerer: str
    answer: str
    canonical: str
    correct: bool


async def ask_all(answerers: dict[str, Answer], questions: list[Question], trace: Trace) -> list[Graded]:
    """Every answerer answers every question (one call each; a failed call answers nothing and is wrong)."""
    graded: list[Graded] = []
    for name, answer in answerers.items():
        replies = await gather_turns(partial(answer, q) for q in questions)
        for question, reply in zip(questions, replies, strict=True):
            said = "" if isinstance(reply, Forfeit) else reply
            form = canonical(question.kind, said) if said else ""
            graded.append(Graded(question, name, said, form, form == question.gold))
            trace.emit(QuestionAnswered(question_id=question.id, question_kind=question.kind, question=question.text,
                                        gold=question.gold, answerer=name, answer=said, canonical=form,
                                        correct=form == question.gold))
    return graded
