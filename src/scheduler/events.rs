//! SparkListener events and the scheduler records they carry (StageInfo, TaskInfo,
//! RDDInfo, TaskEndReason, task metrics), with Spark's names and fields. The DAGScheduler
//! and the DriverEndpoint post them on the listener bus; the event log writes them in
//! Spark's JsonProtocol (`scheduler::event_log`), which Spark's History Server reads.
//! Times are milliseconds since the Unix epoch.
//!
//! Layer: scheduler (the Spark side: the driver's schedulers, above rdd).

use serde::{Deserialize, Serialize};

use super::task_set::TaskLocation;

/// TaskLocality, ordered from most to least local.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum TaskLocality {
    ProcessLocal,
    NodeLocal,
    NoPref,
    RackLocal,
    Any,
}

impl TaskLocality {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskLocality::ProcessLocal => "PROCESS_LOCAL",
            TaskLocality::NodeLocal => "NODE_LOCAL",
            TaskLocality::NoPref => "NO_PREF",
            TaskLocality::RackLocal => "RACK_LOCAL",
            TaskLocality::Any => "ANY",
        }
    }
}

impl std::fmt::Display for TaskLocality {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An RDD as a stage's info shows it (RDDInfo).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RddInfo {
    pub id: u32,
    /// The RDD class's name (`ParallelCollectionRDD`, `MapPartitionsRDD`, `ShuffledRDD`, ...).
    pub name: String,
    /// Where it was created (`parallelize at SparkPi`).
    pub callsite: String,
    pub parent_ids: Vec<u32>,
    pub num_partitions: u32,
}

/// A stage attempt (StageInfo).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StageInfo {
    pub stage_id: u32,
    pub attempt_id: u32,
    /// The call site of the stage's final RDD (`count at MapCount`).
    pub name: String,
    pub num_tasks: u32,
    /// The stage's RDDs (its final RDD first, then its narrow ancestors).
    pub rdd_infos: Vec<RddInfo>,
    pub parent_ids: Vec<u32>,
    pub details: String,
    pub submission_time: Option<u64>,
    pub completion_time: Option<u64>,
    pub failure_reason: Option<String>,
    /// Where each task of the attempt would like to run (taskLocalityPreferences, by task
    /// index; the allocation manager's placement hints). Not in the event log, as in Spark.
    /// Empty when no task has a preference.
    #[serde(default)]
    pub task_locality_preferences: Vec<Vec<TaskLocation>>,
}

/// A task attempt (TaskInfo).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskInfo {
    pub task_id: u64,
    pub index: u32,
    pub attempt: u32,
    pub partition_id: u32,
    pub launch_time: u64,
    pub executor_id: String,
    pub host: String,
    pub locality: TaskLocality,
    pub speculative: bool,
    pub getting_result_time: u64,
    /// 0 while running.
    pub finish_time: u64,
    pub failed: bool,
    pub killed: bool,
}

/// Why a task attempt ended (TaskEndReason).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum TaskEndReason {
    Success,
    /// A finished map task whose output was lost with its executor; it runs again.
    Resubmitted,
    /// A reduce task could not read a map output.
    FetchFailed {
        /// The executor and host the output was expected on (None if unknown).
        executor_id: Option<String>,
        host: Option<String>,
        shuffle_id: u32,
        map_id: u64,
        map_index: u32,
        reduce_id: u32,
        message: String,
    },
    /// The task's code failed.
    ExceptionFailure {
        class_name: String,
        description: String,
        stack_trace: Vec<String>,
    },
    TaskKilled {
        reason: String,
    },
    ExecutorLostFailure {
        executor_id: String,
        exit_caused_by_app: bool,
        reason: Option<String>,
    },
    TaskResultLost,
    UnknownReason,
}

impl TaskEndReason {
    /// Spark's `countTowardsTaskFailures`.
    pub fn counts_towards_task_failures(&self) -> bool {
        match self {
            TaskEndReason::ExceptionFailure { .. }
            | TaskEndReason::TaskResultLost
            | TaskEndReason::UnknownReason => true,
            TaskEndReason::ExecutorLostFailure {
                exit_caused_by_app, ..
            } => *exit_caused_by_app,
            _ => false,
        }
    }

    /// Spark's `toErrorString`.
    pub fn error_string(&self) -> String {
        match self {
            TaskEndReason::Success => "Success".into(),
            TaskEndReason::Resubmitted => "Resubmitted (resubmitted due to lost executor)".into(),
            TaskEndReason::FetchFailed {
                executor_id,
                host,
                shuffle_id,
                map_id,
                map_index,
                reduce_id,
                message,
            } => format!(
                "FetchFailed(BlockManagerId({}, {}), shuffleId={shuffle_id}, mapIndex={map_index}, mapId={map_id}, reduceId={reduce_id}, message=\n{message}\n)",
                executor_id.as_deref().unwrap_or("null"),
                host.as_deref().unwrap_or("null")
            ),
            TaskEndReason::ExceptionFailure { class_name, description, stack_trace } => {
                let mut s = format!("{class_name}: {description}");
                for line in stack_trace {
                    s.push_str("\n\tat ");
                    s.push_str(line);
                }
                s
            }
            TaskEndReason::TaskKilled { reason } => format!("TaskKilled ({reason})"),
            TaskEndReason::ExecutorLostFailure {
                executor_id,
                exit_caused_by_app,
                reason,
            } => format!(
                "ExecutorLostFailure (executor {executor_id} exited {}){}",
                if *exit_caused_by_app {
                    "caused by one of the running tasks"
                } else {
                    "unrelated to the running tasks"
                },
                reason.as_deref().map(|r| format!(" Reason: {r}")).unwrap_or_default()
            ),
            TaskEndReason::TaskResultLost => "TaskResultLost (result lost from block manager)".into(),
            TaskEndReason::UnknownReason => "UnknownReason".into(),
        }
    }
}

/// The metrics a task reports (the subset sparkyard measures).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskMetrics {
    pub executor_run_time_ms: u64,
    pub result_size: u64,
    pub records_read: u64,
    pub shuffle_records_written: u64,
    pub shuffle_bytes_written: u64,
    pub shuffle_records_read: u64,
    pub shuffle_remote_bytes_read: u64,
}

/// How a job ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum JobResult {
    JobSucceeded,
    JobFailed { message: String },
}

/// The events of Spark's listener bus that sparkyard posts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SparkListenerEvent {
    ApplicationStart {
        app_name: String,
        app_id: Option<String>,
        time: u64,
        user: String,
        app_attempt_id: Option<String>,
    },
    ApplicationEnd {
        time: u64,
        exit_code: Option<i32>,
    },
    EnvironmentUpdate {
        spark_properties: Vec<(String, String)>,
        system_properties: Vec<(String, String)>,
    },
    ExecutorAdded {
        time: u64,
        executor_id: String,
        host: String,
        total_cores: u32,
        resource_profile_id: u32,
    },
    ExecutorRemoved {
        time: u64,
        executor_id: String,
        reason: String,
    },
    JobStart {
        job_id: u32,
        time: u64,
        stage_infos: Vec<StageInfo>,
        properties: Vec<(String, String)>,
    },
    JobEnd {
        job_id: u32,
        time: u64,
        result: JobResult,
    },
    StageSubmitted {
        stage_info: StageInfo,
        properties: Vec<(String, String)>,
    },
    StageCompleted {
        stage_info: StageInfo,
    },
    TaskStart {
        stage_id: u32,
        stage_attempt_id: u32,
        task_info: TaskInfo,
    },
    TaskEnd {
        stage_id: u32,
        stage_attempt_id: u32,
        /// `ResultTask` or `ShuffleMapTask`.
        task_type: String,
        reason: TaskEndReason,
        task_info: TaskInfo,
        metrics: Option<TaskMetrics>,
    },
    SpeculativeTaskSubmitted {
        stage_id: u32,
        stage_attempt_id: u32,
        task_index: u32,
    },
}

impl SparkListenerEvent {
    /// Spark's event class name (the `Event` field of JsonProtocol).
    pub fn name(&self) -> &'static str {
        match self {
            SparkListenerEvent::ApplicationStart { .. } => "SparkListenerApplicationStart",
            SparkListenerEvent::ApplicationEnd { .. } => "SparkListenerApplicationEnd",
            SparkListenerEvent::EnvironmentUpdate { .. } => "SparkListenerEnvironmentUpdate",
            SparkListenerEvent::ExecutorAdded { .. } => "SparkListenerExecutorAdded",
            SparkListenerEvent::ExecutorRemoved { .. } => "SparkListenerExecutorRemoved",
            SparkListenerEvent::JobStart { .. } => "SparkListenerJobStart",
            SparkListenerEvent::JobEnd { .. } => "SparkListenerJobEnd",
            SparkListenerEvent::StageSubmitted { .. } => "SparkListenerStageSubmitted",
            SparkListenerEvent::StageCompleted { .. } => "SparkListenerStageCompleted",
            SparkListenerEvent::TaskStart { .. } => "SparkListenerTaskStart",
            SparkListenerEvent::TaskEnd { .. } => "SparkListenerTaskEnd",
            SparkListenerEvent::SpeculativeTaskSubmitted { .. } => "SparkListenerSpeculativeTaskSubmitted",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_accounting_and_texts() {
        assert!(TaskEndReason::ExceptionFailure {
            class_name: "java.lang.RuntimeException".into(),
            description: "boom".into(),
            stack_trace: vec![],
        }
        .counts_towards_task_failures());
        assert!(!TaskEndReason::TaskKilled { reason: "x".into() }.counts_towards_task_failures());
        let lost = TaskEndReason::ExecutorLostFailure {
            executor_id: "3".into(),
            exit_caused_by_app: false,
            reason: Some("Container killed".into()),
        };
        assert!(!lost.counts_towards_task_failures());
        assert!(lost
            .error_string()
            .starts_with("ExecutorLostFailure (executor 3 exited unrelated to the running tasks)"));
        assert!(TaskLocality::ProcessLocal < TaskLocality::Any);
    }
}
