//! SparkSubmit, at `/submit/spark-submit`: doSubmit's four actions for one command line.
//!
//! Layer: deploy (the Spark side: spark-submit, the YARN Client, the ApplicationMaster; above context).
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
//!
//! **Restarts.** SparkSubmit and the Client are `Transient` children of `/submit`: a kill
//! restarts them in place, a normal end does not. What must survive is kept by the child
//! specs ([`SubmitState`], [`ClientState`]). A restarted SparkSubmit does not start the
//! action again: in cluster mode it reconciles with the Client it started (reads the
//! outcome the Client kept, or watches the running Client, or waits for `/submit` to restart
//! it, or starts it again with the same kept state when its supervisor no longer has it); in
//! client mode the user's main keeps running (its cancellation does not belong to a
//! SparkSubmit incarnation) and its outcome, kept too, is read by whichever incarnation
//! runs when it ends. `--kill` and `--status` keep the ResourceManager's answers (the kill
//! accepted, the report) as they arrive, so a new incarnation never sends a request whose
//! answer was received; it prints the kept answer, once. A closed stdout (`| head -1`) ends
//! the command quietly with status 0. Messages to a dead incarnation are lost, so every result is kept
//! before it is sent, and a new incarnation reads what it may have missed. More restarts
//! than `spark.sparkyard.supervisor.maxRestarts` within the period and `/submit` gives up:
//! the `sparkyard submit` command then ends with one line saying so and exit status 1.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::{Actor, ActorFutureExt, AsyncContext, Context, Handler, Message, WrapFuture};
use tokio::sync::oneshot;

use super::client::{
    format_report_details, monitor_application, print_final_report, Client, ClientArgs, ClientFinished,
    ClientOutcome, ClientState, KillFollowedApplication, RmConnection,
};
use super::spark_submit_arguments::{SparkSubmitAction, SparkSubmitArguments};
use super::yarn_client_backend::ClientModeLauncher;
use crate::conf::SparkConf;
use crate::context::{AppEnv, AppError, Applications, DriverMode};
use crate::deploy::client::ClientControlProtocol;
use crate::logs::output::OutputSink;
use crate::rpc::EndpointRef;
use crate::runtime::supervisor::{StartChild, SupervisorError, WhichChildren};
use crate::runtime::timers::run_later;
use crate::runtime::SupervisorProtocol;
use crate::runtime::{ActorPath, CancelToken, ChildSpec, ExitReason, Kept, Me, Restart, Terminated};
use crate::yarn::protocol::ApplicationClientProtocol;
use crate::yarn::records::ApplicationId;

/// Spark's exit status when the main class cannot be loaded.
pub const CLASS_NOT_FOUND_EXIT_STATUS: i32 = 101;
/// The exit status after Ctrl-C (SIGINT).
pub const INTERRUPTED_EXIT_STATUS: i32 = 130;

/// How often a restarted SparkSubmit looks again for a Client its supervisor is restarting.
const CLIENT_RECHECK: Duration = Duration::from_millis(20);
/// How long it waits for such a Client before it gives up (its supervisor restarts a child
/// at once, or after a backoff of at most `spark.sparkyard.supervisor.maxBackoff`).
const CLIENT_RECHECK_LIMIT: Duration = Duration::from_secs(30);

/// What SparkSubmit runs.
pub struct SubmitPlan {
    pub args: SparkSubmitArguments,
    pub conf: Arc<SparkConf>,
    pub rm: RmConnection,
    /// The embedded RM, when there is one (client mode needs it).
    pub local_rm: Option<EndpointRef<ApplicationClientProtocol>>,
    /// Where the exit status goes.
    pub done: Arc<Mutex<Option<oneshot::Sender<i32>>>>,
    /// The applications this process can run (client mode runs the user's class here).
    pub applications: Applications,
}

/// What SparkSubmit keeps across its restarts (held by its child spec).
#[derive(Debug, Default)]
pub struct SubmitState {
    /// The action has begun: a new incarnation reconciles instead of beginning it again.
    pub begun: bool,
    /// Cluster mode: the Client's kept state, from the moment SparkSubmit asks for it. The
    /// Client alone reads and writes it; SparkSubmit only holds it to hand to a Client it
    /// starts again (its own restarts may have lost the Client's report).
    pub client: Option<Kept<ClientState>>,
    /// Client mode: the YARN side of the driver.
    pub launcher: Option<Arc<ClientModeLauncher>>,
    /// Client mode: the user main's cancellation (fires on Ctrl-C).
    pub main_cancel: Option<CancelToken>,
    /// Client mode: how the user's main ended, once it has.
    pub main_outcome: Option<Result<(), AppError>>,
    /// Ctrl-C was pressed.
    pub interrupted: bool,
    /// `--kill`: the ResourceManager accepted the kill (a new incarnation only follows the
    /// application to its end, it does not ask again).
    pub kill_accepted: bool,
    /// `--kill` and `--status`: the answer, kept as soon as it arrives, so a new incarnation
    /// prints it instead of asking the ResourceManager again.
    pub answer: Option<ActionAnswer>,
}

/// What `--kill` or `--status` prints and its exit status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ActionAnswer {
    /// The line for stdout (the report, or the application's end).
    pub stdout: Option<String>,
    /// The line for stderr (why the action failed).
    pub stderr: Option<String>,
    pub code: i32,
    /// The lines went out (or the attempt to print them ended): nothing is printed twice.
    pub printed: bool,
}

impl ActionAnswer {
    fn ok(line: String) -> ActionAnswer {
        ActionAnswer {
            stdout: Some(line),
            stderr: None,
            code: 0,
            printed: false,
        }
    }

    fn failed(e: String) -> ActionAnswer {
        ActionAnswer {
            stdout: None,
            stderr: Some(format!("Error: {e}")),
            code: 1,
            printed: false,
        }
    }
}

/// Writes one line to stdout. A closed stdout (the reader went away, as `| head -1` does)
/// is a quiet end, not a failure: status 0, nothing more printed. Any other write error is
/// status 1 with one line on stderr.
pub fn print_stdout_line(line: &str) -> Result<(), i32> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{line}").and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            tracing::debug!("stdout is closed; ending quietly");
            Err(0)
        }
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "Error: cannot write to stdout: {e}");
            Err(1)
        }
    }
}

impl SubmitState {
    /// The application the Client submitted, if it has one.
    pub fn app_id(&self) -> Option<ApplicationId> {
        self.client.as_ref().and_then(|c| c.lock().app_id)
    }
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
    state: Kept<SubmitState>,
    /// This incarnation reported the outcome.
    finished: bool,
    /// Checks of a missing Client so far (see [`CLIENT_RECHECK_LIMIT`]).
    rechecks: u32,
}

impl SparkSubmit {
    /// A SparkSubmit whose state is not kept: for a `Temporary` child, never restarted.
    pub fn new(me: Me, plan: Arc<SubmitPlan>) -> Self {
        SparkSubmit::restartable(me, plan, Kept::default())
    }

    /// A SparkSubmit that keeps `state` across its restarts (the same `Kept` must be given
    /// to every incarnation: capture it in the child spec's factory).
    pub fn restartable(me: Me, plan: Arc<SubmitPlan>, state: Kept<SubmitState>) -> Self {
        SparkSubmit {
            me,
            plan,
            state,
            finished: false,
            rechecks: 0,
        }
    }

    fn done(&mut self, ctx: &mut Context<Self>, code: i32) {
        self.finished = true;
        let code = if self.state.lock().interrupted {
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

    fn supervisor_path(&self) -> ActorPath {
        self.me.path().parent().unwrap_or_else(|| self.me.path().clone())
    }

    fn client_path(&self) -> ActorPath {
        ActorPath::from_trusted(format!("{}/client", self.supervisor_path()))
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
        // runMain's addJarToClasspath: a local jar that is not there is skipped with a
        // warning (the Client then fails to distribute it). The primary resource names a
        // built-in application, not a jar.
        for jar in args.jars.iter().flat_map(|j| j.split(',')) {
            if jar.trim().is_empty() || Some(jar.trim()) == args.primary_resource.as_deref() {
                continue;
            }
            if let Some(path) = super::client::local_file(jar).filter(|p| !p.exists()) {
                tracing::warn!(
                    jar = jar.trim(),
                    "Local jar {} does not exist, skipping.",
                    path.display()
                );
            }
        }
        if cluster_mode {
            let client = Kept::<ClientState>::default();
            self.state.lock().client = Some(client.clone());
            self.start_client(ctx, client);
            return;
        }
        self.run_main(ctx, class);
    }

    /// Adds the Client under `/submit` with its kept state, and watches it.
    fn start_client(&mut self, ctx: &mut Context<Self>, state: Kept<ClientState>) {
        let args = &self.plan.args;
        let client_args = ClientArgs {
            conf: self.plan.conf.clone(),
            main_class: args.main_class.clone().unwrap_or_default(),
            primary_resource: args.primary_resource.clone().unwrap_or_default(),
            app_args: args.child_args.clone(),
            client_mode_driver: None,
        };
        let rm = self.plan.rm.clone();
        let report_to = self.me.path().clone();
        let spec = ChildSpec::worker("client", move |_, me| {
            Client::new(
                me,
                rm.clone(),
                client_args.clone(),
                state.clone(),
                report_to.clone(),
            )
        })
        .restart(Restart::Transient);
        let sup = self.me.endpoint::<SupervisorProtocol>(&self.supervisor_path());
        ctx.spawn(
            async move { sup.ask(StartChild(spec), Duration::from_secs(30)).await }
                .into_actor(self)
                .map(|res, act, ctx| match res {
                    Ok(Ok(path)) => act.me.clone().watch(ctx, &path),
                    // An earlier incarnation's request got there first.
                    Ok(Err(SupervisorError::AlreadyExists(_))) => act.reconcile(ctx),
                    other => {
                        tracing::error!("cannot start the YARN Client: {other:?}");
                        eprintln!("Error: cannot start the YARN Client: {other:?}");
                        act.done(ctx, 1);
                    }
                }),
        );
    }

    /// Ctrl-C in cluster mode: tells the Client to kill the application it follows, asking
    /// again while the Client restarts (it keeps the request across its own restarts).
    fn kill_followed_application(&mut self, ctx: &mut Context<Self>) {
        let client = self.me.endpoint::<ClientControlProtocol>(&self.client_path());
        let tries = (CLIENT_RECHECK_LIMIT.as_millis() / CLIENT_RECHECK.as_millis()) as u32;
        ctx.spawn(
            async move {
                if let Err(e) = client
                    .ask_while_restarting(
                        KillFollowedApplication,
                        CLIENT_RECHECK_LIMIT,
                        tries,
                        CLIENT_RECHECK,
                    )
                    .await
                {
                    tracing::warn!("Cannot tell the YARN Client to kill the application: {e}");
                }
            }
            .into_actor(self),
        );
    }

    /// A restarted SparkSubmit (or one whose Client ended): finds where the Client is.
    fn reconcile(&mut self, ctx: &mut Context<Self>) {
        if self.finished {
            return;
        }
        let Some(client) = self.state.lock().client.clone() else {
            return;
        };
        let path = self.client_path();
        if self.me.cluster().registry().contains(&path) {
            self.rechecks = 0;
            self.me.clone().watch(ctx, &path);
            return;
        }
        // Not running and no outcome: /submit is restarting it, or no longer has it.
        let sup = self.me.endpoint::<SupervisorProtocol>(&self.supervisor_path());
        ctx.spawn(
            async move { sup.ask(WhichChildren, Duration::from_secs(10)).await }
                .into_actor(self)
                .map(move |res, act, ctx| {
                    let known = res.map(|children| children.iter().any(|c| c.id == "client"));
                    match known {
                        Ok(false) => {
                            // A Client that has judged the application tells its outcome
                            // again as it starts (its message may have been lost to our restart).
                            tracing::warn!(
                                "The YARN Client is not running; starting it again with its kept state"
                            );
                            act.start_client(ctx, client);
                        }
                        _ if CLIENT_RECHECK * act.rechecks >= CLIENT_RECHECK_LIMIT => {
                            tracing::error!(
                                "The YARN Client did not come back within {}",
                                humantime::format_duration(CLIENT_RECHECK_LIMIT)
                            );
                            eprintln!("Error: the YARN Client did not come back after a restart");
                            act.done(ctx, 1);
                        }
                        _ => {
                            act.rechecks += 1;
                            run_later(
                                ctx,
                                act.me.clock(),
                                CLIENT_RECHECK,
                                |act: &mut SparkSubmit, ctx| act.reconcile(ctx),
                            );
                        }
                    }
                }),
        );
    }

    fn client_finished(&mut self, ctx: &mut Context<Self>, outcome: ClientOutcome) {
        if self.finished {
            return;
        }
        match outcome.verdict {
            Ok(()) => self.done(ctx, 0),
            Err(e) => {
                // A Java exception the Client met is printed as itself (the missing file's
                // FileNotFoundException), everything else is Spark's SparkException.
                let shown = if e.starts_with("java.") {
                    e
                } else {
                    format!("org.apache.spark.SparkException: {e}")
                };
                tracing::error!(printed = true, "Exception in thread \"main\" {shown}");
                eprintln!("Exception in thread \"main\" {shown}");
                self.done(ctx, 1)
            }
        }
    }

    /// Client mode's runMain: the user's class on a thread of this process.
    fn run_main(&mut self, ctx: &mut Context<Self>, class: String) {
        let Some(main) = self.plan.applications.load(&class) else {
            tracing::error!("Failed to load class {class}.");
            eprintln!("Error: Failed to load class {class}.");
            self.done(ctx, CLASS_NOT_FOUND_EXIT_STATUS);
            return;
        };
        let launcher = Arc::new(ClientModeLauncher::new(
            self.plan.rm.clone(),
            class.clone(),
            self.plan.args.primary_resource.clone().unwrap_or_default(),
        ));
        let cancel = CancelToken::new();
        {
            let mut st = self.state.lock();
            st.launcher = Some(launcher.clone());
            st.main_cancel = Some(cancel.clone());
        }
        let parent = self.supervisor_path();
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
            cancel,
            host: crate::runtime::host::local_hostname(),
            app_id: String::new(),
            attempt: 1,
        };
        // By path, so a restarted SparkSubmit gets it; kept first, in case none runs then.
        let me: EndpointRef<SubmitProtocol> = self.me.endpoint(self.me.path());
        let state = self.state.clone();
        let log = self.me.log_ctx().clone();
        let spawned = std::thread::Builder::new().name("main".into()).spawn(move || {
            let _scope = crate::logs::LogScope::enter(&log);
            let outcome = crate::runtime::panic::catch(|| main(&env))
                .unwrap_or_else(|p| Err(AppError::Exception(format!("java.lang.RuntimeException: {p}"))));
            state.lock().main_outcome = Some(outcome.clone());
            let _ = me.tell(UserMainFinished(outcome));
        });
        if let Err(e) = spawned {
            eprintln!("Error: cannot start the application's thread: {e}");
            self.done(ctx, 1);
        }
    }

    fn main_finished(&mut self, ctx: &mut Context<Self>, outcome: Result<(), AppError>) {
        if self.finished {
            return;
        }
        let launcher = self.state.lock().launcher.clone();
        if let Some(report) = launcher.as_ref().and_then(|l| l.final_report()) {
            print_final_report(&report);
        }
        match outcome {
            Ok(()) => self.done(ctx, 0),
            Err(AppError::Exit(code)) => self.done(ctx, code),
            Err(AppError::Exception(e)) => {
                tracing::error!(printed = true, "Exception in thread \"main\" {e}");
                eprintln!("Exception in thread \"main\" {e}");
                self.done(ctx, 1)
            }
        }
    }

    /// `--kill` or `--status`: gets the answer (unless an earlier incarnation kept one), keeps
    /// it, prints it once and ends with its status.
    fn answer_action(
        &mut self,
        ctx: &mut Context<Self>,
        ask: impl std::future::Future<Output = ActionAnswer> + 'static,
    ) {
        let kept = self.state.lock().answer.clone();
        if let Some(answer) = kept {
            tracing::info!("SparkSubmit restarted; the answer was already received, not asking again");
            self.deliver(ctx, answer);
            return;
        }
        let state = self.state.clone();
        ctx.spawn(
            async move {
                let answer = ask.await;
                state.lock().answer = Some(answer.clone());
                answer
            }
            .into_actor(self)
            .map(|answer, act, ctx| act.deliver(ctx, answer)),
        );
    }

    /// Prints a kept answer (unless it was printed already) and ends with its status.
    fn deliver(&mut self, ctx: &mut Context<Self>, answer: ActionAnswer) {
        let already = std::mem::replace(
            &mut self
                .state
                .lock()
                .answer
                .get_or_insert_with(|| answer.clone())
                .printed,
            true,
        );
        let mut code = answer.code;
        if !already {
            if let Some(line) = &answer.stderr {
                use std::io::Write;
                let _ = writeln!(std::io::stderr(), "{line}");
            }
            if let Some(line) = &answer.stdout {
                if let Err(status) = print_stdout_line(line) {
                    code = status;
                }
            }
        }
        self.done(ctx, code);
    }

    /// A new incarnation after a restart: picks up where the action is.
    fn resume(&mut self, ctx: &mut Context<Self>) {
        let (cluster_mode, main_outcome) = {
            let st = self.state.lock();
            (st.client.is_some(), st.main_outcome.clone())
        };
        if cluster_mode {
            tracing::info!(
                "SparkSubmit restarted; reconciling with the YARN Client it started (no second Client)"
            );
            if self.state.lock().interrupted {
                // The kill asked by the previous incarnation may have died with it.
                self.kill_followed_application(ctx);
            }
            self.reconcile(ctx);
        } else if let Some(outcome) = main_outcome {
            self.main_finished(ctx, outcome);
        } else {
            tracing::info!("SparkSubmit restarted; the application's main is still running");
        }
    }
}

impl Actor for SparkSubmit {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let rm = self.plan.rm.clone();
        match self.plan.args.action {
            SparkSubmitAction::Submit => {
                let begun = std::mem::replace(&mut self.state.lock().begun, true);
                if begun {
                    self.resume(ctx);
                } else {
                    self.submit(ctx);
                }
            }
            SparkSubmitAction::Kill => {
                let id = self.app_id_arg(self.plan.args.submission_to_kill.as_ref());
                let state = self.state.clone();
                self.answer_action(ctx, async move {
                    let id = match id {
                        Ok(id) => id,
                        Err(e) => return ActionAnswer::failed(e),
                    };
                    if !state.lock().kill_accepted {
                        tracing::info!(app_id = %id, "Killing application {id}");
                        if let Err(e) = rm.kill(id, "killed with sparkyard submit --kill").await {
                            return ActionAnswer::failed(e);
                        }
                        state.lock().kill_accepted = true;
                    }
                    let report = monitor_application(&rm, id, Duration::from_millis(200), false).await;
                    ActionAnswer::ok(format!(
                        "Application {} is {} (final status {})",
                        report.app_id, report.state, report.final_status
                    ))
                });
            }
            SparkSubmitAction::RequestStatus => {
                let id = self.app_id_arg(self.plan.args.submission_to_request_status_for.as_ref());
                self.answer_action(ctx, async move {
                    let report = match id {
                        Ok(id) => rm
                            .report(id, None)
                            .await
                            .and_then(|r| r.map_err(|e| e.to_string())),
                        Err(e) => Err(e),
                    };
                    match report {
                        Ok(r) => ActionAnswer::ok(format!(
                            "Application report for {} (state: {}){}",
                            r.app_id,
                            r.state,
                            format_report_details(&r)
                        )),
                        Err(e) => ActionAnswer::failed(e),
                    }
                });
            }
            SparkSubmitAction::PrintVersion => self.done(ctx, 0),
        }
    }
}

impl Handler<ClientFinished> for SparkSubmit {
    type Result = ();

    fn handle(&mut self, msg: ClientFinished, ctx: &mut Context<Self>) {
        self.client_finished(ctx, msg.0);
    }
}

impl Handler<Terminated> for SparkSubmit {
    type Result = ();

    /// The Client ended: with an outcome (already told, or told again by the Client started
    /// anew with its kept state), or abnormally, when its supervisor restarts it or gives up.
    fn handle(&mut self, msg: Terminated, ctx: &mut Context<Self>) {
        if msg.path == self.client_path() {
            self.reconcile(ctx);
        }
    }
}

impl Handler<UserMainFinished> for SparkSubmit {
    type Result = ();

    fn handle(&mut self, msg: UserMainFinished, ctx: &mut Context<Self>) {
        self.main_finished(ctx, msg.0);
    }
}

impl Handler<Interrupt> for SparkSubmit {
    type Result = ();

    fn handle(&mut self, _: Interrupt, ctx: &mut Context<Self>) {
        let (client, launcher, cancel) = {
            let mut st = self.state.lock();
            if st.interrupted {
                return;
            }
            st.interrupted = true;
            (st.client.clone(), st.launcher.clone(), st.main_cancel.clone())
        };
        tracing::warn!("Interrupted: killing the application");
        if client.is_some() {
            self.kill_followed_application(ctx);
        }
        if let Some(launcher) = launcher {
            launcher.kill(self.me.cluster());
        }
        if let Some(cancel) = cancel {
            cancel.cancel("interrupted");
        }
    }
}

crate::protocol! {
    /// What SparkSubmit is told: its YARN Client finished, the user's main finished (client
    /// mode), or the user interrupted it.
    pub SubmitProtocol { ClientFinished, UserMainFinished, Interrupt }
}

crate::speaks!(SparkSubmit: SubmitProtocol);
