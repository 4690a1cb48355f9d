"""Seeded bootstrap intervals for the headline metrics, and a rule for "differs beyond noise".

Intervals are percentile bootstraps (default 200 resamples, 95%), except Vendi's: a seeded
delete-group jackknife (see `vendi_interval`). Two values are compared by their intervals:
overlapping intervals are "within noise". That rule needs only stored results (a comparison
across saved audits has no per-sample arrays left) and is conservative: two 95% intervals that
do not overlap mean a difference at well below the 5% level.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

from ..errors import InputError
from ._validate import check_embeddings, check_unit_norm
from .coverage import BaselineClusters, _counts, _covered
from .vendi import _vendi_from_covs, gram64

DEFAULT_N_RESAMPLES = 200
DEFAULT_CONFIDENCE = 0.95
VENDI_JACKKNIFE_GROUPS = 20


@dataclass(frozen=True)
class Interval:
    """A confidence interval [low, high]."""

    low: float
    high: float


@dataclass(frozen=True)
class Comparison:
    """How a value b compares with a value a: `difference` = b - a.

    `verdict`: "higher" or "lower" when the intervals do not overlap, else "within_noise".
    """

    difference: float
    verdict: str


def _check_confidence(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise InputError(f"confidence must lie strictly between 0 and 1; got {confidence}")


def _check_options(n_resamples: int, confidence: float) -> None:
    if n_resamples < 2:
        raise InputError(f"n_resamples must be >= 2; got {n_resamples}")
    _check_confidence(confidence)


def _percentiles(values: np.ndarray, confidence: float) -> Interval:
    low, high = np.quantile(values, [(1 - confidence) / 2, (1 + confidence) / 2])
    return Interval(round(float(low), 6), round(float(high), 6))


def _resample_indices(n: int, n_resamples: int, seed: int):
    rng = np.random.default_rng(seed)
    for _ in range(n_resamples):
        yield rng.integers(0, n, n)


def bootstrap_interval(
    data,
    statistic: Callable[[np.ndarray], float],
    *,
    n_resamples: int = DEFAULT_N_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = 0,
) -> Interval:
    """Percentile bootstrap interval of `statistic(data)`, resampling rows (axis 0) of `data`."""
    _check_options(n_resamples, confidence)
    arr = np.asarray(data)
    if arr.ndim < 1 or arr.shape[0] < 1:
        raise InputError(f"data needs at least one row to resample; got shape {arr.shape}")
    indices = _resample_indices(len(arr), n_resamples, seed)
    values = np.array([float(statistic(arr[i])) for i in indices])
    return _percentiles(values, confidence)


def high_similarity_share_interval(
    nn_similarity,
    *,
    threshold: float,
    n_resamples: int = DEFAULT_N_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = 0,
) -> Interval:
    """Interval of high_similarity_share, resampling the per-sample indicators nn_sim >= threshold.

    Each sample's nearest neighbour stays the one found in the full set. Re-running the
    neighbour search on a resample would be wrong: sampling with replacement creates exact
    duplicates, whose nearest-neighbour similarity is 1, inflating the share.
    """
    sims = np.asarray(nn_similarity, dtype=np.float64)
    if sims.ndim != 1 or sims.size < 1 or not np.isfinite(sims).all():
        raise InputError(
            "nn_similarity must be a 1-D finite array of per-sample nearest-neighbour similarities "
            "(NearestNeighbors.similarity from similarity_distribution)"
        )
    if not -1.0 <= threshold <= 1.0:
        raise InputError(f"similarity threshold must lie in [-1, 1]; got {threshold}")
    return bootstrap_interval(
        sims >= threshold, np.mean, n_resamples=n_resamples, confidence=confidence, seed=seed
    )


def vendi_interval(
    embeddings,
    *,
    n_groups: int = VENDI_JACKKNIFE_GROUPS,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = 0,
) -> Interval:
    """Interval of the Vendi score: delete-group jackknife over seeded random groups of rows.

    Not a with-replacement bootstrap, for two reasons. Duplicated rows lower Vendi (a resample
    holds ~63% of the distinct rows), so bootstrap values sit below the estimate. And each
    bootstrap value needs its own d*d eigendecomposition (200 of them take seconds), while the
    jackknife reuses per-group covariance pieces: one pass over the rows and `n_groups`
    eigendecompositions. Interval: estimate +- z * jackknife standard error (on synthetic data
    it matched the bootstrap's spread and the spread over fresh draws).
    """
    if n_groups < 2:
        raise InputError(f"n_groups must be >= 2; got {n_groups}")
    _check_confidence(confidence)
    x = check_unit_norm(check_embeddings(embeddings, min_rows=2))
    n, d = x.shape
    g = min(n_groups, n)
    group = np.random.default_rng(seed).permutation(n) % g
    # each group's X^T X in float64, a chunk of its rows cast at a time (O(d^2) memory at any n)
    pieces = [gram64(x, np.flatnonzero(group == k)) for k in range(g)]
    total = sum(pieces[1:], pieces[0])
    estimate, *rest = _vendi_from_covs(itertools.chain([total], (total - p for p in pieces)), min(n, d))
    values = np.array(rest)
    se = float(np.sqrt((g - 1) / g * ((values - values.mean()) ** 2).sum()))
    half = float(norm.ppf((1 + confidence) / 2)) * se
    return Interval(
        round(max(estimate - half, 1.0), 6), round(min(estimate + half, float(min(n, d))), 6)
    )


def coverage_interval(
    clusters: BaselineClusters,
    sample_embeddings,
    *,
    min_mass_ratio: float = 0.5,
    n_resamples: int = DEFAULT_N_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = 0,
    labels: np.ndarray | None = None,
) -> Interval:
    """Interval of coverage_ratio, resampling the samples' cluster assignments.

    The baseline partition is held fixed (no re-clustering): this measures how much the
    checkpoint's finite sample moves coverage, which is what comparisons between checkpoints need.
    `labels` (from `clusters.assign(sample_embeddings)`) saves assigning the samples again.
    """
    _check_options(n_resamples, confidence)
    if not min_mass_ratio > 0:
        raise InputError(f"min_mass_ratio must be > 0; got {min_mass_ratio}")
    labels = clusters.assign(sample_embeddings) if labels is None else labels
    k = clusters.n_clusters
    values = np.array([
        _covered(_counts(labels[i], k), clusters.shares, min_mass_ratio).sum() / k
        for i in _resample_indices(labels.size, n_resamples, seed)
    ])
    return _percentiles(values, confidence)


def compare(a: float, a_interval: Interval, b: float, b_interval: Interval) -> Comparison:
    """Compare value b with value a: "within_noise" when their intervals overlap."""
    if b_interval.low > a_interval.high:
        verdict = "higher"
    elif b_interval.high < a_interval.low:
        verdict = "lower"
    else:
        verdict = "within_noise"
    return Comparison(difference=round(float(b) - float(a), 6), verdict=verdict)
