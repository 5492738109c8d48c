"""Report figures of task-graph studies (docs/taskgraph.md §6), one or two per experiment, drawn
from the stored result documents (means over seeds):

* balancer comparisons: iteration time per balancer and objects migrated per balancing call;
* a swept PE count (the communication-layer comparison): iteration time against PEs;
* ``migrate``: time to migrate the objects against their state size, per destination (log-log);
* the ``random`` balancer swept over its share: migration time per call against % migrated.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from numalab.report.figures import _STYLE, Drawer, Figure


def taskgraph_figures(drawer: Drawer, data: Any) -> list[Figure]:
    """All task-graph figures of a study (none when it has no task-graph runs)."""
    f = data.finished()
    if not len(f) or "config" not in f:
        return []
    groups: dict[str, list[tuple[dict[str, Any], dict[str, Any], str, str]]] = defaultdict(list)
    for h, config, case, label in zip(f["hash"], f["config"], f["case"], f["label"]):
        try:
            c = json.loads(config)
        except (TypeError, ValueError):
            continue
        doc = data.docs.get(h)
        if c.get("kind") != "taskgraph" or not doc:
            continue
        groups[f"{c.get('experiment', 'lb')} {c['workload']}"].append((c, doc, case, label))
    out: list[Figure] = []
    for name, runs in groups.items():
        out.extend(_experiment(drawer, name, runs))
    return out


def _experiment(drawer: Drawer, name: str, runs: list[tuple[dict[str, Any], dict[str, Any], str, str]]) -> list[Figure]:
    docs = [d for _, d, _, _ in runs]
    if docs[0].get("kind") == "migration-cost":
        return [_migration_size(drawer, name, runs)]
    if all(c["balancer"].startswith("random") for c, _, _, _ in runs) and len({d["metrics"]["migrated_pct_per_call"] for d in docs}) > 1:
        return [_migration_share(drawer, name, runs)]
    pes = {c["params"].get("pes") for c, _, _, _ in runs}
    if len(pes) > 1:
        return [_against_pes(drawer, name, runs)]
    return _balancers(drawer, name, runs)


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _balancers(drawer: Drawer, name: str, runs: list[tuple[dict[str, Any], dict[str, Any], str, str]]) -> list[Figure]:
    import matplotlib

    cases = list(dict.fromkeys(case for _, _, case, _ in runs))
    labels = list(dict.fromkeys(label for _, _, _, label in runs))
    figs = []
    for metric, axis, scale, title in (
        ("iteration_time_ns", "mean iteration time (ms)", 1e-6, "iteration time per balancer"),
        ("migrations_per_call", "objects migrated per balancing call", 1.0, "migrations per balancing call"),
    ):
        cell: dict[tuple[str, str], list[float]] = defaultdict(list)
        for _, d, case, label in runs:
            cell[(case, label)].append(d["metrics"][metric] * scale)
        with matplotlib.rc_context(_STYLE):
            fig = drawer.new(6.4, 3.2)
            ax = fig.add_subplot()
            width = 0.8 / max(1, len(labels))
            colors = matplotlib.colormaps["tab10"]
            for j, label in enumerate(labels):
                xs = [i + (j - (len(labels) - 1) / 2) * width for i in range(len(cases))]
                ax.bar(xs, [_mean(cell.get((case, label), [])) for case in cases], width, label=label, color=colors(j % 10))
            ax.set_xticks(range(len(cases)), [c.split(": ", 1)[-1] for c in cases], fontsize=8)
            ax.set_ylabel(axis)
            fig.legend(fontsize=7, loc="outside right upper")
            full = f"{name}: {title}"
            ax.set_title(full)
            figs.append(drawer.save(fig, full))
    return figs


def _mean_lines(ax: Any, lines: dict[str, dict[Any, list[float]]], marker: str = "o", positive: bool = False) -> None:
    """One line per key through the mean of each x's values (only x > 0 on log axes)."""
    for key, points in lines.items():
        xs = sorted(x for x in points if x > 0 or not positive)
        ax.plot(xs, [_mean(points[x]) for x in xs], marker=marker, label=key)


def _against_pes(drawer: Drawer, name: str, runs: list[tuple[dict[str, Any], dict[str, Any], str, str]]) -> Figure:
    import matplotlib

    lines: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for c, d, _, label in runs:
        lines[f"{c['machine']} {label}"][int(c["params"]["pes"] or d["n_pes"])].append(d["metrics"]["iteration_time_ns"] / 1e6)
    with matplotlib.rc_context(_STYLE):
        fig = drawer.new(6.4, 3.6)
        ax = fig.add_subplot()
        _mean_lines(ax, lines)
        from matplotlib.ticker import FormatStrFormatter

        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(FormatStrFormatter("%d"))
        ax.set_ylim(bottom=0)
        ax.set_xlabel("PEs (cores)")
        ax.set_ylabel("mean iteration time (ms)")
        ax.legend(fontsize=7)
        title = f"{name}: iteration time against PEs"
        ax.set_title(title)
        return drawer.save(fig, title)


def _migration_size(drawer: Drawer, name: str, runs: list[tuple[dict[str, Any], dict[str, Any], str, str]]) -> Figure:
    import matplotlib

    # machine -> destination -> state bytes -> times (µs)
    lines: dict[str, dict[str, dict[int, list[float]]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    objects = runs[0][1]["metrics"]["objects"]
    for c, d, _, _ in runs:
        for dest in d["destinations"]:
            name_ = f"{dest['name']} (SLIT {dest['distance']:g})"
            lines[c["machine"]][name_][d["metrics"]["state_bytes"]].append(dest["migration_time_ns"] / 1e3)
    with matplotlib.rc_context(_STYLE):
        fig = drawer.new(6.4, 3.4)
        axes = fig.subplots(1, len(lines), sharey=True, squeeze=False)[0]
        for ax, (machine, dests) in zip(axes, lines.items()):
            _mean_lines(ax, dests, marker=".", positive=True)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("object state (bytes)")
            ax.set_title(f"{machine}: from PE 0 to", fontsize=8)
            ax.legend(fontsize=6, loc="upper left")
        axes[0].set_ylabel(f"time to migrate {objects} objects (µs)")
        title = f"{name}: migration time against object size"
        fig.suptitle(title)
        return drawer.save(fig, title)


def _migration_share(drawer: Drawer, name: str, runs: list[tuple[dict[str, Any], dict[str, Any], str, str]]) -> Figure:
    import matplotlib

    lines: dict[str, dict[float, list[float]]] = defaultdict(lambda: defaultdict(list))
    for c, d, _, _ in runs:
        m = d["metrics"]
        calls = max(1, m["lb_calls"])
        lines[c["machine"]][round(m["migrated_pct_per_call"], 3)].append(m["migration_time_ns"] / calls / 1e3)
    with matplotlib.rc_context(_STYLE):
        fig = drawer.new(6.4, 3.6)
        ax = fig.add_subplot()
        _mean_lines(ax, lines)
        ax.set_xlabel("objects migrated per balancing call (%)")
        ax.set_ylabel("migration time per call (µs)")
        ax.legend(fontsize=7)
        title = f"{name}: migration time against % of objects migrated"
        ax.set_title(title)
        return drawer.save(fig, title)
