"""The embedding cache never stops a run: damaged, unwritable, locked and full caches, for real."""

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import numpy as np
import pytest

from sampleaudit.embed import EmbeddingCache, cache_key, embed_texts
from sampleaudit.embed import cache as cache_module
from sampleaudit.embed.hashing import HashingEmbedder
from sampleaudit.errors import InputError

REPO = Path(__file__).resolve().parent.parent
TEXTS = [f"sample {i}: the model answers question {i % 7} in its own words" for i in range(40)]


class Counting:
    """A hashing embedder that records what it is asked to encode (and can run a hook first)."""

    def __init__(self, dim=32, on_encode=None):
        inner = HashingEmbedder(dim)
        self.inner, self.seen, self.on_encode = inner, [], on_encode
        self.model_id, self.dim, self.device, self.precision = inner.model_id, dim, "cpu", "fp32"

    def encode(self, texts):
        if self.on_encode is not None:
            self.on_encode()
        self.seen.extend(texts)
        return self.inner.encode(texts)


def expected(texts=TEXTS, dim=32):
    """What embed_texts returns without a cache."""
    return embed_texts(list(texts), HashingEmbedder(dim))


def new_cache(directory, **kw):
    """A cache whose warnings are also collected in `.emitted` (what went through `warn`)."""
    emitted = []
    cache = EmbeddingCache(directory, warn=emitted.append, **kw)
    cache.emitted = emitted
    return cache


def filled(directory) -> Path:
    """A good cache of TEXTS in `directory`; returns the database file."""
    cache = new_cache(directory)
    embed_texts(TEXTS, Counting(), cache=cache)
    assert cache.emitted == [] and cache.path.stat().st_size > 0
    return cache.path


def assert_uses_rebuilt_cache(directory):
    """The next run reads every vector from the cache and warns of nothing."""
    emb, cache = Counting(), new_cache(directory)
    assert np.array_equal(embed_texts(TEXTS, emb, cache=cache), expected())
    assert emb.seen == [] and cache.emitted == []


def _truncated(good: bytes) -> bytes:
    return good[: len(good) // 2]


def _truncated_by_one(good: bytes) -> bytes:
    return good[:-1]


def _appended(good: bytes) -> bytes:
    return good + b"garbage" * 100


def _random(good: bytes) -> bytes:
    return np.random.default_rng(0).bytes(len(good))


def _foreign(good: bytes) -> bytes:
    path = Path(tempfile.mkdtemp()) / "other.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE people (name TEXT, age INTEGER)")
    con.execute("INSERT INTO people VALUES ('Ada', 36)")
    con.commit()
    con.close()
    data = path.read_bytes()
    shutil.rmtree(path.parent)
    return data


DAMAGE = {"truncated": _truncated, "truncated by one byte": _truncated_by_one, "garbage appended": _appended,
          "random bytes": _random, "foreign database": _foreign}
REASON = {"truncated": "malformed", "truncated by one byte": "truncated", "garbage appended": "after its last page",
          "random bytes": "not a database", "foreign database": "other tables (people)"}


@pytest.mark.parametrize("kind", list(DAMAGE))
def test_damaged_file_is_moved_aside_and_rebuilt(tmp_path, kind):
    path = filled(tmp_path)
    broken = DAMAGE[kind](path.read_bytes())
    path.write_bytes(broken)

    emb, cache = Counting(), new_cache(tmp_path)
    out = embed_texts(TEXTS, emb, cache=cache)
    assert np.array_equal(out, expected())
    assert emb.seen == TEXTS  # nothing was read from the broken file
    assert len(cache.emitted) == 1 and cache.warnings == cache.emitted
    (aside,) = tmp_path.glob("embeddings.sqlite.damaged-*")
    message = cache.emitted[0]
    assert str(path) in message and str(aside) in message and REASON[kind] in message and "\n" not in message
    assert aside.read_bytes() == broken  # kept as it was, for whoever wants to look
    assert_uses_rebuilt_cache(tmp_path)


def test_companion_files_move_with_the_damaged_file(tmp_path):
    path = filled(tmp_path)
    path.write_bytes(_random(path.read_bytes()))
    for suffix in ("-journal", "-wal"):
        Path(f"{path}{suffix}").write_bytes(b"left over from a crash")
    cache = new_cache(tmp_path)
    assert np.array_equal(embed_texts(TEXTS, Counting(), cache=cache), expected())
    assert len(cache.emitted) == 1
    (aside,) = tmp_path.glob("embeddings.sqlite.damaged-*[0-9]Z")
    assert Path(f"{aside}-journal").read_bytes() == b"left over from a crash"
    assert Path(f"{aside}-wal").exists() and not Path(f"{path}-journal").exists() and not Path(f"{path}-wal").exists()
    assert_uses_rebuilt_cache(tmp_path)


def test_damage_found_while_reading_is_healed_and_nothing_is_lost(tmp_path):
    path = filled(tmp_path)
    cache = new_cache(tmp_path)
    assert cache.check()  # the file was sound when checked...
    path.write_bytes(_random(path.read_bytes()))  # ...and is overwritten before the read
    emb = Counting()
    assert np.array_equal(embed_texts(TEXTS, emb, cache=cache), expected())
    assert emb.seen == TEXTS and len(cache.emitted) == 1 and "not a database" in cache.emitted[0]
    assert len(list(tmp_path.glob("embeddings.sqlite.damaged-*"))) == 1
    assert_uses_rebuilt_cache(tmp_path)  # the vectors went into the rebuilt file


def test_damage_found_while_writing_is_healed_and_the_vectors_stored(tmp_path):
    path = filled(tmp_path / "seed")
    broken = _random(path.read_bytes())
    target = tmp_path / "cache"
    cache = new_cache(target)
    assert cache.check()
    emb = Counting(on_encode=lambda: cache.path.write_bytes(broken))  # damaged between the read and the write
    assert np.array_equal(embed_texts(TEXTS, emb, cache=cache), expected())
    assert len(cache.emitted) == 1 and "is damaged" in cache.emitted[0]
    assert len(list(target.glob("embeddings.sqlite.damaged-*"))) == 1
    assert_uses_rebuilt_cache(target)


def test_empty_file_becomes_a_cache_without_a_warning(tmp_path):
    (tmp_path / "embeddings.sqlite").write_bytes(b"")
    cache = new_cache(tmp_path)
    embed_texts(TEXTS, Counting(), cache=cache)
    assert cache.emitted == [] and not list(tmp_path.glob("*.damaged-*"))
    assert_uses_rebuilt_cache(tmp_path)


def test_format_0_cache_is_upgraded_in_place(tmp_path):
    path = tmp_path / "embeddings.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE embeddings (model TEXT, key BLOB, vector BLOB, PRIMARY KEY (model, key))")
    con.execute("INSERT INTO embeddings VALUES ('hashing-char-3-5-32', x'00', x'0000803f')")  # no precision
    con.commit()
    con.close()
    cache = new_cache(tmp_path)
    assert cache.check() and cache.emitted == []
    with sqlite3.connect(path) as con:
        assert con.execute("SELECT value FROM meta WHERE name = 'format'").fetchone() == (str(cache_module.FORMAT_VERSION),)
        assert con.execute("SELECT count(*) FROM embeddings").fetchone() == (0,)  # untagged rows cannot be trusted
    con.close()
    embed_texts(TEXTS, Counting(), cache=cache)
    assert_uses_rebuilt_cache(tmp_path)


def test_newer_format_is_left_alone(tmp_path):
    path = filled(tmp_path)
    with sqlite3.connect(path) as con:
        con.execute("UPDATE meta SET value = '99' WHERE name = 'format'")
    con.close()
    before = path.read_bytes()
    emb, cache = Counting(), new_cache(tmp_path)
    assert np.array_equal(embed_texts(TEXTS, emb, cache=cache), expected())
    assert emb.seen == TEXTS and len(cache.emitted) == 1
    assert "format 99" in cache.emitted[0] and str(path) in cache.emitted[0]
    assert path.read_bytes() == before and not list(tmp_path.glob("*.damaged-*"))


def test_file_removed_mid_run_is_recreated(tmp_path):
    cache = new_cache(tmp_path)
    embed_texts(TEXTS[:5], Counting(), cache=cache)
    cache.path.unlink()
    embed_texts(TEXTS, Counting(), cache=cache)
    assert cache.emitted == []
    assert_uses_rebuilt_cache(tmp_path)


# -- folders that cannot be written ---------------------------------------------------------------


@pytest.mark.parametrize("where", ["under a regular file", "is a regular file"])
def test_folder_that_cannot_be_made_means_no_cache(tmp_path, where):
    (tmp_path / "file").write_text("not a folder")
    folder = tmp_path / "file" / "cache" if where == "under a regular file" else tmp_path / "file"
    cache = new_cache(folder)
    assert cache.check() is False
    emb = Counting()
    assert np.array_equal(embed_texts(TEXTS, emb, cache=cache), expected())
    assert np.array_equal(embed_texts(TEXTS, emb, cache=cache), expected())
    assert len(cache.emitted) == 1 and str(folder) in cache.emitted[0] and "without the embedding cache" in cache.emitted[0]


def test_permission_error_is_found_before_embedding(tmp_path, monkeypatch):
    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied", str(tmp_path / "x"))

    monkeypatch.setattr(cache_module.tempfile, "mkstemp", refuse)
    cache = new_cache(tmp_path / "cache")
    assert cache.check() is False
    assert cache.emitted == [f"embedding cache folder {tmp_path / 'cache'} cannot be written (Permission denied); "
                             "running without the embedding cache"]
    assert np.array_equal(embed_texts(TEXTS, Counting(), cache=cache), expected())
    assert not cache.path.exists() and len(cache.emitted) == 1


def test_database_that_is_a_folder_means_no_cache(tmp_path):
    (tmp_path / "embeddings.sqlite").mkdir()
    cache = new_cache(tmp_path)
    assert cache.check() is False
    assert np.array_equal(embed_texts(TEXTS, Counting(), cache=cache), expected())
    assert len(cache.emitted) == 1 and str(tmp_path / "embeddings.sqlite") in cache.emitted[0]


_UNPRIVILEGED = textwrap.dedent("""
    import json, os, sys
    import numpy as np
    from sampleaudit.embed import EmbeddingCache, embed_texts
    from sampleaudit.embed.hashing import HashingEmbedder
    emb = HashingEmbedder(32)  # sklearn loads here, before the files under /root become unreadable
    if os.geteuid() == 0:
        try:
            os.setgid(65534)
            os.setuid(65534)
        except OSError as exc:
            print(json.dumps({"skip": f"cannot drop privileges: {exc}"}))
            sys.exit(0)
    emitted = []
    cache = EmbeddingCache(sys.argv[1], warn=emitted.append)
    ok = cache.check()
    out = embed_texts(["one text", "another text"], emb, cache=cache)
    print(json.dumps({"ok": ok, "emitted": emitted, "uid": os.geteuid(), "vectors": out.tolist()}))
""")


def test_read_only_folder_for_real():
    base = Path(tempfile.mkdtemp(prefix="sampleaudit-ro-"))
    try:
        base.chmod(0o755)
        folder = base / "cache"
        folder.mkdir(mode=0o555)
        folder.chmod(0o555)
        if os.geteuid() != 0:
            try:
                (folder / "probe").write_text("x")
                pytest.skip("this user can write to a mode 0555 folder; cannot test a read-only folder here")
            except PermissionError:
                pass
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        run = subprocess.run([sys.executable, "-c", _UNPRIVILEGED, str(folder)], capture_output=True, text=True,
                             env=env, timeout=120, check=False)
        assert run.returncode == 0, run.stderr
        report = json.loads(run.stdout.strip().splitlines()[-1])
        if "skip" in report:
            pytest.skip(report["skip"])
        assert report["uid"] != 0 and report["ok"] is False
        assert report["emitted"] == [f"embedding cache folder {folder} cannot be written (Permission denied); "
                                     "running without the embedding cache"]
        assert np.allclose(report["vectors"], expected(["one text", "another text"]))
        assert list(folder.iterdir()) == []
    finally:
        shutil.rmtree(base, ignore_errors=True)


# -- locks ----------------------------------------------------------------------------------------

_LOCKER = textwrap.dedent("""
    import sqlite3, sys
    con = sqlite3.connect(sys.argv[1], isolation_level=None)
    con.execute("BEGIN EXCLUSIVE")
    print("locked", flush=True)
    sys.stdin.readline()
    con.execute("ROLLBACK")
    con.close()
""")


class Locker:
    """Another process holding BEGIN EXCLUSIVE on `path` until released."""

    def __init__(self, path):
        self.proc = subprocess.Popen([sys.executable, "-c", _LOCKER, str(path)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline().strip() == "locked"

    def release(self):
        if self.proc.poll() is None:
            self.proc.stdin.write("\n")
            self.proc.stdin.flush()
            self.proc.wait(timeout=30)
        assert self.proc.returncode == 0


def test_cache_locked_at_the_start_means_no_cache(tmp_path):
    path = filled(tmp_path)
    locker = Locker(path)
    try:
        cache = new_cache(tmp_path, lock_timeout=0.2)
        assert cache.check() is False
        emb = Counting()
        assert np.array_equal(embed_texts(TEXTS, emb, cache=cache), expected())
        assert emb.seen == TEXTS
        assert cache.emitted == [f"embedding cache {path} stayed locked by another process for more than 0.2 s; "
                                 "running without the embedding cache"]
    finally:
        locker.release()
    assert not list(tmp_path.glob("*.damaged-*"))  # a lock is not damage
    assert_uses_rebuilt_cache(tmp_path)


def test_cache_locked_mid_run_means_no_cache_from_then_on(tmp_path):
    path = filled(tmp_path)
    cache = new_cache(tmp_path, lock_timeout=0.2)
    assert cache.check()
    locker = Locker(path)
    try:
        emb = Counting()
        assert np.array_equal(embed_texts(TEXTS, emb, cache=cache), expected())
        assert np.array_equal(embed_texts(TEXTS + ["one more"], emb, cache=cache), expected(TEXTS + ["one more"]))
        assert len(cache.emitted) == 1 and "stayed locked by another process" in cache.emitted[0]
    finally:
        locker.release()


def test_lock_released_in_time_is_waited_for(tmp_path):
    path = filled(tmp_path)
    locker = Locker(path)
    cache = new_cache(tmp_path, lock_timeout=60)
    import threading

    releaser = threading.Timer(0.3, locker.release)
    releaser.start()
    try:
        assert cache.check() and cache.emitted == []
    finally:
        releaser.join()


# -- writes that fail, and connections --------------------------------------------------------------


class Tracked:
    """A real sqlite3 connection that records close() and can fail executemany."""

    def __init__(self, con, fail_writes):
        self._con, self.closed, self.fail_writes = con, False, fail_writes

    def __getattr__(self, name):
        return getattr(self._con, name)

    def __enter__(self):
        self._con.__enter__()
        return self

    def __exit__(self, *exc):
        return self._con.__exit__(*exc)

    def executemany(self, *args):
        if self.fail_writes:
            raise sqlite3.OperationalError("database or disk is full")
        return self._con.executemany(*args)

    def close(self):
        self.closed = True
        self._con.close()


@pytest.fixture
def connections(monkeypatch):
    """Every connection the cache opens, tracked; set `.fail_writes` to make writes fail."""
    opened = []
    real = sqlite3.connect

    class Log(list):
        fail_writes = False

    log = Log()

    def connect(*args, **kwargs):
        con = Tracked(real(*args, **kwargs), log.fail_writes)
        opened.append(con)
        log.append(con)
        return con

    monkeypatch.setattr(cache_module.sqlite3, "connect", connect)
    return log


def test_full_disk_keeps_the_vectors_and_the_run_going(tmp_path, connections):
    cache = new_cache(tmp_path)
    embed_texts(TEXTS[:10], Counting(), cache=cache)  # stored before the disk filled up
    connections.fail_writes = True
    emb = Counting()
    assert np.array_equal(embed_texts(TEXTS, emb, cache=cache), expected())
    assert emb.seen == TEXTS[10:]
    assert cache.emitted == [f"embedding cache {cache.path} failed (database or disk is full); new vectors are kept "
                             "in memory for this run but not stored"]
    n_open = len(connections)
    more = ["a text never seen", "and another"]
    assert np.array_equal(embed_texts(TEXTS + more, emb, cache=cache), expected(TEXTS + more))
    assert emb.seen == TEXTS[10:] + TEXTS[10:] + more  # reads go on: the first ten still come from the cache
    assert len(connections) == n_open + 1  # one read; no further write was tried
    assert len(cache.emitted) == 1
    assert all(con.closed for con in connections)


def test_every_connection_is_closed_on_every_path(tmp_path, connections):
    # sound cache, read and write
    cache = new_cache(tmp_path / "good")
    embed_texts(TEXTS, Counting(), cache=cache)
    embed_texts(TEXTS, Counting(), cache=cache)
    # damaged at the check, and damaged while reading
    path = filled(tmp_path / "bad")
    path.write_bytes(_random(path.read_bytes()))
    embed_texts(TEXTS, Counting(), cache=new_cache(tmp_path / "bad"))
    cache = new_cache(tmp_path / "bad")
    cache.check()
    cache.path.write_bytes(_random(cache.path.read_bytes()))
    embed_texts(TEXTS, Counting(), cache=cache)
    # newer format, and a database that is a folder
    path = filled(tmp_path / "newer")
    con = sqlite3.connect(path)
    con.execute("UPDATE meta SET value = '99'")
    con.commit()
    con.close()
    embed_texts(TEXTS, Counting(), cache=new_cache(tmp_path / "newer"))
    (tmp_path / "dir" / "embeddings.sqlite").mkdir(parents=True)
    embed_texts(TEXTS, Counting(), cache=new_cache(tmp_path / "dir"))
    # locked
    path = filled(tmp_path / "locked")
    locker = Locker(path)
    try:
        embed_texts(TEXTS, Counting(), cache=new_cache(tmp_path / "locked", lock_timeout=0.1))
    finally:
        locker.release()
    # full disk
    connections.fail_writes = True
    embed_texts(TEXTS, Counting(), cache=new_cache(tmp_path / "full"))
    assert len(connections) >= 12
    assert [i for i, con in enumerate(connections) if not con.closed] == []


# -- the warnings channel -------------------------------------------------------------------------


def test_each_warning_is_emitted_once(tmp_path):
    (tmp_path / "file").write_text("")
    cache = new_cache(tmp_path / "file" / "c")
    for _ in range(3):
        cache.check()
        embed_texts(TEXTS, Counting(), cache=cache)
    assert len(cache.emitted) == 1 and cache.warnings == cache.emitted


def test_default_warn_goes_to_the_logger(tmp_path, caplog):
    (tmp_path / "file").write_text("")
    cache = EmbeddingCache(tmp_path / "file" / "c")
    with caplog.at_level("WARNING", logger="sampleaudit.embed.cache"):
        assert cache.check() is False
        cache.check()
    assert [r.getMessage() for r in caplog.records] == cache.warnings and len(cache.warnings) == 1


@pytest.mark.parametrize("bad", [-1, float("nan"), float("inf"), "10"])
def test_lock_timeout_must_be_seconds(tmp_path, bad):
    with pytest.raises(InputError, match="lock_timeout"):
        EmbeddingCache(tmp_path, lock_timeout=bad)


def test_cache_key_has_precision():
    emb = HashingEmbedder(16)
    assert cache_key(emb) == "hashing-char-3-5-16|fp32"


def test_folder_name_with_uri_characters(tmp_path):
    folder = tmp_path / "odd name %41 ?x=1 #frag"
    cache = new_cache(folder)
    embed_texts(TEXTS, Counting(), cache=cache)
    assert cache.emitted == [] and (folder / "embeddings.sqlite").stat().st_size > 0
    assert_uses_rebuilt_cache(folder)


def test_damaged_file_that_cannot_be_moved_means_no_cache(tmp_path, monkeypatch):
    path = filled(tmp_path)
    path.write_bytes(_random(path.read_bytes()))

    def refuse(src, dst):
        raise PermissionError(13, "Permission denied", str(src))

    monkeypatch.setattr(cache_module.os, "rename", refuse)
    cache = new_cache(tmp_path)
    assert np.array_equal(embed_texts(TEXTS, Counting(), cache=cache), expected())
    assert cache.emitted == [f"embedding cache {path} is damaged (file is not a database) and could not be moved "
                             "aside (Permission denied); running without the embedding cache"]
