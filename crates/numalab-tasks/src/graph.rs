//! The task graph: objects (Charm++'s chares) with a load per iteration and a state size, and
//! communication edges with messages and bytes per iteration, as Charm++'s load-balancing
//! database records them (`LDObjData.wallTime`, `LDObjData.pupSize`, `LDCommData.messages` and
//! `.bytes`: src/ck-ldb/lbdb.h).

use serde::Serialize;

use crate::error::TaskError;

/// Largest load of one object per iteration: 10^15 ns, eleven days. A Charm++ object runs for
/// micro- to milliseconds between balancing steps; the bound keeps every sum of loads (a million
/// objects, thousands of iterations) finite and exact enough in f64.
pub const MAX_LOAD_NS: f64 = 1e15;
/// Largest state of one object (its PUP size): 2^48 bytes, beyond any machine's memory.
pub const MAX_STATE_BYTES: u64 = 1 << 48;
/// Largest traffic of one edge per iteration: 2^40 messages and 2^48 bytes, so that sums over
/// every edge and iteration stay far inside u64 and exact in f64.
pub const MAX_EDGE_MSGS: u64 = 1 << 40;
pub const MAX_EDGE_BYTES: u64 = 1 << 48;

/// `a` sends `msgs` messages totalling `bytes` bytes to `b` every iteration (`a == b` is a
/// message to itself, which a PE delivers from its own queue).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Edge {
    pub a: u32,
    pub b: u32,
    pub msgs: u64,
    pub bytes: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TaskGraph {
    /// Where the graph came from (`lb_test`, `kneighbor`, `jacobi2d`, a file path).
    pub name: String,
    /// Compute time of each object per iteration, in nanoseconds.
    pub loads_ns: Vec<f64>,
    /// What migrating each object copies (its PUP size), in bytes.
    pub state_bytes: Vec<u64>,
    pub edges: Vec<Edge>,
    /// The PE each object starts on, when the source says (an LB dump's `from_proc`).
    pub initial_pe: Option<Vec<u32>>,
    /// Which objects may move (an LB dump's `migratable`); all when absent.
    pub migratable: Option<Vec<bool>>,
    /// Reductions and broadcasts of the program's own around each `AtSync` (lb_test: 2,
    /// kNeighbor: 1; 0 for a file), each as long as the LB framework's barrier.
    pub app_barriers: u32,
}

impl TaskGraph {
    /// Build and check a graph: at least one object, finite non-negative loads, one state size per
    /// object, edge ends inside the object range.
    pub fn new(
        name: impl Into<String>,
        loads_ns: Vec<f64>,
        state_bytes: Vec<u64>,
        edges: Vec<Edge>,
    ) -> Result<Self, TaskError> {
        let g = TaskGraph {
            name: name.into(),
            loads_ns,
            state_bytes,
            edges,
            initial_pe: None,
            migratable: None,
            app_barriers: 0,
        };
        g.check()?;
        Ok(g)
    }

    pub fn check(&self) -> Result<(), TaskError> {
        let n = self.loads_ns.len();
        if n == 0 {
            return Err(TaskError::param(format!("graph '{}' has no objects", self.name)));
        }
        if self.state_bytes.len() != n {
            return Err(TaskError::param(format!(
                "graph '{}': {} state sizes for {} objects",
                self.name,
                self.state_bytes.len(),
                n
            )));
        }
        if let Some(i) = self.loads_ns.iter().position(|l| !l.is_finite() || *l < 0.0 || *l > MAX_LOAD_NS) {
            return Err(TaskError::param(format!(
                "graph '{}': object {i} has load {} ns (accepted: a finite number from 0 to {MAX_LOAD_NS:e})",
                self.name, self.loads_ns[i]
            )));
        }
        if let Some(i) = self.state_bytes.iter().position(|s| *s > MAX_STATE_BYTES) {
            return Err(TaskError::param(format!(
                "graph '{}': object {i} has state {} bytes (accepted: at most 2^48)",
                self.name, self.state_bytes[i]
            )));
        }
        if let Some(e) = self.edges.iter().find(|e| e.msgs > MAX_EDGE_MSGS || e.bytes > MAX_EDGE_BYTES) {
            return Err(TaskError::param(format!(
                "graph '{}': edge {} -> {} carries {} messages and {} bytes per iteration (accepted: at most 2^40 and 2^48)",
                self.name, e.a, e.b, e.msgs, e.bytes
            )));
        }
        if let Some(e) = self.edges.iter().find(|e| e.a as usize >= n || e.b as usize >= n) {
            return Err(TaskError::param(format!(
                "graph '{}': edge {} -> {} names an object outside 0..{}",
                self.name, e.a, e.b, n
            )));
        }
        Ok(())
    }

    pub fn n_objects(&self) -> usize {
        self.loads_ns.len()
    }

    pub fn total_load_ns(&self) -> f64 {
        self.loads_ns.iter().sum()
    }
}

/// Undirected adjacency in compressed rows: for object `i`, `nbr[start[i]..start[i+1]]` are
/// `(partner, msgs, bytes)` of every edge touching `i` (both directions; self edges left out).
#[derive(Clone, Debug)]
pub struct Adjacency {
    pub start: Vec<usize>,
    pub nbr: Vec<(u32, f64, f64)>,
}

impl Adjacency {
    pub fn new(n: usize, edges: &[Edge]) -> Self {
        let mut deg = vec![0usize; n + 1];
        for e in edges.iter().filter(|e| e.a != e.b) {
            deg[e.a as usize] += 1;
            deg[e.b as usize] += 1;
        }
        let mut start = vec![0usize; n + 1];
        for i in 0..n {
            start[i + 1] = start[i] + deg[i];
        }
        let mut fill = start.clone();
        let mut nbr = vec![(0u32, 0.0, 0.0); start[n]];
        for e in edges.iter().filter(|e| e.a != e.b) {
            let (m, b) = (e.msgs as f64, e.bytes as f64);
            nbr[fill[e.a as usize]] = (e.b, m, b);
            fill[e.a as usize] += 1;
            nbr[fill[e.b as usize]] = (e.a, m, b);
            fill[e.b as usize] += 1;
        }
        Adjacency { start, nbr }
    }

    pub fn of(&self, i: usize) -> &[(u32, f64, f64)] {
        &self.nbr[self.start[i]..self.start[i + 1]]
    }
}
