"""Cluster labels by class-based TF-IDF (sampleaudit.metrics.labels)."""

import numpy as np
import pytest

from sampleaudit.errors import InputError
from sampleaudit.metrics.labels import cluster_terms, label, terms

GENOMICS = ["plasmid sequencing of the genome", "the genome assembly used a plasmid vector",
            "sequencing reads mapped to the genome", "plasmid cloning before sequencing"]
MUSIC = ["the violin sonata opens slowly", "a sonata for violin and piano", "violin concerto and a sonata",
         "the orchestra played the sonata"]


def test_each_cluster_is_named_by_its_distinctive_terms():
    texts = GENOMICS + MUSIC + ["the the the of and"]
    out = cluster_terms(texts, [0] * 4 + [1] * 4 + [-1], 2)
    assert out[0] == ["genome", "plasmid", "sequencing"]
    assert out[1][:2] == ["sonata", "violin"]
    assert label(out[0]) == "genome / plasmid / sequencing"


def test_a_term_shared_by_every_cluster_ranks_below_distinctive_ones():
    texts = ["shared alpha alpha", "shared alpha beta", "shared gamma gamma", "shared gamma delta"]
    out = cluster_terms(texts, [0, 0, 1, 1], 2, n_terms=1)
    assert out == [["alpha"], ["gamma"]]


def test_a_single_texts_quirk_does_not_name_its_cluster():
    texts = ["genome plasmid zebrafish", "genome plasmid", "genome plasmid"]
    assert "zebrafish" not in cluster_terms(texts, [0, 0, 0], 1, n_terms=3)[0]


def test_chinese_clusters_get_character_pair_terms():
    texts = ["模型输出坍缩了", "模型输出重复了", "床前明月光", "举头望明月"]
    out = cluster_terms(texts, [0, 0, 1, 1], 2, n_terms=2)
    assert len(out[0]) == 2 and set(out[0]) <= {"模型", "型输", "输出"}  # in both texts of the cluster
    assert out[1] == ["明月"]
    assert terms("模 型") == [] and terms("模型 的") == ["模型"]  # only adjacent characters make a pair


def test_order_of_rows_does_not_matter():
    texts = GENOMICS + MUSIC
    labels = [0] * 4 + [1] * 4
    perm = np.random.default_rng(0).permutation(8)
    assert cluster_terms(texts, labels, 2) == cluster_terms([texts[i] for i in perm], [labels[i] for i in perm], 2)


def test_degenerate_input():
    assert cluster_terms(["1 2 3", "a b"], [0, 1], 2) == [[], []]
    assert cluster_terms(["x"], [-1], 1) == [[]]
    with pytest.raises(InputError, match="same length"):
        cluster_terms(["a"], [0, 1], 2)
