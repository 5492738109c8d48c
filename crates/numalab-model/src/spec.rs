//! `MachineSpec`: the compact form a preset file (or an importer) gives, resolved into an explicit
//! [`Machine`]. A spec either states a regular shape (`topology`: packages x nodes x cores x
//! threads, numbered the way Linux numbers CPUs) or lists its nodes and cores explicitly
//! (sysfs and hwloc imports). What it leaves out is derived by documented rules:
//! - distances: 10 local, 20 remote (the kernel's `REMOTE_DISTANCE` when firmware gives no SLIT);
//! - idle latency: `local_ns x distance / 10` (docs/contention.md §2);
//! - loaded-latency curve: the MLC curve of [`default_loaded_latency`];
//! - routes: fewest link hops, ties to the lowest node ids (static routing).

use std::collections::{BTreeMap, VecDeque};

use serde::Deserialize;

use crate::bitmap::{CpuSet, NodeSet};
use crate::error::TopologyError;
use crate::machine::{default_loaded_latency, Cache, Core, CurvePoint, Hop, Link, Machine, NumaNode, Package, Pu};

const GIB: f64 = (1u64 << 30) as f64;

#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum OneOrMany<T> {
    One(T),
    Many(Vec<T>),
}

impl<T: Copy> OneOrMany<T> {
    fn get(&self, i: usize, path: &str, n: usize) -> Result<T, TopologyError> {
        match self {
            OneOrMany::One(v) => Ok(*v),
            OneOrMany::Many(v) if v.len() == n => Ok(v[i]),
            OneOrMany::Many(v) => {
                Err(TopologyError::field(path, format!("has {} values, expected 1 or {n} (one per node)", v.len())))
            }
        }
    }
}

#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum CpuNumbering {
    /// Node 0 holds CPUs 0..k, node 1 the next k, ...; SMT siblings adjacent.
    #[default]
    NodeMajor,
    /// First hardware thread of every core (node-major), then all second threads, ...
    /// (how Linux numbers Intel and AMD SMT systems).
    SmtLast,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShapeSpec {
    pub packages: u32,
    pub nodes_per_package: u32,
    pub cores_per_node: u32,
    #[serde(default = "one")]
    pub threads_per_core: u32,
    #[serde(default)]
    pub cpu_numbering: CpuNumbering,
}

fn one() -> u32 {
    1
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    pub os_index: u32,
    #[serde(default)]
    pub package: u32,
    /// Linux cpulist of the node's PUs (may be empty: memory-only node).
    pub cpus: String,
    pub memory_bytes: Option<u64>,
    pub bandwidth_gbps: Option<f64>,
    /// hwloc's memory subtype (`HBM`, `NVM`, `CXL-DRAM`; absent = DRAM): docs/tiering.md §2.
    #[serde(default)]
    pub subtype: Option<String>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoreSpec {
    /// Linux cpulist of the core's hardware threads.
    pub cpus: String,
    pub os_index: Option<u32>,
}

#[derive(Clone, Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct MemorySpec {
    pub node_gib: Option<OneOrMany<f64>>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LatencySpec {
    pub local_ns: f64,
    pub matrix_ns: Option<Vec<Vec<f64>>>,
    /// `[[utilisation, factor], ...]`
    pub loaded_curve: Option<Vec<[f64; 2]>>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BandwidthSpec {
    pub node_gbps: OneOrMany<f64>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    pub nodes: [u32; 2],
    /// One value for both directions, or `[a->b, b->a]`.
    pub gbps: OneOrMany<f64>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteSpec {
    pub from: u32,
    pub to: u32,
    /// Intermediate nodes, in order.
    #[serde(default)]
    pub via: Vec<u32>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoreParams {
    pub frequency_ghz: f64,
    pub mlp: f64,
    /// Lines one address stream keeps in flight (docs/contention.md §4); absent: `mlp`.
    #[serde(default)]
    pub stream_mlp: Option<f64>,
    /// Latency of one dependent floating-point add, ns (docs/contention.md §4); absent: 4 cycles.
    #[serde(default)]
    pub add_latency_ns: Option<f64>,
    /// Instructions in flight past an unretired load (docs/contention.md §4); absent: no limit.
    #[serde(default)]
    pub window_instructions: Option<f64>,
    /// Prefetched lines ahead of a demand stream, beside the window's (docs/contention.md §4).
    #[serde(default)]
    pub prefetch_lines: Option<f64>,
}

/// A cache level: `size_kib` per instance, one instance per `per` (`core`, `node`, `package`;
/// with `cores = k`, per group of k consecutive cores of a node, e.g. a Zen CCX or a Bulldozer
/// module), or one instance of the listed `cpus` (what the importers write).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheSpec {
    pub level: u8,
    pub size_kib: f64,
    #[serde(default)]
    pub per: Option<String>,
    #[serde(default)]
    pub cores: Option<u32>,
    #[serde(default)]
    pub cpus: Option<String>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachineSpec {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default = "page_4k")]
    pub page_size_bytes: u64,
    pub topology: Option<ShapeSpec>,
    pub nodes: Option<Vec<NodeSpec>>,
    pub cores: Option<Vec<CoreSpec>>,
    #[serde(default)]
    pub memory: MemorySpec,
    pub distances: Option<Vec<Vec<u32>>>,
    pub latency: LatencySpec,
    pub bandwidth: BandwidthSpec,
    #[serde(default)]
    pub links: Vec<LinkSpec>,
    #[serde(default)]
    pub routes: Vec<RouteSpec>,
    pub core: CoreParams,
    #[serde(default)]
    pub caches: Vec<CacheSpec>,
    #[serde(default)]
    pub notes: BTreeMap<String, String>,
}

fn page_4k() -> u64 {
    4096
}

impl MachineSpec {
    pub fn from_json(json: &str) -> Result<MachineSpec, TopologyError> {
        let de = &mut serde_json::Deserializer::from_str(json);
        serde_path_to_error::deserialize(de).map_err(TopologyError::from_serde)
    }

    /// Resolve into an explicit, validated machine.
    pub fn resolve(&self) -> Result<Machine, TopologyError> {
        let (node_rows, core_rows) = self.layout()?;
        let n = node_rows.len();
        let mut nodes = Vec::with_capacity(n);
        for (i, row) in node_rows.iter().enumerate() {
            let memory = match row.memory_bytes {
                Some(b) => b,
                None => {
                    let gib = self
                        .memory
                        .node_gib
                        .as_ref()
                        .ok_or_else(|| TopologyError::field("memory.node_gib", "missing: give each node's memory"))?
                        .get(i, "memory.node_gib", n)?;
                    (gib * GIB).round() as u64
                }
            };
            let bandwidth = match row.bandwidth_gbps {
                Some(b) => b,
                None => self.bandwidth.node_gbps.get(i, "bandwidth.node_gbps", n)?,
            };
            nodes.push(NumaNode {
                os_index: row.os_index,
                logical_index: i as u32,
                package: row.package,
                cpuset: row.cpus.clone(),
                local_memory_bytes: memory,
                bandwidth_gbps: bandwidth,
                subtype: row.subtype.clone(),
            });
        }
        let packages = packages_of(&nodes);
        let (cores, pus) = self.cores_and_pus(&nodes, &core_rows)?;
        let distances = self.distances.clone().unwrap_or_else(|| default_distances(n));
        let idle_latency_ns = match &self.latency.matrix_ns {
            Some(m) => m.clone(),
            None => {
                distances.iter().map(|r| r.iter().map(|&d| self.latency.local_ns * d as f64 / 10.0).collect()).collect()
            }
        };
        let loaded_latency = match &self.latency.loaded_curve {
            Some(c) => c.iter().map(|&[u, f]| CurvePoint { utilisation: u, factor: f }).collect(),
            None => default_loaded_latency(),
        };
        let links = self.links()?;
        let mut m = Machine {
            name: self.name.clone(),
            description: self.description.clone(),
            page_size_bytes: self.page_size_bytes,
            packages,
            nodes,
            cores,
            pus,
            distances,
            idle_latency_ns,
            loaded_latency,
            links,
            routes: Vec::new(),
            caches: Vec::new(),
            notes: self.notes.clone(),
        };
        m.caches = self.caches(&m)?;
        if self.latency.local_ns.is_nan() || self.latency.local_ns <= 0.0 {
            return Err(TopologyError::field(
                "latency.local_ns",
                format!("must be > 0, got {}", self.latency.local_ns),
            ));
        }
        if m.distances.len() == n && m.distances.iter().all(|r| r.len() == n) {
            m.routes = self.routes(&m)?;
        } else {
            m.routes = vec![vec![Vec::new(); n]; n];
        }
        m.validate()?;
        Ok(m)
    }

    /// Node rows (os_index, package, cpus, overrides) and core cpusets, from the shape or explicit lists.
    fn layout(&self) -> Result<(Vec<NodeRow>, Vec<CpuSet>), TopologyError> {
        match (&self.topology, &self.nodes) {
            (Some(_), Some(_)) => {
                Err(TopologyError::field("nodes", "give either topology (a regular shape) or nodes, not both"))
            }
            (None, None) => Err(TopologyError::field(
                "topology",
                "missing: give topology (a regular shape) or an explicit nodes list",
            )),
            (Some(shape), None) => shape_layout(shape),
            (None, Some(list)) => {
                let mut rows = Vec::new();
                for (i, ns) in list.iter().enumerate() {
                    let cpus = CpuSet::parse_list(&ns.cpus)
                        .map_err(|e| TopologyError::field(format!("nodes[{i}].cpus"), e))?;
                    rows.push(NodeRow {
                        os_index: ns.os_index,
                        package: ns.package,
                        cpus,
                        memory_bytes: ns.memory_bytes,
                        bandwidth_gbps: ns.bandwidth_gbps,
                        subtype: ns.subtype.clone(),
                    });
                }
                rows.sort_by_key(|r| r.os_index);
                let cores = match &self.cores {
                    Some(cs) => cs
                        .iter()
                        .enumerate()
                        .map(|(i, c)| {
                            CpuSet::parse_list(&c.cpus).map_err(|e| TopologyError::field(format!("cores[{i}].cpus"), e))
                        })
                        .collect::<Result<Vec<_>, _>>()?,
                    // Without core information every PU is its own core.
                    None => rows.iter().flat_map(|r| r.cpus.iter().map(|c| CpuSet::from_indexes([c]))).collect(),
                };
                Ok((rows, cores))
            }
        }
    }

    fn cores_and_pus(&self, nodes: &[NumaNode], core_sets: &[CpuSet]) -> Result<(Vec<Core>, Vec<Pu>), TopologyError> {
        let node_of = |cpu: u32| nodes.iter().find(|n| n.cpuset.contains(cpu));
        let mut rows: Vec<(u32, u32, u32, CpuSet)> = Vec::new(); // (package, node, first pu, cpuset)
        for (i, set) in core_sets.iter().enumerate() {
            let first = set
                .first()
                .ok_or_else(|| TopologyError::field(format!("cores[{i}].cpus"), "a core needs at least one PU"))?;
            let node = node_of(first)
                .ok_or_else(|| TopologyError::field(format!("cores[{i}].cpus"), format!("PU {first} is on no node")))?;
            for cpu in set.iter() {
                if node_of(cpu).map(|n| n.os_index) != Some(node.os_index) {
                    return Err(TopologyError::field(
                        format!("cores[{i}].cpus"),
                        format!("PU {cpu} is not on node {} with the rest of its core", node.os_index),
                    ));
                }
            }
            rows.push((node.package, node.os_index, first, set.clone()));
        }
        rows.sort_by_key(|r| (r.0, r.1, r.2));
        let params = &self.core;
        let mut cores = Vec::with_capacity(rows.len());
        let mut pus = Vec::new();
        let mut per_package: BTreeMap<u32, u32> = BTreeMap::new();
        // Each listed core's cpuset, parsed once (the first core listing a set wins): looking it up
        // per core by reparsing every list cost the square of the core count.
        let mut listed: std::collections::HashMap<CpuSet, Option<u32>> = std::collections::HashMap::new();
        for c in self.cores.iter().flatten() {
            if let Ok(set) = CpuSet::parse_list(&c.cpus) {
                listed.entry(set).or_insert(c.os_index);
            }
        }
        for (li, (package, node, _first, set)) in rows.into_iter().enumerate() {
            let explicit = listed.get(&set).copied().flatten();
            let counter = per_package.entry(package).or_insert(0);
            let os_index = explicit.unwrap_or(*counter);
            *counter += 1;
            for cpu in set.iter() {
                pus.push(Pu { os_index: cpu, logical_index: pus.len() as u32, core: li as u32, node });
            }
            cores.push(Core {
                os_index,
                logical_index: li as u32,
                package,
                node,
                cpuset: set,
                frequency_hz: params.frequency_ghz * 1e9,
                mlp: params.mlp,
                stream_mlp: params.stream_mlp,
                add_latency_ns: params.add_latency_ns,
                window_instructions: params.window_instructions,
                prefetch_lines: params.prefetch_lines,
            });
        }
        Ok((cores, pus))
    }

    /// Cache instances: one per core, node or package of the level's `per`, or the listed `cpus`.
    fn caches(&self, m: &Machine) -> Result<Vec<Cache>, TopologyError> {
        let mut out = Vec::new();
        for (i, c) in self.caches.iter().enumerate() {
            let path = |k: &str| format!("caches[{i}].{k}");
            if !(c.size_kib.is_finite() && c.size_kib > 0.0) {
                return Err(TopologyError::field(path("size_kib"), format!("must be > 0, got {}", c.size_kib)));
            }
            let size_bytes = (c.size_kib * 1024.0).round() as u64;
            let sets: Vec<CpuSet> = match (&c.per, &c.cpus) {
                (Some(per), None) => match per.as_str() {
                    "core" if c.cores.is_some_and(|k| k > 1) => {
                        let k = c.cores.unwrap_or(1) as usize;
                        let mut groups: Vec<CpuSet> = Vec::new();
                        for node in &m.nodes {
                            let of_node: Vec<&Core> = m.cores.iter().filter(|x| x.node == node.os_index).collect();
                            for g in of_node.chunks(k) {
                                groups.push(g.iter().fold(CpuSet::new(), |acc, x| acc.union(&x.cpuset)));
                            }
                        }
                        groups
                    }
                    "core" => m.cores.iter().map(|x| x.cpuset.clone()).collect(),
                    "node" => m.nodes.iter().map(|x| x.cpuset.clone()).filter(|s| s.first().is_some()).collect(),
                    "package" => m.packages.iter().map(|x| x.cpuset.clone()).collect(),
                    other => {
                        return Err(TopologyError::field(
                            path("per"),
                            format!("'{other}' is not one of core, node, package"),
                        ))
                    }
                },
                (None, Some(cpus)) => {
                    vec![CpuSet::parse_list(cpus).map_err(|e| TopologyError::field(path("cpus"), e))?]
                }
                _ => return Err(TopologyError::field(format!("caches[{i}]"), "give exactly one of per or cpus")),
            };
            out.extend(sets.into_iter().map(|cpuset| Cache { level: c.level, size_bytes, cpuset }));
        }
        Ok(out)
    }

    fn links(&self) -> Result<Vec<Link>, TopologyError> {
        self.links
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let gbps = match &l.gbps {
                    OneOrMany::One(v) => [*v, *v],
                    OneOrMany::Many(v) if v.len() == 2 => [v[0], v[1]],
                    OneOrMany::Many(v) => {
                        return Err(TopologyError::field(
                            format!("links[{i}].gbps"),
                            format!("has {} values, expected 1 or 2 (a->b, b->a)", v.len()),
                        ))
                    }
                };
                Ok(Link { nodes: l.nodes, gbps })
            })
            .collect()
    }

    fn routes(&self, m: &Machine) -> Result<Vec<Vec<Vec<Hop>>>, TopologyError> {
        let n = m.nodes.len();
        let mut table = vec![vec![Vec::new(); n]; n];
        if m.links.is_empty() {
            return Ok(table);
        }
        for (i, row) in table.iter_mut().enumerate() {
            for (j, cell) in row.iter_mut().enumerate() {
                if i != j {
                    *cell = shortest_route(m, i, j).unwrap_or_default();
                }
            }
        }
        for (k, r) in self.routes.iter().enumerate() {
            let p = format!("routes[{k}]");
            let mut path = vec![r.from];
            path.extend(&r.via);
            path.push(r.to);
            let mut hops = Vec::new();
            for w in path.windows(2) {
                hops.push(find_hop(m, w[0], w[1]).ok_or_else(|| {
                    TopologyError::field(&p, format!("no link between node {} and node {}", w[0], w[1]))
                })?);
            }
            let (Some(a), Some(b)) = (m.node_logical(r.from), m.node_logical(r.to)) else {
                return Err(TopologyError::field(p, format!("node {} or {} does not exist", r.from, r.to)));
            };
            table[a][b] = hops;
        }
        Ok(table)
    }
}

struct NodeRow {
    os_index: u32,
    package: u32,
    cpus: CpuSet,
    memory_bytes: Option<u64>,
    bandwidth_gbps: Option<f64>,
    subtype: Option<String>,
}

fn shape_layout(s: &ShapeSpec) -> Result<(Vec<NodeRow>, Vec<CpuSet>), TopologyError> {
    for (v, name) in [
        (s.packages, "packages"),
        (s.nodes_per_package, "nodes_per_package"),
        (s.cores_per_node, "cores_per_node"),
        (s.threads_per_core, "threads_per_core"),
    ] {
        if v == 0 {
            return Err(TopologyError::field(format!("topology.{name}"), "must be at least 1"));
        }
    }
    let nodes = s.packages * s.nodes_per_package;
    let total_cores = nodes * s.cores_per_node;
    let tpc = s.threads_per_core;
    let pu_of = |core: u32, t: u32| match s.cpu_numbering {
        CpuNumbering::NodeMajor => core * tpc + t,
        CpuNumbering::SmtLast => t * total_cores + core,
    };
    let mut rows = Vec::new();
    let mut cores = Vec::new();
    for node in 0..nodes {
        let mut cpus = CpuSet::new();
        for c in 0..s.cores_per_node {
            let core = node * s.cores_per_node + c;
            let set = CpuSet::from_indexes((0..tpc).map(|t| pu_of(core, t)));
            cpus = cpus.union(&set);
            cores.push(set);
        }
        rows.push(NodeRow {
            os_index: node,
            package: node / s.nodes_per_package,
            cpus,
            memory_bytes: None,
            bandwidth_gbps: None,
            subtype: None,
        });
    }
    Ok((rows, cores))
}

fn packages_of(nodes: &[NumaNode]) -> Vec<Package> {
    let mut by_os: BTreeMap<u32, (CpuSet, NodeSet)> = BTreeMap::new();
    for n in nodes {
        let e = by_os.entry(n.package).or_default();
        e.0 = e.0.union(&n.cpuset);
        e.1.set(n.os_index);
    }
    by_os
        .into_iter()
        .enumerate()
        .map(|(li, (os, (cpuset, nodeset)))| Package { os_index: os, logical_index: li as u32, cpuset, nodeset })
        .collect()
}

pub fn default_distances(n: usize) -> Vec<Vec<u32>> {
    (0..n).map(|i| (0..n).map(|j| if i == j { 10 } else { 20 }).collect()).collect()
}

fn find_hop(m: &Machine, from: u32, to: u32) -> Option<Hop> {
    m.links.iter().enumerate().find_map(|(k, l)| {
        if l.nodes == [from, to] {
            Some(Hop { link: k as u32, dir: 0 })
        } else if l.nodes == [to, from] {
            Some(Hop { link: k as u32, dir: 1 })
        } else {
            None
        }
    })
}

/// Breadth-first search over links from node (logical) `a` to `b`, visiting neighbours in
/// ascending OS index, so the route is the fewest-hop one with ties to the lowest node ids.
fn shortest_route(m: &Machine, a: usize, b: usize) -> Option<Vec<Hop>> {
    let n = m.nodes.len();
    let mut prev: Vec<Option<(usize, Hop)>> = vec![None; n];
    let mut seen = vec![false; n];
    seen[a] = true;
    let mut q = VecDeque::from([a]);
    while let Some(u) = q.pop_front() {
        if u == b {
            break;
        }
        let u_os = m.nodes[u].os_index;
        let mut nbrs: Vec<(usize, Hop)> = m
            .links
            .iter()
            .enumerate()
            .filter_map(|(k, l)| {
                let (dir, other) = if l.nodes[0] == u_os {
                    (0, l.nodes[1])
                } else if l.nodes[1] == u_os {
                    (1, l.nodes[0])
                } else {
                    return None;
                };
                m.node_logical(other).map(|v| (v, Hop { link: k as u32, dir }))
            })
            .collect();
        nbrs.sort_by_key(|(v, _)| *v);
        for (v, hop) in nbrs {
            if !seen[v] {
                seen[v] = true;
                prev[v] = Some((u, hop));
                q.push_back(v);
            }
        }
    }
    if !seen[b] {
        return None;
    }
    let mut hops = Vec::new();
    let mut at = b;
    while let Some((p, hop)) = prev[at] {
        hops.push(hop);
        at = p;
    }
    hops.reverse();
    Some(hops)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(caches: &str) -> Result<Machine, TopologyError> {
        let json = format!(
            r#"{{"name": "c", "topology": {{"packages": 2, "nodes_per_package": 2, "cores_per_node": 4, "threads_per_core": 2, "cpu_numbering": "smt-last"}},
            "memory": {{"node_gib": 1}}, "latency": {{"local_ns": 100}}, "bandwidth": {{"node_gbps": 10}},
            "core": {{"frequency_ghz": 2, "mlp": 10}}, "caches": {caches}}}"#
        );
        MachineSpec::from_json(&json)?.resolve()
    }

    #[test]
    fn cache_instances_follow_per_and_cores() {
        let m = spec(
            r#"[{"level": 2, "size_kib": 256, "per": "core"}, {"level": 3, "size_kib": 8192, "per": "core", "cores": 2},
               {"level": 4, "size_kib": 65536, "per": "package"}]"#,
        )
        .unwrap();
        let count = |l: u8| m.caches.iter().filter(|c| c.level == l).count();
        assert_eq!((count(2), count(3), count(4)), (16, 8, 2));
        // An L2 holds a core's two PUs (smt-last: PU k and k + 16); an L3 two cores of one node.
        assert_eq!(m.caches[0].cpuset.to_list_string(), "0,16");
        let l3 = m.caches.iter().find(|c| c.level == 3).unwrap();
        assert_eq!(l3.cpuset.to_list_string(), "0-1,16-17");
        assert_eq!(l3.size_bytes, 8 << 20);
    }

    #[test]
    fn bad_caches_are_refused_by_key() {
        let e = spec(r#"[{"level": 3, "size_kib": 8192, "per": "socket"}]"#).unwrap_err().to_string();
        assert!(e.contains("caches[0].per") && e.contains("core, node, package"), "{e}");
        let e = spec(r#"[{"level": 3, "size_kib": 8192, "cpus": "0-99"}]"#).unwrap_err().to_string();
        assert!(e.contains("caches[0].cpuset"), "{e}");
        let e = spec(r#"[{"level": 3, "size_kib": 8192, "per": "node"}, {"level": 3, "size_kib": 1, "cpus": "0"}]"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("cpuset: overlaps another L3 instance"), "{e}");
        let e = spec(r#"[{"level": 3, "size_kib": 0, "per": "node"}]"#).unwrap_err().to_string();
        assert!(e.contains("caches[0].size_kib"), "{e}");
    }
}
