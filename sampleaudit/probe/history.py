"""The probe's history: one SQLite file (no server) holding every recorded day, its answers and figures.

- Schema version in PRAGMA user_version; older files are migrated in one transaction (MIGRATIONS),
  newer ones refused. WAL journal, so `probe report` reads while a run writes; busy timeout 30 s.
- A day is written in one transaction (BEGIN IMMEDIATE ... COMMIT): a run killed mid-write leaves the
  file holding only whole days (SQLite rolls the unfinished transaction back when it next opens).
- Nothing is ever deleted: `--replace` writes a new run of the day and marks the old one superseded.
- `HistoryLock`: an fcntl lock on `<db>.lock`, held for a whole probe run, so a second run at the same
  moment (cron overlap) waits up to a timeout, then stops with a message naming the holder.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from ..errors import InputError, SampleAuditError

SCHEMA_VERSION = 1
BUSY_TIMEOUT_MS = 30_000
DEFAULT_LOCK_TIMEOUT = 600.0


class HistoryBusyError(SampleAuditError):
    """Another run holds the history's lock for longer than the timeout (exit 2)."""


def _run_script(con: sqlite3.Connection, script: str) -> None:
    """Each statement of `script` in the current transaction (executescript would commit it first)."""
    for statement in script.split(";"):
        if statement.strip():
            con.execute(statement)


def _v1(con: sqlite3.Connection) -> None:
    _run_script(con, """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE days (
            run_id INTEGER PRIMARY KEY AUTOINCREMENT,
            date TEXT NOT NULL,
            recorded_at TEXT NOT NULL,
            superseded_by INTEGER,  -- the run that replaced this one (NULL: current)
            checkpoint_id TEXT NOT NULL,
            checkpoint_path TEXT,
            checkpoint_json TEXT NOT NULL,
            embedder TEXT NOT NULL,
            embedder_dim INTEGER NOT NULL,
            reference_date TEXT,
            n_answers INTEGER NOT NULL,
            figures_json TEXT NOT NULL,
            source_json TEXT NOT NULL,
            tool_version TEXT NOT NULL
        );
        CREATE UNIQUE INDEX days_current ON days(date) WHERE superseded_by IS NULL;
        CREATE TABLE answers (
            run_id INTEGER NOT NULL REFERENCES days(run_id),
            idx INTEGER NOT NULL,
            sample_id TEXT NOT NULL,
            prompt TEXT NOT NULL,
            text TEXT NOT NULL,
            embedding BLOB NOT NULL,
            PRIMARY KEY (run_id, idx)
        );
        CREATE TABLE notifications (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            run_id INTEGER NOT NULL REFERENCES days(run_id),
            event TEXT NOT NULL,
            url TEXT NOT NULL,
            ok INTEGER NOT NULL,
            detail TEXT NOT NULL,
            sent_at TEXT NOT NULL
        );
    """)


# version reached -> the step that reaches it from the one before (each runs inside one transaction)
MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {1: _v1}


@dataclass(frozen=True)
class Day:
    """One recorded day (its current run): identity, checkpoint and figures; answers load separately."""

    run_id: int
    date: str
    recorded_at: str
    checkpoint_id: str
    checkpoint_path: str | None
    checkpoint: dict
    embedder: str
    embedder_dim: int
    reference_date: str | None
    n_answers: int
    figures: dict
    source: dict


@dataclass(frozen=True)
class Answer:
    sample_id: str
    prompt: str
    text: str
    embedding: np.ndarray


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class HistoryLock:
    """Exclusive fcntl lock on `<db>.lock`; waits up to `timeout` seconds, then HistoryBusyError."""

    def __init__(self, db: str | Path, *, timeout: float = DEFAULT_LOCK_TIMEOUT, poll: float = 0.1):
        self.db = Path(db)
        self.path = self.db.with_name(self.db.name + ".lock")
        self.timeout = timeout
        self.poll = poll
        self._fd: int | None = None

    def __enter__(self) -> HistoryLock:
        import fcntl

        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise InputError(f"cannot create the lock file {self.path} ({exc.strerror}); the history's folder must "
                             "be writable") from None
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = os.pread(fd, 200, 0).decode("utf-8", "replace").split()
                    os.close(fd)
                    who = f"pid {holder[0]}, since {holder[1]}" if len(holder) >= 2 else "unknown process"
                    raise HistoryBusyError(
                        f"another sampleaudit probe holds the lock on {self.db} ({who}); waited {self.timeout:g} s. "
                        "Two runs overlap (is the cron interval shorter than a run?); try again later or raise "
                        "--lock-timeout") from None
                time.sleep(self.poll)
            except BaseException:
                os.close(fd)
                raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {now_iso()}\n".encode(), 0)
        self._fd = fd
        return self

    def __exit__(self, *exc) -> None:
        if self._fd is not None:
            os.close(self._fd)  # releases the flock; the file stays (removing it would race a waiter)
            self._fd = None


class History:
    """An open history file. `History(path)` creates it (and its folder) when missing; close() or `with`."""

    def __init__(self, path: str | Path, *, create: bool = True):
        self.path = Path(path)
        if not self.path.exists():
            if not create:
                raise InputError("no probe history here; record a day first with sampleaudit probe",
                                 path=str(self.path))
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise InputError(f"cannot create the history's folder ({exc.strerror})", path=str(self.path)) from None
        elif self.path.is_dir():
            raise InputError("is a folder; --history names the database file (e.g. probes.db)", path=str(self.path))
        try:
            self.con = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
            self.con.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            self._migrate()
            self.con.execute("PRAGMA journal_mode = WAL")
            self.con.execute("PRAGMA synchronous = FULL")
            self.con.execute("PRAGMA foreign_keys = ON")
        except sqlite3.DatabaseError as exc:
            self.close()
            raise InputError(f"not a readable sampleaudit probe history ({exc})", path=str(self.path)) from None
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> History:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        con = getattr(self, "con", None)
        if con is not None:
            con.close()
            self.con = None

    def _migrate(self) -> None:
        version = self.con.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise InputError(f"was written by a newer sampleaudit (history schema {version}; this one reads up to "
                             f"{SCHEMA_VERSION}); upgrade sampleaudit", path=str(self.path))
        if version == SCHEMA_VERSION:
            return
        if version == 0:
            tables = self.con.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table'").fetchone()[0]
            if tables:
                raise InputError("is an SQLite file but not a sampleaudit probe history; choose another --history",
                                 path=str(self.path))
        self.con.execute("BEGIN IMMEDIATE")
        try:
            # another process may have migrated the file while this one waited for the write lock
            version = self.con.execute("PRAGMA user_version").fetchone()[0]
            for step in range(version + 1, SCHEMA_VERSION + 1):
                MIGRATIONS[step](self.con)
            if version == 0:
                self.con.execute("INSERT INTO meta VALUES ('created_at', ?)", (now_iso(),))
            self.con.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            self.con.execute("COMMIT")
        except BaseException:
            self.con.execute("ROLLBACK")
            raise

    # -- reading -------------------------------------------------------------------------------------------
    _DAY_COLUMNS = ("run_id, date, recorded_at, checkpoint_id, checkpoint_path, checkpoint_json, embedder, "
                    "embedder_dim, reference_date, n_answers, figures_json, source_json")

    @staticmethod
    def _day(row) -> Day:
        return Day(row[0], row[1], row[2], row[3], row[4], json.loads(row[5]), row[6], row[7], row[8], row[9],
                   json.loads(row[10]), json.loads(row[11]))

    def days(self) -> list[Day]:
        """Every recorded day's current run, in date order."""
        rows = self.con.execute(f"SELECT {self._DAY_COLUMNS} FROM days WHERE superseded_by IS NULL ORDER BY date")
        return [self._day(r) for r in rows]

    def day(self, date: str) -> Day | None:
        row = self.con.execute(f"SELECT {self._DAY_COLUMNS} FROM days WHERE date = ? AND superseded_by IS NULL",
                               (date,)).fetchone()
        return self._day(row) if row else None

    def answers(self, run_id: int) -> list[Answer]:
        rows = self.con.execute("SELECT a.sample_id, a.prompt, a.text, a.embedding, d.embedder_dim FROM answers a "
                                "JOIN days d USING (run_id) WHERE run_id = ? ORDER BY idx", (run_id,))
        return [Answer(r[0], r[1], r[2], np.frombuffer(r[3], dtype="<f4").reshape(r[4])) for r in rows]

    def embedder(self) -> tuple[str, int] | None:
        """The embedder (name, dim) the history's figures were computed with (that of its first day)."""
        row = self.con.execute("SELECT embedder, embedder_dim FROM days ORDER BY run_id LIMIT 1").fetchone()
        return (row[0], row[1]) if row else None

    def n_runs(self) -> int:
        return self.con.execute("SELECT count(*) FROM days").fetchone()[0]

    # -- writing -------------------------------------------------------------------------------------------
    def record_day(self, *, date: str, checkpoint_id: str, checkpoint_path: str | None, checkpoint: dict,
                   embedder: str, embedder_dim: int, reference_date: str | None, figures: dict, source: dict,
                   answers: list[tuple[str, str, str]], embeddings: np.ndarray, tool_version: str,
                   replace: bool = False) -> int:
        """Write one day (its answers: (sample id, prompt, text) with their embeddings) in one transaction.

        A day already recorded is refused (InputError) unless `replace`, which marks the old run superseded
        (it stays in the file). Returns the new run's id.
        """
        emb = np.ascontiguousarray(embeddings, dtype="<f4")
        if emb.shape != (len(answers), embedder_dim):
            raise ValueError(f"embeddings have shape {emb.shape}; expected {(len(answers), embedder_dim)}")
        self.con.execute("BEGIN IMMEDIATE")
        try:
            old = self.con.execute("SELECT run_id FROM days WHERE date = ? AND superseded_by IS NULL",
                                   (date,)).fetchone()
            if old and not replace:
                raise InputError(f"{date} is already recorded in {self.path}; pass --replace to record it again "
                                 "(the earlier run is kept, marked superseded)")
            if old:  # out of the unique index of current days first; the real id follows (same transaction)
                self.con.execute("UPDATE days SET superseded_by = 0 WHERE run_id = ?", (old[0],))
            cur = self.con.execute(
                "INSERT INTO days (date, recorded_at, checkpoint_id, checkpoint_path, checkpoint_json, embedder, "
                "embedder_dim, reference_date, n_answers, figures_json, source_json, tool_version) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (date, now_iso(), checkpoint_id, checkpoint_path, json.dumps(checkpoint, sort_keys=True), embedder,
                 embedder_dim, reference_date, len(answers), json.dumps(figures, sort_keys=True),
                 json.dumps(source, sort_keys=True), tool_version))
            run_id = cur.lastrowid
            if old:
                self.con.execute("UPDATE days SET superseded_by = ? WHERE run_id = ?", (run_id, old[0]))
            self._insert_answers(run_id, answers, emb)
            self.con.execute("COMMIT")
        except BaseException:
            self.con.execute("ROLLBACK")
            raise
        return run_id

    def _insert_answers(self, run_id: int, answers: list[tuple[str, str, str]], emb: np.ndarray) -> None:
        self.con.executemany("INSERT INTO answers VALUES (?, ?, ?, ?, ?, ?)",
                             ((run_id, i, sid, p, t, emb[i].tobytes()) for i, (sid, p, t) in enumerate(answers)))

    def record_notification(self, run_id: int, *, event: str, url: str, ok: bool, detail: str) -> None:
        with self.con:
            self.con.execute("INSERT INTO notifications (run_id, event, url, ok, detail, sent_at) "
                             "VALUES (?, ?, ?, ?, ?, ?)", (run_id, event, url, int(ok), detail, now_iso()))

    def notifications(self) -> list[dict]:
        rows = self.con.execute("SELECT n.run_id, d.date, n.event, n.url, n.ok, n.detail, n.sent_at FROM "
                                "notifications n JOIN days d USING (run_id) ORDER BY n.id")
        return [dict(zip(("run_id", "date", "event", "url", "ok", "detail", "sent_at"), r)) for r in rows]
