"""The speed work on studies changes no result: S1's runs stored by a sweep (workloads resolved
once and kept, runs committed together) have the documents of runs made from scratch; the kept
workloads are copies, and an edited descriptor is read again; a signal during a commit waits for
it, and the runs it held are stored."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from numalab.exceptions import UsageError
from numalab.results.store import Store
from numalab.results.text import document_text
from numalab.spec import RunSpec, workload_cache
from numalab.study import expand, load_study, worker
from numalab.study.executors import LocalBackend
from numalab.study.sweep import _signals_deferred, run_study
from numalab.workload import descriptor

S1 = Path(__file__).resolve().parents[2] / "studies" / "s1-autonuma-npb.toml"


def _s1_ep_runs():
    """S1's EP runs (class C, 64 threads, every configuration: about 0.05 s each), default NPB."""
    resolved = expand(load_study(S1))
    runs = [r for r in resolved.runs if r.config["workload"] == "ep" and r.config.get("npb_version") == "rwcp-2.3-c"]
    assert len(runs) == 12
    return resolved, runs


def test_s1_documents_from_a_sweep_equal_runs_made_from_scratch(tmp_path):
    resolved, runs = _s1_ep_runs()
    resolved.runs[:] = runs
    with Store(tmp_path) as store:
        summary = run_study(resolved, store, lambda: LocalBackend(2))
        assert summary.ok == 12
        stored = {r["hash"]: r["result"] for r in store.rows(resolved.name, documents=True)}
    for run in runs:
        workload_cache.clear()  # resolved from the descriptor, as before workloads were kept
        doc = worker.simulate(run.config).doc
        assert doc["status"] == "ok"
        assert stored[run.hash] == document_text(doc), f"{run.label}: the stored document differs"
        # The text json.dumps stored before orjson spells some floats otherwise (results/text.py),
        # and reads back as the same document.
        before = json.dumps(doc, sort_keys=True, separators=(",", ":"))
        assert json.loads(stored[run.hash]) == json.loads(before) == doc, f"{run.label}: the stored values differ"


def test_one_worker_stores_the_text_its_worker_encodes(tmp_path):
    """Workers encode their documents whatever their number (sending the document to the client
    to encode there cost more CPU in all): one worker's stored text is, byte for byte, the text
    ``run_config`` gives, which reads back as the document ``json.dumps`` stored before."""
    resolved, runs = _s1_ep_runs()
    resolved.runs[:] = runs[:3]
    with Store(tmp_path) as store:
        assert run_study(resolved, store, lambda: LocalBackend(1)).ok == 3
        stored = {r["hash"]: (r["result"], r["time_s"], r["local_pct"]) for r in store.rows(resolved.name, documents=True)}
    for run in resolved.runs:
        doc = worker.run_config(run.config)
        assert stored[run.hash] == (doc["result"], doc["columns"]["time_s"], doc["columns"]["local_pct"]), run.label
        assert doc["result"] == document_text(json.loads(doc["result"]))


class _Made:
    def __init__(self, doc):
        self.doc = doc


def test_a_document_that_is_not_json_fails_its_run_only():
    """Encoding happens after the run, in the worker: a document JSON cannot hold is that run's
    failure, with the reason, never the batch's."""
    good = {"schema": "numalab.result/1", "time_s": 1.0}
    ok, bad = worker.run_batch([{"doc": good}, {"doc": {"schema": "numalab.result/1", "x": {1, 2}}}], lambda c: _Made(c["doc"]))
    assert ok["result"] == '{"schema":"numalab.result/1","time_s":1.0}' and ok["columns"]["time_s"] == 1.0
    assert bad["status"] == "failed" and bad["result"] is None and bad["wall_s"] >= 0 and bad["cpu_s"] >= 0
    assert bad["error"].startswith("TypeError: Object of type set is not JSON serializable")


def test_a_kept_workload_is_the_resolved_one_and_a_fresh_copy_each_time():
    workload_cache.clear()
    fresh = descriptor.resolve("bt", {"class": "C", "threads": 64}, version="rwcp-2.3-c")
    first = workload_cache.resolve("bt", {"class": "C", "threads": 64}, "rwcp-2.3-c")
    assert first == fresh and json.dumps(first) == json.dumps(fresh)
    first["regions"][0]["bytes"] = -1
    assert workload_cache.resolve("bt", {"class": "C", "threads": 64}, "rwcp-2.3-c") == fresh
    # Other values are other workloads: threads = true is not threads = 1.
    assert workload_cache.resolve("bt", {"class": "A", "threads": 64}, "rwcp-2.3-c") != fresh
    assert workload_cache.resolve("dgemv", {"threads": 1}, None)["params"]["threads"] == 1
    with pytest.raises(UsageError, match="threads"):
        workload_cache.resolve("dgemv", {"threads": True}, None)


def test_an_edited_descriptor_is_read_again(tmp_path):
    text = (Path(descriptor.LIBRARY) / "dgemv.toml").read_text()
    path = tmp_path / "mine.toml"
    path.write_text(text)
    before = RunSpec.create("e5-2620v4-2s", str(path)).bind().workload
    edited = text.replace("name = \"dgemv\"", "name = \"mine\"", 1)
    assert edited != text
    path.write_text(edited)
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    after = RunSpec.create("e5-2620v4-2s", str(path)).bind().workload
    assert (before["name"], after["name"]) == ("dgemv", "mine")


@pytest.fixture
def ctrl_c_interrupts():
    """Python's own SIGINT handler (a test before may have left another one, e.g. dask's)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_a_signal_during_a_commit_waits_for_it(ctrl_c_interrupts):
    with pytest.raises(KeyboardInterrupt):
        with _signals_deferred():
            os.kill(os.getpid(), signal.SIGINT)
            finished_the_block = True
    assert finished_the_block
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_ctrl_c_while_runs_are_committed_keeps_them(tmp_path, monkeypatch, ctrl_c_interrupts):
    resolved, runs = _s1_ep_runs()
    resolved.runs[:] = runs[:4]
    write_many, update = Store.write_many, Store._update_speedups
    commits, signalled = [], []

    def counted(self, study, finished):
        commits.append(len(finished))
        return write_many(self, study, finished)

    def interrupted(self, study, hashes=None, *rest):
        if hashes is not None and not signalled:  # runs', not the study's registration
            signalled.append(True)
            os.kill(os.getpid(), signal.SIGINT)  # inside the transaction, rows written, not committed
        return update(self, study, hashes, *rest)

    monkeypatch.setattr(Store, "write_many", counted)
    monkeypatch.setattr(Store, "_update_speedups", interrupted)
    with Store(tmp_path) as store:
        summary = run_study(resolved, store, lambda: LocalBackend(1))
        assert summary.interrupted
        stored = {r["hash"] for r in store.rows(resolved.name) if r["status"] == "ok"}
    # One commit, not cut short (no rollback and second try), and its runs are kept.
    assert len(commits) == 1 and len(stored) == commits[0] >= 1


def test_repetitions_resolved_once_expand_as_every_point_resolved(monkeypatch):
    """Points that differ only in their seed share one resolution: the runs (hashes, stored
    configurations, labels, cases, baselines) are those of resolving every point."""
    from numalab.study import parse_study
    import importlib

    module = importlib.import_module("numalab.study.expand")
    texts = [S1.read_text(), 'name = "r"\nmachine = "e5-2620v4-2s"\nworkload = "dgemv"\nseeds = [3, 1, 2]\n'
             'placement = "interleave=all:init=serial"\n[baseline]\nplacement = "default"\n[sweep]\nbalancing = [false, true]\n']
    kept = [expand(parse_study(t, "s.toml")).runs for t in texts]
    monkeypatch.setattr(module._Resolver, "config", lambda self, p: self._config(p)[0])
    every = [expand(parse_study(t, "s.toml")).runs for t in texts]
    assert len(kept[0]) == 336 and len(kept[1]) == 12  # 2 x 3 runs, each with its baseline
    assert kept == every


def test_runs_are_committed_together_while_the_sweep_runs(tmp_path, monkeypatch):
    """Commits group the runs that returned within half a second (not one transaction per run),
    and still happen while the sweep runs, not only at its end."""
    from numalab.study import parse_study

    resolved = expand(parse_study('name = "c"\nmachine = "e5-2620v4-2s"\nworkload = "dgemv"\nrepetitions = 40\n'
                                  'params = { n = 10000, reps = 20, threads = 16 }\n', "c.toml"))
    write_many = Store.write_many
    commits = []

    def counted(self, study, finished):
        commits.append(len(finished))
        return write_many(self, study, finished)

    monkeypatch.setattr(Store, "write_many", counted)
    with Store(tmp_path) as store:
        summary = run_study(resolved, store, lambda: LocalBackend(1))
        assert summary.ok == 40 and len(store.rows("c")) == 40
    assert sum(commits) == 40
    assert 1 < len(commits) < 40, commits


@pytest.mark.parametrize("order", ["together", "baseline last", "baseline first"])
def test_speedups_whichever_way_runs_and_baselines_are_committed(tmp_path, order):
    from numalab.study import parse_study

    resolved = expand(parse_study('name = "s"\nmachine = "e5-2620v4-2s"\nworkload = "dgemv"\n[baseline]\nplacement = "default"\n'
                                  '[sweep]\nplacement = ["interleave=all", "membind=1"]\n', "s.toml"))
    times = {"interleave=all": 2.0, "membind=1": 4.0, "default": 1.0}

    def done(run):
        t = times[run.config["placement"]]
        return run, {"status": "ok", "error": None, "wall_s": 0.1, "result": '{"schema":"numalab.result/1"}',
                     "columns": {"time_s": t, "reported_time_s": t}}

    runs = [r for r in resolved.runs if r.role == "run"]
    baseline = [r for r in resolved.runs if r.role == "baseline"]
    commits = {"together": [runs + baseline], "baseline last": [runs, baseline], "baseline first": [baseline, runs]}[order]
    with Store(tmp_path) as store:
        store.register_study(resolved)
        for commit in commits:
            store.write_many("s", [done(r) for r in commit])
        speedups = {r["placement"]: r["speedup"] for r in store.rows("s")}
    assert speedups == {"interleave=all": 0.5, "membind=1": 0.25, "default": 1.0}


def test_repetitions_in_a_batch_read_their_spec_once_and_run_as_from_scratch(monkeypatch):
    """A batch's runs that differ only in their seed read their configuration once (worker.
    _SeedsOfOneSpec); their documents are those of runs read one by one."""
    import pickle

    from numalab.study import parse_study

    resolved = expand(parse_study('name = "r"\nmachine = "e5-2620v4-2s"\nworkload = "dgemv"\nrepetitions = 3\n'
                                  'params = { n = 4000, reps = 2, threads = 4 }\n[sweep]\nplacement = ["default", "interleave=all"]\n', "r.toml"))
    configs = pickle.loads(pickle.dumps([r.config for r in resolved.runs]))  # a batch as a worker receives it
    read, from_canonical = [], RunSpec.from_canonical
    monkeypatch.setattr(RunSpec, "from_canonical", staticmethod(lambda c: read.append(c) or from_canonical(c)))
    batch = worker.run_batch(configs)
    assert len(configs) == 6 and len(read) == 2
    monkeypatch.undo()
    alone = [worker.run_config(c)["result"] for c in configs]
    assert [o["result"] for o in batch] == alone and len(set(alone)) == 6


_SWEPT = ('name = "i"\nmachine = "e5-2620v4-2s"\nworkload = "dgemv"\nrepetitions = 3\nparams = { n = 4000, reps = 8, threads = 8 }\n'
          '[sweep]\nplacement = ["default", "interleave=all", "membind=1", "preferred=0"]\nbalancing = [false, true]\n')


@pytest.mark.parametrize("workers", [1, 2])
def test_documents_encoded_at_a_batch_end_are_those_encoded_after_each_run(tmp_path, workers):
    """Workers encode a batch's documents after its last run, with the cyclic collector paused
    meanwhile: the stored texts and every derived column are those of the path before, where
    each run's document was encoded (sorted keys, results/text.py) and its columns computed right
    after it, one run at a time. 24 runs: batches of several runs, repetitions sharing a spec."""
    import gc

    from numalab.results.derived import columns
    from numalab.study import parse_study

    resolved = expand(parse_study(_SWEPT, "i.toml"))
    assert len(resolved.runs) == 24
    with Store(tmp_path) as store:
        assert run_study(resolved, store, lambda: LocalBackend(workers)).ok == 24
        stored = {r["hash"]: r for r in store.rows("i", documents=True)}
    assert gc.isenabled()
    for run in resolved.runs:
        doc = worker.simulate(run.config).doc
        row = stored[run.hash]
        assert row["result"] == document_text(doc), run.label
        cols = columns(doc)
        assert cols and all(row[k] == v for k, v in cols.items()), run.label


def test_a_batch_pauses_the_collector_and_gives_it_back():
    """The collector is off while a batch runs (its documents kept until they are encoded), and
    as it was after it: back on, or still off when it was off before; a failed run changes
    neither."""
    import gc

    seen = []

    def run(config):
        seen.append(gc.isenabled())
        if config.get("fail"):
            raise ValueError("no such run")
        return _Made({"schema": "numalab.result/1", "time_s": 1.0})

    assert gc.isenabled()
    out = worker.run_batch([{}, {"fail": True}, {}], run)
    assert [o["status"] for o in out] == ["ok", "failed", "ok"] and out[1]["error"] == "ValueError: no such run"
    assert seen == [False] * 3 and gc.isenabled()
    gc.disable()
    try:
        worker.run_batch([{}], run)
        assert not gc.isenabled()
    finally:
        gc.enable()
