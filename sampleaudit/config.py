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

import difflib
import sys
from pathlib import Path
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, create_model, field_validator
from pydantic import model_validator

from . import figures
from .errors import InputError
from .samples import DEFAULT_MAX_CHARS

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
    cache: bool = Field(True, description="reuse embeddings across runs (keyed by model id, precision and text hash)")
    long_text: Literal["chunks", "truncate"] = Field(
        "chunks", description="texts longer than the embedder reads at once (256 word pieces for "
        "all-MiniLM-L6-v2): chunks = mean of overlapping windows over the whole text; truncate = first 256 only")
    cache_dir: str | None = Field(None, description="default: $SAMPLEAUDIT_CACHE_DIR or $XDG_CACHE_HOME/sampleaudit")
    backend: Literal["auto", "torch", "openvino"] = Field(
        "auto", description="runtime of the embedding model: auto = OpenVINO on the CPU when the package is "
        "installed (about 2x faster, bf16 on CPUs with bf16 units; exported once into cache_dir/models), "
        "else torch; torch on a GPU")


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
    device: str = Field("auto", pattern=r"^(auto|numpy|cpu|cuda|cuda:\d+)$",
                        description="where the similarity blocks run: auto = torch on the GPU when one is present, "
                        "else numpy; numpy; or a torch device (cpu, cuda, cuda:N)")
    histogram_bins: int = Field(100, description="bins of the reported histograms over [-1, 1]; must divide 2000")

    @field_validator("histogram_bins")
    @classmethod
    def _divides(cls, value: int) -> int:
        if value < 1 or 2000 % value:
            raise ValueError("must divide 2000 (e.g. 40, 50, 100 or 200)")
        return value


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
    representation: Literal["auto", "embedding", "lexical"] = Field(
        "auto",
        description="what coverage clusters: the embeddings, or character n-grams (TF-IDF + SVD); auto: n-grams "
        "when most of the baseline is in a script the embedder was not trained on",
    )


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


def _limits_field(f: figures.Figure):
    limits = (UpperLimits if f.higher_is_worse else LowerLimits)(warn=f.warn, fail=f.fail)
    return (type(limits), Field(limits, description=f"{f.meaning}; {f.limits_note}"))


#: One [checks.NAME] table per gated figure of the registry (sampleaudit/figures.py).
ChecksConfig = create_model("ChecksConfig", __base__=_Section, **{f.check: _limits_field(f) for f in figures.GATED})


class InputConfig(_Section):
    max_chars: int = Field(
        DEFAULT_MAX_CHARS, ge=1_000,
        description="longer sample texts are cut to this many characters for analysis and flagged "
        "(bounds what one absurd sample can cost)",
    )


class ReportConfig(_Section):
    n_examples: int = Field(12, ge=0, description="random samples shown per checkpoint")
    n_pairs: int = Field(8, ge=0, description="most similar pairs shown per checkpoint")
    max_chars: int = Field(600, ge=40, description="longer sample texts are cut in the report (full text stays in the JSON)")


class Config(_Section):
    seed: int = Field(0, ge=0, description="seed of every random choice (subsamples, examples)")
    fail_on: Literal["warn", "fail", "never"] = Field("fail", description="which status makes the exit code 1")
    input: InputConfig = InputConfig()
    embed: EmbedConfig = EmbedConfig()
    similarity: SimilarityConfig = SimilarityConfig()
    coverage: CoverageConfig = CoverageConfig()
    repetition: RepetitionConfig = RepetitionConfig()
    stats: StatsConfig = StatsConfig()
    checks: ChecksConfig = ChecksConfig()
    report: ReportConfig = ReportConfig()

    # Where each setting that is not a default came from: dotted key -> "a.toml", "--seed", ...
    _origins: dict[str, str] = PrivateAttr(default_factory=dict)

    @property
    def origins(self) -> dict[str, str]:
        """Dotted key -> where its value came from, for every setting given explicitly."""
        return dict(self._origins)

    def origin(self, key: str) -> str | None:
        return self._origins.get(key)

    def with_overrides(self, flags: dict[str, str] | None = None, **dotted: object) -> Config:
        """A copy with "section.key" values replaced (None values are ignored).

        `flags` maps a dotted key to the command-line flag that set it ("similarity.threshold":
        "--threshold"): provenance then says so, and an invalid value is reported by that flag.
        """
        data = self.model_dump()
        given = {k: v for k, v in dotted.items() if v is not None}
        for key, value in given.items():
            *parents, leaf = key.split(".")
            node = data
            for p in parents:
                node = node[p]
            node[leaf] = value
        names = {key: (flags or {}).get(key, key) for key in given}
        out = validate_config(data, source="the command line", names=names)
        out._origins = {**self._origins, **{key: names[key] if key in (flags or {}) else "the Python API"
                                            for key in given}}
        return out


def _known_keys() -> list[str]:
    return [key for key, _, _ in describe_defaults(leaves=True)]


def _unknown(where: str, source: str) -> str:
    keys = _known_keys()
    leaf = where.rsplit(".", 1)[-1]
    prefix = where.rsplit(".", 1)[0] + "." if "." in where else ""
    siblings = [k for k in keys if k.startswith(prefix) and "." not in k[len(prefix):]] if prefix else keys
    sections = sorted({k.rsplit(".", 1)[0] for k in keys if "." in k})
    guess = (difflib.get_close_matches(leaf, [k[len(prefix):] for k in siblings], n=1)
             or difflib.get_close_matches(where, keys + sections, n=1))
    hint = f'; did you mean "{guess[0]}"?' if guess else f"; see the configuration table in the README"
    return f'unknown option "{where}" in {source}{hint}'


def _message(err: dict, where: str, source: str, names: dict[str, str]) -> str:
    """A validation error in the user's words: the key (or flag), what it must be, what it got."""
    if err["type"] == "extra_forbidden":
        return _unknown(where, source)
    name = names.get(where, where)
    msg = err["msg"].removeprefix("Value error, ")
    msg = msg.replace("Input should be", "must be").replace("Input must be", "must be")
    got = err.get("input")
    at = "" if name.startswith("--") else f" in {source}"
    if isinstance(got, dict):  # a rule over several keys of one table
        return f"{name}{at}: {msg}"
    shown = f"; got {got!r}" if got is not None else ""
    return f"{name}{at} {msg[0].lower() + msg[1:] if msg else 'is invalid'}{shown}"


def validate_config(data: dict, *, source: str, names: dict[str, str] | None = None) -> Config:
    """A Config from plain data, or one InputError line naming the key (or flag) and the cause."""
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise InputError(_message(err, where, source, names or {})) from None


def _file_keys(data: dict, prefix: str = "") -> list[str]:
    out = []
    for key, value in data.items():
        name = f"{prefix}{key}"
        out += _file_keys(value, name + ".") if isinstance(value, dict) else [name]
    return out


def load_config(path: str | Path | None) -> Config:
    """Defaults, overridden by the TOML file at `path` when given."""
    if path is None:
        return Config()
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError("config file not found", path=str(path)) from None
    except IsADirectoryError:
        raise InputError("is a folder, not a config file", path=str(path)) from None
    except OSError as exc:
        raise InputError(f"cannot read the config file ({exc.strerror})", path=str(path)) from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise InputError("not a TOML file (not UTF-8 text)", path=str(path)) from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"invalid TOML ({exc})", path=str(path)) from None
    config = validate_config(data, source=str(path))
    config._origins = {key: str(path) for key in _file_keys(data)}
    return config


# Settings that change no figure of an audit (how it ran, what the report shows, the exit-code
# policy); every other setting must agree for two audits to be compared.
RUN_ONLY_SETTINGS = (
    "fail_on", "embed.device", "embed.batch_size", "embed.cache", "embed.cache_dir", "embed.backend",
    "similarity.block_size", "similarity.device", "report",
)


def flatten(data: dict, prefix: str = "") -> dict[str, object]:
    """Nested settings as dotted keys."""
    out: dict[str, object] = {}
    for key, value in data.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, dict):
            out.update(flatten(value, name))
        else:
            out[name] = value
    return out


def figure_settings(data: dict, *, ignore=()) -> dict[str, object]:
    """The dotted settings of `data` (a dumped Config) that change a figure, less `ignore`d ones."""
    skip = (*RUN_ONLY_SETTINGS, *ignore)
    return {k: v for k, v in flatten(data).items() if not any(k == s or k.startswith(s + ".") for s in skip)}


def describe_defaults(*, leaves: bool = False) -> list[tuple[str, object, str]]:
    """(dotted key, default, description) for every option: the documentation table.

    A [checks.NAME] table is one row unless `leaves` (then checks.NAME.warn and .fail)."""
    rows: list[tuple[str, object, str]] = []

    def walk(model: type[BaseModel], instance: BaseModel, prefix: str) -> None:
        for name, field in model.model_fields.items():
            value = getattr(instance, name)
            if isinstance(value, BaseModel):
                if field.description and not leaves:
                    rows.append((prefix + name, value.model_dump(), field.description))
                else:
                    walk(type(value), value, prefix + name + ".")
            else:
                rows.append((prefix + name, value, field.description or ""))

    walk(Config, Config(), "")
    return rows
