"""``numalab vm``: a real Linux kernel with a preset's NUMA topology under QEMU (``numalab.vm``).

    numalab vm setup [--kernel PATH]
    numalab vm run --machine vm-4 [placement options] [--balancing on] -- CMD [ARGS...]
    numalab vm shell --machine vm-4
    numalab vm check [--case NAME ...] | [--machine vm-4 --workload dgemv --n 2000 --init serial ...]
"""

from __future__ import annotations

import functools
import json
import os
import signal
from pathlib import Path
from typing import List, Optional

import typer

from numalab.cli import options as o
from numalab.cli.summary import summary
from numalab.console.progress import Progress
from numalab.exceptions import UsageError

app = typer.Typer(
    help="A real Linux kernel with a NUMA topology under QEMU: setup, run, shell, check.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

VM_MACHINE = typer.Option("vm-4", "--machine", help="Machine preset for the guest's nodes and SLIT (vm-4, vm-8, or any preset).")
# Not sim's --memory-per-node-mib (a size for nodes a machine file leaves unsized): the guest's RAM.
MEMORY = typer.Option(None, "--guest-memory-per-node-mib", "--memory-per-node-mib", help="Guest memory per node in MiB (default: the preset's, at most 512). --memory-per-node-mib is the same option.")
CPUS = typer.Option(1, "--cpus-per-node", help="vCPUs per node, 1..64 (at most the preset's CPUs on it; 255 in all).")
ACCEL = typer.Option("tcg", "--accel", help="QEMU accelerator: tcg (default, works everywhere), kvm, or auto (kvm if /dev/kvm works).")
TIMEOUT = typer.Option(600.0, "--timeout", help="Kill the guest after this many seconds (more than 0, at most 604800: a week).")
THP = typer.Option(None, "--thp", help="Guest transparent huge pages: always, madvise or never (default: the kernel's).")
INTERVAL = typer.Option(100, "--interval-ms", help="Sample the command's pages and threads every N ms (guest time).")
COMMAND = typer.Argument(..., metavar="CMD [ARGS]...", help="The command to run in the guest (after --).")


def _say(text: str) -> None:
    typer.echo(text, err=True)


def _stop_exits(command):
    """A stop signal while QEMU ran (QEMU was killed, ``vm/qemu.py: stop_on_signals``) ends the
    command as shells report it: 128 + the signal (SIGTERM 143); Ctrl-C stays an interrupt (130)."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        from numalab.vm.qemu import Stopped

        try:
            return command(*args, **kwargs)
        except Stopped as e:
            if e.signum == signal.SIGINT:
                raise
            typer.echo(f"numalab: vm: stopped by {e.args[0]}; QEMU was killed", err=True)
            raise typer.Exit(128 + e.signum) from None

    return wrapper


@app.command("setup")
def setup_cmd(
    kernel: Optional[Path] = typer.Option(None, "--kernel", help="Use this bzImage kernel instead of Debian's linux-image-*-amd64."),
    as_json: bool = typer.Option(False, "--json", help="Print the guest's files (paths), the kernel's version and the agent as JSON; progress on stderr."),
) -> None:
    """Gather the guest's kernel, busybox and numactl into the cache; say what is missing."""
    from numalab.vm import setup

    guest = setup.setup(kernel, say=_say if as_json else typer.echo)
    try:
        agent, missing = str(setup.find_agent()), None
    except setup.SetupError as e:
        agent, missing = None, e.args[0]
    if as_json:
        from numalab.cli.vm_json import setup_json
        from numalab.vm.cache import cache_dir

        typer.echo(json.dumps(setup_json(guest, cache_dir(), agent, missing, setup.kvm_usable()), indent=2, sort_keys=True))
        return
    typer.echo(f"agent:   {agent}" if agent else f"agent:   missing: {missing}")


def _request(machine, command, place, bal, memory, cpus, thp, accel, timeout, interval, wait_policy="default"):
    from numalab.vm.run import VmRequest

    return VmRequest(machine=machine, command=command, placement=place, balancing=bal, memory_per_node_mib=memory,
                     cpus_per_node=cpus, thp=thp, accel=accel, timeout_s=timeout, interval_ms=interval,
                     omp_wait_policy=wait_policy)


@app.command("run", context_settings={"allow_interspersed_args": False})
@_stop_exits
@o.with_placement
@o.with_balancing
def run_cmd(
    placement: o.Placement,
    balancing: o.Balancing,
    command: List[str] = COMMAND,
    machine: str = VM_MACHINE,
    memory_per_node_mib: Optional[int] = MEMORY,
    cpus_per_node: int = CPUS,
    thp: Optional[str] = THP,
    accel: str = ACCEL,
    timeout: float = TIMEOUT,
    interval_ms: int = INTERVAL,
    omp_wait_policy: str = o.WAIT_POLICY,
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the result document (JSON) to FILE."),
    as_json: bool = o.JSON,
) -> None:
    """Boot the guest, run CMD under numalab-agent with the placement, print the summary.

    The command's own output is printed first; the summary `numalab run` prints follows on
    stderr (or --json prints the result document, source: vm). Timing inside a TCG guest is not
    meaningful; pages per node, numastat and vmstat are the real kernel's. The exit status is
    the command's.
    """
    from numalab.vm import run as vm_run

    req = _request(machine, list(command), placement, balancing, memory_per_node_mib, cpus_per_node, thp, accel, timeout, interval_ms,
                   omp_wait_policy)
    out = vm_run.run(req, say=_say)
    if out.status == 2 and not out.text("agent.jsonl").strip():
        raise UsageError(f"the guest refused the run: {out.text('stderr').strip() or 'numalab-agent exit code 2'}")
    if out.status in (126, 127) and not out.text("agent.jsonl").strip():
        typer.echo(f"numalab: in the guest: {out.text('stderr').strip()}", err=True)
        raise typer.Exit(out.status)
    doc = vm_run.document(out)
    text = json.dumps(doc, indent=2, sort_keys=True)
    if output is not None:
        output.write_text(text + "\n")
    if as_json:
        typer.echo(text)
    else:
        typer.echo(out.text("stdout"), nl=False)
        typer.echo(out.text("stderr"), nl=False, err=True)
        typer.echo(summary(doc), err=True)
        typer.echo(f"guest: Linux {doc['vm']['kernel']} ({doc['vm']['accel']}), ready after {doc['vm']['ready_s']} s, "
                   f"QEMU ran {doc['vm']['wall_s']} s", err=True)
    for name, size in out.truncated.items():
        _say(f"numalab vm: the command wrote {size} bytes to {name}; only the first {doc['vm']['output_cap_bytes']} were kept")
    code = doc["agent"]["exit_code"]
    if code:
        raise typer.Exit(code if isinstance(code, int) else 1)


@app.command("shell")
@_stop_exits
@o.with_balancing
def shell_cmd(
    balancing: o.Balancing,
    machine: str = VM_MACHINE,
    memory_per_node_mib: Optional[int] = MEMORY,
    cpus_per_node: int = CPUS,
    thp: Optional[str] = THP,
    accel: str = ACCEL,
) -> None:
    """An interactive shell in the guest (busybox, numactl, numastat via /sys): `exit` powers it off.
    It needs a terminal on stdin (for a script: numalab vm run -- sh -c '...')."""
    from numalab.vm import run as vm_run

    req = _request(machine, [], o.placement(), balancing, memory_per_node_mib, cpus_per_node, thp, accel, vm_run.MAX_TIMEOUT_S, 100)
    raise typer.Exit(vm_run.shell(req, say=_say))


def _moves(names: list[str], machine: str | None, memory_per_node_mib: int | None, accel: str, timeout: float, as_json: bool) -> None:
    """``vm check --moves``: each case's moves by kernel path, guest beside simulator."""
    from numalab.vm import check, run_condition, sched_trace

    if machine is not None:
        raise UsageError("--moves traces the cases on their own machines: leave out --machine")
    other = next((check.CASES[n] for n in names if not check.CASES[n].sched), None)
    if other is not None:
        raise UsageError(f"--moves traces the scheduler cases (kernels/barrier.c), not '{other.name}' ({other.workload})")
    docs = {}
    for name in names:
        _say(f"vm check --moves {name}: booting the guest")
        guest, release = sched_trace.guest_run(name, memory_per_node_mib, accel, timeout)
        kernel = check.sim_kernel(release)
        sim = sched_trace.sim_sched(name, kernel)
        docs[name] = sched_trace.as_json(guest, sim)
        # A sleeping case: the simulator also under this run's own host condition (QEMU's cores
        # and the guest's barrier length measured in it, docs/scheduler.md §10.20).
        judged = run_condition.judge_run(name, guest, os.cpu_count() or 1, kernel)
        if judged is not None:
            docs[name]["run_condition"] = run_condition.as_json(*judged)
        if not as_json:
            typer.echo(f"== {name} (guest Linux {release}, simulator profile {kernel})")
            typer.echo(sched_trace.report(guest, sim))
            if judged is not None:
                typer.echo(run_condition.report(*judged))
            typer.echo("")
    if as_json:
        typer.echo(json.dumps(docs, indent=2, sort_keys=True))


@app.command("check", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
@_stop_exits
@o.with_placement
@o.with_balancing
def check_cmd(
    ctx: typer.Context,
    placement: o.Placement,
    balancing: o.Balancing,
    case: Optional[List[str]] = typer.Option(None, "--case", help="A named case (repeatable; 'all' for every one, 'sched' for the scheduler cases); see --list."),
    list_cases: bool = typer.Option(False, "--list", help="List the named cases and what each expects."),
    machine: Optional[str] = typer.Option(None, "--machine", help="Machine preset (default vm-4; with --case: overrides the case's)."),
    workload: Optional[str] = typer.Option(None, "--workload", help="dgemv, stream, barrier, alloc3d or filemap: compare this workload (its parameters follow as --n 2000 --init serial ...)."),
    memory_per_node_mib: Optional[int] = MEMORY,
    accel: str = ACCEL,
    timeout: float = typer.Option(300.0, "--timeout", help="Kill a guest after this many seconds per case run it holds (cases share a boot where they can; more than 0, at most 604800)."),
    as_json: bool = typer.Option(False, "--json", help="Print the side-by-side tables (pages per node, counters, threads, verdicts) of every case as one JSON document; progress on stderr."),
    runs: int = typer.Option(1, "--runs", help="Guest runs per case, 1..20 (the scheduler table gives the guest's min..max and whether the simulator falls inside)."),
    moves: bool = typer.Option(False, "--moves", help="Scheduler cases: count the guest's thread moves by the kernel path that made them (sched_migrate_task stack traces, /proc/schedstat) beside the simulator's, instead of the comparison (docs/scheduler.md §10.4); a sleeping case's run is also judged against the simulator under the run's own host condition (§10.20)."),
) -> None:
    """Run a workload in the guest and in the simulator on the same preset; print pages per node
    after first touch and after the run, the counters side by side, and the differences.

    Named cases (--case) also check an expectation on both sides and exit 1 if one fails.
    """
    from numalab.vm import check

    if list_cases:
        if as_json:
            typer.echo(json.dumps([{"name": c.name, "workload": c.workload, "params": c.params, "machine": c.machine, "config": c.config,
                                    "expect": c.expect.__doc__, "more_than": c.more_than, "agree_pct": c.agree_pct}
                                   for c in check.CASES.values()], indent=2))
            return
        for c in check.CASES.values():
            more = f"; more thread migrations per thread and barrier than {c.more_than} (run together)" if c.more_than else ""
            if c.agree_pct is not None:
                more += f"; guest and simulator within {c.agree_pct:g}% of the region on every node"
            typer.echo(f"{c.name:<18} {c.workload} {c.params} on {c.machine}, config '{c.config}': expect {c.expect.__doc__}{more}")
        return
    if not 1 <= runs <= check.MAX_RUNS:
        raise UsageError(f"--runs must be in 1..{check.MAX_RUNS}, got {runs}")
    if case and workload:
        raise UsageError("give --case or --workload, not both")
    if moves and not case:
        raise UsageError("--moves traces named scheduler cases: give --case NAME (see --list)")
    if not case and not workload:
        raise UsageError(f"give --case NAME (see --list) or --workload {'|'.join(check.KERNEL_OPTIONS)}")
    if workload:
        if workload not in check.KERNEL_OPTIONS:
            raise UsageError(f"--workload must be {', '.join(check.KERNEL_OPTIONS)} (a C kernel in kernels/ with a simulator descriptor), got '{workload}'")
        config = ":".join(placement.items() + balancing.items()) or "default"
        cases = [check.adhoc_case(machine or "vm-4", workload, o.workload_params(list(ctx.args)), config)]
    else:
        if ctx.args:
            raise UsageError(f"unexpected argument '{ctx.args[0]}' (workload parameters go with --workload)")
        # "sched": every scheduler case (vm-4 and vm-8), so their orderings are checked together.
        case = case or []  # not empty: --case or --workload was checked above
        names = list(check.CASES) if "all" in case else [n for c in case for n in (check.sched_names() if c == "sched" else [c])]
        unknown = [n for n in names if n not in check.CASES]
        if unknown:
            raise UsageError(f"unknown case '{unknown[0]}' (known: {', '.join(check.CASES)})")
        cases = [check.with_machine(check.CASES[n], machine) for n in names]
    if moves:
        _moves([c.name for c in cases], machine, memory_per_node_mib, accel, timeout, as_json)
        return
    failed = []
    results = []
    progress = Progress("vm check", len(cases), unit="cases", interval_s=0, bar=False).start()
    # cases that can share a guest boot run in one (check.compare_many); each is printed when done
    for result in check.compare_many(cases, memory_per_node_mib, accel, timeout, say=_say, runs=runs):
        c = result.case
        progress.step(c.name)
        results.append(result)
        if not result.ok:
            failed.append(c.name)
        if as_json:
            continue
        typer.echo(check.report(result))
        notes = check.profile_notes(result.kernel_release)
        if notes:
            typer.echo(f"Linux {result.kernel_release} is simulated with the {result.sim_kernel} profile; where they differ:")
            for n in notes:
                typer.echo(f"  - {n}")
        typer.echo("")
    ordering = check.orderings(results)
    if as_json:
        from numalab.cli.vm_json import check_json

        typer.echo(json.dumps(check_json(results, ordering), indent=2, sort_keys=True))
    elif any(r.case.sched for r in results):
        typer.echo(check.sched_table(results))
    for name, why in ordering.items():
        if not as_json:
            typer.echo(f"{name}: {why}")
        failed.append(name)
    if failed:
        typer.echo(f"numalab: vm check: expectation failed in {', '.join(failed)}", err=True)
        raise typer.Exit(1)
