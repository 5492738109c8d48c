//! Rust-side timing of one balancing step per balancer: lb_test with 10,000 objects on 64 PEs
//! (8 nodes x 8 cores), from Charm++'s block map. `cargo run --release -p numalab-tasks --example
//! lb_timing [n_objects] [topology]`. The Python benchmark (`bench/lb_bench.py`) is the reference.

use numalab_model::MachineSpec;
use numalab_tasks::balance;
use numalab_tasks::gen::{self, Params};
use numalab_tasks::platform::{CommLayer, CostParams, Platform};
use numalab_tasks::simulate::balance_once;
use serde_json::{json, Value};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(10_000);
    let topology = args.get(2).cloned().unwrap_or_else(|| "randgraph".into());
    let spec = json!({
        "name": "grid64", "description": "8 nodes x 8 cores",
        "topology": {"packages": 8, "nodes_per_package": 1, "cores_per_node": 8},
        "memory": {"node_gib": 16.0},
        "latency": {"local_ns": 100.0},
        "bandwidth": {"node_gbps": 10.0},
        "distances": (0..8i32).map(|i| (0..8i32).map(|j| if i == j { 10 } else { 10 + 6 * (i - j).unsigned_abs().min(3) }).collect::<Vec<_>>()).collect::<Vec<_>>(),
        "core": {"frequency_ghz": 2.0, "mlp": 10.0}
    });
    let m = MachineSpec::from_json(&spec.to_string()).unwrap().resolve().unwrap();
    let plat = Platform::new(&m, None, CommLayer::Shm, CostParams::default()).unwrap();
    let t = std::time::Instant::now();
    let g = gen::lb_test(n, 1, &json!({"topology": topology})).unwrap();
    println!("lb_test {n} objects, {} edges, generated in {:.3} s", g.edges.len(), t.elapsed().as_secs_f64());
    for name in balance::NAMES {
        let v = Value::Null;
        let mut p = Params::new("params", &v).unwrap();
        let mut lb = balance::make(name, &mut p).unwrap();
        let r = balance_once(&g, &plat, lb.as_mut(), None, 10).unwrap();
        println!("{name:>14}: {:8.4} s, {:5} migrations", r.wall_s, r.migrations);
    }
}
