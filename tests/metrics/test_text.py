"""Tokenizer, sentence splitter and openings of sampleaudit.metrics.text."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sampleaudit.errors import InputError
from sampleaudit.metrics.text import (
    _scan,
    ngram_keys,
    normalize_phrase,
    opening,
    sentence_spans,
    split_sentences,
    tokenize,
)

ANY_TEXT = st.one_of(
    st.text(max_size=300),
    st.text(alphabet=st.sampled_from(list("ab 。，\n.!?😀\u200d\u0301'’中文한글")), max_size=200),
    st.sampled_from(["", " ", "\x00", "\u202e\u05e9\u05dc\u05d5\u05dd", "مرحبا بالعالم", "👩‍👩‍👧‍👦" * 3]),
)


def test_latin_words_are_lowercased_and_punctuation_dropped():
    toks = tokenize("Hello, World! Don't stop-now.")
    assert toks.tokens == ["hello", "world", "don't", "stop", "now"]


def test_keep_punct_keeps_each_punctuation_character():
    assert tokenize("Hi, you.", keep_punct=True).tokens == ["hi", ",", "you", "."]
    assert tokenize("你好，世界。", keep_punct=True).tokens == ["你", "好", "，", "世", "界", "。"]


def test_chinese_japanese_korean_are_tokenised_by_character():
    assert tokenize("我们需要继续努力").tokens == list("我们需要继续努力")
    assert tokenize("こんにちはカタカナ").tokens == list("こんにちはカタカナ")
    assert tokenize("안녕하세요").tokens == list("안녕하세요")


def test_mixed_text_tokenises_each_part_by_its_rule():
    toks = tokenize("用 numpy 计算mean值, OK?")
    assert toks.tokens == ["用", "numpy", "计", "算", "mean", "值", "ok"]


def test_offsets_point_back_into_the_text():
    text = "Ünïcode café 3.14 — 中文 😀 ’tis"
    toks = tokenize(text)
    for tok, s, e in zip(toks.tokens, toks.starts, toks.ends):
        assert text[s:e].lower().replace("\u2019", "'") == tok or text[s:e] == tok


def test_symbols_and_emoji_are_tokens_and_marks_stay_with_their_base():
    assert tokenize("I ❤️ $5").tokens == ["i", "❤️", "$", "5"]
    assert tokenize("cafe\u0301 ok").tokens == ["cafe\u0301", "ok"]
    assert tokenize("हिन्दी भाषा").tokens == ["हिन्दी", "भाषा"]


def test_control_and_format_characters_are_dropped():
    assert tokenize("a\x00b\u200bc\x07").tokens == ["a", "b", "c"]


def test_token_ids_are_equal_exactly_for_equal_tokens():
    sc = _scan("The cat the CAT cat’s cat's 中 中")
    ids = sc.ids.tolist()
    assert ids[0] == ids[2] and ids[1] == ids[3] and ids[4] == ids[5] and ids[6] == ids[7]
    assert len({ids[0], ids[1], ids[4], ids[6]}) == 4


def test_numbers_are_flagged():
    sc = _scan("1 22 x3 ٤٥ 3.5")
    assert sc.is_number.tolist() == [True, True, False, True, True, True]


def test_sentences_split_on_chinese_and_latin_terminators():
    text = "你好。今天天气怎么样？很好！我们走吧；好 The value is 3.14 today. Really?! Yes\nNext line"
    assert split_sentences(text) == [
        "你好。", "今天天气怎么样？", "很好！", "我们走吧；", "好 The value is 3.14 today.", "Really?!",
        "Yes", "Next line",
    ]


def test_closing_quotes_stay_with_their_sentence():
    assert split_sentences('He said "stop." Then left.') == ['He said "stop."', "Then left."]
    assert split_sentences("他说：“走吧。”然后离开了。") == ["他说：“走吧。”", "然后离开了。"]


def test_sentence_spans_are_trimmed_and_skip_punctuation_only_pieces():
    text = "  One.  ...  Two!  "
    assert [text[s:e] for s, e in sentence_spans(text)] == ["One.", "Two!"]


def test_opening_is_the_normalised_first_sentence():
    assert opening("  SURE!  Here is how.") == "sure"
    assert opening("Sure,   here is how you do it. Step one.") == "sure, here is how you do it"
    assert opening("当然可以！下面是步骤。") == "当然可以"
    assert opening("ＦＵＬＬ width.") == "full width"


def test_opening_without_sentence_break_is_the_first_tokens():
    text = "one two three four five six seven eight nine ten eleven twelve"
    assert opening(text, max_tokens=4) == "one two three four"
    assert opening("我们需要继续努力工作下去没有句号", max_tokens=5) == "我们需要继"


def test_opening_of_empty_or_punctuation_only_text_is_empty():
    assert opening("") == ""
    assert opening("... !!!") == ""


def test_normalize_phrase_folds_case_width_space_and_edge_punctuation():
    assert normalize_phrase("  «Hello,   WORLD»!! ") == "hello, world"


def test_ngram_keys_match_exactly_equal_ngrams():
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 4, size=200)
    keys = ngram_keys(ids, 3)
    for n in (1, 2, 3):
        grams = [tuple(ids[i : i + n]) for i in range(len(ids) - n + 1)]
        k = keys[n - 1].tolist()
        assert len(k) == len(grams)
        by_gram = {}
        for g, key in zip(grams, k):
            by_gram.setdefault(g, set()).add(key)
        assert all(len(v) == 1 for v in by_gram.values())
        assert len({next(iter(v)) for v in by_gram.values()}) == len(by_gram)
    assert ngram_keys(np.array([5]), 3)[2].size == 0


@pytest.mark.parametrize("bad", [None, 3, b"bytes", ["list"]])
def test_non_str_input_raises_input_error(bad):
    with pytest.raises(InputError, match="must be a str"):
        tokenize(bad)
    with pytest.raises(InputError):
        split_sentences(bad)


@settings(max_examples=80, deadline=None)
@given(ANY_TEXT)
def test_tokens_are_ordered_disjoint_and_inside_the_text(text):
    toks = tokenize(text)
    assert len(toks.tokens) == len(toks.starts) == len(toks.ends)
    prev_end = 0
    for tok, s, e in zip(toks.tokens, toks.starts, toks.ends):
        assert prev_end <= s < e <= len(text)
        assert tok and not any(ch.isspace() for ch in text[s:e])
        prev_end = e
    for s, e in sentence_spans(text):
        assert 0 <= s < e <= len(text)
    assert isinstance(opening(text), str)


def test_long_text_tokenises():
    text = ("Long text with 中文 and emoji 😀. " * 4000)[:100_000]
    toks = tokenize(text)
    assert len(toks) > 10_000 and toks.ends[-1] <= len(text)
