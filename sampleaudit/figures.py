"""The registry of headline figures: each is declared once, here, and everything else reads it.

A figure names where it lives in a checkpoint's result, which direction is worse, its warn/fail
limits (when a check gates on it), how it is labelled and printed, whether it carries an
interval, and the test that pins its metric down. The config's `checks.*` defaults, the checks
themselves, the ranking penalty, the comparisons with the top-ranked checkpoint, the report's
tables and the README's table of checks are all driven from `FIGURES`; `problems()` is the
completeness rule that tests/test_figures.py applies to every entry.

Adding a gated metric: write the metric (sampleaudit/metrics/), add one `Figure` here, add its
test. Nothing else has to be kept in sync by hand (run `python scripts/update_readme.py` to
regenerate the README's table; a test fails while it is stale).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

Unit = Literal["share", "score"]


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "\u2026"


@dataclass(frozen=True)
class Figure:
    """One headline figure of a checkpoint's result.

    `section` is the CheckpointResult attribute holding it (`name` is the field there; its
    interval, when `interval`, is the field `name + "_interval"`). A gated figure has `check`
    (the check's name), default `warn`/`fail` limits and `describe`, which words the measured
    value for the check's message. `test` is the pytest node id of the test of its metric.
    """

    name: str
    section: str
    label: str
    unit: Unit
    higher_is_worse: bool
    meaning: str
    bounds: tuple[float, float | None]
    test: str
    interval: bool = False
    check: str | None = None
    warn: float | None = None
    fail: float | None = None
    limits_note: str = ""
    describe: Callable[[Any], str] | None = None

    def value(self, result) -> float | None:
        """The figure's value in a CheckpointResult (or a section holder), None when not measured."""
        section = getattr(result, self.section, None)
        value = getattr(section, self.name, None) if section is not None else None
        return None if value is None else float(value)

    def interval_of(self, result):
        """The stored Interval of the figure, or None."""
        if not self.interval:
            return None
        section = getattr(result, self.section, None)
        return getattr(section, self.name + "_interval", None) if section is not None else None

    def badness(self, value: float) -> float:
        """The figure as a penalty in [0, 1] (only for shares): higher is always worse."""
        return value if self.higher_is_worse else 1.0 - value

    def format(self, value: float | None) -> str:
        """The value as a person reads it: a percentage for shares, one decimal for scores."""
        if value is None:
            return "–"
        return f"{value:.1%}" if self.unit == "share" else f"{value:.1f}"


def _mode_collapse(sim) -> str:
    return f"{sim.high_similarity_share:.1%} of samples have a neighbour with cosine >= {sim.threshold:.3f}"


def _coverage(cov) -> str:
    return (f"{cov.covered_clusters} of {cov.baseline_clusters} baseline clusters covered "
            f"({cov.coverage_ratio:.0%})")


def _loops(rep) -> str:
    return f"{rep.loop_share:.1%} of samples end in a repetition loop"


def _openings(rep) -> str:
    if rep.opening_top_text is None:
        return "no opening starts more than one sample"
    return f"{rep.opening_top_share:.1%} of samples open with \u201c{_clip(rep.opening_top_text, 60)}\u201d"


FIGURES: tuple[Figure, ...] = (
    Figure(
        name="high_similarity_share", section="similarity", label="high-similarity share", unit="share",
        higher_is_worse=True, bounds=(0.0, 1.0), interval=True,
        meaning="share of samples whose most similar other sample reaches the (calibrated) threshold",
        check="mode_collapse", warn=0.15, fail=0.30, limits_note="fail above 30% (source article 5.3)",
        describe=_mode_collapse,
        test="tests/metrics/test_similarity.py::test_hand_computed_small_case",
    ),
    Figure(
        name="coverage_ratio", section="coverage", label="cluster coverage", unit="share",
        higher_is_worse=False, bounds=(0.0, 1.0), interval=True,
        meaning="share of the baseline's clusters the samples cover with at least half the baseline's mass",
        check="coverage", warn=0.85, fail=0.60, limits_note="fail below 0.60, warn below 0.85 (source 3.3)",
        describe=_coverage,
        test="tests/metrics/test_coverage.py::test_samples_from_k_blobs_cover_k",
    ),
    Figure(
        name="loop_share", section="repetition", label="loop share", unit="share",
        higher_is_worse=True, bounds=(0.0, 1.0), interval=True,
        meaning="share of samples caught in a repetition loop (source 5.3, \u201c循环生成\u201d)",
        check="repetition_loops", warn=0.02, fail=0.10, limits_note="fail above 10%, warn above 2%",
        describe=_loops,
        test="tests/metrics/test_repetition.py::test_labelled_set_precision_and_recall",
    ),
    Figure(
        name="opening_top_share", section="repetition", label="top repeated opening", unit="share",
        higher_is_worse=True, bounds=(0.0, 1.0),
        meaning="share of samples starting with the most common repeated opening",
        check="repeated_openings", warn=0.15, fail=0.60, limits_note="fail above 60% (source article 3.1)",
        describe=_openings,
        test="tests/metrics/test_repetition.py::test_opening_top_share_is_measured",
    ),
    Figure(
        name="vendi_score", section="similarity", label="Vendi score", unit="score",
        higher_is_worse=False, bounds=(1.0, None), interval=True,
        meaning="effective number of distinct samples (not gated: compare it with the baseline's at the same size)",
        test="tests/metrics/test_vendi.py::test_k_groups_of_identical_items_give_k",
    ),
)

BY_NAME: dict[str, Figure] = {f.name: f for f in FIGURES}
GATED: tuple[Figure, ...] = tuple(f for f in FIGURES if f.check)
BY_CHECK: dict[str, Figure] = {f.check: f for f in GATED}
WITH_INTERVAL: tuple[Figure, ...] = tuple(f for f in FIGURES if f.interval)


def ranking_rule() -> str:
    """The ranking rule in words, from the registry."""
    terms = " + ".join(f.name if f.higher_is_worse else f"(1 - {f.name})" for f in GATED)
    noisy = ", ".join(f.name for f in WITH_INTERVAL)
    return (
        "checkpoints are ordered by their worst check (pass < warn < fail), then by the number of failed "
        f"and of warned checks, then by a penalty: {terms} (each in [0, 1]; a figure not measured counts "
        f"0), lower is healthier, then by name; neighbours whose intervals ({noisy}) all overlap and whose "
        "checks agree are reported as within noise"
    )


# --------------------------------------------------------------------------------------------
# the README table and the completeness rule

README_START = "<!-- figures: generated by scripts/update_readme.py from sampleaudit/figures.py -->"
README_END = "<!-- /figures -->"


def readme_table() -> str:
    """The README's table of headline figures and checks (between README_START and README_END)."""
    rows = ["| figure | check | worse when | warn | fail | interval | meaning |",
            "|---|---|---|---|---|---|---|"]
    for f in FIGURES:
        side = "higher" if f.higher_is_worse else "lower"
        level = (lambda x: "–" if x is None else f"{x:g}")
        rows.append(f"| `{f.name}` | {f'`{f.check}`' if f.check else 'not gated'} | {side} | {level(f.warn)} | "
                    f"{level(f.fail)} | {'yes' if f.interval else 'no'} | {f.meaning} |")
    return "\n".join([README_START, *rows, README_END])


def _test_exists(node: str, root: Path) -> bool:
    path, _, name = node.partition("::")
    file = root / path
    if not name or not file.is_file():
        return False
    tree = ast.parse(file.read_text(encoding="utf-8"))
    return any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name for n in tree.body)


def problems(figure: Figure, *, readme: str, root: Path) -> list[str]:
    """What a registry entry lacks: a label, a meaning, limits, a check message, a test, a README row."""
    out = []
    if not figure.label.strip():
        out.append("no label")
    if not figure.meaning.strip():
        out.append("no meaning (the README and report say what it measures)")
    if figure.check:
        if figure.warn is None or figure.fail is None:
            out.append(f"check {figure.check} has no warn/fail limits")
        elif (figure.warn > figure.fail) == figure.higher_is_worse and figure.warn != figure.fail:
            out.append(f"check {figure.check}: warn {figure.warn} lies beyond fail {figure.fail}")
        if figure.describe is None:
            out.append(f"check {figure.check} has no describe() for its message")
        if figure.unit != "share":
            out.append(f"check {figure.check} gates a {figure.unit}; the ranking penalty needs a share")
    elif figure.warn is not None or figure.fail is not None:
        out.append("limits without a check")
    if not _test_exists(figure.test, root):
        out.append(f"its test {figure.test or '(none)'} does not exist")
    row = next((line for line in readme.splitlines() if line.startswith(f"| `{figure.name}` |")), None)
    if row is None:
        out.append("no row in the README's table of figures")
    elif readme_table() not in readme:
        out.append("the README's table of figures is stale: run python scripts/update_readme.py")
    return out
