"""Properties every embedding metric must have: bounds, invariance to sample order, NaN rejected."""

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from sampleaudit.errors import InputError
from sampleaudit.metrics.calibration import calibrate_threshold
from sampleaudit.metrics.coverage import coverage, fit_baseline_clusters, sample_clusters
from sampleaudit.metrics.neardup import near_duplicates
from sampleaudit.metrics.prompts import prompt_diversity
from sampleaudit.metrics.similarity import similarity_distribution
from sampleaudit.metrics.stats import coverage_interval, vendi_interval
from sampleaudit.metrics.vendi import vendi, vendi_on_subsample, vendi_score

D = 6
FAST = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
THRESHOLD = 0.9137  # an odd value, so that no cosine of small-integer rows lands on it


@st.composite
def embeddings(draw, min_rows=2, max_rows=30, d=D):
    """Rows picked (with repeats, so near duplicates occur) from a few small-integer vectors."""
    n = draw(st.integers(min_rows, max_rows))
    pool = draw(arrays(np.float64, (draw(st.integers(1, 8)), d), elements=st.integers(-3, 3)))
    idx = draw(arrays(np.int64, n, elements=st.integers(0, pool.shape[0] - 1)))
    noise = draw(st.sampled_from([0.0, 0.01]))
    x = pool[idx] + noise * np.random.default_rng(n).normal(size=(n, d))
    x[~np.any(x != 0, axis=1), 0] = 1.0  # no all-zero rows
    return x


def _perm(data, n):
    return np.asarray(data.draw(st.permutations(range(n))))


@pytest.fixture(scope="module")
def baselines():
    rng = np.random.default_rng(0)
    blobs = np.repeat(np.eye(D) * 3, 40, axis=0) + rng.normal(size=(40 * D, D)) * 0.1
    return [fit_baseline_clusters(blobs, seed=0), fit_baseline_clusters(rng.normal(size=(300, D)), seed=0)]


@FAST
@given(x=embeddings(), data=st.data())
def test_similarity_distribution(x, data):
    res, nn = similarity_distribution(x, threshold=THRESHOLD)
    assert 0.0 <= res.high_similarity_share <= 1.0
    assert -1.0 <= res.mean <= 1.0 and sum(res.histogram.counts) == len(x) * (len(x) - 1) // 2
    perm = _perm(data, len(x))
    res2, nn2 = similarity_distribution(x[perm], threshold=THRESHOLD)
    assert res2.high_similarity_share == res.high_similarity_share
    assert res2.mean == pytest.approx(res.mean, abs=1e-5)
    assert np.allclose(np.sort(nn2.similarity), np.sort(nn.similarity), atol=1e-5)


@FAST
@given(x=embeddings(min_rows=1), data=st.data())
def test_near_duplicates(x, data):
    res = near_duplicates(x, max_groups=len(x), max_members=len(x))
    assert 0.0 <= res.near_duplicate_share <= 1.0
    assert res.n_in_groups == sum(g.size for g in res.groups) and all(g.size >= 2 for g in res.groups)
    assert [g.size for g in res.groups] == sorted((g.size for g in res.groups), reverse=True)
    perm = _perm(data, len(x))
    res2 = near_duplicates(x[perm], max_groups=len(x), max_members=len(x))
    groups = sorted(sorted(g.members) for g in res.groups)
    assert sorted(sorted(perm[m] for m in g.members) for g in res2.groups) == groups
    assert res2.near_duplicate_share == res.near_duplicate_share


@FAST
@given(x=embeddings(min_rows=1, d=D), data=st.data())
def test_vendi(x, data):
    v = vendi_score(x)
    assert 1.0 - 1e-9 <= v <= min(x.shape) + 1e-9
    assert vendi_score(x[_perm(data, len(x))]) == pytest.approx(v, rel=1e-5)
    sub = vendi_on_subsample(x, max(1, len(x) // 2), seed=0)
    assert 1.0 - 1e-9 <= sub.mean <= min(x.shape) + 1e-9
    if len(x) >= 2:
        iv = vendi_interval(x)
        assert 1.0 <= iv.low <= iv.high <= min(x.shape)


@FAST
@given(x=embeddings(min_rows=1, max_rows=40), which=st.integers(0, 1), data=st.data())
def test_coverage(baselines, x, which, data):
    cl = baselines[which]
    res = coverage(cl, x)
    assert 0.0 <= res.coverage_ratio <= 1.0 and 0.0 <= res.js_divergence <= 1.0
    assert 0 <= res.covered_clusters <= res.baseline_clusters
    assert sum(h.n_samples for h in res.histogram) + res.n_unassigned == len(x)
    assert all(0.0 <= h.sample_share <= 1.0 for h in res.histogram)
    perm = _perm(data, len(x))
    assert coverage(cl, x[perm]) == res
    assert sample_clusters(cl, x[perm]) == sample_clusters(cl, x)
    iv = coverage_interval(cl, x, n_resamples=20)
    assert 0.0 <= iv.low <= iv.high <= 1.0


@FAST
@given(x=embeddings(max_rows=30), data=st.data())
def test_prompt_diversity(x, data):
    n = len(x)
    prompts = data.draw(st.lists(st.sampled_from("abcd"), min_size=n, max_size=n))
    prompts[1] = prompts[0]  # at least one prompt with two answers
    res = prompt_diversity(x, prompts, max_listed=n)
    assert 0.0 <= res.collapsed_prompt_share <= 1.0 and 0.0 < res.distinct_score <= 1.0
    assert -1.0 - 1e-6 <= res.within_prompt_similarity <= 1.0 + 1e-6
    assert res.across_prompt_similarity is None or -1 - 1e-6 <= res.across_prompt_similarity <= 1 + 1e-6
    perm = _perm(data, n)
    res2 = prompt_diversity(x[perm], [prompts[i] for i in perm], max_listed=n)
    for f in ("n_prompts", "n_answers", "n_single_answer_prompts", "distinct_k_counts", "collapsed_prompt_share"):
        assert getattr(res2, f) == getattr(res, f)
    assert res2.within_prompt_similarity == pytest.approx(res.within_prompt_similarity, abs=1e-5)
    key = lambda r: sorted((p.prompt, p.distinct_k) for p in r.least_diverse)  # noqa: E731
    assert key(res2) == key(res)


def _calls(baselines):
    cl = baselines[0]
    return {
        "similarity_distribution": lambda x: similarity_distribution(x, threshold=0.9),
        "near_duplicates": near_duplicates,
        "vendi_score": vendi_score,
        "vendi": vendi,
        "vendi_baseline": lambda x: vendi(np.eye(D), baseline=x),
        "vendi_on_subsample": lambda x: vendi_on_subsample(x, 2),
        "vendi_interval": vendi_interval,
        "calibrate_threshold": lambda x: calibrate_threshold(n_samples=5, baseline=x),
        "fit_baseline_clusters": lambda x: fit_baseline_clusters(np.concatenate([x] * 10)),
        "coverage": lambda x: coverage(cl, x),
        "sample_clusters": lambda x: sample_clusters(cl, x),
        "coverage_interval": lambda x: coverage_interval(cl, x),
        "prompt_diversity": lambda x: prompt_diversity(x, ["p"] * len(x)),
    }


@FAST
@given(x=embeddings(min_rows=2, max_rows=10), bad=st.sampled_from([np.nan, np.inf, -np.inf]), data=st.data())
def test_nan_and_inf_rejected(baselines, x, bad, data):
    x = x.copy()
    x[data.draw(st.integers(0, len(x) - 1)), data.draw(st.integers(0, D - 1))] = bad
    for name, call in _calls(baselines).items():
        with pytest.raises(InputError, match="NaN or inf"):
            call(x)


def test_results_hold_only_json_types(baselines):
    """Result dataclasses hold plain Python types (no numpy scalars) for the JSON results model."""
    x = np.random.default_rng(0).normal(size=(40, D))
    results = [
        near_duplicates(np.concatenate([x, x[:5]]), ids=[str(i) for i in range(45)]),
        vendi(x, baseline=x), calibrate_threshold(n_samples=10, baseline=x),
        coverage(baselines[0], x), coverage(baselines[1], x), baselines[0].summary(),
        sample_clusters(baselines[0], x), prompt_diversity(x, ["a", "b"] * 20), vendi_interval(x),
    ]

    def check(v):
        if isinstance(v, dict):
            assert all(isinstance(k, str) for k in v)
            v = list(v.values())
        if isinstance(v, list):
            for item in v:
                check(item)
        else:
            assert v is None or type(v) in (float, int, str, bool), type(v)

    for r in results:
        check(dataclasses.asdict(r))
