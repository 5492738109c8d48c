"""Execute one resolved configuration where a worker runs it (a local process or a Dask worker).

``run_config`` never raises: a run that fails comes back as a ``failed`` outcome with its error,
so one bad configuration does not stop a sweep. The outcome carries the result document as JSON
text and the derived columns, computed here so the one process that writes the store only
writes. Encoding here is also the cheapest: handing the document itself to the client (pickled
here, unpickled there) and encoding it there costs 2-3 times the CPU of the encoding alone
(bench/study_overhead.py).
"""

from __future__ import annotations

import gc
import os
import signal
import threading
import time
from collections import deque
from typing import Any, Callable

# Imported here, by the client that forks the workers, not in each worker at its first document
# (orjson's import: 0.5-0.6 ms of CPU a worker).
from numalab.results.text import document_text

Runner = Callable[[dict[str, Any]], Any]


def simulate(config: dict[str, Any], spec: Any = None) -> Any:
    """One canonical placement configuration, read back into a RunSpec (``spec``: already read)
    and run; with ``mapping_metrics`` (a study's key), its document gets the data mapping analysis
    (docs/mapping.md) without each mapping's time, which would cost six more runs."""
    from numalab.runner import sim
    from numalab.spec import RunSpec

    if spec is None:
        spec = RunSpec.from_canonical(config)
    if not config.get("mapping_metrics"):
        return sim.run(spec)
    from numalab.runner.mapping import mapping_doc

    bound = spec.bind()
    result = sim.run(bound)
    if result.status == "ok":
        result.doc["mapping"] = mapping_doc(bound, result.doc, times=False)
    return result


def run_config(config: dict[str, Any], run: Runner | None = None) -> dict[str, Any]:
    """Run one configuration: ``{"status", "error", "wall_s", "cpu_s", "result", "columns"}``. ``run``:
    the study kind's runner (``study.kinds``); none for a placement run."""
    return _stored(_simulated(config, run))


def _simulated(config: dict[str, Any], run: Runner | None) -> tuple[Any, float, float | None, dict[str, Any] | None]:
    """A run's document, wall and CPU seconds; or, when it raised, its failed outcome (made at
    once: the exception's frames would keep the run's memory until the batch ends)."""
    start, cpu = time.perf_counter(), time.process_time()
    try:
        doc = (run or simulate)(config).doc
    except Exception as e:  # a failed run is data, not a crash of the sweep
        cpu_s = time.process_time() - cpu
        wall_s = time.perf_counter() - start
        return None, wall_s, cpu_s, _failed(e, wall_s, cpu_s)
    # cpu_s: the run's own CPU time (the engine runs on this thread), which the study overhead
    # benchmark subtracts from the CPU time of client and workers (bench/study_overhead.py). Read
    # before the wall clock: process_time is a system call, where a worker that other processes
    # wait for is switched out (100-300 ms of 200 runs' wall time at load 8), and that wait belongs
    # to the run it ends, not to the sweep.
    cpu_s = time.process_time() - cpu
    return doc, time.perf_counter() - start, cpu_s, None


def _stored(simulated: tuple[Any, float, float | None, dict[str, Any] | None]) -> dict[str, Any]:
    """The outcome as the store keeps it: the document as its JSON text, the derived columns."""
    doc, wall_s, cpu_s, failed = simulated
    if failed is not None:
        return failed
    from numalab.results.derived import columns

    try:
        return {"status": doc.get("status", "ok"), "error": doc.get("error"), "wall_s": wall_s, "cpu_s": cpu_s,
                "result": document_text(doc), "columns": columns(doc)}
    except Exception as e:  # a document that is not JSON: this run failed, not its batch
        return _failed(e, wall_s, cpu_s)


def _failed(e: Exception, wall_s: float, cpu_s: float | None) -> dict[str, Any]:
    message = str(e.args[0]) if getattr(e, "args", None) else repr(e)
    return {"status": "failed", "error": f"{type(e).__name__}: {message}", "wall_s": wall_s, "cpu_s": cpu_s, "result": None, "columns": {}}


def run_batch(configs: list[dict[str, Any]], run: Runner | None = None) -> list[dict[str, Any]]:
    """Several configurations in one task (short runs travel in batches, see ``sweep``)."""
    runner = run or _SeedsOfOneSpec().simulate
    # Every run first, then every document encoded: right after a simulation the encoder runs
    # cache-cold (Python's json encoder: 230 instead of 155 us a document of 11 KB, bench/
    # study_overhead.py's dgemv; orjson, results/text.py, now takes about 30), back to back it stays warm. The outcomes travel together at the batch's end either way.
    # Meanwhile the cyclic collector waits: documents are trees, which reference counting frees,
    # but a batch's documents kept alive (about 1,000 containers each) would start about 100
    # young and one full collection per 200 runs, 20-30 ms, more than the encoding saves.
    with _collector_paused():
        simulated = deque(_simulated(c, runner) for c in configs)
        # Popped: each document is freed right after its encoding, while it is still in the
        # cache (15-20 us a document less than freeing them all at the end).
        return [_stored(simulated.popleft()) for _ in range(len(simulated))]


class _collector_paused:
    """``gc.disable()`` for a block, enabled again after it unless it was off before it. Two
    batches on two threads of one Dask worker: the first to end turns it back on."""

    def __enter__(self) -> None:
        self.was_enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc: Any) -> None:
        if self.was_enabled:
            gc.enable()


class _SeedsOfOneSpec:
    """Placement runs of a batch that differ only in their seed (a study's repetitions) read
    their configuration into a RunSpec once and change its seed: ``from_canonical`` replaces
    about 17 fields one by one (0.1-0.3 ms a run of 20 ms). Keyed, as ``store._SharedColumns``,
    by the values' identities, which repetitions share (study/expand.py; pickling a batch keeps
    the sharing) and which hold while the batch's configurations are alive."""

    def __init__(self) -> None:
        self.specs: dict[tuple[Any, ...], Any] = {}

    def simulate(self, config: dict[str, Any]) -> Any:
        from numalab.spec import RunSpec

        # The type too: 1, 1.0 and True are equal keys but not the same value.
        key = tuple((k, type(v), v if v is None or isinstance(v, (str, int, float)) else id(v)) for k, v in config.items() if k != "seed")
        spec = self.specs.get(key)
        if spec is None:
            spec = self.specs[key] = RunSpec.from_canonical(config)
        else:
            spec = spec.updated(seed=config["seed"])
        return simulate(config, spec)


def init_local_worker() -> None:
    """Initializer of local worker processes.

    Ctrl-C reaches the whole process group; only the client handles it (it stops the workers
    itself). SIGTERM gets its default action back: a worker forked while the sweep turns SIGTERM
    into KeyboardInterrupt inherits that handler, and code that catches the exception would then
    survive the pool's ``terminate()`` (``concurrent.futures.process._sendback_result`` did, waiting
    again for a lock a killed worker held, while the executor waited for it to exit). A worker whose
    client died (``kill -9``) exits instead of running orphaned.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="numalab-parent-watch").start()
