//! CoarseGrainedExecutorBackend (YarnCoarseGrainedExecutorBackend): the executor's endpoint,
//! started by a NodeManager from the container's launch command (`sparkyard executor
//! --driver-url ... --executor-id ...`), at `<container>/executor-<id>`.
//!
//! Layer: executor (the Spark side, above scheduler).
//!
//! On start it fetches the application's configuration from the driver
//! (RetrieveSparkAppConfig, up to 3 tries) and asks RegisterExecutor; on success it sends
//! itself RegisteredExecutor, creates its executor and tells the driver LaunchedExecutor; on
//! failure it exits with status 1 and Spark's "Cannot register with driver". It watches the
//! driver: losing it ends the executor ("Driver ... disassociated! Shutting down.").
//! StopExecutor from the driver ends it with status 0. Its exit status is its container's.
//!
//! Tasks: LaunchTask decodes the TaskDescription here (as Spark's backend does) and hands
//! the task to the executor's bounded task pool (`task_pool`, one thread per core); the
//! task thread runs it and reports to the driver itself (`task_runner`). KillTask cancels
//! the task's token; a task's token is a child of the backend's, so a stopped container
//! kills its tasks. FetchShuffleBlocks serves this executor's map outputs (`block_store`)
//! to reduce tasks on other executors.
//!
//! Heartbeats (Spark's Executor heartbeater): once registered, the executor sends
//! `Heartbeat` with its running tasks to the driver's HeartbeatReceiver (next to the
//! DriverEndpoint) every `spark.executor.heartbeatInterval`, the first after one interval
//! plus a jitter of up to one interval, each ask bounded by the interval. After
//! `spark.executor.heartbeat.maxFailures` failures in a row it exits with status 56
//! (ExecutorExitCode.HEARTBEAT_FAILURE), as Spark's executor does.

use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, ActorFutureExt, AsyncContext, Context, Handler, MessageResult, WrapFuture};
use dashmap::DashMap;

use super::args::ExecutorArgs;
use super::block_store::BlockStore;
use super::task_pool::TaskPool;
use super::task_runner::{self, ExecutorHandle, RecentStatuses, StageCache};
use crate::conf::{self, SparkConf};
use crate::logs::LogIds;
use crate::rdd::ops::RegisterOperations;
use crate::rpc::{AskError, EndpointRef};
use crate::runtime::fault::SplitMix64;
use crate::runtime::timers::run_at_fixed_rate;
use crate::runtime::watch::{back_at, ended_by_failure};
use crate::runtime::{ActorPath, CancelToken, ChildSpec, ExitReason, Me, Restart, Terminated};
use crate::scheduler::heartbeat_receiver::HeartbeatProtocol;
use crate::scheduler::heartbeat_receiver::{Heartbeat, HEARTBEAT_RECEIVER_SEGMENT};
use crate::scheduler::loss_reason::ExecutorLossReason;
use crate::scheduler::messages::*;
use crate::scheduler::task::{
    FetchShuffleBlocks, KillTask, LaunchTask, ShuffleBlocks, StatusUpdate, TaskDescription, TaskState,
};
use crate::yarn::launcher::Process;

/// How many times the executor tries to reach the driver for its configuration.
const CONFIG_FETCH_TRIES: u32 = 3;

/// How long an executor waits for a failed DriverEndpoint to be restarted before it
/// treats the driver as gone.
pub const DRIVER_RESTART_WAIT: Duration = Duration::from_secs(10);

/// ExecutorExitCode.HEARTBEAT_FAILURE.
pub const HEARTBEAT_FAILURE_EXIT_CODE: i32 = 56;

/// The heartbeater's settings, from the application's configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
struct HeartbeatSettings {
    interval: Duration,
    max_failures: u32,
}

impl HeartbeatSettings {
    fn from_properties(props: &[(String, String)]) -> Self {
        let mut conf = crate::conf::SparkConf::new();
        for (k, v) in props {
            conf.set(k.clone(), v.clone());
        }
        HeartbeatSettings {
            interval: conf
                .get(&crate::conf::EXECUTOR_HEARTBEAT_INTERVAL)
                .unwrap_or(Duration::from_secs(10))
                .max(Duration::from_millis(1)),
            max_failures: conf
                .get(&crate::conf::EXECUTOR_HEARTBEAT_MAX_FAILURES)
                .unwrap_or(60)
                .max(1),
        }
    }
}

/// How often a decommissioned executor checks whether it can exit (Spark's 1 s loop).
const DECOMMISSION_CHECK_INTERVAL: Duration = Duration::from_secs(1);

/// Spark's ExecutorLossMessage.decommissionFinished.
pub const DECOMMISSION_FINISHED: &str = "Finished decommissioning";

/// The decommission settings, from the application's configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
struct DecommissionSettings {
    /// `spark.decommission.enabled`.
    enabled: bool,
    /// `spark.test.executor.decommission.initial.sleep.millis` (1 s).
    initial_sleep: Duration,
}

impl DecommissionSettings {
    fn from_properties(props: &[(String, String)]) -> Self {
        let mut conf = crate::conf::SparkConf::new();
        for (k, v) in props {
            conf.set(k.clone(), v.clone());
        }
        DecommissionSettings {
            enabled: conf.get(&crate::conf::DECOMMISSION_ENABLED).unwrap_or(false),
            initial_sleep: Duration::from_millis(
                conf.get(&crate::conf::EXECUTOR_DECOMMISSION_INITIAL_SLEEP_MS)
                    .unwrap_or(1000),
            ),
        }
    }
}

/// A task thread ended while the executor decommissions: see whether it can exit now.
#[derive(Clone, Debug, actix::Message)]
#[rtype(result = "()")]
struct DecommissionCheck;

/// A jitter in [0, interval) that is a pure function of the executor id, so runs repeat
/// (Spark draws it at random to spread executors' heartbeats).
fn heartbeat_jitter(executor_id: &str, interval: Duration) -> Duration {
    let seed = executor_id.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    let ms = u64::try_from(interval.as_millis()).unwrap_or(u64::MAX).max(1);
    Duration::from_millis(SplitMix64::new(seed).below(ms))
}

/// The executor proper: its task pool, its running tasks and its block store.
pub struct Executor {
    pub executor_id: String,
    pub cores: u32,
    pub spark_properties: Vec<(String, String)>,
    pool: TaskPool,
    /// What the backend shares with its task threads, in one allocation: each task takes
    /// one reference, not one per part (with a thousand executors in one process, each
    /// executor's counts are cold in cache when its next task comes).
    shared: Arc<TaskShare>,
}

/// The part of an executor its task threads hold while they run its tasks.
struct TaskShare {
    handle: ExecutorHandle,
    /// Running tasks' tokens by task id (task threads remove their own).
    running: DashMap<u64, CancelToken>,
    /// Decommissioning: each task thread that ends asks the backend to check whether it can
    /// exit.
    decommissioned: std::sync::atomic::AtomicBool,
}

impl Executor {
    /// Stops taking tasks and kills the running ones.
    fn stop(&self, reason: &str) {
        self.pool.shutdown();
        for entry in self.shared.running.iter() {
            entry.value().cancel(reason);
        }
    }
}

/// The CoarseGrainedExecutorBackend actor; see the module docs.
pub struct CoarseGrainedExecutorBackend {
    me: Me,
    args: ExecutorArgs,
    driver_path: Option<ActorPath>,
    ask_timeout: Duration,
    spark_properties: Vec<(String, String)>,
    executor: Option<Executor>,
    store: BlockStore,
    stopping: bool,
    /// Heartbeats failed in a row; whether one is in flight.
    heartbeat_failures: u32,
    heartbeat_in_flight: bool,
    decommission: DecommissionSettings,
    /// decommissionSelf ran (Spark's `decommissioned`).
    decommissioned: bool,
    /// The first exit check after the initial sleep has run (task ends check from then on).
    decommission_checking: bool,
}

/// The executor container's process, as the binary's launcher starts it for the `executor`
/// role: the backend at `executor-<id>`, its asks bounded by the command's
/// `spark.rpc.askTimeout` (120 s when the command sets none), its records carrying the
/// executor id. `operations` registers the RDD operations of the applications the process
/// ships (the user's jar on the executor's classpath) before each incarnation starts.
pub fn executor_process(
    args: ExecutorArgs,
    system_properties: &[(String, String)],
    operations: RegisterOperations,
) -> Process {
    let mut conf = SparkConf::new();
    for (k, v) in system_properties {
        conf.set(k.as_str(), v.as_str());
    }
    let ask = conf
        .get(&conf::RPC_ASK_TIMEOUT)
        .unwrap_or(Duration::from_secs(120));
    let ids = LogIds::default().executor(&args.executor_id);
    let segment = format!("executor-{}", args.executor_id);
    let spec = ChildSpec::worker(&segment, move |_, me| {
        operations();
        CoarseGrainedExecutorBackend::new(me, args.clone(), ask)
    })
    .restart(Restart::Temporary)
    .significant(true);
    Process::new(spec).ids(ids)
}

impl CoarseGrainedExecutorBackend {
    pub fn new(me: Me, args: ExecutorArgs, ask_timeout: Duration) -> Self {
        // A URL with an address routes the driver's process (its hello teaches the rest).
        let driver_path = me.cluster().resolve_url(&args.driver_url).ok();
        CoarseGrainedExecutorBackend {
            me,
            args,
            driver_path,
            ask_timeout,
            spark_properties: Vec::new(),
            executor: None,
            store: BlockStore::new(),
            stopping: false,
            heartbeat_failures: 0,
            heartbeat_in_flight: false,
            decommission: DecommissionSettings {
                enabled: false,
                initial_sleep: Duration::from_secs(1),
            },
            decommissioned: false,
            decommission_checking: false,
        }
    }

    fn driver(&self) -> Option<EndpointRef<DriverProtocol>> {
        self.driver_path.as_ref().map(|p| self.me.endpoint(p))
    }

    /// The driver's HeartbeatReceiver: next to the DriverEndpoint.
    fn heartbeat_receiver(&self) -> Option<EndpointRef<HeartbeatProtocol>> {
        let driver = self.driver_path.as_ref()?.parent()?;
        let path = driver.child(HEARTBEAT_RECEIVER_SEGMENT).ok()?;
        Some(self.me.endpoint(&path))
    }

    /// Starts the heartbeater (Spark's Executor.heartbeater).
    fn start_heartbeater(&mut self, settings: HeartbeatSettings, ctx: &mut Context<Self>) {
        let initial = settings.interval + heartbeat_jitter(&self.args.executor_id, settings.interval);
        tracing::info!(
            interval_ms = settings.interval.as_millis() as u64,
            "Sending heartbeats to the driver every {}",
            humantime::format_duration(settings.interval)
        );
        let clock = self.me.clock().clone();
        run_at_fixed_rate(
            ctx,
            &clock,
            initial,
            settings.interval,
            move |act: &mut Self, ctx| act.report_heartbeat(&settings, ctx),
        );
    }

    /// reportHeartBeat: one ask, bounded by the interval; too many failures end the executor.
    fn report_heartbeat(&mut self, settings: &HeartbeatSettings, ctx: &mut Context<Self>) {
        if self.stopping || self.heartbeat_in_flight {
            return;
        }
        let (Some(receiver), Some(executor)) = (self.heartbeat_receiver(), &self.executor) else {
            return;
        };
        let mut running: Vec<u64> = executor.shared.running.iter().map(|e| *e.key()).collect();
        running.sort_unstable();
        let heartbeat = Heartbeat {
            executor_id: self.args.executor_id.clone(),
            host: self.args.hostname.clone(),
            running_tasks: running,
        };
        self.heartbeat_in_flight = true;
        let max_failures = settings.max_failures;
        let ask = receiver.ask(heartbeat, settings.interval);
        ctx.spawn(ask.into_actor(self).map(move |answer, act, ctx| {
            act.heartbeat_in_flight = false;
            match answer {
                Ok(response) => {
                    act.heartbeat_failures = 0;
                    if response.reregister_block_manager {
                        tracing::info!("Told to re-register on heartbeat");
                    }
                }
                Err(e) => {
                    act.heartbeat_failures += 1;
                    tracing::warn!(
                        failures = act.heartbeat_failures,
                        "Issue communicating with driver in heartbeater: {e}"
                    );
                    if act.heartbeat_failures >= max_failures {
                        let reason =
                            format!("Unable to send heartbeats to driver more than {max_failures} times");
                        act.exit_executor(ctx, HEARTBEAT_FAILURE_EXIT_CODE, &reason, false);
                    }
                }
            }
        }));
    }

    /// Spark's decommissionSelf: with `spark.decommission.enabled`, the executor takes note
    /// (the driver offers it nothing more), and once no task runs it exits with status 0,
    /// telling the driver "Finished decommissioning". The first check comes after the
    /// initial sleep, then every second and whenever a task ends.
    fn decommission_self(&mut self, ctx: &mut Context<Self>) {
        let id = self.args.executor_id.clone();
        if !self.decommission.enabled {
            tracing::warn!("Receive decommission request, but decommission feature is disabled.");
            return;
        }
        if self.decommissioned {
            tracing::warn!(
                executor_id = id.as_str(),
                "Executor {id} already started decommissioning."
            );
            return;
        }
        tracing::info!(
            event = "executor_decommission",
            executor_id = id.as_str(),
            "Decommission executor {id}."
        );
        self.decommissioned = true;
        if let Some(executor) = &self.executor {
            executor
                .shared
                .decommissioned
                .store(true, std::sync::atomic::Ordering::SeqCst);
        }
        let clock = self.me.clock().clone();
        run_at_fixed_rate(
            ctx,
            &clock,
            self.decommission.initial_sleep,
            DECOMMISSION_CHECK_INTERVAL,
            |act: &mut Self, ctx| {
                act.decommission_checking = true;
                act.check_decommission_done(ctx)
            },
        );
        tracing::info!("Will exit when finished decommissioning");
    }

    /// The decommissioned executor exits once no task runs.
    fn check_decommission_done(&mut self, ctx: &mut Context<Self>) {
        if self.stopping {
            return;
        }
        tracing::debug!("Checking to see if we can shutdown.");
        let running = self.executor.as_ref().map_or(0, |e| e.shared.running.len());
        if running == 0 {
            tracing::info!("No running tasks, no block migration configured, stopping.");
            self.exit_executor(ctx, 0, DECOMMISSION_FINISHED, true);
        } else {
            tracing::info!(
                running_tasks = running as u64,
                "Blocked from shutdown by {running} running tasks"
            );
        }
    }

    /// Spark's exitExecutor: only the first call acts; optionally tells the driver first.
    fn exit_executor(&mut self, ctx: &mut Context<Self>, code: i32, reason: &str, notify_driver: bool) {
        if self.stopping {
            tracing::info!("Skip exiting executor since it's been already asked to exit before.");
            return;
        }
        self.stopping = true;
        if code == 0 {
            tracing::info!(exit_code = code, "Executor self-exiting: {reason}");
        } else {
            tracing::error!(exit_code = code, "Executor self-exiting due to : {reason}");
        }
        if notify_driver {
            if let Some(driver) = self.driver() {
                let _ = driver.tell(RemoveExecutor {
                    executor_id: self.args.executor_id.clone(),
                    reason: ExecutorLossReason::process_lost(reason),
                });
            }
        }
        let me = self.me.clone();
        me.exit(
            ctx,
            ExitReason::Exit {
                code,
                message: reason.to_string(),
            },
        );
    }
}

impl Actor for CoarseGrainedExecutorBackend {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        // The first tasks' threads start while the executor registers (issue 17).
        TaskPool::prestart(self.args.cores.max(1) as usize);
        let url = self.args.driver_url.clone();
        tracing::info!(driver_url = url.as_str(), "Connecting to driver: {url}");
        let Some(driver) = self.driver() else {
            self.exit_executor(
                ctx,
                1,
                &format!("Cannot register with driver: {url} (not an actor path)"),
                false,
            );
            return;
        };
        if let Some(path) = &self.driver_path {
            let me = self.me.clone();
            me.watch(ctx, path);
        }
        let register = RegisterExecutor {
            executor_id: self.args.executor_id.clone(),
            executor_ref: self.me.path().clone(),
            hostname: self.args.hostname.clone(),
            cores: self.args.cores,
            log_urls: Default::default(),
            attributes: Default::default(),
            resource_profile_id: self.args.resource_profile_id,
        };
        let timeout = self.ask_timeout;
        let rp = self.args.resource_profile_id;
        let clock = self.me.clock().clone();
        let fut = async move {
            let mut last: Option<AskError> = None;
            let mut config = None;
            for _ in 0..CONFIG_FETCH_TRIES {
                match driver
                    .ask(
                        RetrieveSparkAppConfig {
                            resource_profile_id: rp,
                        },
                        timeout,
                    )
                    .await
                {
                    Ok(c) => {
                        config = Some(c);
                        break;
                    }
                    Err(e) => {
                        if matches!(e, AskError::Died { .. } | AskError::Lookup(_)) {
                            clock.sleep(Duration::from_millis(10)).await;
                        }
                        last = Some(e)
                    }
                }
            }
            let Some(config) = config else {
                return Err(last.map(|e| e.to_string()).unwrap_or_default());
            };
            // A DriverEndpoint restarting between incarnations loses the ask with its
            // mailbox (never handled): ask the next one.
            let mut tries = 0;
            loop {
                tries += 1;
                match driver.ask(register.clone(), timeout).await {
                    Ok(Ok(true)) => return Ok(config),
                    Ok(Ok(false)) => return Err("the driver refused the registration".to_string()),
                    Ok(Err(e)) => return Err(e),
                    Err(AskError::Died { .. } | AskError::Lookup(_)) if tries < CONFIG_FETCH_TRIES => {
                        clock.sleep(Duration::from_millis(10)).await;
                    }
                    Err(e) => return Err(e.to_string()),
                }
            }
        };
        ctx.spawn(fut.into_actor(self).map(move |res, act, ctx| match res {
            Ok(config) => {
                tracing::info!("Successfully registered with driver");
                act.spark_properties = config.spark_properties;
                ctx.notify(RegisteredExecutor);
            }
            Err(e) => {
                tracing::error!(
                    driver_url = url.as_str(),
                    "Cannot register with driver: {url}: {e}"
                );
                act.exit_executor(ctx, 1, &format!("Cannot register with driver: {url}"), false);
            }
        }));
    }
}

impl Handler<RegisteredExecutor> for CoarseGrainedExecutorBackend {
    type Result = ();

    fn handle(&mut self, _: RegisteredExecutor, ctx: &mut Context<Self>) {
        let Some(driver) = self.driver() else { return };
        let executor_id = self.args.executor_id.clone();
        let handle = ExecutorHandle {
            executor_id: executor_id.clone(),
            host: self.args.hostname.clone(),
            executor_ref: self.me.path().clone(),
            cluster: self.me.cluster().clone(),
            driver,
            store: self.store.clone(),
            stages: StageCache::default(),
            log_ctx: self.me.log_ctx().clone(),
            fetch_timeout: self.ask_timeout,
            executor_token: self.me.cancel_token().clone(),
            recent: RecentStatuses::default(),
        };
        let heartbeats = HeartbeatSettings::from_properties(&self.spark_properties);
        self.decommission = DecommissionSettings::from_properties(&self.spark_properties);
        self.executor = Some(Executor {
            executor_id: executor_id.clone(),
            cores: self.args.cores,
            spark_properties: std::mem::take(&mut self.spark_properties),
            pool: TaskPool::new(
                &format!("executor-{executor_id}-task"),
                self.args.cores.max(1) as usize,
            ),
            shared: Arc::new(TaskShare {
                handle,
                running: DashMap::new(),
                decommissioned: std::sync::atomic::AtomicBool::new(false),
            }),
        });
        tracing::info!(
            cores = self.args.cores,
            "Starting executor ID {} on host {}",
            self.args.executor_id,
            self.args.hostname
        );
        if let Some(driver) = self.driver() {
            let _ = driver.tell(LaunchedExecutor {
                executor_id: self.args.executor_id.clone(),
            });
        }
        self.start_heartbeater(heartbeats, ctx);
    }
}

impl Handler<StopExecutor> for CoarseGrainedExecutorBackend {
    type Result = ();

    fn handle(&mut self, _: StopExecutor, ctx: &mut Context<Self>) {
        // Stopping from now on, as Spark sets `stopping` before it sends itself Shutdown: the
        // driver's going away before Shutdown is handled (its process may end right after this
        // command) is then a disconnect during shutdown, not a lost driver (exit 1).
        self.stopping = true;
        tracing::info!("Driver commanded a shutdown");
        ctx.notify(Shutdown { exit_code: 0 });
    }
}

impl Handler<Shutdown> for CoarseGrainedExecutorBackend {
    type Result = ();

    fn handle(&mut self, msg: Shutdown, ctx: &mut Context<Self>) {
        self.stopping = true;
        if let Some(executor) = self.executor.take() {
            executor.stop("executor stopped");
        }
        let me = self.me.clone();
        me.exit(
            ctx,
            ExitReason::Exit {
                code: msg.exit_code,
                message: "executor stopped".into(),
            },
        );
    }
}

impl Handler<Terminated> for CoarseGrainedExecutorBackend {
    type Result = ();

    /// The driver is gone (Spark's onDisconnected for the driver's address) — unless its
    /// endpoint failed and its supervisor restarts it: then the executor waits (at most
    /// [`DRIVER_RESTART_WAIT`], and only while the driver's supervisor lives) for the new
    /// incarnation, watches it, and goes on; the new endpoint asks what it missed.
    fn handle(&mut self, msg: Terminated, ctx: &mut Context<Self>) {
        if self.driver_path.as_ref() != Some(&msg.path) {
            return;
        }
        if self.stopping {
            tracing::info!("Driver from {} disconnected during shutdown", msg.path);
            return;
        }
        let reason = format!("Driver {} disassociated! Shutting down.", msg.path);
        if !ended_by_failure(&msg.reason) {
            self.exit_executor(ctx, 1, &reason, false);
            return;
        }
        tracing::info!(
            reason = %msg.reason,
            "Driver endpoint {} failed ({}); waiting for its supervisor to restart it",
            msg.path,
            msg.reason
        );
        let (cluster, path) = (self.me.cluster().clone(), msg.path.clone());
        let wait = async move { back_at(&cluster, &path, DRIVER_RESTART_WAIT).await };
        ctx.spawn(wait.into_actor(self).map(move |back, act, ctx| {
            if act.stopping {
                return;
            }
            match (back, act.driver_path.clone()) {
                (true, Some(path)) => {
                    tracing::info!("Driver endpoint {path} is back; watching its new incarnation");
                    let me = act.me.clone();
                    me.watch(ctx, &path);
                }
                _ => act.exit_executor(ctx, 1, &reason, false),
            }
        }));
    }
}

impl Handler<LaunchTask> for CoarseGrainedExecutorBackend {
    type Result = ();

    fn handle(&mut self, msg: LaunchTask, ctx: &mut Context<Self>) {
        let Some(executor) = &self.executor else {
            self.exit_executor(ctx, 1, "Received LaunchTask command but executor was null", true);
            return;
        };
        let desc: TaskDescription = match rmp_serde::from_slice(&msg.data) {
            Ok(d) => d,
            Err(e) => {
                tracing::error!("Cannot decode a TaskDescription ({} bytes): {e}", msg.data.len());
                return;
            }
        };
        let (task_id, cpus) = (desc.task_id, desc.cpus);
        tracing::debug!(task_id, "Got assigned task {task_id}");
        if self.decommissioned {
            tracing::error!(task_id, "Launching a task while in decommissioned state.");
        }
        let token = self.me.cancel_token().child();
        executor.shared.running.insert(task_id, token.clone());
        let shared = executor.shared.clone();
        let job = Box::new(move || {
            let TaskShare {
                handle,
                running,
                decommissioned,
            } = &*shared;
            task_runner::run(desc, handle, &token);
            running.remove(&task_id);
            if decommissioned.load(std::sync::atomic::Ordering::SeqCst) {
                let backend: EndpointRef<ExecutorProtocol> = handle.cluster.endpoint(&handle.executor_ref);
                let _ = backend
                    .speaking::<DecommissionTimerProtocol>()
                    .tell(DecommissionCheck);
            }
        });
        if executor.pool.execute(job).is_err() {
            executor.shared.running.remove(&task_id);
            tracing::warn!(task_id, "Cannot run TID {task_id}: the executor is stopping");
            let _ = executor.shared.handle.driver.tell(StatusUpdate {
                executor_id: executor.executor_id.clone(),
                task_id,
                state: TaskState::Killed,
                data: rmp_serde::to_vec(&crate::scheduler::events::TaskEndReason::TaskKilled {
                    reason: "executor stopping".into(),
                })
                .unwrap_or_default(),
                task_cpus: cpus,
            });
        }
    }
}

impl Handler<KillTask> for CoarseGrainedExecutorBackend {
    type Result = ();

    fn handle(&mut self, msg: KillTask, ctx: &mut Context<Self>) {
        let Some(executor) = &self.executor else {
            self.exit_executor(ctx, 1, "Received KillTask command but executor was null", true);
            return;
        };
        match executor.shared.running.get(&msg.task_id) {
            Some(token) => {
                tracing::info!(
                    task_id = msg.task_id,
                    "Executor is trying to kill TID {}, reason: {}",
                    msg.task_id,
                    msg.reason
                );
                token.cancel(msg.reason);
            }
            None => tracing::debug!(
                task_id = msg.task_id,
                "KillTask for TID {} which is not running",
                msg.task_id
            ),
        }
    }
}

impl Handler<FetchShuffleBlocks> for CoarseGrainedExecutorBackend {
    type Result = MessageResult<FetchShuffleBlocks>;

    fn handle(
        &mut self,
        msg: FetchShuffleBlocks,
        _: &mut Context<Self>,
    ) -> MessageResult<FetchShuffleBlocks> {
        MessageResult(
            self.store
                .buckets(msg.shuffle_id, &msg.map_ids, msg.reduce_id)
                .map(|blocks| ShuffleBlocks {
                    blocks: blocks.into_iter().map(serde_bytes::ByteBuf::from).collect(),
                }),
        )
    }
}

impl Handler<ReportTaskStatuses> for CoarseGrainedExecutorBackend {
    type Result = ();

    /// A restarted DriverEndpoint asks what its predecessor may have missed.
    fn handle(&mut self, msg: ReportTaskStatuses, _: &mut Context<Self>) {
        let (Some(executor), Some(driver)) = (&self.executor, self.driver()) else {
            // Not registered yet: LaunchedExecutor is still to come.
            return;
        };
        let _ = driver.tell(LaunchedExecutor {
            executor_id: executor.executor_id.clone(),
        });
        let (mut running, mut resent, mut unknown) = (0u64, 0u64, 0u64);
        for task_id in msg.task_ids {
            // A kept final update first: a task whose thread has sent (or dropped) its final
            // update is still in `running` until that thread has cleaned up, and reporting it
            // RUNNING then would leave the driver waiting for an update that never comes.
            let update = if let Some(update) = executor.shared.handle.recent.get(task_id) {
                resent += 1;
                update
            } else if executor.shared.running.contains_key(&task_id) {
                running += 1;
                StatusUpdate {
                    executor_id: executor.executor_id.clone(),
                    task_id,
                    state: TaskState::Running,
                    data: Vec::new(),
                    task_cpus: 0,
                }
            } else {
                unknown += 1;
                StatusUpdate {
                    executor_id: executor.executor_id.clone(),
                    task_id,
                    state: TaskState::Killed,
                    data: rmp_serde::to_vec(&crate::scheduler::events::TaskEndReason::TaskKilled {
                        reason: "status lost with a restarted driver endpoint".into(),
                    })
                    .unwrap_or_default(),
                    task_cpus: executor
                        .spark_properties
                        .iter()
                        .find(|(k, _)| k == "spark.task.cpus")
                        .and_then(|(_, v)| v.parse().ok())
                        .unwrap_or(1),
                }
            };
            let _ = driver.tell(update);
        }
        tracing::info!(
            event = "reconciled",
            running,
            resent,
            unknown,
            "Reported again to the restarted driver endpoint: {running} running, {resent} final status(es) sent again, {unknown} unknown"
        );
    }
}

impl Handler<DecommissionExecutor> for CoarseGrainedExecutorBackend {
    type Result = ();

    fn handle(&mut self, _: DecommissionExecutor, ctx: &mut Context<Self>) {
        self.decommission_self(ctx);
    }
}

impl Handler<DecommissionCheck> for CoarseGrainedExecutorBackend {
    type Result = ();

    fn handle(&mut self, _: DecommissionCheck, ctx: &mut Context<Self>) {
        if self.decommissioned && self.decommission_checking {
            self.check_decommission_done(ctx);
        }
    }
}

impl Handler<ExecutorDecommissionSigReceived> for CoarseGrainedExecutorBackend {
    type Result = actix::ResponseActFuture<Self, bool>;

    /// The decommission signal: the driver is told first (so it stops offering this
    /// executor), then the executor decommissions itself. Answers whether it did. Without
    /// `spark.decommission.enabled` nothing happens (Spark installs no signal handler then).
    fn handle(&mut self, _: ExecutorDecommissionSigReceived, _: &mut Context<Self>) -> Self::Result {
        if !self.decommission.enabled {
            // Spark registers its decommission signal handler only with the feature on.
            tracing::warn!("Receive decommission request, but decommission feature is disabled.");
            return Box::pin(actix::fut::ready(false));
        }
        let Some(driver) = self.driver() else {
            return Box::pin(actix::fut::ready(self.decommissioned));
        };
        let ask = driver.ask(
            ExecutorDecommissioning {
                executor_id: self.args.executor_id.clone(),
            },
            self.ask_timeout,
        );
        Box::pin(ask.into_actor(self).map(|answer, act, ctx| match answer {
            Ok(true) => {
                act.decommission_self(ctx);
                act.decommissioned
            }
            Ok(false) => act.decommissioned,
            Err(e) => {
                tracing::error!("Fail to tell driver that we are starting decommissioning: {e}");
                act.decommissioned = false;
                false
            }
        }))
    }
}

crate::protocol! {
    /// The backend's own timer: check whether a decommissioning executor may exit.
    DecommissionTimerProtocol { DecommissionCheck }
}

crate::speaks!(CoarseGrainedExecutorBackend: ExecutorProtocol, ShuffleProtocol, DecommissionTimerProtocol);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::Cluster;

    /// Stands for a driver that never answers (its path is what the executor watches). It
    /// keeps its own address: an actix actor that nothing addresses stops at once.
    struct SilentDriver(Option<actix::Addr<SilentDriver>>);

    impl Actor for SilentDriver {
        type Context = Context<Self>;

        fn started(&mut self, ctx: &mut Context<Self>) {
            self.0 = Some(ctx.address());
        }
    }

    crate::speaks!(SilentDriver);

    fn has_record(cluster: &Cluster, actor: &str, msg_start: &str) -> bool {
        cluster.logs().records().iter().any(|r| {
            r.get("actor").and_then(|a| a.as_str()) == Some(actor)
                && r.get("msg")
                    .and_then(|m| m.as_str())
                    .is_some_and(|m| m.starts_with(msg_start))
        })
    }

    /// The driver's process ends right after it commands its executors to stop; an executor
    /// that learns of the disconnect before it has handled its own Shutdown stops cleanly
    /// (exit 0, "disconnected during shutdown"), as Spark's does, not as one that lost its
    /// driver (exit 1, "disassociated").
    #[actix_rt::test]
    async fn a_driver_gone_right_after_stop_executor_is_a_disconnect_during_shutdown() {
        // A manual clock: the executor's registration, retried on the clock, never ends.
        let cluster = Cluster::for_unit_test();
        let driver = cluster
            .start_root_worker("driver", |_, _| SilentDriver(None))
            .unwrap();
        let args = ExecutorArgs {
            driver_url: driver.to_string(),
            executor_id: "1".into(),
            bind_address: "h1".into(),
            hostname: "h1".into(),
            cores: 1,
            app_id: "app_1".into(),
            worker_url: None,
            resources_file: None,
            resource_profile_id: 0,
        };
        let executor = cluster
            .start_root_worker("executor-1", move |_, me| {
                CoarseGrainedExecutorBackend::new(me, args, Duration::from_secs(60))
            })
            .unwrap();
        let bound = std::time::Instant::now() + Duration::from_secs(10);
        // It watches the driver from its start, whose record says it connects.
        while !has_record(&cluster, "/executor-1", "Connecting to driver") {
            assert!(std::time::Instant::now() < bound, "the executor started");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        // StopExecutor, then the driver's end, both queued before the executor's next turn.
        cluster
            .endpoint::<ExecutorProtocol>(&executor)
            .tell(StopExecutor)
            .expect("the executor runs");
        let incarnation = cluster
            .registry()
            .shared(&driver)
            .expect("the driver runs")
            .incarnation;
        cluster
            .registry()
            .notify_watchers(&driver, incarnation, &ExitReason::Normal);
        // Its end: stopped, or failed (as one that lost its driver).
        while !has_record(&cluster, "/executor-1", "stopped (")
            && !has_record(&cluster, "/executor-1", "failed: ")
        {
            assert!(std::time::Instant::now() < bound, "the executor ended");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        assert!(has_record(&cluster, "/executor-1", "stopped (exit code 0"));
        assert!(has_record(
            &cluster,
            "/executor-1",
            "Driver from /driver disconnected during shutdown"
        ));
        assert!(!has_record(
            &cluster,
            "/executor-1",
            "Driver /driver disassociated"
        ));
    }
}
