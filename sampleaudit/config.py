"""Every option and threshold with its default, in one place; read from a TOML file.

A file holds any subset of these sections and keys, for example::

    [similarity]
    threshold = 0.85          # omit to calibrate from the baseline

    [checks.mode_collapse]
    warn = 0.15
    fail = 0.30

Unknown sections or keys are an error, so a typo never passes silently.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from .errors import InputError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class EmbedConfig(_Section):
    model: str = Field("sentence-transformers/all-MiniLM-L6-v2", description="sentence-transformers model name or local folder")
    device: str = Field("auto", description="auto (cuda > mps > cpu), cpu, cuda, cuda:1, mps")
    batch_size: int = Field(64, ge=1, description="texts per forward pass")
    cache: bool = Field(True, description="reuse embeddings across runs (keyed by model id and text hash)")
    cache_dir: str | None = Field(None, description="default: $SAMPLEAUDIT_CACHE_DIR or $XDG_CACHE_HOME/sampleaudit")


class SimilarityConfig(_Section):
    threshold: float | None = Field(
        None, ge=-1.0, le=1.0,
        description="cosine at or above which a sample's nearest neighbour counts as highly similar; "
        "unset: calibrated from the baseline, else the embedder's default (metrics/calibration.py)",
    )
    calibration_quantile: float = Field(
        0.95, gt=0.0, lt=1.0,
        description="calibrated threshold = this quantile of the baseline's nearest-neighbour similarity "
        "on subsamples of the checkpoint's size",
    )
    calibration_draws: int = Field(5, ge=1, description="seeded baseline subsamples averaged for the calibration")
    near_duplicate_threshold: float = Field(0.95, ge=-1.0, le=1.0, description="cosine linking near-duplicate samples into groups")
    block_size: int = Field(1024, ge=1, description="rows per block of the similarity computation (memory O(n * block))")
    histogram_bins: int = Field(100, description="bins of the reported histograms over [-1, 1]; must divide 2000")


class CoverageConfig(_Section):
    min_mass_ratio: float = Field(
        0.5, gt=0.0,
        description="a baseline cluster is covered when the checkpoint puts at least this fraction of the "
        "baseline's share of samples into it",
    )
    over_ratio: float = Field(2.0, gt=1.0, description="clusters with at least this multiple of the baseline share are over-represented")
    pca_dims: int = Field(32, ge=2, description="dimensions kept by PCA (fitted on the baseline) before clustering")
    max_noise_share: float = Field(
        0.5, ge=0.0, le=1.0,
        description="when HDBSCAN leaves more of the baseline as noise, coverage uses k-means instead",
    )
    n_clusters: int | None = Field(None, ge=2, description="k of the k-means fallback; unset: a rule on the baseline size")


class StatsConfig(_Section):
    n_resamples: int = Field(200, ge=10, description="bootstrap resamples behind every interval")
    confidence: float = Field(0.95, gt=0.0, lt=1.0, description="coverage of the bootstrap intervals")


class RepetitionConfig(_Section):
    min_repeats: int = Field(3, ge=2, description="whole copies in a row that make a loop of a unit of more than short_unit_tokens tokens")
    min_short_repeats: int = Field(4, ge=2, description="whole copies in a row that make a loop of a unit of 2 to short_unit_tokens tokens ('Why not? Why not? Why not? Why not?')")
    short_unit_tokens: int = Field(5, ge=0, description="longest unit (tokens) that needs min_short_repeats copies")
    min_single_repeats: int = Field(16, ge=2, description="copies in a row that make a loop of a one-token unit ('the the the ...'; emphasis and laughter stay out)")
    min_coverage: float = Field(0.1, ge=0.0, le=1.0, description="share of the sample's characters a loop must cover")
    min_tail_share: float = Field(0.6, ge=0.0, le=1.0, description="share of the characters from a loop's start to the sample's end it must cover (copies in the middle of a text that goes on are no loop)")
    max_variation: float = Field(0.2, ge=0.0, le=0.5, description="token edits (changed, dropped, inserted, two swapped) a copy may differ by, as a share of the unit's tokens (at least one for units of 3+ tokens; 0 = exact copies only)")
    opening_tokens: int = Field(10, ge=1, description="tokens that make an opening when a sample has no sentence break")
    self_bleu_sample: int = Field(200, ge=2, description="samples in the seeded self-BLEU subsample (it is O(n^2))")
    ead_vocab_size: int = Field(50_000, ge=2, description="vocabulary size V of expectation-adjusted distinct-n")


class _Limits(_Section):
    warn: float = Field(ge=0.0, le=1.0)
    fail: float = Field(ge=0.0, le=1.0)
    higher_is_worse: ClassVar[bool]

    @model_validator(mode="after")
    def _ordered(self):
        if self.warn != self.fail and (self.warn > self.fail) == self.higher_is_worse:
            side = "above" if self.higher_is_worse else "below"
            raise ValueError(f"warn ({self.warn}) must not be {side} fail ({self.fail})")
        return self


class UpperLimits(_Limits):
    """Limits of a share where higher is worse: warn above `warn`, fail above `fail`."""

    higher_is_worse: ClassVar[bool] = True


class LowerLimits(_Limits):
    """Limits of a share where lower is worse: warn below `warn`, fail below `fail`."""

    higher_is_worse: ClassVar[bool] = False


class ChecksConfig(_Section):
    mode_collapse: UpperLimits = Field(
        UpperLimits(warn=0.15, fail=0.30),
        description="share of samples with a highly similar neighbour; fail above 30% (source article 5.3)",
    )
    coverage: LowerLimits = Field(
        LowerLimits(warn=0.85, fail=0.60),
        description="share of baseline clusters covered; fail below 0.60, warn below 0.85",
    )
    repetition_loops: UpperLimits = Field(
        UpperLimits(warn=0.02, fail=0.10),
        description="share of samples that end in a repetition loop; fail above 10%, warn above 2%",
    )
    repeated_openings: UpperLimits = Field(
        UpperLimits(warn=0.15, fail=0.60),
        description=("share of samples starting with the most common repeated opening; "
                     "fail above 60% (source article 3.1)"),
    )


class ReportConfig(_Section):
    n_examples: int = Field(12, ge=0, description="random samples shown per checkpoint")
    n_pairs: int = Field(8, ge=0, description="most similar pairs shown per checkpoint")
    max_chars: int = Field(600, ge=40, description="longer sample texts are cut in the report (full text stays in the JSON)")


class Config(_Section):
    seed: int = Field(0, description="seed of every random choice (subsamples, examples)")
    fail_on: Literal["warn", "fail", "never"] = Field("fail", description="which status makes the exit code 1")
    embed: EmbedConfig = EmbedConfig()
    similarity: SimilarityConfig = SimilarityConfig()
    coverage: CoverageConfig = CoverageConfig()
    repetition: RepetitionConfig = RepetitionConfig()
    stats: StatsConfig = StatsConfig()
    checks: ChecksConfig = ChecksConfig()
    report: ReportConfig = ReportConfig()

    def with_overrides(self, **dotted: object) -> Config:
        """A copy with "section.key" values replaced (None values are ignored)."""
        data = self.model_dump()
        for key, value in dotted.items():
            if value is None:
                continue
            *parents, leaf = key.split(".")
            node = data
            for p in parents:
                node = node[p]
            node[leaf] = value
        return validate_config(data, source="command-line options")


def validate_config(data: dict, *, source: str) -> Config:
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise InputError(f"[{where}] {err['msg']}", path=source) from None


def load_config(path: str | Path | None) -> Config:
    """Defaults, overridden by the TOML file at `path` when given."""
    if path is None:
        return Config()
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError("config file not found", path=str(path)) from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"invalid TOML ({exc})", path=str(path)) from None
    return validate_config(data, source=str(path))


def describe_defaults() -> list[tuple[str, object, str]]:
    """(dotted key, default, description) for every option: the documentation table."""
    rows: list[tuple[str, object, str]] = []

    def walk(model: type[BaseModel], instance: BaseModel, prefix: str) -> None:
        for name, field in model.model_fields.items():
            value = getattr(instance, name)
            if isinstance(value, BaseModel):
                if field.description:
                    rows.append((prefix + name, value.model_dump(), field.description))
                else:
                    walk(type(value), value, prefix + name + ".")
            else:
                rows.append((prefix + name, value, field.description or ""))

    walk(Config, Config(), "")
    return rows
