"""``numalab lb`` with measured loads (--noise, --lb-timer) and repetitions (--repeat): means with
95% intervals that shrink as repetitions grow, and runs that repeat exactly for one seed."""

from __future__ import annotations

import json

import pytest

SMALL = ("--machine", "numa16", "--graph", "lb_test", "--n-objects", "48", "--iterations", "6", "--lb-period", "3")


def _json(cli, *args):
    code, out, err = cli("lb", *SMALL, *args, "--json")
    assert code == 0, err
    return json.loads(out)


def _without_wall_clock(doc):
    for run in doc["runs"]:
        run.pop("wall_s")
        run["metrics"].pop("balancer_wall_s")
        for call in run["lb_calls"]:
            call.pop("balancer_wall_s")
    doc.pop("summary", None)
    return doc


def test_one_seed_gives_identical_results_and_the_next_seed_another(cli):
    a = _without_wall_clock(_json(cli, "--balancers", "greedy,refine", "--seed", "4"))
    b = _without_wall_clock(_json(cli, "--balancers", "greedy,refine", "--seed", "4"))
    c = _without_wall_clock(_json(cli, "--balancers", "greedy,refine", "--seed", "5"))
    assert a == b
    assert a["runs"][0]["metrics"] != c["runs"][0]["metrics"]


def test_every_call_reports_migrations_bytes_and_predicted_and_actual_makespan(cli):
    doc = _json(cli, "--balancers", "greedy", "--lb-timer", "cpu")
    assert doc["settings"]["noise"] is True and doc["settings"]["lb_timer"] == "cpu"
    calls = doc["runs"][0]["lb_calls"]
    assert len(calls) == 1
    call = calls[0]
    assert call["migrations"] > 0 and call["migrated_bytes"] > 0
    # The measured loads carry the machine's noise, so the prediction is close to, not equal to, the truth.
    assert call["predicted_makespan_ns"] != call["actual_makespan_ns"]
    assert call["predicted_makespan_ns"] == pytest.approx(call["actual_makespan_ns"], rel=0.05)


def test_without_noise_the_balancer_predicts_the_run_exactly_on_a_graph_without_messages(cli, tmp_path):
    path = tmp_path / "graph.csv"
    path.write_text("".join(f"obj, {i}, {1000 * (i + 1)}, 512\n" for i in range(40)))
    code, out, err = cli("lb", "--machine", "numa16", "--graph", str(path), "--balancers", "greedy", "--iterations", "7",
                         "--lb-period", "3", "--noise", "off", "--json")
    assert code == 0, err
    calls = json.loads(out)["runs"][0]["lb_calls"]
    assert [c["migrations"] > 0 for c in calls] == [True, False]
    assert all(c["predicted_makespan_ns"] == pytest.approx(c["actual_makespan_ns"], rel=1e-9) for c in calls)


def test_repeat_reports_means_with_intervals_that_shrink_with_n(cli):
    few = _json(cli, "--balancers", "none,greedy", "--repeat", "3")
    many = _json(cli, "--balancers", "none,greedy", "--repeat", "20")
    assert few["repeat"] == 3 and len(few["runs"]) == 6 and len(many["runs"]) == 40
    s3 = {s["balancer"]: s for s in few["summary"]}
    s20 = {s["balancer"]: s for s in many["summary"]}
    assert s20["greedy"]["seeds"] == list(range(1, 21)) and s20["greedy"]["n"] == 20
    for key in ("iteration_time_ns", "actual_makespan_ns"):
        st = s20["greedy"]["metrics"][key]
        mean = sum(r["metrics"][key] for r in many["runs"] if r["balancer"]["name"] == "greedy") / 20
        assert st["mean"] == pytest.approx(mean)
        assert st["low"] < st["mean"] < st["high"] and st["half_width"] > 0
        assert st["half_width"] < s3["greedy"]["metrics"][key]["half_width"]


def test_repeat_table_and_errors(cli, tmp_path):
    code, out, err = cli("lb", *SMALL, "--balancers", "none,greedy", "--repeat", "4")
    assert code == 0, err
    assert "4 repetitions, seeds 1..4" in out and "±" in out and "actual_ms/call" in out
    for args, message in [(("--repeat", "0"), "numalab: --repeat: must be >= 1, got 0"),
                          (("--lb-timer", "tsc"), "numalab: --lb-timer: 'tsc' is not one of wall, cpu"),
                          (("--noise", "loud"), "numalab: --noise: expected on or off, got 'loud'"),
                          (("--repeat", "2", "--results", str(tmp_path)), "numalab: --repeat with --results:")]:
        code, out, err = cli("lb", *SMALL, *args)
        assert code == 2 and err.startswith(message) and err.count("\n") == 1, err



STUDY = """
name = "tg-noise"
kind = "taskgraph"
seeds = [1]

[[experiments]]
name = "timers"
machine = "numa16"
graph = "lb_test"
params = { n_objects = 40, iterations = 6, lb_period = 3 }
sweep = { lb_timer = ["wall", "cpu"], noise = ["off", "on"] }
balancers = ["greedy"]
column = "lb_timer"
baseline = { lb_timer = "wall" }
"""


def test_a_study_sweeps_noise_and_the_lb_timer(cli, tmp_path):
    from numalab.results.store import Store

    study = tmp_path / "tg.toml"
    study.write_text(STUDY)
    results = tmp_path / "results"
    code, out, err = cli("study", str(study), "--results", str(results), "--workers", "1")
    assert code == 0, err + out
    with Store(results, create=False) as store:
        rows = store.rows("tg-noise")
    assert len(rows) == 4 and all(r["status"] == "ok" for r in rows)
    by = {(r["case"].split()[-1], r["label"]): r for r in rows}
    assert set(by) == {("noise=off", "lb_timer=wall"), ("noise=off", "lb_timer=cpu"), ("noise=on", "lb_timer=wall"),
                       ("noise=on", "lb_timer=cpu")}
    # Without noise both timers see the true loads; with it, the wall timer sees more background work.
    off_wall, off_cpu = by[("noise=off", "lb_timer=wall")], by[("noise=off", "lb_timer=cpu")]
    assert off_wall["predicted_makespan_ns"] == off_cpu["predicted_makespan_ns"]
    on_wall, on_cpu = by[("noise=on", "lb_timer=wall")], by[("noise=on", "lb_timer=cpu")]
    assert on_wall["predicted_makespan_ns"] != on_cpu["predicted_makespan_ns"]
    assert on_cpu["predicted_makespan_ns"] != off_cpu["predicted_makespan_ns"]
