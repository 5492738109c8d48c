//! Invariants every `Machine` must hold, whatever it was built from (preset, sysfs, hwloc XML).
//! The kernel's SLIT checks (`numa_set_distance`/`slit_valid`): square, 10 on the diagonal,
//! more than 10 elsewhere.

use std::collections::BTreeMap;

use crate::bitmap::CpuSet;
use crate::error::TopologyError;
use crate::machine::Machine;

type R = Result<(), TopologyError>;

fn err(path: impl Into<String>, msg: impl Into<String>) -> R {
    Err(TopologyError::field(path, msg))
}

impl Machine {
    pub fn validate(&self) -> R {
        if self.name.trim().is_empty() {
            return err("name", "a machine needs a name");
        }
        if self.nodes.is_empty() {
            return err("nodes", "a machine needs at least one NUMA node");
        }
        if !self.page_size_bytes.is_power_of_two() || self.page_size_bytes < 4096 {
            return err("page_size_bytes", format!("{} is not a power of two >= 4096", self.page_size_bytes));
        }
        self.check_nodes()?;
        self.check_pus()?;
        let n = self.nodes.len();
        self.check_distances(n)?;
        check_matrix("idle_latency_ns", &self.idle_latency_ns, n)?;
        self.check_curve()?;
        self.check_links()?;
        self.check_routes(n)?;
        self.check_caches()
    }

    /// Levels 2..4, a size, PUs that exist; instances of one level never overlap.
    fn check_caches(&self) -> R {
        let all = self.cpuset();
        for (i, c) in self.caches.iter().enumerate() {
            let p = format!("caches[{i}]");
            if !(2..=4).contains(&c.level) {
                return err(format!("{p}.level"), format!("{} is not a cache level 2, 3 or 4", c.level));
            }
            if c.size_bytes == 0 {
                return err(format!("{p}.size_bytes"), "a cache needs a size");
            }
            if c.cpuset.first().is_none() || !c.cpuset.is_subset(&all) {
                return err(
                    format!("{p}.cpuset"),
                    format!("PUs {} are not all PUs of the machine", c.cpuset.to_list_string()),
                );
            }
            for d in &self.caches[..i] {
                if d.level == c.level && !d.cpuset.intersection(&c.cpuset).is_empty() {
                    return err(format!("{p}.cpuset"), format!("overlaps another L{} instance", c.level));
                }
            }
        }
        Ok(())
    }

    fn check_nodes(&self) -> R {
        let mut prev: Option<u32> = None;
        for (i, node) in self.nodes.iter().enumerate() {
            let p = format!("nodes[{i}]");
            if let Some(q) = prev {
                if node.os_index <= q {
                    return err(
                        format!("{p}.os_index"),
                        format!("node {} is listed twice or out of order", node.os_index),
                    );
                }
            }
            prev = Some(node.os_index);
            if node.logical_index != i as u32 {
                return err(format!("{p}.logical_index"), format!("is {}, expected {i}", node.logical_index));
            }
            if node.local_memory_bytes > 0 && !(node.bandwidth_gbps > 0.0 && node.bandwidth_gbps.is_finite()) {
                return err(
                    format!("{p}.bandwidth_gbps"),
                    format!("must be > 0 for a node with memory, got {}", node.bandwidth_gbps),
                );
            }
            if !self.packages.iter().any(|pk| pk.os_index == node.package) {
                return err(format!("{p}.package"), format!("package {} does not exist", node.package));
            }
            if let Some(subtype) = &node.subtype {
                // hwloc's names (DRAM, HBM, NVM, SPM, CXL-DRAM, MCDRAM, GPUMemory): one word.
                if subtype.is_empty() || !subtype.bytes().all(|b| b.is_ascii_graphic()) {
                    return err(
                        format!("{p}.subtype"),
                        format!("'{subtype}' is not a memory subtype (one word as hwloc writes it: DRAM, HBM, NVM, CXL-DRAM)"),
                    );
                }
            }
        }
        // Memoryless nodes (CPUs, no memory) are valid, as on Linux; a machine of only such nodes is not.
        if self.nodes.iter().all(|n| n.local_memory_bytes == 0) {
            return err("nodes", "no node has memory (every node's local_memory_bytes is 0)");
        }
        Ok(())
    }

    fn check_pus(&self) -> R {
        // A PU belongs to exactly one node: the cpusets of the nodes must not overlap.
        let mut owner: BTreeMap<u32, u32> = BTreeMap::new();
        for node in &self.nodes {
            for cpu in node.cpuset.iter() {
                if let Some(other) = owner.insert(cpu, node.os_index) {
                    return err(
                        format!("nodes[{}].cpuset", node.logical_index),
                        format!("PU {cpu} is on node {other} and on node {}", node.os_index),
                    );
                }
            }
        }
        let mut seen = CpuSet::new();
        for (i, pu) in self.pus.iter().enumerate() {
            let p = format!("pus[{i}]");
            if seen.contains(pu.os_index) {
                return err(p, format!("PU {} is listed twice", pu.os_index));
            }
            seen.set(pu.os_index);
            if owner.get(&pu.os_index) != Some(&pu.node) {
                return err(
                    format!("{p}.node"),
                    format!("PU {} says node {} but no such node lists it", pu.os_index, pu.node),
                );
            }
            let Some(core) = self.cores.get(pu.core as usize) else {
                return err(format!("{p}.core"), format!("core {} does not exist", pu.core));
            };
            if !core.cpuset.contains(pu.os_index) {
                return err(format!("{p}.core"), format!("core {} does not contain PU {}", pu.core, pu.os_index));
            }
        }
        if owner.len() != self.pus.len() {
            return err("pus", format!("{} PUs listed but the nodes' cpusets hold {}", self.pus.len(), owner.len()));
        }
        for (i, c) in self.cores.iter().enumerate() {
            if !(c.frequency_hz > 0.0 && c.mlp >= 1.0) {
                return err(format!("cores[{i}]"), "frequency_hz must be > 0 and mlp >= 1");
            }
            if c.stream_mlp.is_some_and(|p| !(p >= 1.0 && p.is_finite())) {
                return err(format!("cores[{i}]"), "stream_mlp must be a finite number >= 1");
            }
            if c.add_latency_ns.is_some_and(|ns| !(ns > 0.0 && ns.is_finite())) {
                return err(format!("cores[{i}]"), "add_latency_ns must be a finite number > 0");
            }
            if c.window_instructions.is_some_and(|w| !(w >= 1.0 && w.is_finite())) {
                return err(format!("cores[{i}]"), "window_instructions must be a finite number >= 1");
            }
            if c.prefetch_lines.is_some_and(|p| !(p >= 0.0 && p.is_finite())) {
                return err(format!("cores[{i}]"), "prefetch_lines must be a finite number >= 0");
            }
        }
        Ok(())
    }

    fn check_distances(&self, n: usize) -> R {
        if self.distances.len() != n {
            return err("distances", format!("has {} rows, expected {n} (one per node)", self.distances.len()));
        }
        for (i, row) in self.distances.iter().enumerate() {
            if row.len() != n {
                return err(
                    format!("distances[{i}]"),
                    format!("has {} entries, expected {n}: the matrix must be square", row.len()),
                );
            }
            for (j, &d) in row.iter().enumerate() {
                if i == j && d != 10 {
                    return err(
                        format!("distances[{i}][{j}]"),
                        format!("diagonal must be 10 (local distance), got {d}"),
                    );
                }
                if i != j && !(11..255).contains(&d) {
                    return err(
                        format!("distances[{i}][{j}]"),
                        format!("remote distance must be between 11 and 254, got {d}"),
                    );
                }
            }
        }
        Ok(())
    }

    fn check_curve(&self) -> R {
        let c = &self.loaded_latency;
        if c.is_empty() {
            return err("loaded_latency", "needs at least one point");
        }
        for (i, w) in c.windows(2).enumerate() {
            if w[1].utilisation <= w[0].utilisation {
                return err(format!("loaded_latency[{}]", i + 1), "utilisation must increase");
            }
        }
        for (i, p) in c.iter().enumerate() {
            if !(0.0..=1.0).contains(&p.utilisation) || p.factor < 1.0 {
                return err(format!("loaded_latency[{i}]"), "utilisation must be in 0..1 and factor >= 1");
            }
        }
        Ok(())
    }

    fn check_links(&self) -> R {
        for (i, l) in self.links.iter().enumerate() {
            for k in 0..2 {
                if self.node_logical(l.nodes[k]).is_none() {
                    return err(format!("links[{i}].nodes"), format!("node {} does not exist", l.nodes[k]));
                }
                if !(l.gbps[k] > 0.0 && l.gbps[k].is_finite()) {
                    return err(format!("links[{i}].gbps"), format!("must be > 0, got {}", l.gbps[k]));
                }
            }
            if l.nodes[0] == l.nodes[1] {
                return err(format!("links[{i}].nodes"), "a link joins two different nodes");
            }
        }
        Ok(())
    }

    fn check_routes(&self, n: usize) -> R {
        if self.routes.len() != n || self.routes.iter().any(|r| r.len() != n) {
            return err("routes", format!("must be a {n}x{n} table"));
        }
        for i in 0..n {
            for j in 0..n {
                let route = &self.routes[i][j];
                let p = format!("routes[{i}][{j}]");
                if i == j {
                    if !route.is_empty() {
                        return err(p, "local traffic crosses no link");
                    }
                    continue;
                }
                if route.is_empty() && n > 1 && !self.links.is_empty() {
                    return err(
                        p,
                        format!("no route from node {} to node {}", self.nodes[i].os_index, self.nodes[j].os_index),
                    );
                }
                // The hops must chain from node i to node j.
                let mut at = self.nodes[i].os_index;
                for h in route {
                    let Some(l) = self.links.get(h.link as usize) else {
                        return err(&p, format!("link {} does not exist", h.link));
                    };
                    let (from, to) = if h.dir == 0 { (l.nodes[0], l.nodes[1]) } else { (l.nodes[1], l.nodes[0]) };
                    if from != at {
                        return err(&p, format!("hop over link {} starts at node {from}, expected node {at}", h.link));
                    }
                    at = to;
                }
                if !route.is_empty() && at != self.nodes[j].os_index {
                    return err(p, format!("ends at node {at}, expected node {}", self.nodes[j].os_index));
                }
            }
        }
        Ok(())
    }
}

fn check_matrix(name: &str, m: &[Vec<f64>], n: usize) -> R {
    if m.len() != n || m.iter().any(|r| r.len() != n) {
        return err(name, format!("must be a {n}x{n} matrix"));
    }
    for (i, row) in m.iter().enumerate() {
        for (j, v) in row.iter().enumerate() {
            if !(*v > 0.0 && v.is_finite()) {
                return err(format!("{name}[{i}][{j}]"), format!("must be > 0, got {v}"));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::spec::MachineSpec;

    fn two_nodes(memory: [u64; 2]) -> crate::machine::Machine {
        let json = format!(
            r#"{{"name": "t", "nodes": [{{"os_index": 0, "cpus": "0", "memory_bytes": {}}},
                {{"os_index": 1, "cpus": "1", "memory_bytes": {}}}],
               "latency": {{"local_ns": 90}}, "bandwidth": {{"node_gbps": 10}},
               "core": {{"frequency_ghz": 2, "mlp": 10}}}}"#,
            memory[0], memory[1]
        );
        MachineSpec::from_json(&json).unwrap().resolve().unwrap()
    }

    #[test]
    fn a_memoryless_node_with_cpus_is_valid() {
        let m = two_nodes([1 << 30, 0]);
        assert_eq!(m.nodes[1].local_memory_bytes, 0);
        assert_eq!(m.nodes[1].cpuset.to_list_string(), "1");
        m.validate().unwrap();
    }

    #[test]
    fn a_machine_without_any_memory_is_not() {
        let mut m = two_nodes([1 << 30, 0]);
        m.nodes[0].local_memory_bytes = 0;
        let e = m.validate().unwrap_err();
        assert!(e.to_string().contains("no node has memory"), "{e}");
    }

    #[test]
    fn a_subtype_is_one_word() {
        let mut m = two_nodes([1 << 30, 1 << 30]);
        m.nodes[1].subtype = Some("HBM".into());
        m.validate().unwrap();
        m.nodes[1].subtype = Some("high bandwidth".into());
        let e = m.validate().unwrap_err();
        assert!(e.to_string().contains("nodes[1].subtype"), "{e}");
    }
}
