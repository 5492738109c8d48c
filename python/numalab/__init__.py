"""numalab: where should the memory and the threads go, and what does each choice cost?

Public API:
- :func:`numalab.simulate` -- simulate a workload on a machine under a placement -> :class:`Result`
  (numactl's options as keywords: ``interleave="all"``, ``membind=0``, ``cpunodebind=0``, ...)
- :func:`numalab.compare` -- several configs against the first -> pandas DataFrame, one row per config
- :func:`numalab.run_study` -- run a study file into a results store -> pandas DataFrame, one row
  per run (``run_study``, not ``study``: ``numalab.study`` is the package of study files)
- :mod:`numalab.machine` -- machines: presets, the host, hwloc XML (``load``, ``list_presets``)
- :class:`numalab.RunSpec` -- one run (machine, workload, placement, balancing, seed), as every edge writes it
- :class:`numalab.Placement` -- numactl-style placement
"""

from numalab._core import __version__
from numalab.exceptions import NumalabError
from numalab.spec import Placement, RunSpec
from numalab.results.result import Result
from numalab.api import compare, run_study, simulate

__all__ = ["__version__", "NumalabError", "Placement", "Result", "RunSpec", "compare", "run_study", "simulate"]
