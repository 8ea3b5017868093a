//! Spark's YarnAllocator: a pure core and the actor that carries it out. Layer: deploy (the
//! Spark side: spark-submit, the YARN Client, the ApplicationMaster; above context).
//!
//! - [`core`]: [`YarnAllocatorCore`], the allocation rules as a synchronous state machine
//!   (requests, matching granted containers, launches, completions, failures, loss reasons);
//!   no messages, clock reads or I/O.
//! - [`actor`]: [`YarnAllocator`], the actor at `.../am/allocator` that talks to the
//!   ResourceManager, the launcher and the driver and carries out what the core decides.
//! - The classes the rules rely on, one file each at Spark's seams: [`exit_codes`]
//!   (SparkExitCode, ExecutorExitCode), [`failure_tracker`] (ExecutorFailureTracker),
//!   [`node_health_tracker`] (YarnAllocatorNodeHealthTracker), [`placement`]
//!   (LocalityPreferredContainerPlacementStrategy).

pub mod actor;
pub mod core;
pub mod exit_codes;
pub mod failure_tracker;
pub mod node_health_tracker;
pub mod placement;

pub use self::actor::{
    AllocateError, AllocateResources, AllocatorConfig, AllocatorKept, AllocatorProtocol, AllocatorStatus,
    EnqueueLossReason, GetAllocatorStatus, KillExecutor, LaunchResult, RedriveLaunches,
    RequestTotalExecutors, YarnAllocator,
};
pub use self::core::*;
