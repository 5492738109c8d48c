"""numalab: where should the memory and the threads go, and what does each choice cost?

Public API:
- :func:`numalab.machine.load` / :func:`numalab.machine.presets` -- machines (presets, host, hwloc XML)
"""

from numalab._core import __version__
from numalab.exceptions import NumalabError

__all__ = ["__version__", "NumalabError"]
