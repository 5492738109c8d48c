"""Documented estimates for what an imported machine description cannot tell.

sysfs gives nodes, CPUs, memory sizes and the SLIT; an hwloc XML file may add measured
bandwidths and latencies (memattrs), but often does not. The simulator still needs a local
latency, a bandwidth per node, a core frequency and a memory-level parallelism, so the importers
(:mod:`numalab.machine.host`, :mod:`numalab.machine.hwloc_xml`) fill them from here and record
each estimate in the machine's ``notes`` table under the MachineSpec key it fills, so that
``numalab topo`` can say which numbers are guesses.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Estimate:
    """A value and why it was chosen (goes into ``notes[key]``)."""

    key: str
    value: float
    note: str


#: Idle load-to-use latency of local DRAM; remote latencies follow as local x SLIT / 10.
LOCAL_LATENCY_NS = Estimate(
    "latency.local_ns",
    90.0,
    "estimate: 90 ns local idle latency (local is about 80-90 ns on current servers, "
    "docs/contention.md); remote = local x distance / 10 (docs/machines.md)",
)

#: Sustainable bandwidth of one node's memory controllers.
NODE_BANDWIDTH_GBPS = Estimate(
    "bandwidth.node_gbps",
    32.0,
    "estimate: 32 GB/s per node = 2 DDR4-2666 channels x 21.3 GB/s peak x 0.75 sustainable "
    "(sustained reads reach 70-85% of peak, docs/contention.md); the source does "
    "not say how many channels are populated: measure with STREAM to replace it",
)

#: Core clock when nothing gives it (virtual machines and containers often hide cpufreq).
CORE_FREQUENCY_GHZ = Estimate(
    "core.frequency_ghz",
    2.5,
    "estimate: 2.5 GHz, the middle of the 2.0-3.0 GHz base clocks of current server CPUs; "
    "no cpufreq information in the source",
)

#: Outstanding last-level-cache misses one thread sustains.
CORE_MLP = Estimate(
    "core.mlp",
    10.0,
    "estimate: 10 outstanding misses per thread, about the number of L1 fill buffers "
    "(docs/contention.md)",
)

#: Memory of a node whose size the source does not give (hwloc files made from CPUID dumps,
#: synthetic descriptions without ``memory=``), per core of the node.
MEMORY_PER_CORE_GIB = Estimate(
    "memory.node_gib",
    4.0,
    "estimate: 4 GiB per core of the node (at least 4 GiB), a common server sizing of 4-8 GB per core; "
    "the source gives no memory size: set it with --memory-per-node-mib",
)

#: Base page size when the source does not record it.
PAGE_SIZE_BYTES = Estimate(
    "page_size_bytes",
    4096,
    "assumed: 4096 bytes, the base page of x86-64 Linux; the source does not record it",
)

#: Sources without interconnect information: remote cost comes from the latencies alone.
NO_LINKS = Estimate(
    "links",
    0,
    "none: the source does not describe the interconnect, so remote accesses load no link; "
    "remote cost comes from the distance-derived latencies only",
)


def record(notes: dict[str, str], *estimates: Estimate) -> None:
    """Write each estimate's reason into ``notes`` under the key it fills."""
    for e in estimates:
        notes[e.key] = e.note
