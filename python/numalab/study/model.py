"""Pydantic models of a study file (TOML). ``numalab schema`` prints their JSON Schema.

A study has three layers, applied in this order to make each run:

1. the **top level** fixes what every run shares (``machine``, ``workload``, ``[params]``,
   ``placement``, ``balancing``, ``kernel``, ``seeds``);
2. ``[[runs]]`` lists explicit points; each entry overrides top-level keys (no entry: one point);
3. ``[sweep]`` gives axes as lists; every point is crossed with their cartesian product.

``seeds`` (or ``repetitions = N`` for seeds 1..N) is crossed last. ``[baseline]`` names the
configuration each run is compared against for speedups: the run with the baseline's keys
replaced (added to the study when it is not already one of its runs).

Units: kernel knobs keep the kernel's names and units (``scan_period_min_ms``, ``scan_size_mb``);
``"2s"`` and ``"1GiB"`` are accepted for them and converted once here.
"""

from __future__ import annotations

from typing import Annotated, Literal, Optional, Union

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, StrictBool, StrictInt, model_validator

from numalab.spec.run import KERNELS, MAX_SEED, NPB_DEFAULT, NPB_VERSIONS, THP
from numalab.study.balancing import Balancing, parse_balancing

Kernel = Literal[KERNELS]  # type: ignore[valid-type]
Thp = Literal[THP]  # type: ignore[valid-type]
NpbVersion = Literal[NPB_VERSIONS]  # type: ignore[valid-type]
# StrictBool first so that TOML true stays a bool rather than becoming 1.
Scalar = Union[StrictBool, int, float, str]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RunPatch(_Strict):
    """One explicit run (``[[runs]]``) or the baseline: the keys it sets replace the top level's."""

    label: Optional[str] = Field(None, description="Column name in tables; a labelled run is one configuration, whatever keys it sets.")
    machine: Optional[str] = Field(None, description="Machine preset name, or a preset .toml / hwloc .xml path.")
    workload: Optional[str] = Field(None, description="Workload name (numalab workloads), a descriptor .toml path, or a co-run such as stream*8 or stream*2+milc*2 (docs/corun.md).")
    params: dict[str, Scalar] = Field(default_factory=dict, description="Workload parameters, merged over the top-level [params].")
    placement: Optional[str] = Field(None, description="Config string as numalab compare takes it: default, interleave=all, membind=0:cpunodebind=0, init=serial.")
    balancing: Optional[Balancing] = None
    kernel: Optional[Kernel] = Field(None, description="Kernel rules the simulator follows.")
    thp: Optional[Thp] = Field(None, description="Transparent huge pages: always, madvise or never (default: the kernel profile's).")


class Sweep(_Strict):
    """Axes of a cartesian product: each key is a list of values."""

    machine: Optional[list[str]] = Field(None, min_length=1)
    workload: Optional[list[str]] = Field(None, min_length=1, description="Workloads or co-runs (stream*8, stream*2+milc*2), each a row of the tables.")
    params: dict[str, Annotated[list[Scalar], Field(min_length=1)]] = Field(default_factory=dict, description="Workload parameter axes, e.g. n = [10000, 20000].")
    placement: Optional[list[str]] = Field(None, min_length=1, description="Config strings.")
    balancing: Optional[list[Balancing]] = Field(None, min_length=1)
    kernel: Optional[list[Kernel]] = Field(None, min_length=1)
    thp: Optional[list[Thp]] = Field(None, min_length=1)


class Scatter(_Strict):
    """A scatter plot of one metric against another, one point per run (or per workload)."""

    x: str = Field(description="Metric column (time_s, reported_time_s, local_pct, remote_pct, max_concentration_pct, dram_gbps, speedup, vmstat_*); prefix baseline. to take it from the run's baseline, e.g. baseline.dram_gbps.")
    y: str = Field("speedup", description="Metric column, as x.")
    title: Optional[str] = None
    color: Literal["workload", "label", "machine"] = Field("label", description="What the colours distinguish.")
    best: bool = Field(False, description="Keep only the run with the largest y per machine and workload (the best configuration per application).")
    log_x: bool = False


class Report(_Strict):
    """What the report shows beyond the default tables and maps."""

    title: Optional[str] = None
    scatter: list[Scatter] = Field(default_factory=list)
    access_map_groups: Literal["node", "package"] = Field("node", description="Show access maps per NUMA node, or summed per package as some papers do.")


class Experiment(_Strict):
    """One ``[[experiments]]`` entry of a task-graph study (``kind = "taskgraph"``): a graph (or
    ``migrate``, the migration-cost experiment) on some machines under some balancers; it crosses
    its machines, its ``[sweep]`` axes, its balancers and the seeds (docs/taskgraph.md §6)."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$", description="Names the experiment's rows in tables.")
    machine: Union[str, Annotated[list[str], Field(min_length=1)]] = Field(description="Machine preset(s), or preset .toml / hwloc .xml paths.")
    graph: str = Field(description="lb_test, kneighbor, jacobi2d, a graph file (edge list or Charm++ LB dump), or migrate (time to migrate objects of state_bytes to each distance).")
    params: dict[str, Scalar] = Field(default_factory=dict, description="Graph parameters (n_objects, k, msg_bytes, nx, ny, block, min_us, max_us) and run settings (iterations, lb_period, comm_layer, pes); migrate takes objects and state_bytes.")
    sweep: dict[str, Annotated[list[Scalar], Field(min_length=1)]] = Field(default_factory=dict, description="Axes over params keys (and balancer parameters such as migrate_pct), e.g. pes = [2, 4, 8].")
    balancers: Annotated[list[str], Field(min_length=1)] = Field(default_factory=lambda: ["none"], description="Balancers, each name[:key=value...] as numalab lb --balancers takes them.")
    column: str = Field("balancer", description="What the tables' columns are: balancer, or a sweep key (e.g. comm_layer); the other axes make the rows.")
    seeds: Optional[Annotated[list[Annotated[StrictInt, Field(ge=0, le=MAX_SEED)]], Field(min_length=1)]] = Field(None, description="This experiment's seeds (default: the study's); [1] for a deterministic experiment such as migrate.")
    baseline: Optional[dict[str, Scalar]] = Field(None, description="Keys that turn a run into its baseline for speedups, e.g. { balancer = \"none\" } or { comm_layer = \"net\" }.")


class Study(_Strict):
    """A study file: what to run, and what to compare it against."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$", description="Study name; the store groups runs by it.")
    kind: Literal["placement", "taskgraph"] = Field("placement", description="placement: workloads under memory policies (the keys below); taskgraph: task graphs under load balancers, in [[experiments]] (docs/taskgraph.md).")
    description: str = ""
    design: str = Field("", description="The published design this study follows (design only, never its results).")
    machine: Optional[str] = Field(None, description="Machine preset name, or a preset .toml / hwloc .xml path.")
    workload: Optional[str] = Field(None, description="Workload name (numalab workloads), a descriptor .toml path, or a co-run such as stream*8 or stream*2+milc*2 (docs/corun.md).")
    params: dict[str, Scalar] = Field(default_factory=dict, description="Workload parameters shared by every run.")
    placement: str = Field("default", description="Config string as numalab compare takes it.")
    balancing: Balancing = Field(default_factory=lambda: parse_balancing(False))
    kernel: Kernel = "6.13"
    thp: Optional[Thp] = None
    npb: NpbVersion = Field(
        NPB_DEFAULT, validation_alias=AliasChoices("npb", "npb_version"),
        description="NAS Parallel Benchmarks implementation the library's NPB workloads follow: 3.4.2, 3.3.1, rwcp-2.3-c or snu-3.3-c (npb_version is the old name; docs/workloads.md §4.1).",
    )
    compare_npb: list[NpbVersion] = Field(
        default_factory=list,
        description="Other NPB implementations run beside npb, every run once per implementation; each is a row of its own in the report (docs/studies.md §6.1).",
    )
    compare_time: Literal["reported_time_s", "time_s"] = Field(
        "reported_time_s",
        description="The time speedups compare: reported_time_s, the time the program reports (NPB's \"Time in seconds\": its timed "
        "section only; the whole run for a program without a timer), or time_s, the whole run (docs/studies.md §4).",
    )
    sample_rate: float = Field(1.0, gt=0, le=1, description="Fraction of page visits simulated.")
    seeds: Optional[list[Annotated[StrictInt, Field(ge=0, le=MAX_SEED)]]] = Field(None, min_length=1, description="Seeds, 0..2^64-1; each is one repetition (default [1]).")
    repetitions: Optional[StrictInt] = Field(None, ge=1, description="Shorthand for seeds 1..N.")
    baseline: Optional[RunPatch] = Field(None, description="Keys that turn a run into its baseline for speedups, e.g. { placement = \"default\", balancing = false }.")
    sweep: Sweep = Field(default_factory=Sweep)
    runs: list[RunPatch] = Field(default_factory=list)
    report: Report = Field(default_factory=Report)
    mapping_metrics: StrictBool = Field(False, description="Also analyse each run's data mapping as numalab sim --mapping-metrics does (docs/mapping.md), "
                                        "without each mapping's simulated time: page exclusivity at 4 KiB, 2 MiB and 1 GiB and numalize's scores "
                                        "of first touch become store columns, and the report shows them per case (docs/studies.md §6.5).")
    sensitivity: bool = Field(False, description="After the sweep, vary every estimated machine and workload number within its stated range ([estimates], numalab sensitivity) for each run against its baseline (first seed); the report marks conclusions that flip.")

    experiments: list[Experiment] = Field(default_factory=list, description="Task-graph experiments (kind = \"taskgraph\" only).")

    @model_validator(mode="after")
    def _seeds(self) -> "Study":
        if self.seeds is not None and self.repetitions is not None:
            raise ValueError("give seeds or repetitions, not both")
        if (self.kind == "taskgraph") != bool(self.experiments):
            raise ValueError("[[experiments]] belong to task-graph studies: give both kind = \"taskgraph\" and [[experiments]], or neither")
        stray = [k for k in ("machine", "workload", "params", "placement", "balancing", "kernel", "thp", "baseline", "sweep", "runs", "mapping_metrics")
                 if self.kind == "taskgraph" and k in self.model_fields_set]
        if stray:
            raise ValueError(f"a task-graph study describes its runs in [[experiments]]; {', '.join(stray)} belong to placement studies")
        return self

    def seed_list(self) -> list[int]:
        if self.seeds is not None:
            return list(dict.fromkeys(self.seeds))
        return list(range(1, (self.repetitions or 1) + 1))


def json_schema() -> dict:
    schema = Study.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "numalab study file"
    return schema
