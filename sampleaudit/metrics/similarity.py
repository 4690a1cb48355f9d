"""Pairwise cosine-similarity distribution and nearest-neighbour similarity, computed in blocks.

Memory stays O(n * block_size): the n*n similarity matrix is never held at once (a block holds at
most BLOCK_ELEMENTS similarities, fewer rows when n is large). Quantiles of the pairwise
distribution come from a fine histogram (bin width 0.001), so they are exact to within 0.001.

Scale: the search is O(n^2) compute (every pair is looked at). Up to EXACT_MAX_ROWS (10,000)
rows every figure is exact. Above, the nearest neighbour (searched among all n rows, so each
value found is exact) is found for a seeded sample of SAMPLED_QUERY_ROWS (10,000) query rows,
and the pairwise histogram comes from every pair with an end among HISTOGRAM_ROWS (2,000) of
them (every fifth): O(n * 10,000) products, O(n * 2,000) pairs binned.
high_similarity_share and the nearest-neighbour figures are then estimates over the query rows
(95% error bound: the normal binomial half-width), the pairwise quantiles estimates with a 95%
bound from their spread over ERROR_GROUPS (20) groups of the binned rows (plus the bin width), and the pairwise mean
stays exact (for unit rows, the sum over pairs is (|sum x|^2 - n) / 2, O(n d)). `estimate` says so.
On a torch `device` ("cuda" on a GPU machine; "cpu" runs the very same torch code, which is how
it is tested) the exact pass runs its blocks with torch; a sampled pass runs on numpy.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from ._validate import check_embeddings, check_unit_norm

# Resolution of the internal histogram the quantiles are read from.
_FINE_BINS = 2000
EXACT_MAX_ROWS = 10_000
SAMPLED_QUERY_ROWS = 10_000
HISTOGRAM_ROWS = 2_000  # query rows whose pairs are binned in a sampled pass
ERROR_GROUPS = 20  # the binned rows' groups whose spread gives the quantiles' error bound
BLOCK_ELEMENTS = 2**22  # similarities per block at most (16 MiB of float32; a pass holds a few such arrays)
_Z95 = 1.959964


@dataclass(frozen=True)
class SampledEstimate:
    """How the figures were estimated when n > EXACT_MAX_ROWS (see the module docstring).

    The error bounds are 95% half-widths: `high_similarity_share_error` for high_similarity_share
    (and any other share over the query rows), `quantile_error` for the pairwise quantiles.
    """

    method: str  # "query_sample"
    n_rows: int
    n_query_rows: int
    n_pairs_seen: int
    n_pairs: int
    high_similarity_share_error: float
    quantile_error: float
    description: str


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
    estimate: SampledEstimate | None = None  # None: exact over all pairs


@dataclass(frozen=True)
class NearestNeighbors:
    """Per-sample nearest neighbour (index, cosine) and the pairwise histogram, from one pass.

    With `rows` (a sampled pass), index/similarity are those of the query rows `rows` only and
    pair_counts cover the pairs with an end among them; pair_sum and n_pairs stay exact.
    """

    index: np.ndarray  # (m,) int64: row index of each query row's nearest neighbour
    similarity: np.ndarray  # (m,) float32
    pair_counts: np.ndarray  # (_FINE_BINS,) int64 counts over [-1, 1]
    pair_sum: float
    n_pairs: int
    rows: np.ndarray | None = None  # the query rows (None: every row, in order)
    block_counts: np.ndarray | None = None  # (ERROR_GROUPS, _FINE_BINS) per group of binned rows (sampled)

    @property
    def query_rows(self) -> np.ndarray:
        return np.arange(self.similarity.size) if self.rows is None else self.rows


def iter_similarity_blocks(
    x: np.ndarray, y: np.ndarray | None = None, *, block_size: int = 1024
) -> Iterator[tuple[int, np.ndarray]]:
    """Yield (row offset, x[rows] @ y.T) in row blocks of at most `block_size` rows and
    BLOCK_ELEMENTS values; y defaults to x. Inputs are trusted."""
    y = x if y is None else y
    block_size = max(1, min(block_size, BLOCK_ELEMENTS // max(y.shape[0], 1)))
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
    import sys
    from pathlib import Path

    if importlib.util.find_spec("torch") is None:
        return None
    # Importing torch only to ask costs ~300 MB of memory: without an NVIDIA device node (and with
    # torch not loaded already, by an embedder) there is no CUDA device to find.
    if "torch" not in sys.modules and not any(Path("/dev").glob("nvidia[0-9]*")):
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


def query_rows(n: int, *, seed: int = 0, max_exact_rows: int = EXACT_MAX_ROWS) -> np.ndarray | None:
    """The seeded, sorted query rows of a sampled pass over n rows, or None when n is small enough
    for an exact one."""
    if n <= max_exact_rows:
        return None
    return np.sort(np.random.default_rng(seed).choice(n, min(SAMPLED_QUERY_ROWS, n), replace=False))


def nearest_neighbors(embeddings: np.ndarray, *, block_size: int = 1024, rows: np.ndarray | None = None,
                      histogram: bool = True, device: str | None = None) -> NearestNeighbors:
    """One blockwise pass: each row's most similar other row, and the histogram of all pairs.

    With `rows` (sorted indices), only those query rows' neighbours are searched (among all rows)
    and the histogram covers the pairs with an end among every k-th of them (about
    HISTOGRAM_ROWS), each pair once. `histogram=False`
    skips the histogram (the calibration needs only the neighbours). Trusts its input: float32,
    L2-normalised, finite, at least 2 rows. `device`: None for numpy, else the torch device an
    exact pass (no `rows`) runs on (results equal numpy's within float tolerance).
    """
    if device is not None and rows is None:
        return _nearest_neighbors_torch(embeddings, block_size, device)
    n = embeddings.shape[0]
    queries = np.arange(n) if rows is None else rows
    m = queries.size
    block_size = max(1, min(block_size, BLOCK_ELEMENTS // n))
    outside, step = None, 1
    if rows is not None:  # a pair between two binned rows is counted once, from the lower one
        step = max(1, -(-m // HISTOGRAM_ROWS))
        outside = np.ones(n, dtype=bool)
        outside[rows[::step]] = False
    nn_idx = np.empty(m, dtype=np.int64)
    nn_sim = np.empty(m, dtype=np.float32)
    counts = np.zeros(_FINE_BINS, dtype=np.int64)
    groups = np.zeros((ERROR_GROUPS, _FINE_BINS), dtype=np.int64) if rows is not None else None
    total = 0.0
    cols = np.arange(n)[None, :]
    for start in range(0, m, block_size):
        q = queries[start : start + block_size]
        sims = embeddings[q] @ embeddings.T
        np.clip(sims, -1.0, 1.0, out=sims)
        if histogram:
            binned = slice(None) if step == 1 else slice((-start) % step, None, step)  # every step-th query row
            keep = cols > q[binned, None]  # this block's part of the upper triangle
            if outside is not None:
                keep |= outside[None, :]
            pairs = sims[binned][keep]
            total += float(pairs.sum(dtype=np.float64))
            pairs += 1.0  # in place, then float32 -> int32 bins: the block's memory is reused
            pairs *= _FINE_BINS / 2
            bins = pairs.astype(np.int32)
            del pairs
            np.minimum(bins, _FINE_BINS - 1, out=bins)
            if groups is None:
                counts += np.bincount(bins, minlength=_FINE_BINS)
            else:  # binned row p // step goes to group (p // step) % ERROR_GROUPS
                group = (np.arange(start, start + q.size)[binned] // step) % ERROR_GROUPS
                bins += np.broadcast_to((group * _FINE_BINS).astype(np.int32)[:, None], keep.shape)[keep]
                groups += np.bincount(bins, minlength=ERROR_GROUPS * _FINE_BINS).reshape(ERROR_GROUPS, _FINE_BINS)
            del bins, keep
        local = np.arange(q.size)
        sims[local, q] = -np.inf
        best = sims.argmax(axis=1)
        nn_idx[start : start + q.size] = best
        nn_sim[start : start + q.size] = sims[local, best]
    if groups is not None:
        counts = groups.sum(axis=0)
    if rows is not None:  # the mean stays exact: for unit rows, sum over pairs = (|sum x|^2 - sum |x|^2) / 2
        col_sum, sq = np.zeros(embeddings.shape[1]), 0.0
        for start in range(0, n, 4096):  # in float64, a chunk at a time
            chunk = embeddings[start : start + 4096].astype(np.float64)
            col_sum += chunk.sum(axis=0)
            sq += float((chunk * chunk).sum())
        total = float(((col_sum**2).sum() - sq) / 2)
    return NearestNeighbors(nn_idx, nn_sim, counts, total, n * (n - 1) // 2, rows, groups)


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


def _estimate(nn: NearestNeighbors, n: int, share: float) -> SampledEstimate:
    m = nn.similarity.size
    # Wilson score half-width: unlike the plain normal one it is not 0 when the share is 0 or 1.
    share_err = _Z95 * float(np.sqrt(share * (1 - share) / m + _Z95**2 / (4 * m * m))) / (1 + _Z95**2 / m)
    # Groups are equal-sized random sets of binned rows: the spread of their quantiles / sqrt(groups)
    # is the standard error of the pooled quantile.
    per_group = [_quantiles_from_counts(c, _QUANTILES) for c in nn.block_counts if c.sum()]
    spread = 0.0
    if len(per_group) > 1:
        spread = max(float(np.std([g[k] for g in per_group], ddof=1)) for k in _QUANTILES) / np.sqrt(len(per_group))
    q_err = round(float(_Z95 * spread + 2.0 / _FINE_BINS), 4)
    seen = int(nn.pair_counts.sum())
    return SampledEstimate(
        method="query_sample", n_rows=n, n_query_rows=m, n_pairs_seen=seen, n_pairs=nn.n_pairs,
        high_similarity_share_error=round(share_err, 6), quantile_error=q_err,
        description=(f"estimated: nearest neighbours of a seeded sample of {m:,} of the {n:,} samples (searched "
                     f"among all of them), pairwise quantiles from the {seen:,} pairs with an end among "
                     f"{min(m, HISTOGRAM_ROWS):,} of them ({seen / nn.n_pairs:.1%} of all pairs); 95% error: shares +-{share_err:.4f}, quantiles "
                     f"+-{q_err:.4f}; the mean is exact"),
    )


def similarity_distribution(
    embeddings, *, threshold: float, block_size: int = 1024, n_bins: int = 100, seed: int = 0,
    max_exact_rows: int = EXACT_MAX_ROWS, device: str | None = None,
) -> tuple[SimilarityResult, NearestNeighbors]:
    """Pairwise cosine-similarity distribution and nearest-neighbour similarity.

    Rows are L2-normalised first. Returns the summary and the per-sample nearest neighbours
    (kept out of the summary so callers can list the most similar pairs by id).
    `n_bins` must divide 2000 (e.g. 40, 50, 100, 200). Above `max_exact_rows` rows the figures
    are estimated from a seeded sample of query rows (see the module docstring; `estimate`).
    `device`: None (numpy) or a torch device (see similarity_device).
    """
    x = check_unit_norm(check_embeddings(embeddings, min_rows=2))
    if not -1.0 <= threshold <= 1.0:
        raise InputError(f"similarity threshold must lie in [-1, 1]; got {threshold}")
    if block_size < 1:
        raise InputError(f"block_size must be a positive integer; got {block_size}")
    if n_bins < 1 or _FINE_BINS % n_bins:
        raise InputError(f"n_bins must divide {_FINE_BINS}; got {n_bins}")
    n = int(x.shape[0])
    nn = nearest_neighbors(x, block_size=block_size, rows=query_rows(n, seed=seed, max_exact_rows=max_exact_rows),
                           device=device)
    high = int((nn.similarity >= threshold).sum())
    m = nn.similarity.size
    share = round(high / m, 6)
    result = SimilarityResult(
        n_samples=n,
        mean=round(nn.pair_sum / nn.n_pairs, 6),
        quantiles=_quantiles_from_counts(nn.pair_counts, _QUANTILES),
        histogram=_coarse_histogram(nn.pair_counts, n_bins),
        nearest_neighbor=_distribution(nn.similarity, n_bins),
        threshold=float(threshold),
        high_similarity_share=share,
        n_high_similarity=high if nn.rows is None else int(round(share * n)),
        estimate=None if nn.rows is None else _estimate(nn, n, share),
    )
    return result, nn


def most_similar_pairs(nn: NearestNeighbors, *, k: int = 10) -> list[SimilarPair]:
    """The k most similar distinct pairs among each sample's nearest neighbour."""
    seen: set[tuple[int, int]] = set()
    out: list[SimilarPair] = []
    rows = nn.query_rows
    for i in np.argsort(-nn.similarity, kind="stable"):
        pair = tuple(sorted((int(rows[i]), int(nn.index[i]))))
        if pair in seen:
            continue
        seen.add(pair)
        out.append(SimilarPair(pair[0], pair[1], round(float(nn.similarity[i]), 6)))
        if len(out) == k:
            break
    return out
