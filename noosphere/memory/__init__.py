"""Persistent memory for agents: episodic and conceptual, consolidated by clustering, recalled by k."""

from noosphere.memory.consolidate import cluster_concepts, sleep
from noosphere.memory.embedder import Embedder, HashingEmbedder, MiniLMEmbedder, default_embedder
from noosphere.memory.records import ConceptCluster, Episode, EpisodeStep
from noosphere.memory.retrieval import METHODS, Recall, recall, recall_episodes
from noosphere.memory.store import MemoryStore

__all__ = ["METHODS", "ConceptCluster", "Embedder", "Episode", "EpisodeStep", "HashingEmbedder", "MemoryStore",
           "MiniLMEmbedder", "Recall", "cluster_concepts", "default_embedder", "recall", "recall_episodes", "sleep"]
