//! sparkyard: Spark-on-YARN's control plane rebuilt in Rust as a supervised actor system.
//!
//! Modules, by layer, bottom first (the lower five import only from the layers under them,
//! which `tests/layers.rs` checks; the Spark side's modules still import each other):
//! [`logs`] (the log context, structured actor logs and their reader, container output, the
//! modes of the files sparkyard writes), [`runtime`] (supervision trees on actix, paths,
//! registry, endpoint refs, death watch, fault injection, the clock), [`conf`] (SparkConf and the
//! configuration files), [`rpc`] (the TCP transport, generic over its protocol), [`yarn`]
//! (ResourceManager, NodeManagers and their launcher registry, records, protocols, the
//! all-in-one node); then the Spark side: [`deploy`] (SparkSubmit, the Client, the
//! ApplicationMaster and its allocator), [`scheduler`] (the driver's endpoints and
//! messages), [`executor`] (the executor backend), [`context`] (what applications see:
//! AppEnv, SparkContext), [`rdd`]; and on top [`apps`] (the built-in applications),
//! [`chaos`] (what fault injection aims at, plans from the configuration), [`cli`] (the
//! command line, and the binary's roles as a NodeManager launches them).

pub mod apps;
pub mod chaos;
pub mod cli;
pub mod conf;
pub mod context;
pub mod deploy;
pub mod executor;
pub mod logs;
pub mod rdd;
pub mod rpc;
pub mod runtime;
pub mod scheduler;
pub mod yarn;

/// Declares the process's allocator: `sparkyard::global_allocator!();` at the top of the
/// binary and of each benchmark (a library cannot impose one: a test binary may bring its
/// own, as `tests/fuzz_wire.rs` does to watch allocations).
///
/// glibc's malloc keeps per-thread arenas that contend when one thread frees what another
/// allocated, which is the task path's shape (the driver's thread builds a LaunchTask, an
/// executor's task thread drops it, and back for StatusUpdate): under load its futex calls
/// doubled a tiny task's cost. mimalloc frees cross-thread blocks into the owning page's
/// lock-free list. jemalloc (`--features jemalloc`) is kept to compare the two in `benches/`.
#[macro_export]
macro_rules! global_allocator {
    () => {
        #[global_allocator]
        static GLOBAL: $crate::Allocator = $crate::Allocator;
    };
}

/// The allocator [`global_allocator!`] installs.
#[cfg(not(feature = "jemalloc"))]
pub use mimalloc::MiMalloc as Allocator;
/// The allocator [`global_allocator!`] installs (`--features jemalloc`).
#[cfg(feature = "jemalloc")]
pub use tikv_jemallocator::Jemalloc as Allocator;
