"""Where ``numalab vm`` keeps what it downloads and builds, and how it writes there safely.

Two ``vm run`` calls may share the cache at once: every file is written to a unique temporary
name in the same directory and renamed into place (rename is atomic within a file system), so a
reader sees either nothing or the whole file.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path


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
