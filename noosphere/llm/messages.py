"""Chat messages, possibly multimodal, and their JSON form for traces and caches.

A message is text plus optional media parts. Media is kept as bytes with a media type, so that a
message hashes the same wherever the file came from, and so that a backend can tell at once
whether it can read it (see `Capabilities`).
"""

from __future__ import annotations

import base64
import hashlib
import mimetypes
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from noosphere.errors import UsageError

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True)
class MediaPart:
    """An image or an audio clip carried inside a message."""

    kind: Literal["image", "audio"]
    data: bytes
    media_type: str

    @classmethod
    def from_path(cls, path: str | Path) -> MediaPart:
        path = Path(path)
        media_type = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        kind: Literal["image", "audio"] = "audio" if media_type.startswith("audio/") else "image"
        return cls(kind=kind, data=path.read_bytes(), media_type=media_type)

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    def data_url(self) -> str:
        return f"data:{self.media_type};base64,{base64.b64encode(self.data).decode()}"

    def summary(self) -> dict[str, Any]:
        """What a trace or cache key records: the hash and size, never the bytes."""
        return {"kind": self.kind, "media_type": self.media_type, "sha256": self.digest, "bytes": len(self.data)}


@dataclass(frozen=True)
class Message:
    role: Role
    content: str
    media: tuple[MediaPart, ...] = field(default=())
    name: str | None = None

    @classmethod
    def system(cls, text: str) -> Message:
        return cls("system", text)

    @classmethod
    def user(cls, text: str, *, images: tuple[str | Path, ...] = (), audio: tuple[str | Path, ...] = ()) -> Message:
        parts = tuple(MediaPart.from_path(p) for p in (*images, *audio))
        return cls("user", text, parts)

    @classmethod
    def assistant(cls, text: str) -> Message:
        return cls("assistant", text)

    def needs(self) -> set[str]:
        """The capabilities a model must have to read this message."""
        return {"vision" if part.kind == "image" else "audio" for part in self.media}

    def to_json(self) -> dict[str, Any]:
        """Serialisable form for traces and cache keys (media reduced to hashes)."""
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.media:
            out["media"] = [part.summary() for part in self.media]
        if self.name:
            out["name"] = self.name
        return out

    def to_openai(self) -> dict[str, Any]:
        """The OpenAI chat format that LiteLLM and llama.cpp both accept."""
        if not self.media:
            out: dict[str, Any] = {"role": self.role, "content": self.content}
        else:
            parts: list[dict[str, Any]] = [{"type": "text", "text": self.content}]
            for part in self.media:
                if part.kind == "image":
                    parts.append({"type": "image_url", "image_url": {"url": part.data_url()}})
                else:
                    fmt = part.media_type.split("/")[-1].replace("mpeg", "mp3").replace("x-wav", "wav")
                    parts.append({"type": "input_audio",
                                  "input_audio": {"data": base64.b64encode(part.data).decode(), "format": fmt}})
            out = {"role": self.role, "content": parts}
        if self.name:
            out["name"] = self.name
        return out


def as_messages(prompt: str | Message | list[Message] | tuple[Message, ...]) -> tuple[Message, ...]:
    """Accept a bare string as one user message, for convenience at the top level. Anything else that is no
    non-empty sequence of `Message`s is a `UsageError` before any call (a model asked nothing, or a dict, a None
    or a bare string among the messages, failed later with a TypeError or an AttributeError, or was asked)."""
    if isinstance(prompt, str):
        return (Message.user(prompt),)
    if isinstance(prompt, Message):
        return (prompt,)
    if not isinstance(prompt, list | tuple):
        raise UsageError(f"messages must be a string, a Message or a list of Messages, not {type(prompt).__name__}")
    if not prompt:
        raise UsageError("no messages: give the model a prompt")
    for message in prompt:
        if not isinstance(message, Message):
            raise UsageError(f"messages must be Messages, not {type(message).__name__}: {message!r:.80}")
    return tuple(prompt)
