"""``bench/bql_holds.py`` (docs/scheduler.md §10.56): from the uprobes on QEMU's mutex and the host's
scheduler trace, which mutex is the BQL, each hold's length by site and thread, whether its holder
was switched out during it, and which hold each contended take waited behind."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BQL, OTHER = "0x55f457adcb40", "0x55f460447990"
MAIN = 100   # QEMU's pid: its main loop
NAMES = {MAIN: "qemu-system-x86", 101: "CPU 0/TCG", 102: "CPU 1/TCG", 0: "swapper/0"}


def _bench():
    sys.path.insert(0, str(REPO / "bench"))   # bql_holds imports its sibling host_trace
    try:
        return importlib.import_module("bql_holds")
    finally:
        sys.path.remove(str(REPO / "bench"))


def _head(tid: int, cpu: int, us: float) -> str:
    return f" {NAMES[tid]:>15} {tid} [{cpu:03d}] {10 + us * 1e-6:.9f}: "


def lock(tid: int, cpu: int, us: float, mutex: str, file: str, line: int) -> str:
    return _head(tid, cpu, us) + f"probe_qemu:qemu_mutex_lock_impl: (55f4572bc4e0) mutex={mutex} file=\"../../{file}\" line={line}"


def ret(tid: int, cpu: int, us: float, fn: str = "qemu_mutex_lock_impl") -> str:
    return _head(tid, cpu, us) + f"probe_qemu:{fn}__return: (55f4572bc4e0 <- 55f456f248a6)"


def unlock(tid: int, cpu: int, us: float, mutex: str = BQL) -> str:
    return _head(tid, cpu, us) + f"probe_qemu:qemu_mutex_unlock_impl: (55f4572bc8a0) mutex={mutex} file=\"../../softmmu/cpus.c\" line=512"


def cond_wait(tid: int, cpu: int, us: float) -> str:
    return _head(tid, cpu, us) + f"probe_qemu:qemu_cond_wait_impl: (55f4572bcc10) mutex={BQL} file=\"../../softmmu/cpus.c\" line=423"


def switch(cpu: int, us: float, prev: int, state: str, nxt: int) -> str:
    return _head(prev, cpu, us) + (f"sched:sched_switch: prev_comm={NAMES[prev]} prev_pid={prev} prev_prio=120 "
                                   f"prev_state={state} ==> next_comm={NAMES[nxt]} next_pid={nxt} next_prio=120")


def wakeup(cpu: int, us: float, waker: int, pid: int) -> str:
    return _head(waker, cpu, us) + f"sched:sched_wakeup: comm={NAMES[pid]} pid={pid} prio=120 target_cpu={cpu:03d}"


TRACE = [
    # The main loop's run: the BQL, and five takes of another mutex inside the hold.
    lock(MAIN, 0, 0, BQL, "util/main-loop.c", 318), ret(MAIN, 0, 1),
    *[x for k in range(5) for x in (lock(MAIN, 0, 2 + 3 * k, OTHER, "util/qemu-timer.c", 547),
                                    ret(MAIN, 0, 3 + 3 * k), unlock(MAIN, 0, 4 + 3 * k, OTHER))],
    unlock(MAIN, 0, 31),
    switch(0, 40, MAIN, "S", 101),
    # vCPU 0 writes to a device under the BQL; the write wakes the main loop, which preempts it ...
    lock(101, 0, 100, BQL, "accel/tcg/cputlb.c", 1431), ret(101, 0, 101),
    wakeup(0, 102, 101, MAIN), switch(0, 103, 101, "R+", MAIN),
    # ... and finds the BQL held by the thread it preempted: it blocks, the holder runs, releases.
    lock(MAIN, 0, 105, BQL, "util/main-loop.c", 318), switch(0, 106, MAIN, "S", 101),
    unlock(101, 0, 110), wakeup(0, 111, 101, MAIN), switch(0, 112, 101, "S", MAIN),
    ret(MAIN, 0, 113), unlock(MAIN, 0, 120), switch(0, 125, MAIN, "S", 102),
    # vCPU 1 comes back from translated code, then halts: the cond wait releases the BQL.
    lock(102, 0, 200, BQL, "accel/tcg/tcg-accel-ops-mttcg.c", 96), ret(102, 0, 201),
    lock(102, 0, 202, OTHER, "cpus-common.c", 329), ret(102, 0, 202.5), unlock(102, 0, 203, OTHER),
    cond_wait(102, 0, 204), switch(0, 205, 102, "S", 0),
    wakeup(0, 1000, MAIN, 102), switch(0, 1001, 0, "R", 102), ret(102, 0, 1002, "qemu_cond_wait_impl"),
    # vCPU 0 on the other CPU takes the BQL while vCPU 1 (running) holds it: a short block.
    switch(1, 1003, 0, "R", 101),
    lock(101, 1, 1005, BQL, "accel/tcg/cpu-exec.c", 763), switch(1, 1006, 101, "S", 0),
    unlock(102, 0, 1009), wakeup(0, 1010, 102, 101), switch(1, 1010.5, 0, "R", 101), ret(101, 1, 1011),
    unlock(101, 1, 1013),
    # vCPU 1 halts again; vCPU 0's device write under the BQL kicks it, and the woken thread
    # preempts the writer, then blocks retaking the BQL inside its cond wait.
    lock(102, 0, 1095, BQL, "accel/tcg/tcg-accel-ops-mttcg.c", 96), ret(102, 0, 1096),
    cond_wait(102, 0, 1100), switch(0, 1101, 102, "S", 0),
    lock(101, 1, 2000, BQL, "accel/tcg/cputlb.c", 1431), ret(101, 1, 2001),
    wakeup(1, 2002, 101, 102), switch(1, 2003, 101, "R", 102), switch(1, 2004, 102, "S", 101),
    unlock(101, 1, 2008), wakeup(1, 2009, 101, 102), switch(1, 2010, 101, "S", 102),
    ret(102, 1, 2011, "qemu_cond_wait_impl"), unlock(102, 1, 2015),
    # The main loop finds the BQL free at its entry, is preempted before its try by a vCPU that
    # takes it and is preempted in turn: the main loop then blocks behind that hold.
    switch(0, 2990, 0, "R", MAIN), lock(MAIN, 0, 3000, BQL, "util/main-loop.c", 318),
    wakeup(0, 3000.5, MAIN, 101), switch(0, 3001, MAIN, "R", 101),
    lock(101, 0, 3002, BQL, "accel/tcg/cpu-exec.c", 763), ret(101, 0, 3003),
    switch(0, 3004, 101, "R", MAIN), switch(0, 3005, MAIN, "S", 101),
    unlock(101, 0, 3007), wakeup(0, 3008, 101, MAIN), switch(0, 3009, 101, "S", MAIN),
    ret(MAIN, 0, 3010), unlock(MAIN, 0, 3012),
]


def test_bql_is_the_main_loops_mutex_not_the_most_taken():
    bh = _bench()
    lines = TRACE + [lock(101, 1, 4000 + k, OTHER, "tcg/region.c", 204) for k in range(4)]
    text = "\n".join(lines)
    takes = [ln for ln in lines if "qemu_mutex_lock_impl:" in ln]
    assert sum(OTHER in ln for ln in takes) > sum(BQL in ln for ln in takes)
    bql, how = bh.bql_of(text)
    assert bql == BQL and how == "taken in util/main-loop.c; the most-taken is " + OTHER


def test_holds_kept_across_a_wakeup_preemption_and_the_takes_behind_them():
    bh = _bench()
    d = bh.holds("\n".join(TRACE), 9.0, 11.0, MAIN, BQL)
    h = d["holds"]
    write = h["vCPU accel/tcg/cputlb.c:1431"]   # 9 µs (off 103 -> 106) and 7 µs (off 2003 -> 2004)
    assert write["n"] == 2 and abs(write["median_us"] - 9) < 1e-3 and write["kept"] == 2
    assert write["outs"] == {"R to its wakee, main loop": 1, "R to its wakee, vCPU": 1}
    assert abs(write["kept_off"]["sum_s"] - 4e-6) < 1e-12
    main = h["main loop util/main-loop.c:318"]
    assert main["n"] == 3 and main["kept"] == 0 and main["nested_probes"] == 5.0   # 15 hits, then none
    mttcg = h["vCPU accel/tcg/tcg-accel-ops-mttcg.c:96"]   # each ended by a cond wait's entry
    assert mttcg["n"] == 2 and abs(mttcg["median_us"] - 4) < 1e-3 and mttcg["nested_probes"] == 1.5
    assert h["vCPU cond wait softmmu/cpus.c:423"]["n"] == 2   # retaken at each return
    assert h["vCPU accel/tcg/cpu-exec.c:763"]["n"] == 2 and h["vCPU accel/tcg/cpu-exec.c:763"]["outs"] == {"R": 1}
    w = d["waits"]
    ml = w["main loop util/main-loop.c:318"]
    assert ml["n"] == 2 and ml["blocked"] == 2 and abs(ml["wait"]["sum_s"] - 18e-6) < 1e-12   # 8 and 10 µs
    assert abs(ml["after_wake"]["sum_s"] - 4e-6) < 1e-12   # 2 and 2 µs from the wake-up to the return
    assert w["vCPU accel/tcg/cpu-exec.c:763"]["blocked"] == 1
    assert d["behind"] == {
        "main loop behind vCPU accel/tcg/cputlb.c:1431 | holder queued at entry | hold kept": {"n": 1, "wait": d["behind"][
            "main loop behind vCPU accel/tcg/cputlb.c:1431 | holder queued at entry | hold kept"]["wait"]},
        "vCPU behind vCPU cond wait softmmu/cpus.c:423 | holder running at entry | hold not kept": d["behind"][
            "vCPU behind vCPU cond wait softmmu/cpus.c:423 | holder running at entry | hold not kept"],
        "main loop behind vCPU accel/tcg/cpu-exec.c:763 | holder taken after the entry, queued at the block | hold kept": d["behind"][
            "main loop behind vCPU accel/tcg/cpu-exec.c:763 | holder taken after the entry, queued at the block | hold kept"],
    }
    # The uncontended takes' entry to return, 1 µs each: the probes' floor (the other mutex's not counted).
    assert d["uncontended"]["n"] == 6 and abs(d["uncontended"]["median_us"] - 1) < 1e-3
    assert d["takes"]["vCPU cond wait softmmu/cpus.c:423"] == 2 and d["takes"]["main loop util/main-loop.c:318"] == 3
    b = d["vcpu_blocks"]
    assert b["BQL cond wait: the wait (a halt)"] == {"short": 0, "long": 2, "short_median_us": b[
        "BQL cond wait: the wait (a halt)"]["short_median_us"]}
    assert b["BQL cond wait: its retake, after the wake-up"]["short"] == 1
    assert abs(b["BQL cond wait: its retake, after the wake-up"]["short_median_us"] - 5) < 1e-3   # 2004 -> 2009
    assert b["BQL take, held by another"]["short"] == 1 and abs(b["BQL take, held by another"]["short_median_us"] - 4) < 1e-3
    assert d["retakes_behind"] == {"vCPU accel/tcg/cputlb.c:1431 | holder queued": 1}
    assert d["odd"] == {}
    # Outside the window nothing is counted.
    assert bh.holds("\n".join(TRACE), 0.0, 1.0, MAIN, BQL)["holds"] == {}
