"""Links between processors, formed and broken by how relevant one finds the winner's question.

Binary links (the paper's appendix): relevance above `create_above` links the answering processor
to the winner; below `remove_below` removes an existing link. Weighted links (the paper's main
text) instead add `delta` on high relevance and subtract it on low relevance; every link decays
by `decay` each iteration and disappears below `keep_above`.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx


@dataclass(frozen=True)
class LinkPolicy:
    create_above: float = 0.8
    remove_below: float = 0.2
    weighted: bool = False
    delta: float = 0.5
    decay: float = 0.9
    keep_above: float = 0.1


@dataclass(frozen=True)
class LinkChange:
    a: str
    b: str
    change: str
    weight: float
    relevance: float | None = None


class LinkGraph:
    """Undirected processor graph; edge attribute `weight`."""

    def __init__(self, policy: LinkPolicy | None = None) -> None:
        self.policy = policy or LinkPolicy()
        self.graph: nx.Graph = nx.Graph()

    def neighbours(self, processor: str) -> list[str]:
        if processor not in self.graph:
            return []
        return sorted(self.graph.neighbors(processor))

    def edges(self) -> list[list[str]]:
        return sorted(sorted(edge) for edge in self.graph.edges())

    def __len__(self) -> int:
        return self.graph.number_of_edges()

    def update(self, winner: str, processor: str, relevance: float) -> LinkChange | None:
        """Apply the rule for `processor`'s relevance to the winner's question."""
        if winner == processor:
            return None
        policy = self.policy
        linked = self.graph.has_edge(winner, processor)
        current = self.graph.edges[winner, processor]["weight"] if linked else 0.0
        if relevance > policy.create_above:
            weight = min(1.0, current + policy.delta) if policy.weighted else 1.0
            if linked and weight == current:
                return None
            self.graph.add_edge(winner, processor, weight=weight)
            return LinkChange(winner, processor, "strengthened" if linked else "created", weight, relevance)
        if relevance < policy.remove_below and linked:
            weight = current - policy.delta if policy.weighted else 0.0
            if weight <= policy.keep_above:
                self.graph.remove_edge(winner, processor)
                return LinkChange(winner, processor, "removed", 0.0, relevance)
            self.graph.edges[winner, processor]["weight"] = weight
            return LinkChange(winner, processor, "weakened", weight, relevance)
        return None

    def decay(self) -> list[LinkChange]:
        """Weighted links fade each iteration unless renewed; binary links do not decay."""
        if not self.policy.weighted:
            return []
        changes = []
        for a, b, data in list(self.graph.edges(data=True)):
            weight = data["weight"] * self.policy.decay
            if weight <= self.policy.keep_above:
                self.graph.remove_edge(a, b)
                changes.append(LinkChange(a, b, "removed", 0.0))
            else:
                data["weight"] = weight
                changes.append(LinkChange(a, b, "decayed", weight))
        return changes
