//! Running one task on an executor (Spark's Executor.TaskRunner), on a task-pool thread.
//!
//! Layer: executor (the Spark side, above scheduler).
//!
//! The runner reports RUNNING, decodes the stage binary (cached per stage attempt, as
//! Spark fetches a broadcast once per executor) and the task's slice, computes the
//! partition with `rdd::run_task`, keeps a map task's buckets in the block store, and
//! reports FINISHED with the encoded TaskResult, FAILED with the encoded TaskEndReason
//! (ExceptionFailure, FetchFailed) or KILLED (TaskKilled). StatusUpdates go straight to
//! the DriverEndpoint from this thread. Shuffle inputs are read from this executor's block
//! store, or fetched from the executor that wrote them (FetchShuffleBlocks); a fetch that
//! cannot reach that executor is a FetchFailed naming it.

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::block_store::BlockStore;
use super::task_pool::TaskPool;
use crate::logs::ctx::{LogCtx, LogScope};
use crate::rdd::{
    self, BarrierMethod, FetchFailure, ShuffleId, Slice, TaskContext as _, TaskError, TaskOutput,
};
use crate::rpc::EndpointRef;
use crate::runtime::blocking::block_on;
use crate::runtime::deferred;
use crate::runtime::{ActorPath, CancelToken, Cluster};
use crate::scheduler::barrier_coordinator::BarrierCoordinatorProtocol;
use crate::scheduler::barrier_coordinator::{RequestToSync, BARRIER_COORDINATOR_SEGMENT};
use crate::scheduler::events::{TaskEndReason, TaskMetrics};
use crate::scheduler::messages::DriverProtocol;
use crate::scheduler::messages::ShuffleProtocol;
use crate::scheduler::task::{
    FetchShuffleBlocks, MapStatus, ShuffleLocations, StageBinary, StatusUpdate, TaskDescription, TaskResult,
    TaskState,
};

/// How many decoded stage binaries an executor keeps.
const STAGE_CACHE_ENTRIES: usize = 16;

type StageMap = HashMap<(u32, u32), Arc<StageBinary>>;

/// Decoded stage binaries by (stage, attempt), shared by an executor's task threads.
#[derive(Clone, Default)]
pub struct StageCache {
    entries: Arc<Mutex<StageMap>>,
}

impl StageCache {
    fn get_or_decode(&self, desc: &TaskDescription) -> Result<Arc<StageBinary>, String> {
        let key = (desc.stage_id, desc.stage_attempt_id);
        if let Some(b) = self.lock().get(&key) {
            return Ok(b.clone());
        }
        let decoded: StageBinary = rmp_serde::from_slice(&desc.stage_binary)
            .map_err(|e| format!("cannot decode the stage binary of {}: {e}", desc.name))?;
        let decoded = Arc::new(decoded);
        let mut entries = self.lock();
        if entries.len() >= STAGE_CACHE_ENTRIES {
            // Stage ids grow; the oldest stages are the least likely to run again.
            if let Some(oldest) = entries.keys().min().copied() {
                entries.remove(&oldest);
            }
        }
        entries.insert(key, decoded.clone());
        Ok(decoded)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, StageMap> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The last final status updates an executor sent (FINISHED, FAILED, KILLED), so it can
/// send them again when a restarted DriverEndpoint asks (the first copies may have died in
/// the old incarnation's mailbox). Bounded by count and bytes; the oldest go first.
#[derive(Clone, Default)]
pub struct RecentStatuses {
    inner: Arc<std::sync::Mutex<RecentInner>>,
}

#[derive(Default)]
struct RecentInner {
    updates: std::collections::VecDeque<StatusUpdate>,
    bytes: usize,
}

impl RecentStatuses {
    /// At most this many updates are kept...
    pub const MAX_UPDATES: usize = 4096;
    /// ...and at most this many bytes of results and reasons.
    pub const MAX_BYTES: usize = 16 << 20;

    fn lock(&self) -> std::sync::MutexGuard<'_, RecentInner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn remember(&self, update: &StatusUpdate) {
        let mut r = self.lock();
        r.bytes += update.data.len();
        r.updates.push_back(update.clone());
        while r.updates.len() > Self::MAX_UPDATES || (r.bytes > Self::MAX_BYTES && r.updates.len() > 1) {
            if let Some(old) = r.updates.pop_front() {
                r.bytes -= old.data.len();
            }
        }
    }

    /// The final update of `task_id`, if still kept.
    pub fn get(&self, task_id: u64) -> Option<StatusUpdate> {
        self.lock()
            .updates
            .iter()
            .rev()
            .find(|u| u.task_id == task_id)
            .cloned()
    }
}

/// What a task thread needs from its executor.
#[derive(Clone)]
pub struct ExecutorHandle {
    pub executor_id: String,
    pub host: String,
    /// The backend's path: where other executors fetch this one's blocks.
    pub executor_ref: ActorPath,
    pub cluster: Cluster,
    pub driver: EndpointRef<DriverProtocol>,
    pub store: BlockStore,
    pub stages: StageCache,
    pub log_ctx: Arc<LogCtx>,
    /// Bound of one remote shuffle fetch.
    pub fetch_timeout: Duration,
    /// The executor incarnation's token: once it fires the executor is gone, and its task
    /// threads report nothing more (a dead executor process says nothing either; the driver
    /// learns of the loss and fails the tasks as executor-lost).
    pub executor_token: CancelToken,
    /// The final statuses sent lately.
    pub recent: RecentStatuses,
}

impl ExecutorHandle {
    fn send_status(&self, task_id: u64, state: TaskState, data: Vec<u8>, cpus: u32) {
        if self.executor_token.is_cancelled() {
            tracing::info!(
                task_id,
                state = state.as_str(),
                "Not reporting TID {task_id} {}: the executor is gone",
                state.as_str()
            );
            return;
        }
        let update = StatusUpdate {
            executor_id: self.executor_id.clone(),
            task_id,
            state,
            data,
            task_cpus: cpus,
        };
        // A final status may wait for this thread's next message to the driver and go with
        // it in one write; the task pool writes it out before the thread waits. When tasks
        // have lately been short a RUNNING waits too, handed to the pool's watcher, which
        // writes it out within a tick if the task turns out long (see `runtime::deferred`).
        let told = if state.is_finished() {
            self.recent.remember(&update);
            self.driver.tell_deferred(update)
        } else if TaskPool::jobs_are_short() {
            let told = self.driver.tell_deferred(update);
            if deferred::has_deferred() {
                deferred::hand_over();
                if !TaskPool::watch_handed_over() {
                    deferred::flush_handed_over();
                }
            }
            told
        } else {
            self.driver.tell(update)
        };
        if told.is_err() {
            tracing::warn!(
                task_id,
                state = state.as_str(),
                "Dropping a status update for TID {task_id}: the driver is not reachable"
            );
        }
    }
}

/// The task context an executor gives `rdd::run_task`.
struct ExecutorTaskContext<'a> {
    desc: &'a TaskDescription,
    exec: &'a ExecutorHandle,
    cancel: &'a CancelToken,
    shuffle_inputs: &'a [ShuffleLocations],
    /// Bytes fetched from other executors.
    remote_bytes_read: std::cell::Cell<u64>,
    /// A barrier stage's task (Spark's BarrierTaskContext): how many tasks the stage has.
    barrier_tasks: Option<u32>,
    /// Global syncs passed so far (`barrierEpoch`).
    barrier_epoch: std::cell::Cell<u32>,
}

/// How many times a task asks the barrier coordinator again while it restarts, and how
/// long apart.
const BARRIER_TRIES: u32 = 100;
const BARRIER_RETRY_PAUSE: Duration = Duration::from_millis(10);
/// The bound of one sync ask: the coordinator answers a sync that takes too long itself
/// (`spark.barrier.sync.timeout`), as Spark's 365-day RPC time-out leaves it to.
const BARRIER_ASK_TIMEOUT: Duration = Duration::from_secs(365 * 24 * 3600);

impl ExecutorTaskContext<'_> {
    fn killed(&self) -> TaskError {
        TaskError::Killed {
            reason: self.cancel.reason().unwrap_or_else(|| "killed".into()),
        }
    }

    fn fetch_failed(
        &self,
        shuffle_id: ShuffleId,
        reduce_id: u32,
        at: FetchAt<'_>,
        message: String,
    ) -> TaskError {
        TaskError::FetchFailed(FetchFailure {
            executor_id: at.executor_id.map(str::to_string),
            host: at.host.map(str::to_string),
            shuffle_id,
            map_id: at.map_id,
            map_index: at.map_index,
            reduce_id,
            message,
        })
    }
}

#[derive(Clone, Copy)]
struct FetchAt<'a> {
    executor_id: Option<&'a str>,
    host: Option<&'a str>,
    map_id: u64,
    map_index: u32,
}

impl rdd::TaskContext for ExecutorTaskContext<'_> {
    fn stage_id(&self) -> u32 {
        self.desc.stage_id
    }
    fn partition_id(&self) -> u32 {
        self.desc.partition_id
    }
    fn attempt_number(&self) -> u32 {
        self.desc.attempt_number
    }
    fn task_id(&self) -> u64 {
        self.desc.task_id
    }
    fn check_cancelled(&self) -> Result<(), TaskError> {
        if self.cancel.is_cancelled() {
            Err(self.killed())
        } else {
            Ok(())
        }
    }
    fn sleep(&self, d: Duration) -> Result<(), TaskError> {
        self.exec
            .cluster
            .clock()
            .blocking_sleep(d, Some(self.cancel))
            .map_err(|_| self.killed())
    }

    fn stage_attempt_number(&self) -> u32 {
        self.desc.stage_attempt_id
    }

    /// BarrierTaskContext.runBarrier: asks the driver's BarrierCoordinator and waits (a kill
    /// ends the wait at once).
    fn barrier_sync(&self, method: BarrierMethod, message: &str) -> Result<Vec<String>, TaskError> {
        let Some(num_tasks) = self.barrier_tasks else {
            return Err(rdd::not_a_barrier_task());
        };
        let (tid, stage, attempt) = (self.desc.task_id, self.desc.stage_id, self.desc.stage_attempt_id);
        let epoch = self.barrier_epoch.get();
        tracing::info!(
            task_id = tid,
            stage_id = stage,
            stage_attempt = attempt,
            barrier_epoch = epoch,
            "Task {tid} from Stage {stage}(Attempt {attempt}) has entered the global sync, current barrier epoch is {epoch}."
        );
        let started = Instant::now();
        let coordinator_path = self
            .exec
            .driver
            .path()
            .parent()
            .and_then(|d| d.child(BARRIER_COORDINATOR_SEGMENT).ok());
        let Some(coordinator_path) = coordinator_path else {
            return Err(TaskError::exception(
                "org.apache.spark.SparkException",
                format!(
                    "no barrier coordinator next to the driver {}",
                    self.exec.driver.path()
                ),
            ));
        };
        let coordinator: EndpointRef<BarrierCoordinatorProtocol> =
            self.exec.cluster.endpoint(&coordinator_path);
        let request = RequestToSync {
            num_tasks,
            stage_id: stage,
            stage_attempt_id: attempt,
            task_attempt_id: tid,
            barrier_epoch: epoch,
            partition_id: self.desc.partition_id,
            message: message.to_string(),
            request_method: method,
        };
        let cancelled = self.cancel.cancelled();
        let clock = self.exec.cluster.clock().clone();
        let sync = async move {
            // The coordinator restarting: asked again (the kept epoch lets the new
            // incarnation take the sync up).
            let ask = async move {
                let mut tries = 0;
                loop {
                    tries += 1;
                    let answer = coordinator
                        .ask_while_restarting(
                            request.clone(),
                            BARRIER_ASK_TIMEOUT,
                            BARRIER_TRIES,
                            BARRIER_RETRY_PAUSE,
                        )
                        .await;
                    match answer {
                        Ok(Err(e)) if e.ask_again && tries < BARRIER_TRIES => {
                            clock.sleep(BARRIER_RETRY_PAUSE).await
                        }
                        other => return other,
                    }
                }
            };
            futures_util::pin_mut!(ask);
            match futures_util::future::select(ask, cancelled).await {
                futures_util::future::Either::Left((answer, _)) => Some(answer),
                futures_util::future::Either::Right(_) => None,
            }
        };
        let answer = block_on(&self.exec.cluster, sync, BARRIER_ASK_TIMEOUT);
        let waited = started.elapsed().as_secs();
        let failed = |e: TaskError| {
            tracing::info!(
                task_id = tid,
                stage_id = stage,
                stage_attempt = attempt,
                barrier_epoch = epoch,
                "Task {tid} from Stage {stage}(Attempt {attempt}) failed to perform global sync, waited for {waited} seconds, current barrier epoch is {epoch}."
            );
            Err(e)
        };
        match answer {
            Ok(None) => failed(self.killed()),
            Ok(Some(Ok(Ok(messages)))) => {
                self.barrier_epoch.set(epoch + 1);
                tracing::info!(
                    task_id = tid,
                    stage_id = stage,
                    stage_attempt = attempt,
                    barrier_epoch = epoch + 1,
                    "Task {tid} from Stage {stage}(Attempt {attempt}) finished global sync successfully, waited for {waited} seconds, current barrier epoch is {}.",
                    epoch + 1
                );
                Ok(messages)
            }
            Ok(Some(Ok(Err(e)))) => failed(TaskError::exception(e.class_name, e.message)),
            Ok(Some(Err(e))) => failed(TaskError::exception(
                "org.apache.spark.SparkException",
                format!("Could not reach the barrier coordinator: {e}"),
            )),
            Err(e) => failed(TaskError::exception(
                "org.apache.spark.SparkException",
                format!("Could not reach the barrier coordinator: {e}"),
            )),
        }
    }

    fn fetch_shuffle(&self, shuffle_id: ShuffleId, reduce_id: u32) -> Result<Vec<Vec<u8>>, TaskError> {
        let missing = |map_index: u32| {
            self.fetch_failed(
                shuffle_id,
                reduce_id,
                FetchAt {
                    executor_id: None,
                    host: None,
                    map_id: 0,
                    map_index,
                },
                format!("Missing an output location for shuffle {shuffle_id} partition {reduce_id}"),
            )
        };
        let Some(locs) = self.shuffle_inputs.iter().find(|l| l.shuffle_id == shuffle_id) else {
            return Err(missing(0));
        };
        let mut out: Vec<Option<Vec<u8>>> = vec![None; locs.outputs.len()];
        // Map outputs grouped by the executor that holds them, in first-seen order.
        let mut remote: Vec<(&str, Vec<usize>)> = Vec::new();
        for (i, loc) in locs.outputs.iter().enumerate() {
            let Some(loc) = loc else {
                return Err(missing(i as u32));
            };
            if loc.executor_ref == self.exec.executor_ref.as_str() {
                match self.exec.store.bucket(shuffle_id, loc.map_id, reduce_id) {
                    Some(b) => out[i] = Some(b),
                    None => {
                        return Err(self.fetch_failed(
                            shuffle_id,
                            reduce_id,
                            FetchAt {
                                executor_id: Some(&loc.executor_id),
                                host: Some(&loc.host),
                                map_id: loc.map_id,
                                map_index: loc.map_index,
                            },
                            format!(
                                "shuffle_{shuffle_id}_{}_{reduce_id} is not in this executor's block store",
                                loc.map_id
                            ),
                        ))
                    }
                }
            } else {
                match remote.iter_mut().find(|(r, _)| *r == loc.executor_ref.as_str()) {
                    Some((_, idx)) => idx.push(i),
                    None => remote.push((loc.executor_ref.as_str(), vec![i])),
                }
            }
        }
        let mut remote_bytes = 0u64;
        for (executor_ref, indexes) in remote {
            self.check_cancelled()?;
            let first = locs.outputs[indexes[0]].as_ref().map(|l| FetchAt {
                executor_id: Some(l.executor_id.as_str()),
                host: Some(l.host.as_str()),
                map_id: l.map_id,
                map_index: l.map_index,
            });
            let at = first.unwrap_or(FetchAt {
                executor_id: None,
                host: None,
                map_id: 0,
                map_index: 0,
            });
            let path = ActorPath::parse(executor_ref).map_err(|e| {
                self.fetch_failed(
                    shuffle_id,
                    reduce_id,
                    at,
                    format!("bad executor path {executor_ref}: {e}"),
                )
            })?;
            let map_ids: Vec<u64> = indexes
                .iter()
                .filter_map(|&i| locs.outputs[i].as_ref().map(|l| l.map_id))
                .collect();
            let peer: EndpointRef<ShuffleProtocol> = self.exec.cluster.endpoint(&path);
            let ask = peer.ask(
                FetchShuffleBlocks {
                    shuffle_id,
                    reduce_id,
                    map_ids,
                },
                self.exec.fetch_timeout,
            );
            let limit = self.exec.fetch_timeout + Duration::from_secs(1);
            let reply = block_on(&self.exec.cluster, ask, limit);
            let blocks = match reply {
                Ok(Ok(Ok(blocks))) => blocks.blocks,
                Ok(Ok(Err(e))) => return Err(self.fetch_failed(shuffle_id, reduce_id, at, e)),
                Ok(Err(e)) => {
                    return Err(self.fetch_failed(
                        shuffle_id,
                        reduce_id,
                        at,
                        format!(
                            "Failed to connect to {}/{executor_ref}: {e}",
                            at.host.unwrap_or("?")
                        ),
                    ))
                }
                Err(e) => {
                    return Err(self.fetch_failed(
                        shuffle_id,
                        reduce_id,
                        at,
                        format!("Failed to fetch from {executor_ref}: {e}"),
                    ))
                }
            };
            if blocks.len() != indexes.len() {
                return Err(self.fetch_failed(
                    shuffle_id,
                    reduce_id,
                    at,
                    format!(
                        "{executor_ref} answered {} blocks for {} asked",
                        blocks.len(),
                        indexes.len()
                    ),
                ));
            }
            for (i, b) in indexes.into_iter().zip(blocks) {
                remote_bytes += b.len() as u64;
                out[i] = Some(b.into_vec());
            }
        }
        self.remote_bytes_read
            .set(self.remote_bytes_read.get() + remote_bytes);
        Ok(out.into_iter().map(Option::unwrap_or_default).collect())
    }
}

fn end_reason(err: TaskError) -> (TaskState, TaskEndReason) {
    match err {
        TaskError::Exception { class_name, message } => (
            TaskState::Failed,
            TaskEndReason::ExceptionFailure {
                class_name,
                description: message,
                stack_trace: vec![],
            },
        ),
        TaskError::FetchFailed(f) => (
            TaskState::Failed,
            TaskEndReason::FetchFailed {
                executor_id: f.executor_id,
                host: f.host,
                shuffle_id: f.shuffle_id,
                map_id: f.map_id,
                map_index: f.map_index,
                reduce_id: f.reduce_id,
                message: f.message,
            },
        ),
        TaskError::Killed { reason } => (TaskState::Killed, TaskEndReason::TaskKilled { reason }),
    }
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic".into())
}

/// Runs `desc` to its end and reports every state change to the driver. Never panics.
pub fn run(desc: TaskDescription, exec: &ExecutorHandle, cancel: &CancelToken) {
    let _scope = LogScope::enter(&exec.log_ctx);
    let (tid, cpus) = (desc.task_id, desc.cpus);
    exec.send_status(tid, TaskState::Running, Vec::new(), cpus);
    tracing::info!(
        task_id = tid,
        stage_id = desc.stage_id,
        stage_attempt = desc.stage_attempt_id,
        "Running {}",
        desc.name
    );
    let started = Instant::now();
    let outcome = catch_unwind(AssertUnwindSafe(|| compute(&desc, exec, cancel))).unwrap_or_else(|p| {
        Err(TaskError::Exception {
            class_name: "java.lang.RuntimeException".into(),
            message: format!("task panicked: {}", panic_message(p.as_ref())),
        })
    });
    let run_ms = started.elapsed().as_millis() as u64;
    match outcome {
        Ok(mut result) => {
            match &mut result {
                TaskResult::Value { metrics, .. } | TaskResult::MapStatus { metrics, .. } => {
                    metrics.executor_run_time_ms = run_ms
                }
            }
            match rmp_serde::to_vec(&result) {
                Ok(data) => {
                    tracing::info!(
                        task_id = tid,
                        stage_id = desc.stage_id,
                        "Finished {}. {} bytes result sent to driver",
                        desc.name,
                        data.len()
                    );
                    exec.send_status(tid, TaskState::Finished, data, cpus);
                }
                Err(e) => report_failure(
                    exec,
                    &desc,
                    TaskError::Exception {
                        class_name: "java.io.NotSerializableException".into(),
                        message: format!("the task's result cannot be encoded: {e}"),
                    },
                ),
            }
        }
        Err(e) => report_failure(exec, &desc, e),
    }
}

fn report_failure(exec: &ExecutorHandle, desc: &TaskDescription, err: TaskError) {
    let (state, reason) = end_reason(err);
    if state == TaskState::Killed {
        tracing::info!(
            task_id = desc.task_id,
            stage_id = desc.stage_id,
            "Executor killed {}, reason: {}",
            desc.name,
            match &reason {
                TaskEndReason::TaskKilled { reason } => reason.as_str(),
                _ => "",
            }
        );
    } else {
        tracing::error!(
            task_id = desc.task_id,
            stage_id = desc.stage_id,
            "Exception in {}: {}",
            desc.name,
            reason.error_string()
        );
    }
    let data = rmp_serde::to_vec(&reason).unwrap_or_default();
    exec.send_status(desc.task_id, state, data, desc.cpus);
}

fn compute(
    desc: &TaskDescription,
    exec: &ExecutorHandle,
    cancel: &CancelToken,
) -> Result<TaskResult, TaskError> {
    let setup = |m: String| TaskError::Exception {
        class_name: "java.io.IOException".into(),
        message: m,
    };
    let binary = exec.stages.get_or_decode(desc).map_err(setup)?;
    let slice: Option<Slice> = match &desc.slice {
        Some(bytes) => Some(
            rmp_serde::from_slice(bytes)
                .map_err(|e| setup(format!("cannot decode the slice of {}: {e}", desc.name)))?,
        ),
        None => None,
    };
    // A barrier stage's tasks get a BarrierTaskContext (the stage's RDD says so).
    let stage_rdd = match &binary.stage.kind {
        rdd::TaskKind::ShuffleMap { dep } => dep.parent,
        rdd::TaskKind::Result { rdd, .. } => *rdd,
    };
    let lineage = &binary.stage.lineage;
    let barrier_tasks = lineage
        .is_barrier(stage_rdd)
        .then(|| lineage.num_partitions(stage_rdd));
    let ctx = ExecutorTaskContext {
        desc,
        exec,
        cancel,
        shuffle_inputs: &binary.shuffle_inputs,
        remote_bytes_read: std::cell::Cell::new(0),
        barrier_tasks,
        barrier_epoch: std::cell::Cell::new(0),
    };
    ctx.check_cancelled()?;
    let (output, counts) = rdd::run_task(&binary.stage, desc.partition_id, slice, &ctx)?;
    let remote_bytes = ctx.remote_bytes_read.get();
    let mut metrics = TaskMetrics {
        records_read: counts.records_read,
        shuffle_records_written: counts.shuffle_records_written,
        shuffle_bytes_written: counts.shuffle_bytes_written,
        shuffle_records_read: counts.shuffle_records_read,
        shuffle_remote_bytes_read: remote_bytes,
        ..TaskMetrics::default()
    };
    Ok(match output {
        TaskOutput::Value(value) => TaskResult::Value { value, metrics },
        TaskOutput::MapOutput { buckets } => {
            let shuffle_id = match &binary.stage.kind {
                rdd::TaskKind::ShuffleMap { dep } => dep.shuffle_id,
                rdd::TaskKind::Result { .. } => {
                    return Err(setup(format!("{} wrote map output in a result stage", desc.name)))
                }
            };
            let sizes: Vec<u64> = buckets.iter().map(|b| b.len() as u64).collect();
            metrics.shuffle_bytes_written = sizes.iter().sum();
            exec.store.put_map_output(shuffle_id, desc.task_id, buckets);
            TaskResult::MapStatus {
                status: MapStatus {
                    executor_id: exec.executor_id.clone(),
                    host: exec.host.clone(),
                    executor_ref: exec.executor_ref.as_str().to_string(),
                    map_id: desc.task_id,
                    sizes,
                },
                metrics,
            }
        }
    })
}
