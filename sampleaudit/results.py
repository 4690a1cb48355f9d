"""The results model: the single source of truth every renderer reads; versioned JSON.

`AuditResult` round-trips through JSON exactly (`to_json` / `from_json`). Field names listed in
the README's "audit.json" section are a contract: other tools parse them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import TypeAdapter, ValidationError

from .errors import InputError
from .metrics.calibration import ScriptShare
from .metrics.coverage import BaselineClustersSummary, CoverageResult, SampleClusters
from .metrics.lexical import LexicalResult
from .metrics.neardup import NearDuplicateGroup
from .metrics.prompts import PromptDiversityResult
from .metrics.repetition import RepetitionResult
from .metrics.similarity import SimilarityResult
from .metrics.stats import Interval

SCHEMA_VERSION = 1
Status = Literal["pass", "warn", "fail"]
STATUS_ORDER: dict[str, int] = {"pass": 0, "warn": 1, "fail": 2}


@dataclass(frozen=True)
class ToolInfo:
    name: str
    version: str


@dataclass(frozen=True)
class EmbedderInfo:
    model: str
    dim: int
    device: str


@dataclass(frozen=True)
class SampleView:
    """A sample as shown in a report; `text` is the full text (renderers cut it)."""

    id: str
    text: str
    prompt: str | None = None


@dataclass(frozen=True)
class PairView:
    similarity: float
    a: SampleView
    b: SampleView


@dataclass(frozen=True)
class SimilaritySection(SimilarityResult):
    """Similarity of one set (metrics.similarity), with the threshold's origin, an interval for
    high_similarity_share, the Vendi score and near-duplicate groups.

    `fixed_threshold_share` is the share of samples whose nearest neighbour reaches the
    embedder's fixed (uncalibrated) threshold: an absolute figure, where high_similarity_share
    is relative to the baseline once the threshold is calibrated."""

    threshold_source: str = "config"
    threshold_description: str = ""
    high_similarity_share_interval: Interval | None = None
    fixed_threshold: float | None = None
    fixed_threshold_share: float | None = None
    vendi_score: float | None = None
    vendi_score_interval: Interval | None = None
    near_duplicate_threshold: float | None = None
    near_duplicate_share: float | None = None
    n_near_duplicate_groups: int | None = None
    near_duplicate_groups: list[NearDuplicateGroup] = field(default_factory=list)
    most_similar_pairs: list[PairView] = field(default_factory=list)


@dataclass(frozen=True)
class CoverageSection(CoverageResult):
    """Mass-aware coverage of the baseline's clusters (metrics.coverage), with an interval and
    the number of clusters the checkpoint's own samples form (`sample_clusters`)."""

    coverage_ratio_interval: Interval | None = None
    sample_clusters: int | None = None
    sample_clustering: SampleClusters | None = None


@dataclass(frozen=True)
class Verdict:
    """Data vs model (source pitfall 4): is the checkpoint less diverse than its training data?

    `kind`: "model_less_diverse", "data_homogeneous" or "as_diverse_as_data".
    """

    kind: str
    message: str
    figures: dict[str, float | None]


@dataclass(frozen=True)
class LoopView:
    """A looped sample with its text, so a report can highlight the loop."""

    id: str
    text: str
    unit: str
    n_repeats: int
    start_char: int
    end_char: int
    coverage_share: float


@dataclass(frozen=True)
class CheckResult:
    name: str
    status: Status
    value: float
    threshold: float
    message: str


@dataclass(frozen=True)
class SetResult:
    """What every audited set has: where it came from and how many samples it held."""

    name: str
    path: str | None
    sha256: str | None
    n_samples: int
    n_empty: int
    n_skipped: int


@dataclass(frozen=True)
class BaselineResult(SetResult):
    """The training-data baseline; `similarity` is measured on a subsample of `subsample_size`."""

    subsample_size: int = 0
    similarity: SimilaritySection | None = None
    coverage: BaselineClustersSummary | None = None
    repetition: RepetitionResult | None = None
    lexical: LexicalResult | None = None
    scripts: ScriptShare | None = None


@dataclass(frozen=True)
class CheckpointResult(SetResult):
    similarity: SimilaritySection | None = None
    coverage: CoverageSection | None = None
    repetition: RepetitionResult | None = None
    lexical: LexicalResult | None = None
    prompts: PromptDiversityResult | None = None
    scripts: ScriptShare | None = None
    verdict: Verdict | None = None
    checks: list[CheckResult] = field(default_factory=list)
    status: Status = "pass"
    examples: list[SampleView] = field(default_factory=list)
    worst_loops: list[LoopView] = field(default_factory=list)


@dataclass(frozen=True)
class RankingNote:
    """How two checkpoints adjacent in the ranking compare; `within_noise` when no figure that
    carries an interval differs beyond it."""

    better: str
    worse: str
    within_noise: bool
    reason: str


@dataclass(frozen=True)
class FigureComparison:
    """A headline figure of one checkpoint against the top-ranked one, by their intervals.

    `verdict`: "within_noise" (the intervals overlap), "higher" or "lower"; `worse` says whether
    the other checkpoint is the less healthy on this figure (None within noise)."""

    figure: str
    label: str
    top: str
    other: str
    top_value: float
    other_value: float
    verdict: str
    worse: bool | None


@dataclass(frozen=True)
class EmbeddingMap:
    """2-D PCA coordinates (fitted on the baseline, else on all sets) of a seeded subsample of
    each set, for the report's map."""

    explained_variance: float
    baseline: list[list[float]]
    checkpoints: dict[str, list[list[float]]]


@dataclass(frozen=True)
class Provenance:
    created_at: str
    run_seconds: float
    seed: int
    config: dict
    python: str
    platform: str
    command: list[str] | None = None


@dataclass(frozen=True)
class SourceAudit:
    """An audit merged into this result by `sampleaudit compare`: where it came from and when."""

    path: str
    created_at: str
    tool_version: str
    device: str
    run_seconds: float
    checkpoints: list[str]


@dataclass(frozen=True)
class AuditResult:
    schema_version: int
    tool: ToolInfo
    embedder: EmbedderInfo
    baseline: BaselineResult | None
    checkpoints: list[CheckpointResult]
    ranking: list[str]
    ranking_rule: str
    provenance: Provenance
    ranking_notes: list[RankingNote] = field(default_factory=list)
    comparisons: list[FigureComparison] = field(default_factory=list)
    map: EmbeddingMap | None = None
    warnings: list[str] = field(default_factory=list)
    sources: list[SourceAudit] = field(default_factory=list)

    def checkpoint(self, name: str) -> CheckpointResult:
        for c in self.checkpoints:
            if c.name == name:
                return c
        raise KeyError(name)


_ADAPTER = TypeAdapter(AuditResult)


def to_json(result: AuditResult) -> str:
    """The result as indented UTF-8 JSON text (non-ASCII kept readable)."""
    return _ADAPTER.dump_json(result, indent=2).decode("utf-8") + "\n"


def from_json(text: str | bytes, *, source: str = "audit.json") -> AuditResult:
    """Parse and validate audit JSON; a wrong schema version or shape is an InputError."""
    import json

    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON ({exc.msg})", path=source, line=exc.lineno) from None
    version = data.get("schema_version") if isinstance(data, dict) else None
    if version != SCHEMA_VERSION:
        raise InputError(
            f"schema_version {version!r} is not {SCHEMA_VERSION}; re-run `sampleaudit audit` with this version",
            path=source,
        )
    try:
        return _ADAPTER.validate_python(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise InputError(f"not an audit result: {where}: {err['msg']}", path=source) from None


def load_audit(path: str | Path) -> AuditResult:
    path = Path(path)
    try:
        text = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read ({exc.strerror})", path=str(path)) from None
    return from_json(text, source=str(path))
