"""Data mapping analysis and numalab advise (docs/mapping.md): exclusivity of partitioned and
shared data, mappings' scores and times, the CLI's --mapping-metrics and the advisor's ranking."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from numalab.cli.main import app
from numalab.runner import sim as runner
from numalab.runner.mapping import mapping_doc
from numalab.spec import RunSpec
from numalab.study import advise as adv

MACHINE = "e5-2620v4-2s"

SHARED = """
name = "shared-table"
description = "a table the master writes and every thread then reads whole (test workload)"
source = "test"
program = [{ phases = ["init"] }, { phases = ["use"], repeat = "reps" }]
[params]
n = 2048
reps = 20
threads = 8
[[regions]]
name = "T"
bytes = "4096 * n"
planes = "n"
[[phases]]
name = "init"
cycles = "n"
access = [{ region = "T", pattern = "master", wr = 1.0, rd = 1.0 }]
[[phases]]
name = "use"
cycles = "n * 1000"
access = [{ region = "T", pattern = "shared", rd = 1.0 }]
"""


def dgemv(init: str, threads: int = 8, n: int = 2048) -> RunSpec:
    return RunSpec(MACHINE, "dgemv").updated(params={"init": init, "n": n, "reps": 10, "threads": threads})


def test_block_partitioned_data_is_exclusive_and_first_touch_places_it_locally():
    bound = dgemv("parallel").bind()
    m = mapping_doc(bound, runner.run(bound).doc)
    assert m["exclusivity"] == pytest.approx(1.0)
    a = next(r for r in m["regions"] if r["region"] == "A")
    assert a["first_touch_local"] == pytest.approx(1.0)
    scores = {s["mapping"]: s for s in m["mappings"]}
    assert scores["first-touch"]["loc_app"] == pytest.approx(100.0)
    assert scores["locality"]["loc_pages"] == pytest.approx(100.0)
    # Interleave puts half of the pages away from their node on two nodes.
    assert scores["interleave"]["loc_pages"] == pytest.approx(50.0, abs=1.0)
    # Each mapping was simulated: locality is not slower than interleave for exclusive data.
    assert scores["locality"]["time_s"] < scores["interleave"]["time_s"]


def test_uniformly_shared_data_is_one_over_n_exclusive(tmp_path):
    path = tmp_path / "shared.toml"
    path.write_text(SHARED)
    bound = RunSpec(MACHINE, str(path)).bind()
    m = mapping_doc(bound, runner.run(bound).doc, times=False)
    # 8 threads spread over the machine's 2 nodes read every page alike (the master's writes aside).
    nodes = {t["first_node"] for t in runner.run(bound).doc["threads"]}
    assert len(nodes) == 2
    assert m["exclusivity"] == pytest.approx(0.5, abs=0.03)
    c = m["comm"]["matrix"]
    assert c[1][2] > 0 and c[1][2] == pytest.approx(c[3][4])


def test_serial_initialisation_lowers_first_touch_locality():
    bound = dgemv("serial").bind()
    m = mapping_doc(bound, runner.run(bound).doc, times=False)
    a = next(r for r in m["regions"] if r["region"] == "A")
    # The master's node holds every page; half the reads come from the other node.
    assert max(a["first_touch_share"]) == pytest.approx(1.0)
    assert a["first_touch_local"] < 0.6


def test_a_mapping_places_the_pages_before_the_run():
    bound = dgemv("serial").bind()
    doc = runner.run(bound).doc
    tn = [bound.machine.node_os_indexes.index(t["first_node"]) for t in doc["threads"]]
    # Serial initialisation: first touch puts A on the master's node; locality splits it by reader.
    assert min(doc["pages"]["per_node"]) < 0.01 * max(doc["pages"]["per_node"])
    local = bound.engine.simulate_mapping("locality", tn)
    per_node = local["pages_per_node"]
    assert min(per_node) > 0.45 * sum(per_node)
    assert local["time_s"] < doc["time_s"]


def test_sim_mapping_metrics_json_and_text():
    cli = CliRunner()
    args = ["sim", "--machine", MACHINE, "--workload", "dgemv", "--n", "1024", "--reps", "2", "--threads", "4", "--init", "serial"]
    r = cli.invoke(app, args + ["--mapping-metrics", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    m = doc["mapping"]
    assert [s["page_bytes"] for s in m["by_page_size"]] == [4096, 2 << 20, 1 << 30]
    assert [s["mapping"] for s in m["mappings"]] == ["first-touch", "locality", "interleave", "round-robin", "mixed", "balance"]
    assert all(s["time_s"] > 0 for s in m["mappings"])
    assert sum(b["access_share"] for b in m["histogram"]) == pytest.approx(1.0)
    r = cli.invoke(app, args + ["--mapping-metrics"])
    assert r.exit_code == 0, r.output
    assert "application exclusivity" in r.output and "Loc_App %" in r.output and "time s" in r.output
    # Without the option the result has no mapping section.
    r = cli.invoke(app, args + ["--json"])
    assert "mapping" not in json.loads(r.output)


def test_advisor_recommends_parallel_initialisation_for_serially_initialised_block_data():
    a = adv.advise(dgemv("serial", threads=12, n=3072), corners=False)
    assert a.regions[0]["region"] == "A"
    top = a.remedies[0]
    assert top.kind == "parallel-init" and top.region == "A", [(r.name, r.speedup) for r in a.remedies]
    assert top.speedup > 1.2


def test_advisor_does_not_recommend_parallel_initialisation_for_shared_data(tmp_path):
    path = tmp_path / "shared.toml"
    path.write_text(SHARED)
    a = adv.advise(RunSpec(MACHINE, str(path)), corners=False)
    assert "parallel-init" not in {r.kind for r in a.remedies}
    # Interleaving the table spreads its load: it is among the remedies simulated.
    assert "region-interleave" in {r.kind for r in a.remedies}


def test_advise_simulates_each_distinct_run_once_and_its_result_does_not_depend_on_jobs(monkeypatch):
    spec = dgemv("serial", threads=4, n=1024).updated(params={"init": "serial", "n": 1024, "reps": 2, "threads": 4})
    planned: list[int] = []
    simulated: list[object] = []
    real = runner.run
    monkeypatch.setattr(runner, "run", lambda b: simulated.append(b) or real(b))
    a = adv.advise(spec, corners=False, jobs=1, on_plan=planned.append)
    # THP never changes nothing the engine sees when no region is marked MADV_HUGEPAGE (6.13's
    # default is madvise): it is the run as given, simulated once, and its speedup is exactly 1.
    never = next(r for r in a.remedies if r.name == "transparent huge pages never")
    assert never.speedup == 1.0 and never.time_s == a.base_time_s
    # The run as given plus every remedy but THP never; the progress bar counts them all.
    assert len(simulated) == sum(planned) == len(a.remedies)
    b = adv.advise(spec, corners=False, jobs=3)
    assert json.dumps(b.to_json(), sort_keys=True) == json.dumps(a.to_json(), sort_keys=True)


def test_advise_cli_json_text_and_report(tmp_path):
    cli = CliRunner()
    args = ["advise", "--machine", MACHINE, "--workload", "dgemv", "--n", "1024", "--reps", "2", "--threads", "4",
            "--init", "serial", "-j", "1"]
    out = tmp_path / "advice.md"
    r = cli.invoke(app, args + ["--json", "-o", str(out)])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["schema"] == "numalab.advice/1"
    ups = [x["speedup"] for x in doc["remedies"]]
    assert ups == sorted(ups, reverse=True)
    # The three best have a range around their speedup; the others are simulated nominally only.
    ranged = [x for x in doc["remedies"] if x["speedup_low"] is not None]
    assert ranged == doc["remedies"][:3]
    assert all(x["speedup_low"] <= x["speedup"] <= x["speedup_high"] for x in ranged)
    assert "## Remedies by predicted speedup" in out.read_text()
    r = cli.invoke(app, args + ["--no-corners"])
    assert r.exit_code == 0, r.output
    assert "Remedies by predicted speedup" in r.output and "initialise A in parallel" in r.output
    assert "the data is placed well" not in r.output
    # Parallel initialisation leaves no costly region: the advice says so.
    r = cli.invoke(app, [*args[:-3], "parallel", "-j", "1", "--no-corners"])
    assert r.exit_code == 0, r.output
    assert "the data is placed well; only whole-run remedies are tried" in r.output
    assert "initialise A in parallel" not in r.output


def test_advise_refuses_bad_input_in_one_line(cli):
    code, _, err = cli("advise", "--machine", MACHINE, "--workload", "dgemv", "-j", "-1")
    assert code == 2 and err == "numalab: --jobs must be >= 0, got -1\n"
    code, _, err = cli("advise", "--machine", MACHINE, "--workload", "dgemv", "--init", "sideways")
    assert code == 2 and err.startswith("numalab: ") and err.count("\n") == 1
    code, _, err = cli("advise", "--machine", MACHINE, "--workload", "dgemv", "-o", "/nonexistent-dir/advice.md")
    assert code == 2 and err.startswith("numalab: --output /nonexistent-dir/advice.md: directory") and err.count("\n") == 1
