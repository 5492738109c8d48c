//! Automatic NUMA balancing: the testable statements of docs/balancing.md §18 (items 28-63
//! that the model covers), each test named after its item. Fine-grained rules drive the
//! mechanism directly through a rig (hinting faults and scans on hand-placed pages); the rest
//! run whole workloads.

use numalab_model::{Machine, PolicyMode};
use numalab_sim::alloc::Allocator;
use numalab_sim::input::{Balancing, Costs, Pattern, PhaseSpec, RegionSpec, StepSpec, Sync};
use numalab_sim::mempolicy::Resolved;
use numalab_sim::numa_balancing::{scan_period_bounds, MmView, Numab, World};
use numalab_sim::pages::{self, Region, CPUPID_UNSET};
use numalab_sim::sched::Sched;
use numalab_sim::{simulate, Kernel, SimConfig, SimOutput, WorkloadSpec};

use crate::common::*;

// ---------------------------------------------------------------------------------------------
// The rig: machine4 (4 nodes x 4 cores), one process, regions of hand-placed 4 KiB pages.

struct Rig {
    m: Machine,
    kernel: Kernel,
    alloc: Allocator,
    sched: Sched,
    regions: Vec<Region>,
    task: Resolved,
    pages_node: Vec<u64>,
    nb: Numab,
    running: Vec<bool>,
}

impl Rig {
    /// `threads` threads, thread t on the first CPU of node `nodes[t]`; regions of `pages` each.
    fn new(kernel: Kernel, nodes: &[usize], regions: &[u64]) -> Rig {
        let m = machine4();
        let threads = nodes.len();
        let mut sched = Sched::new(&m, &unpinned(), kernel, 1, threads).unwrap();
        for (t, &n) in nodes.iter().enumerate() {
            sched.cpu[t] = first_cpu(&sched, n) + t % 2;
        }
        let specs: Vec<RegionSpec> =
            regions.iter().enumerate().map(|(i, &p)| RegionSpec::anonymous(format!("r{i}"), p * 4096, 1)).collect();
        let mut regions = pages::layout(&specs, vec![None; specs.len()]);
        regions.iter_mut().for_each(|r| r.enable_balancing());
        let knobs = Balancing { enabled: true, ..Balancing::default() };
        let refs: Vec<&[Region]> = vec![regions.as_slice()];
        let nb = Numab::new(&m, kernel, &knobs, &Costs::default(), &[(0..threads).collect()], &refs, &sched);
        let task = Resolved::new(&numalab_model::MemPolicy::default_policy(), &m);
        // Only thread 0 runs (and so scans) unless a test says otherwise.
        let running = (0..threads).map(|t| t == 0).collect();
        Rig { alloc: Allocator::new(&m, kernel), pages_node: vec![0; 4], m, kernel, sched, regions, task, nb, running }
    }

    /// Put every page of region `r` on `node` (as a first touch would).
    fn place(&mut self, r: usize, node: usize) {
        for u in 0..self.regions[r].units() {
            self.regions[r].node[u as usize] = node as u8;
            self.alloc.free[node] -= 1;
            self.pages_node[node] += 1;
            self.nb.on_alloc(0, 1);
        }
    }

    fn cpupid(&self, tid: usize) -> u32 {
        ((self.sched.cpu[tid] as u32) << 8) | ((tid as u32 + 1) & 0xff)
    }

    /// Thread `tid` touches entry `u` of region `r` while it is marked, at time `t` (s).
    fn fault(&mut self, tid: usize, r: usize, u: u64, t: f64) -> usize {
        self.regions[r].set_marked(u, true);
        let mut w = World { alloc: &mut self.alloc, sched: &mut self.sched, pages_node: &mut self.pages_node };
        let mut view = MmView { regions: &mut self.regions, task_policy: &self.task };
        self.nb.hint_fault(&mut w, &mut view, tid, r, u, t);
        self.regions[r].node[u as usize] as usize
    }

    /// Thread `tid` touches every page of region `r` once, at time `t`.
    fn fault_all(&mut self, tid: usize, r: usize, t: f64) {
        for u in 0..self.regions[r].units() {
            if self.regions[r].is_marked(u) {
                self.fault(tid, r, u, t);
            }
        }
    }

    /// An epoch end at `t` (s) after every thread ran `cpu_s` more: ticks and queued scans.
    fn tick(&mut self, t: f64, cpu_s: f64) {
        for tid in 0..self.running.len() {
            self.nb.add_runtime(tid, cpu_s);
        }
        let mut w = World { alloc: &mut self.alloc, sched: &mut self.sched, pages_node: &mut self.pages_node };
        let mut views = [MmView { regions: &mut self.regions, task_policy: &self.task }];
        self.nb.tick(&mut w, &mut views, t, &self.running);
    }

    fn period(&self, tid: usize) -> u32 {
        self.nb.thread_sched(tid, &self.sched).numa_scan_period_ms
    }

    fn node_of(&self, tid: usize) -> usize {
        self.sched.pu_node[self.sched.cpu[tid]]
    }
}

fn first_cpu(s: &Sched, node: usize) -> usize {
    s.pu_node.iter().position(|&n| n == node).unwrap()
}

// ---------------------------------------------------------------------------------------------
// Workloads.

fn run(w: &WorkloadSpec, p: &numalab_sim::Placement, c: &SimConfig) -> SimOutput {
    let out = simulate(&machine4(), w, p, c).unwrap();
    assert_eq!(out.status, "ok", "{:?}", out.error);
    out
}

/// Balancing on with a short delay and period (so a test run covers many passes).
fn fast(kernel: Kernel) -> SimConfig {
    let mut c = balancing(kernel);
    c.balancing.scan_delay_ms = 100;
    c.balancing.scan_period_min_ms = 100;
    c
}

fn both() -> [Kernel; 2] {
    [Kernel::V3_13, Kernel::V6_13]
}

// --- Policies -------------------------------------------------------------------------------

#[test]
fn item28_interleave_memory_is_never_scanned() {
    for kernel in both() {
        let w = stream_like(64, 16, Pattern::Master, 400);
        let out = run(&w, &pinned(policy(PolicyMode::Interleave, &[0, 1, 2, 3])), &fast(kernel));
        assert_eq!(out.vmstat, numalab_sim::output::Vmstat::default(), "{kernel:?}");
        assert!(out.threads.iter().all(|t| t.sched.as_ref().unwrap().total_numa_faults == 0));
        // The default-policy run of the same workload is scanned and migrates.
        let default = run(&w, &pinned(policy(PolicyMode::Default, &[])), &fast(kernel));
        assert!(
            default.vmstat.numa_hint_faults > 0 && default.vmstat.numa_pages_migrated > 0,
            "{kernel:?} {:?}",
            default.vmstat
        );
    }
}

#[test]
fn item28_bind_without_the_balancing_flag_is_never_scanned() {
    let w = stream_like(64, 16, Pattern::Master, 400);
    let out = run(&w, &pinned(policy(PolicyMode::Bind, &[0, 1])), &fast(Kernel::V6_13));
    assert_eq!(out.vmstat.numa_pte_updates, 0);
}

#[test]
fn item29_membind_with_balancing_migrates_only_inside_the_mask() {
    let w = stream_like(64, 16, Pattern::Master, 400);
    let mut pol = policy(PolicyMode::Bind, &[0, 1]);
    pol.flags.numa_balancing = true;
    let out = run(&w, &pinned(pol.clone()), &fast(Kernel::V6_13));
    assert!(out.vmstat.numa_pages_migrated > 0, "{:?}", out.vmstat);
    assert_eq!(out.pages_per_node[2] + out.pages_per_node[3], 0, "{:?}", out.pages_per_node);
    assert!(out.pages_per_node[1] > 0);
    // 3.13 has no MPOL_F_NUMA_BALANCING (numactl falls back to plain bind): nothing scanned.
    let k313 = run(&w, &pinned(pol), &fast(Kernel::V3_13));
    assert_eq!(k313.vmstat.numa_pte_updates, 0);
}

// --- Scanning -------------------------------------------------------------------------------

#[test]
fn item30_nothing_is_scanned_before_the_scan_delay() {
    for (kernel, delay) in [(Kernel::V6_13, 1000), (Kernel::V3_13, 1000), (Kernel::V6_13, 2500)] {
        let mut c = balancing(kernel);
        c.balancing.scan_delay_ms = delay;
        let out = run(&stream_like(64, 16, Pattern::Master, 1200), &pinned(policy(PolicyMode::Default, &[])), &c);
        let first = out
            .timeline
            .iter()
            .find(|p| p.vmstat.as_ref().unwrap().numa_pte_updates > 0)
            .expect("scanned at some point");
        // The timeline point closes the interval in which the first scan ran.
        assert!(first.t_s >= delay as f64 * 1e-3, "{kernel:?}: first scan in the interval ending at {} s", first.t_s);
    }
}

#[test]
fn item30_no_scan_before_a_thread_has_run_scan_delay_of_cpu_time() {
    let mut r = Rig::new(Kernel::V6_13, &[1, 2], &[512]);
    r.place(0, 0);
    // 5 s of wall time but only 0.5 s of CPU: no task_tick_numa crossing, nothing marked.
    for k in 1..=10 {
        r.tick(k as f64 * 0.5, 0.05);
    }
    assert_eq!(r.nb.vmstat.numa_pte_updates, 0);
}

#[test]
fn item31_one_thread_per_mm_scans_per_gate_period() {
    // 16 threads all past their thresholds at every tick: still one window per gate period.
    let mut r = Rig::new(Kernel::V6_13, &[0, 0, 1, 1, 2, 2, 3, 3, 0, 0, 1, 1, 2, 2, 3, 3], &[4 * 65536]);
    r.running = vec![true; 16];
    r.place(0, 0);
    let mut windows = Vec::new();
    for k in 1..=400 {
        let before = r.nb.vmstat.numa_pte_updates;
        r.tick(k as f64 * 0.01, 0.5);
        if r.nb.vmstat.numa_pte_updates > before {
            windows.push(k);
        }
    }
    // RSS 1 GiB: task_scan_min 250 ms; the first work arms the gate, scan_delay later it opens.
    assert!(windows.len() >= 4, "{windows:?}");
    for pair in windows.windows(2) {
        assert!(pair[1] - pair[0] >= 25, "two windows {} ms apart: {windows:?}", (pair[1] - pair[0]) * 10);
    }
}

#[test]
fn item32_one_window_marks_at_most_scan_size() {
    for kernel in both() {
        let mut c = fast(kernel);
        c.balancing.scan_size_mb = 16;
        let out = run(&stream_like(64, 16, Pattern::Block, 1500), &pinned(policy(PolicyMode::Default, &[])), &c);
        let first = &out.balancing_passes[0];
        assert_eq!(first.pages_marked, 16384, "{kernel:?} {first:?}");
        assert_eq!(first.windows, 4, "{kernel:?} {first:?}");
    }
}

#[test]
fn item32_k6_stops_after_eight_times_scan_size_of_virtual_space() {
    // Region 1 (lower addresses, scanned first) unpopulated, 256 MiB; region 0 populated: with
    // a 16 MB window the 6.13 walk stops after 128 MiB of empty space; 3.13 crosses it for free.
    for (kernel, marked_first) in [(Kernel::V6_13, 0), (Kernel::V3_13, 4096)] {
        let mut r = Rig::new(kernel, &[1, 2], &[8192, 65536]);
        r.place(0, 0);
        r.nb = numab_with(&r, Balancing { enabled: true, scan_size_mb: 16, ..Balancing::default() });
        r.tick(1.1, 1.1);
        r.tick(2.2, 5.0);
        assert_eq!(r.nb.vmstat.numa_pte_updates, marked_first, "{kernel:?}");
    }
}

#[test]
fn item33_k313_unpopulated_space_before_the_first_marked_page_is_free() {
    let mut r = Rig::new(Kernel::V3_13, &[1, 2], &[8192, 65536]);
    r.place(0, 0);
    r.nb = numab_with(&r, Balancing { enabled: true, scan_size_mb: 16, ..Balancing::default() });
    r.tick(1.1, 1.1);
    r.tick(2.2, 5.0);
    // The window skipped 256 MiB of empty VMA and still marked a full 16 MB of pages.
    assert_eq!(r.nb.vmstat.numa_pte_updates, 4096);
}

#[test]
fn item34_scan_seq_counts_completed_passes() {
    for kernel in both() {
        let out =
            run(&stream_like(64, 16, Pattern::Block, 1500), &pinned(policy(PolicyMode::Default, &[])), &fast(kernel));
        let passes: Vec<u32> = out.balancing_passes.iter().map(|p| p.pass).collect();
        assert!(passes.len() >= 3, "{kernel:?} {passes:?}");
        assert_eq!(passes, (1..=passes.len() as u32).collect::<Vec<_>>());
        let seq = out.threads[0].sched.as_ref().unwrap().numa_scan_seq;
        assert_eq!(seq as usize, passes.len());
    }
}

#[test]
fn scan_size_larger_than_the_rss_covers_the_process_in_one_window() {
    for kernel in both() {
        let mut c = fast(kernel);
        c.balancing.scan_size_mb = 1024;
        let out = run(&stream_like(64, 16, Pattern::Block, 1500), &pinned(policy(PolicyMode::Default, &[])), &c);
        assert!(out.balancing_passes.len() >= 2);
        for p in &out.balancing_passes {
            assert_eq!(p.windows, 1, "{kernel:?} {p:?}");
        }
        assert_eq!(out.balancing_passes[0].pages_marked, 16384);
    }
}

#[test]
fn item35_vmas_whose_policy_lacks_mof_are_never_marked() {
    let mut w = stream_like(64, 16, Pattern::Block, 1500);
    let mut b = w.regions[0].clone();
    b.name = "b".into();
    b.policy = Some(policy(PolicyMode::Interleave, &[0, 1, 2, 3]));
    w.regions.push(b);
    w.phases[0].accesses.push(access(1, Pattern::Block, 1.0, 1.0));
    w.phases[1].accesses.push(access(1, Pattern::Block, 1.0, 0.0));
    for kernel in both() {
        let out = run(&w, &pinned(policy(PolicyMode::Default, &[])), &fast(kernel));
        let first = &out.balancing_passes[0];
        assert_eq!(first.pages_marked, 16384, "{kernel:?}: only region a is scanned: {first:?}");
    }
}

#[test]
fn item36_a_thp_is_marked_as_one_pmd() {
    let mut w = stream_like(64, 16, Pattern::Master, 400);
    w.regions[0].thp = true;
    let out = run(&w, &pinned(policy(PolicyMode::Default, &[])), &fast(Kernel::V6_13));
    assert!(out.vmstat.numa_huge_pte_updates > 0);
    assert_eq!(out.vmstat.numa_pte_updates, 512 * out.vmstat.numa_huge_pte_updates);
    // One hinting fault per huge page, and it moves whole.
    assert!(out.vmstat.numa_hint_faults <= out.vmstat.numa_huge_pte_updates);
    assert_eq!(out.vmstat.numa_pages_migrated % 512, 0);
}

#[test]
fn item37_k6_single_threaded_process_local_pages_are_not_marked() {
    let w = stream_like(32, 1, Pattern::Block, 4000);
    let k6 = run(&w, &pinned(policy(PolicyMode::Default, &[])), &fast(Kernel::V6_13));
    assert_eq!(k6.vmstat.numa_pte_updates, 0, "{:?}", k6.vmstat);
    let k313 = run(&w, &pinned(policy(PolicyMode::Default, &[])), &fast(Kernel::V3_13));
    assert!(k313.vmstat.numa_pte_updates > 0);
}

#[test]
fn item38_task_scan_min_values() {
    let d = Balancing::default();
    let gib = 1 << 18; // base pages
    assert_eq!(scan_period_bounds(&d, gib).0, 250);
    assert_eq!(scan_period_bounds(&d, 8 * gib).0, 100);
    for min in [0, 50, 100] {
        let k = Balancing { scan_size_mb: 128, scan_period_min_ms: min, ..d.clone() };
        assert_eq!(scan_period_bounds(&k, gib).0, 50, "period_min {min}");
    }
    // Floors: 64 MB windows -> 25 ms; a window of 2560 MB or more -> 1000 ms.
    assert_eq!(scan_period_bounds(&Balancing { scan_size_mb: 64, scan_period_min_ms: 0, ..d.clone() }, gib).0, 25);
    assert_eq!(scan_period_bounds(&Balancing { scan_size_mb: 4096, ..d }, gib).0, 1000);
}

#[test]
fn item39_task_scan_max_values() {
    let d = Balancing::default();
    let gib = 1 << 18;
    assert_eq!(scan_period_bounds(&d, gib).1, 15000);
    assert_eq!(scan_period_bounds(&d, 8 * gib).1, 1875);
    // Never below the minimum: a maximum of 10 ms is raised to the 100 ms floor.
    let k = Balancing { scan_period_max_ms: 10, ..d };
    let (min, max) = scan_period_bounds(&k, 8 * gib);
    assert_eq!((min, max), (100, 100));
}

/// The rig's scan sequence: thread 0's first crossing arms the gate at 1.1 s, the scan at
/// 2.2 s completes pass 1 (one window covers the region), later scans complete one pass each.
fn pass(r: &mut Rig, t: f64) {
    r.tick(t, 10.0);
}

#[test]
fn item40_scan_period_lengthens_when_faults_are_mostly_local() {
    // Expected after pass 2: 2000 ms (pass 1 folded nothing: doubled) + slots of 200 ms:
    // 3.13 ratio 10 -> +7 slots; 6.x private ratio 10 -> +3 slots.
    for (kernel, expect) in [(Kernel::V3_13, 3400), (Kernel::V6_13, 2600)] {
        let mut r = Rig::new(kernel, &[1, 2], &[512]);
        r.place(0, 1);
        pass(&mut r, 1.1);
        pass(&mut r, 2.2);
        r.fault_all(0, 0, 2.3); // folds pass 0 (nothing): doubles to 2000
        assert_eq!(r.period(0), 2000, "{kernel:?}");
        pass(&mut r, 4.4);
        r.fault(0, 0, 0, 4.5); // folds pass 1: all local
        assert_eq!(r.period(0), expect, "{kernel:?}");
    }
}

#[test]
fn item40_scan_period_shortens_when_faults_are_mostly_remote() {
    // Remote faults that stay remote (the two-stage filter holds shared pages, the full target
    // refuses private ones). 3.13: half shared, half private, ratio 0 -> -3 slots scaled by the
    // private share (5/10): 2000 - 300; all shared: no speed-up. 6.x, all shared: local and
    // private ratios 0 -> -7 slots, clamped at task_scan_min (1000 ms). (All-private remote
    // faults are neither local nor shared: they double the period, item 41.) Task 1 shares
    // node 1 with task 0, so 3.13 finds no swap partner elsewhere.
    for (kernel, every_shared, expect) in [(Kernel::V3_13, 2, 1700), (Kernel::V3_13, 1, 2000), (Kernel::V6_13, 1, 1000)]
    {
        let mut r = Rig::new(kernel, &[1, 1], &[512]);
        r.place(0, 0);
        r.alloc.free[1] = 0;
        // Shared: last faulted by task 1 from node 3. Private: never faulted.
        let other = ((first_cpu(&r.sched, 3) as u32) << 8) | 2;
        let set = |r: &mut Rig| {
            for (u, c) in r.regions[0].cpupid.iter_mut().enumerate() {
                *c = if u % every_shared == 0 { other } else { CPUPID_UNSET };
            }
        };
        pass(&mut r, 1.1);
        pass(&mut r, 2.2);
        set(&mut r);
        r.fault_all(0, 0, 2.3);
        assert_eq!(r.period(0), 2000, "{kernel:?}");
        pass(&mut r, 4.4);
        set(&mut r);
        r.fault(0, 0, 0, 4.5);
        assert_eq!(r.period(0), expect, "{kernel:?} one in {every_shared} shared");
        assert_eq!(r.pages_node, vec![512, 0, 0, 0], "nothing migrated");
    }
}

#[test]
fn item41_no_local_and_no_shared_faults_double_the_period_and_push_the_gate() {
    // 6.x: remote private faults (the pages migrate, but locality is judged before) are
    // neither local nor shared: the period doubles, 2000 -> 4000 ms.
    let mut r = Rig::new(Kernel::V6_13, &[1, 2], &[512]);
    r.place(0, 0);
    pass(&mut r, 1.1);
    pass(&mut r, 2.2);
    r.fault_all(0, 0, 2.3);
    pass(&mut r, 4.4);
    r.fault(0, 0, 0, 4.5);
    assert_eq!(r.period(0), 4000);
    assert_eq!(r.pages_node[1], 512, "the pages followed the thread");
    // The gate moved to now + 4 s: a scan at 8.4 s is too early, at 8.6 s it runs.
    let before = r.nb.vmstat.numa_pte_updates;
    pass(&mut r, 8.4);
    assert_eq!(r.nb.vmstat.numa_pte_updates, before);
    pass(&mut r, 8.6);
    assert!(r.nb.vmstat.numa_pte_updates > before);
}

#[test]
fn item42_k6_after_a_failed_migration_the_period_only_doubles() {
    let mut r = Rig::new(Kernel::V6_13, &[1, 2], &[512]);
    r.place(0, 0);
    r.alloc.free[1] = 0; // every migration toward node 1 is refused
    pass(&mut r, 1.1);
    pass(&mut r, 2.2);
    r.fault_all(0, 0, 2.3);
    pass(&mut r, 4.4);
    r.fault_all(0, 0, 4.5);
    assert_eq!(r.period(0), 4000);
    // Later faults are all local (the task runs where its pages are), yet the failure count
    // is never cleared: doubling goes on.
    r.sched.cpu[0] = first_cpu(&r.sched, 0);
    r.nb.refresh_curr(&r.sched);
    pass(&mut r, 8.6);
    let local = r.nb.vmstat.numa_hint_faults_local;
    r.fault_all(0, 0, 8.7);
    assert_eq!(r.nb.vmstat.numa_hint_faults_local - local, 512);
    assert_eq!(r.period(0), 8000);
}

#[test]
fn item43_k6_scanning_takes_at_most_a_33rd_of_the_thread_cpu_time() {
    // Scans made expensive (1 ms per PTE: a window over the 512 pages costs 0.512 s) and a
    // thread that works all the time (CPU time = wall time, so the 1 s mm gate never binds).
    // 6.x pushes node_stamp by 32x the scan's runtime: between two scans the thread runs
    // period + 2 ticks + 31 x cost of other work, so scanning takes cost / (32 x cost + period
    // + 8 ms) of its CPU time (1/34 here; never above 1/32). 3.13 has no such cap: the gate
    // alone paces it, one scan per second of work.
    for (kernel, lo, hi) in [(Kernel::V6_13, 1.0 / 36.0, 1.0 / 33.0), (Kernel::V3_13, 0.2, 0.4)] {
        let mut r = Rig::new(kernel, &[1, 2], &[512]);
        r.place(0, 0);
        r.nb = numab_full(
            &r,
            Balancing { enabled: true, ..Balancing::default() },
            Costs { scan_pte_ns: 1e6, ..Costs::default() },
        );
        let (tick, ticks) = (0.01, 20_000);
        let mut scans = Vec::new();
        for k in 1..=ticks {
            // The pages are touched between scans (as their hinting faults would unmark them).
            (0..512).for_each(|u| r.regions[0].set_marked(u, false));
            let before = r.nb.vmstat.numa_pte_updates;
            r.tick(k as f64 * tick, tick);
            if r.nb.vmstat.numa_pte_updates > before {
                assert_eq!(r.nb.vmstat.numa_pte_updates - before, 512);
                scans.push(k as f64 * tick);
            }
        }
        let scan_s = r.nb.cost().scan_s;
        assert!((scan_s - 0.512 * scans.len() as f64).abs() < 1e-6, "{kernel:?} {scan_s}");
        let share = scan_s / (ticks as f64 * tick + scan_s);
        assert!(
            share > lo && share < hi,
            "{kernel:?}: scanning took {share:.4} of the CPU time ({} scans)",
            scans.len()
        );
        if kernel == Kernel::V6_13 {
            // Work between consecutive scans: at least 31 x 0.512 s plus the 1 s period.
            for pair in scans.windows(2) {
                assert!(pair[1] - pair[0] >= 31.0 * 0.512 + 1.0, "{scans:?}");
            }
        }
    }
}

#[test]
fn item44_k6_skips_vmas_the_scanning_thread_never_faulted_in() {
    // Three regions; thread 0 (the scanner: it alone crosses its threshold) faults only in
    // region 0. From the third pass on, region 1 is scanned only by the forced retry and
    // region 2 waits for a later window; 3.13 marks everything in one window.
    for (kernel, third) in [(Kernel::V6_13, 1024), (Kernel::V3_13, 1536)] {
        let mut r = Rig::new(kernel, &[1, 1, 2], &[512, 512, 512]);
        (0..3).for_each(|i| r.place(i, 1));
        r.running = vec![true, false, false];
        pass(&mut r, 1.1);
        for (k, t) in [(1, 2.2), (2, 4.4)] {
            pass(&mut r, t);
            r.fault_all(0, 0, t + 0.01);
            r.fault_all(1, 1, t + 0.01);
            r.fault_all(1, 2, t + 0.01);
            assert_eq!(r.nb.vmstat.numa_pte_updates, 1536 * k, "{kernel:?}");
        }
        pass(&mut r, 7.0);
        assert_eq!(r.nb.vmstat.numa_pte_updates - 3072, third, "{kernel:?}");
    }
}

// --- Hinting faults and page migration ------------------------------------------------------

#[test]
fn item45_hint_fault_counters_and_locality_before_migration() {
    for kernel in both() {
        let mut r = Rig::new(kernel, &[1, 2], &[8]);
        r.place(0, 1);
        r.fault(0, 0, 0, 1.0); // local
        r.regions[0].node[1] = 0; // a page on node 0: remote, migrates on this first fault
        r.pages_node[1] -= 1;
        r.pages_node[0] += 1;
        assert_eq!(r.fault(0, 0, 1, 1.0), 1);
        let v = &r.nb.vmstat;
        assert_eq!((v.numa_hint_faults, v.numa_hint_faults_local), (2, 1), "{kernel:?}");
    }
}

#[test]
fn item46_a_page_with_no_previous_fault_migrates_on_its_first_hinting_fault() {
    for kernel in both() {
        let mut r = Rig::new(kernel, &[2, 3], &[64]);
        r.place(0, 0);
        for u in 0..64 {
            assert_eq!(r.regions[0].cpupid[u as usize], CPUPID_UNSET);
            assert_eq!(r.fault(0, 0, u, 1.0), 2, "{kernel:?} page {u}");
        }
        assert_eq!(r.nb.vmstat.numa_pages_migrated, 64);
    }
}

#[test]
fn item47_a_page_faulted_from_two_nodes_alternately_never_migrates() {
    for kernel in both() {
        // Threads on nodes 1 and 2, the page on node 0, last faulted by a third task (node 3).
        let mut r = Rig::new(kernel, &[1, 2, 3], &[1]);
        r.place(0, 0);
        r.regions[0].cpupid[0] = r.cpupid(2);
        for k in 0..20 {
            let node = r.fault(k % 2, 0, 0, 1.0 + k as f64 * 0.1);
            assert_eq!(node, 0, "{kernel:?} fault {k}");
            assert_eq!(r.regions[0].cpupid[0], r.cpupid(k % 2), "last_cpupid becomes the faulting task's");
        }
        assert_eq!(r.nb.vmstat.numa_pages_migrated, 0);
        // A second fault in a row from node 2 (the task that faulted last) moves it.
        assert_eq!(r.fault(1, 0, 0, 5.0), 2, "{kernel:?}");
    }
}

#[test]
fn item48_k313_a_shared_fault_from_another_node_defers_the_next_16_shared_migrations() {
    let mut r = Rig::new(Kernel::V3_13, &[1, 2], &[64]);
    r.place(0, 0);
    // Page 0 was last faulted by task 1 on node 2: a shared fault from another node.
    r.regions[0].cpupid[0] = r.cpupid(1);
    assert_eq!(r.fault(0, 0, 0, 1.0), 0);
    // Pages never faulted count as shared (their pid bits are not this task's): 16 skipped.
    for u in 1..=16 {
        assert_eq!(r.fault(0, 0, u, 1.0), 0, "page {u} deferred");
    }
    assert_eq!(r.fault(0, 0, 17, 1.0), 1, "the 17th migrates");
    // Private faults are never deferred: re-arm the deferral, then a private fault moves.
    r.regions[0].cpupid[18] = r.cpupid(1);
    r.fault(0, 0, 18, 1.0);
    r.regions[0].cpupid[19] = r.cpupid(0);
    assert_eq!(r.fault(0, 0, 19, 1.0), 1);
}

#[test]
fn item49_k6_early_in_life_a_private_fault_migrates_whatever_node_faulted_before() {
    // Task 0 faulted the page from node 2 earlier, now faults from node 1: 6.13 migrates (no
    // preferred node yet), 3.13 applies the two-stage filter.
    for (kernel, moved) in [(Kernel::V6_13, true), (Kernel::V3_13, false)] {
        let mut r = Rig::new(kernel, &[1, 2], &[1]);
        r.place(0, 0);
        let cpu_node2 = first_cpu(&r.sched, 2) as u32;
        r.regions[0].cpupid[0] = (cpu_node2 << 8) | 1;
        assert_eq!(r.fault(0, 0, 0, 1.0) == 1, moved, "{kernel:?}");
    }
}

/// Item 50's rig (6.x): tasks 0 (node 1) and 1 (node 2), pinned to their CPUs, join one group
/// through shared faults that never migrate (each page was last faulted by the other task, from
/// the other node). Each takes `on_c` faults on node-1 pages and `on_p` on node-2 pages, and task
/// 0 runs `cpu_ratio` times as long as task 1; after the fold the group's CPU-side faults are
/// then `faults_cpu(1) : faults_cpu(2) = cpu_ratio : 1` and its memory-side faults
/// `faults_mem(1) : faults_mem(2) = on_c : on_p`. Does a shared fault by task 0 (node 1) on a
/// node-2 page last faulted by another task on node 1 migrate the page?
fn item50_shared_fault_in_group_migrates(cpu_ratio: f64, on_c: u64, on_p: u64) -> bool {
    let mut r = Rig::new(Kernel::V6_13, &[1, 2], &[512, 512]);
    r.place(0, 1);
    r.place(1, 2);
    // No scan cost: both tasks' CPU time is exactly what the test gives them.
    r.nb = numab_full(
        &r,
        Balancing { enabled: true, ..Balancing::default() },
        Costs { scan_pte_ns: 0.0, ..Costs::default() },
    );
    for t in 0..2 {
        r.sched.allowed[t] = vec![r.sched.cpu[t]];
    }
    let shared = |r: &mut Rig, tid: usize, reg: usize, u: u64, t: f64| {
        r.regions[reg].cpupid[u as usize] = r.cpupid(1 - tid);
        assert_eq!(r.fault(tid, reg, u, t), reg + 1, "a shared fault from another node never migrates");
    };
    pass(&mut r, 1.1);
    pass(&mut r, 2.2);
    for tid in 0..2 {
        let base = 256 * tid as u64;
        (base..base + on_c).for_each(|u| shared(&mut r, tid, 0, u, 2.3));
        (base..base + on_p).for_each(|u| shared(&mut r, tid, 1, u, 2.3));
    }
    r.nb.add_runtime(0, 10.0 * (cpu_ratio - 1.0));
    pass(&mut r, 4.4);
    // One fault each folds the pass.
    shared(&mut r, 0, 0, 250, 4.5);
    shared(&mut r, 1, 0, 500, 4.5);
    let (g0, g1) = (r.nb.thread_sched(0, &r.sched), r.nb.thread_sched(1, &r.sched));
    assert!(g0.numa_group_id != 0 && g0.numa_group_id == g1.numa_group_id);
    assert_eq!((g0.faults[1].group_shared, g0.faults[2].group_shared), (2 * on_c, 2 * on_p));
    r.regions[1].cpupid[255] = ((r.sched.cpu[0] as u32) << 8) | 0x42;
    r.fault(0, 1, 255, 4.6) == 1
}

#[test]
fn item50_k6_a_shared_fault_in_a_group_follows_the_group_cpu_and_memory_faults() {
    // faults_cpu(dst) > 3 x faults_cpu(src): moves even with most memory already on dst.
    assert!(item50_shared_fault_in_group_migrates(4.0, 96, 24));
    assert!(!item50_shared_fault_in_group_migrates(2.5, 96, 24));
    // Equal CPU-side faults: moves iff faults_mem(src) x 3 > faults_mem(dst) x 4.
    assert!(item50_shared_fault_in_group_migrates(1.0, 60, 81));
    assert!(!item50_shared_fault_in_group_migrates(1.0, 60, 80));
    assert!(!item50_shared_fault_in_group_migrates(1.0, 60, 60));
    // Twice the CPU time on dst: moves once src holds more than 2/3 of dst's memory.
    assert!(!item50_shared_fault_in_group_migrates(2.0, 30, 19));
    assert!(item50_shared_fault_in_group_migrates(2.0, 30, 22));
}

#[test]
fn item51_k313_rate_limit_is_128_mib_per_100_ms_per_destination_node() {
    let mut r = Rig::new(Kernel::V3_13, &[1, 2], &[40001]);
    r.place(0, 0);
    let moved = (0..40000).filter(|&u| r.fault(0, 0, u, 1.0 + u as f64 * 1e-7) == 1).count();
    // The request that crosses 32768 pages still passes; later ones in the window do not.
    assert_eq!(moved, 32769);
    assert_eq!(r.nb.vmstat.pgmigrate_fail, 0, "refusals are not failed migrations");
    // Task 1 on node 2 is not limited by node 1's window; a new window reopens node 1.
    assert_eq!(r.fault(1, 0, 40000, 1.01), 2);
    assert_eq!(r.fault(0, 0, 39998, 1.2), 1);
    // 6.x has no rate limit.
    let mut r6 = Rig::new(Kernel::V6_13, &[1, 2], &[40000]);
    r6.place(0, 0);
    assert_eq!((0..40000).filter(|&u| r6.fault(0, 0, u, 1.0) == 1).count(), 40000);
}

#[test]
fn item52_a_migration_below_the_high_watermark_is_refused() {
    for kernel in both() {
        let mut r = Rig::new(kernel, &[1, 2], &[4]);
        r.place(0, 0);
        let high = r.alloc.marks[1].high;
        r.alloc.free[1] = high; // one more page would leave node 1 below high
        assert_eq!(r.fault(0, 0, 0, 1.0), 0, "{kernel:?}");
        r.alloc.free[1] = high + 1;
        r.regions[0].cpupid[1] = CPUPID_UNSET;
        assert_eq!(r.fault(0, 0, 1, 1.0), 1, "{kernel:?}");
        assert_eq!(r.nb.vmstat.pgmigrate_fail, 0);
    }
}

#[test]
fn item53_a_numab_migration_moves_counters_and_the_page() {
    for kernel in both() {
        let mut r = Rig::new(kernel, &[3, 2], &[1]);
        r.place(0, 0);
        let (hit, free0) = (r.alloc.numastat[3].numa_hit, r.alloc.free[0]);
        r.fault(0, 0, 0, 1.0);
        let v = &r.nb.vmstat;
        assert_eq!((v.numa_pages_migrated, v.pgmigrate_success), (1, 1));
        assert_eq!(r.alloc.numastat[3].numa_hit, hit + 1);
        assert_eq!(r.alloc.free[0], free0 + 1, "the old page is freed");
        assert_eq!(r.pages_node, vec![0, 0, 0, 1]);
        assert_eq!(r.nb.thread_sched(0, &r.sched).numa_pages_migrated, 1);
    }
}

#[test]
fn item54_a_migrated_page_keeps_its_last_cpupid() {
    let mut r = Rig::new(Kernel::V6_13, &[1, 2], &[1]);
    r.place(0, 0);
    assert_eq!(r.fault(0, 0, 0, 1.0), 1);
    assert_eq!(r.regions[0].cpupid[0], r.cpupid(0));
}

#[test]
fn item55_a_hinting_fault_counts_on_the_node_the_page_ends_on() {
    // Task 0 on node 1 faults 512 pages on node 0 (first faults: they migrate, unless node 1
    // is full). Locality is judged before the migration (all remote); the faults are
    // accounted to the node the page is on after it (node 1, or node 0 when refused).
    for kernel in both() {
        for (refused, node) in [(false, 1), (true, 0)] {
            let mut r = Rig::new(kernel, &[1, 2], &[512]);
            r.place(0, 0);
            if refused {
                r.alloc.free[1] = 0;
            }
            pass(&mut r, 1.1);
            pass(&mut r, 2.2);
            r.fault_all(0, 0, 2.3);
            assert_eq!(r.pages_node[1], if refused { 0 } else { 512 }, "{kernel:?}");
            assert_eq!((r.nb.vmstat.numa_hint_faults, r.nb.vmstat.numa_hint_faults_local), (512, 0), "{kernel:?}");
            pass(&mut r, 4.4);
            r.fault(0, 0, 0, 4.5); // folds the pass
            let faults = r.nb.thread_sched(0, &r.sched).faults;
            for (n, f) in faults.iter().enumerate() {
                let expect = if n == node { 512 } else { 0 };
                assert_eq!((f.task_private, f.task_shared), (expect, 0), "{kernel:?} refused {refused}: node {n}");
            }
        }
    }
}

#[test]
fn k6_a_local_hinting_fault_leaves_last_cpupid_alone() {
    // 6.x mpol_misplaced returns early for a page already in the default policy's node
    // (MPOL_PREFERRED of the local node) before exchanging last_cpupid; 3.13 exchanges it.
    for (kernel, updated) in [(Kernel::V6_13, false), (Kernel::V3_13, true)] {
        let mut r = Rig::new(kernel, &[1, 2], &[1]);
        r.place(0, 1);
        r.fault(0, 0, 0, 1.0);
        assert_eq!(r.regions[0].cpupid[0] == r.cpupid(0), updated, "{kernel:?}");
    }
}

// --- Statistics, placement, groups, task moves ----------------------------------------------

#[test]
fn item56_fault_statistics_are_folded_once_per_completed_pass() {
    for kernel in both() {
        let mut r = Rig::new(kernel, &[1, 2], &[512]);
        r.place(0, 1);
        pass(&mut r, 1.1);
        pass(&mut r, 2.2);
        r.fault_all(0, 0, 2.3);
        // 512 faults buffered; nothing folded until the next pass completes.
        assert_eq!(r.nb.thread_sched(0, &r.sched).total_numa_faults, 0);
        pass(&mut r, 4.4);
        r.fault_all(0, 0, 4.5);
        assert_eq!(r.nb.thread_sched(0, &r.sched).total_numa_faults, 512, "{kernel:?}");
        pass(&mut r, 9.0);
        r.fault(0, 0, 0, 9.1);
        // Halved, plus the 512 faults of the pass that just ended.
        assert_eq!(r.nb.thread_sched(0, &r.sched).total_numa_faults, 256 + 512, "{kernel:?}");
    }
}

#[test]
fn item57_the_preferred_node_is_the_node_with_most_faults() {
    for kernel in both() {
        // Both tasks on node 1: 3.13 finds no swap partner (which would reset the preferred node).
        let mut r = Rig::new(kernel, &[1, 1], &[300, 200]);
        r.place(0, 3);
        r.place(1, 2);
        r.alloc.free[1] = 0; // keep the pages where they are
        pass(&mut r, 1.1);
        pass(&mut r, 2.2);
        assert_eq!(r.nb.thread_sched(0, &r.sched).numa_preferred_nid, -1, "nothing set while counts are 0");
        r.fault_all(0, 0, 2.3);
        r.fault_all(0, 1, 2.3);
        pass(&mut r, 5.0);
        r.fault(0, 0, 0, 5.1);
        assert_eq!(r.nb.thread_sched(0, &r.sched).numa_preferred_nid, 3, "{kernel:?}");
    }
}

#[test]
fn item58_threads_of_one_process_sharing_pages_end_in_one_numa_group() {
    for kernel in both() {
        let mut w = stream_like(32, 16, Pattern::Master, 1500);
        w.phases[1].accesses[0].pattern = Pattern::Shared;
        let out = run(&w, &pinned(policy(PolicyMode::Default, &[])), &fast(kernel));
        let gids: Vec<u32> = out.threads.iter().map(|t| t.sched.as_ref().unwrap().numa_group_id).collect();
        assert!(gids[0] != 0 && gids.iter().all(|&g| g == gids[0]), "{kernel:?} {gids:?}");
        // Each thread's group counts are the group's, the same for all.
        let g0 = &out.threads[0].sched.as_ref().unwrap().faults;
        let g1 = &out.threads[5].sched.as_ref().unwrap().faults;
        assert!(g0.iter().zip(g1).all(|(a, b)| a.group_shared == b.group_shared && a.group_private == b.group_private));
    }
}

#[test]
fn item58_threads_with_private_data_stay_ungrouped() {
    let out = run(
        &stream_like(32, 16, Pattern::Block, 1500),
        &pinned(policy(PolicyMode::Default, &[])),
        &fast(Kernel::V6_13),
    );
    assert!(out.threads.iter().all(|t| t.sched.as_ref().unwrap().numa_group_id == 0));
}

#[test]
fn k6_a_task_does_not_join_a_running_one_on_a_small_preferred_node_but_goes_next_to_it() {
    // 6.13, item 60's crossing on 4-CPU nodes: task 0 on node 1 prefers node 2, where task 1
    // runs. task_numa_find_cpu(): node 2 has spare capacity, dst_running 1 + 1 = 2 exceeds
    // sd_numa->imb_numa_nr = max(1, 4 >> 3) = 1, so the imbalance 2 - 0 stands and the move is
    // refused; task_numa_compare() swaps no ungrouped tasks into spare capacity. With no CPU
    // on the preferred node task_numa_migrate() tries the other nodes: node 3, next to node 2
    // (distance 16), runs nothing, so task 0 takes an idle CPU there. Asleep, task 1 leaves node
    // 2 empty: dst_running 1 <= 1 and imbalance 1 <= NUMA_IMBALANCE_MIN, so task 0 goes there.
    for task1_runs in [true, false] {
        let mut r = Rig::new(Kernel::V6_13, &[1, 2], &[256, 256]);
        r.place(0, 2);
        r.place(1, 1);
        r.alloc.free[1] = 0;
        r.alloc.free[2] = 0;
        r.nb.set_live(&[true, task1_runs], &r.sched);
        r.tick(1.1, 100.0);
        r.tick(2.2, 100.0);
        r.fault_all(0, 0, 2.3);
        r.tick(70.0, 100.0);
        r.fault(0, 0, 0, 70.1);
        assert_eq!(r.nb.thread_sched(0, &r.sched).numa_preferred_nid, 2);
        assert_eq!((r.node_of(0), r.node_of(1)), if task1_runs { (3, 2) } else { (2, 2) }, "task 1 runs: {task1_runs}");
    }
}

#[test]
fn item60_numa_migrate_preferred_is_retried_every_interval_and_idle_on_the_preferred_node() {
    // Item 63's crossing (task 0 on node 1 with its memory on node 2, task 1 the reverse, both
    // nodes full), task 0 pinned to its CPU when its first fold sets the preferred node at
    // 70.1 s, so that attempt finds nothing; then unpinned. The next attempt waits for the
    // retry interval: 3.13 1 s; 6.x min(1 s, period / 16), with the period just set by the
    // fold (4000 ms with default knobs, 60000 ms with scan_period_min 32 s).
    let long = Balancing { enabled: true, scan_period_min_ms: 32_000, ..Balancing::default() };
    for (kernel, knobs, period, interval) in [
        (Kernel::V3_13, Balancing { enabled: true, ..Balancing::default() }, 4000, 1.0),
        (Kernel::V6_13, Balancing { enabled: true, ..Balancing::default() }, 4000, 0.25),
        (Kernel::V6_13, long, 60_000, 1.0),
    ] {
        let mut r = Rig::new(kernel, &[1, 2], &[256, 256]);
        r.place(0, 2);
        r.place(1, 1);
        r.nb = numab_with(&r, knobs);
        r.alloc.free[1] = 0;
        r.alloc.free[2] = 0;
        let all = r.sched.allowed[0].clone();
        r.sched.allowed[0] = vec![r.sched.cpu[0]];
        r.tick(1.1, 100.0);
        r.tick(2.2, 100.0);
        r.fault_all(0, 0, 2.3);
        r.fault_all(1, 1, 2.3);
        r.tick(70.0, 100.0);
        let t0 = 70.1;
        r.fault(0, 0, 0, t0);
        assert_eq!(r.nb.thread_sched(0, &r.sched).numa_preferred_nid, 2, "{kernel:?}");
        assert_eq!((r.node_of(0), r.period(0)), (1, period), "{kernel:?}");
        r.sched.allowed[0] = all;
        if kernel != Kernel::V3_13 {
            // 6.x refuses the move while task 1 runs on node 2: dst_running 2 > imb_numa_nr 1
            // (4-CPU nodes) keeps the imbalance, and ungrouped tasks are not swapped while node
            // 2 has spare capacity (task_numa_find_cpu(), task_numa_compare()). Task 1 sleeps.
            r.nb.set_live(&[true, false], &r.sched);
        }
        for k in 1..=10 {
            r.fault(0, 0, k, t0 + interval * k as f64 / 10.0 - 0.001);
            assert_eq!(r.node_of(0), 1, "{kernel:?}: retried before the interval");
        }
        r.fault(0, 0, 11, t0 + interval + 0.001);
        assert_eq!(r.node_of(0), 2, "{kernel:?}: retried once the interval passed");
    }
    // A task already on its preferred node: nothing is attempted (3.13 would otherwise "swap"
    // with itself and reset its period to task_scan_min; 6.x would move it to an idle CPU of
    // its node).
    for (kernel, period) in [(Kernel::V3_13, 3400), (Kernel::V6_13, 2600)] {
        let mut r = Rig::new(kernel, &[1, 2], &[512]);
        r.place(0, 1);
        let cpu = r.sched.cpu[0];
        pass(&mut r, 1.1);
        pass(&mut r, 2.2);
        r.fault_all(0, 0, 2.3);
        pass(&mut r, 4.4);
        r.fault(0, 0, 0, 4.5);
        assert_eq!(r.nb.thread_sched(0, &r.sched).numa_preferred_nid, 1, "{kernel:?}");
        assert_eq!((r.sched.cpu[0], r.period(0)), (cpu, period), "{kernel:?}");
        assert!(r.nb.moved.is_empty(), "{kernel:?}");
    }
}

#[test]
fn item61_k313_on_a_full_machine_a_task_only_swaps_on_other_nodes() {
    // One thread per CPU (16), task 0 on node 1 with its memory on node 2 (node 1 full: the
    // pages stay). Node 2 has no spare capacity, so it is not tried; nodes 0 and 3 are (task 0
    // loses no weight there), where a swap with a task without statistics improves nothing
    // (imp = 0) and is accepted, the last one examined winning. The preferred node becomes the
    // last node the loop examined (3). With one CPU of node 2 idle (15 threads), node 2 has
    // capacity and task 0 swaps into it.
    for (threads, dst) in [(16, 3), (15, 2)] {
        let mut r = Rig::new(Kernel::V3_13, &vec![1; threads], &[512]);
        let pu_node = &r.sched.pu_node;
        let order: Vec<usize> = [1, 0, 3, 2].iter().flat_map(|&n| (0..16).filter(move |&c| pu_node[c] == n)).collect();
        r.sched.cpu[..threads].copy_from_slice(&order[..threads]);
        r.nb.refresh_curr(&r.sched);
        r.place(0, 2);
        r.alloc.free[1] = 0;
        let before = r.sched.cpu.clone();
        pass(&mut r, 1.1);
        pass(&mut r, 2.2);
        r.fault_all(0, 0, 2.3);
        pass(&mut r, 5.0);
        r.fault(0, 0, 0, 5.1);
        assert_eq!(r.node_of(0), dst, "{threads} threads");
        let partner = (1..threads).find(|&t| before[t] == r.sched.cpu[0]).expect("a swap");
        assert_eq!(r.sched.cpu[partner], before[0], "{threads} threads: swapped");
        assert_eq!(r.nb.moved.len(), 2);
        assert!((1..threads).filter(|&t| t != partner).all(|t| r.sched.cpu[t] == before[t]));
        assert_eq!(r.nb.thread_sched(0, &r.sched).numa_preferred_nid, dst as i64, "{threads} threads");
        if threads == 16 {
            // The last CPU of node 3 (the last candidate of equal, zero improvement).
            assert_eq!(r.sched.cpu[0], order[11]);
        }
    }
}

#[test]
fn item62_k6_moves_a_task_to_an_idle_cpu_of_its_preferred_node() {
    // Task 0 alone on node 1 with all its faults on node 2 (full: the pages stay): the move
    // leaves an imbalance of one task, within NUMA_IMBALANCE_MIN, onto an idle CPU.
    let mut r = Rig::new(Kernel::V6_13, &[1, 3], &[512]);
    r.place(0, 2);
    r.alloc.free[1] = 0;
    pass(&mut r, 1.1);
    pass(&mut r, 2.2);
    r.fault_all(0, 0, 2.3);
    pass(&mut r, 5.0);
    r.fault(0, 0, 0, 5.1);
    assert_eq!(r.nb.thread_sched(0, &r.sched).numa_preferred_nid, 2);
    assert_eq!(r.node_of(0), 2);
    assert_eq!(r.nb.moved, vec![0], "the engine charges the move");
}

#[test]
fn item63_k313_a_swap_toward_the_preferred_node_resets_the_period_to_task_scan_min() {
    // Task 0 on node 1 with its memory on node 2, task 1 on node 2 with memory on node 1;
    // both nodes full. 3.13 never moves a lone task to an idle CPU (the load check fails),
    // but one task on each run queue swaps without a load check.
    let mut r = Rig::new(Kernel::V3_13, &[1, 2], &[256, 256]);
    r.place(0, 2);
    r.place(1, 1);
    r.alloc.free[1] = 0;
    r.alloc.free[2] = 0;
    pass(&mut r, 1.1);
    pass(&mut r, 2.2);
    r.fault_all(0, 0, 2.3);
    r.fault_all(1, 1, 2.3);
    pass(&mut r, 5.0);
    r.fault(0, 0, 0, 5.1);
    assert_eq!((r.node_of(0), r.node_of(1)), (2, 1), "swapped");
    assert_eq!(r.period(0), scan_period_bounds(&Balancing::default(), 512).0);
}

/// A fresh balancing state for the rig with other knobs.
fn numab_with(r: &Rig, knobs: Balancing) -> Numab {
    numab_full(r, knobs, Costs::default())
}

/// A fresh balancing state for the rig with other knobs and costs.
fn numab_full(r: &Rig, knobs: Balancing, costs: Costs) -> Numab {
    let refs: Vec<&[Region]> = vec![r.regions.as_slice()];
    let threads: Vec<usize> = (0..r.running.len()).collect();
    let mut nb = Numab::new(&r.m, r.kernel, &knobs, &costs, &[threads], &refs, &r.sched);
    let rss: u64 = r.pages_node.iter().sum();
    nb.on_alloc(0, rss);
    nb
}

// --- Whole runs -----------------------------------------------------------------------------

/// DGEMV (docs/studies.md §6.2): A (n x n doubles) first written by the master,
/// then `reps` row-block sweeps by 16 unbound threads.
fn dgemv(n: u64, reps: u64) -> WorkloadSpec {
    let bytes = 8 * n * n;
    WorkloadSpec {
        name: "dgemv".into(),
        description: String::new(),
        params: Default::default(),
        processes: 1,
        threads: 16,
        regions: vec![RegionSpec::anonymous("A", bytes, n)],
        phases: vec![
            PhaseSpec {
                name: "init".into(),
                cycles: (n * n) as f64,
                mlp: None,
                chain: 0.0,
                sync: Sync::Barrier,
                pipeline_steps: 1,
                accesses: vec![access(0, Pattern::Master, 1.0, 1.0)],
            },
            PhaseSpec {
                name: "mult".into(),
                cycles: (n * n) as f64,
                mlp: None,
                chain: 0.0,
                sync: Sync::Barrier,
                pipeline_steps: 1,
                accesses: vec![access(0, Pattern::Block, 1.0, 0.0)],
            },
        ],
        instructions: Vec::new(),
        program: vec![
            StepSpec { phases: vec![0], repeat: 1, timed: false },
            StepSpec { phases: vec![1], repeat: reps, timed: false },
        ],
    }
}

#[test]
fn dgemv_serial_init_many_reps_spreads_a_over_the_readers_nodes() {
    let m = machine2();
    let c = balancing(Kernel::V6_13);
    let out = simulate(&m, &dgemv(8000, 400), &unpinned(), &c).unwrap();
    let total: u64 = out.pages_per_node.iter().sum();
    // Each thread reads one row block: the pages should sit where their reader runs.
    let on1 = out.threads.iter().filter(|t| t.node == 1).count() as f64 / 16.0;
    let share1 = out.pages_per_node[1] as f64 / total as f64;
    assert!(
        on1 > 0.0,
        "the threads spread over both nodes: {:?}",
        out.threads.iter().map(|t| t.node).collect::<Vec<_>>()
    );
    assert!((share1 - on1).abs() < 0.1, "A on node 1: {share1:.2}, readers on node 1: {on1:.2}");
    assert!(out.vmstat.numa_pages_migrated as f64 > 0.3 * total as f64);
    let off = simulate(&m, &dgemv(8000, 400), &unpinned(), &SimConfig::default()).unwrap();
    assert!(out.time_s < off.time_s, "balancing {} s vs off {} s", out.time_s, off.time_s);
}

#[test]
fn dgemv_serial_init_one_rep_barely_moves() {
    let out = simulate(&machine2(), &dgemv(8000, 1), &unpinned(), &balancing(Kernel::V6_13)).unwrap();
    let total: u64 = out.pages_per_node.iter().sum();
    assert!((out.vmstat.numa_pages_migrated as f64) < 0.01 * total as f64, "{:?}", out.vmstat);
}

#[test]
fn balancing_runs_are_deterministic() {
    let w = stream_like(32, 16, Pattern::Master, 800);
    let p = pinned(policy(PolicyMode::Default, &[]));
    for kernel in both() {
        let a = serde_json::to_string(&run(&w, &p, &fast(kernel))).unwrap();
        let b = serde_json::to_string(&run(&w, &p, &fast(kernel))).unwrap();
        assert_eq!(a, b);
    }
}

#[test]
fn migrate_deferred_is_a_313_knob() {
    let mut c = balancing(Kernel::V6_13);
    c.balancing.migrate_deferred = Some(8);
    let err =
        simulate(&machine4(), &stream_like(8, 4, Pattern::Block, 1), &pinned(policy(PolicyMode::Default, &[])), &c)
            .unwrap_err();
    assert!(err.to_string().contains("3.13"), "{err}");
}
