"""Intervals in the report's tables: repetitions that gave one value are said to be identical runs,
never a zero-width interval; the baseline's own speedup (1 for every seed by definition) says it is
the baseline unless its runs were identical too."""

from __future__ import annotations

import pandas as pd

from numalab.report.data import ReportData
from numalab.report.tables import format_estimate, speedup_grid


def _data(rows):
    """Rows of a store: a study compares the reported time unless it says otherwise."""
    frame = pd.DataFrame([{"case": "dgemv", "status": "ok", "hash": f"{label}{seed}", "seed": seed, "label": label,
                           "baseline_hash": f"base{seed}", "speedup": speedup, "time_s": time,
                           "reported_time_s": time}
                          for label, seed, speedup, time in rows])
    frame.loc[frame["label"] == "base", "baseline_hash"] = frame["hash"]
    return ReportData("s", None, frame)


def _cells(data, metric="speedup"):
    g = speedup_grid(data, metric)
    return dict(zip(g.cols, (format_estimate(e) for e in g.cells[0])))


def test_baseline_with_varying_times_is_the_baseline_not_identical_runs():
    cells = _cells(_data([("base", 1, 1.0, 2.0), ("base", 2, 1.0, 2.2), ("fast", 1, 2.0, 1.0), ("fast", 2, 2.2, 1.0)]))
    assert cells["base"] == "1.00 (baseline)"
    assert cells["fast"].startswith("2.10 ± ")


def test_identical_runs_are_said_to_be_identical_everywhere():
    data = _data([("base", 1, 1.0, 2.0), ("base", 2, 1.0, 2.0), ("same", 1, 2.0, 1.0), ("same", 2, 2.0, 1.0)])
    assert _cells(data) == {"base": "1.00 (2 identical runs)", "same": "2.00 (2 identical runs)"}
    assert _cells(data, "time_s") == {"base": "2.00 (2 identical runs)", "same": "1.00 (2 identical runs)"}
    assert "± 0.00" not in " ".join(_cells(data).values())
