"""One run specification for every edge: ``RunSpec`` (``run.py``), the config mini-language
(``config.py``) and automatic NUMA balancing settings (``balancing.py``). See docs/architecture.md."""

from numalab.spec.balancing import Balancing
from numalab.spec.run import BoundRun, Placement, RunSpec

__all__ = ["RunSpec", "Placement", "Balancing", "BoundRun"]
