"""Validation of metric inputs at the public boundary (private kernels trust their inputs)."""

from __future__ import annotations

import numpy as np

from ..errors import InputError


def check_embeddings(embeddings, *, name: str = "embeddings", min_rows: int = 1) -> np.ndarray:
    """Return `embeddings` as a C-contiguous float32 (n, d) array, or raise InputError."""
    arr = np.asarray(embeddings)
    if arr.ndim != 2:
        raise InputError(f"{name} must be 2-D (n_samples, dim); got shape {arr.shape}")
    if not np.issubdtype(arr.dtype, np.number):
        raise InputError(f"{name} must be numeric; got dtype {arr.dtype}")
    if arr.shape[0] < min_rows:
        raise InputError(f"{name} needs at least {min_rows} row(s); got {arr.shape[0]}")
    arr = np.ascontiguousarray(arr, dtype=np.float32)
    # A float64 sum of float32 values cannot overflow, so it is finite exactly when every value
    # is; the sum needs no n*d temporary.
    if not np.isfinite(arr.sum(dtype=np.float64)):
        bad = int(np.argwhere(~np.isfinite(arr))[0, 0])
        raise InputError(f"{name} contain NaN or inf (first at row {bad}); re-embed the samples")
    return arr


def check_unit_norm(arr: np.ndarray, *, name: str = "embeddings", tol: float = 1e-3) -> np.ndarray:
    """Return L2-normalised rows; zero rows stay zero (their similarity to anything is 0)."""
    norms = np.sqrt(np.einsum("ij,ij->i", arr, arr))[:, None]  # no n*d temporary, unlike linalg.norm
    if np.allclose(norms[norms > 0], 1.0, atol=tol):
        return arr
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(norms > 0, arr / np.where(norms > 0, norms, 1.0), 0.0)
    return out.astype(np.float32)


def check_aligned(values, n: int, name: str, *, rows: str = "embedding row") -> list:
    """`values` as a list with one entry per row (n of them), or InputError saying how to fix it."""
    if isinstance(values, (str, bytes)):
        raise InputError(f"{name} must be a sequence, one entry per {rows}, not a string")
    out = list(values)
    if len(out) != n:
        raise InputError(f"{name} must have one entry per {rows} ({n}); got {len(out)}")
    return out


def optional_strings(values, n: int, name: str, *, rows: str = "embedding row") -> list[str] | None:
    """None, or `values` as n strings (one per row)."""
    return None if values is None else [str(v) for v in check_aligned(values, n, name, rows=rows)]
