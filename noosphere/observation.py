"""An observation split into named views; each sensory processor sees one view and nothing else."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from noosphere.errors import UnknownNameError
from noosphere.llm.messages import MediaPart


@dataclass(frozen=True)
class View:
    """One part of an observation: text, or a media part (image, audio) with an optional caption."""

    name: str
    text: str = ""
    media: tuple[MediaPart, ...] = ()

    @property
    def needs(self) -> set[str]:
        return {"vision" if part.kind == "image" else "audio" for part in self.media}


@dataclass(frozen=True)
class Observation:
    views: tuple[View, ...] = field(default=())

    @classmethod
    def of(cls, texts: dict[str, str] | None = None, media: dict[str, str | Path] | None = None) -> Observation:
        """Build from `{name: text}` and `{name: path to an image or audio file}`."""
        views = [View(name, text=text) for name, text in (texts or {}).items()]
        views += [View(name, media=(MediaPart.from_path(path),)) for name, path in (media or {}).items()]
        return cls(tuple(views))

    def view(self, name: str) -> View:
        for view in self.views:
            if view.name == name:
                return view
        raise UnknownNameError("view", name, [v.name for v in self.views])

    @property
    def names(self) -> list[str]:
        return [view.name for view in self.views]
