//! Pages placed before the program runs (docs/mapping.md §4): a data mapping's node for every
//! page, as a runtime that moves pages (`move_pages(2)`, numalize's mapping experiments) would
//! leave them. Pages the mapping leaves out are first-touched as usual; a page with no room on
//! its node is left to first touch too.

use super::*;

impl Engine<'_> {
    /// `nodes`: one list per region of each process, process by process, giving the node
    /// (logical index) of each 4 KiB page, `NONE` to leave it. A 2 MiB entry goes where its first
    /// page goes.
    pub fn premap(&mut self, nodes: &[Vec<u8>]) {
        let mut maps = nodes.iter();
        for (pid, proc) in self.procs.iter_mut().enumerate() {
            for region in proc.regions.iter_mut() {
                let Some(map) = maps.next() else { return };
                let (k, bp) = (region.shift - 12, region.base_pages());
                for u in 0..region.units() {
                    let want = map.get((u << k) as usize).copied().unwrap_or(NONE);
                    let n = want as usize;
                    if want == NONE || region.node[u as usize] != NONE || n >= self.pages_node.len() {
                        continue;
                    }
                    if self.alloc.free[n] < bp {
                        continue;
                    }
                    self.alloc.free[n] -= bp;
                    region.node[u as usize] = want;
                    self.pages_node[n] += bp;
                    if let Some(nb) = self.numab.as_mut() {
                        nb.on_alloc(pid, bp);
                    }
                }
            }
        }
    }
}
