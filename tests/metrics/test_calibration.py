import numpy as np
import pytest

from sampleaudit.errors import InputError
from sampleaudit.metrics.calibration import (
    GENERIC_THRESHOLD,
    MODEL_THRESHOLDS,
    calibrate_threshold,
    script_share,
)
from sampleaudit.metrics.similarity import nearest_neighbors


def _unit(x):
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def test_config_wins():
    cal = calibrate_threshold(n_samples=100, baseline=np.eye(5), config_threshold=0.8)
    assert cal.threshold == 0.8 and cal.threshold_source == "fixed"


def test_model_default_is_a_table_lookup():
    cal = calibrate_threshold(n_samples=100, model="sentence-transformers/all-MiniLM-L6-v2")
    assert cal.threshold == MODEL_THRESHOLDS["all-minilm-l6-v2"]
    assert cal.threshold_source == "model_default"
    other = calibrate_threshold(n_samples=100, model="some/unknown-model")
    assert other.threshold == GENERIC_THRESHOLD and other.threshold_source == "generic_default"
    assert "unknown-model" in other.description


def test_baseline_quantile_on_equal_size_subsamples():
    rng = np.random.default_rng(0)
    baseline = rng.normal(size=(2000, 16))
    cal = calibrate_threshold(n_samples=200, baseline=baseline, seed=1, n_draws=3)
    assert cal.threshold_source == "baseline_nn_p95"
    assert cal.subsample_size == 200 and cal.n_draws == 3 and cal.n_baseline == 2000
    # By construction about 5% of a same-sized healthy sample lies above it.
    fresh = _unit(rng.normal(size=(200, 16)))
    share = float((nearest_neighbors(fresh).similarity >= cal.threshold).mean())
    assert 0.0 < share < 0.15
    # NN similarity grows with n: a larger checkpoint gets a higher threshold.
    assert calibrate_threshold(n_samples=1000, baseline=baseline).threshold > cal.threshold
    assert cal == calibrate_threshold(n_samples=200, baseline=baseline, seed=1, n_draws=3)


def test_small_baseline_used_whole_and_said():
    cal = calibrate_threshold(n_samples=500, baseline=np.random.default_rng(0).normal(size=(50, 8)))
    assert cal.subsample_size == 50 and cal.n_draws == 1
    assert "whole baseline" in cal.description and "fewer" in cal.description


def test_quantile_named_in_source():
    cal = calibrate_threshold(n_samples=20, baseline=np.random.default_rng(0).normal(size=(80, 8)), quantile=0.9)
    assert cal.threshold_source == "baseline_nn_p90"


def test_calibration_rejects_bad_options():
    with pytest.raises(InputError):
        calibrate_threshold(n_samples=1)
    with pytest.raises(InputError, match="quantile"):
        calibrate_threshold(n_samples=10, baseline=np.eye(4), quantile=1.0)
    with pytest.raises(InputError, match="lie in"):
        calibrate_threshold(n_samples=10, config_threshold=2.0)


def test_script_share():
    res = script_share(["Hello world", "你好，世界", "こんにちは", "Привет, мир", "مرحبا", "12345", "ok"])
    assert res.shares["latin"] == pytest.approx(2 / 7, abs=1e-6)
    assert res.shares["cjk"] == pytest.approx(2 / 7, abs=1e-6)
    assert res.shares["cyrillic"] == res.shares["arabic"] == res.shares["none"] == pytest.approx(1 / 7, abs=1e-6)
    assert sum(res.shares.values()) == pytest.approx(1.0)


def test_script_share_counts_letters_by_majority():
    # Chinese text with some English words and digits is still mostly CJK.
    res = script_share(["使用 Python 3.11 运行这个程序，然后查看结果"] * 3 + ["plain English"])
    assert res.dominant_script == "cjk" and res.dominant_share == 0.75


def test_script_share_dominant_script_ignores_letterless_texts():
    # Empty samples and bare numbers must not make "none" the dominant script (and so trigger
    # the wrong-embedder warning); only when no text has letters is "none" dominant.
    res = script_share(["", "", "12345", "Hello world"])
    assert res.shares["none"] == 0.75
    assert res.dominant_script == "latin" and res.dominant_share == 0.25
    assert script_share(["", "42"]).dominant_script == "none"


def test_script_share_rejects_bad_input():
    with pytest.raises(InputError):
        script_share("one string")
    with pytest.raises(InputError):
        script_share([])
    with pytest.raises(InputError):
        script_share(["ok", 3])
