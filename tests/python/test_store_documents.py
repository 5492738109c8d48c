"""A stored result document is checked when read: one that is not JSON, not a JSON object, has
no numalab ``schema`` or is missing for a finished run is named (hash, case, label, seed) and
what is wrong with it said; ``results list`` marks it, ``results show`` refuses it in one line,
and a report leaves it out and says which runs and why."""

from __future__ import annotations

import json
import shutil
import sqlite3

import pytest

from numalab.results.store import Store, document_problem

from inline_backend import run_stored

STUDY = """
name = "docs"
machine = "e5-2620v4-2s"
workload = "dgemv"
params = { n = 2000, reps = 2 }
[baseline]
placement = "default"
label = "base"
[[runs]]
label = "interleave"
placement = "interleave=all"
[[runs]]
label = "bind0"
placement = "membind=0"
[[runs]]
label = "bind1"
placement = "membind=1"
"""
DAMAGE = {"interleave": '{"broken', "bind0": '{"time_s": 1.0}', "bind1": '[1, 2]'}
WHY = {"interleave": "its result document is not JSON", "bind0": "its result document has no numalab schema field",
       "bind1": "its result document is not a JSON object"}


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    root = tmp_path_factory.mktemp("documents")
    assert run_stored(STUDY, root / "docs.toml", root / "r").ok == 4
    return root / "r"


@pytest.fixture
def damaged(good, tmp_path):
    shutil.copytree(good, tmp_path / "r")
    con = sqlite3.connect(tmp_path / "r" / "numalab.db", isolation_level=None)
    hashes = {}
    for label, text in DAMAGE.items():
        h = con.execute("SELECT hash FROM study_runs WHERE label = ?", (label,)).fetchone()[0]
        con.execute("UPDATE runs SET result = ? WHERE hash = ?", (text, h))
        hashes[label] = h
    con.close()
    return tmp_path / "r", hashes


def test_document_problems():
    assert document_problem(json.dumps({"schema": "numalab.result/1"}), "ok") is None
    assert document_problem(None, "failed") is None
    assert document_problem(None, "ok") == "it finished but its result document is missing"
    assert document_problem('{"schema": "other/1"}', "ok") == "its result document has an unknown schema 'other/1'"
    for label, text in DAMAGE.items():
        assert document_problem(text, "ok") == WHY[label]


def test_store_names_each_damaged_run(damaged):
    results, hashes = damaged
    with Store(results, create=False) as store:
        assert store.damaged("docs") == {hashes[label]: WHY[label] for label in DAMAGE}


def test_results_list_marks_damaged_runs(damaged, cli):
    results, hashes = damaged
    code, out, err = cli("results", "list", "-r", str(results))
    assert code == 0, err
    for line in out.splitlines():
        label = next((lb for lb, h in hashes.items() if line.startswith(h[:12])), None)
        assert (f"[damaged: {WHY[label]}]" in line) if label else "[damaged" not in line, line
    assert err.count("\n") == 1 and err.startswith("numalab: warning: 3 of these runs have their stored result document damaged")
    code, out, _ = cli("results", "list", "-r", str(results), "--json")
    runs = {r["label"]: r["damaged"] for r in json.loads(out)["runs"]}
    assert runs == {"base": None, **WHY}


def test_results_show_names_the_run_and_what_is_wrong(damaged, cli):
    results, hashes = damaged
    code, _, err = cli("results", "show", hashes["interleave"][:8], "-r", str(results))
    assert code == 1 and err.count("\n") == 1, err
    assert f"run {hashes['interleave'][:12]} (dgemv e5-2620v4-2s interleave=all, seed 1): its result document is not JSON" in err


def test_report_leaves_damaged_runs_out_and_says_which(damaged, cli, tmp_path):
    results, hashes = damaged
    code, _, err = cli("report", str(results), "-o", str(tmp_path / "r.html"))
    assert code == 0, err
    warnings = [line for line in err.splitlines() if line.startswith("numalab: warning:")]
    assert len(warnings) == 3
    for label, h in hashes.items():
        assert any(f"run {h[:12]} (dgemv | {label}, seed 1): {WHY[label]}; left out of the report" in w for w in warnings), warnings
    html = (tmp_path / "r.html").read_text()
    assert "3 runs are left out of this report" in html and all(f"run {h[:12]}" in html for h in hashes.values())
