"""Task-graph studies (``kind = "taskgraph"``): expand ``[[experiments]]`` into resolved runs the
study layer stores and runs like any other (study/sweep.py, results/store.py), and run one.
``numalab/kinds.py`` registers these functions as the kind's parts (study/kinds.py).

A run's configuration is a plain dict with the store's usual keys plus ``kind``::

    {"kind": "taskgraph", "experiment": "balancers", "machine": "numa32", "workload": "lb_test",
     "params": {"comm_layer": "shm", "iterations": 50, "lb_period": 10, "max_us": 200000.0,
                "min_us": 50000.0, "n_objects": 200, "pes": null}, "balancer": "greedy",
     "placement": null, "balancing": {}, "kernel": null, "seed": 1}

Its row in tables (case) names the experiment, the machine, the graph and the swept values; its
column (label) is the balancer, or the experiment's ``column`` key.
"""

from __future__ import annotations

import itertools
from types import SimpleNamespace
from typing import Any

from numalab.exceptions import USAGE_ERRORS, UsageError
from numalab.study.canonical import config_hash, to_json
from numalab.study.errors import located
from numalab.study.resolved import ResolvedRun, ResolvedStudy
from numalab.tasks import balancers as lb
from numalab.tasks.graphs import GENERATORS, graph_spec
from numalab.tasks.run import MIGRATE, SIM_PARAMS, Settings, check_pes

SETTINGS = ("iterations", "lb_period", "comm_layer", "pes", "noise", "lb_timer")
MIGRATE_PARAMS = {"objects": 20, "state_bytes": 1024}


def planned_runs(study: Any) -> int:
    n = 0
    for e in study.experiments:
        seeds = len(set(e.seeds or study.seed_list()))
        k = seeds * len(e.balancers) * (len(e.machine) if isinstance(e.machine, list) else 1)
        for values in e.sweep.values():
            k *= len(values)
        n += k
    return n


def expand(sf: Any) -> Any:
    """All runs of a task-graph study, in file order, with baselines added where missing."""
    s = sf.study
    if not s.experiments:
        raise located(sf.path, sf.text, "kind", "a task-graph study needs at least one [[experiments]] entry")
    runs: dict[str, ResolvedRun] = {}
    baselines: list[tuple[dict[str, Any], str, str]] = []
    seen: dict[tuple[str, str], str] = {}
    for i, e in enumerate(s.experiments):
        prefix = f"experiments[{i}]"
        seeds = list(dict.fromkeys(e.seeds)) if e.seeds is not None else s.seed_list()
        for config, label, case in _points(sf, prefix, e, seeds):
            h = config_hash(config)
            b_hash = None
            if e.baseline:
                bconfig = _patched(sf, prefix, e, config)
                b_hash = config_hash(bconfig)
                baselines.append((bconfig, case, _label(e, bconfig, {**e.params, **(e.baseline or {})})))
            group = config_hash({k: v for k, v in config.items() if k != "seed"})
            if seen.setdefault((case, label), group) != group:
                raise located(sf.path, sf.text, f"{prefix}.column", f"two configurations share row '{case}' and column '{label}'; "
                              "make the column an axis that tells them apart, or move the axis into [sweep]")
            runs.setdefault(h, ResolvedRun(h, config, to_json(config), label, case, "run", b_hash))
    for bconfig, case, label in baselines:
        h = config_hash(bconfig)
        runs.setdefault(h, ResolvedRun(h, bconfig, to_json(bconfig), label, case, "baseline", h))
    return ResolvedStudy(s.name, sf, list(runs.values()))


def _points(sf: Any, prefix: str, e: Any, seeds: list[int]):
    machines = e.machine if isinstance(e.machine, list) else [e.machine]
    axes = list(e.sweep.items())
    for key, _ in axes:
        if key in e.params:
            raise located(sf.path, sf.text, f"{prefix}.sweep.{key}", f"is also set in {prefix}.params; set it in one place")
    if e.column != "balancer" and e.column not in e.sweep:
        raise located(sf.path, sf.text, f"{prefix}.column", f"'{e.column}' is neither balancer nor a sweep key (sweep: {', '.join(e.sweep) or 'none'})")
    for m_i, machine in enumerate(machines):
        for combo in itertools.product(*(range(len(v)) for _, v in axes)):
            values = dict(e.params)
            origin = {k: f"{prefix}.params.{k}" for k in e.params}
            for (key, vals), j in zip(axes, combo):
                values[key] = vals[j]
                origin[key] = f"{prefix}.sweep.{key}[{j}]" if len(vals) > 1 else f"{prefix}.sweep.{key}"
            for b_i, text in enumerate(e.balancers):
                for seed in seeds:
                    config = _config(sf, prefix, e, machine, m_i, values, origin, text, f"{prefix}.balancers[{b_i}]", seed)
                    yield config, _label(e, config, values), _case(e, machine, values, config["balancer"])


def _config(sf: Any, prefix: str, e: Any, machine: str, m_i: int, values: dict[str, Any], origin: dict[str, str], balancer: str,
            b_where: str, seed: int) -> dict[str, Any]:
    """Check one point as `numalab lb` would, every error located at the key that set it."""
    from numalab.spec.run import load_machine

    m_where = f"{prefix}.machine" + (f"[{m_i}]" if isinstance(e.machine, list) else "")
    try:
        m = load_machine(machine)
    except USAGE_ERRORS as err:
        raise located(sf.path, sf.text, m_where, str(err.args[0]) if err.args else str(err)) from None
    settings = {k: values[k] for k in SETTINGS if k in values}
    sim = {k: v for k, v in values.items() if k in SIM_PARAMS}
    if e.graph == MIGRATE:
        known = set(MIGRATE_PARAMS) | {"migration_fixed_ns"}
        graph_params = {k: values.get(k, d) for k, d in MIGRATE_PARAMS.items()}
    else:
        known = set(GENERATORS.get(e.graph, {})) | set(SETTINGS) | set(SIM_PARAMS)
        graph_params = {k: v for k, v in values.items() if k in GENERATORS.get(e.graph, {})}
    lb_params = {k: v for k, v in values.items() if k not in known}
    try:
        b_name, _, _ = balancer.partition(":")
        b = lb.parse(balancer) if not lb_params else lb.spec(b_name, {**dict(lb.parse(balancer).params), **lb_params})
    except UsageError as err:
        key = b_where if not lb_params else origin[sorted(lb_params)[0]]
        raise located(sf.path, sf.text, key, str(err)) from None
    if e.graph == MIGRATE:
        if b.name != "none":
            raise located(sf.path, sf.text, b_where, "the migrate experiment runs no balancer (give balancers = [\"none\"])")
        from numalab.tasks.graphs import coerce

        try:
            typed = {"objects": coerce("objects", graph_params["objects"], int, 1), "state_bytes": coerce("state_bytes", graph_params["state_bytes"], int, 0)}
            typed.update(dict(Settings.create(params={k: v for k, v in sim.items() if k == "migration_fixed_ns"}).params))
        except UsageError as err:
            bad = next((k for k in ("objects", "state_bytes", "migration_fixed_ns") if k in str(err).split(":")[0].replace("-", "_")), "params")
            raise located(sf.path, sf.text, origin.get(bad, f"{prefix}.params"), str(err)) from None
        return _finish(e, machine, MIGRATE, typed, b, seed)
    try:
        g = graph_spec(e.graph, graph_params)
    except UsageError as err:
        raise located(sf.path, sf.text, f"{prefix}.graph", str(err)) from None
    try:
        st = Settings.create(**settings, seed=seed, params=sim)
        check_pes(m, st)
    except UsageError as err:
        named = next((k for k in [*SETTINGS, *SIM_PARAMS] if k in values and k.replace("_", "-") in str(err)), None)
        raise located(sf.path, sf.text, origin.get(named, f"{prefix}.params") if named else f"{prefix}.params", str(err)) from None
    params = {**g.as_dict(), "iterations": st.iterations, "lb_period": st.lb_period, "comm_layer": st.comm_layer, "pes": st.pes,
              "noise": "on" if st.noise else "off", "lb_timer": st.lb_timer, **dict(st.params)}
    return _finish(e, machine, e.graph, params, b, seed)


def _finish(e: Any, machine: str, graph: str, params: dict[str, Any], b: lb.BalancerSpec, seed: int) -> dict[str, Any]:
    return {"kind": "taskgraph", "experiment": e.name, "machine": machine, "workload": graph, "params": params,
            "balancer": b.label(), "placement": None, "balancing": {}, "kernel": None, "seed": seed}


def _patched(sf: Any, prefix: str, e: Any, config: dict[str, Any]) -> dict[str, Any]:
    """The run's baseline: its configuration with the baseline's keys replaced."""
    out = dict(config, params=dict(config["params"]))
    for k, v in (e.baseline or {}).items():
        if k == "balancer":
            try:
                out["balancer"] = lb.parse(str(v)).label()
            except UsageError as err:
                raise located(sf.path, sf.text, f"{prefix}.baseline.balancer", str(err)) from None
        elif k in out["params"]:
            out["params"][k] = v
        else:
            raise located(sf.path, sf.text, f"{prefix}.baseline.{k}", f"is neither balancer nor a parameter of this experiment "
                          f"(expected balancer or one of: {', '.join(sorted(out['params']))})")
    return out


def _label(e: Any, config: dict[str, Any], values: dict[str, Any]) -> str:
    if e.column == "balancer":
        return config["balancer"]
    return f"{e.column}={config['params'].get(e.column, values.get(e.column))}"


def _case(e: Any, machine: str, values: dict[str, Any], balancer: str) -> str:
    swept = [f"{k}={values[k]}" for k in e.sweep if k != e.column]
    if e.column != "balancer" and len(e.balancers) > 1:
        swept.append(balancer)
    return " ".join([f"{e.name}:", machine, e.graph, *swept])


def run_config(config: dict[str, Any]) -> Any:
    """Run one resolved configuration (the study worker's entry point); ``.doc`` is the result."""
    from numalab.spec.run import load_machine
    from numalab.tasks.graphs import graph_spec as spec_of
    from numalab.tasks.run import migration_cost, simulate

    machine = load_machine(config["machine"])
    p = dict(config["params"])
    if config["workload"] == MIGRATE:
        return SimpleNamespace(doc=migration_cost(machine, p.pop("objects"), p.pop("state_bytes"), p))
    sim = {k: p.pop(k) for k in list(p) if k in SIM_PARAMS}
    settings = Settings.create(**{k: p.pop(k) for k in SETTINGS if k in p}, seed=config["seed"], params=sim)
    g = spec_of(config["workload"], p)
    return SimpleNamespace(doc=simulate(machine, g, lb.parse(config["balancer"]), settings))
