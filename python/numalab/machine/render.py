"""Print a machine the way ``numactl --hardware`` does, then what numactl cannot show:
memory bandwidth per node, the idle latency matrix, and the interconnect links.

The numactl part follows numactl master's ``print_node_cpus``/``print_distances`` byte for byte
(``node  `` header, ``% 4d `` cells), so people can diff it against a real machine.
"""

from __future__ import annotations

from typing import Any

from numalab.machine.bitmaps import format_cpulist, parse_cpulist

MIB = 1 << 20


def numactl_hardware(m: dict[str, Any], free_bytes: dict[int, int] | None = None) -> str:
    nodes = m["nodes"]
    ids = [n["os_index"] for n in nodes]
    lines = [f"available: {len(nodes)} nodes ({format_cpulist(ids)})"]
    for n in nodes:
        cpus = sorted(parse_cpulist(n["cpuset"]))
        lines.append(f"node {n['os_index']} cpus:" + "".join(f" {c}" for c in cpus))
        size = n["local_memory_bytes"]
        lines.append(f"node {n['os_index']} size: {size // MIB} MB")
        free = (free_bytes or {}).get(n["os_index"], size)
        lines.append(f"node {n['os_index']} free: {free // MIB} MB")
    lines.append("node distances:")
    lines.append("node  " + "".join(f"{i:4d} " for i in ids))
    for i, row in zip(ids, m["distances"]):
        lines.append(f"{i:4d}: " + "".join(f"{d:4d} " for d in row))
    return "\n".join(lines) + "\n"


def numalab_extras(m: dict[str, Any]) -> str:
    nodes = m["nodes"]
    ids = [n["os_index"] for n in nodes]
    out = ["memory bandwidth (GB/s, sustainable per node):"]
    out.append("  " + "  ".join(f"node {n['os_index']}: {n['bandwidth_gbps']:.1f}" for n in nodes))
    out.append("idle latency (ns, rows: CPU node, columns: memory node):")
    out.append("node  " + "".join(f"{i:7d} " for i in ids))
    for i, row in zip(ids, m["idle_latency_ns"]):
        out.append(f"{i:4d}: " + "".join(f"{v:7.1f} " for v in row))
    if m["links"]:
        out.append("links (GB/s per direction):")
        for k, link in enumerate(m["links"]):
            a, b = link["nodes"]
            fwd, back = link["gbps"]
            out.append(f"  link {k}: node {a} -> node {b} {fwd:.1f}, node {b} -> node {a} {back:.1f}")
        hops = [len(r) for row in m["routes"] for r in row if r]
        if hops:
            out.append(f"routes: {min(hops)}-{max(hops)} hops between distinct nodes")
    else:
        out.append("links: none described (remote traffic limited by the remote memory controller only)")
    cores = m["cores"]
    if cores:
        c = cores[0]
        out.append(
            f"cores: {len(cores)} cores, {len(m['pus'])} PUs, {len(m['packages'])} packages; "
            f"{c['frequency_hz'] / 1e9:.2f} GHz, memory-level parallelism {c['mlp']:g}"
        )
    for key, note in m.get("notes", {}).items():
        out.append(f"note: {key}: {note}")
    return "\n".join(out) + "\n"


