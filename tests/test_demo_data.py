"""The demo tells the source article's story, measured with the real default model (CPU)."""

import pytest

pytestmark = pytest.mark.slow


def test_ranking_healthy_first_collapsed_last(demo_result):
    assert demo_result.ranking == ["ckpt-20k", "ckpt-28k", "ckpt-35k"]
    notes = {(n.better, n.worse): n for n in demo_result.ranking_notes}
    assert not notes[("ckpt-20k", "ckpt-28k")].within_noise


def test_collapsed_fails_mode_collapse_and_healthy_passes(demo_result):
    checks = {c.name: {ch.name: ch.status for ch in c.checks} for c in demo_result.checkpoints}
    assert checks["ckpt-20k"] == dict.fromkeys(checks["ckpt-20k"], "pass")
    assert checks["ckpt-35k"]["mode_collapse"] == "fail"
    assert checks["ckpt-35k"]["coverage"] == "fail"
    assert checks["ckpt-35k"]["repetition_loops"] == "fail"
    assert demo_result.checkpoint("ckpt-35k").similarity.high_similarity_share > 0.30


def test_healthy_covers_clearly_more_clusters(demo_result):
    cov = {c.name: c.coverage for c in demo_result.checkpoints}
    assert cov["ckpt-20k"].coverage_ratio >= 0.9
    assert cov["ckpt-35k"].coverage_ratio <= 0.6
    assert cov["ckpt-20k"].covered_clusters - cov["ckpt-35k"].covered_clusters >= cov["ckpt-20k"].baseline_clusters // 3
    # the intervals do not overlap: the difference is beyond noise
    assert cov["ckpt-35k"].coverage_ratio_interval.high < cov["ckpt-20k"].coverage_ratio_interval.low
    assert cov["ckpt-35k"].js_divergence > cov["ckpt-20k"].js_divergence
    assert len(cov["ckpt-35k"].missing_clusters) > 0 and not cov["ckpt-20k"].missing_clusters


def test_threshold_is_calibrated_from_the_baseline(demo_result):
    sims = [c.similarity for c in demo_result.checkpoints]
    assert {s.threshold_source for s in sims} == {"baseline_nn_p95"}
    # a healthy checkpoint sits near the calibration quantile: about 5% above the threshold
    assert demo_result.checkpoint("ckpt-20k").similarity.high_similarity_share < 0.12
    assert demo_result.baseline.similarity.n_samples == 1000


def test_data_vs_model_verdict(demo_result):
    kinds = {c.name: c.verdict.kind for c in demo_result.checkpoints}
    assert kinds == {"ckpt-20k": "as_diverse_as_data", "ckpt-28k": "model_less_diverse",
                     "ckpt-35k": "model_less_diverse"}


def test_openings_and_loops_match_the_construction(demo_result):
    rep = demo_result.checkpoint("ckpt-35k").repetition
    assert 0.45 <= rep.opening_top_share <= 0.55  # data_samples/README.md: 50.1% share one opening
    assert 0.10 <= rep.loop_share <= 0.14  # 11.9% end in a loop
    assert demo_result.checkpoint("ckpt-20k").repetition.loop_share == 0.0
