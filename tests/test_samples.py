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
