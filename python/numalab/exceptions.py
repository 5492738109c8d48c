"""The numalab exception tree.

``NumalabError`` is the base; ``TopologyError`` (a machine description is wrong),
``PolicyError`` (a placement is wrong), ``SpecError`` (a run specification breaks a rule),
``SimulationError`` and ``HostError`` come from the Rust
core; ``UsageError`` is raised by the Python layer for bad input it checks itself (files, names).
The CLI prints any of them as ``numalab: <message>`` and exits 2 for usage errors, 1 otherwise.
"""

from numalab._core import HostError, NumalabError, PolicyError, SimulationError, SpecError, TopologyError


class UsageError(NumalabError):
    """Bad input from the user: unknown name, malformed file, bad option value (exit code 2)."""


#: Errors that mean "you asked for something wrong" rather than "it failed" (exit code 2).
USAGE_ERRORS = (UsageError, TopologyError, PolicyError, SpecError)

__all__ = [
    "NumalabError",
    "TopologyError",
    "PolicyError",
    "SimulationError",
    "SpecError",
    "HostError",
    "UsageError",
    "USAGE_ERRORS",
]
