"""The balancing step as the runtime takes it (strategy time, decision, resumption) and the
sensitivity of task-graph comparisons to the simulator's estimated constants."""

from __future__ import annotations

import json

import pytest

SMALL = ("--graph", "lb_test", "--iterations", "6", "--lb-period", "3", "--seed", "2", "--noise", "off")


def _runs(cli, *args):
    code, out, err = cli("lb", "--machine", "numa16", *SMALL, *args, "--json")
    assert code == 0, err
    return {r["balancer"]["label"]: r for r in json.loads(out)["runs"]}


def test_every_call_shows_its_step_and_the_iteration_time_pays_for_it(cli):
    runs = _runs(cli, "--n-objects", "64", "--balancers", "none,greedy,metis")
    for label, r in runs.items():
        m = r["metrics"]
        for c in r["lb_calls"]:
            parts = c["atsync_ns"] + c["stats_ns"] + c["strategy_ns"] + c["decision_ns"] + c["migration_time_ns"] + c["resume_ns"]
            assert c["step_ns"] == pytest.approx(parts), label
        assert m["time_per_iteration_ns"] == pytest.approx(m["total_time_ns"] / 6)
        assert m["time_per_iteration_ns"] > m["iteration_time_ns"], label
    assert all(c["strategy_ns"] == 0 for c in runs["none"]["lb_calls"])
    # METIS is modelled by name (the Python callable says which strategy it is).
    assert all(c["strategy_ns"] > 0 for c in runs["metis"]["lb_calls"])
    assert all(c["strategy_ns"] > 0 for c in runs["greedy"]["lb_calls"])


def test_the_strategy_takes_longer_on_more_objects(cli):
    small = _runs(cli, "--n-objects", "64", "--balancers", "none,metis")["metis"]["lb_calls"][0]
    large = _runs(cli, "--n-objects", "640", "--balancers", "none,metis")["metis"]["lb_calls"][0]
    assert large["strategy_ns"] > 5 * small["strategy_ns"]
    assert large["step_ns"] > small["step_ns"]


def test_a_strategy_cost_given_on_the_command_line_is_used(cli):
    base = _runs(cli, "--n-objects", "64", "--balancers", "none,greedy")["greedy"]["lb_calls"][0]["strategy_ns"]
    doubled = _runs(cli, "--n-objects", "64", "--balancers", "none,greedy", "--strategy-op-ns", "20")["greedy"]["lb_calls"][0]["strategy_ns"]
    assert doubled == pytest.approx(2 * base)


def test_sensitivity_lists_the_estimated_constants(cli):
    code, out, err = cli("sensitivity", "--graph", "lb_test", "--machine", "numa16", "--list", "--json")
    assert code == 0, err
    rows = {p["id"]: p for p in json.loads(out)}
    assert set(rows) == {f"taskgraph:{k}" for k in ("shm_msg_ns", "net_dgram_ns", "migration_fixed_ns", "strategy_op_ns",
                                                   "metis_unit_ns", "scotch_unit_ns")}
    for p in rows.values():
        assert p["low"] <= p["value"] <= p["high"] and p["source"]


def test_sensitivity_varies_an_estimate_and_says_whether_the_winner_holds(cli):
    args = ("sensitivity", "--graph", "kneighbor", "--machine", "numa16", "--configs", "none,greedy", "--n-objects", "32",
            "--iterations", "4", "--lb-period", "2", "--comm-layer", "net", "--param", "net_dgram_ns", "--json")
    code, out, err = cli(*args)
    assert code == 0, err
    doc = json.loads(out)
    (cmp,) = doc["comparisons"]
    assert cmp["config"] == "greedy" and cmp["baseline"] == "none"
    assert set(cmp["speedups"]) == {"nominal", "taskgraph:net_dgram_ns=low", "taskgraph:net_dgram_ns=high"}
    assert cmp["speedups"]["taskgraph:net_dgram_ns=low"] != cmp["speedups"]["taskgraph:net_dgram_ns=high"]
    assert isinstance(cmp["flips"], bool)
    code, again, _ = cli(*args)
    assert code == 0 and again == out


@pytest.mark.parametrize("args, message", [
    (("--graph", "lb_test", "--workload", "cg"), "give one of them"),
    (("--graph", "lb_test", "--configs", "none"), "at least two balancers"),
    (("--graph", "lb_test", "--param", "bogus"), "not an estimated task-graph constant"),
    (("--graph", "lb_test", "--configs", "none,greedy", "--shm-msg-ns", "500"), "given and also varied"),
])
def test_sensitivity_usage_errors_are_one_line(cli, args, message):
    code, out, err = cli("sensitivity", "--machine", "numa16", *args)
    assert code == 2, (out, err)
    assert message in err and err.strip().startswith("numalab:") and len(err.strip().splitlines()) == 1
