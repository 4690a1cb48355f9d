"""Vendi score: the effective number of distinct samples (Friedman & Dieng, 2023).

Vendi = exp(Shannon entropy of the eigenvalues of K/n), K the cosine kernel of the samples.
With L2-normalised rows X, K/n = X X^T / n has the same nonzero eigenvalues as the d*d matrix
X^T X / n, so the score costs O(n d^2) and never forms the n*n kernel. It lies in
[1, min(n, d)]: 1 when all samples are identical, n when they are mutually orthogonal.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits

from ..errors import InputError
from ._validate import check_embeddings, check_unit_norm


@dataclass(frozen=True)
class VendiSubsample:
    """Vendi score of a reference set on seeded subsamples of a given size (mean over draws)."""

    mean: float
    std: float
    subsample_size: int
    n_reference: int
    n_draws: int
    whole_reference: bool  # True when the reference was not larger than the subsample size


@dataclass(frozen=True)
class VendiResult:
    """Vendi score of the samples, and of the baseline on subsamples of the same size.

    `relative_score` = vendi_score / baseline.mean: about 1 when the samples are as diverse as
    the training data, lower when they are less diverse.
    """

    n_samples: int
    vendi_score: float
    baseline: VendiSubsample | None
    relative_score: float | None


def _vendi_from_covs(covs, max_score: int) -> list[float]:
    """Vendi from each X^T X in `covs` (any positive scale: eigenvalues are normalised)."""
    # One BLAS thread: multithreaded LAPACK gains nothing on a d*d matrix this small and
    # collapses under CPU contention (3 s instead of 0.06 s for d = 384 on a loaded 2-core box).
    out = []
    with threadpool_limits(1, user_api="blas"):
        for cov in covs:
            eig = np.clip(np.linalg.eigvalsh(cov), 0.0, None)
            total = eig.sum()  # n for unit rows; normalising also copes with zero rows
            if total <= 0:  # only zero rows: nothing to tell apart
                out.append(1.0)
                continue
            p = eig[eig > 1e-12 * total] / total
            out.append(float(np.clip(np.exp(-(p * np.log(p)).sum()), 1.0, max_score)))
    return out


_CAST_ROWS = 2048  # rows cast to float64 at a time: the copy stays a few MiB at any n


def gram64(x: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
    """X^T X in float64 of `x` (or of its `rows`), a chunk of rows cast at a time (O(d^2) memory)."""
    d = x.shape[1]
    gram = np.zeros((d, d))
    total = x.shape[0] if rows is None else rows.size
    for start in range(0, total, _CAST_ROWS):
        part = slice(start, start + _CAST_ROWS)
        chunk = (x[part] if rows is None else x[rows[part]]).astype(np.float64)
        gram += chunk.T @ chunk
    return gram


def _vendi(x: np.ndarray) -> float:
    """Vendi score of L2-normalised rows (trusted input)."""
    n, d = x.shape
    # Same nonzero eigenvalues either way; take the smaller matrix (d*d unless n < d).
    if n < d:
        x64 = x.astype(np.float64)
        return _vendi_from_covs([x64 @ x64.T], n)[0]
    return _vendi_from_covs([gram64(x)], d)[0]


def vendi_score(embeddings) -> float:
    """Vendi score of the rows of `embeddings` (cosine kernel), in [1, min(n, d)]."""
    return round(_vendi(check_unit_norm(check_embeddings(embeddings))), 6)


def _subsample_vendi(x: np.ndarray, n: int, seed: int, n_draws: int) -> VendiSubsample:
    if x.shape[0] <= n:
        values = [_vendi(x)]
    else:
        rng = np.random.default_rng(seed)
        values = [_vendi(x[rng.choice(x.shape[0], n, replace=False)]) for _ in range(n_draws)]
    return VendiSubsample(
        mean=round(float(np.mean(values)), 6),
        std=round(float(np.std(values)), 6),
        subsample_size=min(n, x.shape[0]),
        n_reference=int(x.shape[0]),
        n_draws=len(values),
        whole_reference=x.shape[0] <= n,
    )


def _check_draws(n: int, n_draws: int) -> None:
    if n < 1:
        raise InputError(f"subsample size must be >= 1; got {n}")
    if n_draws < 1:
        raise InputError(f"n_draws must be >= 1; got {n_draws}")


def vendi_on_subsample(embeddings, n: int, *, seed: int = 0, n_draws: int = 5) -> VendiSubsample:
    """Vendi of `embeddings` on `n_draws` seeded subsamples of `n` rows (without replacement).

    Vendi grows with the number of samples, so a baseline must be measured at the checkpoint's
    size to be comparable. When the reference has <= n rows it is used whole, once.
    """
    _check_draws(n, n_draws)
    return _subsample_vendi(check_unit_norm(check_embeddings(embeddings)), n, seed, n_draws)


def vendi(embeddings, *, baseline=None, seed: int = 0, n_draws: int = 5) -> VendiResult:
    """Vendi score of the samples and, with a baseline, of the baseline at the same size."""
    x = check_unit_norm(check_embeddings(embeddings))
    _check_draws(x.shape[0], n_draws)
    score = round(_vendi(x), 6)
    ref = None
    if baseline is not None:
        b = check_unit_norm(check_embeddings(baseline, name="baseline embeddings"))
        if b.shape[1] != x.shape[1]:
            raise InputError(
                f"baseline embeddings have dim {b.shape[1]} but samples have {x.shape[1]}; "
                "embed both with the same model"
            )
        ref = _subsample_vendi(b, x.shape[0], seed, n_draws)
    return VendiResult(
        n_samples=int(x.shape[0]),
        vendi_score=score,
        baseline=ref,
        relative_score=round(score / ref.mean, 6) if ref is not None else None,
    )
