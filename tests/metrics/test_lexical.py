"""Distinct-n, expectation-adjusted distinct-n and self-BLEU of sampleaudit.metrics.lexical."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

from sampleaudit.errors import InputError
from sampleaudit.metrics.lexical import (
    LexicalResult,
    _self_bleu_scores,
    lexical_diversity,
    sentence_bleu,
)
from sampleaudit.metrics.text import _scan, tokenize

ANY_TEXT = st.one_of(
    st.text(max_size=300),
    st.text(alphabet=st.sampled_from(list("ab c。，\n.!?😀'中文")), max_size=200),
    st.sampled_from(["", " ", "\x00\x01", "\u202e\u05e9\u05dc\u05d5\u05dd", "مرحبا بالعالم", "x"]),
)


def test_distinct_n_hand_case():
    r = lexical_diversity(["the cat sat", "the dog sat", "a bird flew"])
    # 9 unigrams, 7 distinct; 6 bigrams, all distinct (none spans two samples); 3 trigrams.
    assert r.distinct_1 == pytest.approx(7 / 9)
    assert r.distinct_2 == pytest.approx(1.0)
    assert r.distinct_3 == pytest.approx(1.0)
    assert r.n_tokens == 9 and r.n_samples == 3


def test_distinct_counts_chinese_characters():
    r = lexical_diversity(["好的好的", "好吧"])
    assert r.distinct_1 == pytest.approx(3 / 6)  # 好 的 吧 of 6 characters
    assert r.distinct_2 == pytest.approx(3 / 4)  # 好的 的好 好的 | 好吧


def test_ead_hand_case():
    v = 10
    r = lexical_diversity(["a b c d a"], ead_vocab_size=v)
    expected = v * (1 - ((v - 1) / v) ** 5)
    assert r.ead_1 == pytest.approx(4 / expected)
    assert r.ead_vocab_size == v


def test_ead_is_not_skewed_by_length_where_distinct_is():
    rng = np.random.default_rng(0)
    vocab = [f"w{i}" for i in range(5000)]

    def sample(n_words: int) -> list[str]:
        return [" ".join(rng.choice(vocab, size=n_words)) for _ in range(20)]

    short, long = lexical_diversity(sample(20), ead_vocab_size=5000), lexical_diversity(
        sample(400), ead_vocab_size=5000
    )
    assert long.distinct_1 < 0.7 * short.distinct_1  # distinct-1 falls with length
    assert long.ead_1 == pytest.approx(short.ead_1, rel=0.05)  # ead does not
    assert long.ead_1 == pytest.approx(1.0, rel=0.05)


def test_sentence_bleu_hand_case():
    hyp = "the cat sat on the mat".split()
    ref = "the cat sat on a mat".split()
    # clipped precisions 5/6, 3/5, 2/4, 1/3; equal lengths, so no brevity penalty
    expected = (5 / 6 * 3 / 5 * 2 / 4 * 1 / 3) ** 0.25
    assert sentence_bleu(hyp, [ref]) == pytest.approx(expected)


def test_sentence_bleu_smoothing_and_brevity_penalty():
    # no 4-gram match: method 1 puts epsilon / 1 in its place
    expected = (3 / 4 * 2 / 3 * 1 / 2 * 0.1 / 1) ** 0.25
    assert sentence_bleu(list("abcd"), [list("abce")]) == pytest.approx(expected)
    # hypothesis shorter than the closest reference: exp(1 - r / c)
    assert sentence_bleu(list("ab"), [list("abcd")]) == pytest.approx(
        math.exp(1 - 4 / 2) * (1 * 1 * 0.1 * 0.1) ** 0.25
    )
    assert sentence_bleu(list("xyz"), [list("abc")]) == 0.0  # no unigram match
    assert sentence_bleu(list("abc"), [list("abc")]) == pytest.approx((1 * 1 * 1 * 0.1) ** 0.25)
    assert sentence_bleu([], [list("abc")]) == 0.0


def test_vectorised_self_bleu_equals_the_reference_implementation():
    rng = random.Random(3)
    words = "the a cat dog sat ran on under mat tree quickly".split()
    toks = [[rng.choice(words) for _ in range(rng.randrange(1, 14))] for _ in range(40)]
    toks += [toks[0], list("x")]
    fast = _self_bleu_scores([_scan(" ".join(t)).ids for t in toks], 4, 0.1)
    for j, hyp in enumerate(toks):
        refs = toks[:j] + toks[j + 1 :]
        assert fast[j] == pytest.approx(sentence_bleu(hyp, refs), abs=1e-12)


def test_self_bleu_extremes():
    same = lexical_diversity(["the same answer every time"] * 10)
    assert same.self_bleu == pytest.approx(1.0)
    assert same.distinct_1 == pytest.approx(5 / 50)
    disjoint = lexical_diversity([f"alpha{i} beta{i} gamma{i} delta{i}" for i in range(10)])
    assert disjoint.self_bleu == 0.0


def test_self_bleu_subsample_is_seeded_and_capped():
    texts = [f"sample {i} talks about topic {i % 7} and more" for i in range(50)]
    a = lexical_diversity(texts, self_bleu_sample=10, seed=1)
    b = lexical_diversity(texts, self_bleu_sample=10, seed=1)
    c = lexical_diversity(texts, self_bleu_sample=10, seed=2)
    assert a == b and a.self_bleu_n == 10
    assert c.self_bleu != a.self_bleu
    assert lexical_diversity(texts).self_bleu_n == 50


def test_figures_do_not_depend_on_sample_order():
    rng = random.Random(0)
    texts = [f"answer {i % 13}: the model says {'yes' if i % 3 else 'no'} about item {i}" for i in range(300)]
    texts += ["中文回答第%d条，内容差不多。" % (i % 5) for i in range(40)]
    base = lexical_diversity(texts, self_bleu_sample=50)
    shuffled = texts[:]
    rng.shuffle(shuffled)
    assert lexical_diversity(shuffled, self_bleu_sample=50) == base


def test_empty_input():
    empty = lexical_diversity([])
    assert empty.n_samples == 0 and empty.distinct_1 is None and empty.ead_1 is None
    assert empty.self_bleu is None and empty.self_bleu_n == 0
    blank = lexical_diversity(["", " ", "!!!"])
    assert blank.n_tokens == 0 and blank.distinct_1 is None and blank.self_bleu is None
    one = lexical_diversity(["only one sample here"])
    assert one.self_bleu is None and one.distinct_1 == 1.0
    short = lexical_diversity(["a", "b"])
    assert short.distinct_2 is None and short.distinct_1 == 1.0


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"self_bleu_sample": 1}, "self_bleu_sample"),
        ({"seed": -1}, "seed"),
        ({"ead_vocab_size": 1}, "ead_vocab_size"),
        ({"seed": 1.5}, "seed"),
    ],
)
def test_bad_options_raise_input_error(kwargs, match):
    with pytest.raises(InputError, match=match):
        lexical_diversity(["a b"], **kwargs)


@pytest.mark.parametrize("texts", ["not a list", [None], [b"bytes"]])
def test_bad_texts_raise_input_error(texts):
    with pytest.raises(InputError):
        lexical_diversity(texts)


def test_sentence_bleu_rejects_strings():
    with pytest.raises(InputError, match="token lists"):
        sentence_bleu("a b c", ["a b c"])


def test_result_round_trips_through_json():
    r = lexical_diversity(["one two three", "two three four", "三四五"])
    adapter = TypeAdapter(LexicalResult)
    assert adapter.validate_json(adapter.dump_json(r)) == r


@settings(max_examples=60, deadline=None)
@given(st.lists(ANY_TEXT, max_size=8))
def test_no_text_crashes_and_figures_are_bounded(texts):
    r = lexical_diversity(texts)
    assert r.n_samples == len(texts)
    assert r.n_tokens == sum(len(tokenize(t)) for t in texts)
    for d in (r.distinct_1, r.distinct_2, r.distinct_3):
        assert d is None or 0.0 < d <= 1.0
    for e in (r.ead_1, r.ead_2, r.ead_3):
        assert e is None or e > 0.0
    assert r.self_bleu is None or 0.0 <= r.self_bleu <= 1.0 + 1e-12


def test_hundred_thousand_characters():
    texts = [("Long text 长文本 😀 " * 7000)[:100_000], "".join(chr(0x4E00 + i % 20000) for i in range(100_000))]
    r = lexical_diversity(texts)
    assert r.n_tokens > 100_000 and 0.0 <= r.self_bleu <= 1.0
