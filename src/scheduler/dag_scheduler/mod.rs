//! The DAGScheduler (Spark's `DAGScheduler`): a pure core and the actor that carries it out.
//! Layer: scheduler (the Spark side: the driver's schedulers, above rdd).
//!
//! - [`core`]: [`DAGSchedulerCore`], the state machine: [`DagEvent`]s in, [`DagAction`]s out,
//!   time passed in as milliseconds; no actors, threads or clock reads. Its event handlers:
//!   jobs, stage creation and submission, task completion, fetch failures, executor loss,
//!   aborts and cancellation.
//! - [`actor`]: [`DAGScheduler`], the event loop (DAGSchedulerEventProcessLoop) at
//!   `<driver>/dag-scheduler`: it owns the core, feeds it job submissions and the
//!   TaskScheduler's events, and carries out what it asks (submit a task set, kill tasks, post
//!   a listener event, arm the 200 ms resubmit timer, complete a job's waiter).
//! - `stage`, `job`: stages with their attempts, active jobs with their results.
//! - [`map_output_tracker`]: where each shuffle's map outputs are, and the epoch.
//! - [`protocol`]: the core's events and actions; [`config`]: the settings with Spark's
//!   defaults.

pub mod actor;
pub mod config;
pub mod core;
mod job;
pub mod map_output_tracker;
pub mod protocol;
mod stage;

#[cfg(test)]
mod tests;

pub use self::actor::*;
pub use self::config::{
    barrier_exception_class, DagConfig, BARRIER_DYN_ALLOCATION_MESSAGE, BARRIER_RDD_CHAIN_MESSAGE,
    BARRIER_SLOTS_MESSAGE, RESUBMIT_TIMEOUT_MS,
};
pub use self::core::{DAGSchedulerCore, CANCEL_ALL_JOBS_REASON, STAGE_FINISHED_REASON};
pub use self::map_output_tracker::{
    MapOutputTracker, REDUCER_PREF_LOCS_FRACTION, SHUFFLE_PREF_MAP_THRESHOLD, SHUFFLE_PREF_REDUCE_THRESHOLD,
};
pub use self::protocol::{CompletionEvent, DagAction, DagEvent};
