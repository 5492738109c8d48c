"""Options shared by the commands that place a workload (``sim``, ``compare``): numactl's
placement options with numactl's letters, engine settings, and free-form workload parameters
(``--class C``). ``run_spec()`` turns them into one ``RunSpec``."""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Optional

import typer

from numalab.exceptions import UsageError
from numalab.spec import Placement, RunSpec
from numalab.spec.run import places_value, proc_bind_value
from numalab.spec.balancing import KNOBS, Balancing, on_off
from numalab.spec.config import parse_weights, split_configs

# numactl's letters (numactl(8)): -i -w -m -b -p -P -l -N -C; no other option takes them.
MACHINE = typer.Option(..., "--machine", help="Machine preset (numalab topo --list), preset .toml, hwloc .xml, or an hwloc synthetic description 'synthetic:pack:2 numa:2 core:8 pu:2'.")
WORKLOAD = typer.Option(..., "--workload", help="Workload name (numalab workloads) or a descriptor .toml file.")
INTERLEAVE = typer.Option(None, "--interleave", "-i", help="Interleave memory over NODES (numactl -i).")
WEIGHTED = typer.Option(None, "--weighted-interleave", "-w", help="Weighted interleave over NODES (numactl -w).")
WEIGHTS = typer.Option(None, "--weights", help="Weighted-interleave weights NODE=WEIGHT, e.g. 0=5,1=2, as config strings write them (0:5,1:2 is accepted too; default 1 each).")
MEMBIND = typer.Option(None, "--membind", "-m", help="Allocate only on NODES (numactl -m).")
# numactl spells it -b/--balancing; here --balancing is kernel.numa_balancing, so the long name says which.
MEMBIND_BALANCING = typer.Option(False, "--membind-balancing", "-b", help="With --membind: let automatic NUMA balancing migrate pages among the bound nodes (numactl -b, MPOL_F_NUMA_BALANCING, Linux 5.12+; not with --kernel 3.13). It acts only with --balancing on.")
PREFERRED = typer.Option(None, "--preferred", "-p", help="Prefer NODE, fall back by distance (numactl -p).")
PREFERRED_MANY = typer.Option(None, "--preferred-many", "-P", help="Prefer NODES, fall back elsewhere (numactl -P).")
LOCALALLOC = typer.Option(False, "--localalloc", "-l", help="Always allocate on the local node (numactl -l).")
POLICY = typer.Option(None, "--policy", help="latency-balanced: a process without an explicit policy allocates on its node while the nodes' memory latencies are balanced, else on the lowest-latency node, and stays there until that node runs low (study S4; docs/allocation.md §12). numactl's policies have their own options.")
LATBAL_THRESHOLD = typer.Option("10", "--latbal-threshold-ns", help="latency-balanced: balanced while the nodes' latency indicators differ by less than this (ns).")
LATBAL_WINDOW = typer.Option("10", "--latbal-window-ms", help="latency-balanced: the sliding window the indicator is averaged over (ms).")
LATBAL_SAMPLE = typer.Option("500", "--latbal-sample-us", help="latency-balanced: the indicator's sampling period (µs; S4: 500).")
CPUNODEBIND = typer.Option(None, "--cpunodebind", "-N", help="Run only on the CPUs of NODES (numactl -N).")
PHYSCPUBIND = typer.Option(None, "--physcpubind", "-C", help="Run only on CPUS (numactl -C).")
PROC_BIND = typer.Option("false", "--omp-proc-bind", help="OMP_PROC_BIND: false (unbound, the default), close, spread, primary.")
PLACES = typer.Option("cores", "--omp-places", help="OMP_PLACES: threads, cores, sockets.")
SEED = typer.Option("1", "--seed", help="Random seed, 0..2^64-1 (the engine's u64; same inputs and seed: same output, bit for bit).")
SAMPLE_RATE = typer.Option("1", "--sample-rate", help="Fraction of page visits simulated (0 < r <= 1).")
KERNEL = typer.Option("6.13", "--kernel", help="Kernel rules to follow: 2.6.32, 3.13, 6.1 or 6.13.")
THP = typer.Option(None, "--thp", help="Transparent huge pages: always, madvise (only regions the program marks MADV_HUGEPAGE) or never (default: what the --kernel profile's distributions shipped: always for 2.6.32 (RHEL 6), 3.13 and 6.1 (Debian 12), madvise for 6.13).")
EXPLAIN_ALLOC = typer.Option(False, "--explain-alloc", help="Say which thread first touched each region's pages and why: the C library's writes at allocation (chunk headers, calloc's clearing) or the program's first write.")
EXPLAIN_THP = typer.Option(False, "--explain-thp", help="Say where transparent huge pages changed placement: 2 MiB pages shared by two threads' blocks, fallbacks to 4 KiB pages, khugepaged collapses.")
NPB_VERSION = typer.Option("3.4.2", "--npb", "--npb-version", metavar="IMPL", help="NAS Parallel Benchmarks implementation the NPB workloads follow: 3.4.2 or 3.3.1 (NAS's Fortran), rwcp-2.3-c (RWCP's NPB2.3-omp-C) or snu-3.3-c (SNU's NPB3.3-OMP-C); --npb-version is the old spelling (docs/workloads.md §4.1, §4.1.1).")
JSON = typer.Option(False, "--json", help="Print the result document(s) as JSON.")
VERBOSE = typer.Option(False, "--verbose", "-v", help="Also show the parameters derived from the ones given (class tables, defaults).")
NUMA_BALANCING = typer.Option("off", "--balancing", help="Automatic NUMA balancing (kernel.numa_balancing): on or off, or 0-3 (2 = memory tiering: promotion of hot slow-tier pages, 3 = both; default off, as in numactl runs).")
# "balancing" alone is the kernel's automatic NUMA balancing here; the scheduler's is "the load
# balancer (CFS)" and numalab lb's are "task load balancers".
EXPLAIN_NUMA_BALANCING = typer.Option(False, "--explain-balancing", help="Print a summary of every automatic NUMA balancing scan pass.")
EXPLAIN_SCHED = typer.Option(False, "--explain-sched", help="Print the scheduler's decisions: which path (exec/fork placement, the load balancer (CFS): idle, busy, newidle and active balancing) placed or moved each thread, and why.")
WAIT_POLICY = typer.Option("default", "--omp-wait-policy", help="OMP_WAIT_POLICY: default (unset: spin about 3 ms, then sleep), active (spin), passive (sleep at once).")
NOISE = typer.Option("on", "--noise", help="Background activity (timer ticks, kernel threads, daemons), seeded: on (default) or off (an idealized, quiet machine).")


def _knob_option(name: str) -> Any:
    k = KNOBS[name]
    return typer.Option(None, "--" + name.replace("_", "-"), help=f"numa_balancing {name}: {k['help']} (default {k['default']}).")

POLICY_OPTIONS = {
    "interleave": "interleave",
    "weighted_interleave": "weighted-interleave",
    "membind": "bind",
    "preferred": "preferred",
    "preferred_many": "preferred-many",
}


#: The placement parameters every placing command takes, declared once (``with_placement``).
PLACEMENT_PARAMS: dict[str, tuple[Any, Any]] = {
    "interleave": (Optional[str], INTERLEAVE),
    "weighted_interleave": (Optional[str], WEIGHTED),
    "weights": (Optional[str], WEIGHTS),
    "membind": (Optional[str], MEMBIND),
    "membind_balancing": (bool, MEMBIND_BALANCING),
    "preferred": (Optional[str], PREFERRED),
    "preferred_many": (Optional[str], PREFERRED_MANY),
    "localalloc": (bool, LOCALALLOC),
    "policy": (Optional[str], POLICY),
    "cpunodebind": (Optional[str], CPUNODEBIND),
    "physcpubind": (Optional[str], PHYSCPUBIND),
    "omp_proc_bind": (str, PROC_BIND),
    "omp_places": (str, PLACES),
}


def _inject(params: dict[str, tuple[Any, Any]], name: str, build: Callable[..., Any]) -> Callable[..., Any]:
    """A decorator giving a command the options ``params`` (after its own); the command receives
    ``build(**their values)`` as its parameter ``name``."""

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        sig = inspect.signature(command)
        own = [p for p in sig.parameters.values() if p.name != name]
        added = [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=opt, annotation=ann) for n, (ann, opt) in params.items()]

        @functools.wraps(command)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            kwargs[name] = build(**{n: kwargs.pop(n) for n in params})
            return command(*args, **kwargs)

        wrapper.__signature__ = sig.replace(parameters=own + added)  # type: ignore[attr-defined]
        return wrapper

    return decorate


def placement(
    interleave: Optional[str] = None,
    weighted_interleave: Optional[str] = None,
    weights: Optional[str] = None,
    membind: Optional[str] = None,
    membind_balancing: bool = False,
    preferred: Optional[str] = None,
    preferred_many: Optional[str] = None,
    localalloc: bool = False,
    policy: Optional[str] = None,
    cpunodebind: Optional[str] = None,
    physcpubind: Optional[str] = None,
    omp_proc_bind: str = "false",
    omp_places: str = "cores",
) -> Placement:
    """numactl's options -> Placement, with at most one memory policy."""
    given = {k: v for k, v in locals().items() if k in POLICY_OPTIONS and v is not None}
    if localalloc:
        given["localalloc"] = None
    if policy is not None:
        if policy.strip().lower() != "latency-balanced":
            raise UsageError(f"--policy: '{policy}' is not one of latency-balanced (numactl's policies are "
                             "--membind, --interleave, --weighted-interleave, --preferred, --preferred-many, --localalloc)")
        given["policy"] = None
    if len(given) > 1:
        names = ", ".join("--" + k.replace("_", "-") for k in given)
        raise UsageError(f"give at most one memory policy option, got {names}")
    chosen, nodes = next(iter(given.items()), ("default", None))
    named = {"localalloc": "local", "policy": "latency-balanced"}
    return Placement(
        policy=POLICY_OPTIONS.get(chosen, named.get(chosen, chosen)),
        nodes=nodes,
        weights=parse_weights(weights) if weights else (),
        membind_balancing=membind_balancing,
        cpunodebind=cpunodebind,
        physcpubind=physcpubind,
        omp_proc_bind=proc_bind_value(omp_proc_bind),
        omp_places=places_value(omp_places),
    )


def balancing(enabled: str = "off", explain: bool = False, demotion: str = "off", weighted_interleave_auto: bool = False,
              **knobs: Optional[str]) -> Balancing:
    b = Balancing(explain=explain, demotion=on_off(demotion, "--demotion-enabled"), wi_auto=weighted_interleave_auto).with_mode(enabled)
    return b.with_knobs(**knobs)


# The kernel's name (demotion_enabled), as config strings write it; --demotion is the same option.
DEMOTION = typer.Option("off", "--demotion-enabled", "--demotion", help="/sys/kernel/mm/numa/demotion_enabled: on or off; reclaim demotes pages of a full fast node to the next memory tier (docs/tiering.md; default off, as Linux boots). --demotion is the same option.")
WI_AUTO = typer.Option(False, "--weighted-interleave-auto", help="Weighted-interleave default weights from node bandwidth, as Linux 6.16+ sets them (weighted_interleave/auto); --weights still win.")

BALANCING_PARAMS: dict[str, tuple[Any, Any]] = {
    "enabled": (str, NUMA_BALANCING),
    "demotion": (str, DEMOTION),
    "weighted_interleave_auto": (bool, WI_AUTO),
    **{k: (Optional[str], _knob_option(k)) for k in KNOBS},
}

MEMORY_PER_NODE = typer.Option(None, "--memory-per-node-mib", min=1, help="Memory of each node the machine's source gives no size (hwloc XML from CPUID dumps, synthetic descriptions); default: an estimate of 4 GiB per core, with a warning.")


def config_labels(text: str, minimum: int = 1, option: str = "--configs") -> list[str]:
    """A comma-separated config list as a list, refused when it is empty (or, with ``minimum=2``, has
    no config to compare with the first) or names one twice."""
    labels = split_configs(text)
    if len(labels) < minimum:
        need = "a config" if minimum == 1 else "at least two configs (the first is the baseline the others are compared with)"
        raise UsageError(f"{option} needs {need}, e.g. default,interleave=all; got '{text}'")
    for label in labels:
        if labels.count(label) > 1:
            raise UsageError(f"{option} names '{label}' twice")
    return labels


def with_machine_memory(command: Callable[..., Any]) -> Callable[..., Any]:
    """``@with_machine_memory``: the command takes ``--memory-per-node-mib`` and receives it folded
    into its ``machine`` argument (``file.xml?memory-per-node-mib=N``, numalab.machine.load)."""
    from numalab.machine import with_memory_per_node

    sig = inspect.signature(command)
    added = inspect.Parameter("memory_per_node_mib", inspect.Parameter.KEYWORD_ONLY, default=MEMORY_PER_NODE, annotation=Optional[int])

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        kwargs["machine"] = with_memory_per_node(kwargs["machine"], kwargs.pop("memory_per_node_mib"))
        return command(*args, **kwargs)

    wrapper.__signature__ = sig.replace(parameters=[*sig.parameters.values(), added])  # type: ignore[attr-defined]
    return wrapper


#: ``@with_placement``: the command takes numactl's options and receives ``placement: Placement``.
with_placement = _inject(PLACEMENT_PARAMS, "placement", placement)
#: ``@with_balancing``: ``--balancing`` and the scanner knobs, received as ``balancing: Balancing``.
with_balancing = _inject(BALANCING_PARAMS, "balancing", balancing)


def run_spec(
    machine: str,
    workload: str,
    extra: list[str],
    place: Placement,
    seed: str,
    sample_rate: str,
    kernel: str,
    thp: Optional[str],
    bal: Balancing,
) -> RunSpec:
    params = workload_params(extra)
    if params:
        from numalab.cli.suggest import check_params
        from numalab.workload import descriptor

        # Unknown options reach here as workload parameters (--interleav all): judge them together.
        desc = descriptor.load(workload)[0]
        check_params(params, desc.params, f"workload {desc.name}")
    return RunSpec.create(
        machine, workload, params=params, placement=place, balancing=bal,
        kernel=kernel, thp=thp, seed=seed, sample_rate=sample_rate,
    )


def workload_params(extra: list[str]) -> dict[str, Any]:
    """``--class C --threads 64 --init=serial`` -> {"class": "C", "threads": "64", "init": "serial"}."""
    out: dict[str, Any] = {}
    i = 0
    while i < len(extra):
        arg = extra[i]
        if arg.startswith("-") and not arg.startswith("--"):
            from numalab.cli.suggest import unknown_short_option

            raise UsageError(unknown_short_option(arg))
        if not arg.startswith("--"):
            raise UsageError(f"unexpected argument '{arg}' (workload parameters are given as --name value)")
        key, eq, value = arg[2:].partition("=")
        if not eq:
            if i + 1 >= len(extra) or extra[i + 1].startswith("--"):
                raise UsageError(f"workload parameter --{key} needs a value")
            value = extra[i + 1]
            i += 1
        name = key.replace("-", "_")
        if name in out:
            raise UsageError(f"workload parameter --{key} is given twice")
        out[name] = value
        i += 1
    return out
