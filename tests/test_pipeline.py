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
    assert d["schema_version"] == 2 and d["tool"]["name"] == "sampleaudit"
    assert set(d["embedder"]) >= {"model", "dim", "device"}
    c = d["checkpoints"][0]
    assert set(c) >= {"name", "path", "n_samples", "similarity", "checks", "status"}
    assert set(c["similarity"]) >= {"mean", "quantiles", "threshold", "high_similarity_share", "histogram"}
    assert set(c["similarity"]["quantiles"]) >= {"p50", "p90", "p99"}
    assert set(c["checks"][0]) == {"name", "status", "value", "threshold", "message", "figure"}
    assert set(c) >= {"texts", "map_points", "warnings", "n_truncated"}
    assert set(d["provenance"]) >= {"seeds", "settings", "executor", "generation"}
    assert d["ranking"] == ["ckpt-20k", "ckpt-35k"]


def test_wrong_schema_version_is_rejected(result):
    text = to_json(result).replace('"schema_version": 2', '"schema_version": 99')
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


def _groups(rng, n_groups, per_group, dim=64, noise=0.05):
    """Tight groups of vectors (cosine within a group about 0.9+), groups nearly orthogonal."""
    centres = rng.normal(size=(n_groups, dim))
    x = np.repeat(centres, per_group, axis=0) + noise * np.sqrt(dim) * rng.normal(size=(n_groups * per_group, dim)) / np.sqrt(dim) * 3
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _texts(n, seed):
    return healthy(n, seed)


def test_verdicts_tell_data_from_model():
    rng = np.random.default_rng(0)
    both = _groups(rng, 30, 16)
    in_base = np.arange(len(both)) % 16 < 12
    base_x, same_x = both[in_base], both[~in_base]  # the same homogeneous data, 12 and 4 per group
    sets = [SampleSet.from_texts(_texts(120, 3), name="like-data"), SampleSet.from_texts(_texts(120, 4), name="narrow")]
    narrow_x = base_x[rng.choice(36, 120)]  # answers drawn from 3 of the 30 groups only
    base = SampleSet.from_texts(_texts(360, 5), name="train")
    r = audit(sets, baseline=base, embeddings={"like-data": same_x, "narrow": narrow_x, "train": base_x})
    like, narrow = r.checkpoint("like-data").verdict, r.checkpoint("narrow").verdict
    assert r.baseline.similarity.fixed_threshold_share > 0.5  # the data is homogeneous in absolute terms
    assert like.kind == "data_homogeneous", like
    assert "data itself is this homogeneous" in like.message
    assert narrow.kind == "model_less_diverse", narrow
    assert narrow.figures["vendi_ratio"] < 0.5


def test_two_samples_of_the_same_distribution_are_within_noise():
    rng = np.random.default_rng(7)
    unit = lambda n: (lambda v: v / np.linalg.norm(v, axis=1, keepdims=True))(rng.normal(size=(n, 48)))  # noqa: E731
    sets = [SampleSet.from_texts(_texts(150, 10), name="a"), SampleSet.from_texts(_texts(150, 11), name="b")]
    base = SampleSet.from_texts(_texts(400, 12), name="train")
    r = audit(sets, baseline=base, embeddings={"a": unit(150), "b": unit(150), "train": unit(400)})
    assert {c.status for c in r.checkpoints} == {"pass"}
    (note,) = r.ranking_notes
    assert note.within_noise, note
    assert "within noise" in note.reason


def test_warns_when_the_baseline_is_smaller_than_a_checkpoint(hashing_embedder, result):
    sets = [SampleSet.from_texts(healthy(120, 3), name="big"), SampleSet.from_texts(healthy(40, 4), name="small")]
    r = audit(sets, baseline=SampleSet.from_texts(healthy(60, 5), name="train"), embedder=hashing_embedder)
    size = [w for w in r.all_warnings() if "baseline has only" in w]
    assert size == [w for w in size if w.startswith("big: 120 samples but the baseline has only 60")] and len(size) == 1
    assert not any("baseline has only" in w for w in result.all_warnings())  # 200 baseline texts, 80 samples


def test_warns_when_the_baseline_holds_exact_duplicates(hashing_embedder):
    texts = healthy(100, 6)
    duped = texts[:97] + [texts[0]] * 3  # 4 of 100 texts share one text: 4% > 2%
    sets = [SampleSet.from_texts(healthy(40, 7), name="ck")]
    r = audit(sets, baseline=SampleSet.from_texts(duped, name="train"), embedder=hashing_embedder)
    assert [w for w in r.warnings if "exact duplicate" in w] == [
        "train: 4% of the baseline's texts have an exact duplicate in it; duplicates raise its nearest-neighbour "
        "similarity and so the calibrated threshold, which makes collapse read milder: deduplicate the baseline"]
    few = texts[:99] + [texts[0]]  # 2 of 100: at the limit, no warning
    r = audit(sets, baseline=SampleSet.from_texts(few, name="train"), embedder=hashing_embedder)
    assert not any("exact duplicate" in w for w in r.warnings)


class _NamedHashing:
    """The hashing embedder under the default model's id, to exercise model-specific tables."""

    def __init__(self):
        from sampleaudit.embed.hashing import HashingEmbedder

        inner = HashingEmbedder(128)
        self.encode, self.dim, self.device = inner.encode, inner.dim, inner.device
        self.model_id = "sentence-transformers/all-MiniLM-L6-v2"


def test_warns_when_samples_are_in_a_script_the_embedder_does_not_know():
    zh = [f"模型在第{i}步之后开始重复同一句话，训练损失仍在下降。" for i in range(30)]
    en = [f"sample number {i} talks about something else entirely" for i in range(30)]
    # letterless samples (empty, numbers) are no reason to suggest another embedder
    blank = [""] * 20 + [str(i) for i in range(10)] + ["an English sample", "another English one"]
    sets = [SampleSet.from_texts(t, name=n) for t, n in [(zh, "zh"), (en, "en"), (blank, "blank")]]
    r = audit(sets, embedder=_NamedHashing())
    warnings = [w for w in r.all_warnings() if "script" in w]
    assert len(warnings) == 1 and warnings[0].startswith("zh: 100% of samples are in cjk script")
    assert "--embedder with a local model folder" in warnings[0] and "paraphrase" not in warnings[0]
    assert r.checkpoint("zh").similarity.threshold_source == "model_default"


def test_prompt_diversity_only_with_repeated_prompts(hashing_embedder):
    texts = healthy(40, 20)
    prompts = [f"prompt {i % 8}" for i in range(40)]
    with_prompts = SampleSet.from_texts(texts, name="p", prompts=prompts)
    without = SampleSet.from_texts(texts, name="q")
    r = audit([with_prompts, without], embedder=hashing_embedder)
    assert r.checkpoint("p").prompts.n_prompts == 8 and r.checkpoint("p").prompts.n_answers == 40
    assert r.checkpoint("q").prompts is None


def test_map_and_loops_in_results(result):
    assert len(result.map.baseline) == 200 and result.map.fitted_on == "baseline"
    assert len(result.checkpoint("ckpt-35k").map_points) == 80
    assert all(len(p) == 2 for p in result.checkpoint("ckpt-35k").map_points)


def test_identical_empty_samples_give_valid_json(hashing_embedder):
    import json

    r = audit([SampleSet.from_texts(["", "", ""], name="empty")], embedder=hashing_embedder)
    assert r.checkpoints[0].n_empty == 3
    from sampleaudit.pipeline import NO_BASELINE

    assert r.all_warnings() == [NO_BASELINE, "empty: 3 empty sample(s) (kept; they embed alike and raise similarity)"]
    text = to_json(r)
    json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} in audit.json"))
    assert from_json(text) == r


def test_repetition_check_messages_name_the_opening():
    from types import SimpleNamespace

    from sampleaudit.checks import run_checks

    def repetition_checks(rep, config):
        return run_checks(SimpleNamespace(similarity=None, coverage=None, repetition=rep), config)

    from sampleaudit.metrics.repetition import repetition_stats

    unique = repetition_checks(repetition_stats(["One start. A.", "Two start. B."]), Config())
    assert [c.message for c in unique if c.name == "repeated_openings"] == [
        "no opening starts more than one sample (not above the warn level 15%)"]
    shared = repetition_checks(repetition_stats(["Same start. A.", "Same start. B.", "Else. C."]), Config())
    opening = next(c for c in shared if c.name == "repeated_openings")
    assert opening.status == "fail" and opening.message == (
        "66.7% of samples open with \u201csame start\u201d (above the fail level 60%)")


def test_coverage_is_not_measured_where_the_embedder_cannot_read_the_script():
    """A Chinese baseline under an English-only embedder: its embedding clusters do not follow
    topics, so with coverage.representation "embedding" coverage says it cannot judge (no coverage
    check, a warning) instead of passing; by default ("auto") it clusters character n-grams."""
    poems = [f"床前明月光，疑是地上霜，第{i}首。" for i in range(40)]
    tech = [f"模型在第{i}步之后开始重复同一句话，训练损失仍在下降。" for i in range(40)]
    base = SampleSet.from_texts(poems + tech, name="train")
    narrow = SampleSet.from_texts(tech[:30], name="zh-narrow")
    forced = Config().with_overrides(**{"coverage.representation": "embedding"})
    r = audit([narrow], baseline=base, embedder=_NamedHashing(), cache=False, config=forced)
    c = r.checkpoint("zh-narrow")
    assert c.coverage is None and "coverage_ratio" not in [ch.figure for ch in c.checks]
    assert any("coverage not measured: 100% of the baseline are in cjk script" in w for w in c.warnings)
    auto = audit([narrow], baseline=base, embedder=_NamedHashing(), cache=False).checkpoint("zh-narrow")
    assert auto.coverage.representation == "lexical"
    assert "coverage_ratio" in [ch.figure for ch in auto.checks]
    english = audit([SampleSet.from_texts(healthy(30, 1), name="en")],
                    baseline=SampleSet.from_texts(healthy(80, 2), name="train"), embedder=_NamedHashing(), cache=False)
    assert english.checkpoint("en").coverage is not None
