"""hwloc v2 XML: numalab machines survive export + import unchanged; an lstopo-style file
(tests/fixtures/hwloc/2p-2n-l3.xml) imports with its distances, memattrs and estimates; broken
files give errors that name the file, the line and the element."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from numalab._core import Machine
from numalab.exceptions import TopologyError, UsageError
from numalab.machine import estimates as est
from numalab.machine.host import from_host
from numalab.machine.hwloc_xml import load_hwloc_xml, to_hwloc_xml

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
LSTOPO_XML = FIXTURES / "hwloc" / "2p-2n-l3.xml"
GIB = 1 << 30
LSTOPO = shutil.which("lstopo-no-graphics")
SLIT_VALUES = '<u64values length="12">10 21 21 10 </u64values>'
NODE1 = '<object type="NUMANode" os_index="1"'

# numactl --hardware of a 4-socket Opteron G34 machine (as tests/fixtures/sysfs/eight-node).
OPTERON_SLIT = [
    [10, 16, 16, 22, 16, 22, 16, 22],
    [16, 10, 16, 22, 22, 16, 22, 16],
    [16, 16, 10, 16, 16, 16, 16, 22],
    [22, 22, 16, 10, 16, 16, 22, 16],
    [16, 22, 16, 16, 10, 16, 16, 16],
    [22, 16, 16, 16, 16, 10, 22, 22],
    [16, 22, 16, 22, 16, 22, 10, 16],
    [22, 16, 22, 16, 16, 22, 16, 10],
]
HT_LINKS = [(0, 1), (0, 2), (1, 3), (2, 3), (0, 4), (1, 5), (2, 6), (3, 7), (4, 5), (4, 6), (5, 7), (6, 7)]


def eight_node_spec() -> dict[str, Any]:
    """Everything a machine can hold: two nodes per package, asymmetric links, a route override,
    a latency matrix and loaded curve of its own, notes and a non-default page size."""
    return {
        "name": "opteron-like",
        "description": 'four "G34" packages, two dies each — HyperTransport & <links>',
        "page_size_bytes": 65536,
        "topology": {"packages": 4, "nodes_per_package": 2, "cores_per_node": 8},
        "memory": {"node_gib": 16},
        "distances": OPTERON_SLIT,
        "latency": {
            "local_ns": 95.5,
            "matrix_ns": [[95.5 if d == 10 else 140.25 if d == 16 else 201.0 for d in row] for row in OPTERON_SLIT],
            "loaded_curve": [[0.0, 1.0], [0.5, 1.25], [0.9, 1.5], [1.0, 1.75]],
        },
        "bandwidth": {"node_gbps": [10.5, 10.5, 10.5, 10.5, 9.75, 9.75, 9.75, 9.75]},
        "links": [{"nodes": list(pair), "gbps": [12.8, 6.4]} for pair in HT_LINKS],
        "routes": [{"from": 0, "to": 7, "via": [4, 6]}],
        "core": {"frequency_ghz": 2.6, "mlp": 12},
        "notes": {"bandwidth.node_gbps": "STREAM triad, one thread per core", "latency.matrix_ns": "lmbench lat_mem_rd"},
    }


def cpuless_spec() -> dict[str, Any]:
    """Two sockets and a memory-only (CXL-like) node attached to package 0."""
    return {
        "name": "with-cxl",
        "nodes": [
            {"os_index": 0, "package": 0, "cpus": "0-3", "memory_bytes": 32 * GIB},
            {"os_index": 1, "package": 1, "cpus": "4-7", "memory_bytes": 32 * GIB},
            {"os_index": 2, "package": 0, "cpus": "", "memory_bytes": 64 * GIB, "bandwidth_gbps": 20.0},
        ],
        "cores": [{"cpus": str(c), "os_index": c % 4} for c in range(8)],
        "distances": [[10, 21, 14], [21, 10, 24], [14, 24, 10]],
        "latency": {"local_ns": 80},
        "bandwidth": {"node_gbps": 40},
        "core": {"frequency_ghz": 3.1, "mlp": 10},
    }


def round_trip(machine: Machine, tmp_path: Path) -> Machine:
    path = tmp_path / "machine.xml"
    path.write_text(to_hwloc_xml(machine))
    return load_hwloc_xml(path)


def explicit(machine: Machine) -> dict[str, Any]:
    return json.loads(machine.to_json())


def write(tmp_path: Path, text: str, name: str = "topo.xml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def fixture_variant(tmp_path: Path, old: str, new: str) -> Path:
    text = LSTOPO_XML.read_text()
    assert old in text
    return write(tmp_path, text.replace(old, new))


# ---------------------------------------------------------------- round trips


@pytest.mark.parametrize("tree", ["two-node", "eight-node", "host"])
def test_sysfs_machines_survive_a_round_trip(tree: str, tmp_path: Path) -> None:
    machine = from_host(FIXTURES / "sysfs" / tree)
    assert round_trip(machine, tmp_path) == machine


@pytest.mark.parametrize("spec", [eight_node_spec, cpuless_spec])
def test_spec_machines_survive_a_round_trip(spec: Any, tmp_path: Path) -> None:
    machine = Machine.from_spec_json(json.dumps(spec()))
    back = round_trip(machine, tmp_path)
    assert back == machine, _first_difference(explicit(machine), explicit(back))


def test_a_calibrated_machines_stream_mlp_and_add_latency_survive_a_round_trip(tmp_path: Path) -> None:
    """numalab calibrate writes core.stream_mlp, core.add_latency_ns, core.window_instructions and
    core.prefetch_lines (docs/calibrate.md): the
    export keeps them as numalab infos, and the import gives them back."""
    spec = eight_node_spec()
    spec["core"] = {**spec["core"], "stream_mlp": 37.3, "add_latency_ns": 0.653, "window_instructions": 497.0,
                    "prefetch_lines": 20.15}
    machine = Machine.from_spec_json(json.dumps(spec))
    text = to_hwloc_xml(machine)
    assert '<info name="numalab.core_stream_mlp" value="37.3"' in text
    assert '<info name="numalab.core_add_latency_ns" value="0.653"' in text
    assert '<info name="numalab.core_window_instructions" value="497.0"' in text
    back = round_trip(machine, tmp_path)
    assert back == machine, _first_difference(explicit(machine), explicit(back))
    assert {(c["stream_mlp"], c["add_latency_ns"], c["window_instructions"], c["prefetch_lines"])
            for c in explicit(back)["cores"]} == {(37.3, 0.653, 497.0, 20.15)}


def test_export_uses_hwloc_elements(tmp_path: Path) -> None:
    xml = to_hwloc_xml(Machine.from_spec_json(json.dumps(eight_node_spec())))
    assert xml.startswith('<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE topology SYSTEM "hwloc2.dtd">\n')
    assert '\n<topology version="2.0">\n' in xml
    assert xml.count('type="Package"') == 4 and xml.count('type="Group"') == 8
    assert xml.count('<object type="NUMANode"') == 8 and xml.count('<object type="PU"') == 64
    assert '<distances2 type="NUMANode" nbobjs="8" kind="5" name="NUMALatency" indexing="os">' in xml
    assert '<indexes length="16">0 1 2 3 4 5 6 7 </indexes>' in xml
    assert '<u64values length="30">10 16 16 22 16 22 16 22 16 10 </u64values>' in xml
    # 10.5 GB/s = 10013.58 MiB/s, from the node's own CPUs.
    assert 'value="10014" initiator_cpuset="0x000000ff"' in xml
    assert '<memattr name="Latency" flags="6">' in xml


def test_cpuless_nodes_get_their_parents_cpuset_as_hwloc_does() -> None:
    xml = to_hwloc_xml(Machine.from_spec_json(json.dumps(cpuless_spec())))
    assert '<object type="NUMANode" os_index="2" cpuset="0x0000000f"' in xml
    assert '<info name="numalab.cpuless_nodes" value="[2]"' in xml


def test_cores_with_different_mlp_cannot_be_exported() -> None:
    # Different frequencies export as hwloc cpukinds (test_hwloc_import_cases.py); MLP has no hwloc form.
    m = explicit(from_host(FIXTURES / "sysfs" / "two-node"))
    m["cores"][3]["mlp"] = 4.0
    with pytest.raises(UsageError, match="cores differ in mlp"):
        to_hwloc_xml(Machine.from_json(json.dumps(m)))


# ---------------------------------------------------------------- an lstopo file


def test_lstopo_file_topology() -> None:
    m = explicit(load_hwloc_xml(LSTOPO_XML))
    assert m["name"] == "2p-2n-l3"
    assert "Xeon(R) Silver 4110" in m["description"]
    assert [(p["os_index"], p["cpuset"]) for p in m["packages"]] == [(0, "0-1,4-5"), (1, "2-3,6-7")]
    assert [(n["os_index"], n["package"], n["cpuset"]) for n in m["nodes"]] == [(0, 0, "0-1,4-5"), (1, 1, "2-3,6-7")]
    assert [n["local_memory_bytes"] for n in m["nodes"]] == [8 * GIB, 8 * GIB]
    assert [(c["os_index"], c["cpuset"]) for c in m["cores"]] == [(0, "0,4"), (1, "1,5"), (0, "2,6"), (1, "3,7")]
    assert m["page_size_bytes"] == 4096  # the smallest page_type; the others are huge pages
    assert m["distances"] == [[10, 21], [21, 10]]


def test_lstopo_file_estimates_are_noted() -> None:
    m = explicit(load_hwloc_xml(LSTOPO_XML))
    assert {c["frequency_hz"] for c in m["cores"]} == {3.0e9}  # the cpukind's FrequencyMaxMHz
    assert "FrequencyMaxMHz" in m["notes"]["core.frequency_ghz"]
    for e in (est.LOCAL_LATENCY_NS, est.NODE_BANDWIDTH_GBPS, est.CORE_MLP, est.NO_LINKS):
        assert m["notes"][e.key] == e.note
    local = est.LOCAL_LATENCY_NS.value
    assert m["idle_latency_ns"][0] == [local, local * 21 / 10]


MEMATTRS = """  <memattr name="Bandwidth" flags="5">
    <memattr_value target_obj_type="NUMANode" target_obj_gp_index="3" value="19073" initiator_cpuset="0x00000033"/>
    <memattr_value target_obj_type="NUMANode" target_obj_gp_index="3" value="9000" initiator_cpuset="0x000000cc"/>
    <memattr_value target_obj_type="NUMANode" target_obj_gp_index="16" value="19073" initiator_cpuset="0x000000cc"/>
  </memattr>
  <memattr name="Latency" flags="6">
    <memattr_value target_obj_type="NUMANode" target_obj_gp_index="3" value="82" initiator_cpuset="0x00000033"/>
    <memattr_value target_obj_type="NUMANode" target_obj_gp_index="3" value="139" initiator_cpuset="0x000000cc"/>
    <memattr_value target_obj_type="NUMANode" target_obj_gp_index="16" value="141" initiator_cpuset="0x00000033"/>
    <memattr_value target_obj_type="NUMANode" target_obj_gp_index="16" value="83" initiator_cpuset="0x000000cc"/>
  </memattr>
  <cpukind"""


def test_memattrs_give_bandwidth_and_latency(tmp_path: Path) -> None:
    m = explicit(load_hwloc_xml(fixture_variant(tmp_path, "  <cpukind", MEMATTRS)))
    # MiB/s of the local initiator, not of the remote one.
    assert [n["bandwidth_gbps"] for n in m["nodes"]] == [19073 * 2**20 / 1e9] * 2
    assert m["idle_latency_ns"] == [[82.0, 141.0], [139.0, 83.0]]
    assert "bandwidth.node_gbps" not in m["notes"] and "latency.local_ns" not in m["notes"]


def test_an_edited_memattr_wins_over_the_exact_numalab_values(tmp_path: Path) -> None:
    machine = from_host(FIXTURES / "sysfs" / "two-node")
    xml = to_hwloc_xml(machine)
    assert xml.count('value="30518"') == 2  # 32 GB/s in MiB/s, once per node
    path = write(tmp_path, xml.replace('value="30518"', 'value="20000"', 1))
    m = explicit(load_hwloc_xml(path))
    assert [n["bandwidth_gbps"] for n in m["nodes"]] == [20000 * 2**20 / 1e9, 30518 * 2**20 / 1e9]


def test_distances_are_scaled_to_ten_on_the_diagonal(tmp_path: Path) -> None:
    path = fixture_variant(tmp_path, SLIT_VALUES, '<u64values length="16">100 210 210 100 </u64values>')
    m = explicit(load_hwloc_xml(path))
    assert m["distances"] == [[10, 21], [21, 10]]
    assert "scaled by 10/100" in m["notes"]["distances"]


def test_memory_nodes_sharing_cpus_leave_them_to_the_lowest_node(tmp_path: Path) -> None:
    hbm = (
        '<object type="NUMANode" os_index="2" cpuset="0x00000033" complete_cpuset="0x00000033" nodeset="0x00000004" '
        'complete_nodeset="0x00000004" gp_index="90" subtype="MCDRAM" local_memory="4294967296"/>\n'
        '      <object type="L3Cache"'
    )
    text = LSTOPO_XML.read_text().replace("<object type=\"L3Cache\"", hbm, 1)
    text = text.replace('nbobjs="2"', 'nbobjs="3"').replace(">0 1 </indexes>", ">0 1 2 </indexes>")
    text = text.replace(SLIT_VALUES, '<u64values length="27">10 21 17 21 10 28 17 28 10 </u64values>')
    m = explicit(load_hwloc_xml(write(tmp_path, text)))
    nodes = [(n["os_index"], n["package"], n["cpuset"]) for n in m["nodes"]]
    assert nodes == [(0, 0, "0-1,4-5"), (1, 1, "2-3,6-7"), (2, 0, "")]
    assert m["distances"][2] == [17, 28, 10]
    assert "shares CPUs" in m["notes"]["nodes.2.cpus"]


# ---------------------------------------------------------------- errors


def test_malformed_xml_gives_line_and_column(tmp_path: Path) -> None:
    text = '<?xml version="1.0"?>\n<topology version="2.0">\n  <object type="Machine">\n  </objet>\n</topology>\n'
    path = write(tmp_path, text)
    with pytest.raises(UsageError, match=rf"^{path}:4:5: malformed XML: mismatched tag$"):
        load_hwloc_xml(path)


def test_a_file_without_numanode_is_rejected(tmp_path: Path) -> None:
    text = LSTOPO_XML.read_text()
    while '<object type="NUMANode"' in text:
        start = text.index('<object type="NUMANode"')
        text = text[:start] + text[text.index("</object>", start) + len("</object>") :]
    path = write(tmp_path, text.replace("<distances2", "<ignored").replace("</distances2>", "</ignored>"))
    with pytest.raises(UsageError, match=rf"^{path}:3: no NUMANode object"):
        load_hwloc_xml(path)


def test_distances2_with_the_wrong_value_count(tmp_path: Path) -> None:
    path = fixture_variant(tmp_path, "10 21 21 10 </u64values>", "10 21 21 </u64values>")
    line = next(k for k, text in enumerate(path.read_text().splitlines(), 1) if "<distances2" in text)
    where = rf"^{path}:{line}: distances2\[type=NUMANode, name=NUMALatency\]"
    with pytest.raises(UsageError, match=rf"{where}: has 3 values for nbobjs=2 \(expected 4\)"):
        load_hwloc_xml(path)


def test_an_unknown_object_type_names_the_element(tmp_path: Path) -> None:
    path = fixture_variant(tmp_path, '<object type="Core" os_index="1"', '<object type="Widget" os_index="1"')
    with pytest.raises(UsageError, match=r"topo\.xml:\d+: object\[type=Widget, os_index=1\]: unknown object type 'Widget'"):
        load_hwloc_xml(path)


def test_a_bad_cpuset_names_the_node(tmp_path: Path) -> None:
    path = fixture_variant(tmp_path, NODE1 + ' cpuset="0x000000cc"', NODE1 + ' cpuset="0xzz"')
    with pytest.raises(UsageError, match=r"object\[type=NUMANode, os_index=1\]: cpuset: bad bitmap word '0xzz'"):
        load_hwloc_xml(path)


def test_a_pu_outside_every_node_is_rejected(tmp_path: Path) -> None:
    path = fixture_variant(tmp_path, NODE1 + ' cpuset="0x000000cc"', NODE1 + ' cpuset="0x00000044"')
    with pytest.raises(UsageError, match=r"object\[type=PU, os_index=3\]: PU 3 is in no NUMANode's cpuset"):
        load_hwloc_xml(path)


def test_a_file_that_is_not_a_topology(tmp_path: Path) -> None:
    path = write(tmp_path, "<?xml version='1.0'?>\n<svg/>\n")
    with pytest.raises(UsageError, match=r"<svg> is not an hwloc topology"):
        load_hwloc_xml(path)


def test_model_errors_name_the_file(tmp_path: Path) -> None:
    path = fixture_variant(tmp_path, "10 21 21 10 </u64values>", "10 21 9 10 </u64values>")
    with pytest.raises(TopologyError) as e:
        load_hwloc_xml(path)
    line = next(k for k, text in enumerate(path.read_text().splitlines(), 1) if "<distances2" in text)
    assert e.value.args[0].startswith(f"{path}:{line}: distances[1][0]: remote distance must be between 11 and 254, got 9")


def test_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"nothere\.xml: cannot read"):
        load_hwloc_xml(tmp_path / "nothere.xml")


# ---------------------------------------------------------------- with hwloc itself


@pytest.mark.skipif(LSTOPO is None, reason="hwloc's lstopo-no-graphics is not installed")
def test_lstopo_reads_our_export_and_its_reexport_comes_back(tmp_path: Path) -> None:
    machine = Machine.from_spec_json(json.dumps(eight_node_spec()))
    ours = write(tmp_path, to_hwloc_xml(machine), "ours.xml")
    console = subprocess.run([LSTOPO, "-i", str(ours), "--distances"], check=True, capture_output=True, text=True)
    assert "NUMALatency" in console.stdout
    theirs = tmp_path / "theirs.xml"
    subprocess.run([LSTOPO, "-i", str(ours), "--of", "xml", str(theirs)], check=True)
    back = explicit(load_hwloc_xml(theirs))
    expected = explicit(machine)
    # hwloc keeps only ASCII in the strings it re-exports.
    assert back.pop("description") == expected.pop("description").replace("—", "")
    assert back == expected


def _first_difference(a: dict[str, Any], b: dict[str, Any]) -> str:
    for key in a:
        if a[key] != b.get(key):
            return f"{key}: {str(a[key])[:300]} != {str(b.get(key))[:300]}"
    return "no difference"


def test_lstopo_cache_objects_become_the_machines_caches() -> None:
    # 2p-2n-l3.xml: per package an 11 MiB L3 over 4 PUs and a 1 MiB L2 per core (2 PUs); L1 skipped.
    m = json.loads(load_hwloc_xml(LSTOPO_XML).to_json())
    l3 = [(c["size_bytes"], c["cpuset"]) for c in m["caches"] if c["level"] == 3]
    l2 = [c["cpuset"] for c in m["caches"] if c["level"] == 2]
    assert l3 == [(11534336, "0-1,4-5"), (11534336, "2-3,6-7")]
    assert sorted(l2) == ["0,4", "1,5", "2,6", "3,7"]


def test_preset_caches_survive_export_and_import(tmp_path: Path) -> None:
    from numalab.machine import load

    m = load("epyc9654-2s-nps4")
    path = tmp_path / "epyc.xml"
    path.write_text(to_hwloc_xml(m))
    back = json.loads(load_hwloc_xml(path).to_json())
    assert back["caches"] == json.loads(m.to_json())["caches"]
    assert len([c for c in back["caches"] if c["level"] == 3]) == 24  # one L3 per 8-core CCX
