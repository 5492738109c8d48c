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
