import numpy as np
import pytest

from sampleaudit.errors import InputError
from sampleaudit.metrics.neardup import component_labels, near_duplicates
from sampleaudit.metrics.similarity import similarity_distribution


def _data():
    """Groups of sizes 4, 3 and 2 around orthogonal directions, plus 5 singletons."""
    rng = np.random.default_rng(0)
    centres = np.eye(16)
    rows = [centres[0]] * 4 + [centres[1]] * 3 + [centres[2]] * 2 + [centres[i] for i in range(3, 8)]
    return np.array(rows) + rng.normal(size=(14, 16)) * 0.01


def test_groups_sorted_largest_first():
    x = _data()
    res = near_duplicates(x, ids=[f"s{i}" for i in range(14)])
    assert [g.size for g in res.groups] == [4, 3, 2]
    assert res.groups[0].members == [0, 1, 2, 3]
    assert res.groups[0].ids == ["s0", "s1", "s2", "s3"]
    assert res.groups[1].example_index in {4, 5, 6}
    assert res.groups[1].example_id == f"s{res.groups[1].example_index}"
    assert res.n_groups == 3 and res.n_in_groups == 9 and res.largest_group_size == 4
    assert res.near_duplicate_share == pytest.approx(9 / 14, abs=1e-6)


def test_chains_are_joined_and_blocks_do_not_matter():
    # a-b and b-c are above the threshold, a-c is not: one group by single linkage.
    angles = np.radians([0.0, 15.0, 30.0, 90.0])
    x = np.stack([np.cos(angles), np.sin(angles)], axis=1)
    for block in (1, 2, 1024):
        res = near_duplicates(x, threshold=0.95, block_size=block)
        assert [g.members for g in res.groups] == [[0, 1, 2]]


def test_cap_keeps_totals():
    x = np.repeat(np.eye(30), 2, axis=0)
    res = near_duplicates(x, max_groups=5, max_members=1)
    assert len(res.groups) == 5 and res.n_groups == 30 and res.n_in_groups == 60
    assert all(len(g.members) == 1 and g.size == 2 for g in res.groups)


def test_no_duplicates():
    res = near_duplicates(np.eye(5))
    assert res.groups == [] and res.n_groups == 0 and res.near_duplicate_share == 0.0
    assert res.largest_group_size == 0


def test_nearest_shortcut_gives_same_groups():
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.normal(size=(50, 8)), np.repeat(rng.normal(size=(5, 8)), 4, axis=0)])
    x = x + rng.normal(size=x.shape) * 0.01
    _, nn = similarity_distribution(x, threshold=0.9)
    assert near_duplicates(x, threshold=0.95, nearest=nn) == near_duplicates(x, threshold=0.95)
    with pytest.raises(InputError, match="NearestNeighbors"):
        near_duplicates(x[:10], nearest=nn)


def test_component_labels_are_smallest_member():
    x = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.001], [0.0, 1.0]], dtype=np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    assert list(component_labels(x, threshold=0.99)) == [0, 1, 0, 1]


def test_rejects_bad_input():
    with pytest.raises(InputError, match="threshold"):
        near_duplicates(np.eye(3), threshold=1.5)
    with pytest.raises(InputError, match="ids"):
        near_duplicates(np.eye(3), ids=["a"])
    with pytest.raises(InputError, match="NaN"):
        near_duplicates(np.array([[np.inf, 0.0]]))
