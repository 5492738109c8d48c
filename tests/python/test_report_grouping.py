"""Repetitions are the runs of one configuration (its configuration without the seed), never the
runs that share a label: two configurations under one label are two columns, each averaged over
its own seeds only."""

from __future__ import annotations

import dataclasses

from numalab.report.data import gather
from numalab.report.tables import speedup_grid
from numalab.results import load
from numalab.results.store import Store
from numalab.study import expand, parse_study
from numalab.study.sweep import run_study

from inline_backend import InlineBackend

STUDY = """
name = "g"
machine = "e5-2620v4-2s"
workload = "dgemv"
params = { n = 2000, reps = 2 }
seeds = [1, 2]
[sweep]
placement = ["default", "interleave=all"]
"""




def test_two_configurations_with_one_label_are_never_averaged_together(tmp_path):
    resolved = expand(parse_study(STUDY))
    # As two [[runs]] with the same label would give (expansion refuses that now; stores and
    # study files written before still hold such runs).
    resolved = dataclasses.replace(resolved, runs=[dataclasses.replace(r, label="same") for r in resolved.runs])
    with Store(tmp_path) as store:
        assert run_study(resolved, store, InlineBackend).ok == 4
    df = load(tmp_path)
    assert df["repeat_group"].nunique() == 2 and set(df["label"]) == {"same"}
    by_placement = df.groupby("placement")["time_s"].mean().to_dict()
    data = gather(tmp_path / "numalab.db", "g")
    grid = speedup_grid(data, "time_s")
    assert grid.cols == ["same", "same #2"]
    cells = dict(zip(grid.cols, grid.cells[0]))
    assert cells["same"].n == 2 and cells["same #2"].n == 2
    assert cells["same"].mean == by_placement["default"] and cells["same #2"].mean == by_placement["interleave=all"]
    assert any("share the label 'same'" in n for n in data.notes)


def test_repeat_group_is_the_configuration_without_its_seed(tmp_path):
    resolved = expand(parse_study(STUDY))
    with Store(tmp_path) as store:
        run_study(resolved, store, InlineBackend)
        rows = store.rows("g")
    groups = {}
    for r in rows:
        groups.setdefault(r["repeat_group"], set()).add((r["placement"], r["seed"]))
    assert sorted(map(sorted, groups.values())) == [[("default", 1), ("default", 2)], [("interleave=all", 1), ("interleave=all", 2)]]
