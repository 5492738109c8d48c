//! Integration tests of the engine (one binary): the checks of docs/allocation.md §10 and docs/contention.md §10 and
//! the kernel rules of docs/balancing.md §18 that the engine covers.

mod alloc;
mod common;
mod corun;
mod filemap;
mod latbal;
mod limits;
mod numa_balancing;
mod policies;
mod profiles;
mod scheduler;
mod shared;
mod thp;
mod tiering;
mod timing;
mod vhost;
