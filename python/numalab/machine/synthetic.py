"""hwloc synthetic descriptions as machines: ``synthetic:pack:2 numa:2 core:8 pu:2``.

The grammar is hwloc's (doc/hwloc.doxy, "Synthetic topologies"; hwloc/topology-synthetic.c,
``hwloc_backend_synthetic_init``; type names as ``hwloc_type_sscanf`` in hwloc/traversal.c reads
them):

- items separated by spaces, each ``type:arity`` or a bare ``arity``, optionally followed by
  ``(attributes)``; the arity is the number of children of each object of the previous level, so
  ``pack:2 core:8 pu:2`` has 2 x 8 = 16 cores and 32 PUs;
- type names are case-insensitive and may be shortened to any unambiguous prefix of at least two
  letters (``pa``, ``pack``, ``Package``, ``socket``; ``nu``, ``numa``, ``node``, ``NUMANode``;
  ``co``, ``core``; ``pu``; ``die``; ``group``; ``l3``, ``l2u``, ``l1d``, ``l1i``, ``L3Cache``);
  ``Tile`` and ``Module`` are Groups;
- a NUMA level (``numa:2``) is a Group per NUMA node with the node attached to it;
  ``[numa]`` attaches one NUMA node (memory child) to every object of the level before it, and
  may be repeated (``package:1 group:4 [numa] [numa] core:16 pu:4``, hwloc's Xeon Phi example);
  without either, one NUMA node covers the machine;
- bare arities get hwloc's default types: NUMA node, package, core, up to four caches, groups
  (``2 3 4 5 6`` is ``Package:2 NUMANode:3 L2Cache:4 Core:5 PU:6``);
- attributes: ``memory=`` for NUMA nodes, ``size=`` for caches (bytes, or with kB, KiB, MB, MiB,
  GB, GiB, TB, TiB), ``indexes=`` for the OS indexes of a level's objects in order (a comma
  list), ``memorysidecachesize=`` (accepted, not modelled); attributes in parentheses at the very
  start apply to the Machine.

Machine, Misc and I/O types are refused, as hwloc does. Errors name the column:
``synthetic description 'pack:2 nuam:2 pu:2', column 8: unknown object type 'nuam' ...``.

The description is turned into the object tree hwloc would build and read by the hwloc XML
importer (:mod:`numalab.machine.hwloc_xml`), so what a synthetic topology cannot say (latency,
bandwidth, distances, frequency, MLP; memory sizes without ``memory=``) gets the same documented
estimates as an XML file without them, recorded in the machine's notes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from numalab._core import Machine
from numalab.exceptions import UsageError
from numalab.machine import limits

__all__ = ["PREFIX", "load_synthetic", "parse"]

#: How a machine name says it is a synthetic description.
PREFIX = "synthetic:"

#: (canonical hwloc type, names it may be written as, minimum letters), in hwloc_type_sscanf's order.
_NAMES = [
    ("Machine", ("machine",), 2),
    ("NUMANode", ("numanode", "node"), 2),
    ("MemCache", ("memcache",), 5),
    ("Package", ("package", "socket"), 2),
    ("Die", ("die",), 2),
    ("Core", ("core",), 2),
    ("PU", ("pu",), 2),
    ("Misc", ("misc",), 4),
    ("Bridge", ("bridge",), 4),
    ("Bridge", ("hostbridge",), 6),
    ("Bridge", ("pcibridge",), 5),
    ("PCIDev", ("pcidev",), 3),
    ("OSDev", ("osdev",), 2),
]
_REFUSED = {"Machine": "the Machine is the implicit root", "MemCache": "memory-side caches are not modelled"} | {
    t: "I/O and Misc objects are not part of synthetic topologies (hwloc refuses them too)"
    for t in ("Misc", "Bridge", "PCIDev", "OSDev")
}
_CACHE = re.compile(r"[lL]([0-9]+)([iIdDuU]?)([a-zA-Z-]*)")
_GROUP = re.compile(r"([a-zA-Z-]+)([0-9]*)")
_SIZE = re.compile(r"(0[xX][0-9a-fA-F]+|[0-9]+)(TiB|TB|GiB|GB|MiB|MB|kiB|KiB|kB|KB)?", re.IGNORECASE)
_UNITS = {
    "tb": 10**12, "tib": 1 << 40, "gb": 10**9, "gib": 1 << 30, "mb": 10**6, "mib": 1 << 20, "kb": 10**3, "kib": 1 << 10,
}
_EXPECTED = "package, numanode, core, pu, die, group, l1d, l1i, l2, l3, ... (hwloc's type names, at least 2 letters)"


@dataclass
class Level:
    """One level of the description: its type (None for a bare arity), arity and attributes."""

    type: str | None
    arity: int
    column: int
    cache_depth: int = 0
    cache_type: int = 0  # hwloc_obj_cache_type_t: 0 unified, 1 data, 2 instruction
    memory: int | None = None  # NUMA level: bytes per node
    size: int | None = None  # caches: bytes
    indexes: list[int] | None = None
    attached: list[int | None] = field(default_factory=list)  # memory of each [numa] below each object


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def fail(self, message: str, at: int | None = None) -> UsageError:
        column = (self.pos if at is None else at) + 1
        return UsageError(f"synthetic description '{self.text}', column {column}: {message}")

    def parse(self) -> tuple[Level, list[Level]]:
        root = Level("Machine", 1, 0)
        if self.text.startswith("("):
            self.pos = 1
            self.attributes(root)
        levels: list[Level] = []
        while True:
            while self.pos < len(self.text) and self.text[self.pos] in " \n\t":
                self.pos += 1
            if self.pos >= len(self.text):
                break
            if self.text[self.pos] == "[":
                self.attached(levels[-1] if levels else root)
            else:
                levels.append(self.level())
        if not levels:
            raise self.fail("no level: give at least the number of PUs (e.g. 'pack:2 core:8 pu:2')")
        return root, levels

    def word(self) -> str:
        start = self.pos
        while self.pos < len(self.text) and (self.text[self.pos].isalnum() or self.text[self.pos] == "-"):
            self.pos += 1
        return self.text[start : self.pos]

    def level(self) -> Level:
        start = self.pos
        level = Level(None, 0, start)
        if not self.text[self.pos].isdigit():
            name = self.word()
            if not name:
                raise self.fail(f"unexpected '{self.text[self.pos]}' (expected a type name, a number or '[')")
            self.set_type(level, name, start)
            if self.pos >= len(self.text) or self.text[self.pos] != ":":
                raise self.fail(f"expected ':' and a number of objects after '{name}' (e.g. {name}:2)")
            self.pos += 1
        number_at = self.pos
        digits = re.match(r"0[xX][0-9a-fA-F]+|[0-9]+", self.text[self.pos :])
        if not digits:
            raise self.fail("expected a number of objects")
        self.pos += digits.end()
        level.arity = int(digits.group(0), 0)
        if level.arity == 0:
            raise self.fail("0 objects: every level needs at least 1 (hwloc refuses 0 too)", number_at)
        if self.pos < len(self.text) and self.text[self.pos] == "(":
            self.pos += 1
            self.attributes(level)
        if self.pos < len(self.text) and self.text[self.pos] not in " \n\t[":
            raise self.fail(f"unexpected '{self.text[self.pos]}' after the number of objects (expected a space or '(')")
        return level

    def set_type(self, level: Level, name: str, at: int) -> None:
        kind = _type_of(name)
        if kind is None:
            raise self.fail(f"unknown object type '{name}' (expected {_EXPECTED})", at)
        if kind in _REFUSED:
            raise self.fail(f"type '{name}' ({kind}) is not allowed: {_REFUSED[kind]}", at)
        level.type = kind
        cache = _CACHE.fullmatch(name)
        if kind.endswith("Cache") and cache:
            level.cache_depth = int(cache.group(1))
            level.cache_type = {"i": 2, "d": 1}.get(cache.group(2).lower(), 0)

    def attached(self, parent: Level) -> None:
        start = self.pos
        self.pos += 1
        name = self.word()
        if _type_of(name) != "NUMANode":
            raise self.fail(f"'[{name}' : only NUMA nodes can be attached in [...] (e.g. [numa] or [numa(memory=16GiB)])", start)
        level = Level("NUMANode", 1, start)
        if self.pos < len(self.text) and self.text[self.pos] == "(":
            self.pos += 1
            self.attributes(level)
        if self.pos >= len(self.text) or self.text[self.pos] != "]":
            raise self.fail("expected ']' to close the attached NUMA node")
        self.pos += 1
        parent.attached.append(level.memory)

    def attributes(self, level: Level) -> None:
        """``name=value`` items separated by single spaces up to ``)``."""
        end = self.text.find(")", self.pos)
        if end < 0:
            raise self.fail("missing ')' to close the attributes")
        while self.pos < end:
            at = self.pos
            name, eq, _ = self.text[self.pos : end].partition("=")
            name = name.split(" ")[0]
            if not eq or " " in self.text[at : at + len(name)]:
                raise self.fail(f"expected name=value in the attributes, got '{self.text[at:end].split(' ')[0]}'")
            self.pos += len(name) + 1
            value_end = min([end] + [i for i in (self.text.find(" ", self.pos),) if 0 <= i < end])
            value = self.text[self.pos : value_end]
            is_cache = (level.type or "").endswith("Cache")
            if name == "memory" and not is_cache:
                level.memory = self.size(value, self.pos)
            elif name == "size" and is_cache:
                level.size = self.size(value, self.pos)
            elif name == "memorysidecachesize":
                self.size(value, self.pos)  # accepted as hwloc does; numalab models no memory-side cache
            elif name == "indexes":
                level.indexes = self.indexes(value, self.pos)
            else:
                allowed = "size=, indexes=" if is_cache else "memory=, indexes=, memorysidecachesize="
                raise self.fail(f"unknown attribute '{name}' (expected {allowed})", at)
            self.pos = value_end + (1 if value_end < end else 0)
        self.pos = end + 1

    def size(self, value: str, at: int) -> int:
        m = _SIZE.fullmatch(value)
        if not m:
            raise self.fail(f"bad size '{value}' (expected bytes, or a number with kB, KiB, MB, MiB, GB, GiB, TB, TiB)", at)
        return int(m.group(1), 0) * _UNITS.get((m.group(2) or "").lower(), 1)

    def indexes(self, value: str, at: int) -> list[int]:
        if not re.fullmatch(r"[0-9]+(,[0-9]+)*", value):
            raise self.fail(
                f"indexes='{value}': numalab reads the comma-list form (indexes=0,2,1,3); "
                "hwloc's interleaving form (indexes=numa:core) is not supported",
                at,
            )
        return [int(v) for v in value.split(",")]


def _matches(word: str, name: str, minimum: int) -> bool:
    """hwloc__type_match: ``word`` is a case-insensitive prefix of ``name``, at least ``minimum`` long."""
    return minimum <= len(word) <= len(name) and name.startswith(word.lower())


def _type_of(word: str) -> str | None:
    """The hwloc type a name denotes (hwloc_type_sscanf), or None."""
    for kind, names, minimum in _NAMES:
        if any(_matches(word, n, minimum) for n in names):
            return kind
    cache = _CACHE.fullmatch(word)
    if cache:
        depth, sort, suffix = int(cache.group(1)), cache.group(2).lower(), cache.group(3)
        if suffix and not _matches(suffix, "cache", 1):
            return None
        if (sort == "i" and 1 <= depth <= 3) or (sort != "i" and 1 <= depth <= 5):
            return f"L{depth}{'i' if sort == 'i' else ''}Cache"
        return None
    group = _GROUP.fullmatch(word)
    if group and (_matches(group.group(1), "group", 2) or word.startswith(("Tile", "Module"))):
        return "Group"
    return None


def parse(text: str) -> tuple[Level, list[Level]]:
    """The root and levels of a description, with hwloc's checks and default types."""
    parser = _Parser(text)
    root, levels = parser.parse()
    fail = parser.fail
    if levels[-1].type not in (None, "PU"):
        raise fail(f"the last level must be PUs, not {levels[-1].type} (e.g. '... core:8 pu:2')", levels[-1].column)
    levels[-1].type = "PU"
    untyped = [lv for lv in levels[:-1] if lv.type is None]
    if untyped and len(untyped) != len(levels) - 1:
        raise fail("levels with and without type names cannot be mixed (give every type or none)", untyped[0].column)
    for kind in ("PU", "Package", "Die", "NUMANode", "Core"):
        same = [lv for lv in levels if lv.type == kind]
        if len(same) > 1:
            raise fail(f"several {kind} levels (hwloc allows one)", same[1].column)
    attached = any(lv.attached for lv in [root, *levels])
    numa_level = any(lv.type == "NUMANode" for lv in levels)
    if numa_level and attached:
        raise fail("NUMA nodes cannot be both a level and attached with [numa]")
    if untyped:
        _default_types(untyped, attached)
    total = 1
    for lv in levels:
        total *= lv.arity
        if total > limits.MAX_CPUS:
            raise fail(f"{total} objects at this level: {limits.CPU_REASON}", lv.column)
        if lv.indexes is not None and len(lv.indexes) != total:
            raise fail(f"indexes= lists {len(lv.indexes)} values for the {total} {lv.type} objects of its level", lv.column)
    nodes = _node_count(root, levels)
    if nodes > limits.MAX_NODES:
        raise fail(f"{nodes} NUMA nodes: {limits.NODE_REASON}")
    return root, levels


def _default_types(untyped: list[Level], attached: bool) -> None:
    """hwloc_backend_synthetic_init's choice for bare arities: in priority a NUMA level (unless
    nodes are attached), a package, a core, up to four caches, then groups; placed in the order
    groups, package, NUMA, caches (L3, L2, L1d, L1i), core."""
    n = len(untyped)
    need_numa = int(n >= 1 and not attached)
    n -= need_numa
    need_pack = int(n >= 1)
    n -= need_pack
    need_core = int(n >= 1)
    n -= need_core
    need_caches = min(n, 4)
    groups = n - need_caches
    caches = {1: [("L2Cache", 2, 0)], 2: [("L2Cache", 2, 0), ("L1Cache", 1, 1)],
              3: [("L3Cache", 3, 0), ("L2Cache", 2, 0), ("L1Cache", 1, 1)],
              4: [("L3Cache", 3, 0), ("L2Cache", 2, 0), ("L1Cache", 1, 1), ("L1iCache", 1, 2)]}.get(need_caches, [])
    order: list[tuple[str, int, int]] = [("Group", 0, 0)] * groups
    order += [("Package", 0, 0)] * need_pack + [("NUMANode", 0, 0)] * need_numa + caches + [("Core", 0, 0)] * need_core
    for lv, (kind, depth, sort) in zip(untyped, order):
        lv.type, lv.cache_depth, lv.cache_type = kind, depth, sort


def _node_count(root: Level, levels: list[Level]) -> int:
    width, count = 1, len(root.attached)
    for lv in levels:
        width *= lv.arity
        count += width * len(lv.attached) + (width if lv.type == "NUMANode" else 0)
    return count or 1


# ---------------------------------------------------------------- to an hwloc object tree


def load_synthetic(name: str, memory_per_node_mib: int | None = None) -> Machine:
    """The machine of ``synthetic:<description>``."""
    from numalab.machine.hwloc_xml import load_tree

    description = name[len(PREFIX) :].strip() if name.startswith(PREFIX) else name.strip()
    root, levels = parse(description)
    tree = _Builder(root, levels, description).topology()
    return load_tree(Path(f"synthetic:{description}"), tree, memory_per_node_mib, memory_unknown_is_missing=True)


class _Builder:
    """Objects as hwloc's synthetic backend creates them: OS indexes in creation order (or the
    level's ``indexes=``), caches of hwloc's default sizes (L1 32 KiB, then 1, 4, 16 MiB)."""

    def __init__(self, root: Level, levels: list[Level], description: str) -> None:
        from numalab.machine.hwloc_xml import _El

        self.El = _El
        self.root, self.levels, self.description = root, levels, description
        self.counters: dict[str, int] = {}
        self.node_count = 0

    def next_index(self, level: Level) -> int:
        k = self.counters.get(level.type or "", 0)
        self.counters[level.type or ""] = k + 1
        return level.indexes[k] if level.indexes is not None else k

    def topology(self) -> Any:
        El = self.El
        top = El("topology", {"version": "2.0"}, 0)
        machine = El("object", {"type": "Machine", "os_index": "0"}, 0)
        top.children.append(machine)
        for key, value in (
            ("numalab.name", "synthetic"),
            ("numalab.description", f"hwloc synthetic topology '{self.description}'"),
        ):
            machine.children.append(El("info", {"name": key, "value": value}, 0))
        cpus = self.children(machine, 0)
        self.attach(machine, self.root, cpus)
        if not any(lv.type == "NUMANode" for lv in self.levels) and not any(
            lv.attached for lv in [self.root, *self.levels]
        ):
            # hwloc inserts one NUMA node below the Machine when the description has none.
            self.numanode(machine, cpus, self.root.memory)
        machine.attrib.update(self.sets(cpus))
        pus = [lv for lv in self.levels if lv.type == "PU"][0]
        if pus.indexes is not None and len(set(pus.indexes)) != len(pus.indexes):
            raise UsageError(f"synthetic description '{self.description}': indexes= of the PU level lists a PU twice")
        return top

    def children(self, parent: object, depth: int) -> set[int]:
        """Create ``levels[depth]``'s objects under ``parent``; returns the PUs below it."""
        level = self.levels[depth]
        out: set[int] = set()
        for _ in range(level.arity):
            if level.type == "PU":
                os_index = self.next_index(level)
                el = self.El("object", {"type": "PU", "os_index": str(os_index), **self.sets({os_index})}, 0)
                parent.children.append(el)  # type: ignore[attr-defined]
                out.add(os_index)
                continue
            attrs: dict[str, str] = {"type": "Group" if level.type == "NUMANode" else level.type or "Group"}
            if level.type in ("Package", "Core", "Die"):
                attrs["os_index"] = str(self.next_index(level))
            if (level.type or "").endswith("Cache"):
                size = level.size or (32 << 10 if level.cache_depth == 1 else (256 << 10) << (2 * level.cache_depth))
                attrs.update(cache_size=str(size), depth=str(level.cache_depth), cache_type=str(level.cache_type))
            el = self.El("object", attrs, 0)
            parent.children.append(el)  # type: ignore[attr-defined]
            cpus = self.children(el, depth + 1)
            el.attrib.update(self.sets(cpus))
            if level.type == "NUMANode":
                self.numanode(el, cpus, level.memory, level)
            self.attach(el, level, cpus)
            out |= cpus
        return out

    def attach(self, el: object, level: Level, cpus: set[int]) -> None:
        for memory in level.attached:
            self.numanode(el, cpus, memory)

    def numanode(self, parent: object, cpus: set[int], memory: int | None, level: Level | None = None) -> None:
        """A NUMANode memory child (listed first, as hwloc writes memory children), numbered in
        creation order or by its level's ``indexes=``."""
        k = self.node_count
        self.node_count += 1
        os_index = level.indexes[k] if level is not None and level.indexes is not None else k
        attrs = {"type": "NUMANode", "os_index": str(os_index), **self.sets(cpus)}
        if memory:
            attrs["local_memory"] = str(memory)
        parent.children.insert(0, self.El("object", attrs, 0))  # type: ignore[attr-defined]

    def sets(self, cpus: set[int]) -> dict[str, str]:
        from numalab.machine.hwloc_xml import Bits

        text = Bits(cpus)
        return {"cpuset": text, "complete_cpuset": text}
