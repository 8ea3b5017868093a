//! What an application's code sees: its environment ([`AppEnv`]: arguments, configuration,
//! output) and its [`SparkContext`].
//!
//! Layer: context (the Spark side: SparkContext, above executor).
//!
//! An application's `main` runs on its own thread (Spark's "Driver" thread: inside the AM
//! container in cluster mode, inside the submitting process in client mode) and calls the
//! actors through blocking calls with bounds. Creating a SparkContext starts the driver's
//! subtree (DriverEndpoint, YarnSchedulerEndpoint) and does the start-up handshake of seed
//! 001: in cluster mode it tells the ApplicationMaster the context is up
//! (`sparkContextInitialized`) and waits until the AM has registered with the
//! ResourceManager and created its allocator (`resumeDriver`); then, as
//! TaskSchedulerImpl.postStartHook does, it waits until enough executors have registered
//! (`spark.scheduler.minRegisteredResourcesRatio`, 0.8 on YARN) or
//! `spark.scheduler.maxRegisteredResourcesWaitingTime` has passed.

mod applications;
mod driver;
mod jobs;

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

pub use applications::Applications;
pub use driver::{
    driver_spec, progress_bar_settings, stop_driver, task_scheduler_config, DriverPaths, DRIVER_SEGMENT,
};
pub use jobs::DriverJobRunner;

use crate::conf::{self, SparkConf};
use crate::logs::output::OutputSink;
use crate::rdd::api::{self as rdd_api, JobError, JobRunner, Rdd};
use crate::rdd::Value;
use crate::rpc::EndpointRef;
use crate::runtime::blocking::block_on;
use crate::runtime::supervisor::StartChild;
use crate::runtime::SupervisorProtocol;
use crate::runtime::{ActorPath, CancelToken, Cancelled, Cluster};
pub use crate::scheduler::backend_utils::{initial_target_executors, DEFAULT_NUMBER_EXECUTORS};
use crate::scheduler::event_logging_listener::EventLoggingListener;
use crate::scheduler::events::SparkListenerEvent;
use crate::scheduler::listener_bus::ListenerBusProtocol;
use crate::scheduler::listener_bus::{AddListener, ListenerBusRef, SparkListener};
use crate::scheduler::messages::DriverProtocol;
use crate::scheduler::messages::{AwaitExecutors, ExecutorSummary, GetExecutors};

/// How an application's `main` failed: Spark's exception, or SparkUserAppException's
/// exit status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AppError {
    /// The user class threw (the AM finishes FAILED with exit code 15).
    Exception(String),
    /// The application asked to exit with this status (SparkUserAppException).
    Exit(i32),
}

impl fmt::Display for AppError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AppError::Exception(m) => f.write_str(m),
            AppError::Exit(c) => write!(f, "User application exited with status {c}"),
        }
    }
}

impl std::error::Error for AppError {}

impl From<JobError> for AppError {
    fn from(e: JobError) -> Self {
        AppError::Exception(e.to_string())
    }
}

impl From<Cancelled> for AppError {
    fn from(c: Cancelled) -> Self {
        AppError::Exception(format!("java.lang.InterruptedException: {c}"))
    }
}

/// An application's entry point (found by class name in the process's [`Applications`]).
pub type AppMain = fn(&AppEnv) -> Result<(), AppError>;

/// Where the driver runs and how it reaches its ApplicationMaster.
#[derive(Clone, Debug)]
pub enum DriverMode {
    /// Inside the AM container: `am` is the ApplicationMaster's side of the start-up
    /// handshake, `parent` the AM's supervisor under which the driver subtree starts.
    Cluster {
        am: Arc<dyn ClusterApplicationMaster>,
        parent: ActorPath,
    },
    /// In the submitting process: the driver subtree starts under `parent`, and the
    /// context's backend submits the executor launcher's application through `launcher`.
    Client {
        parent: ActorPath,
        launcher: Arc<dyn ClientLauncher>,
    },
}

/// Cluster mode's ApplicationMaster as the driver reaches it (YarnClusterScheduler's
/// postStartHook calling ApplicationMaster.sparkContextInitialized). The AM hands it to the
/// context it starts, so the context knows nothing of the AM. Implemented by the deploy side.
pub trait ClusterApplicationMaster: Send + Sync + fmt::Debug {
    /// The context is up: tell the AM (with the driver's endpoints) and block until it has
    /// registered with the ResourceManager and resumes the driver; the error is why it did
    /// not.
    fn spark_context_initialized(&self, env: &AppEnv, driver: &DriverPaths) -> Result<(), String>;
}

/// Client mode's YarnClientSchedulerBackend: start submits the application whose AM is the
/// executor launcher, waits until it runs and monitors it; stop stops that monitor first.
/// Implemented by the deploy side.
pub trait ClientLauncher: Send + Sync + fmt::Debug {
    /// Submits and waits until the application is RUNNING; answers its application id. If
    /// the application then ends while the driver runs, the launcher stops the context
    /// through `context` (Spark's MonitorThread calling `sc.stop()`).
    fn launch(&self, env: &AppEnv, driver: &DriverPaths, context: ContextStopper) -> Result<String, String>;
    /// SparkContext.stop begins: stop monitoring the application before anything the stop
    /// does can end it (YarnClientSchedulerBackend.stop: `monitorThread.stopMonitor()`).
    fn stopping(&self);
    /// The application's driver stopped: tell the AM (Shutdown).
    fn stopped(&self, env: &AppEnv, driver: &DriverPaths);
}

/// Stops a SparkContext from another thread (client mode's application state monitor);
/// does nothing once the context is gone.
#[derive(Clone)]
pub struct ContextStopper(Weak<ContextCore>);

impl fmt::Debug for ContextStopper {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ContextStopper")
    }
}

impl ContextStopper {
    /// `sc.stop()`: blocks until the context has stopped (bounded by the ask time-out per
    /// step); call it from a thread of its own, never an actor's.
    pub fn stop(&self) {
        if let Some(core) = self.0.upgrade() {
            core.stop();
        }
    }
}

/// Everything an application's `main` is given.
#[derive(Clone, Debug)]
pub struct AppEnv {
    /// The application's main class (`org.apache.spark.examples.SparkPi`).
    pub(crate) class_name: String,
    pub(crate) args: Vec<String>,
    pub(crate) conf: Arc<SparkConf>,
    pub(crate) cluster: Cluster,
    pub(crate) mode: DriverMode,
    pub(crate) output: OutputSink,
    pub(crate) cancel: CancelToken,
    pub(crate) host: String,
    pub(crate) app_id: String,
    pub(crate) attempt: u32,
}

impl AppEnv {
    /// The application's arguments (what followed the primary resource on the command line).
    pub fn args(&self) -> &[String] {
        &self.args
    }
    /// The application's configuration.
    pub fn conf(&self) -> &SparkConf {
        &self.conf
    }
    /// The main class's name.
    pub fn class_name(&self) -> &str {
        &self.class_name
    }
    /// Writes a line of application output: to the driver container's stdout in cluster
    /// mode, to the submitting process's stdout in client mode.
    pub fn println(&self, line: impl fmt::Display) {
        self.output.println(&line.to_string());
    }
    /// The host the driver runs on.
    pub fn host(&self) -> &str {
        &self.host
    }
    /// The YARN application attempt this driver runs in (1 in client mode and on the first
    /// attempt).
    pub fn attempt_number(&self) -> u32 {
        self.attempt
    }
    /// Whether the application was told to stop (its AM finished, its container is being
    /// stopped); long-running code should check it.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }
    /// Sleeps on the cluster clock; returns early with an error if the application is
    /// cancelled.
    pub fn sleep(&self, d: Duration) -> Result<(), AppError> {
        Ok(self.cluster.clock().blocking_sleep(d, Some(&self.cancel))?)
    }
}

/// A running SparkContext (the driver handle an application uses).
pub struct SparkContext {
    core: Arc<ContextCore>,
    app_id: String,
    runner: Arc<DriverJobRunner>,
    start_time: u64,
}

/// What stopping a SparkContext needs, shared with the thread that may stop it from outside
/// (client mode's application state monitor).
struct ContextCore {
    env: AppEnv,
    paths: DriverPaths,
    bus: ListenerBusRef,
    /// Fires when the context begins to stop (and with the application's cancellation): the
    /// application thread's jobs and waits end with it.
    stop: CancelToken,
    /// A stop has begun (the first caller does it).
    stopping: AtomicBool,
    /// Fires when the first stop has finished; later callers wait for it.
    stopped: CancelToken,
}

/// Spark's message when the context stops while the application waits for executors.
const STOPPED_WHILE_WAITING: &str =
    "java.lang.IllegalStateException: Spark context stopped while waiting for backend";

impl fmt::Debug for SparkContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SparkContext({})", self.app_id)
    }
}

fn ask_bound(conf: &SparkConf) -> Duration {
    conf.get(&conf::RPC_ASK_TIMEOUT)
        .unwrap_or(Duration::from_secs(120))
        + Duration::from_secs(5)
}

impl SparkContext {
    /// Creates the SparkContext: starts the driver's endpoints, does the handshake with the
    /// ApplicationMaster and waits for the backend to be ready (see the module docs).
    pub fn new(env: &AppEnv) -> Result<SparkContext, AppError> {
        let conf = env.conf.clone();
        let bound = ask_bound(&conf);
        let parent = match &env.mode {
            DriverMode::Cluster { parent, .. } | DriverMode::Client { parent, .. } => parent.clone(),
        };
        let paths = DriverPaths::under(&parent);
        let progress_bar = progress_bar_settings(
            &conf,
            matches!(env.mode, DriverMode::Client { .. }),
            std::io::IsTerminal::is_terminal(&std::io::stderr()),
            std::env::var("COLUMNS").ok().as_deref(),
        );
        let (spec, bus) = driver_spec(&conf, &paths, &env.cluster, progress_bar);
        let start_time = env.cluster.clock().epoch_millis();
        let sup = env.cluster.endpoint::<SupervisorProtocol>(&parent);
        let started = block_on(&env.cluster, sup.ask(StartChild(spec), bound), bound)
            .map_err(|e| AppError::Exception(format!("cannot start the driver: {e}")))?
            .map_err(|e| AppError::Exception(format!("cannot start the driver: {e}")))?
            .map_err(|e| AppError::Exception(format!("cannot start the driver: {e}")))?;
        tracing::info!(
            driver = started.as_str(),
            "Started the driver's endpoints under {started}"
        );
        let core = Arc::new(ContextCore {
            env: env.clone(),
            paths: paths.clone(),
            bus: bus.clone(),
            stop: env.cancel.child(),
            stopping: AtomicBool::new(false),
            stopped: CancelToken::new(),
        });
        let initialized = match &env.mode {
            DriverMode::Cluster { am, .. } => {
                // The listeners hear everything from ApplicationStart on, executors included.
                start_listeners(env, &paths, &bus, &env.app_id, start_time).and_then(|()| {
                    am.spark_context_initialized(env, &paths)
                        .map_err(AppError::Exception)
                        .map(|()| env.app_id.clone())
                })
            }
            DriverMode::Client { launcher, .. } => {
                // Client mode learns its application id from the launch.
                let stopper = ContextStopper(Arc::downgrade(&core));
                launcher
                    .launch(env, &paths, stopper)
                    .map_err(AppError::Exception)
                    .and_then(|app_id| {
                        start_listeners(env, &paths, &bus, &app_id, start_time).map(|()| app_id)
                    })
            }
        };
        // As SparkContext's constructor does when it fails: stop what was started.
        let app_id = initialized.inspect_err(|_| core.stop())?;
        let runner = Arc::new(
            DriverJobRunner::new(
                env.cluster.clone(),
                conf.clone(),
                paths.dag_scheduler.clone(),
                paths.driver_endpoint.clone(),
                core.stop.clone(),
                &env.class_name,
                bound,
            )
            .with_progress_bar(progress_bar.map(|_| paths.console_progress_bar.clone())),
        );
        let sc = SparkContext {
            core,
            app_id,
            runner,
            start_time,
        };
        sc.wait_backend_ready()?;
        Ok(sc)
    }

    /// Registers an application's own listener on the listener bus.
    pub fn add_spark_listener(&self, listener: Box<dyn SparkListener>) -> Result<(), AppError> {
        add_listener(&self.core.env, &self.core.paths, listener)
    }

    /// The runner RDDs of this context use (for the free functions of `rdd::api`).
    pub fn runner(&self) -> Arc<dyn JobRunner> {
        self.runner.clone()
    }

    /// `sc.parallelize(values, numSlices)` (numSlices defaults to the default parallelism).
    pub fn parallelize(&self, values: Vec<Value>, num_slices: Option<u32>) -> Result<Rdd, AppError> {
        Ok(rdd_api::parallelize(&self.runner(), values, num_slices)?)
    }

    /// `sc.parallelize(start until end by step, numSlices)`, kept as ranges until it runs.
    pub fn parallelize_range(
        &self,
        start: i64,
        end_exclusive: i64,
        step: i64,
        num_slices: Option<u32>,
    ) -> Result<Rdd, AppError> {
        Ok(rdd_api::parallelize_range(
            &self.runner(),
            start,
            end_exclusive,
            step,
            num_slices,
        )?)
    }

    /// `sc.makeRDD(Seq[(value, preferred hosts)])`: one partition per value.
    pub fn make_rdd(&self, values: Vec<(Value, Vec<String>)>) -> Rdd {
        rdd_api::make_rdd(&self.runner(), values)
    }

    /// `sc.textFile(path, minPartitions)`.
    pub fn text_file(&self, path: &str, min_partitions: Option<u32>) -> Result<Rdd, AppError> {
        Ok(rdd_api::text_file(&self.runner(), path, min_partitions)?)
    }

    /// `sc.defaultParallelism`: `spark.default.parallelism`, else the executors' cores (at
    /// least 2).
    pub fn default_parallelism(&self) -> u32 {
        self.runner.default_parallelism()
    }

    /// When the context was created (milliseconds since the epoch).
    pub fn start_time(&self) -> u64 {
        self.start_time
    }

    pub fn app_id(&self) -> &str {
        &self.app_id
    }
    pub fn conf(&self) -> &SparkConf {
        &self.core.env.conf
    }

    fn driver(&self) -> EndpointRef<DriverProtocol> {
        self.core.env.cluster.endpoint(&self.core.paths.driver_endpoint)
    }

    /// The executors registered with the DriverEndpoint now.
    pub fn executors(&self) -> Result<Vec<ExecutorSummary>, AppError> {
        let bound = ask_bound(&self.core.env.conf);
        block_on(
            &self.core.env.cluster,
            self.driver().ask(GetExecutors, bound),
            bound,
        )
        .map_err(|e| AppError::Exception(e.to_string()))?
        .map_err(|e| AppError::Exception(e.to_string()))
    }

    /// The number of executors the application starts with: `spark.executor.instances`,
    /// else 2 (SchedulerBackendUtils.DEFAULT_NUMBER_EXECUTORS); with dynamic allocation the
    /// larger of its minimum and initial executors and the instances.
    pub fn initial_target_executors(&self) -> u32 {
        initial_target_executors(&self.core.env.conf)
    }

    /// Waits (cluster clock, at most `limit`) until at least `n` executors are registered;
    /// answers how many are. Fails at once if the context stops meanwhile (Spark's "Spark
    /// context stopped while waiting for backend") or the application is cancelled.
    pub fn wait_for_executors(&self, n: usize, limit: Duration) -> Result<usize, AppError> {
        let env = &self.core.env;
        let clock = env.cluster.clock().clone();
        let deadline = clock.now() + limit;
        loop {
            let left = deadline.saturating_sub(clock.now());
            let ask = self.driver().ask(AwaitExecutors { count: n }, left);
            let stop = self.core.stop.clone();
            let raced = async move {
                tokio::select! {
                    answer = ask => Some(answer),
                    _ = stop.cancelled() => None,
                }
            };
            match block_on(&env.cluster, raced, left + Duration::from_secs(5)) {
                Ok(Some(Ok(count))) if count >= n => return Ok(count),
                Ok(None) => return Err(self.core.stopped_while_waiting()),
                _ => {
                    if clock.now() >= deadline {
                        return Ok(self.executors()?.len());
                    }
                    // The endpoint was restarting: ask again shortly.
                    clock
                        .blocking_sleep(Duration::from_millis(10), Some(&self.core.stop))
                        .map_err(|_| self.core.stopped_while_waiting())?;
                }
            }
        }
    }

    /// TaskSchedulerImpl.waitBackendReady: until the registered executors reach
    /// `spark.scheduler.minRegisteredResourcesRatio` of those expected, or
    /// `spark.scheduler.maxRegisteredResourcesWaitingTime` has passed.
    fn wait_backend_ready(&self) -> Result<(), AppError> {
        let conf = &self.core.env.conf;
        let ratio = conf
            .get(&conf::SCHEDULER_MIN_REGISTERED_RESOURCES_RATIO)
            .unwrap_or(0.8);
        let max_wait = conf
            .get(&conf::SCHEDULER_MAX_REGISTERED_RESOURCE_WAITING_TIME)
            .unwrap_or(Duration::from_secs(30));
        let expected = self.initial_target_executors() as f64;
        let needed = (expected * ratio).ceil().max(0.0) as usize;
        let registered = self.wait_for_executors(needed, max_wait)?;
        if registered >= needed {
            tracing::info!(
                registered,
                "SchedulerBackend is ready for scheduling beginning after reached minRegisteredResourcesRatio: {ratio}"
            );
        } else {
            tracing::info!(
                registered,
                "SchedulerBackend is ready for scheduling beginning after waiting maxRegisteredResourcesWaitingTime: {}(ms)",
                max_wait.as_millis()
            );
        }
        Ok(())
    }

    /// Stops the context: executors are told to stop, the executor target goes to 0, the
    /// driver's endpoints stop. Idempotent; a second caller waits for the first one's stop.
    pub fn stop(&self) {
        self.core.stop();
    }
}

impl Drop for SparkContext {
    /// Stops the context, or waits for the stop another thread began (bounded).
    fn drop(&mut self) {
        if !std::thread::panicking() {
            self.core.stop();
        }
    }
}

impl ContextCore {
    /// The error of a wait the context's stop ended: the application's cancellation if it
    /// was that, else Spark's "stopped while waiting for backend".
    fn stopped_while_waiting(&self) -> AppError {
        match self.env.cancel.check() {
            Err(cancelled) => cancelled.into(),
            Ok(()) => AppError::Exception(STOPPED_WHILE_WAITING.to_string()),
        }
    }

    /// SparkContext.stop; see [`SparkContext::stop`].
    fn stop(&self) {
        let bound = ask_bound(&self.env.conf);
        if self.stopping.swap(true, Ordering::AcqRel) {
            // Another thread (the application state monitor) is stopping it.
            if self.stopped.wait_timeout(bound).is_ok() {
                tracing::warn!(
                    "SparkContext is still stopping after {}",
                    humantime::format_duration(bound)
                );
            }
            return;
        }
        tracing::info!("Stopping SparkContext");
        // Before anything that could end the YARN application, so its end is not taken for
        // an unexpected one (YarnClientSchedulerBackend.stop stops its monitor first).
        if let DriverMode::Client { launcher, .. } = &self.env.mode {
            launcher.stopping();
        }
        // Jobs still running end "cancelled because SparkContext was shut down".
        self.stop.cancel("SparkContext was shut down");
        // Spark 4's stop() is stop(0): the end event carries exit code 0.
        self.bus.post(SparkListenerEvent::ApplicationEnd {
            time: self.env.cluster.clock().epoch_millis(),
            exit_code: Some(0),
        });
        let cluster = self.env.cluster.clone();
        let paths = self.paths.clone();
        let _ = block_on(
            &cluster.clone(),
            async move { stop_driver(&cluster, &paths, bound).await },
            bound,
        );
        if let DriverMode::Client { launcher, .. } = &self.env.mode {
            launcher.stopped(&self.env, &self.paths);
        }
        tracing::info!("Successfully stopped SparkContext");
        self.stopped.cancel("stopped");
    }
}

fn add_listener(env: &AppEnv, paths: &DriverPaths, listener: Box<dyn SparkListener>) -> Result<(), AppError> {
    let bound = ask_bound(&env.conf);
    let bus = env.cluster.endpoint::<ListenerBusProtocol>(&paths.listener_bus);
    block_on(&env.cluster, bus.ask(AddListener(listener), bound), bound)
        .map_err(|e| AppError::Exception(format!("cannot register a listener: {e}")))?
        .map_err(|e| AppError::Exception(format!("cannot register a listener: {e}")))
}

/// Starts the event log (with `spark.eventLog.enabled`) and posts the environment and the
/// application's start, as SparkContext's constructor does.
fn start_listeners(
    env: &AppEnv,
    paths: &DriverPaths,
    bus: &ListenerBusRef,
    app_id: &str,
    start_time: u64,
) -> Result<(), AppError> {
    let conf = &env.conf;
    let attempt = match &env.mode {
        DriverMode::Cluster { .. } => Some(env.attempt.to_string()),
        DriverMode::Client { .. } => None,
    };
    if conf.get(&conf::EVENT_LOG_ENABLED).unwrap_or(false) {
        let dir = conf
            .get(&conf::EVENT_LOG_DIR)
            .unwrap_or_else(|_| "/tmp/spark-events".into());
        let overwrite = conf.get(&conf::EVENT_LOG_OVERWRITE).unwrap_or(false);
        if conf.get(&conf::EVENT_LOG_COMPRESS).unwrap_or(false) {
            tracing::warn!("spark.eventLog.compress=true: sparkyard writes its event logs uncompressed");
        }
        let memory_mb = conf
            .get(&conf::EXECUTOR_MEMORY)
            .map(|b| b / (1024 * 1024))
            .unwrap_or(1024);
        let cores = conf.get(&conf::EXECUTOR_CORES).unwrap_or(1);
        let task_cpus = conf.get(&conf::CPUS_PER_TASK).unwrap_or(1);
        let listener = EventLoggingListener::start(
            &dir,
            app_id,
            attempt.as_deref(),
            overwrite,
            (memory_mb, cores, task_cpus),
        )
        .map_err(AppError::Exception)?;
        add_listener(env, paths, Box::new(listener))?;
    }
    let mut props: Vec<(String, String)> = conf
        .iter()
        .filter(|(k, _)| k.starts_with("spark."))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    props.push(("spark.app.id".into(), app_id.to_string()));
    props.sort();
    bus.post(SparkListenerEvent::EnvironmentUpdate {
        spark_properties: props,
        system_properties: vec![
            ("os.name".into(), std::env::consts::OS.into()),
            ("os.arch".into(), std::env::consts::ARCH.into()),
            ("user.name".into(), spark_user()),
        ],
    });
    bus.post(SparkListenerEvent::ApplicationStart {
        app_name: conf.get_str("spark.app.name").unwrap_or("sparkyard").to_string(),
        app_id: Some(app_id.to_string()),
        time: start_time,
        user: spark_user(),
        app_attempt_id: attempt,
    });
    Ok(())
}

/// Spark's sparkUser: `SPARK_USER`, else the OS user.
fn spark_user() -> String {
    std::env::var("SPARK_USER")
        .or_else(|_| std::env::var("USER"))
        .unwrap_or_else(|_| "sparkyard".into())
}
