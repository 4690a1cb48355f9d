import numpy as np
import pytest

from sampleaudit.errors import InputError
from sampleaudit.metrics.vendi import vendi, vendi_on_subsample, vendi_score


def _groups(sizes, d=8):
    """Rows equal to basis vector g for each group g of the given size."""
    return np.concatenate([np.tile(np.eye(d)[g], (s, 1)) for g, s in enumerate(sizes)])


def test_identical_items_give_one():
    assert vendi_score(np.tile([[0.3, -1.2, 2.0]], (7, 1))) == pytest.approx(1.0, abs=1e-6)


def test_orthogonal_items_give_n():
    assert vendi_score(np.eye(6, 10)) == pytest.approx(6.0, abs=1e-5)


def test_k_groups_of_identical_items_give_k():
    assert vendi_score(_groups([4, 4, 4])) == pytest.approx(3.0, abs=1e-5)


def test_unequal_groups_give_exp_entropy():
    p = np.array([0.6, 0.2, 0.2])
    expected = float(np.exp(-(p * np.log(p)).sum()))
    assert expected == pytest.approx(2.5864, abs=1e-4)
    assert vendi_score(_groups([6, 2, 2])) == pytest.approx(expected, abs=1e-5)


def test_scale_of_rows_does_not_matter():
    x = np.random.default_rng(0).normal(size=(50, 6))
    scaled = x * np.random.default_rng(1).uniform(0.1, 10, size=(50, 1))
    assert vendi_score(x) == pytest.approx(vendi_score(scaled), abs=1e-5)


@pytest.mark.parametrize("n,d", [(5, 40), (40, 5), (30, 30)])
def test_never_exceeds_min_n_d(n, d):
    x = np.random.default_rng(n + d).normal(size=(n, d))
    assert 1.0 <= vendi_score(x) <= min(n, d) + 1e-6


def test_subsample_matches_size_and_is_seeded():
    x = np.random.default_rng(0).normal(size=(400, 16))
    a = vendi_on_subsample(x, 50, seed=3, n_draws=4)
    assert a == vendi_on_subsample(x, 50, seed=3, n_draws=4)
    assert a.subsample_size == 50 and a.n_draws == 4 and not a.whole_reference
    # Vendi grows with n: the 50-row subsample scores lower than the whole set.
    assert a.mean < vendi_score(x)


def test_small_reference_is_used_whole():
    x = np.random.default_rng(0).normal(size=(30, 16))
    sub = vendi_on_subsample(x, 100, seed=0, n_draws=5)
    assert sub.whole_reference and sub.n_draws == 1 and sub.subsample_size == 30
    assert sub.mean == pytest.approx(vendi_score(x), abs=1e-6)


def test_vendi_against_baseline():
    rng = np.random.default_rng(0)
    baseline = rng.normal(size=(600, 16))
    collapsed = np.tile(baseline[:3], (34, 1))[:100] + rng.normal(size=(100, 16)) * 0.01
    res = vendi(collapsed, baseline=baseline, seed=0)
    assert res.baseline.subsample_size == 100
    assert res.relative_score < 0.5
    healthy = vendi(baseline[:100], baseline=baseline[100:], seed=0)
    assert healthy.relative_score == pytest.approx(1.0, abs=0.15)
    assert vendi(baseline[:10]).baseline is None


def test_rejects_bad_input():
    with pytest.raises(InputError, match="NaN or inf"):
        vendi_score(np.array([[1.0, np.nan], [0.0, 1.0]]))
    with pytest.raises(InputError, match="2-D"):
        vendi_score(np.ones(5))
    with pytest.raises(InputError, match="same model"):
        vendi(np.ones((4, 3)), baseline=np.ones((4, 5)))
    with pytest.raises(InputError, match="n_draws"):
        vendi_on_subsample(np.ones((4, 3)), 2, n_draws=0)
