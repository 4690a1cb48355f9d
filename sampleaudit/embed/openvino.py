"""OpenVINO runtime for the transformer of a sentence-transformers model (the fast CPU path).

The model's first module (the transformer) is converted once with `openvino.convert_model` into
<cache>/models/<name>-openvino-<hash>/ (written to a temporary folder, then renamed, so a reader
never sees half an export); pooling and normalisation stay the model's own torch modules. On a
CPU with bf16 units (AVX-512 BF16 or AMX) OpenVINO computes in bf16 by default: `precision` says
which format the compiled model uses, so it reaches provenance and the cache key.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import json
import os
import re
import shutil
import sys
import tempfile
import warnings
from collections import deque
from pathlib import Path

import numpy as np

EXPORT_VERSION = 1  # bump when the export changes: a new folder is made, old ones are never read
_PRECISIONS = {"bf16": "bf16", "f16": "fp16", "f32": "fp32"}  # OpenVINO's type name -> ours


def available() -> bool:
    """True when the openvino package can be imported."""
    return importlib.util.find_spec("openvino") is not None


def _transformer(st_model):
    """The transformers model inside `st_model`'s first module, or None when it has none."""
    modules = list(st_model)
    hf = getattr(modules[0], "auto_model", None) if modules else None
    return hf if hf is not None and hasattr(hf, "config") else None


def supports(st_model) -> bool:
    """Whether the model is a transformer followed by torch modules reading "token_embeddings"."""
    modules = list(st_model)
    return (len(modules) >= 2 and _transformer(st_model) is not None
            and getattr(modules[0], "module_output_name", "token_embeddings") == "token_embeddings")


def input_names(st_model) -> list[str]:
    """The tokenizer outputs the transformer takes, in a fixed order."""
    features = st_model.preprocess(["a"])
    params = set(inspect.signature(_transformer(st_model).forward).parameters)
    return [k for k in ("input_ids", "attention_mask", "token_type_ids") if k in features and k in params]


def _fingerprint(location: str, model_id: str) -> str:
    """Changes when the model's files, the export code or the OpenVINO or torch version change."""
    import torch

    parts = [model_id, str(EXPORT_VERSION), import_openvino().__version__, torch.__version__]
    folder = Path(location)
    if folder.is_dir():
        for f in sorted(p for p in folder.rglob("*") if p.is_file()):
            st = f.stat()
            parts.append(f"{f.relative_to(folder)}:{st.st_size}:{st.st_mtime_ns}")
    return hashlib.sha256("\n".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:16]


def export_folder(cache_dir: Path, location: str, model_id: str) -> Path:
    """Where the export of this model lives: <cache_dir>/models/<name>-openvino-<fingerprint>."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", model_id.rstrip("/").rsplit("/", 1)[-1]).strip("-.") or "model"
    return Path(cache_dir) / "models" / f"{name}-openvino-{_fingerprint(location, model_id)}"


def import_openvino():
    """`import openvino`, without OpenVINO's usage telemetry.

    Importing openvino imports its converter, which by default sends usage events to Google
    Analytics and writes ~/intel/ unless the user opted out. With `openvino_telemetry` hidden while
    the package first loads, the converter takes its own stub (its path when openvino-telemetry is
    not installed), for the whole process.
    """
    if "openvino" not in sys.modules:
        hidden = sys.modules.get("openvino_telemetry", _ABSENT)
        sys.modules["openvino_telemetry"] = None  # makes `import openvino_telemetry` raise ImportError
        try:
            import openvino  # noqa: F401
        finally:
            if hidden is _ABSENT:
                del sys.modules["openvino_telemetry"]
            else:
                sys.modules["openvino_telemetry"] = hidden
    return sys.modules["openvino"]


_ABSENT = object()


class _Wrapped:
    """Positional inputs -> last_hidden_state, the shape convert_model traces."""

    def __new__(cls, hf_model, names: list[str]):
        import torch

        class Module(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.model = hf_model

            def forward(self, *args):
                return self.model(**dict(zip(names, args)), return_dict=True).last_hidden_state

        return Module().eval()


def export(st_model, folder: Path) -> Path:
    """Convert the transformer into `folder` (model.xml + model.bin) once; returns `folder`.

    Safe against a concurrent export: the loser's copy is discarded. Raises OSError when the
    parent folder cannot be written.
    """
    if (folder / "model.xml").is_file() and (folder / "model.bin").is_file():
        return folder
    import torch
    from transformers.utils import logging as hf_logging

    ov = import_openvino()
    names = input_names(st_model)
    example = st_model.preprocess(["an example sentence", "another, somewhat longer, example sentence"])
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    verbosity = hf_logging.get_verbosity()
    try:
        hf_logging.set_verbosity_error()  # transformers' notes while tracing; the process's level comes back
        with torch.inference_mode(False), torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # tracer warnings from transformers
            model = ov.convert_model(_Wrapped(_transformer(st_model), names),
                                     example_input=tuple(example[k] for k in names),
                                     input=[(ov.PartialShape([-1, -1]), ov.Type.i64)] * len(names))
        hf_logging.set_verbosity(verbosity)
        for i, name in zip(model.inputs, names):
            i.get_tensor().set_names({name})
        ov.save_model(model, str(tmp / "model.xml"), compress_to_fp16=False)
        (tmp / "export.json").write_text(json.dumps({"inputs": names, "export_version": EXPORT_VERSION}))
        try:
            os.rename(tmp, folder)
        except OSError:
            if not (folder / "model.xml").is_file():
                raise
    finally:
        hf_logging.set_verbosity(verbosity)
        shutil.rmtree(tmp, ignore_errors=True)
    return folder


class OpenVINOTransformer:
    """Runs the exported transformer on the CPU: features (numpy) in, token embeddings out.

    Compiled for throughput: OpenVINO splits the CPU's threads (torch's thread count, so
    OMP_NUM_THREADS and a Ray worker's CPUs bound both runtimes alike) into streams, and `map`
    keeps one batch in flight per stream while the caller tokenizes the next and pools the last.
    On the 2-core development machine that is about 1.4x the single-stream speed
    (benchmarks/bench_embed_backends.py).
    """

    def __init__(self, folder: Path, *, threads: int | None = None):
        ov = import_openvino()
        self.names = json.loads((folder / "export.json").read_text())["inputs"]
        core = ov.Core()
        settings = {"PERFORMANCE_HINT": "THROUGHPUT"}
        if threads:
            settings["INFERENCE_NUM_THREADS"] = int(threads)
        self._compiled = core.compile_model(core.read_model(str(folder / "model.xml")), "CPU", settings)
        kind = self._compiled.get_property("INFERENCE_PRECISION_HINT").get_type_name()
        self.precision = _PRECISIONS.get(kind, kind)
        self.streams = max(1, int(self._compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS")))

    def _feed(self, features: dict) -> dict:
        return {name: np.asarray(features[name], dtype=np.int64) for name in self.names}

    def __call__(self, features: dict) -> np.ndarray:
        return np.asarray(self._compiled(self._feed(features))[0], dtype=np.float32)

    def map(self, batches):
        """For each (key, features) of `batches`, in order: (key, features, token embeddings).

        At most `streams` batches are in flight, so memory stays a few batches' worth whatever
        the number of batches.
        """
        requests = [self._compiled.create_infer_request() for _ in range(self.streams)]
        pending: deque = deque()

        def finish():
            request, key, features = pending.popleft()
            request.wait()
            return key, features, np.array(request.get_output_tensor(0).data, dtype=np.float32)

        for i, (key, features) in enumerate(batches):
            if len(pending) == len(requests):
                yield finish()
            request = requests[i % len(requests)]
            request.start_async(self._feed(features))
            pending.append((request, key, features))
        while pending:
            yield finish()
