"""The torch path of the similarity blocks (the GPU path) agrees with numpy; run here on device="cpu"."""

import numpy as np
import pytest

from sampleaudit.config import Config, validate_config
from sampleaudit.errors import InputError
from sampleaudit.metrics.neardup import component_labels, near_duplicates
from sampleaudit.metrics.similarity import nearest_neighbors, similarity_device, similarity_distribution

pytest.importorskip("torch")


def _embeddings(n=400, d=24, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)).astype(np.float32)
    x[50:90] = x[50] + 0.02 * rng.normal(size=(40, d))  # a tight cluster: near duplicates
    x[300:303] = x[300]  # exact duplicates: ties in the nearest neighbour
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.mark.parametrize("block_size", [7, 97, 4096])
def test_nearest_neighbours_match_numpy(block_size):
    x = _embeddings()
    a = nearest_neighbors(x, block_size=block_size)
    b = nearest_neighbors(x, block_size=block_size, device="cpu")
    assert np.allclose(a.similarity, b.similarity, atol=1e-6)
    assert np.array_equal(a.index, b.index)  # first maximum on ties, as numpy's argmax
    assert b.index[300] == 301 and b.index[301] == 300  # ties: the lowest other index
    assert a.n_pairs == b.n_pairs == 400 * 399 // 2
    assert b.pair_counts.sum() == b.n_pairs
    # float rounding (another summation order) may move a value lying on a bin edge to the next bin
    assert np.abs(a.pair_counts - b.pair_counts).sum() <= 2e-4 * a.n_pairs
    assert np.abs(np.cumsum(a.pair_counts) - np.cumsum(b.pair_counts)).max() <= 1e-4 * a.n_pairs
    assert b.pair_sum == pytest.approx(a.pair_sum, abs=1e-6 * a.n_pairs)
    assert b.index.dtype == np.int64 and b.similarity.dtype == np.float32


def test_similarity_summary_and_near_duplicates_match_numpy():
    x = _embeddings(seed=1)
    ra, _ = similarity_distribution(x, threshold=0.6, block_size=128)
    rb, _ = similarity_distribution(x, threshold=0.6, block_size=128, device="cpu")
    assert rb.high_similarity_share == ra.high_similarity_share
    assert rb.mean == pytest.approx(ra.mean, abs=1e-6)
    assert all(rb.quantiles[k] == pytest.approx(v, abs=2e-3) for k, v in ra.quantiles.items())
    da = near_duplicates(x, threshold=0.95, block_size=64)
    db = near_duplicates(x, threshold=0.95, block_size=64, device="cpu")
    assert db == da and db.largest_group_size == 40
    assert np.array_equal(component_labels(x, threshold=0.9, block_size=50, device="cpu"),
                          component_labels(x, threshold=0.9, block_size=50))


def test_similarity_device_resolution(monkeypatch):
    import torch

    assert similarity_device("numpy") is None and similarity_device(None) is None
    assert similarity_device("cpu") == "cpu" and similarity_device("cuda:1") == "cuda:1"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert similarity_device("auto") is None  # no GPU: numpy
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert similarity_device("auto") == "cuda"
    assert Config().similarity.device == "auto"
    with pytest.raises(InputError, match="similarity.device"):
        validate_config({"similarity": {"device": "tpu"}}, source="test.toml")


def test_auto_does_not_import_torch_on_a_machine_without_an_nvidia_device():
    """Asking whether there is a GPU must not cost a torch import (~300 MB) where there cannot be one."""
    import subprocess
    import sys
    from pathlib import Path

    code = ("import sys; from sampleaudit.metrics.similarity import similarity_device; "
            "print(similarity_device('auto'), 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    if any(Path("/dev").glob("nvidia[0-9]*")):
        assert out[1] == "True"
    else:
        assert out == ["None", "False"]
