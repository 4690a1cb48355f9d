import numpy as np
import pytest

from sampleaudit.errors import InputError
from sampleaudit.metrics.coverage import coverage, fit_baseline_clusters
from sampleaudit.metrics.similarity import similarity_distribution
from sampleaudit.metrics.stats import (
    Interval,
    bootstrap_interval,
    compare,
    coverage_interval,
    high_similarity_share_interval,
    vendi_interval,
)
from sampleaudit.metrics.vendi import vendi_score


def test_bootstrap_interval_is_seeded_and_contains_the_mean():
    data = np.random.default_rng(0).normal(size=500)
    a = bootstrap_interval(data, np.mean, seed=1)
    assert a == bootstrap_interval(data, np.mean, seed=1)
    assert a.low < data.mean() < a.high
    # About +- 1.96 standard errors.
    assert a.high - a.low == pytest.approx(2 * 1.96 * data.std() / np.sqrt(500), rel=0.25)


def test_high_similarity_share_interval():
    x = np.random.default_rng(0).normal(size=(400, 8))
    sim, nn = similarity_distribution(x, threshold=0.8)
    iv = high_similarity_share_interval(nn.similarity, threshold=0.8, n_resamples=300)
    assert 0.0 <= iv.low <= sim.high_similarity_share <= iv.high <= 1.0
    with pytest.raises(InputError, match="nn_similarity"):
        high_similarity_share_interval(np.ones((2, 2)), threshold=0.5)


def test_vendi_interval_contains_estimate_and_shrinks_with_n():
    rng = np.random.default_rng(0)
    small, large = rng.normal(size=(200, 16)), rng.normal(size=(2000, 16))
    a, b = vendi_interval(small), vendi_interval(large)
    assert a.low < vendi_score(small) < a.high and b.low < vendi_score(large) < b.high
    assert (b.high - b.low) < (a.high - a.low)
    assert vendi_interval(np.eye(5)) == Interval(5.0, 5.0)


def test_coverage_interval():
    rng = np.random.default_rng(0)
    cl = fit_baseline_clusters(rng.normal(size=(800, 8)), seed=0)
    x = rng.normal(size=(300, 8))
    iv = coverage_interval(cl, x, seed=0)
    assert 0.0 <= iv.low <= coverage(cl, x).coverage_ratio <= iv.high <= 1.0
    assert iv == coverage_interval(cl, x, seed=0)


def test_compare_by_overlap():
    assert compare(0.2, Interval(0.15, 0.25), 0.5, Interval(0.4, 0.6)).verdict == "higher"
    assert compare(0.5, Interval(0.4, 0.6), 0.2, Interval(0.15, 0.25)).verdict == "lower"
    c = compare(0.2, Interval(0.1, 0.3), 0.25, Interval(0.2, 0.3))
    assert c.verdict == "within_noise" and c.difference == pytest.approx(0.05)


def test_rejects_bad_options():
    with pytest.raises(InputError, match="n_resamples"):
        bootstrap_interval([1.0, 2.0], np.mean, n_resamples=1)
    with pytest.raises(InputError, match="confidence"):
        bootstrap_interval([1.0, 2.0], np.mean, confidence=1.0)
    with pytest.raises(InputError, match="n_groups"):
        vendi_interval(np.eye(3), n_groups=1)
