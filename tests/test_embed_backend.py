"""The embedder's runtime (embed.backend): OpenVINO on the CPU by default, torch as the fallback."""

import numpy as np
import pytest

from sampleaudit.embed import cache_key, load_embedder
from sampleaudit.embed import openvino as ovb
from sampleaudit.embed import sentence_transformers as st_backend
from sampleaudit.embed.hashing import HashingEmbedder
from sampleaudit.errors import InputError, ModelError


class FakeModel:
    """Stands in for SentenceTransformer: no torch model is loaded."""

    def __init__(self, location, device, local_files_only):
        self.location, self.device = location, device

    def half(self):
        pass

    def get_embedding_dimension(self):
        return 8


@pytest.fixture
def fake_model(monkeypatch):
    import sentence_transformers

    monkeypatch.setattr(sentence_transformers, "SentenceTransformer", FakeModel)


def test_cache_key_names_a_backend_other_than_torch():
    emb = HashingEmbedder(16)
    assert cache_key(emb) == "hashing-char-3-5-16|fp32"  # no backend attribute: keys as before
    emb.backend = "torch"
    assert cache_key(emb) == "hashing-char-3-5-16|fp32"
    emb.backend, emb.precision, emb.cache_variant = "openvino", "bf16", "chunks"
    assert cache_key(emb) == "hashing-char-3-5-16|bf16|chunks|openvino"


def test_auto_falls_back_to_torch_when_openvino_is_missing(fake_model, monkeypatch):
    monkeypatch.setattr(ovb, "available", lambda: False)
    emb = load_embedder(device="cpu")
    assert (emb.backend, emb.precision, emb.warnings) == ("torch", "fp32", [])
    with pytest.raises(ModelError) as exc:
        load_embedder(device="cpu", backend="openvino")
    assert "\n" not in str(exc.value)
    assert "the package openvino is not installed (pip install openvino)" in str(exc.value)


def test_gpu_uses_torch_and_openvino_is_refused_there(fake_model, monkeypatch):
    monkeypatch.setattr(st_backend, "check_device", lambda name: "cuda:0")
    emb = load_embedder(device="cuda:0")
    assert (emb.backend, emb.precision) == ("torch", "fp16")
    with pytest.raises(InputError, match="embed.backend openvino runs on the CPU, not cuda:0"):
        load_embedder(device="cuda:0", backend="openvino")


def test_unknown_backend_is_refused():
    with pytest.raises(InputError, match="embed.backend must be one of auto, torch, openvino; got 'onnx'"):
        load_embedder(device="cpu", backend="onnx")


def test_a_failed_conversion_falls_back_with_a_warning(fake_model, monkeypatch, tmp_path):
    monkeypatch.setattr(ovb, "available", lambda: True)
    monkeypatch.setattr(ovb, "supports", lambda model: True)
    monkeypatch.setattr(ovb, "export_folder", lambda *a: tmp_path / "models" / "m-openvino-x")

    def broken(model, folder):
        raise RuntimeError("unsupported operation\nsecond line")

    monkeypatch.setattr(ovb, "export", broken)
    emb = load_embedder(device="cpu")
    assert emb.backend == "torch"
    assert emb.warnings == ["OpenVINO could not convert sentence-transformers/all-MiniLM-L6-v2 "
                            "(RuntimeError: unsupported operation second line); embedded with torch instead"]
    with pytest.raises(ModelError, match="could not convert .* set embed.backend = \"torch\""):
        load_embedder(device="cpu", backend="openvino")


def test_backend_is_a_run_setting_and_checked_by_compare():
    from sampleaudit.config import RUN_ONLY_SETTINGS, Config

    assert Config().embed.backend == "auto"
    assert "embed.backend" in RUN_ONLY_SETTINGS  # the resolved backend is compared instead (compare.py)


@pytest.mark.slow
@pytest.mark.skipif(not ovb.available(), reason="openvino is not installed")  # importorskip would import it
def test_openvino_matches_torch_and_exports_once(real_cache_dir, monkeypatch, capfd, tmp_path):
    texts = ["a cat sat on the mat", "quarterly tax filing deadlines", "word " * 400]
    torch_emb = load_embedder(device="cpu", backend="torch")
    capfd.readouterr()
    monkeypatch.setenv("HOME", str(tmp_path))
    ov_emb = load_embedder(device="cpu", backend="openvino", model_cache_dir=real_cache_dir / "ov-test")
    assert capfd.readouterr() == ("", "")  # the export is quiet
    assert not (tmp_path / "intel").exists()  # and sends no OpenVINO telemetry (which would write ~/intel)
    assert ov_emb.backend == "openvino" and ov_emb.precision in {"bf16", "fp32"}
    assert cache_key(ov_emb).endswith(f"|{ov_emb.precision}|chunks|openvino")
    a, b = torch_emb.encode(texts), ov_emb.encode(texts)
    assert b.dtype == np.float32 and np.allclose(np.linalg.norm(b, axis=1), 1.0, atol=1e-5)
    assert np.min(np.sum(a * b, axis=1)) > 0.9995  # the same vectors, to bf16 rounding
    folders = list((real_cache_dir / "ov-test" / "models").iterdir())
    assert [f.name.startswith("all-MiniLM-L6-v2-openvino-") for f in folders] == [True]
    assert sorted(p.name for p in folders[0].iterdir()) == ["export.json", "model.bin", "model.xml"]
    import openvino

    monkeypatch.setattr(openvino, "convert_model", lambda *a, **k: pytest.fail("exported twice"))
    again = load_embedder(device="cpu", model_cache_dir=real_cache_dir / "ov-test")  # auto: the same export
    assert again.backend == "openvino" and np.allclose(again.encode(texts[:1]), b[:1], atol=1e-6)


def test_openvino_batches_in_flight_come_back_in_order(real_cache_dir):
    """More batches than streams: each row of the pipelined pass is its own text's vector."""
    texts = ["a cat sat on the mat", "quarterly tax filing deadlines", "the volcano erupted at dawn",
             "a recipe for lemon cake", "python list comprehension syntax", "the orchestra tuned up",
             "rain is expected on friday"]
    torch_emb = load_embedder(device="cpu", backend="torch")
    ov_emb = load_embedder(device="cpu", backend="openvino", batch_size=2, model_cache_dir=real_cache_dir / "ov-test")
    runtime = ov_emb._runtime
    assert runtime.streams >= 1
    batches = [(k, ov_emb._model.preprocess([t])) for k, t in enumerate(texts)]
    out = list(runtime.map(iter(batches)))
    assert [k for k, _, _ in out] == list(range(len(texts)))
    for (_, features), (_, _, tokens) in zip(batches, out):
        assert np.array_equal(tokens, runtime(features))  # the same numbers as one call on its own
    cos = np.sum(torch_emb.encode(texts) * ov_emb.encode(texts), axis=1)
    assert cos.min() > 0.9995


def test_audit_records_the_backend_and_the_embedders_warnings():
    from sampleaudit import audit
    from sampleaudit.samples import SampleSet

    emb = HashingEmbedder(32)
    emb.backend, emb.precision = "openvino", "bf16"
    emb.warnings = ["OpenVINO could not convert m (RuntimeError: x); embedded with torch instead"]
    texts = [f"sample number {i} about topic {i % 7}" for i in range(12)]
    result = audit([SampleSet.from_texts(texts, name="c")], embedder=emb)
    assert (result.embedder.backend, result.embedder.precision) == ("openvino", "bf16")
    assert emb.warnings[0] in result.warnings
