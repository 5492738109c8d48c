//! What a run is made of, as plain resolved data (the Python layer resolves descriptors, units and
//! node strings; the engine re-checks only the invariants it depends on).

use serde::{Deserialize, Serialize};

use numalab_model::{CpuSet, MemPolicy};

use crate::error::SimError;
use crate::profile::SysctlRules;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pattern {
    Block,
    Stencil,
    Transpose,
    Shared,
    Master,
    Private,
    Dynamic,
    Gather,
    Scatter,
}

impl Pattern {
    pub fn is_random(self) -> bool {
        matches!(self, Pattern::Gather | Pattern::Scatter)
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccessSpec {
    pub region: usize,
    pub pattern: Pattern,
    /// DRAM bytes read per region byte swept (random patterns: per 64-byte line).
    pub rd: f64,
    pub wr: f64,
    #[serde(default = "one_u64")]
    pub halo: u64,
    #[serde(default = "one_u64")]
    pub chunk: u64,
    /// Static splits (`block`, `private`, `stencil`): units per plane the schedule divides, as an
    /// OpenMP `collapse(2)` over (plane, row) splits `planes x rows` iterations; 1 = whole planes
    /// (docs/workloads.md §2).
    #[serde(default = "one_u64")]
    pub rows: u64,
    /// Random patterns: 64-byte lines per thread per phase execution.
    #[serde(default)]
    pub count: u64,
    #[serde(default = "one_f64")]
    pub passes: f64,
    /// Traffic when the access's re-use hits in cache, and its re-use window (docs/contention.md
    /// §4.1); `None`: `rd`/`wr` are the traffic whatever the caches.
    #[serde(default)]
    pub cached: Option<Cached>,
}

impl AccessSpec {
    /// One sweep of `region` by `pattern`, every other field as a workload file that omits it
    /// gets it (the serde defaults above).
    pub fn sweep(region: usize, pattern: Pattern, rd: f64, wr: f64) -> Self {
        AccessSpec { region, pattern, rd, wr, halo: 1, chunk: 1, rows: 1, count: 0, passes: 1.0, cached: None }
    }
}

/// The cached side of an access (`crate::cache`): DRAM bytes per byte swept when the re-use
/// hits, and the bytes touched between two uses of a line, per thread or (`shared`) by all the
/// process's threads under one last-level cache.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cached {
    #[serde(default)]
    pub rd: f64,
    #[serde(default)]
    pub wr: f64,
    pub window_bytes: f64,
    #[serde(default)]
    pub shared: bool,
}

fn one_u64() -> u64 {
    1
}
fn one_f64() -> f64 {
    1.0
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Sync {
    Barrier,
    None,
    Pipeline,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PhaseSpec {
    pub name: String,
    /// Compute cycles of the phase over all threads of a process.
    pub cycles: f64,
    /// Outstanding misses per thread; `None` = the core's.
    pub mlp: Option<f64>,
    /// Dependent floating-point adds on the phase's loop-carried chain (a reduction's
    /// accumulator), over all threads; 0 = no such chain (docs/contention.md §4).
    #[serde(default)]
    pub chain: f64,
    pub sync: Sync,
    #[serde(default = "one_u64")]
    pub pipeline_steps: u64,
    pub accesses: Vec<AccessSpec>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegionSpec {
    pub name: String,
    pub bytes: u64,
    pub planes: u64,
    #[serde(default)]
    pub thp: bool,
    /// Per-region policy, as `mbind` would install it.
    #[serde(default)]
    pub policy: Option<MemPolicy>,
    /// Virtual start address; `None` = placed by the engine's mmap layout.
    #[serde(default)]
    pub address: Option<u64>,
    /// How the program allocates it (docs/allocation.md §3.5); `None`: untouched until its
    /// first write, as a static array.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alloc: Option<AllocSpec>,
    /// A file mapping (`mmap` of a file): its pages come from the page cache, filled around each
    /// fault by read-around (docs/allocation.md §3.6); `None`: anonymous memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<FileSpec>,
}

impl RegionSpec {
    /// Anonymous memory of `bytes` in `planes` planes, under the process's policy, 4 KiB pages,
    /// first written where the workload says (no allocator, no fixed address).
    pub fn anonymous(name: impl Into<String>, bytes: u64, planes: u64) -> Self {
        RegionSpec {
            name: name.into(),
            bytes,
            planes,
            thp: false,
            policy: None,
            address: None,
            alloc: None,
            file: None,
        }
    }
}

/// How a file mapping is read (`crate::pages::fault_window`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileSpec {
    /// `madvise(MADV_RANDOM)` on the mapping: no read-around, a fault reads its own page.
    #[serde(default)]
    pub random: bool,
}

/// A region's allocation through the C library (`crate::malloc`).
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AllocSpec {
    pub kind: crate::malloc::Kind,
    pub by: crate::malloc::By,
    /// Allocations (one per row, say), of `bytes / chunks` bytes each (rounded up).
    #[serde(default = "one_u64")]
    pub chunks: u64,
    /// Freed before the program's first phase (a scratch buffer): no phase may use it.
    #[serde(default)]
    pub freed: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepSpec {
    pub phases: Vec<usize>,
    pub repeat: u64,
    /// Inside the program's own timer (NPB's `timer_start(T_bench)` .. `timer_stop`): the
    /// program reports the time its main thread spends in timed steps (docs/workloads.md §1.2).
    #[serde(default)]
    pub timed: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WorkloadSpec {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub params: serde_json::Map<String, serde_json::Value>,
    /// Identical processes (multi-copy runs); each has `threads` threads and its own regions.
    #[serde(default = "one_u32")]
    pub processes: u32,
    pub threads: u32,
    pub regions: Vec<RegionSpec>,
    pub phases: Vec<PhaseSpec>,
    pub program: Vec<StepSpec>,
    /// Instructions of each phase over all threads (the descriptor's `instructions`), `None`
    /// where it does not say: with the core's instruction window they bound the phase's lines in
    /// flight (`numalab_model::Core::lines_in_flight`); empty: none stated.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub instructions: Vec<Option<f64>>,
}

fn one_u32() -> u32 {
    1
}

impl WorkloadSpec {
    /// The program times part of itself (a step is `timed`); otherwise it reports the whole run.
    pub fn has_timer(&self) -> bool {
        self.program.iter().any(|s| s.timed)
    }

    pub fn check(&self) -> Result<(), SimError> {
        let bad = |m: String| Err(SimError::Input(format!("workload {}: {m}", self.name)));
        if self.threads == 0 || self.processes == 0 {
            return bad("threads and processes must be at least 1".into());
        }
        if !self.instructions.is_empty() && self.instructions.len() != self.phases.len() {
            return bad(format!(
                "instructions has {} entries for {} phases",
                self.instructions.len(),
                self.phases.len()
            ));
        }
        if let Some(i) = self.instructions.iter().position(|x| x.is_some_and(|n| !(n >= 0.0 && n.is_finite()))) {
            return bad(format!("phase '{}': instructions must be a finite number >= 0", self.phases[i].name));
        }
        for (i, r) in self.regions.iter().enumerate() {
            if r.bytes == 0 || r.planes == 0 {
                return bad(format!("region '{}' has zero size or zero planes", r.name));
            }
            let Some(a) = &r.alloc else { continue };
            let most = r.bytes.min(crate::malloc::MAX_CHUNKS);
            if a.chunks == 0 || a.chunks > most {
                return bad(format!("region '{}': alloc chunks must be 1..{most}, got {}", r.name, a.chunks));
            }
            if let crate::malloc::By::Thread(t) = a.by {
                if t >= self.threads {
                    return bad(format!(
                        "region '{}' is allocated by thread {t}; threads are 0..{}",
                        r.name,
                        self.threads - 1
                    ));
                }
            }
            if a.freed && self.phases.iter().flat_map(|p| &p.accesses).any(|x| x.region == i) {
                return bad(format!("region '{}' is freed before the program starts, yet a phase uses it", r.name));
            }
        }
        for p in &self.phases {
            for a in &p.accesses {
                if a.region >= self.regions.len() {
                    return bad(format!("phase '{}' uses region #{} which does not exist", p.name, a.region));
                }
                if a.rd < 0.0 || a.wr < 0.0 || a.passes < 0.0 {
                    return bad(format!("phase '{}': rd, wr and passes must be >= 0", p.name));
                }
                if let Some(c) = &a.cached {
                    if ![c.rd, c.wr, c.window_bytes].iter().all(|v| v.is_finite() && *v >= 0.0) {
                        return bad(format!(
                            "phase '{}': cached rd, wr and window_bytes must be finite and >= 0",
                            p.name
                        ));
                    }
                }
            }
            if !(p.chain >= 0.0 && p.chain.is_finite()) {
                return bad(format!("phase '{}': chain must be a finite number >= 0", p.name));
            }
            if p.cycles < 0.0 || p.pipeline_steps == 0 {
                return bad(format!("phase '{}': cycles must be >= 0 and pipeline_steps >= 1", p.name));
            }
        }
        for s in &self.program {
            if let Some(&i) = s.phases.iter().find(|&&i| i >= self.phases.len()) {
                return bad(format!("program names phase #{i} which does not exist"));
            }
        }
        Ok(())
    }
}

/// `OMP_PROC_BIND`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ProcBind {
    /// Not bound: the scheduler places and moves threads (the Linux default).
    #[default]
    False,
    Close,
    Spread,
    Primary,
}

/// `OMP_PLACES`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Places {
    Threads,
    #[default]
    Cores,
    Sockets,
}

impl Places {
    pub fn name(self) -> &'static str {
        match self {
            Places::Threads => "threads",
            Places::Cores => "cores",
            Places::Sockets => "sockets",
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Placement {
    /// The task policy every thread of every process starts with (numactl's policy options).
    pub policy: MemPolicy,
    /// Allowed CPUs (`--physcpubind` / `--cpunodebind`); `None` = every CPU.
    #[serde(default)]
    pub cpus: Option<CpuSet>,
    #[serde(default)]
    pub proc_bind: ProcBind,
    #[serde(default)]
    pub places: Places,
}

pub use crate::profile::Kernel;

/// Costs charged to the thread that incurs them (docs/workloads.md §5). Every field has a
/// default, so a configuration may override any subset.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Costs {
    /// First-touch fault of a 4 KiB page (trap, allocate, zero): 0.5-2 us [est, docs/workloads.md §5].
    pub fault_4k_ns: f64,
    /// First-touch fault of a 2 MiB THP (zeroing 2 MiB at 10-20 GB/s): 100-200 us [est, docs/workloads.md §5].
    pub fault_2m_ns: f64,
    /// Cache refill after the scheduler moves a thread to another CPU [est: a few hundred KiB of
    /// private cache refilled at ~5-10 GB/s]. Also charged to both tasks of a NUMA-balancing swap.
    pub task_move_ns: f64,
    /// NUMA hinting fault without migration (trap, fault accounting, PTE restore): 1-2 us
    /// [est, docs/workloads.md §5].
    pub hint_fault_ns: f64,
    /// Fixed part of one migrate-on-fault (LRU isolation, target allocation, unmap/remap), on top
    /// of the copy: a whole 4 KiB migrate-on-fault is 5-20 us [est, docs/workloads.md §5], of which
    /// the copy is well under 1 us.
    pub migrate_base_ns: f64,
    /// Single-threaded copy rate of a page migration between two nodes at SLIT distance 20:
    /// 11.0 GB/s for 2 MiB folios (~190 us per THP) [doc: LKML 2026-05 "Accelerate page migration
    /// with batch copying", 2-socket Zen 3, docs/workloads.md §5]. A node pair at distance d copies
    /// at `migrate_copy_gbps x 20 / d` [est: copy speed follows the remote latency].
    pub migrate_copy_gbps: f64,
    /// Scanner work per mapping newly marked PROT_NONE (PTE or THP PMD), including its share of
    /// the TLB flush: "task_numa_work over 256 MB can take several ms" = 65,536 PTEs
    /// [doc: Huang Ying, "autonuma: Support to scan page table asynchronously"; docs/workloads.md §5],
    /// i.e. ~50 ns per PTE [est].
    pub scan_pte_ns: f64,
}

impl Default for Costs {
    fn default() -> Self {
        Costs {
            fault_4k_ns: 1_000.0,
            fault_2m_ns: 150_000.0,
            task_move_ns: 50_000.0,
            hint_fault_ns: 1_500.0,
            migrate_base_ns: 5_000.0,
            migrate_copy_gbps: 11.0,
            scan_pte_ns: 50.0,
        }
    }
}

/// The scanner and tiering tunables, defined once in `numalab_model::knobs` (shared with the
/// Linux readers and writers): the CLI options, study keys and the engine's checks all come from
/// this table, in its order (the memory-tiering ones last).
pub use numalab_model::knobs::{Knob, TUNABLES as BALANCING_KNOBS};

/// Automatic NUMA balancing (`kernel.numa_balancing` and its scan tunables, docs/balancing.md §1),
/// with the kernel's names and defaults. Off by default: the placement studies numalab re-runs
/// compare numactl policies with balancing disabled unless they say otherwise.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Balancing {
    /// `NUMA_BALANCING_NORMAL` (bit 0 of `kernel.numa_balancing`).
    pub enabled: bool,
    /// `NUMA_BALANCING_MEMORY_TIERING` (bit 1, 5.18+): promotion of hot slow-tier pages
    /// (docs/tiering.md §5). `numa_balancing = 3` sets both bits.
    pub memory_tiering: bool,
    /// `/sys/kernel/mm/numa/demotion_enabled` (5.15+): reclaim demotes to the next tier
    /// (docs/tiering.md §4). Off by default, as the kernel boots.
    pub demotion_enabled: bool,
    /// `/sys/kernel/mm/mempolicy/weighted_interleave/auto` (6.16+): default weighted-interleave
    /// weights from node bandwidth (docs/tiering.md §6); off in the 6.13 profile (no such file).
    pub weighted_interleave_auto: bool,
    pub scan_delay_ms: u32,
    pub scan_period_min_ms: u32,
    pub scan_period_max_ms: u32,
    pub scan_size_mb: u32,
    pub hot_threshold_ms: u32,
    pub promote_rate_limit_mbps: u32,
    /// `kernel.numa_balancing_migrate_deferred`: a 3.13-only sysctl (`None` = its default, 16).
    pub migrate_deferred: Option<u32>,
    /// Record a summary of every completed scan pass (`numalab sim --explain-balancing`).
    pub explain: bool,
}

impl Default for Balancing {
    fn default() -> Self {
        let d = |i: usize| BALANCING_KNOBS[i].default;
        Balancing {
            enabled: false,
            memory_tiering: false,
            demotion_enabled: false,
            weighted_interleave_auto: false,
            scan_delay_ms: d(0),
            scan_period_min_ms: d(1),
            scan_period_max_ms: d(2),
            scan_size_mb: d(3),
            hot_threshold_ms: d(4),
            promote_rate_limit_mbps: d(5),
            migrate_deferred: None,
            explain: false,
        }
    }
}

impl Balancing {
    fn knob_values(&self) -> [u32; 6] {
        [
            self.scan_delay_ms,
            self.scan_period_min_ms,
            self.scan_period_max_ms,
            self.scan_size_mb,
            self.hot_threshold_ms,
            self.promote_rate_limit_mbps,
        ]
    }

    /// The scanner runs for either bit of `kernel.numa_balancing` (`sched_numa_balancing`).
    pub fn scanning(&self) -> bool {
        self.enabled || self.memory_tiering
    }

    /// `kernel.numa_balancing` as the kernel stores it: 0..3.
    pub fn mode(&self) -> u32 {
        u32::from(self.enabled) | (u32::from(self.memory_tiering) << 1)
    }

    /// Every rule on the knobs: ranges, min <= max, knobs the chosen kernel does not have, and
    /// knobs set while balancing is off (they would silently do nothing).
    pub fn check(&self, kernel: Kernel) -> Result<(), SimError> {
        let bad = |m: String| Err(SimError::Input(m));
        for (k, v) in BALANCING_KNOBS.iter().zip(self.knob_values()) {
            if v < k.min || v > k.max {
                let range =
                    if k.max == u32::MAX { format!("at least {}", k.min) } else { format!("{}..{}", k.min, k.max) };
                return bad(format!("--{} must be {range}, got {v}", k.name.replace('_', "-")));
            }
        }
        if self.scan_period_min_ms > self.scan_period_max_ms {
            return bad(format!(
                "--scan-period-min-ms ({}) is above --scan-period-max-ms ({})",
                self.scan_period_min_ms, self.scan_period_max_ms
            ));
        }
        // The sysctls only some releases have, with the profiles that have them.
        type Has = fn(&SysctlRules) -> bool;
        let having = |has: Has| {
            let names: Vec<&str> =
                Kernel::ALL.iter().filter(|(_, k)| has(&k.profile().sysctls)).map(|(n, _)| *n).collect();
            names.join(", ")
        };
        let sysctls = &kernel.profile().sysctls;
        if self.migrate_deferred.is_some() && !sysctls.migrate_deferred {
            let names = having(|s| s.migrate_deferred);
            return bad(format!("numa_balancing_migrate_deferred exists only in the {names} profile"));
        }
        let newer: [(bool, &str, Has); 4] = [
            (self.enabled, "automatic NUMA balancing (kernel.numa_balancing, 3.8+)", |s| s.numa_balancing),
            (self.memory_tiering, "numa_balancing = 2 (memory tiering, 5.18+)", |s| s.memory_tiering),
            (self.demotion_enabled, "demotion_enabled (5.15+)", |s| s.demotion_enabled),
            (self.weighted_interleave_auto, "weighted_interleave auto (6.16+)", |s| s.weighted_interleave_auto),
        ];
        if let Some((_, what, has)) = newer.iter().find(|(on, _, has)| *on && !has(sysctls)) {
            return bad(format!(
                "{what} does not exist in the {} profile (use --kernel {})",
                kernel.profile().name,
                having(*has)
            ));
        }
        if !self.memory_tiering {
            let values = self.knob_values();
            let tiering = BALANCING_KNOBS[4..].iter().zip(&values[4..]).find(|(k, v)| k.default != **v);
            if let Some((k, _)) = tiering {
                return bad(format!(
                    "--{} is a memory-tiering knob but numa_balancing is not 2 or 3 (--balancing 2)",
                    k.name.replace('_', "-")
                ));
            }
        }
        if !self.scanning() {
            let changed = BALANCING_KNOBS.iter().zip(self.knob_values()).find(|(k, v)| k.default != *v);
            if let Some((k, _)) = changed {
                return bad(format!(
                    "--{} is set but balancing is off (turn it on: --balancing on, or enabled = true in a study)",
                    k.name.replace('_', "-")
                ));
            }
            if self.explain {
                return bad("--explain-balancing needs --balancing on".into());
            }
        }
        Ok(())
    }

    pub fn deferred(&self) -> u32 {
        self.migrate_deferred.unwrap_or(16)
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimConfig {
    pub seed: u64,
    /// Fraction of page visits simulated (1 = every visit); each sample stands for 1/rate visits.
    pub sample_rate: f64,
    #[serde(default)]
    pub kernel: Kernel,
    #[serde(default)]
    pub costs: Costs,
    #[serde(default)]
    pub balancing: Balancing,
    /// Keep at most this many timeline points (the interval doubles when exceeded).
    #[serde(default = "timeline_points")]
    pub timeline_points: usize,
    /// Seeded background activity: timer ticks, kernel threads, daemons (docs/scheduler.md §6).
    #[serde(default)]
    pub noise: bool,
    /// The background's rates when not §6's estimates (with `noise`): a guest's, measured by
    /// `numalab vm check` (docs/scheduler.md §10.3).
    #[serde(default)]
    pub background: Option<crate::sched::Background>,
    /// The host running a guest's vCPUs (`numalab vm check`'s simulated side; docs/scheduler.md
    /// §10.5): a CPU makes progress only while a host core runs it. None: every CPU always runs.
    #[serde(default)]
    pub vcpu_host: Option<crate::vhost::VcpuHost>,
    /// Keep the scheduler's decisions for `--explain-sched` (docs/scheduler.md §7).
    #[serde(default)]
    pub explain_sched: bool,
    /// libgomp's `OMP_WAIT_POLICY` (docs/scheduler.md §5).
    #[serde(default)]
    pub omp_wait_policy: WaitPolicy,
    /// `MADV_HUGEPAGE` per region (the descriptor's `thp` mark): such regions' THP faults may
    /// reclaim and take a remote huge page under `defrag = madvise` (`crate::khugepaged`).
    #[serde(default)]
    pub thp_madvised: Vec<bool>,
    /// The latency-balanced allocation policy for processes without an explicit policy
    /// (docs/allocation.md §12), when chosen.
    #[serde(default)]
    pub latency_balanced: Option<crate::latbal::LatBalConfig>,
}

/// `OMP_WAIT_POLICY` as libgomp reads it (`libgomp/env.c: parse_wait_policy`): unset, `active`,
/// `passive`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum WaitPolicy {
    #[default]
    Unset,
    Active,
    Passive,
}

fn timeline_points() -> usize {
    100
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            seed: 1,
            sample_rate: 1.0,
            kernel: Kernel::default(),
            costs: Costs::default(),
            balancing: Balancing::default(),
            timeline_points: 100,
            noise: false,
            background: None,
            vcpu_host: None,
            explain_sched: false,
            omp_wait_policy: WaitPolicy::Unset,
            thp_madvised: Vec::new(),
            latency_balanced: None,
        }
    }
}
