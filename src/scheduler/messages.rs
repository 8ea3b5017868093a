//! Spark's CoarseGrainedClusterMessages: what executors, the driver's endpoints and the
//! ApplicationMaster say to each other, with Spark's names and fields. Actor references
//! travel as paths (an executor's `executor_ref`, the AM's endpoint), so a receiver
//! addresses the sender through the registry. All derive serde: in the real system every
//! one of these crosses a process boundary. The tasks' own messages (LaunchTask,
//! StatusUpdate, KillTask, ReviveOffers, FetchShuffleBlocks) are here too, and at the end
//! the protocols that group them by who receives them (DriverProtocol, ExecutorProtocol,
//! ShuffleProtocol, YarnSchedulerProtocol, AmProtocol): every message lives with its
//! protocol.
//!
//! Layer: scheduler (the Spark side: the driver's schedulers, above rdd).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::loss_reason::ExecutorLossReason;
use super::task::TaskState;
use crate::runtime::ActorPath;

// ------------------------------------------------------------------ executor ↔ DriverEndpoint

/// Executor bootstrap: the application's Spark properties.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "SparkAppConfig")]
pub struct RetrieveSparkAppConfig {
    pub resource_profile_id: u32,
}

/// The answer to [`RetrieveSparkAppConfig`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::MessageResponse)]
pub struct SparkAppConfig {
    pub spark_properties: Vec<(String, String)>,
    pub log_level: Option<String>,
}

/// An executor asks to join (answer: `Ok(true)`, or the reason it is refused).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "Result<bool, String>")]
pub struct RegisterExecutor {
    pub executor_id: String,
    /// The executor backend's path: where the driver sends LaunchTask, StopExecutor, ...
    pub executor_ref: ActorPath,
    pub hostname: String,
    pub cores: u32,
    pub log_urls: BTreeMap<String, String>,
    pub attributes: BTreeMap<String, String>,
    pub resource_profile_id: u32,
}

/// The executor tells itself it was accepted (Spark 4's internal message).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "()")]
pub struct RegisteredExecutor;

/// The executor is ready: the driver may offer its cores.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "()")]
pub struct LaunchedExecutor {
    pub executor_id: String,
}

/// Removes an executor, with why it was lost.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "()")]
pub struct RemoveExecutor {
    pub executor_id: String,
    pub reason: ExecutorLossReason,
}

/// A restarted DriverEndpoint asks an executor to report again what may have been lost in
/// the previous incarnation's mailbox: `LaunchedExecutor`, and the status of each task the
/// driver believes runs there (RUNNING if it still runs, its final update if it finished,
/// KILLED "status lost" if the executor knows nothing of it, so it runs again).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "()")]
pub struct ReportTaskStatuses {
    pub task_ids: Vec<u64>,
}

/// The driver tells every executor to stop (answer once told).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "bool")]
pub struct StopExecutors;

/// The driver tells one executor to stop.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "()")]
pub struct StopExecutor;

/// Stops the DriverEndpoint itself.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "bool")]
pub struct StopDriver;

/// Stop with an exit code: an executor to itself, or the driver to the AM (Spark 4).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "()")]
pub struct Shutdown {
    pub exit_code: i32,
}

// ------------------------------------------------------------------ YarnSchedulerEndpoint ↔ AMEndpoint

/// CoarseGrainedSchedulerBackend.reset(), from the YarnSchedulerEndpoint when an
/// ApplicationMaster registers (RegisterClusterManager): the requested totals are forgotten
/// and every executor still known is removed as stale, since the new AM knows none of them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "()")]
pub struct ResetSchedulerBackend;

/// An executor's connection dropped; find out why (DriverEndpoint → here).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "()")]
pub struct ExecutorDisconnected {
    pub executor_id: String,
}

/// The AM's endpoint announces itself to the driver's YarnSchedulerEndpoint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "()")]
pub struct RegisterClusterManager {
    pub am: ActorPath,
}

/// The allocator's first question: the highest executor id the driver has seen.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "u64")]
pub struct RetrieveLastAllocatedExecutorId;

/// The driver's desired executor totals (totals, never deltas) and locality hints.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "Result<bool, String>")]
pub struct RequestExecutors {
    pub resource_profile_to_total_execs: BTreeMap<u32, u32>,
    pub num_locality_aware_tasks_per_resource_profile_id: BTreeMap<u32, u32>,
    pub host_to_local_task_count: BTreeMap<u32, BTreeMap<String, u32>>,
    pub excluded_nodes: BTreeSet<String>,
}

/// The driver asks the AM to kill executors (their containers are released).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "Result<bool, String>")]
pub struct KillExecutors {
    pub executor_ids: Vec<String>,
}

/// Why an executor was lost, answered by the AM once its container completes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "Result<ExecutorLossReason, String>")]
pub struct GetExecutorLossReason {
    pub executor_id: String,
}

// ------------------------------------------------------------------ driver-local queries

/// What the DriverEndpoint knows of one executor.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecutorSummary {
    pub executor_id: String,
    pub host: String,
    pub total_cores: u32,
    pub free_cores: u32,
    pub executor_ref: ActorPath,
}

/// The registered executors (SparkContext's view, for the application's own use).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "Vec<ExecutorSummary>")]
pub struct GetExecutors;

/// Answers once at least `count` executors are registered (and active), with how many are;
/// the asker's time-out bounds the wait (SparkContext's readiness and applications waiting
/// for executors wait on this event instead of polling).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "usize")]
pub struct AwaitExecutors {
    pub count: usize,
}

// ------------------------------------------------------------------ ExecutorAllocationClient

/// ExecutorAllocationClient.requestTotalExecutors, to the DriverEndpoint (Spark's
/// CoarseGrainedSchedulerBackend): the desired executor totals per resource profile, with
/// locality hints. The DriverEndpoint records them and asks the YarnSchedulerEndpoint
/// (RequestExecutors → AMEndpoint → allocator). Answer: whether the AM acknowledged.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "bool")]
pub struct ClientRequestTotalExecutors {
    pub resource_profile_to_total_execs: BTreeMap<u32, u32>,
    pub num_locality_aware_tasks_per_resource_profile_id: BTreeMap<u32, u32>,
    pub host_to_local_task_count: BTreeMap<u32, BTreeMap<String, u32>>,
}

/// ExecutorAllocationClient.killExecutors, to the DriverEndpoint: kill these executors
/// through the cluster manager (KillExecutors → AMEndpoint → allocator, which releases
/// their containers). Unknown executors and executors already pending removal are skipped;
/// unless `force`, so are busy ones (running tasks). With `adjust_target_num_executors`
/// the requested totals drop by the number killed (no replacement); without, the allocator
/// replaces them. `count_failures = false` marks them killed by the driver: their loss is
/// `ExecutorKilled` and their tasks' failures do not count. Answer: the ids killed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "Vec<String>")]
pub struct ClientKillExecutors {
    pub executor_ids: Vec<String>,
    pub adjust_target_num_executors: bool,
    pub count_failures: bool,
    pub force: bool,
}

// ------------------------------------------------------------------ decommissioning

/// Why an executor is being decommissioned (Spark's ExecutorDecommissionInfo): the message
/// its loss will carry (`ExecutorDecommission`), and the host when the whole host goes
/// away with it (its shuffle files with it), which no YARN decommission sets.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecutorDecommissionInfo {
    pub message: String,
    pub worker_host: Option<String>,
}

impl ExecutorDecommissionInfo {
    pub fn new(message: impl Into<String>) -> Self {
        ExecutorDecommissionInfo {
            message: message.into(),
            worker_host: None,
        }
    }
}

/// Kills every executor alive on a host (the backend, for the HealthTracker's node
/// exclusion): forced, without a target adjustment and without counting failures.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "()")]
pub struct KillExecutorsOnHost {
    pub host: String,
}

/// Decommissions every executor alive on a host (the allocator, for a node YARN put into
/// DECOMMISSIONING, through the YarnSchedulerEndpoint).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "()")]
pub struct DecommissionExecutorsOnHost {
    pub host: String,
}

/// An executor tells the driver it started decommissioning on its own (it got the
/// decommission signal); the answer says whether the driver took it as decommissioning.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "bool")]
pub struct ExecutorDecommissioning {
    pub executor_id: String,
}

/// The driver tells an executor to decommission itself: take no more work, finish what
/// runs, then exit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "()")]
pub struct DecommissionExecutor;

/// The executor's decommission signal (Spark's SIGPWR handler sends it to the backend):
/// the driver is told first, then the executor decommissions itself. Answers whether it
/// did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "bool")]
pub struct ExecutorDecommissionSigReceived;

/// ExecutorAllocationClient.decommissionExecutors, to the DriverEndpoint: decommission these
/// active executors (unknown or already leaving ones are skipped). With
/// `adjust_target_num_executors` the requested totals drop first (no replacement); unless
/// `triggered_by_executor`, each executor is sent DecommissionExecutor. Answer: the ids
/// decommissioned.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "Vec<String>")]
pub struct ClientDecommissionExecutors {
    pub executors: Vec<(String, ExecutorDecommissionInfo)>,
    pub adjust_target_num_executors: bool,
    pub triggered_by_executor: bool,
}

// ------------------------------------------------------------------ tasks: DriverEndpoint ↔ executor, executor ↔ executor

/// The driver launches a task on an executor.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "()")]
pub struct LaunchTask {
    /// The encoded [`TaskDescription`](super::task::TaskDescription).
    #[serde(with = "serde_bytes")]
    pub data: Vec<u8>,
}

/// An executor reports a task's state (RUNNING, then FINISHED with its result or FAILED /
/// KILLED with why).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "()")]
pub struct StatusUpdate {
    pub executor_id: String,
    pub task_id: u64,
    pub state: TaskState,
    /// The encoded [`TaskResult`](super::task::TaskResult) (FINISHED) or `TaskEndReason` (FAILED, KILLED); empty for
    /// RUNNING.
    #[serde(with = "serde_bytes")]
    pub data: Vec<u8>,
    pub task_cpus: u32,
}

/// Kill a running task attempt (driver → executor, through the DriverEndpoint).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "()")]
pub struct KillTask {
    pub task_id: u64,
    pub executor_id: String,
    pub interrupt_thread: bool,
    pub reason: String,
}

/// Offer every executor's free cores to the task scheduler again.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "()")]
pub struct ReviveOffers;

/// Serve shuffle blocks to a reduce task (executor → executor): the bucket `reduce_id` of
/// each listed map output, in the order asked; an error names the first one missing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "Result<ShuffleBlocks, String>")]
pub struct FetchShuffleBlocks {
    pub shuffle_id: u32,
    pub reduce_id: u32,
    /// The map outputs wanted from this executor, by map id (the map task's id).
    pub map_ids: Vec<u64>,
}

/// The answer to [`FetchShuffleBlocks`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShuffleBlocks {
    pub blocks: Vec<serde_bytes::ByteBuf>,
}

// ------------------------------------------------------------------ protocols

crate::protocol! {
    /// The driver's side of the cluster conversation: what Spark's DriverEndpoint receives.
    /// From executors (RetrieveSparkAppConfig, RegisterExecutor, LaunchedExecutor,
    /// StatusUpdate, ExecutorDecommissioning), from the YARN scheduler backend
    /// (RemoveExecutor, RetrieveLastAllocatedExecutorId, KillExecutorsOnHost,
    /// DecommissionExecutorsOnHost, ResetSchedulerBackend), from the scheduler's own timers
    /// and the DAGScheduler (ReviveOffers, KillTask), and the SparkContext's
    /// ExecutorAllocationClient and lifecycle calls (GetExecutors, AwaitExecutors,
    /// ClientRequestTotalExecutors, ClientKillExecutors, ClientDecommissionExecutors,
    /// StopExecutors, StopDriver).
    remote pub DriverProtocol {
        RetrieveSparkAppConfig,
        RegisterExecutor,
        LaunchedExecutor,
        StatusUpdate,
        ExecutorDecommissioning,
        RemoveExecutor,
        RetrieveLastAllocatedExecutorId,
        KillExecutorsOnHost,
        DecommissionExecutorsOnHost,
        ResetSchedulerBackend,
        ReviveOffers,
        KillTask,
        GetExecutors,
        AwaitExecutors,
        ClientRequestTotalExecutors,
        ClientKillExecutors,
        ClientDecommissionExecutors,
        StopExecutors,
        StopDriver,
    }
}

crate::protocol! {
    /// The executor's side of the cluster conversation: what Spark's
    /// CoarseGrainedExecutorBackend receives from the driver (LaunchTask, KillTask,
    /// StopExecutor, DecommissionExecutor, ReportTaskStatuses after a driver restart) and
    /// from itself (RegisteredExecutor, Shutdown, the decommission signal).
    remote pub ExecutorProtocol {
        RegisteredExecutor,
        LaunchTask,
        KillTask,
        StopExecutor,
        Shutdown,
        DecommissionExecutor,
        ExecutorDecommissionSigReceived,
        ReportTaskStatuses,
    }
}

crate::protocol! {
    /// The shuffle conversation: a reduce task fetches map outputs from the executor that
    /// wrote them (Spark's BlockTransferService; OpenBlocks and its stream, in one call).
    remote pub ShuffleProtocol { FetchShuffleBlocks }
}

crate::protocol! {
    /// What the driver's YarnSchedulerEndpoint receives: the AM announcing itself
    /// (RegisterClusterManager), the driver's requests on their way to the AM
    /// (RequestExecutors, KillExecutors), executor removals and disconnections, the
    /// allocator's RetrieveLastAllocatedExecutorId, host-wide decommissions, and Shutdown.
    remote pub YarnSchedulerProtocol {
        RegisterClusterManager,
        RetrieveLastAllocatedExecutorId,
        RequestExecutors,
        KillExecutors,
        RemoveExecutor,
        ExecutorDisconnected,
        DecommissionExecutorsOnHost,
        Shutdown,
    }
}

crate::protocol! {
    /// What the ApplicationMaster's AMEndpoint receives from the driver's
    /// YarnSchedulerEndpoint: executor totals, kills, loss reasons, and Shutdown (Spark 4).
    remote pub AmProtocol { RequestExecutors, KillExecutors, GetExecutorLossReason, Shutdown }
}
