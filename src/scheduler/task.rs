//! Tasks on the wire: the TaskDescription a LaunchTask carries, the stage binary it holds
//! (the lineage it needs, what to compute, where its shuffle inputs are), map output
//! statuses, task results and task states; the messages that carry them (LaunchTask,
//! StatusUpdate, KillTask, ReviveOffers, FetchShuffleBlocks) live with their protocols in
//! [`super::messages`] and are re-exported here. All encoded with rmp-serde's compact form;
//! byte payloads use serde_bytes.
//!
//! Layer: scheduler (the Spark side: the driver's schedulers, above rdd).

use serde::{Deserialize, Serialize};

use super::events::TaskMetrics;
use crate::rdd::{StageTask, Value};

/// Spark's TaskState.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TaskState {
    Launching,
    Running,
    Finished,
    Failed,
    Killed,
    Lost,
}

impl TaskState {
    /// FINISHED, FAILED, KILLED or LOST.
    pub fn is_finished(self) -> bool {
        matches!(
            self,
            TaskState::Finished | TaskState::Failed | TaskState::Killed | TaskState::Lost
        )
    }
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Launching => "LAUNCHING",
            TaskState::Running => "RUNNING",
            TaskState::Finished => "FINISHED",
            TaskState::Failed => "FAILED",
            TaskState::Killed => "KILLED",
            TaskState::Lost => "LOST",
        }
    }
}

/// Where one map task's output lives.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MapOutputLocation {
    pub map_index: u32,
    /// The map task's id.
    pub map_id: u64,
    pub executor_id: String,
    pub host: String,
    /// The path of the executor backend that serves the blocks.
    pub executor_ref: String,
}

/// Every map output of one shuffle a reduce stage reads, by map index.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShuffleLocations {
    pub shuffle_id: u32,
    /// One entry per map index; `None` where no output is registered (the fetch fails).
    pub outputs: Vec<Option<MapOutputLocation>>,
}

/// The stage binary the TaskBinary's `stage_bytes` encode: the stage's lineage and what
/// to do, plus where the map outputs it reads are (known when the stage attempt starts).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StageBinary {
    pub stage: StageTask,
    pub shuffle_inputs: Vec<ShuffleLocations>,
}

/// Spark's TaskDescription: what LaunchTask carries.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskDescription {
    pub task_id: u64,
    pub attempt_number: u32,
    pub executor_id: String,
    /// `task <index>.<attempt> in stage <stage>.<stageAttempt> (TID <tid>)`.
    pub name: String,
    pub index: u32,
    pub partition_id: u32,
    pub stage_id: u32,
    pub stage_attempt_id: u32,
    pub job_id: u32,
    pub cpus: u32,
    /// The encoded [`StageBinary`].
    #[serde(with = "serde_bytes")]
    pub stage_binary: Vec<u8>,
    /// The encoded `Slice` of a parallelized collection, for a stage that starts from one.
    #[serde(with = "serde_bytes")]
    pub slice: Option<Vec<u8>>,
}

/// A finished map task's status (MapStatus): where its output is and how big each bucket is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MapStatus {
    pub executor_id: String,
    pub host: String,
    /// The path of the executor backend that serves the blocks.
    pub executor_ref: String,
    pub map_id: u64,
    pub sizes: Vec<u64>,
}

/// A finished task's result (DirectTaskResult).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum TaskResult {
    /// A result task's value for its partition.
    Value { value: Value, metrics: TaskMetrics },
    /// A shuffle map task's output status.
    MapStatus { status: MapStatus, metrics: TaskMetrics },
}

// The task messages between the driver and executors live with their protocols.
pub use super::messages::{
    FetchShuffleBlocks, KillTask, LaunchTask, ReviveOffers, ShuffleBlocks, StatusUpdate,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states() {
        assert!(TaskState::Killed.is_finished());
        assert!(!TaskState::Running.is_finished());
        assert_eq!(TaskState::Lost.as_str(), "LOST");
    }
}
