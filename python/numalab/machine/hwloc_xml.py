"""hwloc v2 XML in and out, so lstopo users can bring their machine and take numalab's.

:func:`load_hwloc_xml` reads what ``lstopo foo.xml`` writes: NUMANode objects (``os_index``,
``cpuset``, ``local_memory``) wherever they hang (Package, Die, Group, or above the Package in v1
files), Core and PU objects, Packages, the SLIT-like ``distances2`` matrix and the ``Bandwidth``
(MiB/s) and ``Latency`` (ns) memory attributes. What the file does not give gets the documented
estimates of :mod:`numalab.machine.estimates`, recorded in the machine's ``notes``. The
``numalab.*`` infos that :func:`to_hwloc_xml` writes (see
:data:`numalab.machine.hwloc_export.INFO_KEYS`) restore the rest, exactly: values the hwloc
elements also state are taken from the infos only when they agree with them, so a user's edit of
a memattr in the XML wins.

Malformed XML raises ``UsageError("file:line:col: malformed XML: ...")``; a file that is XML but
not a usable topology raises ``UsageError("file:line: object[type=NUMANode, os_index=3]: ...")``.

Files are untrusted: parsing goes through defusedxml (no entity declarations, so no billion
laughs; no external entities or DTD fetched), the file size and element depth are bounded, and
every number is checked against :mod:`numalab.machine.limits` (CPU and node indexes, u64) and for
being finite before anything is sized by it. Every CPU a NUMANode or Package claims must be a PU
of the file.
"""

from __future__ import annotations

import io
import json
import math
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple
from xml.sax import SAXParseException
from xml.parsers import expat
from xml.sax.handler import ContentHandler, feature_external_ges
from xml.sax.xmlreader import Locator

from defusedxml import DefusedXmlException, EntitiesForbidden
from defusedxml.expatreader import DefusedExpatParser

from numalab._core import Machine, TopologyError
from numalab.exceptions import UsageError
from numalab.machine import estimates as est
from numalab.machine import limits
from numalab.machine.bitmaps import format_cpulist, parse_cpulist, shorten
from numalab.machine.bitmaps import parse_hwloc as _parse_hwloc_text
from numalab.machine.hwloc_export import DISTANCES_KIND_LATENCY, MIB, SLIT_NAME, to_hwloc_xml

__all__ = ["load_hwloc_xml", "load_tree", "to_hwloc_xml"]

PACKAGE_TYPES = {"Package", "Socket"}  # Socket: hwloc 1.x
#: Objects that only group others: walked through, their own attributes unused.
CONTAINER_TYPES = {"Machine", "System", "Group", "Die", "MemCache", "Cache"} | {
    f"L{k}{i}Cache" for k in range(1, 6) for i in ("", "i")
}
#: I/O and annotation subtrees: no CPUs or memory of their own.
SKIPPED_TYPES = {"Misc", "Bridge", "PCIDev", "OSDev"}
KNOWN_TYPES = PACKAGE_TYPES | CONTAINER_TYPES | SKIPPED_TYPES | {"NUMANode", "Core", "PU"}

#: hwloc writes its numbers as unsigned decimal; Python's int() would also take "+1", "1_0", "٣".
_DIGITS = re.compile(r"[0-9]+")
_DECIMAL = re.compile(r"[0-9]+(\.[0-9]+)?")
#: (limit, reason) pairs for :meth:`_Importer.int_attr`.
U64, U64_REASON = 1 << 64, "hwloc stores it in 64 bits"
class Bits(str):
    """A bitmap attribute given by its set rather than as hwloc's text (the synthetic builder's
    trees): hwloc writes a PU's bitmap as wide as its index, so writing and parsing back every
    PU's would cost the square of the PU count (65,536 PUs: minutes and gigabytes). The text is
    the set as a cpulist, for messages; :func:`parse_hwloc` takes the set as is."""

    bits: frozenset[int]

    def __new__(cls, bits: Iterable[int]) -> "Bits":
        frozen = frozenset(bits)
        self = super().__new__(cls, f"cpulist {format_cpulist(frozen)}")
        self.bits = frozen
        return self


def parse_hwloc(text: str, limit: int | None = None) -> set[int]:
    """An attribute's set: a :class:`Bits` as is, hwloc's text parsed (bitmaps.parse_hwloc)."""
    if isinstance(text, Bits):
        if limit is not None and text.bits and max(text.bits) >= limit:
            raise ValueError(f"'{shorten(text)}' sets bit {max(text.bits)}, beyond the limit of {limit}")
        return set(text.bits)
    return _parse_hwloc_text(text, limit)


CPU_LIMIT = (limits.MAX_CPUS, limits.CPU_REASON)
NODE_LIMIT = (limits.MAX_NODES, limits.NODE_REASON)
#: Package and core numbers are names, not bit positions (ia64's physical_package_id reaches 65536).
GIB = 1 << 30
U32_LIMIT = (1 << 32, "package and core numbers are 32-bit")
#: Frequency of a less performant cpukind without FrequencyMaxMHz, relative to the most
#: performant kind (docs/machines.md §5.6).
HYBRID_SLOW_FACTOR = 0.75
#: How notes say a number came from the file's memory attributes.
FIRMWARE = (
    "measured by the firmware: hwloc's Linux backend fills these memory attributes from the ACPI HMAT "
    "(/sys/devices/system/node/nodeN/access0/initiators); "
)
#: hwloc's NUMANode subtype when the attribute is absent.
DRAM = "DRAM"


def load_hwloc_xml(path: Path, memory_per_node_mib: int | None = None) -> Machine:
    """The machine an hwloc XML file describes (v1, v2 and v3 files, as hwloc 1.x to 3.x write them).

    ``memory_per_node_mib`` is the memory of each node whose size the file does not give (topologies
    made from CPUID dumps have none); without it such nodes get :data:`estimates.MEMORY_PER_CORE_GIB`
    and one warning line goes to stderr."""
    return load_tree(path, _parse_xml(path), memory_per_node_mib)


def load_tree(path: Path, root: _El, memory_per_node_mib: int | None = None, memory_unknown_is_missing: bool = False) -> Machine:
    """The machine of an already parsed ``<topology>`` tree (an XML file's, or one built from a
    synthetic description, :mod:`numalab.machine.synthetic`); ``path`` names it in messages.
    With ``memory_unknown_is_missing``, a node without ``local_memory`` is one of unknown size even
    when other nodes have sizes (synthetic descriptions), not a memoryless node."""
    importer = _Importer(path, root, memory_per_node_mib)
    importer.memory_unknown_is_missing = memory_unknown_is_missing
    spec = importer.spec()
    try:
        machine = Machine.from_spec_json(json.dumps(spec))
        machine = importer.finish(machine)
    except TopologyError as e:
        key = e.args[1] if len(e.args) > 1 else ""
        raise TopologyError(f"{path}:{importer.line_of(key)}: {e.args[0]}", key) from None
    if importer.warning:
        print(f"numalab: warning: {importer.warning}", file=sys.stderr)
    return machine


# ---------------------------------------------------------------- XML with line numbers


@dataclass(slots=True)
class _El:
    """An XML element and the line it starts on (ElementTree does not keep lines)."""

    tag: str
    attrib: dict[str, str]
    line: int
    children: list[_El] = field(default_factory=list)
    chunks: list[str] = field(default_factory=list)  # character data, joined once at the end tag
    text: str = ""

    def find_all(self, tag: str) -> list[_El]:
        return [c for c in self.children if c.tag == tag]


class _TreeBuilder(ContentHandler):
    """SAX events into :class:`_El` trees, each element with its line."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self.locator: Locator | None = None
        self.stack: list[_El] = []
        self.roots: list[_El] = []
        self.count = 0

    def line(self) -> int:
        return (self.locator.getLineNumber() or 0) if self.locator is not None else 0

    def setDocumentLocator(self, locator: Locator) -> None:
        self.locator = locator

    def startElement(self, name: str, attrs: Any) -> None:
        if len(self.stack) >= limits.MAX_XML_DEPTH:
            raise UsageError(
                f"{self.path}:{self.line()}: <{name}> is nested {len(self.stack) + 1} elements deep; "
                f"hwloc topologies are about 15 deep, numalab reads at most {limits.MAX_XML_DEPTH}"
            )
        self.count += 1
        if self.count > limits.MAX_XML_ELEMENTS:
            raise UsageError(
                f"{self.path}:{self.line()}: more than {limits.MAX_XML_ELEMENTS} elements; an hwloc topology of the "
                "largest Linux machine has about 100,000"
            )
        el = _El(name, dict(attrs.items()), self.line())
        (self.stack[-1].children if self.stack else self.roots).append(el)
        self.stack.append(el)

    def endElement(self, name: str) -> None:
        el = self.stack.pop()
        el.text, el.chunks = "".join(el.chunks), []

    def characters(self, content: str) -> None:
        # Kept as chunks: appending to one string is quadratic in the number of chunks.
        if self.stack:
            self.stack[-1].chunks.append(content)


def _read(path: Path) -> bytes:
    """The file's bytes, at most MAX_XML_BYTES of them (pipes such as ``<(lstopo --of xml)`` too)."""
    try:
        if path.is_dir():
            raise UsageError(f"{path}: cannot read: Is a directory (expected an hwloc XML file, as lstopo --of xml writes)")
        with path.open("rb") as f:
            data = f.read(limits.MAX_XML_BYTES + 1)
    except OSError as e:
        raise UsageError(f"{path}: cannot read: {e.strerror}") from None
    if len(data) > limits.MAX_XML_BYTES:
        raise UsageError(
            f"{path}: larger than the {limits.MAX_XML_BYTES >> 20} MiB numalab reads as hwloc XML "
            "(lstopo writes a few KiB per core)"
        )
    return data


class _HwlocParser(DefusedExpatParser):
    """defusedxml's reader, told never to open the external DTD subset: lstopo's files name
    ``hwloc2.dtd``, which expat would otherwise ask for (and defusedxml refuse)."""

    def reset(self) -> None:
        super().reset()
        self._parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)


def _parse_xml(path: Path) -> _El:
    """Parse with defusedxml's expat reader: entity declarations and external references are
    refused (they are how "billion laughs" and external-entity files attack parsers, and hwloc
    writes neither), the DOCTYPE line lstopo writes is allowed, nothing is fetched."""
    data = _read(path)
    builder = _TreeBuilder(path)
    parser = _HwlocParser()
    parser.setContentHandler(builder)
    parser.setFeature(feature_external_ges, False)
    try:
        parser.parse(io.BytesIO(data))
    except SAXParseException as e:
        # expat columns count from 0; editors and compilers count from 1.
        raise UsageError(f"{path}:{e.getLineNumber()}:{(e.getColumnNumber() or 0) + 1}: malformed XML: {e.getMessage()}") from None
    except EntitiesForbidden as e:
        raise UsageError(
            f"{path}:{builder.line()}: <!ENTITY {e.name}> refused: hwloc files declare no entities, and "
            "entities are how XML bombs (billion laughs) and external-file reads work"
        ) from None
    except DefusedXmlException as e:
        raise UsageError(f"{path}:{builder.line()}: refused: {e} (hwloc files reference no external entities)") from None
    except (LookupError, UnicodeError) as e:
        # The XML declaration names an encoding Python does not know (or the bytes break it).
        raise UsageError(f"{path}:1: malformed XML: {e} (lstopo writes UTF-8)") from None
    if not builder.roots:
        raise UsageError(f"{path}:1: malformed XML: no element found")
    root = builder.roots[0]
    if root.tag != "topology":
        raise UsageError(
            f"{path}:{root.line}: <{root.tag}> is not an hwloc topology (expected <topology>, as lstopo writes)"
        )
    return root


def _describe(el: _El) -> str:
    """How an error names an element: ``object[type=NUMANode, os_index=3]``."""
    keys = {"object": ("type", "os_index"), "distances2": ("type", "name"), "memattr": ("name",), "info": ("name",)}
    shown = [f"{k}={el.attrib[k]}" for k in keys.get(el.tag, ()) if k in el.attrib]
    return f"{el.tag}[{', '.join(shown)}]" if shown else f"<{el.tag}>"


# ---------------------------------------------------------------- objects


@dataclass
class _Node:
    os_index: int
    cpus: set[int]  # hwloc's cpuset: the node's locality
    memory_bytes: int | None  # None: the file does not say
    package: int | None
    page_sizes: list[int]
    el: _El
    owned: set[int] = field(default_factory=set)  # the CPUs Linux would list in its cpulist
    subtype: str | None = None  # hwloc's memory subtype (HBM, NVM, SPM, CXL-DRAM); None is DRAM
    disallowed: bool = False  # outside the root's allowed_nodeset (a cgroup's cpuset.mems)
    placeholder: bool = False  # not in the file: the node its PUs' nodesets name

    @property
    def dram(self) -> bool:
        return self.subtype in (None, DRAM)


class _Matrix(NamedTuple):
    """One distances2 element, its counts checked."""

    el: _El
    kind: int
    indexes: list[int]
    values: list[int]


class _Value(NamedTuple):
    """One memattr_value about a NUMA node."""

    target: int  # node OS index
    initiator: set[int] | None  # the CPUs that access it
    value: int


@dataclass
class _Core:
    os_index: int | None
    pus: list[int] = field(default_factory=list)


@dataclass
class _Pu:
    el: _El
    package: int | None
    home: set[int]  # nodes of the nearest object (the PU itself first) whose nodeset names any
    own: set[int]  # the PU's own nodeset, else complete_nodeset (the local node, maybe disallowed)


class _Importer:
    """Reads one file's elements into a MachineSpec dict; errors name file, line and element."""

    def __init__(self, path: Path, root: _El, memory_per_node_mib: int | None = None) -> None:
        self.path, self.root = path, root
        self.memory_per_node_mib = memory_per_node_mib
        self.memory_unknown_is_missing = False
        self.latency_attr = "Latency"
        self.frequencies: dict[int, float] = {}
        self.distances_el: _El | None = None
        self.warning = ""
        self.nodes: list[_Node] = []
        self.packages: list[tuple[int, set[int], _El]] = []
        self.cores: list[_Core] = []
        self.pus: dict[int, _Pu] = {}
        self.gp_to_node: dict[int, int] = {}
        self.gp_to_cpus: dict[int, set[int]] = {}
        self.notes: dict[str, str] = {}
        self.left_out: set[int] = set()  # PUs outside the allowed or online cpuset
        machines = root.find_all("object")
        if len(machines) != 1:
            raise self.fail(root, f"expected one root object (the Machine), found {len(machines)}")
        self.machine = machines[0]
        self.infos = {i.attrib.get("name", ""): i for i in self.machine.find_all("info")}
        self.excluded_cpus, self.disallowed_nodes = self.restriction()
        self.remember_gp(self.machine)
        self.walk(self.machine, None, None, self.nodeset_of(self.machine))
        self.restrict()

    def restriction(self) -> tuple[set[int] | None, set[int] | None]:
        """The CPUs a process may not run on and the nodes it may not allocate from, as the root
        object states them: those of its ``complete_cpuset`` outside its ``cpuset`` (online
        CPUs), ``allowed_cpuset`` (a cgroup's cpuset.cpus) or v1's ``online_cpuset``, and those of
        its ``complete_nodeset`` outside ``allowed_nodeset`` (cpuset.mems). Objects the root's
        sets do not mention at all (hand-edited files) are kept. None where nothing is excluded."""
        attrs = self.machine.attrib

        def bitmap(name: str, limit: int) -> set[int] | None:
            text = attrs.get(name)
            if text is None or text.startswith("0xf...f"):
                return None
            try:
                return parse_hwloc(text, limit)
            except ValueError as e:
                raise self.fail(self.machine, f"{name}: {e}") from None

        complete = bitmap("complete_cpuset", limits.MAX_CPUS) or bitmap("cpuset", limits.MAX_CPUS) or set()
        excluded: set[int] = set()
        for name in ("cpuset", "allowed_cpuset", "online_cpuset"):
            usable = bitmap(name, limits.MAX_CPUS)
            if usable is not None:
                excluded |= complete - usable
        all_nodes = bitmap("complete_nodeset", limits.MAX_NODES) or bitmap("nodeset", limits.MAX_NODES) or set()
        allowed = bitmap("allowed_nodeset", limits.MAX_NODES)
        not_allowed = all_nodes - allowed if allowed is not None else set()
        return excluded or None, not_allowed or None

    def nodeset_of(self, el: _El) -> set[int]:
        """An object's ``nodeset``, else its ``complete_nodeset`` (v1 and v2 write both; a
        disallowed node shows only in the complete one); empty when it has neither."""
        for name in ("nodeset", "complete_nodeset"):
            text = el.attrib.get(name, "")
            if text and not text.startswith("0xf...f"):
                try:
                    found = parse_hwloc(text, limits.MAX_NODES)
                except ValueError as e:
                    raise self.fail(el, f"{name}: {e}") from None
                if found:
                    return found
        return set()

    def line_of(self, key: str) -> str:
        """The line of the element a model error's key comes from ("" when none): ``nodes[k]`` is
        the k-th node by OS index, ``distances`` the matrix used, else the Machine object."""
        found = re.match(r"nodes\[(\d+)\]", key)
        if found and int(found.group(1)) < len(self.nodes):
            return str(self.nodes[int(found.group(1))].el.line)
        if key.startswith("distances") and self.distances_el is not None:
            return str(self.distances_el.line)
        return str(self.machine.line)

    def fail(self, el: _El, message: str) -> UsageError:
        return UsageError(f"{self.path}:{el.line}: {_describe(el)}: {message}")

    def int_attr(self, el: _El, name: str, default: int | None = None, below: tuple[int, str] = (U64, U64_REASON)) -> int:
        """A whole number in ASCII digits (hwloc writes unsigned decimal), refused at or above
        ``below`` = (limit, reason) before anything is sized by it."""
        value = el.attrib.get(name)
        if value is None:
            if default is None:
                raise self.fail(el, f"missing attribute {name}")
            return default
        return self.whole(el, name, value, below)

    def whole(self, el: _El, name: str, value: str, below: tuple[int, str] = (U64, U64_REASON)) -> int:
        if not _DIGITS.fullmatch(value):
            raise self.fail(el, f"{name}='{shorten(value)}' is not a whole number (expected decimal digits, e.g. 0 or 4096)")
        number = int(value)
        limit, reason = below
        if number >= limit:
            raise self.fail(el, f"{name}={shorten(value)} is too large: {reason}")
        return number

    def bitmap_attr(self, el: _El, name: str) -> set[int]:
        if name not in el.attrib:
            raise self.fail(el, f"missing attribute {name}")
        try:
            return parse_hwloc(el.attrib[name], limits.MAX_CPUS)
        except ValueError as e:
            reason = f": {limits.CPU_REASON}" if "beyond the limit" in str(e) else ""
            raise self.fail(el, f"{name}: {e}{reason}") from None

    # ---- the object tree

    def walk(self, el: _El, package: int | None, core: _Core | None, home: set[int]) -> None:
        for child in el.find_all("object"):
            t = child.attrib.get("type", "")
            if t not in KNOWN_TYPES:
                expected = "Machine, Package, Die, Group, NUMANode, L3Cache, Core, PU, ..."
                raise self.fail(child, f"unknown object type '{t}' (expected an hwloc type: {expected})")
            if t in SKIPPED_TYPES:
                continue
            self.remember_gp(child)
            near = self.nodeset_of(child) or home
            if t in PACKAGE_TYPES:
                os_index = self.int_attr(child, "os_index", len(self.packages), U32_LIMIT)
                self.packages.append((os_index, self.bitmap_attr(child, "cpuset"), child))
                self.walk(child, os_index, core, near)
            elif t == "NUMANode":
                self.add_node(child, package)
                self.walk(child, package, core, near)  # hwloc 1.x put Packages under NUMANodes
            elif t == "Core":
                new = _Core(self.int_attr(child, "os_index", below=U32_LIMIT) if "os_index" in child.attrib else None)
                self.cores.append(new)
                self.walk(child, package, new, near)
            elif t == "PU":
                self.add_pu(child, package, core, near)
            else:
                self.walk(child, package, core, near)

    def remember_gp(self, el: _El) -> None:
        """Index objects by gp_index: memattrs name their targets and initiators that way."""
        # hwloc 3.x writes id="objN" where 2.x wrote gp_index="N".
        gp = el.attrib.get("gp_index") or el.attrib.get("id", "").removeprefix("obj")
        if not _DIGITS.fullmatch(gp):
            return
        if "cpuset" in el.attrib:
            self.gp_to_cpus[int(gp)] = self.bitmap_attr(el, "cpuset")
        if el.attrib.get("type") == "NUMANode":
            self.gp_to_node[int(gp)] = self.int_attr(el, "os_index", below=NODE_LIMIT)

    def add_node(self, el: _El, package: int | None) -> None:
        os_index = self.int_attr(el, "os_index", below=NODE_LIMIT)
        if any(n.os_index == os_index for n in self.nodes):
            raise self.fail(el, f"NUMA node {os_index} is listed twice")
        pages = [self.int_attr(p, "size") for p in el.find_all("page_type")]
        # hwloc writes local_memory only when it knows a size (not from CPUID dumps, synthetic
        # descriptions without memory=, or PS3-like firmware); numalab writes 0 for memoryless nodes.
        memory = self.int_attr(el, "local_memory") if "local_memory" in el.attrib else None
        subtype = el.attrib.get("subtype") or None
        cpus = self.bitmap_attr(el, "cpuset") if "cpuset" in el.attrib else set()
        node = _Node(os_index, cpus, memory, package, pages, el, subtype=subtype)
        node.disallowed = self.disallowed_nodes is not None and os_index in self.disallowed_nodes
        self.nodes.append(node)

    def add_pu(self, el: _El, package: int | None, core: _Core | None, home: set[int]) -> None:
        os_index = self.int_attr(el, "os_index", below=CPU_LIMIT)
        if os_index in self.pus or os_index in self.left_out:
            raise self.fail(el, f"PU {os_index} is listed twice")
        if "cpuset" in el.attrib and self.bitmap_attr(el, "cpuset") != {os_index}:
            raise self.fail(el, f"cpuset {shorten(el.attrib['cpuset'])} is not PU {os_index} alone (a PU's cpuset is its own bit)")
        if self.excluded_cpus is not None and os_index in self.excluded_cpus:
            self.left_out.add(os_index)  # offline, or outside the cgroup's cpuset.cpus
            return
        self.pus[os_index] = _Pu(el, package, home, self.nodeset_of(el))
        if core is None:
            self.cores.append(_Core(None, [os_index]))  # no Core object: the PU is its own core
        else:
            core.pus.append(os_index)

    # ---- nodes and cores

    def restrict(self) -> None:
        """The machine as a process inside the file's cgroup sees it: PUs outside the allowed or
        online cpuset were left out by :meth:`add_pu`; cores keep their other PUs, and every
        cpuset shrinks to the PUs kept. Disallowed nodes are dealt with in :meth:`drop_disallowed`."""
        for c in self.cores:
            c.pus = [pu for pu in c.pus if pu in self.pus]
        attrs = self.machine.attrib
        complete = self.bitmap_attr(self.machine, "complete_cpuset") if "complete_cpuset" in attrs else set()
        absent = complete - self.pus.keys() - self.left_out
        if "online_cpuset" in attrs:  # v1 says which CPUs are offline
            offline = complete - self.bitmap_attr(self.machine, "online_cpuset")
            disallowed, unknown = (self.left_out | absent) - offline, set()
        else:
            offline, disallowed, unknown = set(), self.left_out, absent
        if offline:
            self.notes["cpus.offline"] = f"CPUs {format_cpulist(offline)} are offline (v1 online_cpuset): left out, as Linux's online mask"
        if disallowed:
            self.notes["cpus.disallowed"] = (
                f"CPUs {format_cpulist(disallowed)} are outside the file's allowed_cpuset (a cgroup's cpuset.cpus): "
                "left out, as a process inside that cgroup sees the machine"
            )
        if unknown:
            self.notes["cpus.absent"] = (
                f"CPUs {format_cpulist(unknown)} are in the file's complete_cpuset only: offline, or outside the "
                "cgroup lstopo ran in (the file does not say which); left out"
            )

    def assign_cpus(self) -> None:
        """Give every CPU to one node, as sysfs does. hwloc gives memory-side nodes (HBM, NVM,
        CXL) their parent's cpuset, so CPUs shared by several nodes go to the DRAM node, then the
        lowest OS index. A PU in no node's cpuset goes to the node its own nodeset names (a node
        the file leaves out as disallowed, added with no memory: Linux still lists the CPU on it,
        and its allocations fall back to the nearest allowed node), else to the nodes of its
        nearest ancestor with a nodeset, else to the first node (Linux gives CPUs of an offline
        or unknown node to an online one)."""
        self.check_cpus_have_pus()
        self.nodes.sort(key=lambda n: n.os_index)
        cpuless_list = self.info_json("numalab.cpuless_nodes", list, [])
        if not all(type(i) is int for i in cpuless_list):
            raise self.fail(self.infos["numalab.cpuless_nodes"], "value must be a JSON list of node OS indexes")
        cpuless = set(cpuless_list)
        owner: dict[int, int] = {}
        for n in sorted(self.nodes, key=lambda n: (not n.dram, n.os_index)):
            n.cpus &= self.pus.keys()
            n.owned = set() if n.os_index in cpuless else n.cpus - owner.keys()
            if n.cpus and n.owned != n.cpus and n.os_index not in cpuless:
                others = format_cpulist({owner[c] for c in n.cpus - n.owned})
                self.notes[f"nodes.{n.os_index}.cpus"] = (
                    f"node {n.os_index} shares CPUs with node {others} in the hwloc file (a memory-side node has its "
                    "parent's cpuset); Linux lists them on one node only, the DRAM one, else the lowest"
                )
            owner.update(dict.fromkeys(n.owned, n.os_index))
        taken = set(owner)
        self.place_orphans(taken)
        self.drop_disallowed()

    def place_orphans(self, taken: set[int]) -> None:
        """PUs that no node's cpuset holds (see :meth:`assign_cpus`)."""
        present = {n.os_index: n for n in self.nodes}
        moved: dict[int, list[int]] = {}
        for os_index, pu in sorted(self.pus.items()):
            if os_index in taken:
                continue
            known = {k for k in pu.own if k in present and not present[k].placeholder}
            if known:
                raise self.fail(pu.el, f"PU {os_index} is in no NUMANode's cpuset (its nodeset names node {format_cpulist(known)})")
            if pu.own:
                target = min(pu.own)
                if target not in present:
                    present[target] = _Node(target, set(), 0, pu.package, [], self.machine, placeholder=True, disallowed=True)
                    self.nodes.append(present[target])
            else:
                near = [k for k in sorted(pu.home) if k in present and not present[k].placeholder]
                target = near[0] if near else min(k for k in present if not present[k].placeholder)
                moved.setdefault(target, []).append(os_index)
            present[target].owned.add(os_index)
            present[target].cpus.add(os_index)
        self.nodes.sort(key=lambda n: n.os_index)
        for node, cpus in moved.items():
            self.notes[f"nodes.{node}.cpus"] = (
                f"CPUs {format_cpulist(cpus)} have no local NUMA node in the file (offline or unknown node): "
                f"put on node {node}, the nearest one the tree gives"
            )

    def drop_disallowed(self) -> None:
        """Nodes outside the allowed nodeset: kept with no memory when they hold allowed CPUs
        (a process there allocates on the nearest allowed node, as Linux's zonelists filtered by
        cpuset.mems do), else left out."""
        dropped = [n.os_index for n in self.nodes if n.disallowed and not n.owned]
        kept = [n for n in self.nodes if n.disallowed and n.owned]
        for n in kept:
            n.memory_bytes = 0
        self.nodes = [n for n in self.nodes if not (n.disallowed and not n.owned)]
        if dropped:
            self.notes["disallowed.nodes"] = (
                f"nodes {format_cpulist(dropped)} are outside the file's allowed_nodeset (a cgroup's cpuset.mems) "
                "and hold no allowed CPU: left out"
            )
        if kept:
            nodes = format_cpulist([n.os_index for n in kept])
            self.notes["disallowed.memory"] = (
                f"nodes {nodes} are outside the allowed nodeset (a cgroup's cpuset.mems): shown with their "
                "CPUs and no memory, so their CPUs allocate on the nearest allowed node, as Linux does"
            )
        if not any(n.memory_bytes != 0 for n in self.nodes):
            raise UsageError(
                f"{self.path}:{self.machine.line}: no allowed NUMA node: the allowed_nodeset "
                f"{shorten(self.machine.attrib.get('allowed_nodeset', ''))} names no node of the file"
            )

    def check_cpus_have_pus(self) -> None:
        """Every CPU a NUMANode or Package claims must be a PU of the file: a CPU without a PU
        object has no core, no SMT siblings and no place in the tree, so it cannot be simulated.
        CPUs the process may not use (offline, disallowed) need no PU."""
        holders = [(n.el, n.cpus) for n in self.nodes] + [(el, cpus) for _, cpus, el in self.packages]
        for el, cpus in holders:
            missing = cpus - self.pus.keys() - self.left_out - (self.excluded_cpus or set())
            if missing:
                raise self.fail(
                    el,
                    f"cpuset {shorten(el.attrib.get('cpuset', ''))} names CPUs {format_cpulist(missing)} that have no PU object "
                    "(every CPU of a cpuset must be a <object type=\"PU\"> of the file)",
                )

    def package_of(self, n: _Node) -> int:
        if n.os_index in self.node_packages:
            return self.node_packages[n.os_index]
        if n.package is not None:
            return n.package
        # NUMANode above or beside its Package (hwloc 1.x, or memory attached to a Group).
        for os_index, cpus, _ in self.packages:
            if cpus & n.cpus:
                return os_index
        return self.packages[0][0] if self.packages else 0

    @property
    def node_packages(self) -> dict[int, int]:
        """The ``numalab.node_packages`` info: packages of nodes the tree cannot place."""
        pairs = self.info_json("numalab.node_packages", list, [])
        if not all(isinstance(p, list) and len(p) == 2 and all(type(i) is int for i in p) for p in pairs):
            raise self.fail(self.infos["numalab.node_packages"], "value must be a JSON list of [node, package] pairs")
        return dict(map(tuple, pairs))

    def fill_memory(self) -> None:
        """Sizes of nodes the file gives none: ``--memory-per-node-mib``; else, when other nodes
        have sizes, none (a memoryless node, as Linux reports one: MemTotal 0); else (no size at
        all, as in topologies made from CPUID dumps) the estimate, with a warning."""
        missing = [n for n in self.nodes if n.memory_bytes is None]
        if not missing:
            return
        which = format_cpulist([n.os_index for n in missing])
        if self.memory_per_node_mib is not None:
            for n in missing:
                n.memory_bytes = self.memory_per_node_mib << 20
            self.notes[est.MEMORY_PER_CORE_GIB.key] = (
                f"nodes {which}: no memory size in the file: {self.memory_per_node_mib} MiB each (--memory-per-node-mib)"
            )
            return
        if any(n.memory_bytes for n in self.nodes) and not self.memory_unknown_is_missing:
            for n in missing:
                n.memory_bytes = 0
            if self.info("numalab.notes") is not None:
                return  # numalab's own export (re-written by lstopo, which drops local_memory="0")
            self.notes["nodes.memoryless"] = (
                f"nodes {which} have no local_memory in the file while other nodes do: memoryless nodes, "
                "as Linux reports them (their CPUs allocate on the nearest node with memory)"
            )
            return
        per_core = est.MEMORY_PER_CORE_GIB.value
        for n in missing:
            cores = sum(1 for c in self.cores if c.pus and c.pus[0] in n.owned)
            n.memory_bytes = round(max(1, cores) * per_core * GIB)
        total = sum(n.memory_bytes or 0 for n in missing) / GIB
        self.notes[est.MEMORY_PER_CORE_GIB.key] = f"nodes {which}: " + est.MEMORY_PER_CORE_GIB.note
        nodes = f"node {which}" if len(missing) == 1 else f"nodes {which}"
        self.warning = (
            f"{self.path}: no memory size for {nodes}: assumed {per_core:g} GiB per core "
            f"({total:g} GiB in all, an estimate); give --memory-per-node-mib to set it"
        )

    def node_specs(self) -> list[dict[str, Any]]:
        return [
            {
                "os_index": n.os_index,
                "package": self.package_of(n),
                "cpus": format_cpulist(n.owned),
                "memory_bytes": n.memory_bytes,
            }
            for n in self.nodes
        ]

    def core_specs(self) -> list[dict[str, Any]]:
        return [{"cpus": format_cpulist(c.pus), "os_index": c.os_index} for c in self.cores if c.pus]

    # ---- distances

    def distances(self) -> list[list[int]]:
        """The SLIT: the file's latency-kind NUMANode ``distances2`` (the ``NUMALatency`` one first)
        covering every node of the file (it may name more: nodes left out as disallowed); nodes
        added back for PUs of a disallowed node (§5.2) are as far from every node as the farthest
        pair of the matrix."""
        order = [n.os_index for n in self.nodes]
        real = [n.os_index for n in self.nodes if not n.placeholder]
        elements = [el for el in self.root.find_all("distances2") if el.attrib.get("type") == "NUMANode"]
        matrices = [self.read_distances(el) for el in elements]
        usable = [m for m in matrices if m.kind & DISTANCES_KIND_LATENCY and set(real) <= set(m.indexes)]
        usable.sort(key=lambda m: m.el.attrib.get("name") != SLIT_NAME)  # the SLIT first
        if len(order) == 1:
            return [[10]]
        if not usable or len(real) < 2:
            return self.distances_without_slit()
        best = usable[0]
        self.distances_el = best.el
        pos = {os_index: k for k, os_index in enumerate(best.indexes)}
        nb = len(best.indexes)
        known = [[best.values[pos[a] * nb + pos[b]] for b in real] for a in real]
        scaled = self.slit_scale(best.el, known)
        if len(real) == len(order):
            return scaled
        far = max([d for i, row in enumerate(scaled) for j, d in enumerate(row) if i != j] or [20])
        k = {os_index: i for i, os_index in enumerate(real)}
        added = [n for n in order if n not in k]
        self.notes["distances"] = (
            f"nodes {format_cpulist(added)} are not in the file's {_describe(best.el)}: distance {far} "
            "(its farthest pair) to every other node"
        )
        return [
            [10 if a == b else scaled[k[a]][k[b]] if a in k and b in k else far for b in order] for a in order
        ]

    def distances_without_slit(self) -> list[list[int]]:
        """From a full Latency memattr matrix (relative to local, as the SLIT is), else 10/20."""
        found, n = self.latency_entries(), len(self.nodes)
        if len(found) == n * n and all(found[i, i] > 0 for i in range(n)):
            self.notes["distances"] = "no NUMALatency distances2 in the file: 10 x latency / local latency (Latency memattr)"
            return [[10 if i == j else max(11, round(10 * found[i, j] / found[i, i])) for j in range(n)] for i in range(n)]
        self.notes["distances"] = (
            "no latency-kind NUMANode distances2 over all nodes in the file: 10 local, 20 remote "
            "(the kernel's REMOTE_DISTANCE when firmware gives no SLIT)"
        )
        return [[10 if i == j else 20 for j in range(n)] for i in range(n)]

    def slit_scale(self, el: _El, matrix: list[list[int]]) -> list[list[int]]:
        """Scale a latency-like matrix to the SLIT's 10 on the diagonal."""
        diagonal = {matrix[i][i] for i in range(len(matrix))}
        if len(diagonal) != 1 or 0 in diagonal:
            raise self.fail(el, f"diagonal values {sorted(diagonal)}: not SLIT-like (expected one positive local value)")
        local = diagonal.pop()
        if local == 10:
            return matrix
        self.notes["distances"] = f"{_describe(el)} scaled by 10/{local} so that local is 10, as in the SLIT"
        return [[round(v * 10 / local) for v in row] for row in matrix]

    def read_distances(self, el: _El) -> _Matrix:
        nb = self.int_attr(el, "nbobjs", below=NODE_LIMIT)
        kind = self.int_attr(el, "kind", 0)
        lists: dict[str, list[int]] = {"indexes": [], "u64values": []}
        for child in el.children:
            if child.tag == "info":
                continue
            if child.tag not in lists:
                raise self.fail(el, f"unexpected child <{child.tag}> (expected <indexes> and <u64values>)")
            for tok in child.text.split():
                if not _DIGITS.fullmatch(tok):
                    raise self.fail(child, f"bad value '{shorten(tok)}' (expected whole numbers)")
                lists[child.tag].append(int(tok))
        if len(lists["indexes"]) != nb:
            raise self.fail(el, f"has {len(lists['indexes'])} indexes for nbobjs={nb}")
        if len(lists["u64values"]) != nb * nb:
            raise self.fail(el, f"has {len(lists['u64values'])} values for nbobjs={nb} (expected {nb * nb})")
        if el.attrib.get("indexing", "os") != "os":
            raise self.fail(el, f"indexing='{el.attrib['indexing']}': NUMANode distances are indexed by os_index")
        return _Matrix(el, kind, lists["indexes"], lists["u64values"])

    # ---- memory attributes

    def memattr(self, name: str) -> list[_Value]:
        """Every value of memattr ``name`` whose target is a NUMA node."""
        out = []
        for attr in self.root.find_all("memattr"):
            if attr.attrib.get("name") != name:
                continue
            for v in attr.find_all("memattr_value"):
                target = self.gp_to_node.get(self.int_attr(v, "target_obj_gp_index"))
                if target is None:
                    continue  # values about other objects (PUs, Groups) say nothing about nodes
                out.append(_Value(target, self.initiator(v), self.int_attr(v, "value")))
        return out

    def initiator(self, value: _El) -> set[int] | None:
        """The CPUs of a memattr value's initiator: a cpuset, or an object (hwloc-annotate's form)."""
        if "initiator_cpuset" in value.attrib:
            return self.bitmap_attr(value, "initiator_cpuset")
        if "initiator_obj_gp_index" in value.attrib:
            return self.gp_to_cpus.get(self.int_attr(value, "initiator_obj_gp_index"))
        return None

    def bandwidths(self) -> list[float]:
        """Per-node GB/s: the local initiator's Bandwidth, else the best one, else (HMAT gives
        read and write figures separately on some machines) ReadBandwidth, else the estimate."""
        measured: dict[int, int] = {}
        source: dict[int, str] = {}
        for name in ("Bandwidth", "ReadBandwidth"):
            values = self.memattr(name)
            for n in self.nodes:
                mine = [(v.initiator == n.cpus, v.value) for v in values if v.target == n.os_index]
                if mine and n.os_index not in measured:
                    measured[n.os_index] = max(mine)[1]
                    source[n.os_index] = name
        exact = self.info_json("numalab.bandwidth_gbps", list, None)
        if _numbers(exact, len(self.nodes)):
            rounded = {n.os_index: round(exact[k] * 1e9 / MIB) for k, n in enumerate(self.nodes)}
            if all(rounded[os_index] == value for os_index, value in measured.items()):
                return exact
        guessed = [n.os_index for n in self.nodes if n.os_index not in measured]
        if measured:
            by_attr = {a: [k for k, v in source.items() if v == a] for a in sorted(set(source.values()))}
            self.notes["bandwidth.firmware"] = FIRMWARE + "; ".join(
                f"nodes {format_cpulist(nodes)}: {a} memattr, MiB/s" for a, nodes in by_attr.items()
            )
        if guessed:
            prefix = "" if not measured else f"nodes {format_cpulist(guessed)} (no Bandwidth memattr): "
            self.notes[est.NODE_BANDWIDTH_GBPS.key] = prefix + est.NODE_BANDWIDTH_GBPS.note
        guess = est.NODE_BANDWIDTH_GBPS.value
        return [measured[n.os_index] * MIB / 1e9 if n.os_index in measured else guess for n in self.nodes]

    def latency(self, distances: list[list[int]]) -> dict[str, Any]:
        """The spec's ``latency`` table: a full Latency memattr matrix; else the entries the file
        gives (rows of CPU-less nodes never have an initiator) over local x distance / 10 for the
        rest; else local latency + SLIT."""
        found = self.latency_entries()
        n = len(self.nodes)
        exact = self.info_json("numalab.idle_latency_ns", list, None)
        square = isinstance(exact, list) and len(exact) == n and all(_numbers(row, n) for row in exact)
        if square and all(round(exact[i][j]) == v for (i, j), v in found.items()):
            return _latency_table(exact, distances)
        if found:
            self.notes["latency.firmware"] = FIRMWARE + (
                f"{self.latency_attr} memattr (ns) for {len(found)} of the {n * n} CPU node x memory node pairs"
            )
        if len(found) == n * n:
            return _latency_table([[float(found[i, j]) for j in range(n)] for i in range(n)], distances)
        local = [v for (i, j), v in found.items() if i == j]
        if local:
            base = float(min(local))
            self.notes["latency.local_ns"] = (
                "the smallest local latency memattr of the file; pairs the file does not give: local x distance / 10"
            )
            matrix = [[float(found.get((i, j), base * distances[i][j] / 10)) for j in range(n)] for i in range(n)]
            return _latency_table(matrix, distances)
        if found:  # only remote pairs (a CPU-less node's latency from its neighbours)
            est.record(self.notes, est.LOCAL_LATENCY_NS)
            base = est.LOCAL_LATENCY_NS.value
            matrix = [[float(found.get((i, j), base * distances[i][j] / 10)) for j in range(n)] for i in range(n)]
            return _latency_table(matrix, distances)
        est.record(self.notes, est.LOCAL_LATENCY_NS)
        return {"local_ns": est.LOCAL_LATENCY_NS.value}

    def latency_entries(self) -> dict[tuple[int, int], int]:
        """(initiator node, target node) logical indexes -> Latency (else ReadLatency) ns, for
        initiators that are one node's CPUs."""
        logical = {n.os_index: k for k, n in enumerate(self.nodes)}
        for name in ("Latency", "ReadLatency"):
            found: dict[tuple[int, int], int] = {}
            for v in self.memattr(name):
                owners = [k for k, n in enumerate(self.nodes) if v.initiator and v.initiator <= n.owned]
                if len(owners) == 1 and v.target in logical and v.value > 0:
                    found[owners[0], logical[v.target]] = v.value
            if found:
                self.latency_attr = name
                return found
        return {}

    # ---- numalab infos and core parameters

    def info(self, key: str) -> str | None:
        el = self.infos.get(key)
        return None if el is None else el.attrib.get("value", "")

    def info_json(self, key: str, kind: type, default: Any) -> Any:
        text = self.info(key)
        if text is None:
            return default
        try:
            value = json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)
        except json.JSONDecodeError as e:
            raise self.fail(self.infos[key], f"value is not valid JSON: {e.msg}") from None
        except ValueError as e:
            raise self.fail(self.infos[key], f"value holds {e}: numbers must be finite") from None
        if not isinstance(value, kind):
            raise self.fail(self.infos[key], f"value must be a JSON {kind.__name__}")
        return value

    def info_float(self, key: str) -> float | None:
        text = self.info(key)
        if text is None:
            return None
        try:
            value = float(text)
        except ValueError:
            raise self.fail(self.infos[key], f"value '{shorten(text)}' is not a number") from None
        if not (math.isfinite(value) and value > 0):
            raise self.fail(self.infos[key], f"value '{shorten(text)}' must be a finite number above 0")
        return value

    def core_params(self) -> dict[str, float]:
        """The spec's ``core`` table; a calibrated machine's optional figures (``stream_mlp``,
        ``add_latency_ns``, ``window_instructions``, ``prefetch_lines``) only where the file carries them (numalab's export writes them)."""
        hz = self.info_float("numalab.core_frequency_hz")
        if hz is not None:
            ghz = _ghz_for(hz)
        else:
            ghz = self.cpukind_ghz()
        mlp = self.info_float("numalab.core_mlp")
        if mlp is None:
            est.record(self.notes, est.CORE_MLP)
            mlp = est.CORE_MLP.value
        params = {"frequency_ghz": ghz, "mlp": mlp}
        for name, key in (("stream_mlp", "numalab.core_stream_mlp"), ("add_latency_ns", "numalab.core_add_latency_ns"),
                         ("window_instructions", "numalab.core_window_instructions"),
                         ("prefetch_lines", "numalab.core_prefetch_lines")):
            value = self.info_float(key)
            if value is not None:
                params[name] = value
        return params

    def cpukind_ghz(self) -> float:
        """hwloc's Linux backend reports FrequencyMaxMHz per CPU kind; take the fastest."""
        mhz = [
            float(i.attrib["value"])
            for kind in self.root.find_all("cpukind")
            for i in kind.find_all("info")
            if i.attrib.get("name") == "FrequencyMaxMHz" and _DECIMAL.fullmatch(i.attrib.get("value", ""))
        ]
        mhz = [v for v in mhz if 0 < v < math.inf]
        if mhz:
            self.notes[est.CORE_FREQUENCY_GHZ.key] = "the highest FrequencyMaxMHz of the file's cpukinds"
            return max(mhz) / 1000
        est.record(self.notes, est.CORE_FREQUENCY_GHZ)
        return est.CORE_FREQUENCY_GHZ.value

    def core_frequencies(self) -> dict[int, float]:
        """Per-core frequency (Hz, keyed by the core's first PU) on hybrid CPUs: numalab's exact
        ``numalab.core_frequencies_hz`` info, else one value per hwloc cpukind: its
        FrequencyMaxMHz, else (x86 CPUID gives only the CoreType) the most performant kind's
        frequency x :data:`HYBRID_SLOW_FACTOR` for the others. Empty when all cores are alike."""
        exact = self.info_json("numalab.core_frequencies_hz", list, None)
        if exact is not None:
            out: dict[int, float] = {}
            for entry in exact:
                if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str) and _numbers(entry[1:], 1)):
                    raise self.fail(self.infos["numalab.core_frequencies_hz"], "value must be a JSON list of [cpulist, hz] pairs")
                try:
                    cpus = parse_cpulist(entry[0])
                except ValueError as e:
                    raise self.fail(self.infos["numalab.core_frequencies_hz"], f"cpulist '{shorten(entry[0])}': {e}") from None
                for cpu in cpus:
                    out[cpu] = float(entry[1])
            return out
        kinds = []
        for order, kind in enumerate(self.root.find_all("cpukind")):
            cpus = self.bitmap_attr(kind, "cpuset") & self.pus.keys()
            rank = int(kind.attrib["forced_efficiency"]) if _DIGITS.fullmatch(kind.attrib.get("forced_efficiency", "")) else order
            mhz = [float(i.attrib["value"]) for i in kind.find_all("info")
                   if i.attrib.get("name") == "FrequencyMaxMHz" and _DECIMAL.fullmatch(i.attrib.get("value", ""))]
            mhz = [v for v in mhz if 0 < v < math.inf]
            if cpus:
                kinds.append((rank, cpus, mhz[0] * 1e6 if mhz else None, kind.find_all("info")))
        if len(kinds) < 2:
            return {}
        top_rank = max(k[0] for k in kinds)
        known = [hz for _, _, hz, _ in kinds if hz is not None]
        reference = max(known) if known else self.core_params()["frequency_ghz"] * 1e9
        out = {}
        described = []
        for rank, cpus, hz, infos in sorted(kinds, key=lambda k: k[0]):
            core_type = next((i.attrib.get("value", "") for i in infos if i.attrib.get("name") == "CoreType"), "")
            if hz is None:
                hz = reference if rank == top_rank else reference * HYBRID_SLOW_FACTOR
                how = "the most performant kind" if rank == top_rank else f"x {HYBRID_SLOW_FACTOR} (estimate)"
            else:
                how = "FrequencyMaxMHz"
            described.append(f"CPUs {format_cpulist(cpus)}{f' ({core_type})' if core_type else ''}: {hz / 1e9:g} GHz, {how}")
            for cpu in cpus:
                out[cpu] = hz
        self.notes[est.CORE_FREQUENCY_GHZ.key] = (
            "hybrid CPU, one frequency per hwloc cpukind (efficiency rank order): " + "; ".join(described)
            + f". A less performant kind without a frequency runs at {HYBRID_SLOW_FACTOR} x the fastest "
            "(estimate: E-core 3.9 GHz / P-core 5.2 GHz max turbo of the Core i9-12900K, Intel ARK)"
        )
        return out

    def page_size(self) -> int:
        exact = self.info("numalab.page_size_bytes")
        if exact is not None:
            return self.int_attr(self.infos["numalab.page_size_bytes"], "value")
        sizes = [s for n in self.nodes for s in n.page_sizes if s > 0]
        if sizes:
            return min(sizes)  # the base page; larger page_types are huge pages
        est.record(self.notes, est.PAGE_SIZE_BYTES)
        return int(est.PAGE_SIZE_BYTES.value)

    def description(self) -> str:
        text = self.info("numalab.description")
        if text is not None:
            return text
        infos = _descendants(self.machine, "info")
        models = sorted({i.attrib.get("value", "") for i in infos if i.attrib.get("name") == "CPUModel"})
        return f"imported from hwloc XML {self.path.name}" + (f" ({', '.join(models)})" if models else "")

    # ---- the spec

    def spec(self) -> dict[str, Any]:
        if not self.nodes:
            raise UsageError(
                f"{self.path}:{self.root.line}: no NUMANode object: numalab needs at least one NUMA node "
                "(lstopo writes one even for a machine without NUMA)"
            )
        self.assign_cpus()
        self.fill_memory()
        distances = self.distances()
        spec: dict[str, Any] = {
            "name": self.info("numalab.name") or self.path.stem,
            "description": self.description(),
            "page_size_bytes": self.page_size(),
            "nodes": self.node_specs(),
            "cores": self.core_specs(),
            "distances": distances,
            "latency": self.latency(distances),
            "bandwidth": {"node_gbps": self.bandwidths()},
            "core": self.core_params(),
        }
        self.frequencies = self.core_frequencies()
        spec["latency"].update(self.loaded_curve())
        spec.update(self.interconnect())
        spec["caches"] = self.caches()
        spec["notes"] = {**self.info_json("numalab.notes", dict, {}), **self.notes}
        return spec

    def finish(self, machine: Machine) -> Machine:
        """What the MachineSpec cannot say, set on the resolved machine: each node's memory
        subtype and, on hybrid CPUs, each core's frequency from its cpukind."""
        subtypes = {n.os_index: n.subtype for n in self.nodes if n.subtype is not None}
        frequencies = self.frequencies
        if not subtypes and not frequencies:
            return machine
        doc = json.loads(machine.to_json())
        for n in doc["nodes"]:
            if n["os_index"] in subtypes:
                n["subtype"] = subtypes[n["os_index"]]
        for c in doc["cores"]:
            first = min(parse_cpulist(c["cpuset"]))
            if first in frequencies:
                c["frequency_hz"] = frequencies[first]
        return Machine.from_json(json.dumps(doc))

    def loaded_curve(self) -> dict[str, Any]:
        curve = self.info_json("numalab.loaded_latency", list, None)
        # The model's default curve is left for Rust to compute: passing it as decimal text could
        # change its last bits (the spec parser is not exactly round-tripping for every float).
        if curve is None or curve == _default_curve():
            return {}
        return {"loaded_curve": curve}

    def caches(self) -> list[dict[str, Any]]:
        """numalab's exact cache list if the file has it, else its L2/L3/L4 cache objects (``cache_size``
        bytes, the PUs of their ``cpuset``); instruction caches are skipped."""
        exact = self.info_json("numalab.caches", list, None)
        if exact is not None:
            return exact
        out = []
        for el in _descendants(self.machine, "object"):
            t = el.attrib.get("type", "")
            # v1 files write every cache as type="Cache" with its level in depth.
            level = {"L2Cache": 2, "L3Cache": 3, "L4Cache": 4}.get(t) if t != "Cache" else {"2": 2, "3": 3, "4": 4}.get(el.attrib.get("depth", ""))
            if level is None or el.attrib.get("cache_type") == "2" or "cpuset" not in el.attrib:
                continue
            size, cpus = self.int_attr(el, "cache_size", 0), self.bitmap_attr(el, "cpuset") & self.pus.keys()
            if size > 0 and cpus:
                out.append({"level": level, "size_kib": size / 1024, "cpus": format_cpulist(cpus)})
        return out

    def interconnect(self) -> dict[str, Any]:
        links = self.info_json("numalab.links", list, None)
        if links is None:
            est.record(self.notes, est.NO_LINKS)
            return {}
        return {"links": links, "routes": self.info_json("numalab.routes", list, [])}


def _no_constant(name: str) -> float:
    """json.loads accepts NaN and Infinity, which no measured value can be."""
    raise ValueError(name)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999 parses to inf
        raise ValueError(text)
    return value


def _numbers(value: Any, n: int) -> bool:
    """Whether ``value`` is a list of ``n`` numbers (what a numalab.* info should hold)."""
    if not isinstance(value, list) or len(value) != n:
        return False
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)


def _latency_table(matrix: list[list[float]], distances: list[list[int]]) -> dict[str, Any]:
    """``local_ns`` alone when the matrix is exactly local x distance / 10 (what the spec derives),
    else the explicit matrix."""
    local = matrix[0][0]
    if all(matrix[i][j] == local * d / 10.0 for i, row in enumerate(distances) for j, d in enumerate(row)):
        return {"local_ns": local}
    return {"local_ns": local, "matrix_ns": matrix}


def _ghz_for(hz: float) -> float:
    """A GHz value ``g`` with ``g * 1e9 == hz`` (the spec multiplies), so frequencies survive exactly."""
    g = hz / 1e9
    for _ in range(4):
        if g * 1e9 == hz:
            return g
        g = math.nextafter(g, math.inf if g * 1e9 < hz else -math.inf)
    return hz / 1e9


@lru_cache(maxsize=1)
def _default_curve() -> list[list[float]]:
    """The model's default loaded-latency curve, from the smallest machine the spec resolves."""
    tiny = {
        "name": "curve",
        "topology": {"packages": 1, "nodes_per_package": 1, "cores_per_node": 1},
        "memory": {"node_gib": 1},
        "latency": {"local_ns": 90},
        "bandwidth": {"node_gbps": 1},
        "core": {"frequency_ghz": 1, "mlp": 1},
    }
    m = json.loads(Machine.from_spec_json(json.dumps(tiny)).to_json())
    return [[p["utilisation"], p["factor"]] for p in m["loaded_latency"]]


def _descendants(el: _El, tag: str) -> list[_El]:
    out = []
    for child in el.children:
        if child.tag == tag:
            out.append(child)
        out.extend(_descendants(child, tag))
    return out
