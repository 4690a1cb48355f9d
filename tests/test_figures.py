"""The registry of headline figures is complete, and checks, ranking and config follow it (in the
spirit of scikit-learn's test_common: one set of tests over every registered figure)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace

import pytest

from sampleaudit import figures
from sampleaudit.checks import penalty, run_checks
from sampleaudit.config import Config, describe_defaults

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("figure", figures.FIGURES, ids=lambda f: f.name)
def test_every_figure_is_complete(figure):
    assert figures.problems(figure, readme=README, root=ROOT) == []


@pytest.mark.parametrize("change, complaint", [
    (dict(label=""), "no label"),
    (dict(meaning=" "), "no meaning"),
    (dict(warn=None), "has no warn/fail limits"),
    (dict(warn=0.5, fail=0.3), "lies beyond fail"),
    (dict(describe=None), "no describe()"),
    (dict(test="tests/metrics/test_similarity.py::test_that_does_not_exist"), "does not exist"),
    (dict(test=""), "does not exist"),
    (dict(name="not_in_the_readme"), "no row in the README"),
])
def test_completeness_rule_catches_what_is_missing(change, complaint):
    broken = dataclasses.replace(figures.BY_NAME["high_similarity_share"], **change)
    assert any(complaint in p for p in figures.problems(broken, readme=README, root=ROOT))


def test_a_stale_readme_table_is_caught():
    stale = README.replace("| `loop_share` | `repetition_loops` |", "| `loop_share` | `loops` |")
    assert any("stale" in p for p in figures.problems(figures.BY_NAME["loop_share"], readme=stale, root=ROOT))


def test_config_has_one_checks_table_per_gated_figure_with_the_registry_defaults():
    checks = Config().checks
    for f in figures.GATED:
        limits = getattr(checks, f.check)
        assert (limits.warn, limits.fail, limits.higher_is_worse) == (f.warn, f.fail, f.higher_is_worse)
    assert {k for k, _, _ in describe_defaults() if k.startswith("checks.")} == {f"checks.{f.check}" for f in figures.GATED}


def _holder(**values):
    """Sections carrying the given figure values (every other field a gated message needs too)."""
    sim = SimpleNamespace(high_similarity_share=values.get("high_similarity_share"), threshold=0.7, vendi_score=None)
    cov = SimpleNamespace(coverage_ratio=values.get("coverage_ratio"), covered_clusters=3, baseline_clusters=4)
    rep = SimpleNamespace(loop_share=values.get("loop_share"), opening_top_share=values.get("opening_top_share"),
                          opening_top_text="same start")
    return SimpleNamespace(similarity=sim, coverage=cov, repetition=rep)


@pytest.mark.parametrize("figure", figures.GATED, ids=lambda f: f.name)
def test_each_gated_figure_passes_warns_and_fails_at_its_limits(figure):
    step = 0.01 if figure.higher_is_worse else -0.01
    for value, status in [(figure.warn - step, "pass"), (figure.warn + step, "warn"), (figure.fail + step, "fail")]:
        (check,) = [c for c in run_checks(_holder(**{figure.name: value}), Config()) if c.name == figure.check]
        assert (check.status, check.figure, check.value) == (status, figure.name, pytest.approx(value))
        assert figure.describe(getattr(_holder(**{figure.name: value}), figure.section)) in check.message


def test_figures_not_measured_are_not_checked_and_count_zero_in_the_penalty():
    assert run_checks(_holder(), Config()) == []
    holder = _holder(high_similarity_share=0.4, coverage_ratio=0.75)
    assert penalty(holder) == pytest.approx(0.4 + 0.25)


def test_ranking_rule_names_every_gated_figure():
    rule = figures.ranking_rule()
    assert all(f.name in rule for f in figures.GATED)
    assert "(1 - coverage_ratio)" in rule


def test_every_figure_is_found_in_a_real_audit_within_its_bounds():
    from sampleaudit import audit
    from sampleaudit.embed.hashing import HashingEmbedder
    from sampleaudit.samples import SampleSet

    words = "quartz fjord nimbus kettle olive plume ember zinc rover loaf sonata tax goal energy ship loop".split()
    text = lambda i: " ".join(words[(i * k) % len(words)] for k in range(1, 9))  # noqa: E731
    base = SampleSet.from_texts([f"{text(i)} {i}" for i in range(120)], name="train")
    r = audit([SampleSet.from_texts([f"{text(i)} sample {i}" for i in range(40)], name="ck")], baseline=base,
              embedder=HashingEmbedder(128), cache=False)
    c = r.checkpoints[0]
    for f in figures.FIGURES:
        value = f.value(c)
        assert value is not None, f.name
        assert f.bounds[0] <= value and (f.bounds[1] is None or value <= f.bounds[1]), (f.name, value)
        if f.interval:
            iv = f.interval_of(c)
            assert iv is not None and iv.low <= value + 1e-9 and value - 1e-9 <= iv.high, (f.name, iv, value)
    assert [ch.name for ch in c.checks] == [f.check for f in figures.GATED]
