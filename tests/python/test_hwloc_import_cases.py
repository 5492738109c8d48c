"""What hwloc writes, imported as a process on that machine sees it: hwloc XML v1, v2 and v3,
restricted (cgroup) topologies, offline PUs, memoryless and CPU-less nodes, PUs without a local
node, missing memory sizes, memory subtypes, firmware memattrs, hybrid cpukinds; hwloc synthetic
descriptions; the round trip through hwloc's own lstopo. Each case is a small file written here."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from numalab.exceptions import UsageError
from numalab.machine import load, preset_names
from numalab.machine.hwloc_xml import load_hwloc_xml, to_hwloc_xml
from numalab.machine.synthetic import parse

GIB = 1 << 30
LSTOPO = shutil.which("lstopo-no-graphics") or shutil.which("lstopo")
needs_lstopo = pytest.mark.skipif(LSTOPO is None, reason="hwloc's lstopo is not installed (CI installs hwloc-nox)")


def mask(*cpus: int) -> str:
    value = sum(1 << c for c in cpus)
    return f"0x{value:08x}"


def pu(k: int, node: str = "") -> str:
    nodeset = f' nodeset="{node}" complete_nodeset="{node}"' if node else ""
    return f'<object type="PU" os_index="{k}" cpuset="{mask(k)}" complete_cpuset="{mask(k)}"{nodeset}/>'


def core(k: int, cpus: list[int], node: str = "") -> str:
    return f'<object type="Core" os_index="{k}" cpuset="{mask(*cpus)}">' + "".join(pu(c, node) for c in cpus) + "</object>"


def numa(k: int, cpus: list[int], memory: int | None = 8 * GIB, gp: int | None = None, subtype: str = "") -> str:
    attrs = f'type="NUMANode" os_index="{k}" cpuset="{mask(*cpus)}" nodeset="{mask(k)}"'
    attrs += f' gp_index="{gp}"' if gp is not None else ""
    attrs += f' subtype="{subtype}"' if subtype else ""
    attrs += f' local_memory="{memory}"' if memory is not None else ""
    return f"<object {attrs}/>"


def topology(machine_attrs: str, body: str, tail: str = "", version: str = "2.0") -> str:
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE topology SYSTEM "hwloc2.dtd">\n'
        f'<topology version="{version}">\n<object type="Machine" os_index="0" {machine_attrs}>\n{body}\n</object>\n{tail}</topology>\n'
    )


def two_packages(node1_memory: int | None = 8 * GIB, node_pus: str = "") -> str:
    """2 packages x 1 node x 2 cores x 1 PU: CPUs 0-1 on node 0, 2-3 on node 1."""
    return (
        f'<object type="Package" os_index="0" cpuset="{mask(0, 1)}" nodeset="0x1">{numa(0, [0, 1], gp=10)}'
        f"{core(0, [0], node_pus)}{core(1, [1], node_pus)}</object>"
        f'<object type="Package" os_index="1" cpuset="{mask(2, 3)}" nodeset="0x2">{numa(1, [2, 3], node1_memory, gp=11)}'
        f"{core(0, [2], node_pus)}{core(1, [3], node_pus)}</object>"
    )


def write(tmp_path: Path, text: str, name: str = "t.xml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def doc(path: Path | str, **kw: Any) -> dict[str, Any]:
    machine = load_hwloc_xml(Path(path), **kw) if isinstance(path, Path) else load(path)
    return json.loads(machine.to_json())


def nodes(m: dict[str, Any]) -> list[tuple[int, str, int]]:
    return [(n["os_index"], n["cpuset"], n["local_memory_bytes"]) for n in m["nodes"]]


ALL4 = f'cpuset="{mask(0, 1, 2, 3)}" complete_cpuset="{mask(0, 1, 2, 3)}" nodeset="0x3" complete_nodeset="0x3"'


# ---------------------------------------------------------------- versions


def test_v1_file_with_numanodes_above_sockets_and_online_cpuset(tmp_path: Path) -> None:
    # hwloc 1.x: no version attribute, Socket type, NUMANodes holding the Sockets, online_cpuset.
    v1 = (
        '<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE topology SYSTEM "hwloc.dtd">\n<topology>\n'
        f'<object type="Machine" os_index="0" cpuset="{mask(0, 1, 2)}" complete_cpuset="{mask(0, 1, 2, 3)}" '
        f'online_cpuset="{mask(0, 1, 2)}" allowed_cpuset="{mask(0, 1, 2, 3)}" nodeset="0x3" complete_nodeset="0x3" allowed_nodeset="0x3">'
        f'<object type="NUMANode" os_index="0" cpuset="{mask(0, 1)}" local_memory="{4 * GIB}">'
        f'<object type="Socket" os_index="0" cpuset="{mask(0, 1)}"><object type="Cache" cpuset="{mask(0, 1)}" '
        f'cache_size="{8 << 20}" depth="3" cache_type="0">{core(0, [0])}{core(1, [1])}</object></object></object>'
        f'<object type="NUMANode" os_index="1" cpuset="{mask(2)}" local_memory="{4 * GIB}">'
        f'<object type="Socket" os_index="1" cpuset="{mask(2)}">{core(0, [2])}</object></object>'
        "</object>\n</topology>\n"
    )
    m = doc(write(tmp_path, v1))
    assert nodes(m) == [(0, "0-1", 4 * GIB), (1, "2", 4 * GIB)]
    assert [p["os_index"] for p in m["packages"]] == [0, 1]
    assert "CPUs 3 are offline" in m["notes"]["cpus.offline"]
    assert [(c["level"], c["size_bytes"], c["cpuset"]) for c in m["caches"]] == [(3, 8 << 20, "0-1")]  # v1 "Cache"


def test_v3_file_with_id_attributes_and_memattrs(tmp_path: Path) -> None:
    # hwloc 3.x writes id="objN" beside (or instead of) gp_index; memattrs still name gp indexes.
    body = two_packages().replace('gp_index="10"', 'id="obj10"').replace('gp_index="11"', 'id="obj11"')
    tail = (
        '<memattr name="Bandwidth" flags="5">'
        f'<memattr_value target_obj_type="NUMANode" target_obj_gp_index="10" value="20000" initiator_cpuset="{mask(0, 1)}"/>'
        "</memattr>\n"
    )
    m = doc(write(tmp_path, topology(ALL4, body, tail, version="3.0")))
    assert nodes(m) == [(0, "0-1", 8 * GIB), (1, "2-3", 8 * GIB)]
    assert m["nodes"][0]["bandwidth_gbps"] == 20000 * 2**20 / 1e9
    assert "ACPI HMAT" in m["notes"]["bandwidth.firmware"]


# ---------------------------------------------------------------- restricted, offline


def test_restricted_topology_is_seen_from_inside_the_cgroup(tmp_path: Path) -> None:
    # cpuset.cpus = 1-3, cpuset.mems = 1 (lstopo --whole-system keeps the disallowed objects).
    attrs = (
        f'cpuset="{mask(0, 1, 2, 3)}" complete_cpuset="{mask(0, 1, 2, 3)}" allowed_cpuset="{mask(1, 2, 3)}" '
        'nodeset="0x3" complete_nodeset="0x3" allowed_nodeset="0x2"'
    )
    m = doc(write(tmp_path, topology(attrs, two_packages())))
    # Node 0 is not allowed but CPU 1 is: it stays, memoryless, so CPU 1 allocates on node 1.
    assert nodes(m) == [(0, "1", 0), (1, "2-3", 8 * GIB)]
    assert [p["os_index"] for p in m["pus"]] == [1, 2, 3]
    assert "CPUs 0 are outside the file's allowed_cpuset" in m["notes"]["cpus.disallowed"]
    assert "nodes 0 are outside the allowed nodeset" in m["notes"]["disallowed.memory"]


def test_a_slit_naming_disallowed_nodes_still_gives_the_distances_of_the_others(tmp_path: Path) -> None:
    # lstopo --whole-system: node 2 (no CPUs) is outside cpuset.mems; the SLIT still names it.
    body = two_packages().replace("</object>" + '<object type="Package" os_index="1"',
                                  f"{numa(2, [0, 1], gp=12)}</object>" + '<object type="Package" os_index="1"')
    tail = (
        '<distances2 type="NUMANode" nbobjs="3" kind="5" name="NUMALatency" indexing="os">'
        '<indexes length="6">0 1 2 </indexes><u64values length="27">10 21 17 21 10 28 17 28 10 </u64values></distances2>\n'
    )
    attrs = ALL4.replace('nodeset="0x3" complete_nodeset="0x3"', 'nodeset="0x7" complete_nodeset="0x7" allowed_nodeset="0x3"')
    m = doc(write(tmp_path, topology(attrs, body, tail)))
    assert nodes(m) == [(0, "0-1", 8 * GIB), (1, "2-3", 8 * GIB)]
    assert m["distances"] == [[10, 21], [21, 10]]
    assert "nodes 2 are outside the file's allowed_nodeset" in m["notes"]["disallowed.nodes"]


def test_restricted_export_without_the_disallowed_node(tmp_path: Path) -> None:
    # What lstopo writes inside such a cgroup: node 0 absent, its allowed PU with nodeset 0x0
    # but complete_nodeset 0x1 (as in hwloc's tests/hwloc/linux/allowed/test1.xml).
    body = (
        f'<object type="Package" os_index="0" cpuset="{mask(1)}" nodeset="0x0" complete_nodeset="0x1">'
        f'<object type="Core" os_index="1" cpuset="{mask(1)}"><object type="PU" os_index="1" cpuset="{mask(1)}" '
        'nodeset="0x0" complete_nodeset="0x1"/></object></object>'
        f'<object type="Package" os_index="1" cpuset="{mask(2, 3)}">{numa(1, [2, 3])}{core(0, [2])}{core(1, [3])}</object>'
    )
    attrs = (
        f'cpuset="{mask(1, 2, 3)}" complete_cpuset="{mask(0, 1, 2, 3)}" allowed_cpuset="{mask(1, 2, 3)}" '
        'nodeset="0x2" complete_nodeset="0x3" allowed_nodeset="0x2"'
    )
    m = doc(write(tmp_path, topology(attrs, body)))
    assert nodes(m) == [(0, "1", 0), (1, "2-3", 8 * GIB)]
    assert m["distances"] == [[10, 20], [20, 10]]
    assert "CPUs 0 are in the file's complete_cpuset only" in m["notes"]["cpus.absent"]


def test_offline_pus_are_left_out(tmp_path: Path) -> None:
    attrs = f'cpuset="{mask(0, 1, 2, 3)}" complete_cpuset="0x000000ff" nodeset="0x3" complete_nodeset="0x3"'
    m = doc(write(tmp_path, topology(attrs, two_packages())))
    assert len(m["pus"]) == 4
    assert "CPUs 4-7" in m["notes"]["cpus.absent"]


# ---------------------------------------------------------------- memory


def test_memoryless_node_keeps_its_cpus_and_validates(tmp_path: Path, cli: Any) -> None:
    path = write(tmp_path, topology(ALL4, two_packages(node1_memory=None)))
    m = doc(path)
    assert nodes(m) == [(0, "0-1", 8 * GIB), (1, "2-3", 0)]
    assert "memoryless" in m["notes"]["nodes.memoryless"]
    code, out, err = cli("topo", "--input", str(path))
    assert code == 0, err
    assert "node 1 cpus: 2 3\nnode 1 size: 0 MB\n" in out
    assert "note: nodes.memoryless: nodes 1 have no local_memory" in out


def test_missing_memory_sizes_get_an_estimate_and_one_warning(tmp_path: Path, capsys: Any) -> None:
    body = two_packages().replace(f' local_memory="{8 * GIB}"', "")
    path = write(tmp_path, topology(ALL4, body))
    m = doc(path)
    assert nodes(m) == [(0, "0-1", 8 * GIB), (1, "2-3", 8 * GIB)]  # 4 GiB per core, 2 cores each
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"numalab: warning: {path}: no memory size for nodes 0-1")
    assert "--memory-per-node-mib" in err
    assert m["notes"]["memory.node_gib"].startswith("nodes 0-1: estimate: 4 GiB per core")
    given = doc(f"{path}?memory-per-node-mib=1024")
    assert nodes(given) == [(0, "0-1", 1 << 30), (1, "2-3", 1 << 30)]
    assert capsys.readouterr().err == ""


def test_memory_per_node_option_on_the_command_line(tmp_path: Path, cli: Any) -> None:
    body = two_packages().replace(f' local_memory="{8 * GIB}"', "")
    path = write(tmp_path, topology(ALL4, body))
    code, out, err = cli("topo", "--input", str(path), "--memory-per-node-mib", "2048", "-H")
    assert code == 0 and err == ""
    assert "node 0 size: 2048 MB" in out
    code, _, err = cli("topo", "--machine", "e5-2620v4-2s", "--memory-per-node-mib", "2048")
    assert code == 2 and "applies to hwloc XML files and synthetic descriptions" in err


def test_memory_subtypes_and_cpuless_hbm_nodes(tmp_path: Path) -> None:
    # Xeon Max flat mode: an HBM node with the same locality (cpuset) as the DRAM node.
    body = (
        f'<object type="Package" os_index="0" cpuset="{mask(0, 1)}">{numa(0, [0, 1], gp=10, subtype="HBM")}'
        f"{numa(1, [0, 1], 16 * GIB, gp=11, subtype='DRAM')}{core(0, [0])}{core(1, [1])}</object>"
    )
    tail = (
        '<memattr name="ReadBandwidth" flags="5">'
        f'<memattr_value target_obj_type="NUMANode" target_obj_gp_index="10" value="400000" initiator_cpuset="{mask(0, 1)}"/>'
        f'<memattr_value target_obj_type="NUMANode" target_obj_gp_index="11" value="100000" initiator_cpuset="{mask(0, 1)}"/>'
        "</memattr>\n"
    )
    attrs = f'cpuset="{mask(0, 1)}" complete_cpuset="{mask(0, 1)}" nodeset="0x3" complete_nodeset="0x3"'
    m = doc(write(tmp_path, topology(attrs, body, tail)))
    # The CPUs go to the DRAM node even though the HBM node has the lower OS index.
    assert nodes(m) == [(0, "", 8 * GIB), (1, "0-1", 16 * GIB)]
    assert [n.get("subtype") for n in m["nodes"]] == ["HBM", "DRAM"]
    assert [round(n["bandwidth_gbps"], 1) for n in m["nodes"]] == [419.4, 104.9]
    assert "ReadBandwidth memattr" in m["notes"]["bandwidth.firmware"]


def test_latency_memattrs_for_some_pairs_fill_the_matrix(tmp_path: Path, cli: Any) -> None:
    tail = (
        '<memattr name="Latency" flags="6">'
        f'<memattr_value target_obj_type="NUMANode" target_obj_gp_index="10" value="80" initiator_cpuset="{mask(0, 1)}"/>'
        f'<memattr_value target_obj_type="NUMANode" target_obj_gp_index="11" value="150" initiator_cpuset="{mask(0, 1)}"/>'
        "</memattr>\n"
    )
    path = write(tmp_path, topology(ALL4, two_packages(), tail))
    m = doc(path)
    assert m["idle_latency_ns"] == [[80.0, 150.0], [160.0, 80.0]]  # the missing row: 80 x 20 / 10
    assert "2 of the 4" in m["notes"]["latency.firmware"]
    code, out, _ = cli("topo", "--input", str(path))
    assert code == 0 and "note: latency.firmware: measured by the firmware" in out


# ---------------------------------------------------------------- CPUs without a node, cpukinds


def test_pus_without_a_local_node_go_to_the_nearest_one(tmp_path: Path) -> None:
    # hwloc's tests/hwloc/linux/fakeheterocpunuma: cores whose nodeset is empty.
    body = two_packages().replace(core(1, [3]), f'<object type="Core" os_index="1" cpuset="{mask(3)}">'
                                  f'<object type="PU" os_index="3" cpuset="{mask(3)}" nodeset="0x0" complete_nodeset="0x0"/></object>')
    body = body.replace(numa(1, [2, 3], gp=11), numa(1, [2], gp=11))
    m = doc(write(tmp_path, topology(ALL4, body)))
    assert nodes(m) == [(0, "0-1", 8 * GIB), (1, "2-3", 8 * GIB)]
    assert "CPUs 3 have no local NUMA node" in m["notes"]["nodes.1.cpus"]


def test_a_pu_whose_nodeset_names_a_node_that_does_not_hold_it_is_refused(tmp_path: Path) -> None:
    body = two_packages(node_pus="0x2").replace(numa(1, [2, 3], gp=11), numa(1, [2], gp=11))
    path = write(tmp_path, topology(ALL4, body))
    with pytest.raises(UsageError, match=r"PU 3 is in no NUMANode's cpuset \(its nodeset names node 1\)"):
        load_hwloc_xml(path)


HYBRID_TAIL = (
    f'<cpukind cpuset="{mask(2, 3)}" forced_efficiency="0"><info name="CoreType" value="IntelAtom"/></cpukind>'
    f'<cpukind cpuset="{mask(0, 1)}" forced_efficiency="1"><info name="CoreType" value="IntelCore"/>'
    '<info name="FrequencyMaxMHz" value="5000"/></cpukind>\n'
)


def test_cpukinds_give_each_core_its_frequency(tmp_path: Path) -> None:
    m = doc(write(tmp_path, topology(ALL4, two_packages(), HYBRID_TAIL)))
    assert [c["frequency_hz"] for c in m["cores"]] == [5e9, 5e9, 3.75e9, 3.75e9]  # E-cores at 0.75 x
    assert "IntelAtom" in m["notes"]["core.frequency_ghz"]


def test_hybrid_machines_survive_export_and_import(tmp_path: Path) -> None:
    machine = load_hwloc_xml(write(tmp_path, topology(ALL4, two_packages(), HYBRID_TAIL)))
    xml = to_hwloc_xml(machine)
    assert '<info name="FrequencyMaxMHz" value="3750"' in xml
    assert load_hwloc_xml(write(tmp_path, xml, "back.xml")) == machine


# ---------------------------------------------------------------- synthetic


def test_synthetic_description_is_a_machine() -> None:
    m = doc("synthetic:pack:2 numa:2 core:8 pu:2?memory-per-node-mib=4096")
    assert len(m["nodes"]) == 4 and len(m["cores"]) == 32 and len(m["pus"]) == 64
    assert [(n["os_index"], n["package"], n["cpuset"]) for n in m["nodes"]][:2] == [(0, 0, "0-15"), (1, 0, "16-31")]
    assert {n["local_memory_bytes"] for n in m["nodes"]} == {4 << 30}
    assert m["notes"]["latency.local_ns"].startswith("estimate:")
    assert m["notes"]["bandwidth.node_gbps"].startswith("estimate:")


def test_synthetic_grammar_abbreviations_attributes_and_default_types() -> None:
    # hwloc's equivalence (doc/hwloc.doxy): "2 3 4 5 6" is "Package:2 NUMANode:3 L2Cache:4 Core:5 PU:6".
    _, bare = parse("2 3 4 5 6")
    assert [lv.type for lv in bare] == ["Package", "NUMANode", "L2Cache", "Core", "PU"]
    m = doc("synthetic:Socket:1 NUMANode:2(memory=3GiB) L3Cache:1(size=16MiB) co:2 PU:1")
    assert [n["local_memory_bytes"] for n in m["nodes"]] == [3 << 30] * 2
    assert [c["size_bytes"] for c in m["caches"] if c["level"] == 3] == [16 << 20] * 2
    knl = doc("synthetic:package:1 group:2 [numa(memory=1GB)] [numa(memory=16GB)] core:2 pu:4")
    assert nodes(knl) == [(0, "0-7", 10**9), (1, "", 16 * 10**9), (2, "8-15", 10**9), (3, "", 16 * 10**9)]


@pytest.mark.parametrize(
    ("text", "column", "what"),
    [
        ("pack:2 nuam:2 core:8 pu:2", 8, "unknown object type 'nuam'"),
        ("pack:2 core:x pu:2", 13, "expected a number of objects"),
        ("pack:0 pu:2", 6, "0 objects"),
        ("pack:2 core:8", 8, "the last level must be PUs"),
        ("pack:2 8 pu:2", 8, "cannot be mixed"),
        ("numa:2(memory=2XB) pu:2", 15, "bad size '2XB'"),
        ("numa:2(colour=red) pu:2", 8, "unknown attribute 'colour'"),
        ("pack:2 [core] pu:2", 8, "only NUMA nodes can be attached"),
        ("machine:2 pu:2", 1, "the Machine is the implicit root"),
    ],
)
def test_bad_synthetic_descriptions_name_the_column(text: str, column: int, what: str) -> None:
    with pytest.raises(UsageError, match=rf"synthetic description '{_re(text)}', column {column}: .*{_re(what)}"):
        load("synthetic:" + text)


def test_synthetic_machine_on_the_command_line(cli: Any) -> None:
    code, out, err = cli("topo", "--machine", "synthetic:pack:2 core:2 pu:2", "-H", "--memory-per-node-mib", "1024")
    assert code == 0, err
    assert out.startswith("available: 1 nodes (0)\nnode 0 cpus: 0 1 2 3 4 5 6 7\nnode 0 size: 1024 MB\n")
    code, _, err = cli("topo", "--machine", "synthetic:pack:2 cre:2 pu:2")
    assert code == 2 and err.startswith("numalab: synthetic description 'pack:2 cre:2 pu:2', column 8: unknown object type 'cre'")


def _re(text: str) -> str:
    import re

    return re.escape(text)


# ---------------------------------------------------------------- with hwloc's lstopo


@needs_lstopo
def test_lstopo_reads_our_export_and_we_read_its_export_back(tmp_path: Path) -> None:
    attrs = f'cpuset="{mask(0, 1)}" complete_cpuset="{mask(0, 1)}" nodeset="0x3" complete_nodeset="0x3"'
    hbm = (
        f'<object type="Package" os_index="0" cpuset="{mask(0, 1)}">{numa(0, [0, 1], gp=10)}'
        f"{numa(1, [0, 1], 2 * GIB, gp=11, subtype='HBM')}{core(0, [0])}{core(1, [1])}</object>"
    )
    for name, text in (("hbm", topology(attrs, hbm)), ("memoryless", topology(ALL4, two_packages(node1_memory=None))),
                       ("hybrid", topology(ALL4, two_packages(), HYBRID_TAIL))):
        machine = load_hwloc_xml(write(tmp_path, text, f"{name}.xml"))
        ours = write(tmp_path, to_hwloc_xml(machine), f"{name}-ours.xml")
        theirs = tmp_path / f"{name}-theirs.xml"
        subprocess.run([LSTOPO, "-i", str(ours), "--of", "xml", "-f", str(theirs)], check=True, capture_output=True)
        assert load_hwloc_xml(theirs) == machine, name


@needs_lstopo
@pytest.mark.parametrize("name", preset_names())
def test_every_preset_survives_lstopo(name: str, tmp_path: Path) -> None:
    machine = load(name)
    ours = write(tmp_path, to_hwloc_xml(machine), "ours.xml")
    theirs = tmp_path / "theirs.xml"
    run = subprocess.run([LSTOPO, "-i", str(ours), "--of", "xml", "-f", str(theirs)], capture_output=True, text=True)
    assert run.returncode == 0 and run.stderr == "", run.stderr
    assert load_hwloc_xml(theirs) == machine


@needs_lstopo
@pytest.mark.parametrize(
    "text",
    [
        "pack:2 numa:2 core:3 pu:2",
        "2 3 4 5 6",
        "package:1 group:4 [numa] [numa] core:4 pu:2",
        "numa:2 pack:2 core:2 pu:1",
        "Socket:2 Group:2 NUMANode:1 L2Cache:2 Core:1 PU:2",
        "pack:2 [numa(memory=1GB)] die:2 core:2 pu:1",
        "node:2(memory=2GiB) core:2 pu:2(indexes=0,2,4,6,1,3,5,7)",
        "pack:2 numa:2(indexes=3,2,1,0) pu:1",
    ],
)
def test_lstopo_builds_the_same_synthetic_topology(text: str, tmp_path: Path) -> None:
    theirs = tmp_path / "synthetic.xml"
    subprocess.run([LSTOPO, "-i", text, "--of", "xml", "-f", str(theirs)], check=True, capture_output=True)
    a, b = doc(theirs), doc(f"synthetic:{text}")

    def shape(m: dict[str, Any]) -> tuple[Any, ...]:
        return (
            [(n["os_index"], n["cpuset"], n["package"]) for n in m["nodes"]],
            [c["cpuset"] for c in m["cores"]],
            sorted((c["level"], c["size_bytes"], c["cpuset"]) for c in m["caches"]),
        )

    assert shape(a) == shape(b)
