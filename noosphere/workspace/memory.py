"""A processor's private long-term memory: broadcast winners, fusion answers, its own past chunks.

Memory is immutable: `write` returns the next memory (the paper's LTM_t -> LTM_{t+1}); the
processor keeps the latest. `render` is how memory shows up in the processor's next prompt.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from noosphere.workspace.chunk import Chunk


@dataclass(frozen=True)
class FusionNote:
    """An answer a linked processor gave to this processor's question."""

    source: str
    question: str
    answer: str
    tick: int


@dataclass(frozen=True)
class ProcessorMemory:
    winners: tuple[Chunk, ...] = ()
    fusion: tuple[FusionNote, ...] = ()
    own: tuple[Chunk, ...] = ()

    def with_winner(self, chunk: Chunk) -> ProcessorMemory:
        return replace(self, winners=(*self.winners, chunk))

    def with_fusion(self, note: FusionNote) -> ProcessorMemory:
        return replace(self, fusion=(*self.fusion, note))

    def with_own(self, chunk: Chunk) -> ProcessorMemory:
        return replace(self, own=(*self.own, chunk))

    @property
    def empty(self) -> bool:
        return not (self.winners or self.fusion or self.own)

    def render(self, limit: int = 4) -> str:
        """Recent memory as prompt text; older entries are dropped to keep prompts short."""
        parts = []
        if self.winners:
            lines = "\n".join(f"- ({c.processor}) {c.gist}" for c in self.winners[-limit:])
            parts.append("Earlier answers that won the workspace for this query; reason further from them:\n"
                         + lines)
        if self.fusion:
            lines = "\n".join(f"- {n.source}, asked \"{n.question}\": {n.answer}" for n in self.fusion[-limit:])
            parts.append("Information other processors gave you:\n" + lines)
        asked = [c.question for c in self.own[-limit:] if c.question]
        if asked:
            parts.append("Questions you already asked (do not repeat them): " + " | ".join(asked))
        return "\n\n".join(parts)
