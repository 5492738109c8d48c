//! `Machine`: the explicit, resolved description of a NUMA machine in hwloc's vocabulary
//! (Machine / Package / NUMANode / Core / PU, `os_index` and `logical_index`), plus what the
//! simulator needs to time memory accesses: SLIT distances, idle latencies, per-node memory
//! controller bandwidth with a loaded-latency curve, interconnect links with per-direction
//! bandwidth and static routes, per-core frequency and memory-level parallelism.
//!
//! Every array indexed by node uses the node's *logical* index (nodes sorted by `os_index`);
//! everything a user reads or writes uses OS indexes, as numactl does.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::bitmap::{CpuSet, NodeSet};
use crate::error::TopologyError;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Package {
    pub os_index: u32,
    pub logical_index: u32,
    pub cpuset: CpuSet,
    pub nodeset: NodeSet,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NumaNode {
    pub os_index: u32,
    pub logical_index: u32,
    /// OS index of the package the node belongs to.
    pub package: u32,
    pub cpuset: CpuSet,
    pub local_memory_bytes: u64,
    /// Sustainable (STREAM-like) bandwidth of the node's memory controllers.
    pub bandwidth_gbps: f64,
    /// hwloc's NUMANode `subtype` ("DRAM" when absent; "HBM", "NVM", "SPM", "CXL-DRAM" as hwloc writes
    /// them): what kind of memory the node holds, from which its memory tier is derived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subtype: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Core {
    pub os_index: u32,
    pub logical_index: u32,
    pub package: u32,
    pub node: u32,
    pub cpuset: CpuSet,
    pub frequency_hz: f64,
    /// Memory-level parallelism: outstanding last-level-cache misses one thread sustains.
    pub mlp: f64,
    /// Lines one address stream keeps in flight (its prefetch depth): a thread with `s` streams
    /// keeps `min(mlp, s x stream_mlp)`; `None`: one stream fills the core (`mlp`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_mlp: Option<f64>,
    /// Latency of one dependent floating-point add (a reduction's chain), ns; `None`: 4 cycles
    /// at `frequency_hz` (docs/contention.md §4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub add_latency_ns: Option<f64>,
    /// Instructions the core holds in flight past an unretired load (its reorder buffer), as
    /// `numalab calibrate` measures it; with it a thread's demand misses in flight are the loads
    /// of that many of its instructions (docs/contention.md §4). `None`: no such limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_instructions: Option<f64>,
    /// Lines the hardware prefetchers keep in flight ahead of a demand stream, beside the
    /// window's misses; `None`: 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefetch_lines: Option<f64>,
}

/// Cycles of a dependent FP add when the machine does not say: ADDSD/ADDPD latency is 3-4
/// cycles on the presets' Xeon and EPYC cores [est: Agner Fog, instruction tables], so 4.
pub const ADD_LATENCY_CYCLES: f64 = 4.0;

impl Core {
    /// Seconds of one dependent floating-point add.
    pub fn add_latency_s(&self) -> f64 {
        self.add_latency_ns.map_or(ADD_LATENCY_CYCLES / self.frequency_hz, |ns| ns * 1e-9)
    }

    /// Lines in flight of a thread with `streams` address streams alone on the core.
    pub fn stream_concurrency(&self, streams: usize) -> f64 {
        self.stream_mlp.map_or(self.mlp, |p| (p * streams.max(1) as f64).min(self.mlp))
    }

    /// Lines in flight of a thread alone on the core whose loop runs `instructions_per_line`
    /// instructions per DRAM line: with a known window, the loads of the window's instructions
    /// (`window_instructions / instructions_per_line` lines) plus the prefetched lines ahead of
    /// them, up to `mlp`; otherwise (no window, or the phase does not say its instructions)
    /// `stream_concurrency(streams)`.
    pub fn lines_in_flight(&self, streams: usize, instructions_per_line: Option<f64>) -> f64 {
        match (self.window_instructions, instructions_per_line) {
            (Some(w), Some(ipl)) if ipl > 0.0 => (w / ipl + self.prefetch_lines.unwrap_or(0.0)).min(self.mlp),
            _ => self.stream_concurrency(streams),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pu {
    pub os_index: u32,
    pub logical_index: u32,
    /// Logical index of the core.
    pub core: u32,
    /// OS index of the node.
    pub node: u32,
}

/// An interconnect link between two nodes (HyperTransport, QPI/UPI, Infinity Fabric, mesh):
/// `gbps[0]` from `nodes[0]` to `nodes[1]`, `gbps[1]` back.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Link {
    pub nodes: [u32; 2],
    pub gbps: [f64; 2],
}

/// One step of a route: a link and its direction (0 = `nodes[0]` to `nodes[1]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hop {
    pub link: u32,
    pub dir: u8,
}

/// One cache instance (hwloc's L2Cache, L3Cache, ...): its level, capacity and the PUs that
/// share it (sysfs `cpu*/cache/index*/shared_cpu_list`). The simulator derives DRAM traffic
/// from the capacity each thread gets of its caches (docs/contention.md §4.1).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cache {
    pub level: u8,
    pub size_bytes: u64,
    pub cpuset: CpuSet,
}

/// A point of the loaded-latency curve: latency = idle latency x `factor` at controller
/// utilisation `utilisation` (0..1), interpolated linearly between points.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CurvePoint {
    pub utilisation: f64,
    pub factor: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Machine {
    pub name: String,
    pub description: String,
    pub page_size_bytes: u64,
    pub packages: Vec<Package>,
    pub nodes: Vec<NumaNode>,
    pub cores: Vec<Core>,
    pub pus: Vec<Pu>,
    /// SLIT distances, `[from][to]` by node logical index; 10 = local.
    pub distances: Vec<Vec<u32>>,
    /// Idle load-to-use latency from a CPU of node `[from]` to memory of node `[to]`.
    pub idle_latency_ns: Vec<Vec<f64>>,
    pub loaded_latency: Vec<CurvePoint>,
    pub links: Vec<Link>,
    /// `routes[from][to]`: the links remote traffic crosses (empty for local).
    pub routes: Vec<Vec<Vec<Hop>>>,
    /// Data and unified caches from level 2 up, one entry per instance; empty if unknown.
    #[serde(default)]
    pub caches: Vec<Cache>,
    /// Where values came from when they are not in the source (field -> reason), e.g. estimates.
    #[serde(default)]
    pub notes: BTreeMap<String, String>,
}

impl Machine {
    pub fn from_json(json: &str) -> Result<Machine, TopologyError> {
        let de = &mut serde_json::Deserializer::from_str(json);
        let m: Machine = serde_path_to_error::deserialize(de).map_err(TopologyError::from_serde)?;
        m.validate()?;
        Ok(m)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("machine serialises")
    }

    pub fn nr_nodes(&self) -> usize {
        self.nodes.len()
    }

    pub fn nr_pus(&self) -> usize {
        self.pus.len()
    }

    /// The set of node OS indexes.
    pub fn nodeset(&self) -> NodeSet {
        NodeSet::from_indexes(self.nodes.iter().map(|n| n.os_index))
    }

    /// The set of PU OS indexes.
    pub fn cpuset(&self) -> CpuSet {
        CpuSet::from_indexes(self.pus.iter().map(|p| p.os_index))
    }

    /// Logical index of the node with this OS index.
    pub fn node_logical(&self, os_index: u32) -> Option<usize> {
        self.nodes.iter().position(|n| n.os_index == os_index)
    }

    /// CPUs of the nodes in `nodes` (what `numactl --cpunodebind` binds to).
    pub fn cpus_of_nodes(&self, nodes: &NodeSet) -> CpuSet {
        self.nodes.iter().filter(|n| nodes.contains(n.os_index)).fold(CpuSet::new(), |acc, n| acc.union(&n.cpuset))
    }

    pub fn total_memory_bytes(&self) -> u64 {
        self.nodes.iter().map(|n| n.local_memory_bytes).sum()
    }
}

/// Piecewise-linear interpolation of a loaded-latency curve; flat outside its range.
pub fn curve_factor(curve: &[CurvePoint], rho: f64) -> f64 {
    match curve {
        [] => 1.0,
        [only] => only.factor,
        _ => {
            if rho <= curve[0].utilisation {
                return curve[0].factor;
            }
            for w in curve.windows(2) {
                let (a, b) = (w[0], w[1]);
                if rho <= b.utilisation {
                    let t = (rho - a.utilisation) / (b.utilisation - a.utilisation);
                    return a.factor + t * (b.factor - a.factor);
                }
            }
            curve[curve.len() - 1].factor
        }
    }
}

/// A loaded-latency curve ready for many look-ups (the contention solver makes one per memory
/// controller in every pass of every solve): `curve_factor` with each segment's differences
/// worked out once and its upper utilisations in a list of their own to scan. The same
/// subtractions give the same differences, so the factor is `curve_factor`'s, bit for bit.
#[derive(Clone, Debug)]
pub struct CurveTable {
    /// The factor of a curve of no or one point, whatever the utilisation.
    flat: Option<f64>,
    first: CurvePoint,
    /// Each segment's upper utilisation, in the curve's order.
    upper: Vec<f64>,
    /// Each segment's lower point and its differences: `[utilisation, factor, du, df]`.
    segments: Vec<[f64; 4]>,
    last: f64,
}

impl CurveTable {
    pub fn new(curve: &[CurvePoint]) -> Self {
        let flat = match curve {
            [] => Some(1.0),
            [only] => Some(only.factor),
            _ => None,
        };
        let zero = CurvePoint { utilisation: 0.0, factor: 1.0 };
        let segments = curve
            .windows(2)
            .map(|w| {
                let (a, b) = (w[0], w[1]);
                [a.utilisation, a.factor, b.utilisation - a.utilisation, b.factor - a.factor]
            })
            .collect();
        CurveTable {
            flat,
            first: curve.first().copied().unwrap_or(zero),
            upper: curve.iter().skip(1).map(|p| p.utilisation).collect(),
            segments,
            last: curve.last().map_or(1.0, |p| p.factor),
        }
    }

    /// `curve_factor(curve, rho)` of the curve the table was made of.
    #[inline]
    pub fn factor(&self, rho: f64) -> f64 {
        if let Some(f) = self.flat {
            return f;
        }
        if rho <= self.first.utilisation {
            return self.first.factor;
        }
        match self.upper.iter().position(|&u| rho <= u) {
            Some(i) => {
                let [u, f, du, df] = self.segments[i];
                let t = (rho - u) / du;
                f + t * df
            }
            None => self.last,
        }
    }
}

/// Intel MLC `--loaded_latency` on a 2-socket Xeon Silver 4110 (12 x DDR4-2666), normalised to
/// its idle latency (81.96 ns) and to its highest achieved bandwidth (135.66 GB/s).
/// Source: community.intel.com, "Intel Memory Latency Checker v3.5 test" (docs/contention.md §3).
pub fn default_loaded_latency() -> Vec<CurvePoint> {
    const IDLE_NS: f64 = 81.96;
    const MAX_GBPS: f64 = 135.66;
    let table: [(f64, f64); 9] = [
        (1.24, 81.96),
        (2.58, 84.20),
        (9.72, 87.81),
        (18.36, 90.16),
        (29.47, 92.29),
        (42.70, 94.56),
        (68.36, 98.94),
        (131.28, 123.71),
        (135.66, 130.31),
    ];
    let mut pts = vec![CurvePoint { utilisation: 0.0, factor: 1.0 }];
    pts.extend(table.iter().map(|&(bw, ns)| CurvePoint { utilisation: bw / MAX_GBPS, factor: ns / IDLE_NS }));
    pts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_curve_table_gives_curve_factor_bit_for_bit() {
        // At, between, below and above the points (and NaN), for curves of 0, 1, 2 and 10 points.
        let c = default_loaded_latency();
        for curve in [&c[..0], &c[..1], &c[3..5], &c[..]] {
            let table = CurveTable::new(curve);
            let at = curve.iter().map(|p| p.utilisation);
            let rhos: Vec<f64> = at.chain((0..=1200).map(|i| i as f64 / 1000.0 - 0.1)).chain([f64::NAN]).collect();
            for rho in rhos {
                assert_eq!(
                    table.factor(rho).to_bits(),
                    curve_factor(curve, rho).to_bits(),
                    "{} points, {rho}",
                    curve.len()
                );
            }
        }
    }

    #[test]
    fn default_curve_is_flat_then_knee() {
        let c = default_loaded_latency();
        assert_eq!(curve_factor(&c, 0.0), 1.0);
        let half = curve_factor(&c, 0.5);
        assert!(half > 1.15 && half < 1.25, "{half}");
        let top = curve_factor(&c, 1.0);
        assert!((top - 130.31 / 81.96).abs() < 1e-9);
        assert_eq!(curve_factor(&c, 5.0), top);
    }

    #[test]
    fn the_window_keeps_fewer_lines_in_flight_at_more_instructions_per_line() {
        let mut c = Core {
            os_index: 0,
            logical_index: 0,
            package: 0,
            node: 0,
            cpuset: CpuSet::from_indexes([0]),
            frequency_hz: 2e9,
            mlp: 50.0,
            stream_mlp: Some(45.0),
            add_latency_ns: None,
            window_instructions: None,
            prefetch_lines: Some(20.0),
        };
        // No window: the streams' figure whatever the instructions.
        assert_eq!(c.lines_in_flight(1, Some(48.0)), 45.0);
        c.window_instructions = Some(500.0);
        assert_eq!(c.lines_in_flight(1, Some(20.0)), 45.0); // 500 / 20 + 20
        assert!((c.lines_in_flight(1, Some(48.0)) - (500.0 / 48.0 + 20.0)).abs() < 1e-12);
        assert_eq!(c.lines_in_flight(1, Some(5.0)), 50.0); // 120 wanted, the core's 50
        assert_eq!(c.lines_in_flight(2, None), 50.0); // unstated: 2 x 45 up to 50
    }
}
