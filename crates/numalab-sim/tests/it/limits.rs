//! Inputs at the edges: tiny and huge sample rates, one thread, more threads than pages,
//! empty phases, absurd sizes. Every one ends in a result or a `SimError::Input`, never a panic.

use numalab_model::PolicyMode;
use numalab_sim::input::{Pattern, PhaseSpec, RegionSpec, StepSpec, Sync};
use numalab_sim::{simulate, SimConfig, SimError, WorkloadSpec};

use crate::common::*;

const ALL: [Pattern; 9] = [
    Pattern::Block,
    Pattern::Stencil,
    Pattern::Transpose,
    Pattern::Shared,
    Pattern::Master,
    Pattern::Private,
    Pattern::Dynamic,
    Pattern::Gather,
    Pattern::Scatter,
];

/// One region of `bytes` in `planes` planes, a first-write phase and a sweep, each with `pat`.
fn one_region(bytes: u64, planes: u64, thp: bool, threads: u32, pat: Pattern) -> WorkloadSpec {
    let mut a = access(0, pat, 1.0, 1.0);
    a.count = 1000;
    a.chunk = 3;
    WorkloadSpec {
        name: "edge".into(),
        description: String::new(),
        params: Default::default(),
        processes: 1,
        threads,
        regions: vec![RegionSpec { thp, ..RegionSpec::anonymous("a", bytes, planes) }],
        phases: vec![
            PhaseSpec {
                name: "p".into(),
                cycles: 1e6,
                mlp: None,
                chain: 0.0,
                sync: Sync::Barrier,
                pipeline_steps: 1,
                accesses: vec![a.clone()],
            },
            PhaseSpec {
                name: "q".into(),
                cycles: 1e6,
                mlp: None,
                chain: 0.0,
                sync: Sync::Pipeline,
                pipeline_steps: 4,
                accesses: vec![a],
            },
        ],
        instructions: Vec::new(),
        program: vec![StepSpec { phases: vec![0, 1], repeat: 2, timed: false }],
    }
}

fn rate(r: f64) -> SimConfig {
    SimConfig { sample_rate: r, ..cfg() }
}

fn input_error(r: Result<numalab_sim::SimOutput, SimError>) -> String {
    match r {
        Err(SimError::Input(m)) => m,
        Ok(out) => panic!("expected an input error, got a run with status {}", out.status),
    }
}

#[test]
fn tiny_sample_rates_run_every_pattern() {
    let m = machine4();
    for r in [1e-20, 1e-300, 1e-12, 1e-6, 0.3] {
        for thp in [false, true] {
            for pat in ALL {
                let w = one_region(8 << 20, 1000, thp, 4, pat);
                let out = simulate(&m, &w, &unpinned(), &rate(r))
                    .unwrap_or_else(|e| panic!("rate {r} thp {thp} {pat:?}: {e}"));
                assert_eq!(out.status, "ok", "rate {r} thp {thp} {pat:?}");
            }
        }
    }
}

#[test]
fn tiny_sample_rates_with_balancing_run() {
    let m = machine4();
    for r in [1e-20, 1e-6, 0.01] {
        for pat in ALL {
            let w = one_region(64 << 20, 4096, false, 8, pat);
            let c = SimConfig { sample_rate: r, ..balancing(numalab_sim::Kernel::V6_13) };
            let out = simulate(&m, &w, &unpinned(), &c).unwrap_or_else(|e| panic!("rate {r} {pat:?}: {e}"));
            assert_eq!(out.status, "ok");
        }
    }
}

#[test]
fn more_threads_than_pages_or_planes_run() {
    let m = machine4();
    for (bytes, planes) in [(1, 1), (4096, 1), (4096, 3), (5000, 7), (1 << 20, 1 << 20), (100, 1 << 12)] {
        for threads in [1, 64, 300] {
            for pat in ALL {
                let w = one_region(bytes, planes, false, threads, pat);
                let out = simulate(&m, &w, &pinned(policy(PolicyMode::Default, &[])), &cfg())
                    .unwrap_or_else(|e| panic!("{bytes} B {planes} planes {threads} threads {pat:?}: {e}"));
                assert_eq!(out.status, "ok");
                assert!(out.time_s.is_finite());
            }
        }
    }
}

#[test]
fn empty_phases_and_programs_run() {
    let m = machine4();
    let mut w = one_region(1 << 20, 256, false, 4, Pattern::Block);
    // Zero cycles, no traffic, zero passes, a phase without accesses, zero repeats.
    w.phases[0].cycles = 0.0;
    w.phases[1].accesses[0].rd = 0.0;
    w.phases[1].accesses[0].wr = 0.0;
    w.phases.push(PhaseSpec {
        name: "idle".into(),
        cycles: 0.0,
        mlp: None,
        chain: 0.0,
        sync: Sync::Barrier,
        pipeline_steps: 1,
        accesses: vec![],
    });
    w.program = vec![
        StepSpec { phases: vec![], repeat: 5, timed: false },
        StepSpec { phases: vec![0, 1, 2], repeat: 3, timed: false },
        StepSpec { phases: vec![2], repeat: 0, timed: false },
    ];
    let out = simulate(&m, &w, &unpinned(), &cfg()).unwrap();
    assert_eq!(out.status, "ok");
    w.program.clear();
    let out = simulate(&m, &w, &unpinned(), &cfg()).unwrap();
    assert_eq!((out.status.as_str(), out.time_s), ("ok", 0.0));
    let mut w = one_region(1 << 20, 256, false, 4, Pattern::Block);
    w.phases[0].accesses[0].passes = 0.0;
    w.phases[1].pipeline_steps = u64::MAX;
    assert_eq!(simulate(&m, &w, &unpinned(), &cfg()).unwrap().status, "ok");
}

#[test]
fn extreme_halo_and_chunk_run() {
    let m = machine4();
    for (halo, chunk) in [(u64::MAX, u64::MAX), (1 << 63, 1 << 63), (0, 0)] {
        for pat in [Pattern::Stencil, Pattern::Dynamic] {
            let mut w = one_region(1 << 20, 1 << 20, false, 4, pat);
            for p in &mut w.phases {
                p.accesses[0].halo = halo;
                p.accesses[0].chunk = chunk;
            }
            assert_eq!(simulate(&m, &w, &unpinned(), &cfg()).unwrap().status, "ok", "{halo} {chunk} {pat:?}");
        }
    }
}

#[test]
fn absurd_sizes_are_refused_before_allocating() {
    let m = machine4();
    // 800 TB of data: page tables alone would be ~200 GiB.
    let w = one_region(800_000_000_000_000, 1000, false, 4, Pattern::Block);
    let e = input_error(simulate(&m, &w, &unpinned(), &cfg()));
    assert!(e.contains("page tables") && e.contains("THP") && e.contains("limit of 4.0 GiB"), "{e}");
    assert!(e.contains("out of memory"), "data beyond the machine's memory says so: {e}");
    let mut w = one_region(1 << 20, 256, false, 100_000_000, Pattern::Block);
    let e = input_error(simulate(&m, &w, &unpinned(), &cfg()));
    assert!(e.contains("100000000 threads") && e.contains("16384"), "{e}");
    w.threads = 4;
    w.processes = u32::MAX;
    assert!(input_error(simulate(&m, &w, &unpinned(), &cfg())).contains("threads"));
    // A region of 2^64 - 1 bytes, and one whose address overflows.
    let w = one_region(u64::MAX, u64::MAX, true, 4, Pattern::Block);
    assert!(input_error(simulate(&m, &w, &unpinned(), &cfg())).contains("page tables"));
    let mut w = one_region(1 << 20, 256, false, 4, Pattern::Block);
    w.regions[0].address = Some(u64::MAX - 4096);
    assert!(input_error(simulate(&m, &w, &unpinned(), &cfg())).contains("does not fit"));
    // Transpose over a million planes by 4096 threads, dynamic with a billion chunks.
    let w = one_region(64 << 30, 1 << 24, true, 4096, Pattern::Transpose);
    assert!(input_error(simulate(&m, &w, &unpinned(), &cfg())).contains("byte ranges"));
    let w = one_region(1 << 30, 1 << 30, false, 4, Pattern::Dynamic);
    let mut w = w;
    w.phases.iter_mut().for_each(|p| p.accesses[0].chunk = 1);
    assert!(input_error(simulate(&m, &w, &unpinned(), &cfg())).contains("byte ranges"));
    // Random accesses by the trillion, and repetitions by the billion: hours of work.
    let mut w = one_region(1 << 20, 256, false, 4, Pattern::Gather);
    w.phases.iter_mut().for_each(|p| p.accesses[0].count = u64::MAX);
    assert!(input_error(simulate(&m, &w, &unpinned(), &cfg())).contains("visit"));
    let mut w = one_region(1 << 30, 256, false, 4, Pattern::Block);
    w.program[0].repeat = 1_000_000_000;
    assert!(input_error(simulate(&m, &w, &unpinned(), &cfg())).contains("--sample-rate"));
}

#[test]
fn values_the_engine_cannot_use_are_input_errors() {
    let m = machine4();
    let run = |w: &WorkloadSpec, p: &numalab_sim::Placement, c: &SimConfig| input_error(simulate(&m, w, p, c));
    let w = one_region(1 << 20, 256, false, 4, Pattern::Block);
    let mut bad = w.clone();
    bad.threads = 0;
    assert!(run(&bad, &unpinned(), &cfg()).contains("at least 1"));
    let mut bad = w.clone();
    bad.regions[0].bytes = 0;
    assert!(run(&bad, &unpinned(), &cfg()).contains("zero size"));
    for v in [f64::NAN, f64::INFINITY] {
        let mut bad = w.clone();
        bad.phases[0].cycles = v;
        assert!(run(&bad, &unpinned(), &cfg()).contains("not finite"));
        let mut bad = w.clone();
        bad.phases[1].accesses[0].rd = v;
        assert!(run(&bad, &unpinned(), &cfg()).contains("not finite"));
        let mut bad = w.clone();
        bad.phases[0].mlp = Some(v);
        assert!(run(&bad, &unpinned(), &cfg()).contains("mlp"));
        assert!(run(&w, &unpinned(), &rate(v)).contains("--sample-rate"));
        let mut c = cfg();
        c.costs.fault_4k_ns = v;
        assert!(run(&w, &unpinned(), &c).contains("costs"));
    }
    let mut bad = w.clone();
    bad.phases[0].mlp = Some(0.0);
    assert!(run(&bad, &unpinned(), &cfg()).contains("mlp"));
    assert!(run(&w, &unpinned(), &rate(0.0)).contains("--sample-rate"));
    assert!(run(&w, &unpinned(), &rate(-1.0)).contains("--sample-rate"));
    // Nodes the machine does not have, in the task policy or a region's.
    let e = run(&w, &pinned(policy(PolicyMode::Interleave, &[7])), &cfg());
    assert!(e.contains("node 7") && e.contains("0-3"), "{e}");
    assert!(run(&w, &pinned(policy(PolicyMode::Preferred, &[9])), &cfg()).contains("node 9"));
    let mut bad = w.clone();
    bad.regions[0].policy = Some(policy(PolicyMode::Bind, &[1, 12]));
    let e = run(&bad, &unpinned(), &cfg());
    assert!(e.contains("region 'a'") && e.contains("node 12"), "{e}");
    let mut p = unpinned();
    p.cpus = Some(numalab_model::CpuSet::from_indexes([5000]));
    assert!(run(&w, &p, &cfg()).contains("no CPU"));
}

#[test]
fn out_of_memory_names_nodes_policy_region_and_page_size() {
    // 4 nodes of 256 MiB; 512 MiB of data.
    let m = machine4_with_gib(0.25);
    let mut w = stream_like(512, 4, Pattern::Block, 1);
    w.regions[0].thp = true;
    let out = simulate(&m, &w, &pinned(policy(PolicyMode::Bind, &[2])), &cfg()).unwrap();
    assert_eq!(out.status, "out-of-memory");
    let msg = out.error.unwrap();
    assert!(msg.starts_with("out of memory on node 2 under bind:2: region 'a' (512 MiB, 2 MiB pages)"), "{msg}");
    assert!(msg.contains("node 2 has") && msg.contains("free of 256 MiB"), "{msg}");
    // Interleave over two nodes falls back to all four before giving up.
    let w = stream_like(1200, 4, Pattern::Master, 1);
    let out = simulate(&m, &w, &pinned(policy(PolicyMode::Interleave, &[0, 1])), &cfg()).unwrap();
    let msg = out.error.unwrap();
    assert!(msg.contains("under interleave:0,1: region 'a' (1200 MiB, 4 KiB pages)"), "{msg}");
    for n in 0..4 {
        assert!(msg.contains(&format!("node {n} has")), "{msg}");
    }
}

#[test]
fn data_far_beyond_the_machine_ends_out_of_memory_at_once() {
    // 800 GB of data on a machine of 2 GiB: the engine can hold the table (200 M entries), the
    // simulated kernel cannot hold the data.
    let m = machine4_with_gib(0.5);
    let mut w = stream_like(800_000, 4, Pattern::Block, 1000);
    w.regions[0].planes = 100_000_000_000;
    let t0 = std::time::Instant::now();
    let out = simulate(&m, &w, &unpinned(), &cfg()).unwrap();
    assert_eq!(out.status, "out-of-memory");
    let msg = out.error.unwrap();
    assert!(
        // The nodes in the failing thread's zonelist order (where the scheduler put it).
        msg.starts_with("out of memory on nodes ")
            && msg.contains(" under default: region 'a' (800000 MiB, 4 KiB pages)"),
        "{msg}"
    );
    // It stops when memory runs out: about the 2 GiB it could place, not the 800 GB it asked for.
    assert!(out.engine.samples < 1_000_000, "{}", out.engine.samples);
    assert!(t0.elapsed().as_secs() < 20, "{:?}", t0.elapsed());
}

#[test]
fn thread_limits_are_exact() {
    use numalab_sim::footprint::{estimate, MAX_THREADS, MAX_THREADS_PER_PU};
    let m = machine4();
    // 64 threads per CPU of the machine, all processes together: 1,024 on its 16 CPUs.
    let per_machine = MAX_THREADS_PER_PU as u32 * m.pus.len() as u32;
    let mut w = one_region(1 << 20, 256, false, per_machine, Pattern::Block);
    assert!(estimate(&m, &w, &cfg()).check(&m).is_ok());
    w.threads = per_machine / 4;
    w.processes = 4;
    assert!(estimate(&m, &w, &cfg()).check(&m).is_ok());
    w.processes = 5;
    let e = estimate(&m, &w, &cfg()).check(&m).unwrap_err();
    assert!(e.to_string().contains("1280 threads in all on 16 CPUs") && e.to_string().contains("(1024 here)"), "{e}");
    // The absolute limit, whatever the machine.
    w.threads = MAX_THREADS as u32 / 4;
    let e = estimate(&m, &w, &cfg()).check(&m).unwrap_err();
    assert!(e.to_string().contains("20480 threads in all: numalab simulates at most 16384"), "{e}");
}

#[test]
fn phase_executions_and_cycles_are_bounded_up_to_where_the_run_ends() {
    use numalab_sim::footprint::estimate;
    let m = machine4();
    // Each step runs 2 phases of 1e6 cycles over 4 threads.
    let mut w = one_region(1 << 20, 256, false, 4, Pattern::Block);
    w.program[0].repeat = 1 << 21;
    assert!(estimate(&m, &w, &cfg()).check(&m).is_ok());
    w.program[0].repeat = (1 << 21) + 1;
    let e = estimate(&m, &w, &cfg()).check(&m).unwrap_err().to_string();
    assert!(e.contains("phases per process") && e.contains("2^22"), "{e}");
    w.program[0].repeat = 1;
    w.phases[0].cycles = 2.0 * 4.0 * (1u64 << 44) as f64;
    let e = estimate(&m, &w, &cfg()).check(&m).unwrap_err().to_string();
    assert!(e.contains("cycles per thread") && e.contains("2^44"), "{e}");
    // Data beyond the machine ends out of memory in the first phase: what follows is not counted.
    let mut w = one_region(1 << 40, 256, false, 4, Pattern::Block);
    w.phases[1].cycles = 1e300;
    w.program[0].repeat = u64::MAX;
    assert!(estimate(&m, &w, &cfg()).check(&m).is_ok());
}

#[test]
fn every_policy_kernel_and_balancing_setting_survives_edge_shapes() {
    use numalab_sim::Kernel;
    // 64 MiB per node: the larger shapes fill nodes and fall back or run out of memory.
    let m = machine4_with_gib(1.0 / 16.0);
    let mut weighted = policy(PolicyMode::WeightedInterleave, &[0, 1, 3]);
    weighted.weights.insert(1, 5);
    let policies = [
        policy(PolicyMode::Default, &[]),
        policy(PolicyMode::Local, &[]),
        policy(PolicyMode::Bind, &[1]),
        policy(PolicyMode::Bind, &[0, 3]),
        policy(PolicyMode::Preferred, &[2]),
        policy(PolicyMode::PreferredMany, &[1, 2]),
        policy(PolicyMode::Interleave, &[0, 1, 2, 3]),
        weighted,
    ];
    for pol in policies {
        for kernel in [Kernel::V3_13, Kernel::V6_13] {
            for bal in [false, true] {
                for (mib, threads, procs) in [(1, 1, 1), (3, 40, 1), (100, 5, 3)] {
                    for pat in [Pattern::Block, Pattern::Dynamic, Pattern::Scatter, Pattern::Master, Pattern::Stencil] {
                        let mut w = one_region(mib << 20, 1000, procs == 3, threads, pat);
                        w.processes = procs;
                        let mut c = SimConfig { kernel, ..cfg() };
                        if bal {
                            c = balancing(kernel);
                            c.balancing.scan_delay_ms = 0;
                            c.balancing.scan_period_min_ms = 0;
                        }
                        let p = numalab_sim::Placement { policy: pol.clone(), ..unpinned() };
                        let out = simulate(&m, &w, &p, &c).unwrap_or_else(|e| {
                            panic!("{pol:?} {kernel:?} {bal} {mib} MiB {threads}x{procs} {pat:?}: {e}")
                        });
                        assert!(out.status == "ok" || out.status == "out-of-memory", "{}", out.status);
                        assert!(out.time_s.is_finite() && out.time_s >= 0.0);
                    }
                }
            }
        }
    }
}

#[test]
fn odd_addresses_and_unsynchronised_phases_run() {
    let m = machine4();
    let mut w = one_region(4 << 20, 1000, false, 6, Pattern::Block);
    let mut b = w.regions[0].clone();
    b.name = "b".into();
    b.thp = true;
    w.regions.push(b);
    let mut second = w.phases[0].clone();
    second.sync = Sync::None;
    second.accesses[0].region = 1;
    w.phases.push(second);
    w.program.push(StepSpec { phases: vec![2, 0], repeat: 3, timed: false });
    for (a, b) in [(Some(1), Some(1)), (Some(0), Some(4096)), (Some(1 << 56), None), (None, Some(12345))] {
        w.regions[0].address = a;
        w.regions[1].address = b;
        for c in [cfg(), balancing(numalab_sim::Kernel::V6_13), balancing(numalab_sim::Kernel::V3_13)] {
            let out = simulate(&m, &w, &unpinned(), &c).unwrap_or_else(|e| panic!("{a:?} {b:?}: {e}"));
            assert_eq!(out.status, "ok");
        }
    }
}

#[test]
fn a_machine_with_more_nodes_than_a_page_entry_holds_is_refused() {
    let spec = r#"{"name": "wide", "description": "300 single-core nodes",
        "topology": {"packages": 300, "nodes_per_package": 1, "cores_per_node": 1},
        "memory": {"node_gib": 1}, "latency": {"local_ns": 100}, "bandwidth": {"node_gbps": 10},
        "core": {"frequency_ghz": 2.0, "mlp": 10}}"#;
    let m = numalab_model::MachineSpec::from_json(spec).unwrap().resolve().unwrap();
    let w = one_region(1 << 20, 256, false, 4, Pattern::Block);
    let e = input_error(simulate(&m, &w, &unpinned(), &cfg()));
    assert!(e.contains("300 NUMA nodes") && e.contains("at most 254"), "{e}");
}

#[test]
fn a_timeline_too_long_to_keep_is_refused() {
    let m = machine4();
    let w = one_region(1 << 20, 256, false, 4, Pattern::Block);
    let c = SimConfig { timeline_points: usize::MAX, ..cfg() };
    let e = input_error(simulate(&m, &w, &unpinned(), &c));
    assert!(e.contains("for the timeline"), "{e}");
    let c = SimConfig { timeline_points: 0, ..cfg() };
    assert_eq!(simulate(&m, &w, &unpinned(), &c).unwrap().status, "ok");
}

#[test]
fn more_threads_than_pages_with_balancing_run() {
    let m = machine4();
    for kernel in [numalab_sim::Kernel::V3_13, numalab_sim::Kernel::V6_13] {
        for pat in ALL {
            for thp in [false, true] {
                let w = one_region(3 * 4096, 2, thp, 64, pat);
                let mut c = balancing(kernel);
                c.balancing.scan_delay_ms = 0;
                let out = simulate(&m, &w, &unpinned(), &c).unwrap_or_else(|e| panic!("{kernel:?} {pat:?}: {e}"));
                assert_eq!(out.status, "ok");
            }
        }
    }
}
