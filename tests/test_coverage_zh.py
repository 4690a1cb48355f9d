"""Coverage on a script the embedder was not trained on: character n-gram clusters (lexical), or
"not measured" where neither representation can judge.

The Chinese set (tests/data/coverage_zh, built by build_coverage_zh.py from real reviews and
news) has a baseline of ten kinds of text, a healthy checkpoint drawn from all ten and a narrow one
drawn from three. With coverage.representation "lexical" the partition does not depend on the
embeddings, so the hashing embedder stands in for the model here; the model id is the default
model's, whose training scripts (latin) decide the automatic choice.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from sklearn.decomposition import TruncatedSVD
from sklearn.feature_extraction.text import TfidfVectorizer

from sampleaudit import audit_checkpoint, fit_reference, load_reference
from sampleaudit.config import Config
from sampleaudit.embed import embed_texts
from sampleaudit.embed.hashing import HashingEmbedder
from sampleaudit.metrics import charspace
from sampleaudit.metrics.charspace import fit_char_space
from sampleaudit.results import EmbedderInfo
from sampleaudit.samples import SampleSet, load_samples

DATA = Path(__file__).parent / "data" / "coverage_zh"
EMB = HashingEmbedder(128)
MINILM = EmbedderInfo("sentence-transformers/all-MiniLM-L6-v2", EMB.dim, "cpu", "float32")


def _load(name):
    return load_samples(DATA / f"{name}.jsonl")


@pytest.fixture(scope="module")
def zh():
    sets = {n: _load(n) for n in ("baseline", "healthy", "narrow")}
    return sets, {n: embed_texts(s.texts, EMB) for n, s in sets.items()}


@pytest.fixture(scope="module")
def zh_reference(zh):
    sets, emb = zh
    return fit_reference(sets["baseline"], emb["baseline"], Config(), embedder=MINILM)


def _kinds(name):
    return [json.loads(line)["kind"] for line in (DATA / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()]


def test_the_set_is_what_its_builder_says():
    assert len(set(_kinds("baseline"))) == 10 and len(set(_kinds("healthy"))) == 10
    assert sorted(set(_kinds("narrow"))) == ["army", "economy", "hotel"]
    texts = [set(_load(n).texts) for n in ("baseline", "healthy", "narrow")]
    assert not (texts[0] & texts[1]) and not (texts[0] & texts[2]) and not (texts[1] & texts[2])


def test_a_chinese_baseline_is_clustered_by_character_ngrams_and_a_narrow_checkpoint_loses_coverage(zh, zh_reference):
    sets, emb = zh
    ref = zh_reference
    assert ref.representation == "lexical"
    assert ref.representation_reason.startswith("100% of the baseline is in cjk script")
    healthy = audit_checkpoint(sets["healthy"], emb["healthy"], ref, ref.config)
    narrow = audit_checkpoint(sets["narrow"], emb["narrow"], ref, ref.config)
    assert healthy.coverage.representation == narrow.coverage.representation == "lexical"
    # ten kinds in ten clusters: the healthy checkpoint covers them all, the narrow one (three
    # kinds) about three in ten
    assert healthy.coverage.coverage_ratio >= 0.9
    assert narrow.coverage.coverage_ratio <= 0.4
    assert narrow.coverage.coverage_ratio_interval.high < healthy.coverage.coverage_ratio_interval.low
    assert {c.figure: c.status for c in narrow.checks}["coverage_ratio"] == "fail"
    assert {c.figure: c.status for c in healthy.checks}["coverage_ratio"] == "pass"
    summary = ref.result(150).coverage
    assert summary.representation == "lexical" and summary.representation_reason == ref.representation_reason


def test_the_clusters_follow_the_kinds_of_text(zh_reference):
    ref = zh_reference
    kinds = np.array(_kinds("baseline"))
    labels = ref.clusters.labels
    # each cluster is mostly one or two kinds (economy and farming news share a vocabulary)
    purity = [max(np.mean(kinds[labels == k] == kd) for kd in set(kinds[labels == k]))
              for k in range(ref.clusters.n_clusters)]
    assert np.mean(purity) >= 0.6, purity


def test_forcing_embeddings_on_a_chinese_baseline_says_coverage_is_not_measured(zh):
    sets, emb = zh
    config = Config().with_overrides(**{"coverage.representation": "embedding"})
    ref = fit_reference(sets["baseline"], emb["baseline"], config, embedder=MINILM)
    assert ref.representation == "embedding" and ref.char_space is None
    result = audit_checkpoint(sets["narrow"], emb["narrow"], ref, config)
    assert result.coverage is None
    assert "coverage_ratio" not in {c.figure for c in result.checks}
    [warning] = [w for w in result.warnings if "coverage not measured" in w]
    assert "100% of the baseline are in cjk script" in warning and 'coverage.representation = "lexical"' in warning


def test_an_english_baseline_keeps_the_embeddings():
    texts = [f"note {i}: the {w} measured {v} on the red planet" for i, (w, v) in
             enumerate(zip(["rover", "probe", "lander", "orbiter"] * 10, ["dust", "wind", "ice", "rock", "heat"] * 8))]
    base = SampleSet.from_texts(texts, name="train")
    ref = fit_reference(base, embed_texts(base.texts, EMB), Config(), embedder=MINILM)
    assert ref.representation == "embedding" and ref.char_space is None and ref.representation_reason is None


def test_a_checkpoint_in_another_script_than_a_lexical_baseline_is_not_measured(zh, zh_reference):
    english = SampleSet.from_texts([f"the rover measured dust storm number {i} on the red planet" for i in range(40)],
                                   name="en")
    result = audit_checkpoint(english, embed_texts(english.texts, EMB), zh_reference, zh_reference.config)
    assert result.coverage is None
    assert any("coverage not measured: 100% of the texts are in latin script but the baseline is in cjk" in w
               for w in result.warnings)


def test_a_mostly_english_baseline_with_a_chinese_minority_warns(zh):
    sets, _ = zh
    english = [f"note {i}: the {w} measured {v} on the red planet" for i, (w, v) in
               enumerate(zip(["rover", "probe", "lander", "orbiter"] * 30, ["dust", "wind", "ice", "rock", "heat"] * 24))]
    base = SampleSet.from_texts(english + list(sets["baseline"].texts[:60]), name="mixed")
    ref = fit_reference(base, embed_texts(base.texts, EMB), Config(), embedder=MINILM)
    assert ref.representation == "embedding"
    assert any("33% of the baseline's texts are in a script" in w for w in ref.warnings), ref.warnings


def test_a_saved_lexical_reference_gives_the_same_coverage(tmp_path, zh, zh_reference):
    sets, emb = zh
    path = zh_reference.save(tmp_path / "ref.npz")
    with np.load(path, allow_pickle=False) as data:  # plain arrays only, no pickled objects
        assert {"char_space.idf", "char_space.components"} <= set(data.files)
    loaded = load_reference(path)
    assert loaded.representation == "lexical"
    a = audit_checkpoint(sets["narrow"], emb["narrow"], zh_reference, zh_reference.config)
    b = audit_checkpoint(sets["narrow"], emb["narrow"], loaded, loaded.config)
    assert a.coverage == b.coverage


def test_the_char_space_is_tfidf_of_character_ngrams_then_svd():
    texts = ["酒店房间很干净", "房间很小但是干净", "这本书的作者很好", "作者写的这本书", "键盘和屏幕都不错", "屏幕很亮键盘很好"]
    space = fit_char_space(texts, seed=3)
    reference = TfidfVectorizer(analyzer="char", ngram_range=charspace.NGRAM_RANGE, sublinear_tf=True,
                                min_df=charspace.MIN_DF, max_features=charspace.MAX_FEATURES)
    x = reference.fit_transform(texts)
    assert space.vocabulary == list(reference.get_feature_names_out())
    np.testing.assert_allclose(space.tfidf(texts).toarray(), x.toarray(), atol=1e-12)
    svd = TruncatedSVD(n_components=space.dim, random_state=3, n_iter=7).fit(x)
    z = x @ svd.components_.T
    np.testing.assert_allclose(space.transform(texts), z / np.linalg.norm(z, axis=1, keepdims=True), atol=1e-5)
    # the topics separate: each text is nearest to its own pair
    v = space.transform(texts)
    sim = v @ v.T - 2 * np.eye(len(texts))
    assert list(sim.argmax(axis=1)) == [1, 0, 3, 2, 5, 4]
    # a text with no known n-gram gets a unit row, not NaN
    assert np.isclose(np.linalg.norm(space.transform(["xyz"])), 1.0)
