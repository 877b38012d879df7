"""The allowed-transition graph the orchestrator may move along, as replaceable data.

The default graph has the paper's loops: autopilot (conscious, planning, motor, external perception,
conscious), focus (conscious, focus, internal perception, conscious) and the extended loops through
retrieve-memory, learning, record-memory and idea, which go on to planning and so return through
motor: every way forward from the conscious agent that is not the focus loop ends in an action.
Each agent also names a default successor, taken when the orchestrator's pick is invalid.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx

from noosphere.errors import ConfigError

START = "conscious"
MEMORY_AGENTS = ("retrieve_memory", "learning", "record_memory")
"""Agents that only read or fill the long-term memory; a run without memory leaves them out."""


@dataclass(frozen=True)
class TransitionGraph:
    edges: dict[str, tuple[str, ...]]
    defaults: dict[str, str] = field(default_factory=dict)
    """Fallback successor per agent; the first listed successor when absent."""

    def __post_init__(self) -> None:
        for source, targets in self.edges.items():
            if not targets:
                raise ConfigError(f"agent {source!r} has no successor", field=f"edges.{source}")
            unknown = [t for t in targets if t not in self.edges]
            if unknown:
                raise ConfigError(f"{source!r} leads to {unknown}, which have no edges of their own",
                                  field=f"edges.{source}")
        for source, default in self.defaults.items():
            if default not in self.edges.get(source, ()):
                raise ConfigError(f"the default successor of {source!r} must be one of its successors",
                                  field=f"defaults.{source}")
        if START not in self.edges:
            raise ConfigError(f"the graph needs the {START!r} agent", field="edges")

    def successors(self, agent: str) -> tuple[str, ...]:
        return self.edges[agent]

    def default(self, agent: str) -> str:
        return self.defaults.get(agent, self.edges[agent][0])

    def allows(self, source: str, target: str) -> bool:
        return target in self.edges.get(source, ())

    def without(self, *agents: str) -> TransitionGraph:
        """The graph with `agents` and every edge into them removed, e.g. the memory agents of a run without memory."""
        edges = {source: tuple(t for t in targets if t not in agents)
                 for source, targets in self.edges.items() if source not in agents}
        defaults = {source: target for source, target in self.defaults.items() if target in edges.get(source, ())}
        return TransitionGraph(edges, defaults)

    def as_networkx(self) -> nx.DiGraph:
        graph = nx.DiGraph()
        graph.add_edges_from((s, t) for s, targets in self.edges.items() for t in targets)
        return graph

    def loops(self) -> list[list[str]]:
        """Every simple cycle through the conscious agent, written from it (the paper's named loops among them)."""
        cycles = [c[c.index(START):] + c[:c.index(START)] for c in nx.simple_cycles(self.as_networkx()) if START in c]
        return sorted(cycles, key=lambda cycle: (len(cycle), cycle))


DEFAULT_GRAPH = TransitionGraph(
    edges={
        "conscious": ("planning", "focus", "retrieve_memory", "idea", "learning"),
        "planning": ("motor",),
        "motor": ("external_perception",),
        "external_perception": ("conscious",),
        "focus": ("internal_perception",),
        "internal_perception": ("conscious",),
        "retrieve_memory": ("idea", "learning"),
        "learning": ("record_memory",),
        "record_memory": ("idea",),
        "idea": ("planning",),
    },
    defaults={"conscious": "planning", "retrieve_memory": "idea"},
)
