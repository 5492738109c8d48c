"""Study expansion: cartesian sweeps, explicit runs, seeds and baselines give the expected runs,
and a run's configuration hash is stable (same run, same hash, however it is written)."""

from __future__ import annotations

import pytest

from numalab.study import expand, parse_study
from numalab.study.canonical import config_hash, to_json

HEAD = 'name = "t"\nmachine = "e5-2620v4-2s"\nworkload = "dgemv"\nparams = { n = 2000, reps = 2 }\n'


def _runs(body: str):
    return expand(parse_study(HEAD + body)).runs


def test_cartesian_sweep_times_seeds():
    runs = _runs('seeds = [1, 2]\n[sweep]\nplacement = ["default", "interleave=all", "membind=0"]\nbalancing = [false, true]\n')
    assert len(runs) == 3 * 2 * 2
    assert {(r.config["placement"], r.config["balancing"]["enabled"], r.config["seed"]) for r in runs} == {
        (p, b, s) for p in ("default", "interleave=all", "membind=0") for b in (False, True) for s in (1, 2)
    }


def test_sweep_params_are_rows_and_placements_columns():
    runs = _runs('[sweep]\nplacement = ["default", "interleave=all"]\n[sweep.params]\nn = [1000, 2000]\nreps = [1, 2, 3]\n')
    assert len(runs) == 2 * 2 * 3
    assert {r.case for r in runs} == {f"dgemv n={n} reps={k}" for n in (1000, 2000) for k in (1, 2, 3)}
    assert {r.label for r in runs} == {"default", "interleave=all"}


def test_explicit_runs_crossed_with_the_sweep():
    body = (
        '[[runs]]\nlabel = "serial init"\nparams = { init = "serial" }\n'
        '[[runs]]\nlabel = "parallel init"\nparams = { init = "parallel" }\n'
        '[[runs]]\nplacement = "interleave=all"\n'
        "[sweep.params]\nn = [1000, 2000]\n"
    )
    runs = _runs(body)
    assert len(runs) == 3 * 2
    assert {r.label for r in runs} == {"serial init", "parallel init", "interleave=all"}
    assert {r.config["params"]["init"] for r in runs if r.label == "serial init"} == {"serial"}


def test_repetitions_are_seeds_one_to_n():
    runs = _runs("repetitions = 4\n")
    assert [r.config["seed"] for r in runs] == [1, 2, 3, 4]


def test_baseline_is_added_when_missing_and_shared_when_present():
    # present: the default run is its own baseline and every run points at it
    runs = _runs('[baseline]\nplacement = "default"\n[sweep]\nplacement = ["default", "interleave=all"]\n')
    assert len(runs) == 2
    base = next(r for r in runs if r.config["placement"] == "default")
    assert all(r.baseline_hash == base.hash for r in runs) and all(r.role == "run" for r in runs)
    # missing: one baseline per case is added (serial code, one thread)
    runs = _runs('[baseline]\nlabel = "serial"\nplacement = "default"\nparams = { threads = 1 }\n[sweep]\nplacement = ["default", "interleave=all"]\n[sweep.params]\nn = [1000, 2000]\n')
    assert len(runs) == 2 * 2 + 2
    baselines = [r for r in runs if r.role == "baseline"]
    assert {r.config["params"]["threads"] for r in baselines} == {1} and {r.label for r in baselines} == {"serial"}
    for r in runs:
        b = next(x for x in runs if x.hash == r.baseline_hash)
        assert b.config["params"]["n"] == r.config["params"]["n"] and b.config["params"]["threads"] == 1


def test_duplicates_run_once():
    runs = _runs('[[runs]]\nplacement = "interleave=all"\n[[runs]]\nplacement = "--interleave = all"\n')
    assert len(runs) == 1


def test_hash_is_the_sha256_of_the_sorted_configuration():
    (run,) = _runs("")
    assert run.config_json == to_json(run.config)
    assert run.hash == config_hash(run.config)
    # The configuration of this run, spelt out: if this changes, every store's hashes change.
    assert run.config_json == (
        '{"balancing":{"enabled":false},"kernel":"6.13","machine":"e5-2620v4-2s","noise":true,"omp_wait_policy":"default",'
        '"params":{"init":"parallel","n":2000,"reps":2,"threads":16},"placement":"default",'
        '"sample_rate":1.0,"seed":1,"thp":null,"workload":"dgemv"}'
    )
    assert run.hash == "bdf3ba098ca4a14805e426565f2543a146760681de5a27812a57b83d8e456a11"


@pytest.mark.parametrize(
    "a, b",
    [
        # parameters given as TOML numbers or inside the placement string, defaults written or not
        ('placement = "init=serial"\n', '[[runs]]\nparams = { n = 2000, reps = 2, init = "serial", threads = 16 }\n'),
        ('placement = "interleave=all:reps=2"\n', 'placement = "interleave = all"\n'),
        # balancing written three ways
        ('balancing = "on:scan-size-mb=128"\n', "balancing = { enabled = true, scan_size_mb = 128 }\n"),
        ('balancing = "on:scan-delay-ms=2s"\n', "balancing = { enabled = true, scan_delay_ms = 2000 }\n"),
        ('placement = "default:balancing"\n', "balancing = true\n"),
        # the study name and the table labels are not part of a run's configuration
        ('[[runs]]\nlabel = "x"\n', "[[runs]]\n"),
    ],
)
def test_same_run_same_hash(a, b):
    (ra,) = _runs(a)
    (rb,) = expand(parse_study(HEAD.replace('"t"', '"other"') + b)).runs
    assert ra.hash == rb.hash, (ra.config_json, rb.config_json)


def test_different_runs_different_hashes():
    runs = _runs('seeds = [1, 2]\nkernel = "3.13"\n[sweep]\nbalancing = [false, true, "on:scan-size-mb=64"]\n')
    assert len({r.hash for r in runs}) == 6


def test_canonical_configuration_reads_back_into_the_same_run():
    from numalab.spec import RunSpec

    (run,) = _runs('placement = "interleave=all"\nbalancing = { enabled = true, scan_period_min_ms = 100, scan_size_mb = 128 }\n')
    spec = RunSpec.from_canonical(run.config)
    assert spec.label() == "interleave=all:balancing:scan-period-min-ms=100:scan-size-mb=128"
    assert spec.canonical() == run.config
    (off,) = _runs("")
    assert RunSpec.from_canonical(off.config).label() == "default"
