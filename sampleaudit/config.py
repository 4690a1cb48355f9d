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
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

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
        "unset: calibrated from the baseline, else the embedder's default",
    )
    default_threshold: float = Field(0.90, ge=-1.0, le=1.0, description="used without a baseline or an explicit threshold")
    block_size: int = Field(1024, ge=1, description="rows per block of the similarity computation (memory O(n * block))")
    histogram_bins: int = Field(100, description="bins of the reported histograms over [-1, 1]; must divide 2000")


class ShareCheck(_Section):
    warn: float = Field(ge=0.0, le=1.0)
    fail: float = Field(ge=0.0, le=1.0)


class ChecksConfig(_Section):
    mode_collapse: ShareCheck = Field(
        ShareCheck(warn=0.15, fail=0.30),
        description="share of samples with a highly similar neighbour; fail above 30% (source article 5.3)",
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
