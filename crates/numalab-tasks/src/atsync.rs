//! The `AtSync` barrier before each balancing step. Every object calls `AtSync()`; once all of a
//! PE's objects have, the PE's LB database reports to the central balancer on PE 0
//! (`CentralLB::AtSync` -> `ProcessAtSync` -> `ReceiveStats`), and after the step PE 0 resumes
//! every PE (`CentralLB::ResumeClients`, a broadcast). Both travel Converse's spanning tree of
//! PEs: PE n's parent is (n - 1) / 4 and its children 4n + 1 .. 4n + 4 (`CmiSpanTreeParent`,
//! `CMK_SPANTREE_MAXSPAN` = 4 in every machine layer's conv-mach.h).
//!
//! Here both are control messages of [`CONTROL_MSG_BYTES`]: a reduction up the tree (a parent
//! forwards once its last child's message has arrived) and a broadcast down it (a parent sends
//! to its children one after another). What the statistics themselves weigh is not counted.

use crate::platform::Platform;

/// Children per PE in Converse's spanning tree (`CMK_SPANTREE_MAXSPAN`).
pub const SPAN: usize = 4;
/// Bytes of one control message: Charm++'s message envelope and a small payload [est. 100 B].
pub const CONTROL_MSG_BYTES: f64 = 100.0;

/// Time from the last PE reaching the barrier until every PE has been resumed: one reduction to
/// PE 0 and one broadcast from it, in ns (0 with one PE).
pub fn barrier_ns(plat: &Platform) -> f64 {
    reduce_ns(plat, CONTROL_MSG_BYTES) + broadcast_ns(plat, CONTROL_MSG_BYTES)
}

/// A reduction of messages of `bytes` up the spanning tree to PE 0, in ns: a parent forwards
/// once its last child's message has arrived.
pub fn reduce_ns(plat: &Platform, bytes: f64) -> f64 {
    let np = plat.n_pes();
    // Children have larger indexes than their parent: one pass from the last PE settles each.
    let mut up = vec![0.0f64; np];
    for c in (1..np).rev() {
        let p = (c - 1) / SPAN;
        let (s, r) = plat.message_ns(c, p, 1.0, bytes);
        up[p] = up[p].max(up[c] + s + r);
    }
    up.first().copied().unwrap_or(0.0)
}

/// A broadcast of one message of `bytes` from PE 0 down the spanning tree until the last PE has
/// it, in ns: a parent sends to its children one after another, so child k waits for the k sends
/// before it.
pub fn broadcast_ns(plat: &Platform, bytes: f64) -> f64 {
    let np = plat.n_pes();
    let (mut down, mut sent) = (vec![0.0f64; np], vec![0.0f64; np]);
    for c in 1..np {
        let p = (c - 1) / SPAN;
        if (c - 1) % SPAN == 0 {
            sent[p] = down[p];
        }
        let (s, r) = plat.message_ns(p, c, 1.0, bytes);
        sent[p] += s;
        down[c] = sent[p] + r;
    }
    down.iter().copied().fold(0.0, f64::max)
}

/// One object's record in a statistics message (`LDObjData`: handle, ids, wall and CPU time,
/// migratable flags) [est. 80 B].
pub const OBJ_RECORD_BYTES: f64 = 80.0;
/// One communication record (`LDCommData`: sender, receiver key, messages, bytes) [est. 64 B].
pub const COMM_RECORD_BYTES: f64 = 64.0;

/// Time for every PE's statistics to reach the central balancer on PE 0: each PE sends one
/// message straight to it (`CentralLB::SendStats` -> `thisProxy[cur_ld_balancer].ReceiveStats`,
/// up to 1,024 PEs) holding a record per object it hosts and per communication record its
/// objects sent (one per sender and receiver, `LBCommTable`); PE 0 takes them one after another.
/// `objs[p]` and `comms[p]`: records of PE p.
pub fn stats_gather_ns(plat: &Platform, objs: &[usize], comms: &[usize]) -> f64 {
    let (mut first, mut serial) = (f64::INFINITY, 0.0);
    for p in 1..plat.n_pes() {
        let bytes = CONTROL_MSG_BYTES + objs[p] as f64 * OBJ_RECORD_BYTES + comms[p] as f64 * COMM_RECORD_BYTES;
        let (s, r) = plat.message_ns(p, 0, 1.0, bytes);
        first = first.min(s);
        serial += r;
    }
    if serial == 0.0 {
        0.0
    } else {
        first + serial
    }
}
