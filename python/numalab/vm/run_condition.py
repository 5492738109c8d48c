"""One guest run's own host condition, and the simulator under it (issue 22; docs/scheduler.md
§10.18, §10.20).

The guest's speed depends on the host's load (§10.18): QEMU got 1.7-1.9 of this host's two cores
with the host otherwise idle and one beside a busy loop, and the guest's barrier took 2.3 ms or
3.5 ms on ``vm-4``. ``vm check --moves`` measures both in every run: QEMU's threads' shares of a
host CPU over the command (``hostthreads``, their sum is the cores QEMU got) and the command's
own time (``sched_trace.GuestMoves.command_s``). ``condition_of`` turns them into the host
model's cores and the guest's seconds per barrier; ``sim_under`` runs the case's simulator side
(``check.sim_doc``) under that condition, seed after seed; ``judge`` sets its mean beside the
run's moves with the run's own counting uncertainty. ``vm check --moves``, the bench
(``bench/vm_sched_sim.py --per-run``) and the tests go through ``replay`` / ``judge`` alike.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, replace
from typing import Any, Callable, NamedTuple

#: Seeds the simulator runs per guest run (seeds 1..4: its own run-to-run spread is then in the
#: mean, as in ``test_vm_guest_seen.py``'s judgements).
SEEDS = 4


@dataclass(frozen=True)
class RunCondition:
    """The host condition of one guest run, as the simulator is given it.

    ``cores``: the host model's cores (``vcpu_host.cores``), QEMU's measured share rounded to a
    whole core (half up), at least 1, at most the host's CPUs. The host model
    (``numalab_sim::vhost``) has whole cores, an EEVDF queue each, balanced (§10.41). A
    fractional share is time, not cores: 1.8 on the idle two-core host is QEMU's threads on both
    cores, each halting part of the time (a halted vCPU leaves its core idle, which the model's
    two cores also do); 1.0 beside a busy loop in another session is one core's worth left by the
    host's group scheduling (§10.18). Rounding keeps the host the model can run; what a share of
    0.7 means (another group took part of QEMU's core) the model cannot give, and it then runs
    QEMU on one whole core while the run's barrier length carries the guest's slower speed.
    ``barrier_s``: the command's guest seconds per barrier (``command_s / reps``), or the case's
    background's (``GuestBackground.barrier_s``, measured at load 5.5-16) where the run has no
    command time; ``notes`` says which was taken in its stead.
    ``other_threads``: busy loops the run had in QEMU's own task group (docs/scheduler.md
    §10.39), the host model's ``vcpu_host.other_threads``: then every host CPU is the group's,
    QEMU's share is what it got beside the loops on them, and ``cores`` the host's CPUs."""

    cores: int
    barrier_s: float
    share: float | None
    notes: tuple[str, ...] = ()
    other_threads: int = 0

    def describe(self) -> str:
        got = f"QEMU {self.share:.2f} host cores -> {self.cores}" if self.share is not None else f"{self.cores} host core(s)"
        beside = f" shared with {self.other_threads} busy loop(s) in QEMU's group" if self.other_threads else ""
        return f"{got}{beside}, {self.barrier_s * 1e3:.2f} ms per barrier"


def condition_of(share: float | None, command_s: float | None, reps: int, host_cpus: int,
                 fallback_barrier_s: float, fallback_cores: int, other_threads: int = 0) -> RunCondition:
    """A run's condition from QEMU's measured cores (``share``, None if not sampled) and the
    command's time over its ``reps`` barriers (None if not printed); ``host_cpus`` bounds the
    cores, the fallbacks stand in for what was not measured (with a note). With
    ``other_threads`` busy loops in QEMU's own group the host model runs them beside QEMU's
    threads on all ``host_cpus`` (what QEMU got is then the model's to share out, not a bound)."""
    notes: list[str] = []
    if other_threads > 0:
        cores = max(1, host_cpus)
    elif share is None:
        cores = fallback_cores
        notes.append(f"QEMU's threads not sampled: the model's {fallback_cores} host core(s)")
    else:
        cores = min(max(1, math.floor(share + 0.5)), max(1, host_cpus))
    if command_s is not None and command_s > 0 and reps > 0:
        barrier_s = command_s / reps
    else:
        barrier_s = fallback_barrier_s
        notes.append(f"no command time: the background's {fallback_barrier_s * 1e3:.2f} ms per barrier")
    return RunCondition(cores, barrier_s, share, tuple(notes), other_threads)


def case_condition(name: str, share: float | None, command_s: float | None, host_cpus: int,
                   other_threads: int = 0) -> RunCondition:
    """``condition_of`` for ``vm check`` case ``name``: its barriers, its background's barrier
    and ``GUEST_HOST``'s cores as the fallbacks."""
    from numalab.vm import check

    case = check.CASES[name]
    if case.background is None:
        raise ValueError(f"{name} has no measured background: no host condition to give it")
    return condition_of(share, command_s, int(case.params["reps"]), host_cpus, case.background.barrier_s,
                        int(check.GUEST_HOST["cores"]), other_threads)


def qemu_cores(host: Any) -> float | None:
    """The cores QEMU got over the command: the sum of its threads' shares (vCPUs and main loop,
    ``hostthreads.HostThreads``), None if not sampled."""
    if host is None:
        return None
    threads = list(host.vcpus) + ([host.main_loop] if host.main_loop is not None else [])
    return sum(t.share for t in threads)


def sim_under(name: str, cond: RunCondition, kernel: str = "6.1", seeds: int = SEEDS) -> list[float]:
    """Case ``name``'s simulator side (``check.sim_doc``, as ``vm check`` runs it) under ``cond``:
    ``GUEST_HOST`` with the condition's cores (and its busy loops as ``other_threads``), the
    case's background with its barrier length; migrations per thread per barrier for seeds
    1..``seeds``."""
    from numalab.vm import check

    case = check.CASES[name]
    if case.background is None:
        raise ValueError(f"{name} has no measured background")
    spec = check.sim_spec(case, kernel)
    host = {**check.GUEST_HOST, "cores": cond.cores}
    if cond.other_threads:
        host["other_threads"] = cond.other_threads
    background = replace(case.background, barrier_s=cond.barrier_s)
    reps = int(case.params["reps"])
    return [check.threads_of(check.sim_doc(replace(spec, seed=s), background, case.interval_ms, host))
            .migrations_per_thread_barrier(reps) for s in range(1, seeds + 1)]


@dataclass(frozen=True)
class Verdict:
    """The simulator's mean under a run's condition beside the run: ``moves`` the run's
    migrations (k), ``expected`` the simulator's mean as moves in a run as long (mean times
    threads times barriers), ``z`` their difference in the run's counting spread (sqrt(k), the
    Poisson spread of a count of k; sqrt(1) for k = 0), ``ratio`` simulator over guest;
    ``z_both`` the same difference in the run's counting spread and the simulator's own (the
    standard error of its mean over the seeds, in moves) together: with four seeds the mean
    itself moves by as much as a small run's count does (docs/scheduler.md §10.20)."""

    guest: float
    moves: int
    sim: list[float]
    expected: float
    z: float
    ratio: float | None
    z_both: float

    @property
    def mean(self) -> float:
        return statistics.mean(self.sim)

    @property
    def within(self) -> bool:
        """Within the run's own counting uncertainty (one sqrt(k))."""
        return abs(self.z) <= 1.0

    def describe(self) -> str:
        ratio = f"{self.ratio:.3g}x the guest's" if self.ratio is not None else "the guest's is 0"
        where = "within" if self.within else "above" if self.z > 0 else "below"
        return (f"{self.mean:.4g} ({ratio}; {self.expected:.1f} moves against the run's {self.moves} "
                f"± {math.sqrt(max(self.moves, 1)):.1f}: {where}, {self.z:+.1f} sd; {self.z_both:+.1f} sd with the "
                f"simulator's own spread over its seeds)")


def judge(guest: float, threads: int, barriers: int, sim: list[float]) -> Verdict:
    """The simulator's per-seed values ``sim`` against a guest run's value ``guest``
    (migrations per thread per barrier over ``threads`` threads and ``barriers`` barriers)."""
    scale = threads * barriers
    k = round(guest * scale)
    mean = statistics.mean(sim)
    expected = mean * scale
    z = (expected - k) / math.sqrt(max(k, 1))
    se = statistics.stdev(sim) / math.sqrt(len(sim)) * scale if len(sim) > 1 else 0.0
    z_both = (expected - k) / math.sqrt(max(k, 1) + se * se)
    return Verdict(guest, k, list(sim), expected, z, mean / guest if guest > 0 else None, z_both)


class Replayed(NamedTuple):
    """One recorded run replayed: its case, record, condition and verdict."""

    case: str
    run: Any
    condition: RunCondition
    verdict: Verdict


def replay(runs: dict[str, list[Any]], host_cpus: int,
           sim: Callable[[str, RunCondition], list[float]] = sim_under) -> list[Replayed]:
    """Every recorded run (``guest_seen.GuestRun``: value, QEMU's cores, the command's time) under
    its own condition: ``sim(case, condition)`` (default ``sim_under``, seeds 1..4) judged
    against the run. Deterministic: the simulator's seeds are fixed."""
    from numalab.machine import load as load_machine
    from numalab.vm import check

    out = []
    for name, recorded in runs.items():
        case = check.CASES[name]
        threads = int(case.params.get("threads") or load_machine(case.machine).nr_pus)
        reps = int(case.params["reps"])
        for r in recorded:
            cond = case_condition(name, r.cores, r.command_s, host_cpus, r.other_threads)
            out.append(Replayed(name, r, cond, judge(r.value, threads, reps, sim(name, cond))))
    return out


def summary(replayed: list[Replayed]) -> dict[str, tuple[int, int, int, int]]:
    """Per case: runs, runs the simulator is within one counting spread of, within two, and
    within two of the counting spread and the simulator's own together (``z_both``)."""
    out: dict[str, tuple[int, int, int, int]] = {}
    for r in replayed:
        n, one, two, both = out.get(r.case, (0, 0, 0, 0))
        v = r.verdict
        out[r.case] = (n + 1, one + int(abs(v.z) <= 1), two + int(abs(v.z) <= 2), both + int(abs(v.z_both) <= 2))
    return out


def judge_run(name: str, guest: Any, host_cpus: int, kernel: str = "6.1",
              seeds: int = SEEDS) -> tuple[RunCondition, Verdict] | None:
    """``vm check --moves``' guest run (``sched_trace.GuestMoves``) of case ``name``: its
    condition and the simulator's verdict under it; None for a case without a measured
    background (nothing to give the condition to) or a run whose command reported no threads or
    barriers (no value to judge: zero moves of nothing would read as agreement)."""
    if check_case(name).background is None or not guest.threads or not guest.barriers:
        return None
    cond = case_condition(name, qemu_cores(guest.host), guest.command_s, host_cpus)
    value = guest.nr_migrations / guest.threads / guest.barriers
    return cond, judge(value, guest.threads, guest.barriers, sim_under(name, cond, kernel, seeds))


def check_case(name: str) -> Any:
    """``vm check``'s case ``name``."""
    from numalab.vm import check

    return check.CASES[name]


def report(cond: RunCondition, v: Verdict) -> str:
    """The text lines ``vm check --moves`` prints for a run judged under its own condition."""
    lines = [f"this run's host condition: {cond.describe()}",
             f"guest {v.guest:.4g} migrations per thread per barrier ({v.moves} moves); simulator under this "
             f"condition, mean of seeds 1-{len(v.sim)}: {v.describe()}"]
    lines += [f"  note: {n}" for n in cond.notes]
    return "\n".join(lines)


def as_json(cond: RunCondition, v: Verdict) -> dict[str, Any]:
    """``--moves --json``'s ``run_condition``: the condition and the verdict under it."""
    return {"qemu_cores": cond.share, "cores": cond.cores, "other_threads": cond.other_threads,
            "barrier_s": cond.barrier_s, "notes": list(cond.notes),
            "guest": v.guest, "moves": v.moves, "sim": v.sim, "sim_mean": v.mean, "ratio": v.ratio,
            "expected_moves": v.expected, "z": v.z, "z_both": v.z_both, "within": v.within}
