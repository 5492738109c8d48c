"""The guest's initramfs, built in Python without root: a cached base image (busybox and its
applet links, /init, numactl and libnuma, the agent, the project's kernels, the command's binary
and the shared libraries of each) plus a per-run job archive appended to it.

The base image is cached under ``<cache>/initramfs/<sha256>.cpio``, the hash taken over every
entry's name, mode and contents, so a changed binary gives a new image and the same inputs
reuse the old one; it is written with an atomic rename, so two runs can build it at once.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from numalab.exceptions import UsageError
from numalab.vm import cpio, elf, guest
from numalab.vm.cache import atomic_write, cache_dir
from numalab.vm.setup import REPO, Guest

KERNELS_DIR = REPO / "kernels"
#: Every kernel kernels/Makefile builds (clock: its --pause is run in the guest, docs/scheduler.md §10.57).
KERNEL_NAMES = ("dgemv", "stream", "stencil", "barrier", "chase", "alloc3d", "filemap", "clock", "window")
GUEST_LIB = "/usr/lib/x86_64-linux-gnu"


@dataclass(frozen=True)
class Command:
    """The command as the guest runs it: argv with argv[0] the guest path of a copied binary (or a
    name the guest already has), and the host file to copy (None for a guest built-in)."""

    argv: list[str]
    host_binary: Path | None


def busybox_applets(busybox: str) -> list[str]:
    """``busybox --list-full`` (e.g. ``bin/sh``, ``sbin/poweroff``): the links to make."""
    p = subprocess.run([busybox, "--list-full"], capture_output=True, text=True, check=False)
    names = [ln.strip().lstrip("/") for ln in p.stdout.splitlines() if ln.strip()]
    if p.returncode != 0 or "bin/sh" not in names:
        raise UsageError(f"{busybox} --list-full failed; is it Debian's busybox-static?")
    return names


def project_kernels() -> dict[str, Path]:
    """The built C kernels (``make kernels``), by name."""
    return {k: KERNELS_DIR / k for k in KERNEL_NAMES if (KERNELS_DIR / k).is_file()}


def resolve_command(argv: list[str], builtins: set[str]) -> Command:
    """Where the command's binary comes from. A path is copied to the same absolute path in the
    guest (to ``guest.USER_BIN`` if a guest mount would hide that path); a bare name is a guest
    built-in (busybox applet, numactl), one of the project's kernels, or found on the host's PATH.
    The binary must be a Linux x86-64 ELF (checked here, before boot)."""
    if not argv:
        raise UsageError("no command given: numalab vm run [options] -- CMD [ARGS...]")
    name = argv[0]
    if "/" not in name:
        if name in builtins:
            return Command(list(argv), None)
        kernels = project_kernels()
        found = kernels.get(name) or (Path(w) if (w := shutil.which(name)) else None)
        if found is None:
            raise UsageError(f"command '{name}' not found on the host's PATH, among the guest's busybox applets or the project's kernels")
        host = found
        guest_path = f"/usr/local/bin/{name}" if name in kernels else str(Path(os.path.abspath(found)))
    else:
        host = Path(name)
        if not host.exists():
            raise UsageError(f"command '{name}' not found")
        guest_path = os.path.abspath(name)
    if not host.is_file() or not os.access(host, os.X_OK):
        raise UsageError(f"command '{name}' is not an executable file")
    elf.inspect(host)
    if any(guest_path == where or guest_path.startswith(where + "/") for _, where in guest.MOUNTS):
        guest_path = f"{guest.USER_BIN}/{Path(guest_path).name}"
    return Command([guest_path, *argv[1:]], host.resolve())


class Builder:
    """Collects entries, creating parent directories once each."""

    def __init__(self) -> None:
        self.entries: list[cpio.Entry] = []
        self.dirs: set[str] = set()
        self.files: set[str] = set()

    def _parents(self, path: str) -> None:
        parts = path.strip("/").split("/")[:-1]
        for i in range(1, len(parts) + 1):
            d = "/".join(parts[:i])
            if d not in self.dirs:
                self.dirs.add(d)
                self.entries.append(cpio.directory(d))

    def dir(self, path: str) -> None:
        self._parents(path + "/x")

    def file(self, path: str, data: bytes, perm: int = 0o755) -> None:
        path = path.strip("/")
        if path in self.files:
            return
        self._parents(path)
        self.files.add(path)
        self.entries.append(cpio.regular(path, data, perm))

    def link(self, path: str, target: str) -> None:
        path = path.strip("/")
        if path in self.files:
            return
        self._parents(path)
        self.files.add(path)
        self.entries.append(cpio.symlink(path, target))

    def binary(self, guest_path: str, host: Path, lib_path: list[str] | None = None) -> None:
        """A binary and its shared libraries, each at the path the loader looks for it."""
        self.file(guest_path, without_debug_info(host))
        env_libs = elf.shared_libraries(host) if lib_path is None else _with_ld_path(host, lib_path)
        for lib in env_libs:
            self.file(str(lib), lib.resolve().read_bytes())


def without_debug_info(path: Path) -> bytes:
    """The binary without its debug sections (``strip --strip-debug``; the code is unchanged):
    the agent's debug info would triple the image the guest unpacks at every boot."""
    data = path.read_bytes()
    strip = shutil.which("strip")
    if strip is None:
        return data
    with tempfile.TemporaryDirectory(prefix="numalab-strip-") as tmp:
        out = Path(tmp) / "stripped"
        p = subprocess.run([strip, "--strip-debug", "-o", str(out), str(path)], capture_output=True, check=False)
        return out.read_bytes() if p.returncode == 0 and out.is_file() else data


def _with_ld_path(host: Path, lib_path: list[str]) -> list[Path]:
    old = os.environ.get("LD_LIBRARY_PATH")
    os.environ["LD_LIBRARY_PATH"] = ":".join(lib_path)
    try:
        return elf.shared_libraries(host)
    finally:
        if old is None:
            del os.environ["LD_LIBRARY_PATH"]
        else:
            os.environ["LD_LIBRARY_PATH"] = old


def base_entries(g: Guest, agent: Path, *commands: Command | None) -> list[cpio.Entry]:
    """The base image's entries with each command's binary (several: the commands of one boot)."""
    b = Builder()
    for d in ("proc", "sys", "dev", "tmp", "root", "etc", "usr/local/bin", "numalab"):
        b.dir(d)
    b.file("bin/busybox", Path(g.busybox).read_bytes())
    for applet in busybox_applets(g.busybox):
        b.link(applet, "/bin/busybox")
    b.file("init", guest.INIT.encode())
    b.file(f"{GUEST_LIB}/libnuma.so.1", Path(g.libnuma).read_bytes())
    b.binary("usr/bin/numactl", Path(g.numactl), lib_path=[g.lib_dir])
    b.binary(guest.AGENT, agent)
    for name, path in project_kernels().items():
        b.binary(f"usr/local/bin/{name}", path)
    for command in commands:
        if command is not None and command.host_binary is not None:
            b.binary(command.argv[0], command.host_binary)
    b.file("etc/ld.so.conf", f"{GUEST_LIB}\n".encode(), 0o644)
    return b.entries


def content_key(entries: list[cpio.Entry]) -> str:
    h = hashlib.sha256()
    for e in entries:
        h.update(f"{e.name}\0{e.mode:o}\0{len(e.data)}\0".encode())
        h.update(e.data)
    return h.hexdigest()


def base_image(g: Guest, agent: Path, *commands: Command | None) -> bytes:
    """The base image for these inputs: from the cache, or built and cached. Uncompressed: a TCG
    guest spends 0.4 s of its boot gunzipping 6 MB (init/initramfs.c: unpack_to_rootfs()), where
    QEMU loads 15 MB in milliseconds."""
    entries = base_entries(g, agent, *commands)
    path = cache_dir() / "initramfs" / f"{content_key(entries)}.cpio"
    try:
        data = path.read_bytes()
        os.utime(path)  # most recently used: kept by prune()
        return data
    except FileNotFoundError:
        pass  # not built yet, or pruned by another run a moment ago
    data = cpio.archive(entries)
    atomic_write(path, data)
    prune(path.parent, keep=KEEP_IMAGES)
    return data


#: Base images kept in the cache (one per command binary and agent build; about 15 MB each).
KEEP_IMAGES = 16


def prune(directory: Path, keep: int) -> None:
    """Remove all but the ``keep`` most recently used images (a run holds its image in memory
    once read, so removing one another run uses is safe)."""
    images = sorted(directory.glob("*.cpio"), key=lambda p: p.stat().st_mtime if p.exists() else 0, reverse=True)
    for old in images[keep:]:
        old.unlink(missing_ok=True)


def job_archive(job: guest.Job | list[guest.Job]) -> bytes:
    """The per-run archive: ``/numalab/job`` (uncompressed; one job, or the jobs of one boot in
    turn), padded with zeros to 512 bytes."""
    jobs = job if isinstance(job, list) else [job]
    data = cpio.archive([cpio.directory("numalab"), cpio.regular(guest.JOB, guest.script(jobs).encode(), 0o644)])
    return data + b"\0" * (-len(data) % 512)
