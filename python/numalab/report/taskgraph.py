"""Tables of task-graph studies (``kind = "taskgraph"``, docs/taskgraph.md §6), one set per
experiment instead of one grid shared by all: a study's experiments measure different things
(balancers, communication layers, migration cost), so a common grid would be mostly empty.

An experiment here is the runs sharing an experiment name and a graph (the three ``balancers``
experiments of S3 on lb_test, kNeighbor and jacobi2D stay apart; the ``comm-layer`` experiments on
two machines form one). Its layout follows what its runs vary:

* balancers (the ``column`` is the balancer): one row per machine and balancer, with the mean
  iteration time, the speedup over the baseline, the efficiency, the objects migrated per
  balancing call and the communication of the run by distance class (as ``numalab lb`` prints);
* another ``column`` (``comm_layer``, ``migrate_pct``): one row per machine and swept value, one
  column per value of the column key, and the speedup over the baseline's column when there is one;
* ``migrate``: per machine, the time to migrate the objects against their size, one column per
  destination.

Means over the seeds with 95% intervals (report/stats.py); identical repetitions say so.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from numalab.report.stats import Estimate, estimate
from numalab.report.tables import MIB, format_estimate


NOTE = ("One set of tables per experiment, its figures beside them. Speedup = time(baseline) / time(run) of the whole run, "
        "above 1 is faster; with repetitions, mean ± half-width of the 95% confidence interval (Student's t over the seeds), "
        "\"n identical runs\" where every repetition gave the same value (no interval).")


@dataclass(frozen=True)
class Cell:
    text: str
    cls: str = ""  # "up" / "down" for a speedup above / below 1 (HTML colours it)


@dataclass(frozen=True)
class Table:
    caption: str
    head: list[str]
    keys: int  # leading columns that name the row (rendered as row headers)
    rows: list[list[Cell]]


@dataclass
class Experiment:
    name: str  # "balancers: lb_test"
    key: str  # "balancers lb_test": the figures' title prefix (numalab.tasks.figures)
    note: str
    tables: list[Table] = field(default_factory=list)
    figures: list[Any] = field(default_factory=list)


@dataclass(frozen=True)
class _Run:
    config: dict[str, Any]
    doc: dict[str, Any]
    row: Any  # the frame's row (metrics, speedup, label, hash)


def experiments(data: Any) -> list[Experiment]:
    """The task-graph experiments of a study in file order (none for a placement study)."""
    f = data.finished()
    if not len(f) or "config" not in f:
        return []
    groups: dict[tuple[str, str], list[_Run]] = {}
    for _, row in f.sort_values("position", kind="stable").iterrows() if "position" in f else f.iterrows():
        try:
            c = json.loads(row["config"])
        except (TypeError, ValueError):
            continue
        doc = data.docs.get(row["hash"])
        if c.get("kind") != "taskgraph" or not doc:
            continue
        groups.setdefault((c.get("experiment", "lb"), c["workload"]), []).append(_Run(c, doc, row))
    return [_experiment(name, graph, runs) for (name, graph), runs in groups.items()]


def is_taskgraph(data: Any) -> bool:
    """Whether every stored run of the study is a task-graph run (its speedup grid is replaced)."""
    spec = data.spec
    if spec is not None:
        return getattr(spec, "kind", "placement") == "taskgraph"
    f = data.frame
    if not len(f) or "config" not in f:
        return False
    return all('"kind": "taskgraph"' in str(c) or '"kind":"taskgraph"' in str(c) for c in f["config"])


def attach_figures(exps: list[Experiment], figures: list[Any]) -> list[Any]:
    """Put each figure beside its experiment's tables; returns the figures no experiment claims."""
    left: list[Any] = []
    for fig in figures:
        owner = next((e for e in exps if fig.title.startswith(e.key + ":")), None)
        (owner.figures if owner else left).append(fig)
    return left


def _experiment(name: str, graph: str, runs: list[_Run]) -> Experiment:
    title = name if graph == "migrate" else f"{name}: {graph}"
    e = Experiment(title, f"{name} {graph}", "")
    column = _column_key(runs)
    axes = _row_axes(runs, column)
    if graph == "migrate" or runs[0].doc.get("kind") == "migration-cost":
        e.note = _migrate_note(runs)
        e.tables = _migrate_tables(runs, axes)
    elif column is None:
        e.note = ("Per balancer: mean iteration time; speedup of the whole run (balancing and migrations included) over "
                  f"{_baseline_label(runs) or 'the baseline'}; efficiency = average / maximum PE load; objects migrated and their "
                  "migration time per balancing call, and the whole balancing step per call (barrier, statistics, the strategy's "
                  "modelled run, decision, migrations, resumption); communication of the whole run by distance class." + _seeds(runs))
        e.tables = [_balancer_table(runs, axes)]
    else:
        e.note, e.tables = _pivot(runs, axes, column)
    return e


def _seeds(runs: list[_Run]) -> str:
    n = len({r.config["seed"] for r in runs})
    return f" {n} seeds per cell." if n > 1 else " One seed."


def _column_key(runs: list[_Run]) -> str | None:
    """The experiment's ``column`` key when it is not the balancer: labels read ``key=value``."""
    keys = {str(r.row["label"]).partition("=")[0] if "=" in str(r.row["label"]) and ":" not in str(r.row["label"]).partition("=")[0]
            else None for r in runs}
    return keys.pop() if len(keys) == 1 else None


def _value(label: str) -> str:
    return label.partition("=")[2]


def _row_axes(runs: list[_Run], column: str | None) -> list[str]:
    """Parameters that vary within the experiment besides its column (its sweep's other axes)."""
    keys = list(dict.fromkeys(k for r in runs for k in r.config["params"]))
    out = []
    for k in keys:
        if k == column:
            continue
        if len({json.dumps(r.config["params"].get(k)) for r in runs}) > 1:
            out.append(k)
    return out


def _where(r: _Run, axes: list[str]) -> tuple[str, ...]:
    return (r.config["machine"], *(_fmt_param(r.config["params"].get(k)) for k in axes))


def _fmt_param(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return "all" if v is None else str(v)


def _baseline_label(runs: list[_Run]) -> str | None:
    """The label of the runs that are their own baseline (``none``, ``comm_layer=net``)."""
    for r in runs:
        if r.row.get("baseline_hash") == r.row["hash"]:
            return str(r.row["label"])
    return None


def _est(runs: list[_Run], get: Any) -> Estimate | None:
    values = []
    for r in runs:
        v = get(r)
        if v is not None and not (isinstance(v, float) and math.isnan(v)):
            values.append(float(v))
    return estimate(values)


def _metric(name: str, scale: float = 1.0):
    return lambda r: None if (r.doc.get("metrics") or {}).get(name) is None else r.doc["metrics"][name] * scale


def _speedup(r: _Run) -> float | None:
    v = r.row.get("speedup")
    return None if v is None or v != v else float(v)


def _digits(e: Estimate | None) -> int:
    """Decimals that show about four significant digits of the mean (times span ns to hours)."""
    if e is None or e.mean == 0:
        return 2
    return max(0, min(6, 3 - math.floor(math.log10(abs(e.mean)))))


def _time_cell(e: Estimate | None) -> Cell:
    return Cell(format_estimate(e, _digits(e)))


def _speedup_cell(e: Estimate | None, baseline: bool) -> Cell:
    if e is None:
        return Cell("-")
    if baseline:  # a run against itself: 1 by definition, whatever its repetitions did
        return Cell(f"{e.mean:.2f} (baseline)")
    return Cell(format_estimate(e, 2), "up" if e.mean > 1.005 else "down" if e.mean < 0.995 else "")


def _plain(e: Estimate | None, digits: int) -> Cell:
    return Cell("-" if e is None else f"{e.mean:.{digits}f}")


def _volume(e: Estimate | None) -> Cell:
    """MiB: one decimal below 100, whole MiB above (kNeighbor moves tens of GiB)."""
    return Cell("-" if e is None else f"{e.mean:.1f}" if abs(e.mean) < 100 else f"{e.mean:.0f}")


def _settings(runs: list[_Run]) -> str:
    """``lb_test, 200 objects, 50 iterations, balancing every 10, shm``: what every row shares."""
    d = runs[0].doc
    st = d.get("settings") or {}
    parts = [str((d.get("graph") or {}).get("name", runs[0].config["workload"]))]
    n = {(r.doc.get("graph") or {}).get("n_objects") for r in runs}
    if len(n) == 1 and None not in n:
        parts.append(f"{n.pop()} objects")
    for key, text in (("iterations", "{} iterations"), ("lb_period", "balancing every {}"), ("comm_layer", "{}")):
        values = {(r.doc.get("settings") or {}).get(key) for r in runs}
        if len(values) == 1 and st.get(key) is not None:
            v = values.pop()
            parts.append("no balancing" if key == "lb_period" and v == 0 else text.format(v))
    return ", ".join(parts)


def _balancer_table(runs: list[_Run], axes: list[str]) -> Table:
    cells: dict[tuple[str, ...], dict[str, list[_Run]]] = defaultdict(lambda: defaultdict(list))
    for r in runs:
        cells[_where(r, axes)][str(r.row["label"])].append(r)
    base = _baseline_label(runs)
    rows = []
    for where, by_label in cells.items():
        for label, rs in by_label.items():
            rows.append([*(Cell(w) for w in where), Cell(label),
                         _time_cell(_est(rs, _metric("iteration_time_ns", 1e-6))),
                         _speedup_cell(_est(rs, _speedup), label == base),
                         _plain(_est(rs, _metric("efficiency")), 3),
                         _plain(_est(rs, _metric("migrations_per_call")), 1),
                         Cell(_per_call_ms(rs)),
                         Cell(_step_ms(rs)),
                         *(_volume(_est(rs, _metric(f"comm_{c}_bytes", 1 / MIB))) for c in ("same_pe", "same_node", "remote"))])
    head = ["machine", *axes, "balancer", "iteration (ms)", f"speedup over {base}" if base else "speedup", "efficiency",
            "migrations per call", "migration ms per call", "step ms per call", "same PE (MiB)", "same node (MiB)", "remote (MiB)"]
    return Table(_settings(runs), head, 2 + len(axes), rows)


def _per_call_ms(rs: list[_Run]) -> str:
    """Migration time of one balancing call (ms): what a balancer's moves cost the run."""
    def get(r: _Run) -> float | None:
        m = r.doc.get("metrics") or {}
        return None if m.get("migration_time_ns") is None else m["migration_time_ns"] / max(1, m.get("lb_calls") or 1) / 1e6
    e = _est(rs, get)
    return "-" if e is None else f"{e.mean:.{_digits(e)}f}"


def _step_ms(rs: list[_Run]) -> str:
    """The whole balancing step per call (ms): barrier, statistics, strategy, decision, migrations
    and resumption, as the runtime takes it (docs/taskgraph.md §1)."""
    def get(r: _Run) -> float | None:
        m = r.doc.get("metrics") or {}
        return None if not m.get("lb_calls") or m.get("lb_step_ns_per_call") is None else m["lb_step_ns_per_call"] / 1e6
    e = _est(rs, get)
    return "-" if e is None else f"{e.mean:.{_digits(e)}f}"


def _pivot(runs: list[_Run], axes: list[str], column: str) -> tuple[str, list[Table]]:
    """Rows: machine and the other swept values; columns: the values of ``column``."""
    share = all(str(r.config["balancer"]).startswith("random") for r in runs)
    if share:
        what, unit = "migration time per balancing call", "µs"

        def get(r: _Run) -> float | None:
            m = r.doc.get("metrics") or {}
            return None if m.get("migration_time_ns") is None else m["migration_time_ns"] / max(1, m.get("lb_calls") or 1) / 1e3
    else:
        what, unit, get = "mean iteration time", "ms", _metric("iteration_time_ns", 1e-6)
    labels = list(dict.fromkeys(str(r.row["label"]) for r in runs))
    base = _baseline_label(runs)
    cells: dict[tuple[str, ...], dict[str, list[_Run]]] = defaultdict(lambda: defaultdict(list))
    for r in runs:
        cells[_where(r, axes)][str(r.row["label"])].append(r)
    others = [label for label in labels if base and label != base]
    base_label = base or ""  # named in the headers only when there are others, hence a baseline
    rows = []
    for where, by_label in cells.items():
        row = [Cell(w) for w in where]
        row += [_time_cell(_est(by_label.get(label, []), get)) for label in labels]
        row += [_speedup_cell(_est(by_label.get(label, []), _speedup), False) for label in others]
        if share:
            row.append(Cell(_objects([by_label.get(label, []) for label in labels])))
        rows.append(row)
    head = ["machine", *axes, *(f"{_value(label)} %" if share else f"{_value(label)} ({unit})" for label in labels),
            *(f"speedup {_value(label)} over {_value(base_label)}" for label in others)]
    if share:
        head.append("objects migrated per call")
    caption = f"{_settings(runs)}: {what} ({unit}) by {column}"
    note = (f"{what[0].upper()}{what[1:]} for each {column}"
            + (f" and the speedup of the whole run over {column} = {_value(base_label)}" if others else "")
            + ("; the objects migrated per call follow the share asked for (rounded to whole objects)" if share else "")
            + "." + _seeds(runs))
    return note, [Table(caption, head, 1 + len(axes), rows)]


def _objects(groups: list[list[_Run]]) -> str:
    """Objects migrated per call for each share, in column order: "2, 10, 20, ..."."""
    out = []
    for rs in groups:
        e = _est(rs, _metric("migrations_per_call"))
        out.append("-" if e is None else f"{e.mean:g}")
    return ", ".join(out)


def _migrate_note(runs: list[_Run]) -> str:
    objects = (runs[0].doc.get("metrics") or {}).get("objects")
    return (f"Time to migrate {objects} objects from PE 0 to another PE of its node and to the first PE of every other node, "
            "by object size (µs); SLIT distance from node 0 in each heading.")


def _size(n: Any) -> str:
    n = float(n)
    for unit, div in (("MB", 1e6), ("kB", 1e3)):
        if n >= div:
            return f"{n / div:g} {unit}"
    return f"{n:g} B"


def _migrate_tables(runs: list[_Run], axes: list[str]) -> list[Table]:
    axes = [a for a in axes if a != "state_bytes"]
    by_machine: dict[tuple[str, ...], list[_Run]] = defaultdict(list)
    for r in runs:
        by_machine[_where(r, axes)].append(r)
    tables = []
    for where, rs in by_machine.items():
        dests = list(dict.fromkeys((d["name"], d["distance"]) for r in rs for d in r.doc.get("destinations", [])))
        sizes: dict[Any, list[_Run]] = defaultdict(list)
        for r in sorted(rs, key=lambda r: (r.doc.get("metrics") or {}).get("state_bytes", 0)):
            sizes[(r.doc.get("metrics") or {}).get("state_bytes")].append(r)
        rows = []
        for size, group in sizes.items():
            row = [Cell(_size(size))]
            for name, _ in dests:
                e = _est(group, lambda r, n=name: next((d["migration_time_ns"] / 1e3 for d in r.doc["destinations"] if d["name"] == n), None))
                row.append(_time_cell(e))
            rows.append(row)
        head = ["object size", *(f"{'same node' if n == 'same_node' else n} ({d:g})" for n, d in dests)]
        tables.append(Table(f"{' '.join(where)}: migration time (µs) by object size and destination (SLIT distance)", head, 1, rows))
    return tables
