"""The reference: a training-data baseline fitted once, then reused for every checkpoint.

`fit_reference(baseline, embeddings, config, embedder=...)` clusters the baseline (coverage),
fits the 2-D map, checks that the baseline is not degenerate, and computes per checkpoint size
the calibrated threshold and the baseline's own figures at that size (`Reference.at_size(n)`,
memoised; sizes given to fit_reference are computed up front). A Reference is picklable (it can
be sent to another process or machine) and saves to one versioned .npz file holding JSON and
plain arrays, never pickled objects (`save`, `load_reference`).
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import __version__
from .config import Config, figure_settings, validate_config
from .errors import InputError
from .metrics.calibration import (
    ScriptShare,
    ThresholdCalibration,
    calibrate_threshold,
    foreign_script,
    model_scripts,
    script_share,
)
from .metrics.charspace import CharSpace, fit_char_space
from .metrics.coverage import BaselineClusters, NaturalClusters, fit_baseline_clusters, natural_clusters
from .metrics.labels import cluster_terms
from .results import BaselineResult, EmbedderInfo, SimilaritySection
from .samples import Sample, SampleSet
from .seeds import derive_seed

REFERENCE_FORMAT = 1
MAP_POINTS = 400  # points per set on the report's 2-D map
# Above this share of baseline texts with an exact twin, a warning: at ~5% the calibrated
# threshold (the p95 of nearest-neighbour similarity) reaches 1.0 and only exact copies count.
BASELINE_DUPLICATE_WARN = 0.02
# A baseline is degenerate (an input error) when fewer than this share of its texts are
# distinct and non-empty, or fewer than MIN_DISTINCT_TEXTS are: its clusters and calibration
# would describe copies, and every checkpoint would pass against it.
MIN_DISTINCT_SHARE = 0.5
MIN_DISTINCT_TEXTS = 10
# Settings a reference does not depend on (on top of those that change no figure at all).
_NOT_FITTED = ("checks", "report.n_examples")


def fit_settings(config: Config) -> dict[str, object]:
    """The settings (dotted key -> value) a reference fitted with `config` depends on."""
    return figure_settings(config.model_dump(), ignore=_NOT_FITTED)


@dataclass(frozen=True)
class MapProjection:
    """The report map's 2-D PCA (mean, components) and the baseline's points in it."""

    mean: np.ndarray
    components: np.ndarray
    explained_variance: float
    fitted_on: str  # "baseline" | "checkpoints"
    baseline_points: list[list[float]]

    def points(self, embeddings: np.ndarray, *, seed: int) -> list[list[float]]:
        """The 2-D coordinates of a seeded sample of (at most MAP_POINTS of) `embeddings`."""
        z = (map_sample(embeddings, seed) - self.mean) @ self.components.T
        return [[round(float(a), 4), round(float(b), 4)] for a, b in z]


def map_sample(x: np.ndarray, seed: int) -> np.ndarray:
    """At most MAP_POINTS rows of x, a seeded choice in row order."""
    if len(x) <= MAP_POINTS:
        return x
    return x[np.sort(np.random.default_rng(seed).choice(len(x), MAP_POINTS, replace=False))]


def fit_map(sets: list[np.ndarray], *, seed: int, fitted_on: str, baseline: np.ndarray | None = None
            ) -> MapProjection | None:
    """A 2-D PCA of the seeded samples of `sets` (None with fewer than two rows in all)."""
    from sklearn.decomposition import PCA

    fit_on = np.concatenate([map_sample(x, seed) for x in sets]) if sets else np.zeros((0, 0))
    if len(fit_on) < 2:
        return None
    from threadpoolctl import threadpool_limits

    # one BLAS thread: a small SVD gains nothing from more and spins on a loaded machine
    with np.errstate(invalid="ignore", divide="ignore"), threadpool_limits(1, user_api="blas"):
        pca = PCA(n_components=2, random_state=seed).fit(fit_on)
    projection = MapProjection(pca.mean_.astype(np.float64), pca.components_.astype(np.float64),
                               round(float(np.nan_to_num(pca.explained_variance_ratio_.sum())), 6), fitted_on, [])
    if baseline is not None:
        projection = dataclasses.replace(projection, baseline_points=projection.points(baseline, seed=seed))
    return projection


@dataclass(frozen=True)
class AtSize:
    """The reference at one checkpoint size n: the baseline subsample of n rows (all rows when it
    is not larger), the threshold calibrated for n, the baseline's similarity on the subsample,
    and the clusters HDBSCAN finds in it."""

    n: int
    indices: np.ndarray
    calibration: ThresholdCalibration
    similarity: SimilaritySection
    natural: NaturalClusters | None


@dataclass(eq=False)
class Reference:
    """A fitted baseline (see the module docstring). Build it with `fit_reference`."""

    samples: SampleSet
    embeddings: np.ndarray
    embedder: EmbedderInfo
    config: Config
    clusters: BaselineClusters | None
    projection: MapProjection | None
    warnings: list[str]
    cluster_terms: list[list[str]] = field(default_factory=list)  # each cluster's label terms
    n_long: int | None = None  # baseline texts longer than the embedder reads at once
    # what coverage clusters: "embedding", or "lexical" (character n-grams in `char_space`)
    representation: str = "embedding"
    char_space: CharSpace | None = None
    representation_reason: str | None = None  # why lexical, when it is
    _sizes: dict[int, AtSize] = field(default_factory=dict, repr=False)
    _results: dict[int, BaselineResult] = field(default_factory=dict, repr=False)
    _scripts: ScriptShare | None = field(default=None, repr=False)  # script_share of the baseline, once computed
    _n_baseline: int | None = field(default=None, repr=False)  # set when the texts were left out (for_workers)

    @property
    def n_baseline(self) -> int:
        return self._n_baseline if self._n_baseline is not None else len(self.samples)

    def scripts(self):
        """The baseline's script shares (computed once)."""
        if self._scripts is None:
            self._scripts = script_share(self.samples.texts)
        return self._scripts

    def for_workers(self, sizes) -> Reference:
        """This reference without the baseline's texts and vectors, for analysing checkpoints of the
        given sizes elsewhere (their calibrations computed now; `at_size` of another size and
        `result` are refused). What `sampleaudit.executors` ships to workers."""
        for n in sorted(set(sizes)):
            self.at_size(int(n))
        return dataclasses.replace(
            self, samples=dataclasses.replace(self.samples, samples=()),
            embeddings=np.zeros((0, self.embeddings.shape[1]), dtype=np.float32), _sizes=dict(self._sizes),
            _results={}, _scripts=self.scripts(), _n_baseline=self.n_baseline)

    @property
    def settings(self) -> dict[str, object]:
        return fit_settings(self.config)

    @property
    def name(self) -> str:
        return self.samples.name

    def coverage_vectors(self, texts, embeddings: np.ndarray) -> np.ndarray:
        """The rows coverage clusters for a set: its embeddings, or its texts in the n-gram space."""
        return self.char_space.transform(texts) if self.char_space is not None else embeddings

    def check_config(self, config: Config) -> None:
        """InputError unless `config` agrees with the fit on every setting the reference uses."""
        mine, theirs = self.settings, fit_settings(config)
        for key in sorted(set(mine) | set(theirs)):
            if mine.get(key) != theirs.get(key):
                raise InputError(f"the reference was fitted with {key} = {mine.get(key)!r} but the config says "
                                 f"{theirs.get(key)!r}; fit the reference again with this config")

    def subsample(self, n: int) -> np.ndarray:
        """Rows of the seeded baseline subsample of size n (every row when n >= the baseline)."""
        size = len(self.samples)
        if size <= n:
            return np.arange(size)
        rng = np.random.default_rng(derive_seed(self.config.seed, "baseline_subsample"))
        return np.sort(rng.choice(size, size=n, replace=False))

    def at_size(self, n: int) -> AtSize:
        """The reference at checkpoint size n (computed once, then kept)."""
        if n not in self._sizes and self._n_baseline is not None:
            raise ValueError(f"this reference was shipped without its baseline for sizes {sorted(self._sizes)}; "
                             f"not for {n}")
        if n not in self._sizes:
            from .engine import similarity_section

            cfg, seed = self.config.similarity, self.config.seed
            calibration = calibrate_threshold(
                n_samples=n, baseline=self.embeddings, model=self.embedder.model, config_threshold=cfg.threshold,
                threshold_origin=self.config.origin("similarity.threshold"),
                quantile=cfg.calibration_quantile, n_draws=cfg.calibration_draws,
                seed=derive_seed(seed, "calibration"), block_size=cfg.block_size)
            rows = self.subsample(n)
            sub = _subset(self.samples, rows)
            similarity = similarity_section(sub, self.embeddings[rows], calibration, self.config, self.embedder.model)
            natural = None
            if self.clusters is not None:
                natural = natural_clusters(self.clusters.projected[rows]) if len(rows) < len(self.samples) else \
                    NaturalClusters(self.clusters.natural_clusters, round(self.clusters.natural_noise_share, 6),
                                    self.clusters.n_baseline)
            self._sizes[n] = AtSize(n, rows, calibration, similarity, natural)
        return self._sizes[n]

    def result(self, n: int) -> BaselineResult:
        """The baseline's section of an audit whose largest checkpoint has n samples."""
        if n not in self._results and self._n_baseline is not None:
            raise ValueError("this reference was shipped without its baseline; assemble with the full one")
        if n not in self._results:
            from .engine import lexical_section, repetition_section, texts_of

            at = self.at_size(n)
            s = self.samples
            sub = _subset(s, at.indices)
            summary = (dataclasses.replace(self.clusters.summary(), terms=self.cluster_terms,
                                           representation=self.representation,
                                           representation_reason=self.representation_reason)
                       if self.clusters is not None else None)
            shown = texts_of(sub, at.similarity)
            if summary is not None:  # every cluster's examples: a checkpoint's missing clusters cite them
                by_id = {x.id: x.text for x in s.samples}
                shown.update({e.id: by_id[e.id] for rows in summary.examples for e in rows if e.id in by_id})
            self._results[n] = BaselineResult(
                name=s.name, path=s.path, sha256=s.sha256, n_samples=len(s), n_empty=s.n_empty,
                n_skipped=s.n_skipped, n_truncated=s.n_truncated, texts=shown, n_long=self.n_long,
                subsample_size=len(sub),
                similarity=at.similarity, coverage=summary, repetition=repetition_section(sub, self.config),
                lexical=lexical_section(sub, self.config), scripts=self.scripts(),
            )
        return self._results[n]

    # -- a file of its own ---------------------------------------------------------------------

    def save(self, path: str | Path) -> Path:
        """Write the reference to one .npz file (JSON header + arrays, no pickle); sizes computed
        with `at_size` are not stored (they are recomputed, identically, after loading)."""
        from .fileio import write_atomic

        if self._n_baseline is not None:
            raise ValueError("a reference shipped without its baseline (for_workers) cannot be saved")

        header: dict = {
            "format": REFERENCE_FORMAT, "tool_version": __version__,
            "embedder": dataclasses.asdict(self.embedder), "config": self.config.model_dump(),
            "origins": self.config.origins, "warnings": self.warnings, "cluster_terms": self.cluster_terms,
            "representation": self.representation, "representation_reason": self.representation_reason,
            "samples": {**{f.name: getattr(self.samples, f.name) for f in dataclasses.fields(self.samples)
                           if f.name != "samples"},
                        "samples": [dataclasses.asdict(x) for x in self.samples.samples]},
        }
        arrays = {"embeddings": self.embeddings}
        if self.clusters is not None:
            header["clusters"], cluster_arrays = self.clusters.to_arrays()
            arrays.update({f"clusters.{k}": v for k, v in cluster_arrays.items()})
        if self.char_space is not None:
            header["char_space"], space_arrays = self.char_space.to_arrays()
            arrays.update({f"char_space.{k}": v for k, v in space_arrays.items()})
        if self.projection is not None:
            p = self.projection
            header["projection"] = {"explained_variance": p.explained_variance, "fitted_on": p.fitted_on,
                                    "baseline_points": p.baseline_points}
            arrays.update({"projection.mean": p.mean, "projection.components": p.components})
        import io

        buf = io.BytesIO()
        header_bytes = np.frombuffer(json.dumps(header, ensure_ascii=False).encode("utf-8"), dtype=np.uint8)
        np.savez_compressed(buf, header=header_bytes, **arrays)
        return write_atomic(path, buf.getvalue())


def load_reference(path: str | Path) -> Reference:
    """A Reference saved with `Reference.save`; a file of another format is an InputError."""
    import zipfile

    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
    except FileNotFoundError:
        raise InputError("file not found", path=str(path)) from None
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise InputError(f"not a sampleaudit reference file ({exc})", path=str(path)) from None
    try:
        header = json.loads(arrays.pop("header").tobytes().decode("utf-8"))
        if header.get("format") != REFERENCE_FORMAT:
            raise InputError(f"reference format {header.get('format')!r} is not {REFERENCE_FORMAT}; fit it again "
                             "with this version", path=str(path))
        config = validate_config(header["config"], source=str(path))
        config._origins = dict(header.get("origins") or {})
        meta = header["samples"]
        samples = SampleSet(**{k: (tuple(v) if isinstance(v, list) else v) for k, v in meta.items() if k != "samples"},
                            samples=tuple(Sample(**x) for x in meta["samples"]))
        clusters = None
        if "clusters" in header:
            prefix = "clusters."
            clusters = BaselineClusters.from_arrays(
                header["clusters"], {k[len(prefix):]: v for k, v in arrays.items() if k.startswith(prefix)})
        char_space = None
        if "char_space" in header:
            prefix = "char_space."
            char_space = CharSpace.from_arrays(
                header["char_space"], {k[len(prefix):]: v for k, v in arrays.items() if k.startswith(prefix)})
        projection = None
        if "projection" in header:
            p = header["projection"]
            projection = MapProjection(arrays["projection.mean"], arrays["projection.components"],
                                       float(p["explained_variance"]), p["fitted_on"], p["baseline_points"])
        return Reference(samples=samples, embeddings=arrays["embeddings"], embedder=EmbedderInfo(**header["embedder"]),
                         config=config, clusters=clusters, projection=projection, warnings=list(header["warnings"]),
                         cluster_terms=[list(t) for t in header.get("cluster_terms", [])],
                         representation=header.get("representation", "embedding"), char_space=char_space,
                         representation_reason=header.get("representation_reason"))
    except InputError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"not a sampleaudit reference file (missing or bad {exc})", path=str(path)) from None


def _subset(samples: SampleSet, rows: np.ndarray) -> SampleSet:
    if len(rows) == len(samples):
        return samples
    return dataclasses.replace(samples, samples=tuple(samples.samples[i] for i in rows))


def _check_not_degenerate(samples: SampleSet) -> None:
    distinct = len({t for t in samples.texts if t.strip()})
    if distinct < MIN_DISTINCT_TEXTS or distinct < MIN_DISTINCT_SHARE * len(samples):
        raise InputError(
            f"the baseline is degenerate: only {distinct} of its {len(samples)} texts are distinct and non-empty; "
            "a baseline must be a sample of the training data (deduplicate it, drop empty lines, and give at "
            f"least {MIN_DISTINCT_TEXTS} distinct texts)", path=samples.path)


def input_warnings(s: SampleSet) -> list[str]:
    """What reading a set left out or changed: skipped lines, empty samples, texts cut."""
    out = []
    if s.n_skipped:
        lines = ", ".join(map(str, s.skipped_lines[:10])) + (", ..." if s.n_skipped > 10 else "")
        out.append(f"{s.name}: {s.n_skipped} invalid line(s) skipped (lines {lines})")
    if s.n_empty:
        out.append(f"{s.name}: {s.n_empty} empty sample(s) (kept; they embed alike and raise similarity)")
    if s.n_truncated:
        out.append(f"{s.name}: {s.n_truncated} sample(s) longer than input.max_chars were cut for analysis")
    return out


def check_distinct_names(names) -> None:
    """InputError when two checkpoints share a name (their results could not be told apart)."""
    names = list(names)
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise InputError(f"two checkpoints are named {dupes[0]!r}; give each a distinct --name")


#: Above this share of baseline texts in a script the embedder was not trained on (while most are
#: in one it was), a warning: those texts' clusters do not follow topics.
FOREIGN_MINORITY_WARN = 0.2


def _baseline_warnings(samples: SampleSet, clusters: BaselineClusters | None, model: str = "",
                       representation: str = "embedding", scripts: ScriptShare | None = None) -> list[str]:
    s = samples
    out = input_warnings(s)
    known = model_scripts(model) if model else None
    if known and representation == "embedding":
        scripts = scripts or script_share(s.texts)
        other = sum(v for k, v in scripts.shares.items() if k not in {*known, "none"})
        if other > FOREIGN_MINORITY_WARN:
            out.append(f"{s.name}: {other:.0%} of the baseline's texts are in a script {model} was not trained on; "
                       "their clusters do not follow topics, so coverage there is unreliable: set "
                       "coverage.representation = \"lexical\" or audit with an embedder trained on those scripts")
    twinned = sum(c for c in Counter(t for t in s.texts if t).values() if c > 1) / len(s)
    if twinned > BASELINE_DUPLICATE_WARN:
        out.append(f"{s.name}: {twinned:.0%} of the baseline's texts have an exact duplicate in it; "
                   "duplicates raise its nearest-neighbour similarity and so the calibrated threshold, "
                   "which makes collapse read milder: deduplicate the baseline")
    if clusters is not None:
        texts = s.texts
        thin = [k for k in range(clusters.n_clusters)
                if len({texts[i] for i in np.flatnonzero(clusters.labels == k)}) < 2]
        if thin:
            shown = ", ".join(map(str, thin[:8])) + (", ..." if len(thin) > 8 else "")
            out.append(f"{s.name}: {len(thin)} baseline cluster(s) ({shown}) hold fewer than 2 distinct texts, so "
                       "coverage counts copies there: deduplicate the baseline")
    return out


def coverage_representation(scripts: ScriptShare, model: str, setting: str) -> tuple[str, str | None]:
    """("embedding" | "lexical", why lexical) for coverage.representation = `setting`, given the
    baseline's script shares: auto takes the character n-grams when most of the baseline is in a
    script `model` was not trained on."""
    if setting == "embedding":
        return "embedding", None
    if setting == "lexical":
        return "lexical", "coverage.representation = \"lexical\""
    if foreign_script(scripts, model):
        return "lexical", (f"{scripts.dominant_share:.0%} of the baseline is in {scripts.dominant_script} script, "
                           f"which {model} was not trained on")
    return "embedding", None


def fit_reference(
    baseline: SampleSet,
    embeddings: np.ndarray,
    config: Config | None = None,
    *,
    embedder: EmbedderInfo | str,
    sizes=(),
    n_long: int | None = None,
) -> Reference:
    """Fit the reference on a baseline and its embeddings (rows in the baseline's order).

    `embedder` is what made the vectors (an EmbedderInfo, or a model id). `sizes` are checkpoint
    sizes to compute the calibration and baseline figures for now (others are computed when first
    asked for). Raises InputError on a degenerate baseline (mostly identical or empty texts).
    """
    from .metrics._validate import check_embeddings

    config = config or Config()
    x = check_embeddings(embeddings, name=f"embeddings of the baseline {baseline.name!r}")
    if x.shape[0] != len(baseline):
        raise InputError(f"embeddings of the baseline {baseline.name!r} must have shape ({len(baseline)}, dim); "
                         f"got {x.shape}")
    if isinstance(embedder, str):
        embedder = EmbedderInfo(embedder, int(x.shape[1]), "n/a")
    if embedder.dim != x.shape[1]:
        raise InputError(f"the embedder {embedder.model!r} has dimension {embedder.dim} but the baseline's "
                         f"embeddings have {x.shape[1]}")
    _check_not_degenerate(baseline)
    c = config.coverage
    scripts = script_share(baseline.texts)
    representation, reason = coverage_representation(scripts, embedder.model, c.representation)
    space = fit_char_space(baseline.texts, seed=config.seed) if representation == "lexical" else None
    rows = x if space is None else space.transform(baseline.texts)  # what coverage clusters and the map shows
    try:
        clusters = fit_baseline_clusters(rows, ids=baseline.ids, seed=config.seed, pca_dims=c.pca_dims,
                                         n_clusters=c.n_clusters, max_noise_share=c.max_noise_share)
    except InputError as exc:
        raise InputError(f"cannot cluster the baseline: {exc}", path=baseline.path) from None
    projection = fit_map([rows], seed=config.seed, fitted_on="baseline", baseline=rows)
    terms = cluster_terms(baseline.texts, clusters.labels, clusters.n_clusters)
    reference = Reference(baseline, x, embedder, config, clusters, projection,
                          _baseline_warnings(baseline, clusters, embedder.model, representation, scripts),
                          terms, n_long, representation, space, reason, _scripts=scripts)
    for n in sorted(set(sizes)):
        reference.at_size(int(n))
    return reference
