"""Shared fixtures: every test gets its own embedding cache and runs offline."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import settings

# huggingface_hub reads these once, at import, and session fixtures run before the per-test
# monkeypatch below: set them for the whole run, so no hub lookup ever waits for the network.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

# No per-example deadline (machines here are noisy); CI runs the same examples every time.
settings.register_profile("sampleaudit", deadline=None, derandomize=bool(os.environ.get("CI")))
settings.load_profile("sampleaudit")

@pytest.fixture(autouse=True)
def _isolated(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("SAMPLEAUDIT_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")


def _write_jsonl(path: Path, records) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.fixture
def write_jsonl():
    """write_jsonl(path, records) -> path: one JSON object per line, UTF-8."""
    return _write_jsonl


@pytest.fixture
def hashing_embedder():
    from sampleaudit.embed.hashing import HashingEmbedder

    return HashingEmbedder(dim=256)


@pytest.fixture(scope="session")
def real_cache_dir(tmp_path_factory):
    """One embedding cache for every test that uses the real model, so each text is embedded once."""
    return tmp_path_factory.mktemp("real-model-cache")


@pytest.fixture(scope="session")
def demo_result(real_cache_dir):
    """The whole demo (data_samples/) audited with the real default model, once per session."""
    from sampleaudit import audit
    from sampleaudit.embed import EmbeddingCache, load_embedder

    data = Path(__file__).resolve().parent.parent / "data_samples"
    checkpoints = sorted(data.glob("ckpt-*.jsonl"))
    return audit(checkpoints, baseline=data / "baseline.jsonl",
                 embedder=load_embedder(device="cpu", model_cache_dir=real_cache_dir),
                 cache=EmbeddingCache(real_cache_dir))
