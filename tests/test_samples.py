import gzip
import json

import pandas as pd
import pytest

from sampleaudit.errors import InputError
from sampleaudit.samples import SampleSet, load_samples


def test_jsonl_ids_prompts_and_generated_ids(tmp_path, write_jsonl):
    p = write_jsonl(tmp_path / "ckpt-20k.jsonl", [
        {"text": "one", "id": "a", "prompt": "p"}, {"text": "two"}, {"text": "three", "id": 7},
    ])
    s = load_samples(p)
    assert s.name == "ckpt-20k"
    assert s.ids == ["a", "2", "7"]
    assert s.prompts == ["p", None, None]
    assert s.texts == ["one", "two", "three"]
    assert len(s.sha256) == 64


def test_blank_lines_and_crlf_are_fine(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_bytes(b'{"text": "a"}\r\n\r\n{"text": "b"}\r\n')
    assert load_samples(p).texts == ["a", "b"]


def test_gzip_read_transparently_and_name_drops_both_suffixes(tmp_path):
    p = tmp_path / "ckpt-35k.jsonl.gz"
    p.write_bytes(gzip.compress(b'{"text": "hello"}\n{"text": "world"}\n'))
    s = load_samples(p)
    assert s.name == "ckpt-35k" and s.texts == ["hello", "world"]


def test_empty_string_samples_are_kept_and_counted(tmp_path, write_jsonl):
    p = write_jsonl(tmp_path / "x.jsonl", [{"text": ""}, {"text": "  "}, {"text": "ok"}])
    s = load_samples(p)
    assert len(s) == 3 and s.n_empty == 2


@pytest.mark.parametrize("content, line, cause", [
    (b'{"text": "a"}\n{"text": "b",}\n', 2, "invalid JSON"),
    (b'{"text": "a"}\n{"id": "x"}\n', 2, 'missing "text"'),
    (b'{"text": 3}\n', 1, '"text" must be a string; got number'),
    (b'{"text": ["a"]}\n', 1, '"text" must be a string; got array'),
    (b'{"text": "a", "id": "x"}\n{"text": "b", "id": "x"}\n', 2, 'duplicate id "x" (first seen on line 1)'),
    (b'{"text": "a"}\n{"text": "caf\xe9"}\n', 2, "not valid UTF-8"),
    (b'["text"]\n', 1, "expected a JSON object"),
    (b'{"text": "a", "id": true}\n', 1, '"id" must be a string or an integer'),
])
def test_bad_jsonl_names_file_line_and_cause(tmp_path, content, line, cause):
    p = tmp_path / "bad.jsonl"
    p.write_bytes(content)
    with pytest.raises(InputError) as err:
        load_samples(p)
    msg = str(err.value)
    assert msg.startswith(f"{p}:{line}: ")
    assert cause in msg
    assert "\n" not in msg


@pytest.mark.parametrize("content", [b"", b"\n\n  \n"])
def test_empty_file(tmp_path, content):
    p = tmp_path / "empty.jsonl"
    p.write_bytes(content)
    with pytest.raises(InputError, match="file is empty"):
        load_samples(p)


def test_missing_file_and_unsupported_type(tmp_path):
    with pytest.raises(InputError, match="file not found"):
        load_samples(tmp_path / "nope.jsonl")
    (tmp_path / "x.txt").write_text("hi")
    with pytest.raises(InputError, match="unsupported file type '.txt'"):
        load_samples(tmp_path / "x.txt")


def test_corrupt_gzip(tmp_path):
    p = tmp_path / "x.jsonl.gz"
    p.write_bytes(gzip.compress(b'{"text": "a"}\n' * 50)[:30])
    with pytest.raises(InputError, match="not a valid gzip file"):
        load_samples(p)


def test_skip_invalid_counts_lines(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_bytes(b'{"text": "a"}\nnot json\n{"text": 1}\n{"text": "b"}\n')
    s = load_samples(p, skip_invalid=True)
    assert s.texts == ["a", "b"]
    assert s.n_skipped == 2 and s.skipped_lines == (2, 3)


def test_skip_invalid_with_nothing_valid_still_fails(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_bytes(b"nope\n")
    with pytest.raises(InputError, match=r"no valid samples \(1 invalid lines skipped\)"):
        load_samples(p, skip_invalid=True)


def test_csv_tsv_parquet_with_text_column(tmp_path):
    frame = pd.DataFrame({"id": ["a", "b"], "completion": ["first text", ""], "prompt": ["q", "q"]})
    frame.to_csv(tmp_path / "s.csv", index=False)
    frame.to_csv(tmp_path / "s.tsv", index=False, sep="\t")
    frame.to_parquet(tmp_path / "s.parquet")
    for name in ("s.csv", "s.tsv", "s.parquet"):
        s = load_samples(tmp_path / name, text_column="completion")
        assert s.texts == ["first text", ""] and s.ids == ["a", "b"] and s.prompts == ["q", "q"]
        assert s.n_empty == 1


def test_csv_missing_column_and_duplicate_id_rows(tmp_path):
    (tmp_path / "s.csv").write_text("id,body\na,x\na,y\n")
    with pytest.raises(InputError, match="no column 'text'; columns are: id, body; choose one with --text-column"):
        load_samples(tmp_path / "s.csv")
    with pytest.raises(InputError) as err:
        load_samples(tmp_path / "s.csv", text_column="body")
    assert str(err.value) == f'{tmp_path / "s.csv"}:3: duplicate id "a" (first seen on line 2)'


def test_csv_bad_encoding_names_line(tmp_path):
    (tmp_path / "s.csv").write_bytes(b"text\nfine\ncaf\xe9\n")
    with pytest.raises(InputError, match=r"s\.csv:3: not valid UTF-8"):
        load_samples(tmp_path / "s.csv")


def test_parquet_null_text(tmp_path):
    pd.DataFrame({"text": ["a", None]}).to_parquet(tmp_path / "s.parquet")
    with pytest.raises(InputError, match=r"s\.parquet:2: missing \"text\""):
        load_samples(tmp_path / "s.parquet")


def test_from_texts_validates_like_a_file():
    s = SampleSet.from_texts(["a", "b"], name="x")
    assert s.ids == ["1", "2"]
    with pytest.raises(InputError, match="duplicate id"):
        SampleSet.from_texts(["a", "b"], name="x", ids=["1", "1"])
    with pytest.raises(InputError, match="same length"):
        SampleSet.from_texts(["a"], name="x", ids=["1", "2"])


def test_unicode_text_round_trips(tmp_path, write_jsonl):
    texts = ["模型输出开始重复。", "مرحبا بالعالم", "emoji 🙂", "ctl \x07 char"]
    p = write_jsonl(tmp_path / "u.jsonl", [{"text": t} for t in texts])
    assert load_samples(p).texts == texts
    assert json.loads(p.read_text(encoding="utf-8").splitlines()[0])["text"] == texts[0]


# --- text hygiene: code points that cannot be written as UTF-8 -------------------------------

@pytest.mark.parametrize("line, cause", [
    (b'{"text": "abcd\\ud800 rest"}', '"text" holds a lone surrogate \\ud800 at character 5, which is not valid '
                                      "Unicode; fix the generator's output encoding"),
    (b'{"text": "ok", "id": "x\\udfff"}', '"id" holds a lone surrogate \\udfff at character 2, which is not valid '
                                         "Unicode; fix the generator's output encoding"),
    (b'{"text": "ok", "prompt": "\\udc00"}', '"prompt" holds a lone surrogate \\udc00 at character 1, which is '
                                            "not valid Unicode; fix the generator's output encoding"),
    # a high surrogate followed by a non-surrogate is still lone
    (b'{"text": "\\u00e9\\ud83dx"}', '"text" holds a lone surrogate \\ud83d at character 2, which is not valid '
                                     "Unicode; fix the generator's output encoding"),
])
def test_lone_surrogate_is_an_error_naming_file_line_and_position(tmp_path, line, cause):
    p = tmp_path / "bad.jsonl"
    p.write_bytes(b'{"text": "a"}\n{"text": "b"}\n' + line + b"\n")
    with pytest.raises(InputError) as err:
        load_samples(p)
    assert str(err.value) == f"{p}:3: {cause}"


def test_lone_surrogate_lines_are_skipped_and_counted(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_bytes(b'{"text": "a"}\n{"text": "\\ud800"}\n{"text": "b", "id": "\\udc01"}\n{"text": "c"}\n')
    s = load_samples(p, skip_invalid=True)
    assert s.texts == ["a", "c"] and s.skipped_lines == (2, 3) and s.n_skipped == 2


def test_escaped_surrogate_pair_in_json_is_one_character(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_bytes(b'{"text": "smile \\ud83d\\ude00"}\n')
    assert load_samples(p).texts == ["smile \U0001f600"]


def test_from_texts_rejects_surrogates_naming_the_sample():
    with pytest.raises(InputError) as err:
        SampleSet.from_texts(["fine", "bad \ud800"], name="api")
    assert str(err.value) == ('sample 2 of api: "text" holds a lone surrogate \\ud800 at character 5, which is not '
                              "valid Unicode; fix the generator's output encoding")
    with pytest.raises(InputError) as err:
        SampleSet.from_texts(["x\ud83d\ude00"], name="api")
    assert str(err.value) == (
        'sample 1 of api: "text" holds a surrogate pair \\ud83d\\ude00 at character 2 instead of the character it '
        'stands for (U+1F600), which is not valid Unicode; join the pair, e.g. '
        'text.encode("utf-16", "surrogatepass").decode("utf-16")')
    with pytest.raises(InputError, match=r'^sample 1 of api: "prompt" holds a lone surrogate \\udc00 at character 3'):
        SampleSet.from_texts(["x"], name="api", prompts=["ab\udc00"])
    with pytest.raises(InputError) as err:
        SampleSet.from_texts(["a", "b"], name="api", ids=["k", "k"])
    assert str(err.value) == 'sample 2 of api: duplicate id "k" (first seen as sample 1)'


# --- deeply nested JSON -----------------------------------------------------------------------

DEEP = "nested too deeply (arrays or objects inside each other deeper than the JSON reader goes); " \
       'each line must be one flat JSON object such as {"text": "..."}'


@pytest.mark.parametrize("line", [
    b"[" * 100_000 + b"]" * 100_000,
    b"[" * 100_000,
    b'{"a": ' * 100_000 + b"1" + b"}" * 100_000,
    b'{"text": "ok", "meta": ' + b"[" * 50_000 + b"]" * 50_000 + b"}",
])
def test_deeply_nested_line_is_an_input_error_not_a_recursion_error(tmp_path, line):
    p = tmp_path / "deep.jsonl"
    p.write_bytes(b'{"text": "a"}\n' + line + b"\n")
    with pytest.raises(InputError) as err:
        load_samples(p)
    assert str(err.value) == f"{p}:2: {DEEP}"
    s = load_samples(p, skip_invalid=True)
    assert s.texts == ["a"] and s.skipped_lines == (2,)


def test_moderate_nesting_in_extra_fields_is_fine(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_bytes(b'{"text": "a", "meta": ' + b"[" * 50 + b"]" * 50 + b"}\n")
    assert load_samples(p).texts == ["a"]


def test_huge_integer_is_an_input_error(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_bytes(b'{"text": "a", "id": ' + b"7" * 5000 + b"}\n")
    with pytest.raises(InputError) as err:
        load_samples(p)
    assert str(err.value) == f"{p}:1: invalid JSON (a number has more than 4300 digits; write it as a string)"


# --- CSV / TSV with the csv module -----------------------------------------------------------

QUOTE_HINT = 'write a quote inside a quoted field as two quotes ("") or remove the stray quote'


def test_csv_stray_quote_that_pandas_merged_silently_is_an_error(tmp_path):
    # pandas read lines 3-5 as one row: text 'broken,2\nnext,3\nfinal"', id 4
    p = tmp_path / "bad.csv"
    p.write_text('text,id\nok,1\n"broken,2\nnext,3\n"final",4\nlast,5\n')
    with pytest.raises(InputError) as err:
        load_samples(p)
    assert str(err.value) == (f"{p}:3: malformed CSV (a quote opened on line 3 is not closed properly: "
                              f"',' expected after '\"' on line 5); {QUOTE_HINT}")


def test_csv_quote_followed_by_text_on_one_line(tmp_path):
    p = tmp_path / "bad.csv"
    p.write_text('text,id\nok,1\n"hello" world,2\n')
    with pytest.raises(InputError) as err:
        load_samples(p)
    assert str(err.value) == (f"{p}:3: malformed CSV (a quote opened on line 3 is not closed properly: "
                              f"',' expected after '\"'); {QUOTE_HINT}")


def test_csv_quote_never_closed(tmp_path):
    p = tmp_path / "bad.csv"
    p.write_text('text,id\nok,1\n"hello,2\nworld,3\nbye,4\n')
    with pytest.raises(InputError) as err:
        load_samples(p)
    assert str(err.value) == (f"{p}:3: malformed CSV (a quote opened on line 3 is never closed: the file ends "
                              f"inside it, on line 5); {QUOTE_HINT}")


def test_csv_rows_with_wrong_field_counts(tmp_path):
    p = tmp_path / "bad.csv"
    p.write_text("text,id\nok,1\na, b,2\n")
    with pytest.raises(InputError) as err:
        load_samples(p)
    assert str(err.value) == (f"{p}:3: row has 3 fields but the header has 2; "
                              "put a field that holds a comma in double quotes")
    p.write_text("text,id\nok,1\nalone\n")
    with pytest.raises(InputError) as err:
        load_samples(p)
    assert str(err.value) == (f"{p}:3: row has 1 field but the header has 2; "
                              "give every column a value (an empty one is fine)")
    p.write_text('text,id\nok,1\n"stray,2\nnext,3",4,5\n')  # the quote closes, but the merged row is too wide
    with pytest.raises(InputError) as err:
        load_samples(p)
    assert str(err.value) == (f"{p}:3: row has 3 fields but the header has 2 (a quote opened on line 3 runs on to "
                              "line 4; check for a stray quote)")
    t = tmp_path / "bad.tsv"
    t.write_text("text\tid\nok\t1\ta\n")
    with pytest.raises(InputError, match=r"bad\.tsv:2: row has 3 fields but the header has 2; "
                                         r"put a field that holds a tab in double quotes$"):
        load_samples(t)


def test_csv_skip_invalid_skips_every_line_of_a_bad_record(tmp_path):
    p = tmp_path / "x.csv"
    p.write_text('text,id\na,1\nb,2,3\nc\n"x\ny" z,5\nok,6\n')
    s = load_samples(p, skip_invalid=True)
    assert s.texts == ["a", "ok"] and s.ids == ["1", "6"]
    assert s.skipped_lines == (3, 4, 5, 6) and s.n_skipped == 4
    assert [x.line for x in s.samples] == [2, 7]


def test_csv_quoted_newlines_doubled_quotes_bom_blank_lines_and_empty_values(tmp_path):
    p = tmp_path / "ok.csv"
    p.write_bytes(b'\xef\xbb\xbfid,text,prompt\n'
                  b'a,"say ""hi"", then go",q\n'
                  b'\n'
                  b'b,"two\r\nlines, and a comma",\n'
                  b',,q2\n'
                  b'd,"last ""one""",')  # no final line break
    s = load_samples(p)
    assert s.texts == ['say "hi", then go', "two\r\nlines, and a comma", "", 'last "one"']
    assert s.ids == ["a", "b", "6", "d"]  # an empty id defaults to the line number
    assert s.prompts == ["q", "", "q2", ""]
    assert [x.line for x in s.samples] == [2, 4, 6, 7]
    assert s.n_empty == 1


def test_tsv_quoting_and_text_column_selection(tmp_path):
    p = tmp_path / "s.tsv"
    p.write_text('id\tcompletion\tnote\n1\t"a\tb"\tx\n2\tplain\ty\n')
    s = load_samples(p, text_column="completion")
    assert s.texts == ["a\tb", "plain"] and s.ids == ["1", "2"] and s.prompts == [None, None]
    with pytest.raises(InputError) as err:
        load_samples(p)
    assert str(err.value) == f"{p}: no column 'text'; columns are: id, completion, note; choose one with --text-column"


def test_csv_header_only_blank_and_whitespace_files(tmp_path):
    p = tmp_path / "h.csv"
    p.write_text("text,id\n")
    with pytest.raises(InputError) as err:
        load_samples(p)
    assert str(err.value) == f"{p}: no valid samples"
    for content in ("", "\n\n", "  \n \n"):
        p.write_text(content)
        with pytest.raises(InputError) as err:
            load_samples(p)
        assert str(err.value) == f"{p}: file is empty (no samples)"


def test_csv_duplicate_used_column_in_header(tmp_path):
    p = tmp_path / "d.csv"
    p.write_text("text,id,text\na,1,b\n")
    with pytest.raises(InputError) as err:
        load_samples(p)
    assert str(err.value) == f"{p}:1: column 'text' appears 2 times in the header (columns 1, 3); rename all but one"


def test_csv_field_over_the_csv_limit_is_an_error_even_when_skipping(tmp_path):
    import csv

    p = tmp_path / "long.csv"
    p.write_text('text,id\nok,1\n"' + "x" * (csv.field_size_limit() + 10) + '",2\n')
    expected = (f"{p}:3: a field is longer than {csv.field_size_limit():,} characters, the most the CSV reader "
                "takes; save samples this long as JSONL (texts are cut to 100,000 characters for analysis anyway)")
    for skip in (False, True):
        with pytest.raises(InputError) as err:
            load_samples(p, skip_invalid=skip)
        assert str(err.value) == expected


def test_gzip_csv_and_sha_of_the_stored_file(tmp_path):
    import hashlib

    p = tmp_path / "s.csv.gz"
    p.write_bytes(gzip.compress(b'text\n"multi\nline"\nsecond\n'))
    s = load_samples(p)
    assert s.texts == ["multi\nline", "second"] and [x.line for x in s.samples] == [2, 4]
    assert s.sha256 == hashlib.sha256(p.read_bytes()).hexdigest()


def test_sha_is_of_the_whole_file_even_with_trailing_blank_lines(tmp_path):
    import hashlib

    p = tmp_path / "x.jsonl"
    p.write_bytes(b'{"text": "a"}\n' + b"\n" * 3_000_000)
    assert load_samples(p).sha256 == hashlib.sha256(p.read_bytes()).hexdigest()


# --- maximum text length ----------------------------------------------------------------------

def test_long_texts_are_cut_and_flagged(tmp_path, write_jsonl):
    from sampleaudit.samples import DEFAULT_MAX_CHARS

    long_text = "loop " * 30_000  # 150,000 characters
    p = write_jsonl(tmp_path / "x.jsonl", [{"text": "short"}, {"text": long_text, "prompt": "p" * 200_000}])
    s = load_samples(p)
    assert DEFAULT_MAX_CHARS == 100_000
    assert s.texts == ["short", long_text[:DEFAULT_MAX_CHARS]]
    assert s.prompts == [None, "p" * DEFAULT_MAX_CHARS]
    assert [x.original_chars for x in s.samples] == [None, 150_000]
    assert s.n_truncated == 1 and s.truncated_lines == (2,)
    small = load_samples(p, max_chars=10)
    assert small.texts == ["short", long_text[:10]] and small.truncated_lines == (2,)
    assert small.samples[1].original_chars == 150_000


def test_capped_cuts_further_and_keeps_the_original_length():
    s = SampleSet.from_texts(["abcdef", "xy", "0123456789"], name="x", max_chars=8)
    assert s.texts == ["abcdef", "xy", "01234567"] and s.truncated_lines == (3,)
    assert s.capped(8) is s and s.capped(100) is s
    c = s.capped(4)
    assert c.texts == ["abcd", "xy", "0123"] and c.ids == s.ids and c.name == "x"
    assert [x.original_chars for x in c.samples] == [6, None, 10]
    assert c.n_truncated == 2 and c.truncated_lines == (1, 3)
    with pytest.raises(InputError, match=r"max_chars must be a positive whole number of characters; got 0"):
        s.capped(0)


@pytest.mark.parametrize("bad", [0, -5, 2.5, True, None])
def test_max_chars_must_be_a_positive_integer(tmp_path, write_jsonl, bad):
    p = write_jsonl(tmp_path / "x.jsonl", [{"text": "a"}])
    with pytest.raises(InputError, match=r"^max_chars must be a positive whole number of characters; got "):
        load_samples(p, max_chars=bad)
    with pytest.raises(InputError, match=r"^max_chars must be a positive whole number"):
        SampleSet.from_texts(["a"], name="x", max_chars=bad)


def test_overlong_id_is_an_error(tmp_path, write_jsonl):
    p = write_jsonl(tmp_path / "x.jsonl", [{"text": "a", "id": "i" * 1001}])
    with pytest.raises(InputError) as err:
        load_samples(p)
    assert str(err.value) == f'{p}:1: "id" is 1,001 characters long; an id must be at most 1,000'


def test_one_huge_line_is_read_and_cut(tmp_path):
    p = tmp_path / "huge.jsonl.gz"
    body = "\u6a21\u578b" * 1_000_000  # 2,000,000 characters, 6 MB of UTF-8
    p.write_bytes(gzip.compress(b'{"text": "a"}\n' + json.dumps({"text": body}, ensure_ascii=False).encode() + b"\n"))
    s = load_samples(p, max_chars=1000)
    assert s.texts == ["a", body[:1000]] and s.samples[1].original_chars == 2_000_000
