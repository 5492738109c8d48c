"""Study kinds other than ``placement`` (built into study/): each registers how it expands a
study file, counts the runs it asks for, runs one configuration and draws its report figures.

study/ and report/ find a kind here by the name a study file gives (``kind = "taskgraph"``), so
they never import the package that implements it; ``numalab/kinds.py`` registers every kind
numalab ships and is imported by the CLI (and by any program that expands such a study).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from numalab.exceptions import UsageError

PLACEMENT = "placement"


@dataclass(frozen=True)
class Kind:
    name: str
    expand: Callable[[Any], Any]  # StudyFile -> ResolvedStudy
    planned_runs: Callable[[Any], int]  # Study -> runs it asks for, counted without building them
    # canonical configuration -> an object whose ``.doc`` is the result document. A module-level
    # function: backends send it to worker processes by reference (pickle), which imports its module.
    run: Callable[[dict[str, Any]], Any]
    figures: Callable[[Any, Any], list[Any]] | None = None  # (report Drawer, ReportData) -> figures


_KINDS: dict[str, Kind] = {}


def register(name: str, *, expand: Callable[[Any], Any], planned_runs: Callable[[Any], int], run: Callable[[dict[str, Any]], Any],
             figures: Callable[[Any, Any], list[Any]] | None = None) -> Kind:
    """Register (or replace, when a module is imported again) the kind ``name``."""
    if name == PLACEMENT:
        raise ValueError("the placement kind is built into numalab.study")
    kind = Kind(name, expand, planned_runs, run, figures)
    _KINDS[name] = kind
    return kind


def get(name: str) -> Kind:
    try:
        return _KINDS[name]
    except KeyError:
        known = ", ".join([PLACEMENT, *sorted(_KINDS)])
        raise UsageError(f"study kind '{name}' is not registered (registered: {known}; "
                         "import numalab.kinds to register every kind numalab ships)") from None


def registered() -> list[Kind]:
    """The registered kinds, by name."""
    return [_KINDS[k] for k in sorted(_KINDS)]
