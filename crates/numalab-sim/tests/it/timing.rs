//! Contention, determinism and convergence.

use numalab_model::PolicyMode;
use numalab_sim::input::Pattern;
use numalab_sim::{simulate, SimConfig};

use crate::common::*;

#[test]
fn same_seed_same_output_bit_for_bit() {
    let m = machine4();
    let w = stream_like(128, 16, Pattern::Master, 3);
    let p = pinned(policy(PolicyMode::Default, &[]));
    let a = serde_json::to_string(&simulate(&m, &w, &p, &cfg()).unwrap()).unwrap();
    let b = serde_json::to_string(&simulate(&m, &w, &p, &cfg()).unwrap()).unwrap();
    assert_eq!(a, b);
}

#[test]
fn serial_init_is_slower_than_parallel_init_for_a_bandwidth_bound_sweep() {
    let m = machine4();
    let p = pinned(policy(PolicyMode::Default, &[]));
    let par = simulate(&m, &stream_like(256, 16, Pattern::Block, 5), &p, &cfg()).unwrap();
    let ser = simulate(&m, &stream_like(256, 16, Pattern::Master, 5), &p, &cfg()).unwrap();
    assert!(ser.time_s > 1.5 * par.time_s, "serial {} parallel {}", ser.time_s, par.time_s);
}

#[test]
fn doubling_the_sample_rate_changes_time_and_map_by_under_one_percent() {
    // First touch (local, no link traffic) and serial init (one saturated controller).
    let m = machine4();
    for init in [Pattern::Block, Pattern::Master] {
        let p = pinned(policy(PolicyMode::Default, &[]));
        let w = stream_like(1024, 16, init, 4);
        let half = simulate(&m, &w, &p, &SimConfig { sample_rate: 0.5, ..cfg() }).unwrap();
        let full = simulate(&m, &w, &p, &cfg()).unwrap();
        assert!((half.time_s / full.time_s - 1.0).abs() < 0.01, "{init:?}: {} vs {}", half.time_s, full.time_s);
        let (a, b) = (concentration(&half.access_map), concentration(&full.access_map));
        for (x, y) in a.iter().zip(&b) {
            assert!((x - y).abs() < 0.01, "{init:?}: {a:?} vs {b:?}");
        }
    }
}

#[test]
fn no_controller_delivers_more_than_its_bandwidth() {
    let m = machine4();
    let p = pinned(policy(PolicyMode::Default, &[]));
    let out = simulate(&m, &stream_like(256, 16, Pattern::Master, 5), &p, &cfg()).unwrap();
    // Every timeline interval: bytes served by each node / interval <= its bandwidth.
    let mut prev_t = 0.0;
    for pt in &out.timeline {
        let dt = pt.t_s - prev_t;
        prev_t = pt.t_s;
        for j in 0..4 {
            let lines: u64 = pt.access_map.iter().map(|r| r[j]).sum();
            let gbps = lines as f64 * 64.0 / dt / 1e9;
            assert!(gbps <= 10.0 * 1.02, "node {j}: {gbps} GB/s in an interval of {dt} s");
        }
    }
}

/// A machine whose controllers are far from loaded by a few threads (1 TB/s per node), so a
/// thread sees the idle latency: 100 ns local, 10 fill buffers per core, 2 PUs per core.
fn idle_machine(mlp: f64) -> numalab_model::Machine {
    let spec = format!(
        r#"{{"name": "idle2", "description": "uncontended test machine",
        "topology": {{"packages": 2, "nodes_per_package": 1, "cores_per_node": 4, "threads_per_core": 2, "cpu_numbering": "smt-last"}},
        "memory": {{"node_gib": 2}},
        "latency": {{"local_ns": 100}},
        "bandwidth": {{"node_gbps": 1000}},
        "links": [{{"nodes": [0,1], "gbps": 1000}}],
        "core": {{"frequency_ghz": 2.0, "mlp": {mlp}}}}}"#
    );
    numalab_model::MachineSpec::from_json(&spec).unwrap().resolve().unwrap()
}

/// `threads` threads, one array of `mib` MiB each thread's block first written in `init`, then
/// `reps` read sweeps with `cycles_per_line` compute cycles per 64-byte line.
fn read_sweeps(mib: u64, threads: u32, reps: u64, cycles_per_line: f64) -> numalab_sim::WorkloadSpec {
    let mut w = stream_like(mib, threads, Pattern::Block, reps);
    w.phases[0].cycles = 0.0;
    w.phases[1].cycles = cycles_per_line * (mib << 20) as f64 / 64.0;
    w
}

/// Seconds one sweep of the read phase takes: (time with 3 sweeps - time with 1) / 2, so the
/// first-touch phase and its faults cancel.
fn sweep_s(m: &numalab_model::Machine, mib: u64, threads: u32, cpus: &str, cycles_per_line: f64) -> f64 {
    let mut p = pinned(policy(PolicyMode::Default, &[]));
    p.cpus = Some(numalab_model::CpuSet::parse_list(cpus).unwrap());
    p.proc_bind = numalab_sim::input::ProcBind::Close;
    let t = |reps| simulate(m, &read_sweeps(mib, threads, reps, cycles_per_line), &p, &cfg()).unwrap().time_s;
    (t(3) - t(1)) / 2.0
}

#[test]
fn one_thread_on_an_idle_machine_sees_the_idle_latency_per_line_at_its_mlp() {
    // 64 MiB = 1,048,576 lines at 100 ns / 10 misses in flight = 10 ns each: 10.486 ms. No
    // throttling may apply to a path at well under 1 % of its bandwidth.
    let m = idle_machine(10.0);
    let s = sweep_s(&m, 64, 1, "0", 0.0);
    let want = 1_048_576.0 * 100e-9 / 10.0;
    assert!((s / want - 1.0).abs() < 1e-3, "one sweep took {s} s, Little's law gives {want} s");
}

#[test]
fn compute_and_memory_overlap_up_to_the_concurrency_limit() {
    // kappa = 20 cycles at 2 GHz = 10 ns per line and 10 ns of memory time per line: overlapped,
    // a line costs max + min / mlp = 11 ns, not the 20 ns of adding them.
    let m = idle_machine(10.0);
    let s = sweep_s(&m, 64, 1, "0", 20.0);
    let want = 1_048_576.0 * 11e-9;
    assert!((s / want - 1.0).abs() < 1e-3, "one sweep took {s} s, overlap gives {want} s");
    // One miss in flight (a dependent chain): nothing overlaps, 100 + 10 ns per line.
    let m1 = idle_machine(1.0);
    let s1 = sweep_s(&m1, 16, 1, "0", 20.0);
    let want1 = 262_144.0 * 110e-9;
    assert!((s1 / want1 - 1.0).abs() < 1e-3, "mlp 1: {s1} s, additive gives {want1} s");
}

/// `idle_machine(10)` whose one stream keeps `stream_mlp` lines in flight and whose dependent
/// add takes `add_ns`.
fn idle_machine_streams(stream_mlp: f64, add_ns: f64) -> numalab_model::Machine {
    let mut m = idle_machine(10.0);
    for c in &mut m.cores {
        c.stream_mlp = Some(stream_mlp);
        c.add_latency_ns = Some(add_ns);
    }
    m
}

#[test]
fn a_reductions_chain_adds_to_the_memory_time_instead_of_overlapping_it() {
    // 16 MiB = 262,144 lines of 10 ns memory time each (100 ns / 10 in flight). 8 dependent adds
    // per line at 2 ns = 16 ns of chain: 16 + 10 = 26 ns per line. The same 16 ns as independent
    // compute (32 cycles at 2 GHz) overlaps: 16 + 10 / 10 = 17 ns.
    let m = idle_machine_streams(10.0, 2.0);
    let mut p = pinned(policy(PolicyMode::Default, &[]));
    p.cpus = Some(numalab_model::CpuSet::parse_list("0").unwrap());
    let lines = 262_144.0;
    let run = |reps, chain: bool| {
        let mut w = read_sweeps(16, 1, reps, if chain { 0.0 } else { 32.0 });
        w.phases[1].chain = if chain { 8.0 * lines } else { 0.0 };
        simulate(&m, &w, &p, &cfg()).unwrap().time_s
    };
    let sweep = |chain| (run(3, chain) - run(1, chain)) / 2.0;
    let (chained, independent) = (sweep(true), sweep(false));
    assert!((chained / (lines * 26e-9) - 1.0).abs() < 1e-3, "chain: {chained} s");
    assert!((independent / (lines * 17e-9) - 1.0).abs() < 1e-3, "independent: {independent} s");
}

#[test]
fn a_core_keeps_more_lines_in_flight_over_more_streams_up_to_its_buffers() {
    // Each stream keeps 4 lines in flight, the core 10: one stream 100 ns / 4 = 25 ns per line;
    // the same lines over two streams 100 / 8 = 12.5 ns; over three, the core's 10: 10 ns.
    let m = idle_machine_streams(4.0, 2.0);
    let mut p = pinned(policy(PolicyMode::Default, &[]));
    p.cpus = Some(numalab_model::CpuSet::parse_list("0").unwrap());
    let lines = 262_144.0;
    let run = |reps, streams: usize| {
        let mut w = read_sweeps(16, 1, reps, 0.0);
        let a = w.phases[1].accesses[0].clone();
        w.phases[1].accesses = (0..streams)
            .map(|_| {
                let mut x = a.clone();
                x.rd = 1.0 / streams as f64;
                x
            })
            .collect();
        simulate(&m, &w, &p, &cfg()).unwrap().time_s
    };
    for (streams, ns) in [(1, 25.0), (2, 12.5), (3, 10.0)] {
        let s = (run(3, streams) - run(1, streams)) / 2.0;
        assert!((s / (lines * ns * 1e-9) - 1.0).abs() < 1e-3, "{streams} stream(s): {s} s, want {ns} ns per line");
    }
}

#[test]
fn more_instructions_per_line_keep_fewer_lines_in_flight_in_the_window() {
    // A 64-instruction window and 2 prefetched lines, 10 fill buffers, one stream of 4: at 16
    // instructions per line 64 / 16 + 2 = 6 lines in flight (100 ns / 6 per line), at 32 per line
    // 64 / 32 + 2 = 4 (25 ns), at 4 per line the window would allow 18, the buffers hold 10 (10 ns).
    let mut m = idle_machine_streams(4.0, 2.0);
    let mut plain = m.clone();
    for c in &mut m.cores {
        c.window_instructions = Some(64.0);
        c.prefetch_lines = Some(2.0);
    }
    let mut p = pinned(policy(PolicyMode::Default, &[]));
    p.cpus = Some(numalab_model::CpuSet::parse_list("0").unwrap());
    let lines = 262_144.0;
    let sweep = |m: &numalab_model::Machine, per_line: Option<f64>| {
        let run = |reps| {
            let mut w = read_sweeps(16, 1, reps, 0.0);
            w.instructions = vec![None, per_line.map(|i| i * lines)];
            simulate(m, &w, &p, &cfg()).unwrap().time_s
        };
        (run(3) - run(1)) / 2.0
    };
    for (per_line, ns) in [(16.0, 100.0 / 6.0), (32.0, 25.0), (4.0, 10.0)] {
        let s = sweep(&m, Some(per_line));
        assert!(
            (s / (lines * ns * 1e-9) - 1.0).abs() < 1e-3,
            "{per_line} instructions per line: {s} s, want {ns} ns per line"
        );
    }
    // A phase that does not state its instructions keeps its streams' 4 lines (25 ns per line),
    // and a machine without a window ignores the instructions: the same time bit for bit.
    let unstated = sweep(&m, None);
    assert!((unstated / (lines * 25e-9) - 1.0).abs() < 1e-3, "no instructions: {unstated} s");
    for c in &mut plain.cores {
        c.prefetch_lines = Some(2.0);
    }
    assert_eq!(sweep(&plain, Some(16.0)).to_bits(), sweep(&plain, None).to_bits());
}

#[test]
fn smt_siblings_share_their_cores_fill_buffers() {
    // Two threads on two cores (PUs 0, 1) vs on the two PUs of one core (0 and its sibling 8):
    // the siblings get 5 fill buffers each, so a sweep takes twice as long.
    let m = idle_machine(10.0);
    let apart = sweep_s(&m, 64, 2, "0-1", 0.0);
    let siblings = sweep_s(&m, 64, 2, "0,8", 0.0);
    assert!((siblings / apart - 2.0).abs() < 0.05, "siblings {siblings} s, separate cores {apart} s");
}

#[test]
fn one_thread_is_concurrency_bound_and_a_full_node_is_bandwidth_bound() {
    // machine4: 10 GB/s per node, 100 ns, 10 fill buffers: one thread can pull at most
    // 10 x 64 B / 100 ns = 6.4 GB/s (less once the curve raises its latency); four threads on
    // the node ask for 25.6 GB/s and get the controller's 10 GB/s.
    let m = machine4();
    let bytes = (256u64 << 20) as f64;
    let one = bytes / sweep_s(&m, 256, 1, "0", 0.0) / 1e9;
    let four = bytes / sweep_s(&m, 256, 4, "0-3", 0.0) / 1e9;
    assert!(one < 6.4 && one > 4.0, "one thread: {one} GB/s");
    assert!(four > 9.0 && four <= 10.0 * 1.02, "four threads: {four} GB/s");
}

/// `idle_machine` with one last-level cache of `llc_kib` per node.
fn cached_machine(llc_kib: u64) -> numalab_model::Machine {
    let spec = format!(
        r#"{{"name": "llc2", "description": "test machine with caches",
        "topology": {{"packages": 2, "nodes_per_package": 1, "cores_per_node": 4, "threads_per_core": 2, "cpu_numbering": "smt-last"}},
        "memory": {{"node_gib": 2}}, "latency": {{"local_ns": 100}}, "bandwidth": {{"node_gbps": 1000}},
        "links": [{{"nodes": [0,1], "gbps": 1000}}], "core": {{"frequency_ghz": 2.0, "mlp": 10}},
        "caches": [{{"level": 3, "size_kib": {llc_kib}, "per": "node"}}]}}"#
    );
    numalab_model::MachineSpec::from_json(&spec).unwrap().resolve().unwrap()
}

/// DRAM lines one sweep phase moves: `rd` per byte if its re-use misses, `hit_rd` if it hits,
/// re-use window `window` bytes per thread (`None`: a pure stream, no cached side).
fn sweep_lines(
    m: &numalab_model::Machine,
    mib: u64,
    threads: u32,
    cpus: &str,
    rd: f64,
    hit: Option<(f64, f64)>,
) -> f64 {
    let mut p = pinned(policy(PolicyMode::Default, &[]));
    p.cpus = Some(numalab_model::CpuSet::parse_list(cpus).unwrap());
    p.proc_bind = numalab_sim::input::ProcBind::Close;
    let lines = |reps| {
        let mut w = read_sweeps(mib, threads, reps, 0.0);
        w.phases[1].accesses[0].rd = rd;
        w.phases[1].accesses[0].cached = hit.map(|(hit_rd, window)| numalab_sim::input::Cached {
            rd: hit_rd,
            wr: 0.0,
            window_bytes: window,
            shared: false,
        });
        let out = simulate(m, &w, &p, &cfg()).unwrap();
        out.access_map.iter().flatten().sum::<u64>() as f64
    };
    (lines(3) - lines(1)) / 2.0
}

#[test]
fn a_working_set_that_fits_the_llc_moves_nothing_and_a_larger_one_streams() {
    // A loop re-reading its 4 MiB block: in an 8 MiB LLC it stays cached; in a 1 MiB one 3/4 of
    // it misses every pass; 65,536 lines per pass if nothing is cached.
    let reuse = Some((0.0, 4.0 * 1048576.0));
    assert_eq!(sweep_lines(&cached_machine(8192), 4, 1, "0", 1.0, reuse), 0.0);
    let small = sweep_lines(&cached_machine(1024), 4, 1, "0", 1.0, reuse);
    assert!((small / 65536.0 - 0.75).abs() < 0.01, "{small} lines");
    // The same 4 MiB per thread for 4 threads on one 8 MiB LLC: 2 MiB each, half of it misses.
    let four = sweep_lines(&cached_machine(8192), 16, 4, "0-3", 1.0, reuse);
    assert!((four / (4.0 * 65536.0) - 0.5).abs() < 0.01, "{four} lines");
}

#[test]
fn halving_the_llc_raises_traffic_for_a_reuse_heavy_stream_not_for_a_pure_stream() {
    // A stencil-like access: 3 reads per byte if its 6 MiB window misses, 1 if it fits.
    let heavy = Some((1.0, 6.0 * 1048576.0));
    let (big, half) = (cached_machine(8192), cached_machine(4096));
    let (h8, h4) = (sweep_lines(&big, 16, 1, "0", 3.0, heavy), sweep_lines(&half, 16, 1, "0", 3.0, heavy));
    assert!((h8 / 262144.0 - 1.0).abs() < 0.01, "{h8}");
    // 1 + 2 x (1 - 4/6) reads per byte.
    assert!((h4 / 262144.0 - 5.0 / 3.0).abs() < 0.01, "{h4}");
    let (s8, s4) = (sweep_lines(&big, 16, 1, "0", 1.0, None), sweep_lines(&half, 16, 1, "0", 1.0, None));
    assert_eq!(s8, s4);
    assert!((s8 / 262144.0 - 1.0).abs() < 0.01, "{s8}");
}

#[test]
fn a_thp_fault_places_the_whole_2_mib_page_on_the_faulting_threads_node() {
    // Four threads, one per node, first-touch their static blocks of a THP region. With 2 MiB
    // blocks each node gets its thread's page; with 1.5 MiB blocks every 2 MiB page still lands
    // whole on one node (512 base pages), on the node of whichever thread wrote it first.
    let m = machine4();
    let p = pinned(policy(PolicyMode::Default, &[]));
    let run = |mib: u64| {
        let mut w = stream_like(mib, 4, Pattern::Block, 1);
        w.regions[0].thp = true;
        simulate(&m, &w, &p, &cfg()).unwrap().pages_per_node
    };
    assert_eq!(run(8), vec![512, 512, 512, 512]);
    let pages = run(6);
    assert_eq!(pages.iter().sum::<u64>(), 3 * 512);
    assert!(pages.iter().all(|&n| n % 512 == 0), "{pages:?}");
    assert_eq!(pages[0], 512, "thread 0 writes the first page first: {pages:?}");
}

/// Compute-only phases of known length: initialisation, one untimed iteration, `timed`
/// iterations inside the program's timer, then an untimed verification.
fn timed_toy(threads: u32, timed: u64) -> numalab_sim::WorkloadSpec {
    use numalab_sim::input::{PhaseSpec, StepSpec, Sync};
    let phase = |name: &str, cycles: f64| PhaseSpec {
        name: name.into(),
        cycles,
        mlp: None,
        chain: 0.0,
        sync: Sync::Barrier,
        pipeline_steps: 1,
        accesses: Vec::new(),
    };
    let mut w = stream_like(1, threads, Pattern::Block, 0);
    w.phases = vec![phase("init", 8e7), phase("iter", 4e7), phase("verify", 2e7)];
    w.program = vec![
        StepSpec { phases: vec![0], repeat: 1, timed: false },
        StepSpec { phases: vec![1], repeat: 1, timed: false },
        StepSpec { phases: vec![1], repeat: timed, timed: true },
        StepSpec { phases: vec![2], repeat: 1, timed: false },
    ];
    w
}

#[test]
fn the_reported_time_is_the_timed_steps_only_and_the_whole_run_is_time_s() {
    let m = machine4();
    let p = pinned(policy(PolicyMode::Default, &[]));
    let freq = 2e9;
    for threads in [1u32, 4] {
        let nt = threads as f64;
        let out = simulate(&m, &timed_toy(threads, 5), &p, &cfg()).unwrap();
        assert_eq!(out.reported_time_source, "timer");
        // Five iterations of 4e7 cycles split over the threads: neither init nor the untimed
        // iteration nor the verification.
        let want = 5.0 * 4e7 / nt / freq;
        assert!((out.reported_time_s - want).abs() < 1e-9, "{threads} threads: {} vs {want}", out.reported_time_s);
        assert_eq!(out.processes[0].reported_time_s, out.reported_time_s);
        // The whole run adds init, the untimed iteration, verification and team start-up: the
        // last worker's creation, its CPU's exit from idle and its way to the dock (engine/team.rs:
        // IDLE_EXIT_S 133 µs, THREAD_START_S 5 µs).
        let dock = if threads > 1 { 133e-6 + 5e-6 } else { 0.0 };
        let rest = (8e7 + 4e7 + 2e7) / nt / freq + numalab_sim::openmp::start_times(threads as usize)[0] + dock;
        assert!((out.time_s - want - rest).abs() < 1e-9, "{threads} threads: {} vs {}", out.time_s, want + rest);
    }
}

#[test]
fn a_workload_without_a_timer_reports_the_whole_run() {
    let m = machine4();
    let p = pinned(policy(PolicyMode::Default, &[]));
    let mut w = timed_toy(4, 5);
    w.program[2].timed = false;
    let out = simulate(&m, &w, &p, &cfg()).unwrap();
    assert_eq!(out.reported_time_source, "whole-run");
    assert_eq!(out.reported_time_s, out.time_s);
    // A timed step repeated zero times is a timer that reads zero.
    let out = simulate(&m, &timed_toy(4, 0), &p, &cfg()).unwrap();
    assert_eq!((out.reported_time_source.as_str(), out.reported_time_s), ("timer", 0.0));
}

#[test]
fn a_timer_from_the_start_of_the_program_counts_the_team_s_creation() {
    let m = machine4();
    let p = pinned(policy(PolicyMode::Default, &[]));
    let mut w = timed_toy(4, 5);
    for s in &mut w.program {
        s.timed = true;
    }
    let out = simulate(&m, &w, &p, &cfg()).unwrap();
    assert!((out.reported_time_s - out.time_s).abs() < 1e-12, "{} vs {}", out.reported_time_s, out.time_s);
}
