import numpy as np
import pytest

from sampleaudit.errors import InputError
from sampleaudit.metrics.similarity import most_similar_pairs, similarity_distribution


def _unit(rng, n, d):
    x = rng.normal(size=(n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_identical_samples():
    x = np.tile([[0.6, 0.8, 0.0]], (5, 1))
    sim, nn = similarity_distribution(x, threshold=0.9)
    assert sim.mean == pytest.approx(1.0, abs=1e-6)
    assert sim.high_similarity_share == 1.0 and sim.n_high_similarity == 5
    assert sim.quantiles["p50"] == pytest.approx(1.0, abs=1e-3)
    assert sum(sim.histogram.counts) == 10  # 5 * 4 / 2 pairs
    assert np.allclose(nn.similarity, 1.0)


def test_orthogonal_samples():
    x = np.eye(4, 8)
    sim, nn = similarity_distribution(x, threshold=0.5)
    assert sim.mean == pytest.approx(0.0, abs=1e-7)
    assert sim.high_similarity_share == 0.0
    assert sim.quantiles["p99"] == pytest.approx(0.0, abs=1e-3)
    assert np.allclose(nn.similarity, 0.0)


def test_hand_computed_small_case():
    # a and b are at cosine 0.8, c is orthogonal to both: NN of a and b is each other (0.8), c's is 0.
    x = np.array([[1.0, 0.0, 0.0], [0.8, 0.6, 0.0], [0.0, 0.0, 2.0]])
    sim, nn = similarity_distribution(x, threshold=0.8)
    assert sim.mean == pytest.approx(0.8 / 3, abs=1e-6)
    assert list(nn.index[:2]) == [1, 0]
    assert nn.similarity[2] == pytest.approx(0.0, abs=1e-7)
    assert sim.high_similarity_share == pytest.approx(2 / 3, abs=1e-6)
    pairs = most_similar_pairs(nn, k=5)
    assert (pairs[0].i, pairs[0].j) == (0, 1) and pairs[0].similarity == pytest.approx(0.8, abs=1e-6)
    assert len(pairs) == 2  # (0,1) once, then c's neighbour


@pytest.mark.parametrize("block_size", [1, 7, 64, 10_000])
def test_blockwise_equals_full_matrix(block_size):
    rng = np.random.default_rng(0)
    x = _unit(rng, 150, 16)
    x[10] = x[3]  # an exact duplicate pair
    full = x @ x.T
    iu = np.triu_indices(len(x), k=1)
    pairs = full[iu]
    np.fill_diagonal(full, -np.inf)
    sim, nn = similarity_distribution(x, threshold=0.5, block_size=block_size)
    assert sim.mean == pytest.approx(pairs.mean(), abs=1e-5)
    for name, q in {"p50": 0.5, "p90": 0.9, "p99": 0.99}.items():
        assert sim.quantiles[name] == pytest.approx(np.quantile(pairs, q), abs=2e-3)
    assert np.allclose(nn.similarity, full.max(axis=1), atol=1e-5)
    assert sim.high_similarity_share == pytest.approx((full.max(axis=1) >= 0.5).mean())
    assert sum(sim.histogram.counts) == len(pairs)
    assert nn.index[10] == 3 and nn.index[3] == 10


def test_same_result_for_any_block_size():
    x = _unit(np.random.default_rng(1), 300, 8)
    a, _ = similarity_distribution(x, threshold=0.7, block_size=1)
    b, _ = similarity_distribution(x, threshold=0.7, block_size=1024)
    assert a.histogram == b.histogram and a.quantiles == b.quantiles
    assert a.high_similarity_share == b.high_similarity_share


def test_rows_are_normalised_first():
    x = _unit(np.random.default_rng(2), 20, 5)
    a, _ = similarity_distribution(x, threshold=0.5)
    b, _ = similarity_distribution(x * np.arange(1, 21)[:, None], threshold=0.5)
    assert a.quantiles == b.quantiles and a.high_similarity_share == b.high_similarity_share


@pytest.mark.parametrize("bad, match", [
    (np.zeros(5), "must be 2-D"),
    (np.ones((1, 3)), "at least 2 row"),
    (np.array([[1.0, np.nan], [0.0, 1.0]]), "NaN or inf"),
    (np.array([[1.0, np.inf], [0.0, 1.0]]), "NaN or inf"),
])
def test_bad_input_rejected(bad, match):
    with pytest.raises(InputError, match=match):
        similarity_distribution(bad, threshold=0.9)


def test_bad_options_rejected():
    x = np.eye(3)
    with pytest.raises(InputError, match="threshold"):
        similarity_distribution(x, threshold=1.5)
    with pytest.raises(InputError, match="n_bins must divide"):
        similarity_distribution(x, threshold=0.5, n_bins=7)
