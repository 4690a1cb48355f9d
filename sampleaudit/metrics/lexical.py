"""Lexical diversity of a sample set: distinct-n, expectation-adjusted distinct-n and self-BLEU.

Tokens come from `sampleaudit.metrics.text` (words for spaced scripts, characters for Chinese,
Japanese and Korean, punctuation dropped), so every figure works on text without spaces.

- ``distinct_n`` (n = 1, 2, 3; Li et al. 2016): distinct n-grams / n-grams, pooled over the set;
  an n-gram never spans two samples. Higher is more diverse; it falls as the set grows longer.
- ``ead_n`` (Liu et al. 2022, "Rethinking and Refining the Distinct Metric"): distinct n-grams
  divided by the number expected when ``C`` n-grams are drawn uniformly from a vocabulary of
  ``V``: ``V * (1 - ((V - 1) / V) ** C)``. Dividing by the expectation removes most of the
  length effect, so sets of different sizes compare. ``V`` is `ead_vocab_size` (default 50,000,
  about a BPE vocabulary); use the same ``V`` for every set you compare. It can exceed 1.
- ``self_bleu`` (Zhu et al. 2018): the mean over a subsample of smoothed sentence BLEU-4 of each
  sample against all other subsampled samples as references: uniform weights, clipped counts,
  brevity penalty to the closest reference length, and "method 1" smoothing of Chen & Cherry
  (2014): a zero n-gram precision becomes ``epsilon / n-grams`` (epsilon 0.1); a hypothesis
  without one matching unigram scores 0 (nltk's conventions). Higher is less diverse. It is
  O(k^2) in the subsample size k, so the subsample is capped at `self_bleu_sample` (default 200)
  samples with tokens, drawn with `seed` from the samples sorted by text: the same set gives the
  same figure in any order.

Figures that are undefined (no samples, no n-grams, fewer than two samples for self-BLEU) are None.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from .repetition import _check_int, check_texts
from .text import _scan, ngram_keys

SELF_BLEU_SAMPLE = 200
EAD_VOCAB_SIZE = 50_000
BLEU_MAX_N = 4
BLEU_EPSILON = 0.1


@dataclass(frozen=True)
class LexicalResult:
    """Lexical diversity of one sample set (definitions in the module docstring).

    `n_tokens` counts tokens over all samples; `self_bleu_n` is the number of samples the
    self-BLEU figure averages over; `ead_vocab_size` is the V the ead figures assume.
    """

    n_samples: int
    n_tokens: int
    distinct_1: float | None
    distinct_2: float | None
    distinct_3: float | None
    ead_1: float | None
    ead_2: float | None
    ead_3: float | None
    ead_vocab_size: int
    self_bleu: float | None
    self_bleu_n: int


def lexical_diversity(
    texts: Sequence[str],
    *,
    self_bleu_sample: int = SELF_BLEU_SAMPLE,
    seed: int = 0,
    ead_vocab_size: int = EAD_VOCAB_SIZE,
) -> LexicalResult:
    """Distinct-n, expectation-adjusted distinct-n and self-BLEU of `texts` (module docstring).

    >>> r = lexical_diversity(["the cat sat", "the dog sat", "a bird flew"])
    >>> round(r.distinct_1, 3), round(r.distinct_2, 3)
    (0.778, 1.0)
    """
    texts = check_texts(texts)
    self_bleu_sample = _check_int("self_bleu_sample", self_bleu_sample, 2)
    seed = _check_int("seed", seed, 0)
    ead_vocab_size = _check_int("ead_vocab_size", ead_vocab_size, 2)

    ids = [_scan(t).ids for t in texts]
    lengths = np.array([x.size for x in ids], dtype=np.int64)
    distinct: dict[int, float | None] = {}
    ead: dict[int, float | None] = {}
    total = int(lengths.sum())
    keys_by_n = ngram_keys(np.concatenate(ids) if total else np.zeros(0, np.int64), 3)
    if total:  # tokens left in each token's sample, this one included
        sample = np.repeat(np.arange(lengths.size), lengths)
        remaining = np.cumsum(lengths)[sample] - np.arange(total)
    for n in (1, 2, 3):
        keys = keys_by_n[n - 1]
        inside = keys[remaining[: keys.size] >= n] if total else keys
        if inside.size == 0:
            distinct[n] = ead[n] = None
            continue
        n_distinct = int(np.unique(inside).size)
        distinct[n] = n_distinct / inside.size
        ead[n] = n_distinct / _expected_distinct(inside.size, ead_vocab_size)

    # Subsample from the samples sorted by text, so the input order does not matter.
    pool = sorted((i for i in range(len(texts)) if ids[i].size), key=lambda i: texts[i])
    k = min(self_bleu_sample, len(pool))
    sb: float | None = None
    if k >= 2:
        pick = np.sort(np.random.default_rng(seed).choice(len(pool), size=k, replace=False))
        chosen = [ids[pool[i]] for i in pick.tolist()]
        scores = _self_bleu_scores(chosen, BLEU_MAX_N, BLEU_EPSILON)
        sb = math.fsum(scores.tolist()) / k
    return LexicalResult(
        n_samples=len(texts),
        n_tokens=total,
        distinct_1=distinct[1],
        distinct_2=distinct[2],
        distinct_3=distinct[3],
        ead_1=ead[1],
        ead_2=ead[2],
        ead_3=ead[3],
        ead_vocab_size=ead_vocab_size,
        self_bleu=sb if k >= 2 else None,
        self_bleu_n=k if k >= 2 else 0,
    )


def _expected_distinct(n_drawn: int, vocab: int) -> float:
    """Expected distinct items among `n_drawn` uniform draws from `vocab`: V (1 - (1 - 1/V)^C)."""
    return -vocab * math.expm1(n_drawn * math.log1p(-1.0 / vocab))


# --- BLEU ------------------------------------------------------------------------------------


def sentence_bleu(
    hypothesis: Sequence[str],
    references: Sequence[Sequence[str]],
    *,
    max_n: int = BLEU_MAX_N,
    epsilon: float = BLEU_EPSILON,
) -> float:
    """Smoothed sentence BLEU of one token list against reference token lists (uniform weights
    up to `max_n`, clipped counts, closest-reference brevity penalty, method-1 smoothing with
    `epsilon`; the conventions of the module docstring). A plain reference implementation; the
    self-BLEU of `lexical_diversity` computes the same figure vectorised.

    >>> round(sentence_bleu("the cat sat on the mat".split(), ["the cat sat on a mat".split()]), 4)
    0.5373
    """
    if isinstance(hypothesis, str) or any(isinstance(r, str) for r in references):
        raise InputError(
            "sentence_bleu takes token lists, not strings; split or tokenize() them first"
        )
    max_n = _check_int("max_n", max_n, 1)
    if not (isinstance(epsilon, (int, float)) and 0 < epsilon < 1):
        raise InputError(f"epsilon must be a number in (0, 1); got {epsilon!r}")
    hyp = list(hypothesis)
    refs = [list(r) for r in references]
    if not hyp or not refs:
        return 0.0
    log_sum = 0.0
    for n in range(1, max_n + 1):
        counts = Counter(tuple(hyp[i : i + n]) for i in range(len(hyp) - n + 1))
        max_ref: Counter = Counter()
        for r in refs:
            for g, c in Counter(tuple(r[i : i + n]) for i in range(len(r) - n + 1)).items():
                if c > max_ref[g]:
                    max_ref[g] = c
        clipped = sum(min(c, max_ref[g]) for g, c in counts.items())
        denominator = max(1, sum(counts.values()))
        if clipped == 0 and n == 1:
            return 0.0
        precision = (clipped if clipped else epsilon) / denominator
        log_sum += math.log(precision) / max_n
    ref_len = min((len(r) for r in refs), key=lambda rl: (abs(rl - len(hyp)), rl))
    bp = 1.0 if len(hyp) > ref_len else math.exp(1 - ref_len / len(hyp))
    return bp * math.exp(log_sum)


def _self_bleu_scores(id_lists: list[np.ndarray], max_n: int, epsilon: float) -> np.ndarray:
    """BLEU of each token-id list against all the others, vectorised.

    For every n-gram only the largest and second-largest count over the lists are needed: a
    hypothesis's clip is the largest count among the *other* lists, which is the second-largest
    when the hypothesis holds the largest itself.
    """
    k = len(id_lists)
    lengths = np.array([x.size for x in id_lists], dtype=np.int64)
    log_sum = np.zeros(k)
    no_unigram_match = np.zeros(k, dtype=bool)
    per_list = [ngram_keys(x, max_n) for x in id_lists]
    for n in range(1, max_n + 1):
        rows_key, rows_list, rows_count = [], [], []
        for j, keys in enumerate(per_list):
            uniq, counts = np.unique(keys[n - 1], return_counts=True)
            rows_key.append(uniq)
            rows_list.append(np.full(uniq.size, j, dtype=np.int64))
            rows_count.append(counts.astype(np.int64))
        key = np.concatenate(rows_key)
        owner = np.concatenate(rows_list)
        count = np.concatenate(rows_count)
        clipped = np.zeros(k)
        if key.size:
            order = np.lexsort((-count, key))  # by key, then count descending
            key, owner, count = key[order], owner[order], count[order]
            first = np.empty(key.size, dtype=bool)
            first[0] = True
            np.not_equal(key[1:], key[:-1], out=first[1:])
            group = np.cumsum(first) - 1
            head = np.flatnonzero(first)
            top1 = count[head]
            top1_owner = owner[head]
            has_second = np.append(head[1:], key.size) - head >= 2
            top2 = np.where(has_second, count[np.minimum(head + 1, key.size - 1)], 0)
            ref = np.where(top1_owner[group] == owner, top2[group], top1[group])
            clipped = np.bincount(owner, weights=np.minimum(count, ref), minlength=k)
        denominator = np.maximum(lengths - n + 1, 1).astype(np.float64)
        if n == 1:
            no_unigram_match = clipped == 0
        precision = np.where(clipped > 0, clipped, epsilon) / denominator
        log_sum += np.log(precision) / max_n
    # Brevity penalty against the closest other length (ties: the shorter).
    ref_len = np.empty(k, dtype=np.float64)
    for j in range(k):
        others = np.delete(lengths, j)
        dist = np.abs(others - lengths[j])
        best = np.flatnonzero(dist == dist.min())
        ref_len[j] = others[best].min()
    hyp_len = lengths.astype(np.float64)
    bp = np.where(hyp_len > ref_len, 1.0, np.exp(1.0 - ref_len / np.maximum(hyp_len, 1.0)))
    scores = bp * np.exp(log_sum)
    scores[no_unigram_match | (lengths == 0)] = 0.0
    return scores
