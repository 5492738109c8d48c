"""Study kinds (numalab.study.kinds): study/ finds a kind's expansion, run count and runner by the
name the study file gives; numalab/kinds.py registers the task-graph kind."""

from __future__ import annotations

import pytest

import numalab.kinds  # noqa: F401  (registers the task-graph kind)
from numalab.exceptions import UsageError
from numalab.results.store import Store
from numalab.study import expand, kinds, parse_study
from numalab.study.sweep import planned_runs, run_study
from numalab.tasks import study as taskgraph

from inline_backend import InlineBackend

STUDY = '''name = "k"
kind = "taskgraph"
[[experiments]]
name = "e"
machine = "e5-2620v4-2s"
graph = "lb_test"
params = { n_objects = 8, iterations = 2 }
balancers = ["none", "greedy"]
'''


def test_an_unregistered_kind_names_the_registered_ones():
    with pytest.raises(UsageError, match=r"study kind 'nope' is not registered \(registered: placement, taskgraph; import numalab.kinds"):
        kinds.get("nope")
    with pytest.raises(ValueError):
        kinds.register("placement", expand=expand, planned_runs=planned_runs, run=taskgraph.run_config)


def test_the_task_graph_kind_is_the_one_numalab_kinds_registers():
    k = kinds.get("taskgraph")
    assert (k.expand, k.planned_runs, k.run) == (taskgraph.expand, taskgraph.planned_runs, taskgraph.run_config)
    assert [x.name for x in kinds.registered()] == ["taskgraph"] and k.figures is not None


def test_expansion_counting_and_running_go_through_the_registered_kind(tmp_path, monkeypatch):
    sf = parse_study(STUDY, str(tmp_path / "k.toml"))
    calls = []

    def fake_expand(f):
        calls.append("expand")
        return taskgraph.expand(f)

    def fake_run(config):
        calls.append(("run", config["balancer"]))
        return taskgraph.run_config(config)

    monkeypatch.setitem(kinds._KINDS, "taskgraph", kinds.Kind("taskgraph", fake_expand, lambda s: 7, fake_run))
    resolved = expand(sf)
    assert planned_runs(sf.study) == 7
    with Store(tmp_path / "r") as store:
        summary = run_study(resolved, store, InlineBackend)
    assert calls == ["expand", ("run", "none"), ("run", "greedy")] and summary.ok == 2
