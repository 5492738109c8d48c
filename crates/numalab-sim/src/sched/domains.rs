//! Scheduling domains above the core, with each kernel version's parameters and flags.
//!
//! Levels: `MC` (the node's PUs, one last-level cache per node; groups: cores), then one `NUMA`
//! level per distinct remote SLIT distance (span: the PUs of nodes within that distance; groups:
//! the spans of the level below), as `sched_init_numa()` builds them (v3.13
//! `kernel/sched/core.c`, v6.13 `kernel/sched/topology.c`). No SMT level: an idle core is
//! preferred inside `Sched::idlest`, where the SMT level's groups would lead.

use numalab_model::Machine;

use crate::input::Kernel;
use crate::profile::{BalanceSignals, DomainIntervals, ImbNumaNr, LoadIdx, NumaLevels, PreferSibling};

/// v2.6.32 `kernel/sched.c`: `SD_NODES_PER_DOMAIN`, the nodes a `NODE` domain spans.
const SD_NODES_PER_DOMAIN: usize = 16;

/// `RECLAIM_DISTANCE` (`include/linux/topology.h`: 30 since v3.0, and 6.13's default
/// `node_reclaim_distance`).
pub const RECLAIM_DISTANCE: u32 = 30;

#[derive(Clone, Debug)]
pub struct Domain {
    pub name: String,
    /// For each PU (logical), the PUs of its domain at this level.
    pub span_of: Vec<Vec<usize>>,
    /// For each PU, the groups of its domain: the child domains' spans covering the span, its
    /// own first (`build_overlap_sched_groups()` for NUMA levels: groups may overlap).
    pub groups_of: Vec<Vec<Vec<usize>>>,
    pub numa: bool,
    /// `SD_BALANCE_FORK | SD_BALANCE_EXEC` (always together here).
    pub balance_fork_exec: bool,
    pub wake_affine: bool,
    /// `sd->min_interval` / `max_interval` in ms: the span weight and twice it unless fixed.
    min_interval_ms: Option<f64>,
    max_interval_ms: Option<f64>,
    /// `sd->balance_interval` at build time (None: the span weight).
    init_interval_ms: Option<f64>,
    pub busy_factor: f64,
    pub imbalance_pct: f64,
    pub cache_nice_tries: u32,
    /// 6.x `sd->imb_numa_nr` (0 where unused).
    pub imb_numa_nr: usize,
    /// 6.x: the groups carry `SD_PREFER_SIBLING` ("the flags of a sched group are those of the
    /// child domain", `update_sd_lb_stats()`): `sd_init()` sets it on every level and clears it
    /// on NUMA levels, so it holds at the first level above MC (MC's groups only with SMT).
    pub groups_prefer_sibling: bool,
    /// v2.6.32 / v3.13 `busy_idx` / `idle_idx` / `newidle_idx` (all 0 where the balancer reads
    /// PELT sums).
    pub load_idx: LoadIdx,
}

impl Domain {
    pub fn weight(&self, cpu: usize) -> usize {
        self.span_of[cpu].len()
    }
    pub fn min_interval_ms(&self, cpu: usize) -> f64 {
        self.min_interval_ms.unwrap_or(self.weight(cpu) as f64)
    }
    pub fn max_interval_ms(&self, cpu: usize) -> f64 {
        self.max_interval_ms.unwrap_or(2.0 * self.weight(cpu) as f64)
    }
    pub fn init_interval_ms(&self, cpu: usize) -> f64 {
        self.init_interval_ms.unwrap_or(self.weight(cpu) as f64)
    }
}

pub fn build(m: &Machine, kernel: Kernel) -> Vec<Domain> {
    let pu_node: Vec<usize> = m.pus.iter().map(|u| m.node_logical(u.node).unwrap_or(0)).collect();
    let n_pus = m.pus.len();
    let mut out = Vec::new();
    let span_of: Vec<Vec<usize>> =
        (0..n_pus).map(|c| (0..n_pus).filter(|&q| pu_node[q] == pu_node[c]).collect()).collect();
    let core_of: Vec<usize> = m.pus.iter().map(|u| u.core as usize).collect();
    let core_span: Vec<Vec<usize>> =
        (0..n_pus).map(|c| (0..n_pus).filter(|&q| core_of[q] == core_of[c]).collect()).collect();
    let group_of = groups(&span_of, &core_span);
    let rules = &kernel.profile().sched;
    let (mc_idx, numa_idx) = match rules.load.balance {
        BalanceSignals::CpuLoadIndex { mc, numa } | BalanceSignals::QueuedWeightIndex { mc, numa } => (mc, numa),
        BalanceSignals::LoadUtilRunnable => {
            let none = LoadIdx { busy: 0, idle: 0, newidle: 0 };
            (none, none)
        }
    };
    // Both versions: cache_nice_tries 1; FORK|EXEC|WAKE_AFFINE|NEWIDLE. The rest is the profile's
    // (v3.13 include/linux/topology.h SD_MC_INIT, v6.13 kernel/sched/topology.c sd_init()).
    let mc_rules = rules.mc;
    // (min, max, initial balance_interval ms)
    let intervals = match mc_rules.intervals {
        DomainIntervals::Fixed { min_ms, max_ms, initial_ms } => (Some(min_ms), Some(max_ms), Some(initial_ms)),
        DomainIntervals::SpanWeight => (None, None, None),
    };
    let groups_prefer_sibling = match mc_rules.groups_prefer_sibling {
        PreferSibling::Never => false,
        PreferSibling::WithSmt => core_span.iter().any(|c| c.len() > 1),
    };
    let mc = Domain {
        name: "MC".into(),
        span_of: span_of.clone(),
        groups_of: group_of,
        numa: false,
        balance_fork_exec: true,
        wake_affine: true,
        min_interval_ms: intervals.0,
        max_interval_ms: intervals.1,
        init_interval_ms: intervals.2,
        busy_factor: mc_rules.busy_factor,
        imbalance_pct: mc_rules.imbalance_pct,
        cache_nice_tries: 1,
        imb_numa_nr: 0,
        groups_prefer_sibling,
        load_idx: mc_idx,
    };
    out.push(mc);
    let mut tiers: Vec<u32> = m.distances.iter().flatten().copied().filter(|&d| d > 10).collect();
    tiers.sort();
    tiers.dedup();
    // v2.6.32: a NODE level over each node's SD_NODES_PER_DOMAIN nearest nodes
    // (sched_domain_node_span(): find_next_best_node()), and ALLNODES above it when that is not
    // already every node. Encoded as tier 0 (the nearest-16 span) and the largest distance.
    let n_nodes = pu_node.iter().copied().max().map_or(1, |n| n + 1).max(m.distances.len());
    let node_span_16 = rules.numa.levels == NumaLevels::NodeSpan16;
    if node_span_16 {
        let all = tiers.last().copied();
        tiers = if n_nodes > SD_NODES_PER_DOMAIN {
            [Some(0), all].into_iter().flatten().collect()
        } else {
            all.into_iter().collect()
        };
    }
    let nearest = |n: usize| -> Vec<usize> {
        let mut order: Vec<usize> = (0..n_nodes).collect();
        order.sort_by_key(|&j| (m.distances[n][j], j != n, j));
        order.truncate(SD_NODES_PER_DOMAIN);
        order
    };
    let numa_intervals = match rules.numa.intervals {
        DomainIntervals::Fixed { min_ms, max_ms, initial_ms } => (Some(min_ms), Some(max_ms), Some(initial_ms)),
        DomainIntervals::SpanWeight => (None, None, None),
    };
    let mut child_span: Vec<Vec<usize>> = span_of.clone();
    // MC spans the node here (one LLC per node), so the LLC's parent and the LLC have one span.
    let node_weight = span_of.iter().map(|s| s.len()).max().unwrap_or(1);
    let llc_imb = llc_parent_imb_numa_nr(node_weight, node_weight);
    for (k, d) in tiers.iter().copied().enumerate() {
        let span_of: Vec<Vec<usize>> = if d == 0 {
            (0..n_pus)
                .map(|c| {
                    let near = nearest(pu_node[c]);
                    (0..n_pus).filter(|&q| near.contains(&pu_node[q])).collect()
                })
                .collect()
        } else {
            (0..n_pus).map(|c| (0..n_pus).filter(|&q| m.distances[pu_node[c]][pu_node[q]] <= d).collect()).collect()
        };
        // Both versions: NUMA levels within RECLAIM_DISTANCE balance fork, exec and affine
        // wake-ups. v3.13 kernel/sched/core.c sd_numa_init() ORs in sd_local_flags(level)
        // ("if (sched_domains_numa_distance[level] > RECLAIM_DISTANCE) return 0; return
        // SD_BALANCE_EXEC | SD_BALANCE_FORK | SD_WAKE_AFFINE;"); v6.13 sd_init() clears the three
        // flags above node_reclaim_distance.
        // v2.6.32 SD_NODE_INIT sets the three flags whatever the distance.
        let near = node_span_16 || d <= RECLAIM_DISTANCE;
        let weight = span_of.iter().map(|s| s.len()).max().unwrap_or(1);
        // Both versions: min sd_weight, max 2*sd_weight, balance_interval sd_weight,
        // cache_nice_tries 2 (v3.13 sd_numa_init(), v6.13 sd_init() with SD_NUMA).
        let imb_numa_nr = match rules.numa.imb_numa_nr {
            ImbNumaNr::Unused => 0,
            // imb_span: the first SD_NUMA domain's span (this one's, when it is that domain).
            ImbNumaNr::PerLlc => {
                let imb_span =
                    out.get(1).map_or(weight, |d: &Domain| d.span_of.iter().map(Vec::len).max().unwrap_or(1));
                llc_imb * (weight / imb_span.max(1)).max(1)
            }
        };
        let dom = Domain {
            name: match (node_span_16, k) {
                (true, 0) => "NODE".to_string(),
                (true, _) => "ALLNODES".to_string(),
                (false, _) => format!("NUMA{d}"),
            },
            span_of: span_of.clone(),
            groups_of: groups(&span_of, &child_span),
            numa: true,
            balance_fork_exec: near,
            wake_affine: near,
            min_interval_ms: numa_intervals.0,
            max_interval_ms: numa_intervals.1,
            init_interval_ms: numa_intervals.2,
            busy_factor: rules.numa.busy_factor,
            imbalance_pct: rules.numa.imbalance_pct,
            cache_nice_tries: 2,
            imb_numa_nr,
            // the groups are MC domains, which carry SD_PREFER_SIBLING (at the first NUMA level
            // only) from the degenerate CPU (package) level above them (SD_CPU_INIT:
            // 1*SD_PREFER_SIBLING; sd_parent_degenerate() transfers it down, kernel/sched/core.c;
            // v2.6.32's MC sets it itself: include/linux/topology.h SD_MC_INIT,
            // include/linux/sched.h sd_balance_for_mc_power())
            groups_prefer_sibling: k == 0,
            load_idx: numa_idx,
        };
        out.push(dom);
        // Groups one level up are this level's spans.
        child_span = span_of;
    }
    out
}

/// v6.1 / v6.13 `kernel/sched/topology.c: build_sched_domains()`, the loop after the groups are
/// built ("Calculate an allowed NUMA imbalance such that LLCs do not get imbalanced"): per CPU,
/// over its domains as `build_sched_domain()` made them, before `cpu_attach_domain()` drops the
/// degenerate ones. The first domain without `SD_SHARE_PKG_RESOURCES` (6.13: `SD_SHARE_LLC`)
/// whose child has it, the LLC's parent, gets `imb`: `nr_llcs = span / child span`, `imb = span
/// >> 3` ("an imbalance up to 12.5% of the node") with one LLC, else `nr_llcs`, at least 1.
/// That parent spans the node: x86's `DIE` (6.13 `PKG`), `cpu_cpu_mask()` =
/// `cpumask_of_node(cpu_to_node(cpu))` (`include/linux/topology.h`), or, where a package holds
/// several nodes and `arch/x86/kernel/smpboot.c` leaves `DIE`/`PKG` out
/// (`x86_numa_in_package_topology`, 6.13 `build_sched_topology()`), `sched_init_numa()`'s `NODE`
/// level, which has no `SD_NUMA`. Every domain above takes `imb x max(1, span / imb_span)`,
/// `imb_span` being the first `SD_NUMA` ancestor's span.
pub(crate) fn llc_parent_imb_numa_nr(node_weight: usize, llc_weight: usize) -> usize {
    let nr_llcs = node_weight / llc_weight.max(1);
    let imb = if nr_llcs == 1 { node_weight >> 3 } else { nr_llcs };
    imb.max(1)
}

/// Each CPU's groups: its own child span first, then the child span of every CPU of its span
/// not yet covered, in CPU order.
fn groups(span_of: &[Vec<usize>], child_span: &[Vec<usize>]) -> Vec<Vec<Vec<usize>>> {
    (0..span_of.len())
        .map(|c| {
            let mut out = vec![child_span[c].clone()];
            for &q in &span_of[c] {
                if !out.iter().any(|g| g.contains(&q)) {
                    out.push(child_span[q].iter().copied().filter(|x| span_of[c].contains(x)).collect());
                }
            }
            out
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::build;
    use crate::input::Kernel;

    fn machine(nodes: usize, cores: usize, distances: &str) -> numalab_model::Machine {
        let spec = format!(
            r#"{{"name": "m", "description": "test",
            "topology": {{"packages": {nodes}, "nodes_per_package": 1, "cores_per_node": {cores}}},
            "memory": {{"node_gib": 1}},
            "distances": {distances},
            "latency": {{"local_ns": 100}},
            "bandwidth": {{"node_gbps": 10}},
            "core": {{"frequency_ghz": 2.0, "mlp": 10}}}}"#
        );
        numalab_model::MachineSpec::from_json(&spec).unwrap().resolve().unwrap()
    }

    fn imb(m: &numalab_model::Machine, kernel: Kernel) -> Vec<usize> {
        build(m, kernel).iter().map(|d| d.imb_numa_nr).collect()
    }

    /// Square SLIT 10/16/22, as `vm-4x2`: the first NUMA level spans 3 nodes.
    const SQUARE: &str = "[[10,16,16,22],[16,10,22,16],[16,22,10,16],[22,16,16,10]]";

    #[test]
    fn imb_numa_nr_is_an_eighth_of_the_node_at_least_one() {
        // Nodes of 2 and 4 CPUs: 2 >> 3 = 4 >> 3 = 0, so 1 at every NUMA level (NUMA16 spans 3
        // nodes, NUMA22 all 4: 8 / 6 and 16 / 12 are 1). 16 CPUs: 16 >> 3 = 2.
        for kernel in [Kernel::V6_1, Kernel::V6_13] {
            assert_eq!(imb(&machine(4, 2, SQUARE), kernel), vec![0, 1, 1]);
            assert_eq!(imb(&machine(4, 4, SQUARE), kernel), vec![0, 1, 1]);
            assert_eq!(imb(&machine(2, 16, "[[10,21],[21,10]]"), kernel), vec![0, 2]);
        }
        // v3.13 has no imb_numa_nr.
        assert_eq!(imb(&machine(2, 16, "[[10,21],[21,10]]"), Kernel::V3_13), vec![0, 0]);
    }

    #[test]
    fn higher_numa_levels_scale_it_by_their_span_over_the_first_numa_levels() {
        // Nodes of 16 CPUs in pairs at 12, the pairs at 20: imb 2 at NUMA12 (32 CPUs, imb_span),
        // 2 x 64 / 32 = 4 at NUMA20.
        let d = "[[10,12,20,20],[12,10,20,20],[20,20,10,12],[20,20,12,10]]";
        assert_eq!(imb(&machine(4, 16, d), Kernel::V6_13), vec![0, 2, 4]);
    }
}
