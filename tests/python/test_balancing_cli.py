"""Automatic NUMA balancing on the command line: ``numalab sim --balancing ...`` and the
``balancing`` items of ``numalab compare --configs``."""

import json

import pytest

import numalab
from numalab.exceptions import USAGE_ERRORS
from numalab.spec import Balancing, RunSpec

SMALL = ("--machine", "vm-4", "--workload", "stream", "--n", "200000", "--threads", "4")
# Long enough for several scan passes with a 100 ms delay and period.
PASSES = ("--machine", "vm-4", "--workload", "stream", "--n", "2000000", "--ntimes", "100", "--threads", "4")
FAST = ("--balancing", "on", "--scan-delay-ms", "100", "--scan-period-min-ms", "100")


def test_balancing_is_off_by_default(cli):
    code, out, _ = cli("sim", *SMALL, "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["placement"]["balancing"] == {"enabled": False}
    assert doc["metrics"]["hint_fault_locality_pct"] is None and doc["metrics"]["balancing_cost_pct"] is None
    assert all("sched" not in t for t in doc["threads"])


def test_sim_flags_reach_the_document(cli):
    code, out, err = cli("sim", *SMALL, "--balancing", "on", "--scan-size-mb", "128", "--scan-period-max-ms", "30000", "--kernel", "3.13", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["placement"]["balancing"] == {
        "enabled": True,
        "kernel": "3.13",
        "scan_delay_ms": 1000,
        "scan_period_min_ms": 1000,
        "scan_period_max_ms": 30000,
        "scan_size_mb": 128,
    }
    assert set(doc["vmstat"]) >= {"numa_pte_updates", "numa_hint_faults", "numa_hint_faults_local", "numa_pages_migrated"}
    assert "balancing_cost" in doc and "balancing_passes" not in doc
    sched = doc["threads"][0]["sched"]
    assert {"numa_preferred_nid", "total_numa_faults", "numa_pages_migrated", "numa_scan_seq", "faults"} <= set(sched)
    assert {"node", "task_private", "task_shared", "group_private", "group_shared"} == set(sched["faults"][0])


def test_counters_over_time_and_metrics(cli):
    code, out, err = cli("sim", *PASSES, *FAST, "--json")
    assert code == 0, err
    doc = json.loads(out)
    vm = doc["vmstat"]
    assert vm["numa_hint_faults"] > 0
    assert doc["timeline"][-1]["vmstat"] == vm
    faults = [p["vmstat"]["numa_hint_faults"] for p in doc["timeline"]]
    assert faults == sorted(faults)
    met = doc["metrics"]
    assert met["hint_fault_locality_pct"] == pytest.approx(100.0 * vm["numa_hint_faults_local"] / vm["numa_hint_faults"])
    assert 0 < met["balancing_cost_pct"] < 100


def test_summary_prints_vmstat_only_with_balancing(cli):
    code, out, _ = cli("sim", *SMALL)
    assert code == 0 and "numa_hint_faults" not in out
    code, out, _ = cli("sim", *SMALL, "--balancing", "on")
    assert code == 0
    assert "automatic NUMA balancing (kernel 6.13)" in out
    for name in ("numa_pte_updates", "numa_huge_pte_updates", "numa_hint_faults_local", "pgmigrate_success", "pgmigrate_fail"):
        assert name in out


def test_explain_balancing_prints_a_per_pass_table(cli):
    code, out, err = cli("sim", *PASSES, *FAST, "--explain-balancing")
    assert code == 0, err
    lines = out.splitlines()
    head = lines.index("scan passes (faults and migrations during each pass)")
    assert lines[head + 1].split() == ["pid", "pass", "t_s", "period_ms", "windows", "pages_marked", "faults_local", "faults_remote",
                                       "pages_migrated", "task_moves"]
    rows = [line.split() for line in lines[head + 3 :]]
    assert len(rows) >= 3
    assert [int(r[1]) for r in rows] == list(range(1, len(rows) + 1))
    code, out, _ = cli("sim", *PASSES, *FAST, "--explain-balancing", "--json")
    assert len(json.loads(out)["balancing_passes"]) == len(rows)


@pytest.mark.parametrize(
    "args, message",
    [
        (("--balancing", "maybe"), "--balancing: 'maybe' is not on or off"),
        (("--balancing", "on", "--scan-size-mb", "0"), "--scan-size-mb must be at least 1"),
        (("--balancing", "on", "--scan-delay-ms", "-5"), "--scan-delay-ms: '-5' is not a duration"),
        (("--scan-size-mb", "128"), "--scan-size-mb is set but balancing is off"),
        (("--balancing", "on", "--scan-period-min-ms", "2000", "--scan-period-max-ms", "1000"),
         "--scan-period-min-ms (2000) is above --scan-period-max-ms (1000)"),
        (("--explain-balancing",), "--explain-balancing needs --balancing on"),
        (("--balancing", "on", "--scan-period-min-ms", "abc"), "--scan-period-min-ms"),
    ],
)
def test_bad_balancing_options_are_usage_errors(cli, args, message):
    code, out, err = cli("sim", *SMALL, *args)
    assert code == 2, (out, err)
    assert err.startswith("numalab: ") and message in err


def test_compare_with_balancing_configs(cli):
    configs = "default,interleave=all,balancing,balancing:scan-period-min-ms=100:scan-size-mb=128"
    code, out, err = cli("compare", *SMALL, "--configs", configs)
    assert code == 0, err
    lines = out.splitlines()
    assert [line.split()[0] for line in lines[3:7]] == configs.split(",")[:2] + ["balancing", "balancing:scan-period-min-ms=100:scan-size-mb=128"]
    table = lines.index("automatic NUMA balancing (/proc/vmstat)")
    rows = [line.split()[0] for line in lines[table + 3 : table + 5]]
    assert rows == ["balancing", "balancing:scan-period-min-ms=100:scan-size-mb=128"]
    code, out, _ = cli("compare", *SMALL, "--configs", configs, "--json")
    docs = json.loads(out)
    assert [d["placement"]["balancing"]["enabled"] for d in docs] == [False, False, True, True]
    last = docs[3]["placement"]["balancing"]
    assert (last["scan_period_min_ms"], last["scan_size_mb"], last["scan_delay_ms"]) == (100, 128, 1000)


def test_compare_base_flags_and_per_config_kernel(cli):
    code, out, err = cli("compare", *SMALL, "--balancing", "on", "--configs", "default,kernel=3.13,balancing=off", "--json")
    assert code == 0, err
    docs = json.loads(out)
    assert [d["placement"]["balancing"]["enabled"] for d in docs] == [True, True, False]
    assert docs[1]["placement"]["balancing"]["kernel"] == "3.13" and docs[1]["kernel"] == "3.13"


@pytest.mark.parametrize(
    "configs, message",
    [
        ("default,balancing:hot-threshold-ms=500", "memory-tiering"),
        ("default,scan-size-mb=128", "is set but balancing is off"),
        ("default,balancing:scan-size-mb=lots", "'lots' is not a size"),
        ("default,balancing:scan-period-min-ms=90000", "--scan-period-min-ms (90000) is above --scan-period-max-ms (60000)"),
        ("default,balancing=sometimes", "is not on or off"),
    ],
)
def test_compare_bad_balancing_items(cli, configs, message):
    code, _, err = cli("compare", *SMALL, "--configs", configs)
    assert code == 2
    assert err.startswith("numalab: ") and message in err


def test_settings_items_and_api():
    s = RunSpec("vm-4", "stream").with_config("interleave=all:balancing:scan-delay-ms=500")
    assert s.balancing == Balancing(enabled=True, knobs=(("scan_delay_ms", 500),))
    assert s.placement.label() == "interleave=all"
    # Memory tiering (numa_balancing = 2, docs/tiering.md §5): its knobs need balancing=2 or 3.
    t = RunSpec("vm-4", "stream").with_config("balancing=2:promote-rate-limit-mbps=100:demotion-enabled")
    assert (t.balancing.mode, t.balancing.value("promote_rate_limit_mbps"), t.balancing.demotion) == (2, 100, True)
    with pytest.raises(USAGE_ERRORS, match="promote-rate-limit-mbps is a memory-tiering knob"):
        numalab.simulate("vm-4", "stream", "promote-rate-limit-mbps=100", n=200000, threads=4)
    r = numalab.simulate("vm-4", "stream", "balancing", n=200000, threads=4)
    assert r.doc["placement"]["balancing"]["enabled"] is True


# ------------------------------------------------ kernel.numa_balancing 0-3 and the tiering switches


@pytest.mark.parametrize(
    "value, mode",
    [(True, 1), ("on", 1), ("off", 0), ("1", 1), ("2", 2), (2, 2), ("tiering", 2), ("3", 3),
     ({"numa_balancing": 3}, 3), ({"enabled": True}, 1), ("on:scan-size-mb=128", 1)],
)
def test_numa_balancing_accepts_0_to_3_and_the_old_spellings(value, mode):
    assert Balancing.parse(value).mode == mode


def test_tiering_switches_alone_leave_numa_balancing_off_and_round_trip():
    b = Balancing.parse("demotion-enabled")
    assert (b.mode, b.demotion) == (0, True)
    b = Balancing.parse({"numa_balancing": 2, "demotion_enabled": True, "hot_threshold_ms": 500})
    assert Balancing.parse(b.canonical()) == b
    assert b.items() == ["balancing=2", "hot-threshold-ms=500", "demotion-enabled"]
    assert b.label() == "tiering hot 500 ms + demotion"


def test_cli_balancing_2_promotes_and_demotes_on_the_cxl_preset(cli):
    code, out, err = cli("sim", "--machine", "spr8480-2s-cxl", "--workload", "stream", "--n", "7000000000",
                         "--ntimes", "3", "--threads", "56", "-N", "0", "--thp", "always", "--sample-rate", "0.01",
                         "--balancing", "2", "--demotion", "on", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["placement"]["balancing"]["numa_balancing"] == 2
    assert doc["placement"]["balancing"]["demotion_enabled"] is True
    assert doc["memory_tiers"] == [0, 0, 1, 1]
    vm = doc["vmstat"]
    assert vm["pgpromote_success"] > 0 and vm["pgdemote_kswapd"] > 0 and vm["pgpromote_candidate"] >= vm["pgpromote_success"]


def test_tiering_needs_the_6_13_profile(cli):
    code, _, err = cli("sim", *SMALL, "--kernel", "3.13", "--demotion", "on")
    assert code == 2 and "demotion_enabled (5.15+) does not exist in the 3.13 profile" in err
