"""The Embedder protocol and `embed_texts`, which embeds through the cache, each text once."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    from .cache import EmbeddingCache


@runtime_checkable
class Embedder(Protocol):
    """Anything that turns texts into L2-normalised float32 vectors of a fixed dimension.

    `model_id` names the model for provenance and the cache key (a different model must have a
    different id); `device` is where it runs ("cpu", "cuda", "mps").
    """

    model_id: str
    dim: int
    device: str

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Return an array of shape (len(texts), dim), float32, rows of unit length."""
        ...


def normalize_rows(x: np.ndarray) -> np.ndarray:
    """float32 rows scaled to unit length; all-zero rows stay zero."""
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)


def embed_texts(texts: Sequence[str], embedder: Embedder, *, cache: EmbeddingCache | None = None) -> np.ndarray:
    """Embed `texts`, each distinct text once, reading and filling the cache when given."""
    unique = list(dict.fromkeys(texts))
    vectors: dict[str, np.ndarray] = cache.get_many(embedder.model_id, unique) if cache else {}
    missing = [t for t in unique if t not in vectors]
    if missing:
        fresh = normalize_rows(embedder.encode(missing))
        if fresh.shape != (len(missing), embedder.dim):
            raise ValueError(f"embedder returned shape {fresh.shape}; expected {(len(missing), embedder.dim)}")
        vectors.update(zip(missing, fresh))
        if cache:
            cache.put_many(embedder.model_id, dict(zip(missing, fresh)))
    if not texts:
        return np.zeros((0, embedder.dim), dtype=np.float32)
    return np.stack([vectors[t] for t in texts]).astype(np.float32, copy=False)
