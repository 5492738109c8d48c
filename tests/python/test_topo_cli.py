"""`numalab topo`: numactl --hardware layout, JSON, presets, hwloc XML, bad input."""

import json

from numalab.machine import load


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
    assert err.startswith("numalab: unknown machine preset 'opteron6282' (did you mean opteron6282-4p")
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
