"""Every study kind numalab ships beyond ``placement``, registered in ``numalab.study.kinds``.

The one place allowed to know all kinds: the CLI imports it, and so does any program that
expands, runs or reports such a study through ``numalab.study`` / ``numalab.report``. Worker
processes need not: a kind's ``run`` travels to them by reference.
"""

from __future__ import annotations

from typing import Any

from numalab.study import kinds
from numalab.tasks import study as taskgraph


def _taskgraph_figures(drawer: Any, data: Any) -> list[Any]:
    # Imported when a report is drawn: matplotlib's figure code is not needed to expand or run.
    from numalab.tasks.figures import taskgraph_figures

    return taskgraph_figures(drawer, data)


kinds.register("taskgraph", expand=taskgraph.expand, planned_runs=taskgraph.planned_runs, run=taskgraph.run_config,
               figures=_taskgraph_figures)
