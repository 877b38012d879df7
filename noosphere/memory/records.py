"""What memory holds: episodes (belief states, actions, observations, outcome), concepts, clusters."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EpisodeStep:
    """One timestep. Timestep 0 has no action: the opening observation and the first belief."""

    t: int
    action: str
    observation: str
    belief: str = ""

    def line(self, limit: int) -> str:
        """`t. action -> observation` on one line, the observation's whitespace collapsed, clipped to `limit`."""
        did = f"{self.action} -> " if self.action else "(start) "
        return f"{self.t}. {did}{' '.join(self.observation.split())[:limit]}"

    def render(self, beliefs: bool = True) -> str:
        """The step as a recalled episode shows it: what was done and seen, and (with `beliefs`) what was believed."""
        belief = f"\n     belief: {self.belief[:200]}" if beliefs and self.belief else ""
        return f"  {self.line(160)}{belief}"


@dataclass(frozen=True)
class Episode:
    """One finished task as episodic memory keeps it: the task, its kind and game, every step, and whether it
    was won; `id` is the store's row once it is saved."""

    task: str
    kind: str
    game: str
    steps: tuple[EpisodeStep, ...]
    won: bool
    id: int | None = None

    @property
    def actions(self) -> int:
        return sum(1 for step in self.steps if step.action)

    def render(self, max_chars: int = 1500, beliefs: bool = True) -> str:
        """The episode as a prompt sees it: task, outcome, then each step's action, result and (with `beliefs`)
        the belief written after it.

        Within `max_chars`: a long episode keeps its opening steps and its last ones (how it ended)
        and says how many it left out between, so that k recalled episodes fit any context window.
        """
        header = (f"Episode {self.id}: {self.task} ({'solved' if self.won else 'not solved'} in "
                  f"{self.actions} actions)")
        blocks = [step.render(beliefs) for step in self.steps]
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
