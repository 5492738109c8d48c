"""Output files (reports, figures, exports, the study schema): never the results store, and never
half-written.

``check_output(path, option, store=None)`` refuses a path that is a results store or one of its
files (``numalab.db``, ``-wal``, ``-shm``, ``-journal``), through symbolic and hard links.
``write_atomic(path, write, option)`` writes a new file beside the target, flushes it to disk and
renames it over the target, so a full disk or a crash leaves the old file whole and no partial
one; a target that exists and is not a regular file (``/dev/stdout``, a FIFO) is written in place,
since renaming over it would replace the device or pipe itself.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from pathlib import Path
from typing import IO, Callable

from numalab.exceptions import NumalabError, UsageError
from numalab.results.store import _SQLITE_MAGIC, APPLICATION_ID

STORE_SUFFIXES = ("-wal", "-shm", "-journal")


class OutputError(NumalabError):
    """An output could not be written (a full disk, an I/O error): exit code 1."""


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _is_store(path: Path) -> bool:
    """An SQLite file that says it is numalab's (application id at offset 68)."""
    if not path.is_file():  # never open a FIFO or a device to look (it may block)
        return False
    try:
        with open(path, "rb") as f:
            head = f.read(72)
    except OSError:
        return False
    return head.startswith(_SQLITE_MAGIC) and int.from_bytes(head[68:72], "big") == APPLICATION_ID


def _same(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return _real(a) == _real(b)


def check_output(path: Path, option: str, store: Path | None = None) -> None:
    """Refuse ``path`` when writing it would overwrite a results store (``store``, the one being
    read, or any existing numalab store) or one of its -wal/-shm/-journal files."""
    real = _real(path)
    base = real
    for suffix in STORE_SUFFIXES:
        if real.name.endswith(suffix):
            base = real.with_name(real.name[: -len(suffix)])
    stores = [_real(store)] if store is not None else []
    stores += [p for p in dict.fromkeys((base, real)) if _is_store(p)]  # a store by another name (a hard link) too
    for db in stores:
        for suffix in ("", *STORE_SUFFIXES):
            part = Path(f"{db}{suffix}")
            if real == part or (part.exists() and _same(path, part)):
                what = "the results database" if not suffix else f"the {suffix[1:]} file of the results database"
                raise UsageError(f"{option} {path}: is {what} {db}; writing there would destroy stored runs (give another file name)")


def write_atomic(path: Path, write: Callable[[IO[bytes]], object], option: str) -> None:
    """Call ``write`` with a binary file, then put what it wrote at ``path`` in one step."""
    real = _real(path)
    try:
        # The path itself, not its realpath: /dev/stdout into a pipe resolves to "pipe:[N]", no file.
        st = os.stat(path)
    except OSError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        _write_in_place(path, real, write, option)
        return
    tmp = real.parent / f".{real.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666 if st is None else stat.S_IMODE(st.st_mode))
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, real)
    except OSError as e:
        _remove(tmp)
        raise _error(path, option, e) from None
    except BaseException:
        _remove(tmp)
        raise
    _sync_dir(real.parent)


def write_text_atomic(path: Path, text: str, option: str) -> None:
    write_atomic(path, lambda f: f.write(text.encode("utf-8")), option)


def _write_in_place(path: Path, real: Path, write: Callable[[IO[bytes]], object], option: str) -> None:
    try:
        with open(path, "wb") as f:
            write(f)
            f.flush()
    except OSError as e:
        raise _error(path, option, e, kept=False) from None


def _error(path: Path, option: str, e: OSError, kept: bool = True) -> NumalabError:
    why = e.strerror or str(e)
    if e.errno in (errno.ENOENT, errno.ENOTDIR, errno.EACCES, errno.EPERM, errno.EISDIR, errno.EROFS):
        return UsageError(f"{option} {path}: cannot write ({why})")
    return OutputError(f"{option} {path}: cannot write ({why})" + ("; an earlier file there is left as it was" if kept and path.exists() else ""))


def _remove(tmp: Path) -> None:
    try:
        tmp.unlink()
    except OSError:
        pass


def _sync_dir(directory: Path) -> None:
    """The rename is on disk once its directory is (a crash right after keeps the new file)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
