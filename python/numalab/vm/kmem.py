"""Slow-memory nodes in the guest, onlined as real CXL memory is: through a device-DAX namespace
and the ``kmem`` driver (drivers/dax/kmem.c), so that the guest kernel puts them in a lower
memory tier.

Why: Linux before 6.7 places every node that has memory at boot in the default DRAM tier
(mm/memory-tiers.c: memory_tier_init() -> set_node_memory_tier()), whatever the firmware's HMAT
says; only memory that ``kmem`` hot-adds gets another type, ``MEMTIER_DEFAULT_DAX_ADISTANCE``
(dev_dax_kmem_probe() -> init_node_memory_type()), a lower tier with the DRAM nodes demoting to
it. From 6.7 on kmem takes the node's HMAT figures instead (mt_calc_adistance()). Either way a
CPU-less preset node whose hwloc subtype is ``CXL-DRAM`` or ``NVM`` (docs/tiering.md §2.1) is
onlined this way in the guest:

1. the kernel command line keeps the node's whole physical range out of the page allocator as
   legacy persistent memory (``memmap=<size>!<start>``, e820 type 12, arch/x86/kernel/e820.c);
   ``memhp_default_state=online`` onlines hot-added memory at once (mm/memory_hotplug.c);
2. in the guest: ``nd_e820`` makes a region of it whose ``target_node`` is the node (from SRAT),
   its namespace is given to the region's device-DAX seed with the struct pages in RAM
   (``mode=ram``, 2 MiB alignment) and bound to ``dax_pmem``; writing the device to ``kmem``'s
   ``new_id`` hot-adds it to the node (what ``ndctl create-namespace -m devdax`` and ``daxctl
   reconfigure-device -m system-ram`` do through the same sysfs files).

The modules come from the guest kernel's own Debian package (``apt-get download``, only these
files unpacked). ``kmem`` adds whole memory blocks (128 MiB on x86-64) after the DAX metadata, so
the guest has up to 256 MiB less of such a node than the preset (``usable_mib()``,
docs/tiering.md §11).
"""

from __future__ import annotations

import shlex
import tempfile
from pathlib import Path

from numalab.exceptions import UsageError
from numalab.vm import cpio, debian
from numalab.vm.cache import atomic_write

#: Kinds of CPU-less memory the kernel onlines through dax/kmem (docs/tiering.md §2.1).
KMEM_SUBTYPES = ("CXL-DRAM", "NVM")
#: In load order (each after what it depends on; ``device_dax`` stays out so that no driver
#: claims the DAX device before ``kmem`` does).
MODULES = ("nvdimm/libnvdimm.ko", "nvdimm/nd_btt.ko", "nvdimm/nd_pmem.ko", "nvdimm/nd_e820.ko", "dax/dax_pmem.ko", "dax/kmem.ko")
GUEST_DIR = "lib/numalab-modules"
#: q35 keeps guest RAM below 4 GiB, in node order from address 0, while there is less than
#: 2.75 GiB of it (QEMU hw/i386/pc_q35.c: pc_q35_init(), lowmem 0xb0000000); above, a node may
#: straddle the PCI hole and its range is no longer one memmap= range.
LOWMEM_MIB = 0xB0000000 >> 20


def modules_dir(cache_root: Path, version: str) -> Path:
    return cache_root / "kernel" / version / "modules"


def have_modules(cache_root: Path, version: str) -> bool:
    d = modules_dir(cache_root, version)
    return all((d / Path(m).name).is_file() for m in MODULES)


def fetch_modules(cache_root: Path, version: str, source: str, say=lambda s: None, work: Path | None = None) -> Path:
    """The kmem modules of the guest kernel, unpacked from its Debian package into the cache once
    (from the package already downloaded into ``work`` when setup gives it)."""
    d = modules_dir(cache_root, version)
    if have_modules(cache_root, version):
        return d
    if not source.startswith("debian:"):
        raise UsageError(f"a CPU-less {'/'.join(KMEM_SUBTYPES)} node is onlined by dax/kmem in the guest, which needs the kernel's "
                         f"modules ({', '.join(Path(m).name for m in MODULES)}); the guest kernel ({source}) has none in the cache: "
                         f"put them in {d}, or use Debian's kernel (numalab vm setup)")
    pkg = source.removeprefix("debian:")
    say(f"modules: fetching {', '.join(Path(m).stem for m in MODULES)} from Debian's {pkg} (unpacked, not installed)")
    cache_root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="modules.", dir=cache_root) as tmp:
        work = work or Path(tmp)
        unpacked = debian.unpack(debian.download(pkg, work, say), [f"./lib/modules/*/kernel/drivers/{m}" for m in MODULES], work, say)
        for m in MODULES:
            found = sorted(unpacked.glob(f"lib/modules/*/kernel/drivers/{m}"))
            if not found:
                raise debian.SetupError(f"{pkg} has no drivers/{m}")
            atomic_write(d / Path(m).name, found[0].read_bytes())
    return d


def archive(directory: Path) -> bytes:
    """A gzipped cpio of the modules, appended to the run's initramfs."""
    entries = [cpio.directory("lib"), cpio.directory(GUEST_DIR)]
    entries += [cpio.regular(f"{GUEST_DIR}/{Path(m).name}", (directory / Path(m).name).read_bytes(), 0o644) for m in MODULES]
    return cpio.gzipped(entries)


#: x86-64's memory block (arch/x86/mm/init_64.c: probe_memory_block_size(), below 64 GiB) and the
#: device-DAX data offset with 2 MiB alignment and struct pages in RAM (info block, then aligned).
BLOCK_MIB = 128
DAX_OFFSET_MIB = 2


def ranges(memory_mib: list[int], nodes: list[int]) -> list[tuple[int, int]]:
    """(start MiB, size MiB) of each node's guest-physical RAM held for dax/kmem. QEMU lays the
    nodes' memory backends out in node order from address 0 (the guest's SRAT shows the same
    ranges). The last MiB of each node is left out (``reserved()``): it keeps two such nodes from
    merging into one e820 range (one region, one target node), and the last node's holds QEMU's
    ACPI tables, which no region may cover."""
    if sum(memory_mib) > LOWMEM_MIB:
        raise UsageError(f"dax/kmem nodes need the guest's RAM below 4 GiB (at most {LOWMEM_MIB} MiB in all), got {sum(memory_mib)} MiB")
    starts = [sum(memory_mib[:i]) for i in range(len(memory_mib))]
    out = [(starts[n], memory_mib[n] - 1) for n in nodes]
    for n, (start, size) in zip(nodes, out):
        if usable_mib(start, size) <= 0:
            raise UsageError(f"node {n}: dax/kmem would online none of its {memory_mib[n]} MiB in the guest (kmem adds whole "
                             f"{BLOCK_MIB} MiB memory blocks after the DAX metadata); give it at least {3 * BLOCK_MIB} MiB")
    return out


def usable_mib(start: int, size: int) -> int:
    """What kmem onlines of a held range: whole memory blocks after the DAX data offset
    (drivers/dax/kmem.c: dax_kmem_range())."""
    first = -(-(start + DAX_OFFSET_MIB) // BLOCK_MIB) * BLOCK_MIB
    last = (start + size) // BLOCK_MIB * BLOCK_MIB
    return max(0, last - first)


def reserved(memory_mib: list[int], nodes: list[int]) -> list[tuple[int, int]]:
    """The last MiB of each dax/kmem node, marked reserved: so the node has no boot memory (which
    would put it in the DRAM tier), and see ``ranges()``."""
    return [(start + size, 1) for start, size in ranges(memory_mib, nodes)]


def cmdline(memory_mib: list[int], nodes: list[int]) -> str:
    """Kernel options keeping ``nodes``' RAM for dax/kmem, and onlining hot-added memory."""
    if not nodes:
        return ""
    held = [f"memmap={size}M!{start}M" for start, size in ranges(memory_mib, nodes)]
    held += [f"memmap={size}M${start}M" for start, size in reserved(memory_mib, nodes)]
    return " ".join(held) + " memhp_default_state=online"


def script(nodes: list[int], err: str) -> list[str]:
    """Shell lines for the guest: load the modules, then turn each node's legacy-pmem region into
    system RAM through device DAX and kmem. Each failure is one line in ``err``."""
    if not nodes:
        return []
    e = shlex.quote(err)
    lines = [f"for m in {' '.join(Path(m).stem for m in MODULES)}; do "
             f"insmod /{GUEST_DIR}/$m.ko 2>>{e} || echo \"insmod $m failed\" >> {e}; done"]
    lines.append(f"""kmem_node() {{
  for r in /sys/bus/nd/devices/region*; do [ "$(cat $r/target_node 2>/dev/null)" = "$1" ] && break; r=; done
  [ -n "$r" ] || {{ echo "node $1: no legacy-pmem region (memmap=) found by nd_e820" >> {e}; return; }}
  ns=$(cd $r && ls -d namespace*.0 | head -1); dax=$(cat $r/dax_seed)
  [ -e /sys/bus/nd/drivers/nd_pmem/$ns ] && echo $ns > /sys/bus/nd/drivers/nd_pmem/unbind
  D=/sys/bus/nd/devices/$dax
  cat /proc/sys/kernel/random/uuid > $D/uuid && echo ram > $D/mode && echo 2097152 > $D/align && echo $ns > $D/namespace \\
    && echo $dax > /sys/bus/nd/drivers/dax_pmem/bind && echo $dax > /sys/bus/dax/drivers/kmem/new_id \\
    || echo "node $1: device DAX or kmem refused $dax ($ns)" >> {e}
  grep -q "Node $1 MemTotal: *[1-9]" /sys/devices/system/node/node$1/meminfo || echo "node $1: kmem added no memory" >> {e}
}}""")
    lines += [f"kmem_node {node} 2>>{e}" for node in nodes]
    return lines
