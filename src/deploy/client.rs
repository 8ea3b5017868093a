//! The YARN Client (YarnClusterApplication → Client), at `/submit/client`: submits an
//! application to the ResourceManager and follows it.
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
//! cluster, over TCP for a running `sparkyard node`.

use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, ActorFutureExt, AsyncContext, Context, Handler, Message, WrapFuture};

use super::am_args::{am_command_args, AmArgs};
use super::resources::{driver_memory, executor_memory};
use crate::cli::roles::{build_command, ROLE_APPLICATION_MASTER, ROLE_EXECUTOR_LAUNCHER};
use crate::conf::{self, SparkConf};
use crate::rpc::tcp::ClientConnection;
use crate::rpc::EndpointRef;
use crate::runtime::{ActorPath, ExitReason, Me};
use crate::yarn::client_service;
use crate::yarn::protocol::*;
use crate::yarn::records::*;
use crate::yarn::resource_manager::ResourceManager;

/// The name of the configuration file the AM container is given.
pub const SPARK_CONF_FILE: &str = "__spark_conf__.properties";

/// The user submitting: `$USER`, else `sparkyard`.
pub fn current_user() -> String {
    std::env::var("USER")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| "sparkyard".to_string())
}

/// How the Client reaches the ResourceManager.
#[derive(Clone)]
pub enum RmConnection {
    /// The embedded cluster's RM, in this process.
    Local(EndpointRef<ResourceManager>),
    /// A running `sparkyard node`, over TCP.
    Remote {
        addr: String,
        conn: Arc<tokio::sync::Mutex<Option<ClientConnection>>>,
    },
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

impl RmConnection {
    /// A connection to the node at `addr` (connected on first use).
    pub fn remote(addr: &str) -> RmConnection {
        RmConnection::Remote {
            addr: addr.to_string(),
            conn: Arc::new(tokio::sync::Mutex::new(None)),
        }
    }

    /// One ApplicationClientProtocol call.
    pub async fn call(&self, request: ClientRequest, extra_wait: Duration) -> Result<ClientResponse, String> {
        match self {
            RmConnection::Local(rm) => Ok(client_service::serve(rm, request, CALL_TIMEOUT).await),
            RmConnection::Remote { addr, conn } => {
                let mut guard = conn.lock().await;
                if guard.is_none() {
                    *guard = Some(
                        ClientConnection::connect(addr, CALL_TIMEOUT)
                            .await
                            .map_err(|e| e.to_string())?,
                    );
                }
                let Some(c) = guard.as_mut() else {
                    return Err(format!("no connection to {addr}"));
                };
                let result = c
                    .call(request, CALL_TIMEOUT + extra_wait)
                    .await
                    .map_err(|e| e.to_string());
                if result.is_err() {
                    *guard = None;
                }
                result
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
    pub async fn submit(&self, ctx: ApplicationSubmissionContext) -> Result<(), String> {
        match self
            .call(
                ClientRequest::SubmitApplication(SubmitApplication(ctx)),
                Duration::ZERO,
            )
            .await?
        {
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
        ClientResponse::Failed(m) => m,
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
    /// launcher for the driver at this YarnSchedulerEndpoint path.
    pub client_mode_driver: Option<ActorPath>,
}

/// How a followed application ended (Spark's verdict is `Err` with its message).
#[derive(Clone, Debug, PartialEq, Eq)]
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
    let conf = &args.conf;
    let nodes = rm.nodes().await?;
    tracing::info!(
        node_managers = nodes.len() as u64,
        "Requesting a new application from cluster with {} NodeManagers",
        nodes.len()
    );
    let new_app = rm.new_application().await?;
    let app_id = new_app.app_id;
    let max_mem = new_app.maximum_capability.memory_mb;
    tracing::info!(
        app_id = %app_id,
        "Verifying our application has not requested more than the maximum memory capability of the cluster ({max_mem} MB per container)"
    );
    let exec = executor_memory(conf);
    if exec.total_mb() > max_mem {
        return Err(format!(
            "Required executor memory ({} MB), offHeap memory (0) MB, overhead ({} MB), and PySpark memory (0 MB) is above the max threshold ({max_mem} MB) of this cluster! Please check the values of 'yarn.scheduler.maximum-allocation-mb' and/or 'yarn.nodemanager.resource.memory-mb'.",
            exec.memory_mb, exec.overhead_mb
        ));
    }
    let (am, am_cores) = match &args.client_mode_driver {
        None => (driver_memory(conf), conf.get(&conf::DRIVER_CORES).unwrap_or(1)),
        Some(_) => {
            let mem = conf.get(&conf::AM_MEMORY).unwrap_or(512 << 20) >> 20;
            let overhead = conf
                .get(&conf::AM_MEMORY_OVERHEAD)
                .ok()
                .flatten()
                .map(|b| b >> 20)
                .unwrap_or_else(|| ((0.1 * mem as f64) as u64).max(384));
            (
                super::resources::ContainerMemory {
                    memory_mb: mem,
                    overhead_mb: overhead,
                },
                conf.get(&conf::AM_CORES).unwrap_or(1),
            )
        }
    };
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
    let mut spec = ContainerLaunchContext {
        command: build_command(&[], "", role, am_command_args(&am_args)),
        ..ContainerLaunchContext::default()
    };
    spec.local_resources
        .insert(SPARK_CONF_FILE.into(), am_conf.to_properties_string());
    spec.environment.insert("SPARK_USER".into(), current_user());
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
    };
    tracing::info!(app_id = %app_id, "Submitting application {app_id} to ResourceManager");
    rm.submit(context).await?;
    Ok(app_id)
}

/// monitorApplication: follows `app_id` until it ends (or once, for fire-and-forget).
pub async fn monitor_application(
    rm: &RmConnection,
    app_id: ApplicationId,
    interval: Duration,
    once: bool,
) -> ApplicationReport {
    let mut last: Option<(YarnApplicationState, FinalApplicationStatus)> = None;
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
            Ok(Err(e)) => return failed_report(app_id, &e.to_string()),
            Err(e) => {
                tracing::error!(app_id = %app_id, "Failed to contact YARN for application {app_id}: {e}");
                return failed_report(
                    app_id,
                    &format!("Failed to contact YARN for application {app_id}."),
                );
            }
        };
        let key = (report.state, report.final_status);
        tracing::info!(
            app_id = %app_id,
            state = %report.state,
            final_status = %report.final_status,
            "Application report for {app_id} (state: {})",
            report.state
        );
        if last != Some(key) {
            tracing::info!(app_id = %app_id, "{}", format_report_details(&report).replace("\n\t", " |"));
        }
        if once || report.state.is_final() {
            return report;
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
    let report = monitor_application(rm, app_id, interval, fire_and_forget).await;
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

/// The Client's result, sent to the actor that started it.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct ClientFinished(pub ClientOutcome);

/// Kill the application being followed (Ctrl-C on submit).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct KillFollowedApplication;

/// The Client actor: submits, follows, and tells `report_to` how it ended.
pub struct Client {
    me: Me,
    rm: RmConnection,
    args: ClientArgs,
    report_to: actix::Recipient<ClientFinished>,
    app_id: Option<ApplicationId>,
    kill_requested: bool,
}

impl Client {
    pub fn new(
        me: Me,
        rm: RmConnection,
        args: ClientArgs,
        report_to: actix::Recipient<ClientFinished>,
    ) -> Self {
        Client {
            me,
            rm,
            args,
            report_to,
            app_id: None,
            kill_requested: false,
        }
    }

    fn finish(&mut self, ctx: &mut Context<Self>, outcome: ClientOutcome) {
        self.report_to.do_send(ClientFinished(outcome));
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
}

impl Actor for Client {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let (rm, args) = (self.rm.clone(), self.args.clone());
        ctx.spawn(
            async move { submit_application(&rm, &args).await }
                .into_actor(self)
                .map(|res, act, ctx| {
                    let app_id = match res {
                        Ok(id) => id,
                        Err(e) => {
                            let outcome = ClientOutcome {
                                app_id: ApplicationId {
                                    cluster_timestamp: 0,
                                    id: 0,
                                },
                                report: None,
                                verdict: Err(e),
                            };
                            act.finish(ctx, outcome);
                            return;
                        }
                    };
                    act.app_id = Some(app_id);
                    if act.kill_requested {
                        act.kill(ctx, app_id);
                    }
                    let (rm, args) = (act.rm.clone(), act.args.clone());
                    ctx.spawn(
                        async move { follow_application(&rm, &args, app_id).await }
                            .into_actor(act)
                            .map(|outcome, act, ctx| act.finish(ctx, outcome)),
                    );
                }),
        );
    }
}

impl Handler<KillFollowedApplication> for Client {
    type Result = ();

    fn handle(&mut self, _: KillFollowedApplication, ctx: &mut Context<Self>) {
        self.kill_requested = true;
        if let Some(app_id) = self.app_id {
            self.kill(ctx, app_id);
        }
    }
}
