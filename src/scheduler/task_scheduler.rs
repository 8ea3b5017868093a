//! The TaskSchedulerImpl: Spark's task scheduler as a plain, synchronous, deterministic state
//! machine. Spark's is a synchronized object; this one is a plain struct owned by one actor,
//! the DriverEndpoint (which keeps it across its restarts); the DAGScheduler reaches it with
//! [`TaskSchedulerCommand`]s and the speculation timer with a tick. It reads no clock (every
//! call takes `now_ms`, milliseconds since the Unix epoch), starts no timer and sends
//! nothing: what Spark's TaskSchedulerImpl and its TaskSetManagers tell the DAGScheduler and
//! the backend accumulates as [`SchedulerEvent`]s that the owner drains with
//! [`TaskSchedulerImpl::take_events`] after each call: DAGSchedulerEvents as they are
//! (`ExecutorAdded`, `BeginEvent`, `CompletionEvent` with the task's result,
//! `TaskSetFailed`, `SpeculativeTaskSubmitted`, `ExecutorLost`), and the backend's `KillTask`
//! and `ReviveOffers`. The revive timer, the speculation timer (`spark.speculation.interval`)
//! and the starvation timer (`spark.starvation.timeout`) belong to the owner: it calls
//! [`TaskSchedulerImpl::resource_offers`], [`TaskSchedulerImpl::check_speculatable_tasks`]
//! and [`TaskSchedulerImpl::is_starving`].
//!
//! Layer: scheduler (the Spark side: the driver's schedulers, above rdd).
//!
//! It holds one [`TaskSetManager`] per submitted stage attempt in FIFO order (job id, then
//! stage id), the task-id counter (from 0), the task → task set and executor → running tasks
//! maps, and the host and rack maps behind locality.
//!
//! Costs: an offer round costs O(task sets × locality levels × offers) plus the launches; a
//! status update costs a few hash lookups. The FIFO order is re-sorted only when task sets
//! come or go, and locality levels are recomputed only when executors come or go. Nothing per
//! offer or per status update is linear in the number of tasks or executors (the executor
//! loss and the speculation check walk the lost executor's and the running attempts).
//!
//! Decommissioning executors (`executor_decommission`) stay offered by nobody (the backend
//! offers only active executors), stop counting for locality, and a task likely to outlive
//! one is speculated with `spark.executor.decommission.killInterval`.
//!
//! A barrier task set is launched only when each of its tasks gets an offer in the same
//! round (Spark's `barrierPendingLaunchTasks`); otherwise its picks are taken back.
//!
//! Not modelled (as for the TaskSetManager): FAIR pools, excludeOnFailure and
//! its abort timer, custom resources and resource profiles, task result
//! fetching (the result size arrives with the FINISHED update).
//! `kill_all_task_attempts` also suspends the stage's task sets, as Spark 4 does.

use std::sync::Arc;

use super::dag_scheduler::DagEvent;
use super::events::TaskLocality;
use super::loss_reason::ExecutorLossReason;
use super::task::KillTask;
use super::task_set::{SchedulerEvent, TaskLaunch, TaskSet, TaskUpdate, WorkerOffer};
use super::task_set_manager::{
    ClusterView, Ctx, FailedState, FastMap, FastSet, SpeculationConfig, TaskSetManager, TsmConfig,
};

/// The settings the task scheduler reads, with Spark's defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskSchedulerConfig {
    /// `spark.task.maxFailures` (4).
    pub max_task_failures: u32,
    /// `spark.task.cpus` (1).
    pub cpus_per_task: u32,
    /// `spark.locality.wait.process` (= `spark.locality.wait`, 3 s).
    pub locality_wait_process_ms: u64,
    /// `spark.locality.wait.node` (3 s).
    pub locality_wait_node_ms: u64,
    /// `spark.locality.wait.rack` (3 s).
    pub locality_wait_rack_ms: u64,
    /// `spark.locality.wait.legacyResetOnTaskLaunch` (false).
    pub legacy_locality_reset: bool,
    /// `spark.speculation.*`.
    pub speculation: SpeculationConfig,
    /// `spark.driver.maxResultSize` in bytes (1 GiB); 0 = unlimited.
    pub max_result_size: u64,
    /// `spark.executor.cores` if set (for the speculation duration-threshold rule; unset = 1
    /// slot per executor, as Spark assumes when the cores are unknown).
    pub executor_cores: Option<u32>,
    /// `spark.shuffle.service.enabled` (false).
    pub external_shuffle_service: bool,
    /// `spark.starvation.timeout` (15 s): the period of the warning that no task of the
    /// first task set has launched.
    pub starvation_timeout_ms: u64,
    /// `spark.executor.decommission.killInterval` (unset): see [`TsmConfig`].
    pub executor_decommission_kill_interval_ms: Option<u64>,
}

impl Default for TaskSchedulerConfig {
    fn default() -> Self {
        TaskSchedulerConfig {
            max_task_failures: 4,
            cpus_per_task: 1,
            locality_wait_process_ms: 3000,
            locality_wait_node_ms: 3000,
            locality_wait_rack_ms: 3000,
            legacy_locality_reset: false,
            speculation: SpeculationConfig::default(),
            max_result_size: 1 << 30,
            executor_cores: None,
            external_shuffle_service: false,
            starvation_timeout_ms: 15_000,
            executor_decommission_kill_interval_ms: None,
        }
    }
}

impl TaskSchedulerConfig {
    /// What each TaskSetManager reads.
    pub fn tsm_config(&self) -> TsmConfig {
        TsmConfig {
            max_task_failures: self.max_task_failures,
            locality_wait_process_ms: self.locality_wait_process_ms,
            locality_wait_node_ms: self.locality_wait_node_ms,
            locality_wait_rack_ms: self.locality_wait_rack_ms,
            legacy_locality_wait_reset: self.legacy_locality_reset,
            speculation: self.speculation.clone(),
            max_result_size: self.max_result_size,
            external_shuffle_service: self.external_shuffle_service,
            executor_decommission_kill_interval_ms: self.executor_decommission_kill_interval_ms,
        }
    }
}

/// Resolves a host's rack (Spark's `getRackForHost`; YARN's topology script). `None`: no rack.
pub type RackResolver = Box<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// A tiny seeded xorshift64* generator for shuffling offers.
#[derive(Clone, Debug)]
struct XorShift(u64);

impl XorShift {
    fn new(seed: u64) -> Self {
        XorShift(if seed == 0 { 0x9E37_79B9_7F4A_7C15 } else { seed })
    }

    fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (n > 0).
    fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }
}

/// A decommissioning executor (Spark's ExecutorDecommissionState): since when, and the host
/// if the whole host goes away with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExecutorDecommissionState {
    pub start_time_ms: u64,
    pub worker_host: Option<String>,
}

/// An executor the scheduler has seen offered and not lost (`executorIdToRunningTaskIds`).
#[derive(Debug)]
struct ExecutorState {
    id: Arc<str>,
    running: FastSet<u64>,
}

/// Executors, hosts and racks: what locality is computed from.
struct Cluster {
    rack_of: RackResolver,
    executor_cores: Option<u32>,
    /// Alive executors with their running task ids.
    executors: FastMap<Arc<str>, ExecutorState>,
    /// `executorIdToHost`: kept while a loss reason is pending.
    executor_hosts: FastMap<String, String>,
    /// `hostToExecutors`.
    host_executors: FastMap<String, FastSet<String>>,
    /// `hostsByRack`.
    rack_hosts: FastMap<String, FastSet<String>>,
    /// The rack of each host seen in an offer (resolved once).
    host_rack: FastMap<String, Option<String>>,
    /// Executors being decommissioned (`executorsPendingDecommission`).
    decommissioning: FastMap<String, ExecutorDecommissionState>,
}

impl Cluster {
    fn rack_of_host(&mut self, host: &str) -> Option<String> {
        if let Some(rack) = self.host_rack.get(host) {
            return rack.clone();
        }
        let rack = (self.rack_of)(host);
        self.host_rack.insert(host.to_string(), rack.clone());
        rack
    }

    fn add_executor(&mut self, exec: &str, host: &str) {
        let id: Arc<str> = Arc::from(exec);
        self.executors.insert(
            Arc::clone(&id),
            ExecutorState {
                id,
                running: FastSet::default(),
            },
        );
        self.executor_hosts.insert(exec.to_string(), host.to_string());
        match self.host_executors.get_mut(host) {
            Some(set) => {
                set.insert(exec.to_string());
            }
            None => {
                let mut set = FastSet::default();
                set.insert(exec.to_string());
                self.host_executors.insert(host.to_string(), set);
            }
        }
        if let Some(rack) = self.rack_of_host(host) {
            self.rack_hosts.entry(rack).or_default().insert(host.to_string());
        }
    }
}

impl Cluster {
    fn is_decommissioned(&self, exec: &str) -> bool {
        self.decommissioning.contains_key(exec)
    }

    /// Some executor of the host is decommissioned with the host (`isHostDecommissioned`).
    fn is_host_decommissioned(&self, host: &str) -> bool {
        self.host_executors.get(host).is_some_and(|execs| {
            execs.iter().any(|e| {
                self.decommissioning
                    .get(e)
                    .is_some_and(|d| d.worker_host.is_some())
            })
        })
    }
}

impl ClusterView for Cluster {
    /// Offered, not lost and not decommissioning.
    fn is_executor_alive(&self, exec: &str) -> bool {
        self.executors.contains_key(exec) && !self.is_decommissioned(exec)
    }

    fn has_executors_alive_on_host(&self, host: &str) -> bool {
        self.host_executors
            .get(host)
            .is_some_and(|s| s.iter().any(|e| !self.is_decommissioned(e)))
    }

    fn rack_for_host(&self, host: &str) -> Option<String> {
        match self.host_rack.get(host) {
            Some(rack) => rack.clone(),
            None => (self.rack_of)(host),
        }
    }

    fn has_hosts_alive_on_rack(&self, rack: &str) -> bool {
        self.rack_hosts
            .get(rack)
            .is_some_and(|s| s.iter().any(|h| !self.is_host_decommissioned(h)))
    }

    fn executor_cores(&self) -> Option<u32> {
        self.executor_cores
    }

    fn decommission_start(&self, exec: &str) -> Option<u64> {
        self.decommissioning.get(exec).map(|d| d.start_time_ms)
    }
}

/// A task set manager and the scheduler's per-set delay-timer flag.
struct Managed {
    tsm: TaskSetManager,
    /// No delay-scheduling reject since the timer was last reset (`noRejectsSinceLastReset`).
    no_rejects_since_last_reset: bool,
}

fn update_name(update: &TaskUpdate) -> &'static str {
    match update {
        TaskUpdate::Running => "RUNNING",
        TaskUpdate::Finished { .. } => "FINISHED",
        TaskUpdate::Failed(_) => "FAILED",
        TaskUpdate::Killed(_) => "KILLED",
        TaskUpdate::Lost(_) => "LOST",
    }
}

/// What the DAGScheduler asks of the TaskScheduler (Spark's `TaskScheduler.submitTasks`,
/// `killAllTaskAttempts`, `cancelTasks`), posted to the owner's durable inbox in order.
#[derive(Clone, Debug)]
pub enum TaskSchedulerCommand {
    /// Add a stage attempt's task set, then revive offers.
    SubmitTasks(TaskSet),
    /// Kill every running attempt of the stage's task sets, which launch nothing more.
    KillAllTaskAttempts { stage_id: u32, reason: String },
    /// Kill the stage's running attempts and abort its task sets.
    CancelTasks { stage_id: u32, reason: String },
}

/// Spark's TaskSchedulerImpl. See the module documentation.
pub struct TaskSchedulerImpl {
    config: TaskSchedulerConfig,
    tsm_config: TsmConfig,
    cluster: Cluster,
    managers: FastMap<u64, Managed>,
    /// Manager ids per stage, oldest attempt first (`taskSetsByStageIdAndAttempt`).
    stages: FastMap<u32, Vec<u64>>,
    /// Manager ids in FIFO order; rebuilt only when task sets come or go.
    sorted: Vec<u64>,
    sorted_dirty: bool,
    next_manager_id: u64,
    next_task_id: u64,
    /// Running task id → (manager id, executor id) (`taskIdToTaskSetManager`,
    /// `taskIdToExecutorId`).
    tasks: FastMap<u64, (u64, Arc<str>)>,
    events: Vec<SchedulerEvent>,
    rng: XorShift,
    scratch_order: Vec<usize>,
    scratch_cpus: Vec<u32>,
    has_launched_task: bool,
    /// A task set was submitted (`hasReceivedTask`).
    has_received_task: bool,
    /// Offers looked at plus the work of removed managers (for the bounded-work test).
    work: u64,
}

impl TaskSchedulerImpl {
    /// A scheduler with no executors and no task sets. `rack_of` resolves a host's rack;
    /// `seed` seeds the offer shuffle.
    pub fn new(config: TaskSchedulerConfig, rack_of: RackResolver, seed: u64) -> Self {
        let tsm_config = config.tsm_config();
        let executor_cores = config.executor_cores;
        TaskSchedulerImpl {
            config,
            tsm_config,
            cluster: Cluster {
                rack_of,
                executor_cores,
                executors: FastMap::default(),
                executor_hosts: FastMap::default(),
                host_executors: FastMap::default(),
                rack_hosts: FastMap::default(),
                host_rack: FastMap::default(),
                decommissioning: FastMap::default(),
            },
            managers: FastMap::default(),
            stages: FastMap::default(),
            sorted: Vec::new(),
            sorted_dirty: false,
            next_manager_id: 0,
            next_task_id: 0,
            tasks: FastMap::default(),
            events: Vec::new(),
            rng: XorShift::new(seed),
            scratch_order: Vec::new(),
            scratch_cpus: Vec::new(),
            has_launched_task: false,
            has_received_task: false,
            work: 0,
        }
    }

    pub fn config(&self) -> &TaskSchedulerConfig {
        &self.config
    }

    /// The events accumulated since the last call, in order. A CompletionEvent of a fetch
    /// failure says whether the executor it names is decommissioning (what Spark's
    /// DAGScheduler asks through `getExecutorDecommissionState`).
    pub fn take_events(&mut self) -> Vec<SchedulerEvent> {
        let mut events = std::mem::take(&mut self.events);
        for ev in &mut events {
            if let SchedulerEvent::Dag(DagEvent::CompletionEvent(c)) = ev {
                if let super::events::TaskEndReason::FetchFailed {
                    executor_id: Some(exec),
                    ..
                } = &c.reason
                {
                    c.fetch_source_decommissioned = self.cluster.decommissioning.contains_key(exec);
                }
            }
        }
        events
    }

    // ----- task sets -------------------------------------------------------------------------

    /// Spark's `submitTasks`: a manager for the set; older attempts of the stage become
    /// zombies; `ReviveOffers`.
    pub fn submit_tasks(&mut self, task_set: TaskSet, now_ms: u64) {
        tracing::info!(
            stage_id = task_set.stage_id,
            stage_attempt = task_set.stage_attempt_id,
            "Adding task set {} with {} tasks resource profile 0",
            task_set.id(),
            task_set.tasks.len()
        );
        let stage = task_set.stage_id;
        let tsm = TaskSetManager::new(task_set, self.tsm_config.clone(), &self.cluster, now_ms);
        let id = self.next_manager_id;
        self.next_manager_id += 1;
        let older = self.stages.entry(stage).or_default();
        let older_ids = older.clone();
        older.push(id);
        for old in &older_ids {
            if let Some(m) = self.managers.get_mut(old) {
                m.tsm.mark_zombie();
            }
        }
        self.managers.insert(
            id,
            Managed {
                tsm,
                no_rejects_since_last_reset: true,
            },
        );
        self.sorted_dirty = true;
        self.has_received_task = true;
        for old in older_ids {
            self.finish_if_done(old);
        }
        self.events.push(SchedulerEvent::ReviveOffers);
    }

    /// The manager of a stage attempt, if it is still tracked.
    pub fn task_set_manager(&self, stage_id: u32, stage_attempt_id: u32) -> Option<&TaskSetManager> {
        self.stage_managers(stage_id)
            .rev()
            .filter_map(|id| self.managers.get(&id))
            .map(|m| &m.tsm)
            .find(|t| t.stage_attempt() == stage_attempt_id)
    }

    /// The active stage attempts' progress, by stage id (what Spark's AppStatusStore
    /// answers the ConsoleProgressBar): every task set that is not a zombie, with its
    /// finished and running tasks. Linear in the task sets, not in their tasks.
    pub fn stage_progress(&self) -> Vec<super::console_progress_bar::StageProgress> {
        let mut stages: Vec<_> = self
            .managers
            .values()
            .filter(|m| !m.tsm.is_zombie())
            .map(|m| super::console_progress_bar::StageProgress {
                stage_id: m.tsm.stage_id(),
                stage_attempt: m.tsm.stage_attempt(),
                num_tasks: m.tsm.num_tasks() as u32,
                completed: m.tsm.tasks_successful() as u32,
                active: m.tsm.running_tasks() as u32,
                submission_time_ms: m.tsm.submission_time_ms(),
            })
            .collect();
        stages.sort_by_key(|s| (s.stage_id, s.stage_attempt));
        stages
    }

    /// Task sets still tracked (running or pending work).
    pub fn num_task_sets(&self) -> usize {
        self.managers.len()
    }

    /// Some task set has a task waiting for a launch (or a speculative copy to start).
    pub fn has_pending_tasks(&self) -> bool {
        self.managers.values().any(|m| m.tsm.has_pending_tasks())
    }

    /// Tasks waiting for a launch over all task sets (speculative copies not counted).
    pub fn num_pending_tasks(&self) -> usize {
        self.managers.values().map(|m| m.tsm.num_pending_tasks()).sum()
    }

    /// Some offer has launched a task since the scheduler was created (`hasLaunchedTask`).
    pub fn has_launched_task(&self) -> bool {
        self.has_launched_task
    }

    /// A task set has been submitted since the scheduler was created (`hasReceivedTask`):
    /// the first one starts the starvation timer.
    pub fn has_received_task(&self) -> bool {
        self.has_received_task
    }

    /// Tasks were submitted and none has launched yet: what the starvation timer warns
    /// about, every `spark.starvation.timeout`, until it is false.
    pub fn is_starving(&self) -> bool {
        self.has_received_task && !self.has_launched_task
    }

    // ----- offers ----------------------------------------------------------------------------

    /// Spark's `resourceOffers`: new executors are recorded (`ExecutorAdded`, locality
    /// recomputed), offers shuffled, and each task set in FIFO order gets, level by level of
    /// its valid localities, repeated passes over the offers that still have `cpus_per_task`
    /// cores until a pass launches nothing. `is_all_free_resources`: the offers are all the
    /// free cores of all executors (the periodic revive), which matters for the delay-timer
    /// reset rule. The launches are returned in decision order (`TaskStarted` events too).
    pub fn resource_offers(
        &mut self,
        offers: &[WorkerOffer],
        is_all_free_resources: bool,
        now_ms: u64,
    ) -> Vec<TaskLaunch> {
        let mut new_executor = false;
        for o in offers {
            if !self.cluster.executors.contains_key(o.executor_id.as_str()) {
                self.cluster.add_executor(&o.executor_id, &o.host);
                tracing::debug!(
                    executor_id = %o.executor_id,
                    host = %o.host,
                    "Executor {} on {} added to the task scheduler",
                    o.executor_id,
                    o.host
                );
                self.events.push(SchedulerEvent::Dag(DagEvent::ExecutorAdded {
                    executor_id: o.executor_id.clone(),
                    host: o.host.clone(),
                }));
                new_executor = true;
            }
        }
        let mut launches = Vec::new();
        if offers.is_empty() {
            return launches;
        }
        self.ensure_sorted();
        if new_executor {
            for id in &self.sorted {
                if let Some(m) = self.managers.get_mut(id) {
                    m.tsm.executor_added(&self.cluster);
                }
            }
        }
        if self.sorted.is_empty() {
            return launches;
        }

        let mut order = std::mem::take(&mut self.scratch_order);
        order.clear();
        order.extend(0..offers.len());
        for i in (1..order.len()).rev() {
            let j = self.rng.below(i + 1);
            order.swap(i, j);
        }
        let mut cpus = std::mem::take(&mut self.scratch_cpus);
        cpus.clear();
        cpus.extend(order.iter().map(|&i| offers.get(i).map_or(0, |o| o.cores)));
        let cpt = self.config.cpus_per_task.max(1);
        let legacy = self.config.legacy_locality_reset;

        let TaskSchedulerImpl {
            managers,
            cluster,
            tasks,
            next_task_id,
            events,
            sorted,
            work,
            ..
        } = self;
        for id in sorted.iter() {
            let Some(m) = managers.get_mut(id) else {
                continue;
            };
            *work += 1;
            if !m.tsm.is_schedulable() {
                continue;
            }
            let barrier = m.tsm.is_barrier();
            if barrier {
                // Every task of a barrier set needs a slot in this round, or none launches.
                let slots: usize = cpus.iter().map(|c| (c / cpt) as usize).sum();
                let needed = m.tsm.num_tasks();
                if slots < needed {
                    tracing::info!(
                        stage_id = m.tsm.stage_id(),
                        "Skip current round of resource offers for barrier stage {} because the barrier taskSet requires {needed} slots, while the total number of available slots is {slots}.",
                        m.tsm.stage_id()
                    );
                    continue;
                }
            }
            // Barrier tasks picked this round: (offer slot, index, locality).
            let mut picked: Vec<(usize, u32, TaskLocality)> = Vec::new();
            let levels = m.tsm.locality_levels();
            let mut launched_any = false;
            let mut no_rejects = true;
            let mut min_locality: Option<TaskLocality> = None;
            for &max_locality in levels.as_slice() {
                loop {
                    // resourceOfferSingleTaskSet
                    let mut launched_here = false;
                    for (slot, &oi) in order.iter().enumerate() {
                        *work += 1;
                        let (Some(free), Some(offer)) = (cpus.get_mut(slot), offers.get(oi)) else {
                            continue;
                        };
                        if *free < cpt {
                            continue;
                        }
                        if barrier {
                            let (pick, rejected) = m.tsm.barrier_resource_offer(
                                &offer.executor_id,
                                &offer.host,
                                max_locality,
                                &*cluster,
                                now_ms,
                            );
                            no_rejects &= !rejected;
                            let Some((index, locality)) = pick else { continue };
                            *free -= cpt;
                            launched_here = true;
                            min_locality = Some(min_locality.map_or(locality, |l| l.min(locality)));
                            picked.push((slot, index, locality));
                            continue;
                        }
                        let (launch, rejected) = {
                            let mut ctx = Ctx {
                                view: &*cluster,
                                events: &mut *events,
                                now_ms,
                            };
                            m.tsm.resource_offer(
                                &offer.executor_id,
                                &offer.host,
                                max_locality,
                                cpt,
                                next_task_id,
                                &mut ctx,
                            )
                        };
                        no_rejects &= !rejected;
                        let Some(launch) = launch else { continue };
                        *free -= cpt;
                        launched_here = true;
                        min_locality = Some(min_locality.map_or(launch.locality, |l| l.min(launch.locality)));
                        let exec_id = match cluster.executors.get_mut(offer.executor_id.as_str()) {
                            Some(es) => {
                                es.running.insert(launch.task_id);
                                Arc::clone(&es.id)
                            }
                            None => Arc::from(offer.executor_id.as_str()),
                        };
                        tasks.insert(launch.task_id, (*id, exec_id));
                        launches.push(launch);
                    }
                    if !launched_here {
                        break;
                    }
                    launched_any = true;
                }
            }
            if !legacy {
                if no_rejects {
                    if launched_any && (is_all_free_resources || m.no_rejects_since_last_reset) {
                        m.tsm.reset_delay_schedule_timer(min_locality, now_ms);
                        m.no_rejects_since_last_reset = true;
                    }
                } else {
                    m.no_rejects_since_last_reset = false;
                }
            }
            if launched_any && barrier {
                let needed = m.tsm.num_tasks();
                if picked.len() != needed {
                    // Some task found no offer its locality allows: none launches. (Spark
                    // aborts the set instead under the legacy locality reset; there a
                    // barrier set's locality wait is 0, so with the slots counted above
                    // every task finds a place unless custom resources run out, which
                    // sparkyard does not have.)
                    m.tsm.revert_barrier_tasks(now_ms);
                    // The picked slots' cores are free again.
                    for (slot, _, _) in &picked {
                        if let Some(free) = cpus.get_mut(*slot) {
                            *free += cpt;
                        }
                    }
                } else {
                    for (slot, index, locality) in picked {
                        let Some(offer) = order.get(slot).and_then(|oi| offers.get(*oi)) else {
                            continue;
                        };
                        let launch = {
                            let mut ctx = Ctx {
                                view: &*cluster,
                                events: &mut *events,
                                now_ms,
                            };
                            m.tsm.launch_barrier_task(
                                &offer.executor_id,
                                &offer.host,
                                (index, locality),
                                cpt,
                                next_task_id,
                                &mut ctx,
                            )
                        };
                        let exec_id = match cluster.executors.get_mut(offer.executor_id.as_str()) {
                            Some(es) => {
                                es.running.insert(launch.task_id);
                                Arc::clone(&es.id)
                            }
                            None => Arc::from(offer.executor_id.as_str()),
                        };
                        tasks.insert(launch.task_id, (*id, exec_id));
                        launches.push(launch);
                    }
                    tracing::info!(
                        stage_id = m.tsm.stage_id(),
                        "Successfully scheduled all the {needed} tasks for barrier stage {}.",
                        m.tsm.stage_id()
                    );
                }
            }
        }

        self.scratch_order = order;
        self.scratch_cpus = cpus;
        if !launches.is_empty() {
            self.has_launched_task = true;
        }
        launches
    }

    // ----- status updates --------------------------------------------------------------------

    /// Spark's `statusUpdate`. RUNNING ends the attempt's LAUNCHING phase; FINISHED goes to
    /// `handleSuccessfulTask` (with the result-size check); FAILED / KILLED / LOST to
    /// `handleFailedTask`, after which a live set whose index has not succeeded gets
    /// `ReviveOffers`. LOST also marks the executor lost (Spark's legacy Mesos rule). An
    /// unknown task id (duplicate update, executor already removed) is logged and ignored.
    /// Answers whether the task was known (only then do its cores come back).
    pub fn status_update(&mut self, task_id: u64, update: TaskUpdate, now_ms: u64) -> bool {
        let Some((manager, exec)) = self.tasks.get(&task_id).map(|(m, e)| (*m, Arc::clone(e))) else {
            tracing::error!(
                task_id,
                "Ignoring update with state {} for TID {} because its task set is gone (this is likely the \
                 result of receiving duplicate task finished status updates) or its executor has been \
                 marked as failed.",
                update_name(&update),
                task_id
            );
            return false;
        };
        match update {
            TaskUpdate::Running => {
                if let Some(m) = self.managers.get_mut(&manager) {
                    m.tsm.mark_task_running(task_id);
                }
            }
            TaskUpdate::Finished { result_size, result } => {
                self.cleanup_task_state(task_id);
                if let Some(m) = self.managers.get_mut(&manager) {
                    let mut ctx = Ctx {
                        view: &self.cluster,
                        events: &mut self.events,
                        now_ms,
                    };
                    m.tsm
                        .handle_successful_task(task_id, result_size, Some(result), &mut ctx);
                }
                self.finish_if_done(manager);
            }
            TaskUpdate::Failed(reason) => {
                self.cleanup_task_state(task_id);
                self.handle_failed_task(manager, task_id, FailedState::Failed, reason, now_ms);
            }
            TaskUpdate::Killed(reason) => {
                self.cleanup_task_state(task_id);
                self.handle_failed_task(manager, task_id, FailedState::Killed, reason, now_ms);
            }
            TaskUpdate::Lost(reason) => {
                let mut lost = None;
                if self.cluster.executors.contains_key(&*exec) {
                    let loss = ExecutorLossReason::process_lost(format!(
                        "Task {task_id} was lost, so marking the executor as lost as well."
                    ));
                    self.remove_executor(&exec, &loss, now_ms);
                    lost = Some(loss);
                }
                self.cleanup_task_state(task_id);
                self.handle_failed_task(manager, task_id, FailedState::Lost, reason, now_ms);
                if let Some(loss) = lost {
                    self.events.push(SchedulerEvent::Dag(DagEvent::ExecutorLost {
                        executor_id: exec.to_string(),
                        reason: loss,
                    }));
                    self.events.push(SchedulerEvent::ReviveOffers);
                }
            }
        }
        true
    }

    fn handle_failed_task(
        &mut self,
        manager: u64,
        task_id: u64,
        state: FailedState,
        reason: super::events::TaskEndReason,
        now_ms: u64,
    ) {
        if let Some(m) = self.managers.get_mut(&manager) {
            let mut ctx = Ctx {
                view: &self.cluster,
                events: &mut self.events,
                now_ms,
            };
            m.tsm.handle_failed_task(task_id, state, reason, &mut ctx);
            if !m.tsm.is_zombie() && !m.tsm.some_attempt_succeeded(task_id) {
                self.events.push(SchedulerEvent::ReviveOffers);
            }
        }
        self.finish_if_done(manager);
    }

    /// Forgets a finished task id (`cleanupTaskState`).
    fn cleanup_task_state(&mut self, task_id: u64) {
        if let Some((_, exec)) = self.tasks.remove(&task_id) {
            if let Some(es) = self.cluster.executors.get_mut(&*exec) {
                es.running.remove(&task_id);
            }
        }
    }

    /// Spark's `handlePartitionCompleted` (the DAGScheduler's `notifyPartitionCompletion`): an
    /// older attempt finished `partition`; the stage's live task sets skip it.
    pub fn mark_partition_completed(&mut self, stage_id: u32, partition_id: u32) {
        let ids: Vec<u64> = self.stage_managers(stage_id).collect();
        for id in ids {
            if let Some(m) = self.managers.get_mut(&id) {
                if !m.tsm.is_zombie() {
                    m.tsm.mark_partition_completed(partition_id);
                }
            }
            self.finish_if_done(id);
        }
    }

    // ----- executors -------------------------------------------------------------------------

    /// Spark's `executorLost`. A tracked executor is removed: its running task ids are
    /// forgotten (later updates for them are ignored), and the DAGScheduler is told
    /// (`ExecutorLost`, then `ReviveOffers`). The task sets hear of it (they fail or resubmit
    /// its tasks) only with a known reason: after `LossReasonPending`, the second call with
    /// the real reason informs the task sets without telling the DAGScheduler again.
    pub fn executor_lost(&mut self, executor_id: &str, reason: &ExecutorLossReason, now_ms: u64) {
        let host = self.cluster.executor_hosts.get(executor_id).cloned();
        if self.cluster.executors.contains_key(executor_id) {
            log_executor_loss(executor_id, host.as_deref().unwrap_or(""), reason);
            self.remove_executor(executor_id, reason, now_ms);
            self.events.push(SchedulerEvent::Dag(DagEvent::ExecutorLost {
                executor_id: executor_id.to_string(),
                reason: reason.clone(),
            }));
            self.events.push(SchedulerEvent::ReviveOffers);
        } else if let Some(host) = host {
            log_executor_loss(executor_id, &host, reason);
            self.remove_executor(executor_id, reason, now_ms);
        } else {
            tracing::error!(
                executor_id,
                "Lost an executor {executor_id} (already removed): {reason}"
            );
        }
    }

    /// Spark's `removeExecutor`.
    fn remove_executor(&mut self, executor_id: &str, reason: &ExecutorLossReason, now_ms: u64) {
        if let Some(es) = self.cluster.executors.remove(executor_id) {
            tracing::debug!(
                executor_id,
                "Cleaning up TaskScheduler state for {} tasks on failed executor {executor_id}",
                es.running.len()
            );
            for tid in es.running {
                self.tasks.remove(&tid);
            }
        }
        let host = self
            .cluster
            .executor_hosts
            .get(executor_id)
            .cloned()
            .unwrap_or_default();
        let host_empty = match self.cluster.host_executors.get_mut(&host) {
            Some(execs) => {
                execs.remove(executor_id);
                execs.is_empty()
            }
            None => true,
        };
        if host_empty {
            self.cluster.host_executors.remove(&host);
            if let Some(Some(rack)) = self.cluster.host_rack.get(&host).cloned() {
                if let Some(hosts) = self.cluster.rack_hosts.get_mut(&rack) {
                    hosts.remove(&host);
                    if hosts.is_empty() {
                        self.cluster.rack_hosts.remove(&rack);
                    }
                }
            }
        }
        self.cluster.decommissioning.remove(executor_id);
        if *reason != ExecutorLossReason::LossReasonPending {
            self.cluster.executor_hosts.remove(executor_id);
            self.ensure_sorted();
            let ids = self.sorted.clone();
            for id in &ids {
                if let Some(m) = self.managers.get_mut(id) {
                    let mut ctx = Ctx {
                        view: &self.cluster,
                        events: &mut self.events,
                        now_ms,
                    };
                    m.tsm.executor_lost(executor_id, &host, reason, &mut ctx);
                }
            }
            for id in ids {
                self.finish_if_done(id);
            }
        }
    }

    /// Executors seen in offers and not lost, sorted.
    pub fn executor_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.cluster.executors.keys().map(|k| k.to_string()).collect();
        ids.sort();
        ids
    }

    pub fn num_executors(&self) -> usize {
        self.cluster.executors.len()
    }

    /// Spark's `isExecutorAlive`: offered, not lost and not decommissioning.
    pub fn is_executor_alive(&self, executor_id: &str) -> bool {
        self.cluster.is_executor_alive(executor_id)
    }

    /// Spark's `getExecutorsAliveOnHost`: the executors of `host` not lost and not
    /// decommissioning, sorted (`None` for a host with no executor known).
    pub fn executors_alive_on_host(&self, host: &str) -> Option<Vec<String>> {
        let execs = self.cluster.host_executors.get(host)?;
        let mut alive: Vec<String> = execs
            .iter()
            .filter(|e| !self.cluster.is_decommissioned(e))
            .cloned()
            .collect();
        alive.sort();
        Some(alive)
    }

    /// Spark's `executorDecommission`: a known executor is noted as decommissioning from
    /// `now_ms` (it stops counting for locality; a task likely to outlive it may be
    /// speculated), every task set recomputes its locality levels, and offers are revived.
    pub fn executor_decommission(&mut self, executor_id: &str, worker_host: Option<String>, now_ms: u64) {
        if self.cluster.executor_hosts.contains_key(executor_id) {
            self.cluster.decommissioning.insert(
                executor_id.to_string(),
                ExecutorDecommissionState {
                    start_time_ms: now_ms,
                    worker_host,
                },
            );
        }
        self.ensure_sorted();
        for id in &self.sorted {
            if let Some(m) = self.managers.get_mut(id) {
                m.tsm.executor_decommission(&self.cluster);
            }
        }
        self.events.push(SchedulerEvent::ReviveOffers);
    }

    /// Spark's `getExecutorDecommissionState`.
    pub fn executor_decommission_state(&self, executor_id: &str) -> Option<ExecutorDecommissionState> {
        self.cluster.decommissioning.get(executor_id).cloned()
    }

    /// Spark's `isExecutorBusy`: it has running tasks.
    pub fn is_executor_busy(&self, executor_id: &str) -> bool {
        self.cluster
            .executors
            .get(executor_id)
            .is_some_and(|e| !e.running.is_empty())
    }

    /// How many tasks run on the executor.
    pub fn running_tasks(&self, executor_id: &str) -> usize {
        self.cluster
            .executors
            .get(executor_id)
            .map_or(0, |e| e.running.len())
    }

    /// The task ids running on the executor, ascending.
    pub fn running_task_ids(&self, executor_id: &str) -> Vec<u64> {
        let mut ids: Vec<u64> = self
            .cluster
            .executors
            .get(executor_id)
            .map(|e| e.running.iter().copied().collect())
            .unwrap_or_default();
        ids.sort_unstable();
        ids
    }

    /// Running tasks per executor (Spark's `runningTasksByExecutors`), sorted by executor id.
    pub fn running_tasks_by_executors(&self) -> Vec<(String, usize)> {
        let mut v: Vec<(String, usize)> = self
            .cluster
            .executors
            .iter()
            .map(|(k, e)| (k.to_string(), e.running.len()))
            .collect();
        v.sort();
        v
    }

    // ----- kills and aborts ------------------------------------------------------------------

    /// Spark's `killTaskAttempt`: a `KillTask` event if the task runs; false otherwise.
    pub fn kill_task_attempt(&mut self, task_id: u64, interrupt_thread: bool, reason: &str) -> bool {
        tracing::info!(task_id, "Killing task {task_id}: {reason}");
        match self.tasks.get(&task_id) {
            Some((_, exec)) => {
                self.events.push(SchedulerEvent::KillTask(KillTask {
                    task_id,
                    executor_id: exec.to_string(),
                    interrupt_thread,
                    reason: reason.to_string(),
                }));
                true
            }
            None => {
                tracing::warn!(
                    task_id,
                    "Could not kill task {task_id} because no task with that ID was found."
                );
                false
            }
        }
    }

    /// Spark's `killAllTaskAttempts`: `KillTask` (no interrupt, `reason`) for every running
    /// attempt of every task set of the stage; the task sets launch nothing more (Spark 4's
    /// `suspend`).
    pub fn kill_all_task_attempts(&mut self, stage_id: u32, reason: &str) {
        self.kill_all_inner(stage_id, reason, true);
        for id in self.stage_managers(stage_id).collect::<Vec<_>>() {
            self.finish_if_done(id);
        }
    }

    fn kill_all_inner(&mut self, stage_id: u32, reason: &str, suspend: bool) {
        tracing::info!(
            stage_id,
            "Killing all running tasks in stage {stage_id}: {reason}"
        );
        let ids: Vec<u64> = self.stage_managers(stage_id).collect();
        for id in ids {
            let Some(m) = self.managers.get_mut(&id) else {
                continue;
            };
            for tid in m.tsm.running_task_ids() {
                if let Some((_, exec)) = self.tasks.get(&tid) {
                    self.events.push(SchedulerEvent::KillTask(KillTask {
                        task_id: tid,
                        executor_id: exec.to_string(),
                        interrupt_thread: false,
                        reason: reason.to_string(),
                    }));
                }
            }
            if suspend {
                m.tsm.suspend();
            }
        }
    }

    /// Spark 3's `cancelTasks`: kill every running attempt of the stage (reason
    /// `Stage cancelled: <reason>`) and abort its task sets with `Stage <n> cancelled`.
    pub fn cancel_tasks(&mut self, stage_id: u32, reason: &str) {
        tracing::info!(stage_id, "Cancelling stage {stage_id}");
        self.kill_all_inner(stage_id, &format!("Stage cancelled: {reason}"), false);
        let ids: Vec<u64> = self.stage_managers(stage_id).collect();
        for id in &ids {
            if let Some(m) = self.managers.get_mut(id) {
                m.tsm
                    .abort(&format!("Stage {stage_id} cancelled"), &mut self.events);
                tracing::info!(stage_id, "Stage {stage_id} was cancelled");
            }
        }
        for id in ids {
            self.finish_if_done(id);
        }
    }

    /// Aborts one stage attempt's task set with `message` (`TaskSetFailed`), as the backend
    /// does for a task too big to send. Returns whether the set was found.
    pub fn abort_task_set(&mut self, stage_id: u32, stage_attempt_id: u32, message: &str) -> bool {
        let found = self.stage_managers(stage_id).rev().find(|id| {
            self.managers
                .get(id)
                .is_some_and(|m| m.tsm.stage_attempt() == stage_attempt_id)
        });
        let Some(id) = found else {
            tracing::warn!(
                stage_id,
                stage_attempt = stage_attempt_id,
                "Cannot abort unknown task set {stage_id}.{stage_attempt_id}: {message}"
            );
            return false;
        };
        if let Some(m) = self.managers.get_mut(&id) {
            m.tsm.abort(message, &mut self.events);
        }
        self.finish_if_done(id);
        true
    }

    // ----- speculation -----------------------------------------------------------------------

    /// Spark's `checkSpeculatableTasks` (run every `spark.speculation.interval` when
    /// speculation is on): marks slow tasks speculatable in every task set; `ReviveOffers` if
    /// any was found.
    pub fn check_speculatable_tasks(&mut self, now_ms: u64) -> bool {
        if !self.config.speculation.enabled {
            return false;
        }
        self.ensure_sorted();
        let min_time = self.config.speculation.min_task_runtime_ms;
        let mut found = false;
        for id in &self.sorted {
            if let Some(m) = self.managers.get_mut(id) {
                let mut ctx = Ctx {
                    view: &self.cluster,
                    events: &mut self.events,
                    now_ms,
                };
                found |= !m.tsm.check_speculatable_tasks(min_time, &mut ctx).is_empty();
            }
        }
        if found {
            self.events.push(SchedulerEvent::ReviveOffers);
        }
        found
    }

    /// Pending-list entries, map keys, task sets and offers examined so far (a cost counter
    /// for tests: it grows with the number of tasks, not with their square).
    pub fn work_counter(&self) -> u64 {
        self.work + self.managers.values().map(|m| m.tsm.work_counter()).sum::<u64>()
    }

    // ----- internals -------------------------------------------------------------------------

    fn stage_managers(&self, stage_id: u32) -> impl DoubleEndedIterator<Item = u64> + '_ {
        self.stages.get(&stage_id).into_iter().flatten().copied()
    }

    /// Re-sorts the FIFO order if task sets came or went: job id, stage id, submission.
    fn ensure_sorted(&mut self) {
        if !self.sorted_dirty {
            return;
        }
        self.sorted.clear();
        self.sorted.extend(self.managers.keys().copied());
        let managers = &self.managers;
        self.sorted.sort_by_key(|id| {
            let key = managers
                .get(id)
                .map_or((u32::MAX, u32::MAX), |m| m.tsm.fifo_key());
            (key.0, key.1, *id)
        });
        self.sorted_dirty = false;
    }

    /// Spark's `taskSetFinished`: drops a zombie manager with nothing running.
    fn finish_if_done(&mut self, id: u64) {
        if !self.managers.get(&id).is_some_and(|m| m.tsm.is_finished()) {
            return;
        }
        let Some(m) = self.managers.remove(&id) else {
            return;
        };
        self.work += m.tsm.work_counter();
        let stage = m.tsm.stage_id();
        if let Some(ids) = self.stages.get_mut(&stage) {
            ids.retain(|x| *x != id);
            if ids.is_empty() {
                self.stages.remove(&stage);
            }
        }
        self.sorted_dirty = true;
        tracing::info!(
            stage_id = stage,
            stage_attempt = m.tsm.stage_attempt(),
            "Removed TaskSet {} whose tasks have all completed, from pool ",
            m.tsm.task_set_id()
        );
    }
}

fn log_executor_loss(executor_id: &str, host: &str, reason: &ExecutorLossReason) {
    match reason {
        ExecutorLossReason::LossReasonPending => tracing::debug!(
            executor_id,
            host,
            "Executor {executor_id} on {host} lost, but reason not yet known."
        ),
        ExecutorLossReason::ExecutorKilled => {
            tracing::info!(
                executor_id,
                host,
                "Executor {executor_id} on {host} killed by driver."
            )
        }
        _ => tracing::error!(
            executor_id,
            host,
            "Lost executor {executor_id} on {host}: {reason}"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduler::events::TaskEndReason;
    use crate::scheduler::task_set::{TaskBinary, TaskLocation, TaskSpec};
    use TaskLocality::*;

    fn sched(config: TaskSchedulerConfig) -> TaskSchedulerImpl {
        TaskSchedulerImpl::new(config, Box::new(|_| None), 7)
    }

    fn sched_with_racks(config: TaskSchedulerConfig, racks: &[(&str, &str)]) -> TaskSchedulerImpl {
        let racks: Vec<(String, String)> = racks
            .iter()
            .map(|(h, r)| (h.to_string(), r.to_string()))
            .collect();
        TaskSchedulerImpl::new(
            config,
            Box::new(move |host| racks.iter().find(|(h, _)| h == host).map(|(_, r)| r.clone())),
            7,
        )
    }

    fn offer(exec: &str, host: &str, cores: u32) -> WorkerOffer {
        WorkerOffer {
            executor_id: exec.into(),
            host: host.into(),
            cores,
        }
    }

    fn task_set(stage: u32, attempt: u32, job: u32, tasks: Vec<TaskSpec>, shuffle_map: bool) -> TaskSet {
        TaskSet {
            stage_id: stage,
            stage_attempt_id: attempt,
            job_id: job,
            is_shuffle_map: shuffle_map,
            is_barrier: false,
            tasks,
            binary: Arc::new(TaskBinary::default()),
            properties: vec![],
        }
    }

    fn no_pref(n: u32) -> Vec<TaskSpec> {
        (0..n)
            .map(|i| TaskSpec {
                index: i,
                partition_id: i,
                preferred_locations: vec![],
            })
            .collect()
    }

    fn on_host(n: u32, host: &str) -> Vec<TaskSpec> {
        (0..n)
            .map(|i| TaskSpec {
                index: i,
                partition_id: i,
                preferred_locations: vec![TaskLocation::Host(host.into())],
            })
            .collect()
    }

    /// FINISHED with a result of `result_size` bytes.
    fn finished(result_size: u64) -> TaskUpdate {
        TaskUpdate::Finished {
            result_size,
            result: crate::scheduler::task::TaskResult::Value {
                value: crate::rdd::Value::Null,
                metrics: Default::default(),
            },
        }
    }

    fn boom() -> TaskEndReason {
        TaskEndReason::ExceptionFailure {
            class_name: "java.lang.RuntimeException".into(),
            description: "boom".into(),
            stack_trace: vec![],
        }
    }

    fn ended(events: &[SchedulerEvent]) -> Vec<(u64, TaskEndReason)> {
        events
            .iter()
            .filter_map(|e| match e {
                SchedulerEvent::Dag(DagEvent::CompletionEvent(c)) => Some((c.task_id, c.reason.clone())),
                _ => None,
            })
            .collect()
    }

    fn failed_sets(events: &[SchedulerEvent]) -> Vec<(u32, u32, String)> {
        events
            .iter()
            .filter_map(|e| match e {
                SchedulerEvent::Dag(DagEvent::TaskSetFailed {
                    stage_id,
                    stage_attempt_id,
                    message,
                }) => Some((*stage_id, *stage_attempt_id, message.clone())),
                _ => None,
            })
            .collect()
    }

    fn revives(events: &[SchedulerEvent]) -> usize {
        events
            .iter()
            .filter(|e| matches!(e, SchedulerEvent::ReviveOffers))
            .count()
    }

    fn kills(events: &[SchedulerEvent]) -> Vec<(u64, String, bool, String)> {
        events
            .iter()
            .filter_map(|e| match e {
                SchedulerEvent::KillTask(KillTask {
                    task_id,
                    executor_id,
                    interrupt_thread,
                    reason,
                }) => Some((*task_id, executor_id.clone(), *interrupt_thread, reason.clone())),
                _ => None,
            })
            .collect()
    }

    fn ids(launches: &[TaskLaunch]) -> Vec<(u64, u32, TaskLocality)> {
        launches
            .iter()
            .map(|l| (l.task_id, l.index, l.locality))
            .collect()
    }

    #[test]
    fn the_scheduler_can_be_shared_behind_a_mutex() {
        fn is_send<T: Send + 'static>() {}
        is_send::<TaskSchedulerImpl>();
    }

    #[test]
    fn starving_from_the_first_task_set_until_a_task_launches() {
        let mut s = sched(TaskSchedulerConfig::default());
        assert!(!s.has_received_task() && !s.is_starving());
        // An offer before any task set launches nothing and changes nothing.
        assert!(s.resource_offers(&[offer("1", "h1", 1)], true, 0).is_empty());
        s.submit_tasks(task_set(0, 0, 0, no_pref(2), false), 0);
        assert!(s.has_received_task() && s.is_starving());
        // No free core: still nothing launched.
        assert!(s.resource_offers(&[offer("1", "h1", 0)], true, 5).is_empty());
        assert!(s.is_starving());
        assert_eq!(s.resource_offers(&[offer("1", "h1", 1)], true, 10).len(), 1);
        assert!(!s.is_starving());
        // Later task sets do not start it again.
        s.submit_tasks(task_set(1, 1, 0, no_pref(1), false), 20);
        assert!(!s.is_starving());
    }

    /// The CompletionEvents among `events`.
    fn completions(events: &[SchedulerEvent]) -> Vec<&crate::scheduler::dag_scheduler::CompletionEvent> {
        events
            .iter()
            .filter_map(|e| match e {
                SchedulerEvent::Dag(DagEvent::CompletionEvent(c)) => Some(c),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn stage_progress_counts_finished_and_running_tasks_of_active_sets_by_stage() {
        use crate::scheduler::console_progress_bar::StageProgress;
        let mut s = sched(TaskSchedulerConfig::default());
        assert_eq!(s.stage_progress(), vec![]);
        s.submit_tasks(task_set(2, 0, 0, no_pref(4), false), 100);
        s.submit_tasks(task_set(1, 0, 0, no_pref(3), true), 150);
        let launched = s.resource_offers(&[offer("1", "h1", 3)], true, 200);
        assert_eq!(launched.len(), 3);
        let stage1: Vec<u64> = launched
            .iter()
            .filter(|t| t.stage_id == 1)
            .map(|t| t.task_id)
            .collect();
        s.status_update(stage1[0], finished(1), 300);
        let p = |stage_id, num_tasks, completed, active, at| StageProgress {
            stage_id,
            stage_attempt: 0,
            num_tasks,
            completed,
            active,
            submission_time_ms: at,
        };
        let running1 = stage1.len() as u32 - 1;
        let running2 = 3 - stage1.len() as u32;
        assert_eq!(
            s.stage_progress(),
            vec![p(1, 3, 1, running1, 150), p(2, 4, 0, running2, 100)]
        );
        // A finished (zombie) set is no longer active.
        let rest: Vec<u64> = stage1[1..].to_vec();
        for t in rest {
            s.status_update(t, finished(1), 400);
        }
        let more = s.resource_offers(&[offer("1", "h1", 3)], true, 450);
        for t in more.iter().filter(|t| t.stage_id == 1) {
            s.status_update(t.task_id, finished(1), 500);
        }
        assert!(
            s.stage_progress().iter().all(|st| st.stage_id == 2),
            "{:?}",
            s.stage_progress()
        );
    }

    #[test]
    fn a_completion_event_carries_its_tasks_result() {
        let mut s = sched(TaskSchedulerConfig::default());
        s.submit_tasks(task_set(0, 0, 0, no_pref(2), false), 0);
        let l = s.resource_offers(&[offer("1", "h1", 2)], true, 1);
        s.take_events();
        let result = crate::scheduler::task::TaskResult::Value {
            value: crate::rdd::Value::I64(42),
            metrics: Default::default(),
        };
        s.status_update(
            l[0].task_id,
            TaskUpdate::Finished {
                result_size: 9,
                result: result.clone(),
            },
            2,
        );
        s.status_update(l[1].task_id, TaskUpdate::Failed(boom()), 3);
        let events = s.take_events();
        let ended = completions(&events);
        assert_eq!(ended.len(), 2);
        assert_eq!(
            (ended[0].task_id, &ended[0].reason, ended[0].result.as_ref()),
            (l[0].task_id, &TaskEndReason::Success, Some(&result)),
            "the success carries the result its FINISHED update brought"
        );
        assert_eq!((ended[1].task_id, ended[1].result.as_ref()), (l[1].task_id, None));
    }

    #[test]
    fn a_fetch_failure_says_whether_its_executor_is_decommissioning() {
        let fetch_failed = |exec: &str| TaskEndReason::FetchFailed {
            executor_id: Some(exec.into()),
            host: Some("h".into()),
            shuffle_id: 0,
            map_id: 0,
            map_index: 0,
            reduce_id: 0,
            message: "gone".into(),
        };
        let mut s = sched(TaskSchedulerConfig::default());
        s.submit_tasks(task_set(1, 0, 0, no_pref(2), false), 0);
        let l = s.resource_offers(&[offer("1", "h1", 1), offer("2", "h2", 1)], true, 1);
        s.executor_decommission("1", None, 2);
        s.take_events();
        s.status_update(l[0].task_id, TaskUpdate::Failed(fetch_failed("2")), 3);
        s.status_update(l[1].task_id, TaskUpdate::Failed(fetch_failed("1")), 3);
        let events = s.take_events();
        let flags: Vec<(u64, bool)> = completions(&events)
            .iter()
            .map(|c| (c.task_id, c.fetch_source_decommissioned))
            .collect();
        assert_eq!(
            flags,
            vec![(l[0].task_id, false), (l[1].task_id, true)],
            "only the failure naming the decommissioning executor says so"
        );
    }

    #[test]
    fn launches_lowest_index_first_with_task_ids_from_zero() {
        let mut s = sched(TaskSchedulerConfig::default());
        s.submit_tasks(task_set(0, 0, 0, no_pref(6), false), 0);
        assert_eq!(s.take_events(), vec![SchedulerEvent::ReviveOffers]);
        let l = s.resource_offers(&[offer("1", "h1", 4)], true, 10);
        assert_eq!(
            ids(&l),
            vec![
                (0, 0, ProcessLocal),
                (1, 1, ProcessLocal),
                (2, 2, ProcessLocal),
                (3, 3, ProcessLocal)
            ]
        );
        assert_eq!(l[1].name, "task 1.0 in stage 0.0 (TID 1)");
        assert!(l
            .iter()
            .all(|t| t.executor_id == "1" && t.host == "h1" && t.cpus == 1));
        let events = s.take_events();
        assert_eq!(
            events[0],
            SchedulerEvent::Dag(DagEvent::ExecutorAdded {
                executor_id: "1".into(),
                host: "h1".into()
            })
        );
        assert_eq!(
            events
                .iter()
                .filter(|e| matches!(e, SchedulerEvent::Dag(DagEvent::BeginEvent { .. })))
                .count(),
            4
        );
        assert_eq!(s.running_tasks("1"), 4);
        assert!(s.is_executor_busy("1") && s.has_pending_tasks() && s.has_launched_task());
        assert_eq!(s.num_pending_tasks(), 2);
        // A known executor is not added twice; the next free core takes index 4.
        s.status_update(0, finished(10), 20);
        let l = s.resource_offers(&[offer("1", "h1", 1)], false, 20);
        assert_eq!(ids(&l), vec![(4, 4, ProcessLocal)]);
        assert!(!s
            .take_events()
            .iter()
            .any(|e| matches!(e, SchedulerEvent::Dag(DagEvent::ExecutorAdded { .. }))));
    }

    #[test]
    fn task_sets_are_served_in_fifo_order_and_all_complete() {
        let mut s = sched(TaskSchedulerConfig::default());
        s.submit_tasks(task_set(5, 0, 1, no_pref(2), true), 0);
        s.submit_tasks(task_set(3, 0, 1, no_pref(2), false), 0);
        s.submit_tasks(task_set(9, 0, 0, no_pref(1), false), 0);
        let l = s.resource_offers(&[offer("1", "h1", 4)], true, 0);
        let stages: Vec<u32> = l.iter().map(|t| t.stage_id).collect();
        assert_eq!(stages, vec![9, 3, 3, 5]);
        for t in &l {
            s.status_update(t.task_id, TaskUpdate::Running, 1);
            s.status_update(t.task_id, finished(1), 2);
        }
        assert_eq!(s.num_task_sets(), 1);
        let l = s.resource_offers(&[offer("1", "h1", 4)], true, 3);
        assert_eq!(l.len(), 1);
        s.status_update(l[0].task_id, finished(1), 4);
        assert_eq!(s.num_task_sets(), 0);
        assert!(!s.has_pending_tasks() && !s.is_executor_busy("1"));
    }

    #[test]
    fn node_local_waits_then_rack_local_then_any() {
        // Executor 1 lives on the preferred host h1 but never has a free core.
        let config = TaskSchedulerConfig::default();
        let mut s = sched_with_racks(config, &[("h1", "r1"), ("h2", "r1"), ("h3", "r2")]);
        s.resource_offers(&[offer("1", "h1", 0)], true, 0);
        s.submit_tasks(task_set(0, 0, 0, on_host(3, "h1"), false), 0);
        assert_eq!(
            s.task_set_manager(0, 0).map(|t| t.my_locality_levels().to_vec()),
            Some(vec![NodeLocal, RackLocal, Any])
        );
        let others = [offer("2", "h2", 1), offer("3", "h3", 1)];
        for now in [0, 1000, 2999] {
            assert!(s.resource_offers(&others, false, now).is_empty(), "at {now}");
        }
        // After spark.locality.wait.node, h2 (same rack) gets a RACK_LOCAL task; h3 waits on.
        let l = s.resource_offers(&others, false, 3000);
        assert_eq!(ids(&l), vec![(0, 0, RackLocal)]);
        assert_eq!(l[0].executor_id, "2");
        assert!(s.resource_offers(&[offer("3", "h3", 1)], false, 5999).is_empty());
        // After spark.locality.wait.rack as well, any host will do.
        let l = s.resource_offers(&[offer("3", "h3", 1)], false, 6000);
        assert_eq!(ids(&l), vec![(1, 1, Any)]);
    }

    #[test]
    fn a_preferred_host_without_executors_does_not_delay() {
        let mut s = sched(TaskSchedulerConfig::default());
        s.submit_tasks(task_set(0, 0, 0, on_host(2, "nowhere"), false), 0);
        let l = s.resource_offers(&[offer("1", "h1", 2)], true, 0);
        assert_eq!(ids(&l), vec![(0, 0, Any), (1, 1, Any)]);
    }

    #[test]
    fn the_preferred_host_that_never_offers_ends_on_any_after_the_wait() {
        let mut s = sched(TaskSchedulerConfig::default());
        s.resource_offers(&[offer("busy", "h1", 0)], true, 0);
        s.submit_tasks(task_set(0, 0, 0, on_host(2, "h1"), false), 100);
        // The periodic revive (all free resources) keeps offering h2 only.
        for now in (100..3100).step_by(500) {
            assert!(s.resource_offers(&[offer("2", "h2", 2)], true, now).is_empty());
        }
        let l = s.resource_offers(&[offer("2", "h2", 2)], true, 3100);
        assert_eq!(ids(&l), vec![(0, 0, Any), (1, 1, Any)]);
    }

    #[test]
    fn process_local_prefers_the_cached_executor() {
        let mut s = sched(TaskSchedulerConfig::default());
        s.resource_offers(&[offer("1", "h1", 0), offer("2", "h1", 0)], true, 0);
        let tasks = vec![
            TaskSpec {
                index: 0,
                partition_id: 0,
                preferred_locations: vec![TaskLocation::Executor {
                    host: "h1".into(),
                    executor_id: "2".into(),
                }],
            },
            TaskSpec {
                index: 1,
                partition_id: 1,
                preferred_locations: vec![TaskLocation::Host("h1".into())],
            },
        ];
        s.submit_tasks(task_set(0, 0, 0, tasks, false), 0);
        // Executor 1 shares h1, but while index 0 waits for executor 2 the set stays at
        // PROCESS_LOCAL, so index 1 (NODE_LOCAL) waits too.
        let l = s.resource_offers(&[offer("1", "h1", 2)], false, 10);
        assert!(l.is_empty(), "PROCESS_LOCAL wait");
        let l = s.resource_offers(&[offer("2", "h1", 1)], false, 20);
        assert_eq!(ids(&l), vec![(0, 0, ProcessLocal)]);
        let l = s.resource_offers(&[offer("1", "h1", 1)], false, 30);
        assert_eq!(ids(&l), vec![(1, 1, NodeLocal)]);
    }

    #[test]
    fn no_pref_tasks_go_before_rack_and_any() {
        let mut s = sched(TaskSchedulerConfig::default());
        s.resource_offers(&[offer("9", "h9", 0)], true, 0);
        let mut tasks = on_host(1, "h9");
        tasks.extend(no_pref(2).into_iter().map(|mut t| {
            t.index += 1;
            t.partition_id += 1;
            t
        }));
        s.submit_tasks(task_set(0, 0, 0, tasks, false), 0);
        assert_eq!(
            s.task_set_manager(0, 0).map(|t| t.my_locality_levels().to_vec()),
            Some(vec![NodeLocal, NoPref, Any])
        );
        // The NO_PREF pass ignores the delay: both no-pref tasks launch at once.
        let l = s.resource_offers(&[offer("1", "h1", 3)], true, 0);
        assert_eq!(ids(&l), vec![(0, 1, ProcessLocal), (1, 2, ProcessLocal)]);
    }

    #[test]
    fn retries_up_to_max_failures_then_aborts_with_sparks_message() {
        let mut s = sched(TaskSchedulerConfig::default());
        s.submit_tasks(task_set(1, 0, 0, no_pref(1), false), 0);
        s.take_events();
        for attempt in 0..4u64 {
            let l = s.resource_offers(&[offer("1", "h1", 1)], true, attempt * 10);
            assert_eq!(l.len(), 1);
            assert_eq!((l[0].task_id, l[0].attempt_number), (attempt, attempt as u32));
            s.status_update(attempt, TaskUpdate::Running, attempt * 10 + 1);
            s.status_update(attempt, TaskUpdate::Failed(boom()), attempt * 10 + 2);
            let events = s.take_events();
            if attempt < 3 {
                assert_eq!(revives(&events), 1);
                assert!(failed_sets(&events).is_empty());
            } else {
                assert_eq!(revives(&events), 0);
                assert_eq!(
                    failed_sets(&events),
                    vec![(
                        1,
                        0,
                        "Task 0 in stage 1.0 failed 4 times, most recent failure: Lost task 0.3 in stage \
                         1.0 (TID 3) (h1 executor 1): java.lang.RuntimeException: boom\nDriver stacktrace:"
                            .to_string()
                    )]
                );
            }
        }
        assert_eq!(s.num_task_sets(), 0, "aborted with nothing running: removed");
        assert!(s.resource_offers(&[offer("1", "h1", 1)], true, 100).is_empty());
    }

    #[test]
    fn executor_loss_unrelated_to_the_app_does_not_count() {
        let mut s = sched(TaskSchedulerConfig::default());
        s.submit_tasks(task_set(0, 0, 0, no_pref(1), false), 0);
        for i in 0..6u32 {
            let exec = format!("e{i}");
            let l = s.resource_offers(&[offer(&exec, "h1", 1)], true, 0);
            assert_eq!(l.len(), 1, "attempt {i}");
            s.status_update(l[0].task_id, TaskUpdate::Running, 1);
            s.take_events();
            s.executor_lost(
                &exec,
                &ExecutorLossReason::ExecutorExited {
                    exit_code: 143,
                    exit_caused_by_app: false,
                    reason: "Container preempted".into(),
                },
                2,
            );
            let events = s.take_events();
            assert_eq!(
                ended(&events),
                vec![(
                    l[0].task_id,
                    TaskEndReason::ExecutorLostFailure {
                        executor_id: exec.clone(),
                        exit_caused_by_app: false,
                        reason: Some("Container preempted".into())
                    }
                )]
            );
            assert!(events.contains(&SchedulerEvent::Dag(DagEvent::ExecutorLost {
                executor_id: exec.clone(),
                reason: ExecutorLossReason::ExecutorExited {
                    exit_code: 143,
                    exit_caused_by_app: false,
                    reason: "Container preempted".into(),
                },
            })));
            assert!(failed_sets(&events).is_empty());
            assert!(!s.is_executor_alive(&exec));
        }
    }

    #[test]
    fn executor_loss_caused_by_the_app_counts_once_running() {
        let mut s = sched(TaskSchedulerConfig {
            max_task_failures: 2,
            ..TaskSchedulerConfig::default()
        });
        s.submit_tasks(task_set(0, 0, 0, no_pref(1), false), 0);
        let crash = ExecutorLossReason::ExecutorExited {
            exit_code: 52,
            exit_caused_by_app: true,
            reason: "OOM".into(),
        };
        // Still LAUNCHING: treated as a network failure, not counted.
        let l = s.resource_offers(&[offer("a", "h1", 1)], true, 0);
        s.executor_lost("a", &crash, 1);
        let l2 = s.resource_offers(&[offer("b", "h1", 1)], true, 2);
        assert_eq!(l2[0].attempt_number, 1);
        assert_ne!(l[0].task_id, l2[0].task_id);
        s.status_update(l2[0].task_id, TaskUpdate::Running, 3);
        s.executor_lost("b", &crash, 4);
        s.take_events();
        let l3 = s.resource_offers(&[offer("c", "h1", 1)], true, 5);
        s.status_update(l3[0].task_id, TaskUpdate::Running, 6);
        s.executor_lost("c", &crash, 7);
        let events = s.take_events();
        let failed = failed_sets(&events);
        assert_eq!(failed.len(), 1);
        assert!(failed[0].2.starts_with(
            "Task 0 in stage 0.0 failed 2 times, most recent failure: Lost task 0.2 in stage 0.0 (TID 2) \
             (h1 executor c): ExecutorLostFailure (executor c exited caused by one of the running tasks)"
        ));
        assert!(failed[0].2.ends_with("\nDriver stacktrace:"));
    }

    #[test]
    fn lost_map_outputs_are_resubmitted() {
        let mut s = sched(TaskSchedulerConfig::default());
        s.submit_tasks(task_set(0, 0, 0, no_pref(2), true), 0);
        let l = s.resource_offers(&[offer("a", "ha", 1), offer("b", "hb", 1)], true, 0);
        let on_a = l
            .iter()
            .find(|t| t.executor_id == "a")
            .expect("a task on a")
            .clone();
        let on_b = l
            .iter()
            .find(|t| t.executor_id == "b")
            .expect("a task on b")
            .clone();
        s.status_update(on_a.task_id, finished(5), 10);
        s.status_update(on_b.task_id, TaskUpdate::Running, 10);
        s.take_events();
        s.executor_lost("a", &ExecutorLossReason::ExecutorKilled, 20);
        let events = s.take_events();
        assert_eq!(ended(&events), vec![(on_a.task_id, TaskEndReason::Resubmitted)]);
        assert_eq!(s.num_pending_tasks(), 1);
        let l = s.resource_offers(&[offer("b", "hb", 1)], true, 30);
        assert_eq!((l[0].index, l[0].attempt_number), (on_a.index, 1));
        // A result stage's outputs are never undone.
        let mut r = sched(TaskSchedulerConfig::default());
        r.submit_tasks(task_set(1, 0, 0, no_pref(2), false), 0);
        let l = r.resource_offers(&[offer("a", "ha", 2)], true, 0);
        r.status_update(l[0].task_id, finished(5), 10);
        r.take_events();
        r.executor_lost("a", &ExecutorLossReason::ExecutorKilled, 20);
        let events = r.take_events();
        assert_eq!(
            ended(&events),
            vec![(
                l[1].task_id,
                TaskEndReason::ExecutorLostFailure {
                    executor_id: "a".into(),
                    exit_caused_by_app: false,
                    reason: Some("Executor killed by driver.".into())
                }
            )]
        );
    }

    #[test]
    fn loss_reason_pending_tells_the_dag_first_and_the_task_sets_later() {
        let mut s = sched(TaskSchedulerConfig::default());
        s.submit_tasks(task_set(0, 0, 0, no_pref(2), false), 0);
        let l = s.resource_offers(&[offer("a", "ha", 2)], true, 0);
        s.status_update(l[0].task_id, TaskUpdate::Running, 1);
        s.take_events();

        s.executor_lost("a", &ExecutorLossReason::LossReasonPending, 10);
        assert_eq!(
            s.take_events(),
            vec![
                SchedulerEvent::Dag(DagEvent::ExecutorLost {
                    executor_id: "a".into(),
                    reason: ExecutorLossReason::LossReasonPending
                }),
                SchedulerEvent::ReviveOffers
            ]
        );
        assert!(!s.is_executor_alive("a"));
        assert_eq!(s.task_set_manager(0, 0).map(|t| t.running_tasks()), Some(2));
        // Updates for its tasks are ignored from now on.
        s.status_update(l[0].task_id, finished(1), 11);
        assert!(s.take_events().is_empty());

        let real = ExecutorLossReason::ExecutorExited {
            exit_code: 1,
            exit_caused_by_app: true,
            reason: "Container exited with a non-zero exit code 1".into(),
        };
        s.executor_lost("a", &real, 20);
        let events = s.take_events();
        assert!(!events
            .iter()
            .any(|e| matches!(e, SchedulerEvent::Dag(DagEvent::ExecutorLost { .. }))));
        let failures = ended(&events);
        assert_eq!(failures.len(), 2);
        assert_eq!(
            failures[0],
            (
                l[0].task_id,
                TaskEndReason::ExecutorLostFailure {
                    executor_id: "a".into(),
                    exit_caused_by_app: true,
                    reason: Some("Container exited with a non-zero exit code 1".into())
                }
            )
        );
        // The second attempt never reported RUNNING.
        assert!(matches!(
            &failures[1].1,
            TaskEndReason::ExecutorLostFailure {
                exit_caused_by_app: false,
                ..
            }
        ));
        assert_eq!(s.num_pending_tasks(), 2);
        // A third report finds nothing.
        s.executor_lost("a", &real, 30);
        assert!(s.take_events().is_empty());
    }

    #[test]
    fn fetch_failure_turns_the_task_set_into_a_zombie() {
        let mut s = sched(TaskSchedulerConfig::default());
        s.submit_tasks(task_set(2, 0, 0, no_pref(3), false), 0);
        let l = s.resource_offers(&[offer("1", "h1", 2)], true, 0);
        s.take_events();
        let ff = TaskEndReason::FetchFailed {
            executor_id: Some("9".into()),
            host: Some("h9".into()),
            shuffle_id: 0,
            map_id: 4,
            map_index: 1,
            reduce_id: 0,
            message: "java.io.IOException: missing".into(),
        };
        s.status_update(l[0].task_id, TaskUpdate::Failed(ff.clone()), 5);
        let events = s.take_events();
        assert_eq!(ended(&events), vec![(l[0].task_id, ff)]);
        assert_eq!(revives(&events), 0);
        assert!(failed_sets(&events).is_empty());
        assert!(s.task_set_manager(2, 0).is_some_and(|t| t.is_zombie()));
        assert!(s.resource_offers(&[offer("1", "h1", 2)], true, 6).is_empty());
        s.status_update(l[1].task_id, finished(1), 7);
        assert_eq!(s.num_task_sets(), 0);
    }

    #[test]
    fn speculation_copies_a_slow_task_on_another_host_only() {
        let mut config = TaskSchedulerConfig::default();
        config.speculation.enabled = true;
        config.speculation.quantile = 0.75;
        let mut s = sched(config);
        s.submit_tasks(task_set(0, 0, 0, no_pref(4), false), 0);
        let l = s.resource_offers(&[offer("1", "h1", 4)], true, 0);
        assert_eq!(l.len(), 4);
        for t in &l {
            s.status_update(t.task_id, TaskUpdate::Running, 1);
        }
        for t in &l[..2] {
            s.status_update(t.task_id, finished(1), 100);
        }
        assert!(
            !s.check_speculatable_tasks(10_000),
            "2 of 4 done: below the quantile"
        );
        s.status_update(l[2].task_id, finished(1), 100);
        // Median 100 ms: threshold max(3 x 100, 100) = 300 ms.
        assert!(!s.check_speculatable_tasks(300));
        s.take_events();
        assert!(s.check_speculatable_tasks(301));
        assert_eq!(
            s.take_events(),
            vec![
                SchedulerEvent::Dag(DagEvent::SpeculativeTaskSubmitted {
                    stage_id: 0,
                    stage_attempt_id: 0,
                    index: 3
                }),
                SchedulerEvent::ReviveOffers
            ]
        );
        assert!(!s.check_speculatable_tasks(400), "marked once");
        // Never on the host of the running attempt.
        assert!(s.resource_offers(&[offer("1", "h1", 3)], true, 310).is_empty());
        let copy = s.resource_offers(&[offer("1", "h1", 3), offer("2", "h2", 1)], true, 320);
        assert_eq!(copy.len(), 1);
        assert_eq!(
            (
                copy[0].index,
                copy[0].attempt_number,
                copy[0].speculative,
                copy[0].executor_id.as_str()
            ),
            (3, 1, true, "2")
        );
        assert_eq!(copy[0].name, "task 3.1 in stage 0.0 (TID 4)");
        s.take_events();
        // The copy wins: the original is killed.
        s.status_update(copy[0].task_id, finished(1), 400);
        let events = s.take_events();
        assert_eq!(
            kills(&events),
            vec![(
                l[3].task_id,
                "1".to_string(),
                true,
                "another attempt succeeded".to_string()
            )]
        );
        s.status_update(
            l[3].task_id,
            TaskUpdate::Killed(TaskEndReason::TaskKilled {
                reason: "another attempt succeeded".into(),
            }),
            410,
        );
        let events = s.take_events();
        assert_eq!(revives(&events), 0);
        assert_eq!(s.num_task_sets(), 0);
    }

    #[test]
    fn cancel_tasks_kills_and_aborts_the_stage() {
        let mut s = sched(TaskSchedulerConfig::default());
        s.submit_tasks(task_set(4, 0, 0, no_pref(3), false), 0);
        let l = s.resource_offers(&[offer("1", "h1", 2)], true, 0);
        s.take_events();
        s.cancel_tasks(4, "Job 0 cancelled");
        let events = s.take_events();
        assert_eq!(
            kills(&events),
            vec![
                (
                    l[0].task_id,
                    "1".into(),
                    false,
                    "Stage cancelled: Job 0 cancelled".into()
                ),
                (
                    l[1].task_id,
                    "1".into(),
                    false,
                    "Stage cancelled: Job 0 cancelled".into()
                )
            ]
        );
        assert_eq!(
            failed_sets(&events),
            vec![(4, 0, "Stage 4 cancelled".to_string())]
        );
        assert!(s.resource_offers(&[offer("1", "h1", 2)], true, 1).is_empty());
        for t in &l {
            s.status_update(
                t.task_id,
                TaskUpdate::Killed(TaskEndReason::TaskKilled {
                    reason: "Stage cancelled: Job 0 cancelled".into(),
                }),
                2,
            );
        }
        assert_eq!(s.num_task_sets(), 0);
        // kill_all_task_attempts alone does not fail the set but stops it.
        s.submit_tasks(task_set(5, 0, 0, no_pref(2), false), 3);
        let l = s.resource_offers(&[offer("1", "h1", 1)], true, 3);
        s.take_events();
        s.kill_all_task_attempts(5, "Stage finished");
        let events = s.take_events();
        assert_eq!(
            kills(&events),
            vec![(l[0].task_id, "1".into(), false, "Stage finished".into())]
        );
        assert!(failed_sets(&events).is_empty());
        assert!(s.resource_offers(&[offer("1", "h1", 1)], true, 4).is_empty());
    }

    #[test]
    fn abort_task_set_aborts_that_attempt_only() {
        let mut s = sched(TaskSchedulerConfig::default());
        s.submit_tasks(task_set(1, 0, 0, no_pref(2), false), 0);
        s.take_events();
        let msg =
            "Serialized task 0:0 was 200000000 bytes, which exceeds max allowed: spark.rpc.message.maxSize";
        assert!(s.abort_task_set(1, 0, msg));
        assert_eq!(failed_sets(&s.take_events()), vec![(1, 0, msg.to_string())]);
        assert_eq!(s.num_task_sets(), 0);
        assert!(!s.abort_task_set(1, 0, msg));
        assert!(!s.abort_task_set(7, 3, msg));
        assert!(s.take_events().is_empty());
    }

    #[test]
    fn unknown_or_duplicate_task_ids_are_ignored() {
        let mut s = sched(TaskSchedulerConfig::default());
        s.status_update(42, finished(1), 0);
        s.status_update(42, TaskUpdate::Lost(TaskEndReason::UnknownReason), 0);
        assert!(s.take_events().is_empty());
        s.submit_tasks(task_set(0, 0, 0, no_pref(2), false), 0);
        let l = s.resource_offers(&[offer("1", "h1", 1)], true, 0);
        s.status_update(l[0].task_id, finished(1), 1);
        s.take_events();
        s.status_update(l[0].task_id, finished(1), 2);
        s.status_update(l[0].task_id, TaskUpdate::Failed(boom()), 2);
        assert!(s.take_events().is_empty());
        assert!(!s.kill_task_attempt(l[0].task_id, true, "user"));
        assert!(s.resource_offers(&[], true, 3).is_empty());
        s.executor_lost("never-seen", &ExecutorLossReason::ExecutorKilled, 3);
        assert!(s.take_events().is_empty());
    }

    #[test]
    fn kill_task_attempt_sends_a_kill_for_a_running_task() {
        let mut s = sched(TaskSchedulerConfig::default());
        s.submit_tasks(task_set(0, 0, 0, no_pref(1), false), 0);
        let l = s.resource_offers(&[offer("1", "h1", 1)], true, 0);
        s.take_events();
        assert!(s.kill_task_attempt(l[0].task_id, true, "user asked"));
        assert_eq!(
            kills(&s.take_events()),
            vec![(l[0].task_id, "1".into(), true, "user asked".into())]
        );
        // A killed task is retried (not counted) and offers are revived.
        s.status_update(
            l[0].task_id,
            TaskUpdate::Killed(TaskEndReason::TaskKilled {
                reason: "user asked".into(),
            }),
            1,
        );
        assert_eq!(revives(&s.take_events()), 1);
        assert_eq!(s.resource_offers(&[offer("1", "h1", 1)], true, 2).len(), 1);
    }

    #[test]
    fn cpus_per_task_is_taken_from_each_offer() {
        let mut s = sched(TaskSchedulerConfig {
            cpus_per_task: 2,
            ..TaskSchedulerConfig::default()
        });
        s.submit_tasks(task_set(0, 0, 0, no_pref(10), false), 0);
        let l = s.resource_offers(
            &[offer("1", "h1", 5), offer("2", "h2", 1), offer("3", "h3", 2)],
            true,
            0,
        );
        assert_eq!(l.len(), 3);
        assert!(l.iter().all(|t| t.cpus == 2));
        let mut per_exec: Vec<(String, usize)> = s.running_tasks_by_executors();
        per_exec.sort();
        assert_eq!(per_exec, vec![("1".into(), 2), ("2".into(), 0), ("3".into(), 1)]);
        assert!(s.resource_offers(&[offer("1", "h1", 1)], false, 1).is_empty());
    }

    #[test]
    fn a_new_stage_attempt_makes_older_attempts_zombies() {
        let mut s = sched(TaskSchedulerConfig::default());
        s.submit_tasks(task_set(3, 0, 0, no_pref(2), true), 0);
        let l = s.resource_offers(&[offer("1", "h1", 1)], true, 0);
        s.submit_tasks(task_set(3, 1, 0, no_pref(2), true), 1);
        assert!(s.task_set_manager(3, 0).is_some_and(|t| t.is_zombie()));
        let l2 = s.resource_offers(&[offer("1", "h1", 2)], true, 2);
        assert!(l2.iter().all(|t| t.stage_attempt_id == 1));
        assert_eq!(l2.len(), 2);
        // The old attempt's last task ends: the old set goes away.
        s.status_update(l[0].task_id, finished(1), 3);
        assert!(s.task_set_manager(3, 0).is_none());
        // The older attempt finished partition 0: the new attempt counts it.
        s.mark_partition_completed(3, 0);
        assert_eq!(s.task_set_manager(3, 1).map(|t| t.tasks_successful()), Some(1));
    }

    #[test]
    fn a_lost_status_marks_the_executor_lost() {
        let mut s = sched(TaskSchedulerConfig::default());
        s.submit_tasks(task_set(0, 0, 0, no_pref(2), false), 0);
        let l = s.resource_offers(&[offer("1", "h1", 2)], true, 0);
        s.status_update(l[0].task_id, TaskUpdate::Running, 1);
        s.take_events();
        s.status_update(l[0].task_id, TaskUpdate::Lost(TaskEndReason::UnknownReason), 2);
        let events = s.take_events();
        assert!(!s.is_executor_alive("1"));
        assert_eq!(ended(&events).len(), 2);
        assert!(events.iter().any(|e| matches!(
            e,
            SchedulerEvent::Dag(DagEvent::ExecutorLost { executor_id, reason: ExecutorLossReason::ExecutorProcessLost { message, .. } })
                if executor_id == "1" && message == "Task 0 was lost, so marking the executor as lost as well."
        )));
    }

    #[test]
    fn a_decommissioning_executor_no_longer_counts_for_locality() {
        let mut s = sched(TaskSchedulerConfig::default());
        s.resource_offers(&[offer("1", "h1", 1), offer("2", "h2", 1)], true, 0);
        s.submit_tasks(task_set(0, 0, 0, on_host(2, "h1"), false), 0);
        assert_eq!(
            s.task_set_manager(0, 0).unwrap().my_locality_levels(),
            &[NodeLocal, Any]
        );
        s.take_events();
        s.executor_decommission("1", None, 10);
        assert_eq!(s.take_events(), vec![SchedulerEvent::ReviveOffers]);
        assert_eq!(
            s.executor_decommission_state("1"),
            Some(ExecutorDecommissionState {
                start_time_ms: 10,
                worker_host: None
            })
        );
        assert!(!s.is_executor_alive("1"), "decommissioning is not alive");
        assert_eq!(s.executors_alive_on_host("h1"), Some(vec![]));
        assert_eq!(s.executors_alive_on_host("h2"), Some(vec!["2".to_string()]));
        assert_eq!(s.executors_alive_on_host("h9"), None);
        assert_eq!(
            s.task_set_manager(0, 0).unwrap().my_locality_levels(),
            &[Any],
            "no live executor on the preferred host: no delay at NODE_LOCAL"
        );
        // So a task goes to h2 at once instead of waiting out the locality wait.
        let l = s.resource_offers(&[offer("2", "h2", 1)], true, 11);
        assert_eq!(ids(&l), vec![(0, 0, Any)]);
        // The loss forgets the state.
        s.executor_lost(
            "1",
            &ExecutorLossReason::ExecutorDecommission {
                worker_host: None,
                reason: "Decommissioning all executors on h1.".into(),
            },
            20,
        );
        assert_eq!(s.executor_decommission_state("1"), None);
        // An executor never offered is not noted.
        s.executor_decommission("9", None, 30);
        assert_eq!(s.executor_decommission_state("9"), None);
    }

    #[test]
    fn a_host_decommissioned_with_its_executors_leaves_the_rack() {
        let mut s = sched_with_racks(TaskSchedulerConfig::default(), &[("h1", "r1"), ("h3", "r1")]);
        s.resource_offers(&[offer("1", "h1", 1)], true, 0);
        // Preferred host h3 has no executor; its rack r1 has h1.
        s.submit_tasks(task_set(0, 0, 0, on_host(1, "h3"), false), 0);
        assert_eq!(
            s.task_set_manager(0, 0).unwrap().my_locality_levels(),
            &[RackLocal, Any]
        );
        s.executor_decommission("1", Some("h1".into()), 5);
        assert_eq!(s.task_set_manager(0, 0).unwrap().my_locality_levels(), &[Any]);
    }

    #[test]
    fn a_decommission_loss_does_not_count_and_resubmits_map_output_even_with_a_shuffle_service() {
        let mut s = sched(TaskSchedulerConfig {
            external_shuffle_service: true,
            ..TaskSchedulerConfig::default()
        });
        s.submit_tasks(task_set(0, 0, 0, no_pref(2), true), 0);
        let l = s.resource_offers(&[offer("1", "h1", 2)], true, 0);
        assert_eq!(l.len(), 2);
        s.status_update(l[0].task_id, TaskUpdate::Running, 1);
        s.status_update(l[1].task_id, TaskUpdate::Running, 1);
        s.status_update(l[0].task_id, finished(1), 2);
        s.executor_decommission("1", None, 3);
        s.take_events();
        let reason = ExecutorLossReason::ExecutorDecommission {
            worker_host: None,
            reason: "Decommissioning all executors on h1.".into(),
        };
        s.executor_lost("1", &reason, 4);
        let events = s.take_events();
        assert_eq!(
            ended(&events),
            vec![
                (l[0].task_id, TaskEndReason::Resubmitted),
                (
                    l[1].task_id,
                    TaskEndReason::ExecutorLostFailure {
                        executor_id: "1".into(),
                        exit_caused_by_app: false,
                        reason: Some("Executor decommission: Decommissioning all executors on h1.".into())
                    }
                )
            ]
        );
        // Both run again, and the running one's failure was not counted: three more
        // failures of it do not abort the set.
        let tsm = s.task_set_manager(0, 0).unwrap();
        assert_eq!(tsm.pending_task_indices(), vec![0, 1]);
        for round in 0..3u64 {
            let exec = format!("x{round}");
            let l = s.resource_offers(&[offer(&exec, "h2", 2)], true, 10 + round);
            let t = l
                .iter()
                .find(|t| t.index == 1)
                .expect("index 1 runs again")
                .task_id;
            s.status_update(t, TaskUpdate::Failed(boom()), 11 + round);
        }
        assert!(failed_sets(&s.take_events()).is_empty());
    }

    #[test]
    fn a_task_likely_to_outlive_its_decommissioning_executor_is_speculated() {
        let mut config = TaskSchedulerConfig::default();
        config.speculation.enabled = true;
        config.speculation.quantile = 0.5;
        config.executor_decommission_kill_interval_ms = Some(1000);
        let mut s = sched(config);
        s.submit_tasks(task_set(0, 0, 0, no_pref(3), false), 0);
        let l = s.resource_offers(&[offer("1", "h1", 2), offer("2", "h2", 1)], true, 0);
        assert_eq!(l.len(), 3);
        for t in &l {
            s.status_update(t.task_id, TaskUpdate::Running, 0);
        }
        // Median duration 5 s; the others run far below the 15 s threshold.
        let done = l.iter().find(|t| t.executor_id == "2").unwrap().task_id;
        s.status_update(done, finished(1), 5000);
        assert!(!s.check_speculatable_tasks(5100), "below the threshold");
        // Executor 1 is decommissioned at 5.1 s and expected to be killed 1 s later, before
        // its tasks would end (launched at 0 + median 5 s = 5 s < 6.1 s: no).
        s.executor_decommission("1", None, 5100);
        s.take_events();
        assert!(
            !s.check_speculatable_tasks(5200),
            "they end (at the median) before the kill"
        );
        let mut config = TaskSchedulerConfig::default();
        config.speculation.enabled = true;
        config.speculation.quantile = 0.5;
        config.executor_decommission_kill_interval_ms = Some(1000);
        let mut s = sched(config);
        s.submit_tasks(task_set(0, 0, 0, no_pref(3), false), 0);
        let l = s.resource_offers(&[offer("2", "h2", 1)], true, 0);
        s.status_update(l[0].task_id, TaskUpdate::Running, 0);
        s.status_update(l[0].task_id, finished(1), 5000);
        // Two tasks launched late on executor 1, which is decommissioned at once: they
        // would end at 4 s + 5 s = 9 s, after the expected kill at 5.1 s.
        let late = s.resource_offers(&[offer("1", "h1", 2)], true, 4000);
        assert_eq!(late.len(), 2);
        s.executor_decommission("1", None, 4100);
        s.take_events();
        assert!(
            s.check_speculatable_tasks(4200),
            "speculated well below the threshold"
        );
        let marked: Vec<u32> = s
            .take_events()
            .into_iter()
            .filter_map(|e| match e {
                SchedulerEvent::Dag(DagEvent::SpeculativeTaskSubmitted { index, .. }) => Some(index),
                _ => None,
            })
            .collect();
        assert_eq!(marked.len(), 2);
        // Without the kill interval nothing is speculated.
        let mut config = TaskSchedulerConfig::default();
        config.speculation.enabled = true;
        config.speculation.quantile = 0.5;
        let mut s = sched(config);
        s.submit_tasks(task_set(0, 0, 0, no_pref(3), false), 0);
        let l = s.resource_offers(&[offer("2", "h2", 1)], true, 0);
        s.status_update(l[0].task_id, finished(1), 5000);
        s.resource_offers(&[offer("1", "h1", 2)], true, 4000);
        s.executor_decommission("1", None, 4100);
        assert!(!s.check_speculatable_tasks(4200));
    }

    fn barrier_set(stage: u32, tasks: Vec<TaskSpec>) -> TaskSet {
        TaskSet {
            is_barrier: true,
            ..task_set(stage, 0, 0, tasks, true)
        }
    }

    #[test]
    fn a_barrier_task_set_waits_for_enough_slots_then_launches_all_at_once() {
        let mut s = sched(TaskSchedulerConfig::default());
        s.submit_tasks(barrier_set(0, no_pref(3)), 0);
        // Two slots for three tasks: nothing launches.
        assert!(s
            .resource_offers(&[offer("1", "h1", 1), offer("2", "h2", 1)], true, 0)
            .is_empty());
        assert!(!s.has_launched_task());
        // Three slots: all three in the same round.
        let l = s.resource_offers(&[offer("1", "h1", 2), offer("2", "h2", 1)], true, 1);
        assert_eq!(l.len(), 3);
        let mut indices: Vec<u32> = l.iter().map(|t| t.index).collect();
        indices.sort_unstable();
        assert_eq!(indices, vec![0, 1, 2]);
        let started = s
            .take_events()
            .into_iter()
            .filter(|e| matches!(e, SchedulerEvent::Dag(DagEvent::BeginEvent { .. })))
            .count();
        assert_eq!(started, 3);
        assert_eq!(s.running_tasks("1") + s.running_tasks("2"), 3);
    }

    #[test]
    fn a_barrier_task_set_that_gets_part_of_its_tasks_placed_takes_none() {
        let mut s = sched(TaskSchedulerConfig::default());
        s.resource_offers(
            &[offer("1", "h1", 1), offer("2", "h2", 1), offer("3", "h3", 1)],
            true,
            0,
        );
        // Task 0 wants h1, task 1 wants h2.
        let tasks = vec![
            TaskSpec {
                index: 0,
                partition_id: 0,
                preferred_locations: vec![TaskLocation::Host("h1".into())],
            },
            TaskSpec {
                index: 1,
                partition_id: 1,
                preferred_locations: vec![TaskLocation::Host("h2".into())],
            },
        ];
        s.submit_tasks(barrier_set(0, tasks), 0);
        s.take_events();
        // h1 and h3 offered (two slots): task 0 fits h1 at NODE_LOCAL, task 1 is held back
        // by its locality wait. A partial placement is taken back.
        let l = s.resource_offers(&[offer("1", "h1", 1), offer("3", "h3", 1)], true, 10);
        assert!(l.is_empty(), "{:?}", ids(&l));
        assert!(s
            .take_events()
            .iter()
            .all(|e| !matches!(e, SchedulerEvent::Dag(DagEvent::BeginEvent { .. }))));
        assert_eq!(
            s.task_set_manager(0, 0).unwrap().pending_task_indices(),
            vec![0, 1]
        );
        // Both preferred hosts free: both launch, each on its host.
        let l = s.resource_offers(&[offer("1", "h1", 1), offer("2", "h2", 1)], true, 20);
        let mut placed: Vec<(u32, String)> = l.iter().map(|t| (t.index, t.host.clone())).collect();
        placed.sort();
        assert_eq!(placed, vec![(0, "h1".to_string()), (1, "h2".to_string())]);
    }

    #[test]
    fn a_partial_barrier_round_gives_its_cores_to_the_next_task_set() {
        let mut s = sched(TaskSchedulerConfig::default());
        s.resource_offers(&[offer("1", "h1", 1), offer("3", "h3", 1)], true, 0);
        let tasks = vec![
            TaskSpec {
                index: 0,
                partition_id: 0,
                preferred_locations: vec![TaskLocation::Host("h1".into())],
            },
            TaskSpec {
                index: 1,
                partition_id: 1,
                preferred_locations: vec![TaskLocation::Host("h2".into())],
            },
        ];
        s.submit_tasks(barrier_set(0, tasks), 0);
        // A later job's plain task set takes the cores the barrier set gave back.
        s.submit_tasks(task_set(1, 0, 1, no_pref(2), false), 0);
        let l = s.resource_offers(&[offer("1", "h1", 1), offer("3", "h3", 1)], true, 10);
        assert_eq!(l.len(), 2, "{:?}", ids(&l));
        assert!(l.iter().all(|t| t.stage_id == 1));
    }

    #[test]
    fn a_failed_barrier_task_stops_its_set_without_retry_or_speculation() {
        let mut config = TaskSchedulerConfig::default();
        config.speculation.enabled = true;
        config.speculation.quantile = 0.5;
        let mut s = sched(config);
        s.submit_tasks(barrier_set(0, no_pref(3)), 0);
        let l = s.resource_offers(&[offer("1", "h1", 3)], true, 0);
        assert_eq!(l.len(), 3);
        for t in &l {
            s.status_update(t.task_id, TaskUpdate::Running, 1);
        }
        s.status_update(l[0].task_id, finished(1), 10);
        s.status_update(l[1].task_id, finished(1), 10);
        assert!(
            !s.check_speculatable_tasks(100_000),
            "no speculation of barrier tasks"
        );
        s.take_events();
        s.status_update(l[2].task_id, TaskUpdate::Failed(boom()), 20);
        let events = s.take_events();
        assert_eq!(ended(&events), vec![(l[2].task_id, boom())]);
        assert_eq!(
            revives(&events),
            0,
            "not retried here: the DAGScheduler retries the stage"
        );
        assert!(failed_sets(&events).is_empty(), "nor counted towards maxFailures");
        assert_eq!(s.num_task_sets(), 0, "zombie with nothing running: gone");
    }

    #[test]
    fn delay_timer_resets_after_a_local_launch_in_a_full_round() {
        let mut s = sched(TaskSchedulerConfig::default());
        s.resource_offers(&[offer("1", "h1", 0)], true, 0);
        s.submit_tasks(task_set(0, 0, 0, on_host(4, "h1"), false), 0);
        // A launch on the preferred host resets the wait, so h2 keeps waiting.
        let l = s.resource_offers(&[offer("1", "h1", 1)], true, 2500);
        assert_eq!(ids(&l), vec![(0, 0, NodeLocal)]);
        assert!(s.resource_offers(&[offer("2", "h2", 1)], false, 4000).is_empty());
        assert!(s.resource_offers(&[offer("2", "h2", 1)], false, 5499).is_empty());
        // The single-executor offer above rejected a task, so its later local launch does
        // not reset the timer (noRejectsSinceLastReset = false) ...
        let l = s.resource_offers(&[offer("1", "h1", 1)], false, 5000);
        assert_eq!(ids(&l), vec![(1, 1, NodeLocal)]);
        // ... and the wait from 2500 expires at 5500.
        let l = s.resource_offers(&[offer("2", "h2", 1)], false, 5500);
        assert_eq!(ids(&l), vec![(2, 2, Any)]);
    }

    /// Pushes `n` tiny no-pref tasks through one executor with `cores` cores the way the
    /// backend does: a full offer first, then per status update a one-executor offer.
    fn run_tiny_tasks(n: u32, cores: u32) -> TaskSchedulerImpl {
        let mut s = sched(TaskSchedulerConfig::default());
        s.submit_tasks(task_set(0, 0, 0, no_pref(n), false), 0);
        let mut queue: std::collections::VecDeque<u64> = s
            .resource_offers(&[offer("1", "h1", cores)], true, 0)
            .iter()
            .map(|t| t.task_id)
            .collect();
        let one = [offer("1", "h1", 1)];
        let mut now = 0;
        while let Some(tid) = queue.pop_front() {
            now += 1;
            s.status_update(tid, TaskUpdate::Running, now);
            s.status_update(tid, finished(100), now);
            for t in s.resource_offers(&one, false, now) {
                queue.push_back(t.task_id);
            }
            s.take_events();
        }
        s
    }

    #[test]
    fn work_per_task_stays_bounded() {
        let small = run_tiny_tasks(2_000, 8);
        let large = run_tiny_tasks(20_000, 8);
        assert_eq!(small.num_task_sets(), 0);
        assert_eq!(large.num_task_sets(), 0);
        let per_small = small.work_counter() as f64 / 2_000.0;
        let per_large = large.work_counter() as f64 / 20_000.0;
        assert!(per_large < 20.0, "work per task {per_large}");
        assert!(per_large <= per_small * 1.1 + 0.5, "{per_small} -> {per_large}");
    }

    #[test]
    #[ignore = "timing; run by hand with --release -- --ignored --nocapture"]
    fn time_100k_tiny_tasks_on_8_cores() {
        let start = std::time::Instant::now();
        let s = run_tiny_tasks(100_000, 8);
        let elapsed = start.elapsed();
        assert_eq!(s.num_task_sets(), 0);
        println!(
            "100000 tasks x 8 cores: {:?} total, {:.0} ns/task",
            elapsed,
            elapsed.as_nanos() as f64 / 100_000.0
        );
    }
}
