"""Writing a run's outputs: check the folder first, lock it, write the set of files together.

A run calls `check_output_dir(out)` before any work, holds `OutputLock(out)` for the whole run
and writes its files with `write_outputs(out, files)`: staged in a hidden folder inside `out`,
then renamed into place, so readers never see a half-written file and a failure replaces nothing.
Files get mode 0o666 minus the umask; the umask is applied by the kernel (os.open), never read or
set here (os.umask is process-global).
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import secrets
import shutil
import stat
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

from .errors import InputError

STAGING_PREFIX = ".sampleaudit-staging-"
# Files whose temporaries (".audit.json.k3j2h1x0.tmp", from write_atomic) are removed as stale
# before a set is written, whether or not this run writes them.
REPORT_FILES = ("audit.json", "report.html", "report.pdf")
_OUT_HINT = "choose another --out"


def _reason(exc: OSError) -> str:
    return exc.strerror or (os.strerror(exc.errno) if exc.errno else str(exc))


def _shown(path: Path) -> str:
    """A path as the user wrote it; the current folder as its absolute path."""
    return str(path) if str(path) not in ("", ".") else os.getcwd()


def _writable_dir_reason(path: Path) -> str | None:
    """Why the existing folder `path` cannot be written (None when it can), without writing in it."""
    try:
        if os.statvfs(path).f_flag & os.ST_RDONLY:
            return os.strerror(errno.EROFS)
    except OSError as exc:
        return _reason(exc)
    effective = os.access in os.supports_effective_ids
    if not os.access(path, os.W_OK | os.X_OK, effective_ids=effective):
        return os.strerror(errno.EACCES)
    return None


def _exists(path: Path) -> bool:
    """Like Path.exists, but a name too long for the file system is one that does not exist yet."""
    try:
        os.stat(path)
        return True
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.ENAMETOOLONG, errno.ELOOP):
            return False
        raise


def _name_too_long(path: Path, ancestor: Path) -> bool:
    try:
        limit = os.pathconf(ancestor, "PC_NAME_MAX")
    except (OSError, ValueError, AttributeError):  # not every platform or file system says
        return False
    return any(len(os.fsencode(part)) > limit for part in path.relative_to(ancestor).parts)


def check_output_dir(path: str | Path) -> None:
    """Raise InputError unless the output folder `path` exists and can be written, or can be created.

    Nothing is created or written inside `path`. When `path` does not exist, a temporary file is
    created and removed in its nearest existing ancestor, where the first folder would be made.
    """
    path = Path(path)
    try:
        if _exists(path):
            if not path.is_dir():
                kind = "a file, not a folder" if path.is_file() else "not a folder"
                raise InputError(f"{_shown(path)} is {kind}; {_OUT_HINT}")
            why = _writable_dir_reason(path)
            if why:
                raise InputError(f"cannot write in {_shown(path)} ({why}); {_OUT_HINT} or fix its permissions")
            return
        ancestor = path.parent
        while not _exists(ancestor) and ancestor != ancestor.parent:
            if os.path.lexists(ancestor):
                raise InputError(f"cannot create {path}: {ancestor} is a link to nothing; {_OUT_HINT}")
            ancestor = ancestor.parent
        if os.path.lexists(path):
            raise InputError(f"cannot create {path}: it is a link to nothing; {_OUT_HINT}")
        if not ancestor.is_dir():
            kind = "a file" if ancestor.is_file() else "not a folder"
            raise InputError(f"cannot create {path}: {_shown(ancestor)} is {kind}; {_OUT_HINT}")
        if _name_too_long(path, ancestor):
            raise InputError(f"cannot create {path} ({os.strerror(errno.ENAMETOOLONG)}); {_OUT_HINT}")
        try:
            fd, probe = tempfile.mkstemp(prefix=".sampleaudit-check-", dir=ancestor)
        except OSError as exc:
            raise InputError(f"cannot create {path}: cannot write in {_shown(ancestor)} ({_reason(exc)}); "
                             f"{_OUT_HINT}") from None
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:  # e.g. a name too long, or a folder that cannot be searched
        raise InputError(f"cannot use {path} as the output folder ({_reason(exc)}); {_OUT_HINT}") from None


def lock_dir() -> Path:
    """The per-user folder that holds the lock files (outside every output folder)."""
    uid = os.getuid() if hasattr(os, "getuid") else 0
    return Path(tempfile.gettempdir()) / f"sampleaudit-locks-{uid}"


def lock_path(out_dir: str | Path) -> Path:
    """The lock file of one output folder: named by a hash of its resolved path."""
    resolved = str(Path(out_dir).resolve())
    return lock_dir() / (hashlib.sha256(resolved.encode("utf-8", "surrogateescape")).hexdigest()[:32] + ".lock")


class OutputLock:
    """An exclusive lock on an output folder, held for a whole run; a second run refuses at once.

    The lock is an fcntl.flock on a file in `lock_dir()`, not in the output folder, so a failed run
    leaves nothing in it; the kernel releases it when the process dies. The holder's pid is
    written into the lock file so that the refusal can name it. Use as a context manager.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.lock_file = lock_path(path)
        self._fd: int | None = None

    def __enter__(self) -> OutputLock:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def acquire(self) -> None:
        import fcntl

        if self._fd is not None:
            raise RuntimeError("OutputLock is already held by this object")
        folder = self.lock_file.parent
        try:
            folder.mkdir(mode=0o700, exist_ok=True)
            info = os.lstat(folder)
        except OSError as exc:
            raise InputError(f"cannot create the lock folder {folder} ({_reason(exc)})") from None
        if not stat.S_ISDIR(info.st_mode) or (hasattr(os, "getuid") and info.st_uid != os.getuid()):
            raise InputError(f"the lock folder {folder} is not a folder of yours; remove it or set TMPDIR")
        while True:
            try:
                fd = os.open(self.lock_file, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
            except OSError as exc:
                raise InputError(f"cannot create the lock file {self.lock_file} ({_reason(exc)})") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _read_pid(fd)
                os.close(fd)
                who = f"another sampleaudit run (pid {holder})" if holder else "another sampleaudit run"
                raise InputError(f"{who} is writing to {self.path}; wait for it to finish or {_OUT_HINT}") from None
            except BaseException:
                os.close(fd)
                raise
            # The holder before us may have removed the file after we opened it: lock the live one.
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(self.lock_file))
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n{Path(self.path).resolve()}\n".encode("utf-8", "surrogateescape"), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is None:
            return
        try:
            self.lock_file.unlink(missing_ok=True)  # while still locked, so no one locks a removed file
        finally:
            os.close(self._fd)  # closing releases the flock
            self._fd = None


def _read_pid(fd: int) -> int | None:
    try:
        first = os.pread(fd, 64, 0).split(b"\n", 1)[0]
        return int(first) if first.strip() else None
    except (OSError, ValueError):
        return None


def _write_new(path: Path, payload: bytes) -> None:
    """Create `path` (it must not exist) with mode 0o666 minus the umask, write, flush to disk."""
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_CLOEXEC, 0o666)
    try:
        view = memoryview(payload)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)


def _payload(data: str | bytes) -> bytes:
    return data.encode("utf-8") if isinstance(data, str) else bytes(data)


def _check_name(name: str) -> None:
    if not name or name in (".", "..") or "/" in name or os.sep in name or name.startswith(STAGING_PREFIX):
        raise ValueError(f"output file names must be plain file names; got {name!r}")


def _stale_temporaries(names: Iterable[str]) -> re.Pattern:
    alternatives = "|".join(re.escape(n) for n in sorted(set(names)))
    return re.compile(rf"^\.(?:{alternatives})\.[A-Za-z0-9_]+\.tmp$")


def remove_stale(out_dir: str | Path, names: Iterable[str] = REPORT_FILES) -> list[Path]:
    """Remove what killed runs left in `out_dir`: staging folders and `.NAME.*.tmp` files.

    Only safe while holding OutputLock(out_dir): another run's staging folder looks the same.
    """
    out_dir = Path(out_dir)
    pattern = _stale_temporaries(names)
    removed = []
    with os.scandir(out_dir) as entries:
        for entry in entries:
            if entry.name.startswith(STAGING_PREFIX) and entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            elif pattern.match(entry.name) and entry.is_file(follow_symlinks=False):
                os.unlink(entry.path)
            else:
                continue
            removed.append(out_dir / entry.name)
    return removed


def _make_dirs(out_dir: Path) -> list[Path]:
    """Create `out_dir` and its missing parents; return those created, outermost first."""
    missing = []
    folder = out_dir
    while not folder.exists():
        missing.append(folder)
        if folder == folder.parent:
            break
        folder = folder.parent
    created = []
    for folder in reversed(missing):
        try:
            folder.mkdir()
        except FileExistsError:
            if not folder.is_dir():
                raise
            continue
        created.append(folder)
    return created


def write_outputs(out_dir: str | Path, files: Mapping[str, bytes | str]) -> list[Path]:
    """Write a set of files into `out_dir` together; return their paths, in the order given.

    Each file is written in full and flushed to disk in a staging folder inside `out_dir`
    (`.sampleaudit-staging-*`), then all are renamed into place one after another and the staging
    folder is removed. Staging folders and `.audit.json.*.tmp`-style temporaries left by killed runs
    are removed first, so the caller must hold OutputLock(out_dir). On a failure nothing already
    there is replaced (a rename that fails half-way puts the old files back), the staging folder and
    any folder this call created are removed, and InputError says which file and why:
    "cannot write reports/report.pdf (No space left on device)".
    """
    out_dir = Path(out_dir)
    payloads = {}
    for name, data in files.items():
        _check_name(name)
        payloads[name] = _payload(data)
    if not payloads:
        raise ValueError("write_outputs needs at least one file")
    created: list[Path] = []
    staging: Path | None = None
    try:
        try:
            created = _make_dirs(out_dir)
        except OSError as exc:
            raise InputError(f"cannot create {exc.filename or out_dir} ({_reason(exc)}); {_OUT_HINT}") from None
        if not out_dir.is_dir():
            raise InputError(f"{_shown(out_dir)} is a file, not a folder; {_OUT_HINT}")
        try:
            remove_stale(out_dir, set(REPORT_FILES) | set(payloads))
            staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=out_dir))
        except OSError as exc:
            raise InputError(f"cannot write in {_shown(out_dir)} ({_reason(exc)}); {_OUT_HINT}") from None
        for name, payload in payloads.items():
            try:
                _write_new(staging / name, payload)
            except OSError as exc:
                raise InputError(f"cannot write {out_dir / name} ({_reason(exc)})") from None
        for name in payloads:
            target = out_dir / name
            if target.is_dir() and not target.is_symlink():
                raise InputError(f"cannot write {target} (it is a folder); remove it or {_OUT_HINT}")
        _rename_all(staging, out_dir, list(payloads))
    except BaseException:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
        for folder in reversed(created):
            try:
                folder.rmdir()
            except OSError:
                pass
        raise
    shutil.rmtree(staging, ignore_errors=True)
    _sync_dir(out_dir)
    return [out_dir / name for name in payloads]


def _rename_all(staging: Path, out_dir: Path, names: list[str]) -> None:
    """Rename staged files into place; if one rename fails, undo the earlier ones."""
    done: list[tuple[str, Path | None]] = []
    for name in names:
        target = out_dir / name
        backup: Path | None = staging / f".old-{name}"
        try:
            os.link(target, backup, follow_symlinks=False)  # keeps the old file for an undo
        except OSError:
            backup = None  # no old file (or no hard links here): an undo removes the new one
        try:
            os.replace(staging / name, target)
        except OSError as exc:
            for earlier, old in reversed(done):
                try:
                    if old is not None:
                        os.replace(old, out_dir / earlier)
                    else:
                        os.unlink(out_dir / earlier)
                except OSError:
                    pass
            raise InputError(f"cannot write {target} ({_reason(exc)})") from None
        done.append((name, backup))


def _sync_dir(folder: Path) -> None:
    """Flush the folder's entries (the renames) to disk where the platform allows."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_atomic(path: str | Path, data: str | bytes) -> Path:
    """Write `data` to `path` so that readers see the old file or the whole new one, never half.

    The data goes to `.NAME.XXXXXXXX.tmp` in the same folder (mode 0o666 minus the umask, applied
    by the kernel), is flushed to disk and renamed over `path`. OSError propagates.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = _payload(data)
    for _ in range(100):
        tmp = path.parent / f".{path.name}.{secrets.token_hex(4)}.tmp"
        try:
            _write_new(tmp, payload)
            break
        except FileExistsError:
            continue
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
    else:
        raise FileExistsError(errno.EEXIST, "no free temporary name", str(path.parent))
    try:
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path
