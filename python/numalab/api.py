"""The Python API: ``numalab.simulate(machine, workload, placement, seed=...) -> Result``."""

from __future__ import annotations

from typing import Any

from numalab import machine as machines
from numalab._core import Machine
from numalab.placement import PlacementOptions, parse_config
from numalab.results.result import Result
from numalab.runner import sim


def simulate(
    machine: str | Machine,
    workload: str,
    placement: str | PlacementOptions = "default",
    seed: int = 1,
    sample_rate: float = 1.0,
    kernel: str = "6.13",
    thp: bool | None = None,
    **params: Any,
) -> Result:
    """Simulate ``workload`` on ``machine`` under ``placement``.

    ``machine``: a preset name, ``"host"``, a ``.toml``/``.xml`` path or a ``Machine``.
    ``placement``: a config string as ``numalab compare`` takes it (``"interleave=all"``,
    ``"membind=0:cpunodebind=0"``) or a :class:`PlacementOptions`; workload parameters in the
    string (``"init=serial"``) and keyword arguments (``threads=64``, ``n=20000``) are merged,
    keywords winning. Settings items in the string (``"balancing:scan-size-mb=128"``,
    ``"kernel=3.13"``) apply to this run. Returns a :class:`Result` whose ``access_map()``, ``pages()``,
    ``numastat()``, ``threads()`` and ``timeline()`` give pandas objects.

    >>> r = simulate("e5-2620v4-2s", "dgemv", "interleave=all", threads=16, n=4000, reps=2)
    >>> round(r.metrics["local_pct"])
    50
    """
    m = machines.load(machine) if not isinstance(machine, Machine) else machine
    extra: dict[str, str] = {}
    if isinstance(placement, str):
        opts, string_params, extra = parse_config(placement)
        params = {**string_params, **params}
    else:
        opts = placement
    settings = sim.apply_items(sim.Settings(seed=seed, sample_rate=sample_rate, kernel=kernel, thp=thp), extra, f"placement '{placement}'")
    return sim.run(m, workload, params, opts, settings)
