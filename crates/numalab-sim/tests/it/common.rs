use numalab_model::{Machine, MachineSpec, MemPolicy, NodeSet, PolicyMode};
use numalab_sim::input::{AccessSpec, Pattern, PhaseSpec, Placement, Places, ProcBind, RegionSpec, StepSpec, Sync};
use numalab_sim::{SimConfig, WorkloadSpec};

/// 4 nodes x 4 cores, 1 GiB per node, 10/16/22 distances on a square, 10 GB/s per node.
pub fn machine4() -> Machine {
    machine4_with_gib(2.0)
}

pub fn machine4_with_gib(gib: f64) -> Machine {
    let spec = format!(
        r#"{{"name": "sq4", "description": "test square",
        "topology": {{"packages": 4, "nodes_per_package": 1, "cores_per_node": 4}},
        "memory": {{"node_gib": {gib}}},
        "distances": [[10,16,16,22],[16,10,22,16],[16,22,10,16],[22,16,16,10]],
        "latency": {{"local_ns": 100}},
        "bandwidth": {{"node_gbps": 10}},
        "links": [{{"nodes": [0,1], "gbps": 6}}, {{"nodes": [0,2], "gbps": 6}}, {{"nodes": [1,3], "gbps": 6}}, {{"nodes": [2,3], "gbps": 6}}],
        "core": {{"frequency_ghz": 2.0, "mlp": 10}}}}"#
    );
    MachineSpec::from_json(&spec).unwrap().resolve().unwrap()
}

pub fn access(region: usize, pattern: Pattern, rd: f64, wr: f64) -> AccessSpec {
    AccessSpec { region, pattern, rd, wr, halo: 1, chunk: 1, rows: 1, count: 0, passes: 1.0, cached: None }
}

/// One array of `mib` MiB, an init phase with `init` pattern, then `reps` block sweeps.
pub fn stream_like(mib: u64, threads: u32, init: Pattern, reps: u64) -> WorkloadSpec {
    let bytes = mib << 20;
    WorkloadSpec {
        name: "toy".into(),
        description: String::new(),
        params: Default::default(),
        processes: 1,
        threads,
        regions: vec![RegionSpec::anonymous("a", bytes, bytes / 8)],
        phases: vec![
            PhaseSpec {
                name: "init".into(),
                cycles: (bytes / 8) as f64,
                mlp: None,
                chain: 0.0,
                sync: Sync::Barrier,
                pipeline_steps: 1,
                accesses: vec![access(0, init, 1.0, 1.0)],
            },
            PhaseSpec {
                name: "sweep".into(),
                cycles: (bytes / 8) as f64,
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

pub fn pinned(policy: MemPolicy) -> Placement {
    Placement { policy, cpus: None, proc_bind: ProcBind::Spread, places: Places::Cores }
}

pub fn policy(mode: PolicyMode, nodes: &[u32]) -> MemPolicy {
    MemPolicy::new(mode, NodeSet::from_indexes(nodes.iter().copied())).unwrap()
}

pub fn cfg() -> SimConfig {
    SimConfig::default()
}

/// Share of the accesses that were local (diagonal of the access map).
pub fn local_share(map: &[Vec<u64>]) -> f64 {
    let total: u64 = map.iter().flatten().sum();
    let local: u64 = (0..map.len()).map(|i| map[i][i]).sum();
    local as f64 / total as f64
}

/// Share of the accesses served by each memory node.
pub fn concentration(map: &[Vec<u64>]) -> Vec<f64> {
    let total: u64 = map.iter().flatten().sum();
    (0..map.len()).map(|j| map.iter().map(|r| r[j]).sum::<u64>() as f64 / total as f64).collect()
}

/// 2 nodes x 8 cores x 2 threads with 32 GiB each, 10/21 distances: the shape of the
/// e5-2620v4-2s preset (the DGEMV study machine), numbers from that preset.
pub fn machine2() -> Machine {
    let spec = r#"{"name": "2s", "description": "two-socket test machine",
        "topology": {"packages": 2, "nodes_per_package": 1, "cores_per_node": 8, "threads_per_core": 2, "cpu_numbering": "smt-last"},
        "memory": {"node_gib": 32},
        "distances": [[10,21],[21,10]],
        "latency": {"local_ns": 75.8, "matrix_ns": [[75.8, 133.4], [133.4, 75.8]]},
        "bandwidth": {"node_gbps": 51.2},
        "links": [{"nodes": [0,1], "gbps": 32}],
        "core": {"frequency_ghz": 2.1, "mlp": 10}}"#;
    MachineSpec::from_json(spec).unwrap().resolve().unwrap()
}

/// Unbound threads (the scheduler places and moves them), default policy.
pub fn unpinned() -> Placement {
    Placement { policy: MemPolicy::default_policy(), cpus: None, proc_bind: ProcBind::False, places: Places::Cores }
}

/// Balancing on with the kernel's default knobs.
pub fn balancing(kernel: numalab_sim::Kernel) -> SimConfig {
    let mut c = SimConfig { kernel, ..SimConfig::default() };
    c.balancing.enabled = true;
    c.balancing.explain = true;
    c
}

/// Unbound threads on these CPUs, memory under the default policy (co-run tests).
pub fn on_cpus(cpus: &[u32]) -> Placement {
    let cpus = numalab_model::CpuSet::from_indexes(cpus.iter().copied());
    Placement {
        policy: MemPolicy::default_policy(),
        cpus: Some(cpus),
        proc_bind: ProcBind::False,
        places: Places::Cores,
    }
}

/// A co-run group of `w` under `p`, starting at `start_s`.
pub fn group<'a>(w: &'a WorkloadSpec, p: &'a Placement, start_s: f64) -> numalab_sim::corun::Group<'a> {
    numalab_sim::corun::Group { workload: w, placement: p, start_s, thp_madvised: &[] }
}
