"""MUStARD, text part: is the utterance sarcastic? Base model against the global workspace.

The base system is one call of the model that sees the utterance, its dialogue context and the
speaker. The workspace splits the same information into partial views, one sensory processor each
(the utterance alone; the preceding dialogue with the utterance; the speaker, what they are like,
with the utterance), and its STM picks the label. Both answer the same query with the same labels.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, TypeAdapter, model_validator

from noosphere.bench.data import shared_data
from noosphere.bench.runner import Scored
from noosphere.datafiles import read_json
from noosphere.errors import DataError
from noosphere.llm import Message, Model
from noosphere.observation import Observation
from noosphere.workspace import WorkspaceSettings
from noosphere.workspace.classify import classify
from noosphere.workspace.scores import ScoreSource

LABELS = ("sarcastic", "not sarcastic")
SHOWS = {"BBT": "The Big Bang Theory", "FRIENDS": "Friends", "GOLDENGIRLS": "The Golden Girls",
         "SARCASMOHOLICS": "Sarcasmaholics Anonymous"}
TASK = (
    "Is the speaker being sarcastic in the final utterance? Sarcasm means saying something whose intended "
    "meaning differs from, often the opposite of, its literal meaning, usually to mock, criticise or joke "
    "(for example praising something bad)."
)
# The same task for both systems; only the answer format differs: the base model fills a label field,
# processors explain their evidence (the STM then picks the label from the winning explanation).
QUERY = f"{TASK} Answer 'sarcastic' or 'not sarcastic'."
LABEL_QUERY = f"{TASK} Answer with one label: sarcastic or not sarcastic."
WORKSPACE_QUERY = f"{TASK} Say what in your input points to sarcasm or against it, then give your verdict."


@dataclass(frozen=True)
class MustardItem:
    id: str
    utterance: str
    speaker: str
    context: tuple[tuple[str, str], ...]
    show: str
    sarcastic: bool

    @property
    def gold(self) -> str:
        return LABELS[0] if self.sarcastic else LABELS[1]

    def dialogue(self) -> str:
        return "\n".join(f"{speaker}: {line}" for speaker, line in self.context) or "(no earlier lines)"

    def speaker_card(self) -> str:
        show = SHOWS.get(self.show.upper(), self.show or "a TV sitcom")
        return f"The speaker is {self.speaker.title()}, a character of the TV series {show}."


class MustardRow(BaseModel):
    """One entry of MUStARD's JSON, as the original file and our dev sample write it."""

    model_config = ConfigDict(strict=True, frozen=True)
    utterance: str = Field(min_length=1)
    speaker: str = Field(min_length=1)
    context: list[str] = []
    context_speakers: list[str] = []
    show: str = ""
    sarcasm: bool

    @model_validator(mode="after")
    def _lines_have_speakers(self) -> MustardRow:
        if len(self.context) != len(self.context_speakers):
            raise ValueError(f"'context' has {len(self.context)} lines but 'context_speakers' has "
                             f"{len(self.context_speakers)}")
        return self


MUSTARD_FILE = TypeAdapter(dict[Annotated[str, StringConstraints(min_length=1)], MustardRow])
"""Item ids are the keys: an empty one could not be told apart on resume (a result row needs an id)."""
EXPECTED = ("a JSON object mapping each item id to {utterance, speaker, sarcasm: true|false, "
            "context: [lines], context_speakers: [names], show}")


def load_mustard(path: Path | None = None, *, limit: int | None = None, sample_seed: int = 0) -> list[MustardItem]:
    """Load MUStARD's JSON (the dev part or the full original file), validated whole (`DataError` names what
    is wrong and where); a seeded shuffle, then the first `limit`."""
    source = shared_data("mustard", "sarcasm_dev.json", path)
    raw = read_json(source, MUSTARD_FILE, expected=EXPECTED)
    if not raw:
        raise DataError(f"holds no items; expected {EXPECTED}", source=str(source))
    items = [MustardItem(key, entry.utterance, entry.speaker,
                         tuple(zip(entry.context_speakers, entry.context, strict=True)), entry.show, entry.sarcasm)
             for key, entry in sorted(raw.items())]
    random.Random(sample_seed).shuffle(items)
    return items[:limit] if limit else items


class BaseVerdict(BaseModel):
    reason: str = Field(max_length=400, description="one or two sentences of reasoning")
    label: Literal["sarcastic", "not sarcastic"]
    confidence: float = Field(ge=0.0, le=1.0)


async def solve_base(model: Model, item: MustardItem, *, scores: ScoreSource = "verbal") -> Scored:
    """The model alone. `verbal`: it writes a reason, its label and its confidence. `logprob` / `samples`:
    it writes nothing; each label is scored as its reply and the most probable one is the answer, its
    probability the confidence."""
    prompt = (f"{item.speaker_card()}\n\nDialogue so far:\n{item.dialogue()}\n\n"
              f"Final utterance, by {item.speaker}: \"{item.utterance}\"\n\n")
    system = Message.system("You are an expert in pragmatics and humour.")
    if scores != "verbal":
        scored = await model.score_options([system, Message.user(prompt + LABEL_QUERY)], LABELS, agent="base",
                                           method="samples" if scores == "samples" else "logprob")
        return Scored(scored.best, scored.best == item.gold, {"probs": scored.as_dict()},
                      confidence=scored.prob(scored.best))
    completion = await model.complete([system, Message.user(prompt + QUERY)], output=BaseVerdict, agent="base")
    verdict = completion.output
    assert verdict is not None
    return Scored(verdict.label, verdict.label == item.gold, {"answer": verdict.reason},
                  confidence=verdict.confidence)


# As in CTM-AI, where every processor perceives the same utterance through another modality, every
# view holds the utterance; each adds one aspect the others lack (the dialogue, who is speaking).
ROLES = {
    "utterance": "You read only the final utterance, word for word, without any context.",
    "dialogue": "You read the dialogue that leads up to the final utterance, but you do not know the speakers' "
                "characters.",
    "speaker": "You know who speaks and what they said, but not the dialogue before; draw on what you know of this "
               "character's habits and humour.",
}


def mustard_observation(item: MustardItem) -> Observation:
    final = f'Final utterance: "{item.utterance}"'
    return Observation.of({"utterance": f'"{item.utterance}"',
                           "dialogue": f"{item.dialogue()}\n{final}",
                           "speaker": f"{item.speaker_card()}\n{final}"})


async def solve_ctm(model: Model, settings: WorkspaceSettings, item: MustardItem, *, stm_samples: int = 1) -> Scored:
    result = await classify(model, WORKSPACE_QUERY, mustard_observation(item), LABELS, roles=ROLES,
                            settings=settings, stm_samples=stm_samples)
    return Scored(result.label, result.label == item.gold,
                  {"answer": result.answer, "iterations": result.iterations,
                   "stopped_by": result.stopped_by, "winners": list(result.winners)}, confidence=result.confidence)

