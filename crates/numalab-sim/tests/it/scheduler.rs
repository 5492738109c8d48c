//! Where unbound and bound threads run (docs/scheduler.md).

use numalab_model::PolicyMode;
use numalab_sim::input::{Pattern, Placement, Places, ProcBind};
use numalab_sim::{simulate, Kernel, SimConfig};

use crate::common::*;

fn unbound() -> Placement {
    Placement {
        policy: policy(PolicyMode::Default, &[]),
        cpus: None,
        proc_bind: ProcBind::False,
        places: Places::Cores,
    }
}

#[test]
fn k313_threads_start_on_the_parents_node_then_the_balancer_spreads_them_one_per_cpu() {
    let m = machine4();
    let w = stream_like(64, 16, Pattern::Block, 20);
    let out = simulate(&m, &w, &unbound(), &SimConfig { kernel: Kernel::K313, ..cfg() }).unwrap();
    let mut cpus: Vec<u32> = out.threads.iter().map(|t| t.cpu).collect();
    cpus.sort();
    cpus.dedup();
    assert_eq!(cpus.len(), 16, "one thread per CPU at the end");
    assert!(out.threads.iter().map(|t| t.migrations).sum::<u64>() >= 12, "12 threads had to leave node 0");
    // The parallel first touch ran while the threads were still on node 0.
    assert!(out.pages_per_node[0] > out.pages_per_node[1], "{:?}", out.pages_per_node);
}

#[test]
fn k6_fork_balancing_spreads_threads_over_nodes_from_the_start() {
    let m = machine4();
    let w = stream_like(64, 16, Pattern::Block, 2);
    let out = simulate(&m, &w, &unbound(), &SimConfig { kernel: Kernel::K6, ..cfg() }).unwrap();
    assert_eq!(out.threads.iter().map(|t| t.migrations).sum::<u64>(), 0);
    for n in 0..4u32 {
        assert_eq!(out.threads.iter().filter(|t| t.node == n).count(), 4);
    }
    assert!(local_share(&out.access_map) > 0.99);
}

#[test]
fn omp_proc_bind_close_packs_and_spread_spreads() {
    let m = machine4();
    let w = stream_like(16, 4, Pattern::Block, 1);
    let bind = |proc_bind| Placement { proc_bind, ..unbound() };
    let close = simulate(&m, &w, &bind(ProcBind::Close), &cfg()).unwrap();
    assert!(close.threads.iter().all(|t| t.node == 0), "close: 4 threads on the 4 cores of node 0");
    let spread = simulate(&m, &w, &bind(ProcBind::Spread), &cfg()).unwrap();
    let nodes: Vec<u32> = spread.threads.iter().map(|t| t.node).collect();
    assert_eq!(nodes, vec![0, 1, 2, 3]);
}

#[test]
fn cpunodebind_keeps_every_thread_on_the_nodes_cpus() {
    let m = machine4();
    let w = stream_like(16, 8, Pattern::Block, 1);
    let p = Placement { cpus: Some(m.cpus_of_nodes(&numalab_model::NodeSet::from_indexes([2, 3]))), ..unbound() };
    let out = simulate(&m, &w, &p, &cfg()).unwrap();
    assert!(out.threads.iter().all(|t| t.node == 2 || t.node == 3));
    assert_eq!(out.pages_per_node[0] + out.pages_per_node[1], 0);
}
