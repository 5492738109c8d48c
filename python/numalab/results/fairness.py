"""Fairness of a co-run (docs/corun.md §4): each process's slowdown against its time alone.

- slowdown ``IS_i = T_shared,i / T_alone,i`` (Ebrahimi et al., "Fairness via Source Throttling",
  ASPLOS 2010, the "individual slowdown");
- ``unfairness = max_i IS_i / min_i IS_i`` (same paper; 1 = every process slowed alike);
- ``weighted_speedup = sum_i T_alone,i / T_shared,i`` (Snavely and Tullsen, ASPLOS 2000);
- ``harmonic_speedup = N / sum_i T_shared,i / T_alone,i`` (Luo, Gummaraju and Franklin,
  ISPASS 2001), which balances throughput and fairness;
- ``max_slowdown = max_i IS_i`` (Kim et al., "Thread Cluster Memory Scheduling", MICRO 2010).

``T`` is a process's whole run (``processes[].time_s``, from its start). Alone times are cached
by the configuration hash of the alone run: in this process and, when given, in the results
store (a ``runs`` row of study ``ALONE_STUDY``), so a later co-run or study reuses them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

#: The store's study name for alone runs (their rows belong to no study's table).
ALONE_STUDY = "_alone"
METRICS = ("unfairness", "weighted_speedup", "harmonic_speedup", "max_slowdown", "mean_process_time_s")


def fairness(shared: list[float], alone: list[float | None]) -> dict[str, Any]:
    """The co-run metrics from each process's shared and alone time (None where unknown)."""
    slow = [s / a if a and s else None for s, a in zip(shared, alone)]
    known = [x for x in slow if x is not None]
    whole = len(known) == len(slow) and bool(known)
    return {
        "slowdown": slow,
        "unfairness": max(known) / min(known) if whole else None,
        "weighted_speedup": sum(1.0 / x for x in known) if whole else None,
        "harmonic_speedup": len(known) / sum(known) if whole else None,
        "max_slowdown": max(known) if whole else None,
        "mean_process_time_s": sum(shared) / len(shared) if shared else None,
    }


def apply(doc: dict[str, Any], alone: list[float | None]) -> None:
    """Write alone times, slowdowns and the co-run metrics into a result document."""
    procs = doc["processes"]
    f = fairness([p["time_s"] for p in procs], alone)
    for p, a, s in zip(procs, alone, f["slowdown"]):
        p["alone_time_s"], p["slowdown"] = a, s
    doc["fairness"] = {k: f[k] for k in METRICS}
    doc.setdefault("metrics", {}).update(doc["fairness"])


@dataclass
class AloneCache:
    """Alone times by configuration hash: this process's memo, and the store's ``runs`` table if
    given (an alone run the memo knows but the store lacks is written to it)."""

    store: Any = None
    memo: dict[str, tuple[float, Any, dict[str, Any]]] | None = None

    def __post_init__(self) -> None:
        if self.memo is None:
            self.memo = _MEMO

    def get(self, hash_: str) -> float | None:
        assert self.memo is not None
        if self.store is not None:
            row = self.store.db.execute("SELECT result FROM runs WHERE hash = ? AND status = 'ok'", (hash_,)).fetchone()
            if row and row[0]:
                return float(json.loads(row[0])["processes"][0]["time_s"])
        if hash_ not in self.memo:
            return None
        t, run, outcome = self.memo[hash_]
        if self.store is not None:
            self.store.write(ALONE_STUDY, run, outcome)
        return t

    def put(self, run: Any, outcome: dict[str, Any]) -> None:
        """``run``: hash, config, config_json; ``outcome``: as the study worker's."""
        assert self.memo is not None
        t = float(json.loads(outcome["result"])["processes"][0]["time_s"])
        self.memo[run.hash] = (t, run, outcome)
        if self.store is not None:
            self.store.write(ALONE_STUDY, run, outcome)


#: Alone times this process has computed or read (a study worker keeps them between runs).
_MEMO: dict[str, tuple[float, Any, dict[str, Any]]] = {}
