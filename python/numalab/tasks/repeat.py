"""Repetitions of ``numalab lb``: the same balancers on seeds ``seed .. seed + N - 1`` (each seed
draws the random graphs, the load noise and the LB database's measurement noise anew), summarised
per balancer as means with 95% intervals (Student's t, ``report/stats.py``)."""

from __future__ import annotations

from typing import Any

from numalab.report.stats import estimate

#: The metrics summarised, in the order the table shows them.
METRICS = ("iteration_time_ns", "efficiency", "migrations_per_call", "migrated_bytes_per_call", "predicted_makespan_ns",
           "actual_makespan_ns", "comm_remote_pct", "balancer_wall_s")
MAX_REPEAT = 10_000


def seeds(first: int, n: int) -> list[int]:
    """``n`` seeds from ``first``, wrapping below 2^64."""
    return [(first + i) % (1 << 64) for i in range(n)]


def summarise(runs: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Per balancer (the order of the first repetition), each metric's mean, half-width and bounds
    over the repetitions; ``runs[r][b]`` is repetition r's document of balancer b."""
    out = []
    for b, first in enumerate(runs[0]):
        stats = {}
        for key in METRICS:
            e = estimate(float(rep[b]["metrics"][key]) for rep in runs)
            if e is None:
                continue
            stats[key] = {"mean": e.mean, "half_width": e.half_width or 0.0, "low": e.low if e.low is not None else e.mean,
                          "high": e.high if e.high is not None else e.mean}
        out.append({"balancer": first["balancer"]["label"], "n": len(runs), "seeds": [rep[b]["settings"]["seed"] for rep in runs],
                    "metrics": stats})
    return out


def cell(stat: dict[str, float], scale: float, digits: int) -> str:
    """``mean ± half-width`` in the column's unit (the half-width left out when it is 0)."""
    mean = f"{stat['mean'] / scale:.{digits}f}"
    return mean if stat["half_width"] == 0 else f"{mean} ± {stat['half_width'] / scale:.{digits}f}"
