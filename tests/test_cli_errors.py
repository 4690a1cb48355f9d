"""Every failure a user can provoke through the CLI: one line, the promised exit code, nothing written.

The battery of bad inputs and faults from the staged-engine issue, one test (or case) each. Most
fail before any model is loaded (`no_model` makes loading one a test failure); the rest run with
the hashing embedder so they take a fraction of a second.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sampleaudit.cli import main

WORDS = "quartz fjord nimbus kettle olive plume ember zinc rover loaf sonata tax goal energy ship dust".split()


def texts(n, seed=0):
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, 9)) for _ in range(n)]


@pytest.fixture
def no_model(monkeypatch):
    """Loading an embedder is a test failure: the error must come before any expensive work."""
    def refuse(*_a, **_k):
        pytest.fail("the embedder was loaded before the bad input was found")

    monkeypatch.setattr("sampleaudit.embed.load_embedder", refuse)


@pytest.fixture
def hashing(monkeypatch):
    from sampleaudit.embed.hashing import HashingEmbedder

    monkeypatch.setattr("sampleaudit.embed.load_embedder", lambda *a, **k: HashingEmbedder(64))


@pytest.fixture
def good(tmp_path, write_jsonl):
    return write_jsonl(tmp_path / "good.jsonl", [{"text": t} for t in texts(30, 1)])


@pytest.fixture
def base(tmp_path, write_jsonl):
    return write_jsonl(tmp_path / "base.jsonl", [{"text": t} for t in texts(80, 2)])


def error_line(capsys) -> str:
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("sampleaudit: error")
           or line.startswith("sampleaudit: internal")]
    assert len(err) == 1, err
    return err[0]


def run(args, capsys, code=2) -> str:
    assert main([str(a) for a in args]) == code
    return error_line(capsys)


def nothing_in(folder: Path) -> bool:
    return not folder.exists() or not any(folder.iterdir())


# --------------------------------------------------------------------------------------------
# the output folder


def test_out_naming_a_file(tmp_path, good, capsys, no_model):
    target = tmp_path / "report.txt"
    target.write_text("keep me")
    assert "is a file, not a folder" in run(["audit", good, "--out", target, "-q"], capsys)
    assert target.read_text() == "keep me"


def test_out_under_a_file(tmp_path, good, capsys, no_model):
    parent = tmp_path / "afile"
    parent.write_text("x")
    line = run(["audit", good, "--out", parent / "sub", "-q"], capsys)
    assert "is a file" in line and str(parent) in line


def test_out_read_only(tmp_path, good, capsys, no_model, monkeypatch):
    out = tmp_path / "ro"
    out.mkdir()
    real = os.statvfs

    class ReadOnly:
        def __init__(self, st):
            self.f_flag = st.f_flag | os.ST_RDONLY

    monkeypatch.setattr(os, "statvfs", lambda p: ReadOnly(real(p)) if Path(p) == out else real(p))
    assert "Read-only file system" in run(["audit", good, "--out", out, "-q"], capsys)
    assert nothing_in(out)


def _as_nobody(args, err_path):
    """In a forked child: drop to an unprivileged user and run the CLI (its stderr to a file)."""
    if os.geteuid() == 0:
        os.setgid(65534)
        os.setuid(65534)
    with open(err_path, "w") as err:
        sys.stderr = err
        code = main(args)
    os._exit(code)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_out_unwritable_for_real(good):
    """A folder the user may not write to, checked as an unprivileged user (tests run as root here)."""
    import multiprocessing
    import shutil
    import tempfile

    top = Path(tempfile.mkdtemp(prefix="sampleaudit-nobody-"))
    try:
        top.chmod(0o777)
        out = top / "locked"
        out.mkdir(mode=0o555)
        sample = top / "good.jsonl"
        shutil.copy(good, sample)
        sample.chmod(0o644)
        err = top / "stderr.txt"
        child = multiprocessing.get_context("fork").Process(
            target=_as_nobody, args=(["audit", str(sample), "--out", str(out), "-q", "--no-cache"], err))
        child.start()
        child.join(120)
        assert child.exitcode == 2, err.read_text()
        lines = err.read_text().splitlines()
        assert len(lines) == 1 and "Permission denied" in lines[0] and str(out) in lines[0]
        assert nothing_in(out)
    finally:
        shutil.rmtree(top, ignore_errors=True)


def test_two_runs_into_one_folder(tmp_path, good, capsys, no_model):
    from sampleaudit.fileio import OutputLock

    out = tmp_path / "shared"
    with OutputLock(out):
        line = run(["audit", good, "--out", out, "-q"], capsys)
    assert "another sampleaudit run" in line and str(os.getpid()) in line
    assert nothing_in(out)


def test_full_disk_replaces_nothing(tmp_path, good, capsys, hashing, monkeypatch):
    out = tmp_path / "out"
    assert main(["audit", str(good), "--out", str(out), "--format", "json,html", "-q"]) in (0, 1)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    capsys.readouterr()
    real_write = os.write

    def full(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", full)
    line = run(["audit", good, "--out", out, "--format", "json,html", "--seed", "5", "-q"], capsys)
    monkeypatch.setattr(os, "write", real_write)
    assert "No space left on device" in line
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # the old set, whole; no temp files


# --------------------------------------------------------------------------------------------
# options and config


@pytest.mark.parametrize("args, expected", [
    (["--seed", "-1"], "--seed must be greater than or equal to 0; got -1"),
    (["--batch-size", "0"], "--batch-size must be greater than or equal to 1; got 0"),
    (["--threshold", "2"], "--threshold must be less than or equal to 1; got 2.0"),
    (["--format", "json,docx"], "unknown report format 'docx'"),
    (["--device", "tpu"], "--device tpu is not a device"),
])
def test_bad_options(tmp_path, good, capsys, no_model, args, expected):
    out = tmp_path / "out"
    assert expected in run(["audit", good, "--out", out, "-q", *args], capsys)
    assert not out.exists()


def test_config_that_is_a_folder(tmp_path, good, capsys, no_model):
    assert "is a folder, not a config file" in run(["audit", good, "--config", tmp_path, "--out",
                                                    tmp_path / "o", "-q"], capsys)


def test_config_unreadable(tmp_path, good, capsys, no_model, monkeypatch):
    cfg = tmp_path / "c.toml"
    cfg.write_text("seed = 1\n")
    real = Path.read_bytes

    def denied(self):
        if self == cfg:
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", denied)
    assert f"{cfg}: cannot read the config file (Permission denied)" in run(
        ["audit", good, "--config", cfg, "--out", tmp_path / "o", "-q"], capsys)


def test_histogram_bins_named_with_file_and_key_before_embedding(tmp_path, good, capsys, no_model):
    cfg = tmp_path / "c.toml"
    cfg.write_text("[similarity]\nhistogram_bins = 7\n")
    assert f"similarity.histogram_bins in {cfg} must divide 2000" in run(
        ["audit", good, "--config", cfg, "--out", tmp_path / "o", "-q"], capsys)


def test_missing_embedder_folder(tmp_path, good, capsys):
    line = run(["audit", good, "--embedder", "/nonexistent/model", "--out", tmp_path / "o", "-q"], capsys)
    assert "/nonexistent/model does not exist" in line


# --------------------------------------------------------------------------------------------
# sample files


@pytest.mark.parametrize("line, expected", [
    ('{"text": "ok \\ud800 there"}', "bad.jsonl:2:"),
    ("[" * 100_000 + "]" * 100_000, "bad.jsonl:2:"),
])
def test_hostile_lines(tmp_path, capsys, no_model, line, expected):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "fine"}\n' + line + "\n", encoding="utf-8")
    out = tmp_path / "out"
    assert expected in run(["audit", bad, "--out", out, "-q"], capsys)
    assert not out.exists()


def test_csv_stray_quote_names_the_line(tmp_path, capsys, no_model):
    bad = tmp_path / "bad.csv"
    bad.write_text('id,text\n1,fine\n2,"a stray quote\n3,merged\n4,"x"y\n5,last\n', encoding="utf-8")
    assert "bad.csv:3:" in run(["audit", bad, "--out", tmp_path / "o", "-q"], capsys)


@pytest.mark.parametrize("records", [[{"text": "the same text"}] * 50, [{"text": ""}] * 50])
def test_degenerate_baseline(tmp_path, good, capsys, hashing, write_jsonl, records):
    degenerate = write_jsonl(tmp_path / "train.jsonl", records)
    out = tmp_path / "out"
    line = run(["audit", good, "--baseline", degenerate, "--out", out, "-q"], capsys)
    assert "train.jsonl: the baseline is degenerate" in line
    assert not out.exists()


def test_an_absurdly_long_sample_is_cut_and_flagged(tmp_path, capsys, hashing, write_jsonl, base):
    cfg = tmp_path / "c.toml"
    cfg.write_text("[input]\nmax_chars = 2000\n")
    long = write_jsonl(tmp_path / "long.jsonl", [{"text": t} for t in texts(20)] + [{"text": "word " * 100_000}])
    out = tmp_path / "out"
    assert main(["audit", str(long), "--baseline", str(base), "--config", str(cfg), "--out", str(out),
                 "--format", "json", "-q"]) in (0, 1)
    data = json.loads((out / "audit.json").read_text(encoding="utf-8"))
    c = data["checkpoints"][0]
    assert c["n_truncated"] == 1 and any("cut for analysis" in w for w in c["warnings"])
    assert all(len(t) <= 2000 for t in c["texts"].values())
    assert (out / "audit.json").stat().st_size < 400_000


# --------------------------------------------------------------------------------------------
# audit.json given to report and compare


@pytest.fixture
def audit_json(tmp_path, good, hashing, base):
    out = tmp_path / "a"
    assert main(["audit", str(good), "--baseline", str(base), "--out", str(out), "--format", "json", "-q"]) in (0, 1)
    return out / "audit.json"


def _edited(path: Path, change) -> Path:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    edited = path.with_name("edited.json")
    edited.write_text(json.dumps(data, allow_nan=True), encoding="utf-8")
    return edited


@pytest.mark.parametrize("make, expected", [
    (lambda p: p.with_name("bin.json").write_bytes(bytes(range(256))) and p.with_name("bin.json"), "not UTF-8"),
    (lambda p: p.with_name("arr.json").write_text("[1, 2]") and p.with_name("arr.json"), "expected a JSON object"),
    (lambda p: _edited(p, lambda d: d["checkpoints"][0]["similarity"].__setitem__("high_similarity_share",
                                                                                   float("nan"))), "NaN"),
    (lambda p: _edited(p, lambda d: d["checkpoints"][0]["similarity"].__setitem__("high_similarity_share", "0.5")),
     "high_similarity_share: Input should be a valid number"),
    (lambda p: _edited(p, lambda d: d["checkpoints"][0]["coverage"].__setitem__("coverage_ratio", 7)),
     "coverage.coverage_ratio is 7, outside [0, 1]"),
    (lambda p: _edited(p, lambda d: d["checkpoints"][0].__setitem__("n_samples", "many")), "n_samples"),
])
@pytest.mark.parametrize("command", ["report", "compare"])
def test_bad_audit_json(tmp_path, capsys, audit_json, make, expected, command):
    bad = make(audit_json)
    out = tmp_path / "rendered"
    args = ["report", bad, "--out", out] if command == "report" else ["compare", audit_json, bad, "--out", out]
    line = run(args, capsys)
    assert expected in line and str(bad) in line
    assert not out.exists()


# --------------------------------------------------------------------------------------------
# the cache, names, internal errors


def test_a_damaged_cache_is_healed_not_fatal(tmp_path, good, capsys, hashing, monkeypatch):
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "embeddings.sqlite").write_bytes(b"SQLite format 3\x00" + os.urandom(3000))
    monkeypatch.setenv("SAMPLEAUDIT_CACHE_DIR", str(cache))
    out = tmp_path / "out"
    assert main(["audit", str(good), "--out", str(out), "--format", "json"]) in (0, 1)
    err = capsys.readouterr().err
    assert "embeddings.sqlite" in err and "Traceback" not in err
    assert (out / "audit.json").exists()


def test_control_characters_in_names_reach_the_report_as_escapes(tmp_path, good, capsys, hashing):
    out = tmp_path / "out"
    assert main(["audit", str(good), "--name", "ck\u202eevil\x1b[2J", "--out", str(out), "--format",
                 "json,html", "-q"]) in (0, 1)
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "\u202e" not in html and "\x1b" not in html and "ck\\u202eevil\\x1b[2J" in html


def test_an_internal_error_is_exit_3_with_the_traceback_in_a_file(tmp_path, good, capsys, hashing, monkeypatch):
    monkeypatch.setenv("SAMPLEAUDIT_CACHE_DIR", str(tmp_path / "cache"))

    def broken(*_a, **_k):
        raise ZeroDivisionError("a bug in a metric")

    monkeypatch.setattr("sampleaudit.engine.vendi_score", broken)
    out = tmp_path / "out"
    line = run(["audit", good, "--out", out, "-q"], capsys, code=3)
    assert line.startswith("sampleaudit: internal error: ZeroDivisionError: a bug in a metric")
    crash = Path(line.split("the full traceback is in ")[1].split(";")[0])
    assert crash.parent == tmp_path / "cache" / "crashes"
    assert "Traceback" in crash.read_text() and "vendi_score" in crash.read_text()
    assert not out.exists()
