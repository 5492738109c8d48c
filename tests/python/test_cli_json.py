"""``--json`` where scripts read: stdout is one JSON document alone (progress and notes on
stderr), holding what the text shows (issue 20 item 7)."""

from __future__ import annotations

import json

import pytest

from numalab.study import executors
from numalab.workload import descriptor

from inline_backend import InlineBackend

STUDY = '''name = "js"
machine = "e5-2620v4-2s"
workload = "dgemv"
params = { n = 2000, reps = 2, threads = 4 }
[sweep]
placement = ["default", "interleave=all"]
'''


def _json(cli, *args: str, code: int = 0):
    rc, out, err = cli(*args)
    assert rc == code, err
    return json.loads(out)


def test_workloads_list(cli):
    doc = _json(cli, "workloads", "--json")
    assert [w["name"] for w in doc] == descriptor.library_names()
    assert all(w["description"] for w in doc)


def test_one_workload(cli):
    doc = _json(cli, "workloads", "cg", "--json")
    assert doc["name"] == "cg" and doc["file"].endswith("cg.toml")
    assert doc["parameters"]["class"] == "C" and "B" in doc["classes"]
    assert doc["versions"] == ["3.4.2", "3.3.1"] and doc["default_version"] == "3.4.2"


@pytest.fixture
def inline(monkeypatch):
    monkeypatch.setattr(executors, "LocalBackend", lambda n: InlineBackend())


def test_study_then_results_list(cli, tmp_path, inline):
    study = tmp_path / "js.toml"
    study.write_text(STUDY)
    results = tmp_path / "r"
    plan = _json(cli, "study", str(study), "--results", str(results), "--dry-run", "--json")
    assert plan["study"] == "js" and plan["to_run"] == 2 and plan["stored"] == 0
    assert [r["label"] for r in plan["runs"]] == ["default", "interleave=all"] and not any(r["stored"] for r in plan["runs"])

    doc = _json(cli, "study", str(study), "--results", str(results), "--json")
    assert (doc["study"], doc["runs"], doc["done"], doc["ok"], doc["failed"], doc["skipped"]) == ("js", 2, 2, 2, 0, 0)
    assert doc["store"].endswith("numalab.db") and doc["failures"] == [] and doc["interrupted"] is False
    assert doc["report"].startswith("numalab report ")

    again = _json(cli, "study", str(study), "--results", str(results), "--json")
    assert (again["done"], again["skipped"]) == (0, 2)

    listed = _json(cli, "results", "list", "--results", str(results), "--json")
    assert listed["store"] == doc["store"]
    runs = listed["runs"]
    assert [r["label"] for r in runs] == ["default", "interleave=all"]
    assert {r["hash"] for r in runs} == {r["hash"] for r in plan["runs"]}
    assert all(r["status"] == "ok" and r["time_s"] > 0 and r["config"]["workload"] == "dgemv" for r in runs)
    assert _json(cli, "results", "list", "--results", str(results), "--status", "failed", "--json")["runs"] == []
