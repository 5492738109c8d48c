"""`numalab topo`: numactl --hardware layout (byte for byte), lstopo tree, JSON, presets, hwloc XML, bad input."""

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from numalab.machine import load, preset_names
from numalab.machine.hwloc_export import topology_element
from numalab.machine.render import lstopo_tree, numactl_hardware


def test_opteron_json_has_8_nodes_64_pus_and_8x8_distances(cli):
    code, out, _ = cli("topo", "--machine", "opteron6282-4p", "--json")
    assert code == 0
    m = json.loads(out)
    assert len(m["nodes"]) == 8 and len(m["pus"]) == 64
    assert len(m["distances"]) == 8 and all(len(r) == 8 for r in m["distances"])


def test_numactl_hardware_layout(cli, golden):
    code, out, _ = cli("topo", "--machine", "e5-2620v4-2s")
    assert code == 0
    assert "available: 2 nodes (0-1)" in out
    assert "node 0 cpus: 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23" in out
    # numactl.c print_distances(): "node " + "% 3d " per column, "% 3d: " + "% 3d " per row.
    assert "node distances:\nnode   0   1 \n  0:  10  21 \n  1:  21  10 \n" in out
    golden("topo_e5-2620v4-2s.out", out)


def test_host_works_on_this_machine(cli):
    code, out, _ = cli("topo", "--host")
    assert code == 0
    assert out.splitlines()[1].startswith("available: ")


def test_list_names_every_preset_with_a_description(cli):
    code, out, _ = cli("topo", "--list")
    assert code == 0
    names = [line.split()[0] for line in out.splitlines()]
    for n in ("opteron6282-4p", "numa16", "numa32", "e5-2620v4-2s", "e5620-2s", "e5-2420-2s", "e5-4617-8s", "vm-4", "vm-8"):
        assert n in names
    assert all(len(line.split(None, 1)) == 2 for line in out.splitlines())


def test_export_xml_reimports_identically(cli, tmp_path):
    xml = tmp_path / "opteron.xml"
    code, _, _ = cli("topo", "--machine", "opteron6282-4p", "--export-xml", str(xml))
    assert code == 0
    assert load(str(xml)) == load("opteron6282-4p")
    code, out, _ = cli("topo", "--input", str(xml), "--json")
    assert code == 0 and len(json.loads(out)["nodes"]) == 8


def test_unknown_preset_suggests_close_names(cli):
    code, out, err = cli("topo", "--machine", "opteron6282")
    assert code == 2 and out == ""
    assert err.startswith("numalab: unknown machine preset 'opteron6282' (") and err.endswith("; did you mean opteron6282-4p?\n")
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_malformed_toml_names_file_and_line(cli, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\n[topology\npackages = 1\n')
    code, _, err = cli("topo", "--machine", str(bad))
    assert code == 2
    assert err.startswith(f"numalab: {bad}:2:") and "malformed TOML" in err


def _spec(distances: str) -> str:
    return f"""name = "t"
description = "test"
distances = {distances}
[topology]
packages = 2
nodes_per_package = 1
cores_per_node = 2
[memory]
node_gib = 1
[latency]
local_ns = 80
[bandwidth]
node_gbps = 10
[core]
frequency_ghz = 2.0
mlp = 10
"""


def test_distances_not_square_or_bad_diagonal(cli, tmp_path):
    f = tmp_path / "t.toml"
    f.write_text(_spec("[[10, 21], [21]]"))
    code, _, err = cli("topo", "--machine", str(f))
    assert code == 2 and "distances[1]" in err and "square" in err and f"{f}:3" in err
    f.write_text(_spec("[[10, 21], [21, 12]]"))
    code, _, err = cli("topo", "--machine", str(f))
    assert code == 2 and "diagonal must be 10" in err


def test_pu_on_two_nodes_is_an_error(cli, tmp_path):
    f = tmp_path / "t.toml"
    text = _spec("[[10, 21], [21, 10]]").replace(
        "[topology]\npackages = 2\nnodes_per_package = 1\ncores_per_node = 2\n",
        '[[nodes]]\nos_index = 0\ncpus = "0-1"\n[[nodes]]\nos_index = 1\npackage = 1\ncpus = "1-2"\n',
    )
    f.write_text(text)
    code, _, err = cli("topo", "--machine", str(f))
    assert code == 2 and "PU 1" in err and "node 0" in err and "node 1" in err


def test_debug_shows_the_traceback(cli):
    code, _, err = cli("--debug", "topo", "--machine", "nosuch")
    assert code == 2 and "Traceback" in err


# ---------------------------------------------------------------- numactl -H, lstopo, JSON


NUMACTL = shutil.which("numactl")


def test_hardware_flag_prints_the_numactl_block_alone(cli):
    code, out, _ = cli("topo", "--machine", "vm-4", "-H")
    assert code == 0
    assert out.startswith("available: 4 nodes (0-3)\nnode 0 cpus: 0\nnode 0 size: 512 MB\nnode 0 free: 512 MB\n")
    assert out.endswith("node distances:\nnode   0   1   2   3 \n  0:  10  16  16  22 \n  1:  16  10  22  16 \n"
                        "  2:  16  22  10  16 \n  3:  22  16  16  10 \n")
    assert cli("topo", "--machine", "vm-4", "--hardware")[1] == out


def test_three_digit_distances_widen_as_printf_does():
    doc = {"nodes": [{"os_index": i, "cpuset": str(i), "local_memory_bytes": 1 << 30} for i in (0, 100)],
           "distances": [[10, 254], [254, 10]]}
    assert numactl_hardware(doc).endswith("node distances:\nnode   0  100 \n  0:  10  254 \n 100:  254  10 \n")


@pytest.mark.skipif(NUMACTL is None, reason="numactl is not installed")
def test_host_block_is_numactls_own_output(cli):
    """The same lines as numactl -H on this machine, but for MemFree, which moves between the two calls."""
    real = subprocess.run([NUMACTL, "-H"], check=True, capture_output=True, text=True).stdout
    code, ours, _ = cli("topo", "--host", "-H")
    assert code == 0

    def steady(text: str) -> list[str]:
        return [line for line in text.splitlines() if not re.fullmatch(r"node \d+ free: \d+ MB", line)]

    assert steady(ours) == steady(real)
    assert len(ours.splitlines()) == len(real.splitlines())


def test_tree_is_lstopos_layout(cli, golden):
    code, out, _ = cli("topo", "--machine", "e5620-2s", "--tree")
    assert code == 0
    assert out.startswith(
        "Machine (12GB total)\n  Package L#0\n    NUMANode L#0 (P#0 6144MB)\n    L3 L#0 (12MB)\n"
        "      L2 L#0 (256KB) + Core L#0 + PU L#0 (P#0)\n"
    )
    golden("topo_tree_e5620-2s.out", out)


def test_tree_of_a_sysfs_host_shows_its_caches_as_lstopo_does(cli, monkeypatch):
    """The two-node capture: an L3 per socket over its cores' L2s (lstopo draws L1d/L1i too;
    numalab's machines start at L2)."""
    from numalab.machine import host

    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "sysfs" / "two-node"
    real = host.from_host
    monkeypatch.setattr(host, "from_host", lambda root=Path("/"): real(fixture))
    code, out, _ = cli("topo", "--machine", "host", "--tree")
    assert code == 0
    assert out.splitlines()[:7] == [
        "Machine (32GB total)", "  Package L#0", "    NUMANode L#0 (P#0 16GB)", "    L3 L#0 (10MB)",
        "      L2 L#0 (256KB) + Core L#0", "        PU L#0 (P#0)", "        PU L#1 (P#8)",
    ]
    assert out.count("L3 L#") == 2 and out.count("L2 L#") == 8


def test_json_names_each_spelling_of_a_set(cli):
    code, out, _ = cli("topo", "--machine", "e5-2620v4-2s", "--json")
    assert code == 0
    m = json.loads(out)
    node = m["nodes"][1]
    assert node["cpulist"] == "8-15,24-31" and node["cpuset"] == "0xff00ff00"
    assert m["packages"][0]["nodelist"] == "0" and m["packages"][0]["nodeset"] == "0x00000001"
    assert m["cores"][0]["cpulist"] == "0,16" and m["cores"][0]["cpuset"] == "0x00010001"
    everywhere = [o for key in ("nodes", "packages", "cores") for o in m[key]]
    assert all(re.fullmatch(r"0x[0-9a-f]{8}(,0x[0-9a-f]{8})*", o["cpuset"]) for o in everywhere)


def test_extras_name_nodes_as_numastat_does(cli):
    out = cli("topo", "--machine", "e5-2620v4-2s")[1]
    assert "                node0  node1\nbandwidth_gbps   51.2   51.2\n" in out
    assert "       node0  node1\nnode0   75.8  133.4\nnode1  133.4   75.8\n" in out
    assert "0     node0  node1          32.0       32.0\n" in out


def test_output_modes_are_exclusive(cli):
    code, out, err = cli("topo", "--machine", "vm-4", "--tree", "--json")
    assert code == 2 and out == ""
    assert err == "numalab: give one of --tree, --json: each prints the machine its own way\n"


# ---------------------------------------------------------------- files that are not there or not right


def _one_line_error(cli, *args: str) -> str:
    code, out, err = cli(*args)
    assert code == 2 and out == "" and "Traceback" not in err
    assert err.startswith("numalab: ") and err.count("\n") == 1, err
    return err


def test_export_into_a_missing_directory(cli, tmp_path):
    target = tmp_path / "nosuchdir" / "x.xml"
    err = _one_line_error(cli, "topo", "--machine", "vm-4", "--export-xml", str(target))
    assert err == f"numalab: --export-xml {target}: directory {target.parent} does not exist\n"
    assert not target.parent.exists()


def test_export_onto_a_directory(cli, tmp_path):
    err = _one_line_error(cli, "topo", "--machine", "vm-4", "--export-xml", str(tmp_path))
    assert err.startswith(f"numalab: --export-xml {tmp_path}: is a directory")


def test_export_that_cannot_be_written(cli, tmp_path, monkeypatch):
    target = tmp_path / "x.xml"
    original = Path.write_text

    def refuse(self, *args, **kwargs):
        if self == target:
            raise PermissionError(13, "Permission denied", str(self))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", refuse)
    err = _one_line_error(cli, "topo", "--machine", "vm-4", "--export-xml", str(target))
    assert err == f"numalab: --export-xml {target}: cannot write: Permission denied\n"


def test_input_that_is_a_directory(cli, tmp_path):
    err = _one_line_error(cli, "topo", "--input", str(tmp_path))
    assert err.startswith(f"numalab: {tmp_path}: cannot read: Is a directory")


def test_input_that_is_missing(cli, tmp_path):
    err = _one_line_error(cli, "topo", "--input", str(tmp_path / "no.xml"))
    assert err == f"numalab: {tmp_path / 'no.xml'}: cannot read: No such file or directory\n"


def test_input_that_cannot_be_read(cli, tmp_path, monkeypatch):
    # As root chmod 000 does not stop a read, so the refusal is simulated at open().
    target = tmp_path / "locked.xml"
    target.write_text("<topology/>")
    original = Path.open

    def refuse(self, *args, **kwargs):
        if self == target:
            raise PermissionError(13, "Permission denied", str(self))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", refuse)
    err = _one_line_error(cli, "topo", "--input", str(target))
    assert err == f"numalab: {target}: cannot read: Permission denied\n"


def test_input_that_is_not_xml(cli, tmp_path):
    target = tmp_path / "notes.txt"
    target.write_text("node 0 cpus: 0 1\n")
    err = _one_line_error(cli, "topo", "--input", str(target))
    assert err == f"numalab: {target}:1:1: malformed XML: syntax error\n"


def test_machine_that_is_a_path_but_not_a_machine_file(cli, tmp_path):
    err = _one_line_error(cli, "topo", "--machine", str(tmp_path))
    assert err == f"numalab: {tmp_path}: a machine file must be a preset-format .toml or an hwloc .xml (lstopo --of xml)\n"


LSTOPO = shutil.which("lstopo-no-graphics")


@pytest.mark.skipif(LSTOPO is None, reason="hwloc's lstopo-no-graphics is not installed")
@pytest.mark.parametrize("preset", preset_names())
def test_tree_is_what_lstopo_draws_from_the_export(cli, tmp_path, preset):
    xml = tmp_path / f"{preset}.xml"
    assert cli("topo", "--machine", preset, "--export-xml", str(xml))[0] == 0
    theirs = subprocess.run([LSTOPO, "-i", str(xml)], check=True, capture_output=True, text=True).stdout
    assert cli("topo", "--machine", preset, "--tree")[1] == theirs


def test_tree_drops_a_group_that_adds_no_structure_as_hwloc_does(tmp_path):
    """Two nodes of one core in a package: hwloc removes the per-node Group (it has its Core's
    cpuset) and hangs the NUMANode under the Core."""
    spec = tmp_path / "t.toml"
    spec.write_text(_spec("[[10, 11], [11, 10]]").replace("packages = 2\nnodes_per_package = 1\ncores_per_node = 2",
                                                           "packages = 1\nnodes_per_package = 2\ncores_per_node = 1"))
    doc = json.loads(load(str(spec)).to_json())
    assert lstopo_tree(topology_element(doc)) == (
        "Machine (2048MB total) + Package L#0\n"
        "  Core L#0\n    NUMANode L#0 (P#0 1024MB)\n    PU L#0 (P#0)\n"
        "  Core L#1\n    NUMANode L#1 (P#1 1024MB)\n    PU L#1 (P#1)\n"
    )


def test_input_that_is_a_preset_file_points_to_machine(cli, tmp_path):
    spec = tmp_path / "t.toml"
    spec.write_text(_spec("[[10, 21], [21, 10]]"))
    err = _one_line_error(cli, "topo", "--input", str(spec))
    assert err == f"numalab: --input {spec}: --input reads hwloc XML; give a preset-format .toml with --machine\n"
    assert cli("topo", "--machine", str(spec), "-H")[0] == 0


def test_an_empty_machine_name(cli):
    err = _one_line_error(cli, "topo", "--machine", " ")
    assert err == "numalab: empty machine name: give a preset name (numalab topo --list), host, or a .toml or .xml file\n"


def _numactl_available_list(nodes: set[int]) -> str:
    """numactl.c hardware(), the loop that prints the node list of its "available:" line."""
    out, prev, skip, maxnode = "", -1, False, max(nodes)
    for i in range(maxnode + 1):
        if i not in nodes:
            continue
        if prev == -1:
            out, prev = out + str(i), i
            continue
        if i > prev + 1:
            if skip:
                out, skip = out + str(prev), False
            out, prev = out + f",{i}", i
            continue
        if not skip:
            out, skip = out + "-", True
        prev = i
        if i == maxnode and skip:
            out += str(prev)
    return out


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(nodes=st.sets(st.integers(0, 40), min_size=1))
def test_available_line_lists_nodes_as_numactl_does(nodes):
    doc = {
        "nodes": [{"os_index": i, "cpuset": "", "local_memory_bytes": 0} for i in sorted(nodes)],
        "distances": [[10 if a == b else 20 for b in nodes] for a in nodes],
    }
    first = numactl_hardware(doc).splitlines()[0]
    assert first == f"available: {len(nodes)} nodes ({_numactl_available_list(nodes)})"


def test_machine_host_and_host_are_one_path(cli, monkeypatch):
    # Both read MemFree per node; before, --machine host printed the size as the free memory.
    from numalab.machine import host as host_module

    facts = host_module.read_facts()
    fake = {n["os_index"]: (100 + n["os_index"]) << 20 for n in facts["nodes"]}
    monkeypatch.setattr(host_module, "host_free_bytes", lambda root=None: fake)
    code, by_flag, _ = cli("topo", "-H", "--host")
    assert code == 0
    assert cli("topo", "-H", "--machine", "host")[1] == by_flag
    assert "node 0 free: 100 MB" in by_flag


@pytest.mark.parametrize("letter", ["-m", "-i"])
def test_topo_leaves_numactls_letters_alone(cli, letter):
    # -m is numactl's --membind and -i its --interleave in every placing command; topo takes neither.
    code, _, err = cli("topo", letter, "vm-4")
    assert code == 2
    assert f"no such option {letter} for numalab topo" in err
