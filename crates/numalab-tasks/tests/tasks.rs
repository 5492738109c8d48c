//! What a user of the task-graph mode relies on: balancers do what their Charm++ originals do,
//! numalab's balancer moves far less than greedy for (almost) the same makespan, migration cost
//! follows size and distance, bad files say where they are bad, and runs repeat bit for bit.

use std::path::PathBuf;

use numalab_model::{Machine, MachineSpec};
use numalab_tasks::balance::{self, Balancer, LbInput};
use numalab_tasks::gen::{self, Params};
use numalab_tasks::graph::{Adjacency, Edge, TaskGraph};
use numalab_tasks::platform::{CommLayer, CostParams, Platform};
use numalab_tasks::{parse, simulate, SimOptions, TaskError};
use serde_json::{json, Value};

/// numa16-like: 8 nodes x 2 cores on a 2 x 4 ladder of 4 GB/s links, latency 95 ns local rising
/// with hops (the shape of the numa16 preset).
fn ladder16() -> Machine {
    let lat = [
        [95.0, 104.5, 104.5, 117.2, 117.2, 129.8, 129.8, 142.5],
        [104.5, 95.0, 117.2, 104.5, 129.8, 117.2, 142.5, 129.8],
        [104.5, 117.2, 95.0, 104.5, 104.5, 117.2, 117.2, 129.8],
        [117.2, 104.5, 104.5, 95.0, 117.2, 104.5, 129.8, 117.2],
        [117.2, 129.8, 104.5, 117.2, 95.0, 104.5, 104.5, 117.2],
        [129.8, 117.2, 117.2, 104.5, 104.5, 95.0, 117.2, 104.5],
        [129.8, 142.5, 117.2, 129.8, 104.5, 117.2, 95.0, 104.5],
        [142.5, 129.8, 129.8, 117.2, 117.2, 104.5, 104.5, 95.0],
    ];
    let links = [[0, 1], [2, 3], [4, 5], [6, 7], [0, 2], [2, 4], [4, 6], [1, 3], [3, 5], [5, 7]];
    let spec = json!({
        "name": "ladder16", "description": "test",
        "topology": {"packages": 8, "nodes_per_package": 1, "cores_per_node": 2},
        "memory": {"node_gib": 4.0},
        "latency": {"local_ns": 95.0, "matrix_ns": lat},
        "bandwidth": {"node_gbps": 1.22},
        "links": links.iter().map(|l| json!({"nodes": l, "gbps": 4.0})).collect::<Vec<_>>(),
        "core": {"frequency_ghz": 2.2, "mlp": 8.0}
    });
    MachineSpec::from_json(&spec.to_string()).unwrap().resolve().unwrap()
}

/// numa32-like: 4 fully connected nodes x 8 cores.
fn quad32() -> Machine {
    let links: Vec<Value> =
        [[0, 1], [0, 2], [0, 3], [1, 2], [1, 3], [2, 3]].iter().map(|l| json!({"nodes": l, "gbps": 12.8})).collect();
    let spec = json!({
        "name": "quad32", "description": "test",
        "topology": {"packages": 4, "nodes_per_package": 1, "cores_per_node": 8},
        "memory": {"node_gib": 16.0},
        "latency": {"local_ns": 135.0, "matrix_ns": [[135.0,197.0,197.0,197.0],[197.0,135.0,197.0,197.0],[197.0,197.0,135.0,197.0],[197.0,197.0,197.0,135.0]]},
        "bandwidth": {"node_gbps": 8.885},
        "links": links,
        "core": {"frequency_ghz": 2.26, "mlp": 10.0}
    });
    MachineSpec::from_json(&spec.to_string()).unwrap().resolve().unwrap()
}

fn plat(m: &Machine, pes: Option<usize>) -> Platform {
    Platform::new(m, pes, CommLayer::Shm, CostParams::default()).unwrap()
}

fn lb(name: &str) -> Box<dyn Balancer + Send> {
    let v = Value::Null;
    let mut p = Params::new("test", &v).unwrap();
    balance::make(name, &mut p).unwrap()
}

fn run(g: &TaskGraph, p: &Platform, name: &str, iterations: usize, lb_period: usize) -> numalab_tasks::SimResult {
    let opts = SimOptions::quiet(iterations, lb_period, 1);
    simulate(g, p, lb(name).as_mut(), &opts).unwrap()
}

/// One balancing step on `mapping` with `loads` (no edges unless given).
fn balance_once(name: &str, p: &Platform, loads: &[f64], edges: &[Edge], mapping: &[u32]) -> Vec<u32> {
    let n = loads.len();
    let adj = Adjacency::new(n, edges);
    let state = vec![100u64; n];
    let migratable = vec![true; n];
    let input = LbInput {
        loads_ns: loads,
        state_bytes: &state,
        edges,
        adj: &adj,
        mapping,
        migratable: &migratable,
        lb_period: 10,
        platform: p,
    };
    lb(name).balance(&input).unwrap()
}

#[test]
fn greedy_balances_independent_equal_tasks_perfectly() {
    let p = plat(&quad32(), None);
    // 128 equal objects all on PE 0: greedy spreads them 4 per PE.
    let loads = vec![1_000_000.0; 128];
    let to = balance_once("greedy", &p, &loads, &[], &vec![0; 128]);
    let per_pe = balance::pe_loads(&loads, &to, 32);
    assert!(per_pe.iter().all(|&l| l == 4_000_000.0), "{per_pe:?}");
    // And through the simulator: after balancing, efficiency 1.
    let g = TaskGraph::new("equal", loads.clone(), vec![64; 128], vec![]).unwrap();
    let mut g0 = g.clone();
    g0.initial_pe = Some(vec![0; 128]);
    let r = run(&g0, &p, "greedy", 4, 2);
    assert_eq!(r.efficiency, 1.0);
    assert_eq!(r.iterations[3].time_ns, 4_000_000.0);
    assert!(r.iterations[0].time_ns > r.iterations[3].time_ns * 30.0);
}

#[test]
fn refine_moves_only_objects_of_overloaded_pes() {
    let p = plat(&quad32(), Some(8));
    // PE 0 and 1 overloaded (3 and 2 x average), the others light or average.
    let mut loads = Vec::new();
    let mut mapping = Vec::new();
    let per_pe = [
        [10.0; 6].to_vec(),
        [10.0; 4].to_vec(),
        vec![10.0],
        vec![10.0, 10.0],
        vec![5.0],
        vec![10.0],
        vec![],
        vec![10.0],
    ];
    for (pe, objs) in per_pe.iter().enumerate() {
        for &l in objs {
            loads.push(l * 1e6);
            mapping.push(pe as u32);
        }
    }
    let to = balance_once("refine", &p, &loads, &[], &mapping);
    let avg = loads.iter().sum::<f64>() / 8.0;
    let before = balance::pe_loads(&loads, &mapping, 8);
    let after = balance::pe_loads(&loads, &to, 8);
    let mut moved = 0;
    for i in 0..loads.len() {
        if to[i] != mapping[i] {
            moved += 1;
            assert!(
                before[mapping[i] as usize] > 1.05 * avg,
                "object {i} left PE {} which was not overloaded",
                mapping[i]
            );
        }
    }
    assert!(moved > 0);
    assert!(after.iter().copied().fold(0.0, f64::max) < before.iter().copied().fold(0.0, f64::max));
}

#[test]
fn numalab_migrates_far_less_than_greedy_within_5pct_of_its_makespan_on_lb_test() {
    for (m, n, pes) in [(ladder16(), 200, 16), (quad32(), 400, 32)] {
        let p = plat(&m, Some(pes));
        let g = gen::lb_test(n, 7, &Value::Null).unwrap();
        let greedy = run(&g, &p, "greedy", 20, 10);
        let numa = run(&g, &p, "numalab", 20, 10);
        let none = run(&g, &p, "none", 20, 10);
        let after = |r: &numalab_tasks::SimResult| r.iterations[10..].iter().map(|x| x.time_ns).sum::<f64>() / 10.0;
        let (tg, tn) = (after(&greedy), after(&numa));
        assert!(tn <= 1.05 * tg, "{}: numalab {tn} vs greedy {tg}", m.name);
        assert!(tn < 0.9 * after(&none), "{}: numalab does not balance", m.name);
        let (mg, mn) = (greedy.lb_calls[0].migrations, numa.lb_calls[0].migrations);
        assert!(mn * 3 < mg, "{}: numalab moved {mn}, greedy {mg}", m.name);
        assert!(greedy.lb_calls[0].migration_time_ns > numa.lb_calls[0].migration_time_ns);
        // It keeps communicating objects where they are: less traffic crosses nodes than greedy's.
        assert!(numa.comm_bytes.remote < greedy.comm_bytes.remote, "{}", m.name);
    }
}

#[test]
fn numalab_does_not_migrate_when_the_gain_cannot_pay_for_it() {
    // Two PEs, PE 0 slightly heavier: with tiny loads and big states, no move pays off.
    let p = plat(&quad32(), Some(16));
    let loads: Vec<f64> = (0..32).map(|i| if i < 2 { 2_000.0 } else { 1_000.0 }).collect();
    let g = TaskGraph::new("tiny", loads, vec![64 << 20; 32], vec![]).unwrap();
    let r = run(&g, &p, "numalab", 4, 2);
    assert_eq!(r.lb_calls[0].migrations, 0);
    let greedy = run(&g, &p, "greedy", 4, 2);
    assert!(greedy.lb_calls[0].migrations > 0);
    // jacobi2D: uniform compute, big chares; moving one would slow its partners' PEs more than it
    // helps: numalab's balancer never leaves the iteration slower than no balancing does.
    let m = quad32();
    let p = plat(&m, None);
    let g = gen::jacobi2d(1000, 1000, 100, 0, &json!({"jitter": 0.2})).unwrap();
    let after = |r: &numalab_tasks::SimResult| r.iterations[10..].iter().map(|x| x.time_ns).sum::<f64>();
    assert!(after(&run(&g, &p, "numalab", 30, 10)) <= after(&run(&g, &p, "none", 30, 10)));
}

#[test]
fn migration_cost_grows_with_state_size_and_distance() {
    let p = plat(&ladder16(), None);
    // PE 0 on node 0; PE 1 same node; PE 2 node 1 (1 hop); PE 14 node 7 (4 hops).
    let cost = |q: usize, bytes: f64| p.migration_total_ns(0, q, bytes);
    for bytes in [1e3, 1e5, 1e7] {
        assert!(cost(1, bytes) < cost(2, bytes), "{bytes}");
        assert!(cost(2, bytes) < cost(14, bytes), "{bytes}");
    }
    for q in [1, 2, 14] {
        assert!(cost(q, 1e3) < cost(q, 1e5) && cost(q, 1e5) < cost(q, 1e7));
    }
    assert_eq!(p.migration_total_ns(3, 3, 1e6), 0.0);
    // Small objects cost about the fixed overhead and one message, big ones their bytes.
    let d = CostParams::default();
    let small = d.migration_fixed_ns + 2.0 * d.shm_msg_ns;
    assert!((cost(2, 100.0) - small).abs() < 1_000.0, "{} vs {small}", cost(2, 100.0));
}

fn write(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("numalab-tasks-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn file_error(r: Result<TaskGraph, TaskError>) -> (PathBuf, usize, String) {
    match r {
        Err(TaskError::File { path, line, reason }) => (path, line, reason),
        other => panic!("expected a file error, got {other:?}"),
    }
}

#[test]
fn malformed_graph_files_name_file_line_and_reason() {
    let ok = write(
        "ok.csv",
        "# a ring of three\nobj,0,1000,64\nobj 1 2000 64\nobj,2,3000\nedge,0,1,1,100\nedge,1,2,1,100\nedge,2,0,1,100\n",
    );
    let g = parse::from_edge_list(&ok).unwrap();
    assert_eq!(g.loads_ns, vec![1000.0, 2000.0, 3000.0]);
    assert_eq!(g.state_bytes, vec![64, 64, 0]);
    assert_eq!(g.edges.len(), 3);

    let bad = write("bad.csv", "obj,0,1000,64\nobj,1,abc,64\n");
    let (path, line, reason) = file_error(parse::from_edge_list(&bad));
    assert_eq!((path, line), (bad.clone(), 2));
    assert!(reason.contains("load_ns 'abc'"), "{reason}");

    let bad = write("bad2.csv", "obj,0,1000\nedge,0,5,1,10\n");
    let (_, line, reason) = file_error(parse::from_edge_list(&bad));
    assert_eq!(line, 2);
    assert!(reason.contains("object 5"), "{reason}");

    let bad = write("bad3.csv", "obj,0,1000\nnode,1\n");
    let (_, line, reason) = file_error(parse::from_edge_list(&bad));
    assert_eq!(line, 2);
    assert!(reason.contains("unknown record 'node'"), "{reason}");

    let data = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let ring = parse::from_edge_list(&data.join("ring4.csv")).unwrap();
    assert_eq!((ring.n_objects(), ring.edges.len(), ring.loads_ns[0]), (4, 4, 4e6));
    let dump = std::fs::read_to_string(data.join("lbdump3.txt")).unwrap();
    let g = parse::from_lb_dump(&data.join("lbdump3.txt")).unwrap();
    assert_eq!(g.loads_ns, vec![0.5e9, 0.3e9, 0.2e9]);
    assert_eq!(g.initial_pe, Some(vec![0, 0, 1]));
    assert_eq!(g.migratable, Some(vec![true, true, false]));
    assert_eq!(
        g.edges,
        vec![
            Edge { a: 0, b: 1, msgs: 4, bytes: 4000 },
            Edge { a: 1, b: 0, msgs: 1, bytes: 1000 },
            Edge { a: 1, b: 2, msgs: 1, bytes: 1000 },
        ]
    );
    let bad = write("dump-bad.txt", &dump.replace("-1 0 11 3 2 0 10 0 12", "-1 0 11 3 2 0 10 0 99"));
    let (_, line, reason) = file_error(parse::from_lb_dump(&bad));
    assert_eq!(line, 17);
    assert!(reason.contains("receiver (0, 99)"), "{reason}");
    let bad = write("dump-short.txt", "lbdump 3 2\nn_migrateobjs 3\nprocs 2\n");
    let (_, line, reason) = file_error(parse::from_lb_dump(&bad));
    assert_eq!(line, 3);
    assert!(reason.contains("the file ends"), "{reason}");
    let missing = std::env::temp_dir().join("numalab-no-such-graph.csv");
    let (_, line, reason) = file_error(parse::from_edge_list(&missing));
    assert_eq!(line, 0);
    assert!(reason.contains("cannot read"), "{reason}");
}

#[test]
fn runs_repeat_bit_for_bit_per_seed() {
    let p = plat(&ladder16(), None);
    let a = gen::lb_test(200, 3, &Value::Null).unwrap();
    let b = gen::lb_test(200, 3, &Value::Null).unwrap();
    let c = gen::lb_test(200, 4, &Value::Null).unwrap();
    assert_eq!(a, b);
    assert_ne!(a.loads_ns, c.loads_ns);
    let opts = SimOptions { load_noise: 0.1, ..SimOptions::quiet(30, 10, 5) };
    for name in balance::NAMES {
        let strip = |r: numalab_tasks::SimResult| {
            let mut v = serde_json::to_value(r).unwrap();
            for c in v["lb_calls"].as_array_mut().unwrap() {
                c.as_object_mut().unwrap().remove("balancer_wall_s");
            }
            v.to_string()
        };
        let x = strip(simulate(&a, &p, lb(name).as_mut(), &opts).unwrap());
        let y = strip(simulate(&a, &p, lb(name).as_mut(), &opts).unwrap());
        assert_eq!(x, y, "{name}");
    }
}

#[test]
fn lb_test_is_built_as_its_code_builds_it() {
    let g = gen::lb_test(400, 1, &Value::Null).unwrap();
    // Ring + 1% of n(n-1) random links, plus one self message per element.
    let links = g.edges.iter().filter(|e| e.a != e.b).count();
    // Selection sampling stops at 1% of n(n-1); the ring links forced at the end may add a few.
    let target = (0.01 * 400.0 * 399.0) as usize;
    assert!((target..target + 16).contains(&links), "{links} links, {target} expected");
    assert!(g.edges.iter().filter(|e| e.a == e.b).all(|e| e.bytes == 1));
    assert!(g.loads_ns.iter().all(|&l| (50e6..=200e6).contains(&l)));
    // Work = min + (max - min) U^4: mean min + (max - min)/5 = 80 ms.
    let mean = g.total_load_ns() / 400.0;
    assert!((mean - 80e6).abs() < 8e6, "{mean}");
    let ring = gen::lb_test(10, 1, &json!({"topology": "ring"})).unwrap();
    assert_eq!(ring.edges.iter().filter(|e| e.a != e.b).count(), 10);
    let err = gen::lb_test(10, 1, &json!({"topologie": "ring"})).unwrap_err();
    assert!(err.to_string().contains("unknown parameter 'topologie'"), "{err}");
}

#[test]
fn shared_memory_beats_datagrams_and_messages_are_classified() {
    let m = quad32();
    let g = gen::kneighbor(64, 3, 8192, 0, &json!({"base_ns": 1e5, "ns_per_op": 0.0})).unwrap();
    let shm = Platform::new(&m, None, CommLayer::Shm, CostParams::default()).unwrap();
    let net = Platform::new(&m, None, CommLayer::Net, CostParams::default()).unwrap();
    let opts = SimOptions::quiet(3, 0, 0);
    let rs = simulate(&g, &shm, lb("none").as_mut(), &opts).unwrap();
    let rn = simulate(&g, &net, lb("none").as_mut(), &opts).unwrap();
    assert!(rs.iteration_time_ns < rn.iteration_time_ns);
    // Block map: 2 objects per PE, 16 per node; every class appears.
    assert!(rs.comm_bytes.same_pe > 0.0 && rs.comm_bytes.same_node > 0.0 && rs.comm_bytes.remote > 0.0);
    let total: f64 = g.edges.iter().map(|e| e.bytes as f64).sum::<f64>() * 3.0;
    assert_eq!(rs.comm_bytes.same_pe + rs.comm_bytes.same_node + rs.comm_bytes.remote, total);
}

#[test]
fn every_balancer_returns_a_valid_mapping_and_treematch_keeps_neighbours_close() {
    let m = ladder16();
    let p = plat(&m, None);
    let g = gen::jacobi2d(512, 512, 64, 0, &json!({"jitter": 0.3})).unwrap();
    for name in balance::NAMES {
        let r = run(&g, &p, name, 6, 3);
        assert_eq!(r.mapping_final.len(), g.n_objects());
        assert!(r.mapping_final.iter().all(|&q| (q as usize) < 16), "{name}");
    }
    let greedy = run(&g, &p, "greedy", 6, 3);
    let tm = run(&g, &p, "treematch", 6, 3);
    assert!(
        tm.comm_bytes.remote < greedy.comm_bytes.remote,
        "{} vs {}",
        tm.comm_bytes.remote,
        greedy.comm_bytes.remote
    );
}

#[test]
fn messages_cost_more_with_distance_and_shared_links_slow_remote_traffic() {
    let p = plat(&ladder16(), None);
    let total = |q: usize| {
        let (s, r) = p.message_ns(0, q, 10.0, 1e6);
        s + r
    };
    assert_eq!(total(0), 0.0);
    assert!(total(1) < total(2) && total(2) < total(14), "{} {} {}", total(1), total(2), total(14));
    // quad32: 8 PEs of node 0 each send 10 MB to a PE of node 1 over one 12.8 GB/s link; one core
    // alone reads remotely at ~3.2 GB/s, eight together are held to the link's share.
    let p = plat(&quad32(), None);
    let pairs = |k: u32| {
        let edges = (0..k).map(|i| Edge { a: i, b: i + 8, msgs: 1, bytes: 10_000_000 }).collect();
        let g = TaskGraph::new("pairs", vec![0.0; 16], vec![0; 16], edges).unwrap();
        run(&g, &p, "none", 1, 0).iteration_time_ns
    };
    let (one, eight) = (pairs(1), pairs(8));
    assert!(eight > 1.5 * one, "one pair {one} ns, eight pairs {eight} ns");
    assert!((eight - 8.0 * 10e6 / 12.8).abs() / eight < 0.05, "{eight}");
    assert!(Platform::new(&quad32(), Some(33), CommLayer::Shm, CostParams::default()).is_err());
}

#[test]
fn numalab_balances_10000_objects_on_64_pes_well_under_a_second() {
    let links: Vec<Value> = (0..7).map(|i| json!({"nodes": [i, i + 1], "gbps": 10.0})).collect();
    let spec = json!({
        "name": "line64", "description": "test",
        "topology": {"packages": 8, "nodes_per_package": 1, "cores_per_node": 8},
        "memory": {"node_gib": 4.0}, "latency": {"local_ns": 100.0}, "bandwidth": {"node_gbps": 10.0},
        "links": links, "core": {"frequency_ghz": 2.0, "mlp": 10.0}
    });
    let m = MachineSpec::from_json(&spec.to_string()).unwrap().resolve().unwrap();
    let p = plat(&m, None);
    let g = gen::lb_test(10_000, 1, &json!({"topology": "mesh2d"})).unwrap();
    let mut lb = lb("numalab");
    let r = numalab_tasks::simulate::balance_once(&g, &p, lb.as_mut(), None, 10).unwrap();
    assert!(r.wall_s < 1.0, "{} s", r.wall_s);
    assert!(r.migrations > 0 && r.migrations < 2_000, "{}", r.migrations);
}

/// 256 independent objects of 1 to 2 ms (distinct loads, no messages) on 32 PEs, balanced after
/// iterations 5 and 10 of 15, with the LB database's noise at `scale` read by `timer`.
fn measured_run(name: &str, scale: f64, timer: numalab_tasks::LbTimer, seed: u64) -> numalab_tasks::SimResult {
    let p = plat(&quad32(), None);
    let loads: Vec<f64> = (0..256).map(|i| 1e6 + 3_911.0 * i as f64).collect();
    let g = TaskGraph::new("distinct", loads, vec![1024; 256], vec![]).unwrap();
    let noise = numalab_tasks::NoiseParams { scale, ..Default::default() };
    let opts = SimOptions { noise, timer, ..SimOptions::quiet(15, 5, seed) };
    simulate(&g, &p, lb(name).as_mut(), &opts).unwrap()
}

#[test]
fn without_noise_greedy_second_call_moves_nothing_with_noise_it_moves_most_and_refine_few() {
    use numalab_tasks::LbTimer::Wall;
    let quiet = measured_run("greedy", 0.0, Wall, 1);
    assert_eq!(quiet.lb_calls.len(), 2);
    assert!(quiet.lb_calls[0].migrations > 200, "{:?}", quiet.lb_calls[0]);
    assert_eq!(quiet.lb_calls[1].migrations, 0);
    // Without noise the balancer predicts exactly what happens.
    for c in &quiet.lb_calls {
        assert!((c.predicted_makespan_ns - c.actual_makespan_ns).abs() < 1e-6 * c.actual_makespan_ns, "{c:?}");
    }
    let noisy = measured_run("greedy", 1.0, Wall, 1);
    assert!(noisy.lb_calls[1].migrations > 256 / 2, "{:?}", noisy.lb_calls[1]);
    let refine = measured_run("refine", 1.0, Wall, 1);
    assert!(refine.lb_calls[1].migrations < 256 / 10, "{:?}", refine.lb_calls[1]);
    assert!(refine.lb_calls[1].migrations < noisy.lb_calls[1].migrations / 4);
}

#[test]
fn the_wall_timer_sees_background_work_the_cpu_timer_does_not() {
    use numalab_tasks::LbTimer::{Cpu, Wall};
    // Ten times the machine's noise, so every PE sees kernel threads and daemons.
    let gap = |r: &numalab_tasks::SimResult| {
        r.lb_calls.iter().map(|c| c.predicted_makespan_ns - c.actual_makespan_ns).sum::<f64>() / r.lb_calls.len() as f64
    };
    let (wall, cpu) = (measured_run("greedy", 10.0, Wall, 3), measured_run("greedy", 10.0, Cpu, 3));
    // Both over-estimate (background time is added, never removed), the wall timer by more.
    assert!(gap(&cpu) > 0.0, "{}", gap(&cpu));
    assert!(gap(&wall) > 1.3 * gap(&cpu), "wall {} cpu {}", gap(&wall), gap(&cpu));
    // The true run does not change with what the timers saw beyond the mapping they led to.
    let quiet = measured_run("none", 0.0, Wall, 3);
    let loud = measured_run("none", 10.0, Wall, 3);
    assert_eq!(quiet.iteration_time_ns, loud.iteration_time_ns);
}

#[test]
fn measured_runs_repeat_bit_for_bit_per_seed_and_differ_across_seeds() {
    use numalab_tasks::LbTimer::Wall;
    let strip = |r: numalab_tasks::SimResult| {
        let mut v = serde_json::to_value(r).unwrap();
        for c in v["lb_calls"].as_array_mut().unwrap() {
            c.as_object_mut().unwrap().remove("balancer_wall_s");
        }
        v.to_string()
    };
    let a = strip(measured_run("greedy", 1.0, Wall, 7));
    assert_eq!(a, strip(measured_run("greedy", 1.0, Wall, 7)));
    assert_ne!(a, strip(measured_run("greedy", 1.0, Wall, 8)));
}

/// Charm++'s DefaultArrayMap::procNum (src/ck-core/cklocation.C) for a flat index.
fn default_array_map(flati: usize, n: usize, np: usize) -> u32 {
    let (rem, floor) = (n % np, n / np);
    let first_set = rem * (floor + 1);
    (if flati < first_set { flati / (floor + 1) } else { rem + (flati - first_set) / floor }) as u32
}

#[test]
fn objects_start_on_charms_default_block_map() {
    use numalab_tasks::simulate::block_map;
    for (n, np) in [(200, 16), (200, 32), (10, 32), (32, 32), (33, 32), (1000, 7)] {
        let want: Vec<u32> = (0..n).map(|i| default_array_map(i, n, np)).collect();
        assert_eq!(block_map(n, np), want, "{n} objects on {np} PEs");
    }
    // A 2-D array (jacobi2D's chares) maps by its row-major flat index: chare (x, y) is x * cy + y.
    let p = plat(&ladder16(), None);
    let g = gen::jacobi2d(1000, 1000, 100, 1, &Value::Null).unwrap();
    let r = run(&g, &p, "none", 1, 0);
    assert_eq!(r.mapping_initial, (0..100).map(|i| default_array_map(i, 100, 16)).collect::<Vec<_>>());
    // 100 chares on 16 PEs: the first 4 PEs hold 7, the others 6; chare (1, 3) is flat 13, on PE 1.
    assert_eq!(r.mapping_initial[13], 1);
    assert_eq!(r.mapping_initial[28], 4);
}

#[test]
fn the_atsync_barrier_costs_each_step_a_tree_reduction_and_broadcast() {
    use numalab_tasks::atsync::barrier_ns;
    let m = quad32();
    let shm: Vec<f64> = [1, 2, 4, 5, 8, 21, 32].iter().map(|&n| barrier_ns(&plat(&m, Some(n)))).collect();
    assert_eq!(shm[0], 0.0);
    // Deeper trees take longer: 2..5 PEs are one level (PE 0's four children), 21 two, 32 three.
    assert!(shm.windows(2).all(|w| w[1] >= w[0]), "{shm:?}");
    assert!(shm[3] < shm[5] && shm[5] < shm[6], "{shm:?}");
    let net = barrier_ns(&Platform::new(&m, None, CommLayer::Net, CostParams::default()).unwrap());
    assert!(net > shm[6], "net {net} shm {}", shm[6]);
    // Every balancing step pays it, inside the run's total time.
    let p = plat(&m, None);
    let g = TaskGraph::new("equal", vec![1e6; 64], vec![64; 64], vec![]).unwrap();
    let r = run(&g, &p, "none", 6, 2);
    assert_eq!(r.lb_calls.len(), 2);
    assert!(r.lb_calls.iter().all(|c| c.atsync_ns == shm[6]));
    let iters: f64 = r.iterations.iter().map(|i| i.time_ns).sum();
    let steps: f64 = r.lb_calls.iter().map(|c| c.step_ns).sum();
    assert!(r.lb_calls.iter().all(|c| c.stats_ns > 0.0));
    for c in &r.lb_calls {
        let parts = c.atsync_ns + c.stats_ns + c.strategy_ns + c.decision_ns + c.migration_time_ns + c.resume_ns;
        assert_eq!(c.step_ns, parts);
    }
    assert_eq!(r.total_time_ns, iters + steps);
}

#[test]
fn gathering_statistics_takes_longer_with_more_objects_and_edges() {
    let p = plat(&quad32(), None);
    let stats = |n: usize, ring: bool| {
        let edges: Vec<Edge> = if ring {
            (0..n as u32).map(|i| Edge { a: i, b: (i + 1) % n as u32, msgs: 1, bytes: 64 }).collect()
        } else {
            vec![]
        };
        let g = TaskGraph::new("g", vec![1e6; n], vec![64; n], edges).unwrap();
        run(&g, &p, "none", 2, 1).lb_calls[0].stats_ns
    };
    let (small, large, large_ring) = (stats(64, false), stats(6400, false), stats(6400, true));
    assert!(small > 0.0 && large > 2.0 * small, "{small} {large}");
    assert!(large_ring > large, "{large} {large_ring}");
}

#[test]
fn kneighbor_messages_come_back_to_their_sender() {
    // kNeighbor.C: Block::recvMsgs returns every message to its sender (recvReplies), so per step
    // each element sends calc_per_step messages to each of its 2k neighbours and returns as many.
    let (n, k, calc, bytes) = (20usize, 2usize, 100u64, 8192u64);
    let g = gen::kneighbor(n, k, bytes, 0, &Value::Null).unwrap();
    assert_eq!(g.edges.len(), 2 * k * n);
    let msgs: u64 = g.edges.iter().map(|e| e.msgs).sum();
    assert_eq!(msgs, 2 * (2 * k * n) as u64 * calc);
    for i in 0..n as u32 {
        let out: u64 = g.edges.iter().filter(|e| e.a == i).map(|e| e.bytes).sum();
        let inn: u64 = g.edges.iter().filter(|e| e.b == i).map(|e| e.bytes).sum();
        assert_eq!((out, inn), (2 * 2 * k as u64 * calc * bytes, 2 * 2 * k as u64 * calc * bytes));
    }
}

#[test]
fn lb_test_and_kneighbor_add_their_own_reductions_around_atsync() {
    use numalab_tasks::atsync::barrier_ns;
    let p = plat(&quad32(), None);
    let one = barrier_ns(&p);
    let lbt = gen::lb_test(64, 1, &Value::Null).unwrap();
    let kn = gen::kneighbor(64, 1, 1024, 0, &Value::Null).unwrap();
    let jac = gen::jacobi2d(800, 800, 100, 0, &Value::Null).unwrap();
    for (g, rounds) in [(&lbt, 3.0), (&kn, 2.0), (&jac, 1.0)] {
        let r = run(g, &p, "none", 4, 2);
        assert_eq!(r.lb_calls[0].atsync_ns, rounds * one, "{}", g.name);
    }
}

#[test]
fn a_run_asking_for_more_than_the_visit_budget_is_refused_before_it_starts() {
    let m = ladder16();
    let p = plat(&m, Some(16));
    let g = gen::lb_test(200, 7, &Value::Null).unwrap();
    let opts = SimOptions::quiet(numalab_tasks::simulate::MAX_ITERATIONS, 10, 1);
    let err = simulate(&g, &p, lb("greedy").as_mut(), &opts).unwrap_err().to_string();
    assert!(err.contains("iterations x (objects + edges)"), "{err}");
    // The study's own sizes stay well inside it.
    assert!(50 * (g.n_objects() + g.edges.len()) as u64 <= numalab_tasks::simulate::MAX_VISITS);
}

#[test]
fn the_whole_balancing_step_takes_longer_with_more_objects_and_edges() {
    let p = plat(&quad32(), None);
    let step = |n: usize, degree: u32, name: &str| {
        let edges: Vec<Edge> = (0..n as u32)
            .flat_map(|i| (1..=degree).map(move |d| Edge { a: i, b: (i + d) % n as u32, msgs: 1, bytes: 64 }))
            .collect();
        let loads: Vec<f64> = (0..n).map(|i| 1e6 + 1e3 * (i % 7) as f64).collect();
        let g = TaskGraph::new("g", loads, vec![64; n], edges).unwrap();
        run(&g, &p, name, 2, 1).lb_calls[0].clone()
    };
    for name in ["greedy", "refine", "treematch", "numalab"] {
        let (small, large, dense) = (step(320, 1, name), step(3200, 1, name), step(3200, 8, name));
        assert!(small.strategy_ns > 0.0 && small.decision_ns > 0.0 && small.resume_ns > 0.0, "{name}");
        assert!(large.strategy_ns > small.strategy_ns && large.step_ns > small.step_ns, "{name}");
        assert!(dense.step_ns > large.step_ns, "{name}: {} vs {}", dense.step_ns, large.step_ns);
    }
    // The decision message grows with the moves: greedy moves nearly all, none nothing.
    let (none, greedy) = (step(3200, 1, "none"), step(3200, 1, "greedy"));
    assert_eq!(none.strategy_ns, 0.0);
    assert!(greedy.decision_ns > none.decision_ns, "{} vs {}", greedy.decision_ns, none.decision_ns);
}

#[test]
fn graph_aware_balancers_send_less_across_nodes_than_greedy_on_a_communication_heavy_graph() {
    let p = plat(&ladder16(), None);
    // A 2-D mesh of 400 objects, 1 MB per neighbour and iteration, loads of 1 to 2 ms.
    let g =
        gen::lb_test(400, 2, &json!({"topology": "mesh2d", "msg_bytes": 1_000_000, "min_us": 1000, "max_us": 2000}))
            .unwrap();
    let greedy = run(&g, &p, "greedy", 6, 3);
    let remote = |name: &str| run(&g, &p, name, 6, 3).comm_bytes.remote;
    // numalab keeps neighbours together (1.8 GB against greedy's 4.9 GB); treematch can only
    // place greedy's bins, whose objects are unrelated, so it gains little.
    let (numalab, treematch) = (remote("numalab"), remote("treematch"));
    assert!(numalab < 0.5 * greedy.comm_bytes.remote, "numalab {numalab} vs greedy {}", greedy.comm_bytes.remote);
    assert!(treematch < greedy.comm_bytes.remote, "treematch {treematch} vs greedy {}", greedy.comm_bytes.remote);
}

#[test]
fn shared_memory_is_faster_than_datagrams_for_small_messages_at_every_core_count() {
    let m = quad32();
    let costs = CostParams::default();
    // kNeighbor's communication benchmark: no computation, 3 neighbours each side, small messages.
    for bytes in [16u64, 256, 4096] {
        let g = gen::kneighbor(64, 3, bytes, 0, &json!({"base_ns": 1e3, "ns_per_op": 0.0})).unwrap();
        for pes in 1..=32 {
            let shm = Platform::new(&m, Some(pes), CommLayer::Shm, costs).unwrap();
            let net = Platform::new(&m, Some(pes), CommLayer::Net, costs).unwrap();
            let opts = SimOptions::quiet(2, 0, 0);
            let ts = simulate(&g, &shm, lb("none").as_mut(), &opts).unwrap().iteration_time_ns;
            let tn = simulate(&g, &net, lb("none").as_mut(), &opts).unwrap().iteration_time_ns;
            if pes == 1 {
                assert_eq!(ts, tn, "one PE: every message stays in its queue");
            } else {
                assert!(ts < tn, "{bytes} B on {pes} PEs: shm {ts} ns, net {tn} ns");
            }
            for q in 1..pes {
                let (a, b) = shm.message_ns(0, q, 1.0, bytes as f64);
                let (c, d) = net.message_ns(0, q, 1.0, bytes as f64);
                assert!(a + b < c + d, "{bytes} B PE 0 -> {q}");
            }
        }
    }
}

#[test]
fn datagrams_split_at_the_net_layers_payload_and_pay_their_acknowledgements() {
    let m = quad32();
    let net = Platform::new(&m, None, CommLayer::Net, CostParams::default()).unwrap();
    let sides = |bytes: f64| {
        let (s, r) = net.message_ns(0, 8, 1.0, bytes);
        s + r
    };
    // 8,992 bytes fit one datagram (9,000 less the 8-byte header), one more byte needs two.
    let step = sides(8_993.0) - sides(8_992.0);
    assert!(step > 2.0 * CostParams::default().net_dgram_ns, "{step}");
    // A window of 8: one ack per 5 datagrams, on both sides.
    let wide =
        Platform::new(&m, None, CommLayer::Net, CostParams { net_window: 1e6, ..CostParams::default() }).unwrap();
    let (s, _) = net.message_ns(0, 8, 5.0, 500.0);
    let (w, _) = wide.message_ns(0, 8, 5.0, 500.0);
    assert!((s - w - CostParams::default().net_dgram_ns).abs() < 50.0, "{s} {w}");
}

#[test]
fn every_estimated_constant_lies_within_its_stated_range() {
    let d = serde_json::to_value(CostParams::default()).unwrap();
    for (k, lo, hi, source) in numalab_tasks::platform::ESTIMATES {
        let v = d[k].as_f64().unwrap_or_else(|| panic!("{k} is not a CostParams field"));
        assert!(0.0 < lo && lo <= v && v <= hi, "{k} = {v} outside [{lo}, {hi}]");
        assert!(!source.is_empty());
    }
}
