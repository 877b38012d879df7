"""The reply in the form the client asked for.

A system answers the question; it does not read the client's instructions about the reply (a system message: a
persona, "reply in JSON with these fields", the format a noosphere member asks of its model) nor its
`response_format`. When a request has either, one more call of the same model writes the system's answer the way
the request asks: the client's own messages, with the answer put before the model. With a `response_format`, the
call is constrained to its schema (as a tool the model must call, so any backend can be held to any schema).
Without either, the reply is the system's answer as it is.
"""

from __future__ import annotations

import json
from typing import Any

from noosphere.errors import RuntimeFault
from noosphere.llm import Message, Model, ToolSpec
from noosphere.serve.protocol import Conversation
from noosphere.systems import Answer

AGENT = "compose"
"""The agent name of the composing call in the trace and the usage."""


def needs_composing(conversation: Conversation, schema: dict[str, Any] | None) -> bool:
    return bool(conversation.instructions.strip()) or schema is not None


def _note(served_as: str, answer: Answer) -> str:
    return (f"({served_as} has worked on this request and reached this answer, with confidence "
            f"{answer.confidence:.2f}:\n{answer.answer}\nWrite the reply to the request above with this answer, "
            "following every instruction about the reply's form.)")


async def compose(model: Model, conversation: Conversation, answer: Answer, served_as: str,
                  schema: dict[str, Any] | None) -> str:
    """The reply's text: the answer written as the request's instructions and schema say."""
    messages = [Message.system(conversation.instructions)] if conversation.instructions.strip() else []
    for role, text in conversation.turns:
        messages.append(Message("assistant" if role == "assistant" else "user", text))
    messages.append(Message.user(f"{conversation.question}\n\n{_note(served_as, answer)}"))
    if schema is None:
        done = await model.complete(messages, agent=AGENT)
        return done.text.strip() or answer.answer
    reply = ToolSpec("reply", "Send the reply, in the form the request asks for.", schema)
    done = await model.complete(messages, tools=(reply,), agent=AGENT)
    if not done.tool_calls:
        raise RuntimeFault(f"{model.id} did not write the answer in the form the request's response_format asks")
    return json.dumps(done.tool_calls[0].arguments, ensure_ascii=False)
