"""Hierarchies: a whole society taking part in a larger one as a single member.

`SubSociety` stands where a `Member` would. Asked a question, it runs its own society on it, with
the observation its own members perceive, and answers with that society's decision (its summary as
the reasoning); a later question (an organizer's sub-question) comes after the first one, the task.
Asked to choose among lettered options (a ballot, a change of answer), it runs its society on the
ballot and maps the decision to an option: by its letter, or by the option's text; a
ranking gets that option alone. Any other form (a hiring decision) it cannot fill forfeits the turn: it
raises `TurnRefused`, a runtime fault, where a usage error would stop the whole run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from noosphere.errors import RuntimeFault, TurnRefused
from noosphere.llm.messages import MediaPart
from noosphere.observation import Observation
from noosphere.scope import society_scope
from noosphere.society import prompts
from noosphere.society.ballots import label_in, listed_options
from noosphere.society.member import Member
from noosphere.society.session import default_key
from noosphere.society.society import Society
from noosphere.trace import Trace

OutputT = TypeVar("OutputT", bound=BaseModel)


@dataclass
class SubSociety(Member):
    society: Society = field(default=None)  # type: ignore[assignment]
    gives_probability: bool = field(default=False, init=False)
    _trace: Trace | None = None
    _observation: Observation | None = None
    _first_prompt: str = ""
    """What it was first asked in this run (the task): a member follows later prompts from its history,
    a society starts afresh on each, so the organizer's bare sub-question would reach it without the task."""

    @classmethod
    def of(cls, name: str, society: Society, role: str = "", sees: tuple[str, ...] | None = None) -> SubSociety:
        """`sees`: the views of the outer observation handed to the inner society (None: all of them)."""
        return cls(name, society.members[0].model, role or f"a {society.organisation} of "
                   f"{len(society.members) + len(society.staff)} members", sees, society=society)

    def join(self, trace: Trace) -> None:
        self.history.clear()
        self._trace = trace
        self._observation = None
        self._first_prompt = ""

    @property
    def knows_task(self) -> bool:
        return bool(self._first_prompt)  # each later question reaches its society after the task

    def perception(self, observation: Observation | None) -> tuple[str, tuple[MediaPart, ...]]:
        """Keep the observation for the inner society, whose members perceive it each in their own way."""
        if observation is not None and self.sees is not None:
            observation = Observation(tuple(v for v in observation.views if v.name in self.sees))
        self._observation = observation
        return "", ()

    async def belief(self, prompt: str) -> float:
        """A society has no probability of its own to give; its turn in a weighted vote forfeits."""
        raise TurnRefused(f"{self.name} is a society: it has no probability to weigh its answer by")

    async def ask_scored(self, prompt: str, output: type[OutputT], *,
                         media: tuple[MediaPart, ...] = ()) -> tuple[OutputT, float | None]:
        """The society's decision has no probability of its own: the answer stands, without a weight."""
        return await self.ask(prompt, output, media=media), None

    async def reply(self, prompt: str) -> tuple[str, int]:
        """A conversation turn (a role-play's) is not a question a society can answer by deciding."""
        raise TurnRefused(f"{self.name} is a society: it answers statements and ballots, not a conversation")

    async def ask(self, prompt: str, output: type[OutputT], *, media: tuple[MediaPart, ...] = (),
                  alone: bool = False) -> OutputT:
        """The inner society answers; `alone` changes nothing, as each question starts it afresh anyway."""
        properties = output.model_json_schema().get("properties", {})
        chooses = _choice_field(properties)
        if chooses is None and not {"reasoning", "answer"} <= properties.keys():
            raise TurnRefused(f"{self.name} is a society: it answers statements and ballots, not a {output.__name__}")
        if not self._first_prompt:  # the task as the outer society put it; the inner one says "Task:" itself
            self._first_prompt = prompt = prompt.removeprefix(prompts.TASK.format(task=""))
        elif chooses is None:
            prompt = prompts.LATER_QUESTION.format(task=self._first_prompt, question=prompt)
        with society_scope(self.name):  # its events carry its path, so interleaved societies stay apart
            result = await self.society.run(prompt, self._observation, trace=self._trace)
        reasoning = (result.summary or result.decided_by)[:800 if chooses else 2000]
        if chooses is not None:
            name, labels, is_list = chooses
            label = _option_for(result.answer, prompt, labels)
            if label is None:
                raise TurnRefused(f"{self.name}'s society answered {result.answer!r}, which is none of the options")
            return _in_form(output, {"reasoning": reasoning, name: [label] if is_list else label}, self.name)
        if not result.answer.strip():  # a placeholder would stand as an option beside real answers
            raise RuntimeFault(f"{self.name}'s society reached no answer ({result.decided_by})")
        answer = result.answer[:properties["answer"].get("maxLength", 300)]
        return _in_form(output, {"reasoning": reasoning, "answer": answer}, self.name)


def _in_form(output: type[OutputT], fields: dict[str, Any], name: str) -> OutputT:
    """The society's decision in the form the outer society asked for; one it cannot fill forfeits the turn."""
    try:
        return output.model_validate(fields)
    except ValidationError as exc:
        raise TurnRefused(f"{name} could not put its society's answer in the form asked: {exc}") from exc


def _choice_field(properties: dict[str, Any]) -> tuple[str, list[str], bool] | None:
    """(field, labels, is a list) when the form picks among lettered options beside its reasoning."""
    for name, schema in properties.items():
        if "enum" in schema:
            return name, list(schema["enum"]), False
        if "enum" in schema.get("items", {}):
            return name, list(schema["items"]["enum"]), True
    return None


def _option_for(answer: str, prompt: str, labels: list[str]) -> str | None:
    """The label the society's answer means: a label ("B", "(B)") or the text of a listed option."""
    label = label_in(answer, labels)
    if label is not None:
        return label
    listed = listed_options(prompt)
    wanted = default_key(answer)
    return next((label for label in labels if label in listed and default_key(listed[label]) == wanted), None)
