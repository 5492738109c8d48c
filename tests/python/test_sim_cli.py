"""`numalab sim` and `numalab compare`: summaries, JSON documents, bad input."""

import json

import numalab

SMALL = ("--machine", "vm-4", "--workload", "stream", "--n", "200000", "--threads", "4")


def test_sim_summary_golden(cli, golden):
    code, out, err = cli("sim", *SMALL)
    assert code == 0, err
    assert "access map (% of all DRAM accesses; rows: CPU node, columns: memory node)" in out
    assert "numa_hit" in out and "local_node" in out
    golden("sim_stream_vm4.out", out)


def test_sim_json_is_the_result_document_and_deterministic(cli):
    code, a, _ = cli("sim", *SMALL, "--interleave", "all", "--json")
    assert code == 0
    _, b, _ = cli("sim", *SMALL, "--interleave", "all", "--json")
    assert a == b
    doc = json.loads(a)
    assert doc["schema"] == "numalab.result/1" and doc["source"] == "sim"
    assert doc["placement"]["policy"] == "interleave" and doc["placement"]["nodes"] == "all"
    assert doc["access_map"]["rows"] == "cpu_node" and len(doc["access_map"]["matrix"]) == 4
    assert set(doc["numastat"]["node0"]) == {"numa_hit", "numa_miss", "numa_foreign", "interleave_hit", "local_node", "other_node"}
    assert abs(doc["metrics"]["local_pct"] - 25.0) < 1.0
    for key in ("pages", "threads", "processes", "timeline", "vmstat", "seed", "time_s"):
        assert key in doc


def test_sim_runs_the_6_1_profile(cli):
    # Debian bookworm's guest kernel (`numalab vm`): its own profile, with Debian's THP default.
    args = ("sim", "--machine", "vm-4", "--workload", "barrier", "--threads", "8", "--reps", "50")
    code, out, err = cli(*args, "--kernel", "6.1")
    assert code == 0, err
    assert "; kernel 6.1, seed 1" in out.splitlines()[0]
    code, out, err = cli(*args, "--kernel", "6.1", "--json")
    assert code == 0, err
    assert json.loads(out)["kernel"] == "6.1"
    assert "5.4' is not one of 2.6.32, 3.13, 6.1, 6.13" in cli("sim", *SMALL, "--kernel", "5.4")[2]
    # MPOL_WEIGHTED_INTERLEAVE is 6.9's: refused in one line with 6.1, accepted with 6.13.
    code, out, err = cli("sim", *SMALL, "--weighted-interleave", "0,1", "--kernel", "6.1")
    assert code == 2 and out == "" and err.strip().splitlines() == [
        "numalab: --weighted-interleave: Linux 6.1 has no MPOL_WEIGHTED_INTERLEAVE (added in 6.9); use --kernel 6.13"], err
    assert cli("sim", *SMALL, "--weighted-interleave", "0,1", "--kernel", "6.13")[0] == 0
    from numalab._core import KERNEL_THP_DEFAULTS
    assert dict(KERNEL_THP_DEFAULTS)["6.1"] == "always" and dict(KERNEL_THP_DEFAULTS)["6.13"] == "madvise"


def test_different_seed_same_structure(cli):
    code, out, _ = cli("sim", *SMALL, "--seed", "7", "--json")
    assert code == 0 and json.loads(out)["seed"] == 7


def test_compare_golden(cli, golden):
    code, out, err = cli("compare", "--machine", "e5-2620v4-2s", "--workload", "dgemv", "--n", "4000", "--reps", "3", "--threads", "16",
                         "--configs", "default,interleave=all,init=serial,interleave=0,1:init=serial")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("dgemv (n=4000, reps=3, threads=16) on e5-2620v4-2s")
    assert lines[1].split() == ["config", "time_s", "reported_time_s", "speedup", "local_pct", "max_concentration_pct", "mapki", "status"]
    assert lines[3].split()[3] == "1.00"
    # dgemv has no timer of its own: the time it reports is the whole run.
    assert all(line.split()[1] == line.split()[2] for line in lines[3:7])
    assert lines[6].startswith("interleave=0,1:init=serial")
    golden("compare_dgemv.out", out)


def test_compare_json_is_a_list_of_documents(cli):
    code, out, _ = cli("compare", *SMALL, "--configs", "default,membind=1", "--json")
    assert code == 0
    docs = json.loads(out)
    assert [d["label"] for d in docs] == ["default", "membind=1"]
    assert docs[1]["pages"]["per_node"][1] == sum(docs[1]["pages"]["per_node"])


def test_bind_to_a_node_too_small_ends_out_of_memory_not_a_crash(cli):
    code, out, err = cli("sim", "--machine", "vm-4", "--workload", "stream", "--n", "30000000", "--threads", "4", "--membind", "2")
    assert code == 1
    assert "status: out-of-memory (out of memory on node 2 under bind:2" in out


def bad(cli, *args):
    code, out, err = cli(*args)
    assert code == 2, (code, out, err)
    assert err.startswith("numalab: ") and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    return err


def test_bad_input_is_one_line_exit_2(cli):
    assert "unknown workload 'stram' (known: " in bad(cli, "sim", "--machine", "vm-4", "--workload", "stram")
    assert "does not define class 'D'" in bad(cli, "sim", "--machine", "vm-4", "--workload", "cg", "--class", "D")
    assert "--bogus is neither an option of numalab sim nor a parameter of workload" in bad(cli, "sim", *SMALL, "--bogus", "1")
    assert "node 9" in bad(cli, "sim", *SMALL, "--membind", "9")
    assert "bad token 'x'" in bad(cli, "sim", *SMALL, "--interleave", "0,x")
    assert "at most one memory policy" in bad(cli, "sim", *SMALL, "--interleave", "all", "--membind", "0")
    assert "--preferred takes exactly one node" in bad(cli, "sim", *SMALL, "--preferred", "0-1")
    assert "cannot be bound one per place" in bad(cli, "sim", *SMALL[:-1], "8", "--omp-proc-bind", "close")
    assert "--kernel" in bad(cli, "sim", *SMALL, "--kernel", "5.4")
    assert "unknown item 'foo'" in bad(cli, "compare", *SMALL, "--configs", "default,foo")
    assert "did you mean interleave?" in bad(cli, "compare", *SMALL, "--configs", "default,interleaved=all")
    assert "no such option --bogus for numalab topo" in bad(cli, "topo", "--bogus")


def test_python_api_returns_pandas_views():
    r = numalab.simulate("e5-2620v4-2s", "dgemv", "init=serial", threads=16, n=4000, reps=2)
    am = r.access_map(percent=True)
    assert am.shape == (2, 2) and abs(am.values.sum() - 100) < 1e-6
    assert am["node1"].sum() < 1e-9  # serial init: every page on the master's node
    assert r.pages().sum() == 4000 * 4000 * 8 // 4096
    cols = list(r.threads().columns)
    assert cols[:5] == ["pid", "cpu", "node", "time_s", "nr_migrations"]
    assert sorted(cols[5:]) == ["away_from_first_node_pct", "first_node"]
    assert r.numastat().loc["numa_hit"].sum() > 0
