//! The machine as a task runtime sees it: PEs (one per core, pinned, as Charm++ runs them) with
//! their NUMA node, and what moving bytes between two nodes costs.
//!
//! - **NUMA factor** `nf[i][j]`: idle latency from a CPU of node i to memory of node j over the
//!   local latency (`Machine.idle_latency_ns`), or SLIT/10 when latencies are absent — the factor
//!   NucoLB weighs messages by (src/ck-ldb/NucoLB.C, Pilla et al., ICPP 2012).
//! - **Copy rate** `rate[i][j]` (bytes/ns = GB/s): what one core of node i reads from memory of
//!   node j. By Little's law a core with `mlp` outstanding 64-byte lines sustains `mlp * 64 /
//!   latency` (docs/contention.md §4), capped by node j's controller bandwidth over the NUMA factor
//!   and by every link on the route from j to i (`Machine.routes`, `Machine.links`).
//! - **Communication layers** ([`CommLayer`]), per message between two PEs ([`Platform::message_ns`]):
//!   - `shm`, Charm++'s SMP/multicore build: the sender enqueues a pointer in the receiver's queue
//!     (`CmiPushPE`, src/conv-core/pcqueue.h), `shm_msg_ns` per side; the receiver then misses on
//!     the queue slot and the message's header ([`SHM_MISSES_PER_MSG`] dependent misses at the
//!     idle latency from its node to the sender's) and reads the payload from the sender's node at
//!     the node pair's copy rate, since the buffer stays where the sender allocated it.
//!   - `net`, the UDP build (src/arch/netlrts/machine-dgram.c, machine-eth.c, v6.9.0): one process
//!     per PE; a message travels as datagrams of at most `Cmi_max_dgram_size` = 9,000 bytes less
//!     the 8-byte `DGRAM_HEADER_SIZE` (`setspeed_gigabit`, the default), each costing
//!     `net_dgram_ns` per side (`sendto`, `recvfrom` and the UDP path). The receiver acknowledges
//!     once more than half its window has arrived (`TransmitAcknowledgement`: `recv_ack_cnt >
//!     Cmi_half_window`, window 8), so every 5 datagrams cost one ack datagram more on each side.
//!     The sender copies the payload into the kernel (local); the receiver reads it from the
//!     sender's node (`recvfrom`, with [`NET_MISSES_PER_DGRAM`] misses on the buffer's header per
//!     datagram) and copies it into the message (`AssembleDatagram`'s `memcpy`, local).
//!     Retransmission never happens: the socket buffers (`Cmi_os_buffer_size` 200,000 bytes) hold
//!     the whole window (8 x 9,000), and loopback loses nothing else.

use numalab_model::Machine;
use serde::Serialize;

use crate::error::TaskError;
use crate::gen::Params;

/// Bytes of one cache line, the unit of a core's outstanding misses.
const LINE_BYTES: f64 = 64.0;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CommLayer {
    Shm,
    Net,
}

impl CommLayer {
    pub fn parse(s: &str) -> Result<Self, TaskError> {
        match s.to_ascii_lowercase().as_str() {
            "shm" => Ok(CommLayer::Shm),
            "net" | "udp" => Ok(CommLayer::Net),
            _ => Err(TaskError::param(format!("comm_layer '{s}' (accepted: shm, net)"))),
        }
    }
}

/// Dependent cache misses a receiver of the shared-memory layer takes per message before it
/// reads the payload: its queue slot (written by the sender) and the message's header.
pub const SHM_MISSES_PER_MSG: f64 = 2.0;
/// Misses per received datagram on the socket buffer's header (`sk_buff` and its data's first
/// line), written on the sender's node: `net_rx`'s work on loopback runs in the sender's context.
pub const NET_MISSES_PER_DGRAM: f64 = 2.0;
/// `DGRAM_HEADER_SIZE` of src/arch/netlrts/machine-dgram.c.
pub const NET_DGRAM_HEADER: f64 = 8.0;

/// Per-message, per-migration and strategy constants (all overridable through `params`; ranges
/// of the estimates in [`ESTIMATES`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct CostParams {
    /// Enqueueing or dequeueing one message between PEs of the shared-memory build, per side.
    /// Estimate: ~1 µs one-way for a small message between cores of a 2011 multicore build.
    pub shm_msg_ns: f64,
    /// Sending or receiving one UDP datagram (one `sendto` or `recvfrom` through the loopback path
    /// plus the net layer's sequencing), per side. Estimate for Linux 2.6-era x86 servers: ~5 µs;
    /// no published figure for the study's machines was found. To calibrate on a host, lmbench's
    /// `lat_udp localhost` prints one round trip = two messages = four sides: use a quarter of it.
    pub net_dgram_ns: f64,
    /// Payload of one datagram: `Cmi_max_dgram_size` (9,000) less `DGRAM_HEADER_SIZE` (8)
    /// (src/arch/netlrts/machine-dgram.c: `setspeed_gigabit`, `Cmi_dgram_max_data`).
    pub net_dgram_bytes: f64,
    /// Datagrams a sender may have unacknowledged (`Cmi_window_size` = 8, `setspeed_gigabit`);
    /// the receiver acknowledges after more than half of it.
    pub net_window: f64,
    /// Fixed cost of migrating one object besides its copies and its message: PUP sizing, the
    /// location manager's records and re-registration. Estimate: 20 µs (within 10-50 µs).
    pub migration_fixed_ns: f64,
    /// An in-process strategy's time per unit of work (crate::strategy_time): estimate 10 ns,
    /// twice what numalab's Rust strategies take here (bench/lb_bench.py: greedy 1 ms for 10,000
    /// objects on 64 PEs, ~5 ns a unit), for Charm++'s C++ on a 2011 core.
    pub strategy_op_ns: f64,
    /// METIS's time per (n + E) log2 P: measured by bench/lb_strategy_time.py on this project's
    /// machine (80-500 ns over 200-10,000 objects and 16-64 parts).
    pub metis_unit_ns: f64,
    /// Scotch's (`gpart -cb -b0.01`) time per (n + E) log2 P: measured by bench/lb_strategy_time.py
    /// (300-2,400 ns up to 10,000 objects on 16 parts; 14,000 ns for 10,000 objects on 64).
    pub scotch_unit_ns: f64,
}

/// Estimated constants and their ranges: (parameter, low, high, source). The rest of
/// [`CostParams`] comes from Charm++'s sources.
pub const ESTIMATES: [(&str, f64, f64, &str); 6] = [
    ("shm_msg_ns", 300.0, 3_000.0, "enqueue or dequeue of a pointer in a PE's queue: 0.3-3 us on 2011 multicores"),
    ("net_dgram_ns", 2_000.0, 10_000.0, "one sendto or recvfrom of a UDP datagram on loopback, Linux 2.6-era: 2-10 us"),
    ("migration_fixed_ns", 10_000.0, 50_000.0, "PUP sizing, the location manager's records, re-registration: 10-50 us"),
    (
        "strategy_op_ns",
        3.0,
        30.0,
        "a strategy's unit of work: ~5 ns for numalab's Rust here, up to 30 for C++ on 2011 cores",
    ),
    ("metis_unit_ns", 80.0, 500.0, "bench/lb_strategy_time.py on this machine: 200-10,000 objects, 16-64 parts"),
    ("scotch_unit_ns", 300.0, 15_000.0, "bench/lb_strategy_time.py on this machine: 200-10,000 objects, 16-64 parts"),
];

impl Default for CostParams {
    fn default() -> Self {
        CostParams {
            shm_msg_ns: 1_000.0,
            net_dgram_ns: 5_000.0,
            net_dgram_bytes: 8_992.0,
            net_window: 8.0,
            migration_fixed_ns: 20_000.0,
            strategy_op_ns: 10.0,
            metis_unit_ns: 200.0,
            scotch_unit_ns: 1_000.0,
        }
    }
}

impl CostParams {
    pub fn read(p: &mut Params<'_>) -> Result<Self, TaskError> {
        let d = CostParams::default();
        Ok(CostParams {
            shm_msg_ns: p.f64("shm_msg_ns", d.shm_msg_ns, 0.0)?,
            net_dgram_ns: p.f64("net_dgram_ns", d.net_dgram_ns, 0.0)?,
            net_dgram_bytes: p.f64("net_dgram_bytes", d.net_dgram_bytes, 1.0)?,
            net_window: p.f64("net_window", d.net_window, 2.0)?,
            migration_fixed_ns: p.f64("migration_fixed_ns", d.migration_fixed_ns, 0.0)?,
            strategy_op_ns: p.f64("strategy_op_ns", d.strategy_op_ns, 0.0)?,
            metis_unit_ns: p.f64("metis_unit_ns", d.metis_unit_ns, 0.0)?,
            scotch_unit_ns: p.f64("scotch_unit_ns", d.scotch_unit_ns, 0.0)?,
        })
    }
}

/// The PEs and the node-pair costs of one machine.
#[derive(Clone, Debug)]
pub struct Platform {
    /// Node (logical index) of each PE.
    pub pe_node: Vec<usize>,
    /// OS index of each PE's first PU (what `numactl --physcpubind` would name).
    pub pe_cpu: Vec<u32>,
    pub n_nodes: usize,
    pub distances: Vec<Vec<u32>>,
    pub nf: Vec<Vec<f64>>,
    /// `lat[i][j]`: idle latency from a core of node i to node j's memory, ns (100 x NUMA factor
    /// when the machine gives none).
    pub lat: Vec<Vec<f64>>,
    /// `rate[i][j]`: bytes/ns one core of node i reads from node j's memory.
    pub rate: Vec<Vec<f64>>,
    /// Links each directed node pair's traffic crosses, as indexes into `link_gbps` (per direction).
    pub route_links: Vec<Vec<Vec<usize>>>,
    /// Bandwidth of each link direction (`2 * link + dir`), bytes/ns.
    pub link_gbps: Vec<f64>,
    pub layer: CommLayer,
    pub costs: CostParams,
}

impl Platform {
    /// PEs = the first `pes` cores of the machine (all when `None`), in core logical order: how
    /// Charm++ with `+setcpuaffinity` pins PE k to the k-th core.
    pub fn new(m: &Machine, pes: Option<usize>, layer: CommLayer, costs: CostParams) -> Result<Self, TaskError> {
        let n_cores = m.cores.len();
        let n_pes = pes.unwrap_or(n_cores);
        if n_pes == 0 || n_pes > n_cores {
            return Err(TaskError::param(format!("pes = {n_pes} (accepted: 1 to {n_cores}, the cores of {})", m.name)));
        }
        let n_nodes = m.nodes.len();
        // Node OS index -> logical index, once: looking nodes up per core and per node pair made
        // a 1,024-node machine take minutes.
        let node_of: std::collections::HashMap<u32, usize> =
            m.nodes.iter().enumerate().map(|(i, n)| (n.os_index, i)).collect();
        let mut pe_node = Vec::with_capacity(n_pes);
        let mut pe_cpu = Vec::with_capacity(n_pes);
        for c in &m.cores[..n_pes] {
            let node = *node_of.get(&c.node).ok_or_else(|| {
                TaskError::param(format!("core {} names node {}, which the machine lacks", c.os_index, c.node))
            })?;
            pe_node.push(node);
            pe_cpu.push(c.cpuset.iter().next().unwrap_or(c.os_index));
        }
        // Mean outstanding lines of each node's cores (the machine's largest for a CPU-less node).
        let (mut mlp_sum, mut mlp_n) = (vec![0.0; n_nodes], vec![0usize; n_nodes]);
        for c in &m.cores {
            if let Some(&i) = node_of.get(&c.node) {
                mlp_sum[i] += c.mlp;
                mlp_n[i] += 1;
            }
        }
        let mlp_max = m.cores.iter().map(|c| c.mlp).fold(1.0, f64::max);
        let mlp: Vec<f64> =
            (0..n_nodes).map(|i| if mlp_n[i] == 0 { mlp_max } else { mlp_sum[i] / mlp_n[i] as f64 }).collect();
        let lat_ok = m.idle_latency_ns.len() == n_nodes
            && m.idle_latency_ns.iter().all(|r| r.len() == n_nodes && r.iter().all(|x| x.is_finite() && *x > 0.0));
        let mut link_gbps = Vec::with_capacity(2 * m.links.len());
        for l in &m.links {
            link_gbps.push(l.gbps[0]);
            link_gbps.push(l.gbps[1]);
        }
        let mut nf = vec![vec![1.0; n_nodes]; n_nodes];
        let mut rate = vec![vec![1.0; n_nodes]; n_nodes];
        let mut lat_ns = vec![vec![100.0; n_nodes]; n_nodes];
        let mut route_links = vec![vec![Vec::new(); n_nodes]; n_nodes];
        for i in 0..n_nodes {
            for j in 0..n_nodes {
                nf[i][j] = if lat_ok {
                    m.idle_latency_ns[i][j] / m.idle_latency_ns[i][i]
                } else {
                    m.distances.get(i).and_then(|r| r.get(j)).map_or(1.0, |d| *d as f64 / 10.0)
                };
                // Data read by node i from node j travels j -> i.
                let links: Vec<usize> = m
                    .routes
                    .get(j)
                    .and_then(|r| r.get(i))
                    .map(|hops| hops.iter().map(|h| 2 * h.link as usize + h.dir as usize).collect())
                    .unwrap_or_default();
                let lat = if lat_ok { m.idle_latency_ns[i][j] } else { 100.0 * nf[i][j] };
                lat_ns[i][j] = lat;
                let mut r = mlp[i] * LINE_BYTES / lat;
                // The controller's bandwidth is reached with a fixed number of requests in flight;
                // from farther away each takes nf times longer (Little's law again).
                if m.nodes[j].bandwidth_gbps > 0.0 {
                    r = r.min(m.nodes[j].bandwidth_gbps / nf[i][j]);
                }
                for &l in &links {
                    r = r.min(link_gbps[l]);
                }
                rate[i][j] = r;
                route_links[j][i] = links;
            }
        }
        Ok(Platform {
            pe_node,
            pe_cpu,
            n_nodes,
            distances: m.distances.clone(),
            nf,
            lat: lat_ns,
            rate,
            route_links,
            link_gbps,
            layer,
            costs,
        })
    }

    pub fn n_pes(&self) -> usize {
        self.pe_node.len()
    }

    /// Datagrams a message of `bytes` needs in the net layer (at least one per message), each
    /// with its share of an acknowledgement (one per `net_window / 2 + 1` datagrams).
    fn dgrams(&self, msgs: f64, bytes: f64) -> f64 {
        if msgs <= 0.0 {
            return 0.0;
        }
        let data = msgs * (bytes / msgs / self.costs.net_dgram_bytes).ceil().max(1.0);
        data * (1.0 + 1.0 / ((self.costs.net_window / 2.0).floor() + 1.0))
    }

    /// Cost of `msgs` messages totalling `bytes` from PE `p` to PE `q`: `(sender side, receiver
    /// side)` in ns, link limits aside. Same PE is free: the message goes to the PE's own queue in
    /// both layers.
    pub fn message_ns(&self, p: usize, q: usize, msgs: f64, bytes: f64) -> (f64, f64) {
        if p == q {
            return (0.0, 0.0);
        }
        self.node_sides(self.pe_node[p], self.pe_node[q], msgs, bytes)
    }

    /// Both sides of [`Platform::message_ns`] between two different PEs of nodes `src` and `dst`.
    fn node_sides(&self, src: usize, dst: usize, msgs: f64, bytes: f64) -> (f64, f64) {
        let remote = bytes / self.rate[dst][src];
        match self.layer {
            CommLayer::Shm => {
                let c = self.costs.shm_msg_ns * msgs;
                (c, c + msgs * SHM_MISSES_PER_MSG * self.lat[dst][src] + remote)
            }
            CommLayer::Net => {
                let d = self.dgrams(msgs, bytes);
                let wire = bytes + d * NET_DGRAM_HEADER;
                let send = d * self.costs.net_dgram_ns + wire / self.rate[src][src];
                let recv = d * (self.costs.net_dgram_ns + NET_MISSES_PER_DGRAM * self.lat[dst][src])
                    + wire / self.rate[dst][src]
                    + bytes / self.rate[dst][dst];
                (send, recv)
            }
        }
    }

    /// [`Platform::message_ns`] between two different PEs of nodes `src` and `dst`, both sides summed.
    pub fn node_message_ns(&self, src: usize, dst: usize, msgs: f64, bytes: f64) -> f64 {
        let (s, r) = self.node_sides(src, dst, msgs, bytes);
        s + r
    }

    /// Migration of one object whose PUP size is `state` bytes from PE `p` to PE `q`: `(source
    /// side, destination side)` in ns. The source packs the state into a message (a local copy,
    /// `CkMigratable::pup` through `PUP::toMem`) and sends it; the destination receives it as any
    /// message of the layer (reading it from the source's node) and unpacks it into the new object
    /// (`PUP::fromMem`, a local copy), so the data lands on the destination node (first touch).
    /// The fixed overhead (sizing, the location manager's records, re-registration) is split
    /// between the two ends. Zero when `p == q`.
    pub fn migration_ns(&self, p: usize, q: usize, state: f64) -> (f64, f64) {
        if p == q {
            return (0.0, 0.0);
        }
        let (src, dst) = (self.pe_node[p], self.pe_node[q]);
        let half = self.costs.migration_fixed_ns / 2.0;
        let (send, recv) = self.node_sides(src, dst, 1.0, state);
        (half + state / self.rate[src][src] + send, half + recv + state / self.rate[dst][dst])
    }

    /// Total time to migrate one object (both sides, one after the other).
    pub fn migration_total_ns(&self, p: usize, q: usize, state: f64) -> f64 {
        let (a, b) = self.migration_ns(p, q, state);
        a + b
    }
}
