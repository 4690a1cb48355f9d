"""Output folder checks, the run lock and writing a set of outputs together (sampleaudit/fileio.py)."""

from __future__ import annotations

import errno
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from sampleaudit import fileio
from sampleaudit.errors import InputError
from sampleaudit.fileio import OutputLock, check_output_dir, write_atomic, write_outputs

ROOT = Path(__file__).resolve().parent.parent
NOBODY = 65534
# Child processes import sampleaudit.fileio without the package's __init__ (which loads numpy,
# torch and the rest): a few milliseconds instead of seconds.
PREAMBLE = f"""
import os, sys, types
pkg = types.ModuleType("sampleaudit")
pkg.__path__ = [{str(ROOT / "sampleaudit")!r}]
sys.modules["sampleaudit"] = pkg
from sampleaudit import fileio
from sampleaudit.errors import InputError
"""


def _python(script: str, *args: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", PREAMBLE + script, *args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)


def _listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.fixture
def open_tmp():
    """A temporary folder every user can traverse (pytest's own is private to root)."""
    folder = Path(tempfile.mkdtemp(prefix="sampleaudit-test-"))
    folder.chmod(0o755)
    yield folder
    for p in [folder, *folder.rglob("*")]:
        if p.is_dir() and not p.is_symlink():
            p.chmod(0o755)
    shutil.rmtree(folder)


def _as_unprivileged(fn, *args) -> str:
    """fn(*args) run by a user without special rights: 'ok' or the InputError's text.

    As root (where permissions do not stop writes) in a forked child that drops to uid/gid 65534;
    a fork rather than an exec because the interpreter here lies in a folder only root can read.
    Otherwise in this process.
    """
    if os.geteuid() != 0:
        try:
            fn(*args)
            return "ok"
        except InputError as exc:
            return str(exc)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never return into pytest
        status = 1
        try:
            os.close(read_end)
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            try:
                fn(*args)
                out = "ok"
            except InputError as exc:
                out = str(exc)
            os.write(write_end, out.encode("utf-8"))
            status = 0
        finally:
            os._exit(status)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as f:
        out = f.read().decode("utf-8")
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "the unprivileged child failed"
    return out


# --- check_output_dir -------------------------------------------------------------------------

def test_existing_file_and_path_under_a_file_are_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("reports").mkdir()
    Path("reports/x").write_text("not a folder")
    Path("reports/file").write_text("")
    with pytest.raises(InputError) as err:
        check_output_dir("reports/x")
    assert str(err.value) == "reports/x is a file, not a folder; choose another --out"
    with pytest.raises(InputError) as err:
        check_output_dir("reports/file/sub")
    assert str(err.value) == "cannot create reports/file/sub: reports/file is a file; choose another --out"
    with pytest.raises(InputError) as err:
        check_output_dir("reports/file/sub/deeper")
    assert str(err.value) == "cannot create reports/file/sub/deeper: reports/file is a file; choose another --out"


def test_a_name_longer_than_the_file_system_allows(tmp_path):
    target = tmp_path / ("n" * 300) / "run"
    with pytest.raises(InputError) as err:
        check_output_dir(target)
    assert str(err.value) == f"cannot create {target} (File name too long); choose another --out"


def test_writable_targets_pass_and_nothing_is_created(tmp_path):
    (tmp_path / "existing").mkdir()
    (tmp_path / "existing" / "old.txt").write_text("x")
    before = _listing(tmp_path)
    check_output_dir(tmp_path / "existing")
    check_output_dir(tmp_path / "new" / "nested" / "run42")
    check_output_dir(tmp_path / "new")
    assert _listing(tmp_path) == before


def test_unwritable_folders_for_real(open_tmp):
    locked = open_tmp / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    inside = open_tmp / "inside"  # writable itself, but only by its owner (root)
    inside.mkdir(mode=0o755)
    inside.chmod(0o755)
    denied = os.strerror(errno.EACCES)
    assert _as_unprivileged(check_output_dir, locked) == (
        f"cannot write in {locked} ({denied}); choose another --out or fix its permissions")
    assert _as_unprivileged(check_output_dir, locked / "run42" / "sub") == (
        f"cannot create {locked / 'run42' / 'sub'}: cannot write in {locked} ({denied}); choose another --out")
    if os.geteuid() == 0:
        assert _as_unprivileged(check_output_dir, inside) == (
            f"cannot write in {inside} ({denied}); choose another --out or fix its permissions")
    open_tmp.chmod(0o777)  # a folder this user may write in passes, and is left empty
    assert _as_unprivileged(check_output_dir, open_tmp / "new" / "run") == "ok"
    assert sorted(p.name for p in open_tmp.iterdir()) == ["inside", "locked"]


def test_read_only_and_unwritable_through_monkeypatching(tmp_path, monkeypatch):
    existing = tmp_path / "ro"
    existing.mkdir()
    real_statvfs = os.statvfs

    class ReadOnly:
        def __init__(self, real):
            self.f_flag = real.f_flag | os.ST_RDONLY

    monkeypatch.setattr(os, "statvfs", lambda p: ReadOnly(real_statvfs(p)))
    with pytest.raises(InputError) as err:
        check_output_dir(existing)
    assert str(err.value) == (f"cannot write in {existing} (Read-only file system); choose another --out or fix "
                              "its permissions")
    monkeypatch.setattr(os, "statvfs", real_statvfs)

    def refuse(*args, **kwargs):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    with pytest.raises(InputError) as err:
        check_output_dir(existing / "run")
    assert str(err.value) == (f"cannot create {existing / 'run'}: cannot write in {existing} (Read-only file system);"
                              " choose another --out")
    monkeypatch.setattr(os, "access", lambda *a, **k: False)
    with pytest.raises(InputError, match=r"\(Permission denied\); choose another --out or fix its permissions$"):
        check_output_dir(existing)


# --- OutputLock -------------------------------------------------------------------------------

HOLD = """
with fileio.OutputLock(sys.argv[1]):
    print("locked", flush=True)
    sys.stdin.readline()
"""


def test_second_run_is_refused_while_the_first_holds_the_lock(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    holder = _python(HOLD, "reports/run42")
    try:
        assert holder.stdout.readline().strip() == "locked", holder.stderr.read()
        with pytest.raises(InputError) as err:
            with OutputLock("reports/run42"):
                pass
        assert str(err.value) == (f"another sampleaudit run (pid {holder.pid}) is writing to reports/run42; "
                                  "wait for it to finish or choose another --out")
        with OutputLock("reports/other"):  # another folder is not blocked
            pass
        # the same folder named another way is the same lock
        with pytest.raises(InputError, match=rf"\(pid {holder.pid}\)"):
            OutputLock(tmp_path / "reports" / ".." / "reports" / "run42").acquire()
    finally:
        holder.communicate("\n", timeout=60)
    assert holder.returncode == 0
    with OutputLock("reports/run42") as lock:
        assert lock.lock_file.read_text().split("\n")[0] == str(os.getpid())
    assert not Path("reports").exists()  # the lock never touches the output folder


def test_lock_file_lives_outside_the_output_folder_and_is_removed(tmp_path):
    out = tmp_path / "run"
    lock = OutputLock(out)
    assert not lock.lock_file.is_relative_to(out)
    assert lock.lock_file.parent == Path(tempfile.gettempdir()) / f"sampleaudit-locks-{os.getuid()}"
    with lock:
        assert lock.lock_file.exists()
        assert not out.exists()
    assert not lock.lock_file.exists()
    assert (lock.lock_file.parent.stat().st_mode & 0o777) == 0o700


def test_a_killed_holder_releases_the_lock(tmp_path):
    holder = _python(HOLD, str(tmp_path / "run"))
    assert holder.stdout.readline().strip() == "locked"
    holder.send_signal(signal.SIGKILL)
    holder.communicate(timeout=60)
    with OutputLock(tmp_path / "run"):  # the kernel dropped the flock with the process
        pass


def test_the_waiting_process_is_the_one_refused(tmp_path):
    with OutputLock(tmp_path / "run"):
        other = _python("""
try:
    fileio.OutputLock(sys.argv[1]).acquire()
    print("acquired")
except InputError as exc:
    print(exc)
""", str(tmp_path / "run"))
        out, err = other.communicate(timeout=60)
    assert out.strip() == (f"another sampleaudit run (pid {os.getpid()}) is writing to {tmp_path / 'run'}; wait "
                           "for it to finish or choose another --out"), err


# --- write_outputs ----------------------------------------------------------------------------

def _fail_writes_to(name: str, monkeypatch, err: int = errno.ENOSPC) -> None:
    """os.write raises OSError(err) for the staged file `name`, works for everything else."""
    real = os.write

    def write(fd, data):
        target = os.readlink(f"/proc/self/fd/{fd}")
        if fileio.STAGING_PREFIX in target and target.endswith("/" + name):
            real(fd, bytes(data)[: len(data) // 2])  # part of it reaches the disk first
            raise OSError(err, os.strerror(err))
        return real(fd, data)

    monkeypatch.setattr(os, "write", write)


needs_proc = pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")


def test_write_outputs_writes_the_set_in_order(tmp_path):
    files = {"audit.json": '{"a": 1}', "report.html": "<p>é</p>", "report.pdf": b"%PDF-1.7 \x00\xff"}
    written = write_outputs(tmp_path / "run", files)
    assert written == [tmp_path / "run" / n for n in files]
    assert (tmp_path / "run" / "report.html").read_text(encoding="utf-8") == "<p>é</p>"
    assert (tmp_path / "run" / "report.pdf").read_bytes() == b"%PDF-1.7 \x00\xff"
    assert _listing(tmp_path / "run") == sorted(files)
    write_outputs(tmp_path / "run", {"audit.json": "v2"})  # a later set replaces only its own files
    assert (tmp_path / "run" / "audit.json").read_text() == "v2"
    assert _listing(tmp_path / "run") == sorted(files)


@needs_proc
def test_no_space_in_the_middle_of_the_set_keeps_the_previous_set(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    old = {"audit.json": "old json", "report.html": "old html", "report.pdf": b"old pdf"}
    write_outputs("reports", old)
    _fail_writes_to("report.html", monkeypatch)
    with pytest.raises(InputError) as err:
        write_outputs("reports", {"audit.json": "new json", "report.html": "new html" * 100, "report.pdf": b"new"})
    assert str(err.value) == "cannot write reports/report.html (No space left on device)"
    assert {n: Path("reports", n).read_bytes() for n in old} == {n: _b(v) for n, v in old.items()}
    assert _listing(Path("reports")) == sorted(old)  # no staging folder, no temporary file


def _b(value: str | bytes) -> bytes:
    return value.encode() if isinstance(value, str) else value


@needs_proc
def test_a_failed_run_into_a_new_nested_folder_leaves_no_folder(tmp_path, monkeypatch):
    _fail_writes_to("report.pdf", monkeypatch)
    with pytest.raises(InputError) as err:
        write_outputs(tmp_path / "new" / "nested" / "run", {"audit.json": "{}", "report.pdf": b"x" * 1000})
    target = tmp_path / "new" / "nested" / "run" / "report.pdf"
    assert str(err.value) == f"cannot write {target} (No space left on device)"
    assert not (tmp_path / "new").exists()
    (tmp_path / "kept").mkdir()  # a folder that was there before is kept
    with pytest.raises(InputError):
        write_outputs(tmp_path / "kept" / "run", {"report.pdf": b"x" * 1000})
    assert _listing(tmp_path) == ["kept"]


def test_a_failing_rename_puts_the_earlier_files_back(tmp_path, monkeypatch):
    old = {"audit.json": "old json", "report.html": "old html"}
    write_outputs(tmp_path, old)
    real = os.replace

    def replace(src, dst, *args, **kwargs):
        if str(dst).endswith("report.pdf"):
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(InputError) as err:
        write_outputs(tmp_path, {"audit.json": "new", "report.html": "new", "report.pdf": b"new"})
    assert str(err.value) == f"cannot write {tmp_path / 'report.pdf'} ({os.strerror(errno.EIO)})"
    assert {n: (tmp_path / n).read_text() for n in old} == old
    assert _listing(tmp_path) == sorted(old)


def test_a_folder_in_the_way_of_a_file_replaces_nothing(tmp_path):
    write_outputs(tmp_path, {"audit.json": "old"})
    (tmp_path / "report.html").mkdir()
    with pytest.raises(InputError) as err:
        write_outputs(tmp_path, {"audit.json": "new", "report.html": "x"})
    assert str(err.value) == (f"cannot write {tmp_path / 'report.html'} (it is a folder); "
                              "remove it or choose another --out")
    assert (tmp_path / "audit.json").read_text() == "old"
    assert _listing(tmp_path) == ["audit.json", "report.html"]


def test_write_outputs_into_a_file_or_under_one(tmp_path):
    (tmp_path / "f").write_text("")
    with pytest.raises(InputError) as err:
        write_outputs(tmp_path / "f", {"audit.json": "{}"})
    assert str(err.value) == f"{tmp_path / 'f'} is a file, not a folder; choose another --out"
    with pytest.raises(InputError) as err:
        write_outputs(tmp_path / "f" / "sub", {"audit.json": "{}"})
    assert str(err.value) == f"cannot create {tmp_path / 'f' / 'sub'} (Not a directory); choose another --out"
    assert _listing(tmp_path) == ["f"]


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", ".sampleaudit-staging-x"])
def test_write_outputs_takes_plain_names_only(tmp_path, name):
    with pytest.raises(ValueError, match="plain file names"):
        write_outputs(tmp_path, {name: "x"})


KILLED_WRITER = """
import time
real = os.write
def stuck(fd, data):
    real(fd, bytes(data)[:5])
    print("writing", flush=True)
    time.sleep(600)
os.write = stuck
fileio.write_outputs(sys.argv[1], {"audit.json": "x" * 100, "report.html": "y" * 100})
"""


def test_leftovers_of_a_killed_writer_are_removed_by_the_next_write(tmp_path):
    out = tmp_path / "run"
    write_outputs(out, {"audit.json": "previous"})
    writer = _python(KILLED_WRITER, str(out))
    assert writer.stdout.readline().strip() == "writing", writer.stderr.read()
    writer.send_signal(signal.SIGKILL)
    writer.communicate(timeout=60)
    staged = [p for p in out.iterdir() if p.name.startswith(fileio.STAGING_PREFIX)]
    assert len(staged) == 1 and (staged[0] / "audit.json").read_text() == "xxxxx"
    assert (out / "audit.json").read_text() == "previous"  # the killed run replaced nothing
    # what killed runs of the previous version (write_atomic) left behind
    for name in (".audit.json.k3j2h1x0.tmp", ".report.html.abc_1234.tmp", ".report.pdf.zz9.tmp"):
        (out / name).write_text("partial")
    for name in ("notes.txt", ".notes.tmp", ".audit.json.tmp", ".report.html.x.y.tmp"):  # not ours: kept
        (out / name).write_text("keep")
    write_outputs(out, {"audit.json": "new"})
    assert _listing(out) == [".audit.json.tmp", ".notes.tmp", ".report.html.x.y.tmp", "audit.json", "notes.txt"]
    assert (out / "audit.json").read_text() == "new"


UMASK_CHILD = """
fileio.write_outputs(sys.argv[1], {"audit.json": "{}", "report.html": "x"})
fileio.write_atomic(os.path.join(sys.argv[1], "single.json"), "{}")
"""


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o027, 0o640), (0o002, 0o664), (0o077, 0o600)])
def test_file_mode_follows_the_umask(tmp_path, umask, mode):
    child = _python(UMASK_CHILD, str(tmp_path / "run"), preexec_fn=lambda: os.umask(umask))
    out, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
    for name in ("audit.json", "report.html", "single.json"):
        assert (tmp_path / "run" / name).stat().st_mode & 0o777 == mode
    assert (tmp_path / "run").stat().st_mode & 0o777 == 0o777 & ~umask


def test_umask_is_never_read_or_set(tmp_path, monkeypatch):
    def forbidden(*args):
        raise AssertionError("os.umask is process-global; fileio must not call it")

    monkeypatch.setattr(os, "umask", forbidden)
    write_outputs(tmp_path / "a", {"audit.json": "{}"})
    write_atomic(tmp_path / "b" / "x.json", "{}")
    check_output_dir(tmp_path / "c")


def test_write_atomic_replaces_whole_files_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "sub" / "audit.json"
    assert write_atomic(target, "first") == target
    write_atomic(target, b"second")
    assert target.read_bytes() == b"second"
    assert _listing(tmp_path) == ["sub", "sub/audit.json"]


@needs_proc
def test_write_atomic_failure_keeps_the_old_file(tmp_path, monkeypatch):
    target = tmp_path / "audit.json"
    write_atomic(target, "old")
    real = os.write

    def write(fd, data):
        if os.readlink(f"/proc/self/fd/{fd}").endswith(".tmp"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd, data)

    monkeypatch.setattr(os, "write", write)
    with pytest.raises(OSError, match="No space left on device"):
        write_atomic(target, "new")
    assert target.read_text() == "old" and _listing(tmp_path) == ["audit.json"]
