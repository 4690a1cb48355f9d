"""sampleaudit: is a trained generative model's output still diverse and sane?

Public API (the CLI is a thin layer over these):
    audit(checkpoints, baseline=..., config=...) -> AuditResult (a loop over the three stages:)
    fit_reference(baseline, embeddings, config, embedder=...) -> Reference (save / load_reference)
    audit_checkpoint(samples, embeddings, reference, config) -> CheckpointResult
    assemble(checkpoint_results, reference, config=...) -> AuditResult
    render(result, out_dir, formats=...)        -> written paths
    merge_audits(results, sources=...) -> AuditResult; release_gate(result, candidate=...) -> (code, reason)
    load_audit(path) -> AuditResult; load_samples(path) -> SampleSet; load_config(path) -> Config
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("sampleaudit")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0+unknown"

from .compare import merge_audits, release_gate  # noqa: E402
from .config import Config, load_config  # noqa: E402
from .errors import InputError, ModelError, SampleAuditError  # noqa: E402
from .engine import assemble, audit_checkpoint  # noqa: E402
from .pipeline import audit  # noqa: E402
from .reference import Reference, fit_reference, load_reference  # noqa: E402
from .report import render  # noqa: E402
from .results import AuditResult, CheckpointResult, EmbedderInfo, load_audit  # noqa: E402
from .samples import SampleSet, load_samples  # noqa: E402

__all__ = [
    "AuditResult", "CheckpointResult", "Config", "EmbedderInfo", "InputError", "ModelError", "Reference",
    "SampleAuditError", "SampleSet", "__version__", "assemble", "audit", "audit_checkpoint", "fit_reference",
    "load_audit", "load_config", "load_reference", "load_samples", "merge_audits", "release_gate", "render",
]
