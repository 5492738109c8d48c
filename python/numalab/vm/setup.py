"""``numalab vm setup``: gather what the guest needs into the cache, saying what it does.

From Debian's packages, by name: QEMU (``qemu-system-x86``, must be installed: it runs on the
host), a kernel (``linux-image-*-amd64``, fetched with ``apt-get download`` and unpacked with
``dpkg-deb``, never installed), ``busybox-static`` and ``numactl`` + ``libnuma1`` (taken from the
host when installed, else downloaded and unpacked the same way). ``--kernel PATH`` uses the
user's kernel instead. The result is ``guest.json`` in the cache: every file and where it came
from. Nothing here needs root except installing QEMU, which is only ever suggested.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import struct
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

from numalab.exceptions import UsageError
from numalab.vm import elf, kmem
from numalab.vm.cache import atomic_write, cache_dir, locked
from numalab.vm.debian import SetupError, apt, download, unpack

QEMU = "qemu-system-x86_64"
INSTALL_QEMU = "apt-get install qemu-system-x86"
KERNEL_META = "linux-image-amd64"
MANIFEST = "guest.json"
REPO = Path(__file__).resolve().parents[3]
AGENT_BUILT = REPO / "target" / "static" / "numalab-agent"

Say = Callable[[str], None]


@dataclass(frozen=True)
class Guest:
    """The files a guest is built from (all in the cache but QEMU) and the kernel's version."""

    qemu: str
    kernel: str
    kernel_version: str
    kernel_source: str
    busybox: str
    numactl: str
    libnuma: str
    lib_dir: str  # the cache directory holding libnuma, for ldd
    vmlinux: str = ""  # the same kernel uncompressed, when it boots by PVH (faster); "" if not

    @property
    def boot_kernel(self) -> str:
        """What QEMU's -kernel gets: the PVH vmlinux when there is one, else the bzImage."""
        return self.vmlinux if self.vmlinux and Path(self.vmlinux).is_file() else self.kernel

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True) + "\n"


def find_qemu() -> str:
    path = os.environ.get("NUMALAB_QEMU") or shutil.which(QEMU)
    if not path:
        raise SetupError(f"{QEMU} not found: install it with `{INSTALL_QEMU}` (as root)")
    return path


def kvm_usable() -> bool:
    """True if /dev/kvm opens and creates a VM (KVM_CREATE_VM), as QEMU's -accel kvm will."""
    import fcntl

    try:
        fd = os.open("/dev/kvm", os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        if fcntl.ioctl(fd, 0xAE00) != 12:  # KVM_GET_API_VERSION, linux/kvm.h
            return False
        vm = fcntl.ioctl(fd, 0xAE01, 0)  # KVM_CREATE_VM
        os.close(vm)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def bzimage_version(path: Path) -> str | None:
    """The version string a bzImage carries (boot protocol: ``kernel_version`` at 0x20E,
    Documentation/arch/x86/boot.rst), e.g. ``6.1.0-56-amd64``; None if it is not a bzImage."""
    try:
        with open(path, "rb") as f:
            head = f.read(0x400)
            if head[0x202:0x206] != b"HdrS":
                return None
            (off,) = struct.unpack_from("<H", head, 0x20E)
            f.seek(off + 0x200)
            text = f.read(256).split(b"\0")[0].decode(errors="replace")
            return text.split()[0] if text else None
    except (OSError, struct.error):
        return None


#: Compressed payloads a bzImage may carry that Python's standard library can decompress
#: (CONFIG_KERNEL_XZ, Debian's choice, and CONFIG_KERNEL_GZIP), by magic.
_PAYLOADS = ((b"\xfd7zXZ\x00", "xz"), (b"\x1f\x8b\x08", "gzip"))


def extract_vmlinux(bzimage: Path) -> bytes | None:
    """The uncompressed kernel inside a bzImage if it can boot by PVH (``elf.has_pvh_entry``),
    as the kernel's scripts/extract-vmlinux finds it; None otherwise. Booting it skips SeaBIOS
    and the in-guest decompression, about 2-3 s of TCG time per boot."""
    import gzip
    import lzma
    import zlib

    data = bzimage.read_bytes()
    for magic, kind in _PAYLOADS:
        start = data.find(magic)
        while start != -1:
            try:
                if kind == "xz":
                    out = lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(data[start:])
                else:
                    out = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data[start:])
            except (lzma.LZMAError, zlib.error, gzip.BadGzipFile, EOFError):
                out = b""
            if elf.has_pvh_entry(out):
                return out
            start = data.find(magic, start + 1)
    return None


def _pvh_kernel(kernel: Path, dest: Path, say: Say) -> str:
    """The PVH-bootable vmlinux for ``kernel``, cached at ``dest``, or "" if there is none."""
    if dest.is_file():
        return str(dest)
    vmlinux = extract_vmlinux(kernel)
    if vmlinux is None:
        say("  no PVH-bootable vmlinux inside (QEMU boots the bzImage through SeaBIOS)")
        return ""
    atomic_write(dest, vmlinux)
    say(f"  PVH entry found: QEMU boots the uncompressed kernel directly -> {dest}")
    return str(dest)


def kernel_package() -> str:
    """The versioned kernel package Debian's ``linux-image-amd64`` depends on now."""
    p = apt(["apt-cache", "depends", KERNEL_META], Path("/"))
    for line in p.stdout.splitlines():
        line = line.strip()
        if line.startswith("Depends:") and "linux-image-" in line:
            return line.split()[-1]
    raise SetupError(f"apt-cache knows no {KERNEL_META}: run `apt-get update` (as root), or pass --kernel PATH")


def _copy_into(src: Path, dest: Path) -> str:
    atomic_write(dest, src.read_bytes(), mode=0o755)
    return str(dest)


def _fetch_kernel(root: Path, work: Path, say: Say) -> tuple[str, str, str]:
    pkg = kernel_package()
    version = pkg.removeprefix("linux-image-")
    dest = root / "kernel" / version / "vmlinuz"
    if dest.is_file():
        say(f"kernel:  {dest} (cached, from Debian's {pkg})")
        return str(dest), version, f"debian:{pkg}"
    say(f"kernel:  fetching Debian's {pkg} (unpacked, not installed)")
    unpacked = unpack(download(pkg, work, say), ["./boot/vmlinuz-*", "./boot/config-*"], work, say)
    vmlinuz = next((unpacked / "boot").glob("vmlinuz-*"))
    for cfg in (unpacked / "boot").glob("config-*"):
        atomic_write(dest.parent / "config", cfg.read_bytes())
    say(f"  -> {dest}")
    return _copy_into(vmlinuz, dest), version, f"debian:{pkg}"


def _host_or_package(
    what: str, host: Path, pkg: str, member: str, dest: Path, work: Path, say: Say, want_static: bool = False
) -> str:
    if host.is_file() and (not want_static or elf.inspect(host).interpreter is None):
        say(f"{what}: {host} (host's {pkg})")
        return _copy_into(host, dest)
    say(f"{what}: {host} not on the host; fetching Debian's {pkg}")
    unpacked = unpack(download(pkg, work, say), [member], work, say)
    found = sorted(p for p in unpacked.rglob("*") if p.is_file())
    if not found:
        raise SetupError(f"{pkg} has no {member}")
    say(f"  -> {dest}")
    return _copy_into(found[0], dest)


def setup(kernel: Path | None = None, say: Say = lambda s: None) -> Guest:
    """Gather the guest's files into the cache (reusing what is there) and write guest.json."""
    root = cache_dir()
    say(f"cache:   {root}")
    try:
        qemu = find_qemu()
        say(f"qemu:    {qemu}")
    except SetupError as e:
        # Say so, gather the rest anyway, and fail at the end with the command that installs it.
        qemu, missing = "", e.args[0]
        say(f"qemu:    missing: {missing}")
    say("accel:   tcg (the default); " + ("/dev/kvm opens, --accel kvm may work" if kvm_usable() else "/dev/kvm absent or not usable"))
    if kernel is not None and not kernel.expanduser().is_file():
        raise UsageError(f"--kernel {kernel}: no such file")
    # Two setups at once (two `vm run` on an empty cache, parallel tests) download once.
    with locked(root, say), tempfile.TemporaryDirectory(prefix="setup.", dir=root) as tmp:
        work = Path(tmp)
        if kernel is not None:
            kernel = kernel.expanduser().resolve()
            version = bzimage_version(kernel)
            if version is None:
                raise UsageError(f"--kernel {kernel}: not an x86 bzImage kernel (no 'HdrS' boot header)")
            say(f"kernel:  {kernel} (given, version {version})")
            kpath, ksource = str(kernel), "given"
        else:
            kpath, version, ksource = _fetch_kernel(root, work, say)
            # the dax/kmem modules of the same package, for presets with CXL/NVM nodes (vm/kmem.py)
            kmem.fetch_modules(root, version, ksource, say, work=work)
        key = hashlib.sha256(f"{kpath}\0{os.stat(kpath).st_size}\0{os.stat(kpath).st_mtime_ns}".encode()).hexdigest()[:16]
        vmlinux = _pvh_kernel(Path(kpath), root / "kernel" / "pvh" / f"{key}.vmlinux", say)
        busybox = _host_or_package(
            "busybox", Path("/bin/busybox"), "busybox-static", "./bin/busybox", root / "bin" / "busybox", work, say, want_static=True
        )
        numactl = _host_or_package(
            "numactl", Path("/usr/bin/numactl"), "numactl", "./usr/bin/numactl", root / "bin" / "numactl", work, say
        )
        libnuma = _host_or_package(
            "libnuma", Path("/usr/lib/x86_64-linux-gnu/libnuma.so.1"), "libnuma1", "./usr/lib/x86_64-linux-gnu/libnuma.so.1*",
            root / "lib" / "libnuma.so.1", work, say,
        )
    if not qemu:
        raise SetupError(f"the guest's files are in {root}, but {missing}")
    guest = Guest(qemu, kpath, version, ksource, busybox, numactl, libnuma, str(root / "lib"), vmlinux)
    atomic_write(root / MANIFEST, guest.to_json().encode())
    say(f"ready:   {root / MANIFEST}")
    return guest


def load(say: Say = lambda s: None) -> Guest:
    """The guest from the cache's guest.json, running setup first if there is none."""
    path = cache_dir() / MANIFEST
    if path.is_file():
        data = json.loads(path.read_text())
        try:
            guest = Guest(**data)
        except TypeError:
            guest = None
        if guest is not None and all(Path(p).is_file() for p in (guest.kernel, guest.busybox, guest.numactl, guest.libnuma)):
            return guest
    say("numalab vm: no complete guest in the cache; running `numalab vm setup`")
    return setup(say=say)


def find_agent() -> Path:
    """The numalab-agent binary for the guest: ``$NUMALAB_AGENT`` or ``make agent``'s output."""
    env = os.environ.get("NUMALAB_AGENT")
    path = Path(env) if env else AGENT_BUILT
    if not path.is_file():
        raise SetupError(f"numalab-agent not found at {path}: build it with `make agent` (or set NUMALAB_AGENT)")
    return path
