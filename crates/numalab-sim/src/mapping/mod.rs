//! Data mapping analysis (docs/mapping.md): which node accesses each page, how exclusive pages
//! are, which threads share data, and how numalize's page mappings would score.
//!
//! - [`accesses`]: per-page, per-node access counts worked out from a workload's access
//!   patterns (never from the engine's hot loop, so plain runs pay nothing for it);
//! - [`metrics`]: exclusivity, its histogram and coarser page sizes, the communication
//!   matrix's summary, and the mappings with their locality and balance scores;
//! - [`corun`]: the counts of a co-run, a segment several processes share counted once.

pub mod accesses;
pub mod corun;
pub mod metrics;

pub use accesses::{page_accesses, PageAccesses, RegionPages};
pub use corun::corun_page_accesses;
pub use metrics::{mapping_metrics, mapping_nodes, MappingMetrics, MAPPINGS};
