"""The preset TOML of a calibration (no I/O): the host's topology and caches from the sysfs facts
the raw document carries, timing from its kernel outputs, every number with its source beside it
and every measured one with its range in ``[estimates]`` (docs/calibrate.md)."""

from __future__ import annotations

import json
import math
import statistics
from typing import Any

from numalab.calibrate import figures as fg
from numalab.machine import estimates as est
from numalab.machine.host import host_caches

FORMAT = "numalab-calibrate/1"


# The 1e-6 keeps a figure already at that precision (20.4 stored as 20.39999...) from moving a step.
def _down(x: float, places: int) -> float:
    return math.floor(x * 10**places + 1e-6) / 10**places


def _up(x: float, places: int) -> float:
    return math.ceil(x * 10**places - 1e-6) / 10**places


def _num(x: float, places: int) -> str:
    return f"{round(x, places):.{places}f}"


def _range(key: str, f: fg.Figure, places: int, source: str) -> str:
    """An [estimates] row whose range holds the rounded value."""
    value = round(f.value, places)
    low = min(_down(f.low, places), value)
    high = max(_up(f.high, places), value)
    low = low if low > 0 else 10**-places
    return f'"{key}" = {{ low = {low:.{places}f}, high = {high:.{places}f}, source = {json.dumps(source)} }}'


def _spread(f: fg.Figure, unit: str, places: int) -> str:
    return f"median of {f.samples}, {_num(f.low, places)}-{_num(f.high, places)} {unit}"


def preset_toml(doc: dict[str, Any], name: str) -> str:
    """The preset for the raw document ``doc`` (what ``numalab calibrate --json`` prints under
    ``raw``), named ``name``."""
    if doc.get("format") != FORMAT:
        raise ValueError(f"not a calibration document (format {doc.get('format')!r}, expected {FORMAT!r})")
    facts, runs = doc["facts"], doc["runs"]
    nodes = facts["nodes"]
    ids = [n["os_index"] for n in nodes]
    index = {os: i for i, os in enumerate(ids)}
    lat = fg.latencies(runs)
    bw = fg.bandwidths(runs)
    curves = fg.loaded(runs)
    if not lat or not bw:
        raise ValueError("the calibration measured no latency or no bandwidth: nothing to write")
    source = f"measured by numalab calibrate {doc['date']}, {doc['cpu_model']}, {doc['kernel']}"
    est_rows: list[str] = []
    out: list[str] = []
    w = out.append

    w(f"# {name}: this host as numalab calibrate measured it{' (--quick)' if doc.get('quick') else ''}.")
    w(f"# source: {source}")
    w("# Topology, SLIT and caches: sysfs (sys/devices/system/node, sys/devices/system/cpu/cpuK/cache).")
    w(f"# Transparent huge pages: {doc.get('thp', 'unknown')}. Buffers: chase {doc['chase_mib']} MiB, STREAM {doc['stream_mib']} MiB"
      f" (last-level cache {doc['llc_mib']} MiB).")
    for s in doc.get("skipped", []):
        w(f"# skipped: {s}")
    w(f"name = {json.dumps(name)}")
    description = f"{doc['cpu_model']}: {len(nodes)} node(s), {len(facts['cores'])} cores, calibrated {doc['date']}"
    w(f"description = {json.dumps(description)}")
    w(f"page_size_bytes = {int(est.PAGE_SIZE_BYTES.value)}  # source: x86-64 base page size (Linux PAGE_SIZE)")
    w("")
    w("# source: sysfs node directories (cpulist, meminfo MemTotal) and cpuK/topology (core_cpus_list)")
    w("nodes = [")
    for n in nodes:
        size = f', memory_bytes = {n["memory_bytes"]}' if n.get("memory_bytes") is not None else ""  # no meminfo: the model's default
        w(f'  {{ os_index = {n["os_index"]}, package = {n["package"]}, cpus = "{n["cpus"]}"{size} }},')
    w("]")
    w("cores = [")
    for c in facts["cores"]:
        w(f'  {{ cpus = "{c["cpus"]}", os_index = {c["os_index"]} }},')
    w("]")
    w("# source: sysfs nodeN/distance (the firmware's SLIT)")
    w("distances = [")
    for n in nodes:
        w(f"  [{', '.join(str(d) for d in n['distances'])}],")
    w("]")

    # ---- latency
    pairs = {(c, m): fg.idle_latency(lat, c, m) for c in ids for m in ids}
    measured = {k: v for k, v in pairs.items() if v is not None}
    local = [v[0] for (c, m), v in measured.items() if c == m] or [v[0] for v in measured.values()]
    local_ns = fg.Figure(sorted(f.value for f in local)[(len(local) - 1) // 2], min(f.low for f in local),
                         max(f.high for f in local), sum(f.samples for f in local))
    w("")
    w("[latency]")
    pages_note = {"2m": "2 MiB pages", "4k": "4 KiB pages (no 2 MiB page was granted)"}
    first = next(iter(measured.values()))
    w(f"local_ns = {_num(local_ns.value, 1)}  # source: {source}: dependent pointer chase (kernels/chase), "
      f"{pages_note[first[1]]}, {_spread(local_ns, 'ns', 1)}")
    for (c, m, pages), f in lat.items():
        w(f"# source: chase CPU node {c} -> memory node {m}, {pages} pages: {_spread(f, 'ns', 1)}")
    if len(ids) > 1:
        w("# source: the chase per (CPU node, memory node) pair above; a cell not measured (--pairs) is the reverse pair's")
        w("# measurement, else local_ns x SLIT / 10 (estimate)")
        w("matrix_ns = [")
        for c in ids:
            row = []
            for m in ids:
                got = pairs[(c, m)] or pairs[(m, c)]
                dist = nodes[index[c]]["distances"][index[m]]
                row.append(_num(got[0].value if got else local_ns.value * dist / 10, 1))
            w(f"  [{', '.join(row)}],")
        w("]")
        for (c, m), (f, pages) in measured.items():
            est_rows.append(_range(f"latency.matrix_ns[{index[c]}][{index[m]}]", f, 1, f"{source}: chase {c}->{m}, {pages} pages, lowest-highest repetition"))
    else:
        est_rows.append(_range("latency.local_ns", local_ns, 1, f"{source}: chase, lowest-highest repetition"))

    # ---- bandwidth (the DRAM line traffic of STREAM from the node's cores: the model charges a written line as a read)
    def best(c: int, m: int, mode: str) -> tuple[int, fg.Figure] | None:
        """The highest median over the thread counts measured (more threads than the memory
        can serve may lose bandwidth to contention), with its thread count."""
        got = [(t, f) for (cc, mm, md, t), f in bw.items() if (cc, mm, md) == (c, m, mode)]
        return max(got, key=lambda x: (x[1].value, -x[0])) if got else None

    def lines(f: fg.Figure, mode: str) -> fg.Figure:
        """A STREAM figure as the DRAM line traffic the model charges (``LINES_PER_COUNTED``)."""
        k = fg.LINES_PER_COUNTED[mode]
        return fg.Figure(f.value * k, f.low * k, f.high * k, f.samples)

    node_bw: dict[int, tuple[fg.Figure, str]] = {}
    for m in ids:
        # The controller delivers at least the most line traffic any kernel drew from it.
        own = [(lines(b[1], md), md, b[0]) for md in fg.LINES_PER_COUNTED if (b := best(m, m, md))]
        if own:
            f, md, t = max(own, key=lambda x: x[0].value)
            k = fg.LINES_PER_COUNTED[md]
            node_bw[m] = (f, f"the most DRAM line traffic of the STREAM modes: {md} x {k:.3g} (the lines it moves per byte "
                             f"STREAM counts), the best of the thread counts ({t} thread(s))")
            continue
        others = [b for c in ids if (b := best(c, m, "read"))]
        if others:
            t, f = max(others, key=lambda x: x[1].value)
            node_bw[m] = (f, f"read-only STREAM from {t} core(s) of another node (the node has no CPU measured)")
    fallback = statistics.median([f.value for f, _ in node_bw.values()]) if node_bw else 1.0

    # ---- loaded latency: the curve of the first memory node measured; the others in comments
    curve_node = next(iter(curves), None)
    w("# source: loaded-latency curve, [utilisation, latency / idle]: the chase on one core while the node's other cores run a")
    w("# rising read-only STREAM load (kernels/stream --mode read), utilisation = (load + probe bandwidth) / node bandwidth;")
    w("# flat above the highest load measured (docs/contention.md §3).")
    if curve_node is None:
        w("# estimate: not measured (no node had a second core for the load): a flat curve")
        w("loaded_curve = [[0.0, 1.0]]")
    else:
        pts = curves[curve_node]
        node_gbps = node_bw.get(curve_node, (fg.Figure(fallback, fallback, fallback, 0), ""))[0].value
        crv = fg.curve(pts, node_gbps)
        w(f"# measured on memory node {curve_node}; points: " + "; ".join(
            f"{p.load_threads} load thread(s) {p.load_gbps:.2f} GB/s -> {p.latency.value:.1f} ns" for p in pts))
        if len(pts) == 1:
            w("# estimate: no load measured (the node has one usable CPU, taken by the probe): a flat curve")
        w("loaded_curve = [")
        for u, factor in crv:
            w(f"  [{u:.4f}, {factor:.4f}],")
        w("]")
        rises = [p.latency.high / pts[0].latency.value - 1 for p in pts[1:]] + [p.latency.low / pts[0].latency.value - 1 for p in pts[1:]]
        top = crv[-1][1] - 1
        if top > 0 and rises:
            lo, hi = min(1.0, max(0.01, min(rises) / top)), max(1.0, max(rises) / top)
            est_rows.append(f'"latency.loaded_curve" = {{ low = {_down(lo, 2):.2f}, high = {_up(hi, 2):.2f}, source = '
                            f'{json.dumps(source + ": factor on the rise, lowest-highest probe repetition over the median")} }}')
        for m in list(curves)[1:]:
            w(f"# memory node {m}: " + "; ".join(f"{p.load_gbps:.2f} GB/s -> {p.latency.value:.1f} ns" for p in curves[m]))

    w("")
    w("[bandwidth]")
    for (c, m, mode, t), f in bw.items():
        w(f"# source: STREAM {mode}, CPU node {c} -> memory node {m}, {t} thread(s): {_spread(f, 'GB/s', 2)}")
    if len(ids) == 1:
        f, how = node_bw[ids[0]]
        w(f"node_gbps = {_num(f.value, 2)}  # source: {source}: {how}, {_spread(f, 'GB/s', 2)}")
        est_rows.append(_range("bandwidth.node_gbps", f, 2, f"{source}: lowest-highest STREAM process"))
    else:
        cells = []
        for i, m in enumerate(ids):
            if m in node_bw:
                cells.append(_num(node_bw[m][0].value, 2))
                est_rows.append(_range(f"bandwidth.node_gbps[{i}]", node_bw[m][0], 2, f"{source}: node {m}, lowest-highest STREAM process"))
            else:
                cells.append(_num(fallback, 2))
        w(f"# source: {source}: the most DRAM line traffic of STREAM (read, triad x 4/3, write x 2) from each node's cores to its own "
          "memory, the best thread count; a node not measured has the median")
        w(f"node_gbps = [{', '.join(cells)}]")

    # ---- links: one per measured remote pair, a->b = what CPUs of b read from memory of a
    links: dict[tuple[int, int], dict[str, fg.Figure]] = {}
    for c in ids:
        for m in ids:
            if c != m and (b := best(c, m, "read")):
                a, z = min(c, m), max(c, m)
                links.setdefault((a, z), {})[f"{m}->{c}"] = b[1]
    link_rows: list[tuple[int, int, fg.Figure, fg.Figure]] = []
    for (a, z), dirs in sorted(links.items()):
        # one direction measured (sampled pairs): the other is taken to be the same
        ab = dirs.get(f"{a}->{z}") or dirs[f"{z}->{a}"]
        link_rows.append((a, z, ab, dirs.get(f"{z}->{a}") or ab))

    # ---- core
    # The slowest node's single core: a core's concurrency is a property of the core, and the
    # lowest reading is the one least helped by another node's idle memory.
    singles = [(f.value, c, f) for (c, m, md, t), f in bw.items() if c == m and md == "read" and t == 1]
    one_core = min(singles, key=lambda x: (x[0], x[1]))[2] if singles else None
    add = fg.add_latency(runs)
    stream_fig: fg.Figure | None = None
    w("")
    w("[core]")
    clock = fg.clock_ghz(runs)
    if doc.get("frequency_khz"):
        w(f"frequency_ghz = {doc['frequency_khz'] / 1e6:.3f}  # source: cpufreq cpuinfo_max_freq {doc['frequency_khz']} kHz (turbo included when boost is on)")
        if clock is not None:
            w(f"# source: {source}: the clock measured (kernels/clock): {_num(clock.value, 3)} GHz, {_spread(clock, 'GHz', 3)}")
    elif clock is not None:
        # Without cpufreq (a virtual machine) the clock the cores run at is measured: a dependent
        # chain of register adds takes one cycle per add (lmbench src/mhz.c's method).
        n_clock = next(r for r in runs if r["kind"] == "clock")["output"]["adds"]
        w(f"frequency_ghz = {_num(clock.value, 3)}  # source: {source}: the clock, one thread's chain of {n_clock:.0f} "
          f"dependent integer adds, one cycle each (kernels/clock, lmbench src/mhz.c's method), {_spread(clock, 'GHz', 3)}")
        est_rows.append(_range("core.frequency_ghz", clock, 3, f"{source}: the lowest-highest repetition of the add chain"))
    else:
        w(f"frequency_ghz = {est.CORE_FREQUENCY_GHZ.value}  # {est.CORE_FREQUENCY_GHZ.note}")
    if one_core is not None:
        m0 = min(singles, key=lambda x: (x[0], x[1]))[1]
        own_curve = curves.get(m0)

        def in_flight(f: fg.Figure, mode: str, add_ns: float | None) -> tuple[fg.Figure, float, float]:
            """Little's law for one core's figure: (lines in flight, its line GB/s, the latency at that load)."""
            gbps = [fg.memory_gbps(x, add_ns) for x in (f.value, f.low, f.high)] if mode == "read" else \
                [x * fg.LINES_PER_COUNTED[mode] for x in (f.value, f.low, f.high)]
            lat_one = fg.loaded_latency_at(own_curve, gbps[0]) if own_curve else idle_or(measured, m0, local_ns.value)
            v, lo, hi = (fg.concurrency(g, lat_one) for g in gbps)
            return fg.Figure(v, min(lo, v), max(hi, v), f.samples), gbps[0], lat_one

        add_ns = add.value if add else None
        stream, stream_gbps, stream_lat = in_flight(one_core, "read", add_ns)
        # The core keeps at least as many lines in flight as any kernel was seen to: a kernel of
        # several streams (the triad's three, write's read-for-ownership and write-back) can
        # keep more than one stream's prefetch depth.
        seen = [(stream, "read", stream_gbps, stream_lat)]
        for md in ("triad", "write"):
            f1 = bw.get((m0, m0, md, 1))
            if f1 is not None:
                fig, line_gbps, lat_ns = in_flight(f1, md, None)
                seen.append((fig, md, line_gbps, lat_ns))
        core, core_mode, core_gbps, lat_core = max(seen, key=lambda x: x[0].value)
        chain = (f" less its chain of {fg.READ_ADDS_PER_LINE} dependent adds per line "
                 f"({fg.READ_ADDS_PER_LINE * add_ns:.2f} ns): {stream_gbps:.2f} GB/s,") if add_ns else ""
        w(f"mlp = {_num(core.value, 2)}  # source: {source}: Little's law, the most lines one core kept in flight: its {core_mode} "
          f"STREAM at {core_gbps:.2f} GB/s of DRAM lines x loaded latency {lat_core:.1f} ns / 64 B")
        est_rows.append(_range("core.mlp", core, 2, f"{source}: the lowest-highest one-core STREAM process"))
        w(f"stream_mlp = {_num(stream.value, 2)}  # source: {source}: Little's law, one stream: one core's read-only STREAM "
          f"{one_core.value:.2f} GB/s{chain} x loaded latency {stream_lat:.1f} ns / 64 B")
        est_rows.append(_range("core.stream_mlp", stream, 2, f"{source}: the lowest-highest one-core read-only STREAM process"))
        stream_fig = stream
    else:
        w(f"mlp = {est.CORE_MLP.value}  # {est.CORE_MLP.note}")
    if add is not None:
        n_add = next(r for r in runs if r["kind"] == "add")["output"]["n"]
        w(f"add_latency_ns = {_num(add.value, 3)}  # source: {source}: one dependent add, one thread's read-only STREAM "
          f"in cache (--n {n_add}, one addpd per 16 B), {_spread(add, 'ns', 3)}")
        est_rows.append(_range("core.add_latency_ns", add, 3, f"{source}: the lowest-highest in-cache process"))
    win = fg.window(runs)
    if win is not None:
        out_w = next(r for r in runs if r["kind"] == "window")["output"]
        step = out_w["nops"][1] - out_w["nops"][0]
        w(f"window_instructions = {_num(win.value, 0)}  # source: {source}: the instruction window (reorder buffer): two "
          f"independent pointer chases, N nops after each load (kernels/window, Henry Wong's 2013 reorder-buffer test), "
          f"the N + 1 instructions between the loads where the pair stops overlapping, N in steps of {step}, "
          f"{_spread(win, 'instructions', 0)}")
        est_rows.append(_range("core.window_instructions", win, 0, f"{source}: the lowest-highest sweep"))
        if stream_fig is not None:
            # The read-only loop's lines in flight are its window's loads plus what the
            # prefetchers keep ahead of them: the rest, once the window's share is taken out.
            ipl = fg.READ_INSTRUCTIONS_PER_LINE
            ahead = max(0.0, stream_fig.value - win.value / ipl)
            prefetch = fg.Figure(ahead, max(0.0, stream_fig.low - win.high / ipl),
                                 max(ahead, stream_fig.high - win.low / ipl), stream_fig.samples)
            line = (f"prefetch_lines = {_num(prefetch.value, 2)}  # source: {source}: the read-only STREAM's lines in flight "
                    f"(stream_mlp {stream_fig.value:.2f}) less its window's loads, {win.value:.0f} / {ipl} instructions per line "
                    f"(kernels/stream.c --mode read: movupd, add, addpd, cmp, jne per 16 B, objdump -d kernels/stream)")
            if round(prefetch.value, 2) > 0:
                w(line)
                est_rows.append(_range("core.prefetch_lines", prefetch, 2,
                                       f"{source}: stream_mlp's range less the window's range over {ipl} instructions per line"))
            else:  # the window's loads are all the read loop's lines in flight; absent is 0 to the model
                w(f"# {line}; 0: not written")

    # ---- caches (sysfs), written as the host import does
    notes: dict[str, str] = {}
    for c in host_caches(facts.get("caches", []), notes):
        w("")
        w("[[caches]]")
        w(f"level = {c['level']}  # source: sysfs cpuK/cache/indexI level")
        w(f"size_kib = {c['size_kib']:g}  # source: sysfs cpuK/cache/indexI size")
        w(f'cpus = "{c["cpus"]}"  # source: sysfs cpuK/cache/indexI shared_cpu_list')
    for a, z, ab, ba in link_rows:
        w("")
        w("[[links]]")
        w(f"nodes = [{a}, {z}]")
        w(f"gbps = [{_num(ab.value, 2)}, {_num(ba.value, 2)}]  # source: {source}: read-only STREAM across the pair, "
          f"{a}->{z} read by CPUs of {z}")
    w("")
    w("[notes]")
    notes["calibration"] = source
    if len(ids) > 1:
        notes["bandwidth"] = "links: measured remote read-only bandwidth of each pair measured; pairs not measured have no link"
    for key, text in sorted(notes.items()):
        w(f"{json.dumps(key)} = {json.dumps(text)}")
    w("")
    w("[estimates]")
    w("# Ranges of the measured numbers: the lowest and highest repetition (docs/machines.md §3.6, docs/calibrate.md).")
    out.extend(est_rows)
    return "\n".join(out) + "\n"


def idle_or(measured: dict[tuple[int, int], tuple[fg.Figure, str]], m: int, default: float) -> float:
    got = measured.get((m, m))
    return got[0].value if got else default

