import dataclasses

import numpy as np
import pytest

from sampleaudit.errors import InputError
from sampleaudit.metrics.coverage import (
    coverage,
    fit_baseline_clusters,
    hdbscan_min_cluster_size,
    kmeans_n_clusters,
    sample_clusters,
)

K, D = 6, 24


def _blobs(rng, n, which, spread=0.05):
    centres = np.eye(D)[:K] * 1.0
    lab = np.asarray(which)[np.arange(n) % len(which)]
    return centres[lab] + rng.normal(size=(n, D)) * spread


@pytest.fixture(scope="module")
def clusters():
    rng = np.random.default_rng(0)
    x = _blobs(rng, 600, range(K))
    return fit_baseline_clusters(x, ids=[f"id {i}" for i in range(600)], seed=0)


def test_baseline_finds_the_blobs(clusters):
    s = clusters.summary()
    assert s.method == "hdbscan" and s.baseline_clusters == K and s.natural_clusters == K
    assert s.natural_noise_share < 0.1
    assert sum(s.cluster_shares) == pytest.approx(1.0 - s.natural_noise_share, abs=1e-5)
    assert s.min_cluster_size == hdbscan_min_cluster_size(600) == 10


@pytest.mark.parametrize("k", [1, 3, K])
def test_samples_from_k_blobs_cover_k(clusters, k):
    res = coverage(clusters, _blobs(np.random.default_rng(k), 300, range(k)))
    assert res.covered_clusters == k and res.baseline_clusters == K
    assert res.coverage_ratio == pytest.approx(k / K, abs=1e-6)
    assert res.assignment == "approximate_predict"
    assert res.n_missing == K - k and len(res.missing_clusters) == K - k
    for m in res.missing_clusters:
        assert m.sample_share == 0.0 and len(m.examples) == 3
        assert all(e.id == f"id {e.index}" for e in m.examples)
        # examples come from the missing cluster itself
        assert set(clusters.labels[[e.index for e in m.examples]]) == {m.cluster}
    if k == K:
        assert res.js_divergence < 0.02 and res.over_represented == []
    else:
        assert res.js_divergence > 0.2 and len(res.over_represented) == k


def test_order_invariance(clusters):
    x = _blobs(np.random.default_rng(7), 200, [0, 1, 2, 3])
    perm = np.random.default_rng(8).permutation(200)
    assert coverage(clusters, x) == coverage(clusters, x[perm])
    assert sample_clusters(clusters, x) == sample_clusters(clusters, x[perm])


def test_baseline_fit_does_not_depend_on_row_order():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(300, 8))
    perm = rng.permutation(300)
    a, b = fit_baseline_clusters(x), fit_baseline_clusters(x[perm])
    assert dataclasses.replace(a.summary(), examples=[]) == dataclasses.replace(b.summary(), examples=[])
    assert np.array_equal(a.labels[perm], b.labels)
    # the examples are the same rows, numbered in each input's own order
    assert [[perm[e.index] for e in rows] for rows in b.summary().examples] == \
        [[e.index for e in rows] for rows in a.summary().examples]


def test_a_stray_sample_does_not_cover(clusters):
    rng = np.random.default_rng(1)
    x = np.concatenate([_blobs(rng, 299, [0, 1]), _blobs(rng, 1, [5])])
    res = coverage(clusters, x)
    assert res.covered_clusters == 2
    stray = next(h for h in res.histogram if h.n_samples == 1)
    assert not stray.covered and stray.cluster in {m.cluster for m in res.missing_clusters}
    # With a tiny mass ratio the stray sample is enough.
    assert coverage(clusters, x, min_mass_ratio=0.01).covered_clusters == 3


def test_kmeans_fallback_on_structureless_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1000, 16))  # uniform on the sphere once normalised
    cl = fit_baseline_clusters(x, seed=0)
    s = cl.summary()
    assert s.method == "kmeans" and s.baseline_clusters == kmeans_n_clusters(1000) == 14
    assert s.natural_noise_share > 0.5 or s.natural_clusters < 2
    res = coverage(cl, rng.normal(size=(500, 16)))
    assert res.method == "kmeans" and res.assignment == "nearest_centre"
    assert res.n_unassigned == 0 and res.coverage_ratio == 1.0
    half = rng.normal(size=(500, 16))
    half[:, 0] = np.abs(half[:, 0]) * 3  # one hemisphere only
    assert coverage(cl, half).coverage_ratio < 0.8


def test_kmeans_k_rule():
    assert [kmeans_n_clusters(n) for n in (12, 100, 3000, 20000)] == [8, 8, 24, 40]


def test_sample_clusters_counts_fewer_clusters_for_collapsed(clusters):
    res = sample_clusters(clusters, _blobs(np.random.default_rng(2), 300, [0, 1]), seed=0)
    assert res.n_clusters == 2 and res.baseline_n_clusters == K
    assert res.baseline_subsample_size == 300


def test_rejects_bad_input(clusters):
    with pytest.raises(InputError, match="same model"):
        coverage(clusters, np.ones((5, 3)))
    with pytest.raises(InputError, match="min_mass_ratio"):
        coverage(clusters, np.ones((5, D)), min_mass_ratio=0)
    with pytest.raises(InputError, match="at least 10"):
        fit_baseline_clusters(np.ones((5, 3)))
    with pytest.raises(InputError, match="ids must have one entry per baseline row"):
        fit_baseline_clusters(np.eye(20), ids=["a"])
