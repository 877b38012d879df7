"""A member of a society: a model, a role, what part of the input it perceives, and its own history."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypeVar

from pydantic import BaseModel

from noosphere.errors import ModelError
from noosphere.llm import Message, Model
from noosphere.llm.messages import MediaPart
from noosphere.llm.scoring import OptionScores
from noosphere.observation import Observation
from noosphere.society import prompts
from noosphere.trace import Trace

OutputT = TypeVar("OutputT", bound=BaseModel)


@dataclass
class Member:
    """Mutable on purpose: the history grows as the member takes part, and only this member sees it.

    `sees` names the observation views this member perceives (None: all of them). Images and audio
    reach it only when its model can take them; otherwise the view's caption text is all it gets.
    """

    name: str
    model: Model
    role: str
    sees: tuple[str, ...] | None = None
    history: list[Message] = field(default_factory=list)
    answers: Literal["statement", "program"] = "statement"
    """How its turns give its answer to the task: a `Statement`, or a program the society runs
    (`noosphere.society.programs`)."""
    repairs: int = 0
    """A program member's second tries within a turn: its failed program shown, a corrected one asked."""
    gives_probability: bool = field(default=True, init=False)
    """Whether this member's replies carry their own probability (`ask_scored`): a society taking part as one
    member gives none."""

    def join(self, trace: Trace) -> None:
        """Start a new run: forget the last one and report into this run's trace."""
        self.history.clear()
        self.model = self.model.bind(trace=trace)

    @property
    def knows_task(self) -> bool:
        """Whether an earlier turn of this run put the task before it (its history holds that turn)."""
        return bool(self.history)

    def perception(self, observation: Observation | None) -> tuple[str, tuple[MediaPart, ...]]:
        if observation is None:
            return "", ()
        views = [v for v in observation.views if self.sees is None or v.name in self.sees]
        text = "\n\n".join(prompts.VIEW.format(name=v.name, text=v.text) for v in views if v.text)
        can = self.model.capabilities
        media = tuple(part for v in views for part in v.media
                      if (part.kind == "image" and can.vision) or (part.kind == "audio" and can.audio))
        return text, media

    async def belief(self, prompt: str) -> float:
        """P(True): this member's probability of "Yes" to a yes/no question put after its own history (the
        conversation it is in, so its cache is continued); the question does not join the history."""
        return await self.model.p_true([Message.system(self.role), *self.history, Message.user(prompt)],
                                       agent=self.name)

    async def reply(self, prompt: str) -> tuple[str, int]:
        """One free-text turn (conversations such as role-play); returns the text and the tokens it cost."""
        completion = await self.model.complete([Message.system(self.role), *self.history, Message.user(prompt)],
                                               agent=self.name)
        self.history += [Message.user(prompt), Message.assistant(completion.text)]
        return completion.text, completion.usage.total_tokens

    async def write(self, prompt: str, *, media: tuple[MediaPart, ...] = (),
                    logprobs: bool = False) -> tuple[str, float | None]:
        """One free-text turn whose reply joins the history (a program, `noosphere.society.programs`): the text, and
        with `logprobs` its probability as `ask_scored` takes it (None: not asked for, or a reply of no tokens)."""
        message = Message("user", prompt, media)
        completion = await self.model.complete([Message.system(self.role), *self.history, message], agent=self.name,
                                               logprobs=logprobs)
        self.history += [message, Message.assistant(completion.text)]
        return completion.text, completion.token_probability

    def note(self, text: str) -> None:
        """Add `text` to this member's last reply as its history keeps it: what came of the reply (what the program
        it wrote printed, or why it gave no answer), which its later turns then read as the others do."""
        last = self.history[-1]
        self.history[-1] = Message.assistant(last.content + text)

    async def ask(self, prompt: str, output: type[OutputT], *, media: tuple[MediaPart, ...] = (),
                  alone: bool = False) -> OutputT:
        """One turn: the role, this member's history, the new prompt; the reply joins the history.

        `alone`: a judgement from a prompt that briefs the member fully (an organizer's summary of the
        whole discussion); without its history, and it does not join it."""
        return (await self._turn(prompt, output, media, alone=alone, logprobs=False))[0]

    async def ask_scored(self, prompt: str, output: type[OutputT], *,
                         media: tuple[MediaPart, ...] = ()) -> tuple[OutputT, float | None]:
        """`ask`, with the probability this member's model gave its own reply: the geometric mean of the
        reply's token probabilities (`Completion.token_probability`), taken from the same call, so weighing
        an answer by it costs nothing. A model that cannot give one is refused (`CapabilityError`)."""
        output_, probability = await self._turn(prompt, output, media, alone=False, logprobs=True)
        if probability is None:  # a reply of no tokens: nothing to weigh it by, so the turn forfeits
            raise ModelError(self.model.id, f"{self.name}'s reply came without a probability to weigh it by")
        return output_, probability

    async def _turn(self, prompt: str, output: type[OutputT], media: tuple[MediaPart, ...], *, alone: bool,
                    logprobs: bool) -> tuple[OutputT, float | None]:
        message = Message("user", prompt, media)
        history = [] if alone else self.history
        completion = await self.model.complete([Message.system(self.role), *history, message], output=output,
                                               agent=self.name, logprobs=logprobs)
        assert completion.output is not None
        if not alone:  # the message itself, media and all: later turns ask about the same picture or recording
            self.history += [message, Message.assistant(completion.text)]
        return completion.output, completion.token_probability

    async def score(self, prompt: str, options: tuple[str, ...], *, media: tuple[MediaPart, ...] = ()) -> OptionScores:
        """How likely this member's model finds each option as its reply to `prompt` after its role and history
        (`Model.score_options`); nothing joins the history. A model that cannot score raises `CapabilityError`."""
        messages = [Message.system(self.role), *self.history, Message("user", prompt, media)]
        return await self.model.score_options(messages, options, agent=self.name)
