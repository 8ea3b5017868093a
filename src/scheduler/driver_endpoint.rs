//! DriverEndpoint (CoarseGrainedSchedulerBackend.DriverEndpoint, Spark's
//! `CoarseGrainedScheduler`): where executors register.
//!
//! Layer: scheduler (the Spark side: the driver's schedulers, above rdd).
//!
//! It keeps the executor map: an executor registers with zero free cores and gets its cores
//! when it reports LaunchedExecutor; a duplicate id is refused with Spark's message. It
//! watches every registered executor, which stands for Spark's RPC disconnect: when one
//! ends, the YARN rule applies (YarnDriverEndpoint.onDisconnected): the executor is
//! disabled (its loss reason pending) and the YarnSchedulerEndpoint asks the AM why it was
//! lost, then sends RemoveExecutor back here. The executor map is kept by the supervisor
//! (a restarted endpoint keeps knowing its executors).
//!
//! Tasks: the DriverEndpoint owns the TaskSchedulerImpl; no other actor touches it. The
//! DAGScheduler posts its task sets, kills and cancels ([`TaskSchedulerCommand`]) to a
//! durable inbox of this endpoint (a command posted while it restarts is taken by the next
//! incarnation); the speculation timer sends CheckSpeculatableTasks. ReviveOffers (the
//! revive timer, a submitted task set) and LaunchedExecutor / StatusUpdate offer free cores
//! to the TaskSchedulerImpl (makeOffers); launchTasks encodes each TaskDescription, refuses
//! one of `spark.rpc.message.maxSize` or more by aborting its task set with Spark's
//! message, takes the cores and sends LaunchTask. StatusUpdate goes to the TaskSchedulerImpl
//! (statusUpdate, with the decoded result) and, once the task is finished, gives the cores
//! back and offers that executor again. What the TaskScheduler has to say is routed in one
//! place ([`DriverEndpoint::route`]): DAGSchedulerEvents (task started, task ended carrying
//! its result, task set failed, executor added or lost, speculative task) go to the
//! DAGScheduler's inbox, KillTask to the executor, ReviveOffers back here. RemoveExecutor
//! fails the executor's running tasks as executor-lost (the task sets retry them). The
//! starvation timer (TaskSchedulerImpl.submitTasks on the first task set) runs here: every
//! `spark.starvation.timeout` (15 s) it warns "Initial job has not accepted any resources;
//! check your cluster UI to ensure that workers are registered and have sufficient
//! resources" until a task has launched. The TaskSchedulerImpl, the executor map and the
//! command inbox are kept by the driver's supervisor, so a restarted endpoint keeps every
//! task set, and re-arms the starvation timer if no task has launched yet.
//!
//! What others read of the executor map (Spark's synchronized reads of
//! CoarseGrainedSchedulerBackend: `isExecutorActive` for the ExecutorAllocationManager's
//! listener, `maxNumConcurrentTasks` for the DAGScheduler) is published as a view,
//! [`ActiveExecutors`], once at the end of each turn of the mailbox that changed it (at
//! once when an incarnation starts and when it kills executors).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, ActorFutureExt, AsyncContext, Context, Handler, MessageResult, SpawnHandle, WrapFuture};
use serde::Serialize;

use super::console_progress_bar::GetStageProgress;
use super::dag_scheduler::DagEventSender;
use super::events::{SparkListenerEvent, TaskEndReason};
use super::listener_bus::ListenerBusRef;
use super::loss_reason::ExecutorLossReason;
use super::messages::*;
use super::task::{KillTask, LaunchTask, ReviveOffers, StatusUpdate, TaskResult, TaskState};
use super::task_scheduler::{TaskSchedulerCommand, TaskSchedulerImpl};
use super::task_set::{SchedulerEvent, TaskLaunch, TaskUpdate, WorkerOffer};
use crate::conf::SparkConf;
use crate::rpc::EndpointRef;
use crate::runtime::timers::{run_at_fixed_rate, run_later};
use crate::runtime::{ActorPath, DurableInbox, Kept, Me, Publisher, Terminated, WakeInbox};

/// What the driver knows of one executor (Spark's ExecutorData).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExecutorData {
    pub executor_ref: ActorPath,
    pub host: String,
    pub total_cores: u32,
    pub free_cores: u32,
    pub resource_profile_id: u32,
    /// Milliseconds since the epoch.
    pub registration_ts: u64,
}

/// The backend state that outlives a restart of the endpoint.
#[derive(Debug, Default)]
pub struct DriverState {
    pub executors: BTreeMap<String, ExecutorData>,
    pub total_core_count: u32,
    pub total_registered_executors: u32,
    /// The highest numeric executor id ever registered.
    pub current_executor_id_counter: u64,
    /// Executors whose loss is known but whose reason is awaited from the AM.
    pub pending_loss_reason: BTreeSet<String>,
    /// Executors asked to be killed and not gone yet (Spark's executorsPendingToRemove):
    /// no task is offered to them; `true` = killed by the driver (their loss is
    /// `ExecutorKilled` and their tasks' failures do not count).
    pub pending_to_remove: BTreeMap<String, bool>,
    /// The executor totals last requested per resource profile (None: never requested;
    /// the AM started with the initial target).
    pub requested_totals: Option<BTreeMap<u32, u32>>,
    /// The placement hints last requested with them (numLocalityAwareTasksPerResourceProfileId,
    /// rpHostToLocalTaskCount), sent again with any later request of totals.
    pub requested_locality_aware_tasks: BTreeMap<u32, u32>,
    pub requested_host_to_local_task_count: BTreeMap<u32, BTreeMap<String, u32>>,
    /// Executors being decommissioned (Spark's executorsPendingDecommission): no task is
    /// offered to them, and their loss is `ExecutorDecommission` with this info.
    pub pending_decommission: BTreeMap<String, ExecutorDecommissionInfo>,
    /// When a decommissioning executor that has not gone is killed
    /// (`spark.executor.decommission.forceKillTimeout`), epoch milliseconds.
    pub decommission_deadlines: BTreeMap<String, u64>,
}

impl DriverState {
    /// Spark's `maxNumConcurrentTasks`: the task slots of the active executors (their cores
    /// over `cpus_per_task`), busy or not.
    pub fn max_num_concurrent_tasks(&self, cpus_per_task: u32) -> u32 {
        let cpt = cpus_per_task.max(1);
        self.active().map(|(_, d)| d.total_cores / cpt).sum()
    }

    /// The active executors, in id order. When none is being killed, lost or decommissioned
    /// (nearly always) that is every registered one, found without a lookup per executor:
    /// the view is rebuilt at each registration, and 1,000 executors made that quadratic.
    pub fn active(&self) -> impl Iterator<Item = (&String, &ExecutorData)> {
        let all = self.pending_to_remove.is_empty()
            && self.pending_loss_reason.is_empty()
            && self.pending_decommission.is_empty();
        self.executors
            .iter()
            .filter(move |(id, _)| all || self.is_executor_active(id))
    }

    /// Spark's `isExecutorActive`: registered, and neither being killed, nor lost with its
    /// reason pending, nor decommissioning.
    pub fn is_executor_active(&self, id: &str) -> bool {
        self.executors.contains_key(id)
            && !self.pending_to_remove.contains_key(id)
            && !self.pending_loss_reason.contains(id)
            && !self.pending_decommission.contains_key(id)
    }
}

/// What the DriverEndpoint publishes of its executor map (see the module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ActiveExecutors {
    /// Spark's `isExecutorActive`: registered, and neither being killed, nor lost with its
    /// reason pending, nor decommissioning.
    pub ids: BTreeSet<String>,
    /// Spark's `maxNumConcurrentTasks`: their cores over `spark.task.cpus`.
    pub task_slots: u32,
}

impl ActiveExecutors {
    /// What `state` says, with `cpus_per_task` cores per task.
    pub fn of(state: &DriverState, cpus_per_task: u32) -> Self {
        ActiveExecutors {
            ids: state.active().map(|(id, _)| id.clone()).collect(),
            task_slots: state.max_num_concurrent_tasks(cpus_per_task),
        }
    }

    pub fn is_active(&self, executor_id: &str) -> bool {
        self.ids.contains(executor_id)
    }
}

/// The peers the DriverEndpoint talks to.
#[derive(Clone)]
pub struct DriverLinks {
    pub yarn_scheduler: ActorPath,
    pub dag_scheduler: ActorPath,
    /// The DAGScheduler's event inbox.
    pub dag: DagEventSender,
    pub bus: ListenerBusRef,
}

/// What the DriverEndpoint alone owns and keeps across its restarts (held by the driver's
/// supervisor, handed to each incarnation).
#[derive(Clone)]
pub struct DriverKept {
    /// The executor map.
    pub state: Kept<DriverState>,
    pub task_scheduler: Kept<TaskSchedulerImpl>,
    /// The DAGScheduler's task sets, kills and cancels.
    pub commands: DurableInbox<TaskSchedulerCommand>,
    /// What others read of the executor map.
    pub executors: Publisher<ActiveExecutors>,
}

/// checkSpeculatableTasks (the speculation timer's tick); offers are revived if a task was
/// found speculatable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, actix::Message)]
#[rtype(result = "()")]
pub struct CheckSpeculatableTasks;

/// How many task-scheduler commands one wake handles before letting other messages in.
const COMMAND_BATCH: usize = 64;

/// TaskSchedulerImpl's starvation warning.
const STARVATION_WARNING: &str = "Initial job has not accepted any resources; check your cluster UI to ensure that workers are registered and have sufficient resources";

/// TaskDescription's encoding, borrowing the stage binary instead of copying it (the same
/// fields in the same order, so it decodes as a [`super::task::TaskDescription`]).
#[derive(Serialize)]
struct TaskDescriptionRef<'a> {
    task_id: u64,
    attempt_number: u32,
    executor_id: &'a str,
    name: &'a str,
    index: u32,
    partition_id: u32,
    stage_id: u32,
    stage_attempt_id: u32,
    job_id: u32,
    cpus: u32,
    #[serde(with = "serde_bytes")]
    stage_binary: &'a [u8],
    #[serde(with = "serde_bytes")]
    slice: Option<&'a [u8]>,
}

/// Encodes the TaskDescription of a launch decision.
pub fn encode_task(t: &TaskLaunch) -> Result<Vec<u8>, String> {
    let slice = t.slice.as_deref();
    // Sized for the whole description at once: grown from empty, a tiny task's 181 bytes
    // took several reallocations (2% of the driver's thread at 100,000 tiny tasks a job
    // with records at WARN).
    let fixed = 64 + t.executor_id.len() + t.name.len();
    let mut out = Vec::with_capacity(fixed + t.binary.stage_bytes.len() + slice.map_or(0, <[u8]>::len));
    rmp_serde::encode::write(
        &mut out,
        &TaskDescriptionRef {
            task_id: t.task_id,
            attempt_number: t.attempt_number,
            executor_id: &t.executor_id,
            name: &t.name,
            index: t.index,
            partition_id: t.partition_id,
            stage_id: t.stage_id,
            stage_attempt_id: t.stage_attempt_id,
            job_id: t.job_id,
            cpus: t.cpus,
            stage_binary: &t.binary.stage_bytes,
            slice,
        },
    )
    .map_err(|e| e.to_string())?;
    Ok(out)
}

/// The DriverEndpoint actor; see the module docs.
pub struct DriverEndpoint {
    me: Me,
    conf: Arc<SparkConf>,
    links: DriverLinks,
    state: Kept<DriverState>,
    task_scheduler: Kept<TaskSchedulerImpl>,
    commands: DurableInbox<TaskSchedulerCommand>,
    executors_view: Publisher<ActiveExecutors>,
    /// What was last published (each incarnation publishes once when it starts).
    published: Option<ActiveExecutors>,
    /// The starvation timer, while it runs.
    starvation_timer: Option<SpawnHandle>,
    /// The paths of the ApplicationMaster and its endpoint this driver runs under, found once
    /// (asked for each finished task, see `attempt_alive`); `None` inside: not under one.
    attempt_paths: std::cell::OnceCell<Option<(ActorPath, ActorPath)>>,
    stopping: bool,
    /// A ReviveOffers to self is queued (the TaskScheduler's requests coalesce).
    revive_queued: bool,
    /// A PublishExecutors to self is queued (a burst of registrations or losses publishes
    /// the view once).
    publish_queued: bool,
    /// AwaitExecutors asks not answered yet: (count wanted, reply).
    executor_waiters: Vec<(usize, tokio::sync::oneshot::Sender<usize>)>,
    max_rpc_message_size: u64,
    /// Finished tasks kept aside while a fault plan holds the progress, in arrival order.
    held: std::collections::VecDeque<StatusUpdate>,
}

impl DriverEndpoint {
    pub fn new(me: Me, conf: Arc<SparkConf>, links: DriverLinks, kept: DriverKept) -> Self {
        let max_rpc_message_size = conf
            .get(&crate::conf::RPC_MESSAGE_MAX_SIZE)
            .unwrap_or(128 * 1024 * 1024);
        DriverEndpoint {
            me,
            conf,
            links,
            state: kept.state,
            task_scheduler: kept.task_scheduler,
            commands: kept.commands,
            executors_view: kept.executors,
            published: None,
            starvation_timer: None,
            attempt_paths: std::cell::OnceCell::new(),
            stopping: false,
            revive_queued: false,
            publish_queued: false,
            executor_waiters: Vec::new(),
            max_rpc_message_size,
            held: std::collections::VecDeque::new(),
        }
    }

    fn executor(&self, executor_ref: &ActorPath) -> EndpointRef<ExecutorProtocol> {
        self.me.endpoint(executor_ref)
    }

    fn now(&self) -> u64 {
        self.me.clock().epoch_millis()
    }

    /// In cluster mode (the driver inside the AM container, `…/am/driver/driver-endpoint`):
    /// whether the attempt's ApplicationMaster still runs. Always true in client mode.
    fn attempt_alive(&self) -> bool {
        let paths = self.attempt_paths.get_or_init(|| {
            let am = self.me.path().parent().and_then(|driver| driver.parent())?;
            if am.name() != "am" {
                return None;
            }
            let master = am.child("application-master").ok()?;
            Some((am, master))
        });
        let Some((am, master)) = paths else {
            return true;
        };
        let registry = self.me.cluster().registry();
        registry
            .shared(master)
            .is_some_and(|cell| !cell.is_ending() && !cell.is_done())
            && registry.shared(am).is_some_and(|cell| !cell.is_ending())
    }

    /// Runs `call` on the TaskSchedulerImpl and routes what it said.
    fn with_task_scheduler<R>(
        &mut self,
        ctx: &mut Context<Self>,
        call: impl FnOnce(&mut TaskSchedulerImpl) -> R,
    ) -> R {
        let (out, events) = {
            let mut ts = self.task_scheduler.lock();
            let out = call(&mut ts);
            (out, ts.take_events())
        };
        self.route(events, ctx);
        out
    }

    /// The one place where what the TaskScheduler said goes to whom it concerns:
    /// DAGSchedulerEvents to the DAGScheduler's inbox, KillTask to the executor,
    /// ReviveOffers (coalesced) back here.
    fn route(&mut self, events: Vec<SchedulerEvent>, ctx: &mut Context<Self>) {
        for ev in events {
            match ev {
                SchedulerEvent::Dag(event) => {
                    // Unbounded: a post is never refused.
                    let _ = self.links.dag.send(event);
                }
                SchedulerEvent::KillTask(kill) => self.kill_task(kill),
                SchedulerEvent::ReviveOffers => {
                    if !self.revive_queued {
                        self.revive_queued = true;
                        ctx.notify(ReviveOffers);
                    }
                }
            }
        }
    }

    /// Carries out one of the DAGScheduler's commands.
    fn command(&mut self, command: TaskSchedulerCommand, ctx: &mut Context<Self>) {
        let now = self.now();
        match command {
            TaskSchedulerCommand::SubmitTasks(task_set) => {
                let first = self.with_task_scheduler(ctx, |ts| {
                    let first = !ts.has_received_task();
                    ts.submit_tasks(task_set, now);
                    first
                });
                if first {
                    self.arm_starvation_timer(ctx);
                }
            }
            TaskSchedulerCommand::KillAllTaskAttempts { stage_id, reason } => {
                self.with_task_scheduler(ctx, |ts| ts.kill_all_task_attempts(stage_id, &reason))
            }
            TaskSchedulerCommand::CancelTasks { stage_id, reason } => {
                self.with_task_scheduler(ctx, |ts| ts.cancel_tasks(stage_id, &reason))
            }
        }
    }

    /// The starvation timer (TaskSchedulerImpl.submitTasks on the first task set): warns
    /// every `spark.starvation.timeout` while no task has launched, then stops itself.
    fn arm_starvation_timer(&mut self, ctx: &mut Context<Self>) {
        if self.starvation_timer.is_some() {
            return;
        }
        let (period, pending) = {
            let ts = self.task_scheduler.lock();
            (
                Duration::from_millis(ts.config().starvation_timeout_ms.max(1)),
                ts.num_pending_tasks(),
            )
        };
        tracing::debug!(
            timeout_ms = period.as_millis() as u64,
            pending_tasks = pending as u64,
            "Starvation timer started"
        );
        let clock = self.me.clock().clone();
        let handle = run_at_fixed_rate(ctx, &clock, period, period, |act: &mut Self, ctx| {
            let (starving, pending) = {
                let ts = act.task_scheduler.lock();
                (ts.is_starving(), ts.num_pending_tasks())
            };
            if starving {
                tracing::warn!(
                    event = "starvation",
                    pending_tasks = pending as u64,
                    "{STARVATION_WARNING}"
                );
            } else if let Some(handle) = act.starvation_timer.take() {
                ctx.cancel_future(handle);
            }
        });
        self.starvation_timer = Some(handle);
    }

    /// Publishes the view at the end of this turn: a burst of registrations or losses (a
    /// thousand executors starting or stopping) publishes once, not once each, and building
    /// the view is a pass over every executor. Its readers (the DAGScheduler, the allocation
    /// manager) run on this arbiter and the publication runs before this turn ends, so none
    /// of them sees the view between a change and its publication.
    fn publish_executors_soon(&mut self, ctx: &mut Context<Self>) {
        if !self.publish_queued {
            self.publish_queued = true;
            ctx.notify(PublishExecutors);
        }
    }

    /// Publishes the active executors and task slots if they changed.
    fn publish_executors(&mut self) {
        let cpus_per_task = self.task_scheduler.lock().config().cpus_per_task;
        let view = ActiveExecutors::of(&self.state.lock(), cpus_per_task);
        if self.published.as_ref() != Some(&view) {
            self.executors_view.publish(view.clone());
            self.published = Some(view);
        }
    }

    fn kill_task(&self, msg: KillTask) {
        let target = self
            .state
            .lock()
            .executors
            .get(&msg.executor_id)
            .map(|d| d.executor_ref.clone());
        match target {
            Some(path) => {
                let _ = self.executor(&path).tell(msg);
            }
            None => tracing::warn!(
                task_id = msg.task_id,
                executor_id = msg.executor_id.as_str(),
                "Attempted to kill task {} for unknown executor {}.",
                msg.task_id,
                msg.executor_id
            ),
        }
    }

    /// makeOffers: the free cores of every active executor (`only` = one executor's).
    fn make_offers(&mut self, only: Option<&str>, ctx: &mut Context<Self>) {
        if self.stopping {
            return;
        }
        let offers: Vec<WorkerOffer> = {
            let st = self.state.lock();
            let active = |id: &str, d: &ExecutorData| d.free_cores > 0 && st.is_executor_active(id);
            match only {
                Some(id) => st
                    .executors
                    .get(id)
                    .filter(|d| active(id, d))
                    .map(|d| WorkerOffer {
                        executor_id: id.to_string(),
                        host: d.host.clone(),
                        cores: d.free_cores,
                    })
                    .into_iter()
                    .collect(),
                None => st
                    .active()
                    .filter(|(_, d)| d.free_cores > 0)
                    .map(|(id, d)| WorkerOffer {
                        executor_id: id.clone(),
                        host: d.host.clone(),
                        cores: d.free_cores,
                    })
                    .collect(),
            }
        };
        if offers.is_empty() {
            return;
        }
        let now = self.now();
        let launches = self.with_task_scheduler(ctx, |ts| ts.resource_offers(&offers, only.is_none(), now));
        if !launches.is_empty() {
            self.launch_tasks(launches, ctx);
        }
    }

    /// launchTasks: encode, check the size, take the cores, send LaunchTask.
    fn launch_tasks(&mut self, launches: Vec<TaskLaunch>, ctx: &mut Context<Self>) {
        let mut aborted = Vec::new();
        for t in launches {
            let data = match encode_task(&t) {
                Ok(d) => d,
                Err(e) => {
                    aborted.push((t.stage_id, t.stage_attempt_id, format!("Failed to serialize task {}, not attempting to retry it. Exception during serialization: {e}", t.task_id)));
                    continue;
                }
            };
            if data.len() as u64 >= self.max_rpc_message_size {
                let msg = format!(
                    "Serialized task {}:{} was {} bytes, which exceeds max allowed: spark.rpc.message.maxSize ({} bytes). Consider increasing spark.rpc.message.maxSize or using broadcast variables for large values.",
                    t.task_id,
                    t.index,
                    data.len(),
                    self.max_rpc_message_size
                );
                tracing::error!(task_id = t.task_id, stage_id = t.stage_id, "{msg}");
                aborted.push((t.stage_id, t.stage_attempt_id, msg));
                continue;
            }
            let target = {
                let mut st = self.state.lock();
                st.executors.get_mut(&t.executor_id).map(|d| {
                    d.free_cores = d.free_cores.saturating_sub(t.cpus);
                    d.executor_ref.clone()
                })
            };
            match target {
                Some(path) => {
                    tracing::debug!(
                        task_id = t.task_id,
                        executor_id = t.executor_id.as_str(),
                        "Launching task {} on executor id: {} hostname: {}.",
                        t.task_id,
                        t.executor_id,
                        t.host
                    );
                    if self.executor(&path).tell(LaunchTask { data }).is_err() {
                        tracing::warn!(
                            task_id = t.task_id,
                            executor_id = t.executor_id.as_str(),
                            "Executor {} is not running; TID {} will fail when its loss is known",
                            t.executor_id,
                            t.task_id
                        );
                    }
                }
                None => tracing::warn!(
                    task_id = t.task_id,
                    "Launch decision for unknown executor {}",
                    t.executor_id
                ),
            }
        }
        if !aborted.is_empty() {
            self.with_task_scheduler(ctx, |ts| {
                for (stage, attempt, msg) in aborted {
                    ts.abort_task_set(stage, attempt, &msg);
                }
            });
        }
    }

    /// Executors registered, not pending a loss reason and not being killed.
    fn active_executors(&self) -> usize {
        let st = self.state.lock();
        st.active().count()
    }

    fn yarn_scheduler(&self) -> EndpointRef<YarnSchedulerProtocol> {
        self.me.endpoint(&self.links.yarn_scheduler)
    }

    /// Answers the AwaitExecutors asks that are satisfied now.
    fn wake_executor_waiters(&mut self) {
        if self.executor_waiters.is_empty() {
            return;
        }
        let active = self.active_executors();
        let (ready, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut self.executor_waiters)
            .into_iter()
            .partition(|(n, _)| *n <= active);
        self.executor_waiters = waiting;
        for (_, tx) in ready {
            let _ = tx.send(active);
        }
    }

    fn post(&self, event: SparkListenerEvent) {
        self.links.bus.post(event);
    }

    fn remove_executor(&mut self, executor_id: &str, reason: &ExecutorLossReason, ctx: &mut Context<Self>) {
        let killed_by_driver;
        let decommissioned;
        let removed = {
            let mut st = self.state.lock();
            st.pending_loss_reason.remove(executor_id);
            killed_by_driver = st.pending_to_remove.remove(executor_id).unwrap_or(false);
            decommissioned = st.pending_decommission.remove(executor_id);
            st.decommission_deadlines.remove(executor_id);
            let data = st.executors.remove(executor_id);
            if let Some(d) = &data {
                st.total_core_count = st.total_core_count.saturating_sub(d.total_cores);
                st.total_registered_executors = st.total_registered_executors.saturating_sub(1);
            }
            data
        };
        self.publish_executors_soon(ctx);
        // An executor the driver killed is lost as ExecutorKilled, whatever the AM says; one
        // being decommissioned is lost as ExecutorDecommission (its tasks' failures do not
        // count, and its map outputs are rerun).
        let effective = match (&removed, killed_by_driver, decommissioned) {
            (Some(_), true, _) => Some(ExecutorLossReason::ExecutorKilled),
            (Some(_), false, Some(info)) => Some(ExecutorLossReason::ExecutorDecommission {
                worker_host: info.worker_host,
                reason: info.message,
            }),
            _ => None,
        };
        let reason = effective.as_ref().unwrap_or(reason);
        match removed {
            Some(data) => {
                let _ = self.executor(&data.executor_ref).tell(StopExecutor);
                tracing::info!(
                    event = "executor_removed",
                    executor_id,
                    reason = %reason,
                    caused_by_app = reason.caused_by_app(),
                    "Removed executor {executor_id} on {}: {reason}",
                    data.host
                );
                let now = self.now();
                self.with_task_scheduler(ctx, |ts| ts.executor_lost(executor_id, reason, now));
            }
            None => {
                tracing::info!(executor_id, reason = %reason, "Asked to remove non-existent executor {executor_id}")
            }
        }
        self.post(SparkListenerEvent::ExecutorRemoved {
            time: self.now(),
            executor_id: executor_id.to_string(),
            reason: reason.to_string(),
        });
    }
}

impl Actor for DriverEndpoint {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        // A restarted endpoint watches the executors it already knows again (one that died
        // meanwhile is reported at once, and its loss goes the usual way).
        let known: Vec<(String, ActorPath)> = self
            .state
            .lock()
            .executors
            .iter()
            .map(|(id, d)| (id.clone(), d.executor_ref.clone()))
            .collect();
        let me = self.me.clone();
        for (_, path) in &known {
            me.watch(ctx, path);
        }
        self.rearm_force_kills(ctx);
        // The view readers see is this incarnation's from now on.
        self.publish_executors();
        // The DAGScheduler's commands that came while no incarnation ran (a wake sent to
        // the previous one died with its mailbox).
        self.commands.restarted();
        ctx.notify(WakeInbox::new());
        if self.task_scheduler.lock().is_starving() {
            // The starvation timer died with the previous incarnation.
            self.arm_starvation_timer(ctx);
        }
        if self.me.incarnation() <= 1 || known.is_empty() {
            return;
        }
        // What the previous incarnation's mailbox held is gone: status updates, an
        // executor's LaunchedExecutor. Each executor reports again.
        let mut asked = 0u64;
        for (id, path) in known {
            let task_ids = self.task_scheduler.lock().running_task_ids(&id);
            asked += task_ids.len() as u64;
            let _ = self.executor(&path).tell(ReportTaskStatuses { task_ids });
        }
        tracing::info!(
            event = "reconciled",
            executors = self.state.lock().executors.len() as u64,
            tasks = asked,
            "DriverEndpoint restarted: asking every executor to report its {asked} running task(s) again"
        );
        // The timer's next ReviveOffers may be a second away.
        ctx.notify(ReviveOffers);
    }
}

impl Handler<RegisterExecutor> for DriverEndpoint {
    type Result = Result<bool, String>;

    fn handle(&mut self, msg: RegisterExecutor, ctx: &mut Context<Self>) -> Result<bool, String> {
        let mut st = self.state.lock();
        if st.executors.contains_key(&msg.executor_id) {
            tracing::error!(
                executor_id = msg.executor_id.as_str(),
                "Duplicate executor ID: {}",
                msg.executor_id
            );
            return Err(format!("Duplicate executor ID: {}", msg.executor_id));
        }
        st.total_core_count += msg.cores;
        st.total_registered_executors += 1;
        if let Ok(n) = msg.executor_id.parse::<u64>() {
            st.current_executor_id_counter = st.current_executor_id_counter.max(n);
        }
        st.executors.insert(
            msg.executor_id.clone(),
            ExecutorData {
                executor_ref: msg.executor_ref.clone(),
                host: msg.hostname.clone(),
                total_cores: msg.cores,
                free_cores: 0,
                resource_profile_id: msg.resource_profile_id,
                registration_ts: self.me.clock().epoch_millis(),
            },
        );
        let registered = st.total_registered_executors;
        drop(st);
        self.publish_executors_soon(ctx);
        tracing::info!(
            event = "executor_registered",
            executor_id = msg.executor_id.as_str(),
            host = msg.hostname.as_str(),
            executor_ref = msg.executor_ref.as_str(),
            cores = msg.cores,
            registered,
            "Registered executor {} ({}) with ID {}, ResourceProfileId {}",
            msg.executor_ref,
            msg.hostname,
            msg.executor_id,
            msg.resource_profile_id
        );
        let me = self.me.clone();
        me.watch(ctx, &msg.executor_ref);
        self.post(SparkListenerEvent::ExecutorAdded {
            time: self.now(),
            executor_id: msg.executor_id.clone(),
            host: msg.hostname.clone(),
            total_cores: msg.cores,
            resource_profile_id: msg.resource_profile_id,
        });
        self.wake_executor_waiters();
        Ok(true)
    }
}

impl Handler<LaunchedExecutor> for DriverEndpoint {
    type Result = ();

    fn handle(&mut self, msg: LaunchedExecutor, ctx: &mut Context<Self>) {
        let busy = {
            let ts = self.task_scheduler.lock();
            ts.running_tasks(&msg.executor_id) as u32 * ts.config().cpus_per_task
        };
        let known = {
            let mut st = self.state.lock();
            match st.executors.get_mut(&msg.executor_id) {
                Some(data) => {
                    // All its cores, but those of tasks already running there (a second
                    // LaunchedExecutor, for a restarted endpoint, comes while tasks run).
                    data.free_cores = data.total_cores.saturating_sub(busy);
                    tracing::info!(
                        executor_id = msg.executor_id.as_str(),
                        free_cores = data.free_cores,
                        "executor {} launched; {} cores free",
                        msg.executor_id,
                        data.free_cores
                    );
                    true
                }
                None => {
                    tracing::warn!(
                        executor_id = msg.executor_id.as_str(),
                        "LaunchedExecutor from unknown executor {}",
                        msg.executor_id
                    );
                    false
                }
            }
        };
        if known {
            self.make_offers(Some(&msg.executor_id), ctx);
        }
    }
}

impl Handler<RemoveExecutor> for DriverEndpoint {
    type Result = ();

    fn handle(&mut self, msg: RemoveExecutor, ctx: &mut Context<Self>) {
        self.remove_executor(&msg.executor_id, &msg.reason, ctx);
    }
}

impl Handler<Terminated> for DriverEndpoint {
    type Result = ();

    /// An executor's RPC connection dropped (it ended). YarnDriverEndpoint.onDisconnected:
    /// disable it and let the AM say why.
    fn handle(&mut self, msg: Terminated, ctx: &mut Context<Self>) {
        let mut decommissioning = false;
        let found = {
            let mut st = self.state.lock();
            let id = st
                .executors
                .iter()
                .find(|(_, d)| d.executor_ref == msg.path)
                .map(|(id, _)| id.clone());
            if let Some(id) = &id {
                if let Some(d) = st.executors.get_mut(id) {
                    d.free_cores = 0;
                }
                // disableExecutor: a decommissioning executor (not also being killed) is
                // not disabled; its removal comes from the executor itself ("Finished
                // decommissioning") or from the AM when its container completes.
                decommissioning =
                    st.pending_decommission.contains_key(id) && !st.pending_to_remove.contains_key(id);
                if !decommissioning {
                    st.pending_loss_reason.insert(id.clone());
                }
            }
            id
        };
        let Some(executor_id) = found else { return };
        self.publish_executors_soon(ctx);
        if decommissioning {
            tracing::info!(
                executor_id = executor_id.as_str(),
                "decommissioning executor {executor_id} disconnected ({}); waiting for its removal",
                msg.reason
            );
            return;
        }
        if self.stopping {
            return;
        }
        tracing::info!(
            executor_id = executor_id.as_str(),
            "executor {executor_id} disconnected ({}); asking for its loss reason",
            msg.reason
        );
        // disableExecutor: the scheduler learns the loss now, the reason later.
        let now = self.now();
        self.with_task_scheduler(ctx, |ts| {
            ts.executor_lost(&executor_id, &ExecutorLossReason::LossReasonPending, now)
        });
        let _ = self
            .me
            .endpoint::<YarnSchedulerProtocol>(&self.links.yarn_scheduler)
            .tell(ExecutorDisconnected { executor_id });
    }
}

impl Handler<StopExecutors> for DriverEndpoint {
    type Result = bool;

    fn handle(&mut self, _: StopExecutors, _: &mut Context<Self>) -> bool {
        self.stopping = true;
        let refs: Vec<ActorPath> = self
            .state
            .lock()
            .executors
            .values()
            .map(|d| d.executor_ref.clone())
            .collect();
        tracing::info!(executors = refs.len() as u64, "Asking each executor to shut down");
        for r in refs {
            let _ = self.executor(&r).tell(StopExecutor);
        }
        true
    }
}

impl Handler<StopDriver> for DriverEndpoint {
    type Result = bool;

    fn handle(&mut self, _: StopDriver, _: &mut Context<Self>) -> bool {
        self.stopping = true;
        true
    }
}

impl Handler<RetrieveSparkAppConfig> for DriverEndpoint {
    type Result = SparkAppConfig;

    fn handle(&mut self, _: RetrieveSparkAppConfig, _: &mut Context<Self>) -> SparkAppConfig {
        SparkAppConfig {
            spark_properties: self
                .conf
                .iter()
                .filter(|(k, _)| k.starts_with("spark.") && !crate::conf::holds_node_secret(k))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            log_level: None,
        }
    }
}

impl Handler<RetrieveLastAllocatedExecutorId> for DriverEndpoint {
    type Result = u64;

    fn handle(&mut self, _: RetrieveLastAllocatedExecutorId, _: &mut Context<Self>) -> u64 {
        self.state.lock().current_executor_id_counter
    }
}

impl Handler<GetExecutors> for DriverEndpoint {
    type Result = MessageResult<GetExecutors>;

    fn handle(&mut self, _: GetExecutors, _: &mut Context<Self>) -> MessageResult<GetExecutors> {
        let st = self.state.lock();
        MessageResult(
            st.executors
                .iter()
                .filter(|(id, _)| !st.pending_loss_reason.contains(*id))
                .map(|(id, d)| ExecutorSummary {
                    executor_id: id.clone(),
                    host: d.host.clone(),
                    total_cores: d.total_cores,
                    free_cores: d.free_cores,
                    executor_ref: d.executor_ref.clone(),
                })
                .collect(),
        )
    }
}

/// To self: publish the executors' view (see `publish_executors_soon`).
#[derive(actix::Message)]
#[rtype(result = "()")]
struct PublishExecutors;

impl Handler<PublishExecutors> for DriverEndpoint {
    type Result = ();

    fn handle(&mut self, _: PublishExecutors, _: &mut Context<Self>) {
        self.publish_queued = false;
        self.publish_executors();
    }
}

impl Handler<ReviveOffers> for DriverEndpoint {
    type Result = ();

    fn handle(&mut self, _: ReviveOffers, ctx: &mut Context<Self>) {
        self.revive_queued = false;
        self.make_offers(None, ctx);
    }
}

impl Handler<StatusUpdate> for DriverEndpoint {
    type Result = ();

    fn handle(&mut self, msg: StatusUpdate, ctx: &mut Context<Self>) {
        // A fault plan's kill is waiting for its target: finished tasks wait too, in order,
        // so the job cannot run past the kill (see `runtime::fault::Progress`).
        if msg.state == TaskState::Finished
            && (!self.held.is_empty() || self.me.cluster().progress().is_held())
        {
            self.held.push_back(msg);
            if self.held.len() == 1 {
                self.await_release(ctx);
            }
            return;
        }
        self.status_update(msg, ctx);
    }
}

impl DriverEndpoint {
    /// Takes up the finished tasks kept aside once the progress is let go.
    fn await_release(&mut self, ctx: &mut Context<Self>) {
        let cluster = self.me.cluster().clone();
        ctx.spawn(
            actix::fut::wrap_future::<_, Self>(async move { cluster.progress().released().await }).map(
                |(), act, ctx| {
                    while let Some(msg) = act.held.pop_front() {
                        act.status_update(msg, ctx);
                        if act.me.cluster().progress().is_held() && !act.held.is_empty() {
                            act.await_release(ctx);
                            return;
                        }
                    }
                },
            ),
        );
    }

    fn status_update(&mut self, msg: StatusUpdate, ctx: &mut Context<Self>) {
        let StatusUpdate {
            executor_id,
            task_id,
            state,
            data,
            task_cpus,
        } = msg;
        let decode_reason = |data: &[u8]| -> TaskEndReason {
            rmp_serde::from_slice(data).unwrap_or(TaskEndReason::UnknownReason)
        };
        let update = match state {
            TaskState::Launching | TaskState::Running => TaskUpdate::Running,
            TaskState::Finished => match rmp_serde::from_slice::<TaskResult>(&data) {
                Ok(result) => TaskUpdate::Finished {
                    result_size: data.len() as u64,
                    result,
                },
                Err(e) => TaskUpdate::Failed(TaskEndReason::ExceptionFailure {
                    class_name: "java.io.StreamCorruptedException".into(),
                    description: format!("cannot decode the result of TID {task_id}: {e}"),
                    stack_trace: vec![],
                }),
            },
            TaskState::Failed => TaskUpdate::Failed(decode_reason(&data)),
            TaskState::Killed => TaskUpdate::Killed(decode_reason(&data)),
            TaskState::Lost => TaskUpdate::Lost(decode_reason(&data)),
        };
        let now = self.now();
        let succeeded = matches!(update, TaskUpdate::Finished { .. });
        let (known, events) = {
            let mut ts = self.task_scheduler.lock();
            let known = ts.status_update(task_id, update, now);
            (known, ts.take_events())
        };
        // Job progress, which fault plans can be triggered by: a task the scheduler took as
        // finished (not a duplicate, nor one of an executor already removed), before
        // anything that follows it is dispatched. A driver whose ApplicationMaster is gone
        // is ending with its attempt: what its executors still finish is not the
        // application's progress, so a seeded plan counts the same tasks in every replay.
        if known && succeeded && self.attempt_alive() {
            self.me.cluster().progress().task_finished();
        }
        self.route(events, ctx);
        // A duplicate (an update sent again for a restarted endpoint) gives nothing back.
        if state.is_finished() && known {
            let known = {
                let mut st = self.state.lock();
                match st.executors.get_mut(&executor_id) {
                    Some(d) => {
                        d.free_cores = (d.free_cores + task_cpus).min(d.total_cores);
                        true
                    }
                    None => false,
                }
            };
            if known {
                self.make_offers(Some(&executor_id), ctx);
            } else {
                tracing::warn!(
                    task_id,
                    executor_id = executor_id.as_str(),
                    "Ignored task status update ({task_id} state {}) from unknown executor with ID {executor_id}",
                    state.as_str()
                );
            }
        }
    }
}

impl Handler<WakeInbox<TaskSchedulerCommand>> for DriverEndpoint {
    type Result = ();

    /// Takes a batch of the DAGScheduler's commands, in order.
    fn handle(&mut self, _: WakeInbox<TaskSchedulerCommand>, ctx: &mut Context<Self>) {
        let commands = self.commands.clone();
        if commands.drain(COMMAND_BATCH, |command| self.command(command, ctx)) {
            ctx.notify(WakeInbox::new());
        }
    }
}

impl Handler<CheckSpeculatableTasks> for DriverEndpoint {
    type Result = ();

    /// The speculation timer's tick: checkSpeculatableTasks; the tasks found go to the
    /// DAGScheduler as SpeculativeTaskSubmitted, and offers are revived so the copies
    /// launch at once.
    fn handle(&mut self, _: CheckSpeculatableTasks, ctx: &mut Context<Self>) {
        let now = self.now();
        self.with_task_scheduler(ctx, |ts| ts.check_speculatable_tasks(now));
    }
}

impl Handler<GetStageProgress> for DriverEndpoint {
    type Result = MessageResult<GetStageProgress>;

    /// The console progress bar's sample: the active stage attempts' task counts.
    fn handle(&mut self, _: GetStageProgress, _: &mut Context<Self>) -> MessageResult<GetStageProgress> {
        MessageResult(self.task_scheduler.lock().stage_progress())
    }
}

impl Handler<KillTask> for DriverEndpoint {
    type Result = ();

    fn handle(&mut self, msg: KillTask, _: &mut Context<Self>) {
        self.kill_task(msg);
    }
}

impl Handler<AwaitExecutors> for DriverEndpoint {
    type Result = actix::ResponseFuture<usize>;

    fn handle(&mut self, msg: AwaitExecutors, _: &mut Context<Self>) -> Self::Result {
        let active = self.active_executors();
        if active >= msg.count {
            return Box::pin(async move { active });
        }
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.executor_waiters.push((msg.count, tx));
        Box::pin(async move { rx.await.unwrap_or(active) })
    }
}

impl DriverEndpoint {
    fn ask_timeout(&self) -> std::time::Duration {
        self.conf
            .get(&crate::conf::RPC_ASK_TIMEOUT)
            .unwrap_or(std::time::Duration::from_secs(120))
    }
}

impl Handler<ClientRequestTotalExecutors> for DriverEndpoint {
    type Result = actix::ResponseFuture<bool>;

    /// requestTotalExecutors: record the totals, then doRequestTotalExecutors through the
    /// YarnSchedulerEndpoint (answered `false` while no AM has registered).
    fn handle(&mut self, msg: ClientRequestTotalExecutors, _: &mut Context<Self>) -> Self::Result {
        {
            let mut st = self.state.lock();
            st.requested_totals = Some(msg.resource_profile_to_total_execs.clone());
            st.requested_locality_aware_tasks = msg.num_locality_aware_tasks_per_resource_profile_id.clone();
            st.requested_host_to_local_task_count = msg.host_to_local_task_count.clone();
        }
        let total: u32 = msg.resource_profile_to_total_execs.values().sum();
        tracing::debug!(
            total,
            "Requesting a total of {total} executor(s) from the cluster manager"
        );
        let request = RequestExecutors {
            resource_profile_to_total_execs: msg.resource_profile_to_total_execs,
            num_locality_aware_tasks_per_resource_profile_id: msg
                .num_locality_aware_tasks_per_resource_profile_id,
            host_to_local_task_count: msg.host_to_local_task_count,
            excluded_nodes: Default::default(),
        };
        let (yse, timeout) = (self.yarn_scheduler(), self.ask_timeout());
        Box::pin(async move { matches!(yse.ask(request, timeout).await, Ok(Ok(true))) })
    }
}

impl DriverEndpoint {
    /// killExecutors: known executors not already pending removal and, unless forced, not
    /// busy, are marked pending removal (no more offers), the requested totals drop first if
    /// they are not to be replaced, then the AM is asked to kill them. The future answers
    /// those killed.
    fn kill_executors(
        &mut self,
        executor_ids: &[String],
        adjust_target_num_executors: bool,
        count_failures: bool,
        force: bool,
    ) -> actix::ResponseFuture<Vec<String>> {
        tracing::info!(
            executors = executor_ids.join(",").as_str(),
            "Requesting to kill executor(s) {}",
            executor_ids.join(", ")
        );
        let (to_kill, adjusted) = {
            let ts = self.task_scheduler.lock();
            let mut st = self.state.lock();
            let mut to_kill = Vec::new();
            for id in executor_ids {
                if !st.executors.contains_key(id) {
                    tracing::warn!(executor_id = id.as_str(), "Executor to kill {id} does not exist!");
                } else if !st.pending_to_remove.contains_key(id) && (force || !ts.is_executor_busy(id)) {
                    to_kill.push(id.clone());
                }
            }
            for id in &to_kill {
                st.pending_to_remove.insert(id.clone(), !count_failures);
            }
            let adjusted = adjust_target_num_executors.then(|| Self::adjust_totals(&mut st, &to_kill));
            (to_kill, adjusted)
        };
        self.publish_executors();
        tracing::info!(
            executors = to_kill.join(",").as_str(),
            "Actual list of executor(s) to be killed is {}",
            to_kill.join(", ")
        );
        let (yse, timeout) = (self.yarn_scheduler(), self.ask_timeout());
        Box::pin(async move {
            if let Some(request) = adjusted {
                if !matches!(yse.ask(request, timeout).await, Ok(Ok(true))) {
                    return Vec::new();
                }
            }
            if to_kill.is_empty() {
                return to_kill;
            }
            let kill = KillExecutors {
                executor_ids: to_kill.clone(),
            };
            match yse.ask(kill, timeout).await {
                Ok(Ok(true)) => to_kill,
                _ => Vec::new(),
            }
        })
    }

    /// The executors alive on `host`, or None (logged: "No executor to `verb` on host").
    fn executors_alive_on_host(&self, host: &str, verb: &str) -> Option<Vec<String>> {
        let alive = self.task_scheduler.lock().executors_alive_on_host(host);
        if alive.is_none() {
            tracing::info!(host, "No executor to {verb} on {host}");
        }
        alive
    }

    /// adjustExecutors: the requested totals no longer include `ids` (a total of 0 when none
    /// was ever requested: the executors were started by default); answers the request to
    /// send, with the placement hints last requested.
    fn adjust_totals(st: &mut DriverState, ids: &[String]) -> RequestExecutors {
        let profiles: Vec<u32> = ids
            .iter()
            .filter_map(|id| st.executors.get(id).map(|d| d.resource_profile_id))
            .collect();
        let totals = st.requested_totals.get_or_insert_with(BTreeMap::new);
        for rp in profiles {
            let t = totals.entry(rp).or_insert(0);
            *t = t.saturating_sub(1);
        }
        RequestExecutors {
            resource_profile_to_total_execs: totals.clone(),
            num_locality_aware_tasks_per_resource_profile_id: st.requested_locality_aware_tasks.clone(),
            host_to_local_task_count: st.requested_host_to_local_task_count.clone(),
            excluded_nodes: Default::default(),
        }
    }

    /// decommissionExecutors: each active executor is noted decommissioning (no more offers;
    /// the TaskSchedulerImpl stops counting it for locality), the totals drop if it is not
    /// to be replaced, and unless it asked itself it is told DecommissionExecutor. With
    /// `spark.executor.decommission.forceKillTimeout`, one still there after it is killed.
    /// Answers the executors decommissioned.
    fn decommission_executors(
        &mut self,
        executors: Vec<(String, ExecutorDecommissionInfo)>,
        adjust_target_num_executors: bool,
        triggered_by_executor: bool,
        ctx: &mut Context<Self>,
    ) -> Vec<String> {
        let now = self.now();
        let force_kill = self
            .conf
            .get(&crate::conf::EXECUTOR_DECOMMISSION_FORCE_KILL_TIMEOUT)
            .ok()
            .flatten();
        let (decommissioned, refs, adjusted, events) = {
            let mut ts = self.task_scheduler.lock();
            let mut st = self.state.lock();
            let mut decommissioned = Vec::new();
            let mut refs = Vec::new();
            for (id, info) in executors {
                if !st.is_executor_active(&id) {
                    continue;
                }
                ts.executor_decommission(&id, info.worker_host.clone(), now);
                st.pending_decommission.insert(id.clone(), info);
                if let Some(timeout) = force_kill {
                    let at = now.saturating_add(timeout.as_millis() as u64);
                    st.decommission_deadlines.insert(id.clone(), at);
                }
                if let Some(d) = st.executors.get(&id) {
                    refs.push((id.clone(), d.executor_ref.clone()));
                }
                decommissioned.push(id);
            }
            let adjusted = (adjust_target_num_executors && !decommissioned.is_empty())
                .then(|| Self::adjust_totals(&mut st, &decommissioned));
            (decommissioned, refs, adjusted, ts.take_events())
        };
        self.route(events, ctx);
        self.publish_executors_soon(ctx);
        tracing::info!(
            event = "executor_decommission",
            executors = decommissioned.join(",").as_str(),
            triggered_by_executor,
            "Decommission executors: {}",
            decommissioned.join(", ")
        );
        if let Some(request) = adjusted {
            let (yse, timeout) = (self.yarn_scheduler(), self.ask_timeout());
            actix::spawn(async move {
                let _ = yse.ask(request, timeout).await;
            });
        }
        if !triggered_by_executor {
            for (id, path) in refs {
                tracing::info!(
                    executor_id = id.as_str(),
                    "Notify executor {id} to decommissioning."
                );
                let _ = self.executor(&path).tell(DecommissionExecutor);
            }
        }
        if let Some(timeout) = force_kill.filter(|_| !decommissioned.is_empty()) {
            self.arm_force_kill(decommissioned.clone(), timeout, ctx);
        }
        decommissioned
    }

    /// Kills, after `timeout`, those of `ids` still decommissioning.
    fn arm_force_kill(&self, ids: Vec<String>, timeout: std::time::Duration, ctx: &mut Context<Self>) {
        let clock = self.me.clock().clone();
        run_later(ctx, &clock, timeout, move |act: &mut Self, ctx| {
            act.kill_stragglers(&ids, timeout, ctx)
        });
    }

    fn kill_stragglers(&mut self, ids: &[String], timeout: std::time::Duration, ctx: &mut Context<Self>) {
        let stragglers: Vec<String> = {
            let mut st = self.state.lock();
            let s: Vec<String> = ids
                .iter()
                .filter(|id| st.pending_decommission.contains_key(*id))
                .cloned()
                .collect();
            for id in ids {
                st.decommission_deadlines.remove(id);
            }
            s
        };
        if stragglers.is_empty() || self.stopping {
            return;
        }
        tracing::info!(
            event = "executor_decommission_force_kill",
            executors = stragglers.join(",").as_str(),
            "List({}) failed to decommission in {}, killing.",
            stragglers.join(", "),
            timeout.as_secs()
        );
        let kill = self.kill_executors(&stragglers, false, false, true);
        ctx.spawn(kill.into_actor(self).map(|_, _, _| ()));
    }

    /// After a restart: the force kills the previous incarnation had armed.
    fn rearm_force_kills(&self, ctx: &mut Context<Self>) {
        let now = self.now();
        let deadlines: Vec<(String, u64)> = self
            .state
            .lock()
            .decommission_deadlines
            .iter()
            .map(|(id, at)| (id.clone(), *at))
            .collect();
        let timeout = self
            .conf
            .get(&crate::conf::EXECUTOR_DECOMMISSION_FORCE_KILL_TIMEOUT)
            .ok()
            .flatten()
            .unwrap_or_default();
        for (id, at) in deadlines {
            let clock = self.me.clock().clone();
            let delay = std::time::Duration::from_millis(at.saturating_sub(now));
            run_later(ctx, &clock, delay, move |act: &mut Self, ctx| {
                act.kill_stragglers(std::slice::from_ref(&id), timeout, ctx)
            });
        }
    }
}

impl Handler<ClientKillExecutors> for DriverEndpoint {
    type Result = actix::ResponseFuture<Vec<String>>;

    fn handle(&mut self, msg: ClientKillExecutors, _: &mut Context<Self>) -> Self::Result {
        self.kill_executors(
            &msg.executor_ids,
            msg.adjust_target_num_executors,
            msg.count_failures,
            msg.force,
        )
    }
}

impl Handler<ClientDecommissionExecutors> for DriverEndpoint {
    type Result = MessageResult<ClientDecommissionExecutors>;

    fn handle(
        &mut self,
        msg: ClientDecommissionExecutors,
        ctx: &mut Context<Self>,
    ) -> MessageResult<ClientDecommissionExecutors> {
        MessageResult(self.decommission_executors(
            msg.executors,
            msg.adjust_target_num_executors,
            msg.triggered_by_executor,
            ctx,
        ))
    }
}

impl Handler<KillExecutorsOnHost> for DriverEndpoint {
    type Result = ();

    /// Kills every executor alive on the host: forced, replaced, failures not counted.
    fn handle(&mut self, msg: KillExecutorsOnHost, ctx: &mut Context<Self>) {
        let Some(execs) = self.executors_alive_on_host(&msg.host, "kill") else {
            return;
        };
        tracing::info!(
            host = msg.host.as_str(),
            executors = execs.join(",").as_str(),
            "Killing all executors on host {}: {}",
            msg.host,
            execs.join(", ")
        );
        let kill = self.kill_executors(&execs, false, false, true);
        ctx.spawn(kill.into_actor(self).map(|_, _, _| ()));
    }
}

impl Handler<DecommissionExecutorsOnHost> for DriverEndpoint {
    type Result = ();

    /// Decommissions every executor alive on the host (not replaced by lowering the
    /// target: the allocator replaces them elsewhere).
    fn handle(&mut self, msg: DecommissionExecutorsOnHost, ctx: &mut Context<Self>) {
        let Some(execs) = self.executors_alive_on_host(&msg.host, "decommission") else {
            return;
        };
        let info = ExecutorDecommissionInfo::new(format!("Decommissioning all executors on {}.", msg.host));
        let list = execs.into_iter().map(|e| (e, info.clone())).collect();
        self.decommission_executors(list, false, false, ctx);
    }
}

impl Handler<ExecutorDecommissioning> for DriverEndpoint {
    type Result = bool;

    /// An executor decommissions itself (its signal): noted without telling it again.
    fn handle(&mut self, msg: ExecutorDecommissioning, ctx: &mut Context<Self>) -> bool {
        let id = msg.executor_id;
        tracing::warn!(
            executor_id = id.as_str(),
            "Received executor {id} decommissioned message"
        );
        let info = ExecutorDecommissionInfo::new(format!("Executor {id} is decommissioned."));
        !self
            .decommission_executors(vec![(id, info)], false, true, ctx)
            .is_empty()
    }
}

impl Handler<ResetSchedulerBackend> for DriverEndpoint {
    type Result = ();

    fn handle(&mut self, _: ResetSchedulerBackend, ctx: &mut Context<Self>) {
        let stale: Vec<String> = {
            let mut st = self.state.lock();
            st.requested_totals = None;
            st.executors.keys().cloned().collect()
        };
        tracing::info!(
            executors = stale.join(",").as_str(),
            "Resetting the scheduler backend: {} stale executor(s) to remove",
            stale.len()
        );
        let reason = ExecutorLossReason::process_lost("Stale executor after cluster manager re-registered.");
        for id in stale {
            self.remove_executor(&id, &reason, ctx);
        }
    }
}

/// The wake of the DriverEndpoint's inbox of task-scheduler commands.
pub type TaskSchedulerWake = WakeInbox<TaskSchedulerCommand>;

crate::protocol! {
    /// What the TaskSchedulerImpl (the DriverEndpoint's alone) is asked in its process: the
    /// wake of its inbox of commands (task sets, kills, cancels posted by the DAGScheduler,
    /// which survive a restart of the endpoint), the speculation timer's tick and the
    /// console progress bar's sample of the active stages.
    pub TaskSchedulerProtocol { TaskSchedulerWake, CheckSpeculatableTasks, GetStageProgress }
}

crate::speaks!(DriverEndpoint: DriverProtocol, TaskSchedulerProtocol);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::Cluster;
    use crate::scheduler::listener_bus::{BusCounters, BusInbox};
    use crate::scheduler::task_scheduler::TaskSchedulerConfig;
    use crate::scheduler::task_set::{TaskBinary, TaskSet, TaskSpec};

    fn executor(cores: u32) -> ExecutorData {
        ExecutorData {
            executor_ref: ActorPath::parse("/x").unwrap(),
            host: "h1".into(),
            total_cores: cores,
            free_cores: cores,
            resource_profile_id: 0,
            registration_ts: 0,
        }
    }

    #[test]
    fn the_published_view_holds_the_active_executors_and_their_task_slots() {
        let mut st = DriverState::default();
        for id in ["1", "2", "3", "4", "5"] {
            st.executors.insert(id.into(), executor(4));
        }
        let all = ActiveExecutors::of(&st, 2);
        assert_eq!(
            all.ids.len(),
            5,
            "none pending: every registered executor is active"
        );
        assert_eq!(all.task_slots, 10);
        assert_eq!(st.max_num_concurrent_tasks(1), 20);
        st.pending_to_remove.insert("2".into(), true);
        st.pending_loss_reason.insert("3".into());
        st.pending_decommission
            .insert("4".into(), ExecutorDecommissionInfo::new("leaving".to_string()));
        let view = ActiveExecutors::of(&st, 2);
        let active: Vec<&str> = view.ids.iter().map(String::as_str).collect();
        assert_eq!(active, vec!["1", "5"]);
        assert_eq!(view.task_slots, 4, "two executors of 4 cores, 2 cores a task");
        assert!(view.is_active("5") && !view.is_active("2") && !view.is_active("9"));
        assert_eq!(st.max_num_concurrent_tasks(1), 8);
    }

    #[actix_rt::test]
    async fn a_task_set_posted_while_no_incarnation_runs_is_taken_by_the_next() {
        let cluster = Cluster::for_unit_test();
        let path = ActorPath::parse("/driver-endpoint").unwrap();
        let kept = DriverKept {
            state: Kept::new(DriverState::default()),
            task_scheduler: Kept::new(TaskSchedulerImpl::new(
                TaskSchedulerConfig::default(),
                Box::new(|_| None),
                7,
            )),
            commands: DurableInbox::unbounded(),
            executors: Publisher::new(ActiveExecutors::default()),
        };
        let dag_path = ActorPath::parse("/dag-scheduler").unwrap();
        let bus_path = ActorPath::parse("/listener-bus").unwrap();
        let links = DriverLinks {
            yarn_scheduler: ActorPath::parse("/yarn-scheduler-endpoint").unwrap(),
            dag_scheduler: dag_path.clone(),
            dag: crate::scheduler::dag_scheduler::DagInbox::unbounded()
                .sender_to::<crate::scheduler::dag_scheduler::DagSchedulerProtocol>(&cluster, &dag_path),
            bus: ListenerBusRef::new(
                &cluster,
                &bus_path,
                Arc::new(BusCounters::default()),
                &BusInbox::bounded(16),
                16,
            ),
        };
        // The DAGScheduler submits while nothing runs at the DriverEndpoint's path.
        let commands = kept.commands.sender_to::<TaskSchedulerProtocol>(&cluster, &path);
        let task_set = TaskSet {
            stage_id: 0,
            stage_attempt_id: 0,
            job_id: 0,
            is_shuffle_map: false,
            is_barrier: false,
            tasks: vec![TaskSpec {
                index: 0,
                partition_id: 0,
                preferred_locations: vec![],
            }],
            binary: Arc::new(TaskBinary::default()),
            properties: vec![],
        };
        commands
            .send(TaskSchedulerCommand::SubmitTasks(task_set))
            .expect("unbounded");
        assert!(!kept.task_scheduler.lock().has_received_task());
        let conf = Arc::new(SparkConf::new());
        let k = kept.clone();
        cluster
            .start_root_worker("driver-endpoint", move |_, me| {
                DriverEndpoint::new(me, conf, links, k)
            })
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while !kept.task_scheduler.lock().has_received_task() {
            assert!(
                std::time::Instant::now() < deadline,
                "the new incarnation took the task set"
            );
            crate::runtime::clock::settle().await;
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        assert_eq!(kept.task_scheduler.lock().num_pending_tasks(), 1);
        assert!(kept.commands.is_empty());
    }
}
