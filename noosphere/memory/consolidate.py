"""Sleep: cluster the learned concepts with k-means over sentence embeddings.

k grows with the square root of the number of concepts, so a handful of rules stays one or two
clusters and hundreds become a readable dozen; each cluster is represented by the rule nearest its
centroid and weighted by its size. Run at the start of each task, as the paper's agent did.
"""

from __future__ import annotations

import math

import numpy as np

from noosphere.memory.embedder import Embedder
from noosphere.memory.records import ConceptCluster
from noosphere.memory.store import MemoryStore


def cluster_concepts(concepts: list[str], embedder: Embedder, *, seed: int = 0) -> list[ConceptCluster]:
    if not concepts:
        return []
    from sklearn.cluster import KMeans

    vectors = embedder.embed(concepts)
    # rules that differ only in case embed alike (both embedders lowercase): no more clusters than distinct points,
    # or k-means warns on stderr mid-run
    k = max(1, min(math.isqrt(len(concepts)), len(np.unique(vectors, axis=0))))
    kmeans = KMeans(n_clusters=k, random_state=seed, n_init=10).fit(vectors)
    clusters = []
    for label in range(k):
        members = np.flatnonzero(kmeans.labels_ == label)
        if not len(members):
            continue
        distances = np.linalg.norm(vectors[members] - kmeans.cluster_centers_[label], axis=1)
        clusters.append(ConceptCluster(label, concepts[members[int(np.argmin(distances))]], len(members),
                                       tuple(concepts[i] for i in members)))
    return sorted(clusters, key=lambda c: (-c.size, c.label))


def sleep(store: MemoryStore, embedder: Embedder, *, seed: int = 0) -> list[ConceptCluster]:
    """Re-cluster everything the store has learned and save the result."""
    clusters = cluster_concepts(store.concepts(), embedder, seed=seed)
    store.save_clusters(clusters)
    return clusters
