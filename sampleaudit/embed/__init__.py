"""Text embedders behind one Protocol, and an on-disk cache of their output."""

from .base import Embedder, embed_texts
from .cache import EmbeddingCache, default_cache_dir

__all__ = ["Embedder", "EmbeddingCache", "default_cache_dir", "embed_texts", "load_embedder"]


def load_embedder(model: str | None = None, *, device: str | None = None, batch_size: int = 64,
                  progress: bool = False) -> Embedder:
    """The sentence-transformers embedder (imported lazily: torch loads only when needed)."""
    from .sentence_transformers import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(model, device=device, batch_size=batch_size, progress=progress)
