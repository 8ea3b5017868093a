//! What an application's code sees: its environment ([`AppEnv`]: arguments, configuration,
//! output) and its [`SparkContext`].
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

mod driver;
mod output;

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub use driver::{driver_spec, stop_driver, DriverPaths, DRIVER_SEGMENT};
pub use output::OutputSink;

use crate::conf::{self, SparkConf};
use crate::rpc::EndpointRef;
use crate::runtime::blocking::block_on;
use crate::runtime::supervisor::StartChild;
use crate::runtime::{ActorPath, CancelToken, Cancelled, Cluster, Supervisor};
use crate::scheduler::driver_endpoint::DriverEndpoint;
use crate::scheduler::messages::{ExecutorSummary, GetExecutors};

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

impl From<Cancelled> for AppError {
    fn from(c: Cancelled) -> Self {
        AppError::Exception(format!("java.lang.InterruptedException: {c}"))
    }
}

/// An application's entry point (registered by class name in `apps`).
pub type AppMain = fn(&AppEnv) -> Result<(), AppError>;

/// Where the driver runs and how it reaches its ApplicationMaster.
#[derive(Clone, Debug)]
pub enum DriverMode {
    /// Inside the AM container: `am` is the ApplicationMaster actor, `parent` the AM's
    /// supervisor under which the driver subtree starts.
    Cluster { am: ActorPath, parent: ActorPath },
    /// In the submitting process: the driver subtree starts under `parent`, and the
    /// context's backend submits the executor launcher's application through `launcher`.
    Client {
        parent: ActorPath,
        launcher: Arc<dyn ClientLauncher>,
    },
}

/// Client mode's YarnClientSchedulerBackend.start: submits the application whose AM is the
/// executor launcher and waits until it runs; implemented by the deploy side.
pub trait ClientLauncher: Send + Sync + fmt::Debug {
    /// Submits and waits until the application is RUNNING; answers its application id.
    fn launch(&self, env: &AppEnv, driver: &DriverPaths) -> Result<String, String>;
    /// The application's driver stopped: tell the AM (Shutdown).
    fn stopped(&self, env: &AppEnv, driver: &DriverPaths);
}

/// Everything an application's `main` is given.
#[derive(Clone, Debug)]
pub struct AppEnv {
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
    env: AppEnv,
    paths: DriverPaths,
    app_id: String,
    stopped: AtomicBool,
}

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
        let spec = driver_spec(&conf, &paths);
        let sup = env.cluster.endpoint::<Supervisor>(&parent);
        let started = block_on(&env.cluster, sup.ask(StartChild(spec), bound), bound)
            .map_err(|e| AppError::Exception(format!("cannot start the driver: {e}")))?
            .map_err(|e| AppError::Exception(format!("cannot start the driver: {e}")))?
            .map_err(|e| AppError::Exception(format!("cannot start the driver: {e}")))?;
        tracing::info!(
            driver = started.as_str(),
            "Started the driver's endpoints under {started}"
        );
        let app_id = match &env.mode {
            DriverMode::Cluster { am, .. } => {
                crate::deploy::application_master::spark_context_initialized(env, am, &paths)
                    .map_err(AppError::Exception)?;
                env.app_id.clone()
            }
            DriverMode::Client { launcher, .. } => {
                launcher.launch(env, &paths).map_err(AppError::Exception)?
            }
        };
        let sc = SparkContext {
            env: env.clone(),
            paths,
            app_id,
            stopped: AtomicBool::new(false),
        };
        sc.wait_backend_ready()?;
        Ok(sc)
    }

    pub fn app_id(&self) -> &str {
        &self.app_id
    }
    pub fn conf(&self) -> &SparkConf {
        &self.env.conf
    }

    fn driver(&self) -> EndpointRef<DriverEndpoint> {
        self.env.cluster.endpoint(&self.paths.driver_endpoint)
    }

    /// The executors registered with the DriverEndpoint now.
    pub fn executors(&self) -> Result<Vec<ExecutorSummary>, AppError> {
        let bound = ask_bound(&self.env.conf);
        block_on(&self.env.cluster, self.driver().ask(GetExecutors, bound), bound)
            .map_err(|e| AppError::Exception(e.to_string()))?
            .map_err(|e| AppError::Exception(e.to_string()))
    }

    /// The number of executors the application starts with: `spark.executor.instances`,
    /// else 2 (SchedulerBackendUtils.DEFAULT_NUMBER_EXECUTORS); with dynamic allocation the
    /// larger of its minimum and initial executors and the instances.
    pub fn initial_target_executors(&self) -> u32 {
        initial_target_executors(&self.env.conf)
    }

    /// Waits (cluster clock, at most `limit`) until at least `n` executors are registered;
    /// answers how many are.
    pub fn wait_for_executors(&self, n: usize, limit: Duration) -> Result<usize, AppError> {
        let clock = self.env.cluster.clock().clone();
        let deadline = clock.now() + limit;
        loop {
            let count = self.executors()?.len();
            if count >= n || clock.now() >= deadline {
                return Ok(count);
            }
            clock.blocking_sleep(Duration::from_millis(20), Some(&self.env.cancel))?;
        }
    }

    /// TaskSchedulerImpl.waitBackendReady.
    fn wait_backend_ready(&self) -> Result<(), AppError> {
        let conf = &self.env.conf;
        let ratio = conf
            .get(&conf::SCHEDULER_MIN_REGISTERED_RESOURCES_RATIO)
            .unwrap_or(0.8);
        let max_wait = conf
            .get(&conf::SCHEDULER_MAX_REGISTERED_RESOURCE_WAITING_TIME)
            .unwrap_or(Duration::from_secs(30));
        let expected = self.initial_target_executors() as f64;
        let clock = self.env.cluster.clock().clone();
        let start = clock.now();
        loop {
            let registered = self.executors()?.len() as f64;
            if registered >= expected * ratio {
                tracing::info!(
                    "SchedulerBackend is ready for scheduling beginning after reached minRegisteredResourcesRatio: {ratio}"
                );
                return Ok(());
            }
            if clock.now().saturating_sub(start) >= max_wait {
                tracing::info!(
                    "SchedulerBackend is ready for scheduling beginning after waiting maxRegisteredResourcesWaitingTime: {}(ms)",
                    max_wait.as_millis()
                );
                return Ok(());
            }
            clock.blocking_sleep(Duration::from_millis(100).min(max_wait), Some(&self.env.cancel))?;
        }
    }

    /// Stops the context: executors are told to stop, the executor target goes to 0, the
    /// driver's endpoints stop. Idempotent.
    pub fn stop(&self) {
        if self.stopped.swap(true, Ordering::AcqRel) {
            return;
        }
        tracing::info!("Stopping SparkContext");
        let bound = ask_bound(&self.env.conf);
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
    }
}

impl Drop for SparkContext {
    fn drop(&mut self) {
        if !self.stopped.load(Ordering::Acquire) && !std::thread::panicking() {
            self.stop();
        }
    }
}

/// SchedulerBackendUtils.getInitialTargetExecutorNumber.
pub fn initial_target_executors(conf: &SparkConf) -> u32 {
    let instances = conf.get(&conf::EXECUTOR_INSTANCES).ok().flatten();
    if conf.get(&conf::DYN_ALLOCATION_ENABLED).unwrap_or(false) {
        let min = conf.get(&conf::DYN_ALLOCATION_MIN_EXECUTORS).unwrap_or(0);
        let initial = conf.get(&conf::DYN_ALLOCATION_INITIAL_EXECUTORS).unwrap_or(min);
        min.max(initial).max(instances.unwrap_or(0))
    } else {
        instances.unwrap_or(DEFAULT_NUMBER_EXECUTORS)
    }
}

/// SchedulerBackendUtils.DEFAULT_NUMBER_EXECUTORS.
pub const DEFAULT_NUMBER_EXECUTORS: u32 = 2;
