//! A run as the user asks for it, checked once against the machine and turned into the engine's
//! resolved inputs. Node and CPU lists arrive in numactl's grammar and are parsed here, by the
//! one parser (`numalab_model::nodestring`); every rule that refuses a run lives here or in the
//! types it builds (`MemPolicy::check`, `Balancing::check`, `WorkloadSpec::check`), so the CLI, the
//! study files and the Python API refuse the same inputs with the same words.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use numalab_model::{parse_cpustring, parse_nodestring, CpuSet, Machine, MemPolicy, PolicyFlags, PolicyMode};

use crate::engine::check;
use crate::input::{Placement, Places, ProcBind, SimConfig, WorkloadSpec};
use crate::sched;

/// A memory policy as numactl's options write it: a mode and a node string (`all`, `0-3,5`,
/// `!1`, `+0-1`), weighted-interleave weights per node, and numactl's `-b` (`MPOL_F_NUMA_BALANCING`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyRequest {
    pub mode: PolicyMode,
    #[serde(default)]
    pub nodes: Option<String>,
    #[serde(default)]
    pub weights: BTreeMap<u32, u32>,
    /// numactl `-b/--balancing` with `--membind`: NUMA balancing may migrate the pages among the
    /// bound nodes (`mm/mempolicy.c: sanitize_mpol_flags`, Linux 5.12+).
    #[serde(default)]
    pub numa_balancing: bool,
}

impl Default for PolicyRequest {
    fn default() -> Self {
        PolicyRequest { mode: PolicyMode::Default, nodes: None, weights: BTreeMap::new(), numa_balancing: false }
    }
}

/// numactl's `-b` as numalab sim spells it (its `--balancing` is the `kernel.numa_balancing` sysctl).
pub const MEMBIND_BALANCING: &str = "-b/--membind-balancing";

/// Which option wrote a mode, for error messages.
pub fn option_name(mode: PolicyMode) -> &'static str {
    match mode {
        PolicyMode::Default => "default",
        PolicyMode::Local => "--localalloc",
        PolicyMode::Preferred => "--preferred",
        PolicyMode::Bind => "--membind",
        PolicyMode::Interleave => "--interleave",
        PolicyMode::PreferredMany => "--preferred-many",
        PolicyMode::WeightedInterleave => "--weighted-interleave",
    }
}

impl PolicyRequest {
    /// The policy `set_mempolicy` would install, or what is wrong with the request.
    pub fn resolve(&self, m: &Machine) -> Result<MemPolicy, String> {
        let opt = option_name(self.mode);
        let nodes = match (&self.nodes, self.mode.needs_nodes() || self.mode == PolicyMode::Preferred) {
            (Some(s), true) => parse_nodestring(s, &m.nodeset()).map_err(|e| format!("{opt}: {e}"))?,
            (None, true) => return Err(format!("{opt} needs a node list (e.g. {opt}=0 or {opt}=all)")),
            (Some(s), false) => return Err(format!("{opt} takes no node list, got '{s}'")),
            (None, false) => Default::default(),
        };
        if self.mode == PolicyMode::Preferred && nodes.weight() != 1 {
            let given = self.nodes.as_deref().unwrap_or_default();
            return Err(format!("--preferred takes exactly one node, got '{given}' ({} nodes)", nodes.weight()));
        }
        let mut weights = BTreeMap::new();
        if !self.weights.is_empty() && self.mode != PolicyMode::WeightedInterleave {
            return Err(format!("weights are given but the policy is {}, not weighted-interleave", self.mode));
        }
        for (&node, &w) in &self.weights {
            if !nodes.contains(node) {
                return Err(format!(
                    "weight given for node {node}, which is not in the weighted-interleave nodes ({nodes})"
                ));
            }
            if !(1..=255).contains(&w) {
                // /sys/kernel/mm/mempolicy/weighted_interleave/nodeN accepts 1..255 (u8, 0 refused).
                return Err(format!("weight of node {node} must be 1..255, got {w}"));
            }
            weights.insert(node, w as u8);
        }
        if self.numa_balancing && self.mode != PolicyMode::Bind {
            // numactl: "-b ... valid only with --membind"; the kernel refuses the flag with any
            // other mode (sanitize_mpol_flags: -EINVAL).
            return Err(format!(
                "{MEMBIND_BALANCING} needs --membind (MPOL_F_NUMA_BALANCING is only valid with MPOL_BIND), not {opt}"
            ));
        }
        let flags = PolicyFlags { numa_balancing: self.numa_balancing };
        let policy = MemPolicy { mode: self.mode, nodes, flags, weights };
        policy.check().map_err(|e| e.0)?;
        Ok(policy)
    }
}

/// Placement as numactl and OpenMP write it: a memory policy, a CPU binding (`--cpunodebind` or
/// `--physcpubind`), `OMP_PROC_BIND` and `OMP_PLACES`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlacementRequest {
    #[serde(default)]
    pub policy: PolicyRequest,
    #[serde(default)]
    pub cpunodebind: Option<String>,
    #[serde(default)]
    pub physcpubind: Option<String>,
    #[serde(default)]
    pub proc_bind: ProcBind,
    #[serde(default)]
    pub places: Places,
}

impl PlacementRequest {
    pub fn resolve(&self, m: &Machine) -> Result<Placement, String> {
        let policy = self.policy.resolve(m)?;
        let cpus = match (&self.cpunodebind, &self.physcpubind) {
            (Some(_), Some(_)) => return Err("give --cpunodebind or --physcpubind, not both".into()),
            (Some(s), None) => {
                let nodes = parse_nodestring(s, &m.nodeset()).map_err(|e| format!("--cpunodebind: {e}"))?;
                let cpus = m.cpus_of_nodes(&nodes);
                if cpus.is_empty() {
                    return Err(format!("--cpunodebind={s}: node(s) {nodes} have no CPUs"));
                }
                Some(cpus)
            }
            (None, Some(s)) => Some(parse_cpustring(s, &m.cpuset()).map_err(|e| format!("--physcpubind: {e}"))?),
            (None, None) => None,
        };
        Ok(Placement { policy, cpus, proc_bind: self.proc_bind, places: self.places })
    }
}

/// The result document's `placement`: the policy in numactl's words (`all` when every node is
/// named), the CPU binding as a cpulist, and the OpenMP binding when threads are bound.
#[derive(Clone, Debug, Serialize)]
pub struct PlacementDoc {
    pub policy: &'static str,
    pub nodes: Option<String>,
    pub weights: BTreeMap<String, u8>,
    /// numactl `-b` with `--membind` (`MPOL_F_NUMA_BALANCING`); written only when set.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub membind_balancing: bool,
    pub cpubind: Option<String>,
    pub omp_proc_bind: ProcBind,
    pub omp_places: Option<Places>,
}

impl PlacementDoc {
    pub fn new(p: &Placement, m: &Machine) -> Self {
        let nodes = &p.policy.nodes;
        PlacementDoc {
            policy: p.policy.mode.name(),
            nodes: if nodes.is_empty() {
                None
            } else if *nodes == m.nodeset() {
                Some("all".into())
            } else {
                Some(nodes.to_list_string())
            },
            weights: p.policy.weights.iter().map(|(n, w)| (format!("node{n}"), *w)).collect(),
            membind_balancing: p.policy.flags.numa_balancing,
            cpubind: p.cpus.as_ref().map(CpuSet::to_list_string),
            omp_proc_bind: p.proc_bind,
            omp_places: (p.proc_bind != ProcBind::False).then_some(p.places),
        }
    }
}

/// The engine's inputs for one run, every rule checked.
#[derive(Clone, Debug)]
pub struct RunSpec {
    pub workload: WorkloadSpec,
    pub placement: Placement,
    pub config: SimConfig,
}

/// Why a run specification was refused: the user's input, said in the user's words.
#[derive(Clone, Debug, PartialEq)]
pub struct SpecError(pub String);

impl std::fmt::Display for SpecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl RunSpec {
    /// Check every rule of a run against `m` and resolve node and CPU strings.
    pub fn new(
        m: &Machine,
        mut workload: WorkloadSpec,
        placement: &PlacementRequest,
        region_policies: &[Option<PolicyRequest>],
        config: SimConfig,
    ) -> Result<RunSpec, SpecError> {
        let bad = |e: String| SpecError(e);
        if region_policies.len() != workload.regions.len() {
            return Err(bad(format!(
                "{} region policies for {} regions of workload {}",
                region_policies.len(),
                workload.regions.len(),
                workload.name
            )));
        }
        for (r, req) in workload.regions.iter_mut().zip(region_policies) {
            r.policy = match req {
                Some(req) => Some(req.resolve(m).map_err(|e| bad(format!("region '{}': policy {e}", r.name)))?),
                None => None,
            };
        }
        let placement = placement.resolve(m).map_err(bad)?;
        let flagged = std::iter::once(&placement.policy)
            .chain(workload.regions.iter().filter_map(|r| r.policy.as_ref()))
            .any(|p| p.flags.numa_balancing);
        if flagged && !config.kernel.profile().numab.bind_numa_balancing {
            return Err(bad(format!(
                "{MEMBIND_BALANCING}: Linux {} has no MPOL_F_NUMA_BALANCING (added in 5.12); use --kernel 6.1 or 6.13, or drop -b",
                config.kernel.profile().name
            )));
        }
        let weighted = std::iter::once(&placement.policy)
            .chain(workload.regions.iter().filter_map(|r| r.policy.as_ref()))
            .any(|p| p.mode == PolicyMode::WeightedInterleave);
        if weighted && !config.kernel.profile().alloc.weighted_interleave {
            return Err(bad(format!(
                "--weighted-interleave: Linux {} has no MPOL_WEIGHTED_INTERLEAVE (added in 6.9); use --kernel 6.13",
                config.kernel.profile().name
            )));
        }
        check_bound_threads(m, &placement, workload.threads)?;
        // Everything else the engine relies on (sample rate, knobs, finite numbers, footprint):
        // the same function `Engine::new` runs, so a refused run is refused before it starts.
        check::inputs(m, &workload, &placement, &config).map_err(|e| bad(e.to_string()))?;
        Ok(RunSpec { workload, placement, config })
    }

    pub fn placement_doc(&self, m: &Machine) -> PlacementDoc {
        PlacementDoc::new(&self.placement, m)
    }
}

/// With OpenMP binding each thread needs a place of its own (libgomp refuses to start otherwise
/// only when places run out entirely; numalab refuses earlier so that a bound run means one
/// thread per place).
fn check_bound_threads(m: &Machine, p: &Placement, threads: u32) -> Result<(), SpecError> {
    if p.proc_bind == ProcBind::False {
        return Ok(());
    }
    let allowed = p.cpus.clone().unwrap_or_else(|| m.cpuset());
    let places = sched::places(m, p.places, &allowed).len();
    if threads as usize > places {
        return Err(SpecError(format!(
            "{threads} threads cannot be bound one per place: OMP_PLACES={} gives {places} places on the allowed CPUs \
             (use fewer threads, finer places, or --omp-proc-bind=false)",
            p.places.name()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use numalab_model::MachineSpec;

    use super::*;

    fn machine() -> Machine {
        let spec = r#"{"name": "t2", "description": "two nodes",
            "topology": {"packages": 2, "nodes_per_package": 1, "cores_per_node": 2},
            "memory": {"node_gib": 1}, "distances": [[10,20],[20,10]],
            "latency": {"local_ns": 100}, "bandwidth": {"node_gbps": 10},
            "core": {"frequency_ghz": 2.0, "mlp": 10}}"#;
        MachineSpec::from_json(spec).unwrap().resolve().unwrap()
    }

    fn request(mode: PolicyMode, nodes: Option<&str>) -> PolicyRequest {
        PolicyRequest { mode, nodes: nodes.map(str::to_string), numa_balancing: true, ..PolicyRequest::default() }
    }

    #[test]
    fn membind_balancing_sets_the_kernel_flag() {
        let p = request(PolicyMode::Bind, Some("0-1")).resolve(&machine()).unwrap();
        assert!(p.flags.numa_balancing);
        let plain = PolicyRequest { numa_balancing: false, ..request(PolicyMode::Bind, Some("0")) };
        assert!(!plain.resolve(&machine()).unwrap().flags.numa_balancing);
    }

    #[test]
    fn membind_balancing_needs_membind() {
        for (mode, nodes) in [(PolicyMode::Interleave, Some("all")), (PolicyMode::Default, None)] {
            let e = request(mode, nodes).resolve(&machine()).unwrap_err();
            assert!(e.starts_with("-b/--membind-balancing needs --membind"), "{e}");
        }
    }
}
