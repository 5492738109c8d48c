//! Default weighted-interleave weights (docs/tiering.md §6): 1 for every node before 6.16
//! (`mm/mempolicy.c: get_il_weight()` with no table), and since 6.16's auto mode derived from
//! node bandwidth (`mempolicy_set_node_perf()` -> `reduce_interleave_weights()`).

use numalab_model::Machine;

/// `weightiness` in `mm/mempolicy.c` (6.16): weights are scaled into 1..32 before the GCD.
const WEIGHTINESS: u64 = 32;

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// `reduce_interleave_weights(bw, new_iw)` over the nodes with memory: each node's share of the
/// total bandwidth scaled to 1..32 (integer division, at least 1), then divided by the GCD of
/// all. `bw` per node in MB/s (`mempolicy_set_node_perf()` keeps `min(read_bandwidth,
/// write_bandwidth)`); nodes without memory get 1.
pub fn reduce_interleave_weights(bw: &[u64], has_memory: &[bool]) -> Vec<u8> {
    let sum: u64 = bw.iter().zip(has_memory).filter(|(_, &m)| m).map(|(b, _)| b).sum();
    let mut iw = vec![1u64; bw.len()];
    let mut g = 0u64;
    for (i, (&b, &m)) in bw.iter().zip(has_memory).enumerate() {
        if !m {
            continue;
        }
        let scaled = WEIGHTINESS * b;
        iw[i] = if b > 0 && sum < scaled { scaled / sum } else { 1 };
        g = if g == 0 { iw[i] } else { gcd(g, iw[i]) };
    }
    let g = g.max(1);
    iw.iter().zip(has_memory).map(|(&w, &m)| if m { (w / g).clamp(1, 255) as u8 } else { 1 }).collect()
}

/// The weight table weighted interleave uses when the user gives none for a node: 6.16's auto
/// weights from the machine's node bandwidth when `auto` is on, else 1 (the 6.13 default).
pub fn default_weights(m: &Machine, auto: bool) -> Vec<u8> {
    if !auto {
        return vec![1; m.nodes.len()];
    }
    let bw: Vec<u64> = m.nodes.iter().map(|n| (n.bandwidth_gbps * 1000.0).round().max(0.0) as u64).collect();
    let has_memory: Vec<bool> = m.nodes.iter().map(|n| n.local_memory_bytes > 0).collect();
    reduce_interleave_weights(&bw, &has_memory)
}

/// Give the nodes of a weighted-interleave policy without a user weight their default weight
/// from `table` (user weights, `--weights`, always win, as a sysfs write does).
pub fn apply_defaults(r: &mut crate::mempolicy::Resolved, p: &numalab_model::MemPolicy, m: &Machine, table: &[u8]) {
    if r.mode != numalab_model::PolicyMode::WeightedInterleave {
        return;
    }
    r.weights =
        r.nodes.iter().map(|&n| p.weights.get(&m.nodes[n].os_index).map_or(table[n] as u64, |&w| w as u64)).collect();
    r.weight_sum = r.weights.iter().sum();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bandwidth_ratio_reduced_by_gcd() {
        // 300 GB/s DDR and 100 GB/s CXL: 32*300/400 = 24, 32*100/400 = 8 -> 3:1.
        assert_eq!(reduce_interleave_weights(&[300_000, 100_000], &[true, true]), vec![3, 1]);
        // Equal nodes: 1:1; a node under 1/32 of the total: 1.
        assert_eq!(reduce_interleave_weights(&[50_000, 50_000], &[true, true]), vec![1, 1]);
        assert_eq!(reduce_interleave_weights(&[1_000_000, 10_000], &[true, true]), vec![31, 1]);
        assert_eq!(reduce_interleave_weights(&[100, 0], &[true, false]), vec![1, 1]);
    }
}
