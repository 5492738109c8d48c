//! Memory tiers as `mm/memory-tiers.c` (v6.13) builds them (docs/tiering.md §2-§3): an abstract
//! distance per node, tiers of `MEMTIER_CHUNK_SIZE` abstract distance, the top tiers (no
//! promotion out of them) and each node's demotion targets.

use numalab_model::Machine;

/// `include/linux/memory-tiers.h`: `MEMTIER_CHUNK_BITS` 7, tiers cover 128 abstract distance.
pub const MEMTIER_CHUNK_BITS: u32 = 7;
pub const MEMTIER_CHUNK_SIZE: u32 = 1 << MEMTIER_CHUNK_BITS;
/// `MEMTIER_ADISTANCE_DRAM = 4 * chunk + chunk / 2` = 576.
pub const MEMTIER_ADISTANCE_DRAM: u32 = 4 * MEMTIER_CHUNK_SIZE + (MEMTIER_CHUNK_SIZE >> 1);
/// `MEMTIER_DEFAULT_DAX_ADISTANCE = MEMTIER_ADISTANCE_DRAM * 5` (`drivers/dax/kmem.c` when no
/// firmware performance data places the device).
pub const MEMTIER_DEFAULT_DAX_ADISTANCE: u32 = MEMTIER_ADISTANCE_DRAM * 5;

/// The tiers of one machine, by logical node index.
#[derive(Clone, Debug)]
pub struct Tiers {
    /// Abstract distance per node (nodes without memory: 0, never used).
    pub adistance: Vec<u32>,
    /// Rank of each memory node's tier, 0 = the fastest tier (`memory_tiers` list order).
    pub tier: Vec<u32>,
    pub nr_tiers: u32,
    /// `node_is_toptier()`.
    pub toptier: Vec<bool>,
    /// `node_demotion[node].preferred`: the nearest nodes of the next slower tier.
    pub preferred: Vec<Vec<usize>>,
    /// `memtier->lower_tier_mask` of the node's tier: every node of every slower tier.
    pub allowed: Vec<Vec<bool>>,
    pub has_memory: Vec<bool>,
}

/// Read and write latency and bandwidth of one node as HMAT gives them to the kernel
/// (`struct access_coordinate`); the machine has one figure each, used for read and write.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Perf {
    latency_ns: f64,
    bandwidth_gbps: f64,
}

/// A node's access performance from its best initiator: its own CPUs, else the nearest node
/// with CPUs (`hmat_update_target_access()` keeps the best initiator's figures).
fn node_perf(m: &Machine, n: usize) -> Perf {
    let has_cpus = |x: usize| !m.nodes[x].cpuset.is_empty();
    let from = if has_cpus(n) {
        n
    } else {
        (0..m.nodes.len())
            .filter(|&x| has_cpus(x))
            .min_by(|&a, &b| m.idle_latency_ns[a][n].total_cmp(&m.idle_latency_ns[b][n]).then(a.cmp(&b)))
            .unwrap_or(n)
    };
    Perf { latency_ns: m.idle_latency_ns[from][n], bandwidth_gbps: m.nodes[n].bandwidth_gbps }
}

/// `mt_set_default_dram_perf()`: the DRAM reference is the first node with CPUs and memory;
/// another such node more than 10 % away in latency or bandwidth makes the reference unusable
/// (`default_dram_perf_error`), and then `mt_perf_to_adistance()` fails for every node.
fn default_dram_perf(m: &Machine) -> Option<Perf> {
    let dram: Vec<usize> =
        (0..m.nodes.len()).filter(|&n| !m.nodes[n].cpuset.is_empty() && m.nodes[n].local_memory_bytes > 0).collect();
    let r = node_perf(m, *dram.first()?);
    let off = |a: f64, b: f64| (a - b).abs() * 10.0 > b;
    for &n in &dram[1..] {
        let p = node_perf(m, n);
        if off(p.latency_ns, r.latency_ns) || off(p.bandwidth_gbps, r.bandwidth_gbps) {
            return None;
        }
    }
    Some(r)
}

/// `mt_perf_to_adistance()`: in proportion to latency (read + write) and inversely to bandwidth
/// (read + write), with default DRAM at `MEMTIER_ADISTANCE_DRAM`. Integer arithmetic as the
/// kernel's, with latency in ns and bandwidth in MB/s as HMAT reports them.
pub fn perf_to_adistance(latency_ns: f64, bandwidth_gbps: f64, dram_latency_ns: f64, dram_bandwidth_gbps: f64) -> u32 {
    let lat = (2.0 * latency_ns).round().max(1.0) as u64;
    let dlat = (2.0 * dram_latency_ns).round().max(1.0) as u64;
    let bw = (2.0 * bandwidth_gbps * 1000.0).round().max(1.0) as u64;
    let dbw = (2.0 * dram_bandwidth_gbps * 1000.0).round().max(1.0) as u64;
    (MEMTIER_ADISTANCE_DRAM as u64 * lat / dlat * dbw / bw).min(u32::MAX as u64) as u32
}

/// The abstract distance of node `n`: nodes with CPUs join the default DRAM tier at boot
/// (`memory_tier_init()`); CPU-less nodes are placed later from their performance
/// (`memory_tier_late_init()` / `set_node_memory_tier()` -> `mt_calc_adistance()` ->
/// `hmat_calculate_adistance()`), or, without a usable DRAM reference, by their kind: a CXL or
/// NVM expander through `drivers/dax/kmem.c` at `MEMTIER_DEFAULT_DAX_ADISTANCE`, other memory
/// (e.g. HBM) at the DRAM default.
fn adistance(m: &Machine, n: usize, dram: Option<Perf>) -> u32 {
    let node = &m.nodes[n];
    if !node.cpuset.is_empty() {
        return MEMTIER_ADISTANCE_DRAM;
    }
    match dram {
        Some(d) => {
            let p = node_perf(m, n);
            perf_to_adistance(p.latency_ns, p.bandwidth_gbps, d.latency_ns, d.bandwidth_gbps)
        }
        None => match node.subtype.as_deref() {
            Some("CXL-DRAM") | Some("NVM") => MEMTIER_DEFAULT_DAX_ADISTANCE,
            _ => MEMTIER_ADISTANCE_DRAM,
        },
    }
}

impl Tiers {
    pub fn new(m: &Machine) -> Self {
        let n = m.nodes.len();
        let has_memory: Vec<bool> = m.nodes.iter().map(|x| x.local_memory_bytes > 0).collect();
        let dram = default_dram_perf(m);
        let adistance: Vec<u32> = (0..n).map(|x| if has_memory[x] { adistance(m, x, dram) } else { 0 }).collect();
        // A tier is an abstract-distance chunk (`find_create_memory_tier()`: adistance_start =
        // round_down(adist, chunk)); the list is kept in ascending order.
        let start = |x: usize| adistance[x] >> MEMTIER_CHUNK_BITS;
        let mut starts: Vec<u32> = (0..n).filter(|&x| has_memory[x]).map(start).collect();
        starts.sort_unstable();
        starts.dedup();
        let tier: Vec<u32> = (0..n)
            .map(|x| if has_memory[x] { starts.binary_search(&start(x)).unwrap_or(0) as u32 } else { 0 })
            .collect();
        let nr_tiers = starts.len() as u32;
        // establish_demotion_targets(): top tiers are every tier up to the slowest one holding a
        // node with CPUs.
        let top = (0..n).filter(|&x| has_memory[x] && !m.nodes[x].cpuset.is_empty()).map(|x| tier[x]).max();
        let toptier: Vec<bool> = (0..n).map(|x| !has_memory[x] || top.is_none_or(|t| tier[x] <= t)).collect();
        let mut preferred = vec![Vec::new(); n];
        let mut allowed = vec![vec![false; n]; n];
        for x in (0..n).filter(|&x| has_memory[x]) {
            let next = tier[x] + 1;
            let cand: Vec<usize> = (0..n).filter(|&y| has_memory[y] && tier[y] == next).collect();
            if let Some(best) = cand.iter().map(|&y| m.distances[x][y]).min() {
                preferred[x] = cand.into_iter().filter(|&y| m.distances[x][y] == best).collect();
            }
            for y in (0..n).filter(|&y| has_memory[y] && tier[y] > tier[x]) {
                allowed[x][y] = true;
            }
        }
        Tiers { adistance, tier, nr_tiers, toptier, preferred, allowed, has_memory }
    }

    /// `can_demote()` past `demotion_enabled`: the node has a demotion target.
    pub fn can_demote(&self, n: usize) -> bool {
        !self.preferred[n].is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dram_is_576_and_slower_memory_further() {
        assert_eq!(MEMTIER_ADISTANCE_DRAM, 576);
        assert_eq!(perf_to_adistance(100.0, 100.0, 100.0, 100.0), 576);
        // Twice the latency and a quarter of the bandwidth: 576 * 2 * 4.
        assert_eq!(perf_to_adistance(200.0, 25.0, 100.0, 100.0), 4608);
        // Four times the bandwidth at 10 % more latency (HBM-like): a faster tier.
        assert!(perf_to_adistance(110.0, 400.0, 100.0, 100.0) < 512);
    }
}
