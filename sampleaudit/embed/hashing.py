"""A deterministic hashing embedder (character n-grams) for fast tests: no model, no torch."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .base import normalize_rows


class HashingEmbedder:
    """Character 3-5-gram counts hashed into `dim` buckets; similar strings get similar vectors.

    For unit tests only: it knows nothing of meaning.
    """

    device = "cpu"
    precision = "fp32"

    def __init__(self, dim: int = 256):
        from sklearn.feature_extraction.text import HashingVectorizer

        self.dim = dim
        self.model_id = f"hashing-char-3-5-{dim}"
        self._vectorizer = HashingVectorizer(
            analyzer="char_wb", ngram_range=(3, 5), n_features=dim, alternate_sign=False, norm=None
        )

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return normalize_rows(self._vectorizer.transform(list(texts)).toarray())
