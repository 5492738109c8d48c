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
