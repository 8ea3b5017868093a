//! ExecutorAllocationManager (dynamic allocation, `spark.dynamicAllocation.enabled`): the
//! rules in `core` (targets, ramp-up, idle removal) and `monitor` (ExecutorMonitor: which
//! executors are idle), driven by the actor in `actor` and fed by a listener on the bus.
//!
//! Layer: scheduler (the Spark side: the driver's schedulers, above rdd).

pub mod actor;
pub mod core;
pub mod monitor;

pub use actor::{
    ExecutorAllocationListener, ExecutorAllocationManager, EXECUTOR_ALLOCATION_MANAGER_SEGMENT,
    SCHEDULE_INTERVAL,
};
pub use core::{AllocationConfig, AllocationMessage, ExecutorAllocationManagerCore};
