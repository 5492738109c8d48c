"""The results store: one row per configuration hash, WAL mode, complete runs skipped, speedups
against the study's baseline, new metric columns added as documents bring them, a pandas view,
CSV/Parquet export and the `numalab results` commands."""

from __future__ import annotations

import json
import sqlite3

import pytest

from numalab.exceptions import UsageError
from numalab.results import load
from numalab.results.store import Store
from numalab.study import expand, parse_study

STUDY = """
name = "st"
machine = "e5-2620v4-2s"
workload = "dgemv"
params = { n = 2000, reps = 2 }
seeds = [1, 2]
[baseline]
placement = "default"
[sweep]
placement = ["default", "interleave=all"]
"""


def _outcome(time_s: float, status: str = "ok", **extra) -> dict:
    doc = {"status": status, "time_s": time_s, "vmstat": {"numa_pages_migrated": 3}}
    cols = {"time_s": time_s, "local_pct": 50.0, "vmstat_numa_pages_migrated": 3, **extra}
    return {"status": status, "error": None if status == "ok" else "boom", "wall_s": 0.01, "result": json.dumps(doc), "columns": cols}


@pytest.fixture
def resolved():
    return expand(parse_study(STUDY))


def test_wal_mode_and_one_row_per_hash(tmp_path, resolved):
    with Store(tmp_path) as store:
        store.register_study(resolved)
        run = resolved.runs[0]
        store.write("st", run, _outcome(1.0, "failed"))
        store.write("st", run, _outcome(1.0))  # tried again: replaces the failed row
        assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert tuple(store.db.execute("SELECT count(*), status FROM runs").fetchone()) == (1, "ok")
    assert (tmp_path / "numalab.db").exists()


def test_complete_means_ok_or_out_of_memory(tmp_path, resolved):
    a, b, c, _ = resolved.runs
    with Store(tmp_path) as store:
        store.register_study(resolved)
        store.write("st", a, _outcome(1.0))
        store.write("st", b, _outcome(1.0, "out-of-memory"))
        store.write("st", c, _outcome(1.0, "failed"))
        assert store.complete_hashes(r.hash for r in resolved.runs) == {a.hash, b.hash}


def test_speedup_against_the_baseline_whichever_finishes_first(tmp_path, resolved):
    by = {(r.config["placement"], r.config["seed"]): r for r in resolved.runs}
    with Store(tmp_path) as store:
        store.register_study(resolved)
        store.write("st", by["interleave=all", 1], _outcome(2.0))  # before its baseline
        store.write("st", by["default", 1], _outcome(1.0))
        store.write("st", by["default", 2], _outcome(1.0))
        store.write("st", by["interleave=all", 2], _outcome(4.0))  # after it
        speed = {(r["placement"], r["seed"]): r["speedup"] for r in store.rows("st")}
    assert speed == {("default", 1): 1.0, ("default", 2): 1.0, ("interleave=all", 1): 0.5, ("interleave=all", 2): 0.25}


def test_one_commit_of_many_runs_stores_each_runs_own_columns(tmp_path, resolved):
    """write_many works each configuration's params, balancing and repeat group out once per
    commit for runs sharing value objects: every row still has its own, and speedups are set for
    runs committed together with their baseline."""
    from numalab.results.store import repeat_group
    from numalab.study.canonical import config_hash, to_json
    from numalab.study.resolved import ResolvedRun

    with Store(tmp_path) as store:
        store.register_study(resolved)
        store.write_many("st", [(r, _outcome(1.0 if r.config["placement"] == "default" else 2.0)) for r in resolved.runs])
        speed = {(r["placement"], r["seed"]): r["speedup"] for r in store.rows("st")}
        assert speed == {("default", 1): 1.0, ("default", 2): 1.0, ("interleave=all", 1): 0.5, ("interleave=all", 2): 0.5}
        # Shared objects, and values equal in Python but not in JSON (1, 1.0, True).
        shared = dict(resolved.runs[0].config["params"])
        configs = [dict(resolved.runs[0].config, params=shared, seed=seed, sample_rate=rate)
                   for seed, rate in ((7, 1), (8, 1.0), (9, True), (10, 1))]
        configs.append(dict(configs[0], params=dict(shared, n=3000), seed=11))
        runs = [ResolvedRun(config_hash(c), c, to_json(c), "x", "y", "run", None) for c in configs]
        store.write_many("other", [(r, _outcome(1.0)) for r in runs])
        got = {r["hash"]: r for r in map(dict, store.db.execute("SELECT hash, params, balancing, repeat_group FROM runs WHERE study = 'other'"))}
    for r in runs:
        assert got[r.hash]["params"] == json.dumps(r.config["params"], sort_keys=True)
        assert got[r.hash]["balancing"] == json.dumps(r.config["balancing"], sort_keys=True)
        assert got[r.hash]["repeat_group"] == repeat_group(r.config)
    assert len({got[r.hash]["repeat_group"] for r in runs}) == 4  # seeds 7 and 10 are repetitions


def test_new_metrics_become_columns(tmp_path, resolved):
    with Store(tmp_path) as store:
        store.register_study(resolved)
        store.write("st", resolved.runs[0], _outcome(1.0, hint_fault_locality_pct=80.0, vmstat_numa_hint_faults=9))
        row = store.rows("st")[0]
    assert row["hint_fault_locality_pct"] == 80.0 and row["vmstat_numa_hint_faults"] == 9


def test_a_shared_configuration_runs_once_and_belongs_to_both_studies(tmp_path, resolved):
    other = expand(parse_study(STUDY.replace('"st"', '"other"')))
    with Store(tmp_path) as store:
        store.register_study(resolved)
        for r in resolved.runs:
            store.write("st", r, _outcome(1.0))
        store.register_study(other)
        assert store.complete_hashes(r.hash for r in other.runs) == {r.hash for r in other.runs}
        assert len(store.rows("other")) == 4 and len(store.rows()) == 8
        assert store.db.execute("SELECT count(*) FROM runs").fetchone()[0] == 4


def test_runs_dropped_from_a_study_leave_it(tmp_path, resolved):
    smaller = expand(parse_study(STUDY.replace('"interleave=all"', "")))
    with Store(tmp_path) as store:
        store.register_study(resolved)
        store.register_study(smaller)
        assert store.db.execute("SELECT count(*) FROM study_runs WHERE study = 'st'").fetchone()[0] == 2


def test_readers_see_committed_runs_while_the_writer_is_open(tmp_path, resolved):
    with Store(tmp_path) as store:
        store.register_study(resolved)
        store.write("st", resolved.runs[0], _outcome(1.0))
        other = sqlite3.connect(f"file:{tmp_path / 'numalab.db'}?mode=ro", uri=True)
        assert other.execute("SELECT count(*) FROM runs").fetchone()[0] == 1
        other.close()


def test_a_checkpoint_puts_the_committed_runs_into_the_database_file(tmp_path, resolved):
    """The sweep checkpoints while its workers exit: the database file alone then holds the runs
    (before it they are in the write-ahead log only)."""
    import shutil

    def runs_in_file_alone() -> int:
        alone = tmp_path / "alone"
        shutil.rmtree(alone, ignore_errors=True)
        alone.mkdir()
        shutil.copy(tmp_path / "numalab.db", alone / "numalab.db")  # without numalab.db-wal
        con = sqlite3.connect(alone / "numalab.db")
        try:
            return con.execute("SELECT count(*) FROM runs").fetchone()[0]
        finally:
            con.close()

    with Store(tmp_path) as store:
        store.register_study(resolved)
        store.write_many("st", [(r, _outcome(1.0)) for r in resolved.runs])
        assert runs_in_file_alone() == 0
        store.checkpoint()
        assert runs_in_file_alone() == len(resolved.runs)


def test_load_gives_a_dataframe_with_parameters_as_columns(tmp_path, resolved):
    with Store(tmp_path) as store:
        store.register_study(resolved)
        for r in resolved.runs:
            store.write("st", r, _outcome(1.0))
    df = load(tmp_path, study="st")
    assert len(df) == 4
    for col in ("hash", "config", "status", "time_s", "local_pct", "speedup", "param_n", "balancing_enabled", "vmstat_numa_pages_migrated", "label", "case"):
        assert col in df.columns, col
    assert "result" not in df.columns and "result" in load(tmp_path / "numalab.db", documents=True).columns
    with pytest.raises(UsageError, match="no study 'nope'.*studies: st"):
        load(tmp_path, study="nope")
    with pytest.raises(UsageError, match="no results store"):
        load(tmp_path / "missing")


@pytest.fixture
def stored(cli, tmp_path):
    study = tmp_path / "st.toml"
    study.write_text(STUDY)
    code, out, err = cli("study", str(study), "--results", str(tmp_path / "r"), "--workers", "1")
    assert code == 0, err
    return tmp_path / "r"


def test_results_list_show_export(cli, stored, tmp_path):
    code, out, _ = cli("results", "list", "--results", str(stored))
    assert code == 0 and out.count(" ok ") == 4 and "4 runs" in out
    first = out.splitlines()[1].split()[0]
    code, out, _ = cli("results", "show", first, "--results", str(stored))
    assert code == 0 and "configuration:" in out and "access map" in out
    code, out, _ = cli("results", "show", first, "--results", str(stored), "--json")
    assert json.loads(out)["schema"] == "numalab.result/1"
    code, _, err = cli("results", "show", "zz", "--results", str(stored))
    assert code == 2 and "not a run hash" in err
    code, out, _ = cli("results", "export", "--csv", str(tmp_path / "r.csv"), "--parquet", str(tmp_path / "r.parquet"), "--results", str(stored))
    assert code == 0 and (tmp_path / "r.csv").read_text().startswith("study,hash,")
    import pandas as pd

    assert len(pd.read_parquet(tmp_path / "r.parquet")) == 4
    code, _, err = cli("results", "export", "--results", str(stored))
    assert code == 2 and "--csv" in err


def test_parquet_without_pyarrow_says_how_to_install(stored, tmp_path, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_pyarrow(name, *args, **kwargs):
        if name == "pyarrow" or name.startswith("pyarrow."):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pyarrow)
    from numalab.results.frame import export

    with pytest.raises(UsageError, match="pip install pyarrow"):
        export(load(stored), parquet=tmp_path / "x.parquet")


def test_rerunning_a_complete_study_runs_nothing(cli, stored, tmp_path):
    code, out, _ = cli("study", str(tmp_path / "st.toml"), "--results", str(stored))
    assert code == 0 and "0 of 0 runs done" in out and "4 already in the store" in out
    code, out, _ = cli("study", str(tmp_path / "st.toml"), "--results", str(stored), "--dry-run")
    assert code == 0 and out.count("  stored  ") == 4 and "4 stored, 0 to run" in out
