import numpy as np
import pytest

from sampleaudit import audit
from sampleaudit.config import Config
from sampleaudit.errors import InputError
from sampleaudit.results import from_json, to_json
from sampleaudit.samples import SampleSet

TOPICS = [
    "the rover measured dust storms on the red planet", "a sourdough loaf needs a long cold proof",
    "the violin sonata opens with a slow adagio", "tax law changed the deduction for home offices",
    "the goalkeeper saved a penalty in extra time", "mitochondria turn sugar into usable energy",
    "the old lighthouse keeper logged every passing ship", "compilers lower loops into vector instructions",
]


WORDS = " ".join(TOPICS).split() + "quartz fjord nimbus xylophone kettle brisk olive plume ember zinc".split()


def healthy(n, seed):
    """Texts of 10 words drawn at random from ~70: distinct from each other under any embedder."""
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, 10)) for _ in range(n)]


def collapsed(n):
    return [TOPICS[0] + "." if i % 5 else f"{TOPICS[i % 8]} variant {i}" for i in range(n)]


@pytest.fixture(scope="module")
def result():
    from sampleaudit.embed.hashing import HashingEmbedder

    hashing_embedder = HashingEmbedder(dim=256)
    sets = [SampleSet.from_texts(healthy(80, 1), name="ckpt-20k"), SampleSet.from_texts(collapsed(80), name="ckpt-35k")]
    base = SampleSet.from_texts(healthy(200, 2), name="train")
    return audit(sets, baseline=base, embedder=hashing_embedder, config=Config())


def test_collapsed_fails_and_ranks_last(result):
    healthy_ck, collapsed_ck = result.checkpoint("ckpt-20k"), result.checkpoint("ckpt-35k")
    assert collapsed_ck.status == "fail"
    assert collapsed_ck.similarity.high_similarity_share >= 0.8
    assert healthy_ck.similarity.high_similarity_share < collapsed_ck.similarity.high_similarity_share
    assert result.ranking == ["ckpt-20k", "ckpt-35k"]
    assert [c.name for c in collapsed_ck.checks] == ["mode_collapse", "coverage", "repetition_loops", "repeated_openings"]


def test_baseline_measured_on_same_size_subsample(result):
    assert result.baseline.n_samples == 200 and result.baseline.subsample_size == 80
    assert result.baseline.similarity.n_samples == 80


def test_json_round_trip_is_exact(result):
    text = to_json(result)
    again = from_json(text)
    assert again == result
    assert to_json(again) == text


def test_contract_field_names(result):
    import json

    d = json.loads(to_json(result))
    assert d["schema_version"] == 1 and d["tool"]["name"] == "sampleaudit"
    assert set(d["embedder"]) >= {"model", "dim", "device"}
    c = d["checkpoints"][0]
    assert set(c) >= {"name", "path", "n_samples", "similarity", "checks", "status"}
    assert set(c["similarity"]) >= {"mean", "quantiles", "threshold", "high_similarity_share", "histogram"}
    assert set(c["similarity"]["quantiles"]) >= {"p50", "p90", "p99"}
    assert set(c["checks"][0]) == {"name", "status", "value", "threshold", "message"}
    assert d["ranking"] == ["ckpt-20k", "ckpt-35k"]


def test_wrong_schema_version_is_rejected(result):
    text = to_json(result).replace('"schema_version": 1', '"schema_version": 99')
    with pytest.raises(InputError, match="schema_version 99"):
        from_json(text, source="old.json")


def test_precomputed_embeddings_need_no_embedder():
    x = np.eye(6, 4, dtype=np.float32)
    x[3:] = x[0]
    r = audit([SampleSet.from_texts([str(i) for i in range(6)], name="c")], embeddings={"c": x})
    assert r.embedder.model == "precomputed" and r.embedder.dim == 4
    assert r.checkpoints[0].similarity.high_similarity_share == pytest.approx(4 / 6)


def test_precomputed_embeddings_wrong_shape():
    with pytest.raises(InputError, match=r"must have shape \(3, dim\)"):
        audit([SampleSet.from_texts(["a", "b", "c"], name="c")], embeddings={"c": np.eye(2)})


def test_duplicate_checkpoint_names(hashing_embedder):
    s = SampleSet.from_texts(["a", "b"], name="same")
    with pytest.raises(InputError, match="two checkpoints are named 'same'"):
        audit([s, s], embedder=hashing_embedder)


def test_fail_on_and_exit_code(result):
    from sampleaudit.checks import exit_code

    assert exit_code(result.checkpoints, "fail") == 1
    assert exit_code(result.checkpoints, "never") == 0
    assert exit_code([result.checkpoint("ckpt-20k")], "fail") == 0
