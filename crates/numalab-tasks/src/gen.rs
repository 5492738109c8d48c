//! Graph generators that build the object graphs of the Charm++ benchmarks the way their code
//! does it (Charm++ sources, file and function cited per generator). Parameters come as a JSON
//! object (`params`); every key is checked, an unknown key is an error naming the accepted ones.

use serde_json::{Map, Value};

use crate::error::TaskError;
use crate::graph::{Edge, TaskGraph};
use crate::rng::Rng;

/// Typed access to a generator's `params`, refusing unknown keys.
pub struct Params<'a> {
    what: &'a str,
    map: Map<String, Value>,
    known: Vec<&'static str>,
}

impl<'a> Params<'a> {
    pub fn new(what: &'a str, params: &Value) -> Result<Self, TaskError> {
        let map = match params {
            Value::Null => Map::new(),
            Value::Object(m) => m.clone(),
            other => return Err(TaskError::param(format!("{what}: parameters must be a table, not {other}"))),
        };
        Ok(Params { what, map, known: Vec::new() })
    }

    pub fn f64(&mut self, key: &'static str, default: f64, min: f64) -> Result<f64, TaskError> {
        self.known.push(key);
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(default),
            Some(v) => match v.as_f64() {
                Some(x) if x.is_finite() && x >= min => Ok(x),
                _ => Err(TaskError::param(format!("{}: {key} = {v} (accepted: a number >= {min})", self.what))),
            },
        }
    }

    pub fn u64(&mut self, key: &'static str, default: u64, min: u64) -> Result<u64, TaskError> {
        self.known.push(key);
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(default),
            Some(v) => match v.as_u64() {
                Some(x) if x >= min => Ok(x),
                _ => Err(TaskError::param(format!("{}: {key} = {v} (accepted: an integer >= {min})", self.what))),
            },
        }
    }

    pub fn bool(&mut self, key: &'static str, default: bool) -> Result<bool, TaskError> {
        self.known.push(key);
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(v) => Err(TaskError::param(format!("{}: {key} = {v} (accepted: true, false)", self.what))),
        }
    }

    pub fn choice(&mut self, key: &'static str, default: &str, choices: &[&str]) -> Result<String, TaskError> {
        self.known.push(key);
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(default.to_string()),
            Some(Value::String(s)) if choices.iter().any(|c| c.eq_ignore_ascii_case(s)) => Ok(s.to_ascii_lowercase()),
            Some(v) => Err(TaskError::param(format!("{}: {key} = {v} (accepted: {})", self.what, choices.join(", ")))),
        }
    }

    /// Treat `key` as known without reading it.
    pub fn accept(&mut self, key: &'static str) {
        self.known.push(key);
    }

    /// Every key was read: anything left is a typo.
    pub fn finish(self) -> Result<(), TaskError> {
        if let Some(k) = self.map.keys().find(|k| !self.known.contains(&k.as_str())) {
            let mut known = self.known.clone();
            known.sort_unstable();
            return Err(TaskError::param(format!(
                "{}: unknown parameter '{k}' (accepted: {})",
                self.what,
                known.join(", ")
            )));
        }
        Ok(())
    }
}

/// Largest graph a generator builds (objects), and largest edge count (memory: 24 bytes an edge).
pub const MAX_OBJECTS: usize = 10_000_000;
pub const MAX_EDGES: usize = 50_000_000;
/// lb_test's RandGraph draws for every ordered pair of objects.
pub const MAX_RANDGRAPH_OBJECTS: usize = 50_000;

/// lb_test's message size (`N_BYTES = 1000` in tests/charm++/load_balancing/lb_test/Topo.h).
pub const LB_TEST_MSG_BYTES: u64 = 1000;
/// What lb_test's `Lb_array::pup` packs: six ints and `future_receives[50]` (lb_test.C).
pub const LB_TEST_STATE_BYTES: u64 = 6 * 4 + 50 * 4;
/// lb_test's RandGraph link ratio (`ratio = .01` in Topo.C `Topo::ConstructRandGraph`).
pub const LB_TEST_RAND_RATIO: f64 = 0.01;

/// lb_test (tests/charm++/load_balancing/lb_test, `Topo.C`):
/// - loads drawn once per element (`Topo::FindComputeTimes`): `min_us + (max_us - min_us) * U^4`,
///   U uniform in [0, 1] (the shipped code carries the drawn value through PUP, so loads stay fixed);
/// - topology (`Topo::Select`): `ring` (`ConstructRing`), `mesh2d` (near-square, no wrap,
///   `ConstructMesh2D`), `mesh3d` (smallest cube with holes, `ConstructMesh3D`), `randgraph` (ring +
///   random directed links chosen by selection sampling until `ratio * n(n-1)` links exist,
///   `ConstructRandGraph`);
/// - every element sends `N_BYTES` to each out-neighbour and a 1-byte message to itself
///   (`Lb_array::ForwardMessages`).
///
/// Parameters: `min_us` (50,000) and `max_us` (200,000: the setting of Pilla et al.'s scripts),
/// `topology` (`randgraph`), `ratio` (0.01), `msg_bytes` (1000), `state_bytes` (224).
pub fn lb_test(n: usize, seed: u64, params: &Value) -> Result<TaskGraph, TaskError> {
    let mut p = Params::new("lb_test", params)?;
    let min_us = p.f64("min_us", 50_000.0, 0.0)?;
    let max_us = p.f64("max_us", 200_000.0, 0.0)?;
    let topology = p.choice("topology", "randgraph", &["ring", "mesh2d", "mesh3d", "randgraph"])?;
    let ratio = p.f64("ratio", LB_TEST_RAND_RATIO, 0.0)?;
    let msg_bytes = p.u64("msg_bytes", LB_TEST_MSG_BYTES, 0)?;
    let state = p.u64("state_bytes", LB_TEST_STATE_BYTES, 0)?;
    p.finish()?;
    if !(2..=MAX_OBJECTS).contains(&n) {
        return Err(TaskError::param(format!("lb_test: n_objects = {n} (accepted: 2 to {MAX_OBJECTS})")));
    }
    // RandGraph draws once per ordered pair (O(n^2), as Topo.C does): 50,000 objects take seconds.
    if topology == "randgraph" && n > MAX_RANDGRAPH_OBJECTS {
        return Err(TaskError::param(format!(
            "lb_test: randgraph with n_objects = {n} (accepted: at most {MAX_RANDGRAPH_OBJECTS}; \
             topology ring, mesh2d or mesh3d take more)"
        )));
    }
    if topology == "randgraph" && ratio * (n * (n - 1)) as f64 > MAX_EDGES as f64 {
        return Err(TaskError::param(format!(
            "lb_test: ratio = {ratio} of {n} x {} links is more than {MAX_EDGES} edges",
            n - 1
        )));
    }
    if max_us < min_us {
        return Err(TaskError::param(format!("lb_test: max_us = {max_us} is below min_us = {min_us}")));
    }
    if ratio > 1.0 {
        return Err(TaskError::param(format!("lb_test: ratio = {ratio} (accepted: 0 to 1)")));
    }
    // Topo.C seeds the loads and, re-seeded, the graph from the same seed; separate streams here.
    let mut r = Rng::new(seed, 1);
    let loads_ns = (0..n).map(|_| (min_us + (max_us - min_us) * r.unit().powi(4)) * 1e3).collect();
    let mut out: Vec<(usize, usize)> = Vec::new();
    match topology.as_str() {
        "ring" => out.extend((0..n).map(|i| (i, (i + 1) % n))),
        "mesh2d" => {
            let nrows = (((n as f64).sqrt() + 0.5) as usize).max(1);
            let mut ncols = n / nrows;
            while nrows * ncols < n {
                ncols += 1;
            }
            for i in 0..n {
                let (r, c) = ((i / ncols) as i64, (i % ncols) as i64);
                for (dr, dc) in [(1, 0), (0, 1), (-1, 0), (0, -1)] {
                    let (tr, tc) = (r + dr, c + dc);
                    if tr < 0 || tc < 0 || tr >= nrows as i64 || tc >= ncols as i64 {
                        continue;
                    }
                    let dest = (tr * ncols as i64 + tc) as usize;
                    if dest < n {
                        out.push((i, dest));
                    }
                }
            }
        }
        "mesh3d" => {
            let mut len = (n as f64).cbrt().ceil() as usize;
            while len.pow(3) < n {
                len += 1;
            }
            let l = len as i64;
            for i in 0..n {
                let x = (i % len) as i64;
                let y = ((i / len) % len) as i64;
                let z = (i / (len * len)) as i64;
                for (dx, dy, dz) in [(-1, 0, 0), (1, 0, 0), (0, -1, 0), (0, 1, 0), (0, 0, -1), (0, 0, 1)] {
                    let (tx, ty, tz) = (x + dx, y + dy, z + dz);
                    if [tx, ty, tz].iter().any(|&v| v < 0 || v >= l) {
                        continue;
                    }
                    let dest = (tz * l * l + ty * l + tx) as usize;
                    if dest < n {
                        out.push((i, dest));
                    }
                }
            }
        }
        _ => {
            // Selection sampling exactly as ConstructRandGraph: the ring link of each element
            // counts as made; each further candidate (from + j) % n, j = 2..n-1, is taken with
            // probability (links still to make) / (candidates still to try).
            let mut g = Rng::new(seed, 2);
            let num = (n * (n - 1)) as f64;
            let (mut made, mut tried) = (0.0f64, 0.0f64);
            for from in 0..n {
                out.push((from, (from + 1) % n));
                made += 1.0;
                tried += 1.0;
                for j in 2..n {
                    let to_make = (ratio * num - made).trunc();
                    let to_try = num - tried;
                    if g.unit() * to_try < to_make {
                        out.push((from, (from + j) % n));
                        made += 1.0;
                    }
                    tried += 1.0;
                }
            }
        }
    }
    let mut edges: Vec<Edge> =
        out.into_iter().map(|(a, b)| Edge { a: a as u32, b: b as u32, msgs: 1, bytes: msg_bytes }).collect();
    edges.extend((0..n).map(|i| Edge { a: i as u32, b: i as u32, msgs: 1, bytes: 1 }));
    let mut g = TaskGraph::new(format!("lb_test-{topology}"), loads_ns, vec![state; n], edges)?;
    // Lb_array::Compute contributes to `pause` before AtSync, and ResumeFromSync contributes to
    // `restart`: two reductions, each followed by a broadcast.
    g.app_barriers = 2;
    Ok(g)
}

/// kNeighbor, the load-balancing example (examples/charm++/load_balancing/kNeighbor/kNeighbor.C):
/// a ring of `n` chares with wrap-around, each sending one message of `msg_bytes` to `k` neighbours
/// on each side (`Block::Block`), `CALCPERSTEP = 100` internal iterations per step. Element `i`
/// computes an N x N double loop with `N = (i*i / n) * 100` in integer arithmetic
/// (`Block::startInternalIteration`): a deterministic, extreme imbalance growing with the index.
/// One simulated iteration is one step: load = `calc_per_step * (N^2 * ns_per_op + base_ns)`.
/// Every message comes back: `Block::recvMsgs` returns it to its sender (`recvReplies`), which
/// reuses it for the next internal iteration. So each neighbour gets `calc_per_step` messages of
/// the element's own and `calc_per_step` returned ones per step, all of `msg_bytes`.
///
/// Parameters: `calc_per_step` (100), `ns_per_op` (1.0: estimate, one integer multiply-add of the
/// inner loop per nanosecond), `base_ns` (0: extra work per internal iteration, the "work"
/// parameter some variants add), `state_bytes` (default: the PUP size of `Block::pup`: 2k ints
/// and doubles, 5 scalars, and the 2k buffered messages of `msg_bytes`).
pub fn kneighbor(n: usize, k: usize, msg_bytes: u64, seed: u64, params: &Value) -> Result<TaskGraph, TaskError> {
    let _ = seed; // the code draws nothing: loads and the ring are deterministic
    let mut p = Params::new("kneighbor", params)?;
    let calc = p.u64("calc_per_step", 100, 1)?;
    let ns_per_op = p.f64("ns_per_op", 1.0, 0.0)?;
    let base_ns = p.f64("base_ns", 0.0, 0.0)?;
    let default_state = 2 * k as u64 * (4 + 8 + msg_bytes) + 5 * 8;
    let state = p.u64("state_bytes", default_state, 0)?;
    p.finish()?;
    if n < 2 || k == 0 || 2 * k >= n || n > MAX_OBJECTS || 2 * k * n > MAX_EDGES {
        return Err(TaskError::param(format!(
            "kneighbor: n_objects = {n}, k = {k} (accepted: k >= 1, 2k < n_objects <= {MAX_OBJECTS}, 2k x n_objects <= {MAX_EDGES})"
        )));
    }
    let loads_ns = (0..n)
        .map(|i| {
            let big_n = ((i * i / n) * 100) as f64;
            calc as f64 * (big_n * big_n * ns_per_op + base_ns)
        })
        .collect();
    let mut edges = Vec::with_capacity(2 * k * n);
    for i in 0..n {
        for d in 1..=k {
            for j in [(i + n - d) % n, (i + d) % n] {
                // i's own messages to j and j's messages returned to j.
                edges.push(Edge { a: i as u32, b: j as u32, msgs: 2 * calc, bytes: 2 * calc * msg_bytes });
            }
        }
    }
    let mut g = TaskGraph::new("kneighbor", loads_ns, vec![state; n], edges)?;
    // Block::ResumeFromSync contributes to Main::resumeIter, which broadcasts commWithNeighbors.
    g.app_barriers = 1;
    Ok(g)
}

/// jacobi2D (examples/charm++/jacobi2d-2d-decomposition/jacobi2d.C): an `nx` x `ny` grid in
/// `block` x `block` chares; each iteration a chare sends one ghost row or column of `block`
/// doubles to each existing neighbour (no wrap: `Jacobi::begin_iteration` skips the bounds) and
/// applies the 5-point average to its block. Each chare holds `temperature` and
/// `new_temperature`, two (block+2)^2 grids of doubles (`Jacobi::pup`). Chare (x, y) is object
/// `x * (ny/block) + y`, the flat index of a 2-D chare array.
///
/// Parameters: `ns_per_point` (2.0: estimate, a memory-bound 5-point update of one double),
/// `jitter` (0: relative load spread drawn once per chare from the seed; the code's load is uniform).
pub fn jacobi2d(nx: usize, ny: usize, block: usize, seed: u64, params: &Value) -> Result<TaskGraph, TaskError> {
    let mut p = Params::new("jacobi2d", params)?;
    let ns_per_point = p.f64("ns_per_point", 2.0, 0.0)?;
    let jitter = p.f64("jitter", 0.0, 0.0)?;
    p.finish()?;
    if block == 0 || nx == 0 || ny == 0 || nx % block != 0 || ny % block != 0 {
        return Err(TaskError::param(format!(
            "jacobi2d: nx = {nx}, ny = {ny}, block = {block} (accepted: block >= 1 dividing nx and ny)"
        )));
    }
    if jitter >= 1.0 {
        return Err(TaskError::param(format!("jacobi2d: jitter = {jitter} (accepted: 0 <= jitter < 1)")));
    }
    let (cx, cy) = (nx / block, ny / block);
    let n = cx * cy;
    if n > MAX_OBJECTS {
        return Err(TaskError::param(format!(
            "jacobi2d: {cx} x {cy} chares (accepted: at most {MAX_OBJECTS}; use a larger block)"
        )));
    }
    let mut r = Rng::new(seed, 3);
    let base = (block * block) as f64 * ns_per_point;
    let loads_ns = (0..n).map(|_| base * (1.0 + jitter * (2.0 * r.unit() - 1.0))).collect();
    let ghost = block as u64 * 8;
    let mut edges = Vec::new();
    for x in 0..cx {
        for y in 0..cy {
            let i = (x * cy + y) as u32;
            let mut send =
                |tx: usize, ty: usize| edges.push(Edge { a: i, b: (tx * cy + ty) as u32, msgs: 1, bytes: ghost });
            if x > 0 {
                send(x - 1, y);
            }
            if x + 1 < cx {
                send(x + 1, y);
            }
            if y > 0 {
                send(x, y - 1);
            }
            if y + 1 < cy {
                send(x, y + 1);
            }
        }
    }
    let state = 2 * ((block + 2) * (block + 2) * 8) as u64;
    TaskGraph::new("jacobi2d", loads_ns, vec![state; n], edges)
}
