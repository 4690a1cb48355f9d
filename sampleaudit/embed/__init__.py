"""Text embedders behind one Protocol, and an on-disk cache of their output."""

import functools

from .base import Embedder, cache_key, embed_texts
from .cache import DEFAULT_LOCK_TIMEOUT, EmbeddingCache, default_cache_dir
from .sentence_transformers import check_device

__all__ = ["DEFAULT_LOCK_TIMEOUT", "Embedder", "EmbeddingCache", "cache_key", "check_device", "default_cache_dir",
           "embed_texts", "embedder_from_config", "load_embedder"]


def load_embedder(model: str | None = None, *, device: str | None = None, batch_size: int = 64,
                  progress: bool = False, long_text: str = "chunks", backend: str = "auto",
                  model_cache_dir: str | None = None) -> Embedder:
    """The sentence-transformers embedder (imported lazily: torch loads only when needed).

    Checks `device` (see check_device) and finds the model (see resolve_model) before loading
    anything; raises InputError or ModelError, one line each, when either cannot be used.
    `backend`: "auto" (OpenVINO on the CPU when installed, else torch), "torch" or "openvino";
    the OpenVINO export is kept under `model_cache_dir` (default: the embedding cache folder).
    """
    from .sentence_transformers import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(model, device=device, batch_size=batch_size, progress=progress,
                                       long_text=long_text, backend=backend, model_cache_dir=model_cache_dir)


def embedder_from_config(embed) -> functools.partial:
    """`load_embedder` with every setting of the config's [embed] section bound (call it, with
    `progress=` if wanted, to load the model); picklable, so a worker can build the same embedder."""
    return functools.partial(load_embedder, embed.model, device=embed.device, batch_size=embed.batch_size,
                             long_text=embed.long_text, backend=embed.backend, model_cache_dir=embed.cache_dir)
