//! What a mapping of objects to PEs costs ([`mod@crate::simulate`] iterates it; balancers that
//! weigh a candidate mapping, such as `balance::numalab`, ask it too): one iteration's PE times
//! and measured object loads, and one migration step.

use crate::graph::Edge;
use crate::platform::Platform;

/// Migrations from `old` to `new`: (objects moved, bytes moved, the step's time). Each move costs
/// its source PE the packing side and its destination PE the unpacking side; PEs work in
/// parallel, so the step takes the busiest PE's total, and no less than the busiest link
/// direction needs for the states crossing it.
pub(crate) fn migration_step(old: &[u32], new: &[u32], state: &[u64], plat: &Platform) -> (usize, u64, f64) {
    let mut side = vec![0.0; plat.n_pes()];
    let mut link_bytes = vec![0.0; plat.link_gbps.len()];
    let (mut moved, mut bytes) = (0usize, 0u64);
    for (i, (&p, &q)) in old.iter().zip(new).enumerate() {
        if p != q {
            let (a, b) = plat.migration_ns(p as usize, q as usize, state[i] as f64);
            side[p as usize] += a;
            side[q as usize] += b;
            moved += 1;
            bytes += state[i];
            for &l in &plat.route_links[plat.pe_node[p as usize]][plat.pe_node[q as usize]] {
                link_bytes[l] += state[i] as f64;
            }
        }
    }
    let busiest = side.iter().copied().fold(0.0, f64::max);
    let drain = link_bytes.iter().zip(&plat.link_gbps).map(|(b, g)| b / g).fold(0.0, f64::max);
    (moved, bytes, busiest.max(drain))
}

/// What one iteration costs under a mapping.
pub(crate) struct Eval {
    pub(crate) pe_time: Vec<f64>,
    pub(crate) obj_measured: Vec<f64>,
    /// Bytes and messages per class: same PE, same node, across nodes.
    pub(crate) bytes: [f64; 3],
    pub(crate) msgs: [f64; 3],
}

pub(crate) fn evaluate(edges: &[Edge], loads: &[f64], map: &[u32], plat: &Platform) -> Eval {
    let np = plat.n_pes();
    let mut pe_time = vec![0.0; np];
    let mut remote = vec![0.0; np];
    let mut obj = loads.to_vec();
    let mut link_bytes = vec![0.0; plat.link_gbps.len()];
    let mut uses: Vec<Vec<bool>> = vec![vec![false; plat.link_gbps.len()]; np];
    let (mut bytes, mut msgs) = ([0.0; 3], [0.0; 3]);
    for (i, &p) in map.iter().enumerate() {
        pe_time[p as usize] += loads[i];
    }
    for e in edges {
        let (p, q) = (map[e.a as usize] as usize, map[e.b as usize] as usize);
        let (m, b) = (e.msgs as f64, e.bytes as f64);
        let (ni, nj) = (plat.pe_node[p], plat.pe_node[q]);
        let class = if p == q {
            0
        } else if ni == nj {
            1
        } else {
            2
        };
        bytes[class] += b;
        msgs[class] += m;
        let (s, r) = plat.message_ns(p, q, m, b);
        pe_time[p] += s;
        obj[e.a as usize] += s;
        obj[e.b as usize] += r;
        if class == 2 {
            remote[q] += r;
            for &l in &plat.route_links[ni][nj] {
                link_bytes[l] += b;
                uses[q][l] = true;
            }
        } else {
            pe_time[q] += r;
        }
    }
    for q in 0..np {
        let drain = uses[q]
            .iter()
            .enumerate()
            .filter(|(_, &u)| u)
            .map(|(l, _)| link_bytes[l] / plat.link_gbps[l])
            .fold(0.0, f64::max);
        pe_time[q] += remote[q].max(drain);
    }
    Eval { pe_time, obj_measured: obj, bytes, msgs }
}
