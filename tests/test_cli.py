"""The command line: help texts, exit codes, bad input, re-rendering, and one real end-to-end run."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sampleaudit.cli import build_parser, main

DATA = Path(__file__).resolve().parent.parent / "data_samples"


def _subcommands():
    parser = build_parser()
    action = next(a for a in parser._actions if a.dest == "command")
    return action.choices


@pytest.mark.parametrize("name", sorted(_subcommands()))
def test_every_command_has_help_with_an_example(name):
    sub = _subcommands()[name]
    text = sub.format_help()
    assert "example:" in text and f"sampleaudit {name}" in text
    assert sub.description


def test_usage_error_is_exit_2(capsys):
    with pytest.raises(SystemExit) as err:
        main(["audit", "--bogus"])
    assert err.value.code == 2
    assert main(["audit"]) == 2
    assert "give at least one file of samples or --model" in capsys.readouterr().err


def _one_error_line(capsys):
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("sampleaudit: error: ")
    return err[0]


@pytest.mark.parametrize("content, expected", [
    (b'{"text": "ok"}\n{"text": "broken"\n', "bad.jsonl:2: invalid JSON"),
    (b'{"text": "a", "id": 1}\n{"text": "b", "id": 1}\n', 'bad.jsonl:2: duplicate id "1" (first seen on line 1)'),
    (b"", "bad.jsonl: file is empty"),
    (b'{"text": "\xff"}\n', "bad.jsonl:1: not valid UTF-8"),
    (b'{"prompt": "p"}\n', 'bad.jsonl:1: missing "text" field'),
])
def test_bad_input_exit_2_one_line_nothing_written(tmp_path, capsys, content, expected):
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(content)
    out = tmp_path / "out"
    code = main(["audit", str(bad), "--out", str(out), "--quiet"])
    assert code == 2
    assert expected in _one_error_line(capsys)
    assert not out.exists()


def test_hostile_ids_and_names_reach_the_terminal_as_escapes(tmp_path, capsys, write_jsonl, monkeypatch):
    # an id with an ANSI colour code, a bidi override and a newline: still one plain error line
    hostile = "x\x1b[31mRED\u202eevil\nline2"
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"text": "a", "id": hostile}, {"text": "b", "id": hostile}])
    assert main(["audit", str(bad), "--out", str(tmp_path / "out"), "-q"]) == 2
    line = _one_error_line(capsys)
    assert "\x1b" not in line and "\u202e" not in line
    assert 'duplicate id "x\\x1b[31mRED\\u202eevil line2"' in line
    # a checkpoint name (user text, and read back from audit.json files) in the summary
    from sampleaudit.embed.hashing import HashingEmbedder

    monkeypatch.setattr("sampleaudit.embed.load_embedder", lambda *a, **k: HashingEmbedder(64))
    good = write_jsonl(tmp_path / "good.jsonl", [{"text": "one sample"}, {"text": "another one"}])
    main(["audit", str(good), "--name", "ck\x1b[2J", "--out", str(tmp_path / "o"), "--format", "json", "-q"])
    out = capsys.readouterr().out
    assert "\x1b" not in out and "ck\\x1b[2J" in out


def test_bad_baseline_and_bad_config_exit_2(tmp_path, capsys, write_jsonl):
    good = write_jsonl(tmp_path / "good.jsonl", [{"text": "a"}, {"text": "b"}])
    out = tmp_path / "out"
    assert main(["audit", str(good), "--baseline", str(tmp_path / "missing.jsonl"), "--out", str(out), "-q"]) == 2
    assert "missing.jsonl: file not found" in _one_error_line(capsys)
    cfg = tmp_path / "c.toml"
    cfg.write_text("[checks.mode_colapse]\nfail = 0.3\n")
    assert main(["audit", str(good), "--config", str(cfg), "--out", str(out), "-q"]) == 2
    assert f'unknown option "checks.mode_colapse" in {cfg}; did you mean "checks.mode_collapse"?' in _one_error_line(capsys)
    assert main(["audit", str(good), "--name", "a", "--name", "b", "--out", str(out), "-q"]) == 2
    assert "--name was given 2 time(s) for 1 checkpoint file(s)" in _one_error_line(capsys)
    assert not out.exists()


def test_report_rerenders_without_recomputing(tmp_path, hashing_embedder, monkeypatch):
    from sampleaudit import audit, render
    from sampleaudit.samples import SampleSet

    texts = ["<script>alert(1)</script>", "</table><b>bold</b>", "{{ 7*7 }} {% raw %}", "x" * 5000, "plain"]
    result = audit([SampleSet.from_texts(texts, name="ck<1>")], embedder=hashing_embedder)
    render(result, tmp_path, formats=["json"])
    import sampleaudit.pipeline as pipeline

    monkeypatch.setattr(pipeline, "audit", lambda *a, **k: pytest.fail("report must not recompute"))
    assert main(["report", str(tmp_path / "audit.json"), "--format", "html"]) == 0
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "</table><b>" not in html and "{{ 7*7 }}" in html
    assert "ck&lt;1&gt;" in html and "ck<1>" not in html
    assert "cut: 4,400 more characters" in html
    import re

    assert not re.search(r"(src|href)\s*=\s*[\"']?\s*(https?:)?//|url\(\s*[\"']?\s*(https?:)?//|@import", html)
    # the only URLs are XML namespace names of the inline SVG charts, which nothing fetches
    assert set(re.findall(r"https?://[^\s\"']+", html)) == {"http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"}


def test_report_of_a_bad_json_is_exit_2(tmp_path, capsys):
    p = tmp_path / "audit.json"
    p.write_text('{"schema_version": 2, "tool": {}}')
    assert main(["report", str(p)]) == 2
    assert "audit.json: not an audit result" in _one_error_line(capsys)
    assert not (tmp_path / "report.html").exists()


@pytest.mark.slow
def test_end_to_end_with_the_real_default_model(tmp_path, write_jsonl, real_cache_dir, demo_result):
    """A slice of data_samples through `python -m sampleaudit audit` with all-MiniLM-L6-v2."""
    def head(name, n):
        lines = (DATA / name).read_text(encoding="utf-8").splitlines()[:n]
        return write_jsonl(tmp_path / name, [json.loads(line) for line in lines])

    healthy, collapsed = head("ckpt-20k.jsonl", 120), head("ckpt-35k.jsonl", 120)
    base = head("baseline.jsonl", 240)
    out = tmp_path / "out"
    import os

    env = {**os.environ, "SAMPLEAUDIT_CACHE_DIR": str(real_cache_dir)}  # demo_result filled it
    proc = subprocess.run(
        [sys.executable, "-m", "sampleaudit", "audit", str(healthy), str(collapsed), "--baseline", str(base),
         "--out", str(out), "--quiet"], capture_output=True, text=True, timeout=600, env=env,
    )
    assert proc.returncode == 1, proc.stderr  # the collapsed checkpoint fails
    assert "ckpt-35k fails mode_collapse" in proc.stdout
    result = json.loads((out / "audit.json").read_text(encoding="utf-8"))
    assert result["embedder"]["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert result["embedder"]["dim"] == 384
    assert result["ranking"][0] == "ckpt-20k"
    status = {c["name"]: c["status"] for c in result["checkpoints"]}
    assert status["ckpt-35k"] == "fail"
    assert (out / "report.html").stat().st_size > 10_000
