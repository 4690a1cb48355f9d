"""Cluster labels: each cluster's most distinctive terms, by class-based TF-IDF.

All texts of a cluster are treated as one document (c-TF-IDF, as in BERTopic): a term's weight in
cluster c is its frequency there (as a share of the cluster's terms) times log(1 + A / f), where A
is the average number of terms per cluster and f the term's frequency over all clusters, so a term
frequent in one cluster and rare elsewhere scores highest. Terms come from the language-agnostic
tokenizer the repetition metrics use (sampleaudit.metrics.text): words of three or more letters
that are not English stop words or numbers, and for Chinese, Japanese and Korean, pairs of
adjacent characters (single characters are too ambiguous to name a topic). A term must occur in
at least two of a cluster's texts (when it has two or more), so one text's quirk does not name
its cluster. Above MAX_TEXTS (20,000) clustered texts, the terms are read from a seeded sample
of that many (tokenizing is linear but not free: 100,000 texts took ~25 s on 2 cores).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import InputError
from .text import tokenize

N_TERMS = 3
MAX_TEXTS = 20_000
_CJK_RANGES = ((0x3040, 0x30FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xAC00, 0xD7AF), (0xF900, 0xFAFF))


def _is_cjk(token: str) -> bool:
    return len(token) == 1 and any(lo <= ord(token) <= hi for lo, hi in _CJK_RANGES)


def terms(text: str) -> list[str]:
    """The label terms of one text (see the module docstring), in order."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    tok = tokenize(text)
    out = []
    for i, t in enumerate(tok.tokens):
        if _is_cjk(t):
            if i + 1 < len(tok.tokens) and _is_cjk(tok.tokens[i + 1]) and tok.ends[i] == tok.starts[i + 1]:
                out.append(t + tok.tokens[i + 1])
        elif len(t) >= 3 and t.isalpha() and t not in ENGLISH_STOP_WORDS:
            out.append(t)
    return out


def cluster_terms(texts: Sequence[str], labels: Sequence[int], n_clusters: int, *,
                  n_terms: int = N_TERMS, seed: int = 0) -> list[list[str]]:
    """The `n_terms` most distinctive terms of each cluster 0..n_clusters-1 (label -1: none).

    Ties are broken by the term's text, so up to MAX_TEXTS clustered texts the result does not
    depend on row order (above, a seeded sample of them is read). A cluster without any eligible
    term gets an empty list.
    """
    from scipy.sparse import csr_matrix
    from sklearn.feature_extraction.text import CountVectorizer

    labels = np.asarray(labels, dtype=np.int64)
    if len(texts) != labels.size:
        raise InputError(f"texts and labels must have the same length; got {len(texts)} and {labels.size}")
    if n_terms < 1:
        raise InputError(f"n_terms must be >= 1; got {n_terms}")
    keep = labels >= 0
    if keep.sum() > MAX_TEXTS:
        chosen = np.random.default_rng(seed).choice(np.flatnonzero(keep), MAX_TEXTS, replace=False)
        keep = np.zeros(labels.size, dtype=bool)
        keep[chosen] = True
    if n_clusters < 1 or not keep.any():
        return [[] for _ in range(max(n_clusters, 0))]
    vectorizer = CountVectorizer(analyzer=terms)
    try:
        counts = vectorizer.fit_transform([t for t, k in zip(texts, keep) if k])
    except ValueError:  # no text has a single eligible term
        return [[] for _ in range(n_clusters)]
    rows = labels[keep]
    member = csr_matrix((np.ones(rows.size), (rows, np.arange(rows.size))), shape=(n_clusters, rows.size))
    per_cluster = np.asarray((member @ counts).todense(), dtype=np.float64)  # (K, V) term counts
    docs = np.asarray((member @ (counts > 0).astype(np.float64)).todense())  # texts holding each term
    sizes = np.bincount(rows, minlength=n_clusters)
    totals = per_cluster.sum(axis=1, keepdims=True)
    tf = np.divide(per_cluster, totals, out=np.zeros_like(per_cluster), where=totals > 0)
    average = per_cluster.sum() / n_clusters
    idf = np.log1p(average / np.maximum(per_cluster.sum(axis=0), 1.0))
    score = tf * idf
    score[(docs < 2) & (sizes[:, None] >= 2)] = 0.0
    vocab = vectorizer.get_feature_names_out()
    out = []
    for k in range(n_clusters):
        scored = np.flatnonzero(score[k] > 0)
        best = sorted(scored, key=lambda j: (-score[k, j], vocab[j]))[:n_terms]
        out.append([str(vocab[j]) for j in best])
    return out


def label(terms_: Sequence[str]) -> str:
    """Terms as one short label: "plasmid / sequencing / genome" ("" when there are none)."""
    return " / ".join(terms_)
