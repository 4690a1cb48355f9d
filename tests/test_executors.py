"""Executors: the per-checkpoint work in local processes and on a local Ray gives the same audit.

The Ray tests share one local Ray (2 CPUs, no dashboard) started once for the module."""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import pickle
import sys
from pathlib import Path

import numpy as np
import pytest

from sampleaudit import audit
from sampleaudit.cli import main
from sampleaudit.embed.hashing import HashingEmbedder
from sampleaudit.errors import InputError
from sampleaudit.executors import RAY_HINT, LocalExecutor, make_executor
from sampleaudit.results import to_json
from sampleaudit.samples import SampleSet

WORDS = ("the rover measured dust storms on the red planet a sourdough loaf needs a long cold proof the violin "
         "sonata opens with a slow adagio quartz fjord nimbus kettle olive plume ember zinc").split()


def texts(n, seed):
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, 10)) for _ in range(n)]


def _sets():
    base = SampleSet.from_texts(texts(200, 1), name="train")
    cks = [SampleSet.from_texts(texts(50, 2), name="a"),
           SampleSet.from_texts(["the rover measured dust storms."] * 25 + texts(25, 3), name="b"),
           SampleSet.from_texts(texts(40, 4), name="c")]
    return base, cks


def _figures(result) -> dict:
    """audit.json without what says when, how long and by which executor it ran."""
    data = json.loads(to_json(result))
    for key in ("created_at", "run_seconds", "command", "executor"):
        data["provenance"].pop(key)
    return data


def _dies_once(marker: str, dim: int):
    """An embedder factory whose first call kills its worker process (the marker file says it happened)."""
    if not os.path.exists(marker):
        Path(marker).write_text("killed")
        os._exit(1)
    return HashingEmbedder(dim)


@pytest.fixture(scope="module")
def local_ray():
    ray = pytest.importorskip("ray")
    # this module's functions reach the workers by value (tests are not an importable package)
    if __name__ in sys.modules:
        ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield ray
    ray.shutdown()


def test_input_error_pickles_with_its_path_and_line():
    exc = pickle.loads(pickle.dumps(InputError("not JSON", path="runs/a.jsonl", line=7)))
    assert (str(exc), exc.path, exc.line, exc.reason) == ("runs/a.jsonl:7: not JSON", "runs/a.jsonl", 7, "not JSON")


def test_without_ray_the_executor_is_exit_2_with_the_install_hint(tmp_path, capsys, monkeypatch, write_jsonl):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    with pytest.raises(InputError, match="pip install 'sampleaudit\\[ray\\]'"):
        make_executor("ray")
    ck = write_jsonl(tmp_path / "a.jsonl", [{"text": t} for t in texts(5, 0)])
    assert main(["audit", str(ck), "--executor", "ray", "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.strip() == f"sampleaudit: error: {RAY_HINT}"
    assert not (tmp_path / "out").exists()


def test_executor_options_are_checked():
    with pytest.raises(InputError, match="--workers must be"):
        make_executor("local", workers=0)
    with pytest.raises(InputError, match="need --executor ray"):
        make_executor("local", gpus=1)


def test_workers_get_the_reference_without_the_baseline_texts():
    from sampleaudit import assemble, audit_checkpoint, fit_reference
    from sampleaudit.config import Config
    from sampleaudit.embed import embed_texts

    base, cks = _sets()
    emb = HashingEmbedder(128)
    reference = fit_reference(base, embed_texts(base.texts, emb), Config(), embedder=emb.model_id)
    shipped = reference.for_workers({50, 40})
    blob = pickle.dumps(shipped)
    assert not any(t.encode() in blob for t in base.texts) and len(blob) < len(pickle.dumps(reference)) / 2
    vectors = [embed_texts(s.texts, emb) for s in cks]
    on_worker = [audit_checkpoint(s, v, pickle.loads(blob)) for s, v in zip(cks, vectors)]
    here = [audit_checkpoint(s, v, reference) for s, v in zip(cks, vectors)]
    assert _figures(assemble(on_worker, reference)) == _figures(assemble(here, reference))
    with pytest.raises(ValueError, match="not for 30"):
        shipped.at_size(30)


def test_local_processes_give_the_same_audit():
    base, cks = _sets()
    emb = HashingEmbedder(128)
    serial = audit(cks, baseline=base, embedder=emb, cache=False)
    pooled = audit(cks, baseline=base, embedder=emb, cache=False, executor=LocalExecutor(2),
                   embedder_factory=functools.partial(HashingEmbedder, 128))
    assert pooled.provenance.executor == "local (2 processes)"
    assert _figures(pooled) == _figures(serial)


def test_ray_cli_audit_equals_the_local_one(local_ray, tmp_path, write_jsonl, monkeypatch, capsys):
    monkeypatch.setattr("sampleaudit.embed.load_embedder", lambda *a, **k: HashingEmbedder(128))
    base, cks = _sets()
    paths = [str(write_jsonl(tmp_path / f"{s.name}.jsonl", [{"text": t} for t in s.texts])) for s in cks]
    baseline = str(write_jsonl(tmp_path / "train.jsonl", [{"text": t} for t in base.texts]))
    common = [*paths, "--baseline", baseline, "--format", "json", "-q"]
    codes = [main(["audit", *common, "--out", str(tmp_path / "local")]),
             main(["audit", *common, "--out", str(tmp_path / "ray"), "--executor", "ray", "--cpus-per-worker", "1"])]
    local, on_ray = (json.loads((tmp_path / d / "audit.json").read_text()) for d in ("local", "ray"))
    assert codes == [1, 1]  # checkpoint b collapses: a check fails either way
    assert (local["provenance"]["executor"], on_ray["provenance"]["executor"]) == ("local", "ray")
    for data in (local, on_ray):
        for key in ("created_at", "run_seconds", "command", "executor"):
            data["provenance"].pop(key)
    assert on_ray == local
    assert local["ranking"][-1] == "b"


def test_a_worker_that_dies_is_retried_and_the_result_is_unchanged(local_ray, tmp_path):
    from sampleaudit.executors import RayExecutor

    base, cks = _sets()
    marker = tmp_path / "killed-once"
    emb = HashingEmbedder(128)
    expected = audit(cks, baseline=base, embedder=emb, cache=False)
    result = audit(cks, baseline=base, embedder=emb, cache=False, executor=RayExecutor(),
                   embedder_factory=functools.partial(_dies_once, str(marker), 128))
    assert marker.read_text() == "killed"  # one worker did die
    assert _figures(result) == _figures(expected)


def test_without_a_baseline_ray_gives_the_same_audit(local_ray):
    from sampleaudit.executors import RayExecutor

    _, cks = _sets()
    emb = HashingEmbedder(128)
    expected = audit(cks[:2], embedder=emb, cache=False)
    result = audit(cks[:2], embedder=emb, cache=False, executor=RayExecutor())
    assert result.map is not None and _figures(result) == _figures(expected)


def test_bad_input_in_a_ray_task_is_exit_2_one_line_nothing_written(local_ray, tmp_path, write_jsonl, monkeypatch,
                                                                    capsys):
    monkeypatch.setattr("sampleaudit.embed.load_embedder", lambda *a, **k: HashingEmbedder(64))
    ck = write_jsonl(tmp_path / "a.jsonl", [{"text": t} for t in texts(20, 0)])
    out = tmp_path / "out"
    missing = tmp_path / "ckpts" / "step-9"
    code = main(["audit", str(ck), "--model", str(missing), "-n", "4", "--executor", "ray", "--out", str(out),
                 "--format", "json", "-q"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert err[0].startswith("sampleaudit: error: ") and str(missing) in err[0]
    assert not (out / "audit.json").exists() and not list(out.glob("**/*.jsonl"))


def test_ray_generates_on_the_workers_the_samples_the_local_run_generates(local_ray, tmp_path, write_jsonl,
                                                                          monkeypatch):
    import importlib.util

    spec = importlib.util.spec_from_file_location("tiny_lm", Path(__file__).with_name("tiny_lm.py"))
    tiny_lm = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tiny_lm)
    model = tiny_lm.build_tiny_lm(tmp_path / "ckpts" / "tiny")
    monkeypatch.setattr("sampleaudit.embed.load_embedder", lambda *a, **k: HashingEmbedder(128))
    prompts = write_jsonl(tmp_path / "prompts.jsonl", [{"prompt": p} for p in ("the cat sat on", "tell me")])
    common = ["audit", "--model", str(model), "--prompts", str(prompts), "-n", "6", "--max-new-tokens", "8",
              "--format", "json", "-q"]
    runs = {}
    for executor in ("local", "ray"):
        out = tmp_path / executor
        assert main([*common, "--out", str(out), "--executor", executor]) in (0, 1)
        data = json.loads((out / "audit.json").read_text())
        assert (out / "samples" / "tiny.jsonl").exists()  # generated into OUT/samples/ by the worker
        for c in data["checkpoints"]:
            c.pop("path")
        for key in ("created_at", "run_seconds", "command", "executor"):
            data["provenance"].pop(key)
        data["provenance"]["generation"]["tiny"].pop("output")
        runs[executor] = data
    assert runs["ray"]["provenance"]["generation"]["tiny"]["n_samples"] == 6
    assert runs["ray"] == runs["local"]


class _OpenVINOHashing(HashingEmbedder):
    """The hashing model as if another runtime computed it."""

    backend, precision = "openvino", "bf16"


def test_a_worker_on_another_runtime_warns_and_on_another_model_is_refused():
    from sampleaudit.config import Config
    from sampleaudit.executors import Job, Shared, checkpoint_task
    from sampleaudit.results import EmbedderInfo

    driver = EmbedderInfo.of(HashingEmbedder(64))
    job = Job("a", samples=SampleSet.from_texts(texts(5, 1), name="a"))
    same = checkpoint_task(job, Shared(Config(), functools.partial(HashingEmbedder, 64), driver, stage="embed"))
    assert same.warnings == [] and same.vectors.shape == (5, 64)
    other = checkpoint_task(job, Shared(Config(), functools.partial(_OpenVINOHashing, 64), driver, stage="embed"))
    assert len(other.warnings) == 1 and "a was embedded on its worker with openvino bf16 on cpu" in other.warnings[0]
    assert "the driver's sets with unknown fp32" in other.warnings[0]
    assert np.allclose(other.vectors, same.vectors)
    with pytest.raises(InputError, match=r"worker's embedder is 'hashing-char-3-5-32' \(32-d\)"):
        checkpoint_task(job, Shared(Config(), functools.partial(HashingEmbedder, 32), driver, stage="embed"))
