//! numactl's placement options, turned into what numactl would ask the kernel for.
//!
//! Each option maps to the libnuma call numactl makes (numactl.c `main()`), and that call to one
//! system call (libnuma.c):
//!
//! | option | numactl.c | libnuma.c | system call |
//! |---|---|---|---|
//! | `-i/--interleave=NODES` | `numa_set_interleave_mask` | `numa_set_interleave_mask_v2` -> `setpol(MPOL_INTERLEAVE)` | `set_mempolicy(MPOL_INTERLEAVE, nodes)` |
//! | `-w/--weighted-interleave=NODES` | `numa_set_weighted_interleave_mask` | `setpol(MPOL_WEIGHTED_INTERLEAVE)` | `set_mempolicy(MPOL_WEIGHTED_INTERLEAVE, nodes)` |
//! | `-m/--membind=NODES` | `numa_set_membind` | `numa_set_membind_v2` -> `setpol(MPOL_BIND)` | `set_mempolicy(MPOL_BIND, nodes)` |
//! | `-b/--balancing` with `-m` | `numa_set_membind_balancing` | `MPOL_BIND \| MPOL_F_NUMA_BALANCING`, plain bind on EINVAL | same, with the flag |
//! | `-p/--preferred=NODE` | `numa_set_preferred(first)` (exactly one node) | `__numa_set_preferred` -> `setpol(MPOL_PREFERRED)` | `set_mempolicy(MPOL_PREFERRED, node)` |
//! | `-P/--preferred-many=NODES` | `numa_set_preferred_many` | `setpol(MPOL_PREFERRED_MANY)` | `set_mempolicy(MPOL_PREFERRED_MANY, nodes)` |
//! | `-l/--localalloc` | `numa_set_localalloc` | `setpol(MPOL_LOCAL, no nodes)` | `set_mempolicy(MPOL_LOCAL, NULL)` |
//! | `-N/--cpunodebind=NODES` | `numa_run_on_node_mask_all` | union of the nodes' cpulists -> `numa_sched_setaffinity_v2_int(0, cpus)` | `sched_setaffinity(0, cpus)` |
//!
//! (`-N` nodes are counted among the online nodes, where numactl counts among `Mems_allowed`: a
//! node with CPUs and no memory is not in `Mems_allowed`, and numactl could not name it.)
//! | `-C/--physcpubind=CPUS` | `numa_sched_setaffinity(0, cpus)` | | `sched_setaffinity(0, cpus)` |
//!
//! Node strings use numactl's grammar (`numa_parse_nodestring`, libnuma.c), parsed against the
//! nodes this process may use (`Mems_allowed`, libnuma's `numa_all_nodes_ptr`); CPU strings against
//! `Cpus_allowed`. A leading `+` is libnuma's: numbers count within the allowed set (`get_nr()`),
//! resolved at parse time; numactl never passes `MPOL_F_RELATIVE_NODES` (nor
//! `MPOL_F_STATIC_NODES`) to the kernel, and neither does the agent for `+`. As an extension that
//! numactl does not have, a leading `=` asks for `MPOL_F_STATIC_NODES` (set_mempolicy(2)): the
//! nodes are not remapped when the cpuset changes. One memory policy at most ("Conflicting
//! policies", as numactl says); of `-N` and `-C`, the last one given wins, as in numactl.

use std::fmt;
use std::path::Path;

use numalab_linux::{read_node_states, read_status, LinuxError, NodeStates};
use numalab_model::{parse_cpustring, parse_nodestring, CpuSet, NodeSet, PolicyMode};

use crate::sys::{RawPolicy, MPOL_F_NUMA_BALANCING, MPOL_F_STATIC_NODES};

/// A placement option as given on the command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlacementArg {
    Interleave(String),
    WeightedInterleave(String),
    Membind(String),
    Preferred(String),
    PreferredMany(String),
    LocalAlloc,
    Balancing,
    CpuNodeBind(String),
    PhysCpuBind(String),
}

impl PlacementArg {
    /// numactl's long spelling, for messages and the start record.
    pub fn numactl(&self) -> String {
        match self {
            PlacementArg::Interleave(s) => format!("--interleave={s}"),
            PlacementArg::WeightedInterleave(s) => format!("--weighted-interleave={s}"),
            PlacementArg::Membind(s) => format!("--membind={s}"),
            PlacementArg::Preferred(s) => format!("--preferred={s}"),
            PlacementArg::PreferredMany(s) => format!("--preferred-many={s}"),
            PlacementArg::LocalAlloc => "--localalloc".into(),
            PlacementArg::Balancing => "--balancing".into(),
            PlacementArg::CpuNodeBind(s) => format!("--cpunodebind={s}"),
            PlacementArg::PhysCpuBind(s) => format!("--physcpubind={s}"),
        }
    }
}

/// What the child will ask the kernel for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    pub mode: Option<PolicyMode>,
    pub nodes: NodeSet,
    pub static_nodes: bool,
    pub numa_balancing: bool,
    pub cpus: Option<CpuSet>,
    pub args: Vec<PlacementArg>,
}

/// A placement the host cannot honour, or a malformed one: one line for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlacementError(pub String);

impl fmt::Display for PlacementError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<LinuxError> for PlacementError {
    fn from(e: LinuxError) -> Self {
        PlacementError(e.to_string())
    }
}

/// The host facts placement is checked against.
pub struct Host {
    pub states: NodeStates,
    pub mems_allowed: NodeSet,
    pub cpus_allowed: CpuSet,
    /// CPUs of each online node (`nodeN/cpulist`).
    pub node_cpus: Vec<(u32, CpuSet)>,
}

impl Host {
    /// Read under `root`: node states, each node's cpulist, and this process's allowed sets
    /// (`proc/self/status`).
    pub fn read(root: &Path) -> Result<Host, LinuxError> {
        let states = read_node_states(root)?;
        let status = read_status(root, std::process::id()).or_else(|_| read_status_self(root))?;
        let mut node_cpus = Vec::new();
        for n in states.online.iter() {
            let path = root.join(format!("sys/devices/system/node/node{n}/cpulist"));
            let cpus = if states.numa_disabled {
                status.cpus_allowed.clone()
            } else {
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| LinuxError::Read { path: path.display().to_string(), message: e.to_string() })?;
                CpuSet::parse_list(&text)
                    .map_err(|e| LinuxError::Parse { path: path.display().to_string(), message: e })?
            };
            node_cpus.push((n, cpus));
        }
        Ok(Host { states, mems_allowed: status.mems_allowed, cpus_allowed: status.cpus_allowed, node_cpus })
    }
}

/// `proc/self/status`, for captured trees that hold one (a live /proc always has `proc/PID`).
fn read_status_self(root: &Path) -> Result<numalab_linux::ProcStatus, LinuxError> {
    let path = root.join("proc/self/status");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| LinuxError::Read { path: path.display().to_string(), message: e.to_string() })?;
    numalab_linux::status::parse_status(&path, &text)
}

/// Resolve the options against the host, with numactl's rules and clearer errors.
pub fn resolve(args: &[PlacementArg], host: &Host) -> Result<Placement, PlacementError> {
    let mut p = Placement {
        mode: None,
        nodes: NodeSet::new(),
        static_nodes: false,
        numa_balancing: false,
        cpus: None,
        args: args.to_vec(),
    };
    let mut policy_arg: Option<&PlacementArg> = None;
    for a in args {
        let (mode, text) = match a {
            PlacementArg::Interleave(s) => (PolicyMode::Interleave, s),
            PlacementArg::WeightedInterleave(s) => (PolicyMode::WeightedInterleave, s),
            PlacementArg::Membind(s) => (PolicyMode::Bind, s),
            PlacementArg::Preferred(s) => (PolicyMode::Preferred, s),
            PlacementArg::PreferredMany(s) => (PolicyMode::PreferredMany, s),
            PlacementArg::LocalAlloc => {
                set_policy(&mut policy_arg, a)?;
                p.mode = Some(PolicyMode::Local);
                continue;
            }
            PlacementArg::Balancing => {
                p.numa_balancing = true;
                continue;
            }
            PlacementArg::CpuNodeBind(s) => {
                p.cpus = Some(cpus_of_nodes(s, host)?);
                continue;
            }
            PlacementArg::PhysCpuBind(s) => {
                p.cpus = Some(parse_cpustring(s, &host.cpus_allowed).map_err(|e| bad(a, &e))?);
                continue;
            }
        };
        set_policy(&mut policy_arg, a)?;
        let (stat, text) = match text.strip_prefix('=') {
            Some(rest) => (true, rest),
            None => (false, text.as_str()),
        };
        let nodes = memory_nodes(a, text, host)?;
        if mode == PolicyMode::Preferred && nodes.weight() != 1 {
            return Err(bad(a, &format!("--preferred takes exactly one node, '{text}' names {}", nodes.weight())));
        }
        p.mode = Some(mode);
        p.nodes = nodes;
        p.static_nodes = stat;
    }
    if p.numa_balancing && p.mode != Some(PolicyMode::Bind) {
        return Err(PlacementError(
            "--balancing needs --membind (MPOL_F_NUMA_BALANCING is only valid with MPOL_BIND)".into(),
        ));
    }
    Ok(p)
}

fn set_policy<'a>(current: &mut Option<&'a PlacementArg>, a: &'a PlacementArg) -> Result<(), PlacementError> {
    if let Some(prev) = current {
        return Err(PlacementError(format!(
            "conflicting policies: {} and {} (give one memory policy)",
            prev.numactl(),
            a.numactl()
        )));
    }
    *current = Some(a);
    Ok(())
}

fn bad(a: &PlacementArg, msg: &str) -> PlacementError {
    PlacementError(format!("{}: {msg}", a.numactl()))
}

/// Parse a memory policy's nodes against `Mems_allowed`, explaining any node left out: absent,
/// without memory, or outside the cpuset.
fn memory_nodes(a: &PlacementArg, text: &str, host: &Host) -> Result<NodeSet, PlacementError> {
    match parse_nodestring(text, &host.mems_allowed) {
        Ok(n) => Ok(n),
        Err(_) => {
            let wider = host.mems_allowed.union(&host.states.online);
            let asked = match parse_nodestring(text, &wider) {
                Ok(asked) => asked,
                Err(wider_err) => return Err(bad(a, &wider_err)),
            };
            let outside = asked.difference(&host.mems_allowed);
            let no_mem = outside.difference(&host.states.has_memory);
            if !no_mem.is_empty() {
                return Err(bad(
                    a,
                    &format!(
                        "node {no_mem} has no memory (nodes with memory: {})",
                        host.states.has_memory.to_list_string()
                    ),
                ));
            }
            Err(bad(
                a,
                &format!(
                    "node {outside} is outside this process's cpuset (Mems_allowed_list: {})",
                    host.mems_allowed.to_list_string()
                ),
            ))
        }
    }
}

/// `--cpunodebind`: the union of the nodes' CPUs, as `numa_run_on_node_mask_all` makes it (a node
/// without CPUs adds none); an empty union is refused, as sched_setaffinity would (EINVAL). The
/// nodes are counted among the online ones, so a node with CPUs but no memory can be named.
fn cpus_of_nodes(text: &str, host: &Host) -> Result<CpuSet, PlacementError> {
    let a = PlacementArg::CpuNodeBind(text.to_string());
    let nodes = parse_nodestring(text, &host.states.online).map_err(|e| bad(&a, &e))?;
    let cpus =
        host.node_cpus.iter().filter(|(n, _)| nodes.contains(*n)).fold(CpuSet::new(), |acc, (_, c)| acc.union(c));
    if cpus.is_empty() {
        return Err(bad(&a, &format!("node {nodes} has no CPUs (nodes with CPUs: {})", host.states.has_cpu)));
    }
    Ok(cpus)
}

impl Placement {
    /// The policy for `set_mempolicy`, or `None` to leave the inherited one.
    pub fn raw_policy(&self) -> Option<RawPolicy> {
        let mode = self.mode?;
        let mut mask = Vec::new();
        for n in self.nodes.iter() {
            let w = (n / 64) as usize;
            if mask.len() <= w {
                mask.resize(w + 1, 0u64);
            }
            mask[w] |= 1u64 << (n % 64);
        }
        let mut flags = 0;
        if self.static_nodes {
            flags |= MPOL_F_STATIC_NODES;
        }
        if self.numa_balancing {
            flags |= MPOL_F_NUMA_BALANCING;
        }
        Some(RawPolicy { mode: mode as i32, flags, mask })
    }

    /// The affinity for `sched_setaffinity`, or `None` to leave the inherited one.
    pub fn cpu_set(&self) -> Result<Option<nix::sched::CpuSet>, PlacementError> {
        let Some(cpus) = &self.cpus else { return Ok(None) };
        let mut set = nix::sched::CpuSet::new();
        for c in cpus.iter() {
            set.set(c as usize).map_err(|_| {
                PlacementError(format!(
                    "CPU {c} is beyond the {} CPUs sched_setaffinity takes here",
                    nix::sched::CpuSet::count()
                ))
            })?;
        }
        Ok(Some(set))
    }

    /// How numa_maps will print the policy (`mpol_to_str()`, mm/mempolicy.c): `bind:0`,
    /// `interleave:0-1`, `bind=static|balancing:0-1`, `default`.
    pub fn describe(&self) -> String {
        let Some(mode) = self.mode else { return "default".into() };
        let mut text = match mode {
            PolicyMode::Preferred => "prefer",
            PolicyMode::PreferredMany => "prefer (many)",
            PolicyMode::WeightedInterleave => "weighted interleave",
            m => m.name(),
        }
        .to_string();
        let flags: Vec<&str> = [(self.static_nodes, "static"), (self.numa_balancing, "balancing")]
            .into_iter()
            .filter_map(|(on, f)| on.then_some(f))
            .collect();
        if !flags.is_empty() {
            text = format!("{text}={}", flags.join("|"));
        }
        if !self.nodes.is_empty() {
            text = format!("{text}:{}", self.nodes);
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> Host {
        let s = |l: &str| NodeSet::parse_list(l).unwrap();
        Host {
            states: NodeStates {
                possible: s("0-3"),
                online: s("0-3"),
                has_memory: s("0-2"),
                has_cpu: s("0-1,3"),
                numa_disabled: false,
            },
            mems_allowed: s("0-2"),
            cpus_allowed: s("0-47"),
            node_cpus: vec![(0, s("0-15,32-39")), (1, s("16-31,40-43")), (2, s("")), (3, s("44-47"))],
        }
    }

    fn err(args: &[PlacementArg]) -> String {
        resolve(args, &host()).unwrap_err().0
    }

    #[test]
    fn modes_and_nodes() {
        let p = resolve(&[PlacementArg::Interleave("all".into())], &host()).unwrap();
        assert_eq!((p.mode, p.nodes.to_list_string()), (Some(PolicyMode::Interleave), "0-2".into()));
        assert_eq!(p.raw_policy().unwrap(), RawPolicy { mode: 3, flags: 0, mask: vec![0b111] });
        let p = resolve(&[PlacementArg::Membind("+1".into()), PlacementArg::Balancing], &host()).unwrap();
        assert_eq!(p.nodes.to_list_string(), "1");
        assert_eq!(p.raw_policy().unwrap().flags, MPOL_F_NUMA_BALANCING);
        assert_eq!(p.describe(), "bind=balancing:1");
        let p = resolve(&[PlacementArg::Membind("=0-1".into())], &host()).unwrap();
        assert_eq!(p.raw_policy().unwrap().flags, MPOL_F_STATIC_NODES);
        let p = resolve(&[PlacementArg::LocalAlloc, PlacementArg::CpuNodeBind("1,3".into())], &host()).unwrap();
        assert_eq!(p.raw_policy().unwrap(), RawPolicy { mode: 4, flags: 0, mask: vec![] });
        assert_eq!(p.cpus.unwrap().to_list_string(), "16-31,40-47");
        let p = resolve(&[PlacementArg::CpuNodeBind("all".into())], &host()).unwrap();
        assert_eq!(p.cpus.unwrap().to_list_string(), "0-47", "the CPU-less node 2 adds nothing");
        let p = resolve(&[PlacementArg::PreferredMany("0,2".into())], &host()).unwrap();
        assert_eq!(p.describe(), "prefer (many):0,2");
    }

    #[test]
    fn the_last_cpu_binding_wins() {
        let p = resolve(&[PlacementArg::CpuNodeBind("0".into()), PlacementArg::PhysCpuBind("44-45".into())], &host())
            .unwrap();
        assert_eq!(p.cpus.unwrap().to_list_string(), "44-45");
    }

    #[test]
    fn errors_say_which_node_and_why() {
        let e = err(&[PlacementArg::Membind("3".into())]);
        assert_eq!(e, "--membind=3: node 3 has no memory (nodes with memory: 0-2)");
        let e = err(&[PlacementArg::Preferred("7".into())]);
        assert_eq!(e, "--preferred=7: node 7 in '7' does not exist on this machine (nodes: 0-3)");
        let e = err(&[PlacementArg::Preferred("0-1".into())]);
        assert!(e.contains("exactly one node"), "{e}");
        let e = err(&[PlacementArg::Interleave("all".into()), PlacementArg::Membind("0".into())]);
        assert!(e.starts_with("conflicting policies: --interleave=all and --membind=0"), "{e}");
        let e = err(&[PlacementArg::CpuNodeBind("2".into())]);
        assert!(e.contains("node 2 has no CPUs"), "{e}");
        let e = err(&[PlacementArg::PhysCpuBind("48".into())]);
        assert!(e.contains("cpu 48"), "{e}");
        let e = err(&[PlacementArg::Interleave("all".into()), PlacementArg::Balancing]);
        assert!(e.contains("--balancing needs --membind"), "{e}");
    }

    #[test]
    fn a_node_outside_the_cpuset_is_named() {
        let mut h = host();
        h.mems_allowed = NodeSet::parse_list("0").unwrap();
        let e = resolve(&[PlacementArg::Membind("1".into())], &h).unwrap_err().0;
        assert!(e.contains("outside this process's cpuset (Mems_allowed_list: 0)"), "{e}");
    }
}
