//! Integration tests of the engine (one binary): the analytic checks of design/model.md §11 and
//! the kernel rules of design/reference/linux-numa.md §12 that the engine covers.

mod balancing;
mod common;
mod policies;
mod scheduler;
mod timing;
