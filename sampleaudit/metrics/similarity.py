"""Pairwise cosine-similarity distribution and nearest-neighbour similarity, computed in blocks.

Memory stays O(n * block_size): the n*n similarity matrix is never held at once. Quantiles of
the pairwise distribution come from a fine histogram (bin width 0.001), so they are exact to
within 0.001 whatever n is. `device` (None: numpy) runs the blocks with torch on that device
("cuda" on a GPU machine; "cpu" runs the very same torch code, which is how it is tested).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from ._validate import check_embeddings, check_unit_norm

# Resolution of the internal histogram the quantiles are read from.
_FINE_BINS = 2000


@dataclass(frozen=True)
class Histogram:
    """Counts over equal-width bins; `edges` has one more entry than `counts`."""

    edges: list[float]
    counts: list[int]


@dataclass(frozen=True)
class Distribution:
    """Summary of a distribution of similarity values."""

    mean: float
    quantiles: dict[str, float]
    histogram: Histogram


@dataclass(frozen=True)
class SimilarPair:
    """Two samples (by index into the input) and their cosine similarity."""

    i: int
    j: int
    similarity: float


@dataclass(frozen=True)
class SimilarityResult:
    """Pairwise and nearest-neighbour cosine similarity of one set of embeddings.

    `high_similarity_share` is the fraction of samples whose most similar other sample has
    cosine >= `threshold`: the reading of the source article's "more than 30% highly similar".
    """

    n_samples: int
    mean: float
    quantiles: dict[str, float]
    histogram: Histogram
    nearest_neighbor: Distribution
    threshold: float
    high_similarity_share: float
    n_high_similarity: int


@dataclass(frozen=True)
class NearestNeighbors:
    """Per-sample nearest neighbour (index, cosine) and the pairwise histogram, from one pass."""

    index: np.ndarray  # (n,) int64
    similarity: np.ndarray  # (n,) float32
    pair_counts: np.ndarray  # (_FINE_BINS,) int64 counts over [-1, 1]
    pair_sum: float
    n_pairs: int


def iter_similarity_blocks(
    x: np.ndarray, y: np.ndarray | None = None, *, block_size: int = 1024
) -> Iterator[tuple[int, np.ndarray]]:
    """Yield (row offset, x[rows] @ y.T) in row blocks; y defaults to x. Inputs are trusted."""
    y = x if y is None else y
    for start in range(0, x.shape[0], block_size):
        yield start, x[start : start + block_size] @ y.T


def similarity_device(name: str | None = "auto") -> str | None:
    """The torch device the similarity blocks run on, or None for numpy.

    "auto": "cuda" when torch is installed and sees a GPU, else None (numpy); "numpy": None;
    "cpu", "cuda", "cuda:N": that torch device (no check here; torch raises if it is absent).
    """
    if name in (None, "numpy"):
        return None
    if name != "auto":
        return name
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        return None
    import torch

    return "cuda" if torch.cuda.is_available() else None


def _nearest_neighbors_torch(embeddings: np.ndarray, block_size: int, device: str) -> NearestNeighbors:
    """nearest_neighbors with torch on `device`: the same blocks, bins and ties as the numpy path."""
    import torch

    n = embeddings.shape[0]
    x = torch.from_numpy(np.ascontiguousarray(embeddings, dtype=np.float32)).to(device)
    cols = torch.arange(n, device=device)
    counts = torch.zeros(_FINE_BINS, dtype=torch.int64, device=device)
    total = torch.zeros((), dtype=torch.float64, device=device)
    nn_idx = torch.empty(n, dtype=torch.int64, device=device)
    nn_sim = torch.empty(n, dtype=torch.float32, device=device)
    with torch.inference_mode():
        for start in range(0, n, block_size):
            sims = (x[start : start + block_size] @ x.T).clamp_(-1.0, 1.0)
            rows = cols[start : start + sims.shape[0]]
            pairs = sims[cols[None, :] > rows[:, None]]
            total += pairs.sum(dtype=torch.float64)
            bins = ((pairs + 1.0) * (_FINE_BINS / 2)).to(torch.int32).clamp_(max=_FINE_BINS - 1)
            counts += torch.bincount(bins, minlength=_FINE_BINS)
            del pairs, bins
            local = torch.arange(sims.shape[0], device=device)
            sims[local, rows] = -torch.inf
            best = sims.argmax(dim=1)  # first maximum, as numpy's argmax
            nn_idx[rows] = best
            nn_sim[rows] = sims[local, best]
    return NearestNeighbors(nn_idx.cpu().numpy(), nn_sim.cpu().numpy(), counts.cpu().numpy(), float(total.item()),
                            n * (n - 1) // 2)


def nearest_neighbors(embeddings: np.ndarray, *, block_size: int = 1024, device: str | None = None) -> NearestNeighbors:
    """One blockwise pass: each row's most similar other row, and the histogram of all pairs.

    Trusts its input: float32, L2-normalised, finite, at least 2 rows. `device`: None for numpy,
    else the torch device to run on (results equal numpy's within float tolerance).
    """
    if device is not None:
        return _nearest_neighbors_torch(embeddings, block_size, device)
    n = embeddings.shape[0]
    nn_idx = np.empty(n, dtype=np.int64)
    nn_sim = np.empty(n, dtype=np.float32)
    counts = np.zeros(_FINE_BINS, dtype=np.int64)
    total = 0.0
    for start, sims in iter_similarity_blocks(embeddings, block_size=block_size):
        rows = np.arange(start, start + sims.shape[0])
        np.clip(sims, -1.0, 1.0, out=sims)
        pairs = sims[np.arange(n)[None, :] > rows[:, None]]  # this block's part of the upper triangle
        total += float(pairs.sum(dtype=np.float64))
        pairs += 1.0  # in place, then float32 -> int32 bins: the block's memory is reused
        pairs *= _FINE_BINS / 2
        bins = pairs.astype(np.int32)
        del pairs
        np.minimum(bins, _FINE_BINS - 1, out=bins)
        counts += np.bincount(bins, minlength=_FINE_BINS)
        del bins
        sims[np.arange(sims.shape[0]), rows] = -np.inf
        nn_idx[rows] = sims.argmax(axis=1)
        nn_sim[rows] = sims[np.arange(sims.shape[0]), nn_idx[rows]]
    return NearestNeighbors(nn_idx, nn_sim, counts, total, n * (n - 1) // 2)


def _quantiles_from_counts(counts: np.ndarray, qs: dict[str, float]) -> dict[str, float]:
    """Quantiles of values binned over [-1, 1], linearly interpolated inside the bin."""
    cum = np.cumsum(counts)
    width = 2.0 / counts.size
    out = {}
    for name, q in qs.items():
        target = q * cum[-1]
        b = int(np.searchsorted(cum, target, side="left"))
        before = cum[b - 1] if b > 0 else 0
        frac = (target - before) / counts[b] if counts[b] else 0.0
        out[name] = round(float(-1.0 + (b + frac) * width), 6)
    return out


_QUANTILES = {"p10": 0.10, "p50": 0.50, "p90": 0.90, "p99": 0.99}


def _coarse_histogram(counts: np.ndarray, n_bins: int) -> Histogram:
    """Merge the fine histogram over [-1, 1] into `n_bins` equal bins (n_bins divides it)."""
    merged = counts.reshape(n_bins, -1).sum(axis=1)
    edges = np.linspace(-1.0, 1.0, n_bins + 1)
    return Histogram([round(float(e), 6) for e in edges], [int(c) for c in merged])


def _distribution(values: np.ndarray, n_bins: int) -> Distribution:
    fine = np.bincount(
        np.minimum(((np.clip(values, -1, 1) + 1.0) * (_FINE_BINS / 2)).astype(np.int64), _FINE_BINS - 1),
        minlength=_FINE_BINS,
    )
    return Distribution(
        mean=round(float(values.mean(dtype=np.float64)), 6),
        quantiles={k: round(float(np.quantile(values, q)), 6) for k, q in _QUANTILES.items()},
        histogram=_coarse_histogram(fine, n_bins),
    )


def similarity_distribution(
    embeddings, *, threshold: float, block_size: int = 1024, n_bins: int = 100, device: str | None = None
) -> tuple[SimilarityResult, NearestNeighbors]:
    """Pairwise cosine-similarity distribution and nearest-neighbour similarity.

    Rows are L2-normalised first. Returns the summary and the per-sample nearest neighbours
    (kept out of the summary so callers can list the most similar pairs by id).
    `n_bins` must divide 2000 (e.g. 40, 50, 100, 200). `device`: None (numpy) or a torch device
    (see similarity_device).
    """
    x = check_unit_norm(check_embeddings(embeddings, min_rows=2))
    if not -1.0 <= threshold <= 1.0:
        raise InputError(f"similarity threshold must lie in [-1, 1]; got {threshold}")
    if block_size < 1:
        raise InputError(f"block_size must be a positive integer; got {block_size}")
    if n_bins < 1 or _FINE_BINS % n_bins:
        raise InputError(f"n_bins must divide {_FINE_BINS}; got {n_bins}")
    nn = nearest_neighbors(x, block_size=block_size, device=device)
    high = int((nn.similarity >= threshold).sum())
    result = SimilarityResult(
        n_samples=int(x.shape[0]),
        mean=round(nn.pair_sum / nn.n_pairs, 6),
        quantiles=_quantiles_from_counts(nn.pair_counts, _QUANTILES),
        histogram=_coarse_histogram(nn.pair_counts, n_bins),
        nearest_neighbor=_distribution(nn.similarity, n_bins),
        threshold=float(threshold),
        high_similarity_share=round(high / x.shape[0], 6),
        n_high_similarity=high,
    )
    return result, nn


def most_similar_pairs(nn: NearestNeighbors, *, k: int = 10) -> list[SimilarPair]:
    """The k most similar distinct pairs among each sample's nearest neighbour."""
    seen: set[tuple[int, int]] = set()
    out: list[SimilarPair] = []
    for i in np.argsort(-nn.similarity, kind="stable"):
        pair = tuple(sorted((int(i), int(nn.index[i]))))
        if pair in seen:
            continue
        seen.add(pair)
        out.append(SimilarPair(pair[0], pair[1], round(float(nn.similarity[i]), 6)))
        if len(out) == k:
            break
    return out
