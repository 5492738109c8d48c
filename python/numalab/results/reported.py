"""The time a measured program reports about itself, read from its standard output.

NPB prints the time of its timed section only (``timer_start(T_bench)`` .. ``timer_stop``) as
``Time in seconds =`` in its closing summary (``common/print_results.f90: print_results``, format
``' Time in seconds = ',12x, f12.2`` in NAS's NPB3.4, f12.3 in 3.3.1;
``common/c_print_results.c: c_print_results``, ``" Time in seconds =             %12.2f"``, in
the C versions), which is the figure users and studies compare (docs/workloads.md §1.2). A program that prints no such line reports the whole run.
"""

from __future__ import annotations

import math
import re
from typing import Any

# Fortran may print a D exponent; NPB prints f12.2 / %12.2f, so a plain decimal in practice.
_NPB_TIME = re.compile(r"^\s*Time in seconds\s*=\s*([0-9]+(?:\.[0-9]*)?(?:[eEdD][+-]?[0-9]+)?)\s*$", re.MULTILINE)


def npb_time(output: str) -> float | None:
    """The last ``Time in seconds =`` value of NPB's summary in ``output``, or None."""
    found = _NPB_TIME.findall(output)
    if not found:
        return None
    value = float(found[-1].replace("D", "e").replace("d", "e"))
    return value if math.isfinite(value) else None


def apply(doc: dict[str, Any], output: str) -> None:
    """Set the document's reported time from the program's output when it prints one (NPB);
    otherwise leave the whole run (``agent.document`` sets that)."""
    t = npb_time(output)
    if t is None:
        return
    doc["reported_time_s"] = t
    doc["reported_time_source"] = "program-output"
    procs = doc.get("processes") or []
    if len(procs) == 1:
        procs[0]["reported_time_s"] = t
