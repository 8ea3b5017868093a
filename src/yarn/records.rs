//! YARN's records, as Hadoop names them: ids (application, attempt, container), resources,
//! container requests, containers and their statuses, application states and reports, and
//! the launch and submission contexts. Every record derives serde, since each crosses a
//! process boundary in the real system.
//!
//! Layer: yarn (above rpc; knows nothing of Spark).

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// `application_<clusterTimestamp>_<id:04>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ApplicationId {
    pub cluster_timestamp: u64,
    pub id: u32,
}

/// `appattempt_<clusterTimestamp>_<app:04>_<attempt:06>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ApplicationAttemptId {
    pub app: ApplicationId,
    pub attempt: u32,
}

/// `container_<clusterTimestamp>_<app:04>_<attempt:02>_<id:06>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ContainerId {
    pub attempt: ApplicationAttemptId,
    pub id: u64,
}

impl fmt::Display for ApplicationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "application_{}_{:04}", self.cluster_timestamp, self.id)
    }
}

impl fmt::Display for ApplicationAttemptId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "appattempt_{}_{:04}_{:06}",
            self.app.cluster_timestamp, self.app.id, self.attempt
        )
    }
}

impl fmt::Display for ContainerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "container_{}_{:04}_{:02}_{:06}",
            self.attempt.app.cluster_timestamp, self.attempt.app.id, self.attempt.attempt, self.id
        )
    }
}

fn numbers(text: &str, prefix: &str, count: usize) -> Option<Vec<u64>> {
    let rest = text.strip_prefix(prefix)?;
    let parts: Vec<&str> = rest.split('_').collect();
    if parts.len() != count
        || parts
            .iter()
            .any(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()))
    {
        return None;
    }
    parts.iter().map(|p| p.parse().ok()).collect()
}

impl FromStr for ApplicationId {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match numbers(s, "application_", 2).as_deref() {
            Some(&[ts, id]) if id <= u32::MAX as u64 => Ok(ApplicationId {
                cluster_timestamp: ts,
                id: id as u32,
            }),
            _ => Err(format!(
                "invalid application id '{s}' (expected application_<clusterTimestamp>_<number>)"
            )),
        }
    }
}

impl FromStr for ContainerId {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match numbers(s, "container_", 4).as_deref() {
            Some(&[ts, app, attempt, id]) if app <= u32::MAX as u64 && attempt <= u32::MAX as u64 => {
                Ok(ContainerId {
                    attempt: ApplicationAttemptId {
                        app: ApplicationId {
                            cluster_timestamp: ts,
                            id: app as u32,
                        },
                        attempt: attempt as u32,
                    },
                    id,
                })
            }
            _ => Err(format!(
                "invalid container id '{s}' (expected container_<clusterTimestamp>_<app>_<attempt>_<number>)"
            )),
        }
    }
}

/// Memory and virtual cores, as a container's capability.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Resource {
    pub memory_mb: u64,
    pub vcores: u32,
}

impl Resource {
    pub fn new(memory_mb: u64, vcores: u32) -> Resource {
        Resource { memory_mb, vcores }
    }
    /// Whether `other` fits in this one.
    pub fn fits(&self, other: &Resource) -> bool {
        other.memory_mb <= self.memory_mb && other.vcores <= self.vcores
    }
    pub fn minus(&self, other: &Resource) -> Resource {
        Resource::new(
            self.memory_mb.saturating_sub(other.memory_mb),
            self.vcores.saturating_sub(other.vcores),
        )
    }
    pub fn plus(&self, other: &Resource) -> Resource {
        Resource::new(
            self.memory_mb.saturating_add(other.memory_mb),
            self.vcores.saturating_add(other.vcores),
        )
    }
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<memory:{}, vCores:{}>", self.memory_mb, self.vcores)
    }
}

/// What an ApplicationMaster asks for (AMRMClient.ContainerRequest): one container of
/// `resource`, preferably on one of `nodes` or `racks`; with `relax_locality` it may go
/// anywhere.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContainerRequest {
    pub resource: Resource,
    pub nodes: Vec<String>,
    pub racks: Vec<String>,
    /// Spark uses the resource profile id as the priority.
    pub priority: u32,
    pub relax_locality: bool,
}

impl ContainerRequest {
    /// A request with no locality preference.
    pub fn any(resource: Resource, priority: u32) -> ContainerRequest {
        ContainerRequest {
            resource,
            nodes: Vec::new(),
            racks: Vec::new(),
            priority,
            relax_locality: true,
        }
    }
}

/// A container granted to an application.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Container {
    pub id: ContainerId,
    /// The NodeManager's host.
    pub node: String,
    pub rack: String,
    pub resource: Resource,
    pub priority: u32,
}

/// YARN's ContainerState.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ContainerState {
    New,
    Running,
    Complete,
}

/// A container's state and, once complete, its exit status and diagnostics.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContainerStatus {
    pub container_id: ContainerId,
    pub state: ContainerState,
    pub exit_status: i32,
    pub diagnostics: String,
}

/// YARN's ContainerExitStatus values (and 0 for a clean exit).
pub mod exit_status {
    pub const SUCCESS: i32 = 0;
    pub const INVALID: i32 = -1000;
    pub const ABORTED: i32 = -100;
    pub const DISKS_FAILED: i32 = -101;
    pub const PREEMPTED: i32 = -102;
    pub const KILLED_EXCEEDED_VMEM: i32 = -103;
    pub const KILLED_EXCEEDED_PMEM: i32 = -104;
    pub const KILLED_BY_APPMASTER: i32 = -105;
    pub const KILLED_BY_RESOURCEMANAGER: i32 = -106;
    pub const KILLED_AFTER_APP_COMPLETION: i32 = -107;
}

/// YARN's YarnApplicationState.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum YarnApplicationState {
    New,
    NewSaving,
    Submitted,
    Accepted,
    Running,
    Finished,
    Failed,
    Killed,
}

impl YarnApplicationState {
    /// Every state, in YARN's order (its `values()`, the order EnumSet prints them in).
    pub const ALL: [YarnApplicationState; 8] = [
        YarnApplicationState::New,
        YarnApplicationState::NewSaving,
        YarnApplicationState::Submitted,
        YarnApplicationState::Accepted,
        YarnApplicationState::Running,
        YarnApplicationState::Finished,
        YarnApplicationState::Failed,
        YarnApplicationState::Killed,
    ];

    /// FINISHED, FAILED or KILLED: the application will not change any more.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            YarnApplicationState::Finished | YarnApplicationState::Failed | YarnApplicationState::Killed
        )
    }
}

impl fmt::Display for YarnApplicationState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            YarnApplicationState::New => "NEW",
            YarnApplicationState::NewSaving => "NEW_SAVING",
            YarnApplicationState::Submitted => "SUBMITTED",
            YarnApplicationState::Accepted => "ACCEPTED",
            YarnApplicationState::Running => "RUNNING",
            YarnApplicationState::Finished => "FINISHED",
            YarnApplicationState::Failed => "FAILED",
            YarnApplicationState::Killed => "KILLED",
        })
    }
}

/// YARN's FinalApplicationStatus.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FinalApplicationStatus {
    Undefined,
    Succeeded,
    Failed,
    Killed,
    Ended,
}

impl fmt::Display for FinalApplicationStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FinalApplicationStatus::Undefined => "UNDEFINED",
            FinalApplicationStatus::Succeeded => "SUCCEEDED",
            FinalApplicationStatus::Failed => "FAILED",
            FinalApplicationStatus::Killed => "KILLED",
            FinalApplicationStatus::Ended => "ENDED",
        })
    }
}

/// What the ResourceManager says about an application (ApplicationReport).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ApplicationReport {
    pub app_id: ApplicationId,
    /// The current (latest) attempt, if one has started.
    pub current_attempt: Option<ApplicationAttemptId>,
    pub name: String,
    pub queue: String,
    pub user: String,
    pub app_type: String,
    /// The ApplicationMaster's host once it registered.
    pub host: Option<String>,
    pub rpc_port: Option<i32>,
    pub tracking_url: Option<String>,
    pub state: YarnApplicationState,
    pub final_status: FinalApplicationStatus,
    pub diagnostics: String,
    /// Milliseconds since the Unix epoch.
    pub start_time: u64,
    /// 0 while running.
    pub finish_time: u64,
    /// The AM container of the current attempt.
    pub am_container: Option<ContainerId>,
    /// The current attempt's progress, 0 to 1: what its AM said in its last Allocate, 1
    /// once it unregistered (ApplicationReport.getProgress).
    #[serde(default)]
    pub progress: f32,
}

/// How to start a container (ContainerLaunchContext). The command is an argument vector, as
/// ExecutorRunnable.prepareCommand builds it; the NodeManager starts it through the launcher
/// registry of its node (`super::launcher`), where the binary's launcher parses it with the
/// binary's own parser. Local resources are files made available to the container, by name (the
/// application's configuration travels this way, as Spark's `__spark_conf__` does).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContainerLaunchContext {
    pub command: Vec<String>,
    pub environment: BTreeMap<String, String>,
    pub local_resources: BTreeMap<String, String>,
    /// The application's credentials (YARN's `tokens`): its secret when `spark.authenticate`
    /// is on. Never printed.
    #[serde(default)]
    pub tokens: Option<Credentials>,
}

/// An application's secret as a launch context carries it: printed as redacted.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Credentials(pub String);

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(crate::conf::REDACTION_REPLACEMENT_TEXT)
    }
}

/// What the Client hands the ResourceManager (ApplicationSubmissionContext).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApplicationSubmissionContext {
    pub app_id: ApplicationId,
    pub name: String,
    pub queue: String,
    pub app_type: String,
    pub user: String,
    /// `spark.yarn.maxAppAttempts`, if set; the RM caps it at its own maximum.
    pub max_app_attempts: Option<u32>,
    pub tags: Vec<String>,
    /// The AM container's capability.
    pub resource: Resource,
    pub am_container_spec: ContainerLaunchContext,
    /// The application's VIEW_APP and MODIFY_APP ACLs (ContainerLaunchContext's
    /// applicationACLs in YARN), as Hadoop's ACL strings; none: only the owner and admins.
    #[serde(default)]
    pub acls: BTreeMap<super::acls::ApplicationAccessType, String>,
}

/// A NodeManager as the ResourceManager knows it (NodeReport).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeReport {
    pub host: String,
    pub rack: String,
    pub capability: Resource,
    pub used: Resource,
    pub num_containers: u32,
    #[serde(default)]
    pub state: NodeState,
}

/// YARN's NodeState, as far as sparkyard's nodes go: running, being decommissioned
/// gracefully (no new containers; the running ones drain), decommissioned, or lost (silent
/// beyond `yarn.nm.liveness-monitor.expiry-interval-ms`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum NodeState {
    #[default]
    Running,
    Decommissioning,
    Decommissioned,
    Lost,
}

impl fmt::Display for NodeState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NodeState::Running => "RUNNING",
            NodeState::Decommissioning => "DECOMMISSIONING",
            NodeState::Decommissioned => "DECOMMISSIONED",
            NodeState::Lost => "LOST",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_format_and_parse_as_yarn_does() {
        let app = ApplicationId {
            cluster_timestamp: 1700000000000,
            id: 1,
        };
        let attempt = ApplicationAttemptId { app, attempt: 2 };
        let container = ContainerId { attempt, id: 7 };
        assert_eq!(app.to_string(), "application_1700000000000_0001");
        assert_eq!(attempt.to_string(), "appattempt_1700000000000_0001_000002");
        assert_eq!(container.to_string(), "container_1700000000000_0001_02_000007");
        assert_eq!("application_1700000000000_0001".parse::<ApplicationId>(), Ok(app));
        assert_eq!(
            "container_1700000000000_0001_02_000007".parse::<ContainerId>(),
            Ok(container)
        );
        assert_eq!(
            ApplicationId {
                cluster_timestamp: 5,
                id: 12345
            }
            .to_string(),
            "application_5_12345"
        );
        assert!("application_x_1".parse::<ApplicationId>().is_err());
        assert!("application_1".parse::<ApplicationId>().is_err());
        assert!("container_1_2_3".parse::<ContainerId>().is_err());
    }

    #[test]
    fn resources() {
        let node = Resource::new(8192, 8);
        let ask = Resource::new(1408, 1);
        assert!(node.fits(&ask));
        assert_eq!(node.minus(&ask), Resource::new(6784, 7));
        assert!(!ask.fits(&node));
        assert_eq!(ask.to_string(), "<memory:1408, vCores:1>");
        assert_eq!(YarnApplicationState::NewSaving.to_string(), "NEW_SAVING");
        assert!(YarnApplicationState::Killed.is_final());
    }
}
