"""MAPKI: memory accesses per kilo-instruction, from the descriptors' instruction estimates per
phase, in every simulated result (``metrics.mapki``), in ``numalab sim``/``compare``, and as a
report scatter axis (``baseline.mapki``, as study S1 plots it)."""

from __future__ import annotations

import json

import pytest

from numalab.results.metrics import mapki
from numalab.runner import sim as runner
from numalab.spec.run import RunSpec
from numalab.workload import descriptor


def dgemv(**params):
    return runner.run(RunSpec.create("e5-2620v4-2s", "dgemv", params={"threads": 16, **params}, noise="off"))


def test_dgemv_mapki_by_hand() -> None:
    # n = 2000, 4 repetitions: init writes A (write-allocate read + write: 2 x 8n^2/64 lines) and
    # each mult reads it (8n^2/64): 0.75 n^2 DRAM lines; instructions 3 n^2 (init) + 4 x 6 n^2.
    n = 2000
    r = dgemv(n=n, reps=4)
    assert r.doc["workload"]["instructions"] == 27 * n * n
    assert sum(map(sum, r.doc["access_map"]["matrix"])) == pytest.approx(0.75 * n * n, rel=1e-6)
    assert r.metrics["mapki"] == pytest.approx(1000 * 0.75 / 27, rel=1e-6)
    # Placement moves traffic between nodes, not its amount: the same MAPKI under interleave.
    spec = RunSpec.create("e5-2620v4-2s", "dgemv", params={"threads": 16, "n": n, "reps": 4}, noise="off")
    assert runner.run(spec.with_config("interleave=all")).metrics["mapki"] == pytest.approx(r.metrics["mapki"])


def test_more_repetitions_raise_mapki_towards_the_streaming_loop() -> None:
    # init costs 2 lines per 3 instructions x 8 elements (89 MAPKI); mult 1 per 6 x 8 (21).
    one, many = dgemv(n=1000, reps=1).metrics["mapki"], dgemv(n=1000, reps=50).metrics["mapki"]
    assert one > many > 1000 / 48


def test_compute_bound_and_bandwidth_bound_workloads() -> None:
    ep = runner.run(RunSpec.create("e5-2620v4-2s", "ep", params={"class": "S", "threads": 4}, noise="off"))
    stream = runner.run(RunSpec.create("e5-2620v4-2s", "stream", params={"threads": 4, "n": 200000}, noise="off"))
    assert stream.metrics["mapki"] > 10
    assert ep.metrics["mapki"] < stream.metrics["mapki"] / 100


def test_every_published_workload_estimates_every_phase() -> None:
    for name in ("bt", "cg", "ep", "ft", "is", "lu", "mg", "sp", "stream", "dgemv"):
        desc, _, _ = descriptor.load(name)
        missing = [p.name for p in desc.phases if p.instructions is None]
        assert not missing, f"{name}: no instructions for {missing}"


def test_without_an_instruction_count_there_is_no_mapki() -> None:
    doc = dgemv(n=500, reps=1).doc
    assert mapki(doc) is not None
    host = dict(doc, workload={"name": "./prog", "params": {}})  # a measured program
    assert mapki(host) is None
    assert mapki(dict(doc, workload=dict(doc["workload"], instructions=None))) is None


def test_sim_prints_it_and_json_carries_it(cli) -> None:
    args = ("sim", "--machine", "e5-2620v4-2s", "--workload", "dgemv", "--n", "2000", "--reps", "4", "--noise", "off")
    code, out, err = cli(*args)
    assert code == 0, err
    assert "memory accesses per kilo-instruction (MAPKI): 27.78" in out
    code, out, _ = cli(*args, "--json")
    assert json.loads(out)["metrics"]["mapki"] == pytest.approx(27.777, rel=1e-3)


STUDY = """
name = "mapki"
machine = "e5-2620v4-2s"
params = { threads = 8 }
[baseline]
placement = "default"
[sweep]
workload = ["dgemv", "stream"]
placement = ["default", "interleave=all"]
[[report.scatter]]
title = "MAPKI vs gain"
x = "baseline.mapki"
y = "speedup"
color = "workload"
best = true
"""


def test_a_report_draws_mapki_against_gain(tmp_path) -> None:
    from numalab.report import write_report
    from numalab.results.store import Store
    from numalab.study import expand, parse_study
    from numalab.study.executors import LocalBackend
    from numalab.study.sweep import run_study

    text = STUDY.replace('params = { threads = 8 }', 'params = { threads = 8 }\nsample_rate = 0.5')
    (tmp_path / "m.toml").write_text(text)
    with Store(tmp_path / "results") as store:
        study = expand(parse_study(text, str(tmp_path / "m.toml")))
        assert run_study(study, store, lambda: LocalBackend(1)).ok == 4
    out = write_report(tmp_path / "m.toml", tmp_path / "r.md", results=tmp_path / "results")
    md = out.read_text()
    assert "MAPKI vs gain" in md


def test_scatter_axes_name_mapki() -> None:
    from numalab.report.figures import axis_label

    assert axis_label("baseline.mapki") == "MAPKI (memory accesses per 1000 instructions), baseline run"
    assert axis_label("speedup") == "speedup"
