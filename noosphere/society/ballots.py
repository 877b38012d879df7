"""Ballot forms: the members' distinct answers as lettered options, and the forms that pick among them.

Labels run A to Z and then AA, AB, ..., so a society of any size can vote; as `Literal`s they reach
the JSON schema as enums, and constrained decoding can produce nothing else.
"""

from __future__ import annotations

import re
import string
from typing import Literal

from pydantic import BaseModel, Field, create_model

from noosphere.llm.forms import choice_form
from noosphere.society import prompts


def option_labels(count: int) -> tuple[str, ...]:
    """A, B, ..., Z, then AA, AB, ...: short labels however many distinct answers a large society has."""
    labels = []
    for number in range(1, count + 1):
        label = ""
        while number:
            number, rest = divmod(number - 1, 26)
            label = string.ascii_uppercase[rest] + label
        labels.append(label)
    return tuple(labels)


def picked(options: list[str], label: str) -> str:
    return options[option_labels(len(options)).index(label)]


def choice_model(count: int) -> type[BaseModel]:
    return choice_form("Choice", "choice", option_labels(count), "the letter of the option",
                       reason="reasoning", reason_chars=800)


def ranking_model(count: int) -> type[BaseModel]:
    letters = option_labels(count)
    return create_model("Ranking", reasoning=(str, Field(max_length=800)),
                        ranking=(list[Literal[letters]], Field(min_length=1, max_length=count,  # type: ignore[valid-type]
                                                               description="option letters, best first")))


def lettered(options: list[str]) -> str:
    return "\n".join(prompts.OPTION.format(label=label, option=option)
                     for label, option in zip(option_labels(len(options)), options, strict=True))


def label_in(answer: str, labels: tuple[str, ...] | list[str]) -> str | None:
    """The label an answer consists of ("C", "(c)", "C."), if it is one of `labels`."""
    said = answer.strip().strip("().").strip().upper()
    return said if said in labels else None


def named_option(answer: str, options: list[str]) -> str:
    """The option an answer names by its label, or the answer itself.

    A member shown lettered options and asked for a free answer often gives just the letter; taken
    literally, that letter would become the society's final answer.
    """
    if answer.strip() in options:  # the options themselves may be letters (a multiple-choice task)
        return answer
    labels = option_labels(len(options))
    label = label_in(answer, labels)
    if label is not None:
        return options[labels.index(label)]
    quoted = re.match(r"\(([a-z]{1,2})\)\s+(.+)", answer.strip(), flags=re.IGNORECASE | re.DOTALL)
    if quoted is None or quoted.group(1).upper() not in labels:
        return answer
    option = options[labels.index(quoted.group(1).upper())]  # "(C) 20 cups": an option copied with its label
    return option if quoted.group(2).strip().lower().startswith(option.strip().lower()) else quoted.group(2)


def listed_options(text: str) -> dict[str, str]:
    """The options `lettered` wrote into `text`, label to option: how a ballot's prompt is read back."""
    return dict(re.findall(r"^\((\w+)\) (.+)$", text, flags=re.MULTILINE))
