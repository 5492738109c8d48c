//! The crate's modules depend on each other one way (docs/architecture.md): no `use crate::...`
//! or `super::` chain leads back to where it started.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Module path (`balance::numalab`) of a source file under `src/`.
fn module_of(rel: &Path) -> String {
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string()).collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts.join("::")
}

/// The crate's modules this code names, resolved against the module set.
fn deps(module: &str, code: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let parent = module.rsplit_once("::").map_or("", |(p, _)| p);
    let mut out = BTreeSet::new();
    let code = code.split("#[cfg(test)]").next().unwrap_or_default();
    // Code only: comments may name any module.
    let code: String = code.lines().map(|l| l.split("//").next().unwrap_or_default()).collect::<Vec<_>>().join("\n");
    for (prefix, base) in [("crate::", String::new()), ("super::", parent.to_string())] {
        for (i, _) in code.match_indices(prefix) {
            let rest = &code[i + prefix.len()..];
            let path: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':').collect();
            let mut full = if base.is_empty() { path.clone() } else { format!("{base}::{path}") };
            // The longest prefix that is a module (`crate::cost::evaluate` -> `cost`).
            while !full.is_empty() && !modules.contains(&full) {
                full = full.rsplit_once("::").map_or(String::new(), |(p, _)| p.to_string());
            }
            // A child naming its parent's items is part of the parent (the parent declares it).
            if !full.is_empty() && full != module && !module.starts_with(&format!("{full}::")) {
                out.insert(full);
            }
        }
    }
    // A module depends on the children it declares (`pub mod numalab;` in balance/mod.rs).
    let children = modules.iter().filter(|m| m.rsplit_once("::").map_or("", |(p, _)| p) == module);
    out.extend(children.filter(|m| !m.is_empty()).cloned());
    out
}

fn files(dir: &Path, root: &Path, out: &mut Vec<(String, String)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            files(&p, root, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push((module_of(p.strip_prefix(root).unwrap()), std::fs::read_to_string(&p).unwrap()));
        }
    }
}

/// A cycle through `start`, if any.
fn cycle(graph: &BTreeMap<String, BTreeSet<String>>, start: &str) -> Option<Vec<String>> {
    let mut stack = vec![vec![start.to_string()]];
    let mut seen = BTreeSet::new();
    while let Some(path) = stack.pop() {
        for next in &graph[path.last().unwrap()] {
            if next == start {
                return Some([path.clone(), vec![next.clone()]].concat());
            }
            if seen.insert(next.clone()) {
                stack.push([path.clone(), vec![next.clone()]].concat());
            }
        }
    }
    None
}

#[test]
fn modules_have_no_cycles() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src, &src, &mut all);
    let modules: BTreeSet<String> = all.iter().map(|(m, _)| m.clone()).filter(|m| !m.is_empty()).collect();
    let graph: BTreeMap<String, BTreeSet<String>> =
        all.iter().filter(|(m, _)| !m.is_empty()).map(|(m, code)| (m.clone(), deps(m, code, &modules))).collect();
    // The scan sees the dependencies it must: the simulation uses the balancers and the costs.
    assert!(graph["simulate"].contains("balance") && graph["simulate"].contains("cost"), "{graph:?}");
    assert!(graph["balance::numalab"].contains("cost"), "{graph:?}");
    let cycles: Vec<String> = modules.iter().filter_map(|m| cycle(&graph, m)).map(|c| c.join(" -> ")).collect();
    assert!(cycles.is_empty(), "module cycles:\n{}", cycles.join("\n"));
}

#[test]
fn the_cycle_finder_finds_a_cycle() {
    let g: BTreeMap<String, BTreeSet<String>> = [("a", "b"), ("b", "c"), ("c", "a"), ("d", "a")]
        .iter()
        .map(|(x, y)| (x.to_string(), BTreeSet::from([y.to_string()])))
        .collect();
    assert_eq!(cycle(&g, "a"), Some(vec!["a".into(), "b".into(), "c".into(), "a".into()]));
    assert_eq!(cycle(&g, "d"), None);
    let modules: BTreeSet<String> = ["balance", "balance::numalab", "cost"].map(String::from).into();
    let code = "use super::{Balancer, LbInput};\nuse crate::cost::{evaluate, Eval};\n";
    assert_eq!(deps("balance::numalab", code, &modules), BTreeSet::from(["cost".to_string()]));
    // The parent depends on its children; a comment is no dependency.
    let parent = deps("balance", "pub mod numalab;\n// see crate::cost\n", &modules);
    assert_eq!(parent, BTreeSet::from(["balance::numalab".to_string()]));
}
