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
    assert doc["versions"] == ["3.4.2", "3.3.1", "rwcp-2.3-c", "snu-3.3-c"] and doc["default_version"] == "3.4.2"


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


def _side(pages: list[int], migrations: list[int]):
    from numalab.vm import check

    return check.Side(pages, pages[::-1], {"numa_hit": 100, "numa_miss": 3}, check.Threads(migrations, [50.0] * len(migrations), 2.0))


def test_vm_check_tables_as_json(cli, monkeypatch):
    from numalab.vm import check

    def fake_compare(case, memory, accel, timeout, say, runs=1):
        say(f"vm check {case.name}: running")  # progress goes to stderr
        c = check.Comparison(case, _side([600, 400], [1, 2]), _side([550, 450], [3, 3]), "6.1.0", "6.1")
        if case.name == "interleave":
            c.failures["vm"] = "pages not spread"
        return c

    # the CLI runs its cases through compare_many (cases share guest boots where they can)
    monkeypatch.setattr(check, "compare_many", lambda cases, *a, **k: (fake_compare(c, *a, **k) for c in cases))
    doc = _json(cli, "vm", "check", "--case", "serial-init", "--case", "interleave", "--json", code=1)
    assert doc["ok"] is False and [c["case"] for c in doc["cases"]] == ["serial-init", "interleave"]
    first = doc["cases"][0]
    assert first["pages"]["sim"] == {"after_init": [600, 400], "after_run": [400, 600]}
    # One guest run (the default --runs 1): itself, and no scheduler range for a dgemv case.
    assert [r["after_init"] for r in first["vm_runs"]] == [[550, 450]] and first["vm_runs"][0]["fullest_node_pct"] == 55.0
    assert first["outside_guest_range"] == []
    assert first["pages"]["vm"]["after_init"] == [550, 450]
    assert first["counters"]["numa_hit"] == {"sim": 100, "vm": 100} and first["counters"]["numa_miss"]["vm"] == 3
    assert first["threads"]["vm"]["nr_migrations"] == [3, 3] and first["threads"]["sim"]["migrations_per_thread_s"] == 0.75
    assert first["ok"] is True and first["kernel_release"] == "6.1.0" and first["sim_kernel"] == "6.1"
    assert doc["cases"][1]["failures"] == {"vm": "pages not spread"}


def test_vm_check_list_as_json(cli):
    from numalab.vm import check

    doc = _json(cli, "vm", "check", "--list", "--json")
    assert [c["name"] for c in doc] == list(check.CASES)
    assert all(c["expect"] for c in doc)
    assert {c["name"]: c["agree_pct"] for c in doc if c["agree_pct"] is not None} == {
        "alloc-rows": 0.5, "alloc-rows-parallel": 0.5, "alloc-block": 0.5, "filemap": 0.2, "filemap-random": 0.2,
        "filemap-procs": 0.2}


def test_vm_setup_as_json(cli, monkeypatch, tmp_path):
    from numalab.vm import setup

    guest = setup.Guest("/usr/bin/qemu-system-x86_64", str(tmp_path / "bzImage"), "6.1.0-35-amd64", "debian", "/c/busybox",
                        "/c/numactl", "/c/libnuma.so.1", "/c/lib")

    def fake_setup(kernel, say):
        say("cache:   somewhere")
        return guest

    monkeypatch.setattr(setup, "setup", fake_setup)
    monkeypatch.setattr(setup, "find_agent", lambda: tmp_path / "numalab-agent")
    doc = _json(cli, "vm", "setup", "--json")
    assert doc["kernel_version"] == "6.1.0-35-amd64" and doc["qemu"] == "/usr/bin/qemu-system-x86_64"
    assert doc["agent"] == str(tmp_path / "numalab-agent") and doc["agent_missing"] is None
    assert isinstance(doc["kvm_usable"], bool) and doc["cache"]
