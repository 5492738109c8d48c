"""The run specification: what one simulated or measured run asks for, written the same way by
every edge. ``RunSpec`` (``run.py``), the config mini-language (``config.py``) and automatic
NUMA balancing settings (``balancing.py``). See docs/architecture.md.

"spec" means only this here. The other specifications have their own names: a machine
description is a ``MachineSpec`` (``numalab_model::spec``, a preset's TOML), a study file is a
``Study`` (``numalab.study.model``), a task graph is a ``GraphSpec`` and a task load balancer
a ``BalancerSpec`` (``numalab.tasks``); the engine's checked form of a RunSpec is the Rust
``RunSpec`` of ``numalab-sim`` (``crates/numalab-sim/src/spec.rs``), reached through ``BoundRun``.
"""

from numalab.spec.balancing import Balancing
from numalab.spec.run import BoundRun, Placement, RunSpec

__all__ = ["RunSpec", "Placement", "Balancing", "BoundRun"]
