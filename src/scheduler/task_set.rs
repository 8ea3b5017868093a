//! What the DAGScheduler hands the TaskScheduler (TaskSet, one TaskSpec per task) and what
//! the TaskScheduler hands back (TaskLaunch decisions, SchedulerEvents), in Spark's terms.
//! The stage binary travels as opaque bytes (`TaskBinary`): the schedulers never look
//! inside it; the DriverEndpoint puts it into each TaskDescription.
//!
//! Layer: scheduler (the Spark side: the driver's schedulers, above rdd).

use std::borrow::Cow;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::dag_scheduler::DagEvent;
use super::events::{TaskEndReason, TaskLocality};
use super::task::{KillTask, TaskResult};
use crate::rdd::{Lineage, RddId, RddKind, Slice};

/// Where a task would like to run (Spark's TaskLocation: HostTaskLocation or
/// ExecutorCacheTaskLocation).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TaskLocation {
    Host(String),
    Executor { host: String, executor_id: String },
}

impl TaskLocation {
    pub fn host(&self) -> &str {
        match self {
            TaskLocation::Host(h) | TaskLocation::Executor { host: h, .. } => h,
        }
    }
}

/// One task of a task set.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskSpec {
    /// Its index in the task set (0..n).
    pub index: u32,
    /// The RDD partition it computes.
    pub partition_id: u32,
    pub preferred_locations: Vec<TaskLocation>,
}

/// The encoded stage binary and, for a stage that starts from a parallelized collection,
/// where each task's slice is (by task index).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TaskBinary {
    pub stage_bytes: Vec<u8>,
    pub slices: TaskSlices,
}

/// The slices of a stage that starts from a parallelized collection, by task index: the
/// job's lineage (shared, not copied) and the collection in it, encoded one task at a time
/// when the task launches. A million-task stage holds nothing per task here (its slices
/// encoded up front held about 56 bytes a task until the stage ended).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TaskSlices {
    source: Option<(Arc<Lineage>, RddId)>,
    /// Each task's partition of the collection; `None`: the task index is the partition.
    partitions: Option<Arc<[u32]>>,
    len: usize,
}

impl TaskSlices {
    /// The slices of `collection` (a ParallelCollection of `lineage`) for tasks computing
    /// `partitions` (by task index), checked to encode: the error of the first that does not.
    pub fn of_collection(
        lineage: Arc<Lineage>,
        collection: RddId,
        partitions: &[u32],
    ) -> Result<Self, String> {
        let identity = partitions.iter().enumerate().all(|(i, &p)| p as usize == i);
        let slices = TaskSlices {
            source: Some((lineage, collection)),
            partitions: (!identity).then(|| partitions.into()),
            len: partitions.len(),
        };
        let mut scratch = Vec::new();
        for index in 0..slices.len {
            if let Some(slice) = slices.slice(index) {
                scratch.clear();
                rmp_serde::encode::write(&mut scratch, &*slice).map_err(|e| e.to_string())?;
            }
        }
        Ok(slices)
    }

    /// One slice per task, or none for a stage that does not start from a collection.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn slice(&self, index: usize) -> Option<Cow<'_, Slice>> {
        if index >= self.len {
            return None;
        }
        let (lineage, collection) = self.source.as_ref()?;
        let partition = match &self.partitions {
            Some(p) => *p.get(index)?,
            None => u32::try_from(index).ok()?,
        };
        match &lineage.node(*collection)?.kind {
            RddKind::ParallelCollection { slices, .. } => slices.get(partition as usize),
            _ => None,
        }
    }

    /// Task `index`'s slice, encoded (what its TaskDescription carries).
    pub fn encoded(&self, index: usize) -> Option<Vec<u8>> {
        self.slice(index).and_then(|s| rmp_serde::to_vec(&*s).ok())
    }
}

/// A stage attempt's tasks (Spark's TaskSet).
#[derive(Clone, Debug)]
pub struct TaskSet {
    pub stage_id: u32,
    pub stage_attempt_id: u32,
    /// The job that submitted it: FIFO order is by job id, then stage id.
    pub job_id: u32,
    /// ShuffleMapTasks (true) or ResultTasks (false).
    pub is_shuffle_map: bool,
    /// A barrier stage's tasks: they launch all together or not at all.
    pub is_barrier: bool,
    pub tasks: Vec<TaskSpec>,
    pub binary: Arc<TaskBinary>,
    pub properties: Vec<(String, String)>,
}

impl TaskSet {
    /// `<stage>.<attempt>`, as Spark names task sets.
    pub fn id(&self) -> String {
        format!("{}.{}", self.stage_id, self.stage_attempt_id)
    }
}

/// An executor's free cores offered to the scheduler (Spark's WorkerOffer).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkerOffer {
    pub executor_id: String,
    pub host: String,
    pub cores: u32,
}

/// A task the scheduler decided to launch (what becomes a TaskDescription).
#[derive(Clone, Debug)]
pub struct TaskLaunch {
    pub task_id: u64,
    pub executor_id: String,
    pub host: String,
    pub stage_id: u32,
    pub stage_attempt_id: u32,
    pub job_id: u32,
    pub index: u32,
    pub partition_id: u32,
    pub attempt_number: u32,
    pub locality: TaskLocality,
    pub speculative: bool,
    pub cpus: u32,
    /// `task <index>.<attempt> in stage <stage>.<stageAttempt> (TID <tid>)`.
    pub name: String,
    pub binary: Arc<TaskBinary>,
    /// The task's encoded slice, for a stage that starts from a parallelized collection.
    pub slice: Option<Vec<u8>>,
}

/// A task's state change as the executor reported it.
#[derive(Clone, Debug, PartialEq)]
pub enum TaskUpdate {
    Running,
    /// FINISHED with the decoded result; `result_size` is the encoded result's size in
    /// bytes.
    Finished {
        result_size: u64,
        result: TaskResult,
    },
    /// FAILED, KILLED or LOST with why.
    Failed(TaskEndReason),
    Killed(TaskEndReason),
    Lost(TaskEndReason),
}

/// What the TaskScheduler says after a call (drained by its owner, the DriverEndpoint, and
/// routed in one place): an event for the DAGScheduler, as Spark's TaskSchedulerImpl posts
/// it through `dagScheduler.taskStarted`, `taskEnded`, `executorAdded`, `executorLost`,
/// `taskSetFailed` and `speculativeTaskSubmitted`, or a request to the backend
/// (`backend.killTask`, `backend.reviveOffers`).
// A DAGSchedulerEvent carries a completion's TaskInfo and result; boxing it would cost an
// allocation per task on the hottest path, so the size difference is accepted.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum SchedulerEvent {
    /// For the DAGScheduler's event loop, as it is.
    Dag(DagEvent),
    /// Kill a running attempt (backend.killTask).
    KillTask(KillTask),
    /// Offer resources again (backend.reviveOffers).
    ReviveOffers,
}
