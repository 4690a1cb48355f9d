"""The results model: the single source of truth every renderer reads; versioned JSON.

`AuditResult` round-trips through JSON exactly (`to_json` / `from_json`). Field names listed in
the README's "audit.json" section are a contract: other tools parse them. Every sample's text is
stored once per set, in that set's `texts` (id -> text); views of samples (examples, pairs,
loops, near-duplicate groups, cluster examples) refer to it by id.
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

# 2: texts stored once per set (`texts`), map points in each checkpoint, per-checkpoint warnings,
#    embedder precision, derived seeds and setting origins in provenance.
SCHEMA_VERSION = 2
Status = Literal["pass", "warn", "fail"]
STATUS_ORDER: dict[str, int] = {"pass": 0, "warn": 1, "fail": 2}


@dataclass(frozen=True)
class ToolInfo:
    name: str
    version: str


@dataclass(frozen=True)
class EmbedderInfo:
    """The model the vectors come from ("precomputed" when unknown), their dimension, where they
    were computed, at which precision ("fp32", "fp16", "bf16"; "unknown" for precomputed vectors)
    and by which runtime ("torch", "openvino"; "unknown" for precomputed vectors)."""

    model: str
    dim: int
    device: str
    precision: str = "unknown"
    backend: str = "unknown"

    @classmethod
    def of(cls, embedder) -> EmbedderInfo:
        """What an Embedder (sampleaudit.embed) says of itself."""
        return cls(embedder.model_id, embedder.dim, embedder.device, getattr(embedder, "precision", "fp32"),
                   getattr(embedder, "backend", "unknown"))


@dataclass(frozen=True)
class SampleView:
    """A sample as shown in a report; its text is the set's `texts[id]` (renderers cut it)."""

    id: str
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
    representation: str = "embedding"  # what was clustered: "embedding" | "lexical" (character n-grams)


@dataclass(frozen=True)
class Verdict:
    """Data vs model (source pitfall 4): is the checkpoint less diverse than its training data?

    `kind`: "model_less_diverse", "data_homogeneous" or "as_diverse_as_data".
    """

    kind: str
    message: str
    figures: dict[str, float | None]


@dataclass(frozen=True)
class RepetitionSection(RepetitionResult):
    """Repetition figures (metrics.repetition) with a bootstrap interval for loop_share."""

    loop_share_interval: Interval | None = None


@dataclass(frozen=True)
class LoopView:
    """A looped sample (text in the set's `texts`), so a report can highlight the loop."""

    id: str
    unit: str
    n_repeats: int
    start_char: int
    end_char: int
    coverage_share: float


@dataclass(frozen=True)
class CheckResult:
    """A check of one headline figure (`figure`, see sampleaudit/figures.py) against its limits."""

    name: str
    status: Status
    value: float
    threshold: float
    message: str
    figure: str | None = None


@dataclass(frozen=True)
class SetResult:
    """What every audited set has: where it came from and how many samples it held.

    `n_truncated` samples were longer than input.max_chars and cut for analysis; `texts` holds,
    by id, the text of every sample this result shows (each text stored once); `n_long` samples were
    longer than the embedder reads at once (embedded by windows or by their start: embed.long_text)."""

    name: str
    path: str | None
    sha256: str | None
    n_samples: int
    n_empty: int
    n_skipped: int
    n_truncated: int = 0
    texts: dict[str, str] = field(default_factory=dict)
    n_long: int | None = None  # samples longer than the embedder reads at once (None: not known)


@dataclass(frozen=True)
class BaselineResult(SetResult):
    """The training-data baseline; `similarity` is measured on a subsample of `subsample_size`."""

    subsample_size: int = 0
    similarity: SimilaritySection | None = None
    coverage: BaselineClustersSummary | None = None
    repetition: RepetitionSection | None = None
    lexical: LexicalResult | None = None
    scripts: ScriptShare | None = None


@dataclass(frozen=True)
class CheckpointResult(SetResult):
    """One checkpoint's figures, checks and what the report shows of its samples; the unit that
    `audit_checkpoint` returns (picklable, JSON round-trip). `map_points` are its sampled 2-D
    coordinates in the audit's map (see EmbeddingMap); `warnings` concern this checkpoint only."""

    similarity: SimilaritySection | None = None
    coverage: CoverageSection | None = None
    repetition: RepetitionSection | None = None
    lexical: LexicalResult | None = None
    prompts: PromptDiversityResult | None = None
    scripts: ScriptShare | None = None
    verdict: Verdict | None = None
    checks: list[CheckResult] = field(default_factory=list)
    status: Status = "pass"
    examples: list[SampleView] = field(default_factory=list)
    worst_loops: list[LoopView] = field(default_factory=list)
    map_points: list[list[float]] | None = None
    warnings: list[str] = field(default_factory=list)


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
    """The report's 2-D map: a PCA fitted on `fitted_on` ("baseline", else "checkpoints"), the
    baseline's sampled points in it; each checkpoint's points are its `map_points`."""

    explained_variance: float
    baseline: list[list[float]]
    fitted_on: str = "baseline"
    representation: str = "embedding"  # the rows mapped: embeddings, or "lexical" (as coverage clusters)


@dataclass(frozen=True)
class Provenance:
    """How the result was made. `seeds`: the seed each random stream got (sampleaudit/seeds.py);
    `settings`: where each setting that is not a default came from (a config file, a flag);
    `executor`: what ran the per-checkpoint work; `generation`: how samples were generated,
    per checkpoint, when sampleaudit generated them."""

    created_at: str
    run_seconds: float
    seed: int
    config: dict
    python: str
    platform: str
    command: list[str] | None = None
    seeds: dict[str, int] = field(default_factory=dict)
    settings: dict[str, str] = field(default_factory=dict)
    executor: str = "local"
    generation: dict[str, dict] = field(default_factory=dict)


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

    def all_warnings(self) -> list[str]:
        """The run's warnings, then each checkpoint's, in order."""
        return [*self.warnings, *(w for c in self.checkpoints for w in c.warnings)]


_ADAPTER = TypeAdapter(AuditResult)


def to_json(result: AuditResult) -> str:
    """The result as indented UTF-8 JSON text (non-ASCII kept readable)."""
    return _ADAPTER.dump_json(result, indent=2).decode("utf-8") + "\n"


def _reject_constant(name: str):
    raise InputError(f"holds {name}, which no audit.json contains; the file was edited by hand or damaged")


def _check_figures(result: AuditResult, source: str) -> None:
    """Figures a hand-edited file could get wrong that the types cannot catch: bounds, names."""
    from .figures import FIGURES

    names = [c.name for c in result.checkpoints]
    if len(set(names)) != len(names):
        raise InputError("not an audit result: two checkpoints have the same name", path=source)
    if sorted(result.ranking) != sorted(names):
        raise InputError("not an audit result: ranking does not list exactly its checkpoints", path=source)
    for i, c in enumerate(result.checkpoints):
        for f in FIGURES:
            value = f.value(c)
            low, high = f.bounds
            if value is not None and (value < low or (high is not None and value > high)):
                span = f"[{low:g}, {high:g}]" if high is not None else f">= {low:g}"
                raise InputError(f"not an audit result: checkpoints.{i}.{f.section}.{f.name} is {value:g}, "
                                 f"outside {span}", path=source)


def from_json(text: str | bytes, *, source: str = "audit.json") -> AuditResult:
    """Parse and validate audit JSON; anything but an audit.json of this schema is an InputError.

    Validation is strict (no "0.5" for a number, no 1 for a string), NaN and Infinity are refused,
    and headline figures must lie in their bounds (sampleaudit/figures.py).
    """
    import json

    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"not an audit.json: not UTF-8 text (byte 0x{text[exc.start]:02x} at offset "
                             f"{exc.start})", path=source) from None
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON ({exc.msg})", path=source, line=exc.lineno) from None
    except RecursionError:
        raise InputError("not an audit.json: nested too deeply", path=source) from None
    except InputError as exc:
        raise InputError(exc.reason, path=source) from None
    if not isinstance(data, dict):
        kind = {list: "an array", str: "a string", int: "a number", float: "a number", bool: "a boolean"}.get(
            type(data), "null")
        raise InputError(f"not an audit.json: expected a JSON object, got {kind}", path=source)
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise InputError(
            f"schema_version {version!r} is not {SCHEMA_VERSION}; re-run `sampleaudit audit` with this version",
            path=source,
        )
    try:
        result = _ADAPTER.validate_json(text, strict=True)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise InputError(f"not an audit result: {where}: {err['msg']}", path=source) from None
    _check_figures(result, source)
    return result


def load_audit(path: str | Path) -> AuditResult:
    path = Path(path)
    try:
        text = path.read_bytes()
    except IsADirectoryError:
        raise InputError("is a folder, not an audit.json", path=str(path)) from None
    except FileNotFoundError:
        raise InputError("file not found", path=str(path)) from None
    except OSError as exc:
        raise InputError(f"cannot read ({exc.strerror})", path=str(path)) from None
    return from_json(text, source=str(path))
