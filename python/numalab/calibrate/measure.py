"""Run the calibration's kernels on this host under the agent, bound as numactl would
(``--membind=M --physcpubind=CPUS``), and keep every kernel's JSON line in the raw document
that figures.py and preset.py read."""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from numalab.calibrate.plan import MIB, Plan
from numalab.calibrate.preset import FORMAT
from numalab.console.progress import Progress
from numalab.exceptions import NumalabError, UsageError
from numalab.runner.host import REPO, agent_args, agent_path, omp_env
from numalab.spec import Placement

KERNELS = REPO / "kernels"
#: The agent samples rarely: its sampling would disturb the timing it is there to bind.
AGENT_INTERVAL_MS = 60000
#: Seconds a loaded run's STREAM load lasts beyond the probe's expected time.
LOAD_MARGIN_S = 1.5


def kernel(name: str) -> Path:
    p = KERNELS / name
    if not (p.is_file() and os.access(p, os.X_OK)):
        raise NumalabError(f"kernels/{name} is not built: run `make kernels` in {REPO}")
    return p


def cpulist(cpus: list[int]) -> str:
    return ",".join(str(c) for c in cpus)


def _command(argv: list[str], cpus: list[int], mem: int, out: Path) -> tuple[list[str], dict[str, str]]:
    placement = Placement(policy="bind", nodes=str(mem), physcpubind=cpulist(cpus))
    args = [str(agent_path()), "run", "--interval-ms", str(AGENT_INTERVAL_MS), "--output", str(out),
            *agent_args(placement), "--", *argv]
    # One OpenMP thread per listed CPU, each pinned to its own (OMP_PLACES=threads in list order).
    env = {**os.environ, "OMP_NUM_THREADS": str(len(cpus)), "OMP_PROC_BIND": "true", "OMP_PLACES": "threads"}
    return args, env


def _result(what: str, code: int, stdout: str, stderr: str) -> dict[str, Any]:
    if code != 0:
        why = stderr.strip().splitlines()[-1] if stderr.strip() else f"exit status {code}"
        if why.startswith("numalab-agent: "):  # the agent could not bind or start the kernel
            raise NumalabError(f"calibrate: cannot bind {what}: {why.removeprefix('numalab-agent: ')}; "
                               "nothing written (every run of the calibration is skipped)")
        raise NumalabError(f"calibrate: {what}: the kernel failed: {why}")
    lines = [ln for ln in stdout.splitlines() if ln.startswith("{")]
    try:
        return json.loads(lines[-1])
    except (IndexError, ValueError):
        raise NumalabError(f"calibrate: {what}: the kernel printed no JSON line: {stdout[:200]!r}") from None


def run_bound(argv: list[str], cpus: list[int], mem: int, what: str) -> dict[str, Any]:
    """Run a kernel bound to ``cpus`` and memory node ``mem``; its JSON line."""
    with tempfile.TemporaryDirectory(prefix="numalab-calibrate-") as tmp:
        args, env = _command(argv, cpus, mem, Path(tmp) / "records.jsonl")
        p = subprocess.run(args, env=env, capture_output=True, text=True)
        return _result(what, p.returncode, p.stdout, p.stderr)


def run_placed(argv: list[str], placement: Placement, what: str) -> dict[str, Any]:
    """Run a kernel under ``placement`` as ``numalab run`` would apply it; its JSON line."""
    with tempfile.TemporaryDirectory(prefix="numalab-check-") as tmp:
        args = [str(agent_path()), "run", "--interval-ms", str(AGENT_INTERVAL_MS), "--output", str(Path(tmp) / "records.jsonl"),
                *agent_args(placement), "--", *argv]
        p = subprocess.run(args, env={**os.environ, **omp_env(placement)}, capture_output=True, text=True)
        return _result(what, p.returncode, p.stdout, p.stderr)


def chase_argv(plan: Plan, pages: str) -> list[str]:
    argv = [str(kernel("chase")), "--size-mib", str(plan.chase_mib), "--loads", str(plan.chase_loads),
            "--reps", str(plan.chase_reps)]
    return argv + (["--hugepages"] if pages == "2m" else [])


def stream_argv(plan: Plan, mode: str, threads: int, seconds: float = 0.0) -> list[str]:
    argv = [str(kernel("stream")), "--mode", mode, "--n", str(plan.stream_n), "--reps", str(plan.stream_inner_reps),
            "--threads", str(threads)]
    return argv + (["--seconds", f"{seconds:.2f}"] if seconds else [])


def add_argv(plan: Plan) -> list[str]:
    return [str(kernel("stream")), "--mode", "read", "--n", str(plan.add_n), "--reps", str(plan.add_reps), "--threads", "1"]


def clock_argv(plan: Plan) -> list[str]:
    return [str(kernel("clock")), "--adds", str(plan.clock_hundreds), "--reps", str(plan.clock_reps)]


def window_argv(plan: Plan) -> list[str]:
    return [str(kernel("window")), "--size-mib", str(plan.chase_mib), "--pairs", str(plan.window_pairs),
            "--max-nops", str(plan.window_max_nops), "--step", str(plan.window_step), "--reps", str(plan.window_reps)]


def steps(plan: Plan) -> int:
    n = len(plan.pairs) * len(plan.pages) + plan.stream_runs + 2
    n += sum(len(plan.modes) * len(plan.thread_levels(c)) * plan.stream_runs for c, _ in plan.pairs)
    n += sum(len(plan.load_levels(m)) for m in plan.curve_nodes)
    return n


def loaded_run(plan: Plan, mem: int, load_threads: int, probe_s: float) -> dict[str, Any]:
    """The chase on the node's first CPU while ``load_threads`` of its other CPUs stream reads
    from the same memory for a little longer than the chase takes."""
    cpus = plan.cpus[mem]
    probe_argv = chase_argv(plan, "2m")
    if not load_threads:
        return {"kind": "loaded", "mem_node": mem, "load_threads": 0, "cpus": cpulist(cpus[:1]),
                "probe": run_bound(probe_argv, cpus[:1], mem, f"loaded latency of node {mem}, no load"), "load": None}
    what = f"loaded latency of node {mem}, {load_threads} load thread(s)"
    loaders = cpus[1:1 + load_threads]
    with tempfile.TemporaryDirectory(prefix="numalab-calibrate-") as tmp:
        args, env = _command(stream_argv(plan, "read", load_threads, probe_s + LOAD_MARGIN_S), loaders, mem, Path(tmp) / "load.jsonl")
        load = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            probe = run_bound(probe_argv, cpus[:1], mem, what)
            out, err = load.communicate()
        finally:
            if load.poll() is None:
                load.terminate()
                load.wait()
    return {"kind": "loaded", "mem_node": mem, "load_threads": load_threads, "cpus": cpulist(cpus[:1]),
            "load_cpus": cpulist(loaders), "probe": probe, "load": _result(what, load.returncode, out, err)}


def host_info(root: Path = Path("/")) -> dict[str, Any]:
    """CPU model, THP setting and the first CPU's cpufreq maximum, where readable."""
    model = "unknown CPU"
    try:
        for line in (root / "proc/cpuinfo").read_text(errors="replace").splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    thp = "unknown"
    try:
        text = (root / "sys/kernel/mm/transparent_hugepage/enabled").read_text()
        thp = text[text.index("[") + 1:text.index("]")]
    except (OSError, ValueError):
        pass
    freq = None
    try:
        freq = int((root / "sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq").read_text().strip())
    except (OSError, ValueError):
        pass
    return {"cpu_model": model, "thp": thp, "frequency_khz": freq}


def allowed_mems(root: Path = Path("/")) -> set[int]:
    """Mems_allowed_list of this process (the cgroup cpuset's memory nodes)."""
    from numalab.machine.bitmaps import parse_cpulist

    for line in (root / "proc/self/status").read_text().splitlines():
        if line.startswith("Mems_allowed_list:"):
            return set(parse_cpulist(line.split(":", 1)[1].strip()))
    return set()


def measure(plan: Plan, facts: dict[str, Any], progress: Progress) -> dict[str, Any]:
    """Every run of the plan; the raw document."""
    info = host_info()
    doc: dict[str, Any] = {
        "format": FORMAT, "date": datetime.date.today().isoformat(), **info,
        "kernel": f"Linux {platform.release()}", "quick": plan.quick, "chase_mib": plan.chase_mib,
        "stream_mib": plan.stream_n * 24 // MIB, "llc_mib": plan.llc_mib, "skipped": plan.skipped,
        "facts": facts, "runs": [],
    }
    runs = doc["runs"]
    progress.start(steps(plan))
    for c, m in plan.pairs:
        for pages in plan.pages:
            progress.step(f"latency {c}->{m} {pages}")
            out = run_bound(chase_argv(plan, pages), plan.cpus[c][:1], m, f"latency {c}->{m} ({pages} pages)")
            runs.append({"kind": "latency", "cpu_node": c, "mem_node": m, "pages": pages, "cpus": cpulist(plan.cpus[c][:1]), "output": out})
    for c, m in plan.pairs:
        for mode in plan.modes:
            for t in plan.thread_levels(c):
                for _ in range(plan.stream_runs):
                    progress.step(f"bandwidth {c}->{m} {mode} x{t}")
                    cpus = plan.cpus[c][:t]
                    out = run_bound(stream_argv(plan, mode, t), cpus, m, f"bandwidth {c}->{m} ({mode}, {t} threads)")
                    runs.append({"kind": "bandwidth", "cpu_node": c, "mem_node": m, "mode": mode, "threads": t, "cpus": cpulist(cpus), "output": out})
    # The dependent-add latency is the core's: measured on the first pair's CPU node only.
    c, m = plan.pairs[0]
    for _ in range(plan.stream_runs):
        progress.step(f"add latency {c}")
        out = run_bound(add_argv(plan), plan.cpus[c][:1], m, f"add latency on node {c}")
        runs.append({"kind": "add", "cpu_node": c, "mem_node": m, "cpus": cpulist(plan.cpus[c][:1]), "output": out})
    # The clock, measured even where cpufreq gives it (preset.py prefers cpufreq's figure).
    progress.step(f"clock {c}")
    out = run_bound(clock_argv(plan), plan.cpus[c][:1], m, f"clock on node {c}")
    runs.append({"kind": "clock", "cpu_node": c, "mem_node": m, "cpus": cpulist(plan.cpus[c][:1]), "output": out})
    # The instruction window, like the clock a property of the core: the first pair only.
    progress.step(f"instruction window {c}")
    out = run_bound(window_argv(plan), plan.cpus[c][:1], m, f"instruction window on node {c}")
    runs.append({"kind": "window", "cpu_node": c, "mem_node": m, "cpus": cpulist(plan.cpus[c][:1]), "output": out})
    for m in plan.curve_nodes:
        probe_s = 0.0
        for k in plan.load_levels(m):
            progress.step(f"loaded latency {m} +{k}")
            t0 = time.monotonic()
            runs.append(loaded_run(plan, m, k, probe_s))
            probe_s = probe_s or time.monotonic() - t0
    progress.stop()
    return doc


def check_binding() -> tuple[set[int], set[int]]:
    """The CPUs and memory nodes this process may use; a one-line refusal when it may use none."""
    cpus = set(os.sched_getaffinity(0))
    mems = allowed_mems()
    if not cpus or not mems:
        raise UsageError("calibrate: this process may use no CPU or no memory node (cgroup cpuset); nothing measured")
    return cpus, mems
