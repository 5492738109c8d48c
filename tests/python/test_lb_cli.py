"""``numalab lb``, task-graph studies and their report: what a user runs and reads."""

from __future__ import annotations

import json

import pytest

from numalab.results.store import Store
from numalab.spec.run import load_machine
from numalab.tasks.run import migration_cost

SMALL = ("--graph", "lb_test", "--n-objects", "48", "--iterations", "6", "--lb-period", "3", "--seed", "2")


def test_json_output_compares_balancers(cli):
    code, out, err = cli("lb", "--machine", "numa16", *SMALL, "--balancers", "none,greedy,metis,random:migrate_pct=50", "--json")
    assert code == 0, err
    doc = json.loads(out)
    runs = {r["balancer"]["label"]: r for r in doc["runs"]}
    assert list(runs) == ["none", "greedy", "metis", "random:migrate_pct=50"]
    assert doc["graph"]["n_objects"] == 48 and doc["settings"]["iterations"] == 6
    for r in runs.values():
        m = r["metrics"]
        assert r["n_pes"] == 16 and len(r["iterations"]) == 6
        assert 0 < m["efficiency"] <= 1
        assert sorted(r["comm_bytes"]) == ["remote", "same_node", "same_pe"]
        assert m["iteration_time_ns"] > 0 and r["time_s"] == pytest.approx(m["total_time_ns"] / 1e9)
    assert runs["none"]["metrics"]["migrations_per_call"] == 0
    assert runs["none"]["mapping_final"] == runs["none"]["mapping_initial"]
    # greedy balances the lb_test loads (drawn min + (max - min) U^4): better than none.
    assert runs["greedy"]["metrics"]["iteration_time_ns"] < runs["none"]["metrics"]["iteration_time_ns"]
    assert runs["greedy"]["metrics"]["migrations_per_call"] > 0
    # random moves half the objects at each call
    for call in runs["random:migrate_pct=50"]["lb_calls"]:
        assert call["migrations"] == 24 and call["migrated_pct"] == pytest.approx(50)


def test_table_output(cli):
    code, out, err = cli("lb", "--machine", "numa32", *SMALL, "--balancers", "none,greedy", "--pes", "8")
    assert code == 0, err
    assert "48 objects" in out and "on numa32, 8 PEs, 6 iterations, task load balancer every 3, comm layer shm" in out
    for column in ("iteration_ms", "speedup_vs_none", "efficiency", "migrations/call", "migrated_%/call", "migrated_mib/call",
                   "lb_ms", "same_node_mib", "remote_mib"):
        assert column in out
    first = out.split("communication by distance class")[0]
    rows = {line.split()[0]: line.split() for line in first.splitlines() if line.startswith(("none ", "greedy "))}
    assert rows["none"][2] == "1.00" and float(rows["greedy"][2]) > 1


@pytest.mark.parametrize("args, message", [
    (("--balancers", "none,foo"), "numalab: unknown balancer 'foo' (expected one of: none, greedy, greedy-refine, refine, treematch, numalab, metis, scotch, random)"),
    (("--iterations", "x"), "numalab: --iterations: expected an integer, got 'x'"),
    (("--iterations", "0"), "numalab: --iterations: must be >= 1, got 0"),
    (("--pes", "17"), "numalab: --pes: 17 PEs on numa16, which has 16 CPUs (expected 1..16)"),
    (("--comm-layer", "tcp"), "numalab: --comm-layer: 'tcp' is not one of shm, net"),
    (("--graph", "ring"), "numalab: --graph: 'ring': unknown graph (expected one of lb_test, kneighbor, jacobi2d, or a graph file"),
    (("--graph", "lb_test", "--k", "3"), "numalab: --k is neither an option of numalab lb nor a parameter of graph lb_test (--load-noise, --max-us,"),
    (("--graph", "kneighbor", "--n-object", "3"), "numalab: --n-object is neither an option of numalab lb nor a parameter of graph kneighbor"),
])
def test_usage_errors(cli, args, message):
    code, out, err = cli("lb", "--machine", "numa16", *args)
    assert code == 2
    assert err.startswith(message) and err.count("\n") == 1 and "Traceback" not in err


def test_malformed_graph_file_names_file_and_line(cli, tmp_path):
    path = tmp_path / "graph.csv"
    path.write_text("# kind, fields\nobj, 0, 1000, 64\nedge, 0, two, 1, 100\nobj, 1, 1000, 64\n")
    code, out, err = cli("lb", "--machine", "numa16", "--graph", str(path), "--balancers", "none")
    assert code == 2
    assert err.startswith(f"numalab: {path}:3:") and err.count("\n") == 1


def test_graph_file_runs(cli, tmp_path):
    path = tmp_path / "graph.csv"
    path.write_text("".join(f"obj, {i}, {1000 * (i + 1)}, 512\nedge, {i}, {(i + 1) % 12}, 1, 4096\n" for i in range(12)))
    code, out, err = cli("lb", "--machine", "numa16", "--graph", str(path), "--balancers", "none,metis", "--pes", "4", "--json")
    assert code == 0, err
    runs = json.loads(out)["runs"]
    assert runs[0]["graph"]["n_objects"] == 12 and runs[0]["graph"]["n_edges"] == 12


def test_results_are_stored(cli, tmp_path):
    code, out, err = cli("lb", "--machine", "numa16", *SMALL, "--balancers", "none,greedy", "--results", str(tmp_path))
    assert code == 0, err
    with Store(tmp_path, create=False) as store:
        rows = store.rows("lb-lb_test-numa16")
    assert [r["label"] for r in rows] == ["none", "greedy"]
    assert all(r["status"] == "ok" and r["iteration_time_ns"] > 0 for r in rows)
    assert rows[0]["speedup"] == pytest.approx(1.0)
    assert rows[1]["speedup"] == pytest.approx(rows[0]["time_s"] / rows[1]["time_s"])
    code, out, err = cli("results", "show", rows[1]["hash"][:12], "--results", str(tmp_path))
    assert code == 0, err
    assert "balancer" in out and "\ngreedy " in out and "remote_mib" in out


def test_migration_cost_grows_with_size_and_distance():
    m = load_machine("numa32")
    small, large = migration_cost(m, 20, 1_000), migration_cost(m, 20, 10_000_000)
    for name in ("same_node", "node1", "node2", "node3"):
        assert large["metrics"][f"migration_ns_{name}"] > small["metrics"][f"migration_ns_{name}"]
        assert large["metrics"][f"migration_ns_{name}"] > 0
    assert large["metrics"]["migration_ns_node1"] > large["metrics"]["migration_ns_same_node"]


STUDY = """
name = "tg"
kind = "taskgraph"
seeds = [1, 2]

[[experiments]]
name = "balancers"
machine = ["numa16", "numa32"]
graph = "lb_test"
params = { n_objects = 40, iterations = 6, lb_period = 3 }
balancers = ["none", "greedy", "metis"]
baseline = { balancer = "none" }

[[experiments]]
name = "comm-layer"
machine = "numa16"
graph = "kneighbor"
params = { n_objects = 32, k = 1, iterations = 3, lb_period = 0 }
sweep = { pes = [2, 8], comm_layer = ["net", "shm"] }
column = "comm_layer"
baseline = { comm_layer = "net" }

[[experiments]]
name = "migration-size"
machine = "numa16"
graph = "migrate"
sweep = { state_bytes = [100, 100000] }
column = "state_bytes"

[[experiments]]
name = "migration-share"
machine = "numa16"
graph = "lb_test"
params = { n_objects = 40, iterations = 2, lb_period = 1 }
sweep = { migrate_pct = [10, 50] }
balancers = ["random"]
column = "migrate_pct"
"""


def test_study_runs_and_reports(cli, tmp_path):
    study = tmp_path / "tg.toml"
    study.write_text(STUDY)
    results = tmp_path / "results"
    code, out, err = cli("study", str(study), "--results", str(results), "--workers", "1")
    assert code == 0, err + out
    # (2 machines x 3 balancers + 2 PE counts x 2 layers + 2 sizes + 2 shares) x 2 seeds
    assert "28 of 28 runs done: 28 ok, 0 failed" in out
    with Store(results, create=False) as store:
        rows = store.rows("tg")
    assert len(rows) == 28 and all(r["status"] == "ok" for r in rows)
    cases = {r["case"] for r in rows}
    assert "balancers: numa32 lb_test" in cases and "comm-layer: numa16 kneighbor pes=8" in cases
    greedy = [r for r in rows if r["case"] == "balancers: numa16 lb_test" and r["label"] == "greedy"]
    assert all(r["speedup"] and r["speedup"] > 1 for r in greedy)
    shm = [r for r in rows if r["label"] == "comm_layer=shm"]
    assert all(r["speedup"] is not None for r in shm)
    report = tmp_path / "tg.md"
    code, out, err = cli("report", str(study), "--results", str(results), "-o", str(report))
    assert code == 0, err
    text = report.read_text()
    assert "## Task graphs" in text
    figures = sorted(p.name for p in (tmp_path / "tg-figures").glob("*.png"))
    assert any("iteration-time-per-balancer" in f for f in figures)
    assert any("migrations-per-balancing-call" in f for f in figures)
    assert any("against-pes" in f for f in figures)
    assert any("against-object-size" in f for f in figures)
    assert any("against-of-objects" in f for f in figures)


@pytest.mark.parametrize("patch, message", [
    (('balancers = ["none", "greedy", "metis"]', 'balancers = ["none", "greedy", "metiss"]'), ":11: experiments[0].balancers[2]: unknown balancer 'metiss'"),
    (("n_objects = 40, iterations = 6", "n_objects = 40, iterations = 0"), ":10: experiments[0].params.iterations: --iterations: must be >= 1"),
    (("pes = [2, 8]", "pes = [2, 80]"), ":19: experiments[1].sweep.pes[1]: --pes: 80 PEs on numa16"),
    (('column = "comm_layer"', 'column = "layer"'), ":20: experiments[1].column: 'layer' is neither balancer nor a sweep key"),
    (('kind = "taskgraph"\n', ""), "[[experiments]] belong to task-graph studies"),
    (('seeds = [1, 2]\n', 'seeds = [1, 2]\nworkload = "cg"\n'), "workload belong to placement studies"),
])
def test_study_errors_point_at_the_key(cli, tmp_path, patch, message):
    study = tmp_path / "tg.toml"
    assert patch[0] in STUDY
    study.write_text(STUDY.replace(patch[0], patch[1]))
    code, out, err = cli("study", str(study), "--results", str(tmp_path / "r"), "--dry-run")
    assert code == 2
    assert message in err and err.startswith(f"numalab: {study}")


def test_greedy_balances_independent_equal_objects(cli, tmp_path):
    path = tmp_path / "equal.txt"
    path.write_text("".join(f"obj {i} 1000000 64\n" for i in range(64)))
    code, out, err = cli("lb", "--machine", "numa16", "--graph", str(path), "--balancers", "none,greedy", "--iterations", "3",
                         "--lb-period", "1", "--json")
    assert code == 0, err
    greedy = json.loads(out)["runs"][1]
    assert greedy["iterations"][-1]["max_pe_load_ns"] == pytest.approx(greedy["iterations"][-1]["avg_pe_load_ns"])


def test_numalab_balancer_migrates_less_than_greedy_for_the_same_time(cli):
    code, out, err = cli("lb", "--machine", "numa32", "--graph", "lb_test", "--n-objects", "400", "--balancers", "greedy,numalab", "--json")
    assert code == 0, err
    greedy, mine = (r["metrics"] for r in json.loads(out)["runs"])
    assert mine["migrations_per_call"] < greedy["migrations_per_call"] / 4
    assert mine["iteration_time_ns"] <= 1.05 * greedy["iteration_time_ns"]


LB_DUMP = """# three objects on two PEs, as +LBDump writes them (text form)
lbdump 3 2
n_migrateobjs 3
procs 2
1.0 0.0 0.0 1.0 1 2 0
1.0 0.0 0.0 1.0 1 1 1
objs 3
0 0 0.5 1 0 1024
0 1 0.3 1 0 1024
0 2 0.1 1 0 2048
from_proc 0 0 1
comms 2
-1 0 0 2 0 1 0 10 10000
-1 0 1 2 0 2 1 5 5000
"""


def test_lb_dump_keeps_its_mapping_and_loads(cli, tmp_path):
    path = tmp_path / "step10.txt"  # recognised by its first record, whatever the name
    path.write_text(LB_DUMP)
    code, out, err = cli("lb", "--machine", "numa16", "--graph", str(path), "--pes", "2", "--balancers", "none,greedy",
                         "--iterations", "4", "--lb-period", "2", "--json")
    assert code == 0, err
    none, greedy = json.loads(out)["runs"]
    assert none["graph"]["n_objects"] == 3 and none["graph"]["n_edges"] == 2
    assert none["mapping_initial"] == [0, 0, 1]
    # 0.5 s + 0.3 s on PE 0 against 0.1 s: greedy moves one object and the iteration gets shorter
    assert none["metrics"]["iteration_time_ns"] >= 0.8e9
    assert greedy["metrics"]["migrations_per_call"] == 1
    assert greedy["metrics"]["iteration_time_ns"] < none["metrics"]["iteration_time_ns"]


def test_without_gpart_the_default_list_leaves_scotch_out(cli, monkeypatch):
    from numalab.tasks import partition

    monkeypatch.setattr(partition, "gpart_program", lambda: None)
    code, out, err = cli("lb", "--machine", "numa16", "--n-objects", "20", "--iterations", "2", "--lb-period", "1", "--json")
    assert code == 0, err
    assert "scotch left out" in err and "apt-get install scotch" in err
    assert [r["balancer"]["name"] for r in json.loads(out)["runs"]] == ["none", "greedy", "refine", "metis", "treematch", "numalab"]
    code, out, err = cli("lb", "--machine", "numa16", "--balancers", "none,scotch")
    assert code == 1 and err.startswith("numalab: the scotch balancer runs Scotch's gpart, which is not installed")


def test_help(cli):
    code, out, _ = cli("lb", "--help")
    assert code == 0 and "\\[" not in out
    for option in ("--graph", "--machine", "--balancers", "--iterations", "--lb-period", "--comm-layer", "--pes", "--seed", "--json", "--results"):
        assert option in out
    code, out, _ = cli("--help")
    assert " lb " in out
