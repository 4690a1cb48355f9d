"""Loop detection, repetition scores and openings of sampleaudit.metrics.repetition."""

from __future__ import annotations

import json
import random
import zlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

from sampleaudit.errors import InputError
from sampleaudit.metrics.repetition import (
    Loop,
    RepetitionResult,
    ScoreDistribution,
    detect_loop,
    repetition_stats,
)
from sampleaudit.metrics.text import tokenize

DATA = Path(__file__).resolve().parents[1] / "data"

ANY_TEXT = st.one_of(
    st.text(max_size=400),
    st.text(alphabet=st.sampled_from(list("ab c。，\n.!?😀\u200d'中文")), max_size=300),
    st.builds(lambda w, n: (w + " ") * n, st.sampled_from(["go on", "好的，", "x", "😀"]), st.integers(0, 60)),
    st.sampled_from(["", " ", "\x00\x01\x02", "\u202e\u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc\u05dd",
                     "مرحبا بالعالم. مرحبا بالعالم. مرحبا بالعالم.", "a", "\n\n\n"]),
)


def _load(name: str) -> list[dict]:
    with open(DATA / name, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


# --- hand-computed scores --------------------------------------------------------------------


def test_seq_rep_hand_cases():
    r = repetition_stats(["a b c a b c"])
    assert r.seq_rep["1"].mean == pytest.approx(0.5)
    assert r.seq_rep["2"].mean == pytest.approx(0.4)
    assert r.seq_rep["3"].mean == pytest.approx(0.25)
    assert r.seq_rep["4"].mean == pytest.approx(0.0)
    assert repetition_stats(["the the the the"]).seq_rep["1"].mean == pytest.approx(0.75)


def test_seq_rep_counts_chinese_characters():
    assert repetition_stats(["好的好的"]).seq_rep["1"].mean == pytest.approx(0.5)
    assert repetition_stats(["好的好的"]).seq_rep["2"].mean == pytest.approx(1 - 2 / 3)


def test_seq_rep_of_a_too_short_sample_is_zero():
    r = repetition_stats(["one two"])
    assert r.seq_rep["3"].mean == 0.0 and r.seq_rep["4"].n == 1


def test_compression_ratio_is_zlib_size_over_utf8_size():
    texts = ["hello world " * 20, "短文本"]
    r = repetition_stats(texts + [""])
    expected = [len(zlib.compress(t.encode(), 9)) / len(t.encode()) for t in texts]
    assert r.compression_ratio.n == 2  # the empty sample has no ratio
    assert r.compression_ratio.mean == pytest.approx(sum(expected) / 2)
    assert r.compression_ratio.max == pytest.approx(max(expected))


def test_dup_ngram_char_share_hand_case():
    # "one two three four five" occurs twice: 10 of 11 words (38 of 41 letters) are inside it.
    r = repetition_stats(["one two three four five one two three four five six"])
    assert r.dup_ngram_char_share["5"].mean == pytest.approx(38 / 41)
    assert r.dup_ngram_char_share["6"].mean == 0.0
    assert set(r.dup_ngram_char_share) == {"5", "6", "7", "8", "9", "10"}


def test_distribution_summary():
    r = repetition_stats(["a a", "a b", "a a a a", "a b c d"])
    d = r.seq_rep["1"]  # per sample: 0.5, 0.0, 0.75, 0.0
    assert d == ScoreDistribution(n=4, mean=pytest.approx(1.25 / 4), p50=pytest.approx(0.25),
                                  p90=pytest.approx(0.675), max=0.75)


# --- loops, hand cases -----------------------------------------------------------------------


def test_loop_after_a_prefix():
    text = "Sure, here you go. " + "I will try again later. " * 6
    loop = detect_loop(text)
    end = len(text) - 2  # the end of the last token, "later"; punctuation is not a token
    assert loop == Loop(unit="I will try again later.", n_repeats=6, unit_tokens=5,
                        start_char=19, end_char=end, coverage_share=pytest.approx((end - 19) / end))
    assert text[loop.start_char : loop.end_char].startswith("I will")


def test_loop_cut_off_mid_repeat():
    text = "Intro. " + "the cat sat on the mat and looked around, " * 5 + "the cat sat on the m"
    loop = detect_loop(text)
    assert loop is not None and loop.n_repeats == 5 and loop.unit.startswith("the cat sat")
    assert loop.end_char > len(text) - 10  # the cut-off copy is covered


def test_loop_of_chinese_clause_repeated_ten_times():
    loop = detect_loop("我们需要继续努力，" * 10)
    assert loop is not None
    assert (loop.unit, loop.n_repeats, loop.unit_tokens, loop.start_char) == ("我们需要继续努力，", 10, 8, 0)
    assert loop.coverage_share == 1.0


def test_loop_with_small_variation_between_copies():
    s = "I have checked the configuration file again and it looks good to me."
    copies = [s, s, s.replace("good", "great"), s, s, s.replace("again", "once more"), s]
    loop = detect_loop(" ".join(copies))
    assert loop is not None and loop.n_repeats >= 6 and loop.unit == s


def test_loop_with_counter_numbers():
    text = " ".join(f"Attempt {i} failed because the connection was reset." for i in range(1, 12))
    loop = detect_loop(text)
    assert loop is not None and loop.n_repeats == 11


def test_primitive_unit_is_reported():
    loop = detect_loop("ha ho " * 30)
    assert loop is not None and loop.unit_tokens == 2 and loop.unit == "ha ho"


@pytest.mark.parametrize(
    "text",
    [
        "It was very, very good, and we were really, really happy.",
        "No, no, no, that is not what I meant.",
        "哈哈哈哈，这个笑话太好笑了。",
        # a refrain sung twice
        "Oh the river runs slow, and the river runs wide, and I'll meet you on the other side.\n"
        "Oh the river runs slow, and the river runs wide, and I'll meet you on the other side.",
        # parallel list items
        "To set up:\n- Install the numpy package.\n- Install the scipy package.\n"
        "- Install the pandas package.\n- Install the torch package.\n- Install the jax package.",
        # anaphora
        "We will build schools, we will build roads, we will build hospitals, we will build homes, "
        "and we will build a future.",
        "我爱春天的花，我爱夏天的雨，我爱秋天的月，我爱冬天的雪。",
        # counting, a table of figures, a separator line
        ", ".join(str(i) for i in range(30, 0, -1)),
        "| run | score |\n" + "".join(f"| run {i} | {i * 37 % 100} |\n" for i in range(15)),
        "Results\n" + "=" * 60 + "\nAll good.",
    ],
)
def test_legitimate_repetition_is_not_a_loop(text):
    assert detect_loop(text) is None


def test_short_loop_inside_long_text_is_not_a_loop():
    text = "A long clean paragraph about gardens and rivers and trains. " * 1 + " ".join(
        f"Sentence number {w} talks about a different topic entirely." for w in
        ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]
    )
    chant = " go team go team go team go team go team go team go team go team "
    middle = text[:300] + chant + text[300:]
    assert detect_loop(middle) is None  # the text goes on after the copies (tail share)
    loop = detect_loop(middle, min_tail_share=0.0, min_coverage=0.05)
    assert loop is not None and loop.unit == "go team" and loop.n_repeats == 8
    tail = text + chant
    assert detect_loop(tail) is None  # 8 copies at the end cover under 10% of the text
    assert detect_loop(tail, min_coverage=0.05) is not None


def test_rule_options_change_the_decision():
    text = "I like it. " * 3
    assert detect_loop(text) is None  # a 3-token unit needs 4 copies
    assert detect_loop(text + "I like it.") is not None
    assert detect_loop(text, min_short_repeats=3) is not None
    assert detect_loop(text, short_unit_tokens=2) is not None  # then 3 copies (min_repeats) do
    assert detect_loop(text, min_short_repeats=3, min_repeats=4) is None
    assert detect_loop("the " * 15) is None and detect_loop("the " * 16) is not None
    assert detect_loop("the " * 8, min_single_repeats=8) is not None


# --- loops, the shapes of short and varied loops ------------------------------------------------


@pytest.mark.parametrize(
    "text, unit, repeats",
    [
        ("We were tired ... and then we went and then we went and then we went and then we went "
         "and then we went", "and then we went", 5),
        ("I asked him whether he would come. Why not? Why not? Why not? Why not? Why not?", "Why not?", 5),
        ("Thanks for reading this issue.\n-- The Editors\n-- The Editors\n-- The Editors\n-- The Editors",
         "The Editors", 4),
        ("他说完就走了。为什么呢？为什么呢？为什么呢？为什么呢？", "为什么呢？", 4),
        ("床前明月光，疑是地上霜。\n——李白\n——李白\n——李白\n——李白", "李白", 4),
    ],
)
def test_short_unit_repeated_four_times_at_the_end_is_a_loop(text, unit, repeats):
    loop = detect_loop(text)
    assert loop is not None and loop.n_repeats == repeats and loop.unit == unit
    assert text[loop.start_char : loop.end_char].rstrip("?？").endswith(unit.rstrip("?？")[-3:])


@pytest.mark.parametrize(
    "text",
    [
        "I asked him whether he would come. Why not? Why not? Why not?",  # 3 copies of a short unit
        "The temple of the LORD, The temple of the LORD, The temple of the LORD, are these.",
        "Holy, holy, holy, is the LORD of hosts.",
        "房间超大，不是一般的大。哈哈哈哈哈哈哈哈哈哈",  # laughter: one character, 10 times
        "只要你是非常非常非常想要得到的，就得去追寻。",
        "服务还不错，但是房间空气依然非常差非常差非常差得不能接受！！！",
    ],
)
def test_emphasis_and_short_repeats_are_not_loops(text):
    assert detect_loop(text) is None


def test_copies_that_drop_or_swap_words_in_every_second_copy_are_a_loop():
    drop = "Well then. and then we went and we went and then we went and we went and then we went"
    swap = "So it goes. the way of righteousness the of way righteousness the way of righteousness " \
           "way the of righteousness the way of righteousness"
    for text in (drop, swap):
        loop = detect_loop(text)
        assert loop is not None and loop.n_repeats == 5, text
    assert detect_loop(drop).unit == "and then we went"
    assert detect_loop(swap).unit == "the way of righteousness"
    zh = "这家酒店不错。路的房间路的间房路的房间路房的间路的房间"
    loop = detect_loop(zh)
    assert loop is not None and loop.unit == "路的房间" and loop.n_repeats == 5


def test_partial_last_copy_is_covered_not_counted():
    text = "Commit thy works unto the LORD, " + "and thy thoughts shall be established " * 4 + "and thy thou"
    loop = detect_loop(text)
    assert loop is not None and loop.n_repeats == 4 and loop.end_char == len(text)
    alt = ("I'll go find out what they want find out what want they find out what they want "
           "out find what they want find out what they w")
    loop = detect_loop(alt)
    assert loop is not None and loop.n_repeats == 4 and loop.end_char == len(alt)


@pytest.mark.parametrize(
    "text",
    [
        # a parallel list of product names (the shape of the demo baseline's false positive)
        "The following fonts from the Mondulkiri family are included: Khmer Mondulkiri Regular; Khmer "
        "Mondulkiri Bold; Khmer Mondulkiri Italic; Khmer Busra Regular; Khmer Busra Bold; Khmer Busra "
        "Italic; Khmer Busra Bold Italic.",
        "Supported radios: Icom IC-705 HF SDR Amateur Radio; Icom IC-7300 HF SDR Amateur Radio; Icom "
        "IC-7610 HF SDR Amateur Radio; Icom IC-9700 HF SDR Amateur Radio.",
        # versions count up, but they are a list
        "\n".join(f"Classifier: Programming Language :: Python :: 3.{v}" for v in range(8, 15)),
        # a line four times in the middle of a song, the song going on after it
        "Hold on, the night is nearly done,\n" * 4 + "Morning comes quietly over the hill,\nthe kettle is "
        "singing, the valley is still.\nYesterday's worries are scattered like leaves,\ncaught in the "
        "wind as it runs through the eaves.\n",
        # a refrain with text between the copies
        "O give thanks unto the LORD; for he is good: for his mercy endureth for ever. O give thanks "
        "unto the God of gods: for his mercy endureth for ever. O give thanks to the Lord of lords: "
        "for his mercy endureth for ever. To him who alone doeth great wonders: for his mercy "
        "endureth for ever.",
        # code and a table with regular structure, numbered steps
        "ENDMARKER = 0\nNAME = 1\nNUMBER = 2\nSTRING = 3\nNEWLINE = 4\nINDENT = 5\nDEDENT = 6",
        "def_op('POP_TOP', 1)\ndef_op('PUSH_NULL', 2)\ndef_op('NOP', 9)\ndef_op('UNARY_POSITIVE', 10)",
        "| 标题 | 作者 | 体裁 |\n|---|---|---|\n| 静夜思 | 李白 | 五言 |\n| 登鹳雀楼 | 王之涣 | 五言 |\n"
        "| 春晓 | 孟浩然 | 五言 |\n| 悯农 | 李绅 | 五言 |",
        "1. Open the File menu and select the default option.\n2. Open the Edit menu and select the "
        "default option.\n3. Open the View menu and select the default option.\n4. Open the Tools "
        "menu and select the default option.",
    ],
)
def test_lists_refrains_code_and_tables_are_not_loops(text):
    assert detect_loop(text) is None


def test_counter_in_otherwise_equal_copies_is_a_loop():
    text = "Here is what to do:\n" + "\n".join(f"{i}. Drink water." for i in range(1, 9))
    loop = detect_loop(text)
    assert loop is not None and loop.n_repeats == 8


# --- labelled sets ---------------------------------------------------------------------------


def _precision_recall(rows: list[dict]) -> tuple[float, float, RepetitionResult]:
    result = repetition_stats([r["text"] for r in rows], [r["id"] for r in rows], max_loops_listed=10_000)
    predicted = set(result.loop_ids)
    actual = {r["id"] for r in rows if r["looped"]}
    tp = len(predicted & actual)
    return tp / max(1, len(predicted)), tp / max(1, len(actual)), result


def _same_up_to_rotation(a: list[str], b: list[str]) -> bool:
    return len(a) == len(b) and any(a[i:] + a[:i] == b for i in range(len(a)))


NEGATIVE_KINDS = {"refrain_with_text_between", "phrase_said_twice", "parallel_list", "emphasis",
                  "code_regular", "table", "numbered_steps"}
POSITIVE_KINDS = {"short_unit_tail", "short_sentence_tail", "attribution_lines", "varied_alternate",
                  "partial_last_copy"}


@pytest.mark.parametrize("name, min_size", [("loops_en.jsonl", 600), ("loops_zh.jsonl", 300)])
def test_labelled_set_precision_and_recall(name, min_size):
    rows = _load(name)
    assert len(rows) >= min_size
    kinds = {r["kind"] for r in rows if not r["looped"]}
    assert {"refrain_twice", "parallel_list", "emphasis", "anaphora"} <= kinds
    precision, recall, result = _precision_recall(rows)
    assert precision >= 0.95, f"precision {precision:.3f}"
    assert recall >= 0.95, f"recall {recall:.3f}"
    # The reported unit is the generated one (up to where the loop starts inside it).
    units = {r["id"]: r["unit"] for r in rows if "unit" in r}
    found = {rec.id: rec.unit for rec in result.loops if rec.id in units}

    def norm(t):
        return ["0" if w.isdigit() else w for w in tokenize(t).tokens]

    same = sum(_same_up_to_rotation(norm(found[i]), norm(units[i])) for i in found)
    assert same >= 0.9 * len(units)


@pytest.mark.parametrize("name", ["loops_en.jsonl", "loops_zh.jsonl"])
def test_labelled_real_text_rows(name):
    """The rows built from real text (they name their "source"): every shape of the issue, and
    P and R >= 0.95 on them alone."""
    rows = [r for r in _load(name) if "source" in r]
    assert len(rows) >= 200
    assert NEGATIVE_KINDS <= {r["kind"] for r in rows if not r["looped"]}
    assert POSITIVE_KINDS <= {r["kind"] for r in rows if r["looped"]}
    precision, recall, _ = _precision_recall(rows)
    assert precision >= 0.95, f"precision {precision:.3f}"
    assert recall >= 0.95, f"recall {recall:.3f}"


def test_labelled_set_offsets_point_at_the_loop():
    rows = [r for r in _load("loops_en.jsonl") if r["looped"]][:40]
    for r in rows:
        loop = detect_loop(r["text"])
        assert loop is not None
        looped_part = r["text"][loop.start_char : loop.end_char]
        assert looped_part.count(loop.unit[:10]) >= 2


# --- openings --------------------------------------------------------------------------------


def _opening_set(lang: str, n: int = 200, share: float = 0.6, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    if lang == "en":
        same = ["Sure! Here is the answer.", "sure!  Here's what I found.", "SURE. Let me explain.",
                "Sure.\nFirst, some context."]
        other = [f"Answer number {i} starts differently. Then it goes on." for i in range(n)]
    else:
        same = ["当然可以！下面是答案。", "当然可以。我来解释一下。", "当然可以！！首先看背景。"]
        other = [f"第{i}个回答的开头不一样。然后继续。" for i in range(n)]
    k = round(share * n)
    texts = [rng.choice(same) for _ in range(k)] + other[: n - k]
    rng.shuffle(texts)
    return texts


@pytest.mark.parametrize("lang, top", [("en", "sure"), ("zh", "当然可以")])
def test_opening_top_share_is_measured(lang, top):
    r = repetition_stats(_opening_set(lang))
    assert r.opening_top_share == pytest.approx(0.60, abs=0.02)
    assert r.opening_top_text == top
    assert [o.count for o in r.openings] == [120]  # the other 80 openings are each unique


def test_openings_without_sentence_break_use_first_tokens():
    texts = ["one two three four five six seven eight nine ten eleven " + w for w in "abc"]
    r = repetition_stats(texts, opening_tokens=10)
    assert r.opening_top_text == "one two three four five six seven eight nine ten"
    assert r.opening_top_share == 1.0


def test_unique_openings_are_not_repeated_openings():
    # two distinct samples must not "share" an opening at 50%; only repeated openings are listed
    r = repetition_stats(["Hello there. More text.", "World peace now. And more."])
    assert r.opening_top_share == 0.0 and r.opening_top_text is None and r.openings == []
    r = repetition_stats(["Same start. One.", "Same start. Two.", "Other start. Three.", "Fourth. X."])
    assert r.opening_top_share == 0.5 and r.opening_top_text == "same start"
    assert [(o.text, o.count) for o in r.openings] == [("same start", 2)]


def test_top_openings_are_ranked_by_count_then_text():
    counts = {"alpha": 5, "beta": 2, "gamma": 4, "delta": 2, "eps": 3, "zeta": 2}
    texts = [f"{w} opens. Sample {i}." for w, c in counts.items() for i in range(c)] + ["Lonely. One."]
    r = repetition_stats(texts[::-1], top_openings=5)
    assert [(o.text, o.count) for o in r.openings] == [
        ("alpha opens", 5), ("gamma opens", 4), ("eps opens", 3), ("beta opens", 2), ("delta opens", 2)]
    assert r.openings[0].share == 5 / 19 and r.opening_top_share == 5 / 19


# --- empty input, validation, serialisation --------------------------------------------------


def test_empty_list_and_empty_texts_do_not_crash():
    r = repetition_stats([])
    assert r.n_samples == 0 and r.loop_share is None and r.opening_top_share is None
    assert r.seq_rep["1"] == ScoreDistribution(0, None, None, None, None)
    r = repetition_stats(["", "   ", "\n"])
    assert r.loop_share == 0.0 and r.opening_top_share == 0.0 and r.opening_top_text is None
    assert r.seq_rep["1"].mean == 0.0 and r.compression_ratio.n == 3 - 1 + 1 - 1  # non-empty: 2
    assert detect_loop("") is None and detect_loop("x") is None


def test_ids_default_to_positions_and_must_be_unique():
    r = repetition_stats(["ok", "la la la " * 20])
    assert r.loop_ids == ["1"]
    with pytest.raises(InputError, match="unique"):
        repetition_stats(["a", "b"], ["x", "x"])
    with pytest.raises(InputError, match="one entry per text"):
        repetition_stats(["a", "b"], ["x"])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"min_repeats": 1}, "min_repeats"),
        ({"min_coverage": 1.5}, "min_coverage"),
        ({"min_coverage": float("nan")}, "min_coverage"),
        ({"max_variation": 0.9}, "max_variation"),
        ({"min_consensus": 0.2}, "min_consensus"),
        ({"min_unit_tokens": 10, "max_unit_tokens": 5}, "must not exceed"),
        ({"min_single_repeats": True}, "min_single_repeats"),
        ({"min_short_repeats": 1}, "min_short_repeats"),
        ({"short_unit_tokens": -1}, "short_unit_tokens"),
        ({"min_tail_share": 1.2}, "min_tail_share"),
        ({"max_unit_tokens": 5000}, "max_unit_tokens"),
    ],
)
def test_bad_options_raise_input_error(kwargs, match):
    with pytest.raises(InputError, match=match):
        detect_loop("text", **kwargs)
    with pytest.raises(InputError, match=match):
        repetition_stats(["text"], **kwargs)


@pytest.mark.parametrize("texts", ["a single string", [1, 2], ["ok", None], None])
def test_bad_texts_raise_input_error(texts):
    with pytest.raises(InputError):
        repetition_stats(texts)


def test_result_round_trips_through_json():
    rows = _load("loops_zh.jsonl")[:60]
    r = repetition_stats([x["text"] for x in rows], [x["id"] for x in rows])
    adapter = TypeAdapter(RepetitionResult)
    assert adapter.validate_json(adapter.dump_json(r)) == r
    assert adapter.validate_json(adapter.dump_json(repetition_stats([]))) == repetition_stats([])


# --- properties ------------------------------------------------------------------------------


def test_aggregates_do_not_depend_on_sample_order():
    rows = _load("loops_en.jsonl")[::3]
    texts, ids = [r["text"] for r in rows], [r["id"] for r in rows]
    base = repetition_stats(texts, ids)
    order = list(range(len(rows)))
    random.Random(1).shuffle(order)
    shuffled = repetition_stats([texts[i] for i in order], [ids[i] for i in order])
    assert shuffled == base


def test_chunked_scan_gives_the_same_result_as_one_pass(monkeypatch):
    """The set is scanned a chunk of samples at a time (bounded memory); chunk edges change nothing."""
    from sampleaudit.metrics import repetition

    rows = _load("loops_en.jsonl")[::12] + _load("loops_zh.jsonl")[::12]
    texts, ids = [r["text"] for r in rows], [r["id"] for r in rows]
    monkeypatch.setattr(repetition, "_CHUNK", 10**9)
    whole = repetition_stats(texts, ids)
    monkeypatch.setattr(repetition, "_CHUNK", 7)
    assert repetition_stats(texts, ids) == whole
    assert whole.n_looped > 0 and whole.seq_rep["2"].n == len(texts)


def _check_bounds(r: RepetitionResult, n: int) -> None:
    assert r.n_samples == n and 0 <= r.n_looped <= n
    assert len(r.loop_ids) == r.n_looped
    if n:
        assert 0.0 <= r.loop_share <= 1.0
        assert 0.0 <= r.opening_top_share <= 1.0
    for d in [*r.seq_rep.values(), *r.dup_ngram_char_share.values()]:
        assert d.n == n
        if n:
            assert 0.0 <= d.p50 <= d.p90 <= d.max <= 1.0 and 0.0 <= d.mean <= 1.0
    for loop in r.loops:
        assert 0.0 < loop.coverage_share <= 1.0 and loop.n_repeats >= 3 and loop.unit


@settings(max_examples=60, deadline=None)
@given(st.lists(ANY_TEXT, max_size=8))
def test_no_text_crashes_repetition_stats(texts):
    r = repetition_stats(texts)
    _check_bounds(r, len(texts))


@settings(max_examples=80, deadline=None)
@given(ANY_TEXT)
def test_no_text_crashes_detect_loop(text):
    loop = detect_loop(text)
    if loop is not None:
        assert 0 <= loop.start_char < loop.end_char <= len(text)
        assert loop.unit and loop.n_repeats >= 3


@pytest.mark.parametrize(
    "text",
    [
        ("The quick brown fox. 中文字符 😀 \u05e9\u05dc\u05d5\u05dd " * 3100)[:100_000],
        ("我们需要继续努力，" * 12_000)[:100_000],
        "".join(chr(0x4E00 + (i * 7919) % 20000) for i in range(100_000)),
        ("word%d " % 0) * 20_000,
    ],
)
def test_hundred_thousand_characters(text):
    assert len(text) >= 100_000
    loop = detect_loop(text)
    r = repetition_stats([text, text[:50]])
    _check_bounds(r, 2)
    if loop is not None:
        assert loop.end_char <= len(text)
