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
    AccessSpec { region, pattern, rd, wr, halo: 1, chunk: 1, count: 0, passes: 1.0 }
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
        regions: vec![RegionSpec { name: "a".into(), bytes, planes: bytes / 8, thp: false, policy: None, address: None }],
        phases: vec![
            PhaseSpec { name: "init".into(), cycles: (bytes / 8) as f64, mlp: None, sync: Sync::Barrier, pipeline_steps: 1, accesses: vec![access(0, init, 1.0, 1.0)] },
            PhaseSpec { name: "sweep".into(), cycles: (bytes / 8) as f64, mlp: None, sync: Sync::Barrier, pipeline_steps: 1, accesses: vec![access(0, Pattern::Block, 1.0, 0.0)] },
        ],
        program: vec![StepSpec { phases: vec![0], repeat: 1 }, StepSpec { phases: vec![1], repeat: reps }],
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
