"""The staged engine: fit_reference / audit_checkpoint / assemble, in and out of process."""

from __future__ import annotations

import dataclasses
import multiprocessing

import numpy as np
import pytest

from sampleaudit import assemble, audit, audit_checkpoint, fit_reference, load_reference
from sampleaudit.config import Config
from sampleaudit.embed import embed_texts
from sampleaudit.embed.hashing import HashingEmbedder
from sampleaudit.errors import InputError
from sampleaudit.results import EmbedderInfo, to_json
from sampleaudit.samples import SampleSet

WORDS = ("the rover measured dust storms on the red planet a sourdough loaf needs a long cold proof the violin "
         "sonata opens with a slow adagio quartz fjord nimbus kettle olive plume ember zinc").split()


def texts(n, seed):
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, 10)) for _ in range(n)]


EMB = HashingEmbedder(128)


def vectors(s):
    """The vectors audit() computes for a set (each distinct text embedded once, rows normalised)."""
    return embed_texts(s.texts, EMB)


INFO = EmbedderInfo(EMB.model_id, EMB.dim, EMB.device, EMB.precision)


@pytest.fixture(scope="module")
def sets():
    base = SampleSet.from_texts(texts(240, 1), name="train")
    cks = [SampleSet.from_texts(texts(60, 2), name="a"),
           SampleSet.from_texts(["the rover measured dust storms."] * 30 + texts(30, 3), name="b"),
           SampleSet.from_texts(texts(45, 4), name="c")]
    return base, cks


@pytest.fixture(scope="module")
def staged(sets):
    base, cks = sets
    config = Config()
    reference = fit_reference(base, vectors(base), config, embedder=INFO, sizes=[60, 45])
    results = [audit_checkpoint(s, vectors(s), reference, config) for s in cks]
    return reference, results


def _same(a, b):
    """Results equal apart from when and how long they ran."""
    strip = lambda r: dataclasses.replace(r, provenance=dataclasses.replace(  # noqa: E731
        r.provenance, created_at="", run_seconds=0.0, command=None))
    assert to_json(strip(a)) == to_json(strip(b))


def test_audit_is_the_loop_over_the_stages(sets, staged):
    base, cks = sets
    reference, results = staged
    staged_result = assemble(results, reference, config=Config())
    _same(staged_result, audit(cks, baseline=base, embedder=EMB, cache=False))
    assert staged_result.ranking[-1] == "b" and staged_result.checkpoint("b").status == "fail"


def test_audit_checkpoint_in_another_process_gives_the_same_result(sets, staged):
    from concurrent.futures import ProcessPoolExecutor

    base, cks = sets
    reference, results = staged
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        remote = list(pool.map(audit_checkpoint, cks[:2], [vectors(s) for s in cks[:2]], [reference] * 2,
                               [Config()] * 2, timeout=300))
    assert remote == results[:2]


def test_a_saved_reference_gives_the_same_results(tmp_path, sets, staged):
    base, cks = sets
    reference, results = staged
    path = reference.save(tmp_path / "train.reference.npz")
    loaded = load_reference(path)
    assert loaded.samples == reference.samples and np.array_equal(loaded.embeddings, reference.embeddings)
    again = [audit_checkpoint(s, vectors(s), loaded, Config()) for s in cks]
    assert again == results
    assert loaded.result(60) == reference.result(60)


def test_a_saved_hdbscan_reference_refits_the_same_partition(tmp_path):
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(4, 16))
    x = np.repeat(centres, 60, axis=0) + 0.05 * rng.normal(size=(240, 16))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    base = SampleSet.from_texts([f"t{i}" for i in range(240)], name="blobs")
    ref = fit_reference(base, x, Config(), embedder="blob-model")
    assert ref.clusters.method == "hdbscan"
    loaded = load_reference(ref.save(tmp_path / "r.npz"))
    probe = x[::7] + 0.01
    assert np.array_equal(loaded.clusters.assign(probe), ref.clusters.assign(probe))


def test_a_file_that_is_not_a_reference_is_an_input_error(tmp_path):
    bad = tmp_path / "r.npz"
    bad.write_bytes(b"not a zip")
    with pytest.raises(InputError, match="not a sampleaudit reference file"):
        load_reference(bad)


def test_a_config_that_disagrees_with_the_reference_is_refused(sets, staged):
    reference, _ = staged
    other = Config().with_overrides(**{"coverage.pca_dims": 8})
    with pytest.raises(InputError, match=r"fitted with coverage\.pca_dims = 32 but the config says 8"):
        audit_checkpoint(sets[1][0], vectors(sets[1][0]), reference, other)
    # settings that change no figure of the reference may differ
    relaxed = Config().with_overrides(**{"checks.mode_collapse.fail": 0.5, "fail_on": "warn"})
    assert audit_checkpoint(sets[1][0], vectors(sets[1][0]), reference, relaxed).checks


def test_embeddings_of_another_model_are_refused(sets, staged):
    reference, _ = staged
    s = sets[1][0]
    with pytest.raises(InputError, match="embedded with 'other' but the reference with"):
        audit_checkpoint(s, vectors(s), reference, Config(), embedder="other")
    with pytest.raises(InputError, match="needs the embedder's model id"):
        audit_checkpoint(s, vectors(s))


@pytest.mark.parametrize("texts_, what", [(["same text"] * 50, "only 1 of its 50"), ([""] * 50, "only 0 of its 50"),
                                          (["a", "b", "c"] * 20, "only 3 of its 60")])
def test_a_degenerate_baseline_is_an_input_error(texts_, what):
    base = SampleSet.from_texts(texts_, name="train")
    with pytest.raises(InputError, match=f"the baseline is degenerate: {what} texts are distinct and non-empty"):
        audit([SampleSet.from_texts(texts(20, 1), name="c")], baseline=base, embedder=EMB, cache=False)


def test_calibration_draws_and_baseline_subsample_use_different_seeds(staged):
    from sampleaudit.seeds import derive_seed

    reference, _ = staged
    assert derive_seed(0, "calibration") != derive_seed(0, "baseline_subsample")
    assert derive_seed(0, "calibration") == derive_seed(0, "calibration")
    # the first calibration draw is not the similarity subsample any more
    rng = np.random.default_rng(derive_seed(0, "calibration"))
    first_draw = np.sort(rng.choice(240, 60, replace=False))
    assert not np.array_equal(first_draw, reference.at_size(60).indices)


def test_unknown_embeddings_key_is_an_error():
    s = SampleSet.from_texts(texts(5, 1), name="c")
    with pytest.raises(InputError, match="embeddings were given for 'ckpt-3', which is not a set of this audit; "
                                         "its sets are 'c'"):
        audit([s], embeddings={"c": vectors(s), "ckpt-3": vectors(s)})


def test_precomputed_embeddings_carry_their_model_id():
    s = SampleSet.from_texts(texts(8, 1), name="c")
    r = audit([s], embeddings={"c": vectors(s)}, embedder_id="my-model")
    assert r.embedder.model == "my-model" and not any("unknown model" in w for w in r.warnings)
    anonymous = audit([s], embeddings={"c": vectors(s)})
    assert anonymous.embedder.model == "precomputed" and any("unknown model" in w for w in anonymous.warnings)
    t = SampleSet.from_texts(texts(8, 2), name="d")
    with pytest.raises(InputError, match="say which model made them"):
        audit([s, t], embeddings={"c": vectors(s)}, embedder=EMB, cache=False)
    with pytest.raises(InputError, match="were made with 'my-model' but the other sets are embedded"):
        audit([s, t], embeddings={"c": vectors(s)}, embedder=EMB, embedder_id="my-model", cache=False)
    mixed = audit([s, t], embeddings={"c": vectors(s)}, embedder=EMB, embedder_id=EMB.model_id, cache=False)
    assert mixed.embedder.model == EMB.model_id


def test_without_a_baseline_the_audit_says_once_what_it_cannot_measure():
    r = audit([SampleSet.from_texts(texts(20, 1), name="a"), SampleSet.from_texts(texts(20, 2), name="b")],
              embedder=EMB, cache=False)
    said = [w for w in r.all_warnings() if "no baseline given" in w]
    assert len(said) == 1 and "coverage and the data-vs-model verdict" in said[0]
    assert r.map is not None and r.map.fitted_on == "checkpoints" and all(c.map_points for c in r.checkpoints)


def test_the_python_api_honours_the_cache_setting(tmp_path, monkeypatch):
    monkeypatch.setenv("SAMPLEAUDIT_CACHE_DIR", str(tmp_path / "cache"))
    s = SampleSet.from_texts(texts(6, 1), name="c")
    audit([s], embedder=EMB, config=Config().with_overrides(**{"embed.cache": False}))
    assert not (tmp_path / "cache").exists()
    audit([s], embedder=EMB)
    assert (tmp_path / "cache" / "embeddings.sqlite").exists()


def test_every_text_is_stored_once():
    import json

    loop = "Zebra 7731 opens. " + "I will say it again and again. " * 12  # a loop, an example, and half of the most similar pair
    s = SampleSet.from_texts([loop, loop + "Really."] + texts(10, 5), name="c")
    r = audit([s], embedder=EMB, cache=False)
    c = r.checkpoints[0]
    assert c.worst_loops[0].id == "1" and c.similarity.most_similar_pairs[0].a.id == "1"
    assert "1" in {e.id for e in c.examples}
    assert json.dumps(json.loads(to_json(r))).count("Zebra 7731 opens.") == 2  # samples 1 and 2, once each
    shown = {e.id for e in c.examples} | {v.id for p in c.similarity.most_similar_pairs for v in (p.a, p.b)}
    assert shown | {lp.id for lp in c.worst_loops} == set(c.texts)
