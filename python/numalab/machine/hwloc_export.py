"""Write a :class:`numalab._core.Machine` as an hwloc v2 XML topology (what ``lstopo foo.xml``
writes and ``lstopo -i foo.xml`` / ``HWLOC_XMLFILE`` read).

hwloc's own elements carry what hwloc can express: Machine > Package > [Group per node when a
package has several] > NUMANode (as a memory child) + Core > PU objects with cpusets, nodesets and
``local_memory``; the SLIT as ``<distances2 name="NUMALatency" kind="5">``; the ``Bandwidth``
(MiB/s) and ``Latency`` (ns) memory attributes per initiator node. Everything else numalab's
machine holds goes into ``<info name="numalab.*">`` children of the Machine object (see
:data:`INFO_KEYS`), including the exact float values behind the integer memattrs, so that
:func:`numalab.machine.hwloc_xml.load_hwloc_xml` gives back an identical machine. Formats follow
hwloc's topology-xml.c (``hwloc__xml_export_object_contents``, ``EXPORT_ARRAY`` with 10 values per
element and ``length`` = characters, ``hwloc__xml_export_memattrs``).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from typing import Any

from numalab._core import Machine
from numalab.exceptions import UsageError
from numalab.machine.bitmaps import format_cpulist, format_hwloc, parse_cpulist

MIB = 1 << 20
#: hwloc_distances_kind_e: FROM_OS | VALUE_LATENCY, as the Linux backend marks the SLIT.
DISTANCES_KIND_FROM_OS, DISTANCES_KIND_FROM_USER, DISTANCES_KIND_LATENCY = 1, 2, 4
SLIT_NAME = "NUMALatency"
#: hwloc_memattr_flag_e: HIGHER_FIRST = 1, LOWER_FIRST = 2, NEED_INITIATOR = 4.
BANDWIDTH_FLAGS, LATENCY_FLAGS = 1 | 4, 2 | 4
#: hwloc writes at most 10 values per <indexes>/<u64values> element.
VALUES_PER_ELEMENT = 10
HEADER = '<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE topology SYSTEM "hwloc2.dtd">\n'

#: The ``numalab.*`` infos of the Machine object and what each holds (JSON unless a plain string).
INFO_KEYS = {
    "numalab.name": "machine name (string)",
    "numalab.description": "description (string)",
    "numalab.page_size_bytes": "base page size",
    "numalab.core_frequency_hz": "frequency of every core",
    "numalab.core_frequencies_hz": "[[cpulist, hz], ...] when cores differ in frequency (hybrid CPUs; also written as cpukinds)",
    "numalab.core_mlp": "memory-level parallelism of every core",
    "numalab.core_stream_mlp": "lines one stream keeps in flight on every core (calibrated machines)",
    "numalab.core_add_latency_ns": "latency of one dependent floating-point add on every core (calibrated machines)",
    "numalab.core_window_instructions": "instructions every core keeps in flight past a waiting load (calibrated machines)",
    "numalab.core_prefetch_lines": "lines the prefetchers keep ahead of a demand stream on every core (calibrated machines)",
    "numalab.bandwidth_gbps": "exact per-node bandwidth, by node OS index order (memattr Bandwidth rounds to MiB/s)",
    "numalab.idle_latency_ns": "exact idle latency matrix (memattr Latency rounds to ns)",
    "numalab.cpuless_nodes": "nodes without CPUs (hwloc gives them their parent's cpuset)",
    "numalab.node_packages": "[[node, package], ...] for nodes of a package without CPUs (drawn under the Machine)",
    "numalab.loaded_latency": "loaded-latency curve as [[utilisation, factor], ...]",
    "numalab.links": "interconnect links [{nodes, gbps}]",
    "numalab.routes": "every remote route [{from, to, via}]",
    "numalab.caches": "cache instances [{level, size_kib, cpus}] (docs/contention.md §4.1)",
    "numalab.notes": "where values came from {field: reason}",
}


def to_hwloc_xml(machine: Machine) -> str:
    """The machine as an hwloc v2 XML document."""
    topology = topology_element(json.loads(machine.to_json()))
    ET.indent(topology, space="  ")
    return HEADER + ET.tostring(topology, encoding="unicode") + "\n"


def topology_element(m: dict[str, Any]) -> ET.Element:
    """The ``<topology>`` element of a machine's JSON document (also drawn by ``numalab topo --tree``)."""
    topology = ET.Element("topology", version="2.0")
    writer = _Writer(m)
    writer.machine(topology)
    writer.distances(topology)
    writer.memattrs(topology)
    writer.cpukinds(topology)
    return topology


class _Writer:
    """Builds the element tree; remembers gp indexes so memattrs can name their target nodes."""

    def __init__(self, m: dict[str, Any]) -> None:
        self.m = m
        self.next_gp = 1
        self.node_gp: dict[int, int] = {}
        self.cpus = {n["os_index"]: parse_cpulist(n["cpuset"]) for n in m["nodes"]}
        self.all_cpus = set().union(*self.cpus.values())

    def obj(
        self, parent: ET.Element, type_: str, os_index: int | None, cpus: set[int], nodes: Iterable[int], **extra: str
    ) -> ET.Element:
        """An ``<object>`` with hwloc's attribute order; the root also gets the allowed sets."""
        attrs = {"type": type_} if os_index is None else {"type": type_, "os_index": str(os_index)}
        cpuset, nodeset = format_hwloc(cpus), format_hwloc(nodes)
        attrs.update(cpuset=cpuset, complete_cpuset=cpuset)
        if type_ == "Machine":
            attrs["allowed_cpuset"] = cpuset
        attrs.update(nodeset=nodeset, complete_nodeset=nodeset)
        if type_ == "Machine":
            attrs["allowed_nodeset"] = nodeset
        attrs["gp_index"] = str(self.next_gp)
        self.next_gp += 1
        attrs.update(extra)
        return ET.SubElement(parent, "object", attrs)

    def machine(self, topology: ET.Element) -> None:
        root = self.obj(topology, "Machine", 0, self.all_cpus, self.cpus)
        for name, value in self.infos().items():
            ET.SubElement(root, "info", name=name, value=value)
        # hwloc has no Package without CPUs (it refuses an empty cpuset as out of order): nodes of
        # such a package hang from the Machine, as hwloc attaches CXL memory expanders.
        for n in self.machine_nodes():
            self.numanode(root, n, self.all_cpus)
        # hwloc requires siblings in cpuset order (else "out-of-order XML topology load").
        packages = [p for p in self.m["packages"] if parse_cpulist(p["cpuset"])]
        for package in sorted(packages, key=lambda p: min(parse_cpulist(p["cpuset"]))):
            self.package(root, package)

    def machine_nodes(self) -> list[dict[str, Any]]:
        """Nodes whose package has no CPUs."""
        cpuless_packages = {p["os_index"] for p in self.m["packages"] if not parse_cpulist(p["cpuset"])}
        return [n for n in self.m["nodes"] if n["package"] in cpuless_packages]

    def infos(self) -> dict[str, str]:
        m = self.m
        infos = {
            "numalab.name": m["name"],
            "numalab.description": m["description"],
            "numalab.page_size_bytes": str(m["page_size_bytes"]),
        }
        infos.update(self.core_infos())
        infos["numalab.bandwidth_gbps"] = _json([n["bandwidth_gbps"] for n in m["nodes"]])
        infos["numalab.idle_latency_ns"] = _json(m["idle_latency_ns"])
        cpuless = [n["os_index"] for n in m["nodes"] if not self.cpus[n["os_index"]]]
        if cpuless:
            infos["numalab.cpuless_nodes"] = _json(cpuless)
        if self.machine_nodes():
            infos["numalab.node_packages"] = _json([[n["os_index"], n["package"]] for n in self.machine_nodes()])
        infos["numalab.loaded_latency"] = _json([[p["utilisation"], p["factor"]] for p in m["loaded_latency"]])
        infos["numalab.links"] = _json(m["links"])
        infos["numalab.routes"] = _json(self.routes())
        if m.get("caches"):
            infos["numalab.caches"] = _json(
                [{"level": c["level"], "size_kib": c["size_bytes"] / 1024, "cpus": c["cpuset"]} for c in m["caches"]]
            )
        infos["numalab.notes"] = _json(m["notes"])
        return infos

    def core_infos(self) -> dict[str, str]:
        mlps = {c["mlp"] for c in self.m["cores"]}
        if len(mlps) > 1:
            raise UsageError(
                f"cannot export machine '{self.m['name']}' as hwloc XML: its cores differ in mlp "
                "(numalab machine files give one value for all cores)"
            )
        if not mlps:
            return {}
        kinds = self.frequency_kinds()
        infos = {"numalab.core_frequency_hz": repr(max(kinds)), "numalab.core_mlp": repr(mlps.pop())}
        # Optional per-core figures (a calibration's, docs/calibrate.md): kept when every core has the same.
        for field, key in (("stream_mlp", "numalab.core_stream_mlp"), ("add_latency_ns", "numalab.core_add_latency_ns"),
                           ("window_instructions", "numalab.core_window_instructions"),
                           ("prefetch_lines", "numalab.core_prefetch_lines")):
            values = {c.get(field) for c in self.m["cores"]}
            if len(values) > 1:
                raise UsageError(
                    f"cannot export machine '{self.m['name']}' as hwloc XML: its cores differ in {field} "
                    "(numalab machine files give one value for all cores)"
                )
            value = values.pop()
            if value is not None:
                infos[key] = repr(value)
        if len(kinds) > 1:
            infos["numalab.core_frequencies_hz"] = _json([[format_cpulist(cpus), hz] for hz, cpus in sorted(kinds.items())])
        return infos

    def frequency_kinds(self) -> dict[float, set[int]]:
        """The PUs of each core frequency (one entry unless the CPU is hybrid)."""
        kinds: dict[float, set[int]] = {}
        for c in self.m["cores"]:
            kinds.setdefault(c["frequency_hz"], set()).update(parse_cpulist(c["cpuset"]))
        return kinds

    def cpukinds(self, topology: ET.Element) -> None:
        """Hybrid CPUs: one hwloc ``<cpukind>`` per frequency, least performant first (hwloc's
        efficiency order), with ``FrequencyMaxMHz`` as hwloc's Linux backend reports it."""
        kinds = self.frequency_kinds()
        if len(kinds) < 2:
            return
        for rank, (hz, cpus) in enumerate(sorted(kinds.items())):
            kind = ET.SubElement(topology, "cpukind", cpuset=format_hwloc(cpus), forced_efficiency=str(rank))
            ET.SubElement(kind, "info", name="FrequencyMaxMHz", value=str(round(hz / 1e6)))

    def routes(self) -> list[dict[str, Any]]:
        """Every remote route as the nodes it passes through (the spec's ``routes`` form)."""
        m, out = self.m, []
        for i, row in enumerate(m["routes"]):
            for j, hops in enumerate(row):
                if not hops:
                    continue
                at, path = m["nodes"][i]["os_index"], []
                for hop in hops:
                    link = m["links"][hop["link"]]["nodes"]
                    at = link[1] if hop["dir"] == 0 else link[0]
                    path.append(at)
                out.append({"from": m["nodes"][i]["os_index"], "to": m["nodes"][j]["os_index"], "via": path[:-1]})
        return out

    def package(self, root: ET.Element, package: dict[str, Any]) -> None:
        cpus = parse_cpulist(package["cpuset"])
        el = self.obj(root, "Package", package["os_index"], cpus, parse_cpulist(package["nodeset"]))
        nodes = [n for n in self.m["nodes"] if n["package"] == package["os_index"]]
        with_cpus = [n for n in nodes if self.cpus[n["os_index"]]]
        if len(with_cpus) <= 1:
            for n in nodes:
                self.numanode(el, n, cpus)
            self.cores(el, package["os_index"], None)
            return
        # Several nodes in one package (dies, sub-NUMA clusters): a Group per node, as hwloc does.
        for n in nodes:
            if not self.cpus[n["os_index"]]:
                self.numanode(el, n, cpus)
        for n in sorted(with_cpus, key=lambda n: min(self.cpus[n["os_index"]])):
            group = self.obj(el, "Group", None, self.cpus[n["os_index"]], [n["os_index"]])
            self.numanode(group, n, self.cpus[n["os_index"]])
            self.cores(group, package["os_index"], n["os_index"])

    def numanode(self, parent: ET.Element, n: dict[str, Any], parent_cpus: set[int]) -> None:
        # hwloc gives a memory object its parent's cpuset (its locality), CPU-less nodes included.
        os_index, page = n["os_index"], self.m["page_size_bytes"]
        cpus, memory = self.cpus[os_index] or parent_cpus, str(n["local_memory_bytes"])
        extra = {"subtype": n["subtype"]} if n.get("subtype") else {}
        el = self.obj(parent, "NUMANode", os_index, cpus, [os_index], **extra, local_memory=memory)
        self.node_gp[os_index] = int(el.attrib["gp_index"])
        ET.SubElement(el, "page_type", size=str(page), count=str(n["local_memory_bytes"] // page))

    def cores(self, parent: ET.Element, package: int, node: int | None) -> None:
        mine = [c for c in self.m["cores"] if c["package"] == package and (node is None or c["node"] == node)]
        self.nested(parent, _nest(mine, self.caches_of(mine)))

    def caches_of(self, cores: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The caches made of whole cores of ``cores``: hwloc draws them between the cores' parent
        and the cores (``L3Cache > L2Cache > Core``). A cache across several node Groups is not
        drawn (it stays in ``numalab.caches``)."""
        sets = [parse_cpulist(c["cpuset"]) for c in cores]
        cpus = set().union(*sets)
        out = []
        for c in self.m.get("caches", []):
            s = parse_cpulist(c["cpuset"])
            if s <= cpus and all(k <= s or not k & s for k in sets):
                out.append({**c, "cpus": s})
        return out

    def nested(self, parent: ET.Element, items: list[tuple[int, dict[str, Any], list[Any]]]) -> None:
        for _, item, children in items:
            if "level" not in item:
                cpus = parse_cpulist(item["cpuset"])
                el = self.obj(parent, "Core", item["os_index"], cpus, [item["node"]])
                for pu in sorted(cpus):
                    self.obj(el, "PU", pu, {pu}, [item["node"]])
                continue
            nodes = {n for n, cpus in self.cpus.items() if cpus & item["cpus"]}
            # hwloc_obj_cache_type_e 0 = unified (data caches are written as unified: the model
            # keeps no L1); line size and associativity 0 = unknown.
            el = self.obj(
                parent, f"L{item['level']}Cache", None, item["cpus"], nodes, cache_size=str(item["size_bytes"]),
                depth=str(item["level"]), cache_linesize="0", cache_associativity="0", cache_type="0",
            )
            self.nested(el, children)

    def distances(self, topology: ET.Element) -> None:
        nodes = [n["os_index"] for n in self.m["nodes"]]
        if len(nodes) < 2:
            return  # hwloc ignores a 1x1 matrix
        el = ET.SubElement(
            topology,
            "distances2",
            type="NUMANode",
            nbobjs=str(len(nodes)),
            kind=str(DISTANCES_KIND_FROM_OS | DISTANCES_KIND_LATENCY),
            name=SLIT_NAME,
            indexing="os",
        )
        _value_elements(el, "indexes", nodes)
        _value_elements(el, "u64values", [d for row in self.m["distances"] for d in row])

    def memattrs(self, topology: ET.Element) -> None:
        m = self.m
        bandwidth = ET.SubElement(topology, "memattr", name="Bandwidth", flags=str(BANDWIDTH_FLAGS))
        for n in m["nodes"]:
            if n["local_memory_bytes"] and n["bandwidth_gbps"] > 0:
                initiator = self.cpus[n["os_index"]] or self.all_cpus
                self.memattr_value(bandwidth, n["os_index"], round(n["bandwidth_gbps"] * 1e9 / MIB), initiator)
        latency = ET.SubElement(topology, "memattr", name="Latency", flags=str(LATENCY_FLAGS))
        for j, target in enumerate(m["nodes"]):
            for i, initiator in enumerate(m["nodes"]):
                cpus = self.cpus[initiator["os_index"]]
                if cpus:
                    self.memattr_value(latency, target["os_index"], max(1, round(m["idle_latency_ns"][i][j])), cpus)

    def memattr_value(self, parent: ET.Element, node: int, value: int, initiator: set[int]) -> None:
        ET.SubElement(
            parent,
            "memattr_value",
            target_obj_type="NUMANode",
            target_obj_gp_index=str(self.node_gp[node]),
            value=str(value),
            initiator_cpuset=format_hwloc(initiator),
        )


def _nest(cores: list[dict[str, Any]], caches: list[dict[str, Any]]) -> list[tuple[int, dict[str, Any], list[Any]]]:
    """Cores under their caches, highest level outermost, siblings in cpuset order as hwloc
    requires: (first PU, core or cache, children)."""
    def first(c: dict[str, Any]) -> int:
        return min(c["cpus"]) if "cpus" in c else min(parse_cpulist(c["cpuset"]))

    if not caches:
        return sorted(((first(c), c, []) for c in cores), key=lambda x: x[0])
    top = max(c["level"] for c in caches)
    outer = [c for c in caches if c["level"] == top]
    inner = [c for c in caches if c["level"] != top]
    items: list[tuple[int, dict[str, Any], list[Any]]] = []
    loose = []
    for core in cores:
        if not any(parse_cpulist(core["cpuset"]) <= c["cpus"] for c in outer):
            loose.append(core)
    for c in outer:
        members = [k for k in cores if parse_cpulist(k["cpuset"]) <= c["cpus"]]
        items.append((first(c), c, _nest(members, [d for d in inner if d["cpus"] <= c["cpus"]])))
    loose_cpus = set().union(*(parse_cpulist(k["cpuset"]) for k in loose))
    items += _nest(loose, [d for d in inner if d["cpus"] <= loose_cpus])
    return sorted(items, key=lambda x: x[0])


def _value_elements(parent: ET.Element, tag: str, values: list[int]) -> None:
    """hwloc's EXPORT_ARRAY: chunks of 10, each value followed by a space, ``length`` in characters."""
    for k in range(0, len(values), VALUES_PER_ELEMENT):
        text = "".join(f"{v} " for v in values[k : k + VALUES_PER_ELEMENT])
        ET.SubElement(parent, tag, length=str(len(text))).text = text


def _json(value: Any) -> str:
    # ASCII only: hwloc drops other characters when it re-exports a file (lstopo -i a.xml b.xml).
    return json.dumps(value, separators=(",", ":"))
