"""A study backend that runs each configuration at once in the test's own process."""

from __future__ import annotations

from concurrent.futures import Future

from numalab.study import worker


class InlineBackend:
    slots = 1

    def submit(self, configs, run=None):
        f: Future = Future()
        f.set_result([worker.run_config(c, run) for c in configs])
        return f

    def outcomes(self, handle, n):
        return handle.result()

    def refresh(self) -> None:
        pass

    def close(self, cancel, pending=()) -> None:
        pass
