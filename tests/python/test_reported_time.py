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
