"""``numalab vm check``: the same workload in the guest (the project's C kernel under the real
kernel) and in the simulator on the matching preset, side by side.

A case is a workload, its parameters, one config string (``spec/config.py``: the same placement
and balancing for both sides) and an expectation that must hold on *both* sides. Adding a case
is adding a row to ``CASES``.

What is compared: the command's anonymous pages per node (the guest's from ``numa_maps``
mappings that are not file-backed, or for the allocation cases only the grid's: the mappings
holding at least a quarter of the largest one's pages; the simulator's from its page table) at two moments,
*after first touch* (the first sample in which the process had all its pages; with balancing on
the guest may already have moved a few by then) and *after the run* (the last sample in which it still had them all, before it frees its arrays), and the
kernel's counters over the run (numastat summed over nodes, NUMA-balancing vmstat). The guest's
counters are system-wide (its init and the agent count too; a few pages). Timing is not
compared: a TCG guest's time is not hardware time and the ``vm-*`` presets' timing numbers are
placeholders.

Kernel profile: the guest's release picks the simulator's profile (``sim_kernel``). Debian
bookworm's 6.1 is simulated with the 6.1 profile; what the simulator still does differently from
6.1 is listed in ``PROFILE_NOTES`` and printed with the results.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterator

from numalab import counters
from numalab.console.tables import render, table
from numalab.exceptions import UsageError
from numalab.spec import RunSpec
from numalab.vm import ramdisk
from numalab.vm import run as vm_run

#: Where the simulator's profile for a guest release still differs from that release.
PROFILE_NOTES = {
    (6, 1): [
        "2 MiB alignment of anonymous mappings of 2 MiB or more (6.7+, mm/mmap.c: __get_unmapped_area()) "
        "is in the simulator for every profile: interleave indexes (virtual page numbers) may start one page apart",
        "memory tiers from firmware figures (6.7+, mm/memory-tiers.c: mt_calc_adistance(), HMAT's hmat_calculate_adistance()) "
        "are in the simulator for every profile: 6.1 puts every node online at boot in the DRAM tier and dax/kmem memory at "
        "MEMTIER_DEFAULT_DAX_ADISTANCE; the guest onlines its CXL nodes through dax/kmem, so both rank them one tier "
        "below DRAM (docs/tiering.md §11)",
    ],
}
#: The counters both sides report (the registry's simulated ones): numastat summed over the
#: nodes, then NUMA balancing and migration.
NUMASTAT = counters.names("numastat", simulated=True)
COUNTERS = NUMASTAT + counters.names("vmstat", "balancing", simulated=True)
#: Demotion and promotion (docs/tiering.md §7), printed for the tiering cases and whenever non-zero.
TIER_COUNTERS = counters.names("vmstat", "tiering", simulated=True)


#: The simulator's profile for a guest release: the first release each profile stands for. A
#: guest takes the newest modelled release not newer than its own (3.13 for 3.13-4.19, 6.1 for
#: 6.1-6.5, 6.13 for 6.6 on, EEVDF's first release); 4.20-6.0 take 6.1, whose CFS, v5.5 load
#: balancer and v4.14-v4.20 NUMA-balancing rules they share (docs/scheduler.md §14), rather
#: than 3.13's.
SIM_KERNEL_SINCE = [((2, 6, 32), "2.6.32"), ((3, 13), "3.13"), ((4, 20), "6.1"), ((6, 6), "6.13")]


def _release(release: str) -> tuple[int, ...]:
    """``6.1.0-56-amd64`` -> (6, 1, 0), ``2.6.32-754.el6`` -> (2, 6, 32)."""
    m = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", release)
    return tuple(int(g) for g in m.groups() if g is not None) if m else (0,)


def sim_kernel(release: str) -> str:
    """The profile simulating guest ``release`` (``SIM_KERNEL_SINCE``); a release older than
    every profile takes the oldest."""
    r = _release(release)
    return ([name for since, name in SIM_KERNEL_SINCE if r >= since] or [SIM_KERNEL_SINCE[0][1]])[-1]


def profile_notes(release: str) -> list[str]:
    return PROFILE_NOTES.get(vm_run.kernel_tuple(release), [])


@dataclass(frozen=True)
class Threads:
    """Where the command's threads ran (docs/scheduler.md §7): per thread ``nr_migrations`` (the
    kernel's count of CPU changes), ``first_node`` and ``away_from_first_node_pct``, over a run of
    ``time_s`` seconds (guest seconds under TCG, simulated seconds in the simulator)."""

    nr_migrations: list[int]
    away_pct: list[float]
    time_s: float

    @property
    def migrations_per_thread_s(self) -> float:
        """Thread migrations per thread per second of the run."""
        n = max(1, len(self.nr_migrations))
        return sum(self.nr_migrations) / n / self.time_s if self.time_s > 0 else 0.0

    def migrations_per_thread_barrier(self, barriers: int) -> float:
        """Thread migrations per thread per barrier: the rate both sides share when threads move
        at barriers (newly-idle balancing, wake-ups), whatever a barrier's length in seconds (a TCG
        guest is 10-50x slower than the simulated machine; docs/scheduler.md §10)."""
        n = max(1, len(self.nr_migrations))
        return sum(self.nr_migrations) / n / barriers if barriers > 0 else 0.0

    @property
    def changed_node(self) -> int:
        """Threads seen on another node than their first."""
        return sum(a > 0 for a in self.away_pct)

    @property
    def migrated(self) -> int:
        """Threads the kernel moved at least once (``nr_migrations`` > 0; on the ``vm-*`` presets,
        one CPU per node, every migration changes node)."""
        return sum(m > 0 for m in self.nr_migrations)

    @property
    def mean_away_pct(self) -> float:
        return sum(self.away_pct) / len(self.away_pct) if self.away_pct else 0.0


def threads_of(doc: dict[str, Any]) -> Threads:
    """The thread figures of a result document, simulated or measured (results/agent.py fills the
    same fields for a guest from ``/proc/PID/task/*/stat`` and ``sched``)."""
    ts = doc.get("threads") or []
    return Threads([int(t.get("nr_migrations") or 0) for t in ts],
                   [float(t.get("away_from_first_node_pct") or 0.0) for t in ts], float(doc.get("time_s") or 0.0))


@dataclass(frozen=True)
class Side:
    """One side of the comparison: anonymous pages per node and the counters over the run, and
    where the threads ran."""

    after_init: list[int]
    after_run: list[int]
    counters: dict[str, int]
    threads: Threads = field(default_factory=lambda: Threads([], [], 0.0))
    #: Memory tiers that hold the nodes (the simulator's ``memory_tiers``, the guest's
    #: /sys/devices/virtual/memory_tiering/memory_tier*): one means nothing to demote to or promote from.
    memory_tiers: int = 1

    @property
    def total(self) -> int:
        return sum(self.after_init)

    @property
    def moved(self) -> int:
        """Pages that changed node between the two moments (half the L1 distance)."""
        return sum(abs(a - b) for a, b in zip(self.after_init, self.after_run)) // 2


Expect = Callable[[Side], "str | None"]  # None: holds; else why not


def on_one_node(node: int, min_pct: float = 95.0) -> Expect:
    def check(s: Side) -> str | None:
        pct = 100.0 * s.after_init[node] / max(1, s.total)
        return None if pct >= min_pct else f"node{node} has {pct:.1f}% after first touch, expected >= {min_pct:g}%"

    check.__doc__ = f"after first touch, node{node} (the master thread's) has >= {min_pct:g}% of the pages"
    return check


def spread(min_share: float = 0.5) -> Expect:
    def check(s: Side) -> str | None:
        fair = s.total / len(s.after_init)
        low = [i for i, p in enumerate(s.after_init) if p < min_share * fair]
        return None if not low else f"node(s) {', '.join(f'node{i}' for i in low)} hold less than {min_share:g} x 1/N after first touch"

    check.__doc__ = f"after first touch, every node has at least {min_share:g} x 1/N of the pages"
    return check


def even(within_pages: int = 16) -> Expect:
    def check(s: Side) -> str | None:
        fair = s.total / len(s.after_init)
        worst = max(abs(p - fair) for p in s.after_init)
        return None if worst <= within_pages else f"a node is {worst:.0f} pages from 1/N ({fair:.0f}), expected <= {within_pages}"

    check.__doc__ = f"after first touch, every node within {within_pages} pages of 1/N"
    return check


def moves(min_pct: float = 10.0) -> Expect:
    def check(s: Side) -> str | None:
        pct = 100.0 * s.moved / max(1, s.total)
        migrated = s.counters.get("numa_pages_migrated", 0)
        if pct < min_pct:
            return f"{pct:.1f}% of the pages changed node during the run, expected >= {min_pct:g}%"
        return None if migrated > 0 else "numa_pages_migrated is 0"

    check.__doc__ = f">= {min_pct:g}% of the pages change node during the run and numa_pages_migrated > 0"
    return check


def stay() -> Expect:
    """Bound threads keep their first node. Their ``nr_migrations`` are printed, not checked: a
    new thread can be moved before libgomp's binding reaches it, and guest runs on a busy host
    counted 1-4 per thread (docs/scheduler.md §10.1); the simulator's count is asserted by the
    tests, where it is deterministic."""
    def check(s: Side) -> str | None:
        t = s.threads
        if not t.nr_migrations:
            return "no thread was seen"
        if t.changed_node:
            return f"{t.changed_node} thread(s) changed node"
        return None

    check.__doc__ = "no thread leaves its first node"
    return check


def move(min_share: float = 0.5) -> Expect:
    def check(s: Side) -> str | None:
        t = s.threads
        n = len(t.nr_migrations)
        return None if n and t.migrated >= min_share * n else f"{t.migrated} of {n} threads migrated, expected >= {min_share:g} of them"

    check.__doc__ = (f"at least {min_share:g} of the threads migrate (nr_migrations > 0, the kernel's exact count; "
                     "one CPU per node: a change of node)")
    return check


def printed() -> Expect:
    def check(s: Side) -> str | None:
        return None

    check.__doc__ = "nothing: the figures are printed (not robust under TCG, docs/scheduler.md §10)"
    return check


def tier_counters(counters: tuple[str, ...], moves: bool) -> Expect:
    """``moves``: the counters' sum is above zero on a side with more than one memory tier and zero
    on a side with one (a kernel without a lower tier has no demotion target,
    mm/memory-tiers.c: establish_demotion_targets(), and every node is top tier, node_is_toptier(),
    so nothing is demoted or promoted). Not ``moves``: zero on every side."""
    names = " + ".join(counters)

    def check(s: Side) -> str | None:
        got = sum(s.counters.get(k, 0) for k in counters)
        if moves and s.memory_tiers > 1:
            return None if got > 0 else f"{names} is 0 with {s.memory_tiers} memory tiers"
        why = f"{s.memory_tiers} memory tier" if moves else "nothing asks for it"
        return None if got == 0 else f"{names} is {got}, expected 0 ({why})"

    check.__doc__ = (f"{names} > 0 where the nodes form more than one memory tier, 0 where they form one" if moves
                     else f"{names} is 0")
    return check


def all_of(*checks: Expect) -> Expect:
    def check(s: Side) -> str | None:
        return next((why for c in checks if (why := c(s)) is not None), None)

    check.__doc__ = "; ".join(c.__doc__ or "" for c in checks)
    return check


@dataclass(frozen=True)
class GuestBackground:
    """What the guest runs beside a scheduler case's command, measured in the guest (guest seconds
    under TCG; docs/scheduler.md §10.3): the agent's CPU time per sample, the kernel threads' runs
    per vCPU and their mean length, and the case's guest seconds per barrier. The simulator's side
    runs on the preset slowed to the guest's speed (``guest_speed_machine``: a simulated barrier as
    long as the guest's), so the background, the kernel's own time constants (balance intervals,
    ``sysctl_sched_migration_cost``, PELT's half-life) and the command's barriers stand in the
    guest's proportions; the background is the guest's, in guest seconds."""

    #: The command's guest seconds per barrier (its run's time_s / barriers).
    barrier_s: float
    #: CPU time of one agent sample (``/proc/PID/task/*/{stat,sched}``, ``vmstat``, and
    #: ``numa_maps`` where ``agent_maps_cost_s`` is 0: a sample's mean measured whole).
    agent_cost_s: float
    #: Kernel-thread runs per vCPU per guest second and their mean length (``/proc/PID/schedstat``).
    kthread_hz: float
    kthread_mean_s: float
    #: Each domain level's ``sd->max_newidle_lb_cost`` at the start, lowest first, which the
    #: simulator then raises to each balance's time and decays as the kernel does
    #: (``sched/newidle.rs``): the guest's level during a run (debugfs
    #: ``sched/domains/cpuN/domainM``, median over its vCPUs and samples), standing in for the
    #: raises the model makes too few of (the host stopping a vCPU inside a balance,
    #: docs/scheduler.md §10.26, §10.27); empty where not measured (0, as ``sd_init()`` leaves it).
    newidle_lb_cost_s: tuple[float, ...] = ()
    #: How long one periodic or NOHZ ``load_balance()`` of each domain level takes, lowest first:
    #: the guest's typical balance (the median, kprobe / kretprobe timestamps), which the
    #: simulator's ``SD_SERIALIZE`` lock is held for (docs/scheduler.md §10.22); empty where not
    #: measured (no hold).
    lb_time_s: tuple[float, ...] = ()
    #: Of the idle loop's tries to stop the tick, the share that stopped it: the guest's
    #: ``idle_sleeps / idle_calls`` (``/proc/timer_list``) over the case's runs; None where not
    #: measured (every idle vCPU tickless).
    tick_stop_share: float | None = None
    #: The CPU time of a sample's ``numa_maps`` read where measured apart (the agent's own
    #: ``maps_cost_s`` over its ``maps_reads``), which the simulator adds to a sample reading it as
    #: the agent's budget allows (``sched/noise.rs``; in the guest every sample, ``GUEST_MAPS_BUDGET``);
    #: 0: in ``agent_cost_s``.
    agent_maps_cost_s: float = 0.0
    #: The CPU time the agent's first sample in a run takes beyond its later ones, where
    #: measured apart (``sched/noise.rs``: the periodic task's first run; under TCG each agent
    #: process translates its sampling code anew at its first sample, docs/scheduler.md §10.36);
    #: 0: spread over ``agent_cost_s``, a mean over every sample, the first included.
    agent_first_extra_s: float = 0.0
    #: The guest's seconds per barrier where QEMU had its host cores to itself, per count of
    #: cores (``SPEED_CONDITIONS``: two on the idle host, one beside a busy loop in another
    #: autogroup), which sets TCG's slowdown in ``sim_doc`` for a run on a host with as many
    #: cores (else the first entry's): a busier host slows the guest by running its vCPUs less,
    #: which the host model gives (docs/scheduler.md §10.40), but QEMU's own cost per guest
    #: instruction grows when vCPUs run side by side (the guest's HPET clock reads spin on their
    #: lock, each PAUSE an exit from translated code and a BQL take, §10.43, §10.45), which the
    #: model does not run. Empty where not measured: the slowdown then
    #: comes from ``barrier_s`` under the host the run is given.
    speed_barriers_s: tuple[tuple[int, float], ...] = ()

    def engine(self, interval_ms: int) -> dict[str, Any]:
        """The engine's ``background`` (``numalab_sim::sched::Background``): the agent every
        ``interval_ms``, the kernel threads, no daemons (the guest's init only waits for the agent),
        and newly idle balancing's cost, a periodic balance's time and the idle tick's stop share
        where measured; the agent's numa_maps read apart where measured, at the guest's budget, and
        its first sample's extra where measured."""
        cost: dict[str, Any] = {"newidle_lb_cost_s": list(self.newidle_lb_cost_s)} if self.newidle_lb_cost_s else {}
        if self.agent_maps_cost_s:
            cost["agent_maps_cost_s"] = self.agent_maps_cost_s
            cost["agent_maps_budget"] = GUEST_MAPS_BUDGET
        if self.agent_first_extra_s:
            cost["agent_first_extra_s"] = self.agent_first_extra_s
        if self.lb_time_s:
            cost["lb_time_s"] = list(self.lb_time_s)
        if self.tick_stop_share is not None:
            cost["tick_stop_share"] = self.tick_stop_share
        return {"kthread_hz": self.kthread_hz, "kthread_mean_s": self.kthread_mean_s, "daemon_hz": 0.0, "daemon_mean_s": 0.0,
                "agent_period_s": interval_ms / 1000.0, "agent_cost_s": self.agent_cost_s, **cost}


#: The share of a CPU the agent's numa_maps reads may take in the guest: ``vm/guest.py`` runs it
#: with ``--maps-budget-pct=100`` (``sample.rs``: the next read no earlier than the last one's cost
#: over it, so every 1 s sample reads it).
GUEST_MAPS_BUDGET = 1.0


def guest_speed_machine(name: str, slowdown: float) -> Any:
    """The preset ``name`` (a ``vm-*`` guest, whose timing numbers are placeholders) ``slowdown``
    times slower: core frequency and bandwidth divided, latency multiplied by it, and one idle
    latency from every CPU to every node (``latency.matrix_ns``, the local one; the SLIT
    ``distances`` stay, they build the guest's sched domains). Under TCG the guest's memory is the
    host's: QEMU backs every guest node with ordinary host RAM (``memory-backend-ram``) read
    through the softmmu TLB, and this host has one node, so an access costs the same from every
    vCPU to every node. The preset's ``local x SLIT / 10`` would slow a thread moved off its
    first-touch node 1.6-2.2 times, keep its CPU near full while the others wait at the barrier,
    and make busy CPUs pull that the guest's never do (docs/scheduler.md §10.4). No ``vm-*``
    preset has links, so nothing else charges a remote access."""
    from numalab.machine import load as load_machine
    from numalab.machine.presets import PRESET_DIR
    from numalab.machine.tomlfile import load_toml

    data, _ = load_toml(PRESET_DIR / f"{name}.toml")
    data.pop("estimates", None)
    data["core"]["frequency_ghz"] /= slowdown
    data["latency"]["local_ns"] *= slowdown
    nodes = len(load_machine(name).node_os_indexes)
    data["latency"]["matrix_ns"] = [[data["latency"]["local_ns"]] * nodes for _ in range(nodes)]
    data["bandwidth"]["node_gbps"] /= slowdown
    return type(load_machine(name)).from_spec_json(json.dumps(data))


#: The guest's kernel threads during the ``vm-4x2`` scheduler cases (Linux 6.1 under TCG,
#: 2026-11-26 14:22 UTC, four runs of sched-passive-4x2 and sched-oversubscribed-4x2 sampled every
#: second): 5.7-6.4 runs per vCPU per guest second, mean run 0.36-1.02 ms (mostly ``rcu_preempt``,
#: then ``kworker/N``, ``migration/N``, ``kcompactdN``, ``ksoftirqd/N``), from
#: ``/proc/PID/schedstat`` of every kernel thread (children of ``kthreadd``) before and after the
#: command: runs (``pcount``) and ``sum_exec_runtime``. docs/scheduler.md §10.3.
KTHREAD_HZ_4X2 = 6.0
KTHREAD_MEAN_S_4X2 = 0.73e-3
#: The same on ``vm-2x4`` (14:52 UTC, two runs of each case): 4.4-5.0 runs per vCPU per guest
#: second, mean run 0.60-1.28 ms. docs/scheduler.md §10.3.
KTHREAD_HZ_2X4 = 4.8
KTHREAD_MEAN_S_2X4 = 0.97e-3
#: The guest's background per multi-vCPU machine and threads. The agent's CPU per sample: ``times``
#: of the job's shell around the agent (its children: the agent and the command) less the
#: command's own (the agent's ``RUSAGE_CHILDREN``), less the agent's start-up and exit snapshot
#: (0.21-0.31 s in runs sampling every 30 s), over its samples. ``vm-4x2``: 60 and 131 ms with 8
#: threads (sched-passive-4x2), 176 and 147 ms with 16 (sched-oversubscribed-4x2); guest seconds
#: per barrier 11.9-15.7 ms (8 threads, 4 runs), 13.7-16.2 ms (16 threads, 2 runs). ``vm-2x4``:
#: 63 and 99 ms with 8 threads, 90 and 206 ms with 16; per barrier 14.4-15.8 ms (8 threads, 3
#: runs), 14.9 and 24.4 ms (16 threads). docs/scheduler.md §10.3.
#: The same on ``vm-4`` (one vCPU per node; 2026-11-26 20:43-20:45 UTC, load 5.5-16, one boot of
#: six commands: sched-passive and sched-oversubscribed twice with the agent sampling every second,
#: once every 30 s; ``numalab vm run --machine vm-4 --thp never --interval-ms 60000 -- sh -c JOB``,
#: JOB reading every task's ``/proc/PID/stat`` and ``/proc/PID/schedstat`` and the shell's ``times``
#: around ``numalab-agent run -- barrier``): 7.0-10.9 runs per vCPU per guest second, mean run
#: 0.47-1.60 ms. docs/scheduler.md §10.3.
KTHREAD_HZ_4 = 8.5
KTHREAD_MEAN_S_4 = 0.98e-3
#: The same on ``vm-8`` (20:48-20:49 UTC, load 8.7-10.2, the same job): 5.3-7.4 runs per vCPU per
#: guest second, mean run 0.40-1.21 ms. docs/scheduler.md §10.3.
KTHREAD_HZ_8 = 6.5
KTHREAD_MEAN_S_8 = 0.67e-3
#: Newly idle balancing's cost per domain level in the guest (``GuestBackground.newidle_lb_cost_s``;
#: kernel/sched/fair.c: newidle_balance() skips a level when ``rq->avg_idle < curr_cost +
#: sd->max_newidle_lb_cost``): debugfs ``/sys/kernel/debug/sched/domains/cpuN/domainM/
#: max_newidle_lb_cost`` read every 0.25 s during one run of each case (2026-11-27 01:47-01:59 UTC,
#: load 2.5-8.7), median over vCPUs and samples. Under TCG a balance costs 0.02-0.3 ms, and
#: whenever the host preempts the vCPU during one, milliseconds (up to 39 ms); the kernel keeps
#: the maximum, decaying 1 % a second, so it differs from run to run: vm-4 sched-oversubscribed
#: 3.0 and 0.78 ms, sched-passive 0.14 and 0.04 ms. docs/scheduler.md §10.4. The model starts
#: from these in-run levels, not from the guest's values at the command's start (§10.26: vm-4
#: medians 0.109 / 0.045 ms oversubscribed, 0.072 / 0.065 ms passive), because it raises the
#: cost where the host stops a vCPU inside a balance too seldom and too little (§10.27: 0.3 % of
#: balances, to 0.1-1.1 ms, against the guest's about 1 % and 0.74-3.8 ms): from those starts its
#: gate stays open most of the run (98 newly idle pulls a run on vm-4 oversubscribed against the
#: guest's 10-29).
NEWIDLE_COST_4_PASSIVE = (0.144e-3, 0.040e-3)
NEWIDLE_COST_4_OVER = (2.98e-3, 0.78e-3)
NEWIDLE_COST_8_OVER = (0.51e-3, 0.22e-3)
NEWIDLE_COST_4X2_OVER = (1.98e-3, 3.60e-3, 0.028e-3)
NEWIDLE_COST_2X4_OVER = (4.41e-3, 3.16e-3)
#: The same for the passive cases (2026-11-27 07:45-07:50 UTC, load 1.8-5.6, two runs each, every
#: run under ``vm/sched_trace.py``'s ``JOB``, beside it one ``cat`` of every
#: ``cpu*/domain*/max_newidle_lb_cost`` every 0.25 s; vm-4x2's first run read ``sched/debug``
#: each sample too, about one sample a second), median over vCPUs and samples of both runs:
#: per run vm-4x2 2.2 / 0.43 / 0.046 and 0.96 / 0.38 / 0.064 ms, vm-2x4 0.17 / 0.20 and 0.12 /
#: 0.14 ms, vm-8 0.29 / 0.039 and 0.095 / 0.046 ms. docs/scheduler.md §10.6.
NEWIDLE_COST_4X2_PASSIVE = (0.981e-3, 0.383e-3, 0.063e-3)
NEWIDLE_COST_2X4_PASSIVE = (0.140e-3, 0.156e-3)
NEWIDLE_COST_8_PASSIVE = (0.135e-3, 0.045e-3)
#: Of the guest's idle loop's tries to stop the tick, the share that stopped it
#: (``GuestBackground.tick_stop_share``; kernel/time/tick-sched.c: __tick_nohz_idle_stop_tick()
#: counts every try in ``idle_calls`` and every stop in ``idle_sleeps``; the tries come at the
#: idle vCPU's ticks, none at its idle entry, where the tick always ran on to the next jiffy): both counters' growth
#: over the command's run, summed over the vCPUs, two runs of each case pooled (2026-11-27
#: 11:29-11:35 UTC, load 3-8.6, ``numalab vm check --moves --case NAME``, whose job snapshots
#: ``/proc/timer_list`` around the command; per run 0.874-0.960). docs/scheduler.md §10.10.
TICK_STOP_4_PASSIVE = 0.922
TICK_STOP_4_OVER = 0.915
TICK_STOP_8_PASSIVE = 0.915
TICK_STOP_8_OVER = 0.899
TICK_STOP_4X2_PASSIVE = 0.944
TICK_STOP_4X2_OVER = 0.930
TICK_STOP_2X4_PASSIVE = 0.950
TICK_STOP_2X4_OVER = 0.951
#: One periodic or NOHZ ``load_balance()``'s guest time per attached domain level, lowest first
#: (``GuestBackground.lb_time_s``; v6.1 kernel/sched/fair.c: rebalance_domains() holds the
#: ``SD_SERIALIZE`` lock across it on the NUMA levels): the median over the calls made as
#: ``CPU_IDLE`` / ``CPU_NOT_IDLE`` that got past ``should_we_balance()`` (they reach
#: ``find_busiest_group()``), from kprobe ``load_balance`` / kretprobe timestamps in the guest
#: around each case's command (2026-11-27 17:40-17:45 UTC, load 3.4-9.1, one run of each case,
#: two more of vm-4 sched-oversubscribed; a probe job beside ``vm/sched_trace.py``'s, not kept).
#: The median, not the mean: about 1 % of the calls last 0.2-15 ms, about as often as the host
#: preempts a vCPU inside a balance (§10.22); the rest 3-200 us. vm-4 NUMA16 / NUMA22 16 / 6 us
#: (2472 / 2360 calls; p25-p75 11-23 and 5-7 us), vm-8 16 / 9 us, vm-2x4 MC / NUMA 14 / 9 us,
#: vm-4x2 MC / NUMA / NUMA 12 / 9 / 10 us. docs/scheduler.md §10.22.
LB_TIME_4 = (16e-6, 6e-6)
LB_TIME_8 = (16e-6, 9e-6)
LB_TIME_2X4 = (14e-6, 9e-6)
LB_TIME_4X2 = (12e-6, 9e-6, 10e-6)
#: Each ``agent_cost_s`` below is a sample's mean, its numa_maps read included (not measured
#: apart at that load): the simulator's sample base, with no read of its own. Nor a first-sample
#: extra (``agent_first_extra_s`` 0): the mean is the agent's CPU less that of the runs sampling
#: every 30 s, whose exit snapshot (``Sampler::exit_snapshot()`` -> ``sample()``) is their agent
#: process's first pass through the sampling code and pays its TCG translation, as a 1 s run's
#: first sample does: the subtraction takes the extra out to first order, so it is neither in
#: the mean nor apart (not measured at that load; docs/scheduler.md §10.38).
GUEST_BACKGROUND: dict[str, dict[int, GuestBackground]] = {
    # vm-4 (the boot above): 4 threads 8.8-13.0 ms per barrier (three runs), agent 90 and 100 ms
    # per sample; 8 threads 6.7-12.9 ms (three runs), agent 167 and 210 ms per sample (its CPU
    # less the 0.32-0.34 s of the runs sampling every 30 s, over the samples but the exit one).
    "vm-4": {
        4: GuestBackground(barrier_s=10.5e-3, agent_cost_s=95e-3, kthread_hz=KTHREAD_HZ_4, kthread_mean_s=KTHREAD_MEAN_S_4,
                            newidle_lb_cost_s=NEWIDLE_COST_4_PASSIVE, lb_time_s=LB_TIME_4,
                            tick_stop_share=TICK_STOP_4_PASSIVE),
        8: GuestBackground(barrier_s=10.4e-3, agent_cost_s=188e-3, kthread_hz=KTHREAD_HZ_4, kthread_mean_s=KTHREAD_MEAN_S_4,
                            newidle_lb_cost_s=NEWIDLE_COST_4_OVER, lb_time_s=LB_TIME_4,
                            tick_stop_share=TICK_STOP_4_OVER),
    },
    # vm-8 (its boot above): 8 threads 10.2-13.4 ms per barrier (three runs), agent 120 and 187 ms
    # per sample; 16 threads 9.4-17.7 ms, agent 70 and 304 ms per sample (less 0.39 and 0.54 s).
    "vm-8": {
        8: GuestBackground(barrier_s=11.7e-3, agent_cost_s=153e-3, kthread_hz=KTHREAD_HZ_8, kthread_mean_s=KTHREAD_MEAN_S_8,
                            newidle_lb_cost_s=NEWIDLE_COST_8_PASSIVE, lb_time_s=LB_TIME_8,
                            tick_stop_share=TICK_STOP_8_PASSIVE),
        16: GuestBackground(barrier_s=13.4e-3, agent_cost_s=187e-3, kthread_hz=KTHREAD_HZ_8, kthread_mean_s=KTHREAD_MEAN_S_8,
                             newidle_lb_cost_s=NEWIDLE_COST_8_OVER, lb_time_s=LB_TIME_8,
                             tick_stop_share=TICK_STOP_8_OVER),
    },
    "vm-4x2": {
        8: GuestBackground(barrier_s=14.2e-3, agent_cost_s=96e-3, kthread_hz=KTHREAD_HZ_4X2, kthread_mean_s=KTHREAD_MEAN_S_4X2,
                            newidle_lb_cost_s=NEWIDLE_COST_4X2_PASSIVE, lb_time_s=LB_TIME_4X2,
                            tick_stop_share=TICK_STOP_4X2_PASSIVE),
        16: GuestBackground(barrier_s=15.0e-3, agent_cost_s=161e-3, kthread_hz=KTHREAD_HZ_4X2, kthread_mean_s=KTHREAD_MEAN_S_4X2,
                             newidle_lb_cost_s=NEWIDLE_COST_4X2_OVER, lb_time_s=LB_TIME_4X2,
                             tick_stop_share=TICK_STOP_4X2_OVER),
    },
    "vm-2x4": {
        8: GuestBackground(barrier_s=15.3e-3, agent_cost_s=81e-3, kthread_hz=KTHREAD_HZ_2X4, kthread_mean_s=KTHREAD_MEAN_S_2X4,
                            newidle_lb_cost_s=NEWIDLE_COST_2X4_PASSIVE, lb_time_s=LB_TIME_2X4,
                            tick_stop_share=TICK_STOP_2X4_PASSIVE),
        16: GuestBackground(barrier_s=19.7e-3, agent_cost_s=148e-3, kthread_hz=KTHREAD_HZ_2X4, kthread_mean_s=KTHREAD_MEAN_S_2X4,
                             newidle_lb_cost_s=NEWIDLE_COST_2X4_OVER, lb_time_s=LB_TIME_2X4,
                             tick_stop_share=TICK_STOP_2X4_OVER),
    },
}


@dataclass(frozen=True)
class Case:
    name: str
    workload: str
    params: dict[str, Any]
    config: str
    expect: Expect
    machine: str = "vm-4"
    #: The case run with the same threads bound: this one must move its threads more (thread
    #: migrations per thread per barrier), on each side (``orderings``).
    more_than: str | None = None
    #: The guest agent's sampling interval. The scheduler cases sample every second: sampling
    #: every 50 ms (numa_maps reads under TCG) is itself the background that moves unbound
    #: threads in the guest (docs/scheduler.md §10).
    interval_ms: int = 50
    #: The guest's pages counted: ``anon`` every mapping that is not file-backed; ``grid`` only
    #: those holding at least a quarter of the largest one's pages in each sample (the workload's
    #: one region: the brk heap of rows malloc'ed by the main thread, each thread's arena, or a
    #: malloc'ed block's own mapping), leaving out stacks and the start-up allocations; ``file``
    #: the mappings of the guest's ramdisk (the file-mapping cases, ramdisk.py).
    pages: str = "anon"
    #: Both sides' pages per node after first touch within this % of the region (the simulator's
    #: pages) on every node.
    agree_pct: float | None = None
    #: Processes sharing the workload's file (``kernels/filemap.c --procs``): the simulator runs
    #: a co-run of that many copies, copy k on node k, splitting the file (``split=file``,
    #: docs/corun.md §6); the guest's parent process shows the whole page cache.
    procs: int = 1
    #: The guest's background as measured there (None: the simulator's own estimates,
    #: docs/scheduler.md §6): the simulator's run carries it (``sim_side``).
    background: GuestBackground | None = None

    @property
    def full_fraction(self) -> float:
        """The share of its peak pages the guest's process must hold for a sample to count as
        "after first touch": a sample taken while the last pages are being touched must not
        differ from the simulator's by more than half the agreement bound."""
        return 0.99 if self.agree_pct is None else 1 - self.agree_pct / 200

    @property
    def sched(self) -> bool:
        """A scheduler case: its thread figures are printed."""
        return self.workload == "barrier"

    @property
    def tiering(self) -> bool:
        """A tiered-memory case: its demotion and promotion counters are printed."""
        return self.machine == "vm-tier"


#: Most guest runs of one case (``--runs``).
MAX_RUNS = 20
#: Guests with several vCPUs per node (`sched_cases`): where a sleeping team's wake-ups may stack
#: threads inside a node or send them to another one (their guest tests run several boots each).
#: The host model (``GUEST_HOST``) is not limited to them: it runs on every guest (``sim_doc``).
MULTI_CPU_MACHINES = ("vm-4x2", "vm-2x4")

#: The cases ``numalab vm check --case NAME`` runs (threads default to the guest's vCPUs).
#: Threads are bound (OMP_PROC_BIND=spread, one per core: thread i on node i) so both sides put
#: them in the same places: an unbound master thread may be moved by the guest's load balancer in
#: the middle of a serial first touch (seen: 80% of A on one node, 20% on another), which the
#: simulator's scheduler does not do at that moment. Balancing: short scanner periods in both, so
#: a run of a few guest seconds sees several passes.
BOUND = "omp-proc-bind=spread:omp-places=cores"
FAST_SCAN = "scan-delay-ms=50:scan-period-min-ms=50:scan-period-max-ms=200"


def sched_cases(machine: str, cpus: int, reps: int, n: int = 1048576) -> list[Case]:
    """The scheduler cases on a guest of ``cpus`` vCPUs (one per node on ``vm-4`` and ``vm-8``,
    two on ``vm-4x2``, four on ``vm-2x4``): kernels/barrier.c, one
    thread per vCPU, first bound (the reference), then unbound as Linux runs OpenMP by default,
    unbound with OMP_WAIT_POLICY=passive (threads sleep at every barrier: the wake-up path runs
    ~reps times per thread), and unbound with twice as many threads as vCPUs. Under TCG only
    orderings and presence or absence of cross-node movement are robust (docs/scheduler.md §10):
    bound threads stay on their node and first-touch an even share each, oversubscribed ones
    move, and more than bound ones; the unbound and passive runs are printed (with passive
    waiting the guest may stack workers on one node during the parallel first touch)."""
    suffix = "" if machine == "vm-4" else f"-{machine.removeprefix('vm-')}"
    p = {"n": n, "reps": reps, "init": "parallel"}
    bound = f"sched-bound{suffix}"
    quiet: dict[str, Any] = {"machine": machine, "interval_ms": 1000}
    # The guest's background, where measured (docs/scheduler.md §10.3): the sleeping cases.
    measured = GUEST_BACKGROUND.get(machine, {})
    return [
        Case(bound, "barrier", p, BOUND, all_of(spread(), stay()), **quiet),
        Case(f"sched-unbound{suffix}", "barrier", p, "default", printed(), **quiet),
        Case(f"sched-passive{suffix}", "barrier", p, "omp-wait-policy=passive", printed(), background=measured.get(cpus), **quiet),
        Case(f"sched-oversubscribed{suffix}", "barrier", {**p, "threads": 2 * cpus}, "default", move(),
             more_than=bound, background=measured.get(2 * cpus), **quiet),
    ]


#: A pass of STREAM over 160 MiB takes about 0.8 guest seconds under TCG here, longer on a slower
#: host: pages marked at the start of a pass fault later than the default 1000 ms
#: (numa_hint_fault_latency()), so the hot threshold is raised on both sides.
HOT_TCG = "hot-threshold-ms=5000"


def alloc_cases() -> list[Case]:
    """glibc's malloc as first touch (docs/allocation.md §3.5): kernels/alloc3d.c's 128^3 grid
    (16 MiB) allocated as NPB 2.3-omp-C's MG does, one malloc per 1 KiB row by the master, whose
    chunk headers put every page on the master's node before the parallel loop writes a row; the
    same allocated by each thread for the planes it writes, from its own arena, so on its node;
    and as one malloc (an mmapped chunk), which the parallel loop spreads. The guest's numa_maps
    regions of the grid against the simulator's pages, node by node."""
    grid: dict[str, Any] = {"pages": "grid", "agree_pct": 0.5, "interval_ms": 200}
    return [
        Case("alloc-rows", "alloc3d", {"n": 128, "reps": 5, "layout": "rows"}, BOUND, on_one_node(0, 99.0), **grid),
        Case("alloc-rows-parallel", "alloc3d", {"n": 128, "reps": 5, "layout": "rows-parallel"}, BOUND, even(), **grid),
        Case("alloc-block", "alloc3d", {"n": 128, "reps": 5, "layout": "block"}, BOUND, even(), **grid),
    ]


def read_around(window: int = 32) -> Expect:
    def check(s: Side) -> str | None:
        n = len(s.after_init)
        block = s.total // n
        if s.after_init[0] >= block or s.after_init[-1] <= block:
            return f"node0 has {s.after_init[0]} and node{n - 1} {s.after_init[-1]} pages, expected fewer and more than a block ({block})"
        worst = max(abs(p - block) for p in s.after_init)
        return None if worst <= window else f"a node is {worst} pages from its block ({block}), expected <= {window} (one read-around window)"

    check.__doc__ = (f"after first touch, node0 has fewer pages than its block and the last node more (each thread's first "
                     f"fault reads its neighbour's last pages), every node within {window} pages of its block")
    return check


def file_cases() -> list[Case]:
    """File mappings (docs/allocation.md §3.6): kernels/filemap.c maps a brd ramdisk
    (``ramdisk.DEVICE``, ramdisk.py says why not a file in the guest's tmpfs) MAP_SHARED, and each
    of 4 threads, one per node, writes its 1024-page block; read-around on each first fault
    places its neighbour's last pages on its node, MADV_RANDOM places each page on its writer's
    node. The guest's numa_maps for the mapping against the simulator's pages, node by node:
    within 0.2% of the region (8 pages, half the 16 pages read-around moves at a boundary)."""
    f: dict[str, Any] = {"pages": "file", "agree_pct": 0.2, "interval_ms": 100}
    p = {"n": 1024, "reps": 20}
    return [
        Case("filemap", "filemap", {**p, "madvise": "normal"}, BOUND, read_around(), **f),
        # Within 7 pages, not 0: the guest's sample after first touch can be taken as the last
        # pages are written (4,092 and 4,093 of 4,096 seen in CI); read-around's 16 pages at a
        # boundary still fail it.
        Case("filemap-random", "filemap", {**p, "madvise": "random"}, BOUND, even(7), **f),
        # One process per node instead of one thread: each forked after the mapping, bound to
        # its node, writing its block (the simulator's co-run with split=file).
        Case("filemap-procs", "filemap", {**p, "madvise": "normal", "threads": 1, "procs": 4}, "default", read_around(), procs=4, **f),
    ]


def tier_cases() -> list[Case]:
    """Tiered memory on ``vm-tier`` (docs/tiering.md §11): STREAM's 160 MiB (n = 7M) from node 0's
    vCPU, more than its 128 MiB DRAM node. Preferred-many to node 0 wakes node 0's kswapd when it is
    low (mm/mempolicy.c: alloc_pages_preferred_many()), which with demotion_enabled demotes to the
    CPU-less node below it, and without demotes nothing; the default policy spills to node 2 and
    NUMA balancing's memory-tiering mode (2) promotes the hot slow-tier pages, with demotion making
    room on node 0. One vCPU's thread: the first touch and the faults all come from node 0."""
    p = {"n": 7000000, "ntimes": 5, "threads": 1}
    tier: dict[str, Any] = {"machine": "vm-tier", "interval_ms": 200}
    demote = ("pgdemote_kswapd", "pgdemote_direct")
    return [
        Case("tier-demotion", "stream", p, "cpunodebind=0:preferred-many=0:demotion-enabled", tier_counters(demote, True), **tier),
        Case("tier-no-demotion", "stream", p, "cpunodebind=0:preferred-many=0", tier_counters(demote, False), **tier),
        # Promotions capped at 16 MB/s (kernel/sched/fair.c: numa_promotion_rate_limit()): under
        # TCG each page moved costs the guest far more than a pass, so 40 capped passes take 7
        # guest seconds where 20 uncapped ones took 37; six uncapped passes promoted nothing on
        # the CI runner once (docs/tiering.md §11).
        Case("tier-promotion", "stream", {**p, "ntimes": 40},
             f"cpunodebind=0:balancing=2:{FAST_SCAN}:{HOT_TCG}:promote-rate-limit-mbps=16:demotion-enabled",
             tier_counters(("pgpromote_success",), True), **tier),
    ]


CASES: dict[str, Case] = {
    c.name: c
    for c in [
        Case("serial-init", "dgemv", {"n": 2000, "reps": 5, "init": "serial"}, BOUND, on_one_node(0)),
        Case("parallel-init", "dgemv", {"n": 2000, "reps": 5, "init": "parallel"}, BOUND, spread()),
        Case("interleave", "dgemv", {"n": 2000, "reps": 5, "init": "serial"}, f"interleave=all:{BOUND}", even()),
        Case("balancing", "dgemv", {"n": 2000, "reps": 40, "init": "serial"}, f"{BOUND}:balancing:{FAST_SCAN}", moves()),
        Case("parallel-init-vm8", "dgemv", {"n": 2000, "reps": 5, "init": "parallel"}, BOUND, spread(), machine="vm-8"),
        # Under TCG the array's updates, not the barriers, take a guest's time: the one-vCPU guests
        # run smaller arrays (2 and 4 MiB; a quarter and half of the 8 MiB run's guest seconds), and
        # vm-8's 8 vCPUs on the host's 2 CPUs half the barriers (the orderings compare migrations
        # per barrier; docs/scheduler.md §10).
        *sched_cases("vm-4", 4, 1000, n=262144),
        *sched_cases("vm-8", 8, 250, n=524288),
        *sched_cases("vm-4x2", 8, 500),
        *sched_cases("vm-2x4", 8, 500),
        *tier_cases(),
        *alloc_cases(),
        *file_cases(),
    ]
}


def sched_names() -> list[str]:
    return [n for n, c in CASES.items() if c.sched]


@dataclass
class Comparison:
    case: Case
    sim: Side
    vm: Side
    kernel_release: str
    sim_kernel: str
    failures: dict[str, str] = field(default_factory=dict)  # side -> why the expectation failed
    vm_doc: dict[str, Any] | None = None
    #: Every guest run of the case (``vm`` is the first): the guest's own run-to-run spread.
    vm_runs: list[Side] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures


# ---- the two sides -------------------------------------------------------------------------

def _complete(series: list[list[int]], full_fraction: float = 0.99) -> tuple[list[int], list[int]]:
    """The first and the last sample in which the process had (``full_fraction`` of) all the pages
    it ever had: after first touch, and after the run but before the command frees its arrays and exits."""
    peak = max((sum(s) for s in series), default=0)
    full = [s for s in series if sum(s) >= full_fraction * peak] or series[-1:]
    return full[0], full[-1]


def cpus_per_node(machine: Any) -> int:
    """vCPUs per guest node for a preset: its CPUs per node (``vm-4x2``: 2)."""
    return max(1, machine.nr_pus // max(1, len(machine.node_os_indexes)))


#: The host that runs a guest's vCPUs under TCG (``numalab_sim::vhost::VcpuHost``,
#: docs/scheduler.md §10.5), for the simulated side of every sleeping case. Nothing here
#: is fitted to the guest's moves:
#: - ``mode``: ``mttcg``, one host thread per vCPU. QEMU 7.2 enables it for an x86 guest on an x86
#:   host (``accel/tcg/tcg-all.c: default_mttcg_enabled()``: ``TARGET_SUPPORTS_MTTCG`` and the
#:   guest's memory order within the host's); seen here: ``ps -L`` of the QEMU process during a
#:   ``vm-4x2`` run shows 8 vCPU threads beside the main loop, each 10-22 % of a core
#:   (2026-11-27 01:47 UTC, load 1.8-3.6).
#: - ``cores``: 1. QEMU's threads used about one core of this 2-core machine shared with other
#:   work (7.8 CPU s in 7 s of a run), and pinned to one core (``taskset -c 0``) the guest's moves
#:   and idleness were the same (docs/scheduler.md §10.4).
#: - ``request_s``: the host's EEVDF request, 1.4 ms (``sysctl_sched_base_slice`` 0.70 ms, as
#:   mainline has it (0.75 ms when EEVDF came in, v6.6), times ``update_sysctl()``'s factor
#:   1 + ilog2(2 CPUs), ``kernel/sched/fair.c``, the host's Linux 6.18; this host's own
#:   ``/proc/self/sched`` shows ``se.slice 1400000``, 2026-11-28, docs/scheduler.md §10.50): a vCPU thread's deadline is a request after its vruntime, the lag it keeps over a
#:   halt at most max(2 requests, a tick) (``update_entity_lag()``).
#: - ``slice_s``: the host's tick, 4 ms with its ``CONFIG_HZ=250``: a running thread's passed
#:   deadline is noticed there (``task_tick_fair()`` → ``update_curr()`` →
#:   ``update_deadline()``; ``HRTICK`` is off by default, ``kernel/sched/features.h``) or at a
#:   wake-up on its core (``check_preempt_wakeup_fair()`` → ``update_curr()``).
#: - ``main_loop_s``: QEMU's main loop thread's run per wake-up, 16 µs: measured, the mean of the
#:   eight runs of docs/scheduler.md §10.13's table (11-19 µs: ``schedstat``'s time run over its
#:   timeslices, ``numalab vm check --moves --case sched-oversubscribed-4x2`` and the two other
#:   multi-vCPU cases, 2026-11-27 13:40-13:57 UTC). With it the main loop is a host thread of its
#:   own that wakes for the vCPUs' timers (docs/scheduler.md §10.14).
#: - ``bql``: QEMU's big lock, one host-wide lock (``vhost/bql.rs``, docs/scheduler.md §10.37): a
#:   vCPU thread takes it back from each halt (with the interrupt's delivery and EOI), at each
#:   tick interrupt and EOI, each IPI it sends, each timer it programs and each clock read; the
#:   main loop at each run; a taker that finds it held blocks until the release.
#:   ``hold_vcpu_s`` 2 µs and ``hold_main_s`` 16 µs are estimates, not unprobed measurements:
#:   §10.35's uprobe holds less 7.5 µs a probe hit, "up to about 2 µs" for a vCPU thread (§10.56:
#:   1.1-1.4 µs at the median, 2026-11-28); the main loop's from §10.56's second probing
#:   (2026-11-28 09:42-09:55 UTC, ``bench/bql_holds.py``): median 30 µs with 20 probe hits inside
#:   at about 0.65 µs each, so about 16 µs, its whole run (``main_loop_s``; §10.35's 4-10 µs,
#:   7 µs until 2026-11-28, took 7.5 µs a hit off). ``clock_reads_per_busy_s`` 5,300 is
#:   §10.35's ``read_hpet`` count per vCPU per second of the window (the three runs' means
#:   2,200, 2,307, 2,347: 2,285) over the share of the window a vCPU thread ran on the host in
#:   the same cases on the idle host (§10.34's ``schedstat``: 0.39-0.47, the middle 0.43):
#:   the guest reads its clock only while the host runs it.
GUEST_HOST: dict[str, Any] = {
    "cores": 1,
    "mode": "mttcg",
    "slice_s": 4e-3,
    "request_s": 1.4e-3,
    "main_loop_s": 16e-6,
    "bql": {"hold_vcpu_s": 2e-6, "hold_main_s": 16e-6, "clock_reads_per_busy_s": 5300.0},
}

#: Named hosts for ``sim_doc(host=...)`` and ``bench/vm_sched_sim.py --host``: the host
#: conditions docs/scheduler.md §10.18 measured the guest under (``vm check --moves``, QEMU's
#: host cores the sum of its threads' shares). ``GUEST_HOST`` is ``one-core``.
#: - ``one-core``: QEMU got 0.99-1.00 cores beside one busy loop (``sh -c 'while :; do :;
#:   done'``, another session, which got 0.98-1.0), 2026-11-27 16:11-16:47 UTC.
#: - ``two-cores``: the machine's two cores (``nproc``); QEMU got 1.69-1.88 of them with the
#:   host otherwise idle, 16:05-16:44 UTC.
#: - ``two-cores-loop``: two cores and one always-runnable nice-0 thread on the host model's
#:   per-core EEVDF queues (``vcpu_host.other_threads``, balanced as QEMU's threads, §10.41). Not §10.18's busy-loop host: there the loop, in
#:   its own autogroup, took a whole core. It is the host with a busy loop in QEMU's own
#:   autogroup (``bench/vm_loaded_host.py``, §10.39), as are ``two-cores-loops-2``, ``-4``, ``-8``.
HOSTS: dict[str, dict[str, Any]] = {
    "one-core": GUEST_HOST,
    "two-cores": {**GUEST_HOST, "cores": 2},
    "two-cores-loop": {**GUEST_HOST, "cores": 2, "other_threads": 1},
    "two-cores-loops-2": {**GUEST_HOST, "cores": 2, "other_threads": 2},
    "two-cores-loops-4": {**GUEST_HOST, "cores": 2, "other_threads": 4},
    "two-cores-loops-8": {**GUEST_HOST, "cores": 2, "other_threads": 8},
}


@dataclass(frozen=True)
class HostCondition:
    """A host condition the guest was measured under (docs/scheduler.md §10.18): the host model
    giving QEMU the cores it got (one of ``HOSTS``), and the guest's seconds per barrier then,
    per case (the command's own ``time_s`` over its barriers, ``vm check --moves``' "guest
    command" line): the guest's speed depends on the host's load, so the background's
    ``barrier_s`` (measured at load 5.5-16) is replaced by the condition's; so is its
    ``agent_cost_s`` where the agent's samples were measured under the condition (the sample's
    CPU is TCG's work too: 95 ms at load 5.5-16 on vm-4 passive, 11-47 ms on the idle host, §10.30)."""

    host: str
    barrier_s: dict[str, float]
    #: The agent's CPU per sample under the condition, per case, where measured: its base, its
    #: numa_maps read, and its first sample's extra (where given, the base is the later samples'
    #: alone, so the extra is not counted twice).
    agent_cost_s: dict[str, float] = field(default_factory=dict)
    agent_maps_cost_s: dict[str, float] = field(default_factory=dict)
    agent_first_extra_s: dict[str, float] = field(default_factory=dict)

    def background(self, name: str) -> GuestBackground:
        """Case ``name``'s background with the condition's barrier length and, where measured, its
        agent's CPU per sample."""
        bg = CASES[name].background
        if bg is None:
            raise ValueError(f"{name} has no measured background")
        return replace(bg, barrier_s=self.barrier_s[name], agent_cost_s=self.agent_cost_s.get(name, bg.agent_cost_s),
                       agent_maps_cost_s=self.agent_maps_cost_s.get(name, bg.agent_maps_cost_s),
                       agent_first_extra_s=self.agent_first_extra_s.get(name, bg.agent_first_extra_s))


#: The agent's CPU per sample on the idle host, per case, split as the guest runs it: its later
#: samples' base and numa_maps read, and its first sample's extra (under TCG each agent process
#: translates its own sampling code anew at its first sample: docs/scheduler.md §10.36).
#: Measured with ``bench/agent_first_sample.py CASE none`` (``numalab-agent`` traced in the guest
#: by ``sched_switch``; each run's samples matched to the agent's own records, the exit snapshot
#: left out; two agent processes a boot, each its first with ASLR on, as every ``vm check`` run's
#: is), one boot at a time under the build lock, 2026-11-27 23:25-2026-11-28 00:01 UTC, the host's
#: 1-minute load 0.85-3.7 (lagging a loaded helper's runs before 23:45; no other process busy at
#: each start), docs/scheduler.md §10.38. CPU of each sample in order, ms, per run (UTC of the
#: boot): vm-4 passive 23:31 46.0, 8.8 / 42.0, 12.0; 23:58 47.2, 17.2 / 54.8, 12.6;
#: oversubscribed 23:28 54.1, 15.2 / 63.6, 20.4; 00:01 53.3, 15.0 / 44.1, 12.7; vm-8 passive
#: 23:25 96.9, 21.9 / 92.3, 18.5; 23:26 72.8, 32.2 / 70.1, 42.6; 23:45 93.4, 39.3 / 57.8, 52.9;
#: oversubscribed 23:26 200.4, 60.3 / 128.7, 39.6; 23:57 98.2, 54.6 / 195.6, 62.1; vm-2x4
#: passive 23:27 110.8, 39.1, 39.3, 63.5, 16.7, 59.0 / 57.0, 14.0, 41.8, 9.9, 19.2, 26.7; 23:57
#: 91.8, 25.1, 52.9, 19.1, 38.9, 36.2 / 83.2, 17.1, 23.4, 43.7, 16.1, 42.8; oversubscribed 23:27
#: 202.6, 56.4, 34.5, 29.9, 32.5, 22.7, 50.4 / 91.4, 83.0, 62.8, 86.4, 64.1, 37.4, 37.9; 23:59
#: 122.4, 61.4, 41.2, 18.7, 55.4, 33.2 / 159.1, 59.3, 51.7, 40.2, 55.2, 30.9, 54.3.
#: ``AGENT_MAPS_COST_IDLE`` is the later samples' mean read (each record's ``maps_cost_s``, timed
#: around ``read_numa_maps()``; every sample reads, ``GUEST_MAPS_BUDGET``): vm-4 passive 1.3, 1.7,
#: 1.4, 1.5 ms; oversubscribed 3.3, 1.5, 1.5, 1.5; vm-8 passive 1.5, 1.6, 1.5, 19.5, 8.8, 1.6;
#: oversubscribed 11.7, 8.5, 2.0, 7.1; 2x4 passive mean of 20 reads 5.3, oversubscribed of 23
#: 6.2 (the first reads 7.0-77.5 ms: the first read's excess is in the extra).
#: ``AGENT_COST_IDLE`` is the later samples' mean CPU less that read: 12.7 - 1.5, 15.8 - 1.9,
#: 34.6 - 5.8, 54.1 - 7.3, 32.2 - 5.3, 47.8 - 6.2 ms. ``AGENT_FIRST_EXTRA_IDLE`` is the first
#: samples' mean less the later ones': 47.5 - 12.7, 53.8 - 15.8, 80.5 - 34.6, 155.7 - 54.1,
#: 85.7 - 32.2, 143.9 - 47.8 ms (4, 4, 6, 4, 4, 4 runs; per run its first less its later ones'
#: mean spreads by sd 6.0, 4.9, 27, 45, 14, 57 ms). The first sample is then base + read + extra,
#: the runs' first mean, and the base is no mean with the first in it: the extra is counted once.
#: Each sample is one run until the agent's ``poll()`` (``do_sys_poll()``; §10.30), the periodic
#: task's one run a period, as ``sched/noise.rs`` has it.
AGENT_COST_IDLE = {
    "sched-passive": 11.2e-3, "sched-oversubscribed": 13.9e-3, "sched-passive-8": 28.8e-3,
    "sched-oversubscribed-8": 46.8e-3, "sched-passive-2x4": 27.0e-3, "sched-oversubscribed-2x4": 41.6e-3}
AGENT_MAPS_COST_IDLE = {
    "sched-passive": 1.5e-3, "sched-oversubscribed": 1.9e-3, "sched-passive-8": 5.8e-3,
    "sched-oversubscribed-8": 7.3e-3, "sched-passive-2x4": 5.3e-3, "sched-oversubscribed-2x4": 6.2e-3}
AGENT_FIRST_EXTRA_IDLE = {
    "sched-passive": 34.9e-3, "sched-oversubscribed": 38.0e-3, "sched-passive-8": 46.0e-3,
    "sched-oversubscribed-8": 101.6e-3, "sched-passive-2x4": 53.5e-3, "sched-oversubscribed-2x4": 96.1e-3}


#: The agent's CPU per sample beside §10.18's busy loop (``CONDITIONS["busy-loop"]``), split as
#: ``AGENT_COST_IDLE`` and its kin are (the later samples' base, their numa_maps read, the first
#: sample's extra) and measured the same way: ``bench/agent_first_sample.py CASE none``, one boot
#: at a time under the build lock, ``sh -c 'while :; do :; done'`` started first in a session of
#: its own (``setsid``: another autogroup than QEMU's, §10.18) and killed after; docs/scheduler.md
#: §10.44. Counted: boots with no other busy loop on the host at start or end and the loop at 0.9
#: of a CPU or more over the boot (§10.18's took 0.98-1.0); nine boots left out, four beside
#: others' leaked loops, five with the loop at 0.65-0.87 (§10.44). Three boots a case, two agent
#: processes each, 2026-11-28 UTC. CPU of each sample in order, ms, per run (UTC of the boot, load before / the
#: loop's share of a CPU over the boot): vm-4 passive 01:56 (0.06 / not read) 151.3, 26.0, 22.2 /
#: 94.7, 26.9, 15.7; 02:06 (2.96 / 0.99) 131.3, 31.8, 21.3 / 86.2, 21.7, 24.0; 02:14 (3.67 / 0.99)
#: 81.7, 24.3, 23.5 / 67.5, 20.1, 20.5; oversubscribed 01:57 (0.87 / 0.99) 110.7, 27.1, 38.8 /
#: 113.2, 44.0, 47.4; 02:08 (1.82 / 0.92) 48.2, 27.6, 13.2 / 92.6, 31.2, 54.6; 02:18 (3.84 / 0.99)
#: 117.3, 28.2, 10.7 / 86.5, 34.3, 27.3; vm-8 passive 01:58 (2.06 / 0.94) 139.3, 59.5 / 69.9, 46.3;
#: 02:08 (2.19 / 0.99) 124.1, 30.9 / 152.8, 25.2; 02:15 (3.4 / 0.98) 166.3, 32.6 / 128.2;
#: oversubscribed 02:03 (4.49 / 0.99) 161.2, 70.6 / 214.2, 80.4; 02:12 (1.83 / 0.99) 250.9, 113.3
#: / 208.4, 104.3; 02:16 (3.63 / 0.99) 198.1, 94.3 / 269.3, 99.2; vm-2x4 passive 02:04 (3.53 /
#: 0.99) 223.8, 50.9, 27.5, 54.0, 70.1, 35.1, 21.8 / 181.1, 26.2, 52.1, 50.0, 40.0, 32.2; 02:09
#: (3.23 / 0.94) 192.7, 41.6, 59.3, 55.2, 55.0, 55.3, 28.1 / 191.5, 58.4, 51.5, 61.7, 68.8, 63.0,
#: 50.3; 02:15 (3.07 / 0.99) 304.6, 40.2, 20.4, 25.4, 33.7, 51.3, 35.1 / 168.2, 52.2, 49.3, 36.3,
#: 22.8, 43.5, 56.5; oversubscribed 02:06 (2.4 / 0.99) 213.0, 102.6, 71.8, 92.5, 63.3, 68.1, 82.2,
#: 66.1 / 204.9, 74.5, 62.9, 48.0, 89.0, 66.1, 89.1, 38.4; 02:17 (3.11 / 0.96) 259.5, 114.7, 79.9,
#: 64.6, 73.3, 69.2, 102.4, 30.9 / 114.6, 94.8, 62.5, 70.1, 39.4, 82.6, 25.3; 02:19 (4.83 / 0.98)
#: 161.1, 63.8, 76.4, 64.5, 23.5, 39.1, 30.7 / 222.8, 97.5, 76.2, 57.8, 78.8, 85.3, 76.3, 92.2.
#: ``AGENT_MAPS_COST_BUSY_LOOP``: the later samples' mean read (``maps_cost_s``; 12, 12, 5, 6, 35,
#: 40 reads: 2.56, 3.41, 0.92, 12.63, 4.85, 6.52 ms). ``AGENT_COST_BUSY_LOOP``: the later
#: samples' mean less it (23.2, 32.0, 38.9, 93.7, 45.0, 69.7 ms). ``AGENT_FIRST_EXTRA_BUSY_LOOP``:
#: the first samples' mean less the later ones' (102.1 - 23.2, 94.8 - 32.0, 130.1 - 38.9, 217.0 -
#: 93.7, 210.3 - 45.0, 196.0 - 69.7 ms; six runs each; per run its first less its later ones'
#: mean spreads by sd 31, 24, 44, 29, 55, 43 ms).
AGENT_COST_BUSY_LOOP = {
    "sched-passive": 20.6e-3, "sched-oversubscribed": 28.6e-3, "sched-passive-8": 38.0e-3,
    "sched-oversubscribed-8": 81.1e-3, "sched-passive-2x4": 40.1e-3, "sched-oversubscribed-2x4": 63.1e-3}
AGENT_MAPS_COST_BUSY_LOOP = {
    "sched-passive": 2.6e-3, "sched-oversubscribed": 3.4e-3, "sched-passive-8": 0.9e-3,
    "sched-oversubscribed-8": 12.6e-3, "sched-passive-2x4": 4.9e-3, "sched-oversubscribed-2x4": 6.5e-3}
AGENT_FIRST_EXTRA_BUSY_LOOP = {
    "sched-passive": 79.0e-3, "sched-oversubscribed": 62.7e-3, "sched-passive-8": 91.2e-3,
    "sched-oversubscribed-8": 123.3e-3, "sched-passive-2x4": 165.3e-3, "sched-oversubscribed-2x4": 126.3e-3}


#: §10.18's two conditions, each case's barrier from one run (2026-11-27 16:42-16:47 UTC; the
#: command windows over the condition's runs spread by 8-10 % on vm-4, up to 23 % elsewhere), and
#: §10.39's ``group-loops-N``, busy loops in QEMU's own task group.
CONDITIONS: dict[str, HostCondition] = {
    # QEMU 1.78-1.86 cores in these runs, load 0.7-1.8.
    "idle": HostCondition("two-cores", {
        "sched-passive": 2.285e-3, "sched-oversubscribed": 2.293e-3, "sched-passive-8": 7.317e-3,
        "sched-oversubscribed-8": 8.800e-3, "sched-passive-2x4": 13.769e-3, "sched-oversubscribed-2x4": 12.462e-3},
        AGENT_COST_IDLE, AGENT_MAPS_COST_IDLE, AGENT_FIRST_EXTRA_IDLE),
    # One busy loop beside (0.99-1.0 of a core); QEMU 0.99-1.00 cores, load 1.6-3.2. The agent's
    # samples measured under it (``AGENT_COST_BUSY_LOOP``, §10.44).
    "busy-loop": HostCondition("one-core", {
        "sched-passive": 3.473e-3, "sched-oversubscribed": 3.629e-3, "sched-passive-8": 7.285e-3,
        "sched-oversubscribed-8": 8.229e-3, "sched-passive-2x4": 14.046e-3, "sched-oversubscribed-2x4": 15.026e-3},
        AGENT_COST_BUSY_LOOP, AGENT_MAPS_COST_BUSY_LOOP, AGENT_FIRST_EXTRA_BUSY_LOOP),
    # N busy loops in QEMU's own autogroup (``bench/vm_loaded_host.py``; docs/scheduler.md §10.39,
    # 2026-11-27 23:31 - 11-28 00:10 UTC; each loop and QEMU in one group, ``/proc/PID/autogroup``): the
    # host the model runs as it is, two cores and N always-runnable nice-0 threads on the queues of
    # QEMU's threads. The barrier: the mean of the runs' command time over 1000 barriers, s
    # (vm-4 passive N=1 3.4461, 3.37804, 3.296836; N=2 4.5475, 4.810317, 4.882971; N=4 5.711578,
    # 7.17873, 6.225629; N=8 11.303921, 9.755381, 10.964822; oversubscribed N=1 3.899008,
    # 3.813304, 3.385048; N=2 5.15357, 4.612131, 5.464872; N=4 7.598337, 6.067175, 6.285911; N=8
    # 8.071907, 8.733489, 10.100403). The agent's CPU per sample: the mean over the samples inside
    # the command, numa_maps read included, of ``bench/agent_first_sample.py NAME none`` under the
    # condition (two commands a boot; passive N=1 two boots, 12 samples, 7.4-76.8 ms; N=2 two
    # boots, 16, 10.9-99.9; N=4 12, 12.1-130.2; N=8 18, 7.1-246.0; oversubscribed N=1 two boots,
    # 13, 12.8-118.0; N=2 two boots, 17, 9.0-134.5; N=4 15, 22.3-199.7; N=8 18, 28.9-260.7): the
    # read is in the mean, as in the load 5.5-16 background's (``agent_maps_cost_s`` left at 0).
    # vm-8 passive (two runs, 250 barriers; 23:52-23:56 UTC): N=1 2.477596, 2.306496 s; N=2
    # 3.506765, 2.936241; N=4 4.305982, 4.474496; the agent's samples N=1 4, 58.0-176.7 ms; N=2
    # 5, 37.5-157.8; N=4 7, 30.7-259.9 (two or three a command, the first the longest).
    "group-loops-1": HostCondition("two-cores-loop", {
        "sched-passive": 3.374e-3, "sched-oversubscribed": 3.699e-3, "sched-passive-8": 9.568e-3},
        {"sched-passive": 29.2e-3, "sched-oversubscribed": 35.6e-3, "sched-passive-8": 107.9e-3}),
    "group-loops-2": HostCondition("two-cores-loops-2", {
        "sched-passive": 4.747e-3, "sched-oversubscribed": 5.077e-3, "sched-passive-8": 12.886e-3},
        {"sched-passive": 35.3e-3, "sched-oversubscribed": 44.7e-3, "sched-passive-8": 90.1e-3}),
    "group-loops-4": HostCondition("two-cores-loops-4", {
        "sched-passive": 6.372e-3, "sched-oversubscribed": 6.651e-3, "sched-passive-8": 17.561e-3},
        {"sched-passive": 44.9e-3, "sched-oversubscribed": 64.6e-3, "sched-passive-8": 132.6e-3}),
    "group-loops-8": HostCondition("two-cores-loops-8", {"sched-passive": 10.675e-3, "sched-oversubscribed": 8.969e-3},
                                   {"sched-passive": 53.5e-3, "sched-oversubscribed": 76.9e-3}),
}


#: The conditions that give TCG's speed, per count of host cores QEMU had to itself: the idle
#: host's two, and one beside a busy loop in another autogroup (§10.40, §10.43).
SPEED_CONDITIONS = ("idle", "busy-loop")

for _name, _case in list(CASES.items()):
    _speeds = tuple((HOSTS[CONDITIONS[c].host]["cores"], CONDITIONS[c].barrier_s[_name])
                    for c in SPEED_CONDITIONS if _name in CONDITIONS[c].barrier_s)
    if _case.background is not None and _speeds:
        CASES[_name] = replace(_case, background=replace(_case.background, speed_barriers_s=_speeds))


def sim_doc(spec: RunSpec, background: GuestBackground | None = None, interval_ms: int = 1000,
            host: bool | dict[str, Any] = True) -> dict[str, Any]:
    """The simulator's run of a case; with the guest's ``background``, on the preset at the
    guest's speed carrying it: a first run, on ``guest_speed_machine`` not slowed (the preset
    with the guest's one memory latency), gives the simulated seconds per barrier
    (kernels/barrier.c: one per rep), the second runs on the preset slowed by the guest's over
    that (``guest_speed_machine``) with the guest's background (``GuestBackground.engine``). With
    the background both runs also simulate the host running the vCPUs (``GUEST_HOST``), on every
    guest (one vCPU per node too: the same host runs them all, and without it no vCPU is ever left
    unrun, docs/scheduler.md §10.16): the first then gives the barrier's length with the host's
    cores shared by all vCPUs, and the slowdown left is TCG's own (translated code slower than the
    preset's placeholder timing). Where the case was measured with QEMU alone on its cores
    (``GuestBackground.speed_barriers_s``) the first run is on the measured host with as many cores
    as the second's, whatever load the second adds: the host model gives what the load takes
    (§10.40), and QEMU's cost per guest instruction follows how many vCPUs run side by side
    (§10.43); the background's ``barrier_s`` is then a check. ``host=False`` leaves the host out
    (every vCPU always runs); a dict is the host to model instead of ``GUEST_HOST`` (one of
    ``HOSTS``)."""
    from numalab.runner import sim

    chosen = host if isinstance(host, dict) else GUEST_HOST if host else None
    vcpu_host = chosen if background is not None else None
    if background is None:
        return dict(sim.run(spec).doc)

    def unslowed(run_host: dict[str, Any] | None) -> dict[str, Any]:
        """The run on the preset with the guest's one memory latency, not slowed (the first run
        times the barrier on the machine the second run slows down, so the slowdown is the
        guest's alone, not the preset's placeholder remote latencies)."""
        m, w, placement, policies, config = spec.engine_inputs(guest_speed_machine(spec.machine, 1.0))
        if run_host is not None:
            config["vcpu_host"] = run_host
        return dict(sim.run(spec.bind_inputs(m, w, placement, policies, config)).doc)

    if not spec.noise:
        return unslowed(vcpu_host)
    barriers = int(dict(spec.params).get("reps") or 1)
    if background.speed_barriers_s and vcpu_host is not None:
        # TCG's slowdown from the measured host with as many cores, whatever load this run's
        # host adds (§10.40, §10.43).
        cores, speed_s = next((e for e in background.speed_barriers_s if e[0] == vcpu_host["cores"]),
                              background.speed_barriers_s[0])
        speed_host = next(HOSTS[CONDITIONS[c].host] for c in SPEED_CONDITIONS if HOSTS[CONDITIONS[c].host]["cores"] == cores)
        first = unslowed(speed_host)
    else:
        speed_s, first = background.barrier_s, unslowed(vcpu_host)
    slowdown = speed_s / (float(first["time_s"]) / barriers)
    m, w, placement, policies, config = spec.engine_inputs(guest_speed_machine(spec.machine, slowdown))
    config["background"] = background.engine(interval_ms)
    if vcpu_host is not None:
        config["vcpu_host"] = vcpu_host
    doc = sim.run(spec.bind_inputs(m, w, placement, policies, config)).doc
    return dict(doc)


def condition_doc(name: str, condition: str, seed: int = 1, explain_sched: bool = False) -> dict[str, Any]:
    """Case ``name``'s simulator run under a measured host condition (``CONDITIONS``): its host,
    and its background with the condition's barrier and agent (``HostCondition.background``)."""
    case, cond = CASES[name], CONDITIONS[condition]
    spec = replace(sim_spec(case), seed=seed).updated(explain_sched=explain_sched)
    return sim_doc(spec, cond.background(name), case.interval_ms, HOSTS[cond.host])


def sim_side(spec: RunSpec, background: GuestBackground | None = None, interval_ms: int = 1000,
             host: bool | dict[str, Any] = True) -> Side:
    """The simulator's side of a case (``sim_doc``)."""
    doc = sim_doc(spec, background, interval_ms, host)
    series = [list(p["pages_per_node"]) for p in doc["timeline"]] or [doc["pages"]["per_node"]]
    tiers = len({t for t in doc.get("memory_tiers") or [] if t is not None}) or 1
    return Side(*_complete(series), _counters(doc), threads_of(doc), tiers)


def anon_pages(sample: dict[str, Any], nodes: list[int]) -> list[int]:
    """Base pages per node of a sample's mappings that are not file-backed."""
    out = [0] * len(nodes)
    index = {n: i for i, n in enumerate(nodes)}
    for m in sample.get("mappings") or []:
        if m.get("kind") == "file":
            continue
        scale = max(1, int(m.get("kernelpagesize_kb") or 4) // 4)
        for node, pages in (m.get("pages_per_node") or {}).items():
            i = index.get(int(node))
            if i is not None:
                out[i] += int(pages) * scale
    return out


def grid_pages(sample: dict[str, Any], nodes: list[int]) -> list[int]:
    """Base pages per node of the sample's non-file mappings that hold at least a quarter of the
    largest one's pages (a heap or arena of the grid holds thousands; a stack a few)."""
    maps = [m for m in sample.get("mappings") or [] if m.get("kind") != "file"]
    per = [anon_pages({"mappings": [m]}, nodes) for m in maps]
    most = max((sum(p) for p in per), default=0)
    return [sum(col) for col in zip(*[p for p in per if 4 * sum(p) >= most])] if per else [0] * len(nodes)


def ramdisk_pages(sample: dict[str, Any], nodes: list[int]) -> list[int]:
    """Base pages per node of the sample's mappings of the guest's ramdisk."""
    return anon_pages({"mappings": [{**m, "kind": "ramdisk"} for m in sample.get("mappings") or [] if m.get("file") == ramdisk.DEVICE]}, nodes)


def vm_side(out: vm_run.VmOutput, doc: dict[str, Any], pages: str = "anon", full_fraction: float = 0.99) -> Side:
    from numalab.results.agent import parse_records

    nodes = doc["pages"]["nodes"]
    samples = [r for r in parse_records(out.text("agent.jsonl")) if r["type"] == "sample"]
    count = {"grid": grid_pages, "file": ramdisk_pages}.get(pages, anon_pages)
    series = [count(s, nodes) for s in samples if s.get("mappings")]
    if not series:
        raise UsageError("the guest's agent took no sample of the command's pages (it ended too soon: raise --reps or --n)")
    tiers = len(doc["vm"].get("memory_tiers", {}).get("tiers") or {}) or 1
    return Side(*_complete(series, full_fraction), _counters(doc), threads_of(doc), tiers)


def _counters(doc: dict[str, Any]) -> dict[str, int]:
    out = {k: sum(int(v.get(k, 0)) for v in doc["numastat"].values()) for k in NUMASTAT}
    for k in COUNTERS[len(NUMASTAT):] + TIER_COUNTERS:
        out[k] = int(doc["vmstat"].get(k, 0))
    return out


#: The project's C kernels (kernels/) with a simulator descriptor of the same name, and how a
#: descriptor parameter becomes the kernel's option (STREAM's ntimes is the kernel's --reps; its
#: descriptor first-touches in parallel, as stream.c does, so the kernel gets --init=parallel).
KERNEL_OPTIONS = {
    "dgemv": ({"n": "n", "reps": "reps", "threads": "threads", "init": "init"}, {}),
    "stream": ({"n": "n", "ntimes": "reps", "threads": "threads"}, {"init": "parallel"}),
    "barrier": ({"n": "n", "reps": "reps", "threads": "threads", "init": "init"}, {}),
    "alloc3d": ({"n": "n", "reps": "reps", "threads": "threads", "layout": "layout"}, {}),
    "filemap": ({"n": "n", "reps": "reps", "threads": "threads", "madvise": "madvise", "procs": "procs"}, {"file": ramdisk.DEVICE}),
}


def ramdisk_mib(workload: str, resolved: dict[str, Any]) -> int:
    """The guest's ramdisk for a workload that maps it: filemap's procs x threads x n pages, rounded up."""
    if workload != "filemap":
        return 0
    return -(-4096 * int(resolved["n"]) * int(resolved["threads"]) * int(resolved.get("procs", 1)) // 2**20)


def kernel_argv(workload: str, resolved: dict[str, Any]) -> list[str]:
    """The C kernel's command line for the simulator's resolved parameters (all of them, defaults
    included, so both sides run the same size)."""
    names, fixed = KERNEL_OPTIONS[workload]
    opts = {names[k]: v for k, v in resolved.items() if k in names} | fixed
    return [workload] + [f"--{k}={v}" for k, v in sorted(opts.items())]


def vm_request(case: Case, resolved: dict[str, Any], spec: RunSpec, memory_per_node_mib: int | None, accel: str,
               timeout_s: float, cpus: int = 1) -> vm_run.VmRequest:
    argv = kernel_argv(case.workload, resolved)
    return vm_run.VmRequest(
        machine=case.machine, command=argv, placement=spec.placement, balancing=spec.balancing, cpus_per_node=cpus,
        memory_per_node_mib=memory_per_node_mib, thp="never", accel=accel, timeout_s=timeout_s, interval_ms=case.interval_ms,
        omp_wait_policy=spec.omp_wait_policy, ramdisk_mib=ramdisk_mib(case.workload, resolved),
    )


def compare(
    case: Case,
    memory_per_node_mib: int | None = None,
    accel: str = "tcg",
    timeout_s: float = 300.0,
    say: Callable[[str], None] = lambda s: None,
    runs: int = 1,
) -> Comparison:
    """One case: the simulator once (its figures are fixed by the seed), the guest ``runs``
    times (its own spread from run to run; the expectation must hold in every run)."""
    return next(compare_many([case], memory_per_node_mib, accel, timeout_s, say, runs))


#: Most guest commands in one boot (``compare_many``): a boot's run and its data port stay bounded.
MAX_BOOT_COMMANDS = 12


@dataclass(frozen=True)
class _Planned:
    case: Case
    sim: Side
    sim_kernel: str
    request: vm_run.VmRequest


def sim_spec(case: Case, kernel: str = "6.1", threads: int | None = None) -> RunSpec:
    """The simulator's run of a case as ``vm check`` makes it: one thread per guest vCPU (the
    preset's PUs) unless the case or ``threads`` says otherwise, THP never, the case's config, on
    ``kernel``'s profile (``sim_kernel()`` of the guest's release; Debian's 6.1 by default)."""
    from numalab.machine import load as load_machine

    params = {"threads": threads if threads is not None else load_machine(case.machine).nr_pus, **case.params}
    return RunSpec.create(case.machine, case.workload, params=params, kernel=kernel, thp="never").with_config(case.config)


def _plan(case: Case, memory_per_node_mib: int | None, accel: str, timeout_s: float, release: str, say: Callable[[str], None]) -> _Planned:
    from numalab.machine import load as load_machine

    if case.workload not in KERNEL_OPTIONS:
        raise UsageError(f"vm check runs {' or '.join(KERNEL_OPTIONS)} (a C kernel with a simulator descriptor), not '{case.workload}'")
    machine = load_machine(case.machine)
    cpus = cpus_per_node(machine)
    kernel = sim_kernel(release)
    spec = sim_spec(case, kernel)
    bound = spec.bind()  # a bad case fails here, before the guest boots
    say(f"vm check {case.name}: simulating {case.workload} on {case.machine} (kernel profile {kernel})")
    request = vm_request(case, dict(bound.workload["params"]), spec, memory_per_node_mib, accel, timeout_s, cpus)
    side = sim_side(spec, case.background, case.interval_ms) if case.procs == 1 else sim_side(split_corun(case, dict(spec.params), kernel, machine))
    return _Planned(case, side, kernel, request)


#: The region a workload's processes split when a case runs several (``Case.procs``).
SPLIT_REGION = {"filemap": "file"}


def split_corun(case: Case, params: dict[str, Any], kernel: str, machine: Any) -> RunSpec:
    """The simulator's side of a case with ``procs`` processes: a co-run of that many copies of
    the workload, copy k bound to node k (as the kernel's ``sched_setaffinity``), splitting its
    region (``split=REGION``)."""
    if case.workload not in SPLIT_REGION:
        raise UsageError(f"vm check {case.name}: procs > 1 needs a workload whose processes split a region ({', '.join(SPLIT_REGION)})")
    nodes = list(machine.node_os_indexes)
    items = ":".join(f"{k}={v}" for k, v in sorted(params.items()))
    groups = [f"{case.workload}({items}:cpunodebind={nodes[k % len(nodes)]}:split={SPLIT_REGION[case.workload]})" for k in range(case.procs)]
    return RunSpec.create(case.machine, "+".join(groups), kernel=kernel, thp="never")


def boots(requests: list[vm_run.VmRequest], runs: int = 1) -> list[list[int]]:
    """The guest boots for ``runs`` runs of each request, each boot a list of request indexes in
    the order they run: requests with the same ``vm_run.boot_key`` that may share a boot
    (``vm_run.shareable``) share one, their runs in turn (1, 2, 3, 1, 2, 3, ...), at most
    ``MAX_BOOT_COMMANDS`` to a boot; any other request boots its own guest for each run. In the
    order of each group's first request."""
    groups: dict[Any, list[int]] = {}
    for i, r in enumerate(requests):
        groups.setdefault(vm_run.boot_key(r) if vm_run.shareable(r) else ("own", i), []).append(i)
    out: list[list[int]] = []
    for key, members in groups.items():
        if key[0] == "own":
            out += [members] * runs
            continue
        order = [i for _ in range(runs) for i in members]
        out += [order[k:k + MAX_BOOT_COMMANDS] for k in range(0, len(order), MAX_BOOT_COMMANDS)]
    return out


def compare_many(
    cases: list[Case],
    memory_per_node_mib: int | None = None,
    accel: str = "tcg",
    timeout_s: float = 300.0,
    say: Callable[[str], None] = lambda s: None,
    runs: int = 1,
) -> Iterator[Comparison]:
    """``compare`` for each case, in order, with the guest runs of cases that can share a boot
    (``boots``) run one after the other in one guest: each has its own agent, records and
    counters over its own command, as in a guest of its own (``vm_run.run_many``). Every case is
    simulated and checked before the first boot; a case is yielded once its guest runs are done."""
    from numalab.vm import setup as vm_setup

    if not 1 <= runs <= MAX_RUNS:
        raise UsageError(f"--runs must be in 1..{MAX_RUNS}, got {runs}")
    release = vm_setup.load(say).kernel_version
    planned = [_plan(c, memory_per_node_mib, accel, timeout_s, release, say) for c in cases]
    done: list[list[tuple[vm_run.VmOutput, dict[str, Any]]]] = [[] for _ in planned]
    plan = boots([p.request for p in planned], runs)
    ready = 0
    for n, boot in enumerate(plan):
        names = ", ".join(dict.fromkeys(planned[i].case.name for i in boot))
        if len(plan) > 1:
            say(f"vm check: guest boot {n + 1}/{len(plan)} ({names})")
        for i, out in zip(boot, vm_run.run_many([planned[i].request for i in boot], say)):
            case = planned[i].case
            doc = vm_run.document(out)
            if doc["status"] != "ok":
                raise vm_run.GuestCommandError(f"vm check {case.name}: the guest's {case.workload} failed ({doc['error']}): {out.text('stderr').strip()[-300:]}")
            done[i].append((out, doc))
        while ready < len(planned) and len(done[ready]) == runs:
            yield _verdict(planned[ready], done[ready])
            ready += 1


def _verdict(p: _Planned, runs: list[tuple[vm_run.VmOutput, dict[str, Any]]]) -> Comparison:
    case, sim = p.case, p.sim
    sides = [vm_side(out, doc, case.pages, case.full_fraction) for out, doc in runs]
    out, doc = runs[0]
    c = Comparison(case, sim, sides[0], out.kernel_release, p.sim_kernel, vm_doc=doc, vm_runs=sides)
    why = case.expect(sim)
    if why is not None:
        c.failures["sim"] = why
    for k, side in enumerate(sides):
        why = case.expect(side)
        if why is not None:
            c.failures["vm"] = why if len(sides) == 1 else f"guest run {k + 1}: {why}"
            break
    if case.agree_pct is not None and (why := disagreement(sim, c.vm, case.agree_pct)) is not None:
        c.failures["vm-sim"] = why
    return c


def disagreement(sim: Side, vm: Side, pct: float) -> str | None:
    """Why the two sides' pages per node after first touch are not within ``pct`` % of the
    region (the simulator's pages) on every node, or None."""
    limit = pct / 100.0 * sim.total
    off = [(i, v - s) for i, (s, v) in enumerate(zip(sim.after_init, vm.after_init)) if abs(v - s) > limit]
    if not off:
        return None
    return ", ".join(f"node{i} differs by {d} pages" for i, d in off) + f" (more than {pct:g}% of {sim.total}: {limit:.0f})"


def orderings(results: list[Comparison], sides: tuple[str, ...] = ("sim", "vm")) -> dict[str, str]:
    """Cases run together with their ``more_than`` case: case name -> why the ordering failed on a
    side of ``sides`` (its threads must migrate more per thread per barrier than the bound run's).
    Per barrier, not per second: both runs pass the same barriers, while the simulated sleeping
    cases run at the guest's speed (``GUEST_BACKGROUND``) and the bound one at the preset's."""
    by_name = {c.case.name: c for c in results}
    out = {}
    for c in results:
        ref = by_name.get(c.case.more_than or "")
        if ref is None:
            continue
        rates = {side: [getattr(x, side).threads.migrations_per_thread_barrier(int(x.case.params.get("reps") or 0)) for x in (c, ref)]
                 for side in sides}
        bad = [f"{side}: {mine:.3g} <= {theirs:.3g}" for side, (mine, theirs) in rates.items() if mine <= theirs]
        if bad:
            out[c.case.name] = f"thread migrations per thread per barrier not above {ref.case.name}'s ({'; '.join(bad)})"
    return out


def adhoc_case(machine: str, workload: str, params: dict[str, Any], config: str) -> Case:
    """A case from the command line: no expectation, the comparison is printed."""
    return Case("adhoc", workload, params, config, lambda s: None, machine=machine)


# ---- text ----------------------------------------------------------------------------------

def report(c: Comparison) -> str:
    n = len(c.sim.after_init)
    rows = []
    for i in range(n):
        rows.append([f"node{i}", c.sim.after_init[i], c.vm.after_init[i], c.vm.after_init[i] - c.sim.after_init[i],
                     c.sim.after_run[i], c.vm.after_run[i], c.vm.after_run[i] - c.sim.after_run[i]])
    rows.append(["total", c.sim.total, c.vm.total, c.vm.total - c.sim.total, sum(c.sim.after_run), sum(c.vm.after_run),
                 sum(c.vm.after_run) - sum(c.sim.after_run)])
    pages = table(["", "sim init", "vm init", "vm-sim", "sim end", "vm end", "vm-sim"], rows,
                  f"{'file' if c.case.pages == 'file' else 'anonymous'} 4 KiB pages per node after first touch (init) and after the run (end)")
    shown = COUNTERS + tuple(k for k in TIER_COUNTERS if c.case.tiering or c.sim.counters.get(k) or c.vm.counters.get(k))
    counters = table(["counter", "sim", "vm", "vm-sim"],
                     ([k, c.sim.counters.get(k, 0), c.vm.counters.get(k, 0), c.vm.counters.get(k, 0) - c.sim.counters.get(k, 0)]
                      for k in shown),
                     "counters over the run (numastat summed over nodes; vmstat)")
    case = c.case
    params = ", ".join(f"{k}={v}" for k, v in case.params.items())
    lines = [
        f"== {case.name}: {case.workload} ({params}) on {case.machine}, config '{case.config}'; "
        f"guest Linux {c.kernel_release}, simulator profile {c.sim_kernel}",
        render(pages), render(counters),
    ]
    if case.tiering:
        guest = (c.vm_doc or {}).get("vm", {}).get("memory_tiers", {})
        tiers = ", ".join(f"{k}: {v}" for k, v in sorted((guest.get("tiers") or {}).items())) or "none"
        lines.append(f"memory tiers: sim {c.sim.memory_tiers}, vm {c.vm.memory_tiers} (guest: {tiers}; "
                     f"demotion_enabled {str(guest.get('demotion_enabled', False)).lower()})")
    if case.sched:
        lines.append(render(table(["", "threads", "nr_migrations", "per thread per s", "changed node", "away % (mean)",
                                   "away % (max)", "run s"], [_thread_row(side, getattr(c, side).threads) for side in ("sim", "vm")],
                                  "threads: migrations (the kernel's nr_migrations), threads seen on another node than their "
                                  "first, share of time away from the first node (guest: of its samples)")))
    doc = c.case.expect.__doc__
    if doc:
        verdict = "  ".join(f"{side}: {'FAIL (' + c.failures[side] + ')' if side in c.failures else 'ok'}" for side in ("sim", "vm"))
        lines.append(f"expect {doc} -- {verdict}")
    if "vm" in c.failures and (when := scanner_timeline(c.vm_doc or {})):
        lines.append(f"guest's scanner over the run (t_s: numa_pte_updates/numa_hint_faults/numa_pages_migrated): {when}")
    if c.case.agree_pct is not None:
        why = c.failures.get("vm-sim")
        lines.append(f"expect the guest and the simulator within {c.case.agree_pct:g}% of the region on every node after first "
                     f"touch -- {'FAIL (' + why + ')' if why else 'ok'}")
    return "\n".join(lines)


def scanner_timeline(doc: dict[str, Any], points: int = 8) -> str:
    """When the guest's NUMA scanner marked pages and took faults, at ``points`` samples spread over
    the run: a failed balancing case says whether the scanner started late or never faulted."""
    samples = [s for s in doc.get("timeline") or [] if "numa_pte_updates" in (s.get("vmstat") or {})]
    if not samples:
        return ""
    picked = sorted({round(k * (len(samples) - 1) / (points - 1)) for k in range(points)})
    return "  ".join(f"{samples[i]['t_s']:.2f}: {samples[i]['vmstat']['numa_pte_updates']}/{samples[i]['vmstat']['numa_hint_faults']}/"
                     f"{samples[i]['vmstat']['numa_pages_migrated']}" for i in picked)


def _thread_row(side: str, t: Threads) -> list[Any]:
    return [side, len(t.nr_migrations), sum(t.nr_migrations), f"{t.migrations_per_thread_s:.3g}", t.changed_node,
            f"{t.mean_away_pct:.1f}", f"{max(t.away_pct, default=0.0):.1f}", f"{t.time_s:.3g}"]


def sched_metrics(side: Side, barriers: int) -> dict[str, float]:
    """The figures a scheduler case compares: mean share of time away from the first node,
    migrations per thread per barrier, and the fullest node's share of the pages after the
    parallel first touch (100 / nodes when even)."""
    t = side.threads
    return {
        "away %": t.mean_away_pct,
        "migrations/thread/barrier": t.migrations_per_thread_barrier(barriers),
        "fullest node %": 100.0 * max(side.after_init, default=0) / side.total if side.total else 0.0,
    }


#: Percentage points the fullest node's share may differ outside the guest's range (its extra pages).
FULLEST_SLACK_PCT = 1.0


def outside_guest_range(c: Comparison) -> list[str]:
    """The scheduler figures (``sched_metrics``) of the simulator outside the guest's run-to-run
    range (min..max over ``vm_runs``), as ``name sim (guest lo..hi)``."""
    barriers = int(c.case.params.get("reps") or 0)
    sim = sched_metrics(c.sim, barriers)
    runs = [sched_metrics(v, barriers) for v in (c.vm_runs or [c.vm])]
    out = []
    for k, v in sim.items():
        lo, hi = min(r[k] for r in runs), max(r[k] for r in runs)
        # The guest's own few extra anonymous pages (stack, libc's heap) shift its shares a little.
        slack = FULLEST_SLACK_PCT if k == "fullest node %" else 1e-9
        if not lo - slack <= v <= hi + slack:
            out.append(f"{k} {v:.3g} (guest {lo:.3g}..{hi:.3g})")
    return out


def _span(values: list[float], fmt: str = "{:.3g}") -> str:
    lo, hi = min(values), max(values)
    return fmt.format(lo) if lo == hi else f"{fmt.format(lo)}..{fmt.format(hi)}"


def sched_table(results: list[Comparison]) -> str:
    """The scheduler cases side by side, simulator and guest, one row per case and side (the table
    of README.md and docs/scheduler.md §10). With several guest runs the guest's figures are
    min..max over them, and a line per case says whether the simulator falls inside."""
    rows = []
    verdicts = []
    for c in results:
        if not c.case.sched:
            continue
        # kernels/barrier.c: one barrier per rep on both sides.
        barriers = int(c.case.params.get("reps") or 0)
        runs = c.vm_runs or [c.vm]
        for side, sides in (("sim", [c.sim]), ("vm", runs)):
            ts = [s.threads for s in sides]
            nodes = len(sides[0].after_init)
            pages = " ".join(_span([float(s.after_init[i]) for s in sides], "{:.0f}") for i in range(nodes))
            rows.append([c.case.machine, c.case.name, side, len(sides), len(ts[0].nr_migrations),
                         _span([t.migrations_per_thread_s for t in ts]),
                         _span([t.migrations_per_thread_barrier(barriers) for t in ts]),
                         _span([float(t.changed_node) for t in ts], "{:.0f}") + f"/{len(ts[0].nr_migrations)}",
                         _span([t.mean_away_pct for t in ts], "{:.1f}"), pages])
        if len(runs) > 1:
            outside = outside_guest_range(c)
            verdicts.append(f"{c.case.name}: the simulator is "
                            + (f"outside the guest's {len(runs)} runs on {'; '.join(outside)}" if outside
                               else f"inside the guest's range of {len(runs)} runs on every figure"))
    text = render(table(["machine", "case", "side", "runs", "threads", "migrations/thread/s", "migrations/thread/barrier",
                         "changed node", "away % (mean)", "pages per node after init"], rows,
                        "scheduler cases: simulator (sim) and guest kernel (vm; min..max over the guest runs)"))
    return "\n".join([text, *verdicts])


def with_machine(case: Case, machine: str | None) -> Case:
    return case if machine is None else replace(case, machine=machine)
