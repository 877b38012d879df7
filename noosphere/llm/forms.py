"""Output forms built at run time: a field whose value must be one of a list known only then.

Votes, agent picks, admissible game actions: the options change from call to call, so the form is
made per call; as a `Literal` the options reach the JSON schema as an enum, and constrained decoding
can produce nothing else.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field, create_model

LISTED = "listedInPrompt"
"""Schema key of a choice field whose options the prompt already lists (see `schema_instruction`)."""


def choice_form(name: str, field: str, options: Sequence[str], description: str, *, reason: str | None = None,
                reason_chars: int = 400, reason_description: str | None = None,
                listed: bool = False) -> type[BaseModel]:
    """A form with an optional free-text `reason` field first, then `field`, one of `options`.

    `listed=True` says the prompt already lists the options: the format instruction then leaves the
    enum out (constrained decoding still enforces it), so they are not in the prompt twice.
    """
    option = Literal[tuple(dict.fromkeys(options))]  # type: ignore[valid-type]
    chosen = (option, Field(description=description, json_schema_extra={LISTED: True} if listed else None))
    # the free-text field comes first, so that the model reasons before it commits
    first: dict[str, Any] = {} if reason is None else {
        reason: (str, Field(max_length=reason_chars, description=reason_description))}
    return create_model(name, **first, **{field: chosen})
