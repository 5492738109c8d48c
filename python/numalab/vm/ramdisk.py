"""A ramdisk in the guest (``brd``, drivers/block/brd.c) for the file-mapping cases: a block
device whose page cache reads ahead as a disk's does, where the guest has no disk.

Why not a file in the guest's root: the initramfs's root is a tmpfs, whose pages come from
mm/shmem.c: shmem_fault (no read-around, shmem's own policy), and ramfs's backing_dev_info has
``ra_pages`` 0 (the no-op bdi of a nodev super block), so mm/filemap.c: do_sync_mmap_readahead
returns at once. A ``brd`` disk gets a bdi of its own with ``ra_pages`` = VM_READAHEAD_PAGES (32,
block/genhd.c: __alloc_disk_node -> bdi_alloc), and a ``MAP_SHARED`` mapping of ``/dev/ram0`` is
a file mapping of the block device's page cache (block/fops.c: blkdev_mmap -> generic_file_mmap),
faulted through filemap_fault. brd keeps the data in pages of its own, which are not the
mapping's pages. Every disk file system is a module in Debian's kernel, brd too: the module comes
from the guest kernel's own package, as kmem.py's do.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from numalab.exceptions import UsageError
from numalab.vm import cpio, debian
from numalab.vm.cache import atomic_write
from numalab.vm.kmem import GUEST_DIR, modules_dir

MODULE = "block/brd.ko"
#: The guest's device: one disk (rd_nr=1).
DEVICE = "/dev/ram0"


def fetch(cache_root: Path, version: str, source: str, say=lambda s: None) -> Path:
    """brd.ko of the guest kernel, unpacked from its Debian package into the cache once."""
    d = modules_dir(cache_root, version)
    path = d / Path(MODULE).name
    if path.is_file():
        return path
    if not source.startswith("debian:"):
        raise UsageError(f"the file-mapping cases map a brd ramdisk in the guest, which needs the kernel's brd.ko; the guest kernel "
                         f"({source}) has none in the cache: put it in {d}, or use Debian's kernel (numalab vm setup)")
    pkg = source.removeprefix("debian:")
    say(f"modules: fetching brd from Debian's {pkg} (unpacked, not installed)")
    cache_root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="modules.", dir=cache_root) as tmp:
        work = Path(tmp)
        unpacked = debian.unpack(debian.download(pkg, work, say), [f"./lib/modules/*/kernel/drivers/{MODULE}"], work, say)
        found = sorted(unpacked.glob(f"lib/modules/*/kernel/drivers/{MODULE}"))
        if not found:
            raise debian.SetupError(f"{pkg} has no drivers/{MODULE}")
        atomic_write(path, found[0].read_bytes())
    return path


def archive(module: Path) -> bytes:
    """A gzipped cpio of brd.ko, appended to the run's initramfs."""
    entries = [cpio.directory("lib"), cpio.directory(GUEST_DIR), cpio.regular(f"{GUEST_DIR}/{module.name}", module.read_bytes(), 0o644)]
    return cpio.gzipped(entries)


def script(mib: int, errors: str) -> list[str]:
    """Shell lines that load brd with one disk of ``mib`` MiB (its pages are allocated only when
    written back to) and report a failure in ``errors``."""
    if mib <= 0:
        return []
    return [f"insmod /{GUEST_DIR}/{Path(MODULE).name} rd_nr=1 rd_size={mib * 1024} 2>>{errors} "
            f"|| echo 'brd: the guest kernel refused the ramdisk module' >> {errors}",
            f"[ -b {DEVICE} ] || echo '{DEVICE}: no such block device after loading brd' >> {errors}"]


def reset(mib: int) -> list[str]:
    """Shell lines that leave the ramdisk's page cache as a fresh boot has it, before the next
    command of a shared boot (guest.batch_script): the kernel already writes back and drops a
    block device's page cache when its last opener closes it (block/bdev.c: blkdev_put), so this
    only matters if something the last command started still holds the device; BLKFLSBUF
    (block/ioctl.c: blkdev_flushbuf -> fsync_bdev, invalidate_bdev) drops it then too. Seen in
    the guest: filemap and filemap-random place the same pages per node in either order in one
    boot as each in a boot of its own."""
    return [f"sync && blockdev --flushbufs {DEVICE}"] if mib > 0 else []
