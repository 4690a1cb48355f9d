"""The large-n paths (sampled similarity, subsampled clustering), exercised at small n by
lowering their caps."""

import numpy as np
import pytest

from sampleaudit.metrics import coverage as cov
from sampleaudit.metrics import similarity as sim
from sampleaudit.metrics.coverage import BaselineClusters, coverage, fit_baseline_clusters, natural_clusters
from sampleaudit.metrics.neardup import near_duplicates

K, D = 6, 24


def _unit(x):
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def _blobs(rng, n, which, spread=0.05):
    lab = np.asarray(which)[np.arange(n) % len(which)]
    return _unit(np.eye(D)[:K][lab] + rng.normal(size=(n, D)) * spread)


@pytest.fixture
def small_caps(monkeypatch):
    monkeypatch.setattr(sim, "SAMPLED_QUERY_ROWS", 300)
    monkeypatch.setattr(sim, "HISTOGRAM_ROWS", 150)
    monkeypatch.setattr(cov, "CLUSTER_MAX_ROWS", 300)


def test_sampled_similarity_is_within_its_error_bounds(small_caps):
    x = _unit(np.random.default_rng(0).normal(size=(1200, 32)))
    exact, nn_exact = sim.similarity_distribution(x, threshold=0.45)
    est, nn = sim.similarity_distribution(x, threshold=0.45, max_exact_rows=1000)
    assert exact.estimate is None and est.estimate is not None
    e = est.estimate
    assert (e.n_rows, e.n_query_rows, e.n_pairs) == (1200, 300, 1200 * 1199 // 2)
    assert e.n_pairs_seen == 150 * 1199 - 150 * 149 // 2  # pairs with an end among 150 rows, once
    assert est.mean == pytest.approx(exact.mean, abs=1e-6)  # the mean is exact
    for q in exact.quantiles:
        assert abs(est.quantiles[q] - exact.quantiles[q]) <= e.quantile_error
    assert 0 < exact.high_similarity_share < 1
    assert abs(est.high_similarity_share - exact.high_similarity_share) <= e.high_similarity_share_error
    # every query row's neighbour is the exact one (searched among all rows)
    assert np.array_equal(nn.similarity, nn_exact.similarity[nn.rows])
    assert np.array_equal(nn.index, nn_exact.index[nn.rows])
    pairs = sim.most_similar_pairs(nn, k=3)
    assert all(p.i in nn.rows or p.j in nn.rows for p in pairs)


def test_sampled_near_duplicates_find_planted_twins(small_caps):
    rng = np.random.default_rng(1)
    x = _unit(rng.normal(size=(1200, 32)))
    x[600:900] = _unit(x[:300] + rng.normal(size=(300, 32)) * 0.01)  # 300 twin pairs: half the rows
    _, nn = sim.similarity_distribution(x, threshold=0.9, max_exact_rows=1000)
    res = near_duplicates(x, threshold=0.95, nearest=nn)
    exact = near_duplicates(x, threshold=0.95)
    assert exact.near_duplicate_share == 0.5
    assert abs(res.near_duplicate_share - 0.5) < 0.1
    assert all(g.size == 2 and abs(g.members[1] - g.members[0]) == 600 for g in res.groups)


def test_subsampled_partition_assigns_every_row(small_caps):
    rng = np.random.default_rng(2)
    x = _blobs(rng, 900, range(K))
    c = fit_baseline_clusters(x, seed=0)
    assert c.method == "hdbscan" and c.n_clusters == K and c.assignment == "nearest_fitted_row"
    assert c.fit_rows.size == 300 and c.min_cluster_size == 10  # the rule on the 300 rows fitted
    truth = np.arange(900) % K
    # the same blob always gets the same cluster, fitted rows and assigned rows alike
    assert all(np.unique(c.labels[truth == t]).size == 1 for t in range(K))
    res = coverage(c, _blobs(rng, 300, [0, 1]))
    assert res.covered_clusters == 2 and res.assignment == "nearest_fitted_row"
    # saved and loaded without refitting: the same assignment
    header, arrays = c.to_arrays()
    loaded = BaselineClusters.from_arrays(header, arrays)
    assert np.array_equal(loaded.assign(x), c.labels)
    # row order does not change the partition
    perm = rng.permutation(900)
    c2 = fit_baseline_clusters(x[perm], seed=0)
    assert np.array_equal(c2.labels, c.labels[perm])


def test_natural_clusters_see_at_most_the_cap(small_caps):
    z = _blobs(np.random.default_rng(3), 900, range(K))
    res = natural_clusters(z)
    assert res.n_rows == 300 and res.n_clusters == K
    assert natural_clusters(z, size=200).n_rows == 200


def test_a_sampled_similarity_section_round_trips_through_json(small_caps):
    from pydantic import TypeAdapter

    from sampleaudit.results import SimilaritySection

    x = _unit(np.random.default_rng(4).normal(size=(1100, 16)))
    res, _ = sim.similarity_distribution(x, threshold=0.5, max_exact_rows=1000)
    section = SimilaritySection(**{k: getattr(res, k) for k in res.__dataclass_fields__})
    adapter = TypeAdapter(SimilaritySection)
    back = adapter.validate_json(adapter.dump_json(section), strict=True)
    assert back == section and back.estimate.n_query_rows == 300
