"""The Python API: ``numalab.simulate(machine, workload, placement, seed=...) -> Result``."""

from __future__ import annotations

from typing import Any

from numalab._core import Machine
from numalab.results.result import Result
from numalab.runner import sim
from numalab.spec import Placement, RunSpec


def simulate(
    machine: str | Machine,
    workload: str,
    placement: str | Placement = "default",
    seed: int = 1,
    sample_rate: float = 1.0,
    kernel: str = "6.13",
    thp: str | bool | None = None,
    **params: Any,
) -> Result:
    """Simulate ``workload`` on ``machine`` under ``placement``.

    ``machine``: a preset name, ``"host"``, a ``.toml``/``.xml`` path or a ``Machine``.
    ``placement``: a config string as ``numalab compare`` takes it (``"interleave=all"``,
    ``"membind=0:cpunodebind=0"``, ``"balancing:scan-size-mb=128"``, ``"kernel=3.13"``) or a
    :class:`Placement`; workload parameters in the string (``"init=serial"``) and keyword
    arguments (``threads=64``, ``n=20000``) are merged, keywords winning. The same rules as the
    CLI and study files check it. Returns a :class:`Result` whose ``access_map()``, ``pages()``,
    ``numastat()``, ``threads()`` and ``timeline()`` give pandas objects.

    >>> r = simulate("e5-2620v4-2s", "dgemv", "interleave=all", threads=16, n=4000, reps=2)
    >>> round(r.metrics["local_pct"])
    50
    """
    name = machine.name if isinstance(machine, Machine) else str(machine)
    spec = RunSpec.create(name, workload, seed=seed, sample_rate=sample_rate, kernel=kernel, thp=thp)
    if isinstance(placement, Placement):
        spec = spec.updated(placement=placement)
    else:
        spec = spec.with_config(placement)
    spec = spec.updated(params=params)
    return sim.run(spec.bind(machine if isinstance(machine, Machine) else None))
