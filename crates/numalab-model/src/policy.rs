//! Memory policies as the kernel defines them (`MPOL_*`, include/uapi/linux/mempolicy.h), named
//! as numactl names them. Parsers also accept the kernel's, numa_maps' and hwloc's spellings;
//! output always uses numactl's.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::bitmap::NodeSet;
use crate::error::PolicyError;

/// Policy modes; discriminants equal the kernel's `MPOL_*` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[repr(u8)]
pub enum PolicyMode {
    Default = 0,
    Preferred = 1,
    Bind = 2,
    Interleave = 3,
    Local = 4,
    PreferredMany = 5,
    WeightedInterleave = 6,
}

pub const POLICY_NAMES: [&str; 7] =
    ["default", "preferred", "bind", "interleave", "local", "preferred-many", "weighted-interleave"];

impl PolicyMode {
    pub const ALL: [PolicyMode; 7] = [
        PolicyMode::Default,
        PolicyMode::Preferred,
        PolicyMode::Bind,
        PolicyMode::Interleave,
        PolicyMode::Local,
        PolicyMode::PreferredMany,
        PolicyMode::WeightedInterleave,
    ];

    /// numactl's spelling.
    pub fn name(self) -> &'static str {
        POLICY_NAMES[self as usize]
    }

    /// Accepts numactl (`membind`, `localalloc` too), kernel (`MPOL_BIND`), numa_maps
    /// (`prefer`, `prefer (many)`, `weighted interleave`) and hwloc (`firsttouch`) spellings.
    pub fn parse(s: &str) -> Result<PolicyMode, PolicyError> {
        let k = s.trim().to_ascii_lowercase();
        let k = k.strip_prefix("mpol_").unwrap_or(&k).replace('_', "-");
        Ok(match k.as_str() {
            "default" | "firsttouch" | "first-touch" => PolicyMode::Default,
            "preferred" | "prefer" => PolicyMode::Preferred,
            "bind" | "membind" => PolicyMode::Bind,
            "interleave" => PolicyMode::Interleave,
            "local" | "localalloc" => PolicyMode::Local,
            "preferred-many" | "prefer (many)" | "prefer-many" => PolicyMode::PreferredMany,
            "weighted-interleave" | "weighted interleave" | "weighted" => PolicyMode::WeightedInterleave,
            _ => {
                return Err(PolicyError(format!("unknown policy '{s}' (expected one of: {})", POLICY_NAMES.join(", "))))
            }
        })
    }

    /// Modes that need a non-empty node mask (`EINVAL` otherwise in `set_mempolicy`).
    pub fn needs_nodes(self) -> bool {
        matches!(
            self,
            PolicyMode::Bind | PolicyMode::Interleave | PolicyMode::PreferredMany | PolicyMode::WeightedInterleave
        )
    }
}

impl fmt::Display for PolicyMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Mode flags the engine models. `MPOL_F_STATIC_NODES` and `MPOL_F_RELATIVE_NODES` only change
/// how a nodemask is remapped when the task's cpuset changes (`mm/mempolicy.c: mpol_rebind_nodemask`),
/// which no simulated run does; the agent passes them to the kernel itself (numactl `--membind=static:...`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyFlags {
    /// `numactl --membind --balancing`: NUMA balancing may migrate within the bind mask (5.12+).
    #[serde(default)]
    pub numa_balancing: bool,
}

/// A memory policy: a mode, its nodes (OS indexes) and flags; weights for weighted interleave
/// (`/sys/kernel/mm/mempolicy/weighted_interleave/nodeN`, 1..255; default 1).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemPolicy {
    pub mode: PolicyMode,
    #[serde(default)]
    pub nodes: NodeSet,
    #[serde(default)]
    pub flags: PolicyFlags,
    #[serde(default)]
    pub weights: BTreeMap<u32, u8>,
}

impl MemPolicy {
    pub fn default_policy() -> Self {
        MemPolicy {
            mode: PolicyMode::Default,
            nodes: NodeSet::new(),
            flags: PolicyFlags::default(),
            weights: BTreeMap::new(),
        }
    }

    pub fn new(mode: PolicyMode, nodes: NodeSet) -> Result<Self, PolicyError> {
        let p = MemPolicy { mode, nodes, flags: PolicyFlags::default(), weights: BTreeMap::new() };
        p.check()?;
        Ok(p)
    }

    /// The kernel's `mpol_new` / `sanitize_mpol_flags` checks.
    pub fn check(&self) -> Result<(), PolicyError> {
        let m = self.mode;
        if m.needs_nodes() && self.nodes.is_empty() {
            return Err(PolicyError(format!("policy {m} needs a non-empty node list")));
        }
        if matches!(m, PolicyMode::Default | PolicyMode::Local) && !self.nodes.is_empty() {
            return Err(PolicyError(format!("policy {m} takes no nodes")));
        }
        if m == PolicyMode::Preferred && self.nodes.weight() != 1 {
            return Err(PolicyError(format!("policy preferred takes exactly one node, got '{}'", self.nodes)));
        }
        if self.flags.numa_balancing && m != PolicyMode::Bind {
            return Err(PolicyError(format!("the numa_balancing flag is only valid with bind, not {m}")));
        }
        for (node, w) in &self.weights {
            if *w == 0 {
                return Err(PolicyError(format!("weight of node {node} must be 1..255")));
            }
        }
        Ok(())
    }

    /// Weight of `node` for weighted interleave (default 1, as in sysfs before 6.16's auto mode).
    pub fn weight(&self, node: u32) -> u32 {
        self.weights.get(&node).copied().unwrap_or(1) as u32
    }

    /// How numactl's `--show` and numa_maps print it: `interleave:0-3`, `bind:0`, `default`.
    pub fn describe(&self) -> String {
        if self.nodes.is_empty() {
            self.mode.name().to_string()
        } else {
            format!("{}:{}", self.mode.name(), self.nodes)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings() {
        assert_eq!(PolicyMode::parse("MPOL_BIND").unwrap(), PolicyMode::Bind);
        assert_eq!(PolicyMode::parse("prefer (many)").unwrap(), PolicyMode::PreferredMany);
        assert_eq!(PolicyMode::parse("weighted interleave").unwrap(), PolicyMode::WeightedInterleave);
        assert_eq!(PolicyMode::parse("localalloc").unwrap(), PolicyMode::Local);
        assert_eq!(PolicyMode::WeightedInterleave as u8, 6);
        let e = PolicyMode::parse("interleaved").unwrap_err().0;
        assert!(e.contains("'interleaved'") && e.contains("weighted-interleave"), "{e}");
    }

    #[test]
    fn kernel_checks() {
        assert!(MemPolicy::new(PolicyMode::Interleave, NodeSet::new()).is_err());
        assert!(MemPolicy::new(PolicyMode::Local, NodeSet::from_indexes([1])).is_err());
        assert!(MemPolicy::new(PolicyMode::Preferred, NodeSet::from_indexes([1, 2])).is_err());
        let mut p = MemPolicy::new(PolicyMode::Interleave, NodeSet::from_indexes([0, 1])).unwrap();
        p.flags.numa_balancing = true;
        assert!(p.check().is_err());
        assert_eq!(MemPolicy::new(PolicyMode::Bind, NodeSet::from_indexes([0, 1, 2])).unwrap().describe(), "bind:0-2");
    }
}
