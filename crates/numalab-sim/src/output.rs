//! What a run reports, with the kernel's counter names (docs/studies.md §4): time, per-thread
//! placement and times, pages per node, the access map (rows: CPU node, columns: memory node,
//! in 64-byte DRAM transfers), `numastat` per node, `vmstat`, and a timeline.

use std::collections::BTreeMap;

use serde::Serialize;

pub use numalab_model::counters::NodeFaults;
use numalab_model::Machine;

use crate::alloc::{Allocator, NumaStat};

#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Vmstat {
    pub numa_pte_updates: u64,
    pub numa_huge_pte_updates: u64,
    pub numa_hint_faults: u64,
    pub numa_hint_faults_local: u64,
    pub numa_pages_migrated: u64,
    pub pgmigrate_success: u64,
    pub pgmigrate_fail: u64,
    /// Memory tiering (docs/tiering.md §7), reported only when they moved.
    #[serde(skip_serializing_if = "is_zero")]
    pub pgpromote_success: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub pgpromote_candidate: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub pgdemote_kswapd: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub pgdemote_direct: u64,
    /// THP faults and khugepaged (`crate::khugepaged`, docs/allocation.md §3.2).
    pub thp_fault_alloc: u64,
    pub thp_fault_fallback: u64,
    pub thp_collapse_alloc: u64,
    pub thp_collapse_alloc_failed: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

#[derive(Clone, Debug, Serialize)]
pub struct ProcessOut {
    pub pid: u32,
    pub name: String,
    pub threads: u32,
    /// When it was exec'ed (a staggered co-run); `time_s` counts from then.
    pub start_s: f64,
    pub time_s: f64,
    /// Base pages of its regions on each node (logical order) at the end of the run.
    pub pages_per_node: Vec<u64>,
    /// Its main thread's time in `timed` steps, when its program has a timer.
    #[serde(skip)]
    pub timer_s: Option<f64>,
    /// The time the program reports: its main thread's time in `timed` steps, or `time_s`
    /// when it has no timer (`SimOutput::reported_time_source`).
    pub reported_time_s: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct ThreadOut {
    pub tid: u32,
    pub pid: u32,
    /// OS index of the CPU the thread ended on, and that CPU's node.
    pub cpu: u32,
    pub node: u32,
    pub time_s: f64,
    /// The kernel's `nr_migrations` (`/proc/PID/task/TID/sched`): changes of CPU by the load
    /// balancer, the wake-up path and NUMA balancing (docs/scheduler.md §7).
    pub nr_migrations: u64,
    /// The node it was created on, and the share of its run spent on other nodes
    /// (docs/scheduler.md §7).
    pub first_node: u32,
    pub away_from_first_node_pct: f64,
    /// Its CPU over time: (seconds, CPU OS index, node OS index) at creation and at every move
    /// by the load balancer (docs/scheduler.md §7).
    pub cpu_history: Vec<(f64, u32, u32)>,
    /// The NUMA lines of `/proc/PID/task/TID/sched` at the end of the run (balancing on only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sched: Option<ThreadSched>,
}

/// `/proc/PID/task/TID/sched` NUMA lines (docs/balancing.md §14.2); nodes by OS index.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ThreadSched {
    /// `mm->numa_scan_seq`: completed scan passes of the thread's process.
    pub numa_scan_seq: u32,
    pub numa_pages_migrated: u64,
    /// -1 = none.
    pub numa_preferred_nid: i64,
    pub total_numa_faults: u64,
    pub current_node: u32,
    /// The numa_group's id (its creator's pid), 0 = none.
    pub numa_group_id: u32,
    /// Not printed by the kernel there, but what drives the scanner: the task's scan period.
    pub numa_scan_period_ms: u32,
    pub faults: Vec<NodeFaults>,
}

/// One scheduler decision (`--explain-sched`): CPUs and nodes by OS index, thread ids from 1.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct SchedEventOut {
    pub t_s: f64,
    pub tid: u32,
    pub from_cpu: Option<u32>,
    pub to_cpu: u32,
    pub from_node: Option<u32>,
    pub to_node: u32,
    pub path: String,
    pub level: String,
    pub why: String,
}

/// One CPU's `/proc/schedstat` figures over the run (`--explain-sched`; kernel/sched/stats.c:
/// `show_schedstat()`): seconds a thread held it (`rq_cpu_time`, ns there) and idle entries.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct SchedCpuOut {
    pub cpu: u32,
    pub node: u32,
    pub rq_cpu_time_s: f64,
    pub sched_goidle: u64,
    /// Host time the vCPU received (`vhost.rs`), with the host model only (docs/scheduler.md §10.5).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_s: Option<f64>,
    /// The vCPU's host thread as the host's `schedstat` and `status` count it (`vhost.rs:
    /// ThreadStat`), with the host model only (docs/scheduler.md §10.13): seconds runnable but
    /// not run, times given a core, times it left the core halting or preempted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_wait_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_slices: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_voluntary: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_involuntary: Option<u64>,
    /// The waits after its involuntary switches until it had a core again: their sum (s) and
    /// number (`vhost.rs: ThreadStat::preempted_wait_s`, what `sched/host_stop.rs` charges a
    /// balance the host stops; docs/scheduler.md §10.28).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_preempted_wait_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_preempted_waits: Option<u64>,
    /// The vCPU's kept ticks in idle by how late the host first ran it after each came: within
    /// 0.25, 0.5, 1, 2, 4 ms, later, never (`vhost.rs: TickDelays`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_tick_delays: Option<Vec<u64>>,
    /// The vCPU thread's takes of QEMU's big lock, with `vcpu_host.bql` only (`vhost/bql.rs`,
    /// docs/scheduler.md §10.37).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_bql: Option<BqlOut>,
    /// Its domains' load balancer counters as `/proc/schedstat` prints them (docs/scheduler.md
    /// §10.15), `domain0` first.
    pub domains: Vec<SchedDomainOut>,
    /// Its newly idle balances by how far they got (`sched/schedstat.rs: NewidleGate`).
    pub newidle_gate: crate::sched::NewidleGate,
    /// Seconds it had 0, 1, 2 and 3+ of the workload's threads runnable, over `SchedRqOut`'s
    /// span (`sched/rq_trace.rs`, docs/scheduler.md §10.25).
    pub rq_s: [f64; 4],
}

/// The workload's run queues over the run as `vm check --moves` counts the guest's
/// (`sched/rq_trace.rs`, docs/scheduler.md §10.25), `--explain-sched` only.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct SchedRqOut {
    /// Idle CPUs' kept ticks as [longest run queue over the CPUs, the CPU's own, count] (3: 3+).
    pub ticks: Vec<[u64; 3]>,
    /// Seconds some CPU had 2+ runnable threads while another had none, of `span_s` (from the
    /// first thread's fork to the last exit).
    pub imbalanced_s: f64,
    pub span_s: f64,
    /// Those stretches by length: up to 0.5, 1, 2, 4, 8 ms, longer.
    pub episodes: [u64; 6],
    /// Idle ticks on a CPU with no thread by whole jiffies since its last left: 0..4, 5+.
    pub since: [u64; 6],
}

/// One domain's `load_balance()` counters (v6.1 `kernel/sched/stats.c: show_schedstat()`).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct SchedDomainOut {
    /// The simulator's level (`MC`, `NUMA<distance>`).
    pub level: String,
    /// Per idle type (idle, busy, newly idle): lb_count, lb_balanced, lb_failed, lb_imbalance,
    /// lb_gained, lb_hot_gained, lb_nobusyq, lb_nobusyg.
    pub lb: [[u64; 8]; 3],
}

/// A host thread of the host model other than the vCPUs' (QEMU's main loop, `vhost.rs`), counted
/// as `SchedCpuOut`'s `host_*`: host seconds run, seconds runnable but not run, times given a
/// core, times it left one blocking or preempted.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct HostThreadOut {
    pub host_s: f64,
    pub host_wait_s: f64,
    pub host_slices: u64,
    pub host_voluntary: u64,
    pub host_involuntary: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_bql: Option<BqlOut>,
}

/// `vhost.rs: HostIdle`: idle core-seconds while a thread was queued, and while none was, by
/// the number of vCPUs halted (index).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct HostIdleOut {
    pub queued_s: f64,
    pub none_queued_s_by_halted: Vec<f64>,
}

/// A host thread's takes of QEMU's big lock (`vhost/bql.rs: BqlStat`): how many, how many found
/// it held and the seconds waited then, the seconds held, and the holds it kept across its
/// switch-out (docs/scheduler.md §10.54), of them those kept across the wake-up preemption their
/// own write caused (§10.58).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct BqlOut {
    pub takes: u64,
    pub waits: u64,
    pub wait_s: f64,
    pub held_s: f64,
    pub kept: u64,
    pub kept_wake: u64,
}

impl From<crate::vhost::BqlStat> for BqlOut {
    fn from(s: crate::vhost::BqlStat) -> Self {
        BqlOut {
            takes: s.takes,
            waits: s.waits,
            wait_s: s.wait_s,
            held_s: s.held_s,
            kept: s.kept,
            kept_wake: s.kept_wake,
        }
    }
}

/// One completed scan pass over a process's address space (`--explain-balancing`).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct PassOut {
    pub pid: u32,
    /// `mm->numa_scan_seq` after the pass.
    pub pass: u32,
    pub t_s: f64,
    /// Scan period of the thread that completed the pass (it set the gate to the next window).
    pub period_ms: u32,
    pub windows: u64,
    pub pages_marked: u64,
    pub faults_local: u64,
    pub faults_remote: u64,
    pub pages_migrated: u64,
    pub task_moves: u64,
}

/// Thread-seconds charged to balancing work, by kind.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct BalancingCost {
    pub scan_s: f64,
    pub hint_faults_s: f64,
    pub migration_s: f64,
    pub task_moves_s: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct TimelinePoint {
    pub t_s: f64,
    pub pages_per_node: Vec<u64>,
    /// DRAM transfers in the interval that ends at `t_s`.
    pub access_map: Vec<Vec<u64>>,
    /// Cumulative `/proc/vmstat` balancing counters at `t_s` (balancing on only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vmstat: Option<Vmstat>,
}

#[derive(Clone, Debug, Serialize)]
pub struct EngineInfo {
    pub sample_rate: f64,
    /// Pages one sampled visit stands for.
    pub sample_stride: u64,
    /// Times a thread waited for a saturated node or link beyond the contention solution
    /// (a diagnostic: high values mean the epoch is too long for how fast the mix changes).
    pub bandwidth_waits: u64,
    pub epochs: u64,
    /// Sampled page visits simulated.
    pub samples: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct SimOutput {
    /// `ok`, or `out-of-memory` (the run stopped: `error` says where).
    pub status: String,
    pub error: Option<String>,
    /// The whole run: the last thread's end.
    pub time_s: f64,
    /// The time the program itself reports (NPB's "Time in seconds", docs/workloads.md §1.2),
    /// the longest over processes; `time_s` when the workload declares no timed step.
    pub reported_time_s: f64,
    /// `timer` (the workload's timed steps) or `whole-run` (no timer declared).
    pub reported_time_source: String,
    pub processes: Vec<ProcessOut>,
    pub threads: Vec<ThreadOut>,
    pub pages_per_node: Vec<u64>,
    pub page_size_bytes: u64,
    pub access_map: Vec<Vec<u64>>,
    pub numastat: BTreeMap<String, NumaStat>,
    pub vmstat: Vmstat,
    /// Per completed scan pass, when `balancing.explain` is set.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub balancing_passes: Vec<PassOut>,
    /// Scheduler decisions for `--explain-sched` (docs/scheduler.md §7), empty unless asked.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sched_events: Vec<SchedEventOut>,
    /// Per CPU, how long threads held it and how often it went idle (`--explain-sched`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sched_cpus: Vec<SchedCpuOut>,
    /// QEMU's main loop thread in the host model, if modelled (`--explain-sched`, docs/scheduler.md §10.14).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sched_host_main_loop: Option<HostThreadOut>,
    /// Host seconds each of the host model's other threads received (`vcpu_host.other_threads`,
    /// docs/scheduler.md §10.18).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sched_host_others_s: Vec<f64>,
    /// The host model's idle core-seconds, split as `bench/host_idle.py` splits the measured
    /// host's (`vhost.rs: HostIdle`, docs/scheduler.md §10.46; `--explain-sched`, `mttcg`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sched_host_idle: Option<HostIdleOut>,
    /// Per wake-up of a team thread asleep on its futex, the time until it runs, the host's
    /// wait to run its vCPU included (`vhost/wake_chain.rs`, docs/scheduler.md §10.48;
    /// `--explain-sched`, `mttcg`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sched_wake_chain: Option<crate::vhost::WakeChainOut>,
    /// Each vCPU thread's host waits (after a wake-up, after a preemption) and runs, per thread
    /// and pooled, as `bench/host_trace.py report` takes the measured host's (`vhost/spells.rs`,
    /// docs/scheduler.md §10.51; `--explain-sched`, `mttcg`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sched_host_spells: Option<crate::vhost::HostSpellsOut>,
    /// The workload's run queues over the run (`--explain-sched`, docs/scheduler.md §10.25).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sched_rq: Option<SchedRqOut>,
    /// Time charged to balancing work (balancing on only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub balancing_cost: Option<BalancingCost>,
    pub timeline: Vec<TimelinePoint>,
    pub engine: EngineInfo,
    /// Memory tier of each node, 0 = fastest (`None`: no memory), when the machine has more
    /// than one tier (docs/tiering.md §2).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub memory_tiers: Vec<Option<u32>>,
    /// Per region with huge pages: THP faults, fallbacks and collapses by node
    /// (`numalab sim --explain-thp`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub thp: Vec<crate::khugepaged::ThpRegionOut>,
    /// Per region allocated through the C library: the pages its allocation wrote, by thread
    /// and node (`numalab sim --explain-alloc`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub alloc: Vec<crate::engine::alloc::AllocRegionOut>,
    /// The latency-balanced policy's indicator over time and its decisions, when chosen.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_balanced: Option<crate::latbal::LatBalOut>,
}

/// Accumulates the access map and the timeline while the engine runs.
pub struct Recorder {
    n: usize,
    access: Vec<Vec<f64>>,
    interval: Vec<Vec<f64>>,
    timeline: Vec<TimelinePoint>,
    step_s: f64,
    next_s: f64,
    max_points: usize,
}

fn round(m: &[Vec<f64>]) -> Vec<Vec<u64>> {
    m.iter().map(|r| r.iter().map(|v| v.round() as u64).collect()).collect()
}

impl Recorder {
    pub fn new(m: &Machine, max_points: usize) -> Self {
        let n = m.nodes.len();
        Recorder {
            n,
            access: vec![vec![0.0; n]; n],
            interval: vec![vec![0.0; n]; n],
            timeline: Vec::new(),
            step_s: 1e-3,
            next_s: 1e-3,
            max_points: max_points.max(2),
        }
    }

    /// Add one thread's lines read and written per memory node to its CPU node's row.
    pub fn add_row(&mut self, cpu_node: usize, rd: &[f64], wr: &[f64]) {
        for (j, (r, w)) in rd.iter().zip(wr).enumerate() {
            self.access[cpu_node][j] += r + w;
            self.interval[cpu_node][j] += r + w;
        }
    }

    pub fn epoch_end(&mut self, now: f64, pages: &[u64], vmstat: Option<&Vmstat>) {
        if now < self.next_s {
            return;
        }
        self.timeline.push(TimelinePoint {
            t_s: now,
            pages_per_node: pages.to_vec(),
            access_map: round(&self.interval),
            vmstat: vmstat.cloned(),
        });
        self.interval = vec![vec![0.0; self.n]; self.n];
        self.next_s = now + self.step_s;
        if self.timeline.len() > self.max_points {
            // Halve the resolution: merge neighbours (the later one keeps its time and pages).
            let old = std::mem::take(&mut self.timeline);
            let mut it = old.into_iter();
            while let Some(a) = it.next() {
                match it.next() {
                    Some(mut b) => {
                        for (rb, ra) in b.access_map.iter_mut().zip(&a.access_map) {
                            for (x, y) in rb.iter_mut().zip(ra) {
                                *x += y;
                            }
                        }
                        self.timeline.push(b);
                    }
                    None => self.timeline.push(a),
                }
            }
            self.step_s *= 2.0;
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub fn finish(
        self,
        m: &Machine,
        mut procs: Vec<ProcessOut>,
        threads: Vec<(usize, u32, u32, f64, u64)>,
        pages: Vec<u64>,
        alloc: Allocator,
        oom: Option<String>,
        stride: u64,
        sample_rate: f64,
        [bandwidth_waits, epochs, samples]: [u64; 3],
    ) -> SimOutput {
        // The whole run: the last thread's end (a staggered process may end last yet run least).
        let mut run_s: f64 = 0.0;
        let threads: Vec<ThreadOut> = threads
            .into_iter()
            .enumerate()
            .map(|(tid, (pid, cpu, node, time_s, nr_migrations))| {
                procs[pid].time_s = procs[pid].time_s.max(time_s - procs[pid].start_s);
                run_s = run_s.max(time_s);
                ThreadOut {
                    tid: tid as u32 + 1,
                    pid: pid as u32 + 1,
                    cpu,
                    node,
                    time_s,
                    nr_migrations,
                    first_node: node,
                    away_from_first_node_pct: 0.0,
                    cpu_history: Vec::new(),
                    sched: None,
                }
            })
            .collect();
        for p in procs.iter_mut() {
            p.reported_time_s = p.timer_s.unwrap_or(p.time_s);
        }
        let time_s = run_s;
        let reported_time_s = procs.iter().map(|p| p.reported_time_s).fold(0.0, f64::max);
        let timed = procs.iter().any(|p| p.timer_s.is_some());
        let reported_time_source = if timed { "timer" } else { "whole-run" }.to_string();
        let numastat = m.nodes.iter().zip(alloc.numastat).map(|(n, s)| (format!("node{}", n.os_index), s)).collect();
        SimOutput {
            status: if oom.is_some() { "out-of-memory".into() } else { "ok".into() },
            error: oom,
            time_s,
            reported_time_s,
            reported_time_source,
            processes: procs,
            threads,
            pages_per_node: pages,
            page_size_bytes: 4096,
            access_map: round(&self.access),
            numastat,
            vmstat: Vmstat::default(),
            balancing_passes: Vec::new(),
            sched_events: Vec::new(),
            sched_cpus: Vec::new(),
            sched_host_main_loop: None,
            sched_host_others_s: Vec::new(),
            sched_host_idle: None,
            sched_wake_chain: None,
            sched_host_spells: None,
            sched_rq: None,
            balancing_cost: None,
            timeline: self.timeline,
            engine: EngineInfo { sample_rate, sample_stride: stride, bandwidth_waits, epochs, samples },
            memory_tiers: Vec::new(),
            thp: Vec::new(),
            alloc: Vec::new(),
            latency_balanced: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use numalab_model::counters::{of_kind, Kind};
    use serde_json::Value;

    use super::*;

    fn keys(v: Value) -> Vec<String> {
        let mut k: Vec<String> = v.as_object().expect("an object").keys().cloned().collect();
        k.sort();
        k
    }

    fn simulated(kind: Kind) -> Vec<String> {
        let mut k: Vec<String> = of_kind(kind).filter(|c| c.simulated).map(|c| c.name.to_string()).collect();
        k.sort();
        k
    }

    /// Every counter the engine reports is in the registry under its kind, and every registered
    /// counter marked `simulated` is reported (those skipped when zero are set here).
    #[test]
    fn output_keys_are_the_registrys_simulated_counters() {
        let v = Vmstat {
            numa_pte_updates: 1,
            numa_huge_pte_updates: 1,
            numa_hint_faults: 1,
            numa_hint_faults_local: 1,
            numa_pages_migrated: 1,
            pgmigrate_success: 1,
            pgmigrate_fail: 1,
            pgpromote_success: 1,
            pgpromote_candidate: 1,
            pgdemote_kswapd: 1,
            pgdemote_direct: 1,
            thp_fault_alloc: 1,
            thp_fault_fallback: 1,
            thp_collapse_alloc: 1,
            thp_collapse_alloc_failed: 1,
        };
        assert_eq!(keys(serde_json::to_value(v).unwrap()), simulated(Kind::Vmstat));
        assert_eq!(keys(serde_json::to_value(NumaStat::default()).unwrap()), simulated(Kind::Numastat));
        let t = ThreadSched {
            numa_scan_seq: 1,
            numa_pages_migrated: 1,
            numa_preferred_nid: 1,
            total_numa_faults: 1,
            current_node: 0,
            numa_group_id: 0,
            numa_scan_period_ms: 1000,
            faults: Vec::new(),
        };
        let sched = keys(serde_json::to_value(t).unwrap());
        for name in simulated(Kind::Sched) {
            assert!(sched.contains(&name), "{name} is registered but the engine's thread sched lacks it");
        }
    }
}
