"""Seeds are the engine's u64: the store keeps 0..2^64-1 exactly (SQLite integers are signed, so
the upper half is stored shifted and read back unsigned), refuses anything else with the range,
and a study too large to expand is refused before anything is built, with the limit and why."""

from __future__ import annotations

import dataclasses
import json
import re
import time

import pytest

from numalab.exceptions import UsageError
from numalab.results import load
from numalab.results.frame import export
from numalab.results.store import SEED_MAX, Store
from numalab.study import expand, parse_study
from numalab.study.canonical import config_hash, to_json
from numalab.study.sweep import MAX_RUNS, check_size, planned_runs

STUDY = 'name = "seeds"\nmachine = "e5-2620v4-2s"\nworkload = "dgemv"\nparams = { n = 2000, reps = 2 }\n'
SEEDS = [0, 1, (1 << 63) - 1, 1 << 63, SEED_MAX]


def _with_seeds(seeds):
    resolved = expand(parse_study(STUDY))
    base = resolved.runs[0]
    runs = []
    for s in seeds:
        config = dict(base.config, seed=s)
        runs.append(dataclasses.replace(base, config=config, config_json=to_json(config), hash=config_hash(config)))
    return dataclasses.replace(resolved, runs=runs)


def _ok(time_s: float) -> dict:
    return {"status": "ok", "error": None, "wall_s": 0.0, "result": json.dumps({"time_s": time_s}), "columns": {"time_s": time_s}}


def test_every_u64_seed_is_stored_and_read_back_exactly(tmp_path, cli):
    resolved = _with_seeds(SEEDS)
    with Store(tmp_path) as store:
        store.register_study(resolved)
        for r in resolved.runs:
            store.write("seeds", r, _ok(1.0))
        assert [r["seed"] for r in store.rows("seeds")] == SEEDS
        assert store.find(resolved.runs[-1].hash[:12])["seed"] == SEED_MAX
        assert store.complete_hashes() == {r.hash for r in resolved.runs}
    df = load(tmp_path)
    assert [int(s) for s in df["seed"]] == SEEDS
    written = export(df, csv=tmp_path / "s.csv", parquet=tmp_path / "s.parquet")
    assert len(written) == 2 and str(SEED_MAX) in (tmp_path / "s.csv").read_text()
    import pandas as pd

    assert [int(s) for s in pd.read_parquet(tmp_path / "s.parquet")["seed"]] == SEEDS
    code, out, err = cli("results", "list", "-r", str(tmp_path))
    assert code == 0 and str(SEED_MAX) in out, err


@pytest.mark.parametrize("seed", [-1, SEED_MAX + 1])
def test_a_seed_outside_u64_is_refused_with_the_range(tmp_path, seed):
    resolved = _with_seeds([seed])
    with Store(tmp_path) as store:
        store.register_study(resolved)
        with pytest.raises(UsageError, match=r"seed .* is not accepted \(expected an integer from 0 to 2\^64-1"):
            store.write("seeds", resolved.runs[0], _ok(1.0))


def test_the_run_count_is_known_without_expanding():
    s = parse_study(STUDY + 'repetitions = 3\n[sweep]\nplacement = ["default", "interleave=all"]\n[sweep.params]\nn = [1000, 2000]\n').study
    assert planned_runs(s) == 12 == len(expand(parse_study(STUDY + 'repetitions = 3\n[sweep]\nplacement = ["default", "interleave=all"]\n'
                                                                   '[sweep.params]\nn = [1000, 2000]\n')).runs)


@pytest.mark.parametrize("extra, count", [
    # the study file's own limit on repetitions, or the run count's: either says the limit
    ("repetitions = 100000000\n", r"100,000,000 runs.*at most|repetitions: input should be less than or equal to \d+, got 100000000"),
    ("[sweep.params]\nn = [%s]\nreps = [%s]\n" % (", ".join(str(1000 + i) for i in range(1000)), ", ".join(str(1 + i) for i in range(1000))),
     r"1,000,000 runs \(1,000,000 configurations x 1 seed\); at most [\d,]+ are accepted, because every run is expanded, checked and held in memory"),
])
def test_a_study_too_large_to_expand_is_refused_at_once(tmp_path, cli, extra, count):
    (tmp_path / "big.toml").write_text(STUDY + extra)
    start = time.monotonic()
    code, _, err = cli("study", str(tmp_path / "big.toml"), "--results", str(tmp_path / "r"), "--dry-run")
    assert time.monotonic() - start < 10, "counted, not expanded"
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and re.search(count, lines[0]), err
    assert not (tmp_path / "r").exists()


def test_the_limit_is_the_sweep_modules():
    s = parse_study(STUDY + "[sweep.params]\nn = [%s]\n" % ", ".join(str(1000 + i) for i in range(MAX_RUNS + 1))).study
    with pytest.raises(UsageError, match=f"asks for {MAX_RUNS + 1:,} runs .* at most {MAX_RUNS:,}"):
        check_size(s)


def test_check_size_accepts_up_to_the_limit():
    s = parse_study(STUDY + "repetitions = 10\n").study
    assert check_size(s, limit=10) == 10
    with pytest.raises(UsageError, match="asks for 10 runs"):
        check_size(s, limit=9)
