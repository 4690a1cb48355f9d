"""Merge audits made at different times into one comparison, and the release gate over it.

Nothing is re-embedded or recomputed: a merged result holds the stored checkpoint results side
by side, re-ranked. That is only sound when every audit measured the same way, so
`merge_audits` first checks the provenance (schema version, embedder model and dimension,
baseline file hash, every setting that changes a figure, the similarity threshold each checkpoint
was measured with) and refuses, naming what differs and in which file, when they do not agree.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence

from .checks import penalty, ranking_notes
from .config import figure_settings
from .engine import assemble
from .errors import IncompatibleAuditsError, InputError
from .results import STATUS_ORDER, AuditResult, CheckpointResult, EmbeddingMap, SourceAudit

THRESHOLD_TOLERANCE = 1e-9
MAP_TOLERANCE = 1e-3  # baseline map coordinates that agree this well are the same PCA space


def _describe(value: object) -> str:
    return "unset" if value is None else repr(value) if isinstance(value, str) else str(value)


def _differences(items: Sequence[tuple[str, AuditResult]]) -> list[str]:
    """What differs between the first audit and each other one, as phrases naming the files."""
    first_src, first = items[0]
    diffs: list[str] = []

    def differ(what: str, a: object, src: str, b: object) -> None:
        diffs.append(f"{what} is {_describe(a)} in {first_src} but {_describe(b)} in {src}")

    first_config = figure_settings(first.provenance.config or {})
    for src, result in items:
        if result.embedder.model == "precomputed":
            diffs.append(f"the embedder of {src} is unknown (precomputed embeddings without embedder_id), so it "
                         "cannot be shown to be the same embedder; audit it with embedder_id= or let sampleaudit embed")
    for src, other in items[1:]:
        if other.schema_version != first.schema_version:
            differ("schema_version", first.schema_version, src, other.schema_version)
        if other.embedder.model != first.embedder.model:
            differ("the embedder", first.embedder.model, src, other.embedder.model)
        if other.embedder.dim != first.embedder.dim:
            differ("the embedding dimension", first.embedder.dim, src, other.embedder.dim)
        a_base, b_base = first.baseline, other.baseline
        if (a_base is None) != (b_base is None):
            differ("the baseline", a_base.path if a_base else None, src, b_base.path if b_base else None)
        elif a_base is not None and b_base is not None and a_base.sha256 != b_base.sha256:
            differ("the baseline file hash (sha256)", a_base.sha256, src, b_base.sha256)
        if other.embedder.precision != first.embedder.precision:
            differ("the embedding precision", first.embedder.precision, src, other.embedder.precision)
        if other.embedder.backend != first.embedder.backend:
            differ("the embedding backend", first.embedder.backend, src, other.embedder.backend)
        config = figure_settings(other.provenance.config or {})
        for key in sorted(set(first_config) | set(config)):
            if first_config.get(key) != config.get(key):
                differ(f"setting {key}", first_config.get(key), src, config.get(key))

    for src, result in items:
        if result.baseline is not None and result.baseline.sha256 is None:
            diffs.append(f"the baseline in {src} has no file hash (it was built in memory), so it cannot be "
                         "shown to be the same baseline; audit it from a file")
    # The calibrated threshold depends on the checkpoint's size, so only equal sizes must agree.
    first_of_size: dict[int, tuple[str, CheckpointResult]] = {}
    for src, c in ((src, c) for src, r in items for c in r.checkpoints if c.similarity is not None):
        ref_src, ref = first_of_size.setdefault(c.n_samples, (src, c))
        a, b = ref.similarity, c.similarity
        if abs(a.threshold - b.threshold) > THRESHOLD_TOLERANCE or a.threshold_source != b.threshold_source:
            diffs.append(
                f"the similarity threshold is {a.threshold:.6g} ({a.threshold_source}) for {ref.name} in "
                f"{ref_src} but {b.threshold:.6g} ({b.threshold_source}) for {c.name} in {src}, both of "
                f"{c.n_samples} samples"
            )
    return list(dict.fromkeys(diffs))


def _source_record(src: str, result: AuditResult, kept: list[str]) -> SourceAudit:
    """Where a merged audit came from, for the merged result's provenance."""
    return SourceAudit(path=src, created_at=result.provenance.created_at, tool_version=result.tool.version,
                       device=result.embedder.device, run_seconds=result.provenance.run_seconds, checkpoints=kept)


def merge_audits(
    audits: Sequence[AuditResult], *, sources: Sequence[str], command: list[str] | None = None
) -> AuditResult:
    """One AuditResult holding every checkpoint of `audits`, re-ranked; nothing is recomputed.

    `sources` names each audit (its file path) in messages and in the provenance. Raises
    IncompatibleAuditsError, naming what differs and in which file, unless the audits share the
    embedder, the baseline file, every setting that changes a figure and the similarity
    threshold. A checkpoint name found in two audits is an InputError unless both hold the same
    samples file (same sha256): then the first is kept. The baseline section, the configuration
    and the seed are those of the first audit.
    """
    started = time.perf_counter()
    audits, sources = list(audits), [str(s) for s in sources]
    if not audits:
        raise InputError("give at least one audit.json to compare")
    if len(sources) != len(audits):
        raise InputError(f"got {len(sources)} source name(s) for {len(audits)} audit(s); give one per audit")
    items = list(zip(sources, audits, strict=True))
    diffs = _differences(items)
    if diffs:
        raise IncompatibleAuditsError(
            "cannot compare these audits without re-auditing: " + "; ".join(diffs)
            + ". Re-run `sampleaudit audit` on the checkpoints with the same embedder, baseline and settings."
        )

    kept: dict[str, tuple[str, CheckpointResult]] = {}
    per_source: dict[str, list[str]] = {src: [] for src in sources}
    warnings: list[str] = []
    for src, result in items:
        for c in result.checkpoints:
            if c.name in kept:
                first_src, first = kept[c.name]
                if first.sha256 is None or first.sha256 != c.sha256:
                    raise InputError(
                        f"checkpoint {c.name!r} is in both {first_src} and {src} with different samples "
                        f"(sha256 {first.sha256 or 'unknown'} vs {c.sha256 or 'unknown'}); give one of them "
                        "another name (`sampleaudit audit --name`) and audit it again"
                    )
                if first_src != src:
                    warnings.append(f"{c.name} is in {first_src} and {src} with the same samples; "
                                    f"kept the result from {first_src}")
                continue
            kept[c.name] = (src, c)
            per_source[src].append(c.name)
    checkpoints = [c for _, c in kept.values()]

    first_src, first = items[0]
    versions = sorted({r.tool.version for r in audits})
    if len(versions) > 1:
        warnings.append(f"these audits were made with different sampleaudit versions ({', '.join(versions)})")
    if first.baseline is not None:
        sizes = {r.baseline.subsample_size for r in audits if r.baseline is not None}
        if len(sizes) > 1:
            warnings.append(f"the baseline figures shown come from {first_src} (a subsample of "
                            f"{first.baseline.subsample_size}); other audits used subsamples of "
                            f"{', '.join(str(s) for s in sorted(sizes - {first.baseline.subsample_size}))}")
    for src, r in items:
        warnings += [f"{src}: {w}" for w in r.warnings]

    emap = _merged_map(items, warnings)
    if emap is None and len(items) > 1:
        checkpoints = [dataclasses.replace(c, map_points=None) for c in checkpoints]
    generation = {name: g for _, r in items for name, g in r.provenance.generation.items() if name in kept}
    return assemble(
        checkpoints, first.baseline, config=first.provenance.config, embedder=first.embedder, started=started,
        command=command, settings=first.provenance.settings, schema_version=first.schema_version, map=emap,
        warnings=warnings, sources=[_source_record(src, r, per_source[src]) for src, r in items],
        generation=generation,
    )


def _merged_map(items, warnings: list[str]) -> EmbeddingMap | None:
    """The 2-D map of the merged audit, when every audit's map lies in the same PCA space (the
    same baseline, so the baseline's points agree); else None, with a warning (the checkpoints'
    own map points are then dropped)."""
    maps = {src: r.map for src, r in items}
    ref = next(iter(maps.values()))
    if len(maps) == 1:
        return ref
    if ref is None or not ref.baseline or any(m is None for m in maps.values()):
        if any(m is not None for m in maps.values()):
            warnings.append("the 2-D map is left out: not every audit has one fitted on the baseline")
        return None
    for src, m in maps.items():
        same = len(m.baseline) == len(ref.baseline) and all(
            abs(a - b) <= MAP_TOLERANCE for p, q in zip(m.baseline, ref.baseline, strict=True)
            for a, b in zip(p, q, strict=True))
        if not same:
            warnings.append(f"the 2-D map is left out: the map of {src} is not in the same coordinates")
            return None
    return ref


# --------------------------------------------------------------------------------------------
# the release gate


def _find(result: AuditResult, name: str, option: str) -> CheckpointResult:
    for c in result.checkpoints:
        if c.name == name:
            return c
    names = ", ".join(c.name for c in result.checkpoints)
    raise InputError(f"{option} {name!r} is not a checkpoint of these audits; they hold: {names}")


def _phrase(checks) -> str:
    from .report.context import check_phrase, join_and

    return join_and([check_phrase(ch) for ch in checks])


def _counts(c: CheckpointResult) -> tuple[int, int, int]:
    return (STATUS_ORDER[c.status], sum(ch.status == "fail" for ch in c.checks),
            sum(ch.status == "warn" for ch in c.checks))


def release_gate(
    result: AuditResult, *, candidate: str, current: str | None = None, fail_on: str = "fail"
) -> tuple[int, str]:
    """(exit code, one-sentence reason): 1 when `candidate` reaches `fail_on` ("fail" or "warn")
    in any check, or ranks below `current`; else 0.

    A candidate ranked below the current checkpoint still passes when the two differ only within
    noise by the ranking's own rule (checks.ranking_notes: their checks agree and every stored
    interval overlaps), or tie on every ranked figure; the reason says so.
    """
    if fail_on not in ("fail", "warn"):
        raise InputError(f"fail_on must be 'fail' or 'warn' for the release gate; got {fail_on!r}")
    cand = _find(result, candidate, "--candidate")
    cur = _find(result, current, "--current") if current is not None else None
    position = {name: i + 1 for i, name in enumerate(result.ranking)}
    n = len(result.ranking)
    blocking = [ch for ch in cand.checks if STATUS_ORDER[ch.status] >= STATUS_ORDER[fail_on]]
    if blocking:
        failed = [ch for ch in blocking if ch.status == "fail"]
        warned = [ch for ch in blocking if ch.status == "warn"]
        parts = ([f"fails {_phrase(failed)}"] if failed else []) + ([f"warns on {_phrase(warned)}"] if warned else [])
        return 1, f"blocked: candidate {cand.name} {' and '.join(parts)}."
    ok = "passes every check" if cand.status == "pass" else f"fails no check (its status is {cand.status})"
    if cur is None or cur.name == cand.name:
        return 0, f"pass: candidate {cand.name} {ok} (ranked {position[cand.name]} of {n})."
    if position[cand.name] < position[cur.name]:
        return 0, (f"pass: candidate {cand.name} {ok} and ranks above the current "
                   f"{cur.name} ({position[cand.name]} vs {position[cur.name]} of {n}).")
    note = ranking_notes([cur, cand], [cur.name, cand.name])[0]  # the ranking's own noise rule
    where = f"({position[cand.name]} vs {position[cur.name]} of {n})"
    if note.within_noise:
        return 0, (f"pass: candidate {cand.name} ranks below the current {cur.name} {where} only within noise "
                   "(their checks agree and every interval overlaps).")
    if _counts(cand) == _counts(cur) and penalty(cand) == penalty(cur):
        return 0, (f"pass: candidate {cand.name} {ok} and ties with the current {cur.name} {where}; "
                   "only their names order them.")
    return 1, f"blocked: candidate {cand.name} ranks below the current {cur.name} {where}: {note.reason}."
