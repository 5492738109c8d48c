"""A study backend that runs each configuration at once in the test's own process."""

from __future__ import annotations

from concurrent.futures import Future
from pathlib import Path
from typing import Any

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


def run_stored(text: str, path: Path, results: Path, backend: Any = None) -> Any:
    """Write the study ``text`` to ``path`` and run it into the store at ``results`` (in this
    process unless a ``backend`` factory is given); returns the sweep's summary."""
    from numalab.results.store import Store
    from numalab.study import expand, parse_study
    from numalab.study.sweep import run_study

    path.write_text(text)
    with Store(results) as store:
        return run_study(expand(parse_study(text, str(path))), store, backend or InlineBackend)
