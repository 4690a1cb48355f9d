"""`sampleaudit probe`: the history, the command's exit codes and JSON, locks, kills, webhooks, the report.

Answers are embedded with the hashing embedder (no model); one test generates with the tiny LM.
"""

import json
import os
import random
import signal
import sqlite3
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from sampleaudit.cli import main
from sampleaudit.embed.hashing import HashingEmbedder
from sampleaudit.probe.history import SCHEMA_VERSION, History, HistoryBusyError, HistoryLock

ROOT = Path(__file__).resolve().parent.parent
WORDS = ("river stone cloud lamp forest window garden bridge candle mirror harbor meadow engine silver "
         "winter paper basket thunder violet copper orchard lantern pebble falcon").split()
SHARED = "the answer is always the same sentence about the weather today".split()
PROMPTS = ["Tell me a story.", "Describe the sea.", "What is love?"]
# words every answer shares, day by day: 8 stable days, then a rise (checked to give z of 1.4, 1.6, 2.4:
# each a rise beyond the margin of 1, none a jump, the CUSUM under its limit until the third)
SCHEDULE = [0] * 8 + [4, 5, 7, 9]


def _date(i: int) -> str:
    return f"2026-11-{i + 1:02d}"


def day_file(folder: Path, day: int, shared: int, *, checkpoint: str | None = None) -> Path:
    rng = random.Random(day)
    path = folder / f"answers-{_date(day)}.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        for p in PROMPTS:
            for _ in range(6):
                text = " ".join(SHARED[:shared] + [rng.choice(WORDS) for _ in range(12 - shared)])
                fh.write(json.dumps({"prompt": p, "text": text, "checkpoint": checkpoint or f"step-{1000 * day}"}) + "\n")
    return path


@pytest.fixture(autouse=True)
def hashing(monkeypatch):
    import sampleaudit.embed as embed

    monkeypatch.setattr(embed, "load_embedder", lambda *a, **k: HashingEmbedder(256))


def _probe(tmp_path, day, shared, *extra):
    f = day_file(tmp_path, day, shared)
    return main(["probe", "--samples", str(f), "--date", _date(day), "--history", str(tmp_path / "h.db"), "-q",
                 *extra])


def test_rise_alerts_on_its_third_day_with_json_and_rollback_target(tmp_path, capsys):
    codes, lines = [], []
    for day, shared in enumerate(SCHEDULE):
        codes.append(_probe(tmp_path, day, shared, "--json"))
        out = capsys.readouterr().out.strip().splitlines()
        assert len(out) == 1
        lines.append(json.loads(out[0]))
    assert codes == [0] * 10 + [1, 0]  # the third day of the rise (day 10) alerts; the day after does not
    assert [x["event"] for x in lines[8:]] == ["ok", "ok", "alert", "ongoing"]
    alert = lines[10]
    assert alert["rollback_to"] == {"date": _date(7), "checkpoint_id": "step-7000", "checkpoint_path": None}
    assert [d["date"] for d in alert["episode"]["days"]] == [_date(i) for i in range(7, 11)]
    assert "streak" in alert["episode"]["triggers"]
    assert "consider rolling back to checkpoint step-7000" in alert["message"]
    assert [p["prompt"] for p in alert["prompts"]] == PROMPTS
    assert all(p["value"] > p["base_value"] for p in alert["prompts"])
    assert _probe(tmp_path, len(SCHEDULE), 0, "--reference-date", _date(3)) == 0
    with History(tmp_path / "h.db") as h:
        days = h.days()
        assert days.pop().reference_date == _date(3)
        assert [d.date for d in days] == [_date(i) for i in range(len(SCHEDULE))]
        assert all(d.n_answers == 18 and d.reference_date == _date(0) for d in days[1:])
        answers = h.answers(days[3].run_id)
        assert len(answers) == 18 and answers[0].prompt == PROMPTS[0] and answers[0].embedding.shape == (256,)
        figures = days[3].figures
        assert [p["prompt"] for p in figures["prompts"]] == PROMPTS
        assert figures["overall"]["drift"]["value"] > 0


# a collapse onto one answer every prompt shares: each prompt's answers keep drawing from the prompt's
# own small vocabulary (so two answers to one prompt stay about as similar as before) while more and
# more of every answer is the same shared sentence
TOPICS = {"Tell me a story.": "dragon castle knight princess sword", "Describe the sea.": "wave tide salt shore coral",
          "What is love?": "heart longing kiss tender devotion", "Name a city.": "paris tokyo cairo lima oslo"}
POOL = "the weather today is sunny and mild with light winds".split()


def shared_day_file(folder: Path, day: int, shared: int) -> Path:
    rng = random.Random(day)
    path = folder / f"answers-{_date(day)}.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        for p, words in TOPICS.items():
            for _ in range(6):
                text = " ".join(POOL[:shared] + [rng.choice(words.split()) for _ in range(12 - shared)])
                fh.write(json.dumps({"prompt": p, "text": text, "checkpoint": f"step-{1000 * day}"}) + "\n")
    return path


def test_a_collapse_onto_an_answer_all_prompts_share_alerts_through_the_cross_prompt_figure(tmp_path, capsys):
    codes, lines = [], []
    for day, shared in enumerate([0] * 8 + [1, 2, 3]):
        f = shared_day_file(tmp_path, day, shared)
        codes.append(main(["probe", "--samples", str(f), "--date", _date(day), "--history", str(tmp_path / "h.db"),
                           "-q", "--json"]))
        lines.append(json.loads(capsys.readouterr().out))
    assert codes == [0] * 9 + [1, 0]
    alert = lines[9]
    assert alert["figure"] == "overall cross_similarity" and alert["event"] == "alert"
    assert alert["figures"]["mean_similarity"]["state"] == "ok"  # the within-prompt figure saw nothing
    assert alert["figures"]["cross_similarity"]["state"] == "alert"
    assert alert["rollback_to"]["checkpoint_id"] == "step-8000"  # one shared word a day moved nothing yet
    assert "different prompts" in alert["message"] and "rolling back to checkpoint step-8000" in alert["message"]
    assert all(p["value"] > p["base_value"] + 0.02 for p in alert["prompts"])  # every prompt moved
    assert lines[10]["event"] == "ongoing" and lines[10]["figure"] == "overall cross_similarity"
    assert lines[7]["message"].startswith(f"ok on {_date(7)}: mean similarity among the answers to each prompt")


def test_rerun_day_refuses_exit_2_and_replace_keeps_the_old_run(tmp_path, capsys):
    assert _probe(tmp_path, 0, 0) == 0
    assert _probe(tmp_path, 0, 3) == 2
    err = capsys.readouterr().err
    assert "2026-11-01 is already recorded" in err and "--replace" in err
    with History(tmp_path / "h.db") as h:
        assert h.n_runs() == 1
    assert _probe(tmp_path, 0, 3, "--replace") == 0
    with History(tmp_path / "h.db") as h:
        assert h.n_runs() == 2 and len(h.days()) == 1  # nothing deleted: the first run is superseded
        assert sqlite3.connect(h.path).execute("SELECT count(*) FROM answers").fetchone()[0] == 36


@pytest.mark.parametrize("args, expected", [
    (["--date", "2026-13-01"], "--date must be a date as YYYY-MM-DD"),
    (["--date", "yesterday"], "--date must be a date"),
    (["--reference-date", "2026-10-01"], "--reference-date 2026-10-01 is not recorded"),
    (["--webhook", "ftp://x"], "--webhook must be an http"),
])
def test_bad_input_exits_2_and_records_nothing(tmp_path, capsys, args, expected):
    assert _probe(tmp_path, 0, 0) == 0
    f = day_file(tmp_path, 1, 0)
    code = main(["probe", "--samples", str(f), "--date", _date(1), "--history", str(tmp_path / "h.db"), "-q", *args])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and expected in err[0]
    with History(tmp_path / "h.db") as h:
        assert h.n_runs() == 1


def test_bad_samples_and_bad_histories_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "p", "text": "a"}\n{"text": \n', encoding="utf-8")
    db = tmp_path / "h.db"
    assert main(["probe", "--samples", str(bad), "--history", str(db), "-q"]) == 2
    assert "bad.jsonl:2: invalid JSON" in capsys.readouterr().err
    one = tmp_path / "one.jsonl"
    one.write_text('{"prompt": "p", "text": "a"}\n', encoding="utf-8")
    assert main(["probe", "--samples", str(one), "--history", str(db), "-q"]) == 2
    assert "at least two answers" in capsys.readouterr().err
    assert not db.exists()  # a refused first run leaves no history behind
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.commit()
    assert main(["probe", "--samples", str(day_file(tmp_path, 0, 0)), "--history", str(other), "-q"]) == 2
    assert "not a sampleaudit probe history" in capsys.readouterr().err
    newer = tmp_path / "newer.db"
    sqlite3.connect(newer).execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    assert main(["probe", "--samples", str(day_file(tmp_path, 0, 0)), "--history", str(newer), "-q"]) == 2
    assert "newer sampleaudit" in capsys.readouterr().err


def test_history_is_wal_with_schema_version(tmp_path):
    with History(tmp_path / "h.db") as h:
        assert h.con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert h.con.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert h.con.execute("PRAGMA busy_timeout").fetchone()[0] >= 1000


def test_another_embedder_is_refused(tmp_path, capsys, monkeypatch):
    assert _probe(tmp_path, 0, 0) == 0
    import sampleaudit.embed as embed

    monkeypatch.setattr(embed, "load_embedder", lambda *a, **k: HashingEmbedder(128))
    assert _probe(tmp_path, 1, 0) == 2
    assert "recorded with the embedder hashing-char-3-5-256" in capsys.readouterr().err


def test_a_held_lock_makes_a_second_run_wait_then_exit_2(tmp_path, capsys):
    db = tmp_path / "h.db"
    with HistoryLock(db):
        start = time.monotonic()
        code = _probe(tmp_path, 0, 0, "--lock-timeout", "0.5")
        waited = time.monotonic() - start
    assert code == 2 and waited >= 0.5
    err = capsys.readouterr().err
    assert f"another sampleaudit probe holds the lock on {db} (pid {os.getpid()}" in err
    assert not db.exists()
    with pytest.raises(HistoryBusyError):
        with HistoryLock(db), HistoryLock(db, timeout=0):
            pass
    assert _probe(tmp_path, 0, 0) == 0  # released


def _child(samples: str, db: str, date: str, ready: str | None = None) -> None:
    """A probe run in a forked process (no second interpreter start); exit 0 recorded, 2 refused.

    With `ready`, it writes half its answers inside the day's transaction, touches `ready` and waits
    to be killed."""
    from sampleaudit.probe import history
    from sampleaudit.probe.run import Checkpoint, probe
    from sampleaudit.samples import load_samples

    if ready is not None:
        def _half(self, run_id, answers, emb):
            self.con.executemany("INSERT INTO answers VALUES (?, ?, ?, ?, ?, ?)",
                                 [(run_id, i, s, p, t, emb[i].tobytes()) for i, (s, p, t) in enumerate(answers[:9])])
            Path(ready).write_text("x")
            time.sleep(60)

        history.History._insert_answers = _half
    try:
        probe(load_samples(samples), history=db, date=date, embedder=HashingEmbedder(256), checkpoint=Checkpoint("c"),
              n_resamples=20)
    except Exception as exc:
        Path(db + f".{os.getpid()}.err").write_text(f"{type(exc).__name__}: {exc}")
        os._exit(2)
    os._exit(0)


def _start(*args) -> "multiprocessing.Process":
    import multiprocessing

    proc = multiprocessing.get_context("fork").Process(target=_child, args=tuple(str(a) for a in args))
    proc.start()
    return proc


def test_two_concurrent_runs_leave_a_consistent_history(tmp_path):
    db = tmp_path / "h.db"
    files = [day_file(tmp_path, i, 0) for i in range(2)]
    # three processes at once: two days, one of them twice
    procs = [_start(files[i], db, _date(i)) for i in (0, 1, 1)]
    for p in procs:
        p.join(timeout=60)
    codes = [p.exitcode for p in procs]
    assert codes[0] == 0 and sorted(codes[1:]) == [0, 2]
    assert "already recorded" in "".join(f.read_text() for f in tmp_path.glob("h.db.*.err"))
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert [r[0] for r in con.execute("SELECT date FROM days ORDER BY date")] == [_date(0), _date(1)]
    assert con.execute("SELECT count(*) FROM days").fetchone()[0] == 2
    assert con.execute("SELECT count(*) FROM answers").fetchone()[0] == 2 * 18


def test_a_run_killed_mid_write_leaves_only_whole_days(tmp_path):
    db = tmp_path / "h.db"
    assert _probe(tmp_path, 0, 0) == 0
    ready = tmp_path / "ready"
    proc = _start(day_file(tmp_path, 1, 0), db, _date(1), ready)
    deadline = time.monotonic() + 60
    while not ready.exists():
        assert proc.is_alive() and time.monotonic() < deadline
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.join(timeout=10)
    assert proc.exitcode == -signal.SIGKILL
    with History(db) as h:  # opens (SQLite rolls the unfinished transaction back) and holds whole days only
        assert [d.date for d in h.days()] == [_date(0)]
        assert h.con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert h.con.execute("SELECT count(*) FROM answers").fetchone()[0] == 18
    assert _probe(tmp_path, 1, 0) == 0  # the lock died with the process: the day can be recorded now


class _Hook(BaseHTTPRequestHandler):
    received: list = []

    def do_POST(self):  # noqa: N802
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).received.append((self.headers["Content-Type"], json.loads(body)))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


def _run_to_alert(tmp_path, *extra):
    codes = [_probe(tmp_path, day, shared, *extra) for day, shared in enumerate(SCHEDULE[:11])]
    return codes


def test_webhook_receives_the_alert(tmp_path, capsys):
    _Hook.received = []
    server = HTTPServer(("127.0.0.1", 0), _Hook)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/hook"
        codes = _run_to_alert(tmp_path, "--webhook", url, "--json")
        assert len(_Hook.received) == 1  # only the alert day posts
        alert_line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        # the figure stays up, then falls back to where it was before the rise: one more post, the clear
        later = [_probe(tmp_path, day, shared, "--webhook", url) for day, shared in ((11, 9), (12, 2), (13, 0))]
    finally:
        server.shutdown()
        server.server_close()
    assert codes[-1] == 1 and later == [0, 0, 0]
    (content_type, payload), (_, cleared) = _Hook.received
    assert content_type.startswith("application/json")
    assert payload["event"] == "alert" and payload["date"] == _date(10)
    assert payload["rollback_to"]["checkpoint_id"] == "step-7000"
    assert alert_line["webhook"]["ok"] is True
    assert cleared["event"] == "cleared" and cleared["date"] == _date(13)
    assert cleared["episode"]["alert_date"] == _date(10) and cleared["episode"]["cleared_date"] == _date(13)
    with History(tmp_path / "h.db") as h:
        assert [(n["date"], n["event"], n["ok"]) for n in h.notifications()] == [(_date(10), "alert", 1),
                                                                                (_date(13), "cleared", 1)]


def test_a_dead_webhook_does_not_lose_the_day(tmp_path, capsys, monkeypatch):
    import socket

    from sampleaudit.probe import run

    monkeypatch.setattr(run, "send_webhook", _fast(run.send_webhook))
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    codes = _run_to_alert(tmp_path, "--webhook", f"http://127.0.0.1:{port}/hook", "--webhook-timeout", "1")
    assert codes[-1] == 1  # still the alert's exit code
    err = capsys.readouterr().err
    assert "webhook" in err and "failed" in err and "the day is recorded" in err
    with History(tmp_path / "h.db") as h:
        assert h.days()[-1].date == _date(10)
        (note,) = h.notifications()
        assert note["ok"] == 0 and "2 attempts" in note["detail"]


def _fast(send):
    return lambda url, payload, **kw: send(url, payload, **{**kw, "retry_delay": 0.01})


def test_probe_report_shows_days_alerts_and_answers_escaped(tmp_path, capsys):
    for day, shared in enumerate(SCHEDULE[:11]):
        _probe(tmp_path, day, shared)
    hostile = tmp_path / "hostile.jsonl"
    hostile.write_text("".join(json.dumps({"prompt": p, "text": f"<script>alert({i})</script> and more",
                                           "checkpoint": "<b>x</b>"}) + "\n"
                               for p in PROMPTS for i in range(3)), encoding="utf-8")
    assert main(["probe", "--samples", str(hostile), "--date", _date(11), "--history", str(tmp_path / "h.db"),
                 "-q"]) == 0
    capsys.readouterr()
    out = tmp_path / "rep"
    assert main(["probe", "report", "--history", str(tmp_path / "h.db"), "--out", str(out), "--format", "html"]) == 0
    assert "probe.html" in capsys.readouterr().out
    html = (out / "probe.html").read_text(encoding="utf-8")
    assert "<script>" not in html and "&lt;script&gt;alert(0)&lt;/script&gt;" in html
    assert "&lt;b&gt;x&lt;/b&gt;" in html
    for i in range(12):
        assert _date(i) in html
    assert "step-7000" in html and "state-alert" in html and html.count("<svg") == 2
    assert "The last 3 days" in html and PROMPTS[1] in html


def test_a_change_of_the_embedder_runtime_is_recorded_warned_and_shown(tmp_path, capsys, monkeypatch):
    import sampleaudit.embed as embed

    def on(backend, precision):
        e = HashingEmbedder(256)
        e.backend, e.precision = backend, precision
        monkeypatch.setattr(embed, "load_embedder", lambda *a, **k: e)

    on("torch", "fp32")
    for day in range(2):
        assert _probe(tmp_path, day, 0, "--json") == 0
        assert json.loads(capsys.readouterr().out).get("warnings") is None
    on("openvino", "bf16")
    assert _probe(tmp_path, 2, 0, "--json") == 0  # a warning, not a refusal: the same model
    captured = capsys.readouterr()
    (line,) = [x for x in captured.err.splitlines() if "warning" in x]
    assert "openvino bf16 on cpu" in line and "torch fp32 on cpu" in line and _date(1) in line and _date(2) in line
    assert json.loads(captured.out)["warnings"] == [line.removeprefix("sampleaudit: warning: ")]
    assert _probe(tmp_path, 3, 0, "--json") == 0  # the day after compares with day 2: no warning
    assert "warning" not in capsys.readouterr().err
    with History(tmp_path / "h.db") as h:
        assert [d.source["embedder_runtime"]["backend"] for d in h.days()] == ["torch", "torch", "openvino", "openvino"]
    out = tmp_path / "rep"
    assert main(["probe", "report", "--history", str(tmp_path / "h.db"), "--out", str(out), "--format", "html"]) == 0
    html = (out / "probe.html").read_text(encoding="utf-8")
    assert (f"its runtime changed</strong>: torch fp32 on cpu ({_date(0)} to {_date(1)}), then openvino bf16 on cpu "
            f"({_date(2)} to {_date(3)})") in html


def test_probe_report_of_an_empty_history(tmp_path, capsys):
    History(tmp_path / "h.db").close()
    assert main(["probe", "report", "--history", str(tmp_path / "h.db"), "--out", str(tmp_path / "o"),
                 "--format", "html"]) == 0
    assert "Probe trend: 0 days" in (tmp_path / "o" / "probe.html").read_text(encoding="utf-8")


def test_probe_report_without_history_exits_2(tmp_path, capsys):
    assert main(["probe", "report", "--history", str(tmp_path / "none.db"), "--out", str(tmp_path / "o")]) == 2
    assert "no probe history here" in capsys.readouterr().err
    assert not (tmp_path / "none.db").exists()


def test_probe_with_model_generates_archives_and_records_the_checkpoint(tmp_path, capsys):
    import importlib.util

    spec = importlib.util.spec_from_file_location("tiny_lm", ROOT / "tests" / "tiny_lm.py")
    tiny_lm = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tiny_lm)
    model = tiny_lm.build_tiny_lm(tmp_path / "step-100")
    latest = tmp_path / "latest"
    latest.symlink_to(model)  # /ckpt/latest pointing at the newest checkpoint
    prompts = tmp_path / "probes.txt"
    prompts.write_text("tell me a story\nwhy is the sky blue?\n", encoding="utf-8")
    db = tmp_path / "var" / "lib" / "h.db"  # folders created on the first run
    code = main(["probe", "--model", str(latest), "--prompts", str(prompts), "--per-prompt", "3",
                 "--max-new-tokens", "8", "--device", "cpu", "--history", str(db), "--date", "2026-11-01",
                 "--json", "-q", "--out", str(tmp_path / "rep")])
    assert code == 0
    line = json.loads(capsys.readouterr().out.strip())
    assert line["event"] == "ok" and line["checkpoint"]["id"].startswith("step-100@")
    assert line["checkpoint"]["path"] == os.path.realpath(model)
    assert (tmp_path / "var" / "lib" / "h.db.answers" / "2026-11-01.jsonl").is_file()
    assert (tmp_path / "rep" / "probe.html").is_file()
    with History(db) as h:
        (day,) = h.days()
        assert day.n_answers == 6 and day.checkpoint["config_sha256"]


def test_an_older_history_is_migrated_in_one_transaction_keeping_its_days(tmp_path, monkeypatch):
    from sampleaudit.probe import history

    assert _probe(tmp_path, 0, 0) == 0
    calls = []

    def v2(con):
        calls.append(1)
        con.execute("ALTER TABLE days ADD COLUMN note TEXT")

    monkeypatch.setattr(history, "MIGRATIONS", {**history.MIGRATIONS, 2: v2})
    monkeypatch.setattr(history, "SCHEMA_VERSION", 2)
    with History(tmp_path / "h.db") as h:
        assert h.con.execute("PRAGMA user_version").fetchone()[0] == 2
        assert [d.date for d in h.days()] == [_date(0)]
    with History(tmp_path / "h.db"):
        pass
    assert calls == [1]  # once

    def broken(con):
        con.execute("ALTER TABLE days ADD COLUMN other TEXT")
        raise RuntimeError("half-way")

    monkeypatch.setattr(history, "MIGRATIONS", {**history.MIGRATIONS, 3: broken})
    monkeypatch.setattr(history, "SCHEMA_VERSION", 3)
    with pytest.raises(RuntimeError):
        History(tmp_path / "h.db")
    con = sqlite3.connect(tmp_path / "h.db")
    assert con.execute("PRAGMA user_version").fetchone()[0] == 2  # rolled back whole
    assert "other" not in [r[1] for r in con.execute("PRAGMA table_info(days)")]
