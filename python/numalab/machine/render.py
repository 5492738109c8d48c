"""Print a machine three ways: as ``numactl --hardware`` does (byte for byte, so people can diff
it against a real machine), as ``lstopo-no-graphics`` draws its tree, and as tables of what
numactl cannot show (memory bandwidth per node, the idle latency matrix, the interconnect links).

Every function takes the machine as its JSON document (``json.loads(machine.to_json())``). Nodes
are spelt ``node0`` in table headers, as numastat writes its columns; the numactl block keeps
numactl's own ``node 0`` spelling.
"""

from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.table import Table

from numalab.machine.bitmaps import format_cpulist, format_hwloc, parse_cpulist

MIB = 1 << 20


# ---------------------------------------------------------------- numactl --hardware


def numactl_hardware(m: dict[str, Any], free_bytes: dict[int, int] | None = None) -> str:
    """``numactl --hardware``: numactl.c ``hardware()`` and ``print_distances()`` (numactl master):
    ``available: %d nodes (`` + the node list with ranges, then per node ``node %d cpus:`` with
    `` %d`` per CPU, ``node %d size: %llu MB`` and ``node %d free: %llu MB`` (bytes >> 20), then
    ``node distances:``, a header ``node `` + ``% 3d `` per node, and rows ``% 3d: `` + ``% 3d ``
    per distance. C's ``% 3d`` (space flag, width 3) is Python's ``{: 3d}``."""
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
    lines.append("node " + "".join(f"{i: 3d} " for i in ids))
    for i, row in zip(ids, m["distances"]):
        lines.append(f"{i: 3d}: " + "".join(f"{d: 3d} " for d in row))
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- lstopo-no-graphics


def hwloc_size(size: int) -> str:
    """A memory size as lstopo prints it (hwloc's ``hwloc_memory_size_printf_value``/``_unit``):
    rounded to the nearest KB below 10 MiB, MB below 10 GiB, GB below 10 TiB, else TB."""
    for limit, shift, unit in ((10 << 20, 10, "KB"), (10 << 30, 20, "MB"), (10 << 40, 30, "GB")):
        if size < limit:
            return f"{((size >> (shift - 1)) + 1) >> 1}{unit}"
    return f"{((size >> 39) + 1) >> 1}TB"


#: hwloc's cache object types (``L2Cache``, ``L1iCache``, ...).
_CACHE_TYPE = re.compile(r"L([0-9]+)i?Cache")


@dataclass
class _Obj:
    """An object of the tree as hwloc keeps it after loading: memory children apart."""

    el: ET.Element
    memory: list[_Obj] = field(default_factory=list)
    normal: list[_Obj] = field(default_factory=list)

    @property
    def type(self) -> str:
        return self.el.attrib["type"]


def _hwloc_tree(el: ET.Element) -> _Obj:
    """The ``<object>`` tree as hwloc holds it after loading. A level of Groups adds no structure
    when every Group has a single normal child and the level below holds nothing else (as many
    objects as there are Groups); hwloc's KEEP_STRUCTURE filter then drops the whole level
    (topology.c ``hwloc_filter_levels_keep_structure``) and each child takes over its Group's
    memory children. Otherwise the level is kept whole."""
    root = _build(el)
    levels: dict[int, list[_Obj]] = {}
    _groups_by_level(root, 0, levels)
    useless: set[int] = set()
    for groups in levels.values():
        below = {g.normal[0].type for g in groups if len(g.normal) == 1}
        if all(len(g.normal) == 1 for g in groups) and len(below) == 1 and _count(root, below.pop()) == len(groups):
            useless.update(id(g) for g in groups)
    return _drop(root, useless)


def _count(obj: _Obj, type_: str) -> int:
    return (obj.type == type_) + sum(_count(child, type_) for child in obj.normal)


def _build(el: ET.Element) -> _Obj:
    obj = _Obj(el)
    for child in el.findall("object"):
        (obj.memory if child.attrib["type"] == "NUMANode" else obj.normal).append(_build(child))
    return obj


def _groups_by_level(obj: _Obj, groups_above: int, levels: dict[int, list[_Obj]]) -> None:
    if obj.type == "Group":
        levels.setdefault(groups_above, []).append(obj)
        groups_above += 1
    for child in obj.normal:
        _groups_by_level(child, groups_above, levels)


def _drop(obj: _Obj, useless: set[int]) -> _Obj:
    obj.normal = [_drop(child, useless) for child in obj.normal]
    if id(obj) in useless:
        only = obj.normal[0]
        only.memory = obj.memory + only.memory
        return only
    return obj


def _numa_order(obj: _Obj, out: list[_Obj]) -> list[_Obj]:
    """NUMA nodes in hwloc's logical order (topology.c ``hwloc_list_special_objects``): an
    object's normal children are walked before its own memory children."""
    for child in obj.normal:
        _numa_order(child, out)
    out.extend(obj.memory)
    return out


def lstopo_tree(topology: ET.Element) -> str:
    """The object tree of an hwloc XML ``<topology>`` as ``lstopo-no-graphics`` prints it:
    ``Machine (64GB total)``, ``Package L#0``, ``NUMANode L#0 (P#0 32GB)``, ``Core L#0``,
    ``PU L#0 (P#0)``. L# is hwloc's logical index (rank among the objects of its type, left to
    right; NUMA nodes in hwloc's own order), P# the OS index. Memory children are drawn first; an
    object whose only child is a normal one shares its line, joined by `` + ``, as lstopo does
    without -v."""
    out: list[str] = []
    counters: dict[str, int] = {}
    numa: dict[int, int] = {}

    def label(obj: _Obj, groups: int) -> str:
        t, attrib = obj.type, obj.el.attrib
        if t == "Machine":
            total = sum(int(n.attrib.get("local_memory", 0)) for n in obj.el.iter("object") if n.attrib["type"] == "NUMANode")
            return f"Machine ({hwloc_size(total)} total)"
        if t == "NUMANode":
            memory = int(attrib.get("local_memory", 0))
            size = f" {hwloc_size(memory)}" if memory else ""
            kind = f"NUMANode({attrib['subtype']})" if attrib.get("subtype") else "NUMANode"  # lstopo shows the subtype
            return f"{kind} L#{numa[id(obj)]} (P#{attrib['os_index']}{size})"
        key = f"Group{groups}" if t == "Group" else t  # hwloc names Group levels from the top
        cache = _CACHE_TYPE.fullmatch(t)
        if cache:
            # hwloc_obj_type_snprintf: L<depth> and d/i for data/instruction caches (cache_type 1/2)
            key = f"L{cache.group(1)}" + {"1": "d", "2": "i"}.get(attrib.get("cache_type", ""), "")
        logical = counters.get(key, 0)
        counters[key] = logical + 1
        if cache:
            cache_bytes = int(attrib.get("cache_size", 0))
            return f"{key} L#{logical}" + (f" ({hwloc_size(cache_bytes)})" if cache_bytes else "")
        return f"PU L#{logical} (P#{attrib['os_index']})" if t == "PU" else f"{key} L#{logical}"

    def walk(obj: _Obj, depth: int, prefix: str, groups: int) -> None:
        text = prefix + label(obj, groups)
        groups += obj.type == "Group"
        if len(obj.normal) == 1 and not obj.memory:
            walk(obj.normal[0], depth, text + " + ", groups)
            return
        out.append("  " * depth + text)
        for child in obj.memory + obj.normal:
            walk(child, depth + 1, "", groups)

    for root in (_hwloc_tree(el) for el in topology.findall("object")):
        numa.update((id(node), k) for k, node in enumerate(_numa_order(root, [])))
        walk(root, 0, "", 0)
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- JSON


def machine_json(m: dict[str, Any]) -> dict[str, Any]:
    """The machine document of ``numalab topo --json``: every set in both spellings, each under
    its own name: ``cpulist``/``nodelist`` the Linux list (``0-7,16-23``, as sysfs's
    ``nodeN/cpulist``), ``cpuset``/``nodeset`` hwloc's bitmap (``0x00ff00ff``, as lstopo writes).
    ``Machine.to_json`` holds the lists under ``cpuset``/``nodeset``; this renames them."""
    out = dict(m)
    for key in ("nodes", "packages", "cores"):
        out[key] = [_both_spellings(obj) for obj in m[key]]
    return out


def _both_spellings(obj: dict[str, Any]) -> dict[str, Any]:
    out = dict(obj)
    for hwloc_name, list_name in (("cpuset", "cpulist"), ("nodeset", "nodelist")):
        if hwloc_name in obj:
            indexes = parse_cpulist(obj[hwloc_name])
            out[list_name] = format_cpulist(indexes)
            out[hwloc_name] = format_hwloc(indexes)
    return out


# ---------------------------------------------------------------- numalab's tables


def node_name(os_index: int) -> str:
    """How a node is named in table headers and JSON keys: ``node0``, as numastat does."""
    return f"node{os_index}"


def table_text(headers: list[str], rows: list[list[str]], left: int = 1) -> str:
    """A borderless table through rich (no colour, no wrapping, no trailing blanks); the first
    ``left`` columns are left-aligned labels, the others right-aligned numbers."""
    table = Table(box=None, show_edge=False, pad_edge=False, header_style=None)
    for k, h in enumerate(headers):
        table.add_column(h, justify="left" if k < left else "right", no_wrap=True)
    for row in rows:
        table.add_row(*row)
    buf = io.StringIO()
    console = Console(file=buf, width=100_000, color_system=None, highlight=False, markup=False, emoji=False)
    console.print(table)
    return "\n".join(line.rstrip() for line in buf.getvalue().splitlines())


def numalab_extras(m: dict[str, Any]) -> str:
    """What numactl cannot show: bandwidth per node, idle latencies, links, cores, notes."""
    nodes = m["nodes"]
    names = [node_name(n["os_index"]) for n in nodes]
    out = ["memory bandwidth (GB/s, sustainable per node):"]
    out.append(table_text(["", *names], [["bandwidth_gbps", *(f"{n['bandwidth_gbps']:.1f}" for n in nodes)]]))
    out.append("idle latency (ns; rows: CPU node, columns: memory node):")
    out.append(table_text(["", *names], [[name, *(f"{v:.1f}" for v in row)] for name, row in zip(names, m["idle_latency_ns"])]))
    if m["links"]:
        rows = []
        for k, link in enumerate(m["links"]):
            (a, b), (forward, back) = link["nodes"], link["gbps"]
            rows.append([str(k), node_name(a), node_name(b), f"{forward:.1f}", f"{back:.1f}"])
        out.append("links (GB/s per direction):")
        out.append(table_text(["link", "from", "to", "gbps_forward", "gbps_back"], rows, left=3))
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
    out += [f"note: {key}: {note}" for key, note in m.get("notes", {}).items()]
    return "\n".join(out) + "\n"
