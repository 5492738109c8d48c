"""Read just enough of an ELF file to know whether the guest can run it and what it needs.

The header layout is the System V ABI's (``/usr/include/elf.h``: ``Elf64_Ehdr``, ``Elf64_Phdr``).
A command for the guest must be a 64-bit little-endian x86-64 executable (``e_machine`` 62,
``e_type`` ``ET_EXEC`` or ``ET_DYN``); anything else is refused before QEMU starts. Its shared
libraries come from ``ldd``; its ELF interpreter (``PT_INTERP``) is read from the file itself, so a
static binary needs nothing and a dynamic one without ``ldd`` still gets its loader.
"""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path

from numalab.exceptions import UsageError

EM_X86_64 = 62
ET_EXEC, ET_DYN = 2, 3
PT_INTERP, PT_NOTE = 3, 4
#: include/xen/interface/elfnote.h: the 32-bit entry point a PVH boot jumps to.
XEN_ELFNOTE_PHYS32_ENTRY = 18


@dataclass(frozen=True)
class ElfInfo:
    path: Path
    interpreter: str | None  # e.g. /lib64/ld-linux-x86-64.so.2; None for a static binary


def inspect(path: Path) -> ElfInfo:
    """The ELF facts of ``path``, or a UsageError that says why the guest cannot run it."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
            if head[:4] != b"\x7fELF":
                raise UsageError(f"{path}: not an ELF executable (the guest runs Linux x86-64 programs; scripts need their interpreter as the command)")
            if head[4] != 2 or head[5] != 1:
                raise UsageError(f"{path}: not a 64-bit little-endian ELF file (the guest is Linux x86-64)")
            e_type, e_machine = struct.unpack_from("<HH", head, 16)
            if e_machine != EM_X86_64:
                raise UsageError(f"{path}: ELF for machine {e_machine}, not x86-64 (62); the guest is Linux x86-64")
            if e_type not in (ET_EXEC, ET_DYN):
                raise UsageError(f"{path}: ELF type {e_type} is not an executable (ET_EXEC or ET_DYN)")
            (e_phoff,) = struct.unpack_from("<Q", head, 32)
            e_phentsize, e_phnum = struct.unpack_from("<HH", head, 54)
            interp = None
            for i in range(e_phnum):
                f.seek(e_phoff + i * e_phentsize)
                ph = f.read(56)
                if len(ph) < 56:
                    raise UsageError(f"{path}: truncated ELF program header")
                p_type, _flags, p_offset, _va, _pa, p_filesz = struct.unpack_from("<IIQQQQ", ph)
                if p_type == PT_INTERP:
                    f.seek(p_offset)
                    interp = f.read(p_filesz).rstrip(b"\0").decode(errors="replace")
            return ElfInfo(path, interp)
    except OSError as e:
        raise UsageError(f"{path}: cannot read: {e.strerror}") from None
    except struct.error:
        raise UsageError(f"{path}: truncated ELF header") from None


_LDD_LINE = re.compile(r"^\s*(?:(\S+)\s+=>\s+)?(/\S+)\s+\(0x[0-9a-f]+\)\s*$")


def shared_libraries(path: Path) -> list[Path]:
    """The absolute paths of the libraries ``path`` loads (its interpreter included), from ldd.

    Lines ``libfoo.so => /lib/.../libfoo.so (0x...)`` and ``/lib64/ld-linux-x86-64.so.2 (0x...)``
    name files; ``linux-vdso.so.1`` is the kernel's and has none. A library ldd cannot find is an
    error here, not a failed exec inside the guest.
    """
    info = inspect(path)
    if info.interpreter is None:
        return []
    ldd = shutil.which("ldd")
    if ldd is None:
        return [Path(info.interpreter)]
    proc = subprocess.run([ldd, str(path)], capture_output=True, text=True, check=False)
    libs: list[Path] = []
    for line in proc.stdout.splitlines():
        if "=> not found" in line:
            raise UsageError(f"{path}: shared library {line.split()[0]} not found (ldd)")
        m = _LDD_LINE.match(line)
        if m:
            libs.append(Path(m.group(2)))
    interp = Path(info.interpreter)
    if interp not in libs:
        libs.append(interp)
    return libs


def has_pvh_entry(data: bytes) -> bool:
    """True if ``data`` is an x86-64 ELF kernel (vmlinux) with a Xen ``PHYS32_ENTRY`` note, which
    QEMU's ``-kernel`` boots directly (PVH), skipping the firmware and the bzImage decompressor."""
    try:
        if data[:4] != b"\x7fELF" or data[4] != 2 or struct.unpack_from("<H", data, 18)[0] != EM_X86_64:
            return False
        (phoff,) = struct.unpack_from("<Q", data, 32)
        phentsize, phnum = struct.unpack_from("<HH", data, 54)
        for i in range(phnum):
            p_type, _f, off, _va, _pa, size = struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize)
            if p_type != PT_NOTE:
                continue
            pos, end = off, off + size
            while pos + 12 <= end:
                namesz, descsz, ntype = struct.unpack_from("<III", data, pos)
                name = data[pos + 12 : pos + 12 + namesz].rstrip(b"\0")
                if name == b"Xen" and ntype == XEN_ELFNOTE_PHYS32_ENTRY:
                    return True
                pos += 12 + (namesz + 3) // 4 * 4 + (descsz + 3) // 4 * 4
    except (struct.error, IndexError):
        return False
    return False
