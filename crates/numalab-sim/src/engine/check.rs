//! The values the engine relies on, checked where it consumes them: callers (the Python layer,
//! `spec`) refuse bad input with their own words first; these checks make sure anything that
//! reaches the engine some other way ends in `SimError::Input`, never in a panic, a hang or an
//! allocation the machine cannot make.

use numalab_model::{Machine, MemPolicy};

use crate::error::SimError;
use crate::footprint;
use crate::input::{Placement, SimConfig, WorkloadSpec};
use crate::pages::NONE;

/// Highest virtual address a region may reach (x86-64 with 5-level paging: 57 bits).
const VA_END: u64 = 1 << 57;

pub(crate) fn inputs(m: &Machine, w: &WorkloadSpec, p: &Placement, cfg: &SimConfig) -> Result<(), SimError> {
    let bad = |s: String| Err(SimError::Input(s));
    // A page-table entry is one byte and `NONE` takes the last value.
    if m.nodes.len() >= NONE as usize {
        return bad(format!(
            "machine {} has {} NUMA nodes; numalab simulates at most {}",
            m.name,
            m.nodes.len(),
            NONE - 1
        ));
    }
    w.check()?;
    if !(cfg.sample_rate > 0.0 && cfg.sample_rate <= 1.0) {
        return bad(format!("--sample-rate must be in (0, 1], got {}", cfg.sample_rate));
    }
    if let Some(h) = &cfg.vcpu_host {
        h.check().map_err(SimError::Input)?;
    }
    policy(m, &p.policy, None)?;
    for r in &w.regions {
        if let Some(pol) = &r.policy {
            policy(m, pol, Some(&r.name))?;
        }
        if let Some(a) = r.address {
            let pages = if r.thp { r.bytes.div_ceil(2 << 20) << 21 } else { r.bytes.div_ceil(4096) << 12 };
            if a.checked_add(pages).is_none_or(|end| end > VA_END) {
                return bad(format!(
                    "region '{}' at address {a:#x} ({} bytes) does not fit below {VA_END:#x}",
                    r.name, r.bytes
                ));
            }
        }
    }
    for ph in &w.phases {
        let finite =
            ph.cycles.is_finite() && ph.accesses.iter().all(|a| [a.rd, a.wr, a.passes].iter().all(|v| v.is_finite()));
        if !finite {
            return bad(format!("workload {}: phase '{}' has a number that is not finite", w.name, ph.name));
        }
        if let Some(mlp) = ph.mlp {
            if !(mlp.is_finite() && mlp > 0.0) {
                return bad(format!(
                    "workload {}: phase '{}': mlp must be a positive number, got {mlp}",
                    w.name, ph.name
                ));
            }
        }
    }
    let c = &cfg.costs;
    let costs = [c.fault_4k_ns, c.fault_2m_ns, c.task_move_ns, c.hint_fault_ns, c.migrate_base_ns, c.scan_pte_ns];
    let usable = costs.iter().all(|v| v.is_finite() && *v >= 0.0)
        && c.migrate_copy_gbps.is_finite()
        && c.migrate_copy_gbps > 0.0;
    if !usable {
        return bad("costs must be finite and >= 0, migrate_copy_gbps > 0".into());
    }
    cfg.balancing.check(cfg.kernel)?;
    if let Some(lb) = &cfg.latency_balanced {
        lb.check().map_err(SimError::Input)?;
    }
    footprint::estimate(m, w, cfg).check(m)
}

/// A policy the engine can resolve on this machine: well formed, and every node it names exists.
fn policy(m: &Machine, p: &MemPolicy, region: Option<&str>) -> Result<(), SimError> {
    let whose = region.map_or("the placement's policy".to_string(), |r| format!("the policy of region '{r}'"));
    p.check().map_err(|e| SimError::Input(if region.is_some() { format!("{whose}: {}", e.0) } else { e.0 }))?;
    if let Some(n) = p.nodes.iter().find(|&os| m.node_logical(os).is_none()) {
        return Err(SimError::Input(format!(
            "{whose} names node {n}, which this machine does not have (nodes {})",
            m.nodeset()
        )));
    }
    Ok(())
}
