"""Which guest kernel spin-wait executes the PAUSEs that make QEMU leave translated code
(docs/scheduler.md §10.43, §10.45): the guest's spin-waits counted and timed per barrier.

  python bench/vm_guest_spin.py record CASE {idle,busy-loop} {pauses,probes,none} OUT [CLOCKSOURCE]
  python bench/vm_guest_spin.py report OUT [OUT ...]

``record`` boots ``vm check``'s guest for CASE (its machine, vCPUs and wait policy) and runs the
case's command under the agent inside ``JOB``, with QEMU's threads snapshotted at the command's
window marks (``hostthreads``). ``busy-loop`` first starts §10.18's ``sh -c 'while :; do :;
done'`` in a session of its own (another autogroup: Linux ``kernel/sys.c: ksys_setsid()`` →
``sched_autogroup_create_attach()``), killed with its process group after. ``probes`` sets, in the
guest, a kprobe and a kretprobe on each function of ``SPINS`` that the kernel lets be probed (one
line each in the output: ``probe F ok`` / ``failed``), a ``stacktrace`` trigger on each lock
slow path's entry (its caller), ``power:cpu_idle`` (each pass of the idle loop's halt), and a
``hist`` keyed on the kernel stack at each local APIC timer interrupt (where the vCPU was when its
tick fired: a sampling profile in guest time). ``none`` sets nothing: the barrier without the
probes' cost. The guest pairs entry and return per CPU with awk and prints per function the calls,
time inside (guest clock, µs) and the longest, per lock caller the same; ``report`` divides by the
command's barriers. Writes OUT.txt (the guest's output) and OUT.host (QEMU's cores). CLOCKSOURCE
(e.g. ``acpi_pm``) is written to the guest's ``current_clocksource`` before anything else: the
HPET's read serialises its readers (``read_hpet()``), the ACPI PM timer's does not.

``pauses`` puts a kprobe on every PAUSE instruction of the guest kernel's text (found on the host
with ``objdump -d``, placed past KASLR's slide) and counts each site's hits over the command.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

#: Spin-waits whose loop body is ``cpu_relax()`` (x86: PAUSE) in Linux 6.1, by function the
#: kernel can probe: the qspinlock slow path (``kernel/locking/qspinlock.c:
#: native_queued_spin_lock_slowpath()``; ``__pv_queued_spin_lock_slowpath()`` when paravirt
#: spinlocks are on), the rwlock slow paths (``kernel/locking/qrwlock.c``), a mutex's
#: optimistic spin queue (``kernel/locking/osq_lock.c: osq_lock()``), ``try_to_wake_up()``
#: (``kernel/sched/core.c``: its ``smp_cond_load_acquire(&p->on_cpu, !VAL)`` and its run-queue
#: lock), the cross-CPU calls that wait in ``csd_lock_wait()`` (``kernel/smp.c``), and cpuidle's
#: polling state (``drivers/cpuidle/poll_state.c: poll_idle()``); and the HPET clocksource's
#: read (``arch/x86/kernel/hpet.c: read_hpet()``), whose readers spin while another CPU holds
#: ``hpet.lock`` across its HPET counter read.
SPINS = ("native_queued_spin_lock_slowpath", "__pv_queued_spin_lock_slowpath", "queued_read_lock_slowpath",
         "queued_write_lock_slowpath", "osq_lock", "try_to_wake_up", "smp_call_function_many_cond",
         "smp_call_function_single", "poll_idle", "read_hpet")
#: The entries whose kernel stack is kept: the lock slow paths, to name the lock by its taker,
#: and the HPET read, to name the clock's reader.
STACKED = ("native_queued_spin_lock_slowpath", "__pv_queued_spin_lock_slowpath", "queued_read_lock_slowpath",
           "queued_write_lock_slowpath", "osq_lock", "read_hpet")

#: Per CPU's trace (``per_cpu/cpuN/trace``, so a stack follows its own event): entries pushed per
#: function, a return pops the newest (an interrupt may nest a second slow path on the CPU). Prints
#: "fn F N SUM_US MAX_US B0..B5" (calls by time inside: <1, <10, <100 µs, <1, <10 ms, more),
#: "site F SIG N SUM_US" (the entry's first 12 stack frames), "idle STATE N".
PAIR_AWK = r"""
function bucket(d) { return d < 1 ? 0 : d < 10 ? 1 : d < 100 ? 2 : d < 1000 ? 3 : d < 10000 ? 4 : 5 }
/^## cpu/ { split("", depth); split("", at); split("", sig); want = ""; next }
/^ => / { if (want != "" && nf < 12) { s = $2; sub(/\+0x.*/, "", s); sig[want] = sig[want] "<" s; nf++ } next }
{
  want = ""
  ts = -1
  for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+:$/) { ts = substr($i, 1, length($i) - 1) * 1e6; ev = $(i + 1); break }
  if (ts < 0) next
  if (ev == "<stack") { want = last; nf = 0; next }
  if (ev == "cpu_idle:") { st = $(i + 2); sub(/^state=/, "", st); if (st != "4294967295") idle[st]++; next }
  f = substr(ev, 3, length(ev) - 3)
  if (ev ~ /^e_/) { d = ++depth[f]; at[f, d] = ts; last = f SUBSEP d; sig[last] = ""; next }
  if (ev ~ /^x_/ && depth[f] > 0) {
    d = depth[f]--; dur = ts - at[f, d]
    n[f]++; sum[f] += dur; if (dur > mx[f]) mx[f] = dur; b[f, bucket(dur)]++
    if (sig[f, d] != "") { sn[f " " sig[f, d]]++; ss[f " " sig[f, d]] += dur }
  }
}
END {
  for (f in n) { printf "fn %s %d %.1f %.1f", f, n[f], sum[f], mx[f]; for (k = 0; k < 6; k++) printf " %d", b[f, k]; print "" }
  for (s in sn) printf "site %s %d %.1f\n", s, sn[s], ss[s]
  for (s in idle) print "idle", s, idle[s]
}
"""

#: The hist of the local timer interrupt's stacks: per stack its hits and the frames below the
#: interrupt's entry (the interrupted code first, with its offset).
HIST_AWK = r"""
/^\{ stacktrace:/ { s = ""; k = 0; on = 0; next }
/^ *} hitcount:/ { print "tick", $NF, (s != "" ? s : "<user"); next }
{ f = $1; if (on && k < 4) { if (k > 0) sub(/\+0x.*/, "", f); s = s "<" f; k++ } if (f ~ /^asm_sysvec_apic_timer_interrupt/) on = 1 }
"""

JOB = r"""T=/sys/kernel/debug/tracing
[ -d $T/events ] || { mkdir -p /sys/kernel/tracing; mount -t tracefs nodev /sys/kernel/tracing; T=/sys/kernel/tracing; }
[ -n "$3" ] && echo "$3" > /sys/devices/system/clocksource/clocksource0/current_clocksource
echo "== cpuidle"
echo "driver $(cat /sys/devices/system/cpu/cpuidle/current_driver 2>&1) governor $(cat /sys/devices/system/cpu/cpuidle/current_governor_ro 2>&1)"
for s in /sys/devices/system/cpu/cpu0/cpuidle/state*; do [ -d $s ] && echo "$s $(cat $s/name) usage $(cat $s/usage) disable $(cat $s/disable)"; done
echo "cmdline $(cat /proc/cmdline)"
C=/sys/devices/system/clocksource/clocksource0; echo "clocksource $(cat $C/current_clocksource) of $(cat $C/available_clocksource)"
dmesg | grep -i -E 'tsc|clocksource|hpet' | sed 's/^/dmesg /'
echo "cpu $(grep -m1 vendor_id /proc/cpuinfo) flags: $(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E 'tsc|invtsc' | tr '\n' ' ')"
for d in /sys/kernel/debug/sched/domains/cpu0/domain*; do [ -d $d ] && echo "domain $(cat $d/name) $(cat $d/flags)"; done
echo "features $(cat /sys/kernel/debug/sched/features)"
echo "== probes"
if [ "$2" = probes ]; then
  echo 8192 > $T/buffer_size_kb
  for f in @SPINS@; do
    if echo "p:e_$f $f" >> $T/kprobe_events 2>/dev/null; then
      if echo "r:x_$f $f" >> $T/kprobe_events 2>/dev/null; then echo "probe $f ok"; else echo "-:e_$f" >> $T/kprobe_events; echo "probe $f failed"; fi
    else echo "probe $f failed"; fi
  done
  for f in @STACKED@; do [ -d $T/events/kprobes/e_$f ] && echo stacktrace > $T/events/kprobes/e_$f/trigger; done
  [ -d $T/events/kprobes ] && echo 1 > $T/events/kprobes/enable
  echo 1 > $T/events/power/cpu_idle/enable
  echo 'hist:keys=stacktrace:vals=hitcount:sort=hitcount.descending:size=8192' > $T/events/irq_vectors/local_timer_entry/trigger
  echo 1 > $T/tracing_on
elif [ "$2" = pauses ]; then
  X=$(awk '$3 == "_text" { print $1; exit }' /proc/kallsyms); X=${X#ffffffff}; D=$((0x$X - 0x81000000)); ok=0; no=0
  for o in @PAUSES@; do
    if printf 'p:p_%x 0xffffffff%08x\n' $o $((0x81000000 + D + o)) >> $T/kprobe_events 2>/dev/null; then ok=$((ok + 1)); else no=$((no + 1)); echo "p_$(printf %x $o) -1" >> /tmp/refused; fi
  done
  echo "sites $ok probed $no refused"
  echo 1 > $T/events/kprobes/enable
  cat $T/kprobe_profile > /tmp/p0
fi
echo "@WINDOW_START@" > /dev/console
numalab-agent run --interval-ms=1000 --maps-budget-pct=100 --output=/tmp/inner.jsonl -- $1 > /tmp/cmd.out 2>&1
R=$?
echo "@WINDOW_END@" > /dev/console
echo "== status $R"
if [ "$2" = probes ]; then
  echo 0 > $T/tracing_on
  echo "== profile"; cat $T/kprobe_profile
  echo "== overrun"; grep -h overrun $T/per_cpu/cpu*/stats
  echo "== pairs"
  for c in $T/per_cpu/cpu*; do echo "## cpu ${c##*cpu}"; cat $c/trace; done | awk '""" + PAIR_AWK + r"""'
  echo "== ticks"; awk '""" + HIST_AWK + r"""' $T/events/irq_vectors/local_timer_entry/hist | sort -k2nr
  echo '!hist:keys=stacktrace:vals=hitcount:sort=hitcount.descending:size=8192' > $T/events/irq_vectors/local_timer_entry/trigger
  echo 0 > $T/events/kprobes/enable; echo > $T/kprobe_events
elif [ "$2" = pauses ]; then
  cat $T/kprobe_profile > /tmp/p1
  echo 0 > $T/events/kprobes/enable
  echo "== pauses"
  # Each site's hits over the command (the profile's difference), named by the nearest text
  # symbol below it: kallsyms and the sites merged in address order.
  awk 'NR == FNR { h0[$1] = $2; next } { d = $2 - h0[$1]; if (d > 0) print $1, d }' /tmp/p0 /tmp/p1 > /tmp/hits
  cat /tmp/refused >> /tmp/hits 2>/dev/null
  { grep -i ' t ' /proc/kallsyms | awk '{ print $1, "s", $3 }'
    while read e n; do printf 'ffffffff%08x h %s %s\n' $((0x81000000 + D + 0x${e#p_})) $n $e; done < /tmp/hits; } |
    sort | awk '$2 == "s" { sa = $1; sn = $3; next } $2 == "h" { print "pause", $1, sn, sa, $3, $4 }'
  echo > $T/kprobe_events
fi
echo "== command"; tail -n 5 /tmp/cmd.out
"""
JOB = JOB.replace("@SPINS@", " ".join(SPINS)).replace("@STACKED@", " ".join(STACKED))

#: Where the guest kernel's image is linked (x86-64 ``__START_KERNEL_map`` + 16 MiB); its PAUSE
#: sites are passed to the guest as offsets from here, and placed there past KASLR's slide.
TEXT = 0xFFFFFFFF81000000


def pause_offsets(kernel: str) -> list[int]:
    """Every PAUSE instruction in the guest kernel's ``.text`` (``cpu_relax()``: x86
    ``rep_nop()``), as offsets from ``TEXT``, from ``objdump -d`` of the image inside the
    bzImage (``vm/setup.py: extract_vmlinux()``)."""
    import tempfile

    from numalab.vm import setup as vm_setup

    image = vm_setup.extract_vmlinux(Path(kernel))
    if image is None:
        sys.exit(f"record: no vmlinux inside {kernel}")
    with tempfile.NamedTemporaryFile(suffix=".elf") as f:
        f.write(image)
        f.flush()
        text = subprocess.run(["objdump", "-d", "--section=.text", "--no-show-raw-insn", f.name],
                              capture_output=True, text=True, check=True).stdout
    return [int(m[1], 16) - TEXT for m in re.finditer(r"^\s*([0-9a-f]+):\s+pause\b", text, re.M)]

#: Frames of the probe's own machinery and of the lock's wrappers, dropped to name its taker.
WRAPPER = re.compile(r"^(native_queued_spin_lock_slowpath|__pv_queued_spin_lock_slowpath|queued_(read|write)_lock_slowpath|"
                     r"osq_lock|aggr_pre_handler|_raw_(spin|read|write)_lock.*|do_raw_spin_lock|raw_spin_rq_lock_nested|kprobe.*|"
                     r"ftrace.*|arch_ftrace.*|trace.*|event_triggers.*|.*_trampoline.*|optimized_callback|"
                     r"0x[0-9a-f]+|__mutex_lock.*|mutex_lock.*)$")


def record(case: str, condition: str, mode: str, out: str, clocksource: str = "") -> None:
    from numalab.vm import check, hostthreads
    from numalab.vm import run as vm_run
    from numalab.vm import setup as vm_setup

    guest = vm_setup.load(lambda s: None)
    req = check._plan(check.CASES[case], None, "tcg", 300.0, guest.kernel_version, lambda s: None).request
    sampler = hostthreads.HostSampler()
    sites = " ".join(str(o) for o in pause_offsets(guest.kernel)) if mode == "pauses" else ""
    job = replace(req, command=["sh", "-c", JOB.replace("@WINDOW_START@", hostthreads.WINDOW_START)
                                .replace("@WINDOW_END@", hostthreads.WINDOW_END).replace("@PAUSES@", sites),
                                "sh", " ".join(req.command), mode, clocksource],
                  interval_ms=60000)
    loop = subprocess.Popen(["sh", "-c", "while :; do :; done"], start_new_session=True) if condition == "busy-loop" else None
    t0 = time.monotonic()
    loop_share = None
    try:
        res = vm_run.run(job, watch=sampler)
    finally:
        if loop is not None:
            # The loop's share of a CPU over the boot (its run time in /proc/PID/schedstat): a
            # condition check, §10.18's loop gets 0.98-1.0.
            loop_share = int(Path(f"/proc/{loop.pid}/schedstat").read_text().split()[0]) / 1e9 / (time.monotonic() - t0)
            os.killpg(loop.pid, signal.SIGTERM)
            loop.wait()
    Path(out + ".txt").write_text(res.text("stdout") + "\n== stderr\n" + res.text("stderr")[-2000:])
    host = sampler.result()
    cores = {"window_s": host.window_s, "vcpu": sum(t.share for t in host.vcpus),
             "main": host.main_loop.share if host.main_loop else 0.0, "loop": loop_share} if host else {}
    Path(out + ".host").write_text(json.dumps(cores))
    if res.status != 0:
        sys.exit(f"record: the guest's job failed (status {res.status}); its output is in {out}.txt")




def taker(sig: str) -> str:
    """The first three frames of a lock slow path's stack past the lock's own and the probe's."""
    frames = [f for f in sig.split("<")[1:] if not WRAPPER.match(f)]
    return "<".join(frames[:3]) or "?"


def report(out: str) -> None:
    from numalab.vm.sched_trace import sections

    sec = sections(Path(out + ".txt").read_text())
    host = json.loads(Path(out + ".host").read_text() or "{}") if Path(out + ".host").exists() else {}
    cmd = [json.loads(x) for x in sec.get("command", []) if x.startswith("{")]
    if not cmd:
        sys.exit(f"report: {out}.txt has no command record")
    reps, time_s = int(cmd[-1]["reps"]), float(cmd[-1]["time_s"])
    cores = (host.get("vcpu", 0.0) + host.get("main", 0.0)) if host else float("nan")
    loop = f", the busy loop {host['loop']:.2f} of a CPU" if host.get("loop") is not None else ""
    print(f"{out}: barrier {time_s / reps * 1e3:.3f} ms ({reps} barriers, {time_s:.3f} s), QEMU {cores:.2f} cores{loop}")
    for line in sec.get("cpuidle", []):
        if not line.startswith(("cmdline", "features")):
            print("  " + line)
    failed = [x.split()[1] for x in sec.get("probes", []) if x.endswith("failed")]
    if failed:
        print("  not probed: " + ", ".join(failed))
    for line in sec.get("profile", []):
        a = line.split()
        if len(a) == 3 and int(a[2]):
            print(f"  MISSED {a[0]} {a[2]}")
    over = [x for x in sec.get("overrun", []) if x.split()[-1] != "0"]
    if over:
        print("  buffer overruns: " + "; ".join(over))
    print("  per barrier: calls, µs inside (guest clock), longest µs; calls by time inside <1/<10/<100 µs/<1/<10 ms/more")
    sites: Counter[tuple[str, str]] = Counter()
    site_us: dict[tuple[str, str], float] = {}
    for line in sorted(sec.get("pairs", [])):
        a = line.split()
        if a[0] == "fn":
            n, us, mx = int(a[2]), float(a[3]), float(a[4])
            print(f"    {a[1]:34} {n / reps:9.2f} {us / reps:9.1f} {mx:9.1f}   " + " ".join(f"{int(x) / reps:.2f}" for x in a[5:]))
        elif a[0] == "site":
            key = (a[1], taker(a[2]))
            sites[key] += int(a[3])
            site_us[key] = site_us.get(key, 0.0) + float(a[4])
        elif a[0] == "idle":
            print(f"    idle state {a[1]} entries {int(a[2]) / reps:.2f} a barrier")
    if sites:
        print("  lock slow paths (and HPET reads) by taker, per barrier: calls, µs inside; 12 a function")
        shown: Counter[str] = Counter()
        for (f, who), n in sites.most_common():
            shown[f] += 1
            if shown[f] > 12:
                continue
            print(f"    {f.replace('native_queued_spin_lock_slowpath', 'qspinlock'):24} {who:70} {n / reps:8.2f} {site_us[f, who] / reps:8.1f}")
    pauses: Counter[str] = Counter()
    refused: list[str] = []
    for line in sec.get("pauses", []):
        a = line.split()   # pause ADDR SYMBOL SYMBOL_ADDR HITS EVENT (HITS -1: the kernel refused the probe)
        if len(a) == 6 and a[4] == "-1":
            refused.append(f"{a[2]}+{int(a[1], 16) - int(a[3], 16):#x}")
        elif len(a) == 6:
            pauses[f"{a[2]}+{int(a[1], 16) - int(a[3], 16):#x}"] += int(a[4])
    placed = [x for x in sec.get("probes", []) if x.startswith("sites")]
    if placed or pauses:
        total = sum(pauses.values())
        print(f"  PAUSEs executed in the kernel's text ({placed[0] if placed else '?'}): {total / reps:.1f} a barrier; by site:")
        for k, v in pauses.most_common(15):
            print(f"    {v / reps:9.2f} {v / total:6.3f} {k}")
    if refused:
        print("  PAUSE sites not probed: " + ", ".join(sorted(refused)))
    ticks: Counter[str] = Counter()
    for line in sec.get("ticks", []):
        a = line.split()
        if len(a) == 3:
            top = a[2].split("<")[1:]
            ticks["<".join([re.sub(r"/0x[0-9a-f]+$", "", top[0])] + top[1:3]) if top else "?"] += int(a[1])
    total = sum(ticks.values())
    if total:
        print(f"  where the local timer interrupt found the vCPU ({total} ticks, {total / reps:.2f} a barrier): share")
        for k, v in ticks.most_common(12):
            print(f"    {v / total:6.3f} {k}")


USAGE = ("usage: vm_guest_spin.py record CASE {idle,busy-loop} {pauses,probes,none} OUT [CLOCKSOURCE]\n"
         "       vm_guest_spin.py report OUT [OUT ...]")


def fail(what: str) -> None:
    """A usage error: the usage and one line, exit 2 (as the other bench scripts)."""
    print(f"{USAGE}\nvm_guest_spin.py: error: {what}", file=sys.stderr)
    sys.exit(2)


def main() -> None:
    a = sys.argv[1:]
    if a[:1] in (["-h"], ["--help"]):
        print(f"{USAGE}\n\n{__doc__}")
    elif len(a) in (5, 6) and a[0] == "record":
        from numalab.vm import check

        if a[1] not in check.CASES:
            fail(f"no case {a[1]!r} (one of numalab vm check's: {', '.join(check.CASES)})")
        if a[2] not in ("idle", "busy-loop"):
            fail(f"condition {a[2]!r} is neither idle nor busy-loop")
        if a[3] not in ("pauses", "probes", "none"):
            fail(f"mode {a[3]!r} is not pauses, probes or none")
        record(*a[1:])
    elif len(a) >= 2 and a[0] == "report" and not any(x.startswith("-") for x in a[1:]):
        for out in a[1:]:
            if not Path(out + ".txt").is_file():
                fail(f"no {out}.txt (record writes it)")
            report(out)
    else:
        fail(f"no command or wrong arguments: {' '.join(a) or 'none'}")


if __name__ == "__main__":
    main()
