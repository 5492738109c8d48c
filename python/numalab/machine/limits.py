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

import datetime
import math
from typing import Any

#: CPU (PU) OS indexes must be below this: 8 x the largest NR_CPUS Linux builds with (8192).
MAX_CPUS = 1 << 16
#: NUMA node OS indexes must be below this: 4 x the largest MAX_NUMNODES (1 << 10).
MAX_NODES = 1 << 12
#: Largest hwloc XML file read: lstopo writes a few KiB per core, so a machine of MAX_CPUS PUs
#: with caches and I/O devices fits many times over.
MAX_XML_BYTES = 64 << 20
#: Most elements read from one file: a 8192-CPU machine with caches, infos and I/O devices has
#: about 100,000; each element read costs a few hundred bytes of memory.
MAX_XML_ELEMENTS = 1 << 19
#: Deepest element nesting accepted: hwloc's trees are about 15 levels deep (Machine, Package,
#: Die, Groups, caches, Core, PU, plus memory and I/O children); deeper means a broken file.
MAX_XML_DEPTH = 256

CPU_REASON = f"CPU indexes must be below {MAX_CPUS} (Linux builds with at most 8192 CPUs, NR_CPUS)"
NODE_REASON = f"NUMA node indexes must be below {MAX_NODES} (Linux builds with at most 1024 nodes, MAX_NUMNODES)"


#: Largest magnitude of a number in a machine description: the model's integers are u64 and its
#: sizes in bytes must fit one (a node of 2^64 bytes is 16 EiB, beyond any address space).
MAX_SPEC_NUMBER = 2**64


def spec_bad_value(spec: Any, path: str = "") -> tuple[str, str] | None:
    """(key, reason) for the first value of a parsed TOML/JSON machine description that no field
    takes: a date or time, a non-finite number, or a number beyond 2^64; None when all are fine.
    Checked before the model converts them, which would overflow or misreport the type."""
    if isinstance(spec, dict):
        for k, v in spec.items():
            found = spec_bad_value(v, f"{path}.{k}" if path else str(k))
            if found:
                return found
    elif isinstance(spec, list):
        for i, v in enumerate(spec):
            found = spec_bad_value(v, f"{path}[{i}]")
            if found:
                return found
    elif isinstance(spec, (datetime.date, datetime.time)):
        return path, f"a date or time ({spec.isoformat()}) is not accepted here; expected a number"
    elif isinstance(spec, float) and not math.isfinite(spec):
        return path, f"{spec} is not a finite number"
    elif isinstance(spec, (int, float)) and not isinstance(spec, bool) and abs(spec) >= MAX_SPEC_NUMBER:
        shown = f"{spec:.3g}" if isinstance(spec, float) or spec.bit_length() > 200 else str(spec)
        return path, f"{shown} is out of range (numbers in a machine description are below 2^64)"
    return None


def spec_too_large(spec: dict) -> tuple[str, str] | None:
    """(key, reason) when a MachineSpec (as parsed from TOML or JSON) would exceed the limits,
    estimated from its numbers before the model builds anything; None when it fits."""
    shape = spec.get("topology")
    if isinstance(shape, dict):
        counts = {k: shape.get(k, 1) for k in ("packages", "nodes_per_package", "cores_per_node", "threads_per_core")}
        if all(type(v) is int and v >= 0 for v in counts.values()):
            nodes = counts["packages"] * counts["nodes_per_package"]
            cpus = nodes * counts["cores_per_node"] * counts["threads_per_core"]
            if nodes > MAX_NODES:
                return "topology", f"{nodes} nodes (packages x nodes_per_package) is too many: {NODE_REASON}"
            if cpus > MAX_CPUS:
                return "topology", f"{cpus} CPUs (packages x nodes_per_package x cores_per_node x threads_per_core) is too many: {CPU_REASON}"
    for k, node in enumerate(spec.get("nodes") or []):
        os_index = node.get("os_index") if isinstance(node, dict) else None
        if type(os_index) is int and os_index >= MAX_NODES:
            return f"nodes[{k}].os_index", f"{os_index} is too large: {NODE_REASON}"
    for k, core in enumerate(spec.get("cores") or []):
        os_index = core.get("os_index") if isinstance(core, dict) else None
        if type(os_index) is int and os_index >= MAX_CPUS:
            return f"cores[{k}].os_index", f"{os_index} is too large: {CPU_REASON}"
    return None
