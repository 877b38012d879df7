"""What memory holds: episodes (belief states, actions, observations, outcome), concepts, clusters."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EpisodeStep:
    t: int
    action: str
    observation: str
    belief: str = ""


@dataclass(frozen=True)
class Episode:
    task: str
    kind: str
    game: str
    steps: tuple[EpisodeStep, ...]
    won: bool
    id: int | None = None

    def render(self, max_chars: int = 1500) -> str:
        """The episode as a prompt sees it: task, outcome, then each step's action, result and belief.

        Within `max_chars`: a long episode keeps its opening steps and its last ones (how it ended)
        and says how many it left out between, so that k recalled episodes fit any context window.
        """
        header = (f"Episode {self.id}: {self.task} ({'solved' if self.won else 'not solved'} in "
                  f"{len(self.steps)} actions)")
        blocks = [f"  {step.t}. {step.action} -> {step.observation[:160]}"
                  + (f"\n     belief: {step.belief[:200]}" if step.belief else "") for step in self.steps]
        room = max_chars - len(header) - 40
        head: list[str] = []
        tail: list[str] = []
        while blocks and room > 0:  # alternate: first step, last step, second step, ...
            take_head = len(head) <= len(tail)
            block = blocks[0] if take_head else blocks[-1]
            if len(block) + 1 > room:
                break
            room -= len(block) + 1
            if take_head:
                head.append(blocks.pop(0))
            else:
                tail.insert(0, blocks.pop())
        gap = [f"  ... {len(blocks)} steps left out ..."] if blocks else []
        return "\n".join([header, *head, *gap, *tail])


@dataclass(frozen=True)
class ConceptCluster:
    """One cluster of learned rules; the rule nearest the centroid speaks for it, weighted by size."""

    label: int
    representative: str
    size: int
    members: tuple[str, ...]
