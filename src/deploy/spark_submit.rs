//! SparkSubmit, at `/submit/spark-submit`: doSubmit's four actions for one command line.
//!
//! SUBMIT picks the child main class as prepareSubmitEnvironment does: in cluster mode
//! YarnClusterApplication, whose Client (`/submit/client`) submits the application and
//! follows it; in client mode the user's class itself, run in this process on its own
//! thread, whose SparkContext submits the executor launcher's application (a class that is
//! not registered fails with Spark's "Failed to load class", exit 101). KILL and
//! REQUEST_STATUS (which sparkyard supports on YARN, unlike Spark) kill an application or
//! print its report. The outcome is the process's exit status: 0 on success, 1 when Spark
//! would throw (the application failed, was killed, or its final status is undefined), the
//! user's status for a client-mode SparkUserAppException, 130 after Ctrl-C.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::{Actor, ActorFutureExt, AsyncContext, Context, Handler, Message, WrapFuture};
use tokio::sync::oneshot;

use super::client::{
    format_report_details, monitor_application, print_final_report, submit_application, Client, ClientArgs,
    ClientFinished, KillFollowedApplication, RmConnection,
};
use super::spark_submit_arguments::{SparkSubmitAction, SparkSubmitArguments};
use crate::conf::{self, SparkConf};
use crate::context::{AppEnv, AppError, ClientLauncher, DriverMode, DriverPaths, OutputSink};
use crate::rpc::EndpointRef;
use crate::runtime::blocking::block_on;
use crate::runtime::supervisor::StartChild;
use crate::runtime::{ActorPath, ChildSpec, Cluster, ExitReason, Me, Restart, Supervisor};
use crate::scheduler::messages::Shutdown;
use crate::scheduler::yarn_scheduler_endpoint::YarnSchedulerEndpoint;
use crate::yarn::protocol::ReportWait;
use crate::yarn::records::{ApplicationId, ApplicationReport, YarnApplicationState};
use crate::yarn::resource_manager::ResourceManager;

/// Spark's exit status when the main class cannot be loaded.
pub const CLASS_NOT_FOUND_EXIT_STATUS: i32 = 101;
/// The exit status after Ctrl-C (SIGINT).
pub const INTERRUPTED_EXIT_STATUS: i32 = 130;

/// What SparkSubmit runs.
pub struct SubmitPlan {
    pub args: SparkSubmitArguments,
    pub conf: Arc<SparkConf>,
    pub rm: RmConnection,
    /// The embedded RM, when there is one (client mode needs it).
    pub local_rm: Option<EndpointRef<ResourceManager>>,
    /// Where the exit status goes.
    pub done: Arc<Mutex<Option<oneshot::Sender<i32>>>>,
}

/// Ctrl-C on `sparkyard submit`.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct Interrupt;

/// The client-mode user main ended.
#[derive(Debug, Message)]
#[rtype(result = "()")]
struct UserMainFinished(Result<(), AppError>);

/// The SparkSubmit actor; see the module docs.
pub struct SparkSubmit {
    me: Me,
    plan: Arc<SubmitPlan>,
    interrupted: bool,
    client: Option<ActorPath>,
    launcher: Option<Arc<ClientModeLauncher>>,
}

impl SparkSubmit {
    pub fn new(me: Me, plan: Arc<SubmitPlan>) -> Self {
        SparkSubmit {
            me,
            plan,
            interrupted: false,
            client: None,
            launcher: None,
        }
    }

    fn done(&mut self, ctx: &mut Context<Self>, code: i32) {
        let code = if self.interrupted {
            INTERRUPTED_EXIT_STATUS
        } else {
            code
        };
        if let Some(tx) = self.plan.done.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = tx.send(code);
        }
        let me = self.me.clone();
        me.exit(ctx, ExitReason::Normal);
    }

    fn app_id_arg(&self, id: Option<&String>) -> Result<ApplicationId, String> {
        let id = id.ok_or_else(|| "no application id given".to_string())?;
        id.parse::<ApplicationId>()
    }

    fn submit(&mut self, ctx: &mut Context<Self>) {
        let args = &self.plan.args;
        let class = args.main_class.clone().unwrap_or_default();
        let cluster_mode = args.effective_deploy_mode() == "cluster";
        tracing::info!(
            class = class.as_str(),
            deploy_mode = args.effective_deploy_mode(),
            master = args.master.as_deref().unwrap_or("local-cluster"),
            "Submitting {class} in {} mode",
            args.effective_deploy_mode()
        );
        if cluster_mode {
            let client_args = ClientArgs {
                conf: self.plan.conf.clone(),
                main_class: class,
                primary_resource: args.primary_resource.clone().unwrap_or_default(),
                app_args: args.child_args.clone(),
                client_mode_driver: None,
            };
            let rm = self.plan.rm.clone();
            let report_to = ctx.address().recipient::<ClientFinished>();
            let parent = self.me.path().parent().unwrap_or_else(|| self.me.path().clone());
            let spec = ChildSpec::worker("client", move |_, me| {
                Client::new(me, rm.clone(), client_args.clone(), report_to.clone())
            })
            .restart(Restart::Temporary);
            self.client = Some(ActorPath::from_trusted(format!("{parent}/client")));
            let sup = self.me.endpoint::<Supervisor>(&parent);
            ctx.spawn(
                async move { sup.ask(StartChild(spec), Duration::from_secs(30)).await }
                    .into_actor(self)
                    .map(|res, act, ctx| {
                        if !matches!(res, Ok(Ok(_))) {
                            tracing::error!("cannot start the YARN Client: {res:?}");
                            act.done(ctx, 1);
                        }
                    }),
            );
            return;
        }
        self.run_main(ctx, class);
    }

    /// Client mode's runMain: the user's class on a thread of this process.
    fn run_main(&mut self, ctx: &mut Context<Self>, class: String) {
        let Some(main) = crate::apps::lookup(&class) else {
            tracing::error!("Failed to load class {class}.");
            eprintln!("Error: Failed to load class {class}.");
            self.done(ctx, CLASS_NOT_FOUND_EXIT_STATUS);
            return;
        };
        let Some(rm) = self.plan.local_rm.clone() else {
            eprintln!("Error: client mode needs the embedded cluster; against a running node use --deploy-mode cluster");
            self.done(ctx, 1);
            return;
        };
        let launcher = Arc::new(ClientModeLauncher {
            rm,
            class: class.clone(),
            primary_resource: self.plan.args.primary_resource.clone().unwrap_or_default(),
            app: Mutex::new(None),
            final_report: Mutex::new(None),
        });
        self.launcher = Some(launcher.clone());
        let parent = self.me.path().parent().unwrap_or_else(|| self.me.path().clone());
        let env = AppEnv {
            class_name: class.clone(),
            args: self.plan.args.child_args.clone(),
            conf: self.plan.conf.clone(),
            cluster: self.me.cluster().clone(),
            mode: DriverMode::Client {
                parent,
                launcher: launcher.clone(),
            },
            output: OutputSink::stdout(),
            cancel: self.me.cancel_token().child(),
            host: crate::cli::local_hostname(),
            app_id: String::new(),
            attempt: 1,
        };
        let me: EndpointRef<SparkSubmit> = self.me.endpoint(self.me.path());
        let log = self.me.log_ctx().clone();
        let spawned = std::thread::Builder::new().name("main".into()).spawn(move || {
            let _scope = crate::logs::LogScope::enter(&log);
            let outcome = crate::runtime::panic::catch(|| main(&env))
                .unwrap_or_else(|p| Err(AppError::Exception(format!("java.lang.RuntimeException: {p}"))));
            let _ = me.tell(UserMainFinished(outcome));
        });
        if let Err(e) = spawned {
            eprintln!("Error: cannot start the application's thread: {e}");
            self.done(ctx, 1);
        }
    }
}

impl Actor for SparkSubmit {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let rm = self.plan.rm.clone();
        match self.plan.args.action {
            SparkSubmitAction::Submit => self.submit(ctx),
            SparkSubmitAction::Kill => {
                let id = self.app_id_arg(self.plan.args.submission_to_kill.as_ref());
                ctx.spawn(
                    async move {
                        let id = id?;
                        tracing::info!(app_id = %id, "Killing application {id}");
                        rm.kill(id, "killed with sparkyard submit --kill").await?;
                        let report = monitor_application(&rm, id, Duration::from_millis(200), false).await;
                        Ok::<ApplicationReport, String>(report)
                    }
                    .into_actor(self)
                    .map(|res, act, ctx| match res {
                        Ok(report) => {
                            println!(
                                "Application {} is {} (final status {})",
                                report.app_id, report.state, report.final_status
                            );
                            act.done(ctx, 0)
                        }
                        Err(e) => {
                            eprintln!("Error: {e}");
                            act.done(ctx, 1)
                        }
                    }),
                );
            }
            SparkSubmitAction::RequestStatus => {
                let id = self.app_id_arg(self.plan.args.submission_to_request_status_for.as_ref());
                ctx.spawn(
                    async move {
                        let id = id?;
                        rm.report(id, None).await?.map_err(|e| e.to_string())
                    }
                    .into_actor(self)
                    .map(|res, act, ctx| match res {
                        Ok(r) => {
                            println!(
                                "Application report for {} (state: {}){}",
                                r.app_id,
                                r.state,
                                format_report_details(&r)
                            );
                            act.done(ctx, 0)
                        }
                        Err(e) => {
                            eprintln!("Error: {e}");
                            act.done(ctx, 1)
                        }
                    }),
                );
            }
            SparkSubmitAction::PrintVersion => self.done(ctx, 0),
        }
    }
}

impl Handler<ClientFinished> for SparkSubmit {
    type Result = ();

    fn handle(&mut self, msg: ClientFinished, ctx: &mut Context<Self>) {
        match msg.0.verdict {
            Ok(()) => self.done(ctx, 0),
            Err(e) => {
                tracing::error!("Exception in thread \"main\" org.apache.spark.SparkException: {e}");
                eprintln!("Exception in thread \"main\" org.apache.spark.SparkException: {e}");
                self.done(ctx, 1)
            }
        }
    }
}

impl Handler<UserMainFinished> for SparkSubmit {
    type Result = ();

    fn handle(&mut self, msg: UserMainFinished, ctx: &mut Context<Self>) {
        if let Some(report) = self.launcher.as_ref().and_then(|l| l.final_report()) {
            print_final_report(&report);
        }
        match msg.0 {
            Ok(()) => self.done(ctx, 0),
            Err(AppError::Exit(code)) => self.done(ctx, code),
            Err(AppError::Exception(e)) => {
                tracing::error!("Exception in thread \"main\" {e}");
                eprintln!("Exception in thread \"main\" {e}");
                self.done(ctx, 1)
            }
        }
    }
}

impl Handler<Interrupt> for SparkSubmit {
    type Result = ();

    fn handle(&mut self, _: Interrupt, _: &mut Context<Self>) {
        if self.interrupted {
            return;
        }
        self.interrupted = true;
        tracing::warn!("Interrupted: killing the application");
        if let Some(client) = &self.client {
            let _ = self.me.endpoint::<Client>(client).tell(KillFollowedApplication);
        }
        if let Some(launcher) = &self.launcher {
            launcher.kill(self.me.cluster());
            self.me.cancel_token().cancel("interrupted");
        }
    }
}

/// Client mode's YarnClientSchedulerBackend.start/stop over the embedded ResourceManager.
#[derive(Debug)]
pub struct ClientModeLauncher {
    rm: EndpointRef<ResourceManager>,
    class: String,
    primary_resource: String,
    app: Mutex<Option<ApplicationId>>,
    final_report: Mutex<Option<ApplicationReport>>,
}

impl ClientModeLauncher {
    fn final_report(&self) -> Option<ApplicationReport> {
        self.final_report
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn kill(&self, cluster: &Cluster) {
        let app = *self.app.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(app) = app {
            let rm = RmConnection::Local(self.rm.clone());
            cluster.spawn_task(async move {
                let _ = rm.kill(app, "interrupted (Ctrl-C on sparkyard submit)").await;
            });
        }
    }
}

fn launch_bound(conf: &SparkConf) -> Duration {
    conf.get(&conf::AM_MAX_WAIT_TIME)
        .unwrap_or(Duration::from_secs(100))
        + Duration::from_secs(60)
}

impl ClientLauncher for ClientModeLauncher {
    fn launch(&self, env: &AppEnv, driver: &DriverPaths) -> Result<String, String> {
        let rm = RmConnection::Local(self.rm.clone());
        let args = ClientArgs {
            conf: env.conf.clone(),
            main_class: self.class.clone(),
            primary_resource: self.primary_resource.clone(),
            app_args: Vec::new(),
            client_mode_driver: Some(driver.yarn_scheduler.clone()),
        };
        let bound = launch_bound(&env.conf);
        let interval = env
            .conf
            .get(&conf::REPORT_INTERVAL)
            .unwrap_or(Duration::from_secs(1));
        let rm2 = rm.clone();
        // Submit, then wait until the application runs (waitForApplication).
        let started = block_on(
            &env.cluster,
            async move {
                let id = submit_application(&rm2, &args).await?;
                let mut known = None;
                loop {
                    let wait = known.map(|k| ReportWait { known: k, max: interval });
                    let r = rm2.report(id, wait).await?.map_err(|e| e.to_string())?;
                    match r.state {
                        YarnApplicationState::Running => return Ok::<(ApplicationId, ApplicationReport), String>((id, r)),
                        s if s.is_final() => {
                            return Err(format!(
                                "Yarn application has already ended! It might have been killed or unable to launch application master. ({})",
                                r.diagnostics
                            ))
                        }
                        _ => known = Some((r.state, r.final_status)),
                    }
                }
            },
            bound,
        )
        .map_err(|e| e.to_string())??;
        let (app_id, _) = started;
        *self.app.lock().unwrap_or_else(|p| p.into_inner()) = Some(app_id);
        tracing::info!(app_id = %app_id, "Application {app_id} has started running.");
        // The "Yarn application state monitor": if the application ends while the driver
        // runs, the driver is told to stop.
        let cancel = env.cancel.clone();
        env.cluster.spawn_task(async move {
            let report = monitor_application(&rm, app_id, interval, false).await;
            if !cancel.is_cancelled() && report.state != YarnApplicationState::Finished {
                tracing::error!(app_id = %app_id, "Yarn application has already exited with state {}!", report.state);
                cancel.cancel(format!("the YARN application ended with state {}", report.state));
            }
        });
        Ok(app_id.to_string())
    }

    fn stopped(&self, env: &AppEnv, driver: &DriverPaths) {
        let yse: EndpointRef<YarnSchedulerEndpoint> = env.cluster.endpoint(&driver.yarn_scheduler);
        let _ = yse.tell(Shutdown { exit_code: 0 });
        let app = *self.app.lock().unwrap_or_else(|p| p.into_inner());
        let Some(app) = app else { return };
        let rm = RmConnection::Local(self.rm.clone());
        let report = block_on(
            &env.cluster,
            async move { monitor_application(&rm, app, Duration::from_millis(500), false).await },
            Duration::from_secs(60),
        );
        if let Ok(report) = report {
            *self.final_report.lock().unwrap_or_else(|p| p.into_inner()) = Some(report);
        }
    }
}
