"""The Embedder protocol and `embed_texts`, which embeds through the cache, each text once."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    from .cache import EmbeddingCache

_NORM_TOLERANCE = 1e-3  # a stored row whose length strays further from 1 (or 0) is re-embedded


@runtime_checkable
class Embedder(Protocol):
    """Anything that turns texts into L2-normalised float32 vectors of a fixed dimension.

    `model_id` names the model for provenance and the cache key (a different model must have a
    different id); `device` is where it runs ("cpu", "cuda", "mps"); `precision` is the number
    format the model computes in ("fp32", "fp16", "bf16", ...), part of the cache key so vectors
    of different precision never mix (an embedder without one is cached as "fp32"). An optional
    `backend` attribute names the runtime ("torch", "openvino"); it too is part of the cache key.
    """

    model_id: str
    dim: int
    device: str
    precision: str

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Return an array of shape (len(texts), dim), float32, rows of unit length."""
        ...


def normalize_rows(x: np.ndarray) -> np.ndarray:
    """float32 rows scaled to unit length; all-zero rows stay zero."""
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)


def cache_key(embedder: Embedder) -> str:
    """The key an embedder's vectors are cached under: "<model id>|<precision>[|<variant>][|<backend>]".

    An embedder without a `precision` attribute is taken as "fp32" (as the pipeline's provenance does);
    one without a `backend`, or with "torch", adds nothing (keys made before backends existed still hold).
    """
    precision = getattr(embedder, "precision", None) or "fp32"
    variant = getattr(embedder, "cache_variant", "")  # e.g. "chunks": long texts embedded by windows
    backend = getattr(embedder, "backend", "torch") or "torch"  # another runtime computes other vectors
    return "|".join([embedder.model_id, precision] + [p for p in (variant, backend) if p and p != "torch"])


def _sound(vectors: dict[str, np.ndarray], dim: int) -> dict[str, np.ndarray]:
    """Cached vectors of the right size, finite and of unit (or zero) length; others are re-embedded."""
    sized = {t: v for t, v in vectors.items() if v.shape == (dim,)}
    if not sized:
        return {}
    norms = np.linalg.norm(np.stack(list(sized.values())), axis=1)  # inf or nan when a value is
    ok = np.isfinite(norms) & ((np.abs(norms - 1.0) <= _NORM_TOLERANCE) | (norms == 0.0))
    return {t: v for (t, v), good in zip(sized.items(), ok) if good}


def embed_texts(texts: Sequence[str], embedder: Embedder, *, cache: EmbeddingCache | None = None) -> np.ndarray:
    """Embed `texts`, each distinct text once, reading and filling the cache when given.

    Returns float32 (len(texts), dim), rows L2-normalised. A cache problem never fails the call:
    the cache warns (see EmbeddingCache.warnings) and the vectors are computed instead.
    """
    unique = list(dict.fromkeys(texts))
    key = cache_key(embedder) if cache is not None else ""
    vectors = _sound(cache.get_many(key, unique), embedder.dim) if cache is not None else {}
    missing = [t for t in unique if t not in vectors]
    if missing:
        fresh = normalize_rows(embedder.encode(missing))
        if fresh.shape != (len(missing), embedder.dim):
            raise ValueError(f"embedder returned shape {fresh.shape}; expected {(len(missing), embedder.dim)}")
        computed = dict(zip(missing, fresh))
        vectors.update(computed)
        if cache is not None:
            cache.put_many(key, computed)
    if not texts:
        return np.zeros((0, embedder.dim), dtype=np.float32)
    return np.stack([vectors[t] for t in texts]).astype(np.float32, copy=False)
