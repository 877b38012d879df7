"""The memory-driven meta-agent (Episodex): specialised agents along an allowed-transition graph."""

from noosphere.metaagent.agents import LANGUAGE_AGENTS, ROLES
from noosphere.metaagent.baselines import react, reflexion
from noosphere.metaagent.engine import EpisodeResult, MemorySettings, MetaAgent, close_to_admissible
from noosphere.metaagent.graph import DEFAULT_GRAPH, START, TransitionGraph
from noosphere.metaagent.state import EpisodeState

__all__ = ["DEFAULT_GRAPH", "LANGUAGE_AGENTS", "ROLES", "START", "EpisodeResult", "EpisodeState", "MemorySettings",
           "MetaAgent", "TransitionGraph", "close_to_admissible", "react", "reflexion"]
