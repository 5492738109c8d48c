"""Execute a resolved study into the results store.

Runs whose hash the store already holds as complete are skipped; the rest go to a backend
(``executors``) and the outcomes that return are committed together at most ``SAVE_S`` after
the first of them returned (one transaction, which Ctrl-C and SIGTERM wait for; they, a full
``SAVE_RUNS`` and the end of the sweep commit at once), so stopping the sweep at any point
(Ctrl-C, SIGTERM, a lost worker) keeps every finished run, ``kill -9`` loses at most the runs
of the last ``SAVE_S``, and the next sweep does only what is left. One commit per run would
cost the client about a millisecond a run, which on a machine whose CPUs all run simulations
is taken from them. Runs whose worker died are submitted again (at most ``RETRIES`` times: a
run that kills every worker it lands on is then recorded as failed).

Short runs travel in batches: after the first runs return, runs are grouped so that a batch
takes about ``BATCH_S`` seconds, which keeps the per-submission cost (process hand-off, a Dask
task) a small share of the total. A killed sweep loses at most the batches in flight.

A study is expanded in full before its first run starts (every value is checked up front), so
its size is bounded: ``MAX_RUNS``; ``check_size`` counts a study's runs from its axes without
expanding it and refuses a larger one with the limit and the reason.
"""

from __future__ import annotations

import math
import os
import queue
import signal
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable

from numalab.console.progress import Progress
from numalab.exceptions import UsageError
from numalab.results.store import ALONE_STORE_ENV as STORE_ENV, Store
from numalab.study import kinds
from numalab.study.resolved import ResolvedRun, ResolvedStudy

RETRIES = 2
POLL_S = 0.25
# About a second of runs per batch: each batch costs the client's pool threads a few wake-ups
# (0.5 s batches: 15-20 ms more of the client's CPU for 200 runs of 20 ms, bench/study_overhead.py).
BATCH_S = 1.0
SAVE_S = 0.5
SAVE_RUNS = 256
MAX_BATCH = 64
# Runs per study. Expansion keeps each resolved run in memory (about 3 KB) and checks it (about
# 0.2 ms) before anything runs, and the store registers the whole list: 100,000 runs is ~300 MB
# and ~30 s before the first simulation, days of simulations after it.
MAX_RUNS = 100_000


def planned_runs(study: Any) -> int:
    """Runs a study asks for (``[[runs]]`` x sweep axes x seeds, before duplicates merge and
    baselines are added), counted from the model without building any of them."""
    kind = getattr(study, "kind", kinds.PLACEMENT)
    if kind != kinds.PLACEMENT:
        return kinds.get(kind).planned_runs(study)
    n = max(1, len(study.runs))
    sweep = study.sweep
    for axis in (sweep.machine, sweep.workload, sweep.placement, sweep.balancing, sweep.kernel, sweep.thp):
        n *= len(axis) if axis else 1
    for values in sweep.params.values():
        n *= len(values)
    n *= 1 + len(getattr(study, "compare_npb", []) or [])
    seeds = len(set(study.seeds)) if study.seeds is not None else (study.repetitions or 1)
    return n * seeds


def check_size(study: Any, limit: int = MAX_RUNS) -> int:
    """``planned_runs``, or a UsageError when it is above ``limit``."""
    n = planned_runs(study)
    if n > limit:
        seeds = len(set(study.seeds)) if study.seeds is not None else (study.repetitions or 1)
        raise UsageError(
            f"study '{study.name}' asks for {n:,} runs ({n // seeds:,} configurations x {seeds:,} seed{'s' if seeds != 1 else ''}); at most {limit:,} "
            "are accepted, because every run is expanded, checked and held in memory before the first one starts: "
            "use fewer seeds or sweep values, or split it into several studies"
        )
    return n


@dataclass
class SweepSummary:
    total: int = 0
    skipped: int = 0
    ok: int = 0
    out_of_memory: int = 0
    failed: int = 0
    interrupted: bool = False
    elapsed_s: float = 0.0
    run_wall_s: float = 0.0  # sum of the runs' own wall times (what is not overhead)
    run_cpu_s: float = 0.0  # sum of the runs' own CPU times (bench/study_overhead.py)

    @property
    def done(self) -> int:
        return self.ok + self.out_of_memory + self.failed

    def describe(self) -> str:
        parts = [f"{self.done} of {self.total - self.skipped} runs done: {self.ok} ok"]
        if self.out_of_memory:
            parts.append(f"{self.out_of_memory} out of memory")
        parts.append(f"{self.failed} failed")
        if self.skipped:
            parts.append(f"{self.skipped} already in the store")
        return ", ".join(parts) + f" ({self.elapsed_s:.1f} s)"


# Redraws of a sweep's bar per second: rich spends about 2.5 ms of CPU on each, taken from the
# simulations when the workers fill the CPUs (10 a second, rich's default: 25 ms of CPU a second,
# 1.2 % of two CPUs; 2 a second: 6.5 ms, with the bar's own updates; 1 a second: 20-30 ms less of
# the client's CPU for 200 runs of 20 ms than 2, bench/study_overhead.py --bar).
BAR_REDRAWS_PER_S = 1.0


def study_progress(stream: Any = None) -> Progress:
    """The progress display of a sweep: a bar on a terminal, a line every few seconds elsewhere."""
    return Progress("runs", unit="done", eta=True, transient=False, stream=stream, redraws_per_s=BAR_REDRAWS_PER_S)


def run_study(resolved: ResolvedStudy, store: Store, backend_factory: Callable[[], Any], progress: Progress | None = None,
              registered: bool = False) -> SweepSummary:
    """Run what the store does not hold yet; return counts (``interrupted`` after Ctrl-C).
    ``registered``: the caller has already called ``store.register_study``."""
    start = time.monotonic()
    progress = progress or study_progress()
    if not registered:
        store.register_study(resolved)
    complete = store.complete_hashes(r.hash for r in resolved.runs)
    todo = [r for r in resolved.runs if r.hash not in complete]
    summary = SweepSummary(total=len(resolved.runs), skipped=len(resolved.runs) - len(todo))
    if todo:
        # Co-runs' alone runs are cached in this store by the workers (runner/corun.py), which
        # inherit the variable when the backend starts them.
        before = os.environ.get(STORE_ENV)
        os.environ[STORE_ENV] = str(store.path)
        try:
            kind = resolved.study.kind
            run = None if kind == kinds.PLACEMENT else kinds.get(kind).run
            _Sweep(resolved.name, store, backend_factory(), progress, summary, run).run(todo)
        finally:
            if before is None:
                os.environ.pop(STORE_ENV, None)
            else:
                os.environ[STORE_ENV] = before
    summary.elapsed_s = time.monotonic() - start
    return summary


class _Sweep:
    def __init__(self, study: str, store: Store, backend: Any, progress: Progress, summary: SweepSummary,
                 run: Callable[[dict[str, Any]], Any] | None):
        self.study, self.store, self.backend, self.progress, self.summary = study, store, backend, progress, summary
        self.run_config = run  # the study kind's runner (None: a placement run, worker.simulate)
        self.waiting: deque[tuple[ResolvedRun, int]] = deque()
        self.in_flight: dict[Any, list[tuple[ResolvedRun, int]]] = {}
        # Backends call this from their own threads; the queue hands finished batches to this
        # one, so each completion costs O(1) however many runs are pending.
        self.finished: queue.SimpleQueue = queue.SimpleQueue()
        self.timed = [0, 0.0]  # runs that simulated to the end, and their wall seconds
        self.unsaved: list[tuple[ResolvedRun, dict[str, Any]]] = []  # returned, not yet committed
        self.unsaved_since = 0.0

    def run(self, todo: list[ResolvedRun]) -> None:
        self.waiting.extend((r, 0) for r in todo)
        with _sigterm_as_interrupt():
            try:
                self._top_up()
                self.progress.start(len(todo))
                last_refresh = time.monotonic()
                wait = getattr(self.backend, "wait", None)
                while self.in_flight:
                    timeout = self._poll_s()
                    if wait is not None:
                        wait(timeout)  # completes the handles that returned (their callbacks queue them)
                        timeout = 0.0
                    for handle in _drain(self.finished, timeout):
                        self._collect(handle)
                    if self.unsaved and (len(self.unsaved) >= SAVE_RUNS or time.monotonic() - self.unsaved_since >= SAVE_S):
                        self._save()
                    self._top_up()
                    if time.monotonic() - last_refresh > 2.0:
                        self.backend.refresh()
                        last_refresh = time.monotonic()
                    s = self.summary
                    self.progress.update(s.done, f"{min(len(self.in_flight), self.backend.slots)} running, {s.failed} failed")
                stop = getattr(self.backend, "stop", None)
                if stop is not None:
                    stop()  # local workers exit meanwhile, instead of after the store's last writes
                self._save()
                # What closing the store would do (copy the WAL into the database, sync it), done
                # while the workers exit: 4-8 ms of a 200-run study's wall time.
                self.store.checkpoint()
            except KeyboardInterrupt:
                self.summary.interrupted = True
                self._save()  # runs collected when the signal came
            finally:
                self.progress.stop()
                self.backend.close(cancel=self.summary.interrupted or bool(self.in_flight), pending=list(self.in_flight))

    def _collect(self, handle: Any) -> None:
        batch = self.in_flight.pop(handle)
        for (run, attempts), outcome in zip(batch, self.backend.outcomes(handle, len(batch))):
            if outcome.get("lost") and attempts < RETRIES:
                self.waiting.appendleft((run, attempts + 1))
                continue
            if not self.unsaved:
                self.unsaved_since = time.monotonic()
            self.unsaved.append((run, outcome))
            _count(self.summary, outcome)
            if outcome["status"] != "failed":
                self.timed[0] += 1
                self.timed[1] += outcome.get("wall_s") or 0.0

    def _poll_s(self) -> float:
        """How long to wait for a batch: no later than the pending runs' commit is due."""
        if not self.unsaved:
            return POLL_S
        return min(POLL_S, max(0.0, self.unsaved_since + SAVE_S - time.monotonic()))

    def _save(self) -> None:
        """Commit the runs collected so far in one transaction, which a signal does not cut short."""
        if self.unsaved:
            with _signals_deferred():
                self.store.write_many(self.study, self.unsaved)
                self.unsaved = []

    def _top_up(self) -> None:
        """Keep two batches per execution slot in flight: one running, one ready to start."""
        while self.waiting and len(self.in_flight) < 2 * self.backend.slots:
            size = self._batch_size()
            batch = [self.waiting.popleft() for _ in range(min(size, len(self.waiting)))]
            handle = self.backend.submit([run.config for run, _ in batch], self.run_config)
            self.in_flight[handle] = batch
            handle.add_done_callback(self.finished.put)

    def _batch_size(self) -> int:
        """One run until some have returned; then about BATCH_S seconds of runs, but never so
        many that the last runs queue behind one worker while the others idle."""
        runs, seconds = self.timed
        if runs == 0 or seconds <= 0:
            return 1
        by_time = BATCH_S / (seconds / runs)
        by_share = len(self.waiting) / (2 * self.backend.slots)
        return max(1, min(MAX_BATCH, math.floor(by_time), math.ceil(by_share)))


def _drain(finished: queue.SimpleQueue, timeout: float) -> list[Any]:
    """The handles finished so far, waiting up to ``timeout`` for the first one."""
    try:
        out = [finished.get(timeout=timeout)]
    except queue.Empty:
        return []
    while True:
        try:
            out.append(finished.get_nowait())
        except queue.Empty:
            return out


def _count(summary: SweepSummary, outcome: dict[str, Any]) -> None:
    status = outcome["status"]
    if status == "ok":
        summary.ok += 1
    elif status == "out-of-memory":
        summary.out_of_memory += 1
    else:
        summary.failed += 1
    summary.run_wall_s += outcome.get("wall_s") or 0.0
    summary.run_cpu_s += outcome.get("cpu_s") or 0.0


class _sigterm_as_interrupt:
    """SIGTERM (Slurm's walltime, ``kill``) stops the sweep like Ctrl-C: finished runs are kept."""

    def __enter__(self) -> None:
        self.previous = None
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGTERM, self._raise)

    @staticmethod
    def _raise(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    def __exit__(self, *exc: Any) -> None:
        if self.previous is not None:
            signal.signal(signal.SIGTERM, self.previous)


class _signals_deferred:
    """SIGINT and SIGTERM wait until the block is done, then reach their own handlers: a commit
    cut short would roll back runs that had finished."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __enter__(self) -> None:
        self.caught: list[int] = []
        self.previous: dict[int, Any] = {}
        if threading.current_thread() is threading.main_thread():
            for s in self.SIGNALS:
                self.previous[s] = signal.signal(s, self._note)

    def _note(self, signum: int, frame: Any) -> None:
        self.caught.append(signum)

    def __exit__(self, *exc: Any) -> None:
        for s, handler in self.previous.items():
            # None: a handler installed outside Python, which cannot be put back; the default is.
            signal.signal(s, signal.SIG_DFL if handler is None else handler)
        for s in dict.fromkeys(self.caught):
            signal.raise_signal(s)
