"""``Result``: one run's document (``numalab.result/1``) with pandas views of its parts."""

from __future__ import annotations

import json
from typing import Any

SCHEMA = "numalab.result/1"


class Result:
    """A result document. ``doc`` is the plain JSON-able dict; the methods give tables."""

    def __init__(self, doc: dict[str, Any]):
        self.doc = doc

    @property
    def time_s(self) -> float:
        return float(self.doc["time_s"])

    @property
    def reported_time_s(self) -> float:
        """The time the program reports (its timer, docs/workloads.md §1.2); the whole run for a
        document written before numalab recorded it."""
        return float(self.doc.get("reported_time_s", self.doc["time_s"]))

    @property
    def status(self) -> str:
        return str(self.doc["status"])

    @property
    def metrics(self) -> dict[str, Any]:
        return dict(self.doc["metrics"])

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.doc, indent=indent, sort_keys=True)

    def access_map(self, percent: bool = False):  # -> pandas.DataFrame
        """Rows: CPU node, columns: memory node; DRAM transfers (or % of all with ``percent``)."""
        import pandas as pd

        from numalab.results.metrics import access_map_percent

        am = self.doc["access_map"]
        names = [f"node{n}" for n in am["nodes"]]
        matrix = access_map_percent(am["matrix"]) if percent else am["matrix"]
        df = pd.DataFrame(matrix, index=names, columns=names)
        df.index.name, df.columns.name = "cpu_node", "memory_node"
        return df

    def pages(self):  # -> pandas.Series
        import pandas as pd

        nodes = self.doc["access_map"]["nodes"]
        return pd.Series(self.doc["pages"]["per_node"], index=[f"node{n}" for n in nodes], name="pages")

    def numastat(self):  # -> pandas.DataFrame
        import pandas as pd

        return pd.DataFrame(self.doc["numastat"])

    def threads(self):  # -> pandas.DataFrame
        import pandas as pd

        # cpu_history (a list per thread) stays in the document (docs/scheduler.md §7).
        df = pd.DataFrame([{k: v for k, v in t.items() if k != "cpu_history"} for t in self.doc["threads"]]).set_index("tid")
        first = [c for c in ("pid", "cpu", "node", "time_s", "nr_migrations") if c in df.columns]
        return df[first + [c for c in df.columns if c not in first]]

    def timeline(self):  # -> pandas.DataFrame
        import pandas as pd

        rows = []
        nodes = self.doc["access_map"]["nodes"]
        for p in self.doc["timeline"]:
            row = {"t_s": p["t_s"]}
            for n, v in zip(nodes, p["pages_per_node"]):
                row[f"pages_node{n}"] = v
            rows.append(row)
        return pd.DataFrame(rows)

    def __repr__(self) -> str:
        w = self.doc["workload"]["name"]
        return f"Result({w} on {self.doc['machine']['name']}, {self.doc['placement']['policy']}, time_s={self.time_s:.4g})"
