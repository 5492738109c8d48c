"""Where runs execute: local worker processes, an existing Dask cluster, or Dask workers that
dask-jobqueue submits to a Slurm queue. Every backend returns each run's outcome to the one
client process, which alone writes the store (docs/studies.md §3).

A backend submits a batch of configurations with their study kind's runner (``worker.run_batch``;
the runner travels by reference, so a worker imports the kind's module itself) and returns a future-like
handle (with ``add_done_callback``, through which the sweep learns of finished batches), says
what a done handle produced (``outcomes``, one per configuration, never raising), how many
batches can execute at once (``slots``, refreshed by ``refresh``), and how to stop (``close``).
A backend whose outcomes arrive in the sweep's own thread has ``wait(timeout)``, which the sweep
calls to receive them (the local one: no thread of its own to wake), and may have ``stop()``: no
more batches, so its workers can exit while the sweep commits its last runs.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Iterable, Optional

from numalab.exceptions import UsageError
from numalab.study.pool import WorkerLost, WorkerPool, context as pool_context
from numalab.study.worker import Runner, init_local_worker, run_batch


def _failed(error: str, lost: bool = False) -> dict[str, Any]:
    return {"status": "failed", "error": error, "wall_s": None, "result": None, "columns": {}, "lost": lost}


class LocalBackend:
    """Worker processes on this machine (``pool.WorkerPool``), started at once.

    Workers are forked when the client has no other thread (the usual case: the pool starts
    before the progress display), which costs milliseconds and no re-import; otherwise they come
    from a forkserver that has imported numalab once, because forking a threaded process can
    copy a lock some other thread holds. The sweep calls ``wait``, which reads the outcomes in
    its own thread (no thread of the backend's).
    """

    def __init__(self, workers: int):
        if workers < 1:
            raise UsageError(f"--jobs must be >= 1, got {workers}")
        self.slots = workers
        self.pool = WorkerPool(workers, pool_context, initializer=init_local_worker)

    def submit(self, configs: list[dict[str, Any]], run: Runner | None = None) -> Future:
        return self.pool.submit(run_batch, configs, run)

    def wait(self, timeout: float) -> None:
        self.pool.wait(timeout)

    def stop(self) -> None:
        self.pool.stop()

    def refresh(self) -> None:
        pass

    def outcomes(self, handle: Future, n: int) -> list[dict[str, Any]]:
        try:
            return handle.result()
        except WorkerLost as e:
            return [_failed(f"worker process died ({e})", lost=True)] * n
        except Exception as e:  # pickling errors and the like: record, do not stop the sweep
            return [_failed(f"{type(e).__name__}: {e}")] * n

    def close(self, cancel: bool, pending: Iterable[Future] = ()) -> None:
        # Cancelled: runs in progress would otherwise finish first; Ctrl-C must stop now.
        self.pool.close(cancel=cancel)


class DaskBackend:
    """Runs as Dask futures on a cluster (``Client(address)``, or a cluster object)."""

    def __init__(self, cluster_or_address: Any, owned_cluster: Any = None):
        try:
            from distributed import Client
        except ImportError:
            raise UsageError("--scheduler needs dask.distributed: pip install 'dask[distributed]'") from None
        try:
            self.client = Client(cluster_or_address, timeout=f"{connect_timeout_s()}s")
        except (OSError, TimeoutError) as e:
            if owned_cluster is not None:
                owned_cluster.close()
            raise UsageError(f"cannot reach the Dask scheduler at {cluster_or_address}: {e}") from None
        self.cluster = owned_cluster
        self.slots = max(1, sum(self.client.nthreads().values()))

    def submit(self, configs: list[dict[str, Any]], run: Runner | None = None) -> Any:
        # pure=False: every submission is its own task, even for equal configurations.
        return self.client.submit(run_batch, configs, run, pure=False)

    def refresh(self) -> None:
        # Slurm jobs join (or leave) while the sweep runs: count the threads again.
        self.slots = max(1, sum(self.client.nthreads().values()))

    def outcomes(self, handle: Any, n: int) -> list[dict[str, Any]]:
        try:
            return handle.result()
        except Exception as e:  # KilledWorker (the task's workers kept dying), CancelledError, ...
            return [_failed(f"{type(e).__name__}: {e}")] * n

    def close(self, cancel: bool, pending: Iterable[Any] = ()) -> None:
        if cancel:
            self.client.cancel(list(pending))
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()


@dataclass(frozen=True)
class SlurmOptions:
    queue: Optional[str] = None
    cores: int = 1
    memory: str = "2GB"
    walltime: str = "01:00:00"
    jobs: int = 1
    account: Optional[str] = None
    log_directory: Optional[str] = None


def slurm_backend(opts: SlurmOptions) -> DaskBackend:
    """Dask workers submitted as Slurm jobs (``dask_jobqueue.SLURMCluster``), one process per core.

    The job script is first given to ``sbatch --test-only``, which checks partition, account,
    memory and walltime against the cluster without queueing anything: a job Slurm would refuse
    is a one-line error now, not a study that waits for workers that never come.
    """
    try:
        from dask_jobqueue import SLURMCluster
    except ImportError:
        raise UsageError("--slurm needs dask-jobqueue, which is not installed: pip install dask-jobqueue") from None
    if shutil.which("sbatch") is None:
        raise UsageError("--slurm: sbatch is not on PATH: run on a Slurm login node (or start one: .ci/slurm/up.sh)")
    cluster = SLURMCluster(queue=opts.queue, account=opts.account, cores=opts.cores, processes=opts.cores, memory=opts.memory,
                           walltime=opts.walltime, log_directory=opts.log_directory)
    try:
        check_slurm_job(cluster.job_script())
    except UsageError:
        cluster.close()
        raise
    cluster.scale(jobs=opts.jobs)
    return DaskBackend(cluster, owned_cluster=cluster)


def check_slurm_job(script: str) -> None:
    """``sbatch --test-only`` on the job script; Slurm's own reason when it would refuse it."""
    try:
        proc = subprocess.run(["sbatch", "--test-only"], input=script, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise UsageError(f"--slurm: sbatch --test-only did not answer: {e}") from None
    if proc.returncode != 0:
        lines = [ln.strip() for ln in (proc.stderr or proc.stdout).splitlines() if ln.strip()]
        reason = "; ".join(ln.removeprefix("sbatch: error: ") for ln in lines) or f"exit status {proc.returncode}"
        raise UsageError(f"--slurm: Slurm refuses the worker job: {reason}")


def connect_timeout_s() -> float:
    """How long to wait for a Dask scheduler (``NUMALAB_DASK_CONNECT_TIMEOUT_S``, default 20 s:
    a Slurm cluster's scheduler may take a while to come up)."""
    raw = os.environ.get("NUMALAB_DASK_CONNECT_TIMEOUT_S", "20")
    try:
        return max(0.1, float(raw))
    except ValueError:
        raise UsageError(f"NUMALAB_DASK_CONNECT_TIMEOUT_S: '{raw}' is not a number of seconds") from None


def _cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def local_workers(requested: Optional[int], todo: Optional[int] = None) -> tuple[int, str | None]:
    """Worker processes for ``todo`` runs: one per CPU by default, never more than the CPUs
    (simulations are CPU-bound: more processes only share them) nor than the runs. Returns the
    number and, when it is less than asked, a note saying why."""
    if requested is not None and requested < 1:
        raise UsageError(f"--jobs must be >= 1, got {requested}")
    cpus = _cpus()
    limits = [cpus] + ([max(1, todo)] if todo is not None else [])
    n = min([requested or cpus, *limits])
    if requested is None or n >= requested:
        return n, None
    if n == cpus and (todo is None or cpus <= todo):
        why = f"this machine has {cpus} CPU{'s' if cpus != 1 else ''}"
    else:
        why = f"there {'is' if todo == 1 else 'are'} {todo} run{'s' if todo != 1 else ''} to do"
    return n, f"--jobs {requested}: {why}, so {n} worker{'s' if n != 1 else ''} will run"


_ADDRESS = re.compile(r"^(?:(tcp|tls|ucx|ws|wss|inproc)://)?(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+)(?::(\d+))?/?$")


def check_scheduler_address(address: str) -> str:
    """A Dask scheduler address (``tcp://HOST:PORT``, ``tls://...``, ``HOST:PORT``), checked
    before anything is expanded or run."""
    m = _ADDRESS.match(address.strip())
    scheme, port = (m.group(1), m.group(3)) if m else (None, None)
    if m is None or (scheme != "inproc" and port is None) or (port is not None and not 0 < int(port) < 65536):
        raise UsageError(f"--scheduler '{address}': not a Dask scheduler address (expected tcp://HOST:PORT, "
                         "e.g. tcp://10.0.0.5:8786, as `dask scheduler` prints it)")
    return address.strip()
