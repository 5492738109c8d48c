"""``RunSpec``: one run, as every edge (CLI, study file, Python API) describes it.

A run is a machine, a workload with its parameters, a placement in numactl's words, automatic
NUMA balancing, the kernel profile, THP, the seed and the sample rate. The edges only *write*
a RunSpec (from options, a config string or a study point); ``bind()`` resolves the machine and
the workload descriptor and hands everything to the engine as one typed object
(``_core.RunSpec``), which checks every rule once. ``canonical()`` is the sorted form a study
hashes and stores; ``from_canonical()`` reads it back.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

from numalab._core import KERNEL_PROFILES, KERNEL_THP_DEFAULTS, Machine
from numalab._core import RunSpec as EngineRun
from numalab.exceptions import UsageError
from numalab.spec import config as cfg
from numalab.spec.balancing import KNOBS, SWITCHES, Balancing, knob_value, on_off

KERNELS = tuple(KERNEL_PROFILES)  # the engine's profiles (numalab_sim::Kernel::ALL)
PROC_BIND = ("false", "true", "close", "spread", "primary", "master")
PLACES = ("threads", "cores", "sockets")
THP = ("always", "madvise", "never")
# /sys/kernel/mm/transparent_hugepage/enabled as each profile's distribution kernels shipped it
# (docs/allocation.md §3.2): a rule of the engine's profile (numalab_sim::profile, thp.enabled_default).
THP_DEFAULT = dict(KERNEL_THP_DEFAULTS)
#: The smallest extent a 2 MiB THP fault can fill (HPAGE_PMD_SIZE on x86-64).
THP_BYTES = 2 << 20
MAX_SEED = 2**64 - 1  # the engine's seed is a u64
#: NAS Parallel Benchmarks OpenMP implementations the library describes (docs/workloads.md §4.1):
#: NAS's Fortran releases, RWCP's NPB2.3-omp-C (Omni project) and SNU's NPB3.3-OMP-C.
NPB_IMPLEMENTATIONS = ("3.4.2", "3.3.1", "rwcp-2.3-c", "snu-3.3-c")
NPB_VERSIONS = NPB_IMPLEMENTATIONS  # the name before the C implementations
NPB_DEFAULT = "3.4.2"


def npb_implementation(value: object) -> str:
    """``value`` as one of NPB_IMPLEMENTATIONS, or the one-line usage error naming them."""
    v = str(value).strip()
    if v not in NPB_IMPLEMENTATIONS:
        raise UsageError(f"--npb: '{value}' is not one of {', '.join(NPB_IMPLEMENTATIONS)}")
    return v


@dataclass(frozen=True)
class Placement:
    """numactl's placement options and OpenMP's binding, as the user wrote them."""

    policy: str = "default"  # numactl's names: default, local, bind, preferred, preferred-many, interleave, weighted-interleave
    nodes: str | None = None  # a numactl node string; parsed against the machine by the engine
    weights: tuple[tuple[int, int], ...] = ()
    # numactl -b with --membind (MPOL_F_NUMA_BALANCING): NUMA balancing may move pages among the bound nodes
    membind_balancing: bool = False
    cpunodebind: str | None = None
    physcpubind: str | None = None
    omp_proc_bind: str = "false"
    omp_places: str = "cores"

    def items(self) -> list[str]:
        """Config items in a fixed order and numactl's spelling (empty for the default)."""
        out = []
        if self.policy != "default":
            option = {v: k for k, v in cfg.POLICY_ITEMS.items()}.get(self.policy)
            out.append(f"{option}={self.nodes}" if option else {"local": "localalloc"}.get(self.policy, self.policy))
        if self.membind_balancing:
            out.append("membind-balancing")
        if self.weights:
            out.append("weights=" + ",".join(f"{n}={w}" for n, w in self.weights))
        if self.cpunodebind:
            out.append(f"cpunodebind={self.cpunodebind}")
        if self.physcpubind:
            out.append(f"physcpubind={self.physcpubind}")
        if self.omp_proc_bind != "false":
            out.append(f"omp-proc-bind={self.omp_proc_bind}")
            out.append(f"omp-places={self.omp_places}")
        return out

    def label(self) -> str:
        return ":".join(self.items()) or "default"

    def engine(self) -> dict[str, Any]:
        return {
            # latency-balanced: the default policy, which the engine's policy replaces (latbal.rs)
            "policy": {"mode": "default" if self.policy == "latency-balanced" else self.policy, "nodes": self.nodes, "weights": dict(self.weights), "numa_balancing": self.membind_balancing},
            "cpunodebind": self.cpunodebind,
            "physcpubind": self.physcpubind,
            "proc_bind": self.omp_proc_bind,
            "places": self.omp_places,
        }


def proc_bind_value(value: str) -> str:
    v = value.strip().lower()
    if v not in PROC_BIND:
        raise UsageError(f"--omp-proc-bind: '{value}' is not one of {', '.join(PROC_BIND)}")
    return {"master": "primary", "true": "spread"}.get(v, v)  # OpenMP 5.1 renamed master to primary


def places_value(value: str) -> str:
    v = value.strip().lower()
    if v not in PLACES:
        raise UsageError(f"--omp-places: '{value}' is not one of {', '.join(PLACES)}")
    return v


#: The latency-balanced policy's settings and defaults: 10 ns threshold, 10 ms window, a sample
#: every 500 µs (S4 sampled every 0.5 ms; the threshold and window are estimates, docs/allocation.md §12).
LATBAL_KEYS = ("latbal_threshold_ns", "latbal_window_ms", "latbal_sample_us")
LATBAL_DEFAULT = (10.0, 10.0, 500.0)


def latbal_value(key: str, value: Any) -> float:
    option = "--" + key.replace("_", "-")
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise UsageError(f"{option}: '{value}' is not a number") from None
    if not (v == v and v not in (float("inf"), float("-inf"))) or v < 0 or (v == 0 and key != "latbal_threshold_ns"):
        raise UsageError(f"{option} must be {'>= 0' if key == 'latbal_threshold_ns' else '> 0'}, got {value}")
    return v


#: OMP_WAIT_POLICY values (libgomp env.c: parse_wait_policy); "default" = the variable unset.
WAIT_POLICIES = ("default", "active", "passive")


@dataclass(frozen=True)
class RunSpec:
    machine: str
    workload: str
    params: tuple[tuple[str, Any], ...] = ()
    placement: Placement = field(default_factory=Placement)
    balancing: Balancing = field(default_factory=Balancing)
    kernel: str = "6.13"
    thp: str | None = None  # always | madvise | never; None: the kernel profile's (THP_DEFAULT)
    seed: int = 1
    sample_rate: float = 1.0
    # Seeded background activity (docs/scheduler.md §6): on by default, as on a real machine;
    # off gives the idealized, quiet machine (same time whatever the seed).
    noise: bool = True
    # OMP_WAIT_POLICY (docs/scheduler.md §5): default (unset: spin ~3 ms, then sleep), active, passive.
    omp_wait_policy: str = "default"
    # NPB implementation of the library's NPB descriptors (--npb); other workloads have one and ignore it.
    npb_version: str = NPB_DEFAULT
    # Keep the scheduler's decisions for --explain-sched (output only, not part of the run).
    explain_sched: bool = field(default=False, compare=False)
    # A co-run (spec/corun.py): process groups run together; empty: one run of ``workload``.
    corun: tuple[Any, ...] = ()
    # Bind each co-run process to its own cores, spread over the nodes in turn (the hand-tuned
    # placement of study S4 with localalloc; spec/corun_bind.py).
    pin_copies: bool = False
    # The latency-balanced policy's threshold (ns), window (ms) and sampling period (µs); read
    # only with policy latency-balanced (docs/allocation.md §12).
    latbal: tuple[float, float, float] = LATBAL_DEFAULT

    # --- writing one ---------------------------------------------------------------------------

    @classmethod
    def create(cls, machine: str, workload: str, **fields: Any) -> "RunSpec":
        """A RunSpec from keyword values as the CLI and the API give them, checked for form."""
        from numalab.spec import corun

        if corun.is_corun(str(workload)):  # "stream*8", "stream*2,milc*2": a co-run written as the workload
            fields = {"corun": str(workload), **fields}
            workload = corun.WORKLOAD
        return cls(str(machine), str(workload)).updated(**fields)

    def updated(self, **changes: Any) -> "RunSpec":
        """Replace fields, checking the form of each value (what the engine cannot check)."""
        s = self
        for key, value in changes.items():
            if key == "params":
                s = replace(s, params=tuple(sorted({**dict(s.params), **value}.items())))
            elif key == "placement":
                s = replace(s, placement=value)
            elif key == "balancing":
                s = replace(s, balancing=Balancing.parse(value))
            elif key == "kernel":
                if str(value) not in KERNELS:
                    raise UsageError(f"--kernel: '{value}' is not one of {', '.join(KERNELS)}")
                s = replace(s, kernel=str(value))
            elif key == "thp":
                s = replace(s, thp=_thp(value))
            elif key == "seed":
                s = replace(s, seed=_seed(value))
            elif key == "sample_rate":
                s = replace(s, sample_rate=_sample_rate(value))
            elif key == "noise":
                s = replace(s, noise=on_off(value, "--noise"))
            elif key == "omp_wait_policy":
                v = str(value).strip().lower()
                if v not in WAIT_POLICIES:
                    raise UsageError(f"--omp-wait-policy: '{value}' is not one of {', '.join(WAIT_POLICIES)}")
                s = replace(s, omp_wait_policy=v)
            elif key in ("npb", "npb_version"):  # npb_version: the name before the C implementations
                s = replace(s, npb_version=npb_implementation(value))
            elif key == "explain_sched":
                s = replace(s, explain_sched=bool(value))
            elif key == "corun":
                from numalab.spec import corun

                s = replace(s, corun=corun.from_value(value, "--corun") if value not in (None, (), []) else ())
            elif key == "pin_copies":
                s = replace(s, pin_copies=on_off(value, "--pin-copies"))
            elif key in LATBAL_KEYS:
                values = list(s.latbal)
                values[LATBAL_KEYS.index(key)] = latbal_value(key, value)
                s = replace(s, latbal=(values[0], values[1], values[2]))
            else:
                raise UsageError(f"unknown run setting '{key}'")
        return s

    def with_config(self, text: str) -> "RunSpec":
        """Apply a config string (``interleave=all:init=serial:balancing``) on top of this spec."""
        items = cfg.parse(text)
        where = f"config '{cfg.shown(text)}'"
        p = self.placement
        if items.policy is not None:
            p = replace(p, policy=items.policy[0], nodes=items.policy[1])
        pl = items.placement
        if "weights" in pl:
            p = replace(p, weights=cfg.parse_weights(pl["weights"]))
        if "membind-balancing" in pl:
            p = replace(p, membind_balancing=on_off(pl["membind-balancing"], f"{where}: membind-balancing"))
        if "cpunodebind" in pl or "physcpubind" in pl:
            p = replace(p, cpunodebind=pl.get("cpunodebind"), physcpubind=pl.get("physcpubind"))
        if "omp-proc-bind" in pl:
            p = replace(p, omp_proc_bind=proc_bind_value(pl["omp-proc-bind"]))
        if "omp-places" in pl:
            p = replace(p, omp_places=places_value(pl["omp-places"]))
        s = replace(self, placement=p)
        st = dict(items.settings)
        bal = s.balancing
        if "balancing" in st:
            bal = bal.with_mode(st.pop("balancing"), f"{where}: balancing")
        for item, key in SWITCHES.items():
            if item in st:
                on = on_off(st.pop(item), f"{where}: {item}")
                bal = replace(bal, demotion=on) if key == "demotion_enabled" else replace(bal, wi_auto=on)
        knobs = {k.replace("-", "_"): st.pop(k) for k in list(st) if k.replace("-", "_") in KNOBS}
        if knobs:
            bal = bal.with_knobs(**knobs)
        s = replace(s, balancing=bal)
        try:
            s = s.updated(**{k.replace("-", "_"): v for k, v in st.items()})
        except UsageError as e:
            raise UsageError(f"{where}: {e}") from None
        if items.params:
            s = s.updated(params=items.params)
        return s

    # --- the canonical form (studies hash and store it) ------------------------------------------

    def canonical(self) -> dict[str, Any]:
        return {
            "machine": self.machine,
            "workload": self.workload,
            "params": dict(self.params),
            "placement": self.placement.label(),
            "balancing": self.balancing.canonical(),
            "kernel": self.kernel,
            "thp": self.thp,
            "sample_rate": self.sample_rate,
            "seed": self.seed,
            "noise": self.noise,
            "omp_wait_policy": self.omp_wait_policy,
            # only when not the default, so configurations stored before versions existed keep their hash
            **({"npb_version": self.npb_version} if self.npb_version != NPB_DEFAULT else {}),
            # only for co-runs, so single runs keep their hash
            **({"corun": self.corun_text()} if self.corun else {}),
            **({"pin_copies": True} if self.pin_copies else {}),
            # only for the latency-balanced policy, so other runs keep their hash
            **({"latbal": list(self.latbal)} if self.placement.policy == "latency-balanced" else {}),
        }

    def latbal_engine(self) -> dict[str, float] | None:
        """The engine's ``latency_balanced`` setting: None unless the policy is chosen."""
        if self.placement.policy != "latency-balanced":
            return None
        return dict(zip(("threshold_ns", "window_ms", "sample_us"), self.latbal))

    def corun_text(self) -> str:
        from numalab.spec import corun

        return corun.text(self.corun)

    @classmethod
    def from_canonical(cls, c: dict[str, Any]) -> "RunSpec":
        s = cls(c["machine"], c["workload"]).with_config(c["placement"])
        return s.updated(params=c["params"], balancing=c["balancing"], kernel=c["kernel"], thp=c["thp"],
                         seed=c["seed"], sample_rate=c["sample_rate"],
                         # stored before background activity existed: a quiet machine
                         noise=c.get("noise", False), omp_wait_policy=c.get("omp_wait_policy", "default"),
                         npb_version=c.get("npb_version", NPB_DEFAULT),
                         corun=c.get("corun") or (), pin_copies=c.get("pin_copies", False),
                         **dict(zip(LATBAL_KEYS, c.get("latbal", LATBAL_DEFAULT))))

    def label(self) -> str:
        """The run's options as one config string (placement, then balancing)."""
        return ":".join(self.placement.items() + self.balancing.items()) or "default"

    # --- handing it to the engine --------------------------------------------------------------

    def bind(self, machine: Machine | None = None, adjust_workload: Any = None) -> "BoundRun":
        """Resolve machine and workload and let the engine check every rule. ``adjust_workload``
        may change the resolved workload first (``numalab sensitivity`` varies its estimates)."""
        m = machine if machine is not None else load_machine(self.machine)
        if self.corun:
            from numalab.spec.corun_bind import bind_corun

            return bind_corun(self, m)  # type: ignore[return-value]
        return self.bind_inputs(*self.engine_inputs(m, adjust_workload))

    def bind_inputs(self, m: Machine, w: dict[str, Any], placement: dict[str, Any],
                    region_policies: list[dict[str, Any] | None], config: dict[str, Any]) -> "BoundRun":
        """The run of ``engine_inputs``' values, checked by the engine."""
        return BoundRun(self, m, w, EngineRun(m, w, placement, region_policies, config))

    def engine_inputs(self, m: Machine, adjust_workload: Any = None) -> tuple[
            Machine, dict[str, Any], dict[str, Any], list[dict[str, Any] | None], dict[str, Any]]:
        """Everything the engine is given for one workload (machine, resolved workload, placement,
        region policies, settings): two runs with equal inputs give equal results, bit for bit."""
        from numalab.spec import workload_cache

        w = workload_cache.resolve(self.workload, dict(self.params), self.npb_version)
        if adjust_workload is not None:
            adjust_workload(w)
        region_policies = [_region_policy(r) for r in w["regions"]]
        # MADV_HUGEPAGE marks (the descriptor's thp): such faults may reclaim and go remote (khugepaged.rs)
        madvised = [bool(r["thp"]) for r in w["regions"]]
        for r in w["regions"]:
            r["policy"] = None
            r["thp"] = thp_pages(self.thp or THP_DEFAULT.get(self.kernel, "madvise"), r)
        config = {"seed": self.seed, "sample_rate": self.sample_rate, "kernel": self.kernel, "balancing": self.balancing.engine(),
                  "noise": self.noise, "explain_sched": self.explain_sched, "thp_madvised": madvised,
                  "omp_wait_policy": "unset" if self.omp_wait_policy == "default" else self.omp_wait_policy,
                  **({"latency_balanced": self.latbal_engine()} if self.latbal_engine() else {})}
        return m, w, self.placement.engine(), region_policies, config


def _region_policy(region: dict[str, Any]) -> dict[str, Any] | None:
    """Per-region policies (``policy = "interleave=all"`` in a descriptor) use the same language,
    restricted to a memory policy, as ``mbind`` sets one."""
    text = region.get("policy")
    if not text:
        return None
    items = cfg.parse(text)
    flags = {k: v for k, v in items.placement.items() if k in cfg.FLAG_PLACEMENTS}
    if items.params or len(items.placement) > len(flags) or items.settings or items.policy is None:
        raise UsageError(f"region '{region['name']}': policy '{text}' must be a memory policy only (e.g. interleave=all, membind=0-1:membind-balancing)")
    mode, nodes = items.policy
    balancing = on_off(flags.get("membind-balancing", "off"), f"region '{region['name']}': membind-balancing")
    return {"mode": mode, "nodes": nodes, "weights": {}, "numa_balancing": balancing}


@dataclass(frozen=True)
class BoundRun:
    """A RunSpec the engine accepted, with the machine and the resolved workload."""

    spec: RunSpec
    machine: Machine
    workload: dict[str, Any]
    engine: EngineRun


@lru_cache(maxsize=32)
def load_machine(name: str) -> Machine:
    from numalab import machine

    return machine.load(name)


def _thp(value: Any) -> str | None:
    """always, madvise or never (true/on and false/off, as stored before madvise existed, are
    always and never)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "always" if value else "never"
    v = str(value).strip().lower()
    v = {"on": "always", "true": "always", "off": "never", "false": "never"}.get(v, v)
    if v not in THP:
        raise UsageError(f"--thp: '{value}' is not one of {', '.join(THP)}")
    return v


def thp_pages(mode: str, region: dict[str, Any]) -> bool:
    """Whether a region's first touches fault 2 MiB pages (mm/huge_memory.c:
    hugepage_vma_check): under ``always`` every anonymous region that can hold a whole 2 MiB
    extent, under ``madvise`` only those the program marks MADV_HUGEPAGE (the descriptor's
    ``thp``), under ``never`` none."""
    if mode == "always":
        return region["bytes"] >= THP_BYTES
    return mode == "madvise" and bool(region["thp"])


def _seed(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise UsageError(f"--seed: expected a whole number, got {value!r}")
    try:
        seed = int(value)
    except ValueError:
        raise UsageError(f"--seed: '{value}' is not a whole number") from None
    if not 0 <= seed <= MAX_SEED:
        raise UsageError(f"--seed must be 0..{MAX_SEED} (2^64-1), got {seed}")
    return seed


def _sample_rate(value: Any) -> float:
    """A number; its range (0, 1] is the engine's rule."""
    try:
        r = float(value)
    except (TypeError, ValueError):
        raise UsageError(f"--sample-rate: '{value}' is not a number") from None
    if isinstance(value, bool) or not math.isfinite(r):
        raise UsageError(f"--sample-rate: '{value}' is not a number")
    return r


__all__ = ["RunSpec", "Placement", "BoundRun", "KERNELS", "knob_value"]
