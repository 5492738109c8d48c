"""Where threads run, from the CLI and the RunSpec: --noise, --explain-sched (docs/scheduler.md)."""

import json

import pytest

from numalab.spec import RunSpec

SMALL = ("--machine", "vm-4", "--workload", "stream", "--n", "200000", "--threads", "4")


def doc(cli, *args: str) -> dict:
    code, out, err = cli("sim", *SMALL, *args, "--json")
    assert code == 0, err
    return json.loads(out)


def test_noise_off_gives_the_same_time_whatever_the_seed_and_noise_on_does_not(cli):
    quiet = {doc(cli, "--noise", "off", "--seed", str(s))["time_s"] for s in (1, 2)}
    assert len(quiet) == 1
    noisy = {doc(cli, "--seed", str(s))["time_s"] for s in (1, 2, 3)}
    assert len(noisy) >= 2, noisy


def test_explain_sched_prints_every_placement_and_the_threads(cli):
    code, out, err = cli("sim", *SMALL, "--explain-sched", "--kernel", "3.13")
    assert code == 0, err
    assert "scheduler decisions" in out
    assert out.count(" fork ") >= 3 and " exec " in out
    assert "nr_migrations" in out and "away_pct" in out
    assert "runnable threads per CPU over" in out and "run queues: CPU-time at 0 / 1 / 2 / 3+ runnable threads" in out
    d = doc(cli, "--explain-sched")
    # Every CPU's seconds at 0, 1, 2 and 3+ runnable threads cover the same span.
    span = d["sched_rq"]["span_s"]
    assert span > 0 and all(abs(sum(c["rq_s"]) - span) < 1e-9 * span for c in d["sched_cpus"])
    paths = [e["path"] for e in d["sched_events"]]
    assert paths[:4] == ["exec", "fork", "fork", "fork"]
    assert all(t["cpu_history"][0][1] >= 0 for t in d["threads"])
    assert "sched_events" not in doc(cli)


def test_bad_noise_value_is_a_usage_error(cli):
    code, _, err = cli("sim", *SMALL, "--noise", "maybe")
    assert code == 2
    assert "--noise: 'maybe' is not on or off" in err


def test_noise_is_a_run_setting_in_the_canonical_form_and_the_config_language():
    s = RunSpec.create("vm-4", "stream")
    assert s.noise is True and s.canonical()["noise"] is True
    off = s.with_config("noise=off")
    assert off.noise is False and off.canonical()["noise"] is False
    assert RunSpec.from_canonical(off.canonical()) == off
    old = dict(s.canonical())
    del old["noise"]
    assert RunSpec.from_canonical(old).noise is False, "stored before noise existed: a quiet machine"


@pytest.mark.parametrize("kernel", ["3.13", "6.13"])
def test_threads_report_their_first_node_and_time_away(cli, kernel):
    d = doc(cli, "--kernel", kernel)
    for t in d["threads"]:
        # the kernel's name, as /proc/PID/task/TID/sched prints it
        assert isinstance(t["nr_migrations"], int) and "migrations" not in t
        assert t["first_node"] == t["cpu_history"][0][2]
        assert 0.0 <= t["away_from_first_node_pct"] <= 100.0


def test_omp_wait_policy_is_a_run_setting():
    s = RunSpec.create("vm-4", "stream")
    assert s.omp_wait_policy == "default" and s.canonical()["omp_wait_policy"] == "default"
    p = s.with_config("omp-wait-policy=passive")
    assert p.omp_wait_policy == "passive" and RunSpec.from_canonical(p.canonical()) == p


def test_bad_wait_policy_is_a_usage_error(cli):
    code, _, err = cli("sim", *SMALL, "--omp-wait-policy", "lazy")
    assert code == 2 and "--omp-wait-policy: 'lazy' is not one of default, active, passive" in err


def test_passive_waiting_changes_the_time(cli):
    assert doc(cli, "--omp-wait-policy", "passive", "--noise", "off")["time_s"] != doc(cli, "--omp-wait-policy", "active", "--noise", "off")["time_s"]
