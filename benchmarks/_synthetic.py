"""Synthetic audit inputs for the scale benchmarks: clustered unit vectors and short texts.

`make_set(n, seed=..., n_topics=..., dim=...)` draws n rows around n_topics random directions
(a mixture of von Mises-like blobs on the sphere), with texts built from each topic's own words,
so clustering, coverage and the text metrics all have something real to find. A "collapsed"
set draws from only the first few topics and repeats itself more.
"""

from __future__ import annotations

import numpy as np

WORDS = 4000


def _centres(n_topics: int, dim: int) -> np.ndarray:
    c = np.random.default_rng(12345).normal(size=(n_topics, dim))
    return (c / np.linalg.norm(c, axis=1, keepdims=True)).astype(np.float32)


def make_set(n: int, *, seed: int, n_topics: int = 30, dim: int = 384, used_topics: int | None = None,
             spread: float = 0.045) -> tuple[list[str], np.ndarray]:
    """(texts, float32 unit embeddings) of n synthetic samples (see the module docstring)."""
    rng = np.random.default_rng(seed)
    centres = _centres(n_topics, dim)
    k = used_topics or n_topics
    weights = rng.dirichlet(np.full(k, 5.0))
    topic = rng.choice(k, size=n, p=weights)
    x = centres[topic] + rng.normal(scale=spread, size=(n, dim)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    vocab = np.array([f"w{i}" for i in range(WORDS)])
    per_topic = WORDS // n_topics
    lengths = rng.integers(12, 40, size=n)
    texts = []
    for t, length in zip(topic, lengths):
        own = rng.integers(0, per_topic, size=length) + t * per_topic
        common = rng.integers(0, WORDS, size=length)
        pick = np.where(rng.random(length) < 0.7, own, common)
        texts.append(" ".join(vocab[pick]) + f" {rng.integers(1_000_000)}.")
    return texts, x.astype(np.float32)
