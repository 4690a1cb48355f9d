"""On-disk embedding cache: vectors keyed by (cache key, SHA-256 of the text), in one SQLite file.

Location: $SAMPLEAUDIT_CACHE_DIR, else $XDG_CACHE_HOME/sampleaudit, else ~/.cache/sampleaudit.
The cache never stops a run: a damaged file is moved aside and rebuilt; a folder that cannot be
written, a file locked by another process or a full disk means running without it, with one warning.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import sqlite3
import tempfile
from collections.abc import Callable, Iterable, Mapping
from contextlib import closing
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from ..errors import InputError

FORMAT_VERSION = 1  # the `format` row of the meta table; a cache with another version is not read
DEFAULT_LOCK_TIMEOUT = 10.0  # seconds to wait for another process's lock before going on without the cache
FILENAME = "embeddings.sqlite"

_COLUMNS = {"embeddings": ("model", "key", "vector"), "meta": ("name", "value")}
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS embeddings (model TEXT, key BLOB, vector BLOB, PRIMARY KEY (model, key))",
    "CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT)",
)
_SIDECARS = ("-journal", "-wal", "-shm")  # SQLite's companion files; they move with the database
_MAGIC = b"SQLite format 3\x00"  # the first 16 bytes of every SQLite database
_CHUNK = 500  # keys per SELECT; SQLite's bound-parameter limit is far above this
# SQLite's primary result codes (sqlite3 names them only from Python 3.11, as it does sqlite_errorcode)
_DAMAGE_CODES = {11, 26}  # SQLITE_CORRUPT, SQLITE_NOTADB
_LOCK_CODES = {5, 6}  # SQLITE_BUSY, SQLITE_LOCKED
_DAMAGE_WORDS = ("malformed", "not a database", "no such table", "no such column")

_log = logging.getLogger(__name__)


def default_cache_dir() -> Path:
    """Where the cache lives unless told otherwise (see module docstring)."""
    if os.environ.get("SAMPLEAUDIT_CACHE_DIR"):
        return Path(os.environ["SAMPLEAUDIT_CACHE_DIR"])
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "sampleaudit"


def _key(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


class _Damaged(Exception):
    """The file is not a sound cache of this format; `reason` says why (one line)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class _Newer(Exception):
    """The file is a cache written by a newer sampleaudit (format `version`)."""

    def __init__(self, version: int):
        super().__init__(version)
        self.version = version


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def _os_reason(exc: OSError) -> str:
    """"Permission denied" rather than "[Errno 13] Permission denied: '/long/path'"."""
    return exc.strerror or _one_line(exc) or type(exc).__name__


def _kind(exc: sqlite3.Error) -> str:
    """"locked", "damaged" or "failed" (disk full, I/O error, read-only file, ...)."""
    code = getattr(exc, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    message = str(exc).lower()
    if primary in _LOCK_CODES or "locked" in message:
        return "locked"
    if primary in _DAMAGE_CODES or any(w in message for w in _DAMAGE_WORDS):
        return "damaged"
    if isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.OperationalError):
        return "damaged"  # IntegrityError and the like: the schema is not ours any more
    return "failed"


def _probe_writable(directory: Path) -> None:
    """Raise OSError unless a file can be created in `directory` (os.access is wrong for root)."""
    fd, name = tempfile.mkstemp(prefix=".sampleaudit-write-test-", dir=directory)
    os.close(fd)
    os.unlink(name)


def _check_header(path: Path) -> None:
    """Raise _Damaged when `path` is not empty and not an SQLite file.

    Done before SQLite opens it: SQLite deletes a -wal or -journal it cannot use, and those
    must move aside with the file they belong to.
    """
    try:
        with open(path, "rb") as f:
            head = f.read(len(_MAGIC))
    except FileNotFoundError:
        return
    if head and head != _MAGIC:
        raise _Damaged("file is not a database")


def _verify(con: sqlite3.Connection, path: Path) -> str:
    """"empty", "legacy" (format 0: no meta table) or "ok"; raise _Damaged or _Newer otherwise.

    Runs inside one read transaction, so no other process can change the file meanwhile.
    """
    try:
        con.execute("BEGIN")
        con.execute("SELECT count(*) FROM sqlite_master").fetchone()  # takes the shared lock
        problems = [row[0] for row in con.execute("PRAGMA quick_check(3)")]
        if problems != ["ok"]:
            raise _Damaged("integrity check: " + "; ".join(_one_line(p) for p in problems))
        tables = {name for (name,) in con.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite%'")}
        if not tables:
            state = "empty"
        elif tables == {"embeddings"}:
            state = "legacy"
        elif tables == set(_COLUMNS):
            state = "ok"
        else:
            raise _Damaged(f"it holds other tables ({', '.join(sorted(tables))}), not an embedding cache")
        for table in tables:
            columns = tuple(row[1] for row in con.execute(f"PRAGMA table_info({table})"))
            if columns != _COLUMNS[table]:
                raise _Damaged(f"table {table} has columns {', '.join(columns)}")
        if state == "ok":
            row = con.execute("SELECT value FROM meta WHERE name = 'format'").fetchone()
            try:
                version = int(row[0])
            except (TypeError, ValueError):
                raise _Damaged("no format version in its meta table") from None
            if version > FORMAT_VERSION:
                raise _Newer(version)
            if version < FORMAT_VERSION:
                state = "legacy"
        pages = con.execute("PRAGMA page_count").fetchone()[0] * con.execute("PRAGMA page_size").fetchone()[0]
        if not Path(f"{path}-wal").exists():  # in WAL mode (never ours) pages may sit in the -wal file
            size = path.stat().st_size
            if size > pages and pages:
                raise _Damaged(f"{size - pages} unexpected byte(s) after its last page")
            if size < pages:
                raise _Damaged(f"truncated: {pages - size} byte(s) short of its last page")
        return state
    except sqlite3.DatabaseError as exc:
        if _kind(exc) != "damaged" or isinstance(exc, sqlite3.ProgrammingError):
            raise
        raise _Damaged(_one_line(exc)) from None
    finally:
        if con.in_transaction:
            con.execute("ROLLBACK")


class EmbeddingCache:
    """Vectors stored as float32 bytes; safe to share between runs and processes.

    Call `check()` before embedding (the first `get_many`/`put_many` calls it anyway): it creates
    the folder, checks the file (SQLite's quick_check, the tables, the format version, the file
    size) and takes the write lock once. A damaged file is moved to `<file>.damaged-<UTC time>`
    (with its -journal/-wal/-shm files) and a new one started. A folder that cannot be written,
    a lock held by another process for more than `lock_timeout` seconds, or a cache written by a
    newer sampleaudit turns the cache off for this object; a write that fails (disk full) turns
    writing off. Each distinct warning goes once through `warn` (default: this module's logger)
    and is kept in `warnings`, one line naming the path. No method raises for a cache problem.
    """

    def __init__(self, directory: str | Path | None = None, *, warn: Callable[[str], None] | None = None,
                 lock_timeout: float = DEFAULT_LOCK_TIMEOUT):
        if not isinstance(lock_timeout, (int, float)) or not math.isfinite(lock_timeout) or lock_timeout < 0:
            raise InputError(f"lock_timeout must be a number of seconds >= 0; got {lock_timeout!r}")
        self.directory = Path(directory).expanduser() if directory else default_cache_dir()
        self.path = self.directory / FILENAME
        self.lock_timeout = float(lock_timeout)
        self.warnings: list[str] = []
        self._warn = warn
        self._usable: bool | None = None  # None: not checked yet
        self._writable = True

    def __repr__(self) -> str:
        return f"EmbeddingCache({str(self.directory)!r})"

    # -- public ---------------------------------------------------------------------------------

    def check(self) -> bool:
        """True when the cache can be used; the first call checks (and if need be rebuilds) the file."""
        if self._usable is None:
            self._usable = self._open()
        return self._usable

    def get_many(self, key: str, texts: Iterable[str]) -> dict[str, np.ndarray]:
        """The stored vectors of `texts` under `key` (see base.cache_key); missing texts are absent."""
        texts = list(texts)
        if not texts or not self._ready():
            return {}
        by_key = {_key(t): t for t in texts}
        keys = list(by_key)
        found: dict[str, np.ndarray] = {}
        try:
            with closing(self._connect()) as con:
                for i in range(0, len(keys), _CHUNK):
                    chunk = keys[i : i + _CHUNK]
                    marks = ",".join("?" * len(chunk))
                    rows = con.execute(
                        f"SELECT key, vector FROM embeddings WHERE model = ? AND key IN ({marks})", [key, *chunk]
                    ).fetchall()
                    for k, blob in rows:
                        if k in by_key and isinstance(blob, bytes) and len(blob) % 4 == 0:
                            found[by_key[k]] = np.frombuffer(blob, dtype=np.float32)
        except sqlite3.DatabaseError as exc:
            self._failed(exc, writing=False)
            return {}
        return found

    def put_many(self, key: str, vectors: Mapping[str, np.ndarray]) -> None:
        """Store `vectors` (text -> vector) under `key`; on failure warn and keep going."""
        if not vectors or not self._ready() or not self._writable:
            return
        rows = [(key, _key(t), np.asarray(v, dtype=np.float32).tobytes()) for t, v in vectors.items()]
        for attempt in (1, 2):
            try:
                with closing(self._connect()) as con, con:
                    con.execute("BEGIN IMMEDIATE")
                    con.executemany("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?)", rows)
                return
            except sqlite3.DatabaseError as exc:
                rebuilt = self._failed(exc, writing=True)
                if not (rebuilt and attempt == 1 and self._ready()):
                    return

    # -- opening and checking -------------------------------------------------------------------

    def _emit(self, message: str) -> None:
        message = _one_line(message)
        if message in self.warnings:
            return
        self.warnings.append(message)
        if self._warn is not None:
            self._warn(message)
        else:
            _log.warning(message)

    def _off(self, message: str) -> bool:
        self._emit(message)
        self._usable = False
        return False

    def _connect(self, *, create: bool = False) -> sqlite3.Connection:
        uri = Path(os.path.abspath(self.path)).as_uri() + ("?mode=rwc" if create else "?mode=rw")
        return sqlite3.connect(uri, uri=True, timeout=self.lock_timeout, isolation_level=None)

    def _ready(self) -> bool:
        """check(), and start over when the file has vanished since (a user cleared the cache)."""
        if self.check() and not self.path.exists():
            self._usable = None
        return self.check()

    def _open(self) -> bool:
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            _probe_writable(self.directory)
        except OSError as exc:
            return self._off(f"embedding cache folder {self.directory} cannot be written ({_os_reason(exc)}); "
                             "running without the embedding cache")
        damaged_before = None
        while True:
            try:
                self._prepare()
                return True
            except _Damaged as exc:
                if damaged_before is not None:  # the fresh file failed too: give up, keep the run going
                    return self._off(f"new embedding cache {self.path} failed its check too ({exc.reason}); "
                                     "running without the embedding cache")
                damaged_before = exc.reason
                if not self._set_aside(exc.reason):
                    return False
            except _Newer as exc:
                return self._off(f"embedding cache {self.path} has format {exc.version}, newer than this "
                                 f"sampleaudit reads ({FORMAT_VERSION}); running without the embedding cache "
                                 "(upgrade sampleaudit or set SAMPLEAUDIT_CACHE_DIR to another folder)")
            except sqlite3.DatabaseError as exc:
                if isinstance(exc, sqlite3.ProgrammingError):
                    raise
                return self._off(self._problem(exc) + "; running without the embedding cache")
            except OSError as exc:
                return self._off(f"embedding cache {self.path} cannot be opened ({_os_reason(exc)}); "
                                 "running without the embedding cache")

    def _prepare(self) -> None:
        """Check the file, create the tables it lacks, and prove the write lock can be taken."""
        _check_header(self.path)
        with closing(self._connect(create=True)) as con:
            state = _verify(con, self.path)
            con.execute("BEGIN IMMEDIATE")  # fails now, not mid-run, when the file is read-only or locked
            try:
                if state != "ok":
                    for statement in _SCHEMA:
                        con.execute(statement)
                    con.execute("DELETE FROM embeddings WHERE instr(model, '|') = 0")  # format 0: no precision
                    con.execute("INSERT OR REPLACE INTO meta VALUES ('format', ?)", (str(FORMAT_VERSION),))
                con.execute("COMMIT")
            finally:
                if con.in_transaction:
                    con.execute("ROLLBACK")

    def _set_aside(self, reason: str) -> bool:
        """Move the damaged file (and its companions) aside and warn; False (cache off) if it cannot be."""
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        aside = self.path.with_name(f"{self.path.name}.damaged-{stamp}")
        n = 1
        while any(Path(f"{aside}{s}").exists() for s in ("", *_SIDECARS)):
            n += 1
            aside = self.path.with_name(f"{self.path.name}.damaged-{stamp}-{n}")
        try:
            os.rename(self.path, aside)
        except FileNotFoundError:
            return True  # another process moved it first; the next check builds on what that one left
        except OSError as exc:
            return self._off(f"embedding cache {self.path} is damaged ({reason}) and could not be moved aside "
                             f"({_os_reason(exc)}); running without the embedding cache")
        try:
            for suffix in _SIDECARS:
                if Path(f"{self.path}{suffix}").exists():
                    os.rename(f"{self.path}{suffix}", f"{aside}{suffix}")
        except OSError as exc:  # a stale journal must not meet the new file: no cache this run
            return self._off(f"embedding cache {self.path} is damaged ({reason}); moved it to {aside} but not its "
                             f"{'/'.join(_SIDECARS)} files ({_os_reason(exc)}); running without the embedding cache")
        self._emit(f"embedding cache {self.path} is damaged ({reason}); moved it to {aside} and started a new cache")
        return True

    # -- failures after the check ---------------------------------------------------------------

    def _problem(self, exc: sqlite3.Error) -> str:
        if _kind(exc) == "locked":
            return (f"embedding cache {self.path} stayed locked by another process for more than "
                    f"{self.lock_timeout:g} s")
        return f"embedding cache {self.path} failed ({_one_line(exc) or type(exc).__name__})"

    def _failed(self, exc: sqlite3.DatabaseError, *, writing: bool) -> bool:
        """Handle an error of get_many/put_many; True when the file was damaged and has been rebuilt."""
        if isinstance(exc, sqlite3.ProgrammingError):
            raise exc  # a bug here, not a cache problem
        kind = _kind(exc)
        if kind == "damaged":
            if self._set_aside(_one_line(exc)):
                self._usable = None
                return True
            return False
        if writing:
            self._writable = False
            self._emit(self._problem(exc) + "; new vectors are kept in memory for this run but not stored")
        else:
            self._off(self._problem(exc) + "; running without the embedding cache")
        return False
