"""Points of a ``[[report.scatter]]`` plot: one per case and configuration (seeds averaged), or
the best configuration per case; ``baseline.<metric>`` reads the metric of the run's baseline
(memory intensity of the application under the default placement, say)."""

from __future__ import annotations

from typing import Any

from numalab.exceptions import UsageError
from numalab.report.data import ReportData
from numalab.results.derived import METRIC_COLUMNS


_NOT_METRICS = ("position", "seed", "wall_s")


def metric_names(frame: Any) -> list[str]:
    """Numeric columns: the derived metrics, speedup, vmstat counters, numeric parameters."""
    import pandas as pd

    return [c for c in frame.columns if c not in _NOT_METRICS and (c in METRIC_COLUMNS or pd.api.types.is_numeric_dtype(frame[c]))]


def points(data: ReportData, spec: Any, index: int) -> list[dict[str, Any]]:
    f = data.frame
    if not len(f):
        return []
    by_hash = f.set_index("hash")
    ok = f[(f["status"] == "ok") & (f["role"] == "run")]
    values = {}
    for axis in ("x", "y"):
        name = getattr(spec, axis)
        column = name.removeprefix("baseline.")
        if column not in metric_names(f):
            accepted = ", ".join(metric_names(f))
            raise UsageError(f"report.scatter[{index}].{axis}: unknown metric '{name}' (expected one of: {accepted}; prefix baseline. for the baseline's)")
        if name.startswith("baseline."):
            values[axis] = [by_hash[column].get(b) if b in by_hash.index else None for b in ok["baseline_hash"]]
        else:
            values[axis] = list(ok[column])
    group_of = {"workload": "workload", "label": "label", "machine": "machine"}[spec.color]
    acc: dict[tuple[str, str], dict[str, Any]] = {}
    for (_, row), x, y in zip(ok.iterrows(), values["x"], values["y"]):
        if x is None or y is None or x != x or y != y:  # missing or NaN
            continue
        key = (row["case"], row["label"])
        a = acc.setdefault(key, {"case": row["case"], "label": row["label"], "machine": row["machine"], "group": str(row[group_of]), "xs": [], "ys": []})
        a["xs"].append(float(x))
        a["ys"].append(float(y))
    out = [dict(a, x=sum(a["xs"]) / len(a["xs"]), y=sum(a["ys"]) / len(a["ys"])) for a in acc.values()]
    if spec.best:
        best: dict[tuple[str, str], dict[str, Any]] = {}
        for p in out:
            k = (p["machine"], p["case"])
            if k not in best or p["y"] > best[k]["y"]:
                best[k] = p
        out = list(best.values())
    return out
