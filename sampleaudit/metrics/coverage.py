"""Cluster coverage: how many of the baseline's semantic clusters a checkpoint's samples cover.

The partition is fitted on the baseline only, once (`fit_baseline_clusters`), then reused for
every checkpoint (`coverage`, `sample_clusters`):
1. rows are L2-normalised and projected by PCA to PCA_DIMS (32) dimensions (fixed random_state);
   HDBSCAN is slow in 384 dimensions and density estimates degrade there.
2. HDBSCAN (min_cluster_size = max(10, round(0.01 * n)): clusters smaller than 1% of the
   baseline are not "semantic clusters") gives the natural cluster count and the noise share.
3. If HDBSCAN leaves most points as noise (noise share > 0.5) or finds fewer than 2 clusters, its
   partition says little about the data (on 3,000 diverse English texts it found 2-5 clusters
   and 86-96% noise), so coverage falls back to k-means with k = clip(round(sqrt(n / 5)), 8, 40): 24 at
   n = 3,000, where k = 20-40 separated healthy, mildly and fully collapsed samples (on
   data_samples/ at k = 24: coverage 1.0 / 0.79 / 0.46); at most 40 so that a 1,000-sample
   checkpoint still expects ~25 samples per cluster and sampling noise alone rarely drops a
   share below half; at least 8 so coverage is not a coarse 1/2 or 2/3.
Coverage is mass-aware: a cluster is covered only when the checkpoint puts at least
`min_mass_ratio` times the baseline's share of its samples there; one stray sample is not enough.

Scale: HDBSCAN's cost grows faster than n^2 here (its core distances are min_cluster_size = 1% of n
nearest neighbours: 20,000 rows took 37 s, 100,000 did not finish in 40 minutes), so every
HDBSCAN and k-means fit sees at most CLUSTER_MAX_ROWS (5,000) rows. A larger baseline is
partitioned on a seeded subsample of that many rows (its min_cluster_size and the noise rule are
those of the subsample); all baseline rows, and every checkpoint, are then assigned by the
nearest fitted row in PCA space (its label, noise included) for HDBSCAN, or by the nearest
centre for k-means; approximate_predict, which looks up min_cluster_size neighbours per row, is
kept for baselines the fit saw whole. The natural cluster counts (a checkpoint's own clusters
and the baseline's at the same size) are likewise measured on seeded subsamples of at most
CLUSTER_MAX_ROWS rows, both sides at the same size. Sets at or under the cap are unchanged.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.spatial.distance import jensenshannon
from sklearn.cluster import KMeans
from sklearn.decomposition import PCA
from threadpoolctl import threadpool_limits

from ..errors import InputError
from ._validate import check_embeddings, check_unit_norm, optional_strings

PCA_DIMS = 32
MAX_NOISE_SHARE = 0.5
MIN_NATURAL_CLUSTERS = 2
KMEANS_N_INIT = 4
N_EXAMPLES = 3
MIN_BASELINE_ROWS = 10
CLUSTER_MAX_ROWS = 5_000  # rows any one HDBSCAN / k-means fit sees (see the module docstring)
_ASSIGN_BLOCK = 512  # rows per block of the nearest-fitted-row search (2 x 10 MiB at 5,000 fitted rows)


def hdbscan_min_cluster_size(n: int) -> int:
    """HDBSCAN's min_cluster_size for n points: 1% of them, at least 10."""
    return max(10, round(0.01 * n))


def kmeans_n_clusters(n: int) -> int:
    """k of the k-means fallback for a baseline of n rows: clip(round(sqrt(n / 5)), 8, 40), <= n."""
    return int(min(n, np.clip(round(np.sqrt(n / 5)), 8, 40)))


@dataclass(frozen=True)
class ClusterExample:
    """A baseline row near a cluster's centre (its text is in the baseline's texts, by id)."""

    index: int
    id: str | None


@dataclass(frozen=True)
class BaselineClustersSummary:
    """The baseline partition, for the results model. `examples[k]`: rows near cluster k's centre."""

    n_baseline: int
    method: str  # "hdbscan" | "kmeans"
    baseline_clusters: int  # K of the partition used for coverage
    natural_clusters: int  # clusters HDBSCAN found, whichever partition is used
    natural_noise_share: float  # share of baseline rows HDBSCAN left as noise
    min_cluster_size: int
    pca_dims: int
    pca_explained_variance: float
    seed: int
    cluster_shares: list[float]  # baseline share of each cluster, over all baseline rows
    examples: list[list[ClusterExample]] = field(default_factory=list)
    terms: list[list[str]] = field(default_factory=list)  # each cluster's most distinctive terms
    representation: str = "embedding"  # what was clustered: "embedding" | "lexical" (character n-grams)
    representation_reason: str | None = None  # why lexical, when it is


@dataclass(frozen=True)
class ClusterShare:
    """One cluster's share of the baseline and of the samples."""

    cluster: int
    n_baseline: int
    baseline_share: float
    n_samples: int
    sample_share: float
    covered: bool


@dataclass(frozen=True)
class MissingCluster:
    """A baseline cluster the samples do not cover, with baseline rows near its centre."""

    cluster: int
    baseline_share: float
    sample_share: float
    n_samples: int
    examples: list[ClusterExample]
    terms: list[str] = field(default_factory=list)  # the cluster's label (metrics.labels)


@dataclass(frozen=True)
class CoverageResult:
    """Mass-aware coverage of the baseline's clusters by one set of samples.

    Shares are over all rows, unassigned (HDBSCAN noise) included; `js_divergence` (base 2, in
    [0, 1]) compares the two distributions over the K clusters plus the unassigned bucket.
    """

    n_samples: int
    method: str  # "hdbscan" | "kmeans"
    assignment: str  # "approximate_predict" | "nearest_fitted_row" | "nearest_centre"
    natural_clusters: int
    baseline_clusters: int
    covered_clusters: int
    coverage_ratio: float
    min_mass_ratio: float
    js_divergence: float
    n_unassigned: int
    unassigned_share: float
    baseline_unassigned_share: float
    histogram: list[ClusterShare]
    n_missing: int
    missing_clusters: list[MissingCluster]  # largest baseline share first, capped
    over_represented: list[ClusterShare]  # sample share >= over_ratio * baseline share


@dataclass(frozen=True)
class SampleClusters:
    """Clusters the samples form on their own (HDBSCAN, same rule), next to the baseline's.

    The baseline figure is measured on a seeded subsample of the samples' size, since HDBSCAN's
    cluster count depends on n: the source article's "4 clusters vs 9". Above CLUSTER_MAX_ROWS
    samples, the samples' own figure is measured on a seeded subsample of `n_clustered` rows.
    """

    n_samples: int
    n_clusters: int
    noise_share: float
    min_cluster_size: int
    baseline_n_clusters: int
    baseline_noise_share: float
    baseline_subsample_size: int
    n_clustered: int | None = None  # samples HDBSCAN saw (None: results from before this field)


@dataclass(frozen=True)
class NaturalClusters:
    """What HDBSCAN finds on a set of projected rows: clusters, noise share, rows clustered."""

    n_clusters: int
    noise_share: float
    n_rows: int


@dataclass(eq=False)
class BaselineClusters:
    """A partition of the baseline, fitted once and reused for every checkpoint.

    Plain arrays (the PCA's mean and components, the k-means centres, the projected rows and
    their labels), so it can be saved without pickling fitted objects; the HDBSCAN model used by
    approximate_predict is refitted from `projected` after loading (deterministic, checked
    against `labels`). Not part of the results model; `summary()` is.
    """

    pca_mean: np.ndarray  # (d,)
    pca_components: np.ndarray  # (pca_dims, d)
    pca_explained_variance: float
    method: str  # "hdbscan" | "kmeans"
    labels: np.ndarray  # partition label of each baseline row, -1 noise
    n_clusters: int
    natural_clusters: int
    natural_noise_share: float
    min_cluster_size: int
    examples: list[list[int]]  # per cluster, baseline rows nearest its centre
    projected: np.ndarray  # PCA coordinates of the baseline rows
    ids: list[str] | None
    seed: int
    dim: int
    centres: np.ndarray | None = None  # k-means centres of the K clusters (method "kmeans")
    hdbscan: Any = None  # fitted hdbscan.HDBSCAN with prediction data (method "hdbscan")
    fit_rows: np.ndarray | None = None  # baseline rows the fit saw, when a subsample (sorted)
    shares: np.ndarray = field(init=False)  # baseline share of each cluster, over all rows

    def __post_init__(self):
        counts = np.bincount(self.labels[self.labels >= 0], minlength=self.n_clusters)
        self.shares = counts / self.labels.size

    @property
    def n_baseline(self) -> int:
        return int(self.labels.size)

    @property
    def assignment(self) -> str:
        """How rows are given a cluster: "approximate_predict", "nearest_fitted_row", "nearest_centre"."""
        if self.method == "kmeans":
            return "nearest_centre"
        return "approximate_predict" if self.fit_rows is None else "nearest_fitted_row"

    def summary(self) -> BaselineClustersSummary:
        return BaselineClustersSummary(
            n_baseline=self.n_baseline,
            method=self.method,
            baseline_clusters=self.n_clusters,
            natural_clusters=self.natural_clusters,
            natural_noise_share=round(self.natural_noise_share, 6),
            min_cluster_size=self.min_cluster_size,
            pca_dims=int(self.pca_components.shape[0]),
            pca_explained_variance=round(self.pca_explained_variance, 6),
            seed=self.seed,
            cluster_shares=[round(float(s), 6) for s in self.shares],
            examples=[[_example(self, i) for i in rows] for rows in self.examples],
        )

    def project(self, embeddings, *, name: str = "sample embeddings") -> np.ndarray:
        """Validate rows of the baseline's dimension and project them into the PCA space."""
        x = check_unit_norm(check_embeddings(embeddings, name=name))
        if x.shape[1] != self.dim:
            raise InputError(
                f"{name} have dim {x.shape[1]} but the baseline has {self.dim}; "
                "embed both with the same model"
            )
        return _project(x, self.pca_mean, self.pca_components)

    def assign(self, embeddings) -> np.ndarray:
        """Baseline cluster of each row (-1: unassigned, i.e. HDBSCAN noise)."""
        return self._assign(self.project(embeddings))

    def _assign(self, z: np.ndarray) -> np.ndarray:
        if self.method == "kmeans":
            return nearest_centre(z, self.centres)
        if self.fit_rows is not None:
            return nearest_row_labels(z, self.projected[self.fit_rows], self.labels[self.fit_rows])
        import hdbscan

        if self.hdbscan is None:
            self.hdbscan = _refit_hdbscan(self)
        labels, _ = hdbscan.approximate_predict(self.hdbscan, z)
        return np.asarray(labels, dtype=np.int64)

    # -- saving without pickle ---------------------------------------------------------------

    def to_arrays(self) -> tuple[dict, dict[str, np.ndarray]]:
        """(JSON-ready header, arrays) that `from_arrays` turns back into an equal partition."""
        header = {
            "method": self.method, "n_clusters": self.n_clusters, "natural_clusters": self.natural_clusters,
            "natural_noise_share": self.natural_noise_share, "min_cluster_size": self.min_cluster_size,
            "examples": self.examples, "ids": self.ids, "seed": self.seed, "dim": self.dim,
            "pca_explained_variance": self.pca_explained_variance,
        }
        arrays = {"pca_mean": self.pca_mean, "pca_components": self.pca_components, "labels": self.labels,
                  "projected": self.projected}
        if self.centres is not None:
            arrays["centres"] = self.centres
        if self.fit_rows is not None:
            arrays["fit_rows"] = self.fit_rows
        return header, arrays

    @classmethod
    def from_arrays(cls, header: dict, arrays: dict[str, np.ndarray]) -> BaselineClusters:
        return cls(
            pca_mean=arrays["pca_mean"], pca_components=arrays["pca_components"],
            pca_explained_variance=float(header["pca_explained_variance"]), method=header["method"],
            labels=arrays["labels"].astype(np.int64), n_clusters=int(header["n_clusters"]),
            natural_clusters=int(header["natural_clusters"]),
            natural_noise_share=float(header["natural_noise_share"]),
            min_cluster_size=int(header["min_cluster_size"]),
            examples=[[int(i) for i in rows] for rows in header["examples"]], projected=arrays["projected"],
            ids=header["ids"], seed=int(header["seed"]), dim=int(header["dim"]), centres=arrays.get("centres"),
            fit_rows=arrays["fit_rows"].astype(np.int64) if "fit_rows" in arrays else None,
        )


_PROJECT_CHUNK = 8192  # rows centred at a time: no (n, d) temporary for large n


def _project(x: np.ndarray, mean: np.ndarray, components: np.ndarray) -> np.ndarray:
    """PCA coordinates (no whitening): (x - mean) @ components.T, float32."""
    if x.shape[0] <= _PROJECT_CHUNK:
        return ((x - mean) @ components.T).astype(np.float32)
    return np.concatenate([((x[i:i + _PROJECT_CHUNK] - mean) @ components.T).astype(np.float32)
                           for i in range(0, x.shape[0], _PROJECT_CHUNK)])


def nearest_centre(z: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """Index of each row's nearest centre (squared Euclidean; ties: the lower index)."""
    d = (z.astype(np.float64) ** 2).sum(axis=1)[:, None] - 2.0 * z.astype(np.float64) @ centres.T.astype(np.float64)
    d += (centres.astype(np.float64) ** 2).sum(axis=1)[None, :]
    return d.argmin(axis=1).astype(np.int64)


def nearest_row_labels(z: np.ndarray, rows: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """The label of each row's nearest row of `rows` (squared Euclidean), in blocks of rows."""
    r = rows.astype(np.float32)
    r_sq = (r.astype(np.float64) ** 2).sum(axis=1).astype(np.float32)
    out = np.empty(z.shape[0], dtype=np.int64)
    for start in range(0, z.shape[0], _ASSIGN_BLOCK):
        block = z[start:start + _ASSIGN_BLOCK].astype(np.float32)
        d = r_sq[None, :] - 2.0 * (block @ r.T)  # |z|^2 is the same for every candidate
        out[start:start + block.shape[0]] = labels[d.argmin(axis=1)]
    return out


def seeded_rows(n: int, size: int, seed: int) -> np.ndarray:
    """A seeded, sorted choice of `size` of n row indices (all of them when n <= size)."""
    if n <= size:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, size, replace=False))


def _refit_hdbscan(clusters: BaselineClusters):
    """The HDBSCAN model behind a loaded partition, fitted again on the same projected rows."""
    model, labels = _hdbscan(clusters.projected, clusters.min_cluster_size, prediction_data=True)
    if model is None or not np.array_equal(labels, clusters.labels):
        raise InputError("the saved baseline partition is not reproduced by refitting HDBSCAN on its rows "
                         "(a different hdbscan version?); fit the reference again")
    return model


def _canonical_order(z: np.ndarray) -> np.ndarray:
    """A permutation that sorts rows lexicographically: fits then do not depend on row order."""
    return np.lexsort(z.T[::-1])


def _hdbscan(z: np.ndarray, min_cluster_size: int, *, prediction_data: bool):
    """Fit HDBSCAN on rows in canonical order; return (model or None, labels in input order)."""
    import hdbscan

    if z.shape[0] < 2 * min_cluster_size:
        return None, np.full(z.shape[0], -1, dtype=np.int64)
    perm = _canonical_order(z)
    model = hdbscan.HDBSCAN(min_cluster_size=min_cluster_size, prediction_data=prediction_data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(z[perm])
    labels = np.empty(z.shape[0], dtype=np.int64)
    labels[perm] = model.labels_
    return model, labels


def _n_clusters_and_noise(labels: np.ndarray) -> tuple[int, float]:
    return int(np.unique(labels[labels >= 0]).size), float((labels < 0).mean())


def _nearest_to_centre(z: np.ndarray, labels: np.ndarray, k: int, centres=None) -> list[list[int]]:
    """Indices of the N_EXAMPLES rows nearest each cluster's centre (ties: lower index first)."""
    out = []
    for c in range(k):
        members = np.flatnonzero(labels == c)
        centre = centres[c] if centres is not None else z[members].mean(axis=0)
        dist = ((z[members] - centre) ** 2).sum(axis=1)
        out.append([int(m) for m in members[np.argsort(dist, kind="stable")[:N_EXAMPLES]]])
    return out


def fit_baseline_clusters(
    baseline_embeddings,
    *,
    ids: Sequence[str] | None = None,
    seed: int = 0,
    pca_dims: int = PCA_DIMS,
    n_clusters: int | None = None,
    max_noise_share: float = MAX_NOISE_SHARE,
) -> BaselineClusters:
    """Fit the baseline partition (see the module docstring). Results do not depend on row order.

    `n_clusters` overrides k of the k-means fallback.
    """
    x = check_embeddings(baseline_embeddings, name="baseline embeddings", min_rows=MIN_BASELINE_ROWS)
    x = check_unit_norm(x)
    n, d = x.shape
    if pca_dims < 1:
        raise InputError(f"pca_dims must be >= 1; got {pca_dims}")
    if n_clusters is not None and not 2 <= n_clusters <= n:
        raise InputError(f"n_clusters must lie in [2, {n}] (the baseline rows); got {n_clusters}")
    if not 0.0 <= max_noise_share <= 1.0:
        raise InputError(f"max_noise_share must lie in [0, 1]; got {max_noise_share}")
    ids_ = optional_strings(ids, n, "ids", rows="baseline row")

    # PCA fitted in canonical row order, so the projection does not depend on the input order.
    perm = _canonical_order(x)
    # One BLAS thread: a multithreaded SVD of an (n, 384) matrix gains little and, on a loaded
    # 2-core machine, spins: 4.4 s instead of 0.27 s for 3,000 rows. Same result either way.
    with threadpool_limits(1, user_api="blas"):
        pca = PCA(n_components=min(pca_dims, d, n), random_state=seed).fit(x[perm])
    mean, components = pca.mean_.astype(np.float32), pca.components_.astype(np.float32)
    z = _project(x, mean, components)
    # At most CLUSTER_MAX_ROWS rows are clustered: a seeded choice of positions in canonical
    # order, so the rows chosen do not depend on the input order either.
    fit = None if n <= CLUSTER_MAX_ROWS else np.sort(perm[seeded_rows(n, CLUSTER_MAX_ROWS, seed)])
    zf = z if fit is None else z[fit]
    mcs = hdbscan_min_cluster_size(zf.shape[0])
    model, hlabels = _hdbscan(zf, mcs, prediction_data=fit is None)
    natural, noise = _n_clusters_and_noise(hlabels)

    centres = None
    if natural >= MIN_NATURAL_CLUSTERS and noise <= max_noise_share:
        method, k = "hdbscan", natural
        if fit is None:
            labels = hlabels
        else:  # the other rows take the label of their nearest fitted row
            labels = nearest_row_labels(z, zf, hlabels)
            labels[fit] = hlabels
            model = None
    else:
        method, model = "kmeans", None
        k = min(n_clusters or kmeans_n_clusters(n), zf.shape[0])
        fperm = perm if fit is None else _canonical_order(zf)
        with warnings.catch_warnings():  # fewer distinct rows than k: some clusters stay empty
            warnings.simplefilter("ignore")
            kmeans = KMeans(n_clusters=k, n_init=KMEANS_N_INIT, random_state=seed).fit(zf[fperm])
        if fit is None:
            raw = np.empty(n, dtype=np.int64)
            raw[perm] = kmeans.labels_
        else:
            raw = nearest_centre(z, kmeans.cluster_centers_)
        used = np.unique(raw)  # drop empty clusters: renumber the used ones 0..K-1
        renumber = np.full(k, -1, dtype=np.int64)
        renumber[used] = np.arange(used.size)
        labels, centres, k = renumber[raw], kmeans.cluster_centers_[used].astype(np.float32), int(used.size)
    return BaselineClusters(
        pca_mean=mean, pca_components=components,
        pca_explained_variance=float(pca.explained_variance_ratio_.sum()), method=method,
        labels=labels, n_clusters=k, natural_clusters=natural, natural_noise_share=noise, min_cluster_size=mcs,
        examples=_nearest_to_centre(z, labels, k, centres), projected=z, ids=ids_, seed=seed, dim=d,
        centres=centres, hdbscan=model, fit_rows=fit if method == "hdbscan" else None,
    )


def _counts(labels: np.ndarray, k: int) -> np.ndarray:
    """Samples per cluster, with the unassigned count last: shape (k + 1,)."""
    return np.bincount(np.where(labels < 0, k, labels), minlength=k + 1)


def _covered(counts: np.ndarray, baseline_shares: np.ndarray, min_mass_ratio: float) -> np.ndarray:
    """Mass-aware coverage of each cluster from sample counts (k + 1,) (trusted input)."""
    shares = counts[:-1] / counts.sum()
    return (counts[:-1] > 0) & (shares >= min_mass_ratio * baseline_shares)


def _example(clusters: BaselineClusters, i: int) -> ClusterExample:
    return ClusterExample(index=int(i), id=clusters.ids[i] if clusters.ids is not None else None)


def _check_ratios(min_mass_ratio: float, over_ratio: float) -> None:
    if not 0.0 < min_mass_ratio:
        raise InputError(f"min_mass_ratio must be > 0; got {min_mass_ratio}")
    if not over_ratio > 1.0:
        raise InputError(f"over_ratio must be > 1; got {over_ratio}")


def coverage(
    clusters: BaselineClusters,
    sample_embeddings,
    *,
    min_mass_ratio: float = 0.5,
    over_ratio: float = 2.0,
    max_listed: int = 10,
    labels: np.ndarray | None = None,
) -> CoverageResult:
    """Mass-aware coverage of `clusters` (from `fit_baseline_clusters`) by the samples.

    A cluster is covered when the samples put at least `min_mass_ratio` times its baseline share
    into it; over-represented when they put at least `over_ratio` times. `labels`, the samples'
    clusters from `clusters.assign(sample_embeddings)`, saves assigning them again.
    """
    _check_ratios(min_mass_ratio, over_ratio)
    labels = clusters.assign(sample_embeddings) if labels is None else labels
    return _coverage_from_labels(clusters, labels, min_mass_ratio, over_ratio, max_listed)


def _coverage_from_labels(
    clusters: BaselineClusters, labels: np.ndarray, min_mass_ratio: float, over_ratio: float,
    max_listed: int,
) -> CoverageResult:
    k, n = clusters.n_clusters, int(labels.size)
    counts = _counts(labels, k)
    base_counts = _counts(clusters.labels, k)
    sample_shares = counts / n
    base_shares = base_counts / clusters.n_baseline
    covered = _covered(counts, clusters.shares, min_mass_ratio)
    hist = [
        ClusterShare(
            cluster=c,
            n_baseline=int(base_counts[c]),
            baseline_share=round(float(base_shares[c]), 6),
            n_samples=int(counts[c]),
            sample_share=round(float(sample_shares[c]), 6),
            covered=bool(covered[c]),
        )
        for c in range(k)
    ]
    missing = sorted((h for h in hist if not h.covered), key=lambda h: (-h.baseline_share, h.cluster))
    ratio = np.divide(sample_shares[:k], base_shares[:k], out=np.zeros(k), where=base_shares[:k] > 0)
    over = [h for h in hist if h.n_samples and ratio[h.cluster] >= over_ratio]
    over.sort(key=lambda h: (-ratio[h.cluster], h.cluster))
    js = float(jensenshannon(base_shares, sample_shares, base=2) ** 2)
    return CoverageResult(
        n_samples=n,
        method=clusters.method,
        assignment=clusters.assignment,
        natural_clusters=clusters.natural_clusters,
        baseline_clusters=k,
        covered_clusters=int(covered.sum()),
        coverage_ratio=round(float(covered.sum()) / k, 6),
        min_mass_ratio=float(min_mass_ratio),
        js_divergence=round(min(max(js, 0.0), 1.0), 6),
        n_unassigned=int(counts[k]),
        unassigned_share=round(float(sample_shares[k]), 6),
        baseline_unassigned_share=round(float(base_shares[k]), 6),
        histogram=hist,
        n_missing=len(missing),
        missing_clusters=[
            MissingCluster(
                cluster=h.cluster,
                baseline_share=h.baseline_share,
                sample_share=h.sample_share,
                n_samples=h.n_samples,
                examples=[_example(clusters, i) for i in clusters.examples[h.cluster]],
            )
            for h in missing[:max_listed]
        ],
        over_represented=over[:max_listed],
    )


def natural_clusters(projected: np.ndarray, *, size: int | None = None, seed: int = 0) -> NaturalClusters:
    """HDBSCAN's clusters and noise share on projected rows (a seeded subsample of `size` when
    there are more; never more than CLUSTER_MAX_ROWS), with the min_cluster_size rule for that
    many rows."""
    z = projected
    size = min(size or z.shape[0], CLUSTER_MAX_ROWS)
    if z.shape[0] > size:
        z = z[seeded_rows(z.shape[0], size, seed)]
    n, noise = _n_clusters_and_noise(_hdbscan(z, hdbscan_min_cluster_size(z.shape[0]), prediction_data=False)[1])
    return NaturalClusters(n, round(noise, 6), int(z.shape[0]))


def sample_clusters(
    clusters: BaselineClusters, sample_embeddings, *, seed: int = 0, baseline: NaturalClusters | None = None
) -> SampleClusters:
    """HDBSCAN on the samples (baseline PCA, same min_cluster_size rule) vs a same-size baseline.

    `baseline` is the baseline's own figure at the samples' size when already computed
    (`natural_clusters(clusters.projected, size=m, seed=...)`); else it is computed here.
    """
    z = clusters.project(sample_embeddings)
    m = z.shape[0]
    own = natural_clusters(z, seed=seed)
    if baseline is None:
        if clusters.projected.shape[0] > min(m, CLUSTER_MAX_ROWS):
            baseline = natural_clusters(clusters.projected, size=m, seed=seed)
        else:  # the whole baseline, already clustered by the same rule in fit_baseline_clusters
            baseline = NaturalClusters(clusters.natural_clusters, round(clusters.natural_noise_share, 6),
                                       clusters.n_baseline)
    return SampleClusters(
        n_samples=m,
        n_clusters=own.n_clusters,
        noise_share=own.noise_share,
        min_cluster_size=hdbscan_min_cluster_size(own.n_rows),
        baseline_n_clusters=baseline.n_clusters,
        baseline_noise_share=baseline.noise_share,
        baseline_subsample_size=baseline.n_rows,
        n_clustered=own.n_rows,
    )
