//! The ResourceManager's rules as a pure state machine: YARN's RMAppImpl and
//! RMAppAttemptImpl ([`RMApp`], [`RMAppAttempt`]) with RMAppManager's submission and
//! retention rules, the CapacityScheduler's AM activation per queue
//! ([`crate::yarn::leaf_queue::LeafQueue`]) and container placement
//! ([`crate::yarn::scheduler::Scheduler`]), and the node bookkeeping of NodesListManager and
//! the DecommissioningNodesWatcher.
//!
//! Layer: yarn. [`ResourceManagerCore`] is what survives a restart of the ResourceManager actor (its
//! supervisor keeps it). Every decision is a method that takes the time (epoch ms), changes
//! the state and returns what must be done as [`Effect`]s — launch an AM container, stop a
//! container, answer report waiters, ask a node to register again, arm a decommission
//! timer — which the actor ([`super::actor::ResourceManager`]) carries out in order. Nothing
//! here sends a message, reads a clock or knows an actor; it logs its decisions.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Duration;

use crate::conf::{self, SparkConf};
use crate::yarn::leaf_queue::{self, Decision, LeafQueue};
use crate::yarn::node_manager::LOST_CONTAINER;
use crate::yarn::protocol::*;
use crate::yarn::records::*;
use crate::yarn::scheduler::Scheduler;

/// The diagnostics of a container its AM released (SchedulerUtils.RELEASED_CONTAINER).
pub const RELEASED_CONTAINER: &str = "Container released by application";

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
    /// yarn.nm.liveness-monitor.expiry-interval-ms: a node silent this long is LOST.
    pub nm_expiry: Duration,
    /// yarn.resourcemanager.cluster-id: NodeManagers registering with another are refused.
    pub cluster_id: String,
    /// The `host:port` the RM's web app serves, when it serves one: every application's
    /// tracking URL is then its page there (`webapp::tracking_url`), as YARN's RM gives its
    /// own address; without a web app the AM's tracking URL, if any.
    pub web_address: Option<String>,
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
            nm_expiry: conf
                .get(&conf::RM_NM_EXPIRY_INTERVAL_MS)
                .unwrap_or(Duration::from_secs(600)),
            cluster_id: conf
                .get(&conf::RM_CLUSTER_ID)
                .unwrap_or_else(|_| "sparkyard".into()),
            web_address: None,
        }
    }

    /// How often the liveness monitor looks for silent nodes: a third of the expiry
    /// interval, as YARN's AbstractLivelinessMonitor (at least 1 ms). A node is therefore
    /// expired after between one and four thirds of the interval of silence.
    pub fn liveness_check_period(&self) -> Duration {
        (self.nm_expiry / 3).max(Duration::from_millis(1))
    }
}

/// What an application's report waiters compare: its state and final status.
pub type ReportKey = (YarnApplicationState, FinalApplicationStatus);

/// Why a node is asked to register again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResyncReason {
    /// A new incarnation of the RM lost what the node sent the old one (YARN's RESYNC).
    Restarted,
    /// The node was DECOMMISSIONED and is recommissioned.
    Recommissioned,
}

/// What the core decided must be done, in order.
#[derive(Clone, Debug)]
pub enum Effect {
    /// Start an attempt's AM container on its node (AMLauncher); the launch context already
    /// carries the container's environment (CONTAINER_ID, NM_HOST).
    LaunchAm {
        container: Container,
        launch: ContainerLaunchContext,
    },
    /// Ask the NodeManager of `host` to stop a container.
    StopContainer {
        host: String,
        container_id: ContainerId,
        requester: StopRequester,
    },
    /// Answer the report waiters of `app` that know another state than `key`.
    AnswerWaiters {
        app: ApplicationId,
        key: ReportKey,
        report: ApplicationReport,
    },
    /// Ask the NodeManager of `host` to register again.
    Resync { host: String, reason: ResyncReason },
    /// After `after`, call [`ResourceManagerCore::decommission_timed_out`] with `host` and `generation`.
    ArmDecommissionTimeout {
        host: String,
        after: Duration,
        generation: u64,
    },
}

/// An application attempt (RMAppAttemptImpl).
#[derive(Debug)]
pub struct RMAppAttempt {
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
    /// The AM's progress from its last Allocate (1 once it unregistered).
    progress: f32,
    /// Every container granted to it, running and completed, in the order granted (at
    /// most [`MAX_CONTAINER_REPORTS`]; GetContainers).
    container_reports: Vec<ContainerReport>,
}

impl RMAppAttempt {
    fn new(id: ApplicationAttemptId) -> RMAppAttempt {
        RMAppAttempt {
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
            progress: 0.0,
            container_reports: Vec::new(),
        }
    }

    /// Keeps the report of a container just granted to it (RUNNING), while below the bound.
    fn container_granted(&mut self, c: &Container, now: u64) {
        if self.container_reports.len() >= MAX_CONTAINER_REPORTS {
            tracing::debug!(
                container_id = %c.id,
                "Container {} is not kept for GetContainers: {} already kept for {}",
                c.id,
                MAX_CONTAINER_REPORTS,
                self.id
            );
            return;
        }
        self.container_reports.push(ContainerReport {
            container_id: c.id,
            host: c.node.clone(),
            resource: c.resource,
            priority: c.priority,
            state: ContainerState::Running,
            start_time: now,
            finish_time: 0,
            exit_status: None,
            diagnostics: String::new(),
        });
    }

    /// Marks the report of a container COMPLETE with its final status.
    fn container_done(&mut self, status: &ContainerStatus, now: u64) {
        if let Some(r) = self
            .container_reports
            .iter_mut()
            .find(|r| r.container_id == status.container_id)
        {
            r.state = ContainerState::Complete;
            r.finish_time = now;
            r.exit_status = Some(status.exit_status);
            r.diagnostics = status.diagnostics.clone();
        }
    }

    /// YARN's YarnApplicationAttemptState of this attempt, `killed` when its application
    /// was killed while it was the current one.
    fn state_name(&self, killed: bool) -> &'static str {
        match self {
            a if a.ended && a.unregistered.is_some() => "FINISHED",
            _ if killed => "KILLED",
            a if a.ended => "FAILED",
            a if a.unregistered.is_some() => "FINISHING",
            a if a.registered => "RUNNING",
            a if a.am_container.is_some() => "LAUNCHED",
            a if a.am_pending => "SCHEDULED",
            _ => "SUBMITTED",
        }
    }

    /// Its report (ApplicationAttemptReport).
    fn report(&self, killed: bool) -> ApplicationAttemptReport {
        ApplicationAttemptReport {
            attempt_id: self.id,
            state: self.state_name(killed).to_string(),
            am_container: self.am_container.as_ref().map(|c| c.id),
            tracking_url: self.tracking_url.clone().filter(|u| !u.is_empty()),
            host: self.host.clone(),
            rpc_port: self.rpc_port,
            diagnostics: match &self.unregistered {
                Some((_, d)) => d.clone(),
                None => self.am_diagnostics.clone(),
            },
        }
    }

    /// RMAppAttemptImpl.shouldCountTowardsMaxAttemptRetry: a failed attempt counts unless
    /// its AM container was preempted, aborted (a lost node), lost to a disk failure or
    /// killed by the RM.
    pub fn counts_as_failure(&self) -> bool {
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

/// An application (RMAppImpl): its submission, state, final status and attempts.
#[derive(Debug)]
pub struct RMApp {
    ctx: ApplicationSubmissionContext,
    state: YarnApplicationState,
    final_status: FinalApplicationStatus,
    diagnostics: String,
    attempts: Vec<RMAppAttempt>,
    max_attempts: u32,
    start_time: u64,
    finish_time: u64,
    /// Its page on the RM's web app, when the RM serves one ([`RmConfig::web_address`]).
    web_url: Option<String>,
}

impl RMApp {
    fn current(&self) -> Option<&RMAppAttempt> {
        self.attempts.last()
    }
    fn current_mut(&mut self) -> Option<&mut RMAppAttempt> {
        self.attempts.last_mut()
    }
    /// The application's report (ApplicationReport), as clients see it.
    pub fn report(&self) -> ApplicationReport {
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
            tracking_url: self
                .web_url
                .clone()
                .or_else(|| cur.and_then(|a| a.tracking_url.clone()).filter(|u| !u.is_empty())),
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
            progress: cur.map(|a| a.progress).unwrap_or(0.0),
        }
    }
    /// Its listing (GetApplications): report, progress and attempts, oldest first.
    pub fn listing(&self) -> ApplicationListing {
        let last = self.attempts.len().saturating_sub(1);
        let killed = self.state == YarnApplicationState::Killed;
        ApplicationListing {
            report: self.report(),
            progress: self.current().map(|a| a.progress).unwrap_or(0.0),
            attempts: self
                .attempts
                .iter()
                .enumerate()
                .map(|(i, a)| a.report(killed && i == last))
                .collect(),
        }
    }
    /// What report waiters compare.
    pub fn key(&self) -> ReportKey {
        (self.state, self.final_status)
    }

    /// Moves the application to `state`, logging RMAppImpl's state change.
    fn set_state(&mut self, state: YarnApplicationState) {
        if self.state != state {
            tracing::info!(
                app_id = %self.ctx.app_id,
                "{} State change from {} to {} on event = {}",
                self.ctx.app_id,
                self.state,
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
            self.state = state;
        }
    }
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

/// A registered (RUNNING or DECOMMISSIONING) node as the liveness monitor sees it: when it
/// was last heard from and the last answer to its heartbeat (RMNode's
/// lastNodeHeartbeatResponse, answered again to a duplicate heartbeat).
#[derive(Clone, Debug)]
struct NodeLiveness {
    last_heard_ms: u64,
    last_response: NodeHeartbeatResponse,
}

/// A node the RM expired (LOST), until it registers again.
#[derive(Clone, Debug)]
struct LostNode {
    rack: String,
    capability: Resource,
}

/// The RM's state, kept by its supervisor across restarts, with the rules that change it.
#[derive(Debug)]
pub struct ResourceManagerCore {
    config: RmConfig,
    cluster_timestamp: u64,
    next_app: u32,
    apps: BTreeMap<ApplicationId, RMApp>,
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
    /// The registered nodes' last heartbeats, by host (NMLivelinessMonitor).
    liveness: BTreeMap<String, NodeLiveness>,
    /// Nodes expired for silence, by host (RMContext's inactive nodes in state LOST).
    lost_nodes: BTreeMap<String, LostNode>,
}

// ----- reads --------------------------------------------------------------------------------

impl ResourceManagerCore {
    pub fn new(cluster_timestamp: u64, config: &RmConfig) -> ResourceManagerCore {
        ResourceManagerCore {
            config: config.clone(),
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
            liveness: BTreeMap::new(),
            lost_nodes: BTreeMap::new(),
        }
    }

    /// The application's state key and report, if the RM knows it.
    /// The owner and ACLs of `app` (ApplicationACLsManager's entry for it).
    pub fn acls(&self, app: &ApplicationId) -> Option<ApplicationAcls> {
        self.apps.get(app).map(|a| ApplicationAcls {
            owner: a.ctx.user.clone(),
            acls: a.ctx.acls.clone(),
        })
    }

    pub fn report(&self, app: &ApplicationId) -> Option<(ReportKey, ApplicationReport)> {
        self.apps.get(app).map(|a| (a.key(), a.report()))
    }

    /// The applications the RM keeps (running ones and the last
    /// `max-completed-applications` finished ones) in one of `states` and of one of `types`
    /// (GetApplications: an empty filter takes all; types compare without case), by id.
    pub fn applications(&self, states: &[YarnApplicationState], types: &[String]) -> Vec<ApplicationListing> {
        self.apps
            .values()
            .filter(|a| states.is_empty() || states.contains(&a.state))
            .filter(|a| types.is_empty() || types.iter().any(|t| t.eq_ignore_ascii_case(&a.ctx.app_type)))
            .map(RMApp::listing)
            .collect()
    }

    /// The cluster's counts (GetClusterMetrics): the kept applications by state, the
    /// resources and containers of the scheduler's nodes, the nodes by state.
    pub fn cluster_metrics(&self) -> ClusterMetrics {
        use YarnApplicationState as S;
        let mut m = ClusterMetrics::default();
        for app in self.apps.values() {
            m.apps_submitted += 1;
            match app.state {
                S::New | S::NewSaving | S::Submitted | S::Accepted => m.apps_pending += 1,
                S::Running => m.apps_running += 1,
                S::Finished => m.apps_completed += 1,
                S::Failed => m.apps_failed += 1,
                S::Killed => m.apps_killed += 1,
            }
        }
        m.total = self.scheduler.cluster_resource();
        m.allocated = m.total.minus(&self.scheduler.available());
        m.containers_allocated = self.scheduler.num_containers() as u64;
        for node in self.all_node_reports() {
            match node.state {
                NodeState::Running => m.active_nodes += 1,
                NodeState::Decommissioning => m.decommissioning_nodes += 1,
                NodeState::Decommissioned => m.decommissioned_nodes += 1,
                NodeState::Lost => m.lost_nodes += 1,
            }
        }
        m
    }

    /// The leaf queues with what each holds now (GetQueueInfo), in configured order.
    pub fn queue_infos(&self) -> Vec<QueueInfo> {
        let cluster = self.scheduler.cluster_resource();
        self.config
            .queues
            .iter()
            .filter_map(|name| self.queues.get(name))
            .map(|q| {
                let mut info = QueueInfo {
                    name: q.name().to_string(),
                    num_active_applications: q.num_active() as u64,
                    num_pending_applications: q.num_pending() as u64,
                    am_used: q.am_used(),
                    am_limit: q.am_limit(&cluster),
                    max_am_resource_percent: self.config.max_am_resource_percent,
                    ..QueueInfo::default()
                };
                for app in self
                    .apps
                    .values()
                    .filter(|a| a.ctx.queue == q.name() && !a.state.is_final())
                {
                    info.num_applications += 1;
                    for attempt in &app.attempts {
                        for c in self.scheduler.containers_of(&attempt.id) {
                            if let Some(r) = self.scheduler.resource_of(&c) {
                                info.used = info.used.plus(&r);
                                info.num_containers += 1;
                            }
                        }
                    }
                }
                info
            })
            .collect()
    }

    /// The containers of attempt `attempt_id` (GetContainers), AM container first, in the
    /// order granted.
    pub fn containers(&self, attempt_id: &ApplicationAttemptId) -> Result<Vec<ContainerReport>, YarnError> {
        let app = self
            .apps
            .get(&attempt_id.app)
            .ok_or(YarnError::ApplicationNotFound(attempt_id.app))?;
        app.attempts
            .iter()
            .find(|a| a.id == *attempt_id)
            .map(|a| a.container_reports.clone())
            .ok_or(YarnError::ApplicationAttemptNotFound(*attempt_id))
    }

    /// The nodes in one of `states` (every node the RM knows when empty).
    pub fn node_reports_in(&self, states: &[NodeState]) -> Vec<NodeReport> {
        let mut nodes = self.all_node_reports();
        nodes.retain(|n| states.is_empty() || states.contains(&n.state));
        nodes
    }

    /// The running and decommissioning nodes (GetClusterNodes).
    pub fn node_reports(&self) -> Vec<NodeReport> {
        self.scheduler.node_reports()
    }

    /// The host a container was placed on, while the RM remembers it.
    pub fn container_host(&self, id: &ContainerId) -> Option<&str> {
        self.container_hosts.get(id).map(String::as_str)
    }

    /// Every node with its state: the scheduler's (running and decommissioning), the
    /// decommissioned and the lost ones, by host.
    pub fn all_node_reports(&self) -> Vec<NodeReport> {
        let mut reports = self.scheduler.node_reports();
        for (host, lost) in &self.lost_nodes {
            reports.push(NodeReport {
                host: host.clone(),
                rack: lost.rack.clone(),
                capability: lost.capability,
                used: Resource::default(),
                num_containers: 0,
                state: NodeState::Lost,
            });
        }
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

    /// Checks that `attempt` is the current, live attempt of its application.
    fn live_attempt(&mut self, attempt: &ApplicationAttemptId) -> Result<&mut RMAppAttempt, YarnError> {
        self.apps
            .get_mut(&attempt.app)
            .filter(|a| !a.state.is_final())
            .and_then(|a| a.current_mut())
            .filter(|a| a.id == *attempt && !a.ended)
            .ok_or(YarnError::ApplicationAttemptNotFound(*attempt))
    }

    /// Whether a container a node reports running should be stopped, and by whom: one the
    /// RM does not place there, one its AM released, or one of an attempt that ended.
    fn should_be_stopped(&self, id: &ContainerId, host: &str) -> Option<StopRequester> {
        let attempt = self
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
            _ if self.scheduler.node_of(id) != Some(host) => Some(StopRequester::ResourceManager),
            _ => None,
        }
    }
}

// ----- the protocols' requests ----------------------------------------------------------------

impl ResourceManagerCore {
    /// A new incarnation of the RM starts on this state: the graceful-decommission timers
    /// died with the previous one and are armed again; after a restart every known node is
    /// asked to register again.
    pub fn recover(&mut self, now: u64, restarted: bool) -> Vec<Effect> {
        // The liveness monitor starts afresh with the incarnation: every registered node
        // gets a whole expiry interval (its heartbeats to a dead incarnation were lost).
        for liveness in self.liveness.values_mut() {
            liveness.last_heard_ms = liveness.last_heard_ms.max(now);
        }
        let mut fx: Vec<Effect> = self
            .decommissions
            .iter()
            .filter(|(_, d)| d.state == NodeState::Decommissioning)
            .map(|(host, d)| Effect::ArmDecommissionTimeout {
                host: host.clone(),
                after: Duration::from_millis(d.deadline_ms.saturating_sub(now)),
                generation: d.generation,
            })
            .collect();
        tracing::info!(
            cluster_timestamp = self.cluster_timestamp,
            applications = self.apps.len() as u64,
            nodes = self.scheduler.num_nodes(),
            "ResourceManager started (cluster timestamp {}, {} applications, {} NodeManagers known)",
            self.cluster_timestamp,
            self.apps.len(),
            self.scheduler.num_nodes()
        );
        let hosts: Vec<String> = self
            .scheduler
            .node_reports()
            .into_iter()
            .map(|n| n.host)
            .collect();
        if restarted && !hosts.is_empty() {
            // What the NodeManagers sent the dead incarnation is lost: each registers again
            // with its running containers and the statuses not yet taken.
            tracing::info!(
                nodes = hosts.len() as u64,
                "ResourceManager restarted; asking {} NodeManager(s) to resynchronise",
                hosts.len()
            );
            fx.extend(hosts.into_iter().map(|host| Effect::Resync {
                host,
                reason: ResyncReason::Restarted,
            }));
        }
        fx
    }

    /// A NodeManager registers (RegisterNode): its running containers and the completed
    /// statuses not yet taken. Every container placed there that it does not name is lost.
    /// One of another protocol version or cluster, or a decommissioned one, is refused.
    pub fn register_node(
        &mut self,
        msg: RegisterNode,
        now: u64,
    ) -> (Result<NodeRegistration, YarnError>, Vec<Effect>) {
        let mut fx = Vec::new();
        let mismatch = if msg.version != NODE_PROTOCOL_VERSION {
            Some(format!(
                "Disallowed NodeManager from {}: its protocol version {} is not the ResourceManager's {NODE_PROTOCOL_VERSION}, sending SHUTDOWN signal to the NodeManager.",
                msg.host, msg.version
            ))
        } else if msg.cluster_id != self.config.cluster_id {
            Some(format!(
                "Disallowed NodeManager from {}: it joins cluster '{}' (yarn.resourcemanager.cluster-id) but this ResourceManager runs cluster '{}', sending SHUTDOWN signal to the NodeManager.",
                msg.host, msg.cluster_id, self.config.cluster_id
            ))
        } else {
            None
        };
        if let Some(message) = mismatch {
            tracing::warn!(
                event = "node_registration_refused",
                host = msg.host.as_str(),
                "{message}"
            );
            return (Err(YarnError::Other(message)), fx);
        }
        let disallowed = self
            .decommissions
            .get(&msg.host)
            .is_some_and(|d| d.state == NodeState::Decommissioned);
        if disallowed {
            let message = format!(
                "Disallowed NodeManager from  {}, Sending SHUTDOWN signal to the NodeManager.",
                msg.host
            );
            tracing::info!(host = msg.host.as_str(), "{message}");
            return (Err(YarnError::Other(message)), fx);
        }
        let known = self.scheduler.has_node(&msg.host);
        if self.lost_nodes.remove(&msg.host).is_some() {
            tracing::info!(
                host = msg.host.as_str(),
                "Node {} was LOST; it registers as a new node",
                msg.host
            );
        }
        self.scheduler.add_node(&msg.host, &msg.rack, msg.capability);
        // NMLivelinessMonitor.register, with a new heartbeat conversation (response id 0).
        self.liveness.insert(
            msg.host.clone(),
            NodeLiveness {
                last_heard_ms: now,
                last_response: NodeHeartbeatResponse::default(),
            },
        );
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
            self.container_completed(status, now, &mut fx);
        }
        let running: BTreeSet<ContainerId> = msg.running.iter().copied().collect();
        let lost: Vec<ContainerId> = self
            .scheduler
            .containers_on(&msg.host)
            .into_iter()
            .filter(|id| !running.contains(id))
            .collect();
        let to_stop: Vec<(ContainerId, StopRequester)> = running
            .iter()
            .filter_map(|id| self.should_be_stopped(id, &msg.host).map(|r| (*id, r)))
            .collect();
        for id in &lost {
            tracing::warn!(
                container_id = %id,
                app_id = %id.attempt.app,
                host = msg.host.as_str(),
                "Container {id} on {} is not running on the node that registered: {LOST_CONTAINER}",
                msg.host
            );
            self.container_completed(
                ContainerStatus {
                    container_id: *id,
                    state: ContainerState::Complete,
                    exit_status: exit_status::ABORTED,
                    diagnostics: LOST_CONTAINER.to_string(),
                },
                now,
                &mut fx,
            );
        }
        for (id, requester) in to_stop {
            // Still running there although it was asked to stop (the request may have been
            // lost with a NodeManager's mailbox) or is no longer the RM's: stop it again.
            tracing::info!(container_id = %id, host = msg.host.as_str(), requester = ?requester, "Container {id} on {} should not be running; stopping it", msg.host);
            fx.push(Effect::StopContainer {
                host: msg.host.clone(),
                container_id: id,
                requester,
            });
        }
        // The cluster's resources changed: the queues' AM limits with them.
        self.activate_applications(now);
        self.place_pending_ams(now, &mut fx);
        (Ok(NodeRegistration { lost }), fx)
    }

    /// Completed containers a node reports (NodeStatusUpdate, or a launch that failed).
    pub fn node_status_update(&mut self, completed: Vec<ContainerStatus>, now: u64) -> Vec<Effect> {
        let mut fx = Vec::new();
        for status in completed {
            self.container_completed(status, now, &mut fx);
        }
        fx
    }

    /// A node's heartbeat (ResourceTrackerService.nodeHeartbeat): SHUTDOWN for a
    /// decommissioned node, RESYNC for one the RM does not know (never registered, or
    /// expired) or whose response id is out of step; the last answer again for a repeat.
    /// Otherwise the node is alive, its completed statuses are taken, and the answer names
    /// the containers it runs that are not the RM's there any more.
    pub fn node_heartbeat(&mut self, msg: NodeHeartbeat, now: u64) -> (NodeHeartbeatResponse, Vec<Effect>) {
        let mut fx = Vec::new();
        let host = msg.host.as_str();
        let refused = |action, diagnostics: String| NodeHeartbeatResponse {
            response_id: 0,
            action,
            diagnostics,
            containers_to_cleanup: Vec::new(),
        };
        let decommissioned = self
            .decommissions
            .get(host)
            .is_some_and(|d| d.state == NodeState::Decommissioned);
        if decommissioned {
            let message = format!("Disallowed NodeManager nodeId: {host} hostname: {host}");
            tracing::info!(host, "{message}");
            return (refused(NodeAction::Shutdown, message), fx);
        }
        let Some(liveness) = self.liveness.get_mut(host) else {
            let message = format!("Node not found resyncing {host}");
            tracing::info!(host, "{message}");
            return (refused(NodeAction::Resync, message), fx);
        };
        // NMLivelinessMonitor.receivedPing.
        liveness.last_heard_ms = liveness.last_heard_ms.max(now);
        let last_id = liveness.last_response.response_id;
        if msg.response_id.checked_add(1) == Some(last_id) {
            tracing::info!(
                host,
                response_id = msg.response_id,
                "Received duplicate heartbeat from node {host} responseId={}",
                msg.response_id
            );
            return (liveness.last_response.clone(), fx);
        }
        if msg.response_id != last_id {
            let message = format!(
                "Too far behind rm response id:{last_id} nm response id:{}",
                msg.response_id
            );
            tracing::info!(host, "{message}");
            return (refused(NodeAction::Resync, message), fx);
        }
        for status in msg.completed {
            self.container_completed(status, now, &mut fx);
        }
        let containers_to_cleanup: Vec<ContainerCleanup> = msg
            .running
            .iter()
            .filter_map(|id| {
                self.should_be_stopped(id, host)
                    .map(|requester| ContainerCleanup {
                        container_id: *id,
                        requester,
                    })
            })
            .collect();
        for c in &containers_to_cleanup {
            tracing::info!(
                container_id = %c.container_id,
                host,
                requester = ?c.requester,
                "Container {} on {host} should not be running; asking the node to clean it up",
                c.container_id
            );
        }
        let response = NodeHeartbeatResponse {
            response_id: last_id + 1,
            action: NodeAction::Normal,
            diagnostics: String::new(),
            containers_to_cleanup,
        };
        if let Some(liveness) = self.liveness.get_mut(host) {
            liveness.last_response = response.clone();
        }
        (response, fx)
    }

    /// The liveness monitor's check (AbstractLivelinessMonitor): every registered node
    /// silent for the expiry interval or longer is LOST.
    pub fn expire_nodes(&mut self, now: u64) -> Vec<Effect> {
        let mut fx = Vec::new();
        let expiry = u64::try_from(self.config.nm_expiry.as_millis()).unwrap_or(u64::MAX);
        let silent: Vec<(String, u64)> = self
            .liveness
            .iter()
            .map(|(host, l)| (host.clone(), now.saturating_sub(l.last_heard_ms)))
            .filter(|(_, silence)| *silence >= expiry)
            .collect();
        for (host, silence) in silent {
            self.node_lost(&host, silence, now, &mut fx);
        }
        fx
    }

    /// Hands out the next application id (GetNewApplication).
    pub fn new_application(&mut self) -> NewApplication {
        self.next_app += 1;
        let app_id = ApplicationId {
            cluster_timestamp: self.cluster_timestamp,
            id: self.next_app,
        };
        NewApplication {
            app_id,
            maximum_capability: self.scheduler.maximum_allocation(),
            num_node_managers: self.scheduler.num_nodes(),
        }
    }

    /// Submits an application (RMAppManager.submitApplication): NEW → SUBMITTED → ACCEPTED
    /// with its first attempt, or FAILED for an unknown queue.
    pub fn submit_application(
        &mut self,
        ctx: ApplicationSubmissionContext,
        now: u64,
    ) -> (Result<(), YarnError>, Vec<Effect>) {
        let mut fx = Vec::new();
        let app_id = ctx.app_id;
        if self.apps.contains_key(&app_id) {
            return (
                Err(YarnError::Other(format!(
                    "Application with id {app_id} is already present! Cannot add a duplicate!"
                ))),
                fx,
            );
        }
        if app_id.cluster_timestamp != self.cluster_timestamp || app_id.id > self.next_app {
            return (
                Err(YarnError::Other(format!(
                    "Application {app_id} was not created by this ResourceManager"
                ))),
                fx,
            );
        }
        if let Err(e) = self.scheduler.normalize(&ctx.resource) {
            return (Err(e), fx);
        }
        let max_attempts = match ctx.max_app_attempts {
            Some(n) if n > 0 && n <= self.config.max_attempts => n,
            _ => self.config.max_attempts,
        };
        let queue_known = self.config.queues.iter().any(|q| q == &ctx.queue);
        let mut app = RMApp {
            ctx,
            state: YarnApplicationState::New,
            final_status: FinalApplicationStatus::Undefined,
            diagnostics: String::new(),
            attempts: Vec::new(),
            max_attempts,
            start_time: now,
            finish_time: 0,
            web_url: self
                .config
                .web_address
                .as_deref()
                .map(|address| crate::yarn::webapp::tracking_url(address, &app_id.to_string())),
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
        app.set_state(YarnApplicationState::Submitted);
        if queue_known {
            app.set_state(YarnApplicationState::Accepted);
        } else {
            app.diagnostics = format!(
                "Application {app_id} submitted by user {} to unknown queue: {}",
                app.ctx.user, app.ctx.queue
            );
            app.final_status = FinalApplicationStatus::Failed;
            app.finish_time = now;
            tracing::warn!(app_id = %app_id, "{}", app.diagnostics);
            app.set_state(YarnApplicationState::Failed);
        }
        self.apps.insert(app_id, app);
        if queue_known {
            self.start_attempt(app_id, now, &mut fx);
        } else {
            self.app_completed(app_id);
        }
        self.notify(app_id, now, &mut fx);
        (Ok(()), fx)
    }

    /// Kills an application (KillApplication): KILLED, its containers stopped, its AM's
    /// share of the queue free for the next waiting application.
    pub fn kill_application(
        &mut self,
        app_id: ApplicationId,
        diagnostics: &str,
        now: u64,
    ) -> (Result<(), YarnError>, Vec<Effect>) {
        let mut fx = Vec::new();
        let Some(app) = self.apps.get_mut(&app_id) else {
            return (Err(YarnError::ApplicationNotFound(app_id)), fx);
        };
        if app.state.is_final() {
            return (Ok(()), fx);
        }
        let user = app.ctx.user.clone();
        app.diagnostics = if diagnostics.is_empty() {
            format!("Application {app_id} was killed by user {user}")
        } else {
            format!("Application {app_id} was killed by user {user}: {diagnostics}")
        };
        app.final_status = FinalApplicationStatus::Killed;
        app.finish_time = now;
        tracing::warn!(app_id = %app_id, "{}", app.diagnostics);
        let containers: Vec<ContainerId> = match app.current_mut() {
            Some(a) => {
                a.am_pending = false;
                a.containers.iter().copied().collect()
            }
            None => Vec::new(),
        };
        self.finish_app(app_id, YarnApplicationState::Killed);
        self.stop_containers(containers, StopRequester::ResourceManager, &mut fx);
        // Its AM's share of the queue is free: the next waiting application may start.
        self.activate_applications(now);
        self.place_pending_ams(now, &mut fx);
        self.notify(app_id, now, &mut fx);
        (Ok(()), fx)
    }

    /// An ApplicationMaster registers (RegisterApplicationMaster): the application RUNNING.
    pub fn register_application_master(
        &mut self,
        msg: &RegisterApplicationMaster,
        now: u64,
    ) -> (Result<RegisterResponse, YarnError>, Vec<Effect>) {
        let mut fx = Vec::new();
        let app_id = msg.attempt_id.app;
        let maximum = self.scheduler.maximum_allocation();
        let attempt = match self.live_attempt(&msg.attempt_id) {
            Ok(attempt) => attempt,
            Err(e) => return (Err(e), fx),
        };
        attempt.registered = true;
        attempt.am_diagnostics.clear();
        attempt.host = Some(msg.host.clone());
        attempt.rpc_port = Some(msg.rpc_port);
        attempt.tracking_url = Some(msg.tracking_url.clone());
        let Some(app) = self.apps.get_mut(&app_id) else {
            return (Err(YarnError::ApplicationNotFound(app_id)), fx);
        };
        app.set_state(YarnApplicationState::Running);
        tracing::info!(
            app_id = %app_id,
            attempt = msg.attempt_id.attempt,
            "ApplicationMaster registered for {} from host {}",
            msg.attempt_id,
            msg.host
        );
        let response = RegisterResponse {
            maximum_capability: maximum,
            queue: app.ctx.queue.clone(),
        };
        self.notify(app_id, now, &mut fx);
        (Ok(response), fx)
    }

    /// The AM's heartbeat (Allocate): releases, then the outstanding asks scheduled at once;
    /// the answer carries the granted containers, the completed statuses and node updates.
    /// A repeated response id gets the last answer again.
    pub fn allocate(
        &mut self,
        msg: &Allocate,
        now: u64,
    ) -> (Result<AllocateResponse, YarnError>, Vec<Effect>) {
        let mut fx = Vec::new();
        let attempt = match self.live_attempt(&msg.attempt_id) {
            Ok(attempt) => attempt,
            Err(e) => return (Err(e), fx),
        };
        if !attempt.registered {
            return (Err(YarnError::NotRegistered(msg.attempt_id)), fx);
        }
        if msg.progress.is_finite() {
            attempt.progress = msg.progress.clamp(0.0, 1.0);
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
        if !released.is_empty() {
            self.stop_containers(
                released.iter().copied(),
                StopRequester::ApplicationMaster,
                &mut fx,
            );
            // As YARN's RMContainer on RELEASED: the container is the application's no
            // more, at once, whether or not its node ever ran it; what the node reports
            // later is a repeat.
            for id in released {
                self.container_completed(
                    ContainerStatus {
                        container_id: id,
                        state: ContainerState::Complete,
                        exit_status: exit_status::ABORTED,
                        diagnostics: RELEASED_CONTAINER.into(),
                    },
                    now,
                    &mut fx,
                );
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
            return (Ok(last), fx);
        }
        let attempt = match self.live_attempt(&msg.attempt_id) {
            Ok(attempt) => attempt,
            Err(e) => return (Err(e), fx),
        };
        let completed = std::mem::take(&mut attempt.completed);
        let granted = match self.scheduler.allocate(msg.attempt_id, &msg.asks, &msg.blacklist) {
            Ok(granted) => granted,
            Err(e) => return (Err(e), fx),
        };
        let ResourceManagerCore {
            apps,
            scheduler,
            container_hosts,
            ..
        } = self;
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
                attempt.container_granted(c, now);
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
        (Ok(response), fx)
    }

    /// The ApplicationMaster unregisters (FinishApplicationMaster) with its final status;
    /// the application finishes when its AM container ends.
    pub fn finish_application_master(
        &mut self,
        msg: &FinishApplicationMaster,
        now: u64,
    ) -> (Result<(), YarnError>, Vec<Effect>) {
        let mut fx = Vec::new();
        let app_id = msg.attempt_id.app;
        let attempt = match self.live_attempt(&msg.attempt_id) {
            Ok(attempt) => attempt,
            Err(e) => return (Err(e), fx),
        };
        attempt.unregistered = Some((msg.final_status, msg.diagnostics.clone()));
        attempt.progress = 1.0;
        if let Some(app) = self.apps.get_mut(&app_id) {
            app.final_status = msg.final_status;
            app.diagnostics = msg.diagnostics.clone();
        }
        tracing::info!(
            app_id = %app_id,
            final_status = %msg.final_status,
            "ApplicationMaster of {} unregistered with final status {}",
            msg.attempt_id,
            msg.final_status
        );
        self.notify(app_id, now, &mut fx);
        (Ok(()), fx)
    }

    /// The NodeManager started an attempt's AM container (AMLauncher's LAUNCHED event): the
    /// attempt now waits for its AM to register.
    pub fn am_container_launched(&mut self, container_id: ContainerId, now: u64) {
        let stamp = leaf_queue::diagnostics_stamp(now);
        let attempt = self
            .apps
            .get_mut(&container_id.attempt.app)
            .and_then(|a| a.current_mut())
            .filter(|a| {
                a.id == container_id.attempt
                    && !a.registered
                    && !a.ended
                    && a.am_container.as_ref().map(|c| c.id) == Some(container_id)
            });
        if let Some(attempt) = attempt {
            attempt.am_diagnostics = format!("{stamp}{}", leaf_queue::LAUNCHED);
        }
    }

    /// Graceful decommission and recommission of named hosts (RefreshNodes); an unknown
    /// host is refused. Answers every node with its state.
    pub fn refresh_nodes(
        &mut self,
        msg: &RefreshNodes,
        now: u64,
    ) -> (Result<Vec<NodeReport>, YarnError>, Vec<Effect>) {
        let mut fx = Vec::new();
        let known: BTreeSet<String> = self.all_node_reports().into_iter().map(|n| n.host).collect();
        for host in msg.decommission.iter().chain(&msg.recommission) {
            if !known.contains(host) {
                return (
                    Err(YarnError::Other(format!(
                        "no NodeManager on host '{host}' (the nodes are {})",
                        known.iter().cloned().collect::<Vec<_>>().join(", ")
                    ))),
                    fx,
                );
            }
        }
        if let Some(host) = msg.decommission.iter().find(|h| msg.recommission.contains(h)) {
            return (
                Err(YarnError::Other(format!(
                    "host '{host}' cannot be decommissioned and recommissioned at once"
                ))),
                fx,
            );
        }
        let timeout = msg
            .graceful_timeout
            .unwrap_or(self.config.graceful_decommission_timeout);
        for host in &msg.recommission {
            self.recommission_node(host, now, &mut fx);
        }
        for host in &msg.decommission {
            self.decommission_node(host, timeout, now, &mut fx);
        }
        (Ok(self.all_node_reports()), fx)
    }

    /// A graceful-decommission timer fired: if it is still the node's current one, the
    /// node is decommissioned and what still runs there is killed.
    pub fn decommission_timed_out(&mut self, host: &str, generation: u64, now: u64) -> Vec<Effect> {
        let mut fx = Vec::new();
        let due = self
            .decommissions
            .get(host)
            .is_some_and(|d| d.state == NodeState::Decommissioning && d.generation == generation);
        if due {
            tracing::info!(host, "DECOMMISSIONING {host} timeout");
            self.node_decommissioned(host, true, now, &mut fx);
        }
        fx
    }
}

// ----- the state machines ---------------------------------------------------------------------

impl ResourceManagerCore {
    /// The application's report waiters are answered if its state changed (and, as its
    /// state may have become final, a decommissioning node may be done).
    fn notify(&mut self, app: ApplicationId, now: u64, fx: &mut Vec<Effect>) {
        self.check_decommissioning(now, fx);
        if let Some((key, report)) = self.report(&app) {
            fx.push(Effect::AnswerWaiters { app, key, report });
        }
    }

    /// Stops containers on the nodes the RM placed them on.
    fn stop_containers(
        &self,
        ids: impl IntoIterator<Item = ContainerId>,
        requester: StopRequester,
        fx: &mut Vec<Effect>,
    ) {
        for container_id in ids {
            if let Some(host) = self.container_hosts.get(&container_id) {
                fx.push(Effect::StopContainer {
                    host: host.clone(),
                    container_id,
                    requester,
                });
            }
        }
    }

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

    /// An attempt is over (its AM container ended, or its application was killed): its
    /// AM's share of the queue is free for the next waiting attempt.
    fn release_am_share(&mut self, attempt: &ApplicationAttemptId) {
        let queue = self.apps.get(&attempt.app).map(|a| a.ctx.queue.clone());
        if let Some(q) = queue.and_then(|q| self.queues.get_mut(&q)) {
            q.finish(attempt);
        }
    }

    /// An application reached a final state: it is kept among the completed ones, and the
    /// oldest beyond `max-completed-applications` is forgotten (RMAppManager), with what
    /// the RM kept for its containers.
    fn app_completed(&mut self, app_id: ApplicationId) {
        let max = self.config.max_completed_applications;
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

    /// Moves `app` to `state`; a final state releases its current attempt's AM share and
    /// counts it among the completed applications.
    fn finish_app(&mut self, app_id: ApplicationId, state: YarnApplicationState) {
        let Some(app) = self.apps.get_mut(&app_id) else {
            return;
        };
        let was_final = app.state.is_final();
        app.set_state(state);
        let attempt = app.current().map(|a| a.id);
        if !was_final && state.is_final() {
            if let Some(attempt) = attempt {
                self.release_am_share(&attempt);
            }
            self.app_completed(app_id);
        }
    }

    /// Activation passes of every queue (LeafQueue.activateApplications), and the AM launch
    /// diagnostics of each attempt they looked at.
    fn activate_applications(&mut self, now: u64) {
        let stamp = leaf_queue::diagnostics_stamp(now);
        let cluster = self.scheduler.cluster_resource();
        let ResourceManagerCore { queues, apps, .. } = self;
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

    /// Starts the next attempt of `app_id`: it waits in its queue until an activation pass
    /// lets its AM container be placed.
    fn start_attempt(&mut self, app_id: ApplicationId, now: u64, fx: &mut Vec<Effect>) {
        let Some(app) = self.apps.get_mut(&app_id) else {
            return;
        };
        let id = ApplicationAttemptId {
            app: app_id,
            attempt: app.attempts.len() as u32 + 1,
        };
        tracing::info!(app_id = %app_id, attempt = id.attempt, "Starting attempt {id}");
        app.attempts.push(RMAppAttempt::new(id));
        // The CapacityScheduler's addApplicationAttempt: the attempt waits in its queue
        // until an activation pass lets its AM start.
        let (queue, user) = (app.ctx.queue.clone(), app.ctx.user.clone());
        let am = self
            .scheduler
            .normalize(&app.ctx.resource)
            .unwrap_or(app.ctx.resource);
        if let Some(q) = self.queues.get_mut(&queue) {
            q.submit(id, &user, am);
        }
        self.activate_applications(now);
        self.place_pending_ams(now, fx);
    }

    /// Gives the AM containers of activated attempts a node, where there is room, and
    /// launches them.
    fn place_pending_ams(&mut self, now: u64, fx: &mut Vec<Effect>) {
        let stamp = leaf_queue::diagnostics_stamp(now);
        let ResourceManagerCore {
            apps,
            scheduler,
            container_hosts,
            queues,
            ..
        } = self;
        let activated: Vec<ApplicationAttemptId> =
            queues.values().flat_map(|q| q.active().copied()).collect();
        for attempt_id in activated {
            let Some(app) = apps.get_mut(&attempt_id.app) else {
                continue;
            };
            if app.state.is_final() {
                continue;
            }
            let RMApp { ctx, attempts, .. } = app;
            let Some(attempt) = attempts.last_mut().filter(|a| a.id == attempt_id) else {
                continue;
            };
            if !attempt.am_pending || attempt.ended {
                continue;
            }
            match scheduler.allocate_am(attempt.id, &ctx.resource) {
                Ok(Some(container)) => {
                    let mut launch = ctx.am_container_spec.clone();
                    attempt.am_diagnostics = format!("{stamp}{}", leaf_queue::ASSIGNED);
                    attempt.am_pending = false;
                    attempt.am_container = Some(container.clone());
                    attempt.containers.insert(container.id);
                    attempt.container_granted(&container, now);
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
                    launch
                        .environment
                        .insert("CONTAINER_ID".into(), container.id.to_string());
                    launch
                        .environment
                        .insert("NM_HOST".into(), container.node.clone());
                    fx.push(Effect::LaunchAm { container, launch });
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::error!(app_id = %attempt.id.app, "cannot allocate the AM container: {e}")
                }
            }
        }
    }

    /// A container completed on a node.
    fn container_completed(&mut self, mut status: ContainerStatus, now: u64, fx: &mut Vec<Effect>) {
        let id = status.container_id;
        let attempt_id = id.attempt;
        let app_id = attempt_id.app;
        self.scheduler.release(&id);
        let Some(app) = self.apps.get_mut(&app_id) else {
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
        let running_containers = attempt.containers.len();
        if attempt.released.remove(&id) {
            status.exit_status = exit_status::ABORTED;
            status.diagnostics = RELEASED_CONTAINER.into();
        }
        attempt.container_done(&status, now);
        let mut am_ended = None;
        if attempt.am_container.as_ref().map(|c| c.id) == Some(id) {
            am_ended = Some(status.clone());
        } else if !attempt.ended {
            attempt.completed.push(status.clone());
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
            self.am_container_finished(attempt_id, status, now, fx);
        }
        self.check_decommissioning(now, fx);
        self.place_pending_ams(now, fx);
    }

    /// The AM container of an attempt ended: the attempt is over. The application finishes
    /// if its AM unregistered; otherwise the attempt failed, and another starts while the
    /// failures that count stay below the maximum, else the application fails.
    fn am_container_finished(
        &mut self,
        attempt_id: ApplicationAttemptId,
        status: ContainerStatus,
        now: u64,
        fx: &mut Vec<Effect>,
    ) {
        let app_id = attempt_id.app;
        let mut retry = false;
        let mut leftovers = Vec::new();
        let requester;
        let mut final_state = None;
        {
            let ResourceManagerCore { apps, scheduler, .. } = &mut *self;
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
                    app.set_state(YarnApplicationState::Accepted);
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
        }
        self.release_am_share(&attempt_id);
        if let Some(state) = final_state {
            self.finish_app(app_id, state);
        }
        self.stop_containers(leftovers, requester, fx);
        if retry {
            self.start_attempt(app_id, now, fx);
        } else {
            self.activate_applications(now);
            self.place_pending_ams(now, fx);
        }
        self.notify(app_id, now, fx);
    }
}

// ----- node liveness --------------------------------------------------------------------------

impl ResourceManagerCore {
    /// A node silent for `silence_ms` is expired (RMNodeImpl's EXPIRE → LOST): it leaves the
    /// scheduler, running applications are told in their next Allocate, and every container
    /// placed there completes as on a lost node (-100), so AMs ask for replacements and an
    /// attempt whose AM ran there fails without counting. A heartbeat from it is answered
    /// RESYNC; it registers again as a new node.
    fn node_lost(&mut self, host: &str, silence_ms: u64, now: u64, fx: &mut Vec<Effect>) {
        self.liveness.remove(host);
        let Some(report) = self.scheduler.node_reports().into_iter().find(|n| n.host == host) else {
            return;
        };
        // A DECOMMISSIONING node that goes silent is lost too (its timer finds nothing).
        if self
            .decommissions
            .get(host)
            .is_some_and(|d| d.state == NodeState::Decommissioning)
        {
            self.decommissions.remove(host);
        }
        let lost = self.scheduler.remove_node(host);
        self.lost_nodes.insert(
            host.to_string(),
            LostNode {
                rack: report.rack.clone(),
                capability: report.capability,
            },
        );
        self.push_node_update(&NodeReport {
            used: Resource::default(),
            num_containers: 0,
            state: NodeState::Lost,
            ..report.clone()
        });
        let expiry = self.config.nm_expiry;
        tracing::info!(host, "Expired:{host} Timed out after {} secs", expiry.as_secs());
        tracing::warn!(
            event = "node_expired",
            host,
            silence_ms,
            expiry_ms = expiry.as_millis() as u64,
            lost_containers = lost.len() as u64,
            "Deactivating Node {host} as it is now LOST (no heartbeat for {}; {} container(s) lost)",
            humantime::format_duration(Duration::from_millis(silence_ms)),
            lost.len()
        );
        for id in lost {
            tracing::warn!(
                container_id = %id,
                app_id = %id.attempt.app,
                host,
                "Container {id} on {host}: {LOST_CONTAINER}"
            );
            self.container_completed(
                ContainerStatus {
                    container_id: id,
                    state: ContainerState::Complete,
                    exit_status: exit_status::ABORTED,
                    diagnostics: LOST_CONTAINER.to_string(),
                },
                now,
                fx,
            );
        }
        // The cluster's resources changed: the queues' AM limits with them.
        self.activate_applications(now);
        self.place_pending_ams(now, fx);
    }
}

// ----- graceful decommission ------------------------------------------------------------------

impl ResourceManagerCore {
    /// Puts `host` into graceful decommission (or gives a decommissioning node a new
    /// timeout): the scheduler places nothing more there, running applications are told in
    /// their next Allocate, and after `timeout` whatever still runs there is killed.
    fn decommission_node(&mut self, host: &str, timeout: Duration, now: u64, fx: &mut Vec<Effect>) {
        let deadline_ms = now.saturating_add(u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX));
        let generation = self
            .decommissions
            .values()
            .map(|d| d.generation)
            .max()
            .unwrap_or(0)
            + 1;
        match self.decommissions.get_mut(host) {
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
                let Some(report) = self.scheduler.node_reports().into_iter().find(|n| n.host == host) else {
                    return;
                };
                self.scheduler.set_decommissioning(host, true);
                self.decommissions.insert(
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
                self.push_node_update(&report);
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
        fx.push(Effect::ArmDecommissionTimeout {
            host: host.to_string(),
            after: timeout,
            generation,
        });
        self.check_decommissioning(now, fx);
    }

    /// DecommissioningNodesWatcher: a decommissioning node with no container left and no
    /// running application that had one there is decommissioned.
    fn check_decommissioning(&mut self, now: u64, fx: &mut Vec<Effect>) {
        let ready: Vec<String> = self
            .decommissions
            .iter()
            .filter(|(host, d)| {
                d.state == NodeState::Decommissioning
                    && self.scheduler.containers_on(host).is_empty()
                    && !self.has_running_app_on(host)
            })
            .map(|(host, _)| host.clone())
            .collect();
        for host in ready {
            self.node_decommissioned(&host, false, now, fx);
        }
    }

    /// The node leaves the cluster (DECOMMISSIONED): containers still there (after a
    /// timeout) are killed and completed as on a lost node, and running applications are told.
    fn node_decommissioned(&mut self, host: &str, timed_out: bool, now: u64, fx: &mut Vec<Effect>) {
        let Some(d) = self.decommissions.get_mut(host) else {
            return;
        };
        if d.state != NodeState::Decommissioning {
            return;
        }
        d.state = NodeState::Decommissioned;
        self.liveness.remove(host);
        let report = NodeReport {
            host: host.to_string(),
            rack: d.rack.clone(),
            capability: d.capability,
            used: Resource::default(),
            num_containers: 0,
            state: NodeState::Decommissioned,
        };
        let lost = self.scheduler.remove_node(host);
        self.push_node_update(&report);
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
            fx.push(Effect::StopContainer {
                host: host.to_string(),
                container_id: *id,
                requester: StopRequester::ResourceManager,
            });
        }
        for id in lost {
            self.container_completed(
                ContainerStatus {
                    container_id: id,
                    state: ContainerState::Complete,
                    exit_status: exit_status::ABORTED,
                    diagnostics: LOST_CONTAINER.to_string(),
                },
                now,
                fx,
            );
        }
        // The cluster's resources changed: the queues' AM limits with them.
        self.activate_applications(now);
        self.place_pending_ams(now, fx);
    }

    /// The node runs again: a decommissioning one at once; a decommissioned one once its
    /// NodeManager registers again (it is asked to, as an operator restarts it in YARN).
    fn recommission_node(&mut self, host: &str, now: u64, fx: &mut Vec<Effect>) {
        let Some(d) = self.decommissions.remove(host) else {
            tracing::debug!(host, "Node {host} is not being decommissioned");
            return;
        };
        if d.state == NodeState::Decommissioning {
            self.scheduler.set_decommissioning(host, false);
            if let Some(report) = self.scheduler.node_reports().into_iter().find(|n| n.host == host) {
                self.push_node_update(&report);
            }
        }
        let previous = d.state;
        tracing::info!(
            event = "node_recommissioned",
            host,
            "Recommission node {host} with state {previous}"
        );
        if previous == NodeState::Decommissioned {
            fx.push(Effect::Resync {
                host: host.to_string(),
                reason: ResyncReason::Recommissioned,
            });
        } else {
            self.place_pending_ams(now, fx);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_000_000;

    fn config() -> RmConfig {
        RmConfig::from_conf(&SparkConf::new())
    }

    fn attempt(am_exit_status: Option<i32>, unregistered: bool) -> RMAppAttempt {
        let mut a = RMAppAttempt::new(ApplicationAttemptId {
            app: ApplicationId {
                cluster_timestamp: 1,
                id: 1,
            },
            attempt: 1,
        });
        a.am_pending = false;
        a.registered = true;
        a.unregistered = unregistered.then(|| (FinalApplicationStatus::Failed, String::new()));
        a.ended = am_exit_status.is_some();
        a.am_exit_status = am_exit_status;
        a
    }

    fn node(host: &str, memory_mb: u64) -> RegisterNode {
        RegisterNode {
            host: host.into(),
            rack: "/default-rack".into(),
            capability: Resource::new(memory_mb, 8),
            running: Vec::new(),
            completed: Vec::new(),
            version: NODE_PROTOCOL_VERSION,
            cluster_id: "sparkyard".into(),
        }
    }

    /// Submits an application of `user` to `queue` with an AM of `am_mb`.
    fn submit(rm: &mut ResourceManagerCore, queue: &str, am_mb: u64) -> (ApplicationId, Vec<Effect>) {
        let app_id = rm.new_application().app_id;
        let (answer, fx) = rm.submit_application(
            ApplicationSubmissionContext {
                app_id,
                name: "test".into(),
                queue: queue.into(),
                app_type: "SPARK".into(),
                user: "alice".into(),
                max_app_attempts: None,
                tags: Vec::new(),
                resource: Resource::new(am_mb, 1),
                am_container_spec: ContainerLaunchContext::default(),
                acls: Default::default(),
            },
            NOW,
        );
        answer.unwrap();
        (app_id, fx)
    }

    fn launches(fx: &[Effect]) -> Vec<Container> {
        fx.iter()
            .filter_map(|e| match e {
                Effect::LaunchAm { container, .. } => Some(container.clone()),
                _ => None,
            })
            .collect()
    }

    fn stops(fx: &[Effect]) -> Vec<(ContainerId, StopRequester)> {
        fx.iter()
            .filter_map(|e| match e {
                Effect::StopContainer {
                    container_id,
                    requester,
                    ..
                } => Some((*container_id, *requester)),
                _ => None,
            })
            .collect()
    }

    fn state(rm: &ResourceManagerCore, app: ApplicationId) -> YarnApplicationState {
        rm.report(&app).unwrap().1.state
    }

    fn exited(rm: &mut ResourceManagerCore, container: &Container, exit_status: i32) -> Vec<Effect> {
        rm.node_status_update(
            vec![ContainerStatus {
                container_id: container.id,
                state: ContainerState::Complete,
                exit_status,
                diagnostics: format!("exit {exit_status}"),
            }],
            NOW,
        )
    }

    fn register_am(rm: &mut ResourceManagerCore, attempt_id: ApplicationAttemptId) -> Vec<Effect> {
        let (answer, fx) = rm.register_application_master(
            &RegisterApplicationMaster {
                attempt_id,
                host: "host1".into(),
                rpc_port: 0,
                tracking_url: String::new(),
            },
            NOW,
        );
        answer.unwrap();
        fx
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

    #[test]
    fn an_application_goes_from_accepted_to_running_to_finished() {
        let mut rm = ResourceManagerCore::new(1, &config());
        let (app, fx) = submit(&mut rm, "default", 1024);
        assert_eq!(state(&rm, app), YarnApplicationState::Accepted);
        // No node yet: the attempt waits, with the CapacityScheduler's diagnostics.
        assert!(launches(&fx).is_empty());
        let diagnostics = rm.report(&app).unwrap().1.diagnostics;
        assert!(
            diagnostics.contains(leaf_queue::CLUSTER_RESOURCE_EMPTY),
            "{diagnostics}"
        );

        let (answer, fx) = rm.register_node(node("host1", 8192), NOW);
        assert!(answer.unwrap().lost.is_empty());
        let am = launches(&fx);
        assert_eq!(am.len(), 1);
        assert_eq!(am[0].node, "host1");
        let Some(Effect::LaunchAm { launch, .. }) = fx.iter().find(|e| matches!(e, Effect::LaunchAm { .. }))
        else {
            unreachable!()
        };
        assert_eq!(launch.environment["CONTAINER_ID"], am[0].id.to_string());
        assert_eq!(launch.environment["NM_HOST"], "host1");
        assert_eq!(rm.container_host(&am[0].id), Some("host1"));

        rm.am_container_launched(am[0].id, NOW);
        assert!(rm
            .report(&app)
            .unwrap()
            .1
            .diagnostics
            .contains(leaf_queue::LAUNCHED));

        let fx = register_am(&mut rm, am[0].id.attempt);
        assert_eq!(state(&rm, app), YarnApplicationState::Running);
        assert!(fx.iter().any(|e| matches!(e,
            Effect::AnswerWaiters { app: a, key: (YarnApplicationState::Running, _), .. } if *a == app)));

        let (answer, _) = rm.finish_application_master(
            &FinishApplicationMaster {
                attempt_id: am[0].id.attempt,
                final_status: FinalApplicationStatus::Succeeded,
                diagnostics: String::new(),
                tracking_url: String::new(),
            },
            NOW,
        );
        answer.unwrap();
        // Unregistered, but running until its AM container ends.
        assert_eq!(state(&rm, app), YarnApplicationState::Running);
        exited(&mut rm, &am[0], 0);
        let report = rm.report(&app).unwrap().1;
        assert_eq!(report.state, YarnApplicationState::Finished);
        assert_eq!(report.final_status, FinalApplicationStatus::Succeeded);
        assert_eq!(report.finish_time, NOW);
    }

    #[test]
    fn a_failed_attempt_is_retried_up_to_the_maximum_and_a_lost_node_does_not_count() {
        let mut rm = ResourceManagerCore::new(1, &config());
        rm.register_node(node("host1", 8192), NOW).0.unwrap();
        let (app, fx) = submit(&mut rm, "default", 1024);
        let first = launches(&fx).remove(0);
        assert_eq!(first.id.attempt.attempt, 1);

        // The AM exits 1: the first failure of two allowed, a new attempt.
        let fx = exited(&mut rm, &first, 1);
        assert_eq!(state(&rm, app), YarnApplicationState::Accepted);
        let second = launches(&fx).remove(0);
        assert_eq!(second.id.attempt.attempt, 2);
        assert!(rm
            .report(&app)
            .unwrap()
            .1
            .diagnostics
            .contains("exited with  exitCode: 1"));

        // Its node was lost (-100): not counted, a third attempt.
        let fx = exited(&mut rm, &second, exit_status::ABORTED);
        let third = launches(&fx).remove(0);
        assert_eq!(third.id.attempt.attempt, 3);
        assert_eq!(state(&rm, app), YarnApplicationState::Accepted);

        // A second failure that counts: the application fails.
        let fx = exited(&mut rm, &third, 1);
        assert!(launches(&fx).is_empty());
        let report = rm.report(&app).unwrap().1;
        assert_eq!(report.state, YarnApplicationState::Failed);
        assert_eq!(report.final_status, FinalApplicationStatus::Failed);
        assert!(
            report.diagnostics.starts_with(&format!(
                "Application {app} failed 2 times due to AM Container for"
            )),
            "{}",
            report.diagnostics
        );
    }

    #[test]
    fn the_submissions_max_attempts_is_capped_by_the_rms() {
        let mut rm = ResourceManagerCore::new(1, &config());
        rm.register_node(node("host1", 8192), NOW).0.unwrap();
        let app_id = rm.new_application().app_id;
        let (answer, fx) = rm.submit_application(
            ApplicationSubmissionContext {
                app_id,
                name: "one".into(),
                queue: "default".into(),
                app_type: "SPARK".into(),
                user: "alice".into(),
                max_app_attempts: Some(1),
                tags: Vec::new(),
                resource: Resource::new(1024, 1),
                am_container_spec: ContainerLaunchContext::default(),
                acls: Default::default(),
            },
            NOW,
        );
        answer.unwrap();
        let am = launches(&fx).remove(0);
        let fx = exited(&mut rm, &am, 1);
        assert!(launches(&fx).is_empty());
        assert_eq!(state(&rm, app_id), YarnApplicationState::Failed);
    }

    #[test]
    fn an_unknown_queue_fails_the_application_and_duplicates_are_refused() {
        let mut rm = ResourceManagerCore::new(1, &config());
        let (app, fx) = submit(&mut rm, "nowhere", 1024);
        assert!(launches(&fx).is_empty());
        let report = rm.report(&app).unwrap().1;
        assert_eq!(report.state, YarnApplicationState::Failed);
        assert_eq!(
            report.diagnostics,
            format!("Application {app} submitted by user alice to unknown queue: nowhere")
        );
        let (answer, _) = rm.submit_application(
            ApplicationSubmissionContext {
                app_id: app,
                name: "again".into(),
                queue: "default".into(),
                app_type: "SPARK".into(),
                user: "alice".into(),
                max_app_attempts: None,
                tags: Vec::new(),
                resource: Resource::new(1024, 1),
                am_container_spec: ContainerLaunchContext::default(),
                acls: Default::default(),
            },
            NOW,
        );
        assert!(answer.unwrap_err().to_string().contains("already present"));
    }

    #[test]
    fn with_a_web_app_every_report_carries_its_page_as_tracking_url() {
        let mut plain = ResourceManagerCore::new(1, &config());
        plain.register_node(node("host1", 8192), NOW).0.unwrap();
        let (app, fx) = submit(&mut plain, "default", 1024);
        register_am(&mut plain, launches(&fx)[0].id.attempt);
        assert_eq!(plain.report(&app).unwrap().1.tracking_url, None);

        let mut served = ResourceManagerCore::new(
            1,
            &RmConfig {
                web_address: Some("127.0.0.1:8088".into()),
                ..config()
            },
        );
        served.register_node(node("host1", 8192), NOW).0.unwrap();
        let (app, fx) = submit(&mut served, "default", 1024);
        let url = format!("http://127.0.0.1:8088/cluster/app/{app}");
        assert_eq!(
            served.report(&app).unwrap().1.tracking_url.as_deref(),
            Some(url.as_str())
        );
        register_am(&mut served, launches(&fx)[0].id.attempt);
        assert_eq!(
            served.applications(&[], &[])[0].report.tracking_url.as_deref(),
            Some(url.as_str())
        );
    }

    #[test]
    fn cluster_metrics_and_queues_count_what_the_rm_holds() {
        let mut rm = ResourceManagerCore::new(1, &config());
        // One node of 8 GB: the AM limit (10%) holds one AM of 1 GB; the others wait.
        rm.register_node(node("host1", 8192), NOW).0.unwrap();
        let (running, fx) = submit(&mut rm, "default", 1024);
        register_am(&mut rm, launches(&fx)[0].id.attempt);
        let (_waiting, _) = submit(&mut rm, "default", 1024);
        let (killed, _) = submit(&mut rm, "default", 1024);
        rm.kill_application(killed, "", NOW).0.unwrap();
        let m = rm.cluster_metrics();
        assert_eq!(
            (
                m.apps_submitted,
                m.apps_running,
                m.apps_killed,
                m.apps_pending,
                m.apps_completed
            ),
            (3, 1, 1, 1, 0)
        );
        assert_eq!(m.total, Resource::new(8192, 8));
        assert_eq!(m.allocated, Resource::new(1024, 1));
        assert_eq!((m.containers_allocated, m.active_nodes, m.lost_nodes), (1, 1, 0));
        let queues = rm.queue_infos();
        assert_eq!(queues.len(), 1);
        let q = &queues[0];
        assert_eq!(q.name, "default");
        assert_eq!(
            (
                q.num_applications,
                q.num_active_applications,
                q.num_pending_applications,
                q.num_containers
            ),
            (2, 1, 1, 1)
        );
        assert_eq!(q.used, Resource::new(1024, 1));
        assert_eq!(q.am_used, Resource::new(1024, 1));
        assert_eq!(
            rm.report(&running).unwrap().1.state,
            YarnApplicationState::Running
        );
    }

    #[test]
    fn completed_applications_beyond_the_maximum_are_forgotten_oldest_first() {
        let mut rm = ResourceManagerCore::new(
            1,
            &RmConfig {
                max_completed_applications: 2,
                ..config()
            },
        );
        rm.register_node(node("host1", 8192), NOW).0.unwrap();
        let (running, fx) = submit(&mut rm, "default", 1024);
        let am = launches(&fx).remove(0);
        let failed: Vec<ApplicationId> = (0..3).map(|_| submit(&mut rm, "nowhere", 1024).0).collect();
        assert!(
            rm.report(&failed[0]).is_none(),
            "the oldest completed one is forgotten"
        );
        assert!(rm.report(&failed[1]).is_some());
        assert!(rm.report(&failed[2]).is_some());
        assert!(
            rm.report(&running).is_some(),
            "a running application is never forgotten"
        );

        // It ends (killed) and is the newest completed one: the oldest goes, with the
        // hosts of its containers.
        let (answer, fx) = rm.kill_application(running, "", NOW);
        answer.unwrap();
        assert_eq!(stops(&fx), vec![(am.id, StopRequester::ResourceManager)]);
        assert_eq!(state(&rm, running), YarnApplicationState::Killed);
        assert!(rm.report(&failed[1]).is_none());
        assert!(rm.report(&failed[2]).is_some());
        assert_eq!(rm.container_host(&am.id), Some("host1"));
    }

    #[test]
    fn get_applications_lists_what_the_rm_keeps_by_state_and_type() {
        let mut rm = ResourceManagerCore::new(
            1,
            &RmConfig {
                max_completed_applications: 2,
                ..config()
            },
        );
        rm.register_node(node("host1", 8192), NOW).0.unwrap();
        let (running, _) = submit(&mut rm, "default", 1024);
        let failed: Vec<ApplicationId> = (0..3).map(|_| submit(&mut rm, "nowhere", 1024).0).collect();
        let ids = |l: Vec<ApplicationListing>| l.into_iter().map(|l| l.report.app_id).collect::<Vec<_>>();

        // Every state: the running one and the last two completed, by id.
        assert_eq!(
            ids(rm.applications(&[], &[])),
            vec![running, failed[1], failed[2]]
        );
        assert_eq!(
            ids(rm.applications(&[YarnApplicationState::Failed], &[])),
            vec![failed[1], failed[2]]
        );
        assert_eq!(
            ids(rm.applications(
                &[YarnApplicationState::Accepted, YarnApplicationState::Running],
                &[]
            )),
            vec![running]
        );
        assert_eq!(
            ids(rm.applications(&[], &["spark".to_string()])).len(),
            3,
            "types ignore case"
        );
        assert!(rm.applications(&[], &["MAPREDUCE".to_string()]).is_empty());

        // Killed: its attempt is KILLED, it is the newest completed one.
        rm.kill_application(running, "", NOW).0.unwrap();
        let listed = rm.applications(&[YarnApplicationState::Killed], &[]);
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].attempts.len(), 1);
        assert_eq!(listed[0].attempts[0].state, "KILLED");
        assert_eq!(ids(rm.applications(&[], &[])), vec![running, failed[2]]);
    }

    #[test]
    fn attempts_are_activated_in_submission_order_within_the_queues_am_limit() {
        // 10% of 8192 MB, rounded up to the minimum allocation: room for one 1024 MB AM.
        let mut rm = ResourceManagerCore::new(1, &config());
        rm.register_node(node("host1", 8192), NOW).0.unwrap();
        let (first, fx) = submit(&mut rm, "default", 1024);
        assert_eq!(launches(&fx).len(), 1);
        let (second, fx) = submit(&mut rm, "default", 1024);
        assert!(launches(&fx).is_empty());
        let (third, fx) = submit(&mut rm, "default", 1024);
        assert!(launches(&fx).is_empty());
        for app in [second, third] {
            let diagnostics = rm.report(&app).unwrap().1.diagnostics;
            assert!(
                diagnostics.contains(leaf_queue::QUEUE_AM_LIMIT_EXCEEDED),
                "{diagnostics}"
            );
        }
        // The first ends: the second, not the third, gets its AM container.
        let (answer, fx) = rm.kill_application(first, "enough", NOW);
        answer.unwrap();
        let next = launches(&fx);
        assert_eq!(next.len(), 1);
        assert_eq!(next[0].id.attempt.app, second);
        assert!(rm
            .report(&first)
            .unwrap()
            .1
            .diagnostics
            .ends_with("was killed by user alice: enough"));
        assert!(rm
            .report(&third)
            .unwrap()
            .1
            .diagnostics
            .contains(leaf_queue::QUEUE_AM_LIMIT_EXCEEDED));
    }

    #[test]
    fn a_node_that_registers_without_a_container_has_it_completed_as_lost() {
        let mut rm = ResourceManagerCore::new(1, &config());
        rm.register_node(node("host1", 8192), NOW).0.unwrap();
        let (app, fx) = submit(&mut rm, "default", 1024);
        let am = launches(&fx).remove(0);
        // The node comes back naming nothing: the AM container was lost (-100), which
        // does not count, so a new attempt starts.
        let (answer, fx) = rm.register_node(node("host1", 8192), NOW);
        assert_eq!(answer.unwrap().lost, vec![am.id]);
        let next = launches(&fx);
        assert_eq!(next.len(), 1);
        assert_eq!(next[0].id.attempt.attempt, 2);
        assert_eq!(state(&rm, app), YarnApplicationState::Accepted);
        // A node naming a container the RM did not place there is told to stop it.
        let mut stray = node("host1", 8192);
        stray.running = vec![next[0].id, am.id];
        let (answer, fx) = rm.register_node(stray, NOW);
        assert!(answer.unwrap().lost.is_empty());
        assert_eq!(stops(&fx), vec![(am.id, StopRequester::ResourceManager)]);
    }

    #[test]
    fn the_report_carries_the_am_s_last_progress() {
        let mut rm = ResourceManagerCore::new(1, &config());
        rm.register_node(node("host1", 8192), NOW).0.unwrap();
        let (app, fx) = submit(&mut rm, "default", 1024);
        let attempt_id = launches(&fx).remove(0).id.attempt;
        assert_eq!(rm.report(&app).unwrap().1.progress, 0.0);
        register_am(&mut rm, attempt_id);
        let allocate = |response_id, progress| Allocate {
            attempt_id,
            response_id,
            progress,
            asks: Vec::new(),
            releases: Vec::new(),
            blacklist: Vec::new(),
        };
        rm.allocate(&allocate(0, 0.25), NOW).0.unwrap();
        assert_eq!(rm.report(&app).unwrap().1.progress, 0.25);
        // Out of range or not a number: clamped, or the last value kept.
        rm.allocate(&allocate(1, 7.0), NOW).0.unwrap();
        assert_eq!(rm.report(&app).unwrap().1.progress, 1.0);
        rm.allocate(&allocate(2, f32::NAN), NOW).0.unwrap();
        assert_eq!(rm.report(&app).unwrap().1.progress, 1.0);
    }

    #[test]
    fn get_containers_lists_an_attempts_containers_running_and_completed() {
        let mut rm = ResourceManagerCore::new(1, &config());
        rm.register_node(node("host1", 8192), NOW).0.unwrap();
        let (app, fx) = submit(&mut rm, "default", 1024);
        let am = launches(&fx).remove(0);
        let attempt_id = am.id.attempt;
        register_am(&mut rm, attempt_id);
        let granted = rm
            .allocate(
                &Allocate {
                    attempt_id,
                    response_id: 0,
                    progress: 0.0,
                    asks: vec![ContainerRequest::any(Resource::new(512, 1), 0)],
                    releases: Vec::new(),
                    blacklist: Vec::new(),
                },
                NOW + 5,
            )
            .0
            .unwrap()
            .allocated;
        assert_eq!(granted.len(), 1);
        let listed = rm.containers(&attempt_id).unwrap();
        let ids: Vec<ContainerId> = listed.iter().map(|c| c.container_id).collect();
        assert_eq!(ids, vec![am.id, granted[0].id], "the AM container first");
        assert!(listed
            .iter()
            .all(|c| c.state == ContainerState::Running && c.host == "host1" && c.exit_status.is_none()));
        assert_eq!(
            (listed[1].start_time, listed[1].resource.memory_mb),
            (NOW + 5, granted[0].resource.memory_mb)
        );
        exited(&mut rm, &granted[0], 1);
        let listed = rm.containers(&attempt_id).unwrap();
        assert_eq!(listed[0].state, ContainerState::Running);
        assert_eq!(
            (
                listed[1].state,
                listed[1].exit_status,
                listed[1].diagnostics.as_str()
            ),
            (ContainerState::Complete, Some(1), "exit 1")
        );
        let other = ApplicationAttemptId { app, attempt: 7 };
        assert_eq!(
            rm.containers(&other),
            Err(YarnError::ApplicationAttemptNotFound(other))
        );
        let unknown = ApplicationAttemptId {
            app: ApplicationId {
                cluster_timestamp: 1,
                id: 99,
            },
            attempt: 1,
        };
        assert_eq!(
            rm.containers(&unknown),
            Err(YarnError::ApplicationNotFound(unknown.app))
        );
    }

    #[test]
    fn an_allocate_repeating_the_last_response_id_gets_the_same_answer() {
        let mut rm = ResourceManagerCore::new(1, &config());
        rm.register_node(node("host1", 8192), NOW).0.unwrap();
        let (_, fx) = submit(&mut rm, "default", 1024);
        let am = launches(&fx).remove(0);
        let attempt_id = am.id.attempt;
        let allocate = |response_id| Allocate {
            attempt_id,
            response_id,
            progress: 0.0,
            asks: Vec::new(),
            releases: Vec::new(),
            blacklist: Vec::new(),
        };
        assert!(matches!(
            rm.allocate(&allocate(0), NOW).0,
            Err(YarnError::NotRegistered(_))
        ));
        register_am(&mut rm, attempt_id);
        let first = rm.allocate(&allocate(0), NOW).0.unwrap();
        assert_eq!(first.response_id, 1);
        assert_eq!(rm.allocate(&allocate(0), NOW).0.unwrap(), first);
        assert_eq!(rm.allocate(&allocate(1), NOW).0.unwrap().response_id, 2);
    }

    #[test]
    fn a_decommissioning_node_times_out_and_its_containers_are_lost() {
        let mut rm = ResourceManagerCore::new(1, &config());
        rm.register_node(node("host1", 8192), NOW).0.unwrap();
        let (app, fx) = submit(&mut rm, "default", 1024);
        let am = launches(&fx).remove(0);
        let refresh = RefreshNodes {
            decommission: vec!["host1".into()],
            recommission: Vec::new(),
            graceful_timeout: Some(Duration::from_secs(5)),
        };
        let (answer, fx) = rm.refresh_nodes(&refresh, NOW);
        let nodes = answer.unwrap();
        assert_eq!(nodes[0].state, NodeState::Decommissioning);
        let generation = match fx.as_slice() {
            [Effect::ArmDecommissionTimeout {
                host,
                after,
                generation,
            }] => {
                assert_eq!((host.as_str(), *after), ("host1", Duration::from_secs(5)));
                *generation
            }
            other => panic!("{other:?}"),
        };
        // A restarted RM arms the timer again for what is left of the timeout.
        assert!(matches!(
            rm.recover(NOW + 2_000, true).as_slice(),
            [Effect::ArmDecommissionTimeout { after, .. }, Effect::Resync { reason: ResyncReason::Restarted, .. }]
                if *after == Duration::from_secs(3)
        ));
        // An older timer does nothing; the current one kills what still runs there.
        assert!(rm.decommission_timed_out("host1", generation + 1, NOW).is_empty());
        let fx = rm.decommission_timed_out("host1", generation, NOW + 5_000);
        assert_eq!(stops(&fx)[0], (am.id, StopRequester::ResourceManager));
        assert_eq!(rm.all_node_reports()[0].state, NodeState::Decommissioned);
        assert!(rm.node_reports().is_empty());
        // The AM container was lost with the node (not counted): a new attempt waits.
        assert_eq!(state(&rm, app), YarnApplicationState::Accepted);
        // A decommissioned node may not register; recommissioned, it is asked to.
        assert!(rm.register_node(node("host1", 8192), NOW).0.is_err());
        let refresh = RefreshNodes {
            decommission: Vec::new(),
            recommission: vec!["host1".into()],
            graceful_timeout: None,
        };
        let (_, fx) = rm.refresh_nodes(&refresh, NOW);
        assert!(matches!(
            fx.as_slice(),
            [Effect::Resync {
                reason: ResyncReason::Recommissioned,
                ..
            }]
        ));
        let (answer, fx) = rm.register_node(node("host1", 8192), NOW);
        answer.unwrap();
        assert_eq!(launches(&fx).len(), 1);
    }

    fn expiring(expiry_ms: u64) -> ResourceManagerCore {
        ResourceManagerCore::new(
            1,
            &RmConfig {
                nm_expiry: Duration::from_millis(expiry_ms),
                ..config()
            },
        )
    }

    fn beat(
        host: &str,
        response_id: u64,
        running: &[ContainerId],
        completed: Vec<ContainerStatus>,
    ) -> NodeHeartbeat {
        NodeHeartbeat {
            host: host.into(),
            response_id,
            running: running.to_vec(),
            completed,
        }
    }

    fn allocate_on(
        rm: &mut ResourceManagerCore,
        attempt_id: ApplicationAttemptId,
        response_id: u64,
        host: &str,
    ) -> AllocateResponse {
        let ask = ContainerRequest {
            resource: Resource::new(1024, 1),
            nodes: vec![host.into()],
            racks: Vec::new(),
            priority: 1,
            relax_locality: false,
        };
        let msg = Allocate {
            attempt_id,
            response_id,
            progress: 0.0,
            asks: if host.is_empty() { Vec::new() } else { vec![ask] },
            releases: Vec::new(),
            blacklist: Vec::new(),
        };
        rm.allocate(&msg, NOW).0.unwrap()
    }

    fn node_state(rm: &ResourceManagerCore, host: &str) -> Option<NodeState> {
        rm.all_node_reports()
            .into_iter()
            .find(|n| n.host == host)
            .map(|n| n.state)
    }

    #[test]
    fn the_liveness_check_runs_every_third_of_the_expiry_interval() {
        let c = config();
        assert_eq!(c.nm_expiry, Duration::from_secs(600));
        assert_eq!(c.liveness_check_period(), Duration::from_secs(200));
        assert_eq!(c.cluster_id, "sparkyard");
    }

    #[test]
    fn a_silent_node_is_lost_with_its_containers_and_a_later_heartbeat_resyncs() {
        let mut rm = expiring(10_000);
        rm.register_node(node("host1", 8192), NOW).0.unwrap();
        rm.register_node(node("host2", 8192), NOW).0.unwrap();
        let (app, fx) = submit(&mut rm, "default", 1024);
        let am = launches(&fx).remove(0);
        let (am_host, other) = if am.node == "host1" {
            ("host1", "host2")
        } else {
            ("host2", "host1")
        };
        register_am(&mut rm, am.id.attempt);
        let granted = allocate_on(&mut rm, am.id.attempt, 0, other).allocated;
        assert_eq!(granted.len(), 1);
        assert_eq!(granted[0].node, other);
        let executor = granted[0].id;

        // The AM's node heartbeats at +6 s; the other stays silent from its registration.
        let answer = rm
            .node_heartbeat(beat(am_host, 0, &[am.id], Vec::new()), NOW + 6_000)
            .0;
        assert_eq!((answer.action, answer.response_id), (NodeAction::Normal, 1));
        assert!(rm.expire_nodes(NOW + 9_999).is_empty());
        assert_eq!(node_state(&rm, other), Some(NodeState::Running));

        // A whole interval of silence: LOST, out of the cluster, its container lost (-100).
        rm.expire_nodes(NOW + 10_000);
        assert_eq!(node_state(&rm, other), Some(NodeState::Lost));
        assert_eq!(node_state(&rm, am_host), Some(NodeState::Running));
        assert!(
            rm.node_reports().iter().all(|n| n.host != other),
            "no longer a live node"
        );
        let heard = allocate_on(&mut rm, am.id.attempt, 1, "");
        assert_eq!(heard.num_cluster_nodes, 1);
        assert_eq!(heard.completed.len(), 1);
        assert_eq!(heard.completed[0].container_id, executor);
        assert_eq!(heard.completed[0].exit_status, exit_status::ABORTED);
        assert_eq!(heard.completed[0].diagnostics, LOST_CONTAINER);
        assert!(heard
            .updated_nodes
            .iter()
            .any(|n| n.host == other && n.state == NodeState::Lost));

        // It comes back: told to resync, it registers as a new node, and the container it
        // still runs is not the RM's any more.
        let answer = rm
            .node_heartbeat(beat(other, 3, &[executor], Vec::new()), NOW + 12_000)
            .0;
        assert_eq!(answer.action, NodeAction::Resync);
        assert_eq!(answer.diagnostics, format!("Node not found resyncing {other}"));
        let mut back = node(other, 8192);
        back.running = vec![executor];
        let (answer, fx) = rm.register_node(back, NOW + 12_000);
        assert!(answer.unwrap().lost.is_empty());
        assert_eq!(stops(&fx), vec![(executor, StopRequester::ResourceManager)]);
        assert_eq!(node_state(&rm, other), Some(NodeState::Running));
        assert_eq!(rm.node_reports().len(), 2);
        let answer = rm.node_heartbeat(beat(other, 0, &[], Vec::new()), NOW + 15_000).0;
        assert_eq!((answer.action, answer.response_id), (NodeAction::Normal, 1));

        // Now the AM's node goes silent (last heard at +6 s): the attempt fails, lost with
        // its node, which does not count; the next attempt goes to the node left.
        let fx = rm.expire_nodes(NOW + 16_000);
        assert_eq!(node_state(&rm, am_host), Some(NodeState::Lost));
        let next = launches(&fx);
        assert_eq!(next.len(), 1);
        assert_eq!((next[0].id.attempt.attempt, next[0].node.as_str()), (2, other));
        assert_eq!(state(&rm, app), YarnApplicationState::Accepted);
        let first = &rm.apps[&app].attempts[0];
        assert_eq!(first.am_exit_status, Some(exit_status::ABORTED));
        assert!(!first.counts_as_failure());
        assert!(rm.report(&app).unwrap().1.diagnostics.contains(LOST_CONTAINER));
    }

    #[test]
    fn a_heartbeat_takes_completions_names_strays_answers_a_repeat_and_resyncs_out_of_step() {
        let mut rm = ResourceManagerCore::new(1, &config());
        rm.register_node(node("host1", 8192), NOW).0.unwrap();
        let (app, fx) = submit(&mut rm, "default", 1024);
        let am = launches(&fx).remove(0);
        let stray = ContainerId { id: 99, ..am.id };
        let first = rm
            .node_heartbeat(beat("host1", 0, &[am.id, stray], Vec::new()), NOW)
            .0;
        assert_eq!((first.action, first.response_id), (NodeAction::Normal, 1));
        assert_eq!(
            first.containers_to_cleanup,
            vec![ContainerCleanup {
                container_id: stray,
                requester: StopRequester::ResourceManager
            }]
        );
        // The answer was lost and the node sends the same heartbeat: the same answer.
        assert_eq!(
            rm.node_heartbeat(beat("host1", 0, &[am.id], Vec::new()), NOW).0,
            first
        );
        let behind = rm.node_heartbeat(beat("host1", 5, &[], Vec::new()), NOW).0;
        assert_eq!(behind.action, NodeAction::Resync);
        assert_eq!(
            behind.diagnostics,
            "Too far behind rm response id:1 nm response id:5"
        );
        // A completion riding on a heartbeat is taken: the AM exited 1, a second attempt.
        let status = ContainerStatus {
            container_id: am.id,
            state: ContainerState::Complete,
            exit_status: 1,
            diagnostics: "exit 1".into(),
        };
        let (answer, fx) = rm.node_heartbeat(beat("host1", 1, &[], vec![status]), NOW);
        assert_eq!((answer.action, answer.response_id), (NodeAction::Normal, 2));
        assert_eq!(launches(&fx)[0].id.attempt.attempt, 2);
        assert_eq!(state(&rm, app), YarnApplicationState::Accepted);
        // A node the RM never heard of is asked to register.
        let unknown = rm.node_heartbeat(beat("host9", 0, &[], Vec::new()), NOW).0;
        assert_eq!(
            (unknown.action, unknown.diagnostics.as_str()),
            (NodeAction::Resync, "Node not found resyncing host9")
        );
        // A decommissioned node is told to shut down, and is not expired.
        let mut rm = expiring(10_000);
        rm.register_node(node("host2", 8192), NOW).0.unwrap();
        let refresh = RefreshNodes {
            decommission: vec!["host2".into()],
            recommission: Vec::new(),
            graceful_timeout: Some(Duration::from_secs(5)),
        };
        rm.refresh_nodes(&refresh, NOW).0.unwrap();
        assert_eq!(node_state(&rm, "host2"), Some(NodeState::Decommissioned));
        let answer = rm.node_heartbeat(beat("host2", 0, &[], Vec::new()), NOW).0;
        assert_eq!(
            (answer.action, answer.diagnostics.as_str()),
            (
                NodeAction::Shutdown,
                "Disallowed NodeManager nodeId: host2 hostname: host2"
            )
        );
        rm.expire_nodes(NOW + 60_000);
        assert_eq!(node_state(&rm, "host2"), Some(NodeState::Decommissioned));
    }

    #[test]
    fn a_node_of_another_protocol_version_or_cluster_is_refused_naming_both() {
        let mut rm = ResourceManagerCore::new(1, &config());
        let mut old = node("host1", 8192);
        old.version = NODE_PROTOCOL_VERSION + 1;
        let refused = rm.register_node(old, NOW).0.unwrap_err().to_string();
        assert_eq!(
            refused,
            format!(
                "Disallowed NodeManager from host1: its protocol version {} is not the ResourceManager's {NODE_PROTOCOL_VERSION}, sending SHUTDOWN signal to the NodeManager.",
                NODE_PROTOCOL_VERSION + 1
            )
        );
        let mut elsewhere = node("host1", 8192);
        elsewhere.cluster_id = "prod".into();
        let refused = rm.register_node(elsewhere, NOW).0.unwrap_err().to_string();
        assert_eq!(
            refused,
            "Disallowed NodeManager from host1: it joins cluster 'prod' (yarn.resourcemanager.cluster-id) but this ResourceManager runs cluster 'sparkyard', sending SHUTDOWN signal to the NodeManager."
        );
        assert!(!refused.contains('\n'));
        assert!(rm.all_node_reports().is_empty(), "neither joined");
        // Refused nodes are not known: a heartbeat is answered RESYNC, never NORMAL.
        let answer = rm.node_heartbeat(beat("host1", 0, &[], Vec::new()), NOW).0;
        assert_eq!(answer.action, NodeAction::Resync);
    }

    #[test]
    fn a_restarted_rm_gives_every_node_a_whole_interval_and_a_silent_decommissioning_node_is_lost() {
        let mut rm = expiring(10_000);
        rm.register_node(node("host1", 8192), NOW).0.unwrap();
        rm.register_node(node("host2", 8192), NOW).0.unwrap();
        let (_, fx) = submit(&mut rm, "default", 1024);
        let am = launches(&fx).remove(0);
        rm.recover(NOW + 9_000, true);
        assert!(rm.expire_nodes(NOW + 10_000).is_empty());
        assert_eq!(rm.node_reports().len(), 2);
        // The AM's node is draining when it goes silent: it is lost, not decommissioned.
        let refresh = RefreshNodes {
            decommission: vec![am.node.clone()],
            recommission: Vec::new(),
            graceful_timeout: Some(Duration::from_secs(3600)),
        };
        rm.refresh_nodes(&refresh, NOW + 9_000).0.unwrap();
        assert_eq!(node_state(&rm, &am.node), Some(NodeState::Decommissioning));
        let other = if am.node == "host1" { "host2" } else { "host1" };
        rm.node_heartbeat(beat(other, 0, &[], Vec::new()), NOW + 18_000);
        let fx = rm.expire_nodes(NOW + 19_000);
        assert_eq!(node_state(&rm, &am.node), Some(NodeState::Lost));
        assert_eq!(node_state(&rm, other), Some(NodeState::Running));
        assert_eq!(launches(&fx)[0].node, other, "the next attempt goes elsewhere");
        // It may register again (it is not excluded any more).
        rm.register_node(node(&am.node, 8192), NOW + 20_000).0.unwrap();
        assert_eq!(node_state(&rm, &am.node), Some(NodeState::Running));
    }
}
