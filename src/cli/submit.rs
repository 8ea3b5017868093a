//! `sparkyard submit`: spark-submit's command line.
//!
//! Layer: cli (the top: parses commands and assembles processes).
//!
//! Parsing follows SparkSubmitArguments (everything after the primary resource belongs to the
//! application); then the configuration is assembled the way spark-submit does it (command
//! line flags > `--conf` > properties file > environment) on top of `yarn-site.conf`, and
//! validated as a whole. Then SparkSubmit runs in an actor system: with no master or
//! `local-cluster[N,C,M]` against an embedded all-in-one cluster in this process, with
//! `yarn` against the ResourceManager of a running `sparkyard node` at
//! `yarn.resourcemanager.address`. Ctrl-C kills the application.
//!
//! On the embedded cluster, `spark.sparkyard.chaos.plan` or `spark.sparkyard.chaos.seed`
//! (see [`crate::chaos`]) runs a fault plan from the moment the application is submitted,
//! its kills fired by job progress: the planned kills are printed on stderr at the start and
//! what each did at the end. If `/submit` gives up (its children, SparkSubmit and the
//! Client, were restarted more often than its intensity allows), the command ends with one
//! line saying so and exit status 1.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::oneshot;

use super::config;
use super::{fail, EXIT_BAD_INPUT, EXIT_OK};
use crate::conf::{self, SparkConf};
use crate::deploy::client::RmConnection;
use crate::deploy::spark_submit::SubmitProtocol;
use crate::deploy::spark_submit::{Interrupt, SparkSubmit, SubmitPlan, SubmitState};
use crate::deploy::spark_submit_arguments::{
    self as ssa, SparkSubmitAction, SparkSubmitArguments, SubmitArgsError,
};
use crate::rpc::auth::AcceptApps;
use crate::runtime::fault::PlanRun;
use crate::runtime::{
    ActorPath, ChildSpec, Cluster, ExitReason, FaultPlan, Kept, Restart, Strategy, SupervisorSpec,
};
use crate::yarn::node::{rm_path, start_node_serving, wait_ready};
use crate::yarn::protocol::ApplicationClientProtocol;

const WHO: &str = "sparkyard submit";

/// Runs `sparkyard submit <args>`; returns the exit status.
pub fn run(args: &[String]) -> i32 {
    let mut parsed = match ssa::parse(args) {
        Ok(p) => p,
        Err(e) => return report(&e),
    };
    if parsed.action == SparkSubmitAction::PrintVersion {
        print_version();
        return EXIT_OK;
    }
    if parsed.action == SparkSubmitAction::Submit {
        warm_up();
    }
    if let Err(e) = super::init_logs(parsed.log_level.as_deref(), &["/submit/client"]) {
        fail(WHO, &e);
        return EXIT_BAD_INPUT;
    }
    let conf = match assemble(&mut parsed) {
        Ok(conf) => conf,
        Err(Problem::Args(e)) => return report(&e),
        Err(Problem::Conf(e)) => {
            fail(WHO, &e);
            return EXIT_BAD_INPUT;
        }
    };
    if parsed.verbose {
        print_verbose(&parsed, &conf);
    }
    let chaos = match chaos_plan(&parsed, &conf) {
        Ok(plan) => plan,
        Err(e) => {
            fail(WHO, &e);
            return EXIT_BAD_INPUT;
        }
    };
    if let Some(proxy) = &parsed.proxy_user {
        // SparkSubmit runs everything as the proxy user (doAs): every call carries it, with
        // this process's user as the real user, and the node decides.
        crate::yarn::acls::act_as_proxy_user(proxy);
    }
    let hint = class_hint(&parsed);
    match execute(parsed, conf, chaos) {
        Ok(code) => {
            if let (Some(hint), true) = (hint, code != EXIT_OK) {
                fail(WHO, &hint);
            }
            code
        }
        Err(e) => {
            fail(WHO, &e);
            EXIT_BAD_INPUT
        }
    }
}

/// Starts, on a thread of its own, the process-wide start-up work this submission will need
/// on its one runtime thread, so that it is done on the other core meanwhile (issue 17: the
/// seed job's whole process): compiling the default `spark.redaction.regex` (the Client
/// redacts the AM's launch context with it; a case-insensitive pattern is a few tenths of a
/// millisecond to compile) and the processor count the actor registry's maps and the task
/// threads are sized by (read from the cgroup files). Each is computed once per process
/// whoever asks first; a thread that asks while the other computes it waits for it.
fn warm_up() {
    let _ = std::thread::Builder::new().name("warm-up".into()).spawn(|| {
        drop(conf::Redactor::default());
        drop(dashmap::DashMap::<u8, u8>::new());
        crate::executor::task_pool::TaskPool::worker_threads();
    });
}

/// Where the application runs: the embedded cluster (no master, or local-cluster[N,C,M])
/// or a running node (`yarn`).
enum Target {
    Embedded(Vec<conf::NodeSpec>),
    Node(String),
}

fn target(parsed: &SparkSubmitArguments, conf: &SparkConf) -> Result<Target, String> {
    match parsed.master.as_deref() {
        Some("yarn") => {
            let addr = conf.get(&conf::RM_ADDRESS).map_err(|e| e.to_string())?;
            Ok(Target::Node(format!("{}:{}", addr.host, addr.port)))
        }
        Some(m) => match ssa::parse_local_cluster(m) {
            Some((n, cores, mem)) => Ok(Target::Embedded(crate::deploy::resources::local_cluster_nodes(
                n, cores, mem, conf,
            ))),
            None => Err(format!("unsupported master '{m}'")),
        },
        None => conf::node_managers(conf)
            .map(Target::Embedded)
            .map_err(|e| e.to_string()),
    }
}

/// Where a client-mode driver serves its actors: `spark.driver.host` (else 127.0.0.1 when
/// the ResourceManager is on a loopback address, else this host's name) and
/// `spark.driver.port` (0: any free port), as Spark's driver binds its RPC environment.
fn driver_bind(conf: &SparkConf, rm_addr: &str) -> Result<String, String> {
    let host = match conf.get(&conf::DRIVER_HOST_ADDRESS).map_err(|e| e.to_string())? {
        Some(h) => h,
        None => {
            let rm_host = rm_addr.rsplit_once(':').map(|(h, _)| h).unwrap_or(rm_addr);
            let loopback = rm_host == "localhost"
                || rm_host
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback());
            if loopback {
                "127.0.0.1".to_string()
            } else {
                super::local_hostname()
            }
        }
    };
    let port = conf.get(&conf::DRIVER_PORT).map_err(|e| e.to_string())?;
    Ok(format!("{host}:{port}"))
}

/// The fault plan of `spark.sparkyard.chaos.*`, checked: only a submission to the embedded
/// cluster runs one (against a running node, `sparkyard chaos` does).
fn chaos_plan(parsed: &SparkSubmitArguments, conf: &SparkConf) -> Result<Option<FaultPlan>, String> {
    let plan = crate::chaos::plan_from_conf(conf)?;
    if plan.is_some() && parsed.master.as_deref() == Some("yarn") {
        let key = if conf.get_str(conf::CHAOS_PLAN.name()).is_some() {
            conf::CHAOS_PLAN.name()
        } else {
            conf::CHAOS_SEED.name()
        };
        return Err(format!(
            "{key} runs a fault plan in the embedded cluster, not in a running node (use 'sparkyard chaos' against the node, or submit without --master yarn)"
        ));
    }
    if plan.is_some() && parsed.action != SparkSubmitAction::Submit {
        return Ok(None);
    }
    Ok(plan)
}

const CHAOS: &str = "sparkyard submit: chaos:";

/// Prints the planned kills on stderr and starts the plan on `cluster`.
fn start_chaos(cluster: &Cluster, plan: FaultPlan) -> (FaultPlan, PlanRun) {
    let what = match plan.seed {
        Some(seed) => format!("seeded plan (seed {seed})"),
        None => "plan".to_string(),
    };
    eprintln!(
        "{CHAOS} {what} of {} kill{} on the embedded cluster:",
        plan.faults.len(),
        if plan.faults.len() == 1 { "" } else { "s" }
    );
    for line in crate::chaos::describe(&plan) {
        eprintln!("{CHAOS}   {line}");
    }
    let run = cluster.run_plan(plan.clone(), "spark.sparkyard.chaos");
    (plan, run)
}

/// Prints what each planned kill did.
fn report_chaos(plan: &FaultPlan, run: &PlanRun) {
    let outcomes = run.outcomes();
    for outcome in &outcomes {
        let f = &outcome.fault;
        if outcome.killed.is_empty() {
            eprintln!(
                "{CHAOS} skipped {} {} {}: nothing matched",
                f.mode, f.target, f.when
            );
        }
        for k in &outcome.killed {
            eprintln!(
                "{CHAOS} killed ({}) {} (incarnation {}) {}",
                f.mode, k.path, k.incarnation, f.when
            );
        }
    }
    for f in plan.faults.iter().skip(outcomes.len()) {
        eprintln!(
            "{CHAOS} not fired: {} {} {} (the run ended first)",
            f.mode, f.target, f.when
        );
    }
}

/// The one line for a submit side that gave up.
fn gave_up_message(reason: &ExitReason, app: Option<String>, remote: bool) -> String {
    let why = match reason {
        ExitReason::Escalated { message } => message.clone(),
        other => other.to_string(),
    };
    let app_note = match (app, remote) {
        (Some(app), true) => format!(
            "; application {app} may still be running in the node (sparkyard submit --master yarn --status {app})"
        ),
        (Some(app), false) => format!("; application {app} was killed with the embedded cluster"),
        (None, _) => String::new(),
    };
    format!("the submit side gave up: /submit {why}{app_note}")
}

/// The embedded cluster's web app (REST API and UI), when `yarn.resourcemanager.webapp.address`
/// is set explicitly: bound here, with one line on stderr saying where it serves. Unset, the
/// embedded cluster serves none (a submit is short-lived and must not clash over port 8088).
fn embedded_web_app(conf: &SparkConf) -> Result<Option<Arc<std::net::TcpListener>>, String> {
    let key = crate::conf::RM_WEBAPP_ADDRESS.name();
    if !conf.contains(key) {
        return Ok(None);
    }
    let web = conf
        .get(&crate::conf::RM_WEBAPP_ADDRESS)
        .map_err(|e| e.to_string())?;
    let wanted = format!("{}:{}", web.host, web.port);
    let listener = std::net::TcpListener::bind(&wanted)
        .map_err(|e| format!("cannot listen on {wanted} ({key}): {e}"))?;
    let bound = listener.local_addr().map(|a| a.to_string()).unwrap_or(wanted);
    eprintln!(
        "sparkyard submit: ResourceManager web UI at {}/ (REST API at /ws/v1/cluster)",
        crate::yarn::webapp::base_url(&bound)
    );
    Ok(Some(Arc::new(listener)))
}

/// Runs the command line's action in an actor system; answers the exit status.
fn execute(parsed: SparkSubmitArguments, conf: SparkConf, chaos: Option<FaultPlan>) -> Result<i32, String> {
    let target = target(&parsed, &conf)?;
    if let (Target::Embedded(_), Some(_)) = (&target, &parsed.proxy_user) {
        // The embedded cluster is this process: its rules are this configuration's.
        crate::yarn::acls::ProxyUsers::from_conf(&conf)
            .authorize(&crate::yarn::acls::Caller::current(), None)?;
    }
    let log_dir = crate::logs::reader::resolve_log_dir(parsed.log_dir.as_deref().map(Path::new));
    let embedded = matches!(target, Target::Embedded(_));
    let mut conf = conf;
    if embedded
        && conf
            .get(&crate::conf::AUTHENTICATE_SECRET)
            .ok()
            .flatten()
            .is_none()
    {
        // An embedded cluster with spark.authenticate and no secret draws its own: the
        // Client derives the application's from it.
        if let Some(secret) = crate::yarn::security::node_secret(&conf, true)? {
            if conf
                .get(&crate::conf::AUTHENTICATE_SECRET_FILE)
                .ok()
                .flatten()
                .is_none()
            {
                conf.set(crate::conf::AUTHENTICATE_SECRET.name(), secret.expose());
            }
        }
    }
    let accept = if embedded {
        AcceptApps::Any
    } else {
        AcceptApps::Own
    };
    let keyring = crate::yarn::security::node_keyring(&conf, accept, false)?;
    let conf = Arc::new(conf);
    let system = actix::System::new();
    system.block_on(async move {
        let cluster = Cluster::builder()
            .id(&super::process_cluster_id("submit"))
            .log_dir(&log_dir)
            .node(&super::local_hostname())
            .build()?;
        let client_mode =
            parsed.action == SparkSubmitAction::Submit && parsed.effective_deploy_mode() != "cluster";
        // Held to the end: dropping it stops the actor endpoint.
        let mut _serving = None;
        let (rm, local_rm) = match &target {
            Target::Embedded(nodes) => {
                let launchers = match super::node::container_mode(&conf, super::node::ContainerMode::InProcess)? {
                    super::node::ContainerMode::InProcess => super::roles::launchers(),
                    super::node::ContainerMode::Process => {
                        let root = ActorPath::root(crate::yarn::node::NODE_ROOT).map_err(|e| e.to_string())?;
                        let (actors, serving) = crate::rpc::remote::serve_cluster_secured(
                            &cluster,
                            root,
                            "127.0.0.1:0",
                            super::node::actor_limits(),
                            crate::yarn::security::daemon_security(keyring.clone(), true),
                        )
                        .await?;
                        crate::yarn::client_service::offer_admin(&cluster, None);
                        _serving = Some(serving);
                        {
                    let mut containers = super::process_containers::ProcessContainers::from_conf(
                            &conf,
                            &actors,
                            "127.0.0.1",
                            Some(log_dir.clone()),
                        )?;
                    containers.keyring = keyring.clone();
                    crate::yarn::client_service::offer_admin(&cluster, Some(containers.processes.clone()));
                    containers.launchers()
                }
                    }
                };
                let serving = crate::yarn::node::Serving {
                    web: embedded_web_app(&conf)?,
                    log_dir: Some(log_dir.clone()),
                    ..Default::default()
                };
                start_node_serving(&cluster, &conf, nodes, &launchers, &super::local_hostname(), serving)?;
                wait_ready(&cluster, nodes.len(), Duration::from_secs(10)).await?;
                let ep = cluster.endpoint::<ApplicationClientProtocol>(&rm_path());
                (RmConnection::Local(ep.clone()), Some(ep))
            }
            Target::Node(addr) => {
                if client_mode {
                    // The driver runs here: its executors and its AM, in the node's container
                    // processes, reach it at spark.driver.host:spark.driver.port.
                    let bind = driver_bind(&conf, addr)?;
                    let root = ActorPath::root("submit").map_err(|e| e.to_string())?;
                    let security = crate::rpc::remote::Security {
                        keyring: keyring.clone(),
                        gate: None,
                    };
                    let (actors, serving) = crate::rpc::remote::serve_cluster_secured(
                        &cluster,
                        root,
                        &bind,
                        super::node::actor_limits(),
                        security,
                    )
                    .await?;
                    tracing::info!(address = %actors, "Successfully started service 'sparkDriver' on {actors}");
                    _serving = Some(serving);
                }
                (RmConnection::remote_secured(addr, keyring.clone()), None)
            }
        };
        let embedded_rm = local_rm.clone().map(RmConnection::Local);
        let (tx, rx) = oneshot::channel();
        let plan = Arc::new(SubmitPlan {
            args: parsed,
            conf: conf.clone(),
            rm,
            local_rm,
            done: Arc::new(Mutex::new(Some(tx))),
            applications: super::roles::applications(),
        });
        let state = Kept::<SubmitState>::default();
        let kept = state.clone();
        let supervision = crate::conf::supervision(&conf).map_err(|e| e.to_string())?;
        let spec = SupervisorSpec::new(Strategy::OneForOne)
            .supervision(&supervision)
            .child(
                ChildSpec::worker("spark-submit", move |_, me| {
                    SparkSubmit::restartable(me, plan.clone(), kept.clone())
                })
                .restart(Restart::Transient),
            );
        let chaos = chaos.map(|p| start_chaos(&cluster, p));
        let root = cluster.start_root("submit", spec).map_err(|e| e.to_string())?;
        let submit = cluster.endpoint::<SubmitProtocol>(&ActorPath::from_trusted("/submit/spark-submit".into()));
        match super::node::Signals::install() {
            Ok(mut signals) => {
                actix::spawn(async move {
                    signals.recv().await;
                    let _ = submit.tell(Interrupt);
                    signals.recv().await;
                    eprintln!("sparkyard submit: interrupted again: exiting without waiting for the application to end");
                    std::process::exit(crate::deploy::spark_submit::INTERRUPTED_EXIT_STATUS);
                });
            }
            Err(e) => tracing::warn!("cannot install signal handlers: {e}; Ctrl-C will not kill the application"),
        }
        let remote = matches!(target, Target::Node(_));
        // Polled from the start, so it holds the root's incarnation and can tell how it
        // ended even when the outcome's sender goes first (dropped with /submit).
        let ended = async {
            cluster.root_ended(&root).await.unwrap_or(ExitReason::Aborted {
                message: "it ended".into(),
            })
        };
        tokio::pin!(ended);
        let (code, reason) = tokio::select! {
            biased;
            code = rx => match code {
                Ok(code) => (Some(code), None),
                // The sender went with /submit: it gave up.
                Err(_) => (None, Some(ended.await)),
            },
            reason = &mut ended => (None, Some(reason)),
        };
        let app = state.lock().app_id();
        let gave_up = reason.map(|reason| gave_up_message(&reason, app.map(|a| a.to_string()), remote));
        // The embedded cluster ends with this process: an application whose submit side gave
        // up is killed first, so it ends KILLED rather than cut off.
        if let (Some(_), Some(app), Some(rm)) = (&gave_up, app, &embedded_rm) {
            let kill = rm.kill(app, "the submit side gave up (sparkyard submit)");
            let _ = tokio::time::timeout(Duration::from_secs(5), kill).await;
        }
        cluster.shutdown(Duration::from_secs(10)).await;
        if let Some((plan, run)) = &chaos {
            report_chaos(plan, run);
        }
        // The last line: the records already tell the escalation.
        if let Some(message) = &gave_up {
            fail(WHO, message);
        }
        Ok(code.unwrap_or(1))
    })
}

/// spark-submit's usage text, then the applications this binary ships.
fn usage() -> String {
    ssa::usage() + &super::console::applications_help(&crate::apps::names())
}

/// The line that follows a failed submission of a class this binary does not have, when
/// the class is a near miss of one it has.
fn class_hint(parsed: &SparkSubmitArguments) -> Option<String> {
    if parsed.action != SparkSubmitAction::Submit {
        return None;
    }
    let class = parsed.main_class.as_deref()?;
    let names = crate::apps::names();
    super::console::nearest_class(class, &names).map(|near| {
        format!("class {class} is not one of this binary's applications: did you mean '{near}'? ('{WHO} --help' lists them)")
    })
}

/// Prints a command-line problem as spark-submit does (the usage text where Spark shows it,
/// then one line) and returns the exit status.
fn report(e: &SubmitArgsError) -> i32 {
    if e.is_help() {
        print!("{}", usage());
        return EXIT_OK;
    }
    if e.show_usage() {
        eprint!("{}", usage());
    }
    let message = e.message().unwrap_or("no application given");
    fail(WHO, &format!("{message} (run '{WHO} --help' for usage)"));
    // Spark exits -1 when given no arguments at all, which a process reports as 255.
    if e.exit_code() < 0 {
        255
    } else {
        e.exit_code()
    }
}

enum Problem {
    Args(SubmitArgsError),
    Conf(String),
}

/// Reads the properties files and yarn-site.conf, resolves the arguments as spark-submit does
/// and validates the final configuration.
fn assemble(parsed: &mut SparkSubmitArguments) -> Result<SparkConf, Problem> {
    let dir = config::config_dir(parsed.config_dir.as_deref().map(Path::new)).map_err(Problem::Conf)?;
    let defaults_file = dir.join(conf::SPARK_DEFAULTS_FILE);
    let mut files: Vec<PathBuf> = Vec::new();
    match &parsed.properties_file {
        Some(pf) => {
            files.push(PathBuf::from(pf));
            if parsed.load_spark_defaults && defaults_file.is_file() {
                files.push(defaults_file);
            }
        }
        None if defaults_file.is_file() => files.push(defaults_file),
        None => {}
    }
    let yarn_site = dir.join(conf::YARN_SITE_FILE);
    if yarn_site.is_file() {
        files.push(yarn_site);
    }
    let mut defaults = Vec::new();
    for f in &files {
        defaults.extend(conf::load_properties_file(f).map_err(|e| Problem::Conf(e.to_string()))?);
    }
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    parsed.resolve(&defaults, &env).map_err(Problem::Args)?;
    for w in &parsed.warnings {
        tracing::warn!("{w}");
    }
    let conf: SparkConf = parsed.to_spark_properties().into_iter().collect();
    let loaded = config::validate(conf, dir).map_err(Problem::Conf)?;
    for w in &loaded.warnings {
        tracing::warn!("{w}");
    }
    if parsed
        .resolve_main_class(|name| super::roles::applications().contains(name))
        .map_err(Problem::Args)?
    {
        tracing::info!(
            class = parsed.main_class.as_deref().unwrap_or_default(),
            "No --class given: the primary resource names the built-in application {}, which runs (spark-submit would need --class {} <jar>)",
            parsed.main_class.as_deref().unwrap_or_default(),
            parsed.main_class.as_deref().unwrap_or_default()
        );
    }
    Ok(loaded.conf)
}

fn print_verbose(parsed: &SparkSubmitArguments, conf: &SparkConf) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "Parsed arguments:");
    let show = |v: &Option<String>| v.clone().unwrap_or_else(|| "null".into());
    for (name, value) in [
        ("master", show(&parsed.master)),
        ("deployMode", parsed.effective_deploy_mode().to_string()),
        ("executorMemory", show(&parsed.executor_memory)),
        ("executorCores", show(&parsed.executor_cores)),
        ("driverMemory", show(&parsed.driver_memory)),
        ("driverCores", show(&parsed.driver_cores)),
        ("queue", show(&parsed.queue)),
        ("numExecutors", show(&parsed.num_executors)),
        ("propertiesFile", show(&parsed.properties_file)),
        ("mainClass", show(&parsed.main_class)),
        ("primaryResource", show(&parsed.primary_resource)),
        ("name", show(&parsed.name)),
        ("childArgs", format!("[{}]", parsed.child_args.join(" "))),
        ("verbose", parsed.verbose.to_string()),
    ] {
        let _ = writeln!(err, "  {name:<24}{value}");
    }
    let _ = writeln!(err, "\nSpark properties used, including those specified through --conf and those from the properties file:");
    // Utils.redact: values whose key or value matches spark.redaction.regex are hidden.
    let redactor = conf::Redactor::from_conf(conf);
    for (k, v) in conf.iter() {
        let _ = writeln!(err, "  ({k},{})", redactor.value(k, v));
    }
}

fn print_version() {
    println!("Welcome to sparkyard version {}", env!("CARGO_PKG_VERSION"));
    println!("Spark-on-YARN's control plane as a supervised actor system, after Spark 4's behaviour");
    println!("Type --help for more information.");
}
