"""The Python API: ``simulate`` one run, ``compare`` configurations, ``run_study`` a study file.

Placement is written as numactl writes it, as keywords (``interleave="all"``, ``membind=[0, 1]``,
``cpunodebind=0``, ``localalloc=True``), or as a config string (``"interleave=all:init=serial"``,
the language of ``numalab compare --configs``); both go through the same checks as the CLI.
Every other keyword is a workload parameter (``threads=16``, ``n=20000``).
"""

from __future__ import annotations

import difflib
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Iterable, Mapping

from numalab._core import Machine
from numalab.exceptions import UsageError
from numalab.results.derived import columns
from numalab.results.metrics import speedup
from numalab.results.result import Result
from numalab.runner import sim
from numalab.spec import Placement, RunSpec
from numalab.spec.balancing import KNOBS, Balancing
from numalab.spec.config import split_configs

#: numactl's placement options and OpenMP binding, as keywords: keyword -> config item.
PLACEMENT_KEYWORDS = {
    "interleave": "interleave",
    "weighted_interleave": "weighted-interleave",
    "weights": "weights",
    "membind": "membind",
    "membind_balancing": "membind-balancing",
    "preferred": "preferred",
    "preferred_many": "preferred-many",
    "localalloc": "localalloc",
    "cpunodebind": "cpunodebind",
    "physcpubind": "physcpubind",
    "omp_proc_bind": "omp-proc-bind",
    "omp_places": "omp-places",
}
#: Placement keywords that are switches (numactl -l, and -b with -m).
FLAG_KEYWORDS = ("localalloc", "membind_balancing")
#: Run settings beside the placement: automatic NUMA balancing's scanner and tiering knobs, the
#: tiering switches, and the engine's settings, as keywords.
SETTING_KEYWORDS = {
    **{k: k.replace("_", "-") for k in KNOBS},
    "demotion_enabled": "demotion-enabled",
    "weighted_interleave_auto": "weighted-interleave-auto",
    "noise": "noise",
    "omp_wait_policy": "omp-wait-policy",
    "npb": "npb",
    "npb_version": "npb",  # the name before the C implementations
}


def simulate(
    machine: str | Machine,
    workload: str,
    placement: str | Placement | None = None,
    seed: int = 1,
    sample_rate: float = 1.0,
    kernel: str = "6.13",
    thp: str | bool | None = None,
    balancing: Any = None,
    **params: Any,
) -> Result:
    """Simulate ``workload`` on ``machine`` under a placement.

    ``machine``: a preset name, ``"host"``, a ``.toml``/``.xml`` path or a ``Machine``.
    ``workload``: a library name, a descriptor path, or a co-run (``"stream*8"``,
    ``"stream*2,milc*2@100"``, docs/corun.md): then every process's slowdown against its time
    alone and the run's unfairness are in ``doc["processes"]`` and ``doc["fairness"]``.
    ``placement`` (default: the kernel's default policy, unbound threads): a config string as ``numalab compare`` takes it (``"interleave=all"``,
    ``"membind=0:cpunodebind=0"``, ``"balancing:scan-size-mb=128"``, ``"kernel=3.13"``) or a
    :class:`Placement`. numactl's options are keywords too: ``interleave``,
    ``weighted_interleave`` (with ``weights={0: 5, 1: 2}`` or ``"0=5,1=2"``), ``membind`` (with
    ``membind_balancing=True``, numactl's ``-b``), ``preferred``, ``preferred_many``, ``localalloc=True``, ``cpunodebind``, ``physcpubind``
    (node and CPU lists as numactl's strings, ``"0-3,5"``, ``"all"``, or a list of numbers), and
    ``omp_proc_bind``, ``omp_places``. ``balancing``: automatic NUMA balancing as
    ``kernel.numa_balancing`` takes it (``True``, ``"on"``, ``2``, ``{"numa_balancing": 2}``);
    its knobs (``scan_period_min_ms=100``, ``hot_threshold_ms``, ...) and ``demotion_enabled``,
    ``weighted_interleave_auto``, ``noise``, ``omp_wait_policy``, ``npb`` (``npb_version`` is the old name) are keywords
    as well. A keyword and the string may not both set an option (two memory policies are an
    error, as on the command line). Every other keyword is a workload parameter
    (``threads=64``, ``n=20000``), winning over one in the string. The same rules as the CLI
    and study files check it all. Returns a :class:`Result` whose ``access_map()``,
    ``pages()``, ``numastat()``, ``threads()`` and ``timeline()`` give pandas objects.

    >>> r = simulate("e5-2620v4-2s", "dgemv", interleave="all", threads=16, n=4000, reps=2)
    >>> round(r.metrics["local_pct"])
    50
    """
    spec = _spec(machine, workload, placement, seed, sample_rate, kernel, thp, balancing, params)
    return sim.run(spec.bind(machine if isinstance(machine, Machine) else None))


def compare(
    machine: str | Machine,
    workload: str,
    configs: str | Iterable[str],
    seed: int = 1,
    sample_rate: float = 1.0,
    kernel: str = "6.13",
    thp: str | bool | None = None,
    balancing: Any = None,
    jobs: int | None = None,
    **params: Any,
):  # -> pandas.DataFrame
    """Simulate ``workload`` on ``machine`` under each config and compare them with the first,
    as ``numalab compare`` does; returns a pandas DataFrame, one row per config, in order.

    ``configs``: config strings (a list, or one comma-separated string as ``--configs`` takes
    it: ``"default,interleave=all,membind=0"``). Placement and setting keywords (as
    :func:`simulate` takes them) and workload parameters apply to every config; a config may add
    to them. ``jobs``: simulations at once (default one per CPU).

    Columns: ``label``, ``speedup`` (the first config's reported time / this one's: the time the
    program reports, its timed section, docs/workloads.md §1.2), ``status``,
    the run's settings (``machine``, ``workload``, ``placement``, ``balancing``, ``kernel``,
    ``seed``, each workload parameter as ``param_<name>``) and the derived metrics a results
    store keeps (``time_s``, ``reported_time_s``, ``local_pct``, ``remote_pct``, ``max_concentration_pct``,
    ``dram_bytes``, ``dram_gbps``, ``mapki``, ``vmstat_<counter>``, ...).

    >>> df = compare("e5-2620v4-2s", "dgemv", ["default", "interleave=all"], threads=16, n=4000, reps=2)
    >>> list(df["label"]), float(df["speedup"].iloc[0]), round(float(df["local_pct"].iloc[1]))
    (['default', 'interleave=all'], 1.0, 50)
    """
    import pandas as pd

    labels = split_configs(configs) if isinstance(configs, str) else [str(c) for c in configs]
    if not labels:
        raise UsageError("compare: configs is empty (give at least one, e.g. ['default', 'interleave=all'])")
    if jobs is not None and jobs < 1:
        raise UsageError(f"compare: jobs must be >= 1, got {jobs}")
    base = _spec(machine, workload, None, seed, sample_rate, kernel, thp, balancing, params)
    given = machine if isinstance(machine, Machine) else None
    # Every config is checked by the engine before any runs, so a typo fails fast.
    bound = [_with_config(base, label, params).bind(given) for label in labels]
    with ThreadPoolExecutor(max_workers=min(jobs or os.cpu_count() or 1, len(bound))) as pool:
        results = list(pool.map(sim.run, bound))
    first = results[0].reported_time_s
    rows = [_row(label, b.spec, r, speedup(first, r.reported_time_s)) for label, b, r in zip(labels, bound, results)]
    return pd.DataFrame(rows)


def run_study(
    path: str | Path,
    results: str | Path = "results",
    jobs: int | None = None,
    replace: bool = False,
):  # -> pandas.DataFrame
    """Run a study file into the results store at ``results``, as ``numalab study`` does (runs
    already stored are skipped; failed runs are recorded and tried again next time), and return
    its runs as a pandas DataFrame, one row per run: the store's columns (``hash``, ``label``,
    ``case``, ``role``, ``speedup`` against the run's baseline, ``status``, ``error``, the
    configuration) with each derived metric as a column (``time_s``, ``local_pct``, ...,
    ``vmstat_<counter>``) and each workload parameter as ``param_<name>``, as
    ``numalab.results.frame.load`` gives them.

    ``jobs``: local worker processes (default one per CPU). ``replace``: make this file the
    study of its name in the store when another file of that name was stored there before.
    Ctrl-C stops it, keeping the finished runs (KeyboardInterrupt is raised again).
    """
    import numalab.kinds  # noqa: F401  (a task-graph study file expands and runs through its registered kind)
    from numalab.results.frame import load
    from numalab.results.store import Store
    from numalab.study import executors, expand, load_study
    from numalab.study import sweep

    if jobs is not None and jobs < 1:
        raise UsageError(f"study: jobs must be >= 1, got {jobs}")
    sf = load_study(Path(path))
    sweep.check_size(sf.study)
    resolved = expand(sf)
    with Store(results) as store:
        store.register_study(resolved, replace=replace)
        todo = len(resolved.runs) - len(store.complete_hashes(r.hash for r in resolved.runs))
        n, _ = executors.local_workers(jobs, todo)
        summary = sweep.run_study(resolved, store, lambda: executors.LocalBackend(n), registered=True)
        if summary.interrupted:
            raise KeyboardInterrupt(f"study {resolved.name}: interrupted; the {summary.done} finished runs are kept in {store.path}")
        return load(store, resolved.name)


# ---- keywords -> one RunSpec -----------------------------------------------------------------

def _spec(machine: str | Machine, workload: str, placement: str | Placement | None, seed: Any, sample_rate: Any, kernel: str,
          thp: Any, balancing: Any, params: dict[str, Any]) -> RunSpec:
    """The RunSpec of ``simulate``'s arguments; ``params`` loses the placement and setting keywords."""
    name = machine.name if isinstance(machine, Machine) else str(machine)
    items = _keyword_items(params, balancing)
    _check_params(workload, params)
    spec = RunSpec.create(name, workload, seed=seed, sample_rate=sample_rate, kernel=kernel, thp=thp)
    if isinstance(placement, Placement):
        spec = spec.updated(placement=placement)
        if items:
            spec = spec.with_config(":".join(items))
    elif placement is not None and not isinstance(placement, str):
        raise UsageError(f"placement: expected a config string or a Placement, got {type(placement).__name__}")
    else:
        # One string: an option set twice, or two memory policies, is refused as the CLI refuses it.
        spec = spec.with_config(":".join([p for p in (placement or "", *items) if p.strip()]) or "default")
    return spec.updated(params=params)


#: The keywords simulate and compare take besides placement, settings and workload parameters.
OWN_KEYWORDS = ("placement", "seed", "sample_rate", "kernel", "thp", "balancing", "configs", "jobs")


def _check_params(workload: str, params: dict[str, Any]) -> None:
    """A keyword that is no workload parameter is refused with the nearest keyword or parameter
    (``interleav="all"``: did you mean interleave?), before anything runs."""
    if not params:
        return
    from numalab.workload import descriptor

    desc = descriptor.load(workload)[0]
    unknown = [k for k in params if k not in desc.params]
    if unknown:
        known = [*desc.params, *PLACEMENT_KEYWORDS, *SETTING_KEYWORDS, *OWN_KEYWORDS]
        close = difflib.get_close_matches(unknown[0], known, n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]}?" if close else ""
        raise UsageError(f"{unknown[0]}: neither a keyword of numalab.simulate nor a parameter of workload {desc.name} "
                         f"({', '.join(sorted(desc.params))}){hint}")


def _with_config(base: RunSpec, label: str, params: dict[str, Any]) -> RunSpec:
    """A compared config on top of the shared settings; the shared workload parameters win."""
    return base.with_config(label).updated(params=params)


def _keyword_items(params: dict[str, Any], balancing: Any) -> list[str]:
    """Pop the placement and setting keywords from ``params``; their config items."""
    items = []
    for key, item in PLACEMENT_KEYWORDS.items():
        if key not in params:
            continue
        value = params.pop(key)
        if key in FLAG_KEYWORDS:
            if not isinstance(value, bool):
                raise UsageError(f"{key}: expected True or False, got {value!r}")
            if value:
                items.append(item)
        elif value is not None:
            items.append(f"{item}={_weights(value) if key == 'weights' else _list(key, value)}")
    if balancing is not None:
        bal = Balancing.parse(balancing)
        on = bal.items()
        items += on if any(i.startswith("balancing") for i in on) else ["balancing=off", *on]
    for key, item in SETTING_KEYWORDS.items():
        if key in params and params[key] is not None:
            value = params.pop(key)
            if isinstance(value, bool):
                value = "on" if value else "off"
            items.append(f"{item}={value}")
    return items


def _list(key: str, value: Any) -> str:
    """A node or CPU list: numactl's string, a number, or numbers (``[0, 1]`` -> ``0,1``)."""
    if isinstance(value, bool):
        raise UsageError(f"{key}: expected a node string such as 'all' or '0-3', or numbers, got {value!r}")
    if isinstance(value, (list, tuple, set, frozenset, range)):
        return ",".join(str(_number(key, v)) for v in (sorted(value) if isinstance(value, (set, frozenset)) else value))
    text = str(value)
    if ":" in text:
        raise UsageError(f"{key}: '{text}' is not a node string (expected e.g. all, 0-3,5, !1)")
    return text


def _weights(value: Any) -> str:
    """``{0: 5, 1: 2}``, ``[(0, 5), (1, 2)]`` or ``"0=5,1=2"`` -> ``0=5,1=2``."""
    pairs = value.items() if isinstance(value, Mapping) else value
    if isinstance(pairs, str):
        return pairs.replace(":", "=")
    try:
        return ",".join(f"{_number('weights', n)}={_number('weights', w)}" for n, w in pairs)
    except (TypeError, ValueError):
        raise UsageError(f"weights: expected {{node: weight}} or '0=5,1=2', got {value!r}") from None


def _number(key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise UsageError(f"{key}: expected whole numbers, got {value!r}")
    return value


def _row(label: str, spec: RunSpec, r: Result, sp: float | None) -> dict[str, Any]:
    doc = r.doc
    return {
        "label": label,
        "speedup": sp,
        "status": r.status,
        "machine": spec.machine,
        "workload": spec.workload,
        "placement": spec.placement.label(),
        "balancing": spec.balancing.label(),
        "kernel": spec.kernel,
        "seed": spec.seed,
        **{f"param_{k}": v for k, v in spec.params},
        **columns(doc),
    }
