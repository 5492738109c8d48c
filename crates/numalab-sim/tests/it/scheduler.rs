//! Where unbound and bound threads run (docs/scheduler.md): the CFS paths one by one on small
//! hand-worked cases, then whole runs.

use numalab_model::{Machine, MachineSpec, PolicyMode};
use numalab_sim::input::{Pattern, Placement, Places, ProcBind};
use numalab_sim::sched::Sched;
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

/// 2 nodes x `cores` cores, one PU per core, distance 21 (one LLC per node).
fn two_nodes_of(cores: usize) -> Machine {
    let spec = format!(
        r#"{{"name": "2n{cores}", "description": "two nodes of {cores} cores",
        "topology": {{"packages": 2, "nodes_per_package": 1, "cores_per_node": {cores}}},
        "memory": {{"node_gib": 1}},
        "distances": [[10,21],[21,10]],
        "latency": {{"local_ns": 100}},
        "bandwidth": {{"node_gbps": 10}},
        "links": [{{"nodes": [0,1], "gbps": 6}}],
        "core": {{"frequency_ghz": 2.0, "mlp": 10}}}}"#
    );
    MachineSpec::from_json(&spec).unwrap().resolve().unwrap()
}

fn two_nodes() -> Machine {
    two_nodes_of(4)
}

/// Two nodes of sixteen cores: 6.x allows a NUMA imbalance of max(1, 16 >> 3) = 2 tasks.
fn two_nodes_16() -> Machine {
    two_nodes_of(16)
}

/// Create `n` threads of one process in order (exec, then forks from thread 0).
fn create(m: &Machine, kernel: Kernel, n: usize) -> Sched {
    let mut s = Sched::new(m, &unbound(), kernel, 1, n).unwrap();
    s.set_options(None, true);
    let mut live = vec![false; n];
    for t in 0..n {
        s.place_new(t, (t > 0).then_some(0), &live);
        live[t] = true;
    }
    s
}

fn nodes(s: &Sched) -> Vec<usize> {
    s.cpu.iter().map(|&c| s.pu_node[c]).collect()
}

#[test]
fn numa_levels_within_reclaim_distance_balance_fork_in_both_kernels() {
    for kernel in [Kernel::V3_13, Kernel::V6_13] {
        let s = Sched::new(&machine4(), &unbound(), kernel, 1, 1).unwrap();
        let d = s.domains();
        let names: Vec<&str> = d.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["MC", "NUMA16", "NUMA22"]);
        assert!(d.iter().all(|d| d.balance_fork_exec && d.wake_affine), "{kernel:?}: 16 and 22 <= RECLAIM_DISTANCE 30");
    }
}

#[test]
fn k313_fork_leaves_for_an_idle_remote_node_at_once() {
    // v3.13 find_idlest_group(): the parent's node holds one task (1/4 per CPU), the remote
    // node none: 100 x 0.25 < 112 x 0 is false, so the idlest (remote) group wins. The exec
    // already left CPU 0, where the launching shell runs, the same way.
    let s = create(&two_nodes(), Kernel::V3_13, 4);
    assert_eq!(nodes(&s), vec![1, 0, 1, 0]);
    assert!(s.log.iter().all(|e| e.from.is_none()));
    assert_eq!(s.log[1].path, "fork");
    assert!(s.log[1].why.contains("NUMA21: idlest group"), "{}", s.log[1].why);
}

#[test]
fn k6_fork_stays_on_the_parents_node_within_the_numa_imbalance_allowance() {
    // v6.13 build_sched_domains(): the LLC's parent is the node (NODE level, 16 CPUs, one LLC),
    // imb = max(1, 16 >> 3) = 2, and NUMA21 (the first NUMA level) takes 2 x max(1, 32 / 32).
    // Worker 1: 1 running + 1 <= 2 and an idle-CPU difference of 1 <= NUMA_IMBALANCE_MIN (2):
    // stays (next idle core). Worker 2: 2 + 1 > 2 and node 1 has more idle CPUs: it goes there.
    let s = create(&two_nodes_16(), Kernel::V6_13, 3);
    assert_eq!(s.cpu[0], 0, "exec stays: its own CPU counts as idle");
    assert_eq!(nodes(&s), vec![0, 0, 1]);
    assert!(s.log[1].why.contains("NUMA imbalance allowance"), "{}", s.log[1].why);
    assert_ne!(s.cpu[0], s.cpu[1], "the worker takes the idle core, not its parent's");
}

#[test]
fn k6_fork_on_a_four_cpu_node_allows_an_imbalance_of_one_task() {
    // Nodes of four CPUs: imb = max(1, 4 >> 3) = 1 (not the two LLCs of the NUMA21 span).
    // Worker 1: 1 running + 1 > 1, so the allowance does not apply and node 1, with more idle
    // CPUs (4 against 3), takes it.
    let s = create(&two_nodes(), Kernel::V6_13, 2);
    assert_eq!(nodes(&s), vec![0, 1]);
    assert!(s.log[1].why.contains("NUMA21: idlest group"), "{}", s.log[1].why);
}

/// Threads created at 0 (each with its kernel's initial PELT load), then put on `cpus`.
fn created(m: &Machine, p: &Placement, kernel: Kernel, cpus: &[usize]) -> Sched {
    let n = cpus.len();
    let mut s = Sched::new(m, p, kernel, 1, n).unwrap();
    s.set_options(None, true);
    let mut live = vec![false; n];
    for t in 0..n {
        s.place_new(t, (t > 0).then_some(0), &live);
        live[t] = true;
    }
    s.cpu = cpus.to_vec();
    s
}

/// Two threads stacked on CPU 0 of the two-node machine, the rest idle.
fn stacked(kernel: Kernel) -> Sched {
    created(&two_nodes(), &unbound(), kernel, &[0, 0])
}

#[test]
fn a_cache_hot_task_is_not_pulled_and_a_cold_one_is() {
    // 6.13: two tasks share CPU 0 in turns of 3 ms. At 6.2 ms thread 1 stopped 0.2 ms ago
    // (< sched_migration_cost 0.5 ms: cache hot) and thread 0 runs: nothing can move.
    let mut s = stacked(Kernel::V6_13);
    assert!(s.balance(6.2e-3, &[true, true]).is_empty());
    // At 4.2 ms thread 1 runs and thread 0 stopped 1.2 ms ago: an idle CPU of node 0 pulls it.
    let mut s = stacked(Kernel::V6_13);
    assert_eq!(s.balance(4.2e-3, &[true, true]), vec![0]);
    assert_eq!(s.pu_node[s.cpu[0]], 0, "pulled inside the node (MC level first)");
    let e = s.log.last().unwrap();
    assert_eq!((e.path, e.level.as_str()), ("idle-balance", "MC"));
}

#[test]
fn a_task_woken_from_a_barrier_sleep_is_hot_from_when_it_stopped_not_from_its_last_turn() {
    // task_hot() measures from p->se.exec_start, which a sleeping task keeps from its last run.
    // At 4.2 ms the turns say thread 1 runs and thread 0's turn ended 1.2 ms ago (cold, pulled
    // above); but thread 0 ran until 4.0 ms, slept at a barrier and was woken: 0.2 ms < 0.5 ms,
    // cache hot, and thread 1 runs: nothing can move.
    let mut s = stacked(Kernel::V6_13);
    s.ran_until(0, 4.0e-3);
    assert!(s.balance(4.2e-3, &[true, true]).is_empty());
    // At 4.6 ms it stopped 0.6 ms ago: cold again, pulled.
    let mut s = stacked(Kernel::V6_13);
    s.ran_until(0, 4.0e-3);
    assert_eq!(s.balance(4.6e-3, &[true, true]), vec![0]);
}

#[test]
fn a_woken_thread_whose_cpu_was_taken_goes_to_an_idle_sibling_in_its_llc() {
    // Thread 1 slept on CPU 1; thread 2 now runs there, thread 0 (the waker) on CPU 0. Both
    // kernels: wake_affine keeps prev (the waker's CPU is busy: (1 + 1) x 100 is not below
    // 1 x 108.5 or 112.5), and select_idle_sibling finds CPU 2 idle in node 0's LLC.
    for kernel in [Kernel::V3_13, Kernel::V6_13] {
        let mut s = Sched::new(&two_nodes(), &unbound(), kernel, 1, 3).unwrap();
        s.set_options(None, true);
        s.cpu = vec![0, 1, 1];
        assert_eq!(s.wake(1e-3, 1, 0, &[true, false, true]), 2, "{kernel:?}");
        let e = s.log.last().unwrap();
        assert_eq!((e.path, e.from, e.to), ("wake", Some(1), 2));
        // Its CPU still free: it stays, and a stay is not logged.
        s.cpu = vec![0, 1, 3];
        assert_eq!(s.wake(2e-3, 1, 0, &[true, false, true]), 1);
        assert_eq!(s.log.len(), 1);
    }
}

#[test]
fn wake_affine_pulls_a_wakee_to_the_wakers_node_unless_the_waker_wakes_many() {
    // Thread 0 (the waker) runs on CPU 0; thread 1 slept on CPU 5, where threads 2 and 3 now
    // queue. New threads start at full load (PELT: 1024 in 6.13, 1023 in 3.13). wake_affine:
    // 6.13 wake_affine_weight() (1024 + 1024) x 100 below (3 x 1024 - 1024) x 108 (the sleeper's
    // load still on CPU 5); 3.13 100 x (1023 + 1024) at most 112 x 2 x 1023: the waker's CPU,
    // then select_idle_sibling() finds CPU 1 idle in node 0.
    for kernel in [Kernel::V3_13, Kernel::V6_13] {
        let place = |s: &mut Sched| s.cpu = vec![0, 5, 5, 5, 2, 3, 6, 7];
        let runnable = [true, false, true, true, false, false, false, false];
        let mut s = create(&two_nodes(), kernel, 8);
        place(&mut s);
        for t in [1, 4, 5, 6, 7] {
            s.sleeps_at(t, 0.5e-3);
        }
        assert_eq!(s.wake(1e-3, 1, 0, &runnable), 1, "{kernel:?}");
        // wake_wide(): thread 1 woke 5 different threads in turn (wakee_flips 5 > sd_llc_size 4),
        // thread 0 25 (> 4 x 5), as a barrier's last thread does: the waker's CPU is left out,
        // and the wakee goes to an idle CPU beside its previous one (CPU 6, node 1).
        let mut s = create(&two_nodes(), kernel, 8);
        for (waker, n) in [(1, 5), (0, 24)] {
            for k in 0..n {
                place(&mut s);
                s.wake(1e-3, 4 + k % 4, waker, &[true; 8]);
            }
        }
        place(&mut s);
        assert_eq!(s.wake(1e-3, 1, 0, &runnable), 6, "{kernel:?}");
        assert!(s.log.last().unwrap().why.starts_with("wake_wide"), "{}", s.log.last().unwrap().why);
    }
}

#[test]
fn wake_affine_reads_pelt_loads_not_task_counts() {
    // As above, but threads 2 and 3 on CPU 5 slept for 64 ms and have just woken: two tasks
    // queue there, as many as before, but their PELT load has decayed to about a quarter
    // (y^64). Counting tasks, the waker's CPU would win ((1 + 1) x 100 < 2 x 108.5). With PELT:
    // 6.13 wake_affine_weight() (1024 + 1024) x 100 is not below (about 1000 blocked + 2 x 256
    // - 1024) x 108; 3.13 wake_affine() 100 x (1023 + 1024) is above 112 x (2 x ~140) and the
    // waker's load is not below prev's. Both keep prev's side: select_idle_sibling() then takes
    // the first idle core after CPU 5 in node 1 (CPU 6).
    for kernel in [Kernel::V3_13, Kernel::V6_13] {
        let mut s = create(&two_nodes(), kernel, 8);
        s.cpu = vec![0, 5, 5, 5, 2, 3, 6, 7];
        for t in [2, 3] {
            s.sleeps_at(t, 1e-3);
        }
        for t in [4, 5, 6, 7] {
            s.sleeps_at(t, 0.5e-3);
        }
        s.sleeps_at(1, 64e-3);
        for t in [2, 3] {
            s.resumes(t, 65e-3);
        }
        let runnable = [true, false, true, true, false, false, false, false];
        assert_eq!(s.wake(65e-3, 1, 0, &runnable), 6, "{kernel:?}");
        let why = &s.log.last().unwrap().why;
        assert!(why.contains("kept by the waker's CPU"), "{why}");
    }
}

#[test]
fn a_fork_avoids_the_cpu_of_a_sleeper_by_its_blocked_utilisation_in_6_13() {
    // Thread 0 runs on CPU 0, thread 1 fell asleep on CPU 1 at 1 ms; thread 0 forks thread 2 at
    // 10 ms. 6.13: the NUMA level keeps it on node 0 (adjust_numa_imbalance(1, 2, 2) = 0); at
    // MC, CPUs 1 to 15 are idle single-CPU groups of type has_spare with one idle CPU each,
    // and update_pick_idlest() takes the lowest group_util: CPU 1 still carries the sleeper's
    // decaying util_avg, so CPU 2 (counting tasks, CPU 1 would come first). 3.13's
    // runnable_load_avg leaves the sleeper out: node 0's 1023 / 4 against node 1's 0 moves the
    // fork to node 1 (CPU 4, then CPU 5 at MC: "100 x 0 < 112 x 0" is false, §3).
    // (6.13 on nodes of sixteen CPUs, where the allowance is 2 tasks: two_nodes_16().)
    for (kernel, m, want) in [(Kernel::V6_13, two_nodes_16(), 2), (Kernel::V3_13, two_nodes(), 5)] {
        let mut s = Sched::new(&m, &unbound(), kernel, 1, 3).unwrap();
        s.set_options(None, true);
        s.place_new(0, None, &[false, false, false]);
        s.place_new(1, Some(0), &[true, false, false]);
        s.cpu[0] = 0;
        s.cpu[1] = 1;
        s.sleeps_at(1, 1e-3);
        s.place_new_at(10e-3, 2, Some(0), &[true, false, false]);
        assert_eq!(s.cpu[2], want, "{kernel:?}: {}", s.log.last().unwrap().why);
    }
}

#[test]
fn find_idlest_cpu_ranks_busy_cpus_by_pelt_load() {
    // 6.13, 2 x 4 CPUs all busy: node 0 runs five threads (overloaded), node 1 four, and thread 9
    // fell asleep on CPU 4 at 1 ms. At 50 ms thread 0 forks: the NUMA level picks node 1 (a lower
    // group type), and with no idle CPU there find_idlest_cpu() takes the least cpu_load(): CPU 4
    // still carries the sleeper's decaying load, so CPU 5 (counting tasks, CPU 4 would tie and
    // come first).
    let mut s = Sched::new(&two_nodes(), &unbound(), Kernel::V6_13, 1, 11).unwrap();
    s.set_options(None, true);
    let mut live = vec![false; 11];
    for t in 0..10 {
        s.place_new(t, (t > 0).then_some(0), &live);
        live[t] = true;
    }
    s.cpu[..10].copy_from_slice(&[0, 1, 2, 3, 0, 4, 5, 6, 7, 4]);
    s.sleeps_at(9, 1e-3);
    live[9] = false;
    s.place_new_at(50e-3, 10, Some(0), &live);
    assert_eq!(s.cpu[10], 5, "{}", s.log.last().unwrap().why);
}

/// One node of four cores, one PU per core (one LLC).
fn one_node() -> Machine {
    let spec = r#"{"name": "1n", "description": "one node of four cores",
        "topology": {"packages": 1, "nodes_per_package": 1, "cores_per_node": 4},
        "memory": {"node_gib": 1},
        "distances": [[10]],
        "latency": {"local_ns": 100},
        "bandwidth": {"node_gbps": 10},
        "links": [],
        "core": {"frequency_ghz": 2.0, "mlp": 10}}"#;
    MachineSpec::from_json(spec).unwrap().resolve().unwrap()
}

#[test]
fn sis_util_stops_6_13s_idle_scan_in_a_busy_llc() {
    // Threads 0-3 ran 100 ms on CPUs 0-3; thread 3 fell asleep at 99 ms (CPU 3 idle, its
    // utilisation still there); thread 4 slept on CPU 1 since 50 ms. The periodic balance at
    // 100 ms sets SIS_UTIL's nr_idle_scan from the LLC's summed util_avg (about 4 x 1000 of 4 x
    // 1024: x^2 x 117^2 / (10000 x 1024) is above 1024, so 0). Thread 0 wakes thread 4: neither
    // CPU 0 nor CPU 1 is idle, and 6.13's select_idle_cpu() looks at no CPU: it stays on the
    // target. 3.13 scans the LLC without limit and finds CPU 3.
    for (kernel, sis_util) in [(Kernel::V6_13, true), (Kernel::V3_13, false)] {
        let mut s = create(&one_node(), kernel, 5);
        s.cpu = vec![0, 1, 2, 3, 1];
        s.sleeps_at(4, 50e-3);
        s.sleeps_at(3, 99e-3);
        let live = [true, true, true, false, false];
        assert!(s.balance(100e-3, &live).is_empty());
        let cpu = s.wake(100e-3, 4, 0, &[true, true, true, false, true]);
        let why = &s.log.last().unwrap().why;
        if sis_util {
            assert_ne!(cpu, 3, "{kernel:?}: {why}");
            assert!(cpu <= 1, "{kernel:?}: {why}");
        } else {
            assert_eq!(cpu, 3, "{kernel:?}: {why}");
        }
    }
}

#[test]
fn a_sleeping_threads_load_halves_every_32_ms_and_leaves_with_it() {
    let mut s = create(&two_nodes(), Kernel::V6_13, 2);
    let home = s.cpu[1];
    s.sleeps_at(1, 100e-3);
    s.resumes(0, 100e-3);
    let before = s.pelt_load(1).unwrap();
    assert!(before >= 1000, "{before}");
    s.resumes(0, 100e-3 + 32.0 * 1.048576e-3);
    let after = s.pelt_load(1).unwrap();
    assert!(after.abs_diff(before / 2) <= 3, "{after} vs {before}");
    // Its blocked load stays on its CPU's run queue until it moves.
    assert_eq!(s.cpu_load_avg(home), after + if s.cpu[0] == home { s.pelt_load(0).unwrap() } else { 0 });
    s.cpu[1] = if home == 0 { 1 } else { 0 };
    assert_eq!(s.cpu_load_avg(home), if s.cpu[0] == home { s.pelt_load(0).unwrap() } else { 0 });
}

#[test]
fn waiting_threads_sleep_after_libgomps_spin_and_wake_ups_place_them() {
    use numalab_sim::input::WaitPolicy;
    let m = machine4();
    let run = |threads, omp_wait_policy| {
        let w = stream_like(64, threads, Pattern::Block, 10);
        let c = SimConfig { omp_wait_policy, explain_sched: true, ..cfg() };
        simulate(&m, &w, &unbound(), &c).unwrap()
    };
    let wakes = |out: &numalab_sim::SimOutput| out.sched_events.iter().filter(|e| e.path == "wake").count();
    // 24 threads on 16 CPUs: libgomp throttles the spin, so threads sleep, leave CPUs idle, and
    // some are woken onto another CPU.
    assert!(wakes(&run(24, WaitPolicy::Passive)) > 0);
    // One thread per CPU with OMP_WAIT_POLICY=active: 30e9 spins, nobody ever sleeps.
    let active = run(16, WaitPolicy::Active);
    assert_eq!(wakes(&active), 0);
    assert_ne!(run(16, WaitPolicy::Passive).time_s, active.time_s, "passive pays the futex wake-ups");
    // One thread per CPU, passive: the barrier's last thread (the waker) is running, so its CPU
    // is busy for wake_affine and no sleeper is stacked on it: the threads end on distinct CPUs.
    for kernel in [Kernel::V3_13, Kernel::V6_13] {
        let w = stream_like(64, 16, Pattern::Block, 10);
        let c = SimConfig {
            kernel,
            omp_wait_policy: WaitPolicy::Passive,
            explain_sched: true,
            noise: true,
            seed: 3,
            ..cfg()
        };
        let out = simulate(&m, &w, &unbound(), &c).unwrap();
        let stacked: Vec<_> = out
            .sched_events
            .iter()
            .filter(|e| {
                // "wake_affine -> CPU X (pulled by the waker's CPU X); select_idle_sibling: CPU X (idle)"
                let waker = e.why.split("pulled by the waker's CPU ").nth(1).and_then(|r| r.split(')').next());
                waker.is_some_and(|c| e.why.ends_with(&format!("select_idle_sibling: CPU {c} (idle)")))
            })
            .collect();
        assert!(stacked.is_empty(), "{kernel:?}: the waker's CPU taken for idle: {:?}", stacked.first());
    }
}

#[test]
fn k313_an_idle_node_pulls_only_from_a_group_above_its_capacity() {
    // v3.13 update_sd_pick_busiest(): a group is the busiest only with more tasks than cores
    // (capacity 1 when its MC domains prefer siblings, at the first NUMA level). Threads may run
    // on CPUs 0 and 15 only; two share CPU 0 (node 0), thread 2 runs on CPU 15 (node 3) and
    // ends: CPU 15 balances as newly idle. Node 3 reaches node 0 only at the NUMA22 level, whose
    // groups (three nodes, 12 cores) do not prefer siblings: 2 tasks on 12 cores is no busiest
    // group, and the queued thread stays.
    let m = machine4();
    let mut p = unbound();
    p.cpus = Some(numalab_model::CpuSet::parse_list("0,15").unwrap());
    let mut s = created(&m, &p, Kernel::V3_13, &[0, 0, 15]);
    assert!(s.balance(1e-3, &[true, true, true]).is_empty());
    assert!(s.balance(5e-3, &[true, true, false]).is_empty(), "{:?}", s.log.last());
    assert_eq!(s.cpu[1], 0);
    // The same from CPU 7 (node 1, 16 away): at NUMA16 the groups are nodes, whose MC domains
    // prefer siblings: node 0's capacity counts as 1, 2 tasks exceed it, and node 1 pulls one.
    p.cpus = Some(numalab_model::CpuSet::parse_list("0,7").unwrap());
    let mut s = created(&m, &p, Kernel::V3_13, &[0, 0, 7]);
    assert!(s.balance(1e-3, &[true, true, true]).is_empty());
    assert_eq!(s.balance(5e-3, &[true, true, false]), vec![1]);
    let e = s.log.last().unwrap();
    assert_eq!((e.path, e.level.as_str(), e.to), ("newidle-balance", "NUMA16", 7));
}

#[test]
fn balancing_waits_for_its_interval_instead_of_spreading_at_once() {
    // v6.13: the idle CPUs' first balance of the MC level is due balance_interval = span weight
    // = 4 ms (one jiffy at HZ=250) after the domains are built: nothing moves before.
    let mut s = stacked(Kernel::V6_13);
    assert!(s.balance(20e-6, &[true, true]).is_empty());
    assert!(s.balance(1e-3, &[true, true]).is_empty());
}

#[test]
fn k313_forks_spread_over_the_nodes_and_the_balancer_fixes_the_last_one() {
    // v3.13 spreads forks over every NUMA level (all within RECLAIM_DISTANCE); its 112.5 %
    // margin keeps the last worker beside its parent when the groups are nearly even, and an
    // idle CPU pulls one of the two later. The two take turns on their CPU (one waits for the
    // other's phase), so the barrier's wake-ups first move them inside their node.
    let m = machine4();
    let w = stream_like(64, 16, Pattern::Block, 20);
    let c = SimConfig { kernel: Kernel::V3_13, explain_sched: true, ..cfg() };
    let out = simulate(&m, &w, &unbound(), &c).unwrap();
    let mut cpus: Vec<u32> = out.threads.iter().map(|t| t.cpu).collect();
    cpus.sort();
    cpus.dedup();
    assert_eq!(cpus.len(), 16, "one thread per CPU at the end");
    let moves: Vec<_> = out.sched_events.iter().filter(|e| e.from_cpu.is_some()).collect();
    let balanced: Vec<_> = moves.iter().filter(|e| e.path.ends_with("balance")).collect();
    assert_eq!(balanced.len(), 1, "{moves:?}");
    assert_eq!(
        balanced[0].from_node,
        Some(3),
        "from the node the exec chose, where the last worker joined the primary"
    );
    assert!(balanced[0].t_s >= 4e-3, "not before the first balancing interval: {}", balanced[0].t_s);
    assert!(moves.iter().filter(|e| e.path == "wake").all(|e| e.from_node == Some(3) && e.to_node == 3));
    let moved: Vec<u32> = moves.iter().map(|e| e.tid).collect();
    assert!(out.threads.iter().filter(|t| !moved.contains(&t.tid)).all(|t| t.cpu_history.len() == 1));
}

#[test]
fn k6_fork_balancing_spreads_threads_over_nodes_from_the_start() {
    let m = machine4();
    let w = stream_like(64, 16, Pattern::Block, 2);
    let out = simulate(&m, &w, &unbound(), &SimConfig { kernel: Kernel::V6_13, ..cfg() }).unwrap();
    assert_eq!(out.threads.iter().map(|t| t.nr_migrations).sum::<u64>(), 0);
    for n in 0..4u32 {
        assert_eq!(out.threads.iter().filter(|t| t.node == n).count(), 4);
    }
    assert!(local_share(&out.access_map) > 0.99);
    assert!(out.threads.iter().all(|t| t.away_from_first_node_pct == 0.0 && t.cpu_history.len() == 1));
}

#[test]
fn every_move_is_explained_and_counted() {
    // 24 threads on 16 CPUs keep the balancer busy: each move is one event with its reason and
    // one migration of the moved thread.
    let m = machine4();
    let w = stream_like(64, 24, Pattern::Block, 20);
    let c = SimConfig { explain_sched: true, ..cfg() };
    let out = simulate(&m, &w, &unbound(), &c).unwrap();
    let moves: Vec<_> = out.sched_events.iter().filter(|e| e.from_cpu.is_some()).collect();
    assert_eq!(moves.len() as u64, out.threads.iter().map(|t| t.nr_migrations).sum::<u64>());
    assert!(out.sched_events.iter().filter(|e| e.from_cpu.is_none()).count() == 24);
    assert!(moves.iter().all(|e| e.t_s > 0.0 && !e.why.is_empty()));
}

fn noisy(seed: u64) -> SimConfig {
    SimConfig { seed, noise: true, ..cfg() }
}

#[test]
fn noise_is_deterministic_per_seed_and_differs_between_seeds() {
    let m = machine4();
    let w = stream_like(64, 16, Pattern::Block, 10);
    let a = simulate(&m, &w, &unbound(), &noisy(3)).unwrap();
    let b = simulate(&m, &w, &unbound(), &noisy(3)).unwrap();
    assert_eq!(serde_json::to_string(&a).unwrap(), serde_json::to_string(&b).unwrap());
    let times: Vec<f64> = (1..=4).map(|s| simulate(&m, &w, &unbound(), &noisy(s)).unwrap().time_s).collect();
    let mut distinct = times.clone();
    distinct.sort_by(f64::total_cmp);
    distinct.dedup();
    assert!(distinct.len() >= 3, "{times:?}");
    let quiet = simulate(&m, &w, &unbound(), &cfg()).unwrap().time_s;
    assert!(times.iter().all(|&t| t != quiet), "background work changes the time: {times:?} vs {quiet}");
}

#[test]
fn noise_off_reproduces_the_noise_free_run_whatever_the_seed() {
    let m = machine4();
    let w = stream_like(64, 16, Pattern::Block, 10);
    let a = simulate(&m, &w, &unbound(), &SimConfig { seed: 1, ..cfg() }).unwrap();
    let b = simulate(&m, &w, &unbound(), &SimConfig { seed: 99, ..cfg() }).unwrap();
    assert_eq!(a.time_s, b.time_s);
    assert_eq!(a.pages_per_node, b.pages_per_node);
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

/// 4 nodes x 2 cores, one PU per core, the square SLIT of `vm-4x2` (one LLC per node).
fn four_by_two() -> Machine {
    let spec = r#"{"name": "4x2", "description": "four nodes of two cores",
        "topology": {"packages": 1, "nodes_per_package": 4, "cores_per_node": 2},
        "memory": {"node_gib": 0.5},
        "distances": [[10,16,16,22],[16,10,22,16],[16,22,10,16],[22,16,16,10]],
        "latency": {"local_ns": 100},
        "bandwidth": {"node_gbps": 10},
        "links": [{"nodes": [0,1], "gbps": 6}, {"nodes": [0,2], "gbps": 6}, {"nodes": [1,3], "gbps": 6}, {"nodes": [2,3], "gbps": 6}],
        "core": {"frequency_ghz": 2.0, "mlp": 10}}"#;
    MachineSpec::from_json(spec).unwrap().resolve().unwrap()
}

#[test]
fn a_passive_team_sleeps_in_libgomps_dock_and_its_wake_ups_place_it() {
    // 8 threads on 4 nodes x 2 CPUs. Spinning (the default 3 ms spin) the workers are runnable
    // at every fork and the forks spread them one per CPU; nobody sleeps. Passive, each worker
    // sleeps once it reaches the dock, but from wake_up_new_task() until then it is runnable on
    // its CPU: the CPU's exit from idle (engine/team.rs: IDLE_EXIT_S, 133 µs) and its start-up
    // (THREAD_START_S, 5 µs) outlast the next creations (20 µs apart), so the forks see the
    // recent workers running and spread the team as they spread a spinning one. The last worker
    // to reach the dock releases the team, waking the primary thread and the sleepers.
    use numalab_sim::input::WaitPolicy;
    let m = four_by_two();
    let w = stream_like(8, 8, Pattern::Block, 1);
    let create = numalab_sim::openmp::THREAD_CREATE_S;
    let release = 7.0 * create + 5e-6 + 133e-6;
    for kernel in [Kernel::V3_13, Kernel::V6_13] {
        let run = |omp_wait_policy| {
            let c = SimConfig { kernel, omp_wait_policy, explain_sched: true, ..cfg() };
            simulate(&m, &w, &unbound(), &c).unwrap()
        };
        let placed = |out: &numalab_sim::output::SimOutput| {
            let mut cpus: Vec<u32> =
                out.sched_events.iter().filter(|e| e.from_cpu.is_none()).map(|e| e.to_cpu).collect();
            cpus.sort();
            cpus.dedup();
            cpus.len()
        };
        let spinning = run(WaitPolicy::Unset);
        assert_eq!(placed(&spinning), 8, "{kernel:?}: spinning workers count at every fork: one per CPU");
        assert!(!spinning.sched_events.iter().any(|e| e.path == "wake" && e.t_s <= release + 1e-9), "{kernel:?}");

        let passive = run(WaitPolicy::Passive);
        let forks: Vec<_> = passive.sched_events.iter().filter(|e| e.path == "fork").collect();
        assert_eq!(forks.len(), 7);
        assert_eq!(placed(&passive), 8, "{kernel:?}: workers on their way to the dock count at the forks: {forks:?}");
        // Nothing moves at the release: every sleeper's CPU is idle (wake_affine_idle(),
        // select_idle_sibling() keep prev), so the parallel first touch lands one share per CPU.
        assert!(!passive.sched_events.iter().any(|e| e.path == "wake" && (e.t_s - release).abs() < 1e-9), "{kernel:?}");
        let mut per_node = [0; 4];
        passive.threads.iter().for_each(|t| per_node[t.first_node as usize] += 1);
        assert_eq!(per_node, [2, 2, 2, 2], "{kernel:?}");
    }
}

#[test]
fn libgomps_binding_moves_each_worker_once_and_the_kernel_counts_it() {
    // OMP_PROC_BIND=spread, one core per place: a worker is cloned with the bound primary
    // thread's mask (its place), placed inside it, then moved to its own place by the
    // sched_setaffinity() of glibc's create_thread(): nr_migrations 1 (set_task_cpu()). The
    // primary thread's exec from CPU 0 keeps it on CPU 0, its own place, in 6.13 (no move);
    // 3.13's exec leaves CPU 0 (docs/scheduler.md §3), so libgomp's binding moves it back.
    let m = four_by_two();
    let w = stream_like(8, 8, Pattern::Block, 1);
    for kernel in [Kernel::V3_13, Kernel::V6_13] {
        let c = SimConfig { kernel, ..cfg() };
        let p = Placement { proc_bind: ProcBind::Spread, ..unbound() };
        let out = simulate(&m, &w, &p, &c).unwrap();
        let moves: Vec<u64> = out.threads.iter().map(|t| t.nr_migrations).collect();
        let primary = u64::from(kernel == Kernel::V3_13);
        assert_eq!(moves, [primary, 1, 1, 1, 1, 1, 1, 1], "{kernel:?}");
        // Bound threads never leave their place.
        assert!(out.threads.iter().all(|t| t.away_from_first_node_pct == 0.0), "{kernel:?}");
    }
}

#[test]
fn two_threads_sharing_a_cpu_with_less_work_than_a_slice_finish_one_after_the_other() {
    // The kernel runs one task of a run queue at a time and keeps it until it blocks or its
    // slice (3 ms in 6.13, 12 ms for two tasks in 3.13) is used up: each thread's first touch
    // of 2 MiB takes well under that, so the second starts when the first has finished, where
    // an even split of the CPU would end both together.
    let m = one_node();
    let first_touch = |mib, threads| {
        let mut w = stream_like(mib, threads, Pattern::Block, 1);
        w.phases[0].sync = numalab_sim::input::Sync::None;
        w.program.truncate(1);
        w
    };
    for kernel in [Kernel::V3_13, Kernel::V6_13] {
        let c = SimConfig { kernel, ..cfg() };
        let alone = simulate(&m, &first_touch(2, 1), &on_cpus(&[0]), &c).unwrap();
        assert!(alone.time_s < 2e-3, "{kernel:?}: less work than a slice ({} s)", alone.time_s);
        let out = simulate(&m, &first_touch(4, 2), &on_cpus(&[0]), &c).unwrap();
        let mut t: Vec<f64> = out.threads.iter().map(|t| t.time_s).collect();
        t.sort_by(f64::total_cmp);
        // The second ends about one thread's work (the lone run's) after the first.
        let gap = t[1] - t[0];
        assert!(gap > 0.7 * alone.time_s && gap < 1.3 * alone.time_s, "{kernel:?}: {t:?}, alone {}", alone.time_s);
    }
}
