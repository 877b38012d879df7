"""The memory-driven meta-agent (Episodex): specialised agents along an allowed-transition graph."""

from noosphere.metaagent.agents import AGENTS, CODE_AGENTS, LANGUAGE_AGENTS
from noosphere.metaagent.baselines import react, reflexion
from noosphere.metaagent.engine import EpisodeResult, MetaAgent
from noosphere.metaagent.graph import DEFAULT_GRAPH, MEMORY_AGENTS, START, TransitionGraph, unused_memory_agents
from noosphere.metaagent.hallucination import off_task
from noosphere.metaagent.prompts import DUTIES, ROLES
from noosphere.metaagent.recollection import RECALL_AT, RECALL_VIEWS, MemorySettings, RecallAt, RecallView
from noosphere.metaagent.state import EpisodeState

__all__ = ["AGENTS", "CODE_AGENTS", "DEFAULT_GRAPH", "DUTIES", "LANGUAGE_AGENTS", "MEMORY_AGENTS", "RECALL_AT",
           "RECALL_VIEWS", "ROLES", "START", "EpisodeResult", "EpisodeState", "MemorySettings", "MetaAgent", "RecallAt",
           "RecallView",
           "TransitionGraph",
           "off_task", "react", "reflexion", "unused_memory_agents"]
