"""The Python API: numactl's placement options as keywords (the same runs as config strings),
``compare`` and ``study`` returning DataFrames, and the docstrings' examples (issue 20 item 8)."""

from __future__ import annotations

import doctest

import pytest

import numalab
from numalab import api
from numalab.exceptions import UsageError
from numalab.study import executors

from inline_backend import InlineBackend

M, W = "e5-2620v4-2s", "dgemv"
SMALL = {"threads": 16, "n": 4000, "reps": 2}


@pytest.mark.parametrize(("keywords", "config"), [
    ({"interleave": "all"}, "interleave=all"),
    ({"membind": [0], "cpunodebind": 0}, "membind=0:cpunodebind=0"),
    ({"preferred": 1}, "preferred=1"),
    ({"localalloc": True, "physcpubind": "0-7"}, "localalloc:physcpubind=0-7"),
    ({"weighted_interleave": "0,1", "weights": {0: 5, 1: 2}}, "weighted-interleave=0,1:weights=0=5,1=2"),
    ({"omp_proc_bind": "spread", "omp_places": "cores"}, "omp-proc-bind=spread:omp-places=cores"),
    ({"membind": "0-1", "membind_balancing": True, "balancing": True}, "membind=0-1:membind-balancing:balancing"),
])
def test_placement_keywords_are_the_config_strings_runs(keywords, config):
    by_keyword = numalab.simulate(M, W, **keywords, **SMALL)
    by_string = numalab.simulate(M, W, config, **SMALL)
    assert by_keyword.doc == by_string.doc


def test_interleave_keyword_is_not_a_workload_parameter():
    r = numalab.simulate(M, W, interleave="all", **SMALL)
    assert r.doc["placement"]["policy"] == "interleave" and round(r.metrics["local_pct"]) == 50


def test_balancing_and_knob_keywords():
    r = numalab.simulate("vm-4", "stream", balancing=True, scan_period_min_ms=100, n=200000, threads=4)
    assert r.doc["placement"]["balancing"]["enabled"] is True
    assert r.doc["placement"]["balancing"]["scan_period_min_ms"] == 100
    tiering = numalab.simulate("vm-4", "stream", balancing={"numa_balancing": 2}, n=200000, threads=4)
    assert tiering.doc["placement"]["balancing"]["numa_balancing"] == 2
    with pytest.raises(UsageError, match="'balancing' is given twice"):
        numalab.simulate("vm-4", "stream", "balancing", balancing=False, n=200000, threads=4)


def test_two_policies_or_an_option_twice_are_refused():
    with pytest.raises(UsageError, match="two memory policies"):
        numalab.simulate(M, W, "membind=0", interleave="all", **SMALL)
    with pytest.raises(UsageError, match="given twice"):
        numalab.simulate(M, W, "cpunodebind=0", cpunodebind=1, **SMALL)
    with pytest.raises(UsageError, match="localalloc: expected True or False"):
        numalab.simulate(M, W, localalloc="yes", **SMALL)
    with pytest.raises(UsageError, match=r"^interleav: neither a keyword of numalab.simulate nor a parameter of workload dgemv "
                                         r"\(.*\); did you mean interleave\?$"):
        numalab.simulate(M, W, interleav="all", **SMALL)
    with pytest.raises(UsageError, match="did you mean threads"):
        numalab.compare(M, W, ["default"], thread=4)


def test_compare_gives_one_row_per_config():
    df = numalab.compare(M, W, "default,interleave=all,membind=0", **SMALL)
    assert list(df["label"]) == ["default", "interleave=all", "membind=0"]
    assert df["speedup"].iloc[0] == 1.0 and (df["status"] == "ok").all()
    assert list(df["placement"]) == ["default", "interleave=all", "membind=0"]
    assert (df["param_threads"] == 16).all() and (df["time_s"] > 0).all()
    assert round(df["local_pct"].iloc[1]) == 50
    alone = numalab.simulate(M, W, "membind=0", **SMALL)
    assert df["time_s"].iloc[2] == alone.time_s
    assert df["speedup"].iloc[2] == pytest.approx(df["time_s"].iloc[0] / alone.time_s)


def test_compare_applies_shared_keywords_to_every_config():
    df = numalab.compare(M, W, ["default", "init=serial"], cpunodebind=0, threads=8, n=4000, reps=2, jobs=1)
    assert list(df["label"]) == ["default", "init=serial"]
    assert all("cpunodebind=0" in p for p in df["placement"])
    with pytest.raises(UsageError, match="configs is empty"):
        numalab.compare(M, W, [], **SMALL)


def test_study_runs_and_returns_its_runs(tmp_path, monkeypatch):
    monkeypatch.setattr(executors, "LocalBackend", lambda n: InlineBackend())
    path = tmp_path / "s.toml"
    path.write_text('name = "api"\nmachine = "e5-2620v4-2s"\nworkload = "dgemv"\nparams = { n = 2000, reps = 2, threads = 4 }\n'
                    '[sweep]\nplacement = ["default", "interleave=all"]\n')
    df = numalab.run_study(path, tmp_path / "r")
    assert list(df["label"]) == ["default", "interleave=all"] and (df["status"] == "ok").all()
    assert (df["param_threads"] == 4).all() and (df["time_s"] > 0).all() and "local_pct" in df.columns
    again = numalab.run_study(path, tmp_path / "r")  # nothing left to run: the same rows
    assert list(again["hash"]) == list(df["hash"]) and list(again["time_s"]) == list(df["time_s"])


def test_docstring_examples_hold():
    failed, tried = doctest.testmod(api, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert tried >= 4 and failed == 0


def test_run_study_is_the_function_and_study_stays_the_package():
    import types

    assert callable(numalab.run_study) and isinstance(numalab.study, types.ModuleType)
    assert numalab.study.sweep.run_study is not numalab.run_study

