//! The YARN Client (YarnClusterApplication → Client), at `/submit/client`: submits an
//! application to the ResourceManager and follows it.
//!
//! Layer: deploy (the Spark side: spark-submit, the YARN Client, the ApplicationMaster; above context).
//!
//! submitApplication: a new application id, the check that the AM and executor containers
//! fit the cluster's maximum (Spark's "Required ... memory ... is above the max threshold"
//! message otherwise), the AM's launch context (its command as an argument vector, the
//! application's configuration as the `__spark_conf__.properties` local resource), the
//! submission context, the submission. monitorApplication: a report every
//! `spark.yarn.report.interval` ("Application report for <id> (state: <STATE>)"), with the
//! details whenever the state changes, until the application is FINISHED, FAILED or
//! KILLED; or a single report when `spark.yarn.submit.waitAppCompletion` is false
//! (fire-and-forget). Then Spark's verdict: failed, killed and undefined final states are
//! errors with Spark's messages. In cluster mode the driver container's stdout is fetched
//! from its node and printed after the final report.
//!
//! The ResourceManager is reached through an [`RmConnection`]: in-process for the embedded
//! cluster, over TCP for a running `sparkyard node`. A call the ResourceManager does not
//! answer (it is restarting: the ask fails with Died, a lookup or a time-out; or the
//! connection to the node was lost) is retried for up to [`RM_RETRY_LIMIT`], as Hadoop's RM
//! proxy retries, so a ResourceManager restart does not fail a submission or a follow.
//!
//! The Client actor restarts in place (`Transient`) with what its supervisor keeps
//! ([`ClientState`]): the application id from GetNewApplication on, the submission context
//! until the RM has accepted it, and the outcome. A restarted Client never submits a second
//! application: it re-submits the same context if the acceptance was not confirmed (an
//! "already present" answer means an earlier incarnation's submission got there), or just
//! asks the RM for the report again and follows the application to its end.

use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::{Actor, ActorFutureExt, AsyncContext, Context, Handler, Message, WrapFuture};

use super::am_args::{am_command_args, AmArgs};
use super::launch_command::{build_command, ROLE_APPLICATION_MASTER, ROLE_EXECUTOR_LAUNCHER};
use super::resources::{am_container, executor_memory};
use crate::conf::{self, SparkConf};
use crate::deploy::spark_submit::SubmitProtocol;
use crate::rpc::EndpointRef;
use crate::runtime::{ActorPath, ExitReason, Kept, Me};
use crate::scheduler::console_progress_bar::{render_application_progress, terminal_width};
use crate::yarn::acls::{AclsManager, ApplicationAccessType, Caller};
use crate::yarn::client_service;
use crate::yarn::protocol::*;
use crate::yarn::records::*;

/// The name of the configuration file the AM container is given.
pub const SPARK_CONF_FILE: &str = "__spark_conf__.properties";

/// The user submitting (Spark's `Utils.getCurrentUserName`): the proxy user of
/// `--proxy-user`, else `HADOOP_USER_NAME`, else the OS user (see `yarn::acls`).
pub fn current_user() -> String {
    Caller::current().user
}

/// YarnSparkHadoopUtil.getApplicationAclsForYarn: with `spark.acls.enable`, the
/// application's VIEW_APP ACL is its owner, the admins and `spark.ui.view.acls` (users, then
/// after a space `spark.admin.acls.groups` and `spark.ui.view.acls.groups`), its MODIFY_APP
/// ACL the same with `spark.modify.acls`; `*` anywhere in a part makes that part `*`.
/// Without it, none (YARN then lets only the owner and its admins in).
pub fn application_acls_for_yarn(
    conf: &SparkConf,
    owner: &str,
) -> Result<std::collections::BTreeMap<ApplicationAccessType, String>, String> {
    let mut acls = std::collections::BTreeMap::new();
    if !conf.get(&conf::ACLS_ENABLE).map_err(|e| e.to_string())? {
        return Ok(acls);
    }
    let list = |entry: &conf::ListEntry| conf.get(entry).map_err(|e| e.to_string());
    // SecurityManager's defaultAclUsers: the JVM's user.name and the current user.
    let mut default_users = std::collections::BTreeSet::new();
    default_users.insert(crate::yarn::acls::login_user());
    default_users.insert(owner.to_string());
    let part = |extra: Vec<String>, base: &std::collections::BTreeSet<String>| -> String {
        let mut set = base.clone();
        set.extend(extra.into_iter().filter(|s| !s.is_empty()));
        if set.contains("*") {
            "*".to_string()
        } else {
            set.into_iter().collect::<Vec<_>>().join(",")
        }
    };
    let admins: Vec<String> = list(&conf::ADMIN_ACLS)?;
    let admin_groups: Vec<String> = list(&conf::ADMIN_ACLS_GROUPS)?;
    let users_base: std::collections::BTreeSet<String> = default_users.into_iter().chain(admins).collect();
    let groups_base: std::collections::BTreeSet<String> = admin_groups.into_iter().collect();
    let view = format!(
        "{} {}",
        part(list(&conf::UI_VIEW_ACLS)?, &users_base),
        part(list(&conf::UI_VIEW_ACLS_GROUPS)?, &groups_base)
    );
    let modify = format!(
        "{} {}",
        part(list(&conf::MODIFY_ACLS)?, &users_base),
        part(list(&conf::MODIFY_ACLS_GROUPS)?, &groups_base)
    );
    acls.insert(ApplicationAccessType::ViewApp, view);
    acls.insert(ApplicationAccessType::ModifyApp, modify);
    Ok(acls)
}

/// How the Client reaches the ResourceManager.
#[derive(Clone)]
pub enum RmConnection {
    /// The embedded cluster's RM, in this process.
    Local(EndpointRef<ApplicationClientProtocol>),
    /// A running `sparkyard node`, over TCP.
    Remote {
        addr: String,
        conn: Arc<tokio::sync::Mutex<RemoteSlot>>,
        /// The node's secret it proves (`spark.authenticate`).
        keyring: Arc<crate::rpc::auth::Keyring>,
    },
}

/// The connection of a [`RmConnection::Remote`], made on first use and again after a loss.
#[derive(Debug, Default)]
pub struct RemoteSlot {
    conn: Option<ClientConnection>,
    /// A connection was made once: a later failure to connect is the node going away for a
    /// moment, retried; a first one is a node that is not there, reported at once.
    connected_once: bool,
}

impl std::fmt::Debug for RmConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RmConnection::Local(ep) => write!(f, "RmConnection::Local({})", ep.path()),
            RmConnection::Remote { addr, .. } => write!(f, "RmConnection::Remote({addr})"),
        }
    }
}

const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a call keeps retrying while the ResourceManager does not answer (Hadoop's RM
/// proxy does the same, for `yarn.resourcemanager.connect.max-wait.ms`).
pub const RM_RETRY_LIMIT: Duration = Duration::from_secs(5);
/// The first pause between retries; it doubles up to [`RM_RETRY_MAX_PAUSE`].
const RM_RETRY_FIRST_PAUSE: Duration = Duration::from_millis(10);
const RM_RETRY_MAX_PAUSE: Duration = Duration::from_millis(500);

/// One try of a call: an answer, a failure worth retrying, or a final one. (Short-lived,
/// like the answer it carries, so not boxed.)
#[allow(clippy::large_enum_variant)]
enum Try {
    Answer(ClientResponse),
    Retry(String),
    Fail(String),
}

impl RmConnection {
    /// A connection to the node at `addr` (connected on first use).
    pub fn remote(addr: &str) -> RmConnection {
        RmConnection::remote_secured(addr, crate::rpc::auth::Keyring::open())
    }

    /// Makes `app` the application of this process (a client-mode driver then accepts its
    /// containers' connections, and no other application's).
    pub fn adopt(&self, app: ApplicationId) {
        if let RmConnection::Remote { keyring, .. } = self {
            keyring.adopt(&app.to_string());
        }
    }

    /// A connection to the node at `addr` that proves `keyring`'s secret.
    pub fn remote_secured(addr: &str, keyring: Arc<crate::rpc::auth::Keyring>) -> RmConnection {
        RmConnection::Remote {
            addr: addr.to_string(),
            conn: Arc::new(tokio::sync::Mutex::new(RemoteSlot::default())),
            keyring,
        }
    }

    /// One ApplicationClientProtocol call, retried for up to [`RM_RETRY_LIMIT`] while the
    /// ResourceManager does not answer.
    pub async fn call(&self, request: ClientRequest, extra_wait: Duration) -> Result<ClientResponse, String> {
        self.call_retrying(request, extra_wait).await.map(|(r, _)| r)
    }

    /// [`RmConnection::call`], also telling whether a try failed before the answer came (the
    /// request may then have been carried out by the ResourceManager already).
    async fn call_retrying(
        &self,
        request: ClientRequest,
        extra_wait: Duration,
    ) -> Result<(ClientResponse, bool), String> {
        let deadline = Instant::now() + RM_RETRY_LIMIT;
        let mut pause = RM_RETRY_FIRST_PAUSE;
        let mut retried = false;
        loop {
            let problem = match self.try_once(request.clone(), extra_wait).await {
                Try::Answer(r) => {
                    if retried {
                        tracing::info!("The ResourceManager answered {} again", request.name());
                    }
                    return Ok((r, retried));
                }
                Try::Fail(e) => return Err(e),
                Try::Retry(e) => e,
            };
            if Instant::now() + pause > deadline {
                return Err(format!(
                    "{problem} (retried for {})",
                    humantime::format_duration(RM_RETRY_LIMIT)
                ));
            }
            if !retried {
                tracing::warn!(
                    "The ResourceManager did not answer {} ({problem}); retrying for up to {}",
                    request.name(),
                    humantime::format_duration(RM_RETRY_LIMIT)
                );
            }
            retried = true;
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(RM_RETRY_MAX_PAUSE);
        }
    }

    async fn try_once(&self, request: ClientRequest, extra_wait: Duration) -> Try {
        match self {
            RmConnection::Local(rm) => match client_service::serve(
                rm,
                ClientCall::current(request),
                &AclsManager::default(),
                CALL_TIMEOUT,
            )
            .await
            {
                ClientResponse::Failed(e) => Try::Retry(e),
                answer => Try::Answer(answer),
            },
            RmConnection::Remote { addr, conn, keyring } => {
                let mut slot = conn.lock().await;
                if slot.conn.is_none() {
                    match ClientConnection::connect_secured(addr, CALL_TIMEOUT, keyring.clone()).await {
                        Ok(c) => {
                            slot.conn = Some(c);
                            slot.connected_once = true;
                        }
                        Err(e) if slot.connected_once => return Try::Retry(e.to_string()),
                        Err(e) => return Try::Fail(e.to_string()),
                    }
                }
                let Some(c) = slot.conn.as_mut() else {
                    return Try::Fail(format!("no connection to {addr}"));
                };
                match c
                    .call(ClientCall::current(request), CALL_TIMEOUT + extra_wait)
                    .await
                {
                    Ok(ClientResponse::Failed(e)) => Try::Retry(e),
                    Ok(ClientResponse::Denied(e)) => Try::Fail(e),
                    Ok(answer) => Try::Answer(answer),
                    Err(e) => {
                        slot.conn = None;
                        Try::Retry(e.to_string())
                    }
                }
            }
        }
    }

    pub async fn new_application(&self) -> Result<NewApplication, String> {
        match self
            .call(
                ClientRequest::GetNewApplication(GetNewApplication),
                Duration::ZERO,
            )
            .await?
        {
            ClientResponse::NewApplication(r) => r.map_err(|e| e.to_string()),
            other => Err(unexpected(other)),
        }
    }
    /// Submits `ctx`. When a try failed before the answer, an "already present" refusal means
    /// that try's submission got there: it counts as accepted.
    pub async fn submit(&self, ctx: ApplicationSubmissionContext) -> Result<(), String> {
        self.submit_again(ctx, false).await
    }

    /// [`RmConnection::submit`] of a context that may have been submitted before
    /// (`maybe_submitted`): "already present" then counts as accepted too.
    pub async fn submit_again(
        &self,
        ctx: ApplicationSubmissionContext,
        maybe_submitted: bool,
    ) -> Result<(), String> {
        let app_id = ctx.app_id;
        let (answer, retried) = self
            .call_retrying(
                ClientRequest::SubmitApplication(SubmitApplication(ctx)),
                Duration::ZERO,
            )
            .await?;
        match answer {
            ClientResponse::SubmitApplication(Err(YarnError::Other(m)))
                if (retried || maybe_submitted) && m.contains("already present") =>
            {
                tracing::info!(app_id = %app_id, "Application {app_id} was already submitted; following it");
                Ok(())
            }
            ClientResponse::SubmitApplication(r) => r.map_err(|e| e.to_string()),
            other => Err(unexpected(other)),
        }
    }
    pub async fn report(
        &self,
        app_id: ApplicationId,
        wait: Option<ReportWait>,
    ) -> Result<Result<ApplicationReport, YarnError>, String> {
        let extra = wait.map(|w| w.max).unwrap_or(Duration::ZERO);
        match self
            .call(
                ClientRequest::GetApplicationReport(GetApplicationReport { app_id, wait }),
                extra,
            )
            .await?
        {
            ClientResponse::ApplicationReport(r) => Ok(r),
            other => Err(unexpected(other)),
        }
    }
    pub async fn kill(&self, app_id: ApplicationId, diagnostics: &str) -> Result<(), String> {
        let req = KillApplication {
            app_id,
            diagnostics: diagnostics.to_string(),
        };
        match self
            .call(ClientRequest::KillApplication(req), Duration::ZERO)
            .await?
        {
            ClientResponse::KillApplication(r) => r.map_err(|e| e.to_string()),
            other => Err(unexpected(other)),
        }
    }
    pub async fn nodes(&self) -> Result<Vec<NodeReport>, String> {
        match self
            .call(ClientRequest::GetClusterNodes(GetClusterNodes), Duration::ZERO)
            .await?
        {
            ClientResponse::ClusterNodes(n) => Ok(n),
            other => Err(unexpected(other)),
        }
    }
    pub async fn container_output(&self, container_id: ContainerId) -> Result<String, String> {
        match self
            .call(
                ClientRequest::GetContainerOutput(GetContainerOutput { container_id }),
                Duration::ZERO,
            )
            .await?
        {
            ClientResponse::ContainerOutput(r) => r.map_err(|e| e.to_string()),
            other => Err(unexpected(other)),
        }
    }
}

fn unexpected(response: ClientResponse) -> String {
    match response {
        ClientResponse::Failed(m) | ClientResponse::Denied(m) => m,
        other => format!("unexpected answer from the ResourceManager: {other:?}"),
    }
}

/// What the Client submits.
#[derive(Clone, Debug)]
pub struct ClientArgs {
    pub conf: Arc<SparkConf>,
    pub main_class: String,
    pub primary_resource: String,
    pub app_args: Vec<String>,
    /// Cluster mode: the AM runs the user class. Client mode: the AM is the executor
    /// launcher for the driver whose YarnSchedulerEndpoint has this URL (its path, with its
    /// process's address when the driver serves its actors to other processes).
    pub client_mode_driver: Option<String>,
}

/// How a followed application ended (Spark's verdict is `Err` with its message).
#[derive(Clone, Debug, PartialEq)]
pub struct ClientOutcome {
    pub app_id: ApplicationId,
    pub report: Option<ApplicationReport>,
    pub verdict: Result<(), String>,
}

/// Spark's formatReportDetails.
pub fn format_report_details(r: &ApplicationReport) -> String {
    let na = |s: &str| {
        if s.is_empty() {
            "N/A".to_string()
        } else {
            s.to_string()
        }
    };
    format!(
        "\n\t client token: N/A\n\t diagnostics: {}\n\t ApplicationMaster host: {}\n\t ApplicationMaster RPC port: {}\n\t queue: {}\n\t start time: {}\n\t final status: {}\n\t tracking URL: {}\n\t user: {}",
        na(&r.diagnostics),
        na(r.host.as_deref().unwrap_or("")),
        r.rpc_port.map(|p| p.to_string()).unwrap_or_else(|| "-1".into()),
        r.queue,
        r.start_time,
        r.final_status,
        na(r.tracking_url.as_deref().unwrap_or("")),
        r.user
    )
}

/// Spark's verdict on a final report (Client.run after monitorApplication).
pub fn verdict(r: &ApplicationReport) -> Result<(), String> {
    let id = r.app_id;
    if r.state == YarnApplicationState::Failed || r.final_status == FinalApplicationStatus::Failed {
        tracing::error!(app_id = %id, "Application diagnostics message: {}", r.diagnostics);
        return Err(format!("Application {id} finished with failed status"));
    }
    if r.state == YarnApplicationState::Killed || r.final_status == FinalApplicationStatus::Killed {
        return Err(format!("Application {id} is killed"));
    }
    if r.final_status == FinalApplicationStatus::Undefined {
        return Err(format!("The final status of application {id} is undefined"));
    }
    Ok(())
}

/// submitApplication: answers the new application's id.
pub async fn submit_application(rm: &RmConnection, args: &ClientArgs) -> Result<ApplicationId, String> {
    let context = prepare_submission(rm, args).await?;
    let app_id = context.app_id;
    tracing::info!(app_id = %app_id, "Submitting application {app_id} to ResourceManager");
    rm.submit(context).await?;
    Ok(app_id)
}

/// submitApplication up to the submission itself: a new application id, the checks against
/// the cluster's maximum, and the submission context.
pub async fn prepare_submission(
    rm: &RmConnection,
    args: &ClientArgs,
) -> Result<ApplicationSubmissionContext, String> {
    let conf = &args.conf;
    let nodes = rm.nodes().await?;
    tracing::info!(
        node_managers = nodes.len() as u64,
        "Requesting a new application from cluster with {} NodeManagers",
        nodes.len()
    );
    let new_app = rm.new_application().await?;
    let app_id = new_app.app_id;
    rm.adopt(app_id);
    let max_mem = new_app.maximum_capability.memory_mb;
    tracing::info!(
        app_id = %app_id,
        "Verifying our application has not requested more than the maximum memory capability of the cluster ({max_mem} MB per container)"
    );
    let exec = executor_memory(conf);
    if exec.total_mb() > max_mem {
        return Err(format!(
            "Required executor memory ({} MB), offHeap memory ({}) MB, overhead ({} MB), and PySpark memory ({} MB) is above the max threshold ({max_mem} MB) of this cluster! Please check the values of 'yarn.scheduler.maximum-allocation-mb' and/or 'yarn.nodemanager.resource.memory-mb'.",
            exec.memory_mb, exec.off_heap_mb, exec.overhead_mb, exec.pyspark_mb
        ));
    }
    let (am, am_cores) = am_container(conf, args.client_mode_driver.is_none());
    if am.total_mb() > max_mem {
        return Err(format!(
            "Required AM memory ({}+{} MB) is above the max threshold ({max_mem} MB) of this cluster! Please check the values of 'yarn.scheduler.maximum-allocation-mb' and/or 'yarn.nodemanager.resource.memory-mb'.",
            am.memory_mb, am.overhead_mb
        ));
    }
    tracing::info!(
        app_id = %app_id,
        "Will allocate AM container, with {} MB memory including {} MB overhead",
        am.total_mb(),
        am.overhead_mb
    );
    tracing::info!(app_id = %app_id, "Setting up container launch context for our AM");
    let environment = am_launch_env(conf, app_id);
    tracing::info!(app_id = %app_id, "Preparing resources for our AM container");
    check_local_resources(conf, &args.primary_resource, app_id)?;
    let (role, am_args) = match &args.client_mode_driver {
        None => (
            ROLE_APPLICATION_MASTER,
            AmArgs {
                user_jar: Some(args.primary_resource.clone()),
                user_class: Some(args.main_class.clone()),
                user_args: args.app_args.clone(),
                properties_file: Some(SPARK_CONF_FILE.into()),
                ..AmArgs::default()
            },
        ),
        Some(driver) => (
            ROLE_EXECUTOR_LAUNCHER,
            AmArgs {
                user_args: vec![driver.to_string()],
                properties_file: Some(SPARK_CONF_FILE.into()),
                ..AmArgs::default()
            },
        ),
    };
    let mut am_conf = (**conf).clone();
    am_conf.set("spark.yarn.app.id", app_id.to_string());
    // The node's secret stays with the node and its clients; the application gets its own
    // (YARN's credentials), which cannot open another application's connections.
    let node_secret = crate::yarn::security::node_secret(conf, false)?;
    am_conf.retain(|key| !conf::holds_node_secret(key));
    let mut spec = ContainerLaunchContext {
        command: build_command(&[], "", role, am_command_args(&am_args)),
        tokens: node_secret.map(|secret| Credentials(secret.for_application(&app_id.to_string()).expose())),
        ..ContainerLaunchContext::default()
    };
    spec.local_resources
        .insert(SPARK_CONF_FILE.into(), am_conf.to_properties_string());
    spec.environment = environment;
    let name = conf.get_str("spark.app.name").unwrap_or("Spark").to_string();
    let queue = conf.get(&conf::QUEUE_NAME).unwrap_or_else(|_| "default".into());
    let context = ApplicationSubmissionContext {
        app_id,
        name,
        queue,
        app_type: conf
            .get(&conf::APPLICATION_TYPE)
            .unwrap_or_else(|_| "SPARK".into()),
        user: current_user(),
        max_app_attempts: conf.get(&conf::MAX_APP_ATTEMPTS).ok().flatten(),
        tags: conf
            .get(&conf::APPLICATION_TAGS)
            .ok()
            .flatten()
            .unwrap_or_default(),
        resource: Resource::new(am.total_mb(), am_cores),
        am_container_spec: spec,
        acls: application_acls_for_yarn(conf, &current_user())?,
    };
    Ok(context)
}

/// Client.setupLaunchEnv: the AM container's environment, `SPARK_USER` and then every
/// `spark.yarn.appMasterEnv.<NAME>` (YarnSparkHadoopUtil.addPathToEnvironment: a variable
/// already set gets the value appended after the path separator, `:` on Linux, as the
/// NodeManager expands YARN's `<CPS>`). Logged at DEBUG, redacted.
pub fn am_launch_env(conf: &SparkConf, app_id: ApplicationId) -> std::collections::BTreeMap<String, String> {
    let mut env = std::collections::BTreeMap::new();
    env.insert("SPARK_USER".to_string(), current_user());
    for (key, value) in conf.iter() {
        if let Some(name) = key.strip_prefix(conf::AM_ENV.prefix()) {
            env.entry(name.to_string())
                .and_modify(|v: &mut String| {
                    v.push(':');
                    v.push_str(value);
                })
                .or_insert_with(|| value.to_string());
        }
    }
    tracing::info!(app_id = %app_id, "Setting up the launch environment for our AM container");
    let redactor = conf::Redactor::from_conf(conf);
    for (k, v) in &env {
        tracing::debug!(app_id = %app_id, "    {k} -> {}", redactor.value(k, v));
    }
    env
}

/// The local path a resource names, as Spark's `Utils.resolveURI` and Hadoop's local file
/// system see it: `None` for `local:` URIs (never copied: already on every node) and for
/// other schemes; a `#name` fragment (the link name) is not part of the path.
pub(crate) fn local_file(resource: &str) -> Option<std::path::PathBuf> {
    let without_fragment = resource.trim().split('#').next().unwrap_or_default();
    if without_fragment.is_empty() {
        return None;
    }
    let path = match without_fragment.split_once(':') {
        // A scheme is letters, digits, `+`, `-`, `.` after a letter; a Windows drive or a
        // colon later in a path is not one.
        Some((scheme, rest))
            if scheme.len() > 1
                && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) =>
        {
            if scheme != "file" {
                return None;
            }
            // file:/x, file:///x, file://localhost/x
            let rest = rest.strip_prefix("//localhost").unwrap_or(rest);
            let rest = match rest.strip_prefix("//") {
                Some(r) if r.starts_with('/') => r,
                _ => rest,
            };
            std::path::PathBuf::from(rest)
        }
        _ => std::path::PathBuf::from(without_fragment),
    };
    Some(if path.is_absolute() {
        path
    } else {
        std::env::current_dir().unwrap_or_default().join(path)
    })
}

/// Client.prepareLocalResources, as far as sparkyard distributes: every entry of
/// `spark.yarn.dist.jars`, `spark.yarn.dist.files` and `spark.yarn.dist.archives` that is a
/// local file must exist, as Spark's copy to the staging directory fails the submission with
/// Hadoop's `java.io.FileNotFoundException: File file:<path> does not exist`. The primary
/// resource is not checked: it names an application sparkyard has built in, not a jar.
pub fn check_local_resources(
    conf: &SparkConf,
    primary_resource: &str,
    app_id: ApplicationId,
) -> Result<(), String> {
    for entry in [
        &conf::JARS_TO_DISTRIBUTE,
        &conf::FILES_TO_DISTRIBUTE,
        &conf::ARCHIVES_TO_DISTRIBUTE,
    ] {
        for resource in conf.get(entry).unwrap_or_default() {
            if resource.trim() == primary_resource.trim() {
                continue;
            }
            if let Some(path) = local_file(&resource) {
                if !path.exists() {
                    let message = format!(
                        "java.io.FileNotFoundException: File file:{} does not exist",
                        path.display()
                    );
                    tracing::error!(app_id = %app_id, key = entry.name(), resource = resource.as_str(), "{message}");
                    return Err(message);
                }
            }
        }
    }
    Ok(())
}

/// monitorApplication: follows `app_id` until it ends (or once, for fire-and-forget),
/// logging each report ([`log_report`]).
pub async fn monitor_application(
    rm: &RmConnection,
    app_id: ApplicationId,
    interval: Duration,
    once: bool,
) -> ApplicationReport {
    monitor(rm, app_id, interval, once, true, &mut None).await
}

/// monitorApplication with `logApplicationReport = false`, as client mode's "YARN
/// application state monitor" follows a running application: its reports are DEBUG records
/// only, so the console (and the progress bar on it) is not written over once a second.
pub async fn follow_running_application(
    rm: &RmConnection,
    app_id: ApplicationId,
    interval: Duration,
) -> ApplicationReport {
    monitor(rm, app_id, interval, false, false, &mut None).await
}

/// Logs `report` as Spark's monitorApplication does: "Application report for <id> (state:
/// <STATE>)" at INFO, and its details (formatReportDetails) at INFO when its state changed
/// since `last`, at DEBUG otherwise.
pub fn log_report(report: &ApplicationReport, last: Option<(YarnApplicationState, FinalApplicationStatus)>) {
    let app_id = report.app_id;
    tracing::info!(
        app_id = %app_id,
        state = %report.state,
        final_status = %report.final_status,
        "Application report for {app_id} (state: {})",
        report.state
    );
    let details = || format_report_details(report).replace("\n\t", " |");
    if last != Some((report.state, report.final_status)) {
        tracing::info!(app_id = %app_id, "{}", details());
    } else {
        tracing::debug!(app_id = %app_id, "{}", details());
    }
}

/// Cluster mode's progress line on the submitting terminal: after each report of a RUNNING
/// application, its progress (what its AM said in its last Allocate) drawn in the console
/// progress bar's style, `\r<line>\r`, so the next log line writes over it; erased when
/// the application ends.
struct ReportProgressLine {
    width: usize,
    drawn: bool,
    announced: bool,
}

impl ReportProgressLine {
    fn new(width: usize) -> Self {
        ReportProgressLine {
            width,
            drawn: false,
            announced: false,
        }
    }

    fn write(text: &str) {
        use std::io::Write;
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(text.as_bytes());
        let _ = err.flush();
    }

    fn show(&mut self, r: &ApplicationReport) {
        if r.state != YarnApplicationState::Running {
            return;
        }
        if !self.announced {
            self.announced = true;
            tracing::info!(
                app_id = %r.app_id,
                width = self.width as u64,
                "Showing the progress of {} from its reports on the terminal",
                r.app_id
            );
        }
        let line = render_application_progress(self.width, &r.app_id.to_string(), r.progress);
        Self::write(&format!("\r{line}\r"));
        self.drawn = true;
    }

    fn clear(&mut self) {
        if std::mem::take(&mut self.drawn) {
            Self::write(&format!("\r{}\r", " ".repeat(self.width)));
        }
    }
}

async fn monitor(
    rm: &RmConnection,
    app_id: ApplicationId,
    interval: Duration,
    once: bool,
    log: bool,
    progress: &mut Option<ReportProgressLine>,
) -> ApplicationReport {
    let mut last: Option<(YarnApplicationState, FinalApplicationStatus)> = None;
    // Since when the RM has refused reports (a stopping RM answers its waiting reports with
    // an error; its next incarnation answers them again).
    let mut refusing_since: Option<Instant> = None;
    loop {
        let wait = last
            .filter(|_| !once)
            .map(|known| ReportWait { known, max: interval });
        let report = match rm.report(app_id, wait).await {
            Ok(Ok(r)) => r,
            Ok(Err(YarnError::ApplicationNotFound(_))) => {
                tracing::error!(app_id = %app_id, "Application {app_id} not found.");
                return killed_report(app_id, "Application not found.");
            }
            Ok(Err(e)) => {
                let since = match refusing_since {
                    Some(since) => since,
                    None => {
                        tracing::warn!(
                            app_id = %app_id,
                            "The ResourceManager refused the report of {app_id} ({e}); asking again for up to {}",
                            humantime::format_duration(RM_RETRY_LIMIT)
                        );
                        *refusing_since.insert(Instant::now())
                    }
                };
                if since.elapsed() >= RM_RETRY_LIMIT {
                    return failed_report(app_id, &e.to_string());
                }
                tokio::time::sleep(RM_RETRY_FIRST_PAUSE).await;
                continue;
            }
            Err(e) => {
                tracing::error!(app_id = %app_id, "Failed to contact YARN for application {app_id}: {e}");
                return failed_report(
                    app_id,
                    &format!("Failed to contact YARN for application {app_id}."),
                );
            }
        };
        refusing_since = None;
        let key = (report.state, report.final_status);
        if log {
            log_report(&report, last);
        } else {
            tracing::debug!(
                app_id = %app_id,
                state = %report.state,
                final_status = %report.final_status,
                "Application report for {app_id} (state: {})",
                report.state
            );
        }
        if once || report.state.is_final() {
            return report;
        }
        if let Some(line) = progress.as_mut() {
            line.show(&report);
        }
        last = Some(key);
    }
}

fn synthetic(
    app_id: ApplicationId,
    state: YarnApplicationState,
    final_status: FinalApplicationStatus,
    diagnostics: &str,
) -> ApplicationReport {
    ApplicationReport {
        app_id,
        current_attempt: None,
        name: String::new(),
        queue: String::new(),
        user: String::new(),
        app_type: String::new(),
        host: None,
        rpc_port: None,
        tracking_url: None,
        state,
        final_status,
        diagnostics: diagnostics.to_string(),
        start_time: 0,
        finish_time: 0,
        am_container: None,
        progress: 0.0,
    }
}

fn killed_report(app_id: ApplicationId, diagnostics: &str) -> ApplicationReport {
    synthetic(
        app_id,
        YarnApplicationState::Killed,
        FinalApplicationStatus::Killed,
        diagnostics,
    )
}

fn failed_report(app_id: ApplicationId, diagnostics: &str) -> ApplicationReport {
    synthetic(
        app_id,
        YarnApplicationState::Failed,
        FinalApplicationStatus::Failed,
        diagnostics,
    )
}

/// Client.run after submission: follow, judge, and in cluster mode print the driver's
/// stdout after the final report.
pub async fn follow_application(
    rm: &RmConnection,
    args: &ClientArgs,
    app_id: ApplicationId,
) -> ClientOutcome {
    let conf = &args.conf;
    let interval = conf.get(&conf::REPORT_INTERVAL).unwrap_or(Duration::from_secs(1));
    let fire_and_forget = !conf.get(&conf::WAIT_FOR_APP_COMPLETION).unwrap_or(true);
    // Cluster mode on a terminal: the application's progress under its reports.
    let stderr_is_terminal = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let mut progress = (args.client_mode_driver.is_none() && !fire_and_forget && stderr_is_terminal)
        .then(|| ReportProgressLine::new(terminal_width(std::env::var("COLUMNS").ok().as_deref())));
    let report = monitor(rm, app_id, interval, fire_and_forget, true, &mut progress).await;
    if let Some(line) = progress.as_mut() {
        line.clear();
    }
    let verdict = if fire_and_forget {
        if matches!(
            report.state,
            YarnApplicationState::Failed | YarnApplicationState::Killed
        ) {
            Err(format!(
                "Application {app_id} finished with status: {}",
                report.state
            ))
        } else {
            Ok(())
        }
    } else {
        verdict(&report)
    };
    if !fire_and_forget {
        print_final_report(&report);
        if let Some(container) = report.am_container.filter(|_| args.client_mode_driver.is_none()) {
            match rm.container_output(container).await {
                Ok(text) if !text.is_empty() => {
                    use std::io::Write;
                    let mut out = std::io::stdout().lock();
                    let _ = out.write_all(text.as_bytes());
                    let _ = out.flush();
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(app_id = %app_id, "cannot fetch the driver's output from its container: {e}")
                }
            }
        }
    }
    ClientOutcome {
        app_id,
        report: Some(report),
        verdict,
    }
}

/// The final report, as the last thing the Client logs about the application.
pub fn print_final_report(r: &ApplicationReport) {
    let attempt = r
        .current_attempt
        .map(|a| a.to_string())
        .unwrap_or_else(|| "N/A".into());
    tracing::info!(
        app_id = %r.app_id,
        state = %r.state,
        final_status = %r.final_status,
        attempt_id = attempt.as_str(),
        diagnostics = r.diagnostics.as_str(),
        "Final report for {}: state {}, final status {}, attempt {attempt}, diagnostics: {}",
        r.app_id,
        r.state,
        r.final_status,
        if r.diagnostics.is_empty() { "N/A" } else { r.diagnostics.as_str() }
    );
}

/// The Client's result, sent to SparkSubmit.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct ClientFinished(pub ClientOutcome);

/// Kill the application being followed (Ctrl-C on submit).
#[derive(Clone, Debug, Message)]
#[rtype(result = "()")]
pub struct KillFollowedApplication;

/// What the Client keeps across its restarts (held by the child spec its supervisor owns).
#[derive(Debug, Default)]
pub struct ClientState {
    /// The application this Client submits, from GetNewApplication's answer on.
    pub app_id: Option<ApplicationId>,
    /// Its submission context, until the ResourceManager has accepted it.
    pub pending: Option<ApplicationSubmissionContext>,
    /// The ResourceManager accepted the submission.
    pub submitted: bool,
    /// A kill was asked for (Ctrl-C); a restarted Client carries it out.
    pub kill_requested: bool,
    /// How the application ended, once the Client has judged it (a Client started again with
    /// it tells SparkSubmit again, for a message lost to SparkSubmit's restart).
    pub outcome: Option<ClientOutcome>,
}

/// The Client actor: submits, follows, and tells SparkSubmit how it ended.
pub struct Client {
    me: Me,
    rm: RmConnection,
    args: ClientArgs,
    state: Kept<ClientState>,
    /// SparkSubmit's path (reached by path, so a restarted SparkSubmit gets the message).
    report_to: ActorPath,
}

/// Where a Client starts: a new submission, one whose acceptance is not confirmed, or an
/// application to follow.
enum Start {
    Submit,
    Resubmit(Box<ApplicationSubmissionContext>),
    Follow(ApplicationId),
}

impl Client {
    pub fn new(
        me: Me,
        rm: RmConnection,
        args: ClientArgs,
        state: Kept<ClientState>,
        report_to: ActorPath,
    ) -> Self {
        Client {
            me,
            rm,
            args,
            state,
            report_to,
        }
    }

    fn finish(&mut self, ctx: &mut Context<Self>, outcome: ClientOutcome) {
        self.state.lock().outcome = Some(outcome.clone());
        let _ = self
            .me
            .endpoint::<SubmitProtocol>(&self.report_to)
            .tell(ClientFinished(outcome));
        let me = self.me.clone();
        me.exit(ctx, ExitReason::Normal);
    }

    fn kill(&self, ctx: &mut Context<Self>, app_id: ApplicationId) {
        tracing::warn!(app_id = %app_id, "Killing application {app_id}");
        let rm = self.rm.clone();
        ctx.spawn(
            async move {
                if let Err(e) = rm.kill(app_id, "interrupted (Ctrl-C on sparkyard submit)").await {
                    tracing::error!(app_id = %app_id, "cannot kill application {app_id}: {e}");
                }
            }
            .into_actor(self),
        );
    }

    fn follow(&mut self, ctx: &mut Context<Self>, app_id: ApplicationId) {
        if self.state.lock().kill_requested {
            self.kill(ctx, app_id);
        }
        let (rm, args) = (self.rm.clone(), self.args.clone());
        ctx.spawn(
            async move { follow_application(&rm, &args, app_id).await }
                .into_actor(self)
                .map(|outcome, act, ctx| act.finish(ctx, outcome)),
        );
    }
}

/// Submits as [`submit_application`] does, keeping the id and the context in `state` before
/// the submission goes out, so a restart in between re-submits the same application.
async fn submit_kept(
    rm: &RmConnection,
    args: &ClientArgs,
    state: &Kept<ClientState>,
) -> Result<ApplicationId, String> {
    let context = prepare_submission(rm, args).await?;
    let app_id = context.app_id;
    {
        let mut st = state.lock();
        st.app_id = Some(app_id);
        st.pending = Some(context.clone());
    }
    tracing::info!(app_id = %app_id, "Submitting application {app_id} to ResourceManager");
    rm.submit(context).await?;
    let mut st = state.lock();
    st.submitted = true;
    st.pending = None;
    Ok(app_id)
}

impl Actor for Client {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let start = {
            let st = self.state.lock();
            if let Some(outcome) = st.outcome.clone() {
                drop(st);
                self.finish(ctx, outcome);
                return;
            }
            match (st.app_id, st.submitted, st.pending.clone()) {
                (Some(id), true, _) => Start::Follow(id),
                (Some(_), false, Some(context)) => Start::Resubmit(Box::new(context)),
                _ => Start::Submit,
            }
        };
        if self.me.incarnation() > 1 {
            match &start {
                Start::Submit => {
                    tracing::info!("Client restarted before it had an application id; submitting")
                }
                Start::Resubmit(c) => tracing::info!(
                    app_id = %c.app_id,
                    "Client restarted before the ResourceManager confirmed application {}; submitting the same application again",
                    c.app_id
                ),
                Start::Follow(id) => tracing::info!(
                    app_id = %id,
                    "Client restarted; following application {id} again (no second submission)"
                ),
            }
        }
        let (rm, args, state) = (self.rm.clone(), self.args.clone(), self.state.clone());
        ctx.spawn(
            async move {
                match start {
                    Start::Follow(id) => Ok(id),
                    Start::Resubmit(context) => {
                        let id = context.app_id;
                        rm.submit_again(*context, true).await?;
                        let mut st = state.lock();
                        st.submitted = true;
                        st.pending = None;
                        Ok(id)
                    }
                    Start::Submit => submit_kept(&rm, &args, &state).await,
                }
            }
            .into_actor(self)
            .map(|res: Result<ApplicationId, String>, act, ctx| match res {
                Ok(app_id) => act.follow(ctx, app_id),
                Err(e) => {
                    let app_id = act.state.lock().app_id.unwrap_or(ApplicationId {
                        cluster_timestamp: 0,
                        id: 0,
                    });
                    let outcome = ClientOutcome {
                        app_id,
                        report: None,
                        verdict: Err(e),
                    };
                    act.finish(ctx, outcome);
                }
            }),
        );
    }
}

impl Handler<KillFollowedApplication> for Client {
    type Result = ();

    fn handle(&mut self, _: KillFollowedApplication, ctx: &mut Context<Self>) {
        let app_id = {
            let mut st = self.state.lock();
            st.kill_requested = true;
            st.app_id.filter(|_| st.submitted)
        };
        if let Some(app_id) = app_id {
            self.kill(ctx, app_id);
        }
    }
}

crate::protocol! {
    /// What the YARN Client is told while it follows its application: kill it (the user's
    /// interrupt with spark.yarn.submit.waitAppCompletion).
    pub ClientControlProtocol { KillFollowedApplication }
}

crate::speaks!(Client: ClientControlProtocol);

#[cfg(test)]
mod acl_tests {
    use super::*;

    #[test]
    fn application_acls_are_computed_as_spark_hands_them_to_yarn() {
        use ApplicationAccessType::*;
        let me = crate::yarn::acls::login_user();
        let mut conf = SparkConf::new();
        conf.set("spark.ui.view.acls", "carol");
        // spark.acls.enable off: none.
        assert!(application_acls_for_yarn(&conf, "alice").unwrap().is_empty());

        conf.set("spark.acls.enable", "true");
        conf.set("spark.admin.acls", "root2, ops1");
        conf.set("spark.admin.acls.groups", "wheel");
        conf.set("spark.modify.acls", "dave");
        conf.set("spark.modify.acls.groups", "*");
        conf.set("spark.ui.view.acls.groups", "readers");
        let acls = application_acls_for_yarn(&conf, "alice").unwrap();
        let mut view: Vec<&str> = vec!["alice", "carol", "ops1", "root2", &me];
        view.sort();
        view.dedup();
        let mut modify: Vec<&str> = vec!["alice", "dave", "ops1", "root2", &me];
        modify.sort();
        modify.dedup();
        assert_eq!(acls[&ViewApp], format!("{} readers,wheel", view.join(",")));
        assert_eq!(acls[&ModifyApp], format!("{} *", modify.join(",")));

        // `*` among the users makes the users part `*`.
        conf.set("spark.ui.view.acls", "carol,*");
        let acls = application_acls_for_yarn(&conf, "alice").unwrap();
        assert_eq!(acls[&ViewApp], "* readers,wheel");
        // The old name of spark.acls.enable still switches them on.
        let mut old = SparkConf::new();
        old.set("spark.ui.acls.enable", "true");
        assert_eq!(application_acls_for_yarn(&old, "alice").unwrap().len(), 2);
    }
}
