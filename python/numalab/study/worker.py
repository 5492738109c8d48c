"""Execute one resolved configuration where a worker runs it (a local process or a Dask worker).

``run_config`` never raises: a run that fails comes back as a ``failed`` outcome with its error,
so one bad configuration does not stop a sweep. The outcome carries the result document as JSON
text and the derived columns, computed here so the one process that writes the store only
writes.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from functools import lru_cache
from typing import Any

from numalab.exceptions import UsageError


@lru_cache(maxsize=16)
def _machine(name: str) -> Any:
    from numalab import machine

    return machine.load(name)


def settings_for(items: dict[str, str], config: dict[str, Any]) -> Any:
    """Engine settings from the configuration plus the config items ``parse_config`` returned
    (``balancing``, ``scan-period-min-ms=100``, ...), applied by the runner exactly as for
    ``numalab compare``. A simulator without balancing refuses those items with a clear error,
    which the sweep records as a failed run."""
    from numalab.runner import sim

    base = sim.Settings(seed=config["seed"], sample_rate=config["sample_rate"], kernel=config["kernel"], thp=config["thp"])
    apply_items = getattr(sim, "apply_items", None)
    if apply_items is not None:
        return apply_items(base, items, f"run {config['placement']}")
    if items:
        raise UsageError(f"'{next(iter(items))}' is not available in the simulator yet")
    return base


def simulate(config: dict[str, Any]) -> Any:
    """One configuration through ``placement.parse_config`` and ``runner.sim.run``."""
    from numalab.placement import parse_config
    from numalab.runner import sim
    from numalab.study.canonical import engine_config_string

    opts, extra_params, items = parse_config(engine_config_string(config))
    params = {**config["params"], **extra_params}
    return sim.run(_machine(config["machine"]), config["workload"], params, opts, settings_for(items, config))


def run_config(config: dict[str, Any]) -> dict[str, Any]:
    """Run one configuration: ``{"status", "error", "wall_s", "result", "columns"}``."""
    from numalab.results.derived import columns

    start = time.perf_counter()
    try:
        doc = simulate(config).doc
    except Exception as e:  # a failed run is data, not a crash of the sweep
        message = str(e.args[0]) if getattr(e, "args", None) else repr(e)
        return {"status": "failed", "error": f"{type(e).__name__}: {message}", "wall_s": time.perf_counter() - start, "result": None, "columns": {}}
    return {
        "status": doc.get("status", "ok"),
        "error": doc.get("error"),
        "wall_s": time.perf_counter() - start,
        "result": json.dumps(doc, sort_keys=True, separators=(",", ":")),
        "columns": columns(doc),
    }


def run_batch(configs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Several configurations in one task (short runs travel in batches, see ``sweep``)."""
    return [run_config(c) for c in configs]


def init_local_worker() -> None:
    """Initializer of local worker processes.

    Ctrl-C reaches the whole process group; only the client handles it (it stops the workers
    itself). A worker whose client died (``kill -9``) exits instead of running orphaned.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="numalab-parent-watch").start()
