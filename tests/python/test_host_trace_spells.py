"""``bench/host_trace.py report``'s spells (docs/scheduler.md §10.51): from the host's scheduler
trace, each vCPU thread's wait after a wake-up (split by the blocked spell before it), its wait
after an involuntary switch, and its runs, as the model's ``sched_host_spells`` gives them."""

from __future__ import annotations

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _bench():
    spec = importlib.util.spec_from_file_location("host_trace", REPO / "bench" / "host_trace.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _switch(cpu: int, t: float, prev: int, state: str, nxt: int) -> str:
    name = lambda p: f"CPU {p}/TCG" if p else f"swapper/{cpu}"  # noqa: E731
    return (f"       {name(prev)} {prev} [{cpu:03d}] {t:.6f}: sched:sched_switch: prev_comm={name(prev)} prev_pid={prev} "
            f"prev_prio=120 prev_state={state} ==> next_comm={name(nxt)} next_pid={nxt} next_prio=120")


def _wakeup(cpu: int, t: float, waker: int, pid: int, target: int) -> str:
    return (f"       w {waker} [{cpu:03d}] {t:.6f}: sched:sched_wakeup: comm=CPU {pid}/TCG pid={pid} prio=120 "
            f"target_cpu={target:03d}")


def test_spells_split_waits_by_what_ended_the_run_and_drop_what_the_trace_lacks():
    ht = _bench()
    lines = [
        _switch(0, 10.000, 0, "R", 1),          # vCPU thread 1 runs from 10.000
        _switch(0, 10.002, 1, "S", 0),          # blocks: a run of 2 ms
        _wakeup(1, 10.004, 2, 1, 0),            # woken after 2 ms blocked: a halt
        _switch(0, 10.0045, 0, "R", 1),         # waited 0.5 ms
        _switch(0, 10.0050, 1, "R", 2),         # preempted
        _switch(0, 10.0110, 2, "S", 1),         # runs again after 6 ms
        _switch(0, 10.0111, 1, "S", 0),         # blocks for 0.1 ms: a lock wait
        _switch(1, 10.0112, 0, "R", 1),         # switched in ...
        _wakeup(0, 10.01122, 2, 1, 1),          # ... its wake-up traced 20 µs later: a wait of 0
        _switch(1, 10.0200, 1, "S", 0),
        _switch(0, 10.0300, 0, "R", 1),         # a switch-in with no wake-up traced ...
        _switch(0, 10.0310, 1, "S", 0),         # ... ends a run counted, with the wake-up lost
        _switch(0, 10.0400, 1, "S", 0),         # a switch-out with no switch-in: lost
    ]
    sp = ht.spells("\n".join(lines), 9.0, 11.0, {1})
    d = sp["vcpus"][1]
    assert d["woken_after_halt"]["n"] == 1 and abs(d["woken_after_halt"]["max_s"] - 0.5e-3) < 1e-9
    assert d["woken_after_lock"]["n"] == 1 and d["woken_after_lock"]["max_s"] == 0.0
    assert d["preempted"]["n"] == 1 and abs(d["preempted"]["max_s"] - 6e-3) < 1e-9
    assert d["preempted"]["over_4ms"] == 1 and d["preempted"]["over_1ms"] == 1
    runs = d["run"]
    assert runs["n"] == 5 and abs(runs["max_s"] - 8.8e-3) < 1e-9, runs
    assert sp["lost"]["wake-up not traced"] == 1 and sp["lost"]["switch-in not traced, blocked"] == 1, sp["lost"]
    assert sp["all"] == d
    # Outside the window nothing is counted.
    assert ht.spells("\n".join(lines), 0.0, 1.0, {1})["all"]["run"] == {"n": 0}


def test_a_wake_up_onto_an_idle_cpu_whose_switch_in_is_not_traced_runs_from_the_wake_up():
    ht = _bench()
    lines = [
        _switch(0, 5.000, 0, "R", 3),
        _switch(0, 5.001, 3, "S", 0),           # blocks, CPU 0 idle
        _wakeup(0, 5.003, 0, 3, 0),             # woken onto idle CPU 0 (traced by its idle task)
        _switch(0, 5.004, 3, "S", 0),           # switch-in from idle not traced
    ]
    d = ht.spells("\n".join(lines), 4.0, 6.0, {3})["vcpus"][3]
    assert d["woken_after_halt"]["n"] == 1 and d["woken_after_halt"]["max_s"] == 0.0
    assert d["run"]["n"] == 2 and abs(d["run"]["max_s"] - 1e-3) < 1e-9


def test_dist_takes_the_nearest_rank_below_as_the_model_does():
    ht = _bench()
    xs = [x * 1e-3 for x in range(10)]   # 0 .. 9 ms
    d = ht.dist(xs[::-1])
    assert (d["n"], d["median_s"], d["p90_s"], d["max_s"]) == (10, xs[5], xs[9], xs[9])
    assert (d["over_1ms"], d["over_2ms"], d["over_4ms"]) == (8, 7, 5)


def test_cpus_splits_the_window_by_qemu_threads_at_once_and_the_woken_by_where_and_what_they_took():
    """`cpus()` (docs/scheduler.md §10.55): the loop (pid 50) on CPU 0, QEMU's vCPU threads 1 and
    2 and its main loop 9; a made-up 20 ms window."""
    ht = _bench()
    lines = [
        _switch(0, 9.990, 0, "R", 50),          # the loop runs on CPU 0
        _switch(1, 9.990, 0, "R", 2),
        _switch(1, 9.991, 2, "S", 1),           # vCPU 2 halts
        _wakeup(1, 10.002, 1, 2, 1),            # woken on CPU 1 (not the loop's) after 11 ms: a halt
        _switch(1, 10.003, 1, "S", 2),          # runs when vCPU 1 blocks: 1 ms later
        _wakeup(0, 10.005, 50, 1, 0),           # vCPU 1 woken on the loop's CPU after 2 ms
        _switch(0, 10.0051, 50, "R", 1),        # preempts the loop: 0.1 ms; two QEMU threads run
        _switch(0, 10.0061, 1, "S", 50),        # blocks while vCPU 2 runs on CPU 1: the loop back
        _wakeup(0, 10.0062, 50, 1, 1),          # after 0.1 ms blocked (a lock wait), onto CPU 1
        _switch(1, 10.0070, 2, "R", 1),         # preempts vCPU 2: 0.8 ms
        _switch(0, 10.0150, 50, "R", 9),        # the main loop's switch-out is not traced:
        _switch(0, 10.0180, 50, "R", 0),        # ... the loop ran to here
    ]
    c = ht.cpus("\n".join(lines), 10.0, 10.020, {1, 2, 9}, {1, 2}, 50)
    close = lambda a, b: abs(a - b) < 1e-9  # noqa: E731
    assert close(c["at_once"]["2"], 0.05) and close(c["at_once"]["1"], 0.95) and "0" not in c["at_once"], c["at_once"]
    assert close(c["loop_on"]["0"], 0.85) and "1" not in c["loop_on"]
    assert close(c["untraced_share"], 0.15)
    w = c["woken"]
    assert close(w["halt"]["other CPU"]["a block"]["max_s"], 1e-3) and w["halt"]["other CPU"]["a block"]["n"] == 1
    assert close(w["halt"]["loop's CPU"]["loop"]["max_s"], 0.1e-3) and w["halt"]["loop's CPU"]["loop"]["n"] == 1
    assert close(w["lock"]["other CPU"]["QEMU"]["max_s"], 0.8e-3) and w["lock"]["other CPU"]["QEMU"]["n"] == 1
    assert sum(x["n"] for ws in w.values() for by in ws.values() for x in by.values()) == 3
    assert c["lock_blocks"] == {"another QEMU thread running": 1}
    assert c["woken_run_on_another_cpu"] == {"halt": 0, "lock": 0}
    lp = c["loop"]
    assert lp["moves"] == 0 and lp["off_cpu"]["n"] == 1 and close(lp["off_cpu"]["max_s"], 1e-3)
    assert lp["qemu_runs_on_its_cpu"]["n"] == 1 and close(lp["qemu_on_its_cpu_share"], 0.05)
    assert c["lost"]["the loop's switch-in not traced"] == 1
    # One bin, shorter than LOOP_BIN_S: its shares are of its own length.
    assert len(c["bins"]) == 1 and c["bins"][0] == {"loop_on": {"0": 0.85}, "two_at_once": 0.05}, c["bins"]
    assert c["others_share"] == 0.0


def test_cpus_counts_a_move_of_the_loop_and_a_woken_thread_run_on_another_cpu():
    ht = _bench()
    lines = [
        _switch(1, 0.5, 0, "R", 2),
        _switch(1, 0.6, 2, "S", 0),             # vCPU 2 halts
        _switch(0, 1.000, 0, "R", 50),
        _switch(1, 1.000, 0, "R", 1),
        _switch(1, 1.001, 1, "S", 0),           # vCPU 1 halts, CPU 1 idle
        _wakeup(0, 1.003, 50, 1, 0),            # woken onto the loop's CPU ...
        _switch(1, 1.004, 0, "R", 1),           # ... it runs on CPU 1, from the idle task
        _switch(0, 1.005, 50, "R", 0),          # the loop off CPU 0 ...
        _switch(1, 1.0055, 1, "S", 50),         # ... and on CPU 1 0.5 ms later: a move
        _switch(0, 1.0060, 0, "R", 2),          # a switch-in after a halt, its wake-up 20 µs later:
        _wakeup(1, 1.00602, 50, 2, 0),          # a wait of 0, woken on what is no longer the loop's CPU
    ]
    c = ht.cpus("\n".join(lines), 0.9, 1.1, {1, 2}, {1, 2}, 50)
    assert c["loop"]["moves"] == 1 and c["loop"]["off_cpu"]["n"] == 1 and abs(c["loop"]["off_cpu"]["max_s"] - 0.5e-3) < 1e-9
    halt = c["woken"]["halt"]
    assert halt["loop's CPU"]["idle"]["n"] == 1 and abs(halt["loop's CPU"]["idle"]["max_s"] - 1e-3) < 1e-9
    assert c["woken_run_on_another_cpu"] == {"halt": 1}
    assert halt["other CPU"]["idle"]["n"] == 1 and halt["other CPU"]["idle"]["max_s"] == 0.0


def test_split_names_each_spell_by_state_and_waker():
    """`split()` (docs/scheduler.md §10.34): a halt ended by another vCPU thread's wake-up, the
    queue wait after it and the wait after a preemption, each with its length."""
    ht = _bench()
    lines = [
        _switch(0, 10.000, 0, "R", 1),
        _switch(0, 10.002, 1, "S", 0),          # vCPU thread 1 blocks for 2 ms ...
        _wakeup(1, 10.004, 2, 1, 0),            # ... woken by vCPU thread 2
        _switch(0, 10.0045, 0, "R", 1),         # queued 0.5 ms after its wake-up
        _switch(0, 10.0050, 1, "R", 2),         # preempted ...
        _switch(0, 10.0110, 2, "S", 1),         # ... back after 6 ms
    ]
    kinds = ht.split("\n".join(lines), 9.0, 11.0, 99, {1, 2}, {1, 2, 99})["vcpus"][0]["kinds"]
    assert set(kinds) == {"running", "blocked, woken by vCPU", "queued, woken", "queued, preempted"}, kinds
    # Runs of 2 and 0.5 ms: the median of two is their mean.
    for k, ms in [("running", 1.25), ("blocked, woken by vCPU", 2.0), ("queued, woken", 0.5), ("queued, preempted", 6.0)]:
        assert abs(kinds[k]["median_ms"] - ms) < 1e-6, (k, kinds[k])
