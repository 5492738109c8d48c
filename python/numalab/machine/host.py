"""This host (or a captured sysfs tree) as a :class:`numalab._core.Machine`.

The Rust reader ``numalab._core.read_host_topology(root)`` returns what sysfs states: NUMA nodes
with their CPUs, memory and SLIT row, and cores with their hardware threads. :func:`from_host`
turns those facts into a MachineSpec with explicit ``nodes`` and ``cores`` and the SLIT as
``distances``, and fills what sysfs cannot tell (latency, bandwidth, core frequency when cpufreq
is absent, memory-level parallelism) with the documented estimates of
:mod:`numalab.machine.estimates`, each recorded in the machine's ``notes``. The caches sysfs
lists (``cpuK/cache/indexI``, data and unified, one per level and set of sharing CPUs) become
the machine's ``caches`` from level 2 up, as a preset's ``[[caches]]`` with explicit ``cpus``;
without them the engine's per-node fallback applies and a note says so.
:func:`host_free_bytes` gives each node's MemFree, the ``node N free:`` line of
``numactl --hardware``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from numalab._core import HostError, Machine, TopologyError, read_host_topology
from numalab.machine import estimates as est
from numalab.machine.bitmaps import parse_cpulist
from numalab.machine.limits import spec_too_large

#: Where the kernel's cpufreq driver reports a CPU's highest frequency, in kHz.
CPUFREQ_MAX = "sys/devices/system/cpu/cpu{cpu}/cpufreq/cpuinfo_max_freq"

#: Cache levels the model holds (docs/contention.md §4.1 does not model the L1).
CACHE_LEVELS = (2, 3, 4)

#: The note when sysfs lists no cache the model can use.
NO_CACHES_NOTE = (
    "none in sysfs (no sys/devices/system/cpu/cpuK/cache/indexI of level 2-4 with a size: the kernel "
    "has no cacheinfo for this CPU, as in many virtual machines): the engine assumes one last-level "
    "cache per node of 2 MiB per core (docs/contention.md §4.1)"
)


def read_facts(root: Path = Path("/")) -> dict[str, Any]:
    """The sysfs facts under ``root`` (``nodes``, ``cores``, ``numa_disabled``); raises HostError."""
    return json.loads(read_host_topology(str(root)))


def from_host(root: Path = Path("/")) -> Machine:
    """The machine whose sysfs/procfs tree is under ``root`` (``/`` for this machine), named ``host``."""
    spec = host_spec(read_facts(root), root)
    too_large = spec_too_large(spec)
    if too_large is not None:
        key, reason = too_large
        raise HostError(f"{root}: the host topology read from sysfs is beyond numalab's limits: {key}: {reason}")
    try:
        return Machine.from_spec_json(json.dumps(spec))
    except TopologyError as e:
        key = e.args[1] if len(e.args) > 1 else ""
        raise TopologyError(f"{root}: the host topology read from sysfs is invalid: {e.args[0]}", key) from None


def host_free_bytes(root: Path = Path("/")) -> dict[int, int]:
    """MemFree of each node (OS index -> bytes); nodes whose meminfo has no MemFree line are left out."""
    return {n["os_index"]: n["memory_free_bytes"] for n in read_facts(root)["nodes"] if n["memory_free_bytes"] is not None}


def host_spec(facts: dict[str, Any], root: Path) -> dict[str, Any]:
    """A MachineSpec (as a dict) from the sysfs facts, estimates recorded in ``notes``."""
    notes: dict[str, str] = {}
    est.record(notes, est.LOCAL_LATENCY_NS, est.NODE_BANDWIDTH_GBPS, est.CORE_MLP, est.PAGE_SIZE_BYTES, est.NO_LINKS)
    if facts["numa_disabled"]:
        notes["nodes"] = (
            "the kernel exposes no NUMA node (CONFIG_NUMA off, or NUMA/node interleaving set in "
            "firmware): the whole machine is node 0, from sys/devices/system/cpu/online and proc/meminfo"
        )
    nodes = facts["nodes"]
    caches = host_caches(facts.get("caches", []), notes)
    first_cpu = min((c for n in nodes for c in parse_cpulist(n["cpus"])), default=0)
    frequency_ghz = core_frequency_ghz(root, first_cpu, notes)
    return {
        "name": "host",
        "description": f"this host, read from sysfs under {root}",
        "page_size_bytes": int(est.PAGE_SIZE_BYTES.value),
        "nodes": [
            {"os_index": n["os_index"], "package": n["package"], "cpus": n["cpus"], "memory_bytes": n["memory_bytes"]}
            for n in nodes
        ],
        "cores": [{"cpus": c["cpus"], "os_index": c["os_index"]} for c in facts["cores"]],
        "distances": [n["distances"] for n in nodes],
        "latency": {"local_ns": est.LOCAL_LATENCY_NS.value},
        "bandwidth": {"node_gbps": est.NODE_BANDWIDTH_GBPS.value},
        "core": {"frequency_ghz": frequency_ghz, "mlp": est.CORE_MLP.value},
        "caches": caches,
        "notes": notes,
    }


def host_caches(facts: list[dict[str, Any]], notes: dict[str, str]) -> list[dict[str, Any]]:
    """The sysfs caches of levels 2-4 as MachineSpec ``caches`` entries (``level``, ``size_kib``,
    ``cpus``). A level whose instances overlap (a kernel that gives CPUs of one cache different
    sharing lists, seen on some hypervisors) cannot be one cache per PU and is left out; noted."""
    by_level: dict[int, list[dict[str, Any]]] = {}
    for c in facts:
        if c["level"] in CACHE_LEVELS:
            by_level.setdefault(c["level"], []).append(c)
    out: list[dict[str, Any]] = []
    for level, instances in sorted(by_level.items()):
        cpus = [cpu for c in instances for cpu in parse_cpulist(c["cpus"])]
        if len(cpus) != len(set(cpus)):  # some CPU is under two instances of this level
            notes[f"caches.L{level}"] = (
                f"left out: sysfs gives L{level} caches whose shared_cpu_list overlap without being equal, "
                "so which CPUs share one instance is unknown"
            )
            continue
        out.extend({"level": level, "size_kib": c["size_bytes"] / 1024, "cpus": c["cpus"]} for c in instances)
    if not out:
        notes["caches"] = NO_CACHES_NOTE
    return out


def core_frequency_ghz(root: Path, cpu: int, notes: dict[str, str]) -> float:
    """cpufreq's cpuinfo_max_freq of ``cpu`` when the kernel has it, else the estimate; noted."""
    rel = CPUFREQ_MAX.format(cpu=cpu)
    path = root / rel
    if not path.is_file():
        est.record(notes, est.CORE_FREQUENCY_GHZ)
        return est.CORE_FREQUENCY_GHZ.value
    try:
        text = path.read_text(encoding="ascii", errors="replace").strip()
    except OSError as e:
        raise HostError(f"{path}: cannot read: {e.strerror}") from None
    if not text.isdigit() or int(text) == 0:
        raise HostError(f"{path}: bad cpuinfo_max_freq '{text}' (expected a frequency in kHz)")
    khz = int(text)
    notes[est.CORE_FREQUENCY_GHZ.key] = (
        f"{rel}: {khz} kHz, the highest frequency the cpufreq driver reports (turbo included when boost is on)"
    )
    return khz / 1e6

