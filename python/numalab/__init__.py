"""numalab: where should the memory and the threads go, and what does each choice cost?

Public API:
- :func:`numalab.simulate` -- simulate a workload on a machine under a placement -> :class:`Result`
- :mod:`numalab.machine` -- machines: presets, the host, hwloc XML (``load``, ``list_presets``)
- :class:`numalab.RunSpec` -- one run (machine, workload, placement, balancing, seed), as every edge writes it
- :class:`numalab.Placement` -- numactl-style placement
"""

from numalab._core import __version__
from numalab.exceptions import NumalabError
from numalab.spec import Placement, RunSpec
from numalab.results.result import Result
from numalab.api import simulate

__all__ = ["__version__", "NumalabError", "Placement", "Result", "RunSpec", "simulate"]
