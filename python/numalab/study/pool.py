"""Local worker processes without threads in the client: what ``LocalBackend`` runs batches on.

``concurrent.futures.ProcessPoolExecutor`` hands each task through two client threads (a manager
that moves tasks and results, a feeder that pickles them) and wakes its manager twice per task:
about 0.5 ms of the client's CPU a batch, two thirds of the client's share of a sweep's hand-offs
(bench/study_overhead.py). Here each worker has two pipes of its own, tasks in and results out;
the client writes a task with one system call and reads the results in the thread that waits for
them (``wait``), so a batch costs one wake-up. No locks are shared with the workers, so a worker
killed anywhere leaves the others running: only its own tasks are lost (``WorkerLost``), and a
fresh worker takes its place.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import select
import struct
import threading
from collections import deque
from concurrent.futures import Future
from multiprocessing.connection import Connection, wait as wait_ready
from typing import Any, Callable, Sequence, cast

# Linux's fcntl F_SETPIPE_SZ (fs/pipe.c: pipe_fcntl); Python 3.11's fcntl module lacks the name.
F_SETPIPE_SZ = 1031
PIPE_BYTES = 1 << 20


class WorkerLost(Exception):
    """The worker running a task exited before returning it (killed, out of memory)."""


def roomy(conn: Connection) -> None:
    """A pipe that holds a whole batch's outcomes (up to 64 documents of about 11 KB; the default is
    64 KB): a worker then writes them at once and starts its next batch, instead of waiting, on a
    busy machine a scheduler slice each time, for the client to read every 64 KB. Where it cannot
    be enlarged (another OS, a lower pipe-max-size) the pipe stays as it is."""
    try:
        import fcntl

        fcntl.fcntl(conn.fileno(), F_SETPIPE_SZ, PIPE_BYTES)
    except (ImportError, OSError):
        pass


def _serve(tasks: Connection, results: Connection, initializer: Callable[[], None] | None, inherited: tuple[int, ...] = ()) -> None:
    """A worker: run each task as it comes, send its result back; an empty task (or the client
    gone) ends it. ``inherited``: the client's ends of the pipes, which a forked worker holds too
    and closes, so that its pipes end when the client does."""
    for fd in inherited:
        try:
            os.close(fd)
        except OSError:
            pass
    if initializer is not None:
        initializer()
    while True:
        try:
            message = tasks.recv_bytes()
        except (EOFError, OSError):
            return
        if not message:
            return
        try:
            fn, args = pickle.loads(message)
            reply = pickle.dumps((True, fn(*args)), pickle.HIGHEST_PROTOCOL)
        except Exception as e:  # a task that raised, or a result that does not pickle
            reply = pickle.dumps((False, f"{type(e).__name__}: {e}"), pickle.HIGHEST_PROTOCOL)
        try:
            results.send_bytes(reply)
        except OSError:
            return  # the client is gone (its end of the pipe closed): nobody to run for


class _Worker:
    def __init__(self, ctx: Any, initializer: Callable[[], None] | None, others: Sequence["_Worker"] = ()):
        task_reader, self.tasks = ctx.Pipe(duplex=False)
        self.results, result_writer = ctx.Pipe(duplex=False)
        roomy(self.tasks)
        roomy(self.results)
        # A forked worker has every descriptor of the client: the client's ends of its own pipes and
        # of the other workers'. A worker started by a forkserver has only those it is given.
        inherited = tuple(fd for w in [self, *others] for fd in w.client_fds()) if ctx.get_start_method() == "fork" else ()
        self.process = ctx.Process(target=_serve, args=(task_reader, result_writer, initializer, inherited), name="numalab-worker")
        self.process.start()
        # The worker's ends live in the worker only: its results pipe then ends when it does.
        task_reader.close()
        result_writer.close()
        self.pending: deque[Future] = deque()  # its tasks, in the order it runs them
        self.stopping = False  # told to exit after its tasks

    def client_fds(self) -> tuple[int, ...]:
        return tuple(c.fileno() for c in (self.tasks, self.results) if not c.closed)

    def stop(self) -> None:
        if not self.stopping:
            self.stopping = True
            try:
                self.tasks.send_bytes(b"")
            except OSError:
                pass  # already gone


class WorkerPool:
    """``workers`` processes, started at once; ``context`` chooses how for each one (a worker that
    replaces a lost one may start when the client has threads)."""

    def __init__(self, workers: int, context: Callable[[], multiprocessing.context.BaseContext],
                 initializer: Callable[[], None] | None = None):
        self.context, self.initializer = context, initializer
        self.workers: list[_Worker] = []
        try:
            for _ in range(workers):
                self.workers.append(_Worker(context(), initializer, self.workers))
        except BaseException:
            self.close(cancel=True)
            raise

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future:
        """Queue ``fn(*args)`` on the worker with the fewest tasks (the earliest, of equals)."""
        future: Future = Future()
        try:
            message = pickle.dumps((fn, args), pickle.HIGHEST_PROTOCOL)
        except Exception as e:
            future.set_exception(e)
            return future
        running = [w for w in self.workers if not w.stopping]
        if not running:  # a task after ``stop`` (a lost run tried again): a worker for it
            running = [_Worker(self.context(), self.initializer, self.workers)]
            self.workers += running
        worker = min(running, key=lambda w: len(w.pending))
        worker.pending.append(future)
        try:
            worker.tasks.send_bytes(message)
        except OSError:
            self._lost(worker)  # it exited: its tasks, this one included, are lost
        return future

    def wait(self, timeout: float | None) -> None:
        """Wait up to ``timeout`` for results, and complete the futures of those that came."""
        busy = [w for w in self.workers if w.pending]
        if not busy:
            return
        by_fd: dict[int, tuple[_Worker, bool]] = {}
        for w in busy:
            by_fd[w.results.fileno()] = (w, True)
            by_fd[w.process.sentinel] = (w, False)
        exited = []
        for fd in _readable(list(by_fd), timeout):
            worker, results = by_fd[fd]
            if results:
                self._receive(worker)
            else:
                exited.append(worker)
        for worker in exited:
            # What it sent before exiting is still in its pipe.
            while worker.pending and worker.results.poll(0) and self._receive(worker):
                pass
            if worker.pending or not worker.stopping:
                self._lost(worker)
            # else: it ended as asked (``stop``), after its last task

    def _receive(self, worker: _Worker) -> bool:
        try:
            reply = _message(worker.results.fileno())
        except (EOFError, OSError):
            return False
        ok, value = pickle.loads(reply)
        future = worker.pending.popleft()
        if ok:
            future.set_result(value)
        else:
            future.set_exception(RuntimeError(value))
        return True

    def _lost(self, worker: _Worker) -> None:
        """Fail a dead worker's tasks and start another in its place."""
        if worker not in self.workers:
            return
        self.workers.remove(worker)
        code = worker.process.exitcode
        if code is None:
            worker.process.terminate()
            worker.process.join()
            code = worker.process.exitcode
        _close(worker)
        pending, worker.pending = worker.pending, deque()
        for future in pending:
            future.set_exception(WorkerLost(f"a worker process exited with code {code}"))
        if not worker.stopping:  # after ``stop``, ``submit`` starts one if a task comes
            self.workers.append(_Worker(self.context(), self.initializer, self.workers))

    def stop(self) -> None:
        """No more tasks: each worker exits after those it has, while the client does its last
        work (a sweep's last commit and checkpoint); ``close`` then finds them gone or going."""
        for worker in self.workers:
            worker.stop()

    def close(self, cancel: bool) -> None:
        """Stop the workers: at once (``cancel``: their tasks are dropped) or after their tasks."""
        while not cancel and any(w.pending for w in self.workers):
            self.wait(None)
        for worker in self.workers:
            if cancel:
                worker.process.terminate()
            else:
                worker.stop()
        for worker in self.workers:
            worker.process.join()
            _close(worker)
            for future in worker.pending:
                future.cancel()
        self.workers = []


def _readable(fds: list[int], timeout: float | None) -> list[int]:
    """The descriptors with data (or closed) within ``timeout`` seconds. ``select.poll`` where
    there is one: ``multiprocessing.connection.wait`` builds a selector each call, about 0.1 ms
    of the client's CPU per wait (bench/study_overhead.py)."""
    if not hasattr(select, "poll"):
        return cast("list[int]", wait_ready(fds, timeout))
    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLIN)
    return [fd for fd, _events in poller.poll(None if timeout is None else timeout * 1000)]


def _message(fd: int) -> bytes:
    """One message as ``Connection.send_bytes`` frames it (a 4-byte size, or -1 and 8 bytes),
    read straight from the pipe: ``Connection.recv_bytes`` copies it twice more, through a BytesIO."""
    (size,) = struct.unpack("!i", _exactly(fd, 4))
    if size == -1:
        (size,) = struct.unpack("!Q", _exactly(fd, 8))
    return _exactly(fd, size)


def _exactly(fd: int, n: int) -> bytes:
    data = os.read(fd, n)
    if len(data) == n:
        return data
    buf = bytearray(data)
    while len(buf) < n:
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            raise EOFError
        buf += chunk
    return bytes(buf)


def _close(worker: _Worker) -> None:
    for conn in (worker.tasks, worker.results):
        try:
            conn.close()
        except OSError:
            pass
    worker.process.close()


def context() -> multiprocessing.context.BaseContext:
    """Fork when the client has no other thread (milliseconds, nothing imported again); otherwise
    a forkserver, since forking a threaded process can copy a lock some other thread holds."""
    if threading.active_count() == 1 and "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["numalab.study.worker", "numalab.runner.sim"])
    return ctx
