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

    def render(self, max_steps: int = 30) -> str:
        """The episode as a prompt sees it: task, outcome, then each step's action, result and belief."""
        lines = [f"Episode {self.id}: {self.task} ({'solved' if self.won else 'not solved'} in "
                 f"{len(self.steps)} actions)"]
        for step in self.steps[:max_steps]:
            lines.append(f"  {step.t}. {step.action} -> {step.observation[:160]}")
            if step.belief:
                lines.append(f"     belief: {step.belief[:200]}")
        return "\n".join(lines)


@dataclass(frozen=True)
class ConceptCluster:
    """One cluster of learned rules; the rule nearest the centroid speaks for it, weighted by size."""

    label: int
    representative: str
    size: int
    members: tuple[str, ...]
