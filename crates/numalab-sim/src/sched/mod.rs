//! Where threads run (docs/scheduler.md).
//!
//! - Bound threads (`OMP_PROC_BIND` close/spread/primary over `OMP_PLACES` threads/cores/sockets)
//!   get a place each, computed as the OpenMP 5 specification says (§2.6.2 "Controlling OpenMP
//!   thread affinity").
//! - Unbound threads are placed by CFS's paths, per kernel profile (v3.13 / v6.13):
//!   `domains.rs` builds the scheduling domains with each version's parameters and flags,
//!   `fork.rs` places a new task (`select_task_rq_fair` with `SD_BALANCE_FORK/EXEC`:
//!   `find_idlest_group` / `find_idlest_cpu`), `load_balance.rs` runs the periodic, idle and
//!   newly-idle load balancer (`rebalance_domains` / `load_balance`) with its real intervals,
//!   `imbalance_pct`, the cache-hot test and active balancing, and `noise.rs` the seeded
//!   background activity (timer ticks, kernel threads, daemons).

mod bg_idle;
mod domains;
pub(crate) use domains::llc_parent_imb_numa_nr;
mod fork;
pub(crate) use fork::adjust_numa_imbalance;
mod host_stop;
mod idle_tick;
mod lb_stats;
mod load;
mod load_balance;
mod newidle;
mod ni_random;
mod noise;
mod overload;
mod rq_trace;
pub use rq_trace::RqStats;
pub mod pelt;
mod schedstat;
mod serialize;
pub use schedstat::{LbCounts, NewidleGate};
mod turns;
mod util_est;
mod vcpu_newidle;
mod wake;
mod wakelist;

/// Machines the scheduler's unit tests share.
#[cfg(test)]
pub(crate) mod test_machines {
    /// Two nodes of `cores` cores each, distance 21.
    pub fn two_nodes_of(cores: usize) -> numalab_model::Machine {
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
        numalab_model::MachineSpec::from_json(&spec).unwrap().resolve().unwrap()
    }

    /// Three nodes of one core each, all 21 apart: one NUMA level, every domain of a CPU a NUMA
    /// one (`vm-4`'s shape).
    pub fn three_nodes_of_one() -> numalab_model::Machine {
        let spec = r#"{"name": "3n1", "description": "three nodes of one core",
            "topology": {"packages": 3, "nodes_per_package": 1, "cores_per_node": 1},
            "memory": {"node_gib": 1},
            "distances": [[10,21,21],[21,10,21],[21,21,10]],
            "latency": {"local_ns": 100},
            "bandwidth": {"node_gbps": 10},
            "links": [{"nodes": [0,1], "gbps": 6}, {"nodes": [0,2], "gbps": 6}, {"nodes": [1,2], "gbps": 6}],
            "core": {"frequency_ghz": 2.0, "mlp": 10}}"#;
        numalab_model::MachineSpec::from_json(spec).unwrap().resolve().unwrap()
    }

    /// Threads unbound (no `cpunodebind`, `OMP_PROC_BIND=false`), memory policy default.
    pub fn unbound() -> crate::input::Placement {
        crate::input::Placement {
            policy: numalab_model::MemPolicy::new(numalab_model::PolicyMode::Default, Default::default()).unwrap(),
            cpus: None,
            proc_bind: crate::input::ProcBind::False,
            places: crate::input::Places::Cores,
        }
    }
}

use numalab_model::{CpuSet, Machine};

use crate::input::{Kernel, Placement, Places, ProcBind};
use crate::profile::SchedRules;

/// A scheduling group's load as fork placement and load balancing see it (`struct sg_lb_stats`,
/// `kernel/sched/fair.c`): runnable tasks, CPUs, idle CPUs (PELT's sums: `lb_stats.rs`).
#[derive(Clone, Copy, Debug)]
pub(super) struct GroupLoad {
    pub nr: usize,
    pub weight: usize,
    pub idle: usize,
    /// 6.x `sg->cores` (distinct cores; `sibling_imbalance()` normalises by them).
    pub cores: usize,
}

impl GroupLoad {
    /// The load of `cpus` given the runnable tasks per CPU.
    pub(super) fn of(cpus: &[usize], nr: &[usize], pu_core: &[usize]) -> Self {
        GroupLoad {
            nr: cpus.iter().map(|&c| nr[c]).sum(),
            weight: cpus.len(),
            idle: cpus.iter().filter(|&&c| nr[c] == 0).count(),
            cores: distinct_cores(cpus, pu_core),
        }
    }
}

/// How many distinct cores `cpus` span. A bit set on the stack for the usual core numbers:
/// the balancer asks this for every group at every balance, and a sorted copy per call was a
/// heap allocation each time.
fn distinct_cores(cpus: &[usize], pu_core: &[usize]) -> usize {
    const WORDS: usize = 8;
    let mut seen = [0u64; WORDS];
    let mut count = 0;
    for &c in cpus {
        let core = pu_core[c];
        if core >= WORDS * 64 {
            let mut cores: Vec<usize> = cpus.iter().map(|&c| pu_core[c]).collect();
            cores.sort_unstable();
            cores.dedup();
            return cores.len();
        }
        let (w, bit) = (core / 64, 1u64 << (core % 64));
        if seen[w] & bit == 0 {
            seen[w] |= bit;
            count += 1;
        }
    }
    count
}

pub use domains::Domain;
pub use noise::{Background, Noise};
pub use wake::futex_wake_order;

/// `sysctl_sched_migration_cost` = 500000 ns (`kernel/sched/fair.c`, both versions): a task
/// that ran less than this long ago is cache hot (`task_hot`).
pub const MIGRATION_COST_S: f64 = 0.5e-3;

/// Most CPU changes kept per thread in its history (the migration count goes on).
const HISTORY_MAX: usize = 1_000;
/// Most decisions kept for `--explain-sched` (the count of all is kept).
const LOG_MAX: usize = 20_000;

/// One scheduling decision: which path placed or moved a thread, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct SchedEvent {
    pub t_s: f64,
    pub tid: usize,
    /// Logical PUs; `from` is None for a placement at creation.
    pub from: Option<usize>,
    pub to: usize,
    /// `exec`, `fork`, `bind`, `wake`, `idle-balance` (by the NOHZ balance),
    /// `idle-tick-balance` (at an idle CPU's own kept tick, `idle_tick.rs`), `busy-balance`,
    /// `newidle-balance`, `active-balance`.
    pub path: &'static str,
    /// The scheduling domain level (`MC`, `NUMA<distance>`), empty when none decided.
    pub level: String,
    pub why: String,
}

/// Per CPU and domain level: `sd->balance_interval`, `sd->last_balance`, `sd->nr_balance_failed`.
#[derive(Clone, Debug)]
struct DomState {
    balance_interval_ms: f64,
    last_balance_s: f64,
    nr_balance_failed: u32,
    /// When the interval has passed, on an idle CPU and on a busy one (`due_s[busy]`): the two
    /// above give it, and the balancer asks every epoch for every CPU and level
    /// (`Sched::refresh_due` after every change of either).
    due_s: [f64; 2],
}

pub struct Sched {
    rules: &'static SchedRules,
    pub pu_node: Vec<usize>,
    pu_core: Vec<usize>,
    /// OS index of each PU (logical).
    pub pu_os: Vec<u32>,
    /// Logical PUs each thread may run on.
    pub allowed: Vec<Vec<usize>>,
    /// The mask a thread has before libgomp binds it (`fork.rs`): the process's CPUs for a
    /// primary thread, the bound primary's place for a worker (a clone inherits its parent's).
    inherited: Vec<Vec<usize>>,
    pub cpu: Vec<usize>,
    pub bound: Vec<bool>,
    /// CPUs the threads may use (libgomp's available CPUs: its affinity mask).
    pub available_cpus: usize,
    /// Scheduling domains, lowest first.
    domains: Vec<Domain>,
    /// `state[level][cpu]`.
    state: Vec<Vec<DomState>>,
    /// Per CPU: the earliest `due_s` of its levels, idle and busy (a CPU none of whose levels
    /// is due is passed over at once).
    cpu_due_s: Vec<[f64; 2]>,
    noise: Option<Noise>,
    explain: bool,
    pub log: Vec<SchedEvent>,
    pub log_total: u64,
    /// CPUs that had runnable work at the previous balancing point (for newly-idle balancing).
    was_busy: Vec<bool>,
    /// The host model is on: newly idle balancing happens at the host's rounds, on a vCPU the
    /// host runs (`newidle.rs: newidle_where_run`), not at epoch ends.
    newidle_when_run: bool,
    /// With the host model: the idle vCPU `nohz_balancer_kick()` kicked, until the host runs it
    /// (`vcpu_newidle.rs`).
    nohz_ilb: Option<usize>,
    /// Whether idle CPUs keep their tick, where the run's background gives the share of stops
    /// (`idle_tick.rs`); None: every idle CPU is tickless.
    idle_tick: Option<idle_tick::IdleTick>,
    /// An idle CPU balances at its own kept tick (`idle_tick_balance()`): its pulls are named so.
    tick_balancing: bool,
    /// Per CPU: `rq->avg_idle` and `rq->idle_stamp` (`newidle.rs`).
    idle_avg: newidle::IdleAvg,
    /// The root domain's overload flag (`overload.rs`).
    rd_overload: bool,
    /// `/proc/schedstat`'s load balancer counters and the newly idle gate's outcomes
    /// (`schedstat.rs`), for `--explain-sched`.
    schedstat: schedstat::Schedstat,
    /// NI_RANDOM's per-domain success ratios and die (`ni_random.rs`), where the profile has it.
    ni_random: Option<ni_random::NiRandom>,
    /// With the host model: whether the host stops a vCPU inside a newly idle balance, and for
    /// how long (`host_stop.rs`).
    host_stops: Option<host_stop::HostStops>,
    /// Per thread: woken onto a CPU's wake list, not yet on its run queue (`wakelist.rs`).
    on_wakelist: Vec<bool>,
    /// Per CPU, as of the current balance: a task waits on its wake list (`rq->ttwu_pending`).
    ttwu_pending: Vec<bool>,
    /// Per thread: node at creation, seconds run away from it, and the last accounting time.
    first_node: Vec<usize>,
    pub away_s: Vec<f64>,
    accounted_s: f64,
    /// Per thread: (time, logical PU) at creation and after every move by this scheduler.
    pub history: Vec<Vec<(f64, usize)>>,
    /// Per thread: the wake-up heuristic's counters (`wake.rs`, `record_wakee()`).
    wakee: Vec<wake::Wakee>,
    /// Per thread: when it last ran before a barrier's release; `task_hot()` measures from
    /// `p->se.exec_start`, which a sleeping task keeps from its last run.
    stopped_s: Vec<f64>,
    /// Per thread: PELT (`load.rs`), brought up to `loads_at_s`.
    load: load::LoadTrack,
    loads_at_s: f64,
    /// Per CPU: v3.13 `rq->cpu_load[]` (`CPU_LOAD_IDX_MAX` 5), updated once a jiffy, and the
    /// jiffy of its last update.
    cpu_load_idx: Vec<[u64; 5]>,
    cpu_load_jiffy: u64,
    /// Per node (LLC): v6.13 `sd_share->nr_idle_scan` (SIS_UTIL), set by the LLC domain's
    /// periodic balance; an idle LLC's value (its CPUs) until then.
    nr_idle_scan: Vec<usize>,
    /// Some core has several PUs (`sched_smt_active()`).
    smt: bool,
    /// `update_sysctl()`'s multiplier of the slice and granularity sysctls, from the machine's
    /// CPUs (`load_balance::sysctl_factor`).
    sysctl_factor: f64,
    /// Per CPU: the turn of the thread running there (`turns.rs`), given by the engine.
    turns: turns::Turns,
    /// With background work: what its ends on idle CPUs need of the turns (`bg_idle.rs`).
    bg_idle: Option<bg_idle::BgIdle>,
    /// Per node (LLC): its PUs in logical order (`sd_llc_size`, `select_idle_sibling()`'s scan).
    node_pus: Vec<Vec<usize>>,
    /// Buffers a wake-up reuses (`wake.rs`): one is made for every woken thread.
    wake_scratch: wake::Scratch,
    /// `group_cores[level][cpu][group]`: the distinct cores of `domains[level].groups_of[cpu]
    /// [group]` (`GroupLoad::cores`), fixed with the domains.
    group_cores: Vec<Vec<Vec<usize>>>,
    /// Every CPU's `cpu_load()` over its threads while they stay where they were summed
    /// (`load.rs`, `cpu_load_pair`).
    load_sums: std::cell::RefCell<load::LoadSums>,
    /// `rebalance_domains()`'s lock on the `SD_SERIALIZE` (NUMA) levels (`serialize.rs`).
    balancing: serialize::Balancing,
    /// The threads' run-queue changes and idle ticks, for `--explain-sched` (`rq_trace.rs`).
    rq: rq_trace::RqTrace,
}

impl Sched {
    /// Threads are numbered process by process; `threads` per process, `processes` of them.
    pub fn new(m: &Machine, p: &Placement, kernel: Kernel, processes: usize, threads: usize) -> Result<Self, String> {
        Self::new_procs(m, &vec![(p, threads); processes], kernel)
    }

    /// Processes each with their own placement and thread count (a co-run); threads are
    /// numbered process by process.
    pub fn new_procs(m: &Machine, procs: &[(&Placement, usize)], kernel: Kernel) -> Result<Self, String> {
        let pu_node: Vec<usize> = m.pus.iter().map(|u| m.node_logical(u.node).unwrap_or(0)).collect();
        let pu_core: Vec<usize> = m.pus.iter().map(|u| u.core as usize).collect();
        let pu_os: Vec<u32> = m.pus.iter().map(|u| u.os_index).collect();
        let all = m.cpuset();
        let mut allowed: Vec<Vec<usize>> = Vec::new();
        let mut cpusets = Vec::new();
        for (p, threads) in procs {
            let cpus = p.cpus.clone().unwrap_or_else(|| all.clone());
            let allowed_pus: Vec<usize> = (0..m.pus.len()).filter(|&i| cpus.contains(pu_os[i])).collect();
            if allowed_pus.is_empty() {
                return Err("the placement allows no CPU of this machine".into());
            }
            allowed.extend(std::iter::repeat_n(allowed_pus, *threads));
            cpusets.push(cpus);
        }
        // libgomp's available CPUs: those any process may use.
        let available_cpus = (0..m.pus.len()).filter(|&i| allowed.iter().any(|a| a.contains(&i))).count();
        let nthreads = allowed.len();
        let domains = domains::build(m, kernel);
        let levels = domains.len();
        let group_cores = domains
            .iter()
            .map(|d| d.groups_of.iter().map(|gs| gs.iter().map(|g| distinct_cores(g, &pu_core)).collect()).collect())
            .collect();
        let state = domains
            .iter()
            .map(|d| {
                (0..m.pus.len())
                    .map(|c| DomState {
                        balance_interval_ms: d.init_interval_ms(c),
                        last_balance_s: 0.0,
                        nr_balance_failed: 0,
                        due_s: [0.0; 2],
                    })
                    .collect()
            })
            .collect();
        let nodes = pu_node.iter().copied().max().map_or(0, |n| n + 1);
        let node_pus: Vec<Vec<usize>> =
            (0..nodes).map(|n| (0..pu_node.len()).filter(|&c| pu_node[c] == n).collect()).collect();
        let nr_idle_scan = node_pus.iter().map(Vec::len).collect();
        let smt = (0..pu_core.len()).any(|c| (0..c).any(|q| pu_core[q] == pu_core[c]));
        let mut s = Sched {
            rules: &kernel.profile().sched,
            pu_node,
            pu_core,
            pu_os,
            inherited: allowed.clone(),
            allowed,
            cpu: vec![0; nthreads],
            bound: vec![false; nthreads],
            available_cpus,
            domains,
            state,
            cpu_due_s: vec![[0.0; 2]; m.pus.len()],
            noise: None,
            explain: false,
            log: Vec::new(),
            log_total: 0,
            was_busy: vec![false; m.pus.len()],
            newidle_when_run: false,
            nohz_ilb: None,
            idle_tick: None,
            tick_balancing: false,
            idle_avg: newidle::IdleAvg::new(m.pus.len()),
            rd_overload: false,
            schedstat: schedstat::Schedstat::new(levels, m.pus.len()),
            ni_random: None,
            host_stops: None,
            on_wakelist: vec![false; nthreads],
            ttwu_pending: vec![false; m.pus.len()],
            first_node: vec![0; nthreads],
            away_s: vec![0.0; nthreads],
            accounted_s: 0.0,
            history: vec![Vec::new(); nthreads],
            wakee: vec![wake::Wakee::default(); nthreads],
            stopped_s: vec![f64::NEG_INFINITY; nthreads],
            load: load::LoadTrack::new(nthreads),
            loads_at_s: 0.0,
            cpu_load_idx: vec![[0; 5]; m.pus.len()],
            cpu_load_jiffy: 0,
            nr_idle_scan,
            smt,
            sysctl_factor: load_balance::sysctl_factor(m.pus.len()),
            turns: turns::Turns::new(m.pus.len()),
            bg_idle: None,
            node_pus,
            wake_scratch: wake::Scratch::default(),
            group_cores,
            load_sums: Default::default(),
            balancing: Default::default(),
            rq: Default::default(),
        };
        for l in 0..s.domains.len() {
            for c in 0..s.pu_node.len() {
                s.refresh_due(l, c);
            }
        }
        let mut first = 0;
        for ((p, threads), cpus) in procs.iter().zip(&cpusets) {
            if p.proc_bind != ProcBind::False {
                let places = places(m, p.places, cpus);
                if places.is_empty() {
                    return Err("OMP_PLACES gives no place inside the allowed CPUs".into());
                }
                let assigned = assign_places(p.proc_bind, places.len(), *threads);
                for (i, &place) in assigned.iter().enumerate() {
                    s.allowed[first + i] = places[place].clone();
                    s.bound[first + i] = true;
                    if i > 0 {
                        s.inherited[first + i] = places[assigned[0]].clone();
                    }
                }
            }
            first += threads;
        }
        Ok(s)
    }

    /// Background activity seeded by `seed` (None: an idealized, quiet machine), and whether to
    /// keep the decisions for `--explain-sched`.
    pub fn set_options(&mut self, noise_seed: Option<u64>, explain: bool) {
        self.noise = noise_seed.map(|seed| Noise::new(seed, self.pu_node.clone()));
        self.bg_idle = self.noise.as_ref().map(|_| bg_idle::BgIdle::new(self.pu_node.len()));
        self.seed_ni_random(noise_seed.unwrap_or(0));
        self.refresh_newidle_costs();
        self.refresh_lb_times();
        self.explain = explain;
        self.rq = rq_trace::RqTrace::new(explain);
    }

    /// Background activity seeded by `seed` with rates of its own (`numalab vm check`'s guest,
    /// docs/scheduler.md §10.3) instead of §6's estimates.
    pub fn set_background(&mut self, seed: u64, bg: Background) {
        self.idle_tick = bg
            .tick_stop_share
            .map(|share| idle_tick::IdleTick::new(seed, self.pu_node.len(), share, 1.0 / self.rules.hz));
        let mut noise = Noise::with(seed, self.pu_node.clone(), bg);
        noise.set_util_est(self.rules.load.util_est);
        self.noise = Some(noise);
        self.bg_idle = Some(bg_idle::BgIdle::new(self.pu_node.len()));
        self.seed_ni_random(seed);
        self.refresh_newidle_costs();
        self.refresh_lb_times();
    }

    /// NI_RANDOM's die from the run's seed (0 on a quiet machine), where the profile has it.
    fn seed_ni_random(&mut self, seed: u64) {
        self.ni_random =
            self.rules.newidle_random.then(|| ni_random::NiRandom::new(self.domains.len(), self.pu_node.len(), seed));
    }

    /// Thread `tid` last ran at `t_s`: at a barrier's release, its arrival plus libgomp's spin
    /// when it slept on the futex, the release when it spun until then. Until its next turn,
    /// `task_hot()` counts from then.
    pub fn ran_until(&mut self, tid: usize, t_s: f64) {
        self.stopped_s[tid] = t_s;
    }

    /// The scheduling domains (lowest first), for explanations and tests.
    pub fn domains(&self) -> &[Domain] {
        &self.domains
    }

    /// Runnable tasks per CPU: live threads plus background work active at `now_s`.
    fn nr_running(&self, live: &[bool], now_s: f64) -> Vec<usize> {
        let mut n = Vec::new();
        self.nr_running_into(live, now_s, &mut n);
        n
    }

    /// `nr_running()` into `n` (emptied first): a wake-up asks it for every woken thread, and
    /// a buffer kept between them spares an allocation each time.
    fn nr_running_into(&self, live: &[bool], now_s: f64, n: &mut Vec<usize>) {
        n.clear();
        n.resize(self.pu_node.len(), 0);
        for (&cpu, &l) in self.cpu.iter().zip(live) {
            n[cpu] += usize::from(l);
        }
        if let Some(noise) = &self.noise {
            for (c, v) in n.iter_mut().enumerate() {
                *v += usize::from(noise.active_at(c, now_s));
            }
        }
    }

    /// The least loaded of `cands` (ties: an idle core first, then the lowest PU).
    fn idlest(&self, cands: &[usize], load: &[usize]) -> usize {
        let core_busy =
            |c: usize| (0..load.len()).filter(|&q| self.pu_core[q] == self.pu_core[c]).map(|q| load[q]).sum::<usize>();
        *cands.iter().min_by_key(|&&c| (load[c], core_busy(c), c)).expect("non-empty candidate list")
    }

    /// A decision's reason, built only when decisions are kept (`--explain-sched`).
    fn explained(&self, reason: impl FnOnce() -> String) -> String {
        if self.explain {
            reason()
        } else {
            String::new()
        }
    }

    fn record(&mut self, ev: SchedEvent) {
        self.log_total += 1;
        if self.explain && self.log.len() < LOG_MAX {
            self.log.push(ev);
        }
    }

    /// Move thread `tid` to `to` (by the load balancer).
    fn migrate(&mut self, now_s: f64, tid: usize, to: usize, path: &'static str, level: usize, why: String) {
        let from = self.cpu[tid];
        self.cpu[tid] = to;
        self.rq.moved(now_s, tid, to);
        if self.history[tid].len() < HISTORY_MAX {
            self.history[tid].push((now_s, to));
        }
        let level = self.domains[level].name.clone();
        self.record(SchedEvent { t_s: now_s, tid, from: Some(from), to, path, level, why });
    }

    /// Charge the time since the last call to each live thread's node (time away from the
    /// node it started on).
    fn account(&mut self, now_s: f64, live: &[bool]) {
        let dt = now_s - self.accounted_s;
        if dt > 0.0 {
            for (t, away) in self.away_s.iter_mut().enumerate() {
                if live[t] && self.pu_node[self.cpu[t]] != self.first_node[t] {
                    *away += dt;
                }
            }
        }
        self.accounted_s = now_s;
    }

    /// Whether background work runs on `cpu` at `t` (the host model's halted vCPUs: `vhost.rs`).
    pub fn background_at(&self, cpu: usize, t: f64) -> bool {
        self.noise.as_ref().is_some_and(|n| n.active_at(cpu, t))
    }

    /// Fraction of `[a, b)` each CPU spends on background work (0 without noise).
    pub fn background(&mut self, a: f64, b: f64, live: &[bool]) -> Vec<f64> {
        let n = self.pu_node.len();
        if self.noise.is_none() {
            return vec![0.0; n];
        }
        let load = self.nr_running(live, a);
        let f =
            self.noise.as_mut().map(|nz| nz.busy_fraction(a, b, &load, self.rules.hz)).unwrap_or_else(|| vec![0.0; n]);
        self.background_enqueues(a);
        f
    }
}

/// OMP_PLACES: the list of places inside the allowed CPUs, in OS order (logical PU lists).
pub(crate) fn places(m: &Machine, kind: Places, allowed: &CpuSet) -> Vec<Vec<usize>> {
    let keep = |set: &CpuSet| -> Vec<usize> {
        (0..m.pus.len()).filter(|&i| set.contains(m.pus[i].os_index) && allowed.contains(m.pus[i].os_index)).collect()
    };
    let mut out: Vec<Vec<usize>> = match kind {
        Places::Threads => {
            m.pus.iter().filter(|u| allowed.contains(u.os_index)).map(|u| vec![u.logical_index as usize]).collect()
        }
        Places::Cores => m.cores.iter().map(|c| keep(&c.cpuset)).collect(),
        Places::Sockets => m.packages.iter().map(|p| keep(&p.cpuset)).collect(),
    };
    out.retain(|p| !p.is_empty());
    out.sort_by_key(|p| m.pus[p[0]].os_index);
    out
}

/// Which place each of `t` threads gets under a binding policy over `p` places.
pub fn assign_places(bind: ProcBind, p: usize, t: usize) -> Vec<usize> {
    let close = || -> Vec<usize> {
        if t <= p {
            (0..t).collect()
        } else {
            // T > P: P subsets of consecutive threads, the first T mod P one larger.
            let (q, r) = (t / p, t % p);
            (0..p).flat_map(|i| std::iter::repeat_n(i, q + usize::from(i < r))).collect()
        }
    };
    match bind {
        ProcBind::False | ProcBind::Close => close(),
        ProcBind::Primary => vec![0; t],
        ProcBind::Spread if t <= p => {
            // P places in T subpartitions of consecutive places; thread i takes the first of the i-th.
            let (q, r) = (p / t, p % t);
            let mut start = 0;
            (0..t)
                .map(|i| {
                    let s = start;
                    start += q + usize::from(i < r);
                    s
                })
                .collect()
        }
        ProcBind::Spread => close(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openmp_place_assignment() {
        assert_eq!(assign_places(ProcBind::Close, 8, 4), vec![0, 1, 2, 3]);
        assert_eq!(assign_places(ProcBind::Spread, 8, 4), vec![0, 2, 4, 6]);
        assert_eq!(assign_places(ProcBind::Close, 2, 5), vec![0, 0, 0, 1, 1]);
        assert_eq!(assign_places(ProcBind::Primary, 4, 3), vec![0, 0, 0]);
    }

    #[test]
    fn group_load_counts_distinct_cores() {
        // Two hyperthreads per core; core numbers past the bit set take the sorting path.
        let pu_core = [0, 0, 1, 1, 600, 600, 601, 63, 64];
        let nr = [1, 0, 2, 0, 0, 1, 0, 0, 3];
        assert_eq!(GroupLoad::of(&[0, 1, 2, 3], &nr, &pu_core).cores, 2);
        assert_eq!(GroupLoad::of(&[1, 3, 7, 8], &nr, &pu_core).cores, 4);
        assert_eq!(GroupLoad::of(&[0, 4, 5, 6], &nr, &pu_core).cores, 3);
        let g = GroupLoad::of(&[0, 1, 2, 3, 8], &nr, &pu_core);
        assert_eq!((g.nr, g.weight, g.idle, g.cores), (6, 5, 2, 3));
    }
}
