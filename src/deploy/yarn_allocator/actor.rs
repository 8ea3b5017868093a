//! YarnAllocator, at `<container>/am/allocator`: the actor around Spark's allocation rules
//! ([`super::core`]). Layer: deploy.
//!
//! On start it asks the driver for the last executor id it allocated
//! (RetrieveLastAllocatedExecutorId) and the ResourceManager for the cluster's racks, and
//! handles nothing else until both answer (Spark's constructor blocks the same way).
//! `AllocateResources` is one heartbeat: updateResourceRequests, then Allocate with the
//! outstanding requests and the containers to release, then the granted containers
//! (matched host → rack → any; unmatched ones released; matched ones launched through the
//! ContainerLauncher as ExecutorRunnables) and the completed ones (Spark's exit-status
//! rules; RemoveExecutor to the driver; loss-reason answers). The driver's new totals,
//! kills and loss-reason questions arrive from the AMEndpoint.
//!
//! The allocator also watches each container it launched (as NMClientAsync reports a
//! container stopping): when one ends, it wakes the reporter for an early heartbeat, so the
//! completed status — and the replacement request — reach the ResourceManager without
//! waiting out the heartbeat interval. The status itself still comes through Allocate.
//!
//! Restarts: everything that matters is kept by the `am` supervisor ([`AllocatorKept`]):
//! the rules' state (running executors, the request table, launches in flight, executor
//! failures, loss-reason questions waiting with their reply channels), the releases not yet
//! taken by the RM, the response id of the last Allocate answer seen, the containers
//! watched, and the launches handed to the launcher. A new incarnation skips the driver
//! question (its executor ids go on from the kept counter), watches the launched containers
//! again (one that ended meanwhile wakes the reporter at once) and hands every launch in
//! flight to the launcher again, since a LaunchResult may have died in the old mailbox (the
//! NodeManager answers a repeated start of a running container with success). Its next
//! Allocate repeats the last response id seen, so if the answer to the Allocate in flight
//! when it died never arrived, the RM sends that answer again (granted containers and
//! completed statuses are not lost), and the releases of that Allocate go again. A launch
//! left unanswered for twice the ask time-out fails (its container is released and
//! replaced), so no target waits forever. The allocator asks the RM through
//! [`ask_rm`], which rides out a restart of the RM.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use actix::{
    Actor, ActorFutureExt, AsyncContext, Context, Handler, Message, MessageResult, ResponseActFuture,
    WrapFuture,
};
use tokio::sync::oneshot;

use super::core::{
    max_num_executor_failures, AllocatorSettings, LogLevel, LogLine, LossReasonAnswer, YarnAllocatorCore,
};
use crate::conf::{self, SparkConf};
use crate::deploy::executor_runnable::LauncherProtocol;
use crate::deploy::executor_runnable::{ExecutorRunnable, LaunchExecutor};
use crate::deploy::reporter::ReporterProtocol;
use crate::deploy::reporter::ResetAllocatorInterval;
use crate::deploy::resources::executor_memory;
use crate::rpc::EndpointRef;
use crate::runtime::{ActorPath, Kept, Me, Terminated};
use crate::scheduler::console_progress_bar::{application_progress, GetStageProgress, YARN_IDLE_PROGRESS};
use crate::scheduler::driver_endpoint::TaskSchedulerProtocol;
use crate::scheduler::loss_reason::ExecutorLossReason;
use crate::scheduler::messages::YarnSchedulerProtocol;
use crate::scheduler::messages::{
    DecommissionExecutorsOnHost, RemoveExecutor, RequestExecutors, RetrieveLastAllocatedExecutorId,
};
use crate::yarn::node::container_path;
use crate::yarn::protocol::{Allocate, GetClusterNodes, YarnError};
use crate::yarn::protocol::{ApplicationClientProtocol, ApplicationMasterProtocol};
use crate::yarn::records::{ApplicationAttemptId, ContainerId, NodeReport, NodeState, Resource};
use crate::yarn::resource_manager::ask_rm;

/// How the allocator answers a loss-reason question later.
pub type LossReasonReply = oneshot::Sender<Result<ExecutorLossReason, String>>;

/// Everything the allocator needs from the configuration.
#[derive(Clone, Debug)]
pub struct AllocatorConfig {
    pub settings: AllocatorSettings,
    pub attempt: ApplicationAttemptId,
    pub am_host: String,
    /// The DriverEndpoint's path, given to executors as `--driver-url`.
    pub driver_url: ActorPath,
    pub executor_cores: u32,
    /// In cluster mode, the DriverEndpoint in this process, asked for the stages' progress
    /// that each Allocate reports (none: Spark's constant 0.1).
    pub driver_progress: Option<ActorPath>,
}

impl AllocatorConfig {
    /// Spark's settings for the allocator of `attempt`.
    pub fn from_conf(
        conf: &SparkConf,
        attempt: ApplicationAttemptId,
        am_host: &str,
        driver_url: ActorPath,
    ) -> Self {
        let mem = executor_memory(conf);
        let cores = conf.get(&conf::EXECUTOR_CORES).unwrap_or(1);
        let dynamic = conf.get(&conf::DYN_ALLOCATION_ENABLED).unwrap_or(false);
        let settings = AllocatorSettings {
            initial_target: crate::scheduler::backend_utils::initial_target_executors(conf),
            executor_resource: Resource::new(mem.total_mb(), cores),
            executor_memory_mb: mem.memory_mb,
            executor_memory_overhead_mb: mem.overhead_mb,
            task_cpus: conf.get(&conf::CPUS_PER_TASK).unwrap_or(1),
            executor_id_start: 0,
            max_executor_failures: max_num_executor_failures(
                conf.get(&conf::MAX_EXECUTOR_FAILURES).ok().flatten(),
                dynamic,
                conf.get(&conf::DYN_ALLOCATION_MAX_EXECUTORS)
                    .unwrap_or(i32::MAX as u32),
                conf.get(&conf::EXECUTOR_INSTANCES).ok().flatten(),
            ),
            failures_validity_interval: conf
                .get(&conf::EXECUTOR_ATTEMPT_FAILURE_VALIDITY_INTERVAL_MS)
                .ok()
                .flatten(),
            launch_exclusion_enabled: conf
                .get(&conf::YARN_EXECUTOR_LAUNCH_EXCLUDE_ON_FAILURE_ENABLED)
                .unwrap_or(false),
            max_failed_executors_per_node: conf.get(&conf::MAX_FAILED_EXEC_PER_NODE).unwrap_or(2),
            exclusion_timeout: conf
                .get(&conf::EXCLUDE_ON_FAILURE_TIMEOUT_CONF)
                .ok()
                .flatten()
                .unwrap_or(Duration::from_secs(3600)),
            static_excluded_nodes: conf
                .get(&conf::YARN_EXCLUDE_NODES)
                .unwrap_or_default()
                .into_iter()
                .collect(),
        };
        AllocatorConfig {
            settings,
            attempt,
            am_host: am_host.to_string(),
            driver_url,
            executor_cores: cores,
            driver_progress: None,
        }
    }
}

/// What the reporter needs to decide its next step.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AllocatorStatus {
    pub num_failed_executors: u32,
    pub max_executor_failures: u32,
    pub all_nodes_excluded: bool,
    pub pending_allocate: usize,
    pub pending_loss_reason_requests: usize,
    pub target: u32,
    pub running: usize,
    pub starting: u32,
}

/// Why an allocation heartbeat failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AllocateError {
    /// The allocator is still initializing.
    NotReady,
    /// The RM no longer knows this attempt (fatal for the reporter: exit 12).
    AttemptNotFound(String),
    /// Anything else (counted by the reporter).
    Other(String),
}

impl fmt::Display for AllocateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AllocateError::NotReady => f.write_str("the allocator is not initialized yet"),
            AllocateError::AttemptNotFound(m) | AllocateError::Other(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for AllocateError {}

/// One allocation heartbeat (from the AM and the reporter).
#[derive(Debug, Message)]
#[rtype(result = "Result<AllocatorStatus, AllocateError>")]
pub struct AllocateResources;

/// The allocator's counters, without a heartbeat.
#[derive(Debug, Message)]
#[rtype(result = "Option<AllocatorStatus>")]
pub struct GetAllocatorStatus;

/// The driver's new desired totals (from AMEndpoint); answers whether the target changed.
#[derive(Clone, Debug, Message)]
#[rtype(result = "bool")]
pub struct RequestTotalExecutors(pub RequestExecutors);

/// The driver asked to kill an executor: release its container at the next heartbeat.
#[derive(Clone, Debug, Message)]
#[rtype(result = "()")]
pub struct KillExecutor {
    pub executor_id: String,
}

/// A loss-reason question, answered on `reply` when known.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct EnqueueLossReason {
    pub executor_id: String,
    pub reply: LossReasonReply,
}

/// The launcher's answer for one container.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct LaunchResult {
    pub container_id: ContainerId,
    pub executor_id: String,
    pub host: Option<String>,
    pub result: Result<(), String>,
}

/// The allocator's state, kept by the `am` supervisor across the allocator's restarts: the
/// allocation rules' state (running executors, requests, launches in flight, failures,
/// loss-reason questions waiting), what the RM must still be told (releases, the response
/// id of the last answer seen), and the containers watched and launches under way.
#[derive(Default)]
pub struct AllocatorKept {
    state: Option<YarnAllocatorCore<LossReasonReply>>,
    racks: BTreeMap<String, String>,
    /// Containers to release with the next Allocate.
    releases: Vec<ContainerId>,
    /// Releases sent with an Allocate whose answer has not arrived yet.
    releases_in_flight: Vec<ContainerId>,
    response_id: u64,
    /// Launched containers, by the path of their subtree (watched; see `Terminated`).
    watched: BTreeMap<ActorPath, ContainerId>,
    /// Launches handed to the launcher and not answered yet: when, and what.
    launches: BTreeMap<ContainerId, (Duration, ExecutorRunnable)>,
    /// Hosts already reported DECOMMISSIONING to the driver, oldest first (Spark's
    /// decommissioningNodesCache, at most [`DECOMMISSIONING_NODES_CACHE_SIZE`]).
    decommissioning_nodes: std::collections::VecDeque<String>,
}

/// Spark's YarnAllocator.DECOMMISSIONING_NODES_CACHE_SIZE.
pub const DECOMMISSIONING_NODES_CACHE_SIZE: usize = 200;

/// The launcher restarted: hand it every launch still in flight again.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct RedriveLaunches;

/// The YarnAllocator actor; see the module docs.
pub struct YarnAllocator {
    me: Me,
    config: AllocatorConfig,
    conf: Arc<SparkConf>,
    rm: EndpointRef<ApplicationMasterProtocol>,
    launcher: ActorPath,
    driver: EndpointRef<YarnSchedulerProtocol>,
    kept: Kept<AllocatorKept>,
    in_flight: bool,
    timeout: Duration,
    /// How long a launch may stay unanswered before it counts as failed.
    launch_timeout: Duration,
    /// `spark.decommission.enabled` without an external shuffle service: executors on a
    /// node YARN decommissions are decommissioned.
    yarn_executor_decommission: bool,
    /// The progress the next Allocate reports (see [`Self::sample_progress`]).
    progress: f32,
    /// A progress sample is out.
    sampling_progress: bool,
}

fn emit(lines: Vec<LogLine>) {
    for line in lines {
        match line.level {
            LogLevel::Debug => tracing::debug!("{}", line.message),
            LogLevel::Info => tracing::info!("{}", line.message),
            LogLevel::Warn => tracing::warn!("{}", line.message),
            LogLevel::Error => tracing::error!("{}", line.message),
        }
    }
}

impl YarnAllocator {
    pub fn new(
        me: Me,
        config: AllocatorConfig,
        rm: ActorPath,
        launcher: ActorPath,
        driver_yse: ActorPath,
        conf: Arc<SparkConf>,
        kept: Kept<AllocatorKept>,
    ) -> Self {
        let timeout = conf
            .get(&conf::RPC_ASK_TIMEOUT)
            .unwrap_or(Duration::from_secs(120));
        let yarn_executor_decommission = match (
            conf.get(&conf::DECOMMISSION_ENABLED).unwrap_or(false),
            conf.get(&conf::SHUFFLE_SERVICE_ENABLED).unwrap_or(false),
        ) {
            (true, false) => true,
            (true, true) => {
                tracing::warn!(
                    "Yarn Executor Decommissioning is supported only when spark.shuffle.service.enabled is set to false. See: SPARK-39018."
                );
                false
            }
            (false, _) => false,
        };
        YarnAllocator {
            rm: me.endpoint(&rm),
            driver: me.endpoint(&driver_yse),
            me,
            config,
            conf,
            launcher,
            kept,
            in_flight: false,
            timeout,
            launch_timeout: timeout.saturating_mul(2),
            yarn_executor_decommission,
            progress: YARN_IDLE_PROGRESS,
            sampling_progress: false,
        }
    }

    /// In cluster mode, asks the driver (in this process) for its stages' progress, for the
    /// next Allocate: the finished share of the active stages' tasks (0.1 while none runs).
    /// A heartbeat late, so an Allocate never waits for the driver.
    fn sample_progress(&mut self, ctx: &mut Context<Self>) {
        let Some(driver) = self.config.driver_progress.clone() else {
            return;
        };
        if self.sampling_progress {
            return;
        }
        self.sampling_progress = true;
        let ask = self
            .me
            .endpoint::<TaskSchedulerProtocol>(&driver)
            .ask(GetStageProgress, Duration::from_secs(1));
        ctx.spawn(ask.into_actor(self).map(|answer, act, _| {
            act.sampling_progress = false;
            if let Ok(stages) = answer {
                let progress = application_progress(&stages);
                if progress != act.progress {
                    tracing::debug!(
                        progress = progress as f64,
                        active_stages = stages.len() as u64,
                        "Reporting progress {progress:.3} to the ResourceManager"
                    );
                }
                act.progress = progress;
            }
        }));
    }

    /// handleNodesInDecommissioningState: each node newly reported DECOMMISSIONING (YARN
    /// placed executors there before) gets its executors decommissioned by the driver.
    fn handle_decommissioning_nodes(&self, kept: &mut AllocatorKept, updated: &[NodeReport]) {
        for node in updated {
            if node.state != NodeState::Decommissioning || kept.decommissioning_nodes.contains(&node.host) {
                continue;
            }
            tracing::info!(
                host = node.host.as_str(),
                "Node {} is DECOMMISSIONING: asking the driver to decommission its executors",
                node.host
            );
            let _ = self.driver.tell(DecommissionExecutorsOnHost {
                host: node.host.clone(),
            });
            kept.decommissioning_nodes.push_back(node.host.clone());
            while kept.decommissioning_nodes.len() > DECOMMISSIONING_NODES_CACHE_SIZE {
                kept.decommissioning_nodes.pop_front();
            }
        }
    }

    fn status(&self) -> Option<AllocatorStatus> {
        let kept = self.kept.lock();
        let st = kept.state.as_ref()?;
        let now = self.me.clock().now();
        Some(AllocatorStatus {
            num_failed_executors: st.num_failed_executors(now),
            max_executor_failures: st.max_executor_failures(),
            all_nodes_excluded: st.is_all_node_excluded(),
            pending_allocate: st.num_containers_pending_allocate(),
            pending_loss_reason_requests: st.num_pending_loss_reason_requests(),
            target: st.target(),
            running: st.num_executors_running(),
            starting: st.num_executors_starting(),
        })
    }

    /// Hands a launch to the launcher, remembering it until its result arrives.
    fn launch(&self, kept: &mut AllocatorKept, runnable: ExecutorRunnable) {
        let now = self.me.clock().now();
        kept.launches
            .insert(runnable.container.id, (now, runnable.clone()));
        let launcher: EndpointRef<LauncherProtocol> = self.me.endpoint(&self.launcher);
        if let Err(e) = launcher.tell(LaunchExecutor {
            runnable,
            reply_to: self.me.path().clone(),
        }) {
            // A restarting launcher asks for its launches again when it is back.
            tracing::warn!("the container launcher cannot be reached: {e}");
        }
    }

    /// Every launch still in flight, to the launcher again (starting a container is
    /// idempotent at the NodeManager, so one that did start is simply answered again).
    fn redrive_launches(&self) {
        let mut kept = self.kept.lock();
        let launches: Vec<ExecutorRunnable> = kept.launches.values().map(|(_, r)| r.clone()).collect();
        if launches.is_empty() {
            return;
        }
        tracing::info!(
            launches = launches.len() as u64,
            "Handing {} launch(es) in flight to the container launcher again",
            launches.len()
        );
        for runnable in launches {
            self.launch(&mut kept, runnable);
        }
    }

    /// Launches unanswered for longer than the launch time-out fail (their containers are
    /// released and replaced), so no target waits forever on a lost answer.
    fn expire_launches(&self, kept: &mut AllocatorKept) {
        let now = self.me.clock().now();
        let limit = self.launch_timeout;
        let expired: Vec<ContainerId> = kept
            .launches
            .iter()
            .filter(|(_, (since, _))| now.saturating_sub(*since) > limit)
            .map(|(id, _)| *id)
            .collect();
        for id in expired {
            kept.launches.remove(&id);
            let message = format!(
                "no answer from the container launcher within {}",
                humantime::format_duration(limit)
            );
            tracing::error!(container = %id, "Launch of container {id} timed out: {message}");
            if let Some(st) = kept.state.as_mut() {
                if let Some(c) = st.launch_failed(&id, &message) {
                    kept.releases.push(c);
                }
                emit(st.take_logs());
            }
        }
    }

    fn handle_response(&mut self, resp: crate::yarn::protocol::AllocateResponse) {
        let now = self.me.clock().now();
        let mut kept = self.kept.lock();
        kept.response_id = resp.response_id;
        kept.releases_in_flight.clear();
        if self.yarn_executor_decommission {
            self.handle_decommissioning_nodes(&mut kept, &resp.updated_nodes);
        }
        let racks = kept.racks.clone();
        let rack_of = move |h: &str| racks.get(h).cloned();
        let AllocatorKept {
            state,
            racks: kept_racks,
            releases,
            ..
        } = &mut *kept;
        let Some(st) = state.as_mut() else { return };
        st.set_num_cluster_nodes(resp.num_cluster_nodes);
        let mut to_launch = Vec::new();
        // With its address when the driver's process serves its actors, so executors in
        // other processes reach it directly (Spark's spark://CoarseGrainedScheduler@host:port).
        let driver_url = self.me.cluster().url_of(&self.config.driver_url);
        if !resp.allocated.is_empty() {
            for c in &resp.allocated {
                kept_racks.insert(c.node.clone(), c.rack.clone());
            }
            let outcome = st.handle_allocated_containers(resp.allocated, &rack_of);
            emit(outcome.log);
            releases.extend(outcome.to_release);
            for launch in outcome.to_launch {
                to_launch.push(ExecutorRunnable::from_conf(
                    &self.conf,
                    launch.container,
                    &driver_url,
                    &launch.executor_id,
                    &self.config.attempt.app.to_string(),
                    launch.executor_cores,
                ));
            }
        }
        if !resp.completed.is_empty() {
            let outcome = st.process_completed_containers(resp.completed, now);
            emit(outcome.log.clone());
            for (executor_id, reason) in outcome.remove_executor_messages() {
                let _ = self.driver.tell(RemoveExecutor {
                    executor_id: executor_id.to_string(),
                    reason: reason.clone(),
                });
            }
            for reply in outcome.replies {
                let _ = reply.token.send(Ok(reply.reason));
            }
        }
        emit(st.take_logs());
        for runnable in to_launch {
            self.launch(&mut kept, runnable);
        }
    }

    /// A restarted allocator: its state was kept; watch the launched containers again, hand
    /// the launches in flight to the launcher again (their answers may have died with the
    /// old mailbox). Its next Allocate resynchronises it with the RM.
    fn resume(&mut self, ctx: &mut Context<Self>) {
        let (watched, running, pending, launches) = {
            let kept = self.kept.lock();
            let st = kept.state.as_ref();
            (
                kept.watched.keys().cloned().collect::<Vec<_>>(),
                st.map_or(0, |s| s.num_executors_running()),
                st.map_or(0, |s| s.num_containers_pending_allocate()),
                kept.launches.len(),
            )
        };
        tracing::info!(
            running_executors = running as u64,
            pending_requests = pending as u64,
            launches = launches as u64,
            "Allocator restarted with its state: {running} executor(s) running, {pending} container request(s) pending, {launches} launch(es) in flight"
        );
        let me = self.me.clone();
        for path in watched {
            me.watch(ctx, &path);
        }
        self.redrive_launches();
    }
}

impl Actor for YarnAllocator {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        if self.kept.lock().state.is_some() {
            self.resume(ctx);
            return;
        }
        let (driver, rm, timeout) = (self.driver.clone(), self.rm.clone(), self.timeout);
        // As Spark's constructor, nothing else is handled until the driver has answered.
        ctx.wait(
            async move {
                let last = driver.ask(RetrieveLastAllocatedExecutorId, timeout).await;
                let nodes = ask_rm(
                    &rm.speaking::<ApplicationClientProtocol>(),
                    GetClusterNodes,
                    timeout,
                )
                .await;
                (last, nodes)
            }
            .into_actor(self)
            .map(|(last, nodes), act, _| {
                let last = last.unwrap_or_else(|e| {
                    tracing::warn!("cannot ask the driver for the last executor id ({e}); starting from 0");
                    0
                });
                let mut settings = act.config.settings.clone();
                settings.executor_id_start = u32::try_from(last).unwrap_or(u32::MAX);
                let mut st = YarnAllocatorCore::new(settings);
                tracing::info!(
                    target_executors = st.target(),
                    last_executor_id = last,
                    "Allocator ready: {} executor(s) wanted, executor ids start after {last}",
                    st.target()
                );
                emit(st.take_logs());
                let mut kept = act.kept.lock();
                if let Ok(nodes) = nodes {
                    kept.racks = nodes.into_iter().map(|n| (n.host, n.rack)).collect();
                }
                kept.state = Some(st);
            }),
        );
    }
}

impl Handler<AllocateResources> for YarnAllocator {
    type Result = ResponseActFuture<Self, Result<AllocatorStatus, AllocateError>>;

    fn handle(&mut self, _: AllocateResources, ctx: &mut Context<Self>) -> Self::Result {
        self.sample_progress(ctx);
        if self.kept.lock().state.is_none() {
            return Box::pin(actix::fut::ready(Err(AllocateError::NotReady)));
        }
        if self.in_flight {
            let status = self.status().ok_or(AllocateError::NotReady);
            return Box::pin(actix::fut::ready(status));
        }
        let now = self.me.clock().now();
        let request = {
            let mut kept = self.kept.lock();
            self.expire_launches(&mut kept);
            let racks = kept.racks.clone();
            let AllocatorKept {
                state,
                releases,
                releases_in_flight,
                response_id,
                ..
            } = &mut *kept;
            let Some(st) = state.as_mut() else {
                return Box::pin(actix::fut::ready(Err(AllocateError::NotReady)));
            };
            let update = st.update_resource_requests(&move |h: &str| racks.get(h).cloned());
            emit(update.log);
            // Releases of an Allocate whose answer never came go again (releasing twice is
            // harmless).
            let mut to_release = std::mem::take(releases_in_flight);
            to_release.append(releases);
            *releases_in_flight = to_release.clone();
            Allocate {
                attempt_id: self.config.attempt,
                response_id: *response_id,
                progress: self.progress,
                asks: st.pending_requests().to_vec(),
                releases: to_release,
                blacklist: st.excluded_nodes(now).into_iter().collect(),
            }
        };
        self.in_flight = true;
        let (rm, timeout) = (self.rm.clone(), self.timeout);
        Box::pin(
            async move { ask_rm(&rm, request, timeout).await }
                .into_actor(self)
                .map(move |res, act, _| {
                    act.in_flight = false;
                    match res {
                        Ok(Ok(resp)) => {
                            act.handle_response(resp);
                            act.status().ok_or(AllocateError::NotReady)
                        }
                        Ok(Err(YarnError::ApplicationAttemptNotFound(id))) => {
                            Err(AllocateError::AttemptNotFound(
                                YarnError::ApplicationAttemptNotFound(id).to_string(),
                            ))
                        }
                        Ok(Err(e)) => Err(AllocateError::Other(e.to_string())),
                        Err(e) => Err(AllocateError::Other(e.to_string())),
                    }
                }),
        )
    }
}

impl Handler<GetAllocatorStatus> for YarnAllocator {
    type Result = MessageResult<GetAllocatorStatus>;

    fn handle(&mut self, _: GetAllocatorStatus, _: &mut Context<Self>) -> MessageResult<GetAllocatorStatus> {
        MessageResult(self.status())
    }
}

impl Handler<RequestTotalExecutors> for YarnAllocator {
    type Result = bool;

    fn handle(&mut self, msg: RequestTotalExecutors, _: &mut Context<Self>) -> bool {
        let now = self.me.clock().now();
        let mut kept = self.kept.lock();
        let Some(st) = kept.state.as_mut() else {
            return false;
        };
        let req = msg.0;
        let total = req.resource_profile_to_total_execs.get(&0).copied().unwrap_or(0);
        let locality_tasks = req
            .num_locality_aware_tasks_per_resource_profile_id
            .get(&0)
            .copied()
            .unwrap_or(0);
        let hosts = req.host_to_local_task_count.get(&0).cloned().unwrap_or_default();
        let excluded: BTreeSet<String> = req.excluded_nodes;
        let changed = st.request_total_executors(total, locality_tasks, hosts, excluded, now);
        emit(st.take_logs());
        changed
    }
}

impl Handler<KillExecutor> for YarnAllocator {
    type Result = ();

    fn handle(&mut self, msg: KillExecutor, _: &mut Context<Self>) {
        let mut kept = self.kept.lock();
        let AllocatorKept { state, releases, .. } = &mut *kept;
        let Some(st) = state.as_mut() else { return };
        if let Some(container) = st.kill_executor(&msg.executor_id) {
            tracing::info!(executor_id = msg.executor_id.as_str(), container = %container, "releasing container {container} of executor {}", msg.executor_id);
            releases.push(container);
        }
        emit(st.take_logs());
    }
}

impl Handler<EnqueueLossReason> for YarnAllocator {
    type Result = ();

    fn handle(&mut self, msg: EnqueueLossReason, _: &mut Context<Self>) {
        let mut kept = self.kept.lock();
        let Some(st) = kept.state.as_mut() else {
            let _ = msg.reply.send(Err("the allocator is not initialized yet".into()));
            return;
        };
        match st.enqueue_get_loss_reason(&msg.executor_id, msg.reply) {
            LossReasonAnswer::Reply { token, reason } => {
                let _ = token.send(Ok(reason));
            }
            LossReasonAnswer::Failure { token, message } => {
                let _ = token.send(Err(message));
            }
            LossReasonAnswer::Queued => {}
        }
        emit(st.take_logs());
    }
}

impl Handler<LaunchResult> for YarnAllocator {
    type Result = ();

    fn handle(&mut self, msg: LaunchResult, ctx: &mut Context<Self>) {
        let mut kept = self.kept.lock();
        kept.launches.remove(&msg.container_id);
        let AllocatorKept {
            state,
            releases,
            watched,
            ..
        } = &mut *kept;
        let Some(st) = state.as_mut() else { return };
        match msg.result {
            Ok(()) => {
                if st.launch_succeeded(&msg.container_id) {
                    if let Some(host) = msg.host.as_deref() {
                        let path = container_path(host, &msg.container_id);
                        watched.insert(path.clone(), msg.container_id);
                        let me = self.me.clone();
                        me.watch(ctx, &path);
                    }
                }
            }
            Err(e) => {
                tracing::error!(
                    executor_id = msg.executor_id.as_str(),
                    "Failed to launch executor {}: {e}",
                    msg.executor_id
                );
                if let Some(c) = st.launch_failed(&msg.container_id, &e) {
                    releases.push(c);
                }
            }
        }
        emit(st.take_logs());
    }
}

impl Handler<RedriveLaunches> for YarnAllocator {
    type Result = ();

    fn handle(&mut self, _: RedriveLaunches, _: &mut Context<Self>) {
        self.redrive_launches();
    }
}

impl Handler<Terminated> for YarnAllocator {
    type Result = ();

    /// A launched container ended: fetch its status (and ask for a replacement) now.
    fn handle(&mut self, msg: Terminated, _: &mut Context<Self>) {
        let removed = self.kept.lock().watched.remove(&msg.path);
        if let Some(container) = removed {
            tracing::debug!(container = %container, "container {container} ended; waking the reporter");
            if let Some(reporter) = self.me.path().parent().and_then(|p| p.child("reporter").ok()) {
                let _ = self
                    .me
                    .endpoint::<ReporterProtocol>(&reporter)
                    .tell(ResetAllocatorInterval);
            }
        }
    }
}

crate::protocol! {
    /// What the YarnAllocator receives: the reporter's allocate calls, the AMEndpoint's
    /// totals, kills and loss-reason questions, and its launcher's results.
    pub AllocatorProtocol {
        AllocateResources,
        EnqueueLossReason,
        GetAllocatorStatus,
        KillExecutor,
        LaunchResult,
        RedriveLaunches,
        RequestTotalExecutors,
    }
}

crate::speaks!(YarnAllocator: AllocatorProtocol);
