//! The DAGScheduler core: Spark's `DAGScheduler` event handlers as a synchronous state
//! machine. Each [`DAGSchedulerCore::handle`] call takes one [`DagEvent`] and the current time,
//! updates the jobs, stages and map output tracker, and queues [`DagAction`]s that the
//! caller drains afterwards ([`DAGSchedulerCore::take_actions`] / [`DAGSchedulerCore::drain_actions`]).
//!
//! Layer: scheduler (the Spark side: the driver's schedulers, above rdd).
//!
//! Rules follow spark-reference §3.13 (and DAGScheduler.scala): stages are created at shuffle
//! boundaries (a ShuffleMapStage per shuffle id, shared by the jobs that need it while any of
//! them is active; finished shuffles stay in the map output tracker, so a later job skips
//! their map stage), submitted parents first, task sets built from the missing partitions;
//! task completions register map outputs, finish stages and jobs; fetch failures mark the
//! reading stage failed, drop the lost output and resubmit after [`RESUBMIT_TIMEOUT_MS`],
//! aborting after `spark.stage.maxConsecutiveAttempts` consecutive failed attempts.
//!
//! Barrier stages (an RDD made by `barrier().mapPartitions`): at creation Spark's checks
//! (dynamic allocation, the RDD chain, the cluster's task slots — the last one retried after
//! `spark.scheduler.barrier.maxConcurrentTasksCheck.interval`); any failed task fails the
//! whole attempt (its tasks killed, a map stage's outputs all dropped and the stage
//! resubmitted, a result stage aborted); their output is indeterminate, so a partly
//! available barrier map stage reruns in full.
//!
//! Per-task work (BeginEvent, CompletionEvent) is O(1): stages are found by id, result
//! outputs by the attempt's task index, pending map partitions are a bitmap with a count.
//! Work proportional to a stage's size happens once per stage attempt.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::fmt::Write as _;
use std::sync::Arc;

use super::config::{
    DagConfig, BARRIER_DYN_ALLOCATION_MESSAGE, BARRIER_RDD_CHAIN_MESSAGE, BARRIER_SLOTS_MESSAGE,
    MAX_CONSECUTIVE_ATTEMPTS_KEY, MAX_STAGE_ATTEMPTS_KEY, RESUBMIT_TIMEOUT_MS,
};
use super::job::ActiveJob;
use super::map_output_tracker::MapOutputTracker;
use super::protocol::{CompletionEvent, DagAction, DagEvent};
use super::stage::{PendingSet, Stage, StageKind};
use crate::rdd::{Lineage, RddId, RddKind, ResultFunc, ShuffleDep, ShuffleId, StageTask, TaskKind, Value};
use crate::scheduler::events::{
    JobResult, SparkListenerEvent, StageInfo, TaskEndReason, TaskInfo, TaskMetrics,
};
use crate::scheduler::loss_reason::ExecutorLossReason;
use crate::scheduler::task::{MapStatus, ShuffleLocations, StageBinary, TaskResult};
use crate::scheduler::task_set::{TaskBinary, TaskLocation, TaskSet, TaskSlices, TaskSpec};

/// The job property Spark sets to the call site for jobs without a description.
const SPARK_JOB_DESCRIPTION: &str = "spark.job.description";
/// The reason given to every job by [`DagEvent::AllJobsCancelled`] without a reason.
pub const CANCEL_ALL_JOBS_REASON: &str = "as part of cancellation of all jobs";
/// The reason given to KillAllTaskAttempts once a job's result stage finished.
pub const STAGE_FINISHED_REASON: &str = "Stage finished";

/// What a completion's end reason asks the scheduler to do (extracted before the reason is
/// moved into the listener event).
/// A fetch failure as the DAGScheduler handles it.
struct FetchFailure {
    executor_id: Option<String>,
    host: Option<String>,
    shuffle_id: ShuffleId,
    map_index: u32,
    message: String,
    /// The executor it names is decommissioning or was decommissioned.
    source_decommissioned: bool,
}

enum Outcome {
    Success,
    FetchFailed(FetchFailure),
    Resubmitted,
    Other,
}

/// Why a stage could not be created.
enum CreateError {
    /// A barrier stage needs more slots than the cluster has now (Spark's
    /// BarrierJobSlotsNumberCheckFailed): the job is tried again later.
    Slots {
        required: u32,
        max: u32,
    },
    Other(String),
}

impl From<String> for CreateError {
    fn from(m: String) -> Self {
        CreateError::Other(m)
    }
}

/// Where a stage's tasks would like to run, before looking at a partition.
enum PrefSource<'a> {
    /// A parallelized collection's location preferences, by partition.
    Hosts(&'a [Vec<String>]),
    /// A shuffled RDD: the hosts holding most of the partition's input.
    Shuffle(ShuffleId),
}

/// The DAGScheduler core (Spark's `DAGScheduler`).
#[derive(Debug)]
pub struct DAGSchedulerCore {
    config: DagConfig,
    max_stage_attempts: u32,
    next_job_id: u32,
    next_stage_id: u32,
    stages: HashMap<u32, Stage>,
    shuffle_to_stage: HashMap<ShuffleId, u32>,
    job_to_stages: HashMap<u32, BTreeSet<u32>>,
    jobs: BTreeMap<u32, ActiveJob>,
    /// Stages whose parents are not done yet.
    waiting: BTreeSet<u32>,
    /// Stages with a task set running.
    running: BTreeSet<u32>,
    /// Stages to resubmit after fetch failures.
    failed: BTreeSet<u32>,
    tracker: MapOutputTracker,
    executor_failure_epoch: HashMap<String, u64>,
    shuffle_file_lost_epoch: HashMap<String, u64>,
    /// Shuffles whose map stage is being created (a cycle guard).
    creating: HashSet<ShuffleId>,
    actions: Vec<DagAction>,
    /// What the cluster can run at once now (Spark's `sc.maxNumConcurrentTasks`), set by
    /// the caller before a job is submitted.
    max_concurrent_tasks: u32,
    /// Failed slot checks per job (`barrierJobIdToNumTasksCheckFailures`).
    barrier_check_failures: HashMap<u32, u32>,
    /// Jobs waiting to be submitted again after a failed slot check.
    barrier_job_resubmits: BTreeMap<u32, DagEvent>,
}

impl Default for DAGSchedulerCore {
    fn default() -> Self {
        DAGSchedulerCore::new(DagConfig::default())
    }
}

impl DAGSchedulerCore {
    pub fn new(config: DagConfig) -> DAGSchedulerCore {
        DAGSchedulerCore {
            max_stage_attempts: config.effective_max_stage_attempts(),
            config,
            next_job_id: 0,
            next_stage_id: 0,
            stages: HashMap::new(),
            shuffle_to_stage: HashMap::new(),
            job_to_stages: HashMap::new(),
            jobs: BTreeMap::new(),
            waiting: BTreeSet::new(),
            running: BTreeSet::new(),
            failed: BTreeSet::new(),
            tracker: MapOutputTracker::new(),
            executor_failure_epoch: HashMap::new(),
            shuffle_file_lost_epoch: HashMap::new(),
            creating: HashSet::new(),
            actions: Vec::new(),
            max_concurrent_tasks: u32::MAX,
            barrier_check_failures: HashMap::new(),
            barrier_job_resubmits: BTreeMap::new(),
        }
    }

    /// Spark's `sc.maxNumConcurrentTasks`: the task slots of the active executors, which a
    /// barrier stage's partitions must not outnumber. The caller sets it before a job is
    /// submitted.
    pub fn set_max_concurrent_tasks(&mut self, slots: u32) {
        self.max_concurrent_tasks = slots;
    }

    /// Jobs waiting to be submitted again after a failed barrier slot check (a restarted
    /// caller arms their timers again).
    pub fn pending_barrier_job_resubmits(&self) -> Vec<u32> {
        self.barrier_job_resubmits.keys().copied().collect()
    }

    pub fn config(&self) -> &DagConfig {
        &self.config
    }

    /// Hands out the next job id (Spark's `nextJobId.getAndIncrement`).
    pub fn next_job_id(&mut self) -> u32 {
        let id = self.next_job_id;
        self.next_job_id = self.next_job_id.saturating_add(1);
        id
    }

    /// Spark's submit-side check: every requested partition must exist.
    pub fn check_partitions(lineage: &Lineage, rdd: RddId, partitions: &[u32]) -> Result<(), String> {
        let max = lineage.num_partitions(rdd);
        match partitions.iter().find(|p| **p >= max) {
            Some(p) => Err(format!(
                "Attempting to access a non-existent partition: {p}. Total number of partitions: {max}"
            )),
            None => Ok(()),
        }
    }

    /// The actions queued so far (the caller drains them after each event).
    pub fn take_actions(&mut self) -> Vec<DagAction> {
        std::mem::take(&mut self.actions)
    }

    /// Drains the queued actions, keeping the buffer's capacity.
    pub fn drain_actions(&mut self) -> std::vec::Drain<'_, DagAction> {
        self.actions.drain(..)
    }

    pub fn map_output_tracker(&self) -> &MapOutputTracker {
        &self.tracker
    }

    /// Active job ids, ascending.
    pub fn active_job_ids(&self) -> Vec<u32> {
        self.jobs.keys().copied().collect()
    }

    /// The stages a job needs (its result stage and every ancestor), ascending.
    pub fn stage_ids_for_job(&self, job_id: u32) -> Vec<u32> {
        self.job_to_stages
            .get(&job_id)
            .map(|s| s.iter().copied().collect())
            .unwrap_or_default()
    }

    /// The stages registered now, ascending.
    pub fn stage_ids(&self) -> Vec<u32> {
        let mut ids: Vec<u32> = self.stages.keys().copied().collect();
        ids.sort_unstable();
        ids
    }

    /// A stage's parent stage ids, if the stage is registered.
    pub fn stage_parents(&self, stage_id: u32) -> Option<Vec<u32>> {
        self.stages.get(&stage_id).map(|s| s.parents.clone())
    }

    /// A stage's latest StageInfo, if the stage is registered.
    pub fn stage_info(&self, stage_id: u32) -> Option<&StageInfo> {
        self.stages.get(&stage_id).map(|s| &s.latest_info)
    }

    /// The map stage registered for a shuffle now.
    pub fn shuffle_map_stage(&self, shuffle_id: ShuffleId) -> Option<u32> {
        self.shuffle_to_stage.get(&shuffle_id).copied()
    }

    pub fn running_stage_ids(&self) -> Vec<u32> {
        self.running.iter().copied().collect()
    }

    pub fn waiting_stage_ids(&self) -> Vec<u32> {
        self.waiting.iter().copied().collect()
    }

    pub fn failed_stage_ids(&self) -> Vec<u32> {
        self.failed.iter().copied().collect()
    }

    /// Handles one event at `now_ms` (milliseconds since the Unix epoch).
    pub fn handle(&mut self, event: DagEvent, now_ms: u64) {
        self.handle_event(event, now_ms);
    }

    fn handle_event(&mut self, event: DagEvent, now_ms: u64) {
        match event {
            DagEvent::JobSubmitted {
                job_id,
                lineage,
                rdd,
                partitions,
                func,
                call_site,
                properties,
            } => self.handle_job_submitted(
                job_id, lineage, rdd, partitions, func, call_site, properties, now_ms,
            ),
            DagEvent::BeginEvent {
                stage_id,
                stage_attempt_id,
                task_info,
            } => self.post(SparkListenerEvent::TaskStart {
                stage_id,
                stage_attempt_id,
                task_info,
            }),
            DagEvent::CompletionEvent(event) => self.handle_task_completion(event, now_ms),
            DagEvent::TaskSetFailed {
                stage_id,
                stage_attempt_id,
                message,
            } => {
                if self.stages.contains_key(&stage_id) {
                    tracing::info!(
                        stage_id,
                        stage_attempt = stage_attempt_id,
                        "Task set {stage_id}.{stage_attempt_id} failed: {message}"
                    );
                    self.abort_stage(stage_id, &message, now_ms);
                }
            }
            DagEvent::ExecutorAdded { executor_id, host } => self.handle_executor_added(&executor_id, &host),
            DagEvent::ExecutorLost { executor_id, reason } => {
                let worker_host = match &reason {
                    ExecutorLossReason::ExecutorProcessLost { worker_host, .. }
                    | ExecutorLossReason::ExecutorDecommission { worker_host, .. } => worker_host.clone(),
                    _ => None,
                };
                self.handle_executor_lost(&executor_id, worker_host);
            }
            DagEvent::ResubmitFailedStages => self.resubmit_failed_stages(now_ms),
            DagEvent::SpeculativeTaskSubmitted {
                stage_id,
                stage_attempt_id,
                index,
            } => self.post(SparkListenerEvent::SpeculativeTaskSubmitted {
                stage_id,
                stage_attempt_id,
                task_index: index,
            }),
            DagEvent::JobCancelled { job_id, reason } => {
                tracing::info!(job_id, "Asked to cancel job {job_id}");
                self.handle_job_cancellation(job_id, reason.as_deref().unwrap_or(""), now_ms);
            }
            DagEvent::AllJobsCancelled { reason } => {
                let reason = reason.unwrap_or_else(|| CANCEL_ALL_JOBS_REASON.to_string());
                for job_id in self.active_job_ids() {
                    self.handle_job_cancellation(job_id, &reason, now_ms);
                }
                // Jobs waiting for a barrier slot check are cancelled with the others.
                let waiting: Vec<u32> = self.barrier_job_resubmits.keys().copied().collect();
                for job_id in waiting {
                    if let Some(DagEvent::JobSubmitted { call_site, .. }) =
                        self.barrier_job_resubmits.remove(&job_id)
                    {
                        self.barrier_check_failures.remove(&job_id);
                        self.job_ended(
                            job_id,
                            &call_site,
                            now_ms,
                            now_ms,
                            Err(format!("Job {job_id} cancelled {reason}")),
                        );
                    }
                }
            }
            DagEvent::ResubmitBarrierJob { job_id } => {
                if let Some(event) = self.barrier_job_resubmits.remove(&job_id) {
                    self.handle(event, now_ms);
                }
            }
        }
    }

    fn post(&mut self, event: SparkListenerEvent) {
        self.actions.push(DagAction::Post(event));
    }

    fn stage_label(&self, stage_id: u32) -> String {
        match self.stages.get(&stage_id) {
            Some(s) => s.to_string(),
            None => format!("Stage {stage_id}"),
        }
    }

    fn stage_label_and_name(&self, stage_id: u32) -> String {
        match self.stages.get(&stage_id) {
            Some(s) => format!("{s} ({})", s.name),
            None => format!("Stage {stage_id}"),
        }
    }

    // ---- jobs -------------------------------------------------------------------------

    #[allow(clippy::too_many_arguments)]
    fn handle_job_submitted(
        &mut self,
        job_id: u32,
        lineage: Arc<Lineage>,
        rdd: RddId,
        partitions: Vec<u32>,
        func: ResultFunc,
        call_site: String,
        mut properties: Vec<(String, String)>,
        now: u64,
    ) {
        if job_id >= self.next_job_id {
            self.next_job_id = job_id.saturating_add(1);
        }
        if self.jobs.contains_key(&job_id) || self.job_to_stages.contains_key(&job_id) {
            tracing::warn!(
                job_id,
                "Ignoring the submission of job {job_id}: the job id is already in use"
            );
            return;
        }
        if let Err(message) = Self::check_partitions(&lineage, rdd, &partitions) {
            self.job_ended(job_id, &call_site, now, now, Err(message));
            return;
        }
        if partitions.is_empty() {
            if !properties.iter().any(|(k, _)| k == SPARK_JOB_DESCRIPTION) {
                properties.push((SPARK_JOB_DESCRIPTION.to_string(), call_site.clone()));
            }
            self.post(SparkListenerEvent::JobStart {
                job_id,
                time: now,
                stage_infos: vec![],
                properties,
            });
            self.post(SparkListenerEvent::JobEnd {
                job_id,
                time: now,
                result: JobResult::JobSucceeded,
            });
            self.job_ended(job_id, &call_site, now, now, Ok(vec![]));
            return;
        }

        let num_partitions = partitions.len();
        // Kept to submit the job again if a barrier stage lacks slots.
        let retry = DagEvent::JobSubmitted {
            job_id,
            lineage: lineage.clone(),
            rdd,
            partitions: partitions.clone(),
            func: func.clone(),
            call_site: call_site.clone(),
            properties: properties.clone(),
        };
        let final_stage = match self.create_result_stage(&lineage, rdd, func, partitions, job_id, &call_site)
        {
            Ok(id) => id,
            Err(CreateError::Slots { required, max }) => {
                let failures = {
                    let n = self.barrier_check_failures.entry(job_id).or_insert(0);
                    *n += 1;
                    *n
                };
                let limit = self.config.barrier_check_max_failures;
                tracing::warn!(
                    job_id,
                    "Barrier stage in job {job_id} requires {required} slots, but only {max} are available. Will retry up to {} more times",
                    (limit + 1).saturating_sub(failures)
                );
                self.cleanup_state_for_job_and_independent_stages(job_id);
                if failures <= limit {
                    self.barrier_job_resubmits.insert(job_id, retry);
                    self.actions.push(DagAction::ScheduleBarrierJobResubmit {
                        job_id,
                        delay_ms: self.config.barrier_check_interval_ms,
                    });
                } else {
                    self.barrier_check_failures.remove(&job_id);
                    self.job_ended(
                        job_id,
                        &call_site,
                        now,
                        now,
                        Err(BARRIER_SLOTS_MESSAGE.to_string()),
                    );
                }
                return;
            }
            Err(CreateError::Other(message)) => {
                tracing::warn!(
                    job_id,
                    "Creating new stage failed due to exception - job: {job_id}: {message}"
                );
                self.cleanup_state_for_job_and_independent_stages(job_id);
                self.job_ended(job_id, &call_site, now, now, Err(message));
                return;
            }
        };
        drop(retry);
        self.barrier_check_failures.remove(&job_id);
        let job = ActiveJob::new(
            job_id,
            final_stage,
            call_site.clone(),
            properties,
            num_partitions,
            now,
        );
        let final_label = self.stage_label_and_name(final_stage);
        let parents = self
            .stages
            .get(&final_stage)
            .map(|s| s.parents.clone())
            .unwrap_or_default();
        let parents_text = scala_seq("List", parents.iter().map(|p| self.stage_label(*p)));
        let missing = self.missing_parent_stages(final_stage);
        let missing_text = scala_seq("List", missing.iter().map(|p| self.stage_label(*p)));
        tracing::info!(
            job_id,
            "Got job {job_id} ({call_site}) with {num_partitions} output partitions"
        );
        tracing::info!(job_id, stage_id = final_stage, "Final stage: {final_label}");
        tracing::info!(job_id, "Parents of final stage: {parents_text}");
        tracing::info!(job_id, "Missing parents: {missing_text}");

        let job_properties = job.properties.clone();
        self.jobs.insert(job_id, job);
        if let Some(StageKind::Result { active_job, .. }) =
            self.stages.get_mut(&final_stage).map(|s| &mut s.kind)
        {
            *active_job = Some(job_id);
        }
        let stage_infos: Vec<StageInfo> = self
            .stage_ids_for_job(job_id)
            .into_iter()
            .filter_map(|id| self.stages.get(&id).map(|s| s.latest_info.clone()))
            .collect();
        self.post(SparkListenerEvent::JobStart {
            job_id,
            time: now,
            stage_infos,
            properties: job_properties,
        });
        self.submit_stage(final_stage, now);
    }

    /// Logs Spark's "Job N finished/failed: <call site>, took X ms" and queues JobEnded.
    fn job_ended(
        &mut self,
        job_id: u32,
        call_site: &str,
        submitted: u64,
        now: u64,
        result: Result<Vec<Value>, String>,
    ) {
        let took = scala_double(now.saturating_sub(submitted));
        if result.is_ok() {
            tracing::info!(job_id, "Job {job_id} finished: {call_site}, took {took} ms");
        } else {
            tracing::info!(job_id, "Job {job_id} failed: {call_site}, took {took} ms");
        }
        self.actions.push(DagAction::JobEnded { job_id, result });
    }

    fn handle_job_cancellation(&mut self, job_id: u32, reason: &str, now: u64) {
        if !self.jobs.contains_key(&job_id) {
            tracing::debug!(job_id, "Trying to cancel unregistered job {job_id}");
            return;
        }
        self.fail_job_and_independent_stages(job_id, format!("Job {job_id} cancelled {reason}"), now);
    }

    /// Fails a job and every running stage only it needs, and cleans up its state.
    fn fail_job_and_independent_stages(&mut self, job_id: u32, error: String, now: u64) {
        self.cancel_running_independent_stages(job_id, &error, now);
        let Some(job) = self.cleanup_state_for_job_and_independent_stages(job_id) else {
            return;
        };
        self.post(SparkListenerEvent::JobEnd {
            job_id,
            time: now,
            result: JobResult::JobFailed {
                message: error.clone(),
            },
        });
        self.job_ended(job_id, &job.call_site, job.submitted_ms, now, Err(error));
    }

    /// Cancels the running stages used by this job only.
    fn cancel_running_independent_stages(&mut self, job_id: u32, reason: &str, now: u64) {
        let stage_ids = self.stage_ids_for_job(job_id);
        for stage_id in stage_ids {
            let independent = self
                .stages
                .get(&stage_id)
                .is_some_and(|s| s.job_ids.len() == 1 && s.job_ids.contains(&job_id));
            if independent && self.running.contains(&stage_id) {
                self.actions.push(DagAction::CancelTasks {
                    stage_id,
                    reason: reason.to_string(),
                });
                self.mark_stage_as_finished(stage_id, Some(reason.to_string()), false, now);
            }
        }
    }

    /// Removes the job and every stage no other job needs; returns the job.
    fn cleanup_state_for_job_and_independent_stages(&mut self, job_id: u32) -> Option<ActiveJob> {
        if let Some(stage_ids) = self.job_to_stages.remove(&job_id) {
            for stage_id in stage_ids {
                let unused = match self.stages.get_mut(&stage_id) {
                    Some(stage) => stage.job_ids.remove(&job_id) && stage.job_ids.is_empty(),
                    None => false,
                };
                if unused {
                    self.remove_stage(stage_id);
                }
            }
        }
        let job = self.jobs.remove(&job_id)?;
        if let Some(StageKind::Result { active_job, .. }) =
            self.stages.get_mut(&job.final_stage).map(|s| &mut s.kind)
        {
            if *active_job == Some(job_id) {
                *active_job = None;
            }
        }
        Some(job)
    }

    fn remove_stage(&mut self, stage_id: u32) {
        self.running.remove(&stage_id);
        self.waiting.remove(&stage_id);
        self.failed.remove(&stage_id);
        if let Some(stage) = self.stages.remove(&stage_id) {
            if let Some(shuffle_id) = stage.shuffle_id() {
                if self.shuffle_to_stage.get(&shuffle_id) == Some(&stage_id) {
                    self.shuffle_to_stage.remove(&shuffle_id);
                }
            }
        }
    }

    // ---- stage creation ---------------------------------------------------------------

    fn create_result_stage(
        &mut self,
        lineage: &Arc<Lineage>,
        rdd: RddId,
        func: ResultFunc,
        partitions: Vec<u32>,
        job_id: u32,
        call_site: &str,
    ) -> Result<u32, CreateError> {
        if lineage.node(rdd).is_none() {
            return Err(format!("RDD {rdd} is not part of the job's lineage").into());
        }
        let distinct: BTreeSet<u32> = partitions.iter().copied().collect();
        self.check_barrier_stage(lineage, rdd, distinct.len() as u32)?;
        let mut parents = Vec::new();
        for dep in lineage.shuffle_dependencies(rdd) {
            let id = self.get_or_create_shuffle_map_stage(lineage, &dep, job_id)?;
            if !parents.contains(&id) {
                parents.push(id);
            }
        }
        let id = self.new_stage_id();
        let num_tasks = partitions.len() as u32;
        let stage = Stage::new(
            id,
            rdd,
            lineage.clone(),
            num_tasks,
            parents,
            job_id,
            call_site.to_string(),
            StageKind::Result {
                func,
                partitions,
                active_job: None,
            },
        );
        self.stages.insert(id, stage);
        self.update_job_id_stage_id_maps(job_id, id);
        Ok(id)
    }

    fn new_stage_id(&mut self) -> u32 {
        let id = self.next_stage_id;
        self.next_stage_id = self.next_stage_id.saturating_add(1);
        id
    }

    /// The map stage of a shuffle, created (with its missing ancestors, farthest first) if
    /// there is none.
    fn get_or_create_shuffle_map_stage(
        &mut self,
        lineage: &Arc<Lineage>,
        dep: &ShuffleDep,
        first_job_id: u32,
    ) -> Result<u32, CreateError> {
        if let Some(id) = self.shuffle_to_stage.get(&dep.shuffle_id) {
            return Ok(*id);
        }
        for ancestor in self.missing_ancestor_shuffle_dependencies(lineage, dep.parent) {
            if !self.shuffle_to_stage.contains_key(&ancestor.shuffle_id) {
                self.create_shuffle_map_stage(lineage, &ancestor, first_job_id)?;
            }
        }
        match self.shuffle_to_stage.get(&dep.shuffle_id) {
            Some(id) => Ok(*id),
            None => self.create_shuffle_map_stage(lineage, dep, first_job_id),
        }
    }

    /// Spark's `getMissingAncestorShuffleDependencies`: the shuffles above `rdd` without a
    /// map stage, farthest first.
    fn missing_ancestor_shuffle_dependencies(&self, lineage: &Lineage, rdd: RddId) -> Vec<ShuffleDep> {
        let mut ancestors = VecDeque::new();
        let mut visited = HashSet::new();
        let mut to_visit = vec![rdd];
        while let Some(r) = to_visit.pop() {
            if !visited.insert(r) {
                continue;
            }
            for dep in lineage.shuffle_dependencies(r) {
                if !self.shuffle_to_stage.contains_key(&dep.shuffle_id) {
                    to_visit.push(dep.parent);
                    ancestors.push_front(dep);
                }
            }
        }
        ancestors.into()
    }

    fn create_shuffle_map_stage(
        &mut self,
        lineage: &Arc<Lineage>,
        dep: &ShuffleDep,
        job_id: u32,
    ) -> Result<u32, CreateError> {
        let shuffle_id = dep.shuffle_id;
        let rdd = dep.parent;
        let Some(node) = lineage.node(rdd) else {
            return Err(format!(
                "RDD {rdd} (the map side of shuffle {shuffle_id}) is not part of the job's lineage"
            )
            .into());
        };
        let call_site = node.call_site.clone();
        let num_tasks = lineage.num_partitions(rdd);
        self.check_barrier_stage(lineage, rdd, num_tasks)?;
        if let Some(known) = self.tracker.num_maps(shuffle_id) {
            if known != num_tasks {
                return Err(format!(
                    "Shuffle {shuffle_id} was registered with {known} map outputs \
                     but its RDD {rdd} has {num_tasks} partitions"
                )
                .into());
            }
        }
        if !self.creating.insert(shuffle_id) {
            return Err(format!("The lineage of shuffle {shuffle_id} depends on the shuffle itself").into());
        }
        let mut parents = Vec::new();
        let mut failure = None;
        for parent_dep in lineage.shuffle_dependencies(rdd) {
            match self.get_or_create_shuffle_map_stage(lineage, &parent_dep, job_id) {
                Ok(id) => {
                    if !parents.contains(&id) {
                        parents.push(id);
                    }
                }
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        self.creating.remove(&shuffle_id);
        if let Some(e) = failure {
            return Err(e);
        }
        let id = self.new_stage_id();
        let stage = Stage::new(
            id,
            rdd,
            lineage.clone(),
            num_tasks,
            parents,
            job_id,
            call_site.clone(),
            StageKind::ShuffleMap {
                dep: dep.clone(),
                pending: PendingSet::with_capacity(num_tasks),
            },
        );
        self.stages.insert(id, stage);
        self.shuffle_to_stage.insert(shuffle_id, id);
        self.update_job_id_stage_id_maps(job_id, id);
        if !self.tracker.contains_shuffle(shuffle_id) {
            tracing::info!(
                stage_id = id,
                "Registering RDD {rdd} ({call_site}) as input to shuffle {shuffle_id}"
            );
            self.tracker
                .register_shuffle(shuffle_id, num_tasks, dep.partitioner.num_partitions());
        }
        Ok(id)
    }

    /// Spark's checks of a barrier stage at its creation: no dynamic allocation
    /// ([SPARK-24942]), no more partitions than the cluster's task slots ([SPARK-24819],
    /// retried later), and an RDD chain whose RDDs all have `num_tasks_in_stage` partitions
    /// ([SPARK-24820][SPARK-24821]).
    fn check_barrier_stage(
        &self,
        lineage: &Lineage,
        rdd: RddId,
        num_tasks_in_stage: u32,
    ) -> Result<(), CreateError> {
        if !lineage.is_barrier(rdd) {
            return Ok(());
        }
        if self.config.dynamic_allocation_enabled {
            return Err(CreateError::Other(BARRIER_DYN_ALLOCATION_MESSAGE.to_string()));
        }
        let required = lineage.num_partitions(rdd);
        if required > self.max_concurrent_tasks {
            return Err(CreateError::Slots {
                required,
                max: self.max_concurrent_tasks,
            });
        }
        if !lineage.barrier_chain_ok(rdd, num_tasks_in_stage) {
            return Err(CreateError::Other(BARRIER_RDD_CHAIN_MESSAGE.to_string()));
        }
        Ok(())
    }

    /// Registers the job with the stage and every ancestor.
    fn update_job_id_stage_id_maps(&mut self, job_id: u32, stage_id: u32) {
        let mut to_visit = vec![stage_id];
        while let Some(id) = to_visit.pop() {
            let Some(stage) = self.stages.get_mut(&id) else {
                continue;
            };
            stage.job_ids.insert(job_id);
            self.job_to_stages.entry(job_id).or_default().insert(id);
            let parents = stage.parents.clone();
            for p in parents {
                if self.stages.get(&p).is_some_and(|s| !s.job_ids.contains(&job_id)) {
                    to_visit.push(p);
                }
            }
        }
    }

    // ---- stage submission -------------------------------------------------------------

    fn map_stage_available(&self, stage: &Stage) -> bool {
        match &stage.kind {
            StageKind::ShuffleMap { dep, .. } => {
                self.tracker.num_available_outputs(dep.shuffle_id) == stage.num_partitions
            }
            StageKind::Result { .. } => true,
        }
    }

    fn stage_available(&self, stage_id: u32) -> bool {
        self.stages
            .get(&stage_id)
            .is_some_and(|s| self.map_stage_available(s))
    }

    /// The parent stages whose outputs are not all available, by id.
    fn missing_parent_stages(&mut self, stage_id: u32) -> Vec<u32> {
        let parents = self
            .stages
            .get(&stage_id)
            .map(|s| s.parents.clone())
            .unwrap_or_default();
        let mut missing = Vec::new();
        for p in parents {
            if !self.stages.contains_key(&p) {
                continue;
            }
            if self.stage_available(p) {
                if let Some(parent) = self.stages.get_mut(&p) {
                    parent.increase_attempt_id_on_first_skip();
                }
            } else {
                missing.push(p);
            }
        }
        missing.sort_unstable();
        missing.dedup();
        missing
    }

    /// The earliest active job that needs the stage.
    fn active_job_for_stage(&self, stage_id: u32) -> Option<u32> {
        let stage = self.stages.get(&stage_id)?;
        stage.job_ids.iter().copied().find(|j| self.jobs.contains_key(j))
    }

    /// Submits a stage, missing parents first (Spark's recursive `submitStage`, with an
    /// explicit stack in the same order).
    fn submit_stage(&mut self, stage_id: u32, now: u64) {
        let mut to_submit = vec![stage_id];
        while let Some(id) = to_submit.pop() {
            if !self.stages.contains_key(&id) {
                continue;
            }
            let Some(job_id) = self.active_job_for_stage(id) else {
                self.abort_stage(id, &format!("No active job for stage {id}"), now);
                continue;
            };
            if self.waiting.contains(&id) || self.running.contains(&id) || self.failed.contains(&id) {
                continue;
            }
            let Some(stage) = self.stages.get(&id) else {
                continue;
            };
            if stage.next_attempt_id >= self.max_stage_attempts {
                let reason = format!(
                    "{stage} (name={}) has been resubmitted for the maximum allowable number of times: {}, \
                     which is the max value of config `{MAX_STAGE_ATTEMPTS_KEY}` and `{MAX_CONSECUTIVE_ATTEMPTS_KEY}`.",
                    stage.name, self.max_stage_attempts
                );
                self.abort_stage(id, &reason, now);
                continue;
            }
            let missing = self.missing_parent_stages(id);
            if missing.is_empty() {
                if let Some(stage) = self.stages.get(&id) {
                    tracing::info!(
                        job_id,
                        stage_id = id,
                        "Submitting {stage} ({}), which has no missing parents",
                        stage.rdd_desc
                    );
                }
                self.submit_missing_tasks(id, job_id, now);
            } else {
                self.waiting.insert(id);
                to_submit.extend(missing.into_iter().rev());
            }
        }
    }

    /// Where each stage's tasks would like to run, before looking at the partition: the
    /// first RDDs (stage RDD first, then its narrow ancestors) that know preferences.
    fn preference_sources<'a>(&self, lineage: &'a Lineage, rdd: RddId) -> Vec<PrefSource<'a>> {
        lineage
            .stage_rdds(rdd)
            .into_iter()
            .filter_map(|n| match &n.kind {
                RddKind::ParallelCollection { locations, .. } if !locations.is_empty() => {
                    Some(PrefSource::Hosts(locations.as_slice()))
                }
                RddKind::Shuffled { shuffle_id, .. } if self.config.reduce_locality_enabled => {
                    Some(PrefSource::Shuffle(*shuffle_id))
                }
                _ => None,
            })
            .collect()
    }

    fn preferred_locations(&self, sources: &[PrefSource<'_>], partition: u32) -> Vec<TaskLocation> {
        for source in sources {
            let hosts = match source {
                PrefSource::Hosts(locations) => {
                    locations.get(partition as usize).cloned().unwrap_or_default()
                }
                PrefSource::Shuffle(shuffle_id) => {
                    self.tracker.preferred_hosts_for_shuffle(*shuffle_id, partition)
                }
            };
            let locs: Vec<TaskLocation> = hosts
                .into_iter()
                .filter(|h| !h.is_empty())
                .map(TaskLocation::Host)
                .collect();
            if !locs.is_empty() {
                return locs;
            }
        }
        Vec::new()
    }

    /// Called when the stage's parents are available: a new attempt with a task per missing
    /// partition.
    fn submit_missing_tasks(&mut self, stage_id: u32, job_id: u32, now: u64) {
        // A barrier stage's output is indeterminate (Spark's MapPartitionsRDD from a
        // barrier): a map stage that is not wholly available runs every task again.
        if let Some(stage) = self.stages.get(&stage_id) {
            if let StageKind::ShuffleMap { dep, .. } = &stage.kind {
                if stage.is_barrier() && !self.map_stage_available(stage) {
                    let shuffle_id = dep.shuffle_id;
                    self.tracker.unregister_all_map_outputs(shuffle_id);
                }
            }
        }
        let Some(stage) = self.stages.get(&stage_id) else {
            return;
        };
        let Some(job) = self.jobs.get(&job_id) else { return };
        // (output id or map index, RDD partition) per task.
        let to_compute: Vec<(u32, u32)> = match &stage.kind {
            StageKind::ShuffleMap { dep, .. } => self
                .tracker
                .find_missing_partitions(dep.shuffle_id)
                .unwrap_or_else(|| (0..stage.num_partitions).collect())
                .into_iter()
                .map(|p| (p, p))
                .collect(),
            StageKind::Result {
                partitions,
                active_job,
                ..
            } => match active_job.and_then(|j| self.jobs.get(&j)) {
                Some(result_job) => result_job
                    .missing_outputs()
                    .into_iter()
                    .filter_map(|o| partitions.get(o as usize).map(|p| (o, *p)))
                    .collect(),
                None => Vec::new(),
            },
        };
        let properties = job.properties.clone();
        let lineage = stage.lineage.clone();
        let rdd = stage.rdd;
        let is_shuffle_map = stage.is_shuffle_map();
        let is_barrier = stage.is_barrier();
        let kind = match &stage.kind {
            StageKind::ShuffleMap { dep, .. } => TaskKind::ShuffleMap { dep: dep.clone() },
            StageKind::Result { func, .. } => TaskKind::Result {
                rdd,
                func: func.clone(),
            },
        };

        let sources = self.preference_sources(&lineage, rdd);
        let locations: Vec<Vec<TaskLocation>> = to_compute
            .iter()
            .map(|(_, p)| self.preferred_locations(&sources, *p))
            .collect();

        self.running.insert(stage_id);
        let epoch = self.tracker.epoch();
        let output_ids = if is_shuffle_map {
            Vec::new()
        } else {
            to_compute.iter().map(|(o, _)| *o).collect()
        };
        let Some(stage) = self.stages.get_mut(&stage_id) else {
            return;
        };
        // No task with a preference: none are listed (what the allocation manager reads from
        // them is the same, and a million-task stage keeps no million empty lists).
        let preferences = if locations.iter().all(Vec::is_empty) {
            Vec::new()
        } else {
            locations.clone()
        };
        stage.make_new_attempt(to_compute.len() as u32, epoch, output_ids, preferences);
        if !to_compute.is_empty() {
            stage.latest_info.submission_time = Some(now);
        }
        let attempt = stage.latest_attempt();
        let stage_info = stage.latest_info.clone();
        self.post(SparkListenerEvent::StageSubmitted {
            stage_info,
            properties: properties.clone(),
        });

        let shuffle_inputs: Vec<ShuffleLocations> = lineage
            .shuffle_dependencies(rdd)
            .into_iter()
            .map(|d| {
                self.tracker.locations(d.shuffle_id).unwrap_or(ShuffleLocations {
                    shuffle_id: d.shuffle_id,
                    outputs: vec![],
                })
            })
            .collect();
        let binary = StageBinary {
            stage: StageTask {
                lineage: lineage.for_stage(rdd),
                kind,
            },
            shuffle_inputs,
        };
        let encoded = rmp_serde::to_vec(&binary)
            .map_err(|e| e.to_string())
            .and_then(|stage_bytes| {
                let collection = lineage
                    .stage_rdds(rdd)
                    .iter()
                    .find(|n| matches!(n.kind, RddKind::ParallelCollection { .. }))
                    .map(|n| n.id);
                let slices = match collection {
                    Some(id) => {
                        let partitions: Vec<u32> = to_compute.iter().map(|(_, p)| *p).collect();
                        TaskSlices::of_collection(lineage.clone(), id, &partitions)?
                    }
                    None => TaskSlices::default(),
                };
                Ok(TaskBinary { stage_bytes, slices })
            });
        let task_binary = match encoded {
            Ok(b) => Arc::new(b),
            Err(e) => {
                self.abort_stage(stage_id, &format!("Task not serializable: {e}"), now);
                self.running.remove(&stage_id);
                return;
            }
        };

        let tasks: Vec<TaskSpec> = to_compute
            .iter()
            .zip(locations)
            .enumerate()
            .map(|(i, ((_, p), preferred_locations))| TaskSpec {
                index: i as u32,
                partition_id: *p,
                preferred_locations,
            })
            .collect();
        if let Some(Stage {
            kind: StageKind::ShuffleMap { pending, .. },
            ..
        }) = self.stages.get_mut(&stage_id)
        {
            pending.clear();
            for (p, _) in &to_compute {
                pending.insert(*p);
            }
        }

        if !tasks.is_empty() {
            let first: Vec<String> = tasks
                .iter()
                .take(15)
                .map(|t| t.partition_id.to_string())
                .collect();
            let label = self.stage_label(stage_id);
            let rdd_desc = self
                .stages
                .get(&stage_id)
                .map(|s| s.rdd_desc.clone())
                .unwrap_or_default();
            tracing::info!(
                job_id,
                stage_id,
                stage_attempt = attempt,
                "Submitting {} missing tasks from {label} ({rdd_desc}) (first 15 tasks are for partitions Vector({}))",
                tasks.len(),
                first.join(", ")
            );
            self.actions.push(DagAction::SubmitTasks(TaskSet {
                stage_id,
                stage_attempt_id: attempt,
                job_id,
                is_shuffle_map,
                is_barrier,
                tasks,
                binary: task_binary,
                properties,
            }));
        } else if is_shuffle_map {
            if self.stage_available(stage_id) {
                self.process_shuffle_map_stage_completion(stage_id, now);
            } else {
                // Nothing to compute yet outputs missing: the tracker disagrees with the stage.
                self.abort_stage(
                    stage_id,
                    "The map output tracker has no missing partitions for an unavailable stage",
                    now,
                );
                self.running.remove(&stage_id);
            }
        } else {
            self.mark_stage_as_finished(stage_id, None, false, now);
            self.submit_waiting_child_stages(stage_id, now);
        }
    }

    /// Submits the waiting stages that read this (now finished) stage.
    fn submit_waiting_child_stages(&mut self, parent: u32, now: u64) {
        let mut children: Vec<(u32, u32)> = self
            .waiting
            .iter()
            .filter_map(|id| self.stages.get(id))
            .filter(|s| s.parents.contains(&parent))
            .map(|s| (s.first_job_id, s.id))
            .collect();
        for (_, id) in &children {
            self.waiting.remove(id);
        }
        children.sort_unstable();
        for (_, id) in children {
            self.submit_stage(id, now);
        }
    }

    fn resubmit_failed_stages(&mut self, now: u64) {
        if self.failed.is_empty() {
            return;
        }
        tracing::info!("Resubmitting failed stages");
        let mut stages: Vec<(u32, u32)> = self
            .failed
            .iter()
            .map(|id| (self.stages.get(id).map_or(u32::MAX, |s| s.first_job_id), *id))
            .collect();
        self.failed.clear();
        stages.sort_unstable();
        for (_, id) in stages {
            self.submit_stage(id, now);
        }
    }

    /// Marks a stage finished (successfully or not) and posts StageCompleted.
    fn mark_stage_as_finished(&mut self, stage_id: u32, error: Option<String>, will_retry: bool, now: u64) {
        let Some(stage) = self.stages.get_mut(&stage_id) else {
            return;
        };
        let service_time = match stage.latest_info.submission_time {
            Some(t) => format!("{:.3}", now.saturating_sub(t) as f64 / 1000.0),
            None => "Unknown".to_string(),
        };
        let attempt = stage.latest_attempt();
        match error {
            None => {
                tracing::info!(
                    stage_id,
                    stage_attempt = attempt,
                    "{stage} ({}) finished in {service_time} s",
                    stage.name
                );
                stage.latest_info.completion_time = Some(now);
                // Only consecutive failures count towards aborting the stage.
                stage.failed_attempt_ids.clear();
            }
            Some(message) => {
                tracing::info!(
                    stage_id,
                    stage_attempt = attempt,
                    will_retry,
                    "{stage} ({}) failed in {service_time} s due to {message}",
                    stage.name
                );
                stage.latest_info.failure_reason = Some(message);
                stage.latest_info.completion_time = Some(now);
            }
        }
        let stage_info = stage.latest_info.clone();
        self.post(SparkListenerEvent::StageCompleted { stage_info });
        self.running.remove(&stage_id);
    }

    fn process_shuffle_map_stage_completion(&mut self, stage_id: u32, now: u64) {
        self.mark_stage_as_finished(stage_id, None, false, now);
        tracing::info!("looking for newly runnable stages");
        let running = scala_seq("HashSet", self.running.iter().map(|s| self.stage_label(*s)));
        let waiting = scala_seq("HashSet", self.waiting.iter().map(|s| self.stage_label(*s)));
        let failed = scala_seq("HashSet", self.failed.iter().map(|s| self.stage_label(*s)));
        tracing::info!("running: {running}");
        tracing::info!("waiting: {waiting}");
        tracing::info!("failed: {failed}");
        self.tracker.increment_epoch();
        if !self.stage_available(stage_id) {
            let missing = self
                .stages
                .get(&stage_id)
                .and_then(|s| s.shuffle_id())
                .and_then(|sid| self.tracker.find_missing_partitions(sid))
                .unwrap_or_default();
            let missing: Vec<String> = missing.iter().map(|p| p.to_string()).collect();
            let label = self.stage_label_and_name(stage_id);
            tracing::info!(
                stage_id,
                "Resubmitting {label} because some of its tasks had failed: {}",
                missing.join(", ")
            );
            self.submit_stage(stage_id, now);
        } else {
            self.submit_waiting_child_stages(stage_id, now);
        }
    }

    // ---- aborts -----------------------------------------------------------------------

    /// Whether `stage` needs `target`, following only parents whose outputs are missing
    /// (Spark's `stageDependsOn`: an available map stage is not looked into).
    fn stage_depends_on(&self, stage: u32, target: u32) -> bool {
        let mut visited = HashSet::new();
        let mut to_visit = vec![stage];
        while let Some(id) = to_visit.pop() {
            if id == target {
                return true;
            }
            if !visited.insert(id) {
                continue;
            }
            if let Some(s) = self.stages.get(&id) {
                for p in &s.parents {
                    if !self.stage_available(*p) {
                        to_visit.push(*p);
                    }
                }
            }
        }
        false
    }

    /// Fails every active job that needs the stage.
    fn abort_stage(&mut self, stage_id: u32, reason: &str, now: u64) {
        if !self.stages.contains_key(&stage_id) {
            return;
        }
        let dependent: Vec<u32> = self
            .jobs
            .values()
            .filter(|j| self.stage_depends_on(j.final_stage, stage_id))
            .map(|j| j.job_id)
            .collect();
        if let Some(stage) = self.stages.get_mut(&stage_id) {
            stage.latest_info.completion_time = Some(now);
        }
        if dependent.is_empty() {
            let label = self.stage_label(stage_id);
            tracing::info!(
                stage_id,
                "Ignoring failure of {label} because all jobs depending on it are done"
            );
        }
        for job_id in dependent {
            self.fail_job_and_independent_stages(
                job_id,
                format!("Job aborted due to stage failure: {reason}"),
                now,
            );
        }
    }

    // ---- task events ------------------------------------------------------------------

    fn handle_task_completion(&mut self, event: CompletionEvent, now: u64) {
        let CompletionEvent {
            task_id,
            stage_id,
            stage_attempt_id,
            index,
            partition_id,
            is_shuffle_map,
            reason,
            task_info,
            result,
            fetch_source_decommissioned,
        } = event;
        let outcome = match &reason {
            TaskEndReason::Success => Outcome::Success,
            TaskEndReason::FetchFailed {
                executor_id,
                host,
                shuffle_id,
                map_index,
                message,
                ..
            } => Outcome::FetchFailed(FetchFailure {
                executor_id: executor_id.clone(),
                host: host.clone(),
                shuffle_id: *shuffle_id,
                map_index: *map_index,
                message: message.clone(),
                source_decommissioned: fetch_source_decommissioned,
            }),
            TaskEndReason::Resubmitted => Outcome::Resubmitted,
            _ => Outcome::Other,
        };
        // A barrier task's failure (anything but a fetch failure) fails its whole stage
        // attempt: Spark's barrier case comes before Resubmitted and the other reasons.
        let barrier_failure = match outcome {
            Outcome::Resubmitted | Outcome::Other
                if self.stages.get(&stage_id).is_some_and(|s| s.is_barrier()) =>
            {
                Some(reason.error_string())
            }
            _ => None,
        };
        let (value, status, metrics) = match result {
            Some(TaskResult::Value { value, metrics }) => (Some(value), None, Some(metrics)),
            Some(TaskResult::MapStatus { status, metrics }) => (None, Some(status), Some(metrics)),
            None => (None, None, None),
        };
        self.post_task_end(
            stage_id,
            stage_attempt_id,
            is_shuffle_map,
            reason,
            task_info,
            metrics,
        );
        let Some(stage) = self.stages.get(&stage_id) else {
            return;
        };
        let stage_is_map = stage.is_shuffle_map();
        if let Some(error) = barrier_failure {
            let resubmitted = matches!(outcome, Outcome::Resubmitted);
            self.handle_barrier_task_failed(
                task_id,
                stage_id,
                stage_attempt_id,
                partition_id,
                resubmitted,
                error,
                now,
            );
            return;
        }

        match outcome {
            Outcome::Success if stage_is_map => {
                self.map_task_succeeded(task_id, stage_id, stage_attempt_id, partition_id, status, now)
            }
            Outcome::Success => self.result_task_succeeded(
                task_id,
                stage_id,
                stage_attempt_id,
                index,
                partition_id,
                value,
                now,
            ),
            Outcome::FetchFailed(failure) => {
                self.handle_fetch_failed(task_id, stage_id, stage_attempt_id, partition_id, failure, now)
            }
            Outcome::Resubmitted => {
                let task = task_name(stage_is_map, stage_id, partition_id);
                match self.stages.get_mut(&stage_id).map(|s| &mut s.kind) {
                    Some(StageKind::ShuffleMap { pending, .. }) => {
                        tracing::info!(
                            stage_id,
                            task_id,
                            "Resubmitted {task}, so marking it as still running."
                        );
                        pending.insert(partition_id);
                    }
                    _ => tracing::warn!(
                        stage_id,
                        task_id,
                        "TaskSetManagers should only send Resubmitted task statuses \
                         for tasks in ShuffleMapStages ({task})"
                    ),
                }
            }
            // ExceptionFailure, TaskKilled, TaskResultLost, ExecutorLostFailure,
            // UnknownReason: the TaskSetManager retries or aborts.
            Outcome::Other => {}
        }
    }

    /// A task of a barrier stage attempt failed: every task of the attempt is killed, the
    /// attempt fails, a map stage's outputs are all dropped and the stage is resubmitted
    /// (up to `spark.stage.maxConsecutiveAttempts` consecutive failed attempts); a failed
    /// barrier result stage cannot be recovered and aborts its job.
    #[allow(clippy::too_many_arguments)]
    fn handle_barrier_task_failed(
        &mut self,
        task_id: u64,
        stage_id: u32,
        stage_attempt_id: u32,
        partition_id: u32,
        resubmitted: bool,
        error: String,
        now: u64,
    ) {
        let Some(stage) = self.stages.get_mut(&stage_id) else {
            return;
        };
        let task = task_name(stage.is_shuffle_map(), stage_id, partition_id);
        if resubmitted {
            if let StageKind::ShuffleMap { pending, .. } = &mut stage.kind {
                tracing::info!(
                    stage_id,
                    task_id,
                    "Resubmitted {task}, so marking it as still running."
                );
                pending.insert(partition_id);
            }
        }
        let latest = stage.latest_attempt();
        if latest != stage_attempt_id {
            tracing::info!(
                stage_id,
                stage_attempt = stage_attempt_id,
                task_id,
                "Ignoring task failure from {task} as it's from {stage} attempt {stage_attempt_id} and there is a more recent attempt for that stage (attempt {latest}) running"
            );
            return;
        }
        if !self.running.contains(&stage_id) {
            // The attempt already failed with an earlier task (its other tasks end killed).
            tracing::debug!(
                stage_id,
                task_id,
                "Barrier {task} ended after its stage attempt {stage_attempt_id} failed"
            );
            return;
        }
        let (label, name) = (stage.to_string(), stage.name.clone());
        tracing::info!(
            event = "barrier_stage_failed",
            stage_id,
            stage_attempt = stage_attempt_id,
            task_id,
            "Marking {stage_id} ({name}) as failed due to a barrier task failed."
        );
        let message = format!("Stage failed because barrier task {task} finished unsuccessfully.\n{error}");
        self.actions.push(DagAction::KillAllTaskAttempts {
            stage_id,
            reason: format!("Task {task} from barrier stage {label} ({name}) failed."),
        });
        let max = self.config.max_consecutive_attempts;
        let should_abort = match self.stages.get_mut(&stage_id) {
            Some(s) => {
                s.failed_attempt_ids.insert(stage_attempt_id);
                s.failed_attempt_ids.len() >= max as usize
            }
            None => return,
        };
        self.mark_stage_as_finished(stage_id, Some(message.clone()), !should_abort, now);
        if should_abort {
            let reason = format!(
                "{label} ({name}) has failed the maximum allowable number of times: {max}. Most recent failure reason: {message}"
            );
            self.abort_stage(stage_id, &reason, now);
            return;
        }
        match self.stages.get(&stage_id).map(|s| &s.kind) {
            Some(StageKind::ShuffleMap { dep, .. }) => {
                // Every map output goes: the next attempt runs all the tasks again.
                let shuffle_id = dep.shuffle_id;
                self.tracker.unregister_all_map_outputs(shuffle_id);
            }
            Some(StageKind::Result { .. }) => {
                let reason = format!(
                    "Could not recover from a failed barrier ResultStage. Most recent failure reason: {message}"
                );
                self.abort_stage(stage_id, &reason, now);
                return;
            }
            None => return,
        }
        let no_resubmit_enqueued = !self.failed.contains(&stage_id);
        self.failed.insert(stage_id);
        if no_resubmit_enqueued {
            tracing::info!(
                stage_id,
                "Resubmitting {label} ({name}) due to barrier stage failure."
            );
            self.actions.push(DagAction::ScheduleResubmit {
                delay_ms: RESUBMIT_TIMEOUT_MS,
            });
        }
    }

    fn post_task_end(
        &mut self,
        stage_id: u32,
        stage_attempt_id: u32,
        is_shuffle_map: bool,
        reason: TaskEndReason,
        task_info: TaskInfo,
        metrics: Option<TaskMetrics>,
    ) {
        let task_type = if is_shuffle_map {
            "ShuffleMapTask"
        } else {
            "ResultTask"
        };
        self.post(SparkListenerEvent::TaskEnd {
            stage_id,
            stage_attempt_id,
            task_type: task_type.to_string(),
            reason,
            task_info,
            metrics,
        });
    }

    #[allow(clippy::too_many_arguments)]
    fn result_task_succeeded(
        &mut self,
        task_id: u64,
        stage_id: u32,
        stage_attempt_id: u32,
        index: u32,
        partition_id: u32,
        value: Option<Value>,
        now: u64,
    ) {
        let Some(stage) = self.stages.get(&stage_id) else {
            return;
        };
        let StageKind::Result {
            partitions,
            active_job,
            ..
        } = &stage.kind
        else {
            return;
        };
        let output_id = stage
            .attempt(stage_attempt_id)
            .and_then(|a| a.output_ids.get(index as usize).copied())
            .or_else(|| {
                partitions
                    .iter()
                    .position(|p| *p == partition_id)
                    .map(|o| o as u32)
            });
        let Some(job_id) = *active_job else {
            tracing::info!(
                stage_id,
                task_id,
                "Ignoring result from ResultTask({stage_id}, {partition_id}) because its job has finished"
            );
            return;
        };
        let Some(output_id) = output_id else {
            tracing::warn!(
                stage_id,
                task_id,
                "Ignoring result from ResultTask({stage_id}, {partition_id}): unknown output"
            );
            return;
        };
        let Some(job) = self.jobs.get_mut(&job_id) else {
            return;
        };
        if job.is_finished(output_id) {
            return;
        }
        let value = value.unwrap_or_else(|| {
            tracing::warn!(
                job_id,
                stage_id,
                task_id,
                "ResultTask({stage_id}, {partition_id}) succeeded without a value"
            );
            Value::Null
        });
        job.task_succeeded(output_id, value);
        if !job.all_finished() {
            return;
        }
        self.mark_stage_as_finished(stage_id, None, false, now);
        self.cancel_running_independent_stages(job_id, &format!("Job {job_id} is finished."), now);
        let Some(mut job) = self.cleanup_state_for_job_and_independent_stages(job_id) else {
            return;
        };
        tracing::info!(
            job_id,
            stage_id,
            "Job {job_id} is finished. Cancelling potential speculative or zombie tasks for this job"
        );
        self.actions.push(DagAction::KillAllTaskAttempts {
            stage_id,
            reason: STAGE_FINISHED_REASON.to_string(),
        });
        self.post(SparkListenerEvent::JobEnd {
            job_id,
            time: now,
            result: JobResult::JobSucceeded,
        });
        let values = job.take_results();
        self.job_ended(job_id, &job.call_site, job.submitted_ms, now, Ok(values));
    }

    fn map_task_succeeded(
        &mut self,
        task_id: u64,
        stage_id: u32,
        stage_attempt_id: u32,
        partition_id: u32,
        status: Option<MapStatus>,
        now: u64,
    ) {
        let Some(stage) = self.stages.get_mut(&stage_id) else {
            return;
        };
        // An older attempt's output of an indeterminate (barrier) stage is not used.
        if stage_attempt_id < stage.latest_attempt() && stage.is_barrier() {
            tracing::info!(
                stage_id,
                task_id,
                "Ignoring ShuffleMapTask({stage_id}, {partition_id}) completion from attempt {stage_attempt_id} of the indeterminate {stage}"
            );
            return;
        }
        let task_epoch = stage.attempt(stage_attempt_id).map_or(0, |a| a.epoch);
        let StageKind::ShuffleMap { dep, pending } = &mut stage.kind else {
            return;
        };
        pending.remove(partition_id);
        let shuffle_id = dep.shuffle_id;
        let stage_done = pending.is_empty();
        match status {
            Some(status) => {
                let bogus = self
                    .executor_failure_epoch
                    .get(&status.executor_id)
                    .is_some_and(|failed_at| task_epoch <= *failed_at);
                if bogus {
                    tracing::info!(
                        stage_id,
                        task_id,
                        "Ignoring possibly bogus ShuffleMapTask({stage_id}, {partition_id}) completion from executor {}",
                        status.executor_id
                    );
                } else {
                    self.tracker.register_map_output(shuffle_id, partition_id, status);
                }
            }
            None => tracing::warn!(
                stage_id,
                task_id,
                "ShuffleMapTask({stage_id}, {partition_id}) succeeded without a map status"
            ),
        }
        if stage_done && self.running.contains(&stage_id) {
            self.process_shuffle_map_stage_completion(stage_id, now);
        }
    }

    fn handle_fetch_failed(
        &mut self,
        task_id: u64,
        stage_id: u32,
        stage_attempt_id: u32,
        partition_id: u32,
        failure: FetchFailure,
        now: u64,
    ) {
        let FetchFailure {
            executor_id,
            host,
            shuffle_id,
            map_index,
            message,
            source_decommissioned,
        } = failure;
        let map_stage = self.shuffle_to_stage.get(&shuffle_id).copied();
        let Some(failed_stage) = self.stages.get_mut(&stage_id) else {
            return;
        };
        let task = task_name(failed_stage.is_shuffle_map(), stage_id, partition_id);
        let latest = failed_stage.latest_attempt();
        if latest != stage_attempt_id {
            tracing::info!(
                stage_id,
                stage_attempt = stage_attempt_id,
                task_id,
                "Ignoring fetch failure from {task} as it's from {failed_stage} attempt {stage_attempt_id} \
                 and there is a more recent attempt for that stage (attempt {latest}) running"
            );
            return;
        }
        // A fetch failure from a decommissioning executor may not count towards the stage's
        // consecutive failed attempts.
        if source_decommissioned && self.config.ignore_decommission_fetch_failure {
            tracing::info!(
                stage_id,
                stage_attempt = stage_attempt_id,
                task_id,
                "Ignoring fetch failure from {task} of {failed_stage} attempt {stage_attempt_id} when count spark.stage.maxConsecutiveAttempts as executor {} is decommissioned and  spark.stage.ignoreDecommissionFetchFailure=true",
                executor_id.as_deref().unwrap_or("")
            );
        } else {
            failed_stage.failed_attempt_ids.insert(stage_attempt_id);
        }
        let should_abort =
            failed_stage.failed_attempt_ids.len() >= self.config.max_consecutive_attempts as usize;
        let task_epoch = failed_stage.attempt(stage_attempt_id).map_or(0, |a| a.epoch);
        let failed_label = format!("{failed_stage} ({})", failed_stage.name);
        let map_label = match map_stage {
            Some(m) => self.stage_label_and_name(m),
            None => format!("shuffle {shuffle_id}"),
        };

        if self.running.contains(&stage_id) {
            tracing::info!(
                stage_id,
                stage_attempt = stage_attempt_id,
                task_id,
                "Marking {failed_label} as failed due to a fetch failure from {map_label}"
            );
            self.mark_stage_as_finished(stage_id, Some(message.clone()), !should_abort, now);
        } else {
            tracing::debug!(
                stage_id,
                task_id,
                "Received fetch failure from {task}, but it's from {failed_label} which is no longer running"
            );
        }

        // A barrier map stage reruns all its tasks: every output of it goes.
        if map_stage
            .and_then(|m| self.stages.get(&m))
            .is_some_and(|s| s.is_barrier())
        {
            self.tracker.unregister_all_map_outputs(shuffle_id);
        } else {
            self.tracker.unregister_map_output(
                shuffle_id,
                map_index,
                executor_id.as_deref(),
                host.as_deref(),
            );
        }
        let failed_barrier = self
            .stages
            .get(&stage_id)
            .filter(|s| s.is_barrier())
            .map(|s| match &s.kind {
                StageKind::ShuffleMap { dep, .. } => Some(dep.shuffle_id),
                StageKind::Result { .. } => None,
            });
        match failed_barrier {
            Some(Some(own_shuffle)) => self.tracker.unregister_all_map_outputs(own_shuffle),
            Some(None) => {
                let reason = format!(
                    "Could not recover from a failed barrier ResultStage. Most recent failure reason: {message}"
                );
                self.abort_stage(stage_id, &reason, now);
            }
            None => {}
        }

        if should_abort {
            let reason = format!(
                "{failed_label} has failed the maximum allowable number of times: {}. \
                 Most recent failure reason:\n{message}",
                self.config.max_consecutive_attempts
            );
            self.abort_stage(stage_id, &reason, now);
        } else {
            let no_resubmit_enqueued = !self.failed.contains(&stage_id);
            self.failed.insert(stage_id);
            if let Some(m) = map_stage {
                self.failed.insert(m);
            }
            if no_resubmit_enqueued {
                tracing::info!(
                    stage_id,
                    "Resubmitting {map_label} and {failed_label} due to fetch failure"
                );
                self.actions.push(DagAction::ScheduleResubmit {
                    delay_ms: RESUBMIT_TIMEOUT_MS,
                });
            }
        }

        if let Some(exec) = executor_id {
            let host_to_unregister = if self.config.external_shuffle_service
                && self.config.unregister_output_on_host_on_fetch_failure
            {
                host
            } else {
                None
            };
            self.remove_executor_and_unregister_outputs(&exec, true, host_to_unregister, Some(task_epoch));
        }
    }

    // ---- executors --------------------------------------------------------------------

    fn handle_executor_lost(&mut self, executor_id: &str, worker_host: Option<String>) {
        let file_lost = worker_host.is_some() || !self.config.external_shuffle_service;
        self.remove_executor_and_unregister_outputs(executor_id, file_lost, worker_host, None);
    }

    fn remove_executor_and_unregister_outputs(
        &mut self,
        executor_id: &str,
        file_lost: bool,
        host_to_unregister: Option<String>,
        maybe_epoch: Option<u64>,
    ) {
        let current_epoch = maybe_epoch.unwrap_or_else(|| self.tracker.epoch());
        if self
            .executor_failure_epoch
            .get(executor_id)
            .is_none_or(|e| *e < current_epoch)
        {
            self.executor_failure_epoch
                .insert(executor_id.to_string(), current_epoch);
            tracing::info!(
                executor_id,
                "Executor lost: {executor_id} (epoch {current_epoch})"
            );
        }
        if file_lost
            && self
                .shuffle_file_lost_epoch
                .get(executor_id)
                .is_none_or(|e| *e < current_epoch)
        {
            self.shuffle_file_lost_epoch
                .insert(executor_id.to_string(), current_epoch);
            match host_to_unregister {
                Some(host) => {
                    tracing::info!(
                        executor_id,
                        "Shuffle files lost for host: {host} (epoch {current_epoch})"
                    );
                    self.tracker.remove_outputs_on_host(&host);
                }
                None => {
                    tracing::info!(
                        executor_id,
                        "Shuffle files lost for executor: {executor_id} (epoch {current_epoch})"
                    );
                    self.tracker.remove_outputs_on_executor(executor_id);
                }
            }
        }
    }

    fn handle_executor_added(&mut self, executor_id: &str, host: &str) {
        if self.executor_failure_epoch.remove(executor_id).is_some() {
            tracing::info!(executor_id, "Host added was in lost list earlier: {host}");
        }
        self.shuffle_file_lost_epoch.remove(executor_id);
    }
}

/// `ShuffleMapTask(1, 0)` / `ResultTask(2, 0)`, as Spark's Task toString.
fn task_name(is_shuffle_map: bool, stage_id: u32, partition_id: u32) -> String {
    if is_shuffle_map {
        format!("ShuffleMapTask({stage_id}, {partition_id})")
    } else {
        format!("ResultTask({stage_id}, {partition_id})")
    }
}

/// A Scala collection's toString: `List(a, b)`.
fn scala_seq(prefix: &str, items: impl Iterator<Item = String>) -> String {
    let mut s = String::from(prefix);
    s.push('(');
    for (i, item) in items.enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        let _ = write!(s, "{item}");
    }
    s.push(')');
    s
}

/// A millisecond count as Scala prints a Double (`123.0`).
fn scala_double(ms: u64) -> String {
    format!("{:?}", ms as f64)
}
