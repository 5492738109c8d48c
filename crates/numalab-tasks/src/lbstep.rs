//! The balancing step after the strategy has run, as `CentralLB` does it (src/ck-ldb/CentralLB.C,
//! v6.9.0):
//!
//! 1. **Decision broadcast.** `ApplyDecision` broadcasts one `LBMigrateMsg` to every PE
//!    (`thisProxy.ReceiveMigration(migrateMsg)`): a record per move (`MigrateInfo`:
//!    index, object handle, from and to PE, async flag; [`MIGRATE_INFO_BYTES`]) and per PE its
//!    availability flag and expected load (`avail_vector`, `expectedLoad`: 9 bytes), down the
//!    spanning tree ([`crate::atsync::broadcast_ns`]).
//! 2. **Everyone has it.** `ReceiveMigration` contributes to a reduction whose target,
//!    `ProcessReceiveMigration`, is broadcast: one more barrier before any object moves.
//! 3. **Migrations** ([`crate::cost`]'s migration step).
//! 4. **Resumption.** `MigrationDone` -> `ResumeClients` runs on each PE by itself (no barrier
//!    unless `+LBSyncResume`): the LB database calls every local object's `ResumeFromSync`
//!    (`CkMigratable::ResumeFromSync` through `LBDatabase::ResumeClients`), one entry method per
//!    object ([`RESUME_ENTRY_NS`]); the busiest PE decides.

use crate::atsync::{barrier_ns, broadcast_ns, CONTROL_MSG_BYTES};
use crate::platform::Platform;

/// One `MigrateInfo` as PUP writes it on LP64: index (4), `LDObjHandle` (`LDOMHandle` 16, id 8,
/// handle 4, padded to 32), from_pe, to_pe, async_arrival (4 each), padded to 8 [est. 56 B].
pub const MIGRATE_INFO_BYTES: f64 = 56.0;
/// Per PE in an `LBMigrateMsg`: one `avail_vector` char and one `expectedLoad` double.
pub const PER_PE_BYTES: f64 = 9.0;
/// One local entry-method call (`ResumeFromSync`) through the scheduler [est. 1 µs; 0.3-3 µs,
/// as a shared-memory message side].
pub const RESUME_ENTRY_NS: f64 = 1_000.0;

/// Steps 1 and 2: the decision reaches every PE and every PE knows that all have it, in ns.
pub fn decision_ns(plat: &Platform, moves: usize) -> f64 {
    if plat.n_pes() < 2 {
        return 0.0;
    }
    let bytes = CONTROL_MSG_BYTES + moves as f64 * MIGRATE_INFO_BYTES + plat.n_pes() as f64 * PER_PE_BYTES;
    broadcast_ns(plat, bytes) + barrier_ns(plat)
}

/// Step 4: every PE resumes its objects; `objs[p]` objects on PE p after the migrations.
pub fn resume_ns(objs: &[usize]) -> f64 {
    objs.iter().copied().max().unwrap_or(0) as f64 * RESUME_ENTRY_NS
}
