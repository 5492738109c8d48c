"""numalab: where should the memory and the threads go, and what does each choice cost?

Public API:
- :func:`numalab.simulate` -- simulate a workload on a machine under a placement -> :class:`Result`
  (numactl's options as keywords: ``interleave="all"``, ``membind=0``, ``cpunodebind=0``, ...)
- :func:`numalab.compare` -- several configs against the first -> pandas DataFrame, one row per config
- ``numalab.study(path, results=...)`` -- run a study file into a results store -> pandas
  DataFrame, one row per run (:func:`numalab.api.study`; ``numalab.study`` is also the package)
- :mod:`numalab.machine` -- machines: presets, the host, hwloc XML (``load``, ``list_presets``)
- :class:`numalab.RunSpec` -- one run (machine, workload, placement, balancing, seed), as every edge writes it
- :class:`numalab.Placement` -- numactl-style placement
"""

import sys as _sys
import types as _types

from numalab._core import __version__
from numalab.exceptions import NumalabError
from numalab.spec import Placement, RunSpec
from numalab.results.result import Result
from numalab import api as _api
from numalab.api import compare, simulate

__all__ = ["__version__", "NumalabError", "Placement", "Result", "RunSpec", "compare", "simulate", "study"]


class _StudyPackage(_types.ModuleType):
    """The ``numalab.study`` package, callable as :func:`numalab.api.study`."""

    def __call__(self, *args, **kwargs):
        return _api.study(*args, **kwargs)


class _Numalab(_types.ModuleType):
    # ``numalab.study`` names both the study package and the API function; the import system
    # binds the package here when it loads it (setattr on its parent), so it is made callable
    # then, and ``numalab.study(path)`` and ``numalab.study.expand`` both work, loaded or not.
    def __setattr__(self, name, value):
        if name == "study" and isinstance(value, _types.ModuleType) and value.__name__ == "numalab.study":
            value.__class__ = _StudyPackage
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Numalab
if "numalab.study" in _sys.modules:  # loaded while this package was starting
    _sys.modules["numalab.study"].__class__ = _StudyPackage


def __getattr__(name):
    if name == "study":  # not loaded yet: importing it binds it (callable) through _Numalab
        import numalab.study  # noqa: F401  (binds the module, read back from sys.modules)

        return _sys.modules["numalab.study"]
    raise AttributeError(f"module 'numalab' has no attribute '{name}'")
