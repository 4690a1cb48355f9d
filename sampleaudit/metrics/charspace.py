"""A lexical text representation for coverage on scripts the embedder was not trained on.

all-MiniLM-L6-v2 was trained on English: on Chinese its vectors do not follow topics, and its
clusters of a Chinese baseline cover a narrow checkpoint as fully as a healthy one. Character
n-grams do follow topics in any script (in Chinese, character bigrams are most of its words), so
for such a baseline coverage clusters these instead:

1. TF-IDF of character 1- and 2-grams (sublinear tf, idf smoothed, n-grams in at least 2 baseline
   texts, the MAX_FEATURES most frequent kept), fitted on the baseline only;
2. truncated SVD to N_COMPONENTS dimensions (latent semantic analysis; seeded), rows
   L2-normalised, then clustered and assigned exactly like embeddings (metrics.coverage).

`CharSpace` is plain arrays (vocabulary, idf, SVD components), so a Reference saves it to its .npz
without pickling, and `transform` maps checkpoint texts into the same space.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

NGRAM_RANGE = (1, 2)
MAX_FEATURES = 20000
MIN_DF = 2
N_COMPONENTS = 100


def _counter(vocabulary=None):
    from sklearn.feature_extraction.text import CountVectorizer

    return CountVectorizer(analyzer="char", ngram_range=NGRAM_RANGE, lowercase=True, vocabulary=vocabulary,
                           min_df=1 if vocabulary is not None else MIN_DF,
                           max_features=None if vocabulary is not None else MAX_FEATURES, dtype=np.float64)


def _unit_rows(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)


@dataclass(frozen=True)
class CharSpace:
    """A fitted character n-gram TF-IDF + SVD space (see the module docstring)."""

    vocabulary: list[str]  # n-gram of each TF-IDF column
    idf: np.ndarray  # (n_features,)
    components: np.ndarray  # (n_components, n_features)

    @property
    def dim(self) -> int:
        return int(self.components.shape[0])

    def tfidf(self, texts: Sequence[str]):
        from sklearn.preprocessing import normalize

        counts = _counter({g: i for i, g in enumerate(self.vocabulary)}).transform(list(texts))
        counts.data = 1.0 + np.log(counts.data)  # sublinear tf
        return normalize(counts.multiply(self.idf).tocsr())

    def transform(self, texts: Sequence[str]) -> np.ndarray:
        """Unit rows (float32) of `texts` in the space; a text with no known n-gram is a zero row
        made unit by a constant direction (it then sits apart from every topic)."""
        z = _unit_rows(np.asarray(self.tfidf(texts) @ self.components.T, dtype=np.float64))
        empty = ~z.any(axis=1)
        if empty.any():
            z[empty] = 1.0 / np.sqrt(z.shape[1])
        return z.astype(np.float32)

    def to_arrays(self) -> tuple[dict, dict[str, np.ndarray]]:
        return ({"vocabulary": self.vocabulary},
                {"idf": self.idf.astype(np.float64), "components": self.components.astype(np.float32)})

    @classmethod
    def from_arrays(cls, header: dict, arrays: dict[str, np.ndarray]) -> CharSpace:
        return cls(list(header["vocabulary"]), np.asarray(arrays["idf"], dtype=np.float64),
                   np.asarray(arrays["components"], dtype=np.float32))


def fit_char_space(texts: Sequence[str], *, seed: int = 0) -> CharSpace:
    """Fit the space on the baseline's texts (at least 3 texts sharing some n-grams)."""
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfTransformer

    texts = list(texts)
    counter = _counter()
    try:
        counts = counter.fit_transform(texts)
    except ValueError:  # no n-gram in two texts: sklearn's "After pruning, no terms remain"
        counter = _counter()
        counter.min_df = 1
        counts = counter.fit_transform(texts)
    vocabulary = [g for g, _ in sorted(counter.vocabulary_.items(), key=lambda kv: kv[1])]
    tfidf = TfidfTransformer(sublinear_tf=True)
    x = tfidf.fit_transform(counts)
    k = max(1, min(N_COMPONENTS, x.shape[1] - 1, x.shape[0] - 1))
    svd = TruncatedSVD(n_components=k, random_state=seed, algorithm="randomized", n_iter=7).fit(x)
    return CharSpace(vocabulary, tfidf.idf_.astype(np.float64), svd.components_.astype(np.float32))
