"""Metric results -> named checks (pass / warn / fail), the ranking rule and the exit code."""

from __future__ import annotations

from collections.abc import Sequence

from .config import Config, ShareCheck
from .results import STATUS_ORDER, CheckpointResult, CheckResult, SimilaritySection, Status


def share_check(name: str, value: float, limits: ShareCheck, what: str) -> CheckResult:
    """A check on a share where higher is worse: fail above `fail`, warn above `warn`."""
    if value > limits.fail:
        status, threshold, verb = "fail", limits.fail, "above the fail level"
    elif value > limits.warn:
        status, threshold, verb = "warn", limits.warn, "above the warn level"
    else:
        status, threshold, verb = "pass", limits.warn, "within the warn level"
    message = f"{value:.1%} of samples {what} ({verb} {threshold:.0%})"
    return CheckResult(name, status, round(value, 6), threshold, message)


def mode_collapse_check(similarity: SimilaritySection, config: Config) -> CheckResult:
    return share_check(
        "mode_collapse",
        similarity.high_similarity_share,
        config.checks.mode_collapse,
        f"have a neighbour with cosine >= {similarity.threshold:.3f}",
    )


def worst(statuses: Sequence[Status]) -> Status:
    return max(statuses, key=STATUS_ORDER.__getitem__, default="pass")


RANKING_RULE = (
    "checkpoints are ordered by their worst check (pass < warn < fail), then by the number of "
    "failed and warned checks, then by high_similarity_share (lower is healthier), then by name"
)


def rank(checkpoints: Sequence[CheckpointResult]) -> list[str]:
    """Names from healthiest to worst, by RANKING_RULE."""

    def key(c: CheckpointResult):
        n_fail = sum(ch.status == "fail" for ch in c.checks)
        n_warn = sum(ch.status == "warn" for ch in c.checks)
        share = c.similarity.high_similarity_share if c.similarity else 0.0
        return (STATUS_ORDER[c.status], n_fail, n_warn, share, c.name)

    return [c.name for c in sorted(checkpoints, key=key)]


def exit_code(checkpoints: Sequence[CheckpointResult], fail_on: str) -> int:
    """0 when no checkpoint reaches the `fail_on` status ("warn", "fail" or "never"), else 1."""
    if fail_on == "never":
        return 0
    limit = STATUS_ORDER[fail_on]
    return int(any(STATUS_ORDER[c.status] >= limit for c in checkpoints))
