"""A cpio archive in the "newc" format, the one the kernel unpacks as an initramfs.

Format: Documentation/driver-api/early-userspace/buffer-format.rst in the kernel tree (and
``usr/gen_init_cpio.c``): each entry is the magic ``070701``, thirteen 8-digit hex fields, the
NUL-terminated name padded to 4 bytes, then the data padded to 4 bytes; ``TRAILER!!!`` ends it.
Entries are written in the order given, owned by root, with fixed times, so the same inputs give
the same bytes (the cache key is their hash). No root privileges are needed.
"""

from __future__ import annotations

import gzip
import stat
from dataclasses import dataclass

MAGIC = b"070701"


@dataclass(frozen=True)
class Entry:
    name: str  # path inside the archive, no leading slash
    mode: int  # file type bits | permissions
    data: bytes = b""  # file contents, or a symlink's target


def directory(name: str, perm: int = 0o755) -> Entry:
    return Entry(name.strip("/"), stat.S_IFDIR | perm)


def regular(name: str, data: bytes, perm: int = 0o644) -> Entry:
    return Entry(name.strip("/"), stat.S_IFREG | perm, data)


def symlink(name: str, target: str) -> Entry:
    return Entry(name.strip("/"), stat.S_IFLNK | 0o777, target.encode())


def _pad(n: int) -> bytes:
    return b"\0" * (-n % 4)


def _header(ino: int, e: Entry, name: bytes) -> bytes:
    nlink = 2 if stat.S_ISDIR(e.mode) else 1
    fields = (ino, e.mode, 0, 0, nlink, 0, len(e.data), 0, 0, 0, 0, len(name) + 1, 0)
    return MAGIC + b"".join(b"%08X" % f for f in fields)


def archive(entries: list[Entry]) -> bytes:
    out = bytearray()
    for ino, e in enumerate([*entries, Entry("TRAILER!!!", 0)], start=1):
        name = e.name.encode()
        head = _header(0 if e.name == "TRAILER!!!" else ino, e, name) + name + b"\0"
        out += head + _pad(len(head)) + e.data + _pad(len(e.data))
    return bytes(out)


def gzipped(entries: list[Entry], level: int = 6) -> bytes:
    # mtime=0: the gzip header carries no time, so the bytes depend on the entries alone.
    return gzip.compress(archive(entries), compresslevel=level, mtime=0)
