//! TreeMatch-style topology-aware mapping (after Charm++ src/ck-ldb/TreeMatchLB.C,
//! `TreeMatchLB::work`, and TreeMatch's tm_tree.c by Jeannot and Mercier).
//!
//! - Algorithm: (1) greedy balancing, exactly GreedyLB (heaviest object to least-loaded PE),
//!   which gives P bins of objects; (2) a bin-to-bin matrix of bytes per iteration (both
//!   directions, as TreeMatchLB adds every record to `comm[from][to]` and `comm[to][from]`); (3)
//!   bottom-up grouping along the machine's tree: bins into groups of the size of each node's PE
//!   count, each group seeded with the unplaced bin that communicates most and grown with the bin
//!   that communicates most with the group (TreeMatch's greedy grouping; the shipped
//!   TreeMatchLB enumerates all groups of a hard-coded synthetic tree {P, 2, 2, 2} instead);
//!   (4) groups onto nodes minimising sum(bytes x SLIT distance), greedily then improved by
//!   pairwise swaps of equal-size groups; (5) bins of a group onto the node's PEs in order.
//! - Complexity: O(n log n) for greedy + O(E) for the matrix + O(P^2 a) for grouping + O(N^4)
//!   swap passes over N nodes.
//! - Migrations: about n(1 - 1/P), as GreedyLB: the bins are a permutation unrelated to `from_proc`.
//! - Parameters: none.

use super::greedy::greedy_assign;
use super::{Balancer, LbInput};
use crate::error::TaskError;

pub struct TreeMatchLb;

impl Balancer for TreeMatchLb {
    fn name(&self) -> String {
        "treematch".into()
    }

    fn balance(&mut self, input: &LbInput<'_>) -> Result<Vec<u32>, TaskError> {
        let np = input.n_pes();
        let (bins, _) = greedy_assign(input);
        let mut comm = vec![vec![0.0f64; np]; np];
        for e in input.edges {
            let (a, b) = (bins[e.a as usize] as usize, bins[e.b as usize] as usize);
            if a != b {
                comm[a][b] += e.bytes as f64;
                comm[b][a] += e.bytes as f64;
            }
        }
        // Nodes that hold PEs, and their PEs in order.
        let n_nodes = input.distances().len().max(1 + input.pe_nodes().iter().copied().max().unwrap_or(0));
        let mut node_pes: Vec<Vec<usize>> = vec![Vec::new(); n_nodes];
        for (p, &n) in input.pe_nodes().iter().enumerate() {
            node_pes[n].push(p);
        }
        let nodes: Vec<usize> = (0..n_nodes).filter(|&n| !node_pes[n].is_empty()).collect();
        // (3) group bins, largest groups first.
        let mut order = nodes.clone();
        order.sort_by_key(|&n| (std::cmp::Reverse(node_pes[n].len()), n));
        let total: Vec<f64> = comm.iter().map(|r| r.iter().sum()).collect();
        let mut placed = vec![false; np];
        let mut groups: Vec<(usize, Vec<usize>)> = Vec::new(); // (size, bins)
        for &n in &order {
            let size = node_pes[n].len();
            let mut g = Vec::with_capacity(size);
            let seed = (0..np).filter(|&b| !placed[b]).max_by(|&a, &b| total[a].total_cmp(&total[b]).then(b.cmp(&a)));
            let Some(seed) = seed else { break };
            placed[seed] = true;
            g.push(seed);
            let mut link: Vec<f64> = comm[seed].clone();
            while g.len() < size {
                let next = (0..np).filter(|&b| !placed[b]).max_by(|&a, &b| link[a].total_cmp(&link[b]).then(b.cmp(&a)));
                let Some(b) = next else { break };
                placed[b] = true;
                g.push(b);
                for (x, l) in link.iter_mut().enumerate() {
                    *l += comm[b][x];
                }
            }
            groups.push((size, g));
        }
        // (4) group-to-group bytes, then groups onto nodes of their size.
        let ng = groups.len();
        let mut gcomm = vec![vec![0.0f64; ng]; ng];
        let mut bin_group = vec![0usize; np];
        for (k, (_, g)) in groups.iter().enumerate() {
            for &b in g {
                bin_group[b] = k;
            }
        }
        for a in 0..np {
            for b in 0..np {
                if bin_group[a] != bin_group[b] {
                    gcomm[bin_group[a]][bin_group[b]] += comm[a][b];
                }
            }
        }
        // Start: groups in the order they were built onto nodes in `order` (sizes match).
        let mut at: Vec<usize> = order[..ng].to_vec();
        let dist = |a: usize, b: usize| input.distances().get(a).and_then(|r| r.get(b)).copied().unwrap_or(10) as f64;
        let cost = |at: &[usize]| {
            let mut c = 0.0;
            for x in 0..ng {
                for y in 0..ng {
                    c += gcomm[x][y] * dist(at[x], at[y]);
                }
            }
            c
        };
        let mut best = cost(&at);
        let mut improved = true;
        let mut passes = 0;
        while improved && passes < 8 {
            improved = false;
            passes += 1;
            for x in 0..ng {
                for y in x + 1..ng {
                    if groups[x].0 != groups[y].0 {
                        continue;
                    }
                    at.swap(x, y);
                    let c = cost(&at);
                    if c + 1e-9 < best {
                        best = c;
                        improved = true;
                    } else {
                        at.swap(x, y);
                    }
                }
            }
        }
        // (5) bin -> PE permutation.
        let mut perm: Vec<u32> = (0..np as u32).collect();
        for (k, (_, g)) in groups.iter().enumerate() {
            for (slot, &b) in g.iter().enumerate() {
                perm[b] = node_pes[at[k]][slot] as u32;
            }
        }
        Ok(bins.iter().map(|&b| perm[b as usize]).collect())
    }
}
