//! ApplicationMaster: the AM of one application attempt, at `<container>/am/application-master`.
//!
//! Layer: deploy (the Spark side: spark-submit, the YARN Client, the ApplicationMaster; above context).
//!
//! Cluster mode (`runDriver`): it starts the user's main on a separate "Driver" thread and
//! waits up to `spark.yarn.am.waitTime` for the SparkContext (`sparkContextPromise`). When
//! the context reports in (`sparkContextInitialized`), the AM registers with the
//! ResourceManager, creates its allocator (the container launcher, the YarnAllocator, the
//! AMEndpoint, a first allocation, then the reporter), and resumes the driver — seed 001's
//! eight steps. When the user's main returns or throws, the AM finishes.
//! Client mode (`runExecutorLauncher`): there is no user code here; the driver runs in the
//! submitting process, and the AM registers, allocates executors for it, and finishes when
//! the driver stops.
//!
//! `finish(status, code, message)` is Spark's: the first call wins; in cluster mode a finish
//! before registration becomes (FAILED, 13). Then, as the shutdown hook does, the driver is
//! stopped if it still runs, the AM unregisters (only if the status is SUCCEEDED or this is
//! the last attempt, so YARN retries a failed attempt), and the AM ends with the exit code:
//! as the container's significant role, its exit status is the container's.
//!
//! Stopped from outside before it finished (a stop kill, its container stopped: what the
//! AM's JVM sees as SIGTERM), it runs Spark's shutdown hook before it ends: finish with the
//! default final status (cluster mode FAILED, client mode UNDEFINED), exit code 16
//! (EXIT_EARLY) and "Shutdown hook called before final status was reported.", then the
//! same driver stop and unregistration (on the last attempt, or when SUCCEEDED). It then
//! ends with the stop's own status (143 for a kill, as a JVM ending on SIGTERM exits 143
//! whatever its hooks decided). A stop because its node is going down runs no hook: a lost
//! node's containers vanish, and YARN retries the attempt without counting it.

use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::Arc;
use std::time::Duration;

use actix::{
    Actor, ActorContext, ActorFutureExt, AsyncContext, Context, Handler, Message, Running, SpawnHandle,
    WrapFuture,
};

use super::am_args::AmArgs;
use super::am_endpoint::AmEndpoint;
use super::executor_runnable::ContainerLauncher;
use super::reporter::Reporter;
use super::yarn_allocator::{AllocateResources, AllocatorConfig, AllocatorKept, YarnAllocator};
use crate::conf::{self, SparkConf};
use crate::context::{
    stop_driver, AppEnv, AppError, Applications, ClusterApplicationMaster, DriverMode, DriverPaths,
};
use crate::deploy::yarn_allocator::AllocatorProtocol;
use crate::executor::backend::DRIVER_RESTART_WAIT;
use crate::logs::output::OutputSink;
use crate::rpc::{AskError, EndpointRef};
use crate::runtime::supervisor::StartChild;
use crate::runtime::watch::{back_at, ended_by_failure};
use crate::runtime::SupervisorProtocol;
use crate::runtime::{ActorPath, CancelToken, ChildSpec, ExitReason, Kept, Me, Restart, Terminated};
use crate::yarn::launcher::{Launch, Process};
use crate::yarn::protocol::ApplicationMasterProtocol;
use crate::yarn::protocol::{FinishApplicationMaster, RegisterApplicationMaster};
use crate::yarn::records::{ApplicationAttemptId, Container, FinalApplicationStatus};
use crate::yarn::resource_manager::ask_rm;

/// ApplicationMaster exit codes ("no reason behind the values").
pub mod exit_code {
    pub const EXIT_SUCCESS: i32 = 0;
    pub const EXIT_UNCAUGHT_EXCEPTION: i32 = 10;
    pub const EXIT_MAX_EXECUTOR_FAILURES: i32 = 11;
    pub const EXIT_REPORTER_FAILURE: i32 = 12;
    pub const EXIT_SC_NOT_INITED: i32 = 13;
    pub const EXIT_SECURITY: i32 = 14;
    pub const EXIT_EXCEPTION_USER_CLASS: i32 = 15;
    pub const EXIT_EARLY: i32 = 16;
    pub const EXIT_DISCONNECTED: i32 = 17;
}
use exit_code::*;

/// Which of Spark's two AM classes this is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AmMode {
    /// org.apache.spark.deploy.yarn.ApplicationMaster: the driver runs inside.
    Cluster,
    /// org.apache.spark.deploy.yarn.ExecutorLauncher: the driver runs in the client.
    Client,
}

/// What the NodeManager gives the AM about its container.
#[derive(Clone, Debug)]
pub struct AmContext {
    pub mode: AmMode,
    pub args: AmArgs,
    pub attempt_id: ApplicationAttemptId,
    pub container: Container,
    pub conf: Arc<SparkConf>,
    pub output: OutputSink,
    pub rm: ActorPath,
    /// The applications the container's process ships (cluster mode runs the user's class).
    pub applications: Applications,
}

/// The user's SparkContext is up: register, allocate, then answer on `resume`.
#[derive(Message)]
#[rtype(result = "()")]
pub struct SparkContextInitialized {
    pub driver: DriverPaths,
    pub resume: SyncSender<Result<(), String>>,
}

/// The user's main returned or threw (sent from the Driver thread).
#[derive(Message)]
#[rtype(result = "()")]
pub struct UserClassFinished {
    pub outcome: Result<(), AppError>,
}

/// Ends the attempt (the reporter's verdicts, AMEndpoint's Shutdown).
#[derive(Clone, Debug, Message)]
#[rtype(result = "()")]
pub struct Finish {
    pub status: FinalApplicationStatus,
    pub code: i32,
    pub message: String,
}

/// The ApplicationMaster at a path, as the driver it starts sees it (the hook the context
/// calls where Spark's YarnClusterScheduler.postStartHook calls sparkContextInitialized).
#[derive(Debug)]
struct AmHandle(ActorPath);

impl ClusterApplicationMaster for AmHandle {
    fn spark_context_initialized(&self, env: &AppEnv, driver: &DriverPaths) -> Result<(), String> {
        spark_context_initialized(env, &self.0, driver)
    }
}

/// Called on the Driver thread by SparkContext's constructor (cluster mode): tells the AM
/// and waits until it resumes the driver. Returns why not, if it will not.
pub fn spark_context_initialized(env: &AppEnv, am: &ActorPath, paths: &DriverPaths) -> Result<(), String> {
    let (tx, rx) = sync_channel(1);
    let ep: EndpointRef<AmLifecycleProtocol> = env.cluster.endpoint(am);
    ep.tell(SparkContextInitialized {
        driver: paths.clone(),
        resume: tx,
    })
    .map_err(|e| format!("the ApplicationMaster is gone: {e}"))?;
    let conf = &env.conf;
    let bound = conf
        .get(&conf::AM_MAX_WAIT_TIME)
        .unwrap_or(Duration::from_secs(100))
        + conf
            .get(&conf::RPC_ASK_TIMEOUT)
            .unwrap_or(Duration::from_secs(120))
            * 3;
    match rx.recv_timeout(bound) {
        Ok(result) => result,
        Err(_) => Err("the ApplicationMaster did not resume the driver".into()),
    }
}

/// The shutdown hook's diagnostics when the AM is stopped before it reported a final status.
pub const SHUTDOWN_HOOK_MESSAGE: &str = "Shutdown hook called before final status was reported.";

/// How often the first allocation is tried while the allocator cannot be reached, and the
/// pause between tries.
const ALLOCATOR_TRIES: u32 = 100;
const RETRY_DELAY: Duration = Duration::from_millis(10);

/// The AM subtree's segment names.
pub const AM_SEGMENT: &str = "am";
const LAUNCHER: &str = "launcher";
const ALLOCATOR: &str = "allocator";
const AM_ENDPOINT: &str = "am-endpoint";
const REPORTER: &str = "reporter";

/// The ApplicationMaster actor; see the module docs.
pub struct ApplicationMaster {
    me: Me,
    ctx: AmContext,
    rm: EndpointRef<ApplicationMasterProtocol>,
    /// The `am` supervisor (this actor's parent), under which the AM's other actors start.
    am_sup: ActorPath,
    registered: bool,
    unregistered: bool,
    finished: bool,
    shutting_down: bool,
    /// A stop was asked for from outside: the AM ends once the shutdown hook's work is done.
    stopped_from_outside: bool,
    /// The shutdown hook reported the final status (the stop came before any finish): the AM
    /// then ends with the stop's own reason, as a process ending on SIGTERM.
    finished_by_hook: bool,
    /// The incarnation is ending on its own decision (`exit` or a stop after the hook).
    exiting: bool,
    final_status: FinalApplicationStatus,
    exit_code: i32,
    final_msg: String,
    driver: Option<DriverPaths>,
    resume: Option<SyncSender<Result<(), String>>>,
    wait_timer: Option<SpawnHandle>,
    user_cancel: CancelToken,
    user_done: bool,
    ask_timeout: Duration,
}

impl ApplicationMaster {
    pub fn new(me: Me, ctx: AmContext) -> ApplicationMaster {
        let rm = me.endpoint(&ctx.rm);
        let am_sup = me.path().parent().unwrap_or_else(|| me.path().clone());
        let user_cancel = me.cancel_token().child();
        let ask_timeout = ctx
            .conf
            .get(&conf::RPC_ASK_TIMEOUT)
            .unwrap_or(Duration::from_secs(120));
        let default_final_status = match ctx.mode {
            AmMode::Cluster => FinalApplicationStatus::Failed,
            AmMode::Client => FinalApplicationStatus::Undefined,
        };
        ApplicationMaster {
            me,
            ctx,
            rm,
            am_sup,
            registered: false,
            unregistered: false,
            finished: false,
            shutting_down: false,
            stopped_from_outside: false,
            finished_by_hook: false,
            exiting: false,
            // getDefaultFinalStatus: what the shutdown hook reports if nothing else was.
            final_status: default_final_status,
            exit_code: EXIT_SUCCESS,
            final_msg: String::new(),
            driver: None,
            resume: None,
            wait_timer: None,
            user_cancel,
            user_done: false,
            ask_timeout,
        }
    }

    fn child_path(&self, seg: &str) -> ActorPath {
        ActorPath::from_trusted(format!("{}/{seg}", self.am_sup))
    }

    /// `maxAppAttempts = min(spark.yarn.maxAppAttempts?, yarn.resourcemanager.am.max-attempts)`.
    fn is_last_attempt(&self) -> bool {
        let yarn_max = self.ctx.conf.get(&conf::RM_AM_MAX_ATTEMPTS).unwrap_or(2);
        let max = match self.ctx.conf.get(&conf::MAX_APP_ATTEMPTS).ok().flatten() {
            Some(spark_max) => spark_max.min(yarn_max),
            None => yarn_max,
        };
        self.ctx.attempt_id.attempt >= max
    }

    fn start_user_class(&mut self, ctx: &mut Context<Self>) {
        let class = self.ctx.args.user_class.clone().unwrap_or_default();
        let Some(main) = self.ctx.applications.load(&class) else {
            self.finish(
                ctx,
                FinalApplicationStatus::Failed,
                EXIT_UNCAUGHT_EXCEPTION,
                format!("Uncaught exception: java.lang.ClassNotFoundException: {class}"),
            );
            return;
        };
        let env = AppEnv {
            class_name: class.clone(),
            args: self.ctx.args.user_args.clone(),
            conf: self.ctx.conf.clone(),
            cluster: self.me.cluster().clone(),
            mode: DriverMode::Cluster {
                am: Arc::new(AmHandle(self.me.path().clone())),
                parent: self.am_sup.clone(),
            },
            output: self.ctx.output.clone(),
            cancel: self.user_cancel.clone(),
            host: self.ctx.container.node.clone(),
            app_id: self.ctx.attempt_id.app.to_string(),
            attempt: self.ctx.attempt_id.attempt,
        };
        let am: EndpointRef<AmLifecycleProtocol> = self.me.endpoint(self.me.path());
        let log = self.me.log_ctx().clone();
        tracing::info!(
            class = class.as_str(),
            "Starting the user application in a separate Thread"
        );
        let spawned = std::thread::Builder::new().name("Driver".into()).spawn(move || {
            let _scope = crate::logs::LogScope::enter(&log);
            let outcome = crate::runtime::panic::catch(|| main(&env)).unwrap_or_else(|panic| {
                Err(AppError::Exception(format!(
                    "java.lang.RuntimeException: {panic}"
                )))
            });
            let _ = am.tell(UserClassFinished { outcome });
        });
        if let Err(e) = spawned {
            self.finish(
                ctx,
                FinalApplicationStatus::Failed,
                EXIT_UNCAUGHT_EXCEPTION,
                format!("Uncaught exception: cannot start the Driver thread: {e}"),
            );
            return;
        }
        let wait = self
            .ctx
            .conf
            .get(&conf::AM_MAX_WAIT_TIME)
            .unwrap_or(Duration::from_secs(100));
        tracing::info!("Waiting for spark context initialization...");
        let clock = self.me.clock().clone();
        self.wait_timer = Some(crate::runtime::timers::run_later(
            ctx,
            &clock,
            wait,
            |act: &mut Self, ctx| {
                act.wait_timer = None;
                if act.driver.is_none() && !act.finished {
                    act.finish(
                        ctx,
                        FinalApplicationStatus::Failed,
                        EXIT_SC_NOT_INITED,
                        "Timed out waiting for SparkContext.".into(),
                    );
                }
            },
        ));
    }

    /// registerAM, then createAllocator; `then` runs once the allocator is up (or failed).
    fn register_and_allocate(&mut self, ctx: &mut Context<Self>, driver_yse: ActorPath) {
        let register = RegisterApplicationMaster {
            attempt_id: self.ctx.attempt_id,
            host: self.ctx.container.node.clone(),
            rpc_port: match self.ctx.mode {
                AmMode::Cluster => 0,
                AmMode::Client => -1,
            },
            tracking_url: String::new(),
        };
        tracing::info!(attempt_id = %self.ctx.attempt_id, "Registering the ApplicationMaster");
        let (rm, timeout) = (self.rm.clone(), self.ask_timeout);
        ctx.spawn(
            async move { ask_rm(&rm, register, timeout).await }
                .into_actor(self)
                .map(move |res, act, ctx| match res {
                    Ok(Ok(_)) => {
                        act.registered = true;
                        tracing::info!(attempt_id = %act.ctx.attempt_id, "Registered with the ResourceManager");
                        act.create_allocator(ctx, driver_yse);
                    }
                    Ok(Err(e)) => act.fail_startup(ctx, format!("Uncaught exception: {e}")),
                    Err(e) => act.fail_startup(ctx, format!("Uncaught exception: {e}")),
                }),
        );
    }

    fn fail_startup(&mut self, ctx: &mut Context<Self>, message: String) {
        self.resume_driver(Err(message.clone()));
        self.finish(
            ctx,
            FinalApplicationStatus::Failed,
            EXIT_UNCAUGHT_EXCEPTION,
            message,
        );
    }

    fn resume_driver(&mut self, result: Result<(), String>) {
        if let Some(resume) = self.resume.take() {
            let _ = resume.send(result);
        }
    }

    /// The AM's own actors, in Spark's order: the launcher pool and the allocator, then
    /// the AMEndpoint (so the allocator exists before any RequestExecutors), then one
    /// allocation, then the reporter.
    fn create_allocator(&mut self, ctx: &mut Context<Self>, driver_yse: ActorPath) {
        let conf = self.ctx.conf.clone();
        let supervision = crate::conf::supervision(&conf).unwrap_or_default();
        let sup = self.me.endpoint::<SupervisorProtocol>(&self.am_sup);
        let allocator_path = self.child_path(ALLOCATOR);
        let launcher_path = self.child_path(LAUNCHER);
        let reporter_path = self.child_path(REPORTER);
        let am_path = self.me.path().clone();
        let rm_path = self.ctx.rm.clone();
        let attempt = self.ctx.attempt_id;
        let driver_endpoint = match self.ctx.mode {
            AmMode::Cluster => self.driver.as_ref().map(|d| d.driver_endpoint.clone()),
            AmMode::Client => driver_yse
                .parent()
                .map(|p| ActorPath::from_trusted(format!("{p}/driver-endpoint"))),
        }
        .unwrap_or_else(|| driver_yse.clone());
        let mut config =
            AllocatorConfig::from_conf(&conf, attempt, &self.ctx.container.node, driver_endpoint.clone());
        // Cluster mode: the driver is in this process; its stages' progress goes to YARN.
        if matches!(self.ctx.mode, AmMode::Cluster) && self.driver.is_some() {
            config.driver_progress = Some(driver_endpoint);
        }
        let launcher_threads = conf.get(&conf::CONTAINER_LAUNCH_MAX_THREADS).unwrap_or(25) as usize;
        let timeout = self.ask_timeout;
        let shutdown = Duration::from_secs(1).max(supervision.shutdown_timeout);
        let (lp, ap, rp_, yse) = (
            launcher_path.clone(),
            allocator_path.clone(),
            reporter_path.clone(),
            driver_yse.clone(),
        );
        let (c1, c2) = (conf.clone(), conf.clone());
        let ap0 = ap.clone();
        let c0 = conf.clone();
        let launcher = ChildSpec::worker(LAUNCHER, move |_, me| {
            ContainerLauncher::new(me, launcher_threads, timeout, ap0.clone()).with_redaction_of(&c0)
        })
        .restart(Restart::Permanent);
        let (rm1, lp1, yse1) = (rm_path.clone(), lp.clone(), yse.clone());
        // The allocator's state outlives its restarts (held by this spec, so by `am`).
        let allocator_state = Kept::new(AllocatorKept::default());
        let allocator = ChildSpec::worker(ALLOCATOR, move |_, me| {
            YarnAllocator::new(
                me,
                config.clone(),
                rm1.clone(),
                lp1.clone(),
                yse1.clone(),
                c1.clone(),
                allocator_state.clone(),
            )
        });
        let (ap1, rp1, am1) = (ap.clone(), rp_.clone(), am_path.clone());
        let endpoint = ChildSpec::worker(AM_ENDPOINT, move |_, me| {
            AmEndpoint::new(me, ap1.clone(), rp1.clone(), am1.clone(), yse.clone())
        });
        let (ap2, am2) = (ap.clone(), am_path.clone());
        let reporter = ChildSpec::worker(REPORTER, move |_, me| {
            Reporter::new(me, &c2, ap2.clone(), am2.clone())
        })
        .shutdown(crate::runtime::Shutdown::Timeout(shutdown));
        let allocator_ref: EndpointRef<AllocatorProtocol> = self.me.endpoint(&allocator_path);
        let clock = self.me.clock().clone();
        let fut = async move {
            for spec in [launcher, allocator, endpoint] {
                sup.ask(StartChild(spec), timeout)
                    .await
                    .map_err(|e| e.to_string())?
                    .map_err(|e| e.to_string())?;
            }
            // The first allocation; a restarting allocator (the ask died with its mailbox,
            // or its new incarnation is not registered yet) is asked again.
            let mut tries = 0;
            loop {
                tries += 1;
                match allocator_ref.ask(AllocateResources, timeout).await {
                    Err(AskError::Died { .. } | AskError::Lookup(_)) if tries < ALLOCATOR_TRIES => {
                        clock.sleep(RETRY_DELAY).await
                    }
                    answer => {
                        answer.map_err(|e| e.to_string())?.map_err(|e| e.to_string())?;
                        break;
                    }
                }
            }
            sup.ask(StartChild(reporter), timeout)
                .await
                .map_err(|e| e.to_string())?
                .map_err(|e| e.to_string())?;
            Ok::<(), String>(())
        };
        ctx.spawn(fut.into_actor(self).map(|res, act, ctx| match res {
            Ok(()) => {
                tracing::info!("Started the allocator, the AMEndpoint and the reporter; resuming the driver");
                act.resume_driver(Ok(()));
            }
            Err(e) => act.fail_startup(ctx, format!("Uncaught exception: {e}")),
        }));
    }

    /// Spark's finish(): the first call wins; then the shutdown hook's work.
    fn finish(
        &mut self,
        ctx: &mut Context<Self>,
        status: FinalApplicationStatus,
        code: i32,
        message: String,
    ) {
        if self.finished {
            return;
        }
        let (status, code) = if !self.registered && self.ctx.mode == AmMode::Cluster {
            (FinalApplicationStatus::Failed, EXIT_SC_NOT_INITED)
        } else {
            (status, code)
        };
        let limit = self.ctx.conf.get(&conf::AM_FINAL_MSG_LIMIT).unwrap_or(1 << 20) as usize;
        self.final_msg = abbreviate(&message, limit);
        self.final_status = status;
        self.exit_code = code;
        self.finished = true;
        tracing::info!(
            final_status = %status,
            exit_code = code,
            "Final app status: {status}, exitCode: {code}{}",
            if message.is_empty() { String::new() } else { format!(", (reason: {message})") }
        );
        if let Some(h) = self.wait_timer.take() {
            ctx.cancel_future(h);
        }
        if !self.user_done {
            self.user_cancel.cancel("the ApplicationMaster finished");
        }
        self.resume_driver(Err(format!("the ApplicationMaster finished: {message}")));
        self.shutdown(ctx);
    }

    /// The shutdown hook: stop the reporter and the driver, unregister (SUCCEEDED or last
    /// attempt only), then end with the exit code.
    fn shutdown(&mut self, ctx: &mut Context<Self>) {
        if self.shutting_down {
            return;
        }
        self.shutting_down = true;
        let unregister = self.registered
            && !self.unregistered
            && (self.final_status == FinalApplicationStatus::Succeeded || self.is_last_attempt());
        if !unregister && self.registered {
            tracing::info!(
                attempt_id = %self.ctx.attempt_id,
                "Not unregistering: the attempt failed and is not the last, so YARN will try again"
            );
        }
        let sup = self.me.endpoint::<SupervisorProtocol>(&self.am_sup);
        let cluster = self.me.cluster().clone();
        let driver = self.driver.clone().filter(|_| self.ctx.mode == AmMode::Cluster);
        let rm = self.rm.clone();
        let finish = FinishApplicationMaster {
            attempt_id: self.ctx.attempt_id,
            final_status: self.final_status,
            diagnostics: self.final_msg.clone(),
            tracking_url: String::new(),
        };
        let timeout = self.ask_timeout;
        let fut = async move {
            let _ = sup
                .ask(
                    crate::runtime::supervisor::TerminateChild(REPORTER.into()),
                    timeout,
                )
                .await;
            if let Some(paths) = driver {
                if cluster.registry().contains(&paths.driver) {
                    stop_driver(&cluster, &paths, timeout).await;
                }
            }
            if unregister {
                tracing::info!(
                    final_status = %finish.final_status,
                    "Unregistering ApplicationMaster with {} (diag message: {})",
                    finish.final_status,
                    finish.diagnostics
                );
                return match ask_rm(&rm, finish, timeout).await {
                    Ok(Ok(())) => Ok(true),
                    Ok(Err(e)) => Err(e.to_string()),
                    Err(e) => Err(e.to_string()),
                };
            }
            Ok(false)
        };
        ctx.spawn(fut.into_actor(self).map(|res, act, ctx| {
            match res {
                Ok(true) => act.unregistered = true,
                Ok(false) => {}
                // From the shutdown hook Spark ignores it with a warning (the RM may have
                // ended the attempt already, as on a kill); otherwise it is an error.
                Err(e) if act.finished_by_hook || act.stopped_from_outside => tracing::warn!(
                    "Ignoring Exception while stopping ApplicationMaster from shutdown hook: {e}"
                ),
                Err(e) => tracing::error!("Failed to unregister the ApplicationMaster: {e}"),
            }
            act.exiting = true;
            if act.finished_by_hook {
                // The incarnation ends as the stop says (a process ending on SIGTERM exits
                // 143 whatever its hooks decided).
                ctx.stop();
                return;
            }
            let me = act.me.clone();
            me.exit(
                ctx,
                ExitReason::Exit {
                    code: act.exit_code,
                    message: act.final_msg.clone(),
                },
            );
        }));
    }

    /// Whether this stop is what the AM's JVM would see as SIGTERM, so its shutdown hook
    /// runs: the AM itself stopped by a kill, or its container (its `am` supervisor) asked to
    /// stop from outside (the NodeManager stopping it, a kill). Not when `am` gives up
    /// (beyond its restart intensity: the JVM dies of it), nor when its node is going down
    /// (an ancestor above the container is being stopped in this process: a lost node's
    /// containers vanish).
    fn stopped_by_signal(&self) -> bool {
        let killed = matches!(
            self.me.stop_request_at(self.me.path()),
            Some(ExitReason::Killed { .. })
        );
        if !killed && self.me.stop_request_at(&self.am_sup).is_none() {
            return false;
        }
        let container = self.am_sup.parent();
        let mut above = container.as_ref().and_then(ActorPath::parent);
        let registry = self.me.cluster().registry();
        while let Some(path) = above {
            // An ancestor this process does not hold lives in another one (a container's
            // process holds only its container; the node is the NodeManager's process): its
            // end would reach this process as a signal, not as an ancestor ending here.
            let Some(ancestor) = registry.shared(&path) else {
                break;
            };
            if ancestor.is_ending() {
                tracing::info!("The ApplicationMaster's node is going down; no shutdown hook runs");
                return false;
            }
            above = path.parent();
        }
        true
    }
}

/// Commons' StringUtils.abbreviate: at most `limit` characters, ending in "..." if cut.
fn abbreviate(message: &str, limit: usize) -> String {
    if message.chars().count() <= limit || limit < 4 {
        return message.to_string();
    }
    let mut out: String = message.chars().take(limit - 3).collect();
    out.push_str("...");
    out
}

impl Actor for ApplicationMaster {
    type Context = Context<Self>;

    /// A stop from outside (SIGTERM to the AM's JVM) runs Spark's shutdown hook first; see
    /// the module docs.
    fn stopping(&mut self, ctx: &mut Context<Self>) -> Running {
        if self.exiting {
            return Running::Stop;
        }
        if self.stopped_from_outside {
            // The hook is running; it stops the actor when done.
            return Running::Continue;
        }
        if !self.stopped_by_signal() {
            return Running::Stop;
        }
        self.stopped_from_outside = true;
        tracing::info!(
            attempt_id = %self.ctx.attempt_id,
            last_attempt = self.is_last_attempt(),
            "Shutdown hook called"
        );
        if !self.finished {
            self.finished_by_hook = true;
            let status = self.final_status;
            self.finish(ctx, status, EXIT_EARLY, SHUTDOWN_HOOK_MESSAGE.into());
        }
        // finish() runs the hook's work (driver stop, unregistration) and then ends the
        // actor; one already finished ends with its own exit code when that work is done.
        Running::Continue
    }

    fn started(&mut self, ctx: &mut Context<Self>) {
        tracing::info!(attempt_id = %self.ctx.attempt_id, "ApplicationAttemptId: {}", self.ctx.attempt_id);
        match self.ctx.mode {
            AmMode::Cluster => self.start_user_class(ctx),
            AmMode::Client => {
                // The driver's URL (with its process's address when it serves its actors).
                let cluster = self.me.cluster().clone();
                let Some(driver) = self
                    .ctx
                    .args
                    .user_args
                    .first()
                    .and_then(|url| cluster.resolve_url(url).ok())
                else {
                    self.finish(
                        ctx,
                        FinalApplicationStatus::Failed,
                        EXIT_UNCAUGHT_EXCEPTION,
                        "Uncaught exception: the executor launcher was given no driver address".into(),
                    );
                    return;
                };
                tracing::info!(driver = driver.as_str(), "Connecting to the driver at {driver}");
                let me = self.me.clone();
                me.watch(ctx, &driver);
                self.register_and_allocate(ctx, driver);
            }
        }
    }
}

impl Handler<SparkContextInitialized> for ApplicationMaster {
    type Result = ();

    fn handle(&mut self, msg: SparkContextInitialized, ctx: &mut Context<Self>) {
        if self.finished {
            let _ = msg
                .resume
                .send(Err("the ApplicationMaster already finished".into()));
            return;
        }
        if let Some(h) = self.wait_timer.take() {
            ctx.cancel_future(h);
        }
        let yse = msg.driver.yarn_scheduler.clone();
        self.driver = Some(msg.driver);
        self.resume = Some(msg.resume);
        self.register_and_allocate(ctx, yse);
    }
}

impl Handler<UserClassFinished> for ApplicationMaster {
    type Result = ();

    fn handle(&mut self, msg: UserClassFinished, ctx: &mut Context<Self>) {
        self.user_done = true;
        match msg.outcome {
            Ok(()) => {
                tracing::info!("The user application's main returned");
                self.finish(
                    ctx,
                    FinalApplicationStatus::Succeeded,
                    EXIT_SUCCESS,
                    String::new(),
                );
            }
            Err(AppError::Exit(code)) => self.finish(
                ctx,
                FinalApplicationStatus::Failed,
                code,
                format!("User application exited with status {code}"),
            ),
            Err(AppError::Exception(e)) => {
                tracing::error!("User class threw exception: {e}");
                self.finish(
                    ctx,
                    FinalApplicationStatus::Failed,
                    EXIT_EXCEPTION_USER_CLASS,
                    format!("User class threw exception: {e}"),
                )
            }
        }
    }
}

impl Handler<Finish> for ApplicationMaster {
    type Result = ();

    fn handle(&mut self, msg: Finish, ctx: &mut Context<Self>) {
        self.finish(ctx, msg.status, msg.code, msg.message);
    }
}

impl Handler<Terminated> for ApplicationMaster {
    type Result = ();

    /// Client mode: the driver went away (AMEndpoint.onDisconnected) — unless the endpoint
    /// failed and the driver's supervisor restarts it: then the AM waits for the new
    /// incarnation (bounded, and only while that supervisor lives) and watches it.
    fn handle(&mut self, msg: Terminated, ctx: &mut Context<Self>) {
        if self.ctx.mode != AmMode::Client || self.finished {
            return;
        }
        if ended_by_failure(&msg.reason) {
            tracing::info!(
                driver = msg.path.as_str(),
                "The driver's endpoint {} failed ({}); waiting for its restart",
                msg.path,
                msg.reason
            );
            let (cluster, path) = (self.me.cluster().clone(), msg.path.clone());
            let wait = async move { back_at(&cluster, &path, DRIVER_RESTART_WAIT).await };
            ctx.spawn(wait.into_actor(self).map(move |back, act, ctx| {
                if act.finished {
                    return;
                }
                if back {
                    let me = act.me.clone();
                    me.watch(ctx, &msg.path);
                } else {
                    act.driver_gone(&msg.path, ctx);
                }
            }));
            return;
        }
        self.driver_gone(&msg.path, ctx);
    }
}

impl ApplicationMaster {
    /// AMEndpoint.onDisconnected (client mode): the driver went away without telling the AM
    /// it was stopping. With `spark.yarn.am.clientModeTreatDisconnectAsFailed` the attempt
    /// fails with exit 17 (EXIT_DISCONNECTED) and no diagnostics, as Spark's; otherwise it
    /// succeeds.
    fn driver_gone(&mut self, path: &ActorPath, ctx: &mut Context<Self>) {
        let treat_as_failed = self
            .ctx
            .conf
            .get(&conf::AM_CLIENT_MODE_TREAT_DISCONNECT_AS_FAILED)
            .unwrap_or(false);
        if treat_as_failed {
            tracing::error!(
                driver = path.as_str(),
                "Application Master lost connection with driver! Shutting down. {path}"
            );
            self.finish(
                ctx,
                FinalApplicationStatus::Failed,
                EXIT_DISCONNECTED,
                String::new(),
            );
        } else {
            tracing::info!(
                driver = path.as_str(),
                "Driver terminated or disconnected! Shutting down. {path}"
            );
            self.finish(
                ctx,
                FinalApplicationStatus::Succeeded,
                EXIT_SUCCESS,
                String::new(),
            );
        }
    }
}

/// The AM container's process, as the binary's launcher starts it for the
/// `application-master` (cluster mode) and `executor-launcher` (client mode) roles: the AM
/// subtree, configured from the properties file the Client shipped with the container and
/// the command's `-D` system properties after it. A properties file the container does not
/// have, or cannot parse, is the one line the process prints before exiting 1.
pub fn am_process(
    mode: AmMode,
    args: AmArgs,
    system_properties: &[(String, String)],
    launch: &Launch<'_>,
    applications: Applications,
) -> Result<Process, String> {
    let mut conf = SparkConf::new();
    if let Some(file) = &args.properties_file {
        let text = launch
            .context
            .local_resources
            .get(file)
            .ok_or_else(|| format!("Properties file {file} does not exist in the container"))?;
        for (k, v) in conf::parse_properties(text, std::path::Path::new(file)).map_err(|e| e.to_string())? {
            conf.set(k, v);
        }
    }
    for (k, v) in system_properties {
        conf.set(k.as_str(), v.as_str());
    }
    Ok(Process::new(am_subtree_spec(AmContext {
        mode,
        args,
        attempt_id: launch.container.id.attempt,
        container: launch.container.clone(),
        conf: Arc::new(conf),
        output: launch.output.clone(),
        rm: launch.rm.clone(),
        applications,
    })))
}

/// The AM's subtree, the AM container's significant role: `am`, a supervisor whose
/// significant child is the ApplicationMaster (its end ends the container with its exit
/// code); the AM starts its other actors under it as it goes.
pub fn am_subtree_spec(ctx: AmContext) -> ChildSpec {
    let supervision = crate::conf::supervision(&ctx.conf).unwrap_or_default();
    ChildSpec::supervisor(AM_SEGMENT, move || {
        let ctx = ctx.clone();
        crate::runtime::SupervisorSpec::new(crate::runtime::Strategy::OneForOne)
            .supervision(&supervision)
            .auto_shutdown(true)
            .child(
                ChildSpec::worker("application-master", move |_, me| {
                    ApplicationMaster::new(me, ctx.clone())
                })
                .restart(Restart::Temporary)
                .significant(true),
            )
    })
    .restart(Restart::Temporary)
    .significant(true)
}

crate::protocol! {
    /// The ApplicationMaster's lifecycle: the SparkContext is up (cluster mode), the user
    /// class finished, finish with a status.
    pub AmLifecycleProtocol { SparkContextInitialized, UserClassFinished, Finish }
}

crate::speaks!(ApplicationMaster: AmLifecycleProtocol);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abbreviation() {
        assert_eq!(abbreviate("short", 10), "short");
        assert_eq!(abbreviate("abcdefghijk", 8), "abcde...");
    }
}
