"""The allowed-transition graph the orchestrator may move along, as replaceable data.

The default graph has the paper's loops: autopilot (conscious, planning, motor, external perception,
conscious), focus (conscious, focus, internal perception, conscious) and the extended loops through
retrieve-memory, learning, record-memory and idea, which go on to planning and so return through
motor: every way forward from the conscious agent that is not the focus loop ends in an action.
Each agent also names a default successor, taken when the orchestrator's pick is invalid.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import networkx as nx
import yaml

from noosphere.datafiles import RepeatedKey, unique_keys
from noosphere.errors import ConfigError, UnknownNameError, closest

START = "conscious"
ACTING_AGENT = "external_perception"
"""The agent that carries the motor's action out in the environment."""
CHOOSING_AGENT = "motor"
"""The agent that chooses the action; the acting agent reached by a path without it carries out `look`."""
MEMORY_AGENTS = ("retrieve_memory", "learning", "record_memory")
"""Agents that only read or fill the long-term memory; a run without memory leaves them out."""


def unused_memory_agents(episodic: bool, conceptual: bool) -> tuple[str, ...]:
    """The memory agents a run leaves out, since they would only spend turns: all three without memory; without
    conceptual memory the learning agent and the one that keeps its rules (they would be thrown away); without
    episodic memory the mid-game recall (the rules, all of them, are in the context from the start)."""
    kept = {"retrieve_memory": episodic, "learning": conceptual, "record_memory": conceptual}
    return tuple(agent for agent in MEMORY_AGENTS if not kept[agent])


@dataclass(frozen=True)
class TransitionGraph:
    edges: dict[str, tuple[str, ...]]
    defaults: dict[str, str] = field(default_factory=dict)
    """Fallback successor per agent; the first listed successor when absent."""

    def __post_init__(self) -> None:
        for source, targets in self.edges.items():
            if not targets:
                raise ConfigError(f"agent {source!r} has no successor", field=f"edges.{source}")
            twice = sorted({t for t in targets if targets.count(t) > 1})
            if twice:  # the orchestrator would be asked to choose between an agent and itself
                raise ConfigError(f"agent {source!r} names {', '.join(map(repr, twice))} more than once among its "
                                  "successors", field=f"edges.{source}")
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

    @classmethod
    def from_data(cls, data: Any, source: str | None = None, known: Collection[str] | None = None
                  ) -> TransitionGraph:
        """`{"edges": {agent: [successors]}, "defaults": {agent: successor}}`, as `to_data` writes it. With
        `known`, every agent the data names (as a source, a successor or a default) must be one of them: a typo
        is told where it is, with the names it may have meant, before the graph's shape is checked."""
        if isinstance(data, dict):
            for key in data:
                if key not in GRAPH_KEYS:  # a misspelt `defaults` would be ignored, and its choices with it
                    hint = closest(str(key), GRAPH_KEYS)
                    guess = f" Did you mean {', '.join(hint)}?" if hint else ""
                    raise ConfigError(f"unknown key {str(key)!r}.{guess} A transition graph has "
                                      f"{' and '.join(GRAPH_KEYS)}.", source=source, field=str(key))
        if not isinstance(data, dict) or not isinstance(data.get("edges"), dict):
            raise ConfigError("a transition graph needs an `edges` mapping of agent to successors", source=source,
                              field="edges")
        defaults = data.get("defaults") or {}
        if not isinstance(defaults, dict):
            raise ConfigError("`defaults` maps an agent to one successor", source=source, field="defaults")
        edges = {str(agent): _successors(agent, targets, source) for agent, targets in data["edges"].items()}
        for agent, target in defaults.items():
            if not isinstance(target, str):
                raise ConfigError(f"the default successor of {agent!r} must be one agent's name, not "
                                  f"{type(target).__name__}", source=source, field=f"defaults.{agent}")
        chosen = {str(agent): target for agent, target in defaults.items()}
        if known is not None:
            _check_names(edges, chosen, set(known), source)
        try:
            return cls(edges, chosen)
        except ConfigError as exc:  # the graph's shape, told where the graph was read
            raise ConfigError(exc.message, source=source, field=exc.field) from None

    @classmethod
    def from_file(cls, path: Path, known: Collection[str] | None = None) -> TransitionGraph:
        """A graph written in YAML or JSON (a `.json` file); `known` as in `from_data`. A key given twice in one
        mapping is refused (either parser would keep the last, silently)."""
        try:
            text = path.read_text(encoding="utf-8-sig")  # an editor's byte-order mark, as the YAML reader allows
            if path.suffix.lower() == ".json":
                data = json.loads(text, object_pairs_hook=unique_keys)
            else:
                data = yaml.load(text, Loader=_UniqueKeyLoader)  # a SafeLoader
        except RepeatedKey as exc:
            raise ConfigError(f"the key {exc.key!r} is given twice in one mapping (the first would be lost)",
                              source=str(path), line=exc.line) from None
        except json.JSONDecodeError as exc:
            raise ConfigError(f"cannot read the transition graph: not JSON ({exc.msg}, column {exc.colno})",
                              source=str(path), line=exc.lineno) from None
        except OSError as exc:  # the error names the path the message already begins with: its reason alone
            raise ConfigError(f"cannot read the transition graph: {exc.strerror or exc}", source=str(path)) from None
        except (ValueError, yaml.YAMLError) as exc:  # ValueError: bytes that are not UTF-8
            mark = getattr(exc, "problem_mark", None)
            raise ConfigError(f"cannot read the transition graph: {' '.join(str(exc).split())}", source=str(path),
                              line=mark.line + 1 if mark is not None else None) from None
        except RecursionError:  # PyYAML's parser recurses once per level of nesting
            raise ConfigError("cannot read the transition graph: nested too deeply (a graph is a mapping of "
                              "edges and defaults)", source=str(path)) from None
        return cls.from_data(data, source=str(path), known=known)

    def to_data(self) -> dict[str, Any]:
        return {"edges": {agent: list(targets) for agent, targets in self.edges.items()},
                "defaults": dict(self.defaults)}

    def check_agents(self, known: set[str], source: str | None = None) -> None:
        """Every agent must be one the engine can run, some path from the start must reach an action (through the
        motor, which chooses it, to the acting agent), and so must some path from every agent the start leads to (a
        loop that never leaves for an action would spend every transition of a game on no action)."""
        for agent in self.edges:
            if agent not in known:
                raise UnknownNameError("agent", agent, known)
        graph = self.as_networkx()
        if ACTING_AGENT not in self.edges or not nx.has_path(graph, START, ACTING_AGENT):
            raise ConfigError(f"no path from {START!r} reaches {ACTING_AGENT!r}: the team could never act",
                              source=source, field="edges")
        if CHOOSING_AGENT not in self.edges or not (nx.has_path(graph, START, CHOOSING_AGENT)
                                                    and nx.has_path(graph, CHOOSING_AGENT, ACTING_AGENT)):
            raise ConfigError(f"no path from {START!r} reaches {ACTING_AGENT!r} through {CHOOSING_AGENT!r}, which "
                              "chooses the action: the team could never choose one (it would only 'look')",
                              source=source, field="edges")
        trapped = sorted(nx.descendants(graph, START) - nx.ancestors(graph, ACTING_AGENT) - {ACTING_AGENT})
        if trapped:
            raise ConfigError(f"no path from {', '.join(trapped)} reaches {ACTING_AGENT!r}: a team that goes there "
                              f"could never act again (give each a way back to {START!r} or on to an action)",
                              source=source, field="edges")

    def successors(self, agent: str) -> tuple[str, ...]:
        return self.edges[agent]

    def default(self, agent: str) -> str:
        return self.defaults.get(agent, self.edges[agent][0])

    def allows(self, source: str, target: str) -> bool:
        return target in self.edges.get(source, ())

    def without(self, *agents: str, source: str | None = None, why: str = "") -> TransitionGraph:
        """The graph with `agents` and every edge into them removed, e.g. the memory agents of a run without memory.
        A graph that is no graph without them is a `ConfigError` from `source`, its message ending with `why` (the
        reason they are left out): the file may be whole, and the fault only in what remains."""
        edges = {name: tuple(t for t in targets if t not in agents)
                 for name, targets in self.edges.items() if name not in agents}
        defaults = {name: target for name, target in self.defaults.items() if target in edges.get(name, ())}
        try:
            return TransitionGraph(edges, defaults)
        except ConfigError as exc:
            raise ConfigError(f"{exc.message} {why}".strip(), source=source, field=exc.field) from None

    def as_networkx(self) -> nx.DiGraph:
        graph = nx.DiGraph()
        graph.add_edges_from((s, t) for s, targets in self.edges.items() for t in targets)
        return graph

    def loops(self) -> list[list[str]]:
        """Every simple cycle through the conscious agent, written from it (the paper's named loops among them)."""
        cycles = [c[c.index(START):] + c[:c.index(START)] for c in nx.simple_cycles(self.as_networkx()) if START in c]
        return sorted(cycles, key=lambda cycle: (len(cycle), cycle))


GRAPH_KEYS = ("edges", "defaults")
"""The keys of a graph file."""


class _UniqueKeyLoader(yaml.SafeLoader):
    """`yaml.safe_load`, refusing a key given twice in one mapping (with the line of the second)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=deep)
            try:
                repeated = key in seen
            except TypeError:  # an unhashable key: the constructor below says so
                continue
            if repeated:
                raise RepeatedKey(key, key_node.start_mark.line + 1)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _successors(agent: Any, targets: Any, source: str | None) -> tuple[str, ...]:
    """An agent's successors as the file gives them: one name, or a list of names (empty is told by the graph)."""
    if isinstance(targets, str):
        return (targets,)
    if targets is None:
        return ()
    if not isinstance(targets, list | tuple) or not all(isinstance(t, str) for t in targets):
        raise ConfigError(f"the successors of {agent!r} must be an agent's name or a list of names, not "
                          f"{targets!r}", source=source, field=f"edges.{agent}")
    return tuple(targets)


def _check_names(edges: dict[str, tuple[str, ...]], defaults: dict[str, str], known: set[str],
                 source: str | None) -> None:
    """The first agent named that is not one of `known` (in the order the file names them), where it is named, as a
    `ConfigError`."""
    named = [(f"edges.{agent}", name) for agent, targets in edges.items() for name in (agent, *targets)]
    named += [(f"defaults.{agent}", name) for agent, target in defaults.items() for name in (agent, target)]
    for where, name in named:
        if name not in known:
            hint = closest(name, known)
            guess = f" Did you mean {', '.join(hint)}?" if hint else ""
            raise ConfigError(f"unknown agent {name!r}.{guess} Known: {', '.join(sorted(known))}.", source=source,
                              field=where)


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
