//! ClientRMService's dispatch: one ApplicationClientProtocol call ([`ClientRequest`]) served
//! by the local ResourceManager, and sparkyard's admin calls ([`AdminRequest`]) served by
//! the node's cluster. The embedded cluster's Client calls [`serve`] directly; the node's TCP
//! listener calls [`serve`] or [`serve_admin`] for each request that arrives over the wire.
//!
//! Layer: yarn (above rpc; knows nothing of Spark).
//!
//! The admin calls are `sparkyard actors` and `sparkyard chaos`: the live supervision tree
//! from the registry, and kills, partitions and fault plans through the cluster's fault
//! injection. A pattern that is malformed, or that matches no running actor, is refused
//! with one line naming it: a control never does nothing silently.
//!
//! Values that come over the wire are bounded before they are used: a report waits at most
//! [`MAX_REPORT_WAIT`] for a change (a client that asks for longer gets its answer then and
//! asks again); a delayed kill, a partition, a partition's delay and a planned kill's moment
//! are at most [`MAX_ADMIN_DELAY`] away, a plan has at most [`MAX_PLAN_FAULTS`] kills and a
//! kill fires after at most [`MAX_PLAN_TASKS`] tasks; beyond that the call is refused with
//! one line naming the value and the limit.

use std::time::Duration;

use super::acls::ApplicationAccessType::{self, ModifyApp, ViewApp};
use super::acls::{audit_failure, AclsManager};
use super::container_process::ContainerProcesses;
use super::protocol::{
    AdminRequest, AdminResponse, ApplicationListing, ClientCall, ClientRequest, ClientResponse,
    GetApplicationAcls, ListNodes, SignalTarget, Signalled, YarnError,
};
use super::records::{ApplicationId, ContainerId};
use crate::rpc::EndpointRef;
use crate::runtime::fault::Trigger;
use crate::runtime::registry::ActorInfo;
use crate::runtime::{ActorPath, Cluster, FaultError, PartitionMode, PathGlob};
use crate::yarn::protocol::{ApplicationClientProtocol, ResourceManagerAdministrationProtocol};

/// The longest a report waits for a change of state before it is answered anyway.
pub const MAX_REPORT_WAIT: Duration = Duration::from_secs(60);
/// The furthest ahead an admin call may schedule anything (a kill, a partition's end).
pub const MAX_ADMIN_DELAY: Duration = Duration::from_secs(24 * 3600);
/// The most kills one fault plan may hold.
pub const MAX_PLAN_FAULTS: usize = 1000;
/// The most finished tasks a planned kill may wait for.
pub const MAX_PLAN_TASKS: u64 = 1_000_000_000;

/// What an application call needs of its caller: the access, the operation as
/// RMAuditLogger names it, and the application.
fn needed_access(request: &ClientRequest) -> Option<(ApplicationAccessType, &'static str, ApplicationId)> {
    match request {
        ClientRequest::KillApplication(m) => Some((ModifyApp, "Kill Application Request", m.app_id)),
        ClientRequest::GetApplicationReport(m) => Some((ViewApp, "Get Application Report", m.app_id)),
        ClientRequest::GetContainerOutput(m) => {
            Some((ViewApp, "Get Container Output", m.container_id.attempt.app))
        }
        ClientRequest::GetContainers(m) => Some((ViewApp, "Get Containers", m.attempt_id.app)),
        _ => None,
    }
}

/// ApplicationACLsManager's decision on `call`: `Ok` when its caller may make it (or the
/// application is unknown: the call itself says so), else YARN's AccessControlException
/// text, with a WARN audit record.
async fn check_access(
    rm: &EndpointRef<ApplicationClientProtocol>,
    call: &ClientCall,
    acls: &AclsManager,
    timeout: Duration,
) -> Result<(), Result<ClientResponse, String>> {
    let Some((access, operation, app_id)) = needed_access(&call.request).filter(|_| acls.enabled()) else {
        return Ok(());
    };
    let entry = match rm.ask(GetApplicationAcls { app_id }, timeout).await {
        Ok(Ok(entry)) => entry,
        Ok(Err(_)) => return Ok(()),
        Err(e) => return Err(Err(e.to_string())),
    };
    let user = call.caller.user.as_str();
    if acls.check_access(user, access, &entry.owner, &entry.acls) {
        return Ok(());
    }
    let target = match &call.request {
        ClientRequest::GetContainerOutput(m) => m.container_id.to_string(),
        ClientRequest::GetContainers(m) => m.attempt_id.to_string(),
        _ => app_id.to_string(),
    };
    let why = AclsManager::app_refusal(user, access, &target);
    audit_failure(
        user,
        operation,
        "ClientRMService",
        &format!("User doesn't have permissions to {access}"),
        Some(&app_id.to_string()),
    );
    let denied = YarnError::AccessControl(why);
    Err(Ok(match call.request {
        ClientRequest::KillApplication(_) => ClientResponse::KillApplication(Err(denied)),
        ClientRequest::GetContainerOutput(_) => ClientResponse::ContainerOutput(Err(denied)),
        ClientRequest::GetContainers(_) => ClientResponse::Containers(Err(denied)),
        _ => ClientResponse::ApplicationReport(Err(denied)),
    }))
}

/// Serves `call` with the ResourceManager behind `rm`, waiting at most `timeout` (plus the
/// request's own report wait), after `acls` allowed its caller: killing an application
/// needs MODIFY_APP, its report and its containers' output VIEW_APP. A submission's owner is
/// its caller (as YARN's RM takes the submitter from the connection, not the context).
/// Admin calls need the node's cluster ([`serve_admin`]); here they are refused.
pub async fn serve(
    rm: &EndpointRef<ApplicationClientProtocol>,
    call: ClientCall,
    acls: &AclsManager,
    timeout: Duration,
) -> ClientResponse {
    let failed = |e: crate::rpc::AskError| ClientResponse::Failed(e.to_string());
    match check_access(rm, &call, acls, timeout).await {
        Ok(()) => {}
        Err(Ok(refusal)) => return refusal,
        Err(Err(e)) => return ClientResponse::Failed(e),
    }
    let ClientCall { caller, request } = call;
    match request {
        ClientRequest::GetNewApplication(m) => match rm.ask(m, timeout).await {
            Ok(r) => ClientResponse::NewApplication(r),
            Err(e) => failed(e),
        },
        ClientRequest::SubmitApplication(mut m) => {
            m.0.user = caller.user;
            match rm.ask(m, timeout).await {
                Ok(r) => ClientResponse::SubmitApplication(r),
                Err(e) => failed(e),
            }
        }
        ClientRequest::GetApplicationReport(mut m) => {
            if let Some(w) = &mut m.wait {
                w.max = w.max.min(MAX_REPORT_WAIT);
            }
            let wait = m.wait.map(|w| w.max).unwrap_or(Duration::ZERO);
            match rm.ask(m, timeout.saturating_add(wait)).await {
                Ok(r) => ClientResponse::ApplicationReport(r),
                Err(e) => failed(e),
            }
        }
        ClientRequest::KillApplication(m) => match rm.ask(m, timeout).await {
            Ok(r) => ClientResponse::KillApplication(r),
            Err(e) => failed(e),
        },
        ClientRequest::GetClusterNodes(m) => match rm.ask(m, timeout).await {
            Ok(r) => ClientResponse::ClusterNodes(r),
            Err(e) => failed(e),
        },
        ClientRequest::GetContainerOutput(m) => match rm.ask(m, timeout).await {
            Ok(r) => ClientResponse::ContainerOutput(r),
            Err(e) => failed(e),
        },
        ClientRequest::Admin(a) => ClientResponse::Failed(format!(
            "{} is served by a running node's client port only",
            a.name()
        )),
        ClientRequest::GetApplications(m) => match rm.ask(m, timeout).await {
            Ok(listed) => {
                ClientResponse::Applications(limit_unviewable(rm, listed, &caller.user, acls, timeout).await)
            }
            Err(e) => failed(e),
        },
        ClientRequest::GetNodeReports(m) => match rm.ask(m, timeout).await {
            Ok(r) => ClientResponse::NodeReports(r),
            Err(e) => failed(e),
        },
        ClientRequest::GetContainers(m) => match rm.ask(m, timeout).await {
            Ok(r) => ClientResponse::Containers(r),
            Err(e) => failed(e),
        },
    }
}

/// What YARN shows of an application to a caller without VIEW_APP on it: it lists every
/// application (ClientRMService.getApplications), but such a caller's report has "N/A"
/// for the AM's host, the tracking URL and the diagnostics, no RPC port, no attempt, no
/// progress and no attempts (RMAppImpl.createAndGetApplicationReport with allowAccess
/// false). With ACLs off every caller sees everything.
async fn limit_unviewable(
    rm: &EndpointRef<ApplicationClientProtocol>,
    mut listed: Vec<ApplicationListing>,
    user: &str,
    acls: &AclsManager,
    timeout: Duration,
) -> Vec<ApplicationListing> {
    if !acls.enabled() {
        return listed;
    }
    for l in &mut listed {
        let app_id = l.report.app_id;
        let allowed = match rm.ask(GetApplicationAcls { app_id }, timeout).await {
            Ok(Ok(entry)) => acls.check_access(user, ViewApp, &entry.owner, &entry.acls),
            // Forgotten meanwhile, or no answer: show nothing more than the limited report.
            _ => false,
        };
        if !allowed {
            tracing::debug!(
                user,
                app_id = %app_id,
                "GetApplications: user {user} may not VIEW_APP {app_id}: its report is limited"
            );
            let r = &mut l.report;
            r.host = Some(UNAVAILABLE.to_string());
            r.rpc_port = Some(-1);
            r.tracking_url = Some(UNAVAILABLE.to_string());
            r.diagnostics = UNAVAILABLE.to_string();
            r.current_attempt = None;
            r.am_container = None;
            r.progress = 0.0;
            l.progress = 0.0;
            l.attempts.clear();
        }
    }
    listed
}

/// YARN's word for a field a caller may not see (RMAppImpl's UNAVAILABLE).
pub const UNAVAILABLE: &str = "N/A";

/// Serves one of the ResourceManager's admin calls ([`AdminRequest::is_rm_admin`]) with
/// the RM behind `rm`.
pub async fn serve_rm_admin(
    rm: &EndpointRef<ResourceManagerAdministrationProtocol>,
    request: AdminRequest,
    timeout: Duration,
) -> AdminResponse {
    if let Err(e) = check_admin(&request) {
        return AdminResponse::Refused(format!("{}: {e}", request.name()));
    }
    match request {
        AdminRequest::RefreshNodes(r) => match rm.ask(r, timeout).await {
            Ok(Ok(nodes)) => AdminResponse::Nodes(nodes),
            Ok(Err(e)) => AdminResponse::Refused(e.to_string()),
            Err(e) => AdminResponse::Refused(format!("the ResourceManager did not answer: {e}")),
        },
        AdminRequest::ListNodes => match rm.ask(ListNodes, timeout).await {
            Ok(nodes) => AdminResponse::Nodes(nodes),
            Err(e) => AdminResponse::Refused(format!("the ResourceManager did not answer: {e}")),
        },
        other => AdminResponse::Refused(format!("{} is not a ResourceManager admin call", other.name())),
    }
}

/// Whether `path` lies in a container of `app` (a segment `container_<app>_...`).
pub fn belongs_to(path: &ActorPath, app: &ApplicationId) -> bool {
    path.as_str()
        .split('/')
        .filter_map(|segment| segment.parse::<ContainerId>().ok())
        .any(|c| c.attempt.app == *app)
}

/// The running actors matching `glob`, sorted by path.
fn matching(cluster: &Cluster, glob: &PathGlob) -> Vec<ActorInfo> {
    cluster
        .actors()
        .into_iter()
        .filter(|a| a.status == "running" && glob.matches(a.path.as_str()))
        .collect()
}

/// Parses `target` and finds what it matches now; refused when malformed or matching nothing.
fn resolve(cluster: &Cluster, target: &str) -> Result<Vec<ActorInfo>, String> {
    let glob = PathGlob::parse(target).map_err(|e| e.to_string())?;
    let found = matching(cluster, &glob);
    if found.is_empty() {
        return Err(FaultError::NoMatch(target.to_string()).to_string());
    }
    Ok(found)
}

/// Refuses a delay beyond [`MAX_ADMIN_DELAY`], naming what it is.
fn within_delay(what: &str, d: Duration) -> Result<(), String> {
    if d > MAX_ADMIN_DELAY {
        return Err(format!(
            "{what} of {} is over the limit of {}",
            humantime::format_duration(d),
            humantime::format_duration(MAX_ADMIN_DELAY)
        ));
    }
    Ok(())
}

/// Checks the values of an admin call that came over the wire.
pub fn check_admin(request: &AdminRequest) -> Result<(), String> {
    match request {
        AdminRequest::ListActors { .. } => Ok(()),
        AdminRequest::Heal { target, .. } => target.as_deref().map_or(Ok(()), |t| {
            PathGlob::parse(t).map(|_| ()).map_err(|e| e.to_string())
        }),
        AdminRequest::Kill { after, .. } => after.map_or(Ok(()), |d| within_delay("a kill delay", d)),
        AdminRequest::Partition { duration, mode, .. } => {
            within_delay("a partition", *duration)?;
            match mode {
                PartitionMode::Delay(d) => within_delay("a partition's message delay", *d),
                PartitionMode::Drop => Ok(()),
            }
        }
        AdminRequest::RefreshNodes(r) => r
            .graceful_timeout
            .map_or(Ok(()), |d| within_delay("a graceful decommission timeout", d)),
        AdminRequest::ListNodes => Ok(()),
        AdminRequest::Signal { signal, target, .. } => {
            signal.parse::<crate::yarn::container_executor::ProcessSignal>()?;
            match target {
                SignalTarget::Containers(glob) => PathGlob::parse(&format!("/{glob}"))
                    .map(|_| ())
                    .map_err(|_| format!("malformed container id or glob '{glob}'")),
                SignalTarget::NodeManager(host) => crate::runtime::ActorPath::root(&format!("nm-{host}"))
                    .map(|_| ())
                    .map_err(|_| format!("'{host}' is not a host name")),
            }
        }
        AdminRequest::RunPlan { plan, .. } => {
            if plan.faults.len() > MAX_PLAN_FAULTS {
                return Err(format!(
                    "a fault plan of {} kills is over the limit of {MAX_PLAN_FAULTS}",
                    plan.faults.len()
                ));
            }
            for f in &plan.faults {
                match f.when {
                    Trigger::At(d) => within_delay("a planned kill's moment", d)?,
                    Trigger::AfterTasks(n) if n > MAX_PLAN_TASKS => {
                        return Err(format!(
                            "a planned kill after {n} finished tasks is over the limit of {MAX_PLAN_TASKS}"
                        ))
                    }
                    Trigger::AfterTasks(_) => {}
                }
            }
            Ok(())
        }
    }
}

/// The protocol name under which every process of a node serves the admin calls of
/// `sparkyard actors` and `sparkyard chaos` (a process service, see
/// `runtime::remote::Service`).
pub const ADMIN_SERVICE: &str = "sparkyard.admin";

/// The container processes of this process (one table per process, set by the first
/// `offer_admin` that has one).
static SIGNALLED: std::sync::OnceLock<ContainerProcesses> = std::sync::OnceLock::new();

/// How long one process waits for another's answer to an admin call.
const ADMIN_ASK: std::time::Duration = std::time::Duration::from_secs(10);

/// Offers the admin calls to other processes: a node's process asks each of its container
/// processes and NodeManager processes, which ask theirs, so `sparkyard actors` shows, and
/// `sparkyard chaos` reaches, the actors of every process. `processes` are the container
/// processes this process runs (its NodeManagers'), which `sparkyard chaos signal` reaches.
pub fn offer_admin(cluster: &Cluster, processes: Option<ContainerProcesses>) {
    let weak = cluster.downgrade();
    if let Some(processes) = processes {
        let _ = SIGNALLED.set(processes);
    }
    cluster.offer(
        ADMIN_SERVICE,
        std::sync::Arc::new(move |message: crate::runtime::remote::RemoteMessage| {
            let weak = weak.clone();
            Box::pin(async move {
                let cluster = weak.upgrade().ok_or("the process is ending")?;
                let request: AdminRequest = rmp_serde::from_slice(&message.body)
                    .map_err(|e| format!("cannot decode an admin call: {e}"))?;
                let answer = serve_admin(&cluster, request).await;
                rmp_serde::to_vec(&answer).map_err(|e| format!("cannot encode the admin answer: {e}"))
            })
        }),
    );
}

/// Serves one admin call with `cluster` and every process under it (its container and
/// NodeManager processes), merging their answers: the actors of all, what a kill or a
/// partition reached in any; a refusal only when every process refused (the first one's,
/// this process's).
pub async fn serve_admin(cluster: &Cluster, request: AdminRequest) -> AdminResponse {
    let local = serve_admin_local(cluster, request.clone());
    let fan_out = matches!(
        request,
        AdminRequest::ListActors { .. }
            | AdminRequest::Kill { .. }
            | AdminRequest::Partition { .. }
            | AdminRequest::Signal { .. }
            | AdminRequest::Heal { .. }
    );
    let below = cluster.processes_below();
    if !fan_out
        || below.is_empty()
        || matches!(local, AdminResponse::Refused(_)) && check_admin(&request).is_err()
    {
        return local;
    }
    let body = match rmp_serde::to_vec(&request) {
        Ok(b) => b,
        Err(_) => return local,
    };
    let asks = below.into_iter().map(|(root, link)| {
        let message = crate::runtime::remote::RemoteMessage {
            to: root.as_str().to_string(),
            from: None,
            protocol: ADMIN_SERVICE.to_string(),
            message: request.name().to_string(),
            body: body.clone(),
            ask: Some(ADMIN_ASK),
            origin: None,
            hops: 0,
        };
        async move {
            match tokio::time::timeout(ADMIN_ASK, link.send(message)).await {
                Ok(Ok(bytes)) => rmp_serde::from_slice::<AdminResponse>(&bytes).ok(),
                Ok(Err(e)) => {
                    tracing::debug!(process = root.as_str(), "an admin call did not reach {root}: {e}");
                    None
                }
                Err(_) => None,
            }
        }
    });
    let answers = futures_util::future::join_all(asks).await;
    merge_admin(local, answers.into_iter().flatten())
}

/// Merges the answers of several processes to one admin call.
fn merge_admin(first: AdminResponse, others: impl Iterator<Item = AdminResponse>) -> AdminResponse {
    let mut merged = first;
    for other in others {
        merged = match (merged, other) {
            (AdminResponse::Refused(_), ok) if !matches!(ok, AdminResponse::Refused(_)) => ok,
            (AdminResponse::Actors(mut a), AdminResponse::Actors(b)) => {
                a.extend(b);
                AdminResponse::Actors(a)
            }
            (AdminResponse::Killed(mut a), AdminResponse::Killed(b)) => {
                a.extend(b);
                AdminResponse::Killed(a)
            }
            (AdminResponse::Signalled(mut a), AdminResponse::Signalled(b)) => {
                a.extend(b);
                AdminResponse::Signalled(a)
            }
            (AdminResponse::Healed(mut a), AdminResponse::Healed(b)) => {
                a.extend(b);
                a.sort();
                a.dedup();
                AdminResponse::Healed(a)
            }
            (
                AdminResponse::KillScheduled { after, mut matching },
                AdminResponse::KillScheduled { matching: more, .. },
            ) => {
                matching.extend(more);
                AdminResponse::KillScheduled { after, matching }
            }
            (
                AdminResponse::Partitioned {
                    duration,
                    mut matching,
                },
                AdminResponse::Partitioned { matching: more, .. },
            ) => {
                matching.extend(more);
                AdminResponse::Partitioned { duration, matching }
            }
            (kept, _) => kept,
        };
    }
    if let AdminResponse::Actors(a) = &mut merged {
        a.sort_by(|x, y| x.path.cmp(&y.path));
        // A container process holds its container's path as its root, beside the node's own
        // supervisor of that container: one line per path.
        a.dedup_by(|x, y| x.path == y.path);
    }
    merged
}

/// Serves one admin call with this process's `cluster` alone.
pub fn serve_admin_local(cluster: &Cluster, request: AdminRequest) -> AdminResponse {
    let refused = AdminResponse::Refused;
    if let Err(e) = check_admin(&request) {
        return refused(format!("{}: {e}", request.name()));
    }
    match request {
        AdminRequest::ListActors { app } => {
            let mut actors = cluster.actors();
            if let Some(app) = app {
                actors.retain(|a| belongs_to(&a.path, &app));
            }
            AdminResponse::Actors(actors)
        }
        AdminRequest::Kill {
            target,
            mode,
            after: None,
            by,
        } => match cluster.kill(&target, mode, &by) {
            Ok(killed) => AdminResponse::Killed(killed),
            Err(e) => refused(e.to_string()),
        },
        AdminRequest::Kill {
            target,
            mode,
            after: Some(after),
            by,
        } => {
            let matching = match resolve(cluster, &target) {
                Ok(m) => m,
                Err(e) => return refused(e),
            };
            match cluster.kill_after(&target, mode, after, &by) {
                Ok(()) => AdminResponse::KillScheduled { after, matching },
                Err(e) => refused(e.to_string()),
            }
        }
        AdminRequest::Partition {
            target,
            mode,
            duration,
            by,
        } => {
            let matching = match resolve(cluster, &target) {
                Ok(m) => m,
                Err(e) => return refused(e),
            };
            match cluster.partition(&target, mode, duration, &by) {
                Ok(()) => AdminResponse::Partitioned { duration, matching },
                Err(e) => refused(e.to_string()),
            }
        }
        AdminRequest::Signal { target, signal, by } => signal_local(cluster, &target, &signal, &by),
        AdminRequest::Heal { target, by } => AdminResponse::Healed(cluster.heal(target.as_deref(), &by)),
        AdminRequest::RefreshNodes(_) | AdminRequest::ListNodes => {
            refused("the node admin calls are served by the ResourceManager".to_string())
        }
        AdminRequest::RunPlan { plan, by } => {
            if plan.faults.is_empty() {
                return refused("the fault plan has no kills".to_string());
            }
            for f in &plan.faults {
                if let Err(e) = PathGlob::parse(&f.target) {
                    return refused(e.to_string());
                }
            }
            cluster.run_plan(plan.clone(), &by);
            AdminResponse::PlanStarted(plan)
        }
    }
}

/// Sends `signal` to this process's container processes that `target` names, or to this
/// process itself when it is the NodeManager `target` names (after the answer is on its way).
fn signal_local(cluster: &Cluster, target: &SignalTarget, signal: &str, by: &str) -> AdminResponse {
    use crate::yarn::container_executor::{signal_group, signal_process, ProcessSignal};
    let Ok(sig) = signal.parse::<ProcessSignal>() else {
        return AdminResponse::Refused(format!("unknown signal '{signal}'"));
    };
    let mut sent = Vec::new();
    match target {
        SignalTarget::Containers(glob) => {
            let Ok(glob_path) = PathGlob::parse(&format!("/{glob}")) else {
                return AdminResponse::Refused(format!("malformed container id or glob '{glob}'"));
            };
            for (id, pid) in SIGNALLED.get().map(|p| p.list()).unwrap_or_default() {
                if !glob_path.matches(&format!("/{id}")) {
                    continue;
                }
                match signal_group(pid, sig) {
                    Ok(()) => {
                        tracing::warn!(event = "process_signalled", container_id = %id, pid, signal = %sig, by, "sent SIG{sig} to container {id}'s processes (group {pid}) for {by}");
                        sent.push(Signalled {
                            what: id.to_string(),
                            pid,
                        });
                    }
                    Err(e) => {
                        tracing::warn!(container_id = %id, pid, "cannot signal container {id} (group {pid}): {e}")
                    }
                }
            }
            if sent.is_empty() {
                return AdminResponse::Refused(format!("no running container process matches '{glob}'"));
            }
        }
        SignalTarget::NodeManager(host) => {
            let root = crate::yarn::node::node_manager_root(host);
            if !cluster.is_own_root(&root) {
                return AdminResponse::Refused(format!(
                    "no NodeManager process of host '{host}' (a NodeManager of sparkyard node runs inside the node's process: signal its containers, or start it apart with sparkyard nodemanager)"
                ));
            }
            let pid = std::process::id();
            tracing::warn!(event = "process_signalled", pid, signal = %sig, by, "sending SIG{sig} to this NodeManager's process ({pid}) for {by}");
            // After the answer has left: a KILL ends this process at once.
            std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(200));
                let _ = signal_process(pid, sig);
            });
            sent.push(Signalled {
                what: format!("NodeManager {host}"),
                pid,
            });
        }
    }
    AdminResponse::Signalled(sent)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn container_paths_belong_to_their_application() {
        let app: ApplicationId = "application_1700000000000_0002".parse().unwrap();
        let p = |s: &str| ActorPath::parse(s).unwrap();
        assert!(belongs_to(
            &p("/node/nm-host1/container_1700000000000_0002_01_000001/am/driver/revive-timer"),
            &app
        ));
        assert!(belongs_to(
            &p("/node/nm-host2/container_1700000000000_0002_02_000003"),
            &app
        ));
        assert!(!belongs_to(
            &p("/node/nm-host1/container_1700000000000_0001_01_000001/am"),
            &app
        ));
        assert!(!belongs_to(&p("/node/rm"), &app));
    }
}
