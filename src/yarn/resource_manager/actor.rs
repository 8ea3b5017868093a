//! ResourceManager, at `/node/rm`: applications, attempts and containers for the whole
//! node.
//!
//! It hands out application ids (`application_<clusterTimestamp>_<seq>`), accepts
//! submissions (an unknown queue rejects the application with the CapacityScheduler's
//! diagnostics; an AM above the maximum allocation is refused with YARN's
//! InvalidResourceRequest), runs the application state machine (NEW → SUBMITTED →
//! ACCEPTED → RUNNING → FINISHED / FAILED / KILLED) with its final status, and launches the
//! AM container of each attempt on a NodeManager. It serves the AM protocol: registration,
//! the Allocate heartbeat (the attempt's outstanding requests are scheduled at once, with
//! locality, by [`crate::yarn::scheduler::Scheduler`]; granted containers and completed container
//! statuses go back in the answer) and unregistration. When an AM container ends without
//! its attempt having unregistered, the attempt failed: the RM starts another, up to
//! `yarn.resourcemanager.am.max-attempts` (capped by the submission's `spark.yarn.maxAppAttempts`),
//! then fails the application with YARN's diagnostics; as in YARN, an attempt whose AM
//! container was preempted, aborted (its node lost), lost to a disk failure or killed by the
//! RM does not count towards that maximum.
//!
//! Each queue holds its ApplicationMasters to `maximum-am-resource-percent` of the cluster
//! ([`crate::yarn::leaf_queue::LeafQueue`]): an attempt's AM container is placed only once its
//! queue activated it; the others wait ACCEPTED, in submission order, with YARN's
//! diagnostics, and start as attempts end. At most `max-completed-applications` finished
//! applications are kept; older ones are forgotten, oldest first.
//!
//! Restarts: its applications, attempts and nodes are kept by its supervisor
//! ([`RmState`]), so a restarted RM still knows them; what was queued in its mailbox is lost
//! with it, and the peers make up for it. Report waiters are dropped (clients ask again).
//! A new incarnation asks every known NodeManager to register again
//! ([`crate::yarn::node_manager::Resync`]); a registration ([`RegisterNode`]) names the node's
//! running containers and the completed statuses the RM has not taken, and the RM completes
//! every container it placed on that node which the node does not name as lost (-100,
//! "Container released on a *lost* node") — so a NodeStatusUpdate lost in the dead mailbox
//! is sent again, and the containers of a node that died are reported as YARN reports a lost
//! node's. A container granted but not started yet is among those: the node refuses to
//! start it afterwards, and its AM asks for another (as YARN's NodeManager refuses a
//! container token from before its re-registration). Completions are idempotent; a
//! container its AM releases completes at once, and an ended attempt's containers are freed
//! at once, whatever their nodes report later (YARN's RMContainer on RELEASED and KILL). Allocate is too, as in YARN's ApplicationMasterService:
//! an Allocate carrying the response id of the last answer's request (its answer never
//! reached the AM: the allocator died meanwhile) gets that answer again, with the granted
//! containers and completed statuses it held. ApplicationMasters reach the RM through
//! [`ask_rm`], which retries while the RM cannot be reached (its mailbox died with the ask,
//! or its new incarnation is not registered yet), as Hadoop's RM proxy does on failover.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Duration;

use actix::{Actor, Context, Handler, Message, MessageResult, ResponseFuture};
use tokio::sync::oneshot;

use crate::yarn::leaf_queue::{self, Decision, LeafQueue};
use crate::yarn::node_manager::{node_manager_path, LOST_CONTAINER};
use crate::yarn::protocol::*;
use crate::yarn::records::*;
use crate::yarn::scheduler::Scheduler;
use crate::conf::{self, SparkConf};
use crate::rpc::{AskError, EndpointRef};
use crate::runtime::protocol::Carries;
use crate::runtime::timers::run_later;
use crate::runtime::{Kept, Me};

/// The diagnostics of a container its AM released (SchedulerUtils.RELEASED_CONTAINER).
pub const RELEASED_CONTAINER: &str = "Container released by application";

/// How often [`ask_rm`] tries while the RM cannot be reached, and the pause between tries.
const RM_TRIES: u32 = 100;
const RM_RETRY_DELAY: Duration = Duration::from_millis(10);

/// Asks the ResourceManager as an ApplicationMaster's RM proxy does: while the RM cannot be
/// reached (the ask died with its incarnation's mailbox, or nothing is registered at its
/// path while it restarts) the ask is sent again after a short pause, up to
/// 100 times (one second); a time-out or the RM's own answer ends it.
pub async fn ask_rm<P, M>(rm: &EndpointRef<P>, msg: M, timeout: Duration) -> Result<M::Result, AskError>
where
    M: Message + Clone + Send + 'static,
    M::Result: Send,
    P: Carries<M>,
{
    rm.ask_while_restarting(msg, timeout, RM_TRIES, RM_RETRY_DELAY)
        .await
}

/// What the RM reads from yarn-site.conf.
#[derive(Clone, Debug)]
pub struct RmConfig {
    pub queues: Vec<String>,
    pub max_attempts: u32,
    pub minimum_allocation: Resource,
    pub maximum_allocation: Resource,
    pub ask_timeout: Duration,
    /// yarn.scheduler.capacity.maximum-am-resource-percent, per queue.
    pub max_am_resource_percent: f64,
    /// yarn.resourcemanager.max-completed-applications.
    pub max_completed_applications: usize,
    /// yarn.resourcemanager.nodemanager-graceful-decommission-timeout-secs.
    pub graceful_decommission_timeout: Duration,
}

impl RmConfig {
    pub fn from_conf(conf: &SparkConf) -> RmConfig {
        RmConfig {
            queues: conf
                .get(&conf::CAPACITY_ROOT_QUEUES)
                .unwrap_or_else(|_| vec!["default".into()]),
            max_attempts: conf.get(&conf::RM_AM_MAX_ATTEMPTS).unwrap_or(2).max(1),
            minimum_allocation: Resource::new(
                conf.get(&conf::RM_SCHEDULER_MINIMUM_ALLOCATION_MB)
                    .unwrap_or(1024),
                conf.get(&conf::RM_SCHEDULER_MINIMUM_ALLOCATION_VCORES)
                    .unwrap_or(1),
            ),
            maximum_allocation: Resource::new(
                conf.get(&conf::RM_SCHEDULER_MAXIMUM_ALLOCATION_MB)
                    .unwrap_or(8192),
                conf.get(&conf::RM_SCHEDULER_MAXIMUM_ALLOCATION_VCORES)
                    .unwrap_or(4),
            ),
            ask_timeout: Duration::from_secs(30),
            max_am_resource_percent: conf.get(&conf::MAXIMUM_AM_RESOURCE_PERCENT).unwrap_or(0.1),
            max_completed_applications: conf
                .get(&conf::RM_MAX_COMPLETED_APPLICATIONS)
                .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
                .unwrap_or(1000),
            graceful_decommission_timeout: conf
                .get(&conf::RM_NM_GRACEFUL_DECOMMISSION_TIMEOUT)
                .unwrap_or(Duration::from_secs(3600)),
        }
    }
}

#[derive(Debug)]
struct RmAttempt {
    id: ApplicationAttemptId,
    am_container: Option<Container>,
    /// Waiting for room for its AM container.
    am_pending: bool,
    registered: bool,
    host: Option<String>,
    rpc_port: Option<i32>,
    tracking_url: Option<String>,
    unregistered: Option<(FinalApplicationStatus, String)>,
    ended: bool,
    /// Granted containers not yet completed.
    containers: BTreeSet<ContainerId>,
    /// Containers the AM released (they complete as ABORTED).
    released: BTreeSet<ContainerId>,
    /// Completed container statuses for the AM's next Allocate.
    completed: Vec<ContainerStatus>,
    /// The last Allocate answer, sent again if its AM asks with the same response id.
    last_response: Option<AllocateResponse>,
    /// The AM container's exit status once it ended.
    am_exit_status: Option<i32>,
    /// What the scheduler says of its AM container until the AM registers (YARN's AM
    /// launch diagnostics: not activated, activated, assigned, launched).
    am_diagnostics: String,
    /// Node state changes for the AM's next Allocate (RMAppImpl's updatedNodes).
    updated_nodes: Vec<NodeReport>,
}

impl RmAttempt {
    /// RMAppAttemptImpl.shouldCountTowardsMaxAttemptRetry: a failed attempt counts unless
    /// its AM container was preempted, aborted (a lost node), lost to a disk failure or
    /// killed by the RM.
    fn counts_as_failure(&self) -> bool {
        self.ended
            && self.unregistered.is_none()
            && !matches!(
                self.am_exit_status,
                Some(
                    exit_status::PREEMPTED
                        | exit_status::ABORTED
                        | exit_status::DISKS_FAILED
                        | exit_status::KILLED_BY_RESOURCEMANAGER
                )
            )
    }
}

#[derive(Debug)]
struct RmApp {
    ctx: ApplicationSubmissionContext,
    state: YarnApplicationState,
    final_status: FinalApplicationStatus,
    diagnostics: String,
    attempts: Vec<RmAttempt>,
    max_attempts: u32,
    start_time: u64,
    finish_time: u64,
}

impl RmApp {
    fn current(&self) -> Option<&RmAttempt> {
        self.attempts.last()
    }
    fn current_mut(&mut self) -> Option<&mut RmAttempt> {
        self.attempts.last_mut()
    }
    fn report(&self) -> ApplicationReport {
        let cur = self.current();
        ApplicationReport {
            app_id: self.ctx.app_id,
            current_attempt: cur.map(|a| a.id),
            name: self.ctx.name.clone(),
            queue: self.ctx.queue.clone(),
            user: self.ctx.user.clone(),
            app_type: self.ctx.app_type.clone(),
            host: cur.and_then(|a| a.host.clone()),
            rpc_port: cur.and_then(|a| a.rpc_port),
            tracking_url: cur.and_then(|a| a.tracking_url.clone()).filter(|u| !u.is_empty()),
            state: self.state,
            final_status: self.final_status,
            // RMAppImpl.getDiagnostics: the attempt's AM launch diagnostics while the
            // application has none of its own.
            diagnostics: match cur {
                Some(a) if self.diagnostics.is_empty() => a.am_diagnostics.clone(),
                _ => self.diagnostics.clone(),
            },
            start_time: self.start_time,
            finish_time: self.finish_time,
            am_container: cur.and_then(|a| a.am_container.as_ref().map(|c| c.id)),
        }
    }
    fn key(&self) -> (YarnApplicationState, FinalApplicationStatus) {
        (self.state, self.final_status)
    }
}

/// The RM's state, kept by its supervisor across restarts.
#[derive(Debug)]
pub struct RmState {
    cluster_timestamp: u64,
    next_app: u32,
    apps: BTreeMap<ApplicationId, RmApp>,
    scheduler: Scheduler,
    /// Where each container ran, for fetching its output after it ended.
    container_hosts: BTreeMap<ContainerId, String>,
    /// The AM accounting of each queue, by name.
    queues: BTreeMap<String, LeafQueue>,
    /// Applications in a final state, in the order they ended: beyond
    /// `max-completed-applications` the oldest is forgotten.
    completed: VecDeque<ApplicationId>,
    /// Nodes being decommissioned or decommissioned, by host (NodesListManager's excluded
    /// nodes with the DecommissioningNodesWatcher's contexts).
    decommissions: BTreeMap<String, NodeDecommission>,
}

/// A node put into graceful decommission.
#[derive(Clone, Debug)]
struct NodeDecommission {
    /// DECOMMISSIONING or DECOMMISSIONED.
    state: NodeState,
    rack: String,
    capability: Resource,
    /// When a DECOMMISSIONING node's remaining containers are killed (epoch ms).
    deadline_ms: u64,
    /// Which refresh set the deadline (a later one replaces the timer).
    generation: u64,
}

impl RmState {
    /// Tells every running application's current attempt of a node's new state (at its
    /// next Allocate; a newer change of the same node replaces an older one not yet sent).
    fn push_node_update(&mut self, report: &NodeReport) {
        for app in self.apps.values_mut() {
            if app.state.is_final() {
                continue;
            }
            if let Some(attempt) = app.current_mut().filter(|a| !a.ended) {
                attempt.updated_nodes.retain(|n| n.host != report.host);
                attempt.updated_nodes.push(report.clone());
            }
        }
    }

    /// Some application still running had a container on `host` (YARN waits for them
    /// before it decommissions the node: their output may be served from there).
    fn has_running_app_on(&self, host: &str) -> bool {
        self.container_hosts.iter().any(|(id, h)| {
            h == host
                && self
                    .apps
                    .get(&id.attempt.app)
                    .is_some_and(|a| !a.state.is_final())
        })
    }

    /// Every node with its state: the scheduler's (running and decommissioning) and the
    /// decommissioned ones, by host.
    fn all_node_reports(&self) -> Vec<NodeReport> {
        let mut reports = self.scheduler.node_reports();
        for (host, d) in &self.decommissions {
            if d.state == NodeState::Decommissioned {
                reports.push(NodeReport {
                    host: host.clone(),
                    rack: d.rack.clone(),
                    capability: d.capability,
                    used: Resource::default(),
                    num_containers: 0,
                    state: NodeState::Decommissioned,
                });
            }
        }
        reports.sort_by(|a, b| a.host.cmp(&b.host));
        reports
    }
}

impl RmState {
    pub fn new(cluster_timestamp: u64, config: &RmConfig) -> RmState {
        RmState {
            cluster_timestamp,
            next_app: 0,
            apps: BTreeMap::new(),
            scheduler: Scheduler::new(config.minimum_allocation, config.maximum_allocation),
            container_hosts: BTreeMap::new(),
            queues: config
                .queues
                .iter()
                .map(|q| {
                    (
                        q.clone(),
                        LeafQueue::new(q, config.max_am_resource_percent, config.minimum_allocation),
                    )
                })
                .collect(),
            completed: VecDeque::new(),
            decommissions: BTreeMap::new(),
        }
    }

    /// An attempt is over (its AM container ended, or its application was killed): its
    /// AM's share of the queue is free for the next waiting attempt.
    fn release_am_share(&mut self, attempt: &ApplicationAttemptId) {
        let queue = self.apps.get(&attempt.app).map(|a| a.ctx.queue.clone());
        if let Some(q) = queue.and_then(|q| self.queues.get_mut(&q)) {
            q.finish(attempt);
        }
    }

    /// An application reached a final state: it is kept among the completed ones, and the
    /// oldest beyond `max` is forgotten (RMAppManager's max-completed-applications), with
    /// what the RM kept for its containers.
    fn app_completed(&mut self, app_id: ApplicationId, max: usize) {
        self.completed.push_back(app_id);
        while self.completed.len() > max {
            let Some(old) = self.completed.pop_front() else {
                break;
            };
            let Some(app) = self.apps.remove(&old) else {
                continue;
            };
            for attempt in &app.attempts {
                let range = ContainerId {
                    attempt: attempt.id,
                    id: 0,
                }..=ContainerId {
                    attempt: attempt.id,
                    id: u64::MAX,
                };
                let ids: Vec<ContainerId> = self.container_hosts.range(range).map(|(id, _)| *id).collect();
                for id in ids {
                    self.container_hosts.remove(&id);
                }
                self.scheduler.forget_attempt(&attempt.id);
            }
            tracing::info!(app_id = %old, kept = max as u64, "Application {old} removed: more than {max} completed applications are kept");
        }
    }
}

struct ReportWaiter {
    app: ApplicationId,
    known: (YarnApplicationState, FinalApplicationStatus),
    reply: oneshot::Sender<Result<ApplicationReport, YarnError>>,
}

/// The ResourceManager actor; see the module docs.
pub struct ResourceManager {
    me: Me,
    config: RmConfig,
    state: Kept<RmState>,
    waiters: Vec<ReportWaiter>,
}

impl ResourceManager {
    pub fn new(me: Me, config: RmConfig, state: Kept<RmState>) -> Self {
        ResourceManager {
            me,
            config,
            state,
            waiters: Vec::new(),
        }
    }

    fn nm(&self, host: &str) -> EndpointRef<ContainerManagementProtocol> {
        self.me.endpoint(&node_manager_path(host))
    }

    /// Answers the report waiters of `app` whose known state is now stale (and, as its
    /// state may have become final, sees whether a decommissioning node is done).
    fn notify(&mut self, app: ApplicationId) {
        self.check_decommissioning();
        let report = self.state.lock().apps.get(&app).map(|a| (a.key(), a.report()));
        let Some((key, report)) = report else { return };
        let (due, keep): (Vec<ReportWaiter>, Vec<ReportWaiter>) = std::mem::take(&mut self.waiters)
            .into_iter()
            .partition(|w| w.app == app && w.known != key);
        self.waiters = keep;
        for w in due {
            let _ = w.reply.send(Ok(report.clone()));
        }
    }

    /// Moves `app` to `state`; a final state releases its current attempt's AM share and
    /// counts it among the completed applications.
    fn finish_app(
        st: &mut RmState,
        app_id: ApplicationId,
        state: YarnApplicationState,
        max_completed: usize,
    ) {
        let Some(app) = st.apps.get_mut(&app_id) else {
            return;
        };
        let was_final = app.state.is_final();
        Self::set_state(app, state);
        let attempt = app.current().map(|a| a.id);
        if !was_final && state.is_final() {
            if let Some(attempt) = attempt {
                st.release_am_share(&attempt);
            }
            st.app_completed(app_id, max_completed);
        }
    }

    /// Activation passes of every queue (LeafQueue.activateApplications), and the AM launch
    /// diagnostics of each attempt they looked at.
    fn activate_applications(&mut self) {
        let stamp = leaf_queue::diagnostics_stamp(self.me.clock().epoch_millis());
        let mut st = self.state.lock();
        let cluster = st.scheduler.cluster_resource();
        let RmState { queues, apps, .. } = &mut *st;
        for queue in queues.values_mut() {
            let Some(decisions) = queue.activate(&cluster) else {
                for attempt_id in queue.pending() {
                    if let Some(attempt) = apps.get_mut(&attempt_id.app).and_then(|a| a.current_mut()) {
                        attempt.am_diagnostics = format!(
                            "{stamp}{}{}",
                            leaf_queue::NOT_ACTIVATED,
                            leaf_queue::CLUSTER_RESOURCE_EMPTY
                        );
                    }
                }
                tracing::debug!(
                    queue = queue.name(),
                    pending = queue.num_pending() as u64,
                    "Skipping AM assignment as cluster resource is empty"
                );
                continue;
            };
            for (attempt_id, decision) in decisions {
                let Some(attempt) = apps
                    .get_mut(&attempt_id.app)
                    .and_then(|a| a.attempts.iter_mut().find(|a| a.id == attempt_id))
                else {
                    continue;
                };
                match decision {
                    Decision::Activated {
                        user,
                        details,
                        above_limit,
                    } => {
                        if above_limit {
                            tracing::warn!(
                                queue = queue.name(),
                                app_id = %attempt_id.app,
                                "maximum-am-resource-percent is insufficient to start a single application in queue, it is likely set too low. skipping enforcement to allow at least one application to start"
                            );
                        }
                        attempt.am_diagnostics =
                            format!("{stamp}{}{}", leaf_queue::ACTIVATED, details.render());
                        tracing::info!(
                            app_id = %attempt_id.app,
                            attempt = attempt_id.attempt,
                            queue = queue.name(),
                            user = user.as_str(),
                            am_used = %details.queue_am_used,
                            am_limit = %details.queue_am_limit,
                            "Application {} from user: {user} activated in queue: {}",
                            attempt_id.app,
                            queue.name()
                        );
                    }
                    Decision::LimitReached { details } => {
                        let first = attempt.am_diagnostics.is_empty();
                        attempt.am_diagnostics = format!(
                            "{stamp}{}{}{}",
                            leaf_queue::NOT_ACTIVATED,
                            leaf_queue::QUEUE_AM_LIMIT_EXCEEDED,
                            details.render()
                        );
                        if first {
                            tracing::info!(
                                app_id = %attempt_id.app,
                                attempt = attempt_id.attempt,
                                queue = queue.name(),
                                am_used = %details.queue_am_used,
                                am_limit = %details.queue_am_limit,
                                "Not activating application {} as amIfStarted: {} exceeds amLimit: {}",
                                attempt_id.app,
                                details.queue_am_used.plus(&details.am_request),
                                details.queue_am_limit
                            );
                        }
                    }
                }
            }
        }
    }

    fn set_state(app: &mut RmApp, state: YarnApplicationState) {
        if app.state != state {
            tracing::info!(
                app_id = %app.ctx.app_id,
                "{} State change from {} to {} on event = {}",
                app.ctx.app_id,
                app.state,
                state,
                match state {
                    YarnApplicationState::Submitted => "START",
                    YarnApplicationState::Accepted => "APP_ACCEPTED",
                    YarnApplicationState::Running => "ATTEMPT_REGISTERED",
                    YarnApplicationState::Finished => "ATTEMPT_FINISHED",
                    YarnApplicationState::Failed => "ATTEMPT_FAILED",
                    YarnApplicationState::Killed => "KILL",
                    _ => "-",
                }
            );
            app.state = state;
        }
    }

    /// Starts the next attempt of `app_id`: allocates its AM container if there is room.
    fn start_attempt(&mut self, app_id: ApplicationId) {
        let mut st = self.state.lock();
        let Some(app) = st.apps.get(&app_id) else { return };
        let id = ApplicationAttemptId {
            app: app_id,
            attempt: app.attempts.len() as u32 + 1,
        };
        tracing::info!(app_id = %app_id, attempt = id.attempt, "Starting attempt {id}");
        if let Some(app) = st.apps.get_mut(&app_id) {
            app.attempts.push(RmAttempt {
                id,
                am_container: None,
                am_pending: true,
                registered: false,
                host: None,
                rpc_port: None,
                tracking_url: None,
                unregistered: None,
                ended: false,
                containers: BTreeSet::new(),
                released: BTreeSet::new(),
                completed: Vec::new(),
                last_response: None,
                am_exit_status: None,
                am_diagnostics: String::new(),
                updated_nodes: Vec::new(),
            });
        }
        // The CapacityScheduler's addApplicationAttempt: the attempt waits in its queue
        // until an activation pass lets its AM start.
        if let Some(app) = st.apps.get(&app_id) {
            let (queue, user) = (app.ctx.queue.clone(), app.ctx.user.clone());
            let am = st
                .scheduler
                .normalize(&app.ctx.resource)
                .unwrap_or(app.ctx.resource);
            if let Some(q) = st.queues.get_mut(&queue) {
                q.submit(id, &user, am);
            }
        }
        drop(st);
        self.activate_applications();
        self.place_pending_ams();
    }

    /// Gives the AM containers of activated attempts a node, where there is room, and
    /// launches them.
    fn place_pending_ams(&mut self) {
        let mut launches = Vec::new();
        let stamp = leaf_queue::diagnostics_stamp(self.me.clock().epoch_millis());
        {
            let mut st = self.state.lock();
            let RmState {
                apps,
                scheduler,
                container_hosts,
                queues,
                ..
            } = &mut *st;
            let activated: Vec<ApplicationAttemptId> =
                queues.values().flat_map(|q| q.active().copied()).collect();
            for attempt_id in activated {
                let Some(app) = apps.get_mut(&attempt_id.app) else {
                    continue;
                };
                if app.state.is_final() {
                    continue;
                }
                let RmApp { ctx, attempts, .. } = app;
                let Some(attempt) = attempts.last_mut().filter(|a| a.id == attempt_id) else {
                    continue;
                };
                if !attempt.am_pending || attempt.ended {
                    continue;
                }
                match scheduler.allocate_am(attempt.id, &ctx.resource) {
                    Ok(Some(container)) => {
                        let spec = ctx.am_container_spec.clone();
                        attempt.am_diagnostics = format!("{stamp}{}", leaf_queue::ASSIGNED);
                        attempt.am_pending = false;
                        attempt.am_container = Some(container.clone());
                        attempt.containers.insert(container.id);
                        container_hosts.insert(container.id, container.node.clone());
                        tracing::info!(
                            app_id = %attempt.id.app,
                            attempt = attempt.id.attempt,
                            container_id = %container.id,
                            "Allocated AM container {} on {} ({}) for {}",
                            container.id,
                            container.node,
                            container.resource,
                            attempt.id
                        );
                        launches.push((container, spec));
                    }
                    Ok(None) => {}
                    Err(e) => {
                        tracing::error!(app_id = %attempt.id.app, "cannot allocate the AM container: {e}")
                    }
                }
            }
        }
        for (container, spec) in launches {
            self.launch(container, spec);
        }
    }

    fn launch(&mut self, container: Container, mut launch: ContainerLaunchContext) {
        launch
            .environment
            .insert("CONTAINER_ID".into(), container.id.to_string());
        launch
            .environment
            .insert("NM_HOST".into(), container.node.clone());
        let nm = self.nm(&container.node);
        let host = container.node.clone();
        let id = container.id;
        let rm: EndpointRef<ResourceTracker> = self.me.endpoint(self.me.path());
        let launched: EndpointRef<AmLaunchProtocol> = rm.speaking();
        let timeout = self.config.ask_timeout;
        let clock = self.me.clock().clone();
        actix::spawn(async move {
            // A NodeManager that cannot be reached (restarting) is asked again; starting a
            // container is idempotent there.
            let start = StartContainer { container, launch };
            let mut tries = 0;
            let result = loop {
                tries += 1;
                match nm.ask(start.clone(), timeout).await {
                    Err(AskError::Died { .. } | AskError::Lookup(_)) if tries < RM_TRIES => {
                        clock.sleep(RM_RETRY_DELAY).await
                    }
                    other => break other,
                }
            };
            let failure = match result {
                Ok(Ok(())) => {
                    let _ = launched.tell(AmContainerLaunched { container_id: id });
                    None
                }
                Ok(Err(e)) => Some(e.to_string()),
                Err(e) => Some(e.to_string()),
            };
            if let Some(e) = failure {
                // The container never ran: report it as completed so the attempt fails.
                let _ = rm.tell(NodeStatusUpdate {
                    host,
                    completed: vec![ContainerStatus {
                        container_id: id,
                        state: ContainerState::Complete,
                        exit_status: exit_status::INVALID,
                        diagnostics: format!("Container launch failed: {e}"),
                    }],
                });
            }
        });
    }

    fn stop_containers(&self, ids: impl IntoIterator<Item = ContainerId>, requester: StopRequester) {
        let hosts: Vec<(ContainerId, String)> = {
            let st = self.state.lock();
            ids.into_iter()
                .filter_map(|id| st.container_hosts.get(&id).map(|h| (id, h.clone())))
                .collect()
        };
        for (container_id, host) in hosts {
            let _ = self.nm(&host).tell(StopContainer {
                container_id,
                requester,
            });
        }
    }

    /// A container completed on a node.
    fn container_completed(&mut self, mut status: ContainerStatus) {
        let id = status.container_id;
        let attempt_id = id.attempt;
        let app_id = attempt_id.app;
        let mut am_ended = None;
        let running_containers;
        {
            let mut st = self.state.lock();
            st.scheduler.release(&id);
            let Some(app) = st.apps.get_mut(&app_id) else {
                return;
            };
            let Some(attempt) = app.attempts.iter_mut().find(|a| a.id == attempt_id) else {
                return;
            };
            if !attempt.containers.remove(&id) {
                // Reported again (a NodeManager re-sends what it could not see taken).
                tracing::debug!(container_id = %id, "Container {id} already completed");
                return;
            }
            running_containers = attempt.containers.len();
            if attempt.released.remove(&id) {
                status.exit_status = exit_status::ABORTED;
                status.diagnostics = RELEASED_CONTAINER.into();
            }
            if attempt.am_container.as_ref().map(|c| c.id) == Some(id) {
                am_ended = Some(status.clone());
            } else if !attempt.ended {
                attempt.completed.push(status.clone());
            }
        }
        tracing::info!(
            app_id = %app_id,
            container_id = %id,
            exit_status = status.exit_status,
            running_containers = running_containers as u64,
            "Container {id} completed with exit status {} ({running_containers} container(s) of the attempt running)",
            status.exit_status
        );
        if let Some(status) = am_ended {
            self.am_container_finished(attempt_id, status);
        }
        self.check_decommissioning();
        self.place_pending_ams();
    }

    // ----- graceful decommission ---------------------------------------------------------

    /// Puts `host` into graceful decommission (or gives a decommissioning node a new
    /// timeout): the scheduler places nothing more there, running applications are told in
    /// their next Allocate, and after `timeout` whatever still runs there is killed.
    fn decommission_node(&mut self, host: &str, timeout: Duration, ctx: &mut Context<Self>) {
        let now = self.me.clock().epoch_millis();
        let deadline_ms = now.saturating_add(u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX));
        let generation = {
            let mut st = self.state.lock();
            let generation = st.decommissions.values().map(|d| d.generation).max().unwrap_or(0) + 1;
            match st.decommissions.get_mut(host) {
                Some(d) if d.state == NodeState::Decommissioned => {
                    tracing::info!(host, "Node {host} is already DECOMMISSIONED");
                    return;
                }
                Some(d) => {
                    d.deadline_ms = deadline_ms;
                    d.generation = generation;
                    tracing::info!(
                        host,
                        timeout_ms = timeout.as_millis() as u64,
                        "Update {host} DecommissioningTimeout to be {}",
                        timeout.as_secs()
                    );
                }
                None => {
                    let Some(report) = st.scheduler.node_reports().into_iter().find(|n| n.host == host)
                    else {
                        return;
                    };
                    st.scheduler.set_decommissioning(host, true);
                    st.decommissions.insert(
                        host.to_string(),
                        NodeDecommission {
                            state: NodeState::Decommissioning,
                            rack: report.rack.clone(),
                            capability: report.capability,
                            deadline_ms,
                            generation,
                        },
                    );
                    let report = NodeReport {
                        state: NodeState::Decommissioning,
                        ..report
                    };
                    st.push_node_update(&report);
                    tracing::info!(host, "Gracefully decommission node {host} with state RUNNING");
                    tracing::info!(
                        event = "node_decommissioning",
                        host,
                        running_containers = report.num_containers,
                        timeout_ms = timeout.as_millis() as u64,
                        "Put Node {host} in DECOMMISSIONING (timeout {}; {} container(s) running there)",
                        humantime::format_duration(timeout),
                        report.num_containers
                    );
                }
            }
            generation
        };
        self.arm_decommission_timeout(host, timeout, generation, ctx);
        self.check_decommissioning();
    }

    fn arm_decommission_timeout(
        &self,
        host: &str,
        timeout: Duration,
        generation: u64,
        ctx: &mut Context<Self>,
    ) {
        let clock = self.me.clock().clone();
        let host = host.to_string();
        run_later(ctx, &clock, timeout, move |act: &mut Self, _| {
            let due = act
                .state
                .lock()
                .decommissions
                .get(&host)
                .is_some_and(|d| d.state == NodeState::Decommissioning && d.generation == generation);
            if due {
                tracing::info!(host = host.as_str(), "DECOMMISSIONING {host} timeout");
                act.node_decommissioned(&host, true);
            }
        });
    }

    /// DecommissioningNodesWatcher: a decommissioning node with no container left and no
    /// running application that had one there is decommissioned.
    fn check_decommissioning(&mut self) {
        let ready: Vec<String> = {
            let st = self.state.lock();
            st.decommissions
                .iter()
                .filter(|(host, d)| {
                    d.state == NodeState::Decommissioning
                        && st.scheduler.containers_on(host).is_empty()
                        && !st.has_running_app_on(host)
                })
                .map(|(host, _)| host.clone())
                .collect()
        };
        for host in ready {
            self.node_decommissioned(&host, false);
        }
    }

    /// The node leaves the cluster (DECOMMISSIONED): containers still there (after a
    /// timeout) are killed and completed as on a lost node, and running applications are told.
    fn node_decommissioned(&mut self, host: &str, timed_out: bool) {
        let lost = {
            let mut st = self.state.lock();
            let Some(d) = st.decommissions.get_mut(host) else {
                return;
            };
            if d.state != NodeState::Decommissioning {
                return;
            }
            d.state = NodeState::Decommissioned;
            let report = NodeReport {
                host: host.to_string(),
                rack: d.rack.clone(),
                capability: d.capability,
                used: Resource::default(),
                num_containers: 0,
                state: NodeState::Decommissioned,
            };
            let lost = st.scheduler.remove_node(host);
            st.push_node_update(&report);
            lost
        };
        tracing::info!(
            event = "node_decommissioned",
            host,
            timed_out,
            killed_containers = lost.len() as u64,
            "Deactivating Node {host} as it is now DECOMMISSIONED ({})",
            if timed_out {
                format!(
                    "graceful decommission timed out; {} container(s) killed",
                    lost.len()
                )
            } else {
                "its containers and applications are done".to_string()
            }
        );
        for id in &lost {
            let _ = self.nm(host).tell(StopContainer {
                container_id: *id,
                requester: StopRequester::ResourceManager,
            });
        }
        for id in lost {
            self.container_completed(ContainerStatus {
                container_id: id,
                state: ContainerState::Complete,
                exit_status: exit_status::ABORTED,
                diagnostics: LOST_CONTAINER.to_string(),
            });
        }
        // The cluster's resources changed: the queues' AM limits with them.
        self.activate_applications();
        self.place_pending_ams();
    }

    /// The node runs again: a decommissioning one at once; a decommissioned one once its
    /// NodeManager registers again (it is asked to, as an operator restarts it in YARN).
    fn recommission_node(&mut self, host: &str) {
        let previous = {
            let mut st = self.state.lock();
            let Some(d) = st.decommissions.remove(host) else {
                tracing::debug!(host, "Node {host} is not being decommissioned");
                return;
            };
            if d.state == NodeState::Decommissioning {
                st.scheduler.set_decommissioning(host, false);
                if let Some(report) = st.scheduler.node_reports().into_iter().find(|n| n.host == host) {
                    st.push_node_update(&report);
                }
            }
            d.state
        };
        tracing::info!(
            event = "node_recommissioned",
            host,
            "Recommission node {host} with state {previous}"
        );
        if previous == NodeState::Decommissioned {
            if let Err(e) = self.nm(host).speaking::<NodeActionProtocol>().tell(Resync) {
                tracing::warn!(host, "cannot ask {host} to register again: {e}");
            }
        } else {
            self.place_pending_ams();
        }
    }

    /// The AM container of an attempt ended: the attempt is over.
    fn am_container_finished(&mut self, attempt_id: ApplicationAttemptId, status: ContainerStatus) {
        let app_id = attempt_id.app;
        let now = self.me.clock().epoch_millis();
        let mut retry = false;
        let mut leftovers = Vec::new();
        let requester;
        let mut final_state = None;
        {
            let mut st = self.state.lock();
            let st = &mut *st;
            let RmState { apps, scheduler, .. } = st;
            let Some(app) = apps.get_mut(&app_id) else {
                return;
            };
            let max = app.max_attempts;
            let Some(attempt) = app.attempts.iter_mut().find(|a| a.id == attempt_id) else {
                return;
            };
            attempt.ended = true;
            attempt.am_exit_status = Some(status.exit_status);
            leftovers.extend(attempt.containers.iter().copied());
            // As YARN frees an ended attempt's containers at once (their nodes are told to
            // stop them; what they report later only closes the books).
            for id in &leftovers {
                scheduler.release(id);
            }
            let unregistered = attempt.unregistered.clone();
            let failures = app.attempts.iter().filter(|a| a.counts_as_failure()).count() as u32;
            if app.state.is_final() {
                requester = StopRequester::ResourceManager;
            } else if let Some((final_status, diagnostics)) = unregistered {
                requester = StopRequester::AppCompletion;
                app.final_status = final_status;
                app.diagnostics = diagnostics;
                app.finish_time = now;
                final_state = Some(YarnApplicationState::Finished);
            } else {
                requester = StopRequester::ResourceManager;
                let diagnostics = format!(
                    "AM Container for {attempt_id} exited with  exitCode: {}\nFailing this attempt.Diagnostics: {}\nFor more detailed output, check the application's logs: sparkyard logs --app {app_id}\n",
                    status.exit_status, status.diagnostics
                );
                tracing::warn!(app_id = %app_id, attempt = attempt_id.attempt, exit_status = status.exit_status, "{diagnostics}");
                tracing::info!(
                    app_id = %app_id,
                    failed_attempts = failures as u64,
                    max_attempts = max as u64,
                    "The number of failed attempts is {failures}. The max attempts is {max}"
                );
                if failures < max {
                    app.diagnostics = diagnostics;
                    Self::set_state(app, YarnApplicationState::Accepted);
                    retry = true;
                } else {
                    app.diagnostics =
                        format!("Application {app_id} failed {max} times due to {diagnostics}. Failing the application.");
                    app.final_status = FinalApplicationStatus::Failed;
                    app.finish_time = now;
                    final_state = Some(YarnApplicationState::Failed);
                }
            }
            // What the ended attempt kept for its AM's Allocate calls is not needed again.
            if let Some(attempt) = app.attempts.iter_mut().find(|a| a.id == attempt_id) {
                attempt.completed = Vec::new();
                attempt.released = BTreeSet::new();
                attempt.last_response = None;
            }
            st.release_am_share(&attempt_id);
            if let Some(state) = final_state {
                Self::finish_app(st, app_id, state, self.config.max_completed_applications);
            }
        }
        self.stop_containers(leftovers, requester);
        if retry {
            self.start_attempt(app_id);
        } else {
            self.activate_applications();
            self.place_pending_ams();
        }
        self.notify(app_id);
    }

    /// Whether a container a node reports running should be stopped, and by whom: one the
    /// RM does not place there, one its AM released, or one of an attempt that ended.
    fn should_be_stopped(st: &RmState, id: &ContainerId, host: &str) -> Option<StopRequester> {
        let attempt = st
            .apps
            .get(&id.attempt.app)
            .and_then(|app| app.attempts.iter().find(|a| a.id == id.attempt).map(|a| (app, a)));
        match attempt {
            Some((_, attempt)) if attempt.released.contains(id) => Some(StopRequester::ApplicationMaster),
            Some((app, attempt)) if app.state == YarnApplicationState::Finished && attempt.ended => {
                Some(StopRequester::AppCompletion)
            }
            Some((app, attempt)) if attempt.ended || app.state.is_final() => {
                Some(StopRequester::ResourceManager)
            }
            _ if st.scheduler.node_of(id) != Some(host) => Some(StopRequester::ResourceManager),
            _ => None,
        }
    }

    /// Checks that `attempt` is the current, live attempt of its application.
    fn live_attempt<'a>(
        st: &'a mut RmState,
        attempt: &ApplicationAttemptId,
    ) -> Result<&'a mut RmAttempt, YarnError> {
        st.apps
            .get_mut(&attempt.app)
            .filter(|a| !a.state.is_final())
            .and_then(|a| a.current_mut())
            .filter(|a| a.id == *attempt && !a.ended)
            .ok_or(YarnError::ApplicationAttemptNotFound(*attempt))
    }
}

impl Actor for ResourceManager {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        // The graceful-decommission timers died with the previous incarnation.
        let now = self.me.clock().epoch_millis();
        let timers: Vec<(String, u64, u64)> = self
            .state
            .lock()
            .decommissions
            .iter()
            .filter(|(_, d)| d.state == NodeState::Decommissioning)
            .map(|(h, d)| (h.clone(), d.deadline_ms, d.generation))
            .collect();
        for (host, deadline, generation) in timers {
            let left = Duration::from_millis(deadline.saturating_sub(now));
            self.arm_decommission_timeout(&host, left, generation, ctx);
        }
        let hosts: Vec<String> = {
            let st = self.state.lock();
            tracing::info!(
                cluster_timestamp = st.cluster_timestamp,
                applications = st.apps.len() as u64,
                nodes = st.scheduler.num_nodes(),
                "ResourceManager started (cluster timestamp {}, {} applications, {} NodeManagers known)",
                st.cluster_timestamp,
                st.apps.len(),
                st.scheduler.num_nodes()
            );
            st.scheduler.node_reports().into_iter().map(|n| n.host).collect()
        };
        if self.me.incarnation() > 1 && !hosts.is_empty() {
            // What the NodeManagers sent the dead incarnation is lost: each registers again
            // with its running containers and the statuses not yet taken.
            tracing::info!(
                nodes = hosts.len() as u64,
                "ResourceManager restarted; asking {} NodeManager(s) to resynchronise",
                hosts.len()
            );
            for host in hosts {
                if let Err(e) = self.nm(&host).speaking::<NodeActionProtocol>().tell(Resync) {
                    tracing::warn!(host = host.as_str(), "cannot ask {host} to resynchronise: {e}");
                }
            }
        }
    }
}

impl Handler<RegisterNode> for ResourceManager {
    type Result = Result<NodeRegistration, YarnError>;

    fn handle(&mut self, msg: RegisterNode, _: &mut Context<Self>) -> Self::Result {
        let disallowed = self
            .state
            .lock()
            .decommissions
            .get(&msg.host)
            .is_some_and(|d| d.state == NodeState::Decommissioned);
        if disallowed {
            let message = format!(
                "Disallowed NodeManager from  {}, Sending SHUTDOWN signal to the NodeManager.",
                msg.host
            );
            tracing::info!(host = msg.host.as_str(), "{message}");
            return Err(YarnError::Other(message));
        }
        let known = {
            let mut st = self.state.lock();
            let known = st.scheduler.has_node(&msg.host);
            st.scheduler.add_node(&msg.host, &msg.rack, msg.capability);
            known
        };
        tracing::info!(
            host = msg.host.as_str(),
            rack = msg.rack.as_str(),
            running_containers = msg.running.len() as u64,
            completed_containers = msg.completed.len() as u64,
            "NodeManager from node {} {} with capability: {}, rack {} ({} running container(s), {} completed)",
            msg.host,
            if known { "re-registered" } else { "registered" },
            msg.capability,
            msg.rack,
            msg.running.len(),
            msg.completed.len()
        );
        for status in msg.completed {
            self.container_completed(status);
        }
        let running: BTreeSet<ContainerId> = msg.running.iter().copied().collect();
        let (lost, to_stop): (Vec<ContainerId>, Vec<(ContainerId, StopRequester)>) = {
            let st = self.state.lock();
            let lost = st
                .scheduler
                .containers_on(&msg.host)
                .into_iter()
                .filter(|id| !running.contains(id))
                .collect();
            let to_stop = running
                .iter()
                .filter_map(|id| Self::should_be_stopped(&st, id, &msg.host).map(|r| (*id, r)))
                .collect();
            (lost, to_stop)
        };
        for id in &lost {
            tracing::warn!(
                container_id = %id,
                app_id = %id.attempt.app,
                host = msg.host.as_str(),
                "Container {id} on {} is not running on the node that registered: {LOST_CONTAINER}",
                msg.host
            );
            self.container_completed(ContainerStatus {
                container_id: *id,
                state: ContainerState::Complete,
                exit_status: exit_status::ABORTED,
                diagnostics: LOST_CONTAINER.to_string(),
            });
        }
        for (id, requester) in to_stop {
            // Still running there although it was asked to stop (the request may have been
            // lost with a NodeManager's mailbox) or is no longer the RM's: stop it again.
            tracing::info!(container_id = %id, host = msg.host.as_str(), requester = ?requester, "Container {id} on {} should not be running; stopping it", msg.host);
            let _ = self.nm(&msg.host).tell(StopContainer {
                container_id: id,
                requester,
            });
        }
        // The cluster's resources changed: the queues' AM limits with them.
        self.activate_applications();
        self.place_pending_ams();
        Ok(NodeRegistration { lost })
    }
}

impl Handler<RegisterNodeManager> for ResourceManager {
    type Result = ();

    fn handle(&mut self, msg: RegisterNodeManager, _: &mut Context<Self>) {
        {
            let mut st = self.state.lock();
            if st.decommissions.contains_key(&msg.host) {
                tracing::info!(
                    host = msg.host.as_str(),
                    "Disallowed NodeManager from  {}, Sending SHUTDOWN signal to the NodeManager.",
                    msg.host
                );
                return;
            }
            st.scheduler.add_node(&msg.host, &msg.rack, msg.capability);
        }
        tracing::info!(
            host = msg.host.as_str(),
            rack = msg.rack.as_str(),
            "NodeManager from node {} registered with capability: {}, rack {}",
            msg.host,
            msg.capability,
            msg.rack
        );
        self.activate_applications();
        self.place_pending_ams();
    }
}

impl Handler<GetNewApplication> for ResourceManager {
    type Result = Result<NewApplication, YarnError>;

    fn handle(&mut self, _: GetNewApplication, _: &mut Context<Self>) -> Self::Result {
        let mut st = self.state.lock();
        st.next_app += 1;
        let app_id = ApplicationId {
            cluster_timestamp: st.cluster_timestamp,
            id: st.next_app,
        };
        Ok(NewApplication {
            app_id,
            maximum_capability: st.scheduler.maximum_allocation(),
            num_node_managers: st.scheduler.num_nodes(),
        })
    }
}

impl Handler<SubmitApplication> for ResourceManager {
    type Result = Result<(), YarnError>;

    fn handle(&mut self, msg: SubmitApplication, _: &mut Context<Self>) -> Self::Result {
        let ctx = msg.0;
        let app_id = ctx.app_id;
        let now = self.me.clock().epoch_millis();
        let accepted = {
            let mut st = self.state.lock();
            if st.apps.contains_key(&app_id) {
                return Err(YarnError::Other(format!(
                    "Application with id {app_id} is already present! Cannot add a duplicate!"
                )));
            }
            if app_id.cluster_timestamp != st.cluster_timestamp || app_id.id > st.next_app {
                return Err(YarnError::Other(format!(
                    "Application {app_id} was not created by this ResourceManager"
                )));
            }
            st.scheduler.normalize(&ctx.resource)?;
            let max_attempts = match ctx.max_app_attempts {
                Some(n) if n > 0 && n <= self.config.max_attempts => n,
                _ => self.config.max_attempts,
            };
            let queue_known = self.config.queues.iter().any(|q| q == &ctx.queue);
            let mut app = RmApp {
                ctx,
                state: YarnApplicationState::New,
                final_status: FinalApplicationStatus::Undefined,
                diagnostics: String::new(),
                attempts: Vec::new(),
                max_attempts,
                start_time: now,
                finish_time: 0,
            };
            tracing::info!(
                app_id = %app_id,
                queue = app.ctx.queue.as_str(),
                user = app.ctx.user.as_str(),
                "Application {app_id} submitted by user {} to queue {} (name {}, type {})",
                app.ctx.user,
                app.ctx.queue,
                app.ctx.name,
                app.ctx.app_type
            );
            Self::set_state(&mut app, YarnApplicationState::Submitted);
            if queue_known {
                Self::set_state(&mut app, YarnApplicationState::Accepted);
            } else {
                app.diagnostics = format!(
                    "Application {app_id} submitted by user {} to unknown queue: {}",
                    app.ctx.user, app.ctx.queue
                );
                app.final_status = FinalApplicationStatus::Failed;
                app.finish_time = now;
                tracing::warn!(app_id = %app_id, "{}", app.diagnostics);
                Self::set_state(&mut app, YarnApplicationState::Failed);
            }
            st.apps.insert(app_id, app);
            if !queue_known {
                st.app_completed(app_id, self.config.max_completed_applications);
            }
            queue_known
        };
        if accepted {
            self.start_attempt(app_id);
        }
        self.notify(app_id);
        Ok(())
    }
}

impl Handler<GetApplicationReport> for ResourceManager {
    type Result = ResponseFuture<Result<ApplicationReport, YarnError>>;

    fn handle(&mut self, msg: GetApplicationReport, ctx: &mut Context<Self>) -> Self::Result {
        let found = self
            .state
            .lock()
            .apps
            .get(&msg.app_id)
            .map(|a| (a.key(), a.report()));
        let Some((key, report)) = found else {
            return Box::pin(async move { Err(YarnError::ApplicationNotFound(msg.app_id)) });
        };
        match msg.wait {
            Some(wait) if wait.known == key && !key.0.is_final() => {
                let (tx, rx) = oneshot::channel();
                self.waiters.push(ReportWaiter {
                    app: msg.app_id,
                    known: wait.known,
                    reply: tx,
                });
                let app = msg.app_id;
                let clock = self.me.clock().clone();
                run_later(ctx, &clock, wait.max, move |act: &mut ResourceManager, _| {
                    let report = act.state.lock().apps.get(&app).map(|a| a.report());
                    let (due, keep): (Vec<ReportWaiter>, Vec<ReportWaiter>) =
                        std::mem::take(&mut act.waiters)
                            .into_iter()
                            .partition(|w| w.app == app);
                    act.waiters = keep;
                    for w in due {
                        let _ = w
                            .reply
                            .send(report.clone().ok_or(YarnError::ApplicationNotFound(app)));
                    }
                });
                Box::pin(async move {
                    rx.await
                        .unwrap_or(Err(YarnError::Other("the ResourceManager stopped".into())))
                })
            }
            _ => Box::pin(async move { Ok(report) }),
        }
    }
}

impl Handler<KillApplication> for ResourceManager {
    type Result = Result<(), YarnError>;

    fn handle(&mut self, msg: KillApplication, _: &mut Context<Self>) -> Self::Result {
        let now = self.me.clock().epoch_millis();
        let containers: Vec<ContainerId> = {
            let mut st = self.state.lock();
            let app = st
                .apps
                .get_mut(&msg.app_id)
                .ok_or(YarnError::ApplicationNotFound(msg.app_id))?;
            if app.state.is_final() {
                return Ok(());
            }
            let user = app.ctx.user.clone();
            app.diagnostics = if msg.diagnostics.is_empty() {
                format!("Application {} was killed by user {user}", msg.app_id)
            } else {
                format!(
                    "Application {} was killed by user {user}: {}",
                    msg.app_id, msg.diagnostics
                )
            };
            app.final_status = FinalApplicationStatus::Killed;
            app.finish_time = now;
            tracing::warn!(app_id = %msg.app_id, "{}", app.diagnostics);
            let containers = match app.current_mut() {
                Some(a) => {
                    a.am_pending = false;
                    a.containers.iter().copied().collect()
                }
                None => Vec::new(),
            };
            Self::finish_app(
                &mut st,
                msg.app_id,
                YarnApplicationState::Killed,
                self.config.max_completed_applications,
            );
            containers
        };
        self.stop_containers(containers, StopRequester::ResourceManager);
        // Its AM's share of the queue is free: the next waiting application may start.
        self.activate_applications();
        self.place_pending_ams();
        self.notify(msg.app_id);
        Ok(())
    }
}

impl Handler<GetClusterNodes> for ResourceManager {
    type Result = MessageResult<GetClusterNodes>;

    fn handle(&mut self, _: GetClusterNodes, _: &mut Context<Self>) -> MessageResult<GetClusterNodes> {
        MessageResult(self.state.lock().scheduler.node_reports())
    }
}

impl Handler<RefreshNodes> for ResourceManager {
    type Result = Result<Vec<NodeReport>, YarnError>;

    fn handle(&mut self, msg: RefreshNodes, ctx: &mut Context<Self>) -> Self::Result {
        {
            let st = self.state.lock();
            let known: BTreeSet<String> = st.all_node_reports().into_iter().map(|n| n.host).collect();
            for host in msg.decommission.iter().chain(&msg.recommission) {
                if !known.contains(host) {
                    return Err(YarnError::Other(format!(
                        "no NodeManager on host '{host}' (the nodes are {})",
                        known.iter().cloned().collect::<Vec<_>>().join(", ")
                    )));
                }
            }
            if let Some(host) = msg.decommission.iter().find(|h| msg.recommission.contains(h)) {
                return Err(YarnError::Other(format!(
                    "host '{host}' cannot be decommissioned and recommissioned at once"
                )));
            }
        }
        let timeout = msg
            .graceful_timeout
            .unwrap_or(self.config.graceful_decommission_timeout);
        for host in &msg.recommission {
            self.recommission_node(host);
        }
        for host in &msg.decommission {
            self.decommission_node(host, timeout, ctx);
        }
        Ok(self.state.lock().all_node_reports())
    }
}

impl Handler<ListNodes> for ResourceManager {
    type Result = MessageResult<ListNodes>;

    fn handle(&mut self, _: ListNodes, _: &mut Context<Self>) -> MessageResult<ListNodes> {
        MessageResult(self.state.lock().all_node_reports())
    }
}

impl Handler<GetContainerOutput> for ResourceManager {
    type Result = ResponseFuture<Result<String, YarnError>>;

    fn handle(&mut self, msg: GetContainerOutput, _: &mut Context<Self>) -> Self::Result {
        let host = self.state.lock().container_hosts.get(&msg.container_id).cloned();
        let Some(host) = host else {
            return Box::pin(async move {
                Err(YarnError::Other(format!(
                    "unknown container {}",
                    msg.container_id
                )))
            });
        };
        let (nm, timeout) = (self.nm(&host), self.config.ask_timeout);
        Box::pin(async move {
            nm.ask(
                ReadContainerOutput {
                    container_id: msg.container_id,
                },
                timeout,
            )
            .await
            .unwrap_or_else(|e| {
                Err(YarnError::Other(format!(
                    "cannot read the output from {host}: {e}"
                )))
            })
        })
    }
}

impl Handler<RegisterApplicationMaster> for ResourceManager {
    type Result = Result<RegisterResponse, YarnError>;

    fn handle(&mut self, msg: RegisterApplicationMaster, _: &mut Context<Self>) -> Self::Result {
        let app_id = msg.attempt_id.app;
        let response = {
            let mut st = self.state.lock();
            let maximum = st.scheduler.maximum_allocation();
            let attempt = Self::live_attempt(&mut st, &msg.attempt_id)?;
            attempt.registered = true;
            attempt.am_diagnostics.clear();
            attempt.host = Some(msg.host.clone());
            attempt.rpc_port = Some(msg.rpc_port);
            attempt.tracking_url = Some(msg.tracking_url.clone());
            let app = st
                .apps
                .get_mut(&app_id)
                .ok_or(YarnError::ApplicationNotFound(app_id))?;
            Self::set_state(app, YarnApplicationState::Running);
            tracing::info!(
                app_id = %app_id,
                attempt = msg.attempt_id.attempt,
                "ApplicationMaster registered for {} from host {}",
                msg.attempt_id,
                msg.host
            );
            RegisterResponse {
                maximum_capability: maximum,
                queue: app.ctx.queue.clone(),
            }
        };
        self.notify(app_id);
        Ok(response)
    }
}

impl Handler<Allocate> for ResourceManager {
    type Result = Result<AllocateResponse, YarnError>;

    fn handle(&mut self, msg: Allocate, _: &mut Context<Self>) -> Self::Result {
        let (released, resend) = {
            let mut st = self.state.lock();
            let attempt = Self::live_attempt(&mut st, &msg.attempt_id)?;
            if !attempt.registered {
                return Err(YarnError::NotRegistered(msg.attempt_id));
            }
            let released: Vec<ContainerId> = msg
                .releases
                .iter()
                .filter(|c| attempt.containers.contains(c))
                .copied()
                .collect();
            attempt.released.extend(released.iter().copied());
            let resend = attempt
                .last_response
                .as_ref()
                .filter(|last| msg.response_id.checked_add(1) == Some(last.response_id))
                .cloned();
            (released, resend)
        };
        if !released.is_empty() {
            self.stop_containers(released.iter().copied(), StopRequester::ApplicationMaster);
            // As YARN's RMContainer on RELEASED: the container is the application's no
            // more, at once, whether or not its node ever ran it; what the node reports
            // later is a repeat.
            for id in released {
                self.container_completed(ContainerStatus {
                    container_id: id,
                    state: ContainerState::Complete,
                    exit_status: exit_status::ABORTED,
                    diagnostics: RELEASED_CONTAINER.into(),
                });
            }
        }
        if let Some(last) = resend {
            // The AM did not see the answer to its last Allocate (ApplicationMasterService's
            // duplicate request): the same answer again.
            tracing::info!(
                app_id = %msg.attempt_id.app,
                response_id = msg.response_id,
                granted = last.allocated.len() as u64,
                completed = last.completed.len() as u64,
                "Allocate from {} repeats response id {}: sending its answer again ({} container(s) granted, {} completed)",
                msg.attempt_id,
                msg.response_id,
                last.allocated.len(),
                last.completed.len()
            );
            return Ok(last);
        }
        let response = {
            let mut st = self.state.lock();
            let attempt = Self::live_attempt(&mut st, &msg.attempt_id)?;
            let completed = std::mem::take(&mut attempt.completed);
            let granted = st.scheduler.allocate(msg.attempt_id, &msg.asks, &msg.blacklist)?;
            let RmState {
                apps,
                scheduler,
                container_hosts,
                ..
            } = &mut *st;
            let mut running_containers = 0;
            let updated_nodes = apps
                .get_mut(&msg.attempt_id.app)
                .and_then(|a| a.current_mut())
                .map(|a| std::mem::take(&mut a.updated_nodes))
                .unwrap_or_default();
            let response = AllocateResponse {
                response_id: msg.response_id + 1,
                allocated: granted.clone(),
                completed,
                num_cluster_nodes: scheduler.num_nodes(),
                available: scheduler.available(),
                updated_nodes,
            };
            if let Some(attempt) = apps.get_mut(&msg.attempt_id.app).and_then(|a| a.current_mut()) {
                for c in &granted {
                    attempt.containers.insert(c.id);
                    container_hosts.insert(c.id, c.node.clone());
                }
                running_containers = attempt.containers.len();
                attempt.last_response = Some(response.clone());
            }
            if !granted.is_empty() {
                tracing::info!(
                    app_id = %msg.attempt_id.app,
                    granted = granted.len() as u64,
                    asks = msg.asks.len() as u64,
                    running_containers = running_containers as u64,
                    "Allocated {} container(s) for {} ({} outstanding request(s); {running_containers} container(s) of the attempt running)",
                    granted.len(),
                    msg.attempt_id,
                    msg.asks.len()
                );
            }
            response
        };
        Ok(response)
    }
}

impl Handler<FinishApplicationMaster> for ResourceManager {
    type Result = Result<(), YarnError>;

    fn handle(&mut self, msg: FinishApplicationMaster, _: &mut Context<Self>) -> Self::Result {
        let app_id = msg.attempt_id.app;
        {
            let mut st = self.state.lock();
            let attempt = Self::live_attempt(&mut st, &msg.attempt_id)?;
            attempt.unregistered = Some((msg.final_status, msg.diagnostics.clone()));
            if let Some(app) = st.apps.get_mut(&app_id) {
                app.final_status = msg.final_status;
                app.diagnostics = msg.diagnostics.clone();
            }
        }
        tracing::info!(
            app_id = %app_id,
            final_status = %msg.final_status,
            "ApplicationMaster of {} unregistered with final status {}",
            msg.attempt_id,
            msg.final_status
        );
        self.notify(app_id);
        Ok(())
    }
}

/// The NodeManager started an attempt's AM container (AMLauncher's LAUNCHED event): the
/// attempt now waits for its AM to register.
#[derive(Clone, Debug, Message)]
#[rtype(result = "()")]
struct AmContainerLaunched {
    container_id: ContainerId,
}

impl Handler<AmContainerLaunched> for ResourceManager {
    type Result = ();

    fn handle(&mut self, msg: AmContainerLaunched, _: &mut Context<Self>) {
        let stamp = leaf_queue::diagnostics_stamp(self.me.clock().epoch_millis());
        let mut st = self.state.lock();
        let attempt = st
            .apps
            .get_mut(&msg.container_id.attempt.app)
            .and_then(|a| a.current_mut())
            .filter(|a| {
                a.id == msg.container_id.attempt
                    && !a.registered
                    && !a.ended
                    && a.am_container.as_ref().map(|c| c.id) == Some(msg.container_id)
            });
        if let Some(attempt) = attempt {
            attempt.am_diagnostics = format!("{stamp}{}", leaf_queue::LAUNCHED);
        }
    }
}

impl Handler<NodeStatusUpdate> for ResourceManager {
    type Result = ();

    fn handle(&mut self, msg: NodeStatusUpdate, _: &mut Context<Self>) {
        for status in msg.completed {
            self.container_completed(status);
        }
    }
}

crate::protocol! {
    /// The ResourceManager's own launch task: the AM container started.
    AmLaunchProtocol { AmContainerLaunched }
}

crate::speaks!(
    ResourceManager: ApplicationClientProtocol,
    ApplicationMasterProtocol,
    ResourceTracker,
    ResourceManagerAdministrationProtocol,
    AmLaunchProtocol,
);

#[cfg(test)]
mod tests {
    use super::*;

    fn attempt(am_exit_status: Option<i32>, unregistered: bool) -> RmAttempt {
        RmAttempt {
            id: ApplicationAttemptId {
                app: ApplicationId {
                    cluster_timestamp: 1,
                    id: 1,
                },
                attempt: 1,
            },
            am_container: None,
            am_pending: false,
            registered: true,
            host: None,
            rpc_port: None,
            tracking_url: None,
            unregistered: unregistered.then(|| (FinalApplicationStatus::Failed, String::new())),
            ended: am_exit_status.is_some(),
            containers: BTreeSet::new(),
            released: BTreeSet::new(),
            completed: Vec::new(),
            last_response: None,
            am_exit_status,
            am_diagnostics: String::new(),
            updated_nodes: Vec::new(),
        }
    }

    #[test]
    fn lost_nodes_preemption_and_rm_kills_do_not_count_as_attempt_failures() {
        assert!(attempt(Some(1), false).counts_as_failure());
        assert!(attempt(Some(50), false).counts_as_failure());
        assert!(attempt(Some(exit_status::KILLED_BY_APPMASTER), false).counts_as_failure());
        for status in [
            exit_status::ABORTED,
            exit_status::PREEMPTED,
            exit_status::DISKS_FAILED,
            exit_status::KILLED_BY_RESOURCEMANAGER,
        ] {
            assert!(!attempt(Some(status), false).counts_as_failure(), "{status}");
        }
        // Still running, or unregistered (its AM reported the outcome): not a failure.
        assert!(!attempt(None, false).counts_as_failure());
        assert!(!attempt(Some(1), true).counts_as_failure());
    }

    #[test]
    fn config_defaults() {
        let c = RmConfig::from_conf(&SparkConf::new());
        assert_eq!(c.queues, vec!["default".to_string()]);
        assert_eq!(c.max_attempts, 2);
        assert_eq!(c.maximum_allocation, Resource::new(8192, 4));
    }
}
