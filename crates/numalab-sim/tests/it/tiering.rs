//! Memory tiers, demotion, memory-tiering promotion, weighted interleave weights and memoryless
//! nodes (docs/tiering.md §9).

use numalab_model::{Machine, MachineSpec, PolicyMode};
use numalab_sim::input::{Pattern, Placement, Places, ProcBind};
use numalab_sim::tiering::{weights, Tiers};
use numalab_sim::{simulate, Kernel, SimConfig};

use crate::common::*;

/// Two sockets with `dram_gib` of DRAM each (nodes 0, 1) and a CPU-less CXL expander of 4 GiB
/// beside each (nodes 2, 3): the shape of the cxl-2s preset, smaller.
fn cxl_machine(dram_gib: f64) -> Machine {
    let spec = format!(
        r#"{{"name": "cxl", "description": "2 sockets + CXL",
        "nodes": [
          {{"os_index": 0, "package": 0, "cpus": "0-3", "memory_bytes": {d}, "bandwidth_gbps": 20}},
          {{"os_index": 1, "package": 1, "cpus": "4-7", "memory_bytes": {d}, "bandwidth_gbps": 20}},
          {{"os_index": 2, "package": 0, "cpus": "", "memory_bytes": 4294967296, "bandwidth_gbps": 10, "subtype": "CXL-DRAM"}},
          {{"os_index": 3, "package": 1, "cpus": "", "memory_bytes": 4294967296, "bandwidth_gbps": 10, "subtype": "CXL-DRAM"}}],
        "cores": [{{"cpus": "0"}}, {{"cpus": "1"}}, {{"cpus": "2"}}, {{"cpus": "3"}},
                  {{"cpus": "4"}}, {{"cpus": "5"}}, {{"cpus": "6"}}, {{"cpus": "7"}}],
        "distances": [[10,21,14,24],[21,10,24,14],[14,24,10,26],[24,14,26,10]],
        "latency": {{"local_ns": 100, "matrix_ns": [[100,150,250,300],[150,100,300,250],[250,300,250,350],[300,250,350,250]]}},
        "bandwidth": {{"node_gbps": 20}},
        "links": [{{"nodes": [0,1], "gbps": 20}}, {{"nodes": [0,2], "gbps": 16}}, {{"nodes": [1,3], "gbps": 16}}],
        "core": {{"frequency_ghz": 2.0, "mlp": 10}}}}"#,
        d = (dram_gib * (1u64 << 30) as f64) as u64
    );
    MachineSpec::from_json(&spec).unwrap().resolve().unwrap()
}

fn on_node0() -> Placement {
    let m = cxl_machine(1.0);
    Placement {
        policy: numalab_model::MemPolicy::default_policy(),
        cpus: Some(m.nodes[0].cpuset.clone()),
        proc_bind: ProcBind::Spread,
        places: Places::Cores,
    }
}

fn quiet() -> SimConfig {
    SimConfig { kernel: Kernel::V6_13, ..SimConfig::default() }
}

#[test]
fn cxl_nodes_form_a_slower_tier_with_the_nearest_as_demotion_target() {
    let t = Tiers::new(&cxl_machine(1.0));
    // CPU nodes: MEMTIER_ADISTANCE_DRAM; CXL: 576 x (250/100) x (20/10) = 2880.
    assert_eq!(t.adistance, vec![576, 576, 2880, 2880]);
    assert_eq!(t.tier, vec![0, 0, 1, 1]);
    assert_eq!(t.toptier, vec![true, true, false, false]);
    assert_eq!(t.preferred[0], vec![2]);
    assert_eq!(t.preferred[1], vec![3]);
    assert!(t.preferred[2].is_empty(), "the last tier demotes nowhere");
    assert_eq!(t.allowed[0], vec![false, false, true, true]);
}

#[test]
fn demotion_moves_pages_when_the_fast_node_is_full_and_not_before() {
    let m = cxl_machine(1.0);
    let bind0 = Placement { policy: policy(PolicyMode::Bind, &[0]), ..on_node0() };
    let mut c = quiet();
    c.balancing.demotion_enabled = true;
    // Half the node: no watermark is reached, nothing moves.
    let small = simulate(&m, &stream_like(512, 4, Pattern::Block, 2), &bind0, &c).unwrap();
    assert_eq!(small.status, "ok");
    assert_eq!(small.vmstat.pgdemote_kswapd + small.vmstat.pgdemote_direct, 0);
    assert_eq!(small.pages_per_node, vec![131072, 0, 0, 0]);
    // 1.5x the node: bound to node 0, the run only completes because reclaim demotes to node 2.
    let big = stream_like(1536, 4, Pattern::Block, 2);
    let off = simulate(&m, &big, &bind0, &quiet()).unwrap();
    assert_eq!(off.status, "out-of-memory", "without demotion_enabled nothing reclaims");
    let on = simulate(&m, &big, &bind0, &c).unwrap();
    assert_eq!(on.status, "ok", "{:?}", on.error);
    let demoted = on.vmstat.pgdemote_kswapd + on.vmstat.pgdemote_direct;
    assert!(on.pages_per_node[2] >= 131072, "{:?}", on.pages_per_node);
    assert_eq!(demoted, on.pages_per_node[2], "every page on the CXL node got there by demotion");
    assert_eq!(on.pages_per_node[1] + on.pages_per_node[3], 0, "demotion goes to the nearest lower tier");
}

#[test]
fn demotion_counters_carry_the_kernels_names_and_stay_out_when_zero() {
    let m = cxl_machine(1.0);
    let bind0 = Placement { policy: policy(PolicyMode::Bind, &[0]), ..on_node0() };
    let mut c = quiet();
    c.balancing.demotion_enabled = true;
    let on = simulate(&m, &stream_like(1536, 4, Pattern::Block, 1), &bind0, &c).unwrap();
    let v = serde_json::to_value(&on.vmstat).unwrap();
    assert!(v.get("pgdemote_kswapd").is_some() || v.get("pgdemote_direct").is_some(), "{v}");
    let quiet_run = simulate(&m, &stream_like(64, 4, Pattern::Block, 1), &bind0, &quiet()).unwrap();
    let v = serde_json::to_value(&quiet_run.vmstat).unwrap();
    assert!(v.get("pgdemote_kswapd").is_none() && v.get("pgpromote_success").is_none(), "{v}");
}

/// Default policy on node 0's CPUs, 1.5 GiB on a 1 GiB DRAM node: the rest spills to the CXL
/// node; with tiering mode and demotion the hot CXL pages are promoted (and others demoted).
fn tiering_run(rate_limit_mbps: u32) -> numalab_sim::SimOutput {
    let m = cxl_machine(1.0);
    let mut c = quiet();
    c.balancing.memory_tiering = true;
    c.balancing.demotion_enabled = true;
    c.balancing.scan_delay_ms = 100;
    c.balancing.scan_period_min_ms = 100;
    c.balancing.promote_rate_limit_mbps = rate_limit_mbps;
    simulate(&m, &stream_like(1536, 4, Pattern::Block, 12), &on_node0(), &c).unwrap()
}

#[test]
fn tiering_mode_promotes_hot_pages_within_its_rate_limit() {
    let fast = tiering_run(65536);
    assert_eq!(fast.status, "ok", "{:?}", fast.error);
    assert!(fast.vmstat.pgpromote_success > 0, "{:?}", fast.vmstat);
    assert!(fast.vmstat.pgpromote_candidate >= fast.vmstat.pgpromote_success);
    assert!(fast.vmstat.pgdemote_kswapd > 0, "promotion into a full node wakes kswapd: {:?}", fast.vmstat);
    // 1 MB/s = 256 candidates per second into node 0.
    let slow = tiering_run(1);
    let windows = slow.time_s.ceil() as u64 + 1;
    assert!(slow.vmstat.pgpromote_success <= 256 * windows, "{} in {} s", slow.vmstat.pgpromote_success, slow.time_s);
    assert!(slow.vmstat.pgpromote_success < fast.vmstat.pgpromote_success);
}

#[test]
fn without_tiering_mode_slow_pages_are_not_promoted() {
    let m = cxl_machine(1.0);
    let mut c = quiet();
    c.balancing.enabled = true;
    c.balancing.demotion_enabled = true;
    c.balancing.scan_delay_ms = 100;
    c.balancing.scan_period_min_ms = 100;
    let out = simulate(&m, &stream_like(1536, 4, Pattern::Block, 6), &on_node0(), &c).unwrap();
    assert_eq!(out.vmstat.pgpromote_success, 0);
}

#[test]
fn weighted_interleave_places_pages_in_the_weights_ratio() {
    let m = cxl_machine(2.0);
    let mut p = policy(PolicyMode::WeightedInterleave, &[0, 2]);
    p.weights.insert(0, 3);
    p.weights.insert(2, 1);
    let out = simulate(&m, &stream_like(256, 4, Pattern::Master, 1), &Placement { policy: p, ..on_node0() }, &quiet())
        .unwrap();
    let (a, b) = (out.pages_per_node[0] as f64, out.pages_per_node[2] as f64);
    assert!((a / (a + b) - 0.75).abs() < 0.01, "{:?}", out.pages_per_node);
}

#[test]
fn weighted_interleave_auto_weights_follow_bandwidth_and_user_weights_win() {
    let m = cxl_machine(2.0);
    // Over all memory nodes, 20+20+10+10 GB/s: 32 x 20/60 = 10, 32 x 10/60 = 5, GCD 5: 2:2:1:1.
    assert_eq!(weights::default_weights(&m, true), vec![2, 2, 1, 1]);
    assert_eq!(weights::default_weights(&m, false), vec![1; 4]);
    let wi = |p: numalab_model::MemPolicy, auto: bool| {
        let mut c = quiet();
        c.balancing.weighted_interleave_auto = auto;
        let out =
            simulate(&m, &stream_like(256, 4, Pattern::Master, 1), &Placement { policy: p, ..on_node0() }, &c).unwrap();
        out.pages_per_node[0] as f64 / (out.pages_per_node[0] + out.pages_per_node[2]) as f64
    };
    let plain = policy(PolicyMode::WeightedInterleave, &[0, 2]);
    assert!((wi(plain.clone(), false) - 0.5).abs() < 0.01);
    assert!((wi(plain.clone(), true) - 2.0 / 3.0).abs() < 0.01);
    let mut user = plain;
    user.weights.insert(0, 1);
    user.weights.insert(2, 1);
    assert!((wi(user, true) - 0.5).abs() < 0.01, "user weights override auto");
}

#[test]
fn a_memoryless_nodes_cpus_allocate_on_the_nearest_node_with_memory() {
    let spec = r#"{"name": "ml", "description": "node 1 has CPUs and no memory",
        "nodes": [
          {"os_index": 0, "package": 0, "cpus": "0-1", "memory_bytes": 1073741824},
          {"os_index": 1, "package": 0, "cpus": "2-3", "memory_bytes": 0},
          {"os_index": 2, "package": 1, "cpus": "4-5", "memory_bytes": 1073741824}],
        "cores": [{"cpus": "0"}, {"cpus": "1"}, {"cpus": "2"}, {"cpus": "3"}, {"cpus": "4"}, {"cpus": "5"}],
        "distances": [[10,20,20],[20,10,12],[20,12,10]],
        "latency": {"local_ns": 100},
        "bandwidth": {"node_gbps": 10},
        "links": [{"nodes": [0,1], "gbps": 10}, {"nodes": [1,2], "gbps": 10}],
        "core": {"frequency_ghz": 2.0, "mlp": 10}}"#;
    let m = MachineSpec::from_json(spec).unwrap().resolve().unwrap();
    let pl = Placement {
        policy: numalab_model::MemPolicy::default_policy(),
        cpus: Some(m.nodes[1].cpuset.clone()),
        proc_bind: ProcBind::Spread,
        places: Places::Cores,
    };
    let out = simulate(&m, &stream_like(64, 2, Pattern::Block, 1), &pl, &quiet()).unwrap();
    assert_eq!(out.status, "ok", "{:?}", out.error);
    // local_memory_node(1) is the first node of node 1's zonelist: node 2 at distance 12.
    assert_eq!(out.pages_per_node, vec![0, 0, 16384]);
}
