//! The YARN protocols as typed messages, named as Hadoop names their calls:
//!
//! Layer: yarn (above rpc; knows nothing of Spark).
//!
//! - ApplicationClientProtocol (Client → ResourceManager): [`GetNewApplication`],
//!   [`SubmitApplication`], [`GetApplicationReport`], [`KillApplication`],
//!   [`GetClusterNodes`], [`GetApplications`], [`GetNodeReports`] (the nodes by state),
//!   [`GetContainers`] (an attempt's containers, for the web UI),
//!   and sparkyard's [`GetContainerOutput`] (a container's stdout, which YARN serves
//!   through the NodeManager's log pages).
//! - ApplicationMasterProtocol (ApplicationMaster → ResourceManager):
//!   [`RegisterApplicationMaster`], [`Allocate`] (the heartbeat), [`FinishApplicationMaster`].
//! - ContainerManagementProtocol (ResourceManager/ApplicationMaster → NodeManager):
//!   [`StartContainer`], [`StopContainer`], [`ReadContainerOutput`].
//! - ResourceTracker (NodeManager → ResourceManager): [`RegisterNode`], [`NodeHeartbeat`]
//!   (every heartbeat interval: running containers and completed statuses not yet taken,
//!   answered with a [`NodeAction`]) and [`NodeStatusUpdate`] (completed containers, pushed
//!   as they complete).
//! - ResourceManagerAdministrationProtocol: [`RefreshNodes`] (graceful decommission and
//!   recommission of nodes) and [`ListNodes`].
//! - sparkyard's own admin calls to a running node ([`AdminRequest`]), served by the same
//!   client port: the live supervision tree (`sparkyard actors`), fault injection
//!   (`sparkyard chaos kill | partition | plan`) and the node admin (`sparkyard rmadmin`).
//!
//! Every message and reply derives serde: the client protocol ([`ClientProtocol`]) already
//! crosses TCP between `sparkyard submit` and `sparkyard node`, plugged into the generic
//! transport of `rpc::tcp`, and the others will when nodes are processes.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::acls::{ApplicationAccessType, Caller};
use super::records::*;
use crate::conf;
use crate::rpc::tcp::{self, LimitKeys, WireProtocol};
use crate::runtime::fault::Killed;
use crate::runtime::registry::ActorInfo;
use crate::runtime::{FaultPlan, KillMode, PartitionMode};

/// A failure answered by a YARN service, with Hadoop's exception names and texts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum YarnError {
    /// ApplicationNotFoundException.
    ApplicationNotFound(ApplicationId),
    /// ApplicationAttemptNotFoundException: an AM call for an attempt the RM no longer runs.
    ApplicationAttemptNotFound(ApplicationAttemptId),
    /// InvalidResourceRequestException (e.g. above the maximum allocation).
    InvalidResourceRequest(String),
    /// ApplicationMasterNotRegisteredException.
    NotRegistered(ApplicationAttemptId),
    /// AccessControlException: the caller may not do this (one line naming the user and the
    /// operation, in YARN's words).
    AccessControl(String),
    /// Any other refusal, with its message.
    Other(String),
}

impl fmt::Display for YarnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            YarnError::ApplicationNotFound(id) => write!(
                f,
                "Application with id '{id}' doesn't exist in RM. Please check that the job submission was successful."
            ),
            YarnError::ApplicationAttemptNotFound(id) => {
                write!(f, "Application attempt {id} doesn't exist in ApplicationMasterService cache.")
            }
            YarnError::InvalidResourceRequest(m) | YarnError::AccessControl(m) | YarnError::Other(m) => {
                f.write_str(m)
            }
            YarnError::NotRegistered(id) => write!(
                f,
                "Application Master is trying to allocate before registering for: {}",
                id.app
            ),
        }
    }
}

impl std::error::Error for YarnError {}

// ------------------------------------------------------------------ ApplicationClientProtocol

/// Asks the RM for a new application id.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "Result<NewApplication, YarnError>")]
pub struct GetNewApplication;

/// The answer to [`GetNewApplication`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewApplication {
    pub app_id: ApplicationId,
    /// The largest container the scheduler will grant.
    pub maximum_capability: Resource,
    pub num_node_managers: u32,
}

/// Submits an application: the RM accepts it (or rejects it, e.g. for an unknown queue)
/// and launches its first AM attempt.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "Result<(), YarnError>")]
pub struct SubmitApplication(pub ApplicationSubmissionContext);

/// An application's report. With `wait`, the RM holds the answer until the state or final
/// status differs from `wait.known` or `wait.max` passes, so a monitor sees a change as it
/// happens instead of at its next poll.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "Result<ApplicationReport, YarnError>")]
pub struct GetApplicationReport {
    pub app_id: ApplicationId,
    pub wait: Option<ReportWait>,
}

/// See [`GetApplicationReport`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportWait {
    pub known: (YarnApplicationState, FinalApplicationStatus),
    pub max: Duration,
}

/// Kills an application: its attempt's containers are stopped and it ends KILLED.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "Result<(), YarnError>")]
pub struct KillApplication {
    pub app_id: ApplicationId,
    pub diagnostics: String,
}

/// The running NodeManagers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "Vec<NodeReport>")]
pub struct GetClusterNodes;

/// The stdout of one of an application's containers, fetched from its NodeManager.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "Result<String, YarnError>")]
pub struct GetContainerOutput {
    pub container_id: ContainerId,
}

/// Every application the RM keeps (running ones and the last
/// `yarn.resourcemanager.max-completed-applications` finished ones) in one of `states` and
/// of one of `types` (YARN's GetApplicationsRequest; an empty list is no filter; types
/// compare without case), by id.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "Vec<ApplicationListing>")]
pub struct GetApplications {
    pub states: Vec<YarnApplicationState>,
    pub types: Vec<String>,
}

/// One application of [`GetApplications`]: its report, its progress (the AM's last
/// Allocate; 1 once it unregistered) and its attempts (GetApplicationAttempts).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ApplicationListing {
    pub report: ApplicationReport,
    pub progress: f32,
    pub attempts: Vec<ApplicationAttemptReport>,
}

/// YARN's ApplicationAttemptReport, as far as sparkyard keeps it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApplicationAttemptReport {
    pub attempt_id: ApplicationAttemptId,
    /// YARN's YarnApplicationAttemptState name (SCHEDULED, LAUNCHED, RUNNING, FINISHED,
    /// FAILED, KILLED...).
    pub state: String,
    pub am_container: Option<ContainerId>,
    pub tracking_url: Option<String>,
    pub host: Option<String>,
    pub rpc_port: Option<i32>,
    pub diagnostics: String,
}

/// The nodes the RM knows in one of `states` (YARN's GetClusterNodesRequest with node
/// states; an empty list is every state), lost and decommissioned ones included.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "Vec<NodeReport>")]
pub struct GetNodeReports {
    pub states: Vec<NodeState>,
}

/// The owner and the ACLs of an application (what ApplicationACLsManager keeps for it),
/// for the client port's access checks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "Result<ApplicationAcls, YarnError>")]
pub struct GetApplicationAcls {
    pub app_id: ApplicationId,
}

/// The answer to [`GetApplicationAcls`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApplicationAcls {
    pub owner: String,
    pub acls: std::collections::BTreeMap<ApplicationAccessType, String>,
}

// ------------------------------------------------------------------ the web app's queries (RMWebServices)

/// The cluster's application, resource, container and node counts (YARN's ClusterMetrics,
/// `/ws/v1/cluster/metrics`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "ClusterMetrics")]
pub struct GetClusterMetrics;

/// The answer to [`GetClusterMetrics`]. The application counts are over the applications
/// the RM keeps (running ones and the last `yarn.resourcemanager.max-completed-applications`
/// finished ones).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterMetrics {
    pub apps_submitted: u64,
    /// FINISHED ones.
    pub apps_completed: u64,
    /// NEW, NEW_SAVING, SUBMITTED and ACCEPTED ones.
    pub apps_pending: u64,
    pub apps_running: u64,
    pub apps_failed: u64,
    pub apps_killed: u64,
    /// The RUNNING and DECOMMISSIONING nodes' capability together.
    pub total: Resource,
    /// What their live containers hold.
    pub allocated: Resource,
    pub containers_allocated: u64,
    pub active_nodes: u64,
    pub decommissioning_nodes: u64,
    pub decommissioned_nodes: u64,
    pub lost_nodes: u64,
}

/// The capacity scheduler's queues under `root` (`/ws/v1/cluster/scheduler`), as configured
/// (`yarn.scheduler.capacity.root.queues`) with what each holds now.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "Vec<QueueInfo>")]
pub struct GetQueueInfo;

/// One leaf queue of [`GetQueueInfo`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct QueueInfo {
    pub name: String,
    /// Applications not yet in a final state.
    pub num_applications: u64,
    /// Applications whose AM may run (within the queue's AM limit).
    pub num_active_applications: u64,
    /// Applications waiting for room under the AM limit.
    pub num_pending_applications: u64,
    /// What the queue's live containers hold, and how many there are.
    pub used: Resource,
    pub num_containers: u64,
    /// What its ApplicationMasters hold, and the most they may
    /// (`yarn.scheduler.capacity.maximum-am-resource-percent` of the cluster).
    pub am_used: Resource,
    pub am_limit: Resource,
    pub max_am_resource_percent: f64,
}

// ------------------------------------------------------------------ the web UI's queries

/// The containers of one application attempt (YARN's GetContainersRequest), for the web
/// UI's application page: every container the RM granted the attempt, its AM container
/// first, running and completed, with its host and state; at most
/// [`MAX_CONTAINER_REPORTS`] per attempt (the first ones granted). Needs VIEW_APP.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "Result<Vec<ContainerReport>, YarnError>")]
pub struct GetContainers {
    pub attempt_id: ApplicationAttemptId,
}

/// The most container reports the RM keeps for one attempt.
pub const MAX_CONTAINER_REPORTS: usize = 10_000;

/// YARN's ContainerReport, as far as sparkyard keeps it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContainerReport {
    pub container_id: ContainerId,
    /// The NodeManager's host it was placed on.
    pub host: String,
    pub resource: Resource,
    pub priority: u32,
    /// RUNNING until it completes, then COMPLETE.
    pub state: ContainerState,
    /// Milliseconds since the Unix epoch.
    pub start_time: u64,
    /// 0 while it runs.
    pub finish_time: u64,
    /// Its exit status once complete.
    pub exit_status: Option<i32>,
    pub diagnostics: String,
}

// ------------------------------------------------------------------ ApplicationMasterProtocol

/// The AM registers its attempt (host, port and tracking URL of the driver in cluster mode).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "Result<RegisterResponse, YarnError>")]
pub struct RegisterApplicationMaster {
    pub attempt_id: ApplicationAttemptId,
    pub host: String,
    pub rpc_port: i32,
    pub tracking_url: String,
}

/// The answer to [`RegisterApplicationMaster`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegisterResponse {
    pub maximum_capability: Resource,
    pub queue: String,
}

/// The AM's heartbeat: its outstanding container requests (the whole table, as AMRMClient
/// keeps it), containers it releases, and its progress. The RM schedules what it can at
/// once and answers with the granted containers and the statuses of completed ones.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "Result<AllocateResponse, YarnError>")]
pub struct Allocate {
    pub attempt_id: ApplicationAttemptId,
    pub response_id: u64,
    pub progress: f32,
    pub asks: Vec<ContainerRequest>,
    pub releases: Vec<ContainerId>,
    /// Hosts the AM does not want containers on (updateBlacklist).
    pub blacklist: Vec<String>,
}

/// The answer to [`Allocate`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AllocateResponse {
    pub response_id: u64,
    pub allocated: Vec<Container>,
    pub completed: Vec<ContainerStatus>,
    pub num_cluster_nodes: u32,
    pub available: Resource,
    /// Nodes whose state changed since the attempt's last Allocate (YARN's updatedNodes):
    /// a node put into DECOMMISSIONING, decommissioned, or running again.
    #[serde(default)]
    pub updated_nodes: Vec<NodeReport>,
}

/// The AM unregisters with its attempt's final status and diagnostics.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "Result<(), YarnError>")]
pub struct FinishApplicationMaster {
    pub attempt_id: ApplicationAttemptId,
    pub final_status: FinalApplicationStatus,
    pub diagnostics: String,
    pub tracking_url: String,
}

// ------------------------------------------------------------------ ResourceManagerAdministrationProtocol

/// YARN's `rmadmin -refreshNodes -g <timeout>` with the hosts named instead of an exclude
/// file: each host of `decommission` is put into graceful decommission (DECOMMISSIONING: no
/// new container goes there; once its containers and the applications that ran there are
/// done, or after `graceful_timeout` — else
/// `yarn.resourcemanager.nodemanager-graceful-decommission-timeout-secs` — with what still
/// runs killed, it is DECOMMISSIONED); each host of `recommission` runs again. Running
/// applications hear of each change in their next Allocate answer. A host the cluster does
/// not have is refused. Answers every node with its state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "Result<Vec<NodeReport>, YarnError>")]
pub struct RefreshNodes {
    pub decommission: Vec<String>,
    pub recommission: Vec<String>,
    pub graceful_timeout: Option<Duration>,
}

/// Every node the RM knows, decommissioned ones included, with its state (`yarn node
/// -list -all`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "Vec<NodeReport>")]
pub struct ListNodes;

// ------------------------------------------------------------------ ContainerManagementProtocol

/// Starts a container on a NodeManager from its launch context.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "Result<(), YarnError>")]
pub struct StartContainer {
    pub container: Container,
    pub launch: ContainerLaunchContext,
}

/// Who asked a container to stop, which decides its exit status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum StopRequester {
    /// The application's AM released or killed it (exit status -105).
    ApplicationMaster,
    /// The RM killed it, e.g. for a killed application (-106).
    ResourceManager,
    /// The application finished while it ran (-107).
    AppCompletion,
}

/// Stops a container; it completes with the exit status of its requester.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "Result<(), YarnError>")]
pub struct StopContainer {
    pub container_id: ContainerId,
    pub requester: StopRequester,
}

/// Reads a container's stdout (finished or running).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "Result<String, YarnError>")]
pub struct ReadContainerOutput {
    pub container_id: ContainerId,
}

// ------------------------------------------------------------------ ResourceTracker

/// The version of the ResourceTracker conversation (registration, node heartbeats, resync)
/// a NodeManager speaks; the RM refuses a NodeManager registering with another. Version 1:
/// [`RegisterNode`] with version and cluster id, [`NodeHeartbeat`].
pub const NODE_PROTOCOL_VERSION: u32 = 1;

/// A NodeManager reports containers that completed (pushed as they complete, rather than
/// waiting for the next node heartbeat, so an AM hears of them in its next Allocate).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "()")]
pub struct NodeStatusUpdate {
    pub host: String,
    pub completed: Vec<ContainerStatus>,
}

/// A NodeManager's heartbeat (Hadoop's NodeHeartbeatRequest with its NodeStatus), every
/// `yarn.resourcemanager.nodemanagers.heartbeat-interval-ms` once registered: the response id
/// of the last answer (0 after a registration), the containers running on the node and the
/// completed statuses the RM has not taken yet. The RM answers [`NodeHeartbeatResponse`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "NodeHeartbeatResponse")]
pub struct NodeHeartbeat {
    pub host: String,
    pub response_id: u64,
    pub running: Vec<ContainerId>,
    pub completed: Vec<ContainerStatus>,
}

/// What the RM tells a NodeManager to do (YARN's NodeAction).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum NodeAction {
    /// Carry on.
    #[default]
    Normal,
    /// Register again: the RM does not know the node (it expired it, or restarted), or the
    /// heartbeat's response id is out of step.
    Resync,
    /// Stop: the node is decommissioned (or was refused).
    Shutdown,
}

impl fmt::Display for NodeAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NodeAction::Normal => "NORMAL",
            NodeAction::Resync => "RESYNC",
            NodeAction::Shutdown => "SHUTDOWN",
        })
    }
}

/// A container the RM wants stopped on the node, and who asks (its exit status).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContainerCleanup {
    pub container_id: ContainerId,
    pub requester: StopRequester,
}

/// The answer to [`NodeHeartbeat`] (Hadoop's NodeHeartbeatResponse): the next response id,
/// the node action with its diagnostics, and the containers to clean up (ones the node
/// reports running that are not the RM's there any more). A NORMAL answer means the RM took
/// every completed status the heartbeat carried.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeHeartbeatResponse {
    pub response_id: u64,
    pub action: NodeAction,
    pub diagnostics: String,
    pub containers_to_cleanup: Vec<ContainerCleanup>,
}

// ------------------------------------------------------------------ the client protocol on the wire

/// One call on the client port: who makes it (simple authentication's claim: the user and,
/// for `--proxy-user`, the real user behind it) and the call itself. Every call carries its
/// caller, so the node can decide who may do what (see `super::acls`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClientCall {
    pub caller: Caller,
    pub request: ClientRequest,
}

impl ClientCall {
    /// `request`, made by `caller`.
    pub fn new(caller: Caller, request: ClientRequest) -> ClientCall {
        ClientCall { caller, request }
    }

    /// `request`, made by whom this process acts as ([`Caller::current`]).
    pub fn current(request: ClientRequest) -> ClientCall {
        ClientCall::new(Caller::current(), request)
    }
}

/// One ApplicationClientProtocol call, as it travels between `sparkyard submit` and a
/// running `sparkyard node`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ClientRequest {
    GetNewApplication(GetNewApplication),
    SubmitApplication(SubmitApplication),
    GetApplicationReport(GetApplicationReport),
    KillApplication(KillApplication),
    GetClusterNodes(GetClusterNodes),
    GetContainerOutput(GetContainerOutput),
    /// One of sparkyard's admin calls (not part of YARN's protocol).
    Admin(AdminRequest),
    GetApplications(GetApplications),
    GetNodeReports(GetNodeReports),
    GetContainers(GetContainers),
}

/// The answer to a [`ClientRequest`], variant for variant. (A report is much larger than the
/// other answers; they are short-lived, so it is not boxed.)
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ClientResponse {
    NewApplication(Result<NewApplication, YarnError>),
    SubmitApplication(Result<(), YarnError>),
    ApplicationReport(Result<ApplicationReport, YarnError>),
    KillApplication(Result<(), YarnError>),
    ClusterNodes(Vec<NodeReport>),
    ContainerOutput(Result<String, YarnError>),
    Admin(AdminResponse),
    /// The request could not be served at all (the RM did not answer, a bad request).
    Failed(String),
    /// The caller may not make this call at all (a proxy user its real user may not
    /// impersonate): one line, final (not retried).
    Denied(String),
    Applications(Vec<ApplicationListing>),
    NodeReports(Vec<NodeReport>),
    Containers(Result<Vec<ContainerReport>, YarnError>),
}

impl ClientRequest {
    /// The call's name, for logs.
    pub fn name(&self) -> &'static str {
        match self {
            ClientRequest::GetNewApplication(_) => "GetNewApplication",
            ClientRequest::SubmitApplication(_) => "SubmitApplication",
            ClientRequest::GetApplicationReport(_) => "GetApplicationReport",
            ClientRequest::KillApplication(_) => "KillApplication",
            ClientRequest::GetClusterNodes(_) => "GetClusterNodes",
            ClientRequest::GetContainerOutput(_) => "GetContainerOutput",
            ClientRequest::Admin(a) => a.name(),
            ClientRequest::GetApplications(_) => "GetApplications",
            ClientRequest::GetNodeReports(_) => "GetClusterNodes",
            ClientRequest::GetContainers(_) => "GetContainers",
        }
    }
}

/// ApplicationClientProtocol (with sparkyard's admin calls) as the TCP transport carries it
/// between `sparkyard submit` (or `sparkyard actors`, `chaos`, `rmadmin`) and the node's
/// client port: the greeting's version, and how errors and records name the server, the
/// calls and the port's `yarn.sparkyard.client-port.*` limits.
pub struct ClientProtocol;

impl WireProtocol for ClientProtocol {
    type Request = ClientCall;
    type Response = ClientResponse;
    /// Version 2 added sparkyard's admin calls (`sparkyard actors`, `sparkyard chaos`);
    /// version 3 the caller of every call ([`ClientCall`]), the application's ACLs in its
    /// submission context, and `sparkyard chaos heal`; version 4 GetApplications and the
    /// nodes by state (`sparkyard application -list`, `sparkyard node -list`); version 5
    /// GetContainers (the web UI's application page).
    const VERSION: u8 = 5;
    const SERVER: &'static str = "ResourceManager";
    const CONNECT_HINT: &'static str = "is 'sparkyard node' running?";
    const NAME: &'static str = "client protocol";
    const LIMIT_KEYS: LimitKeys = LimitKeys {
        idle_timeout: conf::CLIENT_PORT_IDLE_TIMEOUT.name(),
        max_frame: conf::CLIENT_PORT_MAX_FRAME_SIZE.name(),
        max_buffered: conf::CLIENT_PORT_MAX_BUFFERED.name(),
    };

    fn request_name(call: &ClientCall) -> &'static str {
        call.request.name()
    }

    fn failure(reason: String) -> ClientResponse {
        ClientResponse::Failed(reason)
    }
}

/// A client's connection to the node's client port.
pub type ClientConnection = tcp::ClientConnection<ClientProtocol>;

// ------------------------------------------------------------------ the node's admin calls

/// A call of `sparkyard actors` or `sparkyard chaos` to a running node. Targets are actor
/// paths or globs (`*` matches anything, `/` included); `by` names who asked, for the
/// `fault_injected` and `partition_started` records.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum AdminRequest {
    /// The live supervision tree, sorted by path; with `app`, only the subtrees of that
    /// application's containers.
    ListActors { app: Option<ApplicationId> },
    /// Kill every running actor matching `target` now, or (with `after`) once that much time
    /// has passed on the node's clock.
    Kill {
        target: String,
        mode: KillMode,
        after: Option<Duration>,
        by: String,
    },
    /// Drop or delay every message to and from actors matching `target` for `duration`.
    Partition {
        target: String,
        mode: PartitionMode,
        duration: Duration,
        by: String,
    },
    /// Carry out a fault plan, starting now.
    RunPlan { plan: FaultPlan, by: String },
    /// End the partitions in force now: those whose target is `target`, or every one.
    Heal { target: Option<String>, by: String },
    /// Send a real signal (`KILL`, `TERM`, `STOP`, `CONT`) to container processes or to a
    /// NodeManager's process: served by every process that runs container processes (and by
    /// the NodeManager process named).
    Signal {
        target: SignalTarget,
        signal: String,
        by: String,
    },
    /// `sparkyard rmadmin decommission | recommission`: served by the ResourceManager.
    RefreshNodes(RefreshNodes),
    /// `sparkyard rmadmin nodes`: served by the ResourceManager.
    ListNodes,
}

impl AdminRequest {
    /// The call's name, for logs.
    pub fn name(&self) -> &'static str {
        match self {
            AdminRequest::ListActors { .. } => "ListActors",
            AdminRequest::Kill { .. } => "KillActors",
            AdminRequest::Partition { .. } => "PartitionActors",
            AdminRequest::RunPlan { .. } => "RunFaultPlan",
            AdminRequest::Heal { .. } => "HealPartitions",
            AdminRequest::Signal { .. } => "SignalProcesses",
            AdminRequest::RefreshNodes(_) => "RefreshNodes",
            AdminRequest::ListNodes => "ListNodes",
        }
    }

    /// Served by the ResourceManager (the node admin), not by the node's cluster.
    pub fn is_rm_admin(&self) -> bool {
        matches!(self, AdminRequest::RefreshNodes(_) | AdminRequest::ListNodes)
    }
}

/// The answer to an [`AdminRequest`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum AdminResponse {
    /// The actors asked for, sorted by path.
    Actors(Vec<ActorInfo>),
    /// What a kill reached, now.
    Killed(Vec<Killed>),
    /// A delayed kill is scheduled; `matching` is what the target matches now (what it
    /// matches when the time comes is what gets killed).
    KillScheduled {
        after: Duration,
        matching: Vec<ActorInfo>,
    },
    /// A partition is in force over `matching` (and any actor matching later) for `duration`.
    Partitioned {
        duration: Duration,
        matching: Vec<ActorInfo>,
    },
    /// The plan is running, its kills in firing order.
    PlanStarted(FaultPlan),
    /// The nodes with their states (after a refresh, or listed).
    Nodes(Vec<NodeReport>),
    /// The processes a signal was sent to.
    Signalled(Vec<Signalled>),
    /// The partitions a heal ended (their targets).
    Healed(Vec<String>),
    /// Not done: a malformed pattern, a target that matches no running actor, an empty plan;
    /// one line that names the pattern.
    Refused(String),
}

/// Which processes a signal goes to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SignalTarget {
    /// The container processes whose container id matches the glob (`*` matches anything).
    Containers(String),
    /// The process of the NodeManager of this host (one started with `sparkyard nodemanager`).
    NodeManager(String),
}

/// One process a signal was sent to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Signalled {
    /// `container_…` or `NodeManager <host>`.
    pub what: String,
    pub pid: u32,
}

/// A NodeManager (re-)registers (Hadoop's RegisterNodeManagerRequest with its
/// NMContainerStatuses): its capability, the containers running on it, and the completed
/// statuses the RM has not taken yet. The RM completes as lost every container it placed on
/// the node that the node does not name, and answers their ids. It refuses (an error of one
/// line naming both values; YARN's SHUTDOWN) a NodeManager whose `version` is not
/// [`NODE_PROTOCOL_VERSION`] or whose `cluster_id` is not its `yarn.resourcemanager.cluster-id`,
/// and a decommissioned node.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "Result<NodeRegistration, YarnError>")]
pub struct RegisterNode {
    pub host: String,
    pub rack: String,
    pub capability: Resource,
    pub running: Vec<ContainerId>,
    pub completed: Vec<ContainerStatus>,
    /// The ResourceTracker version the NodeManager speaks ([`NODE_PROTOCOL_VERSION`]).
    #[serde(default)]
    pub version: u32,
    /// The cluster it joins (its `yarn.resourcemanager.cluster-id`).
    #[serde(default)]
    pub cluster_id: String,
}

/// The answer to [`RegisterNode`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeRegistration {
    /// Containers of this node completed as lost: the node must not start them.
    pub lost: Vec<ContainerId>,
}

/// A restarted ResourceManager asks its NodeManagers to register again (NodeAction.RESYNC).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "()")]
pub struct Resync;

// ------------------------------------------------------------------ protocols

crate::protocol! {
    /// ApplicationClientProtocol: what a client (spark-submit's YARN Client, `sparkyard
    /// status`, the client port) asks the ResourceManager.
    remote pub ApplicationClientProtocol {
        GetNewApplication,
        SubmitApplication,
        GetApplicationReport,
        KillApplication,
        GetClusterNodes,
        GetContainerOutput,
        GetApplicationAcls,
        GetApplications,
        GetNodeReports,
        // The web app's queries.
        GetClusterMetrics,
        GetQueueInfo,
        GetContainers,
    }
}

crate::protocol! {
    /// ApplicationMasterProtocol: what an ApplicationMaster asks the ResourceManager.
    remote pub ApplicationMasterProtocol { RegisterApplicationMaster, Allocate, FinishApplicationMaster }
}

crate::protocol! {
    /// ResourceTracker: what a NodeManager tells the ResourceManager (registration,
    /// re-registration after a resync, node heartbeats, completed containers).
    remote pub ResourceTracker { RegisterNode, NodeHeartbeat, NodeStatusUpdate }
}

crate::protocol! {
    /// ResourceManagerAdministrationProtocol: `sparkyard rmadmin` (refreshNodes, the node
    /// list).
    remote pub ResourceManagerAdministrationProtocol { RefreshNodes, ListNodes }
}

crate::protocol! {
    /// ContainerManagementProtocol: what the ResourceManager (an AM's container) and an
    /// ApplicationMaster (its executors) ask a NodeManager, plus reading a container's output.
    remote pub ContainerManagementProtocol { StartContainer, StopContainer, ReadContainerOutput }
}

crate::protocol! {
    /// The ResourceManager's commands to a NodeManager outside a heartbeat answer (Hadoop
    /// carries them on heartbeat responses only): RESYNC at once after an RM restart or a
    /// recommission, so the node need not wait for its next heartbeat.
    remote pub NodeActionProtocol { Resync }
}
