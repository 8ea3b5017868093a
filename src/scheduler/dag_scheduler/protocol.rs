//! What goes into the DAGScheduler core ([`DagEvent`], Spark's `DAGSchedulerEvent`) and what
//! comes out of it ([`DagAction`]): task sets to submit, kills, listener events, a timer to
//! arm, and finished jobs.
//!
//! Layer: scheduler (the Spark side: the driver's schedulers, above rdd).

use std::sync::Arc;

use crate::rdd::{Lineage, RddId, ResultFunc, Value};
use crate::scheduler::events::{SparkListenerEvent, TaskEndReason, TaskInfo};
use crate::scheduler::loss_reason::ExecutorLossReason;
use crate::scheduler::task::TaskResult;
use crate::scheduler::task_set::TaskSet;

/// A task attempt's end (Spark's `CompletionEvent`): what the TaskScheduler says when an
/// attempt finishes, fails, is killed or is resubmitted, carrying the attempt's result when
/// it succeeded.
#[derive(Clone, Debug, PartialEq)]
pub struct CompletionEvent {
    pub task_id: u64,
    pub stage_id: u32,
    pub stage_attempt_id: u32,
    /// The task's index in its task set.
    pub index: u32,
    pub partition_id: u32,
    pub is_shuffle_map: bool,
    pub reason: TaskEndReason,
    pub task_info: TaskInfo,
    /// The result of a successful attempt (the DirectTaskResult of its FINISHED update).
    pub result: Option<TaskResult>,
    /// For a fetch failure: whether the executor it names is decommissioning (Spark's
    /// `isExecutorDecommissioningOrDecommissioned`, which the DAGScheduler asks the
    /// TaskScheduler; here the TaskScheduler says it with the event).
    pub fetch_source_decommissioned: bool,
}

/// An event for the DAGScheduler (Spark's `DAGSchedulerEvent`). The task events among them
/// (BeginEvent, CompletionEvent, TaskSetFailed, ExecutorAdded, ExecutorLost,
/// SpeculativeTaskSubmitted) are what the TaskScheduler produces, as Spark's TaskSchedulerImpl
/// posts them through `dagScheduler.taskStarted`, `taskEnded` and the like.
// CompletionEvent carries a whole TaskInfo, TaskEndReason and result; boxing it would cost
// an allocation on the hottest path, so the size difference is accepted.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum DagEvent {
    /// A job: compute `partitions` of `rdd` (described by `lineage`) and apply `func` to
    /// each. `job_id` comes from [`super::DAGSchedulerCore::next_job_id`].
    JobSubmitted {
        job_id: u32,
        lineage: Arc<Lineage>,
        rdd: RddId,
        partitions: Vec<u32>,
        func: ResultFunc,
        /// `count at MapCount`.
        call_site: String,
        properties: Vec<(String, String)>,
    },
    /// A task attempt was launched (→ SparkListenerTaskStart).
    BeginEvent {
        stage_id: u32,
        stage_attempt_id: u32,
        task_info: TaskInfo,
    },
    /// A task attempt ended, with its result if it succeeded.
    CompletionEvent(CompletionEvent),
    /// The TaskScheduler gave up on a task set (too many failures, result too big, ...).
    TaskSetFailed {
        stage_id: u32,
        stage_attempt_id: u32,
        message: String,
    },
    ExecutorAdded {
        executor_id: String,
        host: String,
    },
    ExecutorLost {
        executor_id: String,
        reason: ExecutorLossReason,
    },
    /// Sent back by the caller [`RESUBMIT_TIMEOUT_MS`](super::RESUBMIT_TIMEOUT_MS) after a
    /// [`DagAction::ScheduleResubmit`].
    ResubmitFailedStages,
    /// A task became speculatable (→ SparkListenerSpeculativeTaskSubmitted).
    SpeculativeTaskSubmitted {
        stage_id: u32,
        stage_attempt_id: u32,
        index: u32,
    },
    /// Cancel one job (`reason` completes "Job <id> cancelled <reason>").
    JobCancelled {
        job_id: u32,
        reason: Option<String>,
    },
    /// Cancel every active job (default reason "as part of cancellation of all jobs").
    AllJobsCancelled {
        reason: Option<String>,
    },
    /// Sent back by the caller after a [`DagAction::ScheduleBarrierJobResubmit`]: submit the
    /// job again (its barrier stage needed more slots than the cluster had).
    ResubmitBarrierJob {
        job_id: u32,
    },
}

/// What the core asks its caller to do, in order.
// Post carries a listener event by value (one per task event); boxing it would add an
// allocation per task, so the size difference is accepted.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
pub enum DagAction {
    /// Give the task set to the TaskScheduler and revive offers.
    SubmitTasks(TaskSet),
    /// Kill every running attempt of the stage's task sets (speculative or zombie copies
    /// after the stage finished).
    KillAllTaskAttempts { stage_id: u32, reason: String },
    /// Cancel the stage's task sets: kill their running attempts and abort them.
    CancelTasks { stage_id: u32, reason: String },
    /// Post on the listener bus.
    Post(SparkListenerEvent),
    /// Send [`DagEvent::ResubmitFailedStages`] back after `delay_ms`.
    ScheduleResubmit { delay_ms: u64 },
    /// Send [`DagEvent::ResubmitBarrierJob`] back after `delay_ms`.
    ScheduleBarrierJobResubmit { job_id: u32, delay_ms: u64 },
    /// A job ended: its values, one per requested partition in order, or why it failed.
    JobEnded {
        job_id: u32,
        result: Result<Vec<Value>, String>,
    },
}
