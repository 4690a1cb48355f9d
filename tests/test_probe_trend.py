"""The probe's trend rule and day figures: pure functions, hand-built series."""

import numpy as np
import pytest

from sampleaudit.errors import InputError
from sampleaudit.metrics.probe import probe_figures
from sampleaudit.probe.trend import Point, TrendRule, evaluate

SE = 0.01  # every day's bootstrap sd; a change's sd is then sqrt(2) * SE
NO_SHIFT = TrendRule(shift_z=1e9)  # the three triggers that read day-to-day changes


def _series(values, se=SE):
    return [Point(f"2026-01-{i + 1:02d}" if i < 31 else f"2026-02-{i - 30:02d}", float(v), se, f"ckpt-{i}")
            for i, v in enumerate(values)]


def _wiggle(n, seed=0, scale=0.6):
    """Noise-level wiggles: each day's change stays within the margin (|z| < 1)."""
    rng = np.random.default_rng(seed)
    return 0.5 + rng.uniform(-scale, scale, n) * SE / 2


def test_alert_fires_first_on_the_third_day_of_the_rise_not_before():
    rise_from = 20
    values = list(_wiggle(rise_from))
    for k in range(1, 8):  # rises of 2.5 change-sd a day: each beyond the margin, none a jump
        values.append(values[rise_from - 1] + k * 2.5 * np.sqrt(2) * SE)
    days, episodes = evaluate(_series(values), NO_SHIFT)
    states = [d.state for d in days]
    first = states.index("alert")
    assert first == rise_from + 2  # the third day of the rise
    assert all(s in ("first", "ok") for s in states[:first])
    assert [d.rise for d in days[rise_from:first + 1]] == [True, True, True]
    assert states[first + 1:] == ["ongoing"] * (len(values) - first - 1)  # alerts once, not every day after
    (e,) = episodes
    assert "streak" in e.triggers and "jump" not in e.triggers
    assert e.start_date == days[rise_from].date
    assert e.base_date == days[rise_from - 1].date  # the last day before the streak began
    assert e.rollback_checkpoint == f"ckpt-{rise_from - 1}"
    assert [d for d, _ in e.days] == [d.date for d in days[rise_from - 1:first + 1]]
    assert e.cleared_date is None
    # the default also reads the level: a rise this steep has stepped up 3.5 se a day, so the last three
    # days' mean beats the three before by z = 4.3 on the second day of the rise
    days, (e,) = evaluate(_series(values))
    assert [d.state for d in days].index("alert") == rise_from + 1 and e.triggers == ("shift",)
    assert e.base_date == days[rise_from - 1].date


@pytest.mark.parametrize("seed", range(8))
def test_noise_level_series_of_60_stable_days_fire_at_most_once(seed):
    rng = np.random.default_rng(seed)
    values = 0.5 + rng.normal(0, SE, 60)  # the day's value moves by exactly its bootstrap noise
    days, episodes = evaluate(_series(values))
    assert len(episodes) <= 1
    assert sum(d.state == "alert" for d in days) == len(episodes)


def test_plain_three_rises_in_a_row_would_cry_wolf_on_the_same_series():
    """The rule without a margin fires on noise (the reason for the margin)."""
    plain = TrendRule(rise_z=0.0, jump_z=1e9, cusum_h=1e9, min_sd=1e-12)
    n = sum(len(evaluate(_series(0.5 + np.random.default_rng(s).normal(0, SE, 60)), plain)[1]) for s in range(8))
    ours = sum(len(evaluate(_series(0.5 + np.random.default_rng(s).normal(0, SE, 60)))[1]) for s in range(8))
    assert n >= 8 and ours <= 2


def test_stable_days_from_real_bootstrap_figures_fire_at_most_once():
    """60 days of answers drawn from one unchanging model, through probe_figures' own bootstrap."""
    rng = np.random.default_rng(1)
    centres = rng.normal(size=(4, 32))
    labels = [str(p) for p in range(4) for _ in range(6)]
    points = []
    for day in range(60):
        emb = centres[[int(p) for p in labels]] + rng.normal(size=(len(labels), 32)) * 0.25
        f = probe_figures(emb, labels, ["t"] * len(labels), n_resamples=50, seed=day).overall.mean_similarity
        points.append(Point(f"d{day:02d}", f.value, f.se, "c"))
    _, episodes = evaluate(points)
    assert len(episodes) <= 1


def test_a_single_large_jump_alerts_at_once_and_the_alert_clears_when_the_figure_is_back():
    values = [0.5, 0.5, 0.5, 0.5 + 4.5 * np.sqrt(2) * SE, 0.56, 0.5, 0.5]
    days, (e,) = evaluate(_series(values))
    assert [d.state for d in days] == ["first", "ok", "ok", "alert", "ongoing", "cleared", "ok"]
    assert e.triggers == ("jump",) and e.base_date == days[2].date and e.cleared_date == days[5].date


def test_a_steady_climb_inside_the_margin_is_caught_by_the_cusum():
    step = 0.9 * np.sqrt(2) * SE  # z = 0.9 a day: never a counted rise
    values = [0.5] * 5 + [0.5 + k * step for k in range(1, 15)]
    days, episodes = evaluate(_series(values), NO_SHIFT)
    assert not any(d.rise for d in days)
    (e,) = episodes
    assert e.triggers == ("cusum",)
    assert e.start_date == days[5].date and e.rollback_checkpoint == "ckpt-4"
    # S grows by 0.9 - 0.5 = 0.4 a day and passes 5 on the 13th day of the climb
    assert days.index(next(d for d in days if d.state == "alert")) == 5 + 12
    # the level shift sees it far sooner: three days of 1.27 se a day above the three before it
    days, (e,) = evaluate(_series(values))
    assert e.triggers == ("shift",) and days.index(next(d for d in days if d.state == "alert")) == 5 + 3


def test_a_lasting_step_inside_the_jump_margin_is_caught_by_the_shift_on_its_third_day():
    step = 4.0 * SE  # z of the day's change 2.8: one counted rise, no jump, the CUSUM peaks at 2.3
    values = list(_wiggle(10)) + [0.5 + step] * 8
    before, _ = evaluate(_series(values), NO_SHIFT)
    assert not any(d.state == "alert" for d in before)  # the change-based triggers never open
    days, (e,) = evaluate(_series(values))
    assert [d.state for d in days].index("alert") == 10 + 2
    assert e.triggers == ("shift",)
    assert e.start_date == days[10].date and e.base_date == days[9].date and e.rollback_checkpoint == "ckpt-9"
    assert all(d.state == "ongoing" for d in days[13:])


def test_after_a_clear_the_shift_waits_for_fresh_windows():
    # a one-day spike of 10 se: a jump, back the next day (cleared); the day after, the last three days'
    # mean still holds the spike (z 4.1 over the three before): it must not open a second episode
    values = list(_wiggle(8)) + [0.5 + 10 * SE] + [0.5] * 8
    days, (e,) = evaluate(_series(values))
    assert [d.state for d in days[8:11]] == ["alert", "cleared", "ok"] and "jump" in e.triggers
    assert all(d.state == "ok" for d in days[10:])


def test_a_second_rise_after_a_clear_is_a_new_episode():
    rise = 2.5 * np.sqrt(2) * SE
    up = [0.5 + k * rise for k in range(1, 4)]
    values = [0.5, 0.5, *up, 0.5, 0.5, *up]
    days, episodes = evaluate(_series(values))
    assert [d.state for d in days].count("alert") == 2
    assert [e.cleared_date for e in episodes] == [days[5].date, None]


def test_rule_and_points_are_validated():
    with pytest.raises(InputError, match="rise_z"):
        TrendRule(rise_z=-1)
    with pytest.raises(InputError, match="jump_z"):
        TrendRule(rise_z=3, jump_z=2)
    with pytest.raises(InputError, match="date order"):
        evaluate([Point("b", 0.5, 0.01), Point("a", 0.5, 0.01)])
    with pytest.raises(InputError, match="finite"):
        evaluate([Point("a", float("nan"), 0.01)])


def test_day_figures_by_hand():
    # prompt a: two identical answers (cos 1); prompt b: orthogonal answers (cos 0)
    e = np.array([[1, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], dtype=float)
    f = probe_figures(e, ["a", "a", "b", "b"], ["x", "x", "y", "z"], threshold=0.9, n_resamples=30)
    a, b = f.prompts
    assert a.mean_similarity.value == 1.0 and b.mean_similarity.value == 0.0
    assert f.overall.mean_similarity.value == 0.5
    assert a.high_similarity_share == 1.0 and b.high_similarity_share == 0.0
    assert f.overall.high_similarity_share == 0.5
    assert f.overall.drift.value == 0.0  # its own reference
    # drift from a reference day whose answers to a point elsewhere
    ref = np.array([[0, 1, 0], [0, 1, 0], [0, 1, 0]], dtype=float)
    g = probe_figures(e, ["a", "a", "b", "b"], ["x"] * 4, reference=(ref, ["a", "a", "b"]), n_resamples=30)
    assert g.prompts[0].drift.value == 1.0  # orthogonal means
    assert g.prompts[1].drift.value == pytest.approx(1 - 1 / np.sqrt(2), abs=1e-6)
    assert g.overall.drift.low <= g.overall.drift.value <= g.overall.drift.high


def test_resampled_similarity_never_pairs_an_answer_with_its_own_copy():
    rng = np.random.default_rng(0)
    e = rng.normal(size=(8, 16))
    f = probe_figures(e, ["p"] * 8, ["t"] * 8, n_resamples=200)
    s = f.overall.mean_similarity
    assert s.low <= s.value <= s.high
    assert s.high < 0.5  # duplicates drawn twice would add pairs of cosine 1 and push it up


def test_one_answer_per_prompt_uses_pairs_across_prompts():
    e = np.array([[1, 0], [1, 0], [0, 1]], dtype=float)
    f = probe_figures(e, ["a", "b", "c"], ["x", "y", "z"], n_resamples=20)
    assert f.overall.mean_similarity.value == pytest.approx(1 / 3, abs=1e-6)
    assert all(p.mean_similarity.value is None for p in f.prompts)


def test_cross_prompt_similarity_is_the_mean_over_pairs_of_answers_to_different_prompts():
    rng = np.random.default_rng(3)
    labels = ["a"] * 3 + ["b"] * 5 + ["c"] * 2
    e = rng.normal(size=(len(labels), 12))
    f = probe_figures(e, labels, ["t"] * len(labels), n_resamples=200)
    u = e / np.linalg.norm(e, axis=1, keepdims=True)
    lab = np.array(labels)
    cos = u @ u.T
    other = lab[:, None] != lab[None, :]
    assert f.overall.cross_similarity.value == pytest.approx(cos[other].mean(), abs=1e-6)
    for row in f.prompts:
        mine = lab == row.prompt
        assert row.cross_similarity.value == pytest.approx(cos[np.ix_(mine, ~mine)].mean(), abs=1e-6)
    c = f.overall.cross_similarity
    assert c.low <= c.value <= c.high and c.se > 0


def test_cross_prompt_similarity_needs_two_answers_per_prompt_and_two_prompts():
    e = np.eye(4)
    assert probe_figures(e, ["a", "a", "b", "c"], ["t"] * 4, n_resamples=20).overall.cross_similarity.value is None
    assert probe_figures(e, ["a"] * 4, ["t"] * 4, n_resamples=20).overall.cross_similarity.value is None
    two = probe_figures(e, ["a", "a", "b", "b"], ["t"] * 4, n_resamples=20)
    assert two.overall.cross_similarity.value == 0.0  # orthogonal answers
