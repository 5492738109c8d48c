//! Kernel profiles as data (docs/architecture.md, "how to add a kernel profile"): every rule
//! and parameter where the modelled Linux releases differ, chosen once per release. The engine
//! reads `profile.<part>.<rule>` and never asks which release it runs; adding a release is one
//! more `KernelProfile` constant, a `Kernel` variant, and only the rule variants that are
//! truly new. The constants name every field (no `..Default::default()`), so the compiler
//! rejects a profile that leaves a rule unsaid.

use serde::{Deserialize, Serialize};

/// Which kernel's rules to follow where they differ (docs/allocation.md, docs/balancing.md):
/// the lookup key of a [`KernelProfile`], spelled `--kernel 2.6.32|3.13|6.1|6.13`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum Kernel {
    #[serde(rename = "2.6.32")]
    V2_6_32,
    #[serde(rename = "3.13")]
    V3_13,
    #[serde(rename = "6.1")]
    V6_1,
    #[default]
    #[serde(rename = "6.13")]
    V6_13,
}

impl Kernel {
    /// Every profile with its name (`--kernel NAME`), in release order.
    pub const ALL: [(&'static str, Kernel); 4] =
        [("2.6.32", Kernel::V2_6_32), ("3.13", Kernel::V3_13), ("6.1", Kernel::V6_1), ("6.13", Kernel::V6_13)];

    pub fn parse(name: &str) -> Result<Kernel, String> {
        Kernel::ALL.iter().find(|(n, _)| *n == name).map(|(_, k)| *k).ok_or_else(|| {
            let names: Vec<&str> = Kernel::ALL.iter().map(|(n, _)| *n).collect();
            format!("--kernel: '{name}' is not one of {}", names.join(", "))
        })
    }

    /// The rules of this release.
    pub fn profile(self) -> &'static KernelProfile {
        match self {
            Kernel::V2_6_32 => &PROFILE_2_6_32,
            Kernel::V3_13 => &PROFILE_3_13,
            Kernel::V6_1 => &PROFILE_6_1,
            Kernel::V6_13 => &PROFILE_6_13,
        }
    }
}

/// One kernel release's rules, grouped by the subsystem that reads them.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KernelProfile {
    /// `--kernel` name.
    pub name: &'static str,
    pub alloc: AllocRules,
    pub sched: SchedRules,
    pub numab: NumaBalancingRules,
    pub thp: ThpRules,
    pub sysctls: SysctlRules,
}

/// The page allocator (`mm/page_alloc.c`), `crate::alloc`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AllocRules {
    /// The fast path at the `low` watermark (`mm/page_alloc.c: get_page_from_freelist()`).
    pub fast_path: FastPath,
    /// Upper clamp of `min_free_kbytes` (`mm/page_alloc.c: init_per_zone_wmark_min()`).
    pub min_free_kbytes_max: u64,
    /// `low`/`high` above `min` (`mm/page_alloc.c: __setup_per_zone_wmarks()`).
    pub watermark_gaps: WatermarkGaps,
    /// The boot-time tie-breaker of fallback lists (`mm/page_alloc.c: build_zonelists()`,
    /// `find_next_best_node()`).
    pub zonelist_tie_break: ZonelistTieBreak,
    /// `MPOL_WEIGHTED_INTERLEAVE` (v6.9+, `mm/mempolicy.c: weighted_interleave_nodes()`); a run
    /// asking for it is refused without (`crate::spec`).
    pub weighted_interleave: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum FastPath {
    /// v3.13 fair-zone allocation (`ALLOC_FAIR`): the fast path takes only the preferred zone.
    PreferredZoneOnly,
    /// Every allowed zone of the zonelist, in order.
    Zonelist,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum WatermarkGaps {
    /// v3.13: `low = min + min/4`, `high = min + min/2`.
    MinQuarters,
    /// v4.6+ `watermark_scale_factor` (in 1/10000 of the node): steps of
    /// `max(min/4, managed x factor / 10000)`.
    ScaleFactor { per_10k: u64 },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ZonelistTieBreak {
    /// v3.13: `val *= MAX_NODE_LOAD * MAX_NUMNODES`; a node opening a new distance tier gets
    /// `node_load[node] = load`, `load` counting down from the number of nodes.
    DescendingLoad,
    /// v5.x+: `val *= MAX_NUMNODES`; `node_load[node] += 1`.
    IncrementLoad,
}

/// CFS (`kernel/sched/fair.c`, `kernel/sched/topology.c`), `crate::sched`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SchedRules {
    /// `CONFIG_HZ` of the modelled build: ticks a second. Balancing intervals are whole jiffies
    /// (`msecs_to_jiffies()` in `rebalance_domains()`), a running task's slice is checked at the
    /// tick, and `cpu_load[]` moves once a tick.
    pub hz: f64,
    /// A task's time slice among `n` sharing a CPU (`kernel/sched/fair.c: sched_slice()`;
    /// v6.13 `update_deadline()` with `sysctl_sched_base_slice`).
    pub slice: TimeSlice,
    /// Whether a task woken on a busy CPU takes it from the running task at once
    /// (`kernel/sched/fair.c`: v3.13 `check_preempt_wakeup()`, v6.13 `check_preempt_wakeup_fair()`).
    pub wakeup_preempt: WakeupPreempt,
    /// Exec placement: does the exec'ing task count on its CPU (`kernel/sched/core.c:
    /// sched_exec()`, `kernel/sched/fair.c: find_idlest_group()`).
    pub exec_load: ExecLoad,
    /// Fork and exec placement (`kernel/sched/fair.c: find_idlest_group()`).
    pub idlest_group: IdlestGroup,
    /// What happens to `wakee_flips` every second (`kernel/sched/fair.c: record_wakee()`).
    pub wakee_decay: WakeeDecay,
    /// A 1:N waker (`kernel/sched/fair.c: wake_wide()`).
    pub wake_wide: WakeWide,
    /// Pulling a wakee to the waker and where `wake_wide()` enters it (`kernel/sched/fair.c:
    /// select_task_rq_fair()`, `wake_affine()`).
    pub wake_affine: WakeAffine,
    /// When the target's LLC has no idle core (`kernel/sched/fair.c: select_idle_sibling()`).
    pub idle_sibling: IdleSibling,
    /// `select_idle_sibling()` tries the task's `recent_used_cpu` (its previous CPU at its last
    /// wake-up that got that far) before scanning the LLC (since v4.16).
    pub recent_used_cpu: bool,
    /// The order of a wake-up's choices (`select_task_rq_fair()` with `SD_BALANCE_WAKE`).
    pub wake_order: WakeOrder,
    /// When idle CPUs, their tick stopped, are balanced (CONFIG_NO_HZ idle balancing).
    pub nohz_idle: NohzIdle,
    /// Whether a newly idle CPU balances at once or only when it expects to stay idle longer
    /// than balancing costs (`kernel/sched/fair.c: newidle_balance()`).
    pub newidle_gate: NewidleGate,
    /// Which wake-ups the waker leaves to the target CPU to enqueue (`kernel/sched/core.c:
    /// ttwu_queue()` / `ttwu_queue_wakelist()`): until the target handles the IPI the task is
    /// on no run queue.
    pub ttwu_queue: TtwuQueue,
    /// A newly idle balance's `detach_tasks()` stops after its first task (`kernel/sched/fair.c`:
    /// "#ifdef CONFIG_PREEMPTION ... if (env->idle == CPU_NEWLY_IDLE) break;", v3.13's
    /// `move_tasks()` the same under `CONFIG_PREEMPT`): true where the modelled build is
    /// preemptible.
    pub newidle_one_task: bool,
    /// The root domain's overload flag gates newly idle balancing (v3.16's "sched: Fast idling
    /// of CPU when system is partially loaded"; v6.1 `rd->overload`, v6.13 `rd->overloaded`):
    /// set when a run queue reaches two tasks (`kernel/sched/sched.h: add_nr_running()`),
    /// rewritten by each balance of the root domain from its CPUs' run queues
    /// (`kernel/sched/fair.c: update_sd_lb_stats()`), and a newly idle CPU does not balance
    /// while it is clear (`newidle_balance()` / `sched_balance_newidle()`). `sched/overload.rs`.
    pub rd_overload: bool,
    /// A newly idle balance runs each domain with a probability that follows its success
    /// (`SCHED_FEAT(NI_RANDOM, true)`, upstream 33cf66d88306 "sched/fair: Proportional newidle
    /// balance", v6.18 / 7.0, in the 6.1 stable series from January 2026: "[PATCH 6.1 617/634]"):
    /// per domain a 1024-sided die against `1 + sd->newidle_ratio`, the domain's successes per
    /// 1024 balances, each run's success weighted by the inverse of its chance
    /// (`update_newidle_stats()`). `sched/ni_random.rs`, docs/scheduler.md §10.15.
    pub newidle_random: bool,
    /// A busy CPU's balance interval in jiffies (`kernel/sched/fair.c: rebalance_domains()`,
    /// v6.x `get_sd_balance_interval()`).
    pub busy_interval: BusyInterval,
    /// The busiest group and the imbalance (`kernel/sched/fair.c: find_busiest_group()`,
    /// `update_sd_pick_busiest()`, `calculate_imbalance()`).
    pub busiest_group: BusiestGroup,
    /// Per-entity load tracking and which decision reads which of its signals.
    pub load: LoadRules,
    /// The MC (LLC) domain's parameters (v3.13 `include/linux/topology.h: SD_MC_INIT`, v6.13
    /// `kernel/sched/topology.c: sd_init()`).
    pub mc: McDomain,
    /// Every NUMA domain's parameters (v3.13 `kernel/sched/core.c: sd_numa_init()`, v6.13
    /// `kernel/sched/topology.c: sd_init()`, `build_sched_domains()`).
    pub numa: NumaDomain,
}

/// The durations below are the kernel's normalized values (`normalized_sysctl_*`): at boot
/// `kernel/sched/fair.c: update_sysctl()` (v2.6.32 `kernel/sched.c`) multiplies each by
/// `get_update_sysctl_factor()`, `1 + ilog2(min(num_online_cpus(), 8))` under the default
/// `SCHED_TUNABLESCALING_LOG` (1, 2, 3, 4 for 1, 2-3, 4-7, 8+ CPUs); `crate::sched` applies
/// the factor of the machine's CPU count.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum TimeSlice {
    /// CFS `sched_slice()` over `__sched_period()`: `max(latency, n x min_granularity) / n`
    /// (v3.13, v6.1: latency 6 ms, min_granularity 0.75 ms, so 24 ms and 3 ms on 8 CPUs).
    CfsPeriod { latency_s: f64, min_granularity_s: f64 },
    /// v6.6+ EEVDF `sysctl_sched_base_slice` (0.75 ms, so 3 ms on 8 CPUs).
    Base { slice_s: f64 },
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum WakeupPreempt {
    /// CFS `wakeup_preempt_entity()`: the wakee preempts when the running task's vruntime leads
    /// its own by more than `wakeup_gran()` (`sysctl_sched_wakeup_granularity`, normalized 1 ms,
    /// scaled like the slice: 4 ms on 8 CPUs).
    Granularity { gran_s: f64 },
    /// EEVDF with `RUN_TO_PARITY` (`pick_eevdf()`): an eligible running task keeps the CPU
    /// until its slice is used up.
    RunToParity,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ExecLoad {
    /// v3.13 counts the exec'ing task on its CPU (it is running there).
    CountsExecer,
    /// v6.13 `find_idlest_group()` discounts it (`cpu_util_without()`, `idle_cpu_without()`).
    DiscountsExecer,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum IdlestGroup {
    /// v3.13: the lowest average load; the local group stays while
    /// `100 x local < (100 + (imbalance_pct - 100) / 2) x idlest`.
    LoadAverage,
    /// v5.5+ `update_pick_idlest()`: group type, then idle CPUs, then load; the local group
    /// stays by type, imbalance_pct, `adjust_numa_imbalance()` and idle CPUs.
    GroupType,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum WakeeDecay {
    /// v2.6.32: no `wakee_flips` (`record_wakee()` arrived in v3.12 with `wake_wide()`).
    Untracked,
    /// v3.13: reset to 0.
    Reset,
    /// v4.x+: halved.
    Halve,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum WakeWide {
    /// v2.6.32 `select_task_rq_fair()`: no `wake_wide()`; `want_affine` only needs the waker's
    /// CPU in the wakee's `cpus_allowed` (`sched_feat(AFFINE_WAKEUPS)`).
    Absent,
    /// v3.12 (commit 62470419e993): `p->wakee_flips > factor && current->wakee_flips >
    /// factor x p->wakee_flips`.
    WakeeAboveFactor,
    /// v4.3+ (commit 63b0e9edceec): master/slave, `!(slave < factor || master < slave x factor)`.
    MasterSlave,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum WakeAffine {
    /// v3.13 `wake_affine()`: balanced when `this <= prev` or the waker's CPU has no load;
    /// `wake_wide()` makes it refuse (the affine domain is still searched).
    LoadBalanced,
    /// v4.14+ `want_affine = !wake_wide(p) && ...`, then `wake_affine_idle()` and
    /// `wake_affine_weight()` (strictly lower load).
    IdleThenWeight,
}

/// Per-entity load tracking (`crate::sched::pelt`) and what the decisions read from it
/// (docs/scheduler.md §9).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct LoadRules {
    /// The form of the per-task averages.
    pub tracking: PeltForm,
    /// The CPU load `wake_affine()` compares (v3.13 `wake_affine()`: `source_load()` /
    /// `target_load()` with `wake_idx` 0; v6.13 `wake_affine_weight()`: `cpu_load()`).
    pub wake_affine: CpuLoad,
    /// What fork and exec's `find_idlest_group()` sums per group.
    pub idlest_group: GroupSignals,
    /// How far `select_idle_sibling()` scans the LLC for an idle CPU.
    pub idle_scan: IdleScan,
    /// What the load balancer's `update_sg_lb_stats()` sums per group.
    pub balance: BalanceSignals,
    /// Whether `cpu_util_cfs()` and `detach_tasks()` read a task's estimated utilisation
    /// (`UTIL_EST`, `crate::sched` `util_est.rs`), and in which form.
    pub util_est: UtilEst,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum UtilEst {
    /// No estimate (v2.6.32, v3.13: no utilisation signal read by a decision).
    Off,
    /// v6.1 `struct util_est { enqueued, ewma }` (`kernel/sched/fair.c: util_est_update()`,
    /// `UTIL_EST_FASTUP`): `_task_util_est()` is `max(ewma, enqueued)`.
    EnqueuedEwma,
    /// v6.8+ one `unsigned int util_est`, the EWMA, kept when the task waited for the CPU
    /// (`util_est_update()`: "dequeued + UTIL_EST_MARGIN < task_runnable(p)").
    Ewma,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum BalanceSignals {
    /// v3.13 `update_sg_lb_stats()`: `target_load()` (local group) / `source_load()` (the
    /// others) of each CPU with the domain's load index for the balancing CPU's state
    /// (`get_sd_load_idx()`: `busy_idx`, `idle_idx`, `newidle_idx`); index 0 is
    /// `weighted_cpuload()`, index `k` the max / min of it and the tick-decayed `cpu_load[k-1]`
    /// (`LB_BIAS`, on by default). Imbalances in load, moved by `move_tasks()`.
    CpuLoadIndex { mc: LoadIdx, numa: LoadIdx },
    /// v2.6.32 `kernel/sched.c: update_sg_lb_stats()`: the same `target_load()` /
    /// `source_load()` at the domain's `get_sd_load_idx()` (`LB_BIAS` on,
    /// `kernel/sched_features.h`), over `weighted_cpuload()` = `rq->load.weight` (NICE_0_LOAD
    /// per queued task) and its tick-decayed `cpu_load[]` (`update_cpu_load()`: the same
    /// `(old x (2^i - 1) + new) >> i` as v3.13's active tick). Tasks move by their weight.
    QueuedWeightIndex { mc: LoadIdx, numa: LoadIdx },
    /// v5.5+ `update_sg_lb_stats()`: `cpu_load()`, `cpu_util_cfs()` and `cpu_runnable()` into
    /// `group_classify()` and `avg_load`; `calculate_imbalance()` in load, utilisation or tasks
    /// (`enum migration_type`).
    LoadUtilRunnable,
}

/// A domain's `busy_idx`, `idle_idx` and `newidle_idx` (v2.6.32 and v3.13; removed in v5.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct LoadIdx {
    pub busy: usize,
    pub idle: usize,
    pub newidle: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum IdleScan {
    /// v3.13 `select_idle_sibling()`: every group of the LLC domain, no limit.
    Unlimited,
    /// v6.0+ `SIS_UTIL` (on by default): `select_idle_cpu()` looks at most at
    /// `sd_share->nr_idle_scan` CPUs, which the periodic balance of the LLC domain sets from its
    /// summed `util_avg` (`update_idle_cpu_scan()`): none from 85 % (1 / 1.17) up.
    SisUtil,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum GroupSignals {
    /// v2.6.32 `find_idlest_group()` / `find_idlest_cpu()`: `weighted_cpuload()` =
    /// `rq->load.weight`, the weights of the tasks on the run queue now (no history).
    RqWeight,
    /// v3.13 `find_idlest_group()`: `source_load()` / `target_load()` with `forkexec_idx` 0,
    /// i.e. `weighted_cpuload()` (`runnable_load_avg`), per CPU of group power.
    RunnableLoadAvg,
    /// v6.13 `update_sg_wakeup_stats()`: `cpu_load_without()`, `cpu_util_without()`,
    /// `cpu_runnable_without()` (sleepers' decaying values included), read by
    /// `group_classify()` and `update_pick_idlest()`.
    LoadUtilRunnable,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum PeltForm {
    /// v2.6.32: no per-entity averages (they arrived in v3.8); a CPU's load is its queued
    /// tasks' weights (`rq->load.weight`) and the `cpu_load[]` decay of it. The engine still
    /// keeps v3.13's averages as bookkeeping; no v2.6.32 decision reads them (`CpuLoad::RqWeight`,
    /// `GroupSignals::RqWeight`).
    None,
    /// v3.8-v4.2 `kernel/sched/fair.c`: `runnable_avg_sum` / `runnable_avg_period` per task,
    /// `load_avg_contrib` from their ratio (`__update_entity_runnable_avg()`).
    RunnableAvgSum,
    /// v4.3+ (`kernel/sched/pelt.c` since v4.19): `load_avg`, `runnable_avg` (v5.7+) and
    /// `util_avg` per task and run queue (`___update_load_sum()`).
    LoadRunnableUtil,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum CpuLoad {
    /// v2.6.32 `wake_affine()`: `source_load()` / `target_load()` over `weighted_cpuload()`,
    /// i.e. `rq->load.weight` (NICE_0_LOAD per queued task here).
    RqWeight,
    /// v3.13 `weighted_cpuload()`: `cfs_rq->runnable_load_avg`, the tasks on the run queue.
    RunnableLoadAvg,
    /// v6.13 `cpu_load()`: `cfs_rq->avg.load_avg`, sleeping tasks' decaying load included.
    LoadAvgWithBlocked,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum IdleSibling {
    /// v3.13: down to the target's SMT domain: an idle thread of the target's own core.
    TargetCoreSibling,
    /// v6.13 `select_idle_cpu()`: the first idle CPU of the LLC after the target.
    FirstIdleInLlc,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum WakeOrder {
    /// v2.6.32 `kernel/sched_fair.c: select_task_rq_fair()`: walking up from the waker's CPU,
    /// the first `SD_WAKE_AFFINE` domain with a candidate decides. The candidate is the waker's
    /// CPU when the domain spans `prev_cpu`; in an `SD_PREFER_SIBLING` domain (MC) it is
    /// `prev_cpu` when that has no CFS task, else (or when `prev_cpu` is outside the span) the
    /// first allowed CPU of the span with none. `wake_affine()`, on the waker's CPU against
    /// `prev_cpu`, takes the candidate or keeps `prev_cpu`; no `select_idle_sibling()` follows.
    CandidateThenAffine,
    /// Later releases (3.13, 6.13; the 2.6.32.69 stable tree has it too): `wake_affine()` in
    /// the lowest `SD_WAKE_AFFINE` domain spanning `prev_cpu` picks the waker's CPU or
    /// `prev_cpu`, then `select_idle_sibling()` searches around that target (`idle_sibling`).
    AffineThenIdleSibling,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum NohzIdle {
    /// v2.6.32 `kernel/sched.c`: one idle CPU keeps its tick as the idle load balancer
    /// (`select_nohz_load_balancer()`) and runs `rebalance_domains()` for every tickless idle
    /// CPU (`run_rebalance_domains()`) until every CPU is idle: idle CPUs are balanced while
    /// any CPU is busy.
    OwnerWhileAnyBusy,
    /// v3.13 `kernel/sched/fair.c: nohz_kick_needed()`, v6.13 `nohz_balancer_kick()`: a busy
    /// CPU's tick kicks an idle CPU (`kick_ilb()`) to balance every idle CPU that is due
    /// (`_nohz_idle_balance()`) only when it runs two tasks or more (`rq->nr_running >= 2`) or
    /// its LLC has more than one busy CPU (`nr_busy_cpus > 1`; 3.13: the `sd_busy` group, the
    /// LLC); otherwise no idle CPU is balanced.
    KickWhenOverloadedOrLlcBusy,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum BusyInterval {
    /// `msecs_to_jiffies(balance_interval x busy_factor)`, at least one jiffy (v2.6.32
    /// `rebalance_domains()` in `kernel/sched.c`, v3.13 `rebalance_domains()`).
    Scaled,
    /// v6.1, v6.13 `get_sd_balance_interval()`: the same less one jiffy on a busy CPU, "to
    /// reduce likelihood of busy balancing at higher domains racing with balancing at lower
    /// domains by preventing their balancing periods from being multiples of each other".
    ScaledLessOneJiffy,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum TtwuQueue {
    /// v2.6.32 `kernel/sched.c: try_to_wake_up()`: the waker enqueues the task itself (the
    /// remote wake list came with v3.0).
    Absent,
    /// v3.13 `kernel/sched/core.c: ttwu_queue()`: "if (sched_feat(TTWU_QUEUE) &&
    /// !cpus_share_cache(smp_processor_id(), cpu))" the task goes on the target's wake list.
    CrossLlc,
    /// v6.1, v6.13 `ttwu_queue_cond()` (since v6.0's "Remove the limitation of WF_ON_CPU on
    /// wakelist if wakee cpu is idle"): across LLCs, and inside one to another CPU whose run
    /// queue is empty ("if (!cpu_rq(cpu)->nr_running) return true;").
    CrossLlcOrIdle,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum NewidleGate {
    /// Every newly idle CPU balances, lowest level first (the model's rule for v2.6.32 and
    /// v3.13, whose `idle_balance()` gates were not checked).
    Always,
    /// v6.1 `newidle_balance()`, v6.13 `sched_balance_newidle()` (since v5.16's "Remove
    /// sysctl_sched_migration_cost condition"): no balancing when `rq->avg_idle <
    /// sd->max_newidle_lb_cost` of the lowest domain, and per level a stop when `avg_idle <
    /// curr_cost + sd->max_newidle_lb_cost`. `rq->avg_idle` is `update_avg()` (1/8 of each
    /// new sample) of the CPU's idle spells, measured at its wake-up (`kernel/sched/core.c:
    /// ttwu_do_wakeup()`), capped at `2 x rq->max_idle_balance_cost`, from `2 x
    /// sysctl_sched_migration_cost` (`sched_init()`).
    AvgIdleAboveCost,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum BusiestGroup {
    /// v3.13 `update_sd_pick_busiest()`: the highest average load among groups above their
    /// `sg_capacity()`; v3.13 `calculate_imbalance()`.
    Capacity,
    /// v2.6.32 `kernel/sched.c: update_sd_lb_stats()`, `find_busiest_group()`,
    /// `calculate_imbalance()`: the same pick with every group's capacity lowered to one under a
    /// child's `SD_PREFER_SIBLING`, no newly-idle force, and `max_pull` bounded by the busiest
    /// group's load above one task (`lb_stats::busiest_2632`).
    CapacityPerTaskPull,
    /// v6.6+ group types (has spare, fully busy, overloaded) and the rewritten
    /// `calculate_imbalance()`; with `SD_PREFER_SIBLING` (or single-CPU groups) the task
    /// difference of `sibling_imbalance()` (v6.6): 0 toward a busy destination, normalised by
    /// the groups' cores; a fully busy group replaces an earlier one of equal `avg_load`.
    GroupType,
    /// v5.5-v6.5: the same group types, but prefer-sibling spreading forces a balance when
    /// `busiest->sum_nr_running > local->sum_nr_running + 1` and moves half the plain
    /// difference (`calculate_imbalance()`: `nr_diff`), whatever the destination's state; a
    /// fully busy group replaces an earlier one only with a strictly higher `avg_load`
    /// (`update_sd_pick_busiest()`).
    GroupTypeTaskDiff,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct McDomain {
    /// `sd->min_interval`, `max_interval` and the initial `balance_interval`.
    pub intervals: DomainIntervals,
    /// `sd->busy_factor`: the interval's multiplier on a busy CPU.
    pub busy_factor: f64,
    /// `sd->imbalance_pct`.
    pub imbalance_pct: f64,
    /// Whether MC's groups carry `SD_PREFER_SIBLING`.
    pub groups_prefer_sibling: PreferSibling,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum DomainIntervals {
    /// v3.13 `include/linux/topology.h: SD_MC_INIT`: fixed min, max and initial
    /// `balance_interval`, in ms.
    Fixed { min_ms: f64, max_ms: f64, initial_ms: f64 },
    /// v6.13 `kernel/sched/topology.c: sd_init()`: min = initial = span weight, max = twice it.
    SpanWeight,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum PreferSibling {
    /// v3.13 `SD_MC_INIT`: no SMT domain below MC carries it.
    Never,
    /// v6.13 `sd_init()`: MC's groups are SMT domains, which carry it when the machine has SMT.
    WithSmt,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct NumaDomain {
    /// Which NUMA levels exist and which of them balance fork, exec and affine wake-ups.
    pub levels: NumaLevels,
    /// `sd->min_interval`, `max_interval` and the initial `balance_interval`.
    pub intervals: DomainIntervals,
    /// `sd->busy_factor`.
    pub busy_factor: f64,
    /// `sd->imbalance_pct`.
    pub imbalance_pct: f64,
    /// `sd->imb_numa_nr`: tasks a node may run before an imbalance counts.
    pub imb_numa_nr: ImbNumaNr,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum NumaLevels {
    /// v2.6.32 `kernel/sched.c: build_sched_domains()`: one `NODE` level (`SD_NODE_INIT`, arch
    /// `include/asm/topology.h`) spanning a node's `SD_NODES_PER_DOMAIN` (16) nearest nodes,
    /// and an `ALLNODES` level above it only with more nodes; both carry `SD_BALANCE_FORK`,
    /// `SD_BALANCE_EXEC` and `SD_WAKE_AFFINE` whatever the distance.
    NodeSpan16,
    /// v3.13+ `sched_init_numa()`: one level per distinct SLIT distance; fork, exec and affine
    /// wake-ups only within `RECLAIM_DISTANCE`.
    PerDistance,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ImbNumaNr {
    /// No `sd->imb_numa_nr` (v3.13 `sd_numa_init()`).
    Unused,
    /// v5.18+ `build_sched_domains()`: set at the LLC's parent, which spans the node (its LLCs,
    /// or node span >> 3 with one LLC, at least 1), scaled up for NUMA levels wider than the
    /// first (`sched/domains.rs`).
    PerLlc,
}

/// Automatic NUMA balancing (`kernel/sched/fair.c`, `mm/mempolicy.c`, `mm/migrate.c`),
/// `crate::numa_balancing` (docs/balancing.md).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NumaBalancingRules {
    /// `env.imbalance_pct = 100 + (sd->imbalance_pct - 100) / 2` (`kernel/sched/fair.c:
    /// task_numa_migrate()`).
    pub imbalance_pct: i64,
    /// `kernel/sched/fair.c: init_numa_balancing()` (4.20+) staggers the first scan of a process's other threads.
    pub stagger_new_threads: bool,
    /// `kernel/sched/fair.c: update_scan_period()` (4.19+) resets the scan period of a task moved across nodes.
    pub reset_scan_on_move: bool,
    /// `mm/mempolicy.c: vma_policy_mof()`, `mpol_misplaced()` (5.12+): `MPOL_BIND |
    /// MPOL_F_NUMA_BALANCING` is migrate-on-fault.
    pub bind_numa_balancing: bool,
    /// `kernel/sched/fair.c: task_tick_numa()`'s test of `runtime - node_stamp > period`.
    pub tick_compare: TickCompare,
    /// The first scan period of a task (`kernel/sched/fair.c: task_numa_work()`,
    /// `task_tick_numa()`).
    pub first_period: FirstPeriod,
    /// The longest scan period (`kernel/sched/fair.c: task_scan_max()`).
    pub scan_max: ScanMax,
    /// `mm/mprotect.c: change_pte_range()` (4.10+): a single-threaded process's pages on its CPU's node stay
    /// unmarked.
    pub skip_local_single_thread: bool,
    /// The filter on the PIDs that faulted in a VMA (`kernel/sched/fair.c: vma_is_accessed()`,
    /// `include/linux/mm.h: vma_set_access_pid_bit()`, 6.4+; `prev_scan_seq`, forced pass, 6.7+).
    pub vma_pid_filter: bool,
    /// The scan budget (`kernel/sched/fair.c: task_numa_work()`).
    pub scan_budget: ScanBudget,
    /// `kernel/sched/fair.c: task_numa_work()` (4.5+): `curr->node_stamp += 32 * diff`, so a task that scanned runs
    /// 32 times as long before its next scan.
    pub scan_cost_defers: bool,
    /// The preferred node (`kernel/sched/fair.c: task_numa_placement()`).
    pub placement: NumaPlacement,
    /// When `kernel/sched/fair.c: task_numa_fault()` calls `task_numa_placement()`.
    pub placement_call: PlacementCall,
    /// `kernel/sched/fair.c: score_nearby_nodes()` (3.19+) in the group weights.
    pub score_nearby: bool,
    /// The scan period's adaptation (`kernel/sched/fair.c: update_task_scan_period()`).
    pub scan_period_adapt: ScanPeriodAdapt,
    /// The retry interval (`kernel/sched/fair.c: numa_migrate_preferred()`).
    pub migrate_retry: MigrateRetry,
    /// Moving a task to its preferred node (`kernel/sched/fair.c: task_numa_migrate()`).
    pub task_migrate: TaskMigrate,
    /// `mm/mempolicy.c: mpol_misplaced()` (5.x): the default policy leaves a page on the faulting CPU's node
    /// before the cpupid exchange.
    pub local_page_stays: bool,
    /// The MORON filter (v3.13 `mm/mempolicy.c: mpol_misplaced()`, v4.19+
    /// `kernel/sched/fair.c: should_numa_migrate_memory()`).
    pub migrate_filter: MigrateFilter,
    /// `mm/migrate.c: numamigrate_update_ratelimit()` (removed in 3.17): 128 MiB per 100 ms per node.
    pub migrate_ratelimit: bool,
    /// `kernel/sched/fair.c: task_numa_fault()` (3.15+): a shared fault inside the group's active nodes is local.
    pub shared_fault_in_active_nodes_local: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum TickCompare {
    /// v3.13: `now - curr->node_stamp > period` in u64 (wraps when node_stamp is ahead).
    Wrapping,
    /// `curr->se.sum_exec_runtime > curr->node_stamp + period`.
    Ahead,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum FirstPeriod {
    /// v3.13: `task_scan_min()`.
    ScanMin,
    /// v4.14+ `task_scan_start()`: scaled up for tasks in groups with shared memory.
    ScanStart,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ScanMax {
    /// v3.13: `scan_period_max_ms` scaled by the process size only.
    Sysctl,
    /// v4.14+: per scan window, scaled by the group's shared faults.
    GroupScaled,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ScanBudget {
    /// v3.13: every chunk counts once any page of the window was marked.
    MarkedPages,
    /// v4.x+: a chunk counts where it marked pages, and the virtual range is capped at 8x.
    ChunksWithVirtualCap,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum NumaPlacement {
    /// v3.13: memory-side faults only; a new preferred node moves the task at once.
    MemoryFaults,
    /// v3.15+: CPU-side faults too (weighted by run time, tracked per task and group), group
    /// active nodes.
    MemoryAndCpuFaults,
}

impl NumaPlacement {
    /// Whether tasks and groups keep CPU-side fault counts (`numa_faults_cpu`).
    pub fn tracks_cpu_faults(self) -> bool {
        match self {
            NumaPlacement::MemoryFaults => false,
            NumaPlacement::MemoryAndCpuFaults => true,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum PlacementCall {
    /// v3.13: on every fault (it acts once per pass), then the retry.
    EveryFault,
    /// v6.x: only when the migrate retry interval has passed.
    AtRetry,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ScanPeriodAdapt {
    /// v3.13 (threshold 3): slow down from 30 % local faults; speed-ups scaled by the private
    /// share.
    LocalityThreshold3,
    /// v4.14+ (threshold 7): private then local ratios; a failed migration doubles the period.
    PrivateOrLocalThreshold7,
}

impl ScanPeriodAdapt {
    /// Whether failed migrations are counted and double the scan period.
    pub fn counts_failed(self) -> bool {
        match self {
            ScanPeriodAdapt::LocalityThreshold3 => false,
            ScanPeriodAdapt::PrivateOrLocalThreshold7 => true,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum MigrateRetry {
    /// v3.13: one second.
    Second,
    /// v4.x+: `min(1 s, numa_scan_period / 16)`.
    PeriodOver16,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum TaskMigrate {
    /// v3.13: the preferred node only if it has spare capacity, else every node where task or
    /// group weight does not drop; the preferred node becomes the last one examined.
    Capacity,
    /// v5.7+: `update_numa_stats()` + `numa_classify()`, `task_numa_compare()` with maymove.
    NodeClassify,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum MigrateFilter {
    /// v3.13: two faults from the same node in a row; shared faults from another node arm
    /// `migrate_deferred`.
    DeferShared,
    /// v4.19+ `should_numa_migrate_memory()`: early-life and group fault rules.
    GroupFaults,
}

/// Transparent huge pages (`mm/mempolicy.c`, `mm/huge_memory.c`), `crate::khugepaged`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ThpRules {
    /// `/sys/kernel/mm/transparent_hugepage/enabled` as the release's distribution kernels
    /// shipped it (`--thp` default, docs/allocation.md §3.2; `mm/huge_memory.c:
    /// hugepage_vma_check()` reads it). Python applies it (`numalab._core.KERNEL_THP_DEFAULTS`).
    pub enabled_default: ThpEnabled,
    /// Where a huge-page fault may look for memory (v3.13 `mm/mempolicy.c: alloc_pages_vma()`,
    /// v6.13 `alloc_pages_mpol()`).
    pub fault: ThpFault,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ThpEnabled {
    /// `CONFIG_TRANSPARENT_HUGEPAGE_ALWAYS`.
    Always,
    /// `CONFIG_TRANSPARENT_HUGEPAGE_MADVISE`.
    Madvise,
}

impl ThpEnabled {
    /// The sysfs spelling (`--thp` value).
    pub fn name(self) -> &'static str {
        match self {
            ThpEnabled::Always => "always",
            ThpEnabled::Madvise => "madvise",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ThpFault {
    /// v3.13 `alloc_pages_vma()`: the zonelist walk, for every huge page.
    Zonelist,
    /// v4.20+ `alloc_pages_vma()` / v6.13 `alloc_pages_mpol()`: the local (or preferred) node
    /// alone without reclaim unless the region is `MADV_HUGEPAGE`; else base pages.
    ThisNodeUnlessMadvised,
}

/// The sysctls a release has (`crate::input::Balancing::check`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SysctlRules {
    /// `kernel.numa_balancing` (3.8+; `kernel/sched/core.c: set_numabalancing_state()`).
    pub numa_balancing: bool,
    /// `kernel.numa_balancing_migrate_deferred` (3.13 only; `kernel/sysctl.c`,
    /// `kernel/sched/fair.c: sysctl_numa_balancing_migrate_deferred`).
    pub migrate_deferred: bool,
    /// `kernel.numa_balancing = 2`, memory tiering (5.18+; `kernel/sched/core.c:
    /// sysctl_numa_balancing()`).
    pub memory_tiering: bool,
    /// `/sys/kernel/mm/numa/demotion_enabled` (5.15+; `mm/memory-tiers.c:
    /// demotion_enabled_store()`).
    pub demotion_enabled: bool,
    /// `/sys/kernel/mm/mempolicy/weighted_interleave/auto` (6.16+; accepted with 6.13, whose
    /// weighted interleave it completes).
    pub weighted_interleave_auto: bool,
}

/// Linux 2.6.32 (RHEL 6, the kernel of study S4): CFS before per-entity load tracking, no
/// automatic NUMA balancing, RHEL 6's THP backport. Rules equal to a later release's reuse its
/// variant; docs/scheduler.md §13 lists what 2.6.32 changes. Each cited function was read in the
/// 2.6.32.9 stable sources (SD_NODE_INIT in 2.6.32.69's, the same).
pub const PROFILE_2_6_32: KernelProfile = KernelProfile {
    name: "2.6.32",
    alloc: AllocRules {
        // mm/page_alloc.c: __alloc_pages_nodemask() calls get_page_from_freelist() with
        // ALLOC_WMARK_LOW, which walks every allowed zone of the zonelist through
        // zone_watermark_ok() (ALLOC_FAIR, the preferred-zone-only fast path, arrived in v3.12).
        // Not modelled: build_zonelists() sets zone_reclaim_mode above RECLAIM_DISTANCE, 20 in
        // 2.6.32 (docs/allocation.md §7.5).
        fast_path: FastPath::Zonelist,
        // mm/page_alloc.c: init_per_zone_wmark_min(): min_free_kbytes clamped to [128, 65536].
        min_free_kbytes_max: 65_536,
        // mm/page_alloc.c: setup_per_zone_wmarks(): low = min + min/4, high = min + min/2.
        watermark_gaps: WatermarkGaps::MinQuarters,
        // mm/page_alloc.c: find_next_best_node(): val *= (MAX_NODE_LOAD*MAX_NUMNODES),
        // MAX_NODE_LOAD = nr_online_nodes; build_zonelists(): node_load[node] = load for the
        // first node of a distance tier, load-- from nr_online_nodes.
        zonelist_tie_break: ZonelistTieBreak::DescendingLoad,
        weighted_interleave: false,
    },
    sched: SchedRules {
        // RHEL 6's configs/kernel-2.6.32-x86_64.config (2.6.32 source package, read in a public
        // mirror): CONFIG_HZ_1000=y, CONFIG_HZ=1000.
        hz: 1000.0,
        // kernel/sched_fair.c: sysctl_sched_latency 5 ms, sysctl_sched_min_granularity 1 ms,
        // sched_nr_latency 5, __sched_period(); kernel/sched.c: update_sysctl() scales both by
        // 1 + ilog2(min(CPUs, 8)).
        slice: TimeSlice::CfsPeriod { latency_s: 5e-3, min_granularity_s: 1e-3 },
        // kernel/sched_fair.c: check_preempt_wakeup(), wakeup_preempt_entity(): vdiff >
        // wakeup_gran(), sysctl_sched_wakeup_granularity 1 ms scaled by update_sysctl().
        wakeup_preempt: WakeupPreempt::Granularity { gran_s: 1e-3 },
        // kernel/sched.c: sched_exec() calls select_task_rq(p, SD_BALANCE_EXEC, 0) while the
        // exec'ing task runs on its CPU (its weight is in rq->load).
        exec_load: ExecLoad::CountsExecer,
        // kernel/sched_fair.c: find_idlest_group(): lowest avg_load; "if (!idlest ||
        // 100*this_load < imbalance*min_load) return NULL", imbalance = 100 + (pct - 100) / 2.
        idlest_group: IdlestGroup::LoadAverage,
        wakee_decay: WakeeDecay::Untracked,
        wake_wide: WakeWide::Absent,
        // kernel/sched_fair.c: wake_affine(): balanced = !this_load || 100*(this_load +
        // effective_load()) <= imbalance*(load + effective_load()), load by source/target_load().
        wake_affine: WakeAffine::LoadBalanced,
        // Not read: 2.6.32 has no select_idle_sibling() (wake_order below).
        idle_sibling: IdleSibling::FirstIdleInLlc,
        recent_used_cpu: false,
        // kernel/sched_fair.c: select_task_rq_fair(): "if (tmp->flags & SD_PREFER_SIBLING)" (MC:
        // include/linux/sched.h sd_balance_for_mc_power()) prev_cpu if it has no CFS task, else
        // the first allowed CPU of the span with none; "if (affine_sd && wake_affine(affine_sd,
        // p, sync)) new_cpu = cpu;" else new_cpu stays prev_cpu (no level has SD_BALANCE_WAKE).
        wake_order: WakeOrder::CandidateThenAffine,
        // kernel/sched.c: select_nohz_load_balancer(), trigger_load_balance(),
        // run_rebalance_domains(): the ilb owner balances the tickless idle CPUs on its tick.
        nohz_idle: NohzIdle::OwnerWhileAnyBusy,
        newidle_gate: NewidleGate::Always,
        ttwu_queue: TtwuQueue::Absent,
        // Not preemptible: RHEL 6's configs/kernel-2.6.32-x86_64.config (2.6.32 source
        // package, read in a public mirror; no registry here serves it) has
        // CONFIG_PREEMPT_VOLUNTARY=y, "# CONFIG_PREEMPT is not set": up to the imbalance.
        newidle_one_task: false,
        // No such flag before v3.16: v2.6.32 kernel/sched.c: idle_balance() reads none.
        rd_overload: false,
        // Before v6.18's proportional newidle balance (upstream 33cf66d88306).
        newidle_random: false,
        // kernel/sched.c: rebalance_domains(): "interval = msecs_to_jiffies(interval)", no
        // busy-CPU correction.
        busy_interval: BusyInterval::Scaled,
        // kernel/sched.c: update_sd_lb_stats(): highest avg_load above group_capacity, which
        // "if (prefer_sibling)" lowers to one; find_busiest_group(), calculate_imbalance():
        // max_pull = min(max_load - avg_load, max_load - busiest_load_per_task).
        busiest_group: BusiestGroup::CapacityPerTaskPull,
        load: LoadRules {
            tracking: PeltForm::None,
            wake_affine: CpuLoad::RqWeight,
            idlest_group: GroupSignals::RqWeight,
            idle_scan: IdleScan::Unlimited,
            // include/linux/topology.h SD_MC_INIT: busy_idx 2 (idle_idx, newidle_idx unset: 0);
            // arch/x86/include/asm/topology.h SD_NODE_INIT: busy_idx 3, idle_idx SD_IDLE_IDX (2
            // on x86-64), newidle_idx 0. wake_idx and forkexec_idx are 0 at both, so wake-ups,
            // fork and exec read weighted_cpuload() itself (the RqWeight rules above).
            balance: BalanceSignals::QueuedWeightIndex {
                mc: LoadIdx { busy: 2, idle: 0, newidle: 0 },
                numa: LoadIdx { busy: 3, idle: 2, newidle: 0 },
            },
            util_est: UtilEst::Off,
        },
        // include/linux/topology.h SD_MC_INIT: min 1, max 4, busy_factor 64, imbalance_pct 125,
        // balance_interval 1.
        mc: McDomain {
            intervals: DomainIntervals::Fixed { min_ms: 1.0, max_ms: 4.0, initial_ms: 1.0 },
            busy_factor: 64.0,
            imbalance_pct: 125.0,
            groups_prefer_sibling: PreferSibling::Never,
        },
        // arch/x86/include/asm/topology.h SD_NODE_INIT: min_interval 8, max_interval 32,
        // busy_factor 32, imbalance_pct 125, cache_nice_tries SD_CACHE_NICE_TRIES (2 on x86-64),
        // balance_interval 1; 1*SD_BALANCE_EXEC, 1*SD_BALANCE_FORK, 0*SD_BALANCE_WAKE,
        // 1*SD_WAKE_AFFINE; kernel/sched.c: sched_domain_node_span() over SD_NODES_PER_DOMAIN.
        numa: NumaDomain {
            levels: NumaLevels::NodeSpan16,
            intervals: DomainIntervals::Fixed { min_ms: 8.0, max_ms: 32.0, initial_ms: 1.0 },
            busy_factor: 32.0,
            imbalance_pct: 125.0,
            imb_numa_nr: ImbNumaNr::Unused,
        },
    },
    // No automatic NUMA balancing in 2.6.32 (sysctls.numa_balancing is false, so a run asking
    // for it is refused); these rules are never read and repeat 3.13's, its first release.
    numab: NumaBalancingRules {
        imbalance_pct: 112,
        stagger_new_threads: false,
        reset_scan_on_move: false,
        bind_numa_balancing: false,
        tick_compare: TickCompare::Wrapping,
        first_period: FirstPeriod::ScanMin,
        scan_max: ScanMax::Sysctl,
        skip_local_single_thread: false,
        vma_pid_filter: false,
        scan_budget: ScanBudget::MarkedPages,
        scan_cost_defers: false,
        placement: NumaPlacement::MemoryFaults,
        placement_call: PlacementCall::EveryFault,
        score_nearby: false,
        scan_period_adapt: ScanPeriodAdapt::LocalityThreshold3,
        migrate_retry: MigrateRetry::Second,
        task_migrate: TaskMigrate::Capacity,
        local_page_stays: false,
        migrate_filter: MigrateFilter::DeferShared,
        migrate_ratelimit: true,
        shared_fault_in_active_nodes_local: false,
    },
    // Upstream 2.6.32 has no THP (mm/huge_memory.c arrived in 2.6.38). RHEL 6 backported it
    // with /sys/kernel/mm/redhat_transparent_hugepage/enabled = always by default, and its
    // huge-page fault walks the zonelist as 2.6.38's alloc_hugepage_vma() -> alloc_pages_vma().
    thp: ThpRules { enabled_default: ThpEnabled::Always, fault: ThpFault::Zonelist },
    sysctls: SysctlRules {
        numa_balancing: false,
        migrate_deferred: false,
        memory_tiering: false,
        demotion_enabled: false,
        weighted_interleave_auto: false,
    },
};

/// Linux 3.13 (Ubuntu 14.04), the kernel of the studies numalab re-runs.
pub const PROFILE_3_13: KernelProfile = KernelProfile {
    name: "3.13",
    alloc: AllocRules {
        fast_path: FastPath::PreferredZoneOnly,
        min_free_kbytes_max: 65_536,
        watermark_gaps: WatermarkGaps::MinQuarters,
        zonelist_tie_break: ZonelistTieBreak::DescendingLoad,
        weighted_interleave: false,
    },
    sched: SchedRules {
        // Ubuntu 14.04's debian.master/config/amd64/config.flavour.generic (3.13.0): CONFIG_HZ=250.
        hz: 250.0,
        // kernel/sched/fair.c: sysctl_sched_latency 6 ms, sysctl_sched_min_granularity 0.75 ms,
        // scaled by update_sysctl().
        slice: TimeSlice::CfsPeriod { latency_s: 6e-3, min_granularity_s: 0.75e-3 },
        // kernel/sched/fair.c: check_preempt_wakeup(), wakeup_preempt_entity(): vdiff >
        // wakeup_gran(), sysctl_sched_wakeup_granularity 1 ms scaled by update_sysctl().
        wakeup_preempt: WakeupPreempt::Granularity { gran_s: 1e-3 },
        exec_load: ExecLoad::CountsExecer,
        idlest_group: IdlestGroup::LoadAverage,
        wakee_decay: WakeeDecay::Reset,
        wake_wide: WakeWide::WakeeAboveFactor,
        wake_affine: WakeAffine::LoadBalanced,
        idle_sibling: IdleSibling::TargetCoreSibling,
        // kernel/sched/fair.c: select_idle_sibling() (v3.13): no recent_used_cpu.
        recent_used_cpu: false,
        wake_order: WakeOrder::AffineThenIdleSibling,
        // kernel/sched/fair.c: nohz_kick_needed(): "if (rq->nr_running >= 2) goto need_kick";
        // sd_busy's nr_busy_cpus > 1.
        nohz_idle: NohzIdle::KickWhenOverloadedOrLlcBusy,
        newidle_gate: NewidleGate::Always,
        ttwu_queue: TtwuQueue::CrossLlc,
        // Not preemptible: Ubuntu 14.04's 3.13.0 debian.master/config/amd64/
        // config.flavour.generic (read in a public mirror; no registry here serves it) has
        // CONFIG_PREEMPT_VOLUNTARY=y, "# CONFIG_PREEMPT is not set" (only the lowlatency
        // flavour sets it; PREEMPT_DYNAMIC came in v5.12): up to the imbalance.
        newidle_one_task: false,
        // No such flag: v3.13 kernel/sched/fair.c: idle_balance() returns only when
        // "this_rq->avg_idle < sysctl_sched_migration_cost" (rd->overload came with v3.16).
        rd_overload: false,
        // Before v6.18's proportional newidle balance (upstream 33cf66d88306).
        newidle_random: false,
        // kernel/sched/fair.c: rebalance_domains(): "interval = msecs_to_jiffies(interval)", no
        // busy-CPU correction.
        busy_interval: BusyInterval::Scaled,
        busiest_group: BusiestGroup::Capacity,
        load: LoadRules {
            tracking: PeltForm::RunnableAvgSum,
            wake_affine: CpuLoad::RunnableLoadAvg,
            idlest_group: GroupSignals::RunnableLoadAvg,
            idle_scan: IdleScan::Unlimited,
            // include/linux/topology.h SD_MC_INIT: busy_idx 2 (idle_idx, newidle_idx unset: 0);
            // kernel/sched/core.c sd_numa_init(): busy_idx 3, idle_idx 2, newidle_idx 0.
            balance: BalanceSignals::CpuLoadIndex {
                mc: LoadIdx { busy: 2, idle: 0, newidle: 0 },
                numa: LoadIdx { busy: 3, idle: 2, newidle: 0 },
            },
            util_est: UtilEst::Off,
        },
        // include/linux/topology.h SD_MC_INIT: min 1, max 4, busy_factor 64, imbalance_pct 125,
        // balance_interval 1.
        mc: McDomain {
            intervals: DomainIntervals::Fixed { min_ms: 1.0, max_ms: 4.0, initial_ms: 1.0 },
            busy_factor: 64.0,
            imbalance_pct: 125.0,
            groups_prefer_sibling: PreferSibling::Never,
        },
        // kernel/sched/core.c sd_numa_init(): busy_factor 32, imbalance_pct 125.
        numa: NumaDomain {
            levels: NumaLevels::PerDistance,
            intervals: DomainIntervals::SpanWeight,
            busy_factor: 32.0,
            imbalance_pct: 125.0,
            imb_numa_nr: ImbNumaNr::Unused,
        },
    },
    numab: NumaBalancingRules {
        imbalance_pct: 112,
        stagger_new_threads: false,
        reset_scan_on_move: false,
        bind_numa_balancing: false,
        tick_compare: TickCompare::Wrapping,
        first_period: FirstPeriod::ScanMin,
        scan_max: ScanMax::Sysctl,
        skip_local_single_thread: false,
        vma_pid_filter: false,
        scan_budget: ScanBudget::MarkedPages,
        scan_cost_defers: false,
        placement: NumaPlacement::MemoryFaults,
        placement_call: PlacementCall::EveryFault,
        score_nearby: false,
        scan_period_adapt: ScanPeriodAdapt::LocalityThreshold3,
        migrate_retry: MigrateRetry::Second,
        task_migrate: TaskMigrate::Capacity,
        local_page_stays: false,
        migrate_filter: MigrateFilter::DeferShared,
        migrate_ratelimit: true,
        shared_fault_in_active_nodes_local: false,
    },
    // Ubuntu 14.04 and RHEL 7 shipped CONFIG_TRANSPARENT_HUGEPAGE_ALWAYS.
    thp: ThpRules { enabled_default: ThpEnabled::Always, fault: ThpFault::Zonelist },
    sysctls: SysctlRules {
        numa_balancing: true,
        migrate_deferred: true,
        memory_tiering: false,
        demotion_enabled: false,
        weighted_interleave_auto: false,
    },
};

/// Linux 6.1 (Debian 12 "bookworm", the guest kernel of `numalab vm`): CFS before EEVDF, the
/// v5.5 load balancer before v6.6's `sibling_imbalance()`, NUMA balancing before the per-VMA
/// filters of v6.4, Debian's THP default. Rules equal to 6.13's reuse its variants; each was
/// checked in the v6.1.20 and v6.1.158 stable sources (Debian's 6.1.0-56 is 6.1.192) against
/// v6.13.7; docs/scheduler.md §14 lists what 6.1 changes.
pub const PROFILE_6_1: KernelProfile = KernelProfile {
    name: "6.1",
    alloc: AllocRules {
        fast_path: FastPath::Zonelist,
        // mm/page_alloc.c: calculate_min_free_kbytes(): clamp(new_min_free_kbytes, 128, 262144).
        min_free_kbytes_max: 262_144,
        // mm/page_alloc.c: watermark_scale_factor = 10.
        watermark_gaps: WatermarkGaps::ScaleFactor { per_10k: 10 },
        // mm/page_alloc.c: find_next_best_node(): val *= MAX_NUMNODES; build_zonelists():
        // node_load[node] += 1.
        zonelist_tie_break: ZonelistTieBreak::IncrementLoad,
        // include/uapi/linux/mempolicy.h: no MPOL_WEIGHTED_INTERLEAVE (MPOL_PREFERRED_MANY is
        // the last mode).
        weighted_interleave: false,
    },
    sched: SchedRules {
        // The guest's Debian 6.1 /boot/config and kernel/Kconfig.hz's default: CONFIG_HZ_250=y.
        hz: 250.0,
        // kernel/sched/fair.c: sched_slice() over __sched_period() (EEVDF replaced it in v6.6):
        // normalized_sysctl_sched_latency 6 ms, normalized_sysctl_sched_min_granularity 0.75 ms,
        // sched_nr_latency 8, scaled by update_sysctl(); check_preempt_tick() reschedules once
        // the slice is used up.
        slice: TimeSlice::CfsPeriod { latency_s: 6e-3, min_granularity_s: 0.75e-3 },
        // kernel/sched/fair.c: check_preempt_wakeup(), wakeup_preempt_entity(): vdiff >
        // wakeup_gran(), normalized_sysctl_sched_wakeup_granularity 1 ms scaled by
        // update_sysctl(); pick_next_entity() takes the leftmost vruntime (NEXT_BUDDY off,
        // kernel/sched/features.h).
        wakeup_preempt: WakeupPreempt::Granularity { gran_s: 1e-3 },
        // kernel/sched/fair.c: update_sg_wakeup_stats(): cpu_load_without(),
        // cpu_util_without(), idle_cpu_without() (as v6.13).
        exec_load: ExecLoad::DiscountsExecer,
        // kernel/sched/fair.c: find_idlest_group(), update_pick_idlest() (as v6.13 without
        // group_smt_balance), adjust_numa_imbalance() with sd->imb_numa_nr.
        idlest_group: IdlestGroup::GroupType,
        // kernel/sched/fair.c: record_wakee(): "current->wakee_flips >>= 1".
        wakee_decay: WakeeDecay::Halve,
        wake_wide: WakeWide::MasterSlave,
        // kernel/sched/fair.c: wake_affine(): wake_affine_idle(), then wake_affine_weight().
        wake_affine: WakeAffine::IdleThenWeight,
        // kernel/sched/fair.c: select_idle_cpu(): for_each_cpu_wrap() from target + 1 (no
        // SD_CLUSTER level on the x86 machines modelled).
        idle_sibling: IdleSibling::FirstIdleInLlc,
        // kernel/sched/fair.c: select_idle_sibling(): "recent_used_cpu = p->recent_used_cpu;
        // p->recent_used_cpu = prev;".
        recent_used_cpu: true,
        wake_order: WakeOrder::AffineThenIdleSibling,
        // kernel/sched/fair.c: nohz_balancer_kick() (as v6.13).
        nohz_idle: NohzIdle::KickWhenOverloadedOrLlcBusy,
        // kernel/sched/fair.c: newidle_balance(): "this_rq->avg_idle < sd->max_newidle_lb_cost",
        // then per domain "this_rq->avg_idle < curr_cost + sd->max_newidle_lb_cost".
        newidle_gate: NewidleGate::AvgIdleAboveCost,
        ttwu_queue: TtwuQueue::CrossLlcOrIdle,
        // Debian 12's linux-image-6.1.0-56-amd64 (numalab vm's guest) /boot/config:
        // CONFIG_PREEMPT_DYNAMIC=y selects PREEMPT_BUILD, so CONFIG_PREEMPTION=y.
        newidle_one_task: true,
        // kernel/sched/fair.c: newidle_balance(): "if (!READ_ONCE(this_rq->rd->overload) ||";
        // kernel/sched/sched.h: add_nr_running(): "if (prev_nr < 2 && rq->nr_running >= 2)".
        rd_overload: true,
        // The guest's Debian 6.1.192 (linux-image-6.1.0-56-amd64) carries the 6.1 stable
        // backport of upstream 33cf66d88306 ("[PATCH 6.1 617/634] sched/fair: Proportional
        // newidle balance", 2026-01-09): kernel/sched/features.h "SCHED_FEAT(NI_RANDOM, true)"
        // (the string NI_RANDOM is in its vmlinux), kernel/sched/fair.c:
        // sched_balance_newidle() "u32 d1k = sched_rng() % 1024; weight = 1 +
        // sd->newidle_ratio; if (d1k > weight) { update_newidle_stats(sd, 0); continue; }".
        newidle_random: true,
        // kernel/sched/fair.c: get_sd_balance_interval(): "if (cpu_busy) interval -= 1;".
        busy_interval: BusyInterval::ScaledLessOneJiffy,
        // kernel/sched/fair.c: find_busiest_group(): "sds.prefer_sibling && local->group_type ==
        // group_has_spare && busiest->sum_nr_running > local->sum_nr_running + 1" (v6.6's
        // sibling_imbalance() is absent); calculate_imbalance(): nr_diff = busiest's
        // sum_nr_running - local's; update_sd_pick_busiest(): group_fully_busy "if
        // (sgs->avg_load <= busiest->avg_load) return false". The v6.5 check "local->avg_load
        // >= sds->avg_load" is in 6.1.158's calculate_imbalance() (stable backport).
        busiest_group: BusiestGroup::GroupTypeTaskDiff,
        load: LoadRules {
            // kernel/sched/pelt.c: ___update_load_sum(), load_avg / runnable_avg / util_avg.
            tracking: PeltForm::LoadRunnableUtil,
            // kernel/sched/fair.c: wake_affine_weight(): cpu_load().
            wake_affine: CpuLoad::LoadAvgWithBlocked,
            idlest_group: GroupSignals::LoadUtilRunnable,
            // kernel/sched/features.h: SIS_UTIL true, SIS_PROP false (v6.0);
            // kernel/sched/fair.c: update_idle_cpu_scan().
            idle_scan: IdleScan::SisUtil,
            // kernel/sched/fair.c: update_sg_lb_stats(): cpu_load(), cpu_util_cfs(),
            // cpu_runnable().
            balance: BalanceSignals::LoadUtilRunnable,
            // kernel/sched/features.h: SCHED_FEAT(UTIL_EST, true), SCHED_FEAT(UTIL_EST_FASTUP, true);
            // kernel/sched/sched.h: cpu_util_cfs() "max_t(unsigned long, util,
            // READ_ONCE(cfs_rq->avg.util_est.enqueued))"; detach_tasks(): task_util_est(p).
            util_est: UtilEst::EnqueuedEwma,
        },
        // kernel/sched/topology.c sd_init(): min_interval sd_weight, max 2*sd_weight,
        // busy_factor 16, imbalance_pct 117 (SD_SHARE_PKG_RESOURCES), balance_interval sd_weight.
        mc: McDomain {
            intervals: DomainIntervals::SpanWeight,
            busy_factor: 16.0,
            imbalance_pct: 117.0,
            groups_prefer_sibling: PreferSibling::WithSmt,
        },
        // sd_init(); build_sched_domains(): sd->imb_numa_nr from the LLCs per node (v5.18).
        numa: NumaDomain {
            levels: NumaLevels::PerDistance,
            intervals: DomainIntervals::SpanWeight,
            busy_factor: 16.0,
            imbalance_pct: 117.0,
            imb_numa_nr: ImbNumaNr::PerLlc,
        },
    },
    // kernel/sched/fair.c: task_numa_fault(), task_numa_placement(), numa_migrate_preferred(),
    // task_numa_migrate(), update_task_scan_period(), task_scan_start(), task_scan_max(),
    // task_tick_numa(), init_numa_balancing() are as in v6.13; task_numa_work() lacks the
    // per-VMA state (vma->numab_state, vma_is_accessed(), v6.4-v6.7).
    numab: NumaBalancingRules {
        imbalance_pct: 108,
        stagger_new_threads: true,
        reset_scan_on_move: true,
        bind_numa_balancing: true,
        tick_compare: TickCompare::Ahead,
        first_period: FirstPeriod::ScanStart,
        scan_max: ScanMax::GroupScaled,
        skip_local_single_thread: true,
        // kernel/sched/fair.c: task_numa_work() scans every suitable VMA each pass.
        vma_pid_filter: false,
        scan_budget: ScanBudget::ChunksWithVirtualCap,
        scan_cost_defers: true,
        placement: NumaPlacement::MemoryAndCpuFaults,
        placement_call: PlacementCall::AtRetry,
        score_nearby: true,
        scan_period_adapt: ScanPeriodAdapt::PrivateOrLocalThreshold7,
        migrate_retry: MigrateRetry::PeriodOver16,
        task_migrate: TaskMigrate::NodeClassify,
        local_page_stays: true,
        // kernel/sched/fair.c: should_numa_migrate_memory() (with memory tiering's
        // numa_hint_fault_latency() and numa_promotion_rate_limit(), as v6.13).
        migrate_filter: MigrateFilter::GroupFaults,
        migrate_ratelimit: false,
        shared_fault_in_active_nodes_local: true,
    },
    // Debian's linux-image-6.1.0-56-amd64 config: CONFIG_TRANSPARENT_HUGEPAGE_ALWAYS=y.
    // mm/mempolicy.c: vma_alloc_folio(): the local (preferred) node with __GFP_THISNODE |
    // __GFP_NORETRY, then the zonelist only "if (gfp & __GFP_DIRECT_RECLAIM)" (madvised).
    thp: ThpRules { enabled_default: ThpEnabled::Always, fault: ThpFault::ThisNodeUnlessMadvised },
    sysctls: SysctlRules {
        numa_balancing: true,
        migrate_deferred: false,
        // kernel/sched/core.c: sysctl_numa_balancing() accepts NUMA_BALANCING_MEMORY_TIERING;
        // kernel/sched/fair.c: sysctl_numa_balancing_hot_threshold, _promote_rate_limit.
        memory_tiering: true,
        // mm/memory-tiers.c: numa_demotion_enabled_store().
        demotion_enabled: true,
        // No mm/mempolicy.c weighted interleave (v6.9) nor its auto mode (v6.16).
        weighted_interleave_auto: false,
    },
};

/// Linux 6.13.
pub const PROFILE_6_13: KernelProfile = KernelProfile {
    name: "6.13",
    alloc: AllocRules {
        fast_path: FastPath::Zonelist,
        min_free_kbytes_max: 262_144,
        watermark_gaps: WatermarkGaps::ScaleFactor { per_10k: 10 },
        zonelist_tie_break: ZonelistTieBreak::IncrementLoad,
        weighted_interleave: true,
    },
    sched: SchedRules {
        // Debian's linux-config-6.12 (config.amd64_none_amd64) and kernel/Kconfig.hz's default:
        // CONFIG_HZ_250=y.
        hz: 250.0,
        // kernel/sched/fair.c: sysctl_sched_base_slice 0.75 ms, scaled by update_sysctl().
        slice: TimeSlice::Base { slice_s: 0.75e-3 },
        // kernel/sched/fair.c: check_preempt_wakeup_fair() preempts only when pick_eevdf()
        // returns the wakee, and pick_eevdf() returns an eligible curr whose slice is protected
        // (RUN_TO_PARITY, on in kernel/sched/features.h) until update_deadline() renews it.
        wakeup_preempt: WakeupPreempt::RunToParity,
        exec_load: ExecLoad::DiscountsExecer,
        idlest_group: IdlestGroup::GroupType,
        wakee_decay: WakeeDecay::Halve,
        wake_wide: WakeWide::MasterSlave,
        wake_affine: WakeAffine::IdleThenWeight,
        idle_sibling: IdleSibling::FirstIdleInLlc,
        // kernel/sched/fair.c: select_idle_sibling(): "recent_used_cpu = p->recent_used_cpu;
        // p->recent_used_cpu = prev;", taken if idle, in the target's LLC and allowed.
        recent_used_cpu: true,
        wake_order: WakeOrder::AffineThenIdleSibling,
        // kernel/sched/fair.c: nohz_balancer_kick(): rq->nr_running >= 2, or the LLC's
        // sd_llc_shared->nr_busy_cpus > 1 (no capacity pressure, misfit or asym packing here).
        nohz_idle: NohzIdle::KickWhenOverloadedOrLlcBusy,
        // kernel/sched/fair.c: sched_balance_newidle(): as v6.1's newidle_balance().
        newidle_gate: NewidleGate::AvgIdleAboveCost,
        ttwu_queue: TtwuQueue::CrossLlcOrIdle,
        // A preemptible build. v6.13.7 kernel/Kconfig.preempt: PREEMPT_DYNAMIC "select
        // PREEMPT_BUILD", "default y if HAVE_PREEMPT_DYNAMIC_CALL" (arch/x86/Kconfig selects
        // it), and PREEMPT_BUILD "select PREEMPTION". Debian's 6.12 amd64 configs
        // (linux-config-6.12 6.12.117-1 and 6.12.95-1~bpo12+1, config.amd64_none_amd64.xz):
        // CONFIG_PREEMPT_DYNAMIC=y, CONFIG_PREEMPTION=y (voluntary by default, the #ifdef
        // compiled in). Ubuntu's config was not reachable (docs/scheduler.md §14.1).
        newidle_one_task: true,
        // kernel/sched/fair.c: sched_balance_newidle(): "if (!get_rd_overloaded(this_rq->rd) ||";
        // kernel/sched/sched.h: add_nr_running(): set_rd_overloaded(rq->rd, SG_OVERLOAD).
        rd_overload: true,
        // v6.13.7 has no NI_RANDOM: upstream 33cf66d88306 came in v6.18, and 6.13 stable had
        // ended (6.12 stable took it from 6.12.65, so Debian's later 6.12 builds differ here).
        newidle_random: false,
        // kernel/sched/fair.c: get_sd_balance_interval(): "if (cpu_busy) interval -= 1;".
        busy_interval: BusyInterval::ScaledLessOneJiffy,
        busiest_group: BusiestGroup::GroupType,
        load: LoadRules {
            tracking: PeltForm::LoadRunnableUtil,
            wake_affine: CpuLoad::LoadAvgWithBlocked,
            idlest_group: GroupSignals::LoadUtilRunnable,
            idle_scan: IdleScan::SisUtil,
            balance: BalanceSignals::LoadUtilRunnable,
            // kernel/sched/features.h: SCHED_FEAT(UTIL_EST, true); kernel/sched/fair.c: cpu_util()
            // "util = max(util, util_est)", util_est_update(), detach_tasks(): task_util_est(p).
            util_est: UtilEst::Ewma,
        },
        // kernel/sched/topology.c sd_init(): min_interval = sd_weight, max = 2*sd_weight,
        // busy_factor 16, imbalance_pct 117 (SD_SHARE_LLC), balance_interval = sd_weight.
        mc: McDomain {
            intervals: DomainIntervals::SpanWeight,
            busy_factor: 16.0,
            imbalance_pct: 117.0,
            groups_prefer_sibling: PreferSibling::WithSmt,
        },
        // sd_init(): busy_factor 16, imbalance_pct 117; imb_numa_nr from build_sched_domains().
        numa: NumaDomain {
            levels: NumaLevels::PerDistance,
            intervals: DomainIntervals::SpanWeight,
            busy_factor: 16.0,
            imbalance_pct: 117.0,
            imb_numa_nr: ImbNumaNr::PerLlc,
        },
    },
    numab: NumaBalancingRules {
        imbalance_pct: 108,
        stagger_new_threads: true,
        reset_scan_on_move: true,
        bind_numa_balancing: true,
        tick_compare: TickCompare::Ahead,
        first_period: FirstPeriod::ScanStart,
        scan_max: ScanMax::GroupScaled,
        skip_local_single_thread: true,
        vma_pid_filter: true,
        scan_budget: ScanBudget::ChunksWithVirtualCap,
        scan_cost_defers: true,
        placement: NumaPlacement::MemoryAndCpuFaults,
        placement_call: PlacementCall::AtRetry,
        score_nearby: true,
        scan_period_adapt: ScanPeriodAdapt::PrivateOrLocalThreshold7,
        migrate_retry: MigrateRetry::PeriodOver16,
        task_migrate: TaskMigrate::NodeClassify,
        local_page_stays: true,
        migrate_filter: MigrateFilter::GroupFaults,
        migrate_ratelimit: false,
        shared_fault_in_active_nodes_local: true,
    },
    // Ubuntu since 18.04: CONFIG_TRANSPARENT_HUGEPAGE_MADVISE (Launchpad bug 1703742).
    thp: ThpRules { enabled_default: ThpEnabled::Madvise, fault: ThpFault::ThisNodeUnlessMadvised },
    sysctls: SysctlRules {
        numa_balancing: true,
        migrate_deferred: false,
        memory_tiering: true,
        demotion_enabled: true,
        weighted_interleave_auto: true,
    },
};
