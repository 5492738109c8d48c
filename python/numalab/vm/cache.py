"""Where ``numalab vm`` keeps what it downloads and builds, and how it writes there safely.

Two ``vm run`` calls may share the cache at once: every file is written to a unique temporary
name in the same directory and renamed into place (rename is atomic within a file system), so a
reader sees either nothing or the whole file.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator


def cache_dir() -> Path:
    """``$NUMALAB_VM_CACHE``, else ``$XDG_CACHE_HOME/numalab/vm``, else ``~/.cache/numalab/vm``."""
    explicit = os.environ.get("NUMALAB_VM_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "numalab" / "vm"


def atomic_write(path: Path, data: bytes, mode: int = 0o644) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@contextmanager
def locked(root: Path, say: Callable[[str], None] = lambda s: None, name: str = ".setup.lock") -> Iterator[None]:
    """Hold an exclusive lock on ``root/name`` (flock, released when the file closes, also if the
    process dies): one ``vm setup`` downloads at a time, and the others find its files after it."""
    root.mkdir(parents=True, exist_ok=True)
    with open(root / name, "a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"waiting for another numalab vm setup using {root}")
            fcntl.flock(f, fcntl.LOCK_EX)
        yield
