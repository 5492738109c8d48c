"""The ``[[experiments]]`` of a task-graph study file (``kind = "taskgraph"``): each crosses its
machines, its ``[sweep]`` axes, its balancers and the study's seeds (docs/taskgraph.md §6)."""

from __future__ import annotations

from typing import Annotated, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt

Scalar = Union[StrictBool, int, float, str]


class Experiment(BaseModel):
    """One task-graph experiment: a graph (or ``migrate``, the migration-cost experiment) on
    some machines under some balancers."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$", description="Names the experiment's rows in tables.")
    machine: Union[str, Annotated[list[str], Field(min_length=1)]] = Field(description="Machine preset(s), or preset .toml / hwloc .xml paths.")
    graph: str = Field(description="lb_test, kneighbor, jacobi2d, a graph file (edge list or Charm++ LB dump), or migrate (time to migrate objects of state_bytes to each distance).")
    params: dict[str, Scalar] = Field(default_factory=dict, description="Graph parameters (n_objects, k, msg_bytes, nx, ny, block, min_us, max_us) and run settings (iterations, lb_period, comm_layer, pes); migrate takes objects and state_bytes.")
    sweep: dict[str, Annotated[list[Scalar], Field(min_length=1)]] = Field(default_factory=dict, description="Axes over params keys (and balancer parameters such as migrate_pct), e.g. pes = [2, 4, 8].")
    balancers: Annotated[list[str], Field(min_length=1)] = Field(default_factory=lambda: ["none"], description="Balancers, each name[:key=value...] as numalab lb --balancers takes them.")
    column: str = Field("balancer", description="What the tables' columns are: balancer, or a sweep key (e.g. comm_layer); the other axes make the rows.")
    seeds: Optional[Annotated[list[Annotated[StrictInt, Field(ge=0, le=(1 << 64) - 1)]], Field(min_length=1)]] = Field(None, description="This experiment's seeds (default: the study's); [1] for a deterministic experiment such as migrate.")
    baseline: Optional[dict[str, Scalar]] = Field(None, description="Keys that turn a run into its baseline for speedups, e.g. { balancer = \"none\" } or { comm_layer = \"net\" }.")
