//! ExecutorAllocationManager's rules as a pure state machine (Spark's
//! ExecutorAllocationManager with its ExecutorAllocationListener; the idle tracking is the
//! [`ExecutorMonitor`]). Every method takes the time; nothing here sends a message.
//!
//! Layer: scheduler (the Spark side: the driver's schedulers, above rdd).
//!
//! - **What is needed**: `maxNeeded = ceil((pending + pendingSpeculative + running) × ratio /
//!   tasksPerExecutor)`, plus one when a single executor would do but a speculative copy
//!   waits (it must run on another executor). Pending tasks of a stage attempt are its tasks
//!   whose index has not started; running tasks are counted per stage attempt until the last
//!   one ends, even after the attempt completed.
//! - **The target** (`schedule`, every 100 ms): while initializing (until the first stage is
//!   submitted or an executor times out) it does not move. When fewer are needed than
//!   targeted, it drops to `max(maxNeeded, minExecutors)` at once and the ramp-up resets.
//!   When the backlog has lasted `schedulerBacklogTimeout` (then every
//!   `sustainedSchedulerBacklogTimeout`), it grows by `numExecutorsToAdd` from
//!   `max(target, executors)`, capped by `maxNeeded` and bounded by min/max; when the whole
//!   increment was granted the next one doubles (1, 2, 4, 8, ...), otherwise it is back to 1.
//!   The backlog clock starts when a stage is submitted, a task fails (and nothing else is
//!   pending) or a speculative task is submitted; it stops when nothing is pending.
//! - **Idle executors** (`select_removals`): those the monitor timed out are removed one by
//!   one while the executors left stay at least `minExecutors` and at least the target.
//!
//! - **Placement hints**: each submitted stage attempt counts its tasks that prefer some
//!   location and, per host, the tasks that prefer it (from the StageInfo's task locality
//!   preferences); every request of a total carries their sums over the active stage
//!   attempts (`localityAwareTasks`, `hostToLocalTaskCount`), which the AM's placement
//!   strategy turns into container requests on those hosts. They change when stages are
//!   submitted and completed, not as tasks start.
//! - **Reset** (the cluster manager re-registered): the target goes back to the initial
//!   number, the ramp-up to 1, the backlog clock to "due now", and the monitor forgets every
//!   executor (the stale ones are removed by the backend).
//!
//! A round's target change is applied when it is decided, as Spark's synchronized
//! `schedule()` does; the actor then asks the cluster manager, and `request_answered` keeps
//! it (logging an `executor_target` record) or rolls it back. While a round's requests are
//! in flight (`busy`), later rounds wait, as Spark's blocking request makes them wait.

use std::collections::{BTreeMap, BTreeSet};

use super::monitor::{ExecutorMonitor, MonitorConfig};
use crate::conf::{self, SparkConf};
use crate::scheduler::events::{SparkListenerEvent, TaskEndReason};

/// The manager's settings (times in milliseconds).
#[derive(Clone, Debug, PartialEq)]
pub struct AllocationConfig {
    pub min_executors: u32,
    pub max_executors: u32,
    /// max(minExecutors, initialExecutors, spark.executor.instances).
    pub initial_executors: u32,
    pub executor_allocation_ratio: f64,
    /// Executor cores / task cpus (at least 1).
    pub tasks_per_executor: u32,
    pub scheduler_backlog_timeout_ms: u64,
    pub sustained_scheduler_backlog_timeout_ms: u64,
    pub monitor: MonitorConfig,
    /// `spark.decommission.enabled`: idle executors are decommissioned instead of killed.
    pub decommission_enabled: bool,
}

impl AllocationConfig {
    /// Spark's settings from the configuration (validated before the application starts).
    pub fn from_conf(conf: &SparkConf) -> Self {
        let ms = |e: &conf::TimeEntry, dflt: u64| {
            conf.get(e)
                .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
                .unwrap_or(dflt)
        };
        let cores = conf.get(&conf::EXECUTOR_CORES).unwrap_or(1).max(1);
        let task_cpus = conf.get(&conf::CPUS_PER_TASK).unwrap_or(1).max(1);
        let shuffle_service = conf.get(&conf::SHUFFLE_SERVICE_ENABLED).unwrap_or(false);
        AllocationConfig {
            min_executors: conf.get(&conf::DYN_ALLOCATION_MIN_EXECUTORS).unwrap_or(0),
            max_executors: conf
                .get(&conf::DYN_ALLOCATION_MAX_EXECUTORS)
                .unwrap_or(i32::MAX as u32),
            initial_executors: crate::scheduler::backend_utils::initial_target_executors(conf),
            executor_allocation_ratio: conf
                .get(&conf::DYN_ALLOCATION_EXECUTOR_ALLOCATION_RATIO)
                .unwrap_or(1.0),
            tasks_per_executor: (cores / task_cpus).max(1),
            scheduler_backlog_timeout_ms: ms(&conf::DYN_ALLOCATION_SCHEDULER_BACKLOG_TIMEOUT, 1_000),
            sustained_scheduler_backlog_timeout_ms: ms(
                &conf::DYN_ALLOCATION_SUSTAINED_SCHEDULER_BACKLOG_TIMEOUT,
                1_000,
            ),
            monitor: MonitorConfig {
                idle_timeout_ms: ms(&conf::DYN_ALLOCATION_EXECUTOR_IDLE_TIMEOUT, 60_000),
                // With an external shuffle service the output outlives the executor.
                shuffle_tracking: !shuffle_service
                    && conf
                        .get(&conf::DYN_ALLOCATION_SHUFFLE_TRACKING_ENABLED)
                        .unwrap_or(true),
                shuffle_timeout_ms: ms(&conf::DYN_ALLOCATION_SHUFFLE_TRACKING_TIMEOUT, u64::MAX),
            },
            decommission_enabled: conf.get(&conf::DECOMMISSION_ENABLED).unwrap_or(false),
        }
    }
}

/// One request of a total to the cluster manager, and what it was decided on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TargetRequest {
    pub total: u32,
    pub previous: u32,
    pub needed: u32,
    pub pending_tasks: u32,
    pub running_tasks: u32,
    /// `backlog` (tasks waiting), `not needed` (fewer tasks than executors), `initial`, or
    /// a re-sync.
    pub reason: &'static str,
    pub decided_at: u64,
    /// The placement hints when the request was made: tasks with a locality preference, and
    /// per host the tasks preferring it.
    pub locality_aware_tasks: u32,
    pub host_to_local_task_count: BTreeMap<String, u32>,
    /// The ramp-up as it was before this decision (restored if the request fails).
    saved_ramp: (u32, Option<u64>),
}

/// What one round of `schedule()` decided.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Round {
    /// A new total to request.
    pub request: Option<TargetRequest>,
    /// Executors past their idle time-out, with how long they have been idle (the
    /// candidates; `select_removals` picks among them once the request is answered).
    pub expired: Vec<(String, u64)>,
}

impl Round {
    pub fn is_empty(&self) -> bool {
        self.request.is_none() && self.expired.is_empty()
    }
}

/// The listener's view of one stage attempt.
#[derive(Clone, Debug, Default)]
struct StageAttempt {
    num_tasks: u32,
    /// Indices whose regular attempt started (and did not fail).
    started: BTreeSet<u32>,
    /// Indices submitted for speculation whose copy has not started.
    pending_speculative: BTreeSet<u32>,
}

/// A stage attempt's placement hints: its tasks with a locality preference, and per host
/// the tasks preferring it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct PlacementHints {
    locality_aware_tasks: u32,
    host_to_local_task_count: BTreeMap<String, u32>,
}

/// What the ExecutorAllocationManager is sent, through its durable inbox
/// (`runtime::Inbox`): the bus's events as its listener saw them, and the scheduler
/// backend's reset. The actor applies them to its core in the order they were posted.
#[derive(Clone, Debug, PartialEq)]
pub enum AllocationMessage {
    /// A bus event, at `time`; for a TaskStart, whether the backend had the task's executor
    /// active when the listener saw it (ExecutorAllocationClient.isExecutorActive).
    Event {
        event: Box<SparkListenerEvent>,
        time: u64,
        executor_active: bool,
    },
    /// YarnSchedulerBackend.reset (a new ApplicationMaster registered): [`ExecutorAllocationManagerCore::reset`].
    Reset,
}

/// The ExecutorAllocationManager's state; see the module docs.
#[derive(Clone, Debug)]
pub struct ExecutorAllocationManagerCore {
    config: AllocationConfig,
    monitor: ExecutorMonitor,
    target: u32,
    to_add: u32,
    add_time: Option<u64>,
    initializing: bool,
    stages: BTreeMap<(u32, u32), StageAttempt>,
    running: BTreeMap<(u32, u32), u32>,
    /// Placement hints per active stage attempt (stageAttemptToExecutorPlacementHints).
    placement_hints: BTreeMap<(u32, u32), PlacementHints>,
    busy: bool,
}

impl ExecutorAllocationManagerCore {
    pub fn new(config: AllocationConfig) -> Self {
        ExecutorAllocationManagerCore {
            monitor: ExecutorMonitor::new(config.monitor.clone()),
            target: config.initial_executors,
            to_add: 1,
            add_time: None,
            initializing: true,
            stages: BTreeMap::new(),
            running: BTreeMap::new(),
            placement_hints: BTreeMap::new(),
            busy: false,
            config,
        }
    }

    pub fn config(&self) -> &AllocationConfig {
        &self.config
    }
    pub fn monitor(&self) -> &ExecutorMonitor {
        &self.monitor
    }
    /// numExecutorsTarget.
    pub fn target(&self) -> u32 {
        self.target
    }
    /// numExecutorsToAdd: the next round's increment.
    pub fn to_add(&self) -> u32 {
        self.to_add
    }
    /// When the backlog next adds executors (None: no backlog).
    pub fn add_time(&self) -> Option<u64> {
        self.add_time
    }
    pub fn is_initializing(&self) -> bool {
        self.initializing
    }
    /// Whether a round's requests are in flight.
    pub fn is_busy(&self) -> bool {
        self.busy
    }

    // ----- the listener's counts -------------------------------------------------------------

    /// Tasks not started yet, over the active stage attempts.
    pub fn pending_tasks(&self) -> u32 {
        self.stages
            .values()
            .map(|s| s.num_tasks.saturating_sub(s.started.len() as u32))
            .sum()
    }

    /// Speculative copies submitted and not started.
    pub fn pending_speculative_tasks(&self) -> u32 {
        self.stages
            .values()
            .map(|s| s.pending_speculative.len() as u32)
            .sum()
    }

    /// Running tasks, over every stage attempt that still has some.
    pub fn running_tasks(&self) -> u32 {
        self.running.values().sum()
    }

    /// localityAwareTasks: the tasks of the active stage attempts that prefer a location.
    pub fn locality_aware_tasks(&self) -> u32 {
        self.placement_hints
            .values()
            .map(|h| h.locality_aware_tasks)
            .sum()
    }

    /// hostToLocalTaskCount: per host, the tasks of the active stage attempts preferring it.
    pub fn host_to_local_task_count(&self) -> BTreeMap<String, u32> {
        let mut counts = BTreeMap::new();
        for (host, n) in self
            .placement_hints
            .values()
            .flat_map(|h| &h.host_to_local_task_count)
        {
            *counts.entry(host.clone()).or_insert(0) += n;
        }
        counts
    }

    fn has_pending_tasks(&self) -> bool {
        self.stages
            .values()
            .any(|s| s.num_tasks > s.started.len() as u32 || !s.pending_speculative.is_empty())
    }

    /// maxNumExecutorsNeeded.
    pub fn max_needed(&self) -> u32 {
        let pending_speculative = self.pending_speculative_tasks();
        let tasks = u64::from(self.pending_tasks())
            + u64::from(pending_speculative)
            + u64::from(self.running_tasks());
        let per_executor = f64::from(self.config.tasks_per_executor.max(1));
        let needed = (tasks as f64 * self.config.executor_allocation_ratio / per_executor).ceil();
        let needed = if needed >= f64::from(u32::MAX) {
            u32::MAX
        } else {
            needed as u32
        };
        if self.config.tasks_per_executor > 1 && needed == 1 && pending_speculative > 0 {
            // The speculative copy must run on another executor than the original.
            2
        } else {
            needed
        }
    }

    fn on_scheduler_backlogged(&mut self, now: u64) {
        if self.add_time.is_none() {
            tracing::debug!(
                "Starting timer to add executors because pending tasks are building up (to expire in {} ms)",
                self.config.scheduler_backlog_timeout_ms
            );
            self.add_time = Some(now.saturating_add(self.config.scheduler_backlog_timeout_ms));
        }
    }

    fn on_scheduler_queue_empty(&mut self) {
        if self.add_time.is_some() {
            tracing::debug!("Clearing timer to add executors because there are no more pending tasks");
        }
        self.add_time = None;
        self.to_add = 1;
    }

    /// One listener event (ExecutorAllocationListener and ExecutorMonitor).
    /// `executor_active` is the backend's isExecutorActive, asked for a task start's
    /// executor.
    pub fn on_event(&mut self, event: &SparkListenerEvent, now: u64, executor_active: &dyn Fn(&str) -> bool) {
        match event {
            SparkListenerEvent::StageSubmitted { stage_info, .. } => {
                self.initializing = false;
                let key = (stage_info.stage_id, stage_info.attempt_id);
                self.stages.entry(key).or_default().num_tasks = stage_info.num_tasks;
                self.on_scheduler_backlogged(now);
                let mut hints = PlacementHints::default();
                for locations in stage_info
                    .task_locality_preferences
                    .iter()
                    .filter(|l| !l.is_empty())
                {
                    hints.locality_aware_tasks += 1;
                    for location in locations {
                        *hints
                            .host_to_local_task_count
                            .entry(location.host().to_string())
                            .or_insert(0) += 1;
                    }
                }
                self.placement_hints.insert(key, hints);
            }
            SparkListenerEvent::StageCompleted { stage_info } => {
                // Running tasks of the attempt stay counted until they end.
                let key = (stage_info.stage_id, stage_info.attempt_id);
                self.stages.remove(&key);
                self.placement_hints.remove(&key);
                if self.stages.is_empty() {
                    self.on_scheduler_queue_empty();
                }
            }
            SparkListenerEvent::TaskStart {
                stage_id,
                stage_attempt_id,
                task_info,
            } => {
                let key = (*stage_id, *stage_attempt_id);
                *self.running.entry(key).or_insert(0) += 1;
                if let Some(s) = self.stages.get_mut(&key) {
                    if task_info.speculative {
                        s.pending_speculative.remove(&task_info.index);
                    } else {
                        s.started.insert(task_info.index);
                    }
                }
                if !self.has_pending_tasks() {
                    self.on_scheduler_queue_empty();
                }
                let active = executor_active(&task_info.executor_id);
                self.monitor.task_started(&task_info.executor_id, active, now);
            }
            SparkListenerEvent::TaskEnd {
                stage_id,
                stage_attempt_id,
                task_type,
                reason,
                task_info,
                ..
            } => {
                let key = (*stage_id, *stage_attempt_id);
                if let Some(n) = self.running.get_mut(&key) {
                    *n = n.saturating_sub(1);
                    if *n == 0 {
                        self.running.remove(&key);
                    }
                }
                match reason {
                    TaskEndReason::Success => {
                        // The regular attempt won before the copy started.
                        if let Some(s) = self.stages.get_mut(&key) {
                            s.pending_speculative.remove(&task_info.index);
                        }
                    }
                    TaskEndReason::TaskKilled { .. } => {}
                    _ => {
                        // It will run again (SPARK-8366): the backlog is back.
                        if !self.has_pending_tasks() {
                            self.on_scheduler_backlogged(now);
                        }
                        if !task_info.speculative {
                            if let Some(s) = self.stages.get_mut(&key) {
                                s.started.remove(&task_info.index);
                            }
                        }
                    }
                }
                let map_output = (matches!(reason, TaskEndReason::Success) && task_type == "ShuffleMapTask")
                    .then_some(*stage_id);
                self.monitor.task_ended(&task_info.executor_id, map_output, now);
            }
            SparkListenerEvent::SpeculativeTaskSubmitted {
                stage_id,
                stage_attempt_id,
                task_index,
            } => {
                if let Some(s) = self.stages.get_mut(&(*stage_id, *stage_attempt_id)) {
                    s.pending_speculative.insert(*task_index);
                }
                self.on_scheduler_backlogged(now);
            }
            SparkListenerEvent::ExecutorAdded {
                executor_id,
                resource_profile_id,
                ..
            } => {
                self.monitor
                    .executor_added(executor_id, *resource_profile_id, now);
                tracing::info!(
                    executor_id = executor_id.as_str(),
                    "New executor {executor_id} has registered (new total is {})",
                    self.monitor.executor_count()
                );
            }
            SparkListenerEvent::ExecutorRemoved { executor_id, .. }
                if self.monitor.executor_removed(executor_id) =>
            {
                tracing::info!(
                    executor_id = executor_id.as_str(),
                    "Existing executor {executor_id} has been removed (new total is {})",
                    self.monitor.executor_count()
                );
            }
            SparkListenerEvent::JobStart {
                job_id, stage_infos, ..
            } => {
                self.monitor
                    .job_started(*job_id, stage_infos.iter().map(|s| s.stage_id).collect());
            }
            SparkListenerEvent::JobEnd { job_id, .. } => self.monitor.job_ended(*job_id),
            _ => {}
        }
    }

    // ----- the schedule loop -----------------------------------------------------------------

    fn request(
        &self,
        previous: u32,
        reason: &'static str,
        now: u64,
        saved_ramp: (u32, Option<u64>),
    ) -> TargetRequest {
        TargetRequest {
            total: self.target,
            previous,
            needed: self.max_needed(),
            pending_tasks: self.pending_tasks() + self.pending_speculative_tasks(),
            running_tasks: self.running_tasks(),
            reason,
            decided_at: now,
            locality_aware_tasks: self.locality_aware_tasks(),
            host_to_local_task_count: self.host_to_local_task_count(),
            saved_ramp,
        }
    }

    /// Spark's start(): the first request, of the initial target.
    pub fn initial_request(&self) -> TargetRequest {
        self.request(self.target, "initial", 0, (self.to_add, self.add_time))
    }

    /// The current target as a request (the re-sync after a kill, SPARK-21834).
    pub fn current_request(&self, reason: &'static str) -> TargetRequest {
        self.request(self.target, reason, 0, (self.to_add, self.add_time))
    }

    /// One round of schedule(): the executors timed out, and the target's update. Nothing
    /// while an earlier round's requests are in flight.
    pub fn schedule(&mut self, now: u64) -> Round {
        if self.busy {
            return Round::default();
        }
        let expired = self.monitor.timed_out_executors(now);
        if !expired.is_empty() {
            self.initializing = false;
        }
        let request = self.update_target(now);
        let round = Round { request, expired };
        self.busy = !round.is_empty();
        round
    }

    /// updateAndSyncNumExecutorsTarget, without the request itself.
    fn update_target(&mut self, now: u64) -> Option<TargetRequest> {
        if self.initializing {
            return None;
        }
        let needed = self.max_needed();
        let old = self.target;
        let saved = (self.to_add, self.add_time);
        let reason = if needed < self.target {
            // Fewer are needed: lower the target now, kill nobody (idle time-outs do that).
            self.target = needed.max(self.config.min_executors);
            self.to_add = 1;
            "not needed"
        } else if self.add_time.is_some_and(|t| now >= t) {
            self.add_executors(needed);
            "backlog"
        } else {
            return None;
        };
        if self.target == old {
            return None;
        }
        let delta = i64::from(self.target) - i64::from(old);
        if delta > 0 {
            // As if acknowledged (rolled back by `request_answered` if not).
            self.to_add = if delta == i64::from(saved.0) {
                saved.0.saturating_mul(2)
            } else {
                1
            };
            self.add_time = Some(now.saturating_add(self.config.sustained_scheduler_backlog_timeout_ms));
        }
        Some(self.request(old, reason, now, saved))
    }

    /// addExecutors: raises the target by this round's increment.
    fn add_executors(&mut self, needed: u32) {
        let c = &self.config;
        if self.target >= c.max_executors {
            tracing::debug!(
                "Not adding executors because our current target total is already {} (limit {})",
                self.target,
                c.max_executors
            );
            self.to_add = 1;
            return;
        }
        let mut t = self.target.max(self.monitor.executor_count());
        t = t.saturating_add(self.to_add);
        t = t.min(needed);
        t = t.min(c.max_executors).max(c.min_executors);
        if t == self.target {
            self.to_add = 1;
        }
        self.target = t;
    }

    /// The cluster manager's answer to a round's request: keep the target (and log it as an
    /// `executor_target` record) or roll it back.
    pub fn request_answered(&mut self, req: &TargetRequest, acknowledged: bool) {
        if acknowledged {
            let delta = i64::from(req.total) - i64::from(req.previous);
            let message = if delta > 0 {
                format!(
                    "Requesting {delta} new executor{} because tasks are backlogged (new desired total will be {})",
                    if delta > 1 { "s" } else { "" },
                    req.total
                )
            } else {
                format!(
                    "Lowering target number of executors to {} (previously {}) because not all requested executors are actually needed",
                    req.total, req.previous
                )
            };
            let hosts: Vec<String> = req
                .host_to_local_task_count
                .iter()
                .map(|(host, n)| format!("{host}:{n}"))
                .collect();
            tracing::info!(
                event = "executor_target",
                target = req.total,
                previous = req.previous,
                needed = req.needed,
                pending_tasks = req.pending_tasks,
                running_tasks = req.running_tasks,
                reason = req.reason,
                next_increment = self.to_add,
                locality_aware_tasks = req.locality_aware_tasks,
                host_to_local_task_count = hosts.join(",").as_str(),
                "{message}"
            );
        } else {
            tracing::warn!(
                target = req.total,
                previous = req.previous,
                "Unable to reach the cluster manager to request {} total executors!",
                req.total
            );
            if self.target == req.total {
                self.target = req.previous;
                (self.to_add, self.add_time) = req.saved_ramp;
            }
        }
    }

    /// removeExecutors' choice among the timed-out executors: each is removed only if the
    /// executors left (not already being removed) stay at least the minimum and at least the
    /// target. Logs an `executor_idle_remove` record for each one chosen.
    pub fn select_removals(&mut self, expired: &[(String, u64)]) -> Vec<String> {
        let min = self.config.min_executors;
        let mut left = self
            .monitor
            .executor_count()
            .saturating_sub(self.monitor.pending_removal_count());
        let mut chosen = Vec::new();
        for (id, idle_ms) in expired {
            let still_idle = self
                .monitor
                .tracker(id)
                .is_some_and(|t| !t.pending_removal && t.running_tasks == 0);
            if !still_idle {
                continue;
            }
            if left.saturating_sub(1) < min || left == 0 {
                tracing::debug!(
                    executor_id = id.as_str(),
                    "Not removing idle executor {id} because there are only {left} executor(s) left (minimum number of executor limit {min})"
                );
            } else if left - 1 < self.target {
                tracing::debug!(
                    executor_id = id.as_str(),
                    "Not removing idle executor {id} because there are only {left} executor(s) left (number of executor target {})",
                    self.target
                );
            } else {
                left -= 1;
                tracing::info!(
                    event = "executor_idle_remove",
                    executor_id = id.as_str(),
                    idle_ms = *idle_ms,
                    executors_left = left,
                    target = self.target,
                    "Removing executor {id} because it has been idle for {idle_ms} ms (new desired total will be {left})"
                );
                chosen.push(id.clone());
            }
        }
        chosen
    }

    /// The driver's answer to a kill (or, with `spark.decommission.enabled`, a
    /// decommission): those named are being removed. (Spark's monitor marks decommissioned
    /// executors apart from killed ones; every rule here treats both the same: no idle
    /// time-out, not counted among the executors left.)
    pub fn kill_answered(&mut self, requested: &[String], killed: &[String]) {
        self.monitor.executors_killed(killed);
        if killed.is_empty() {
            tracing::warn!(
                executors = requested.join(",").as_str(),
                "Unable to reach the cluster manager to kill executor/s {} or no executor eligible to kill!",
                requested.join(",")
            );
        } else {
            tracing::info!(
                executors = killed.join(",").as_str(),
                "Executors {} removed due to idle timeout.",
                killed.join(",")
            );
        }
    }

    /// reset(), when the cluster manager re-registers (a new ApplicationMaster): the target
    /// goes back to the initial number and the ramp-up to 1, executors are due to be added at
    /// the next round if tasks are backlogged (Spark's `addTime = 0`), and the monitor
    /// forgets every executor, with the ones being removed. The listener's task counts stay.
    pub fn reset(&mut self) {
        let previous = self.target;
        self.add_time = Some(0);
        self.target = self.config.initial_executors;
        self.to_add = 1;
        self.monitor.reset();
        tracing::info!(
            target = self.target,
            previous,
            "Reset the executor allocation: target back to the initial {} executor(s) (previously {previous}), executors forgotten",
            self.target
        );
    }

    /// Applies what the actor was sent (see [`AllocationMessage`]).
    pub fn apply(&mut self, msg: AllocationMessage) {
        match msg {
            AllocationMessage::Event {
                event,
                time,
                executor_active,
            } => self.on_event(&event, time, &|_| executor_active),
            AllocationMessage::Reset => self.reset(),
        }
    }

    /// The round's requests are all answered (or abandoned): the next round may run.
    pub fn round_done(&mut self) {
        self.busy = false;
    }
}

#[cfg(test)]
mod tests;
