"""Limits on what a machine description may name, checked before anything is allocated.

A CPU or node index sizes the bitmaps that hold it (a PU ``os_index="4294967295"`` would need
512 MiB of bits in the model), so importers refuse indexes no Linux machine can have, with the
limit and its reason, instead of allocating. The limits sit well above the kernel's own maxima:
``NR_CPUS`` is at most 8192 on x86-64 (arch/x86/Kconfig, ``NR_CPUS_RANGE_END``; arm64 and
powerpc stop lower or equal), and ``MAX_NUMNODES = 1 << NODES_SHIFT`` with ``NODES_SHIFT`` at
most 10, i.e. 1024 nodes (mm/Kconfig and arch/x86/Kconfig ``NODES_SHIFT range 1 10``,
include/linux/numa.h).
"""

from __future__ import annotations

#: CPU (PU) OS indexes must be below this: 8 x the largest NR_CPUS Linux builds with (8192).
MAX_CPUS = 1 << 16
#: NUMA node OS indexes must be below this: 4 x the largest MAX_NUMNODES (1 << 10).
MAX_NODES = 1 << 12
#: Largest hwloc XML file read: lstopo writes a few KiB per core, so a machine of MAX_CPUS PUs
#: with caches and I/O devices fits many times over.
MAX_XML_BYTES = 64 << 20
#: Deepest element nesting accepted: hwloc's trees are about 15 levels deep (Machine, Package,
#: Die, Groups, caches, Core, PU, plus memory and I/O children); deeper means a broken file.
MAX_XML_DEPTH = 256

CPU_REASON = f"CPU indexes must be below {MAX_CPUS} (Linux builds with at most 8192 CPUs, NR_CPUS)"
NODE_REASON = f"NUMA node indexes must be below {MAX_NODES} (Linux builds with at most 1024 nodes, MAX_NUMNODES)"
