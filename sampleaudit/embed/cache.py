"""On-disk embedding cache keyed by (model id, SHA-256 of the text), in one SQLite file.

Location: $SAMPLEAUDIT_CACHE_DIR, else $XDG_CACHE_HOME/sampleaudit, else ~/.cache/sampleaudit.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np

_SCHEMA = "CREATE TABLE IF NOT EXISTS embeddings (model TEXT, key BLOB, vector BLOB, PRIMARY KEY (model, key))"
_CHUNK = 500  # SQLite's bound-parameter limit is far above this


def default_cache_dir() -> Path:
    """Where the cache lives unless told otherwise (see module docstring)."""
    if os.environ.get("SAMPLEAUDIT_CACHE_DIR"):
        return Path(os.environ["SAMPLEAUDIT_CACHE_DIR"])
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "sampleaudit"


def _key(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


class EmbeddingCache:
    """Vectors stored as float32 bytes; safe to share between runs and processes."""

    def __init__(self, directory: str | Path | None = None):
        self.directory = Path(directory) if directory else default_cache_dir()
        self.path = self.directory / "embeddings.sqlite"

    def _connect(self) -> sqlite3.Connection:
        self.directory.mkdir(parents=True, exist_ok=True)
        con = sqlite3.connect(self.path, timeout=30)
        con.execute(_SCHEMA)
        return con

    def get_many(self, model_id: str, texts: Iterable[str]) -> dict[str, np.ndarray]:
        texts = list(texts)
        if not self.path.exists() or not texts:
            return {}
        by_key = {_key(t): t for t in texts}
        keys = list(by_key)
        found: dict[str, np.ndarray] = {}
        with self._connect() as con:
            for i in range(0, len(keys), _CHUNK):
                chunk = keys[i : i + _CHUNK]
                marks = ",".join("?" * len(chunk))
                rows = con.execute(
                    f"SELECT key, vector FROM embeddings WHERE model = ? AND key IN ({marks})", [model_id, *chunk]
                )
                for key, blob in rows:
                    found[by_key[key]] = np.frombuffer(blob, dtype=np.float32)
        con.close()
        return found

    def put_many(self, model_id: str, vectors: Mapping[str, np.ndarray]) -> None:
        rows = [(model_id, _key(t), np.asarray(v, dtype=np.float32).tobytes()) for t, v in vectors.items()]
        with self._connect() as con:
            con.executemany("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?)", rows)
        con.close()
