"""MUStARD, text part: is the utterance sarcastic? Base model against the global workspace.

The base system is one call of the model that sees the utterance, its dialogue context and the
speaker. The workspace splits the same information into partial views, one sensory processor each
(the utterance alone; the preceding dialogue with the utterance; the speaker, what they are like,
with the utterance), and its STM picks the label. Both answer the same query with the same labels.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from noosphere.bench.data import shared_data
from noosphere.bench.runner import Scored
from noosphere.llm import Message, Model
from noosphere.observation import Observation
from noosphere.workspace import WorkspaceSettings
from noosphere.workspace.classify import classify

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


def load_mustard(path: Path | None = None, *, limit: int | None = None, sample_seed: int = 0) -> list[MustardItem]:
    """Load MUStARD's JSON (the dev part or the full original file); a seeded shuffle, then the first `limit`."""
    source = shared_data("mustard", "sarcasm_dev.json", path)
    raw: dict[str, dict[str, Any]] = json.loads(source.read_text(encoding="utf-8"))
    items = [MustardItem(key, entry["utterance"], entry["speaker"],
                         tuple(zip(entry.get("context_speakers", []), entry.get("context", []), strict=False)),
                         entry.get("show", ""), bool(entry["sarcasm"]))
             for key, entry in sorted(raw.items())]
    random.Random(sample_seed).shuffle(items)
    return items[:limit] if limit else items


class BaseVerdict(BaseModel):
    reason: str = Field(max_length=400, description="one or two sentences of reasoning")
    label: Literal["sarcastic", "not sarcastic"]
    confidence: float = Field(ge=0.0, le=1.0)


async def solve_base(model: Model, item: MustardItem) -> Scored:
    prompt = (f"{item.speaker_card()}\n\nDialogue so far:\n{item.dialogue()}\n\n"
              f"Final utterance, by {item.speaker}: \"{item.utterance}\"\n\n{QUERY}")
    completion = await model.complete([Message.system("You are an expert in pragmatics and humour."),
                                       Message.user(prompt)], output=BaseVerdict, agent="base")
    verdict = completion.output
    assert verdict is not None
    return Scored(verdict.label, verdict.label == item.gold,
                  {"confidence": verdict.confidence, "answer": verdict.reason})


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
                  {"confidence": result.confidence, "answer": result.answer, "iterations": result.iterations,
                   "stopped_by": result.stopped_by, "winners": list(result.winners)})

