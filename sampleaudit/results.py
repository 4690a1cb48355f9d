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
from .metrics.similarity import Distribution, Histogram

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
class SimilaritySection:
    """Pairwise and nearest-neighbour similarity of one set, with the threshold's origin."""

    n_samples: int
    mean: float
    quantiles: dict[str, float]
    histogram: Histogram
    nearest_neighbor: Distribution
    threshold: float
    threshold_source: str
    threshold_description: str
    high_similarity_share: float
    n_high_similarity: int
    most_similar_pairs: list[PairView] = field(default_factory=list)


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


@dataclass(frozen=True)
class CheckpointResult(SetResult):
    similarity: SimilaritySection | None = None
    checks: list[CheckResult] = field(default_factory=list)
    status: Status = "pass"
    examples: list[SampleView] = field(default_factory=list)


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
class AuditResult:
    schema_version: int
    tool: ToolInfo
    embedder: EmbedderInfo
    baseline: BaselineResult | None
    checkpoints: list[CheckpointResult]
    ranking: list[str]
    ranking_rule: str
    provenance: Provenance
    warnings: list[str] = field(default_factory=list)

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
