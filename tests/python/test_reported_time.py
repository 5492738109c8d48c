"""The time a program reports (its own timer, NPB's "Time in seconds") beside the whole run
(docs/workloads.md §1.2)."""

from __future__ import annotations

import json

import pytest

# e5-2620v4-2s: Xeon E5-2620 v4 at 2.1 GHz (the preset's core.frequency_ghz).
FREQ_HZ = 2.1e9
INIT, ITER, VERIFY, TIMED = 8.4e7, 4.2e7, 2.1e7, 5

TOY = f"""
name = "timed-toy"
description = "init, one untimed iteration, {TIMED} timed iterations, an untimed verification"
program = [
  {{ phases = ["init"] }},
  {{ phases = ["iter"] }},
  {{ phases = ["iter"], repeat = {TIMED}, timed = true }},
  {{ phases = ["verify"] }},
]

[params]
threads = 1

[[regions]]
name = "a"
bytes = 4096

[[phases]]
name = "init"
cycles = {INIT}

[[phases]]
name = "iter"
cycles = {ITER}

[[phases]]
name = "verify"
cycles = {VERIFY}
"""


def sim(cli, tmp_path, text: str) -> dict:
    path = tmp_path / "toy.toml"
    path.write_text(text)
    code, out, err = cli("sim", "--machine", "e5-2620v4-2s", "--workload", str(path), "--noise", "off", "--json")
    assert code == 0, err
    return json.loads(out)


def test_reported_time_excludes_initialisation_and_the_untimed_iteration_exactly(cli, tmp_path):
    doc = sim(cli, tmp_path, TOY)
    assert doc["reported_time_source"] == "timer"
    assert doc["reported_time_s"] == pytest.approx(TIMED * ITER / FREQ_HZ, rel=1e-12)
    assert doc["time_s"] == pytest.approx((INIT + (1 + TIMED) * ITER + VERIFY) / FREQ_HZ, rel=1e-12)
    assert doc["processes"][0]["reported_time_s"] == doc["reported_time_s"]


def test_a_workload_without_a_timer_reports_the_whole_run(cli, tmp_path):
    doc = sim(cli, tmp_path, TOY.replace(", timed = true", ""))
    assert doc["reported_time_source"] == "whole-run"
    assert doc["reported_time_s"] == doc["time_s"]


def test_timed_must_be_true_or_false(cli, tmp_path):
    path = tmp_path / "toy.toml"
    path.write_text(TOY.replace("timed = true", 'timed = "yes"'))
    code, out, err = cli("sim", "--machine", "e5-2620v4-2s", "--workload", str(path), "--json")
    assert code == 2
    assert err.startswith("numalab: ") and "program[2].timed" in err and len(err.strip().splitlines()) == 1


STUDY_TOY = TOY.replace('[params]\nthreads = 1\n', '[params]\nthreads = 1\ninit_cycles = 84000000\n').replace(
    f'name = "init"\ncycles = {INIT}', 'name = "init"\ncycles = "init_cycles"'
)


def _study(toy: str, compare: str | None) -> str:
    line = f'compare_time = "{compare}"\n' if compare else ""
    return f"""name = "timed"
machine = "e5-2620v4-2s"
workload = "{toy}"
{line}
[params]
threads = 1

[baseline]
label = "base"
params = {{ init_cycles = 84000000 }}

[[runs]]
label = "base"
params = {{ init_cycles = 84000000 }}

[[runs]]
label = "slow-init"
params = {{ init_cycles = 252000000 }}
"""


@pytest.mark.parametrize("compare", [None, "reported_time_s", "time_s"])
def test_a_study_compares_the_time_it_names_and_the_store_keeps_both(tmp_path, compare):
    """Tripling the untimed initialisation leaves the reported time alone and slows the whole run."""
    from inline_backend import run_stored

    from numalab.results import load
    from numalab.results.store import Store

    toy = tmp_path / "toy.toml"
    toy.write_text(STUDY_TOY)
    run_stored(_study(str(toy), compare), tmp_path / "s.toml", tmp_path / "r")
    df = load(tmp_path / "r").set_index("label")
    slow = df.loc["slow-init"]
    assert slow["reported_time_s"] == pytest.approx(TIMED * ITER / FREQ_HZ, rel=1e-3)
    assert slow["time_s"] == pytest.approx((3 * INIT + (1 + TIMED) * ITER + VERIFY) / FREQ_HZ, rel=1e-3)
    doc = json.loads(slow["result"]) if "result" in df.columns else None
    if doc is not None:
        assert doc["reported_time_s"] == slow["reported_time_s"]
    whole = (INIT + (1 + TIMED) * ITER + VERIFY) / (3 * INIT + (1 + TIMED) * ITER + VERIFY)
    want = whole if compare == "time_s" else 1.0
    assert slow["speedup"] == pytest.approx(want, rel=1e-3)
    with Store(tmp_path / "r", create=False) as store:
        assert store.compare_time("timed") == (compare or "reported_time_s")


def test_the_report_says_which_time_it_compares(cli, tmp_path):
    from inline_backend import run_stored

    toy = tmp_path / "toy.toml"
    toy.write_text(STUDY_TOY)
    run_stored(_study(str(toy), "time_s"), tmp_path / "s.toml", tmp_path / "r")
    code, _, err = cli("report", str(tmp_path / "s.toml"), "-r", str(tmp_path / "r"), "-o", str(tmp_path / "rep.md"))
    assert code == 0, err
    text = (tmp_path / "rep.md").read_text()
    assert "time being the whole run (time\\_s" in text and "### Time (s): time_s" in text


def test_every_npb_descriptor_times_its_benchmark_section_and_cites_the_timer():
    from numalab.workload.descriptor import load, versions, with_version

    for name in ("ep", "cg", "mg", "ft", "bt", "sp", "lu", "is"):
        desc, _, text = load(name)
        assert "timer_start" in text and "timer_stop" in text and "3.3.1" in text, name
        for v in versions(desc):
            timed = [s.timed for s in with_version(desc, v).program]
            assert any(timed), (name, v)
            # One contiguous timed section.
            first, last = timed.index(True), len(timed) - 1 - timed[::-1].index(True)
            assert all(timed[first:last + 1]), (name, v)
            # NAS's releases start the timer after initialisation and, but for EP, one untimed iteration
            # (FT's first step is its whole untimed warm-up run).
            if v in ("3.4.2", "3.3.1"):
                assert first >= (1 if name in ("ep", "ft") else 2), (name, v)


@pytest.mark.parametrize("text, want", [
    (" Time in seconds =                        12.34\n", 12.34),  # print_results.f90: f12.2 after the label
    (" CG Benchmark Completed.\n Time in seconds =             0.05\n Total threads =", 0.05),  # c_print_results.c: %12.2f
    ("no time here\n", None),
    (" Time in seconds = abc\n", None),
])
def test_npb_time_is_read_from_its_summary(text, want):
    from numalab.results.reported import npb_time

    assert npb_time(text) == want


def test_a_measured_program_that_prints_npb_s_time_reports_it(tmp_path):
    """`numalab run` passes the command's output on and reads NPB's "Time in seconds =" from it."""
    import subprocess
    import sys

    from numalab.exceptions import NumalabError
    from numalab.runner import host

    try:
        host.agent_path()
    except NumalabError as e:
        pytest.skip(str(e))
    out = tmp_path / "doc.json"
    script = "sleep 0.3; printf ' CG Benchmark Completed.\\n Time in seconds =                         0.12\\n'"
    r = subprocess.run([sys.executable, "-m", "numalab.cli.main", "run", "-o", str(out), "--", "sh", "-c", script],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "Time in seconds =                         0.12" in r.stdout  # the command's output is still its own
    doc = json.loads(out.read_text())
    assert (doc["reported_time_s"], doc["reported_time_source"]) == (0.12, "program-output")
    assert doc["processes"][0]["reported_time_s"] == 0.12 and doc["time_s"] >= 0.3
    r = subprocess.run([sys.executable, "-m", "numalab.cli.main", "run", "-o", str(out), "--", "true"],
                       capture_output=True, text=True, timeout=120)
    doc = json.loads(out.read_text())
    assert doc["reported_time_source"] == "whole-run" and doc["reported_time_s"] == doc["time_s"]


@pytest.mark.parametrize("compare", ["reported_time_s", "time_s"])
def test_a_study_s_sensitivity_varies_the_time_it_compares(tmp_path, compare):
    """An estimate on the untimed initialisation moves whole-run speedups only."""
    from numalab.study import expand, parse_study
    from numalab.study.sensitivity import run_for_study, study_path

    toy = tmp_path / "toy.toml"
    toy.write_text(STUDY_TOY + '\n[estimates]\n"phases.init.cycles" = { low = 0.5, high = 2.0, source = "test" }\n')
    text = _study(str(toy), compare) + "sensitivity = true\n"
    text = text.replace("sensitivity = true\n", "").replace('[params]\n', 'sensitivity = true\n\n[params]\n', 1)
    resolved = expand(parse_study(text, str(tmp_path / "s.toml")))
    run_for_study(resolved, tmp_path)
    doc = json.loads(study_path(tmp_path, "timed").read_text())
    speedups = [s for s in doc["comparisons"][0]["speedups"].values() if s is not None]
    spread = max(speedups) - min(speedups)
    assert (spread < 1e-3) == (compare == "reported_time_s"), speedups


def test_a_store_of_layout_2_is_migrated_and_its_runs_without_a_reported_time_run_again(tmp_path):
    import sqlite3

    from inline_backend import run_stored

    from numalab.results.store import SCHEMA_VERSION, Store

    toy = tmp_path / "toy.toml"
    toy.write_text(STUDY_TOY)
    text = _study(str(toy), "time_s")
    run_stored(text, tmp_path / "s.toml", tmp_path / "r")
    # What numalab wrote before it recorded the program's time.
    con = sqlite3.connect(tmp_path / "r" / "numalab.db", isolation_level=None)
    con.execute("DROP VIEW results")
    con.execute("ALTER TABLE runs DROP COLUMN reported_time_s")
    con.execute("ALTER TABLE studies DROP COLUMN compare_time")
    con.execute("PRAGMA user_version = 2")
    con.close()
    with Store(tmp_path / "r") as store:
        assert store.db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 3
        assert store.complete_hashes() == set()  # no reported time: not complete
        assert store.compare_time("timed") == "reported_time_s"  # not recorded: the default
    summary = run_stored(text, tmp_path / "s.toml", tmp_path / "r")
    assert (summary.skipped, summary.ok) == (0, 2)
    with Store(tmp_path / "r", create=False) as store:
        assert len(store.complete_hashes()) == 2 and store.compare_time("timed") == "time_s"


def test_each_copy_of_a_multi_copy_run_reports_its_own_timer(cli, tmp_path):
    doc = sim(cli, tmp_path, TOY.replace("[params]\nthreads = 1\n", "[params]\nthreads = 1\ncopies = 2\n"))
    want = TIMED * ITER / FREQ_HZ
    assert [p["reported_time_s"] for p in doc["processes"]] == pytest.approx([want, want], rel=1e-12)
    assert doc["reported_time_s"] == max(p["reported_time_s"] for p in doc["processes"])


def test_numalab_workloads_says_what_the_timer_covers(cli):
    code, out, _ = cli("workloads", "cg", "--json")
    assert code == 0 and json.loads(out)["timed_phases"] == ["spmv", "cgvec"]
    code, out, _ = cli("workloads", "stream", "--json")
    assert code == 0 and json.loads(out)["timed_phases"] is None
    code, out, _ = cli("workloads", "stream")
    assert "timer: none (the time it reports is the whole run)" in out
