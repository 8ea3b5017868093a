//! The driver's subtree: where its actors live and how it starts and stops.
//!
//! Layer: context (the Spark side: SparkContext, above executor).
//!
//! `<parent>/driver` is a supervisor (one_for_one) with, in start order:
//! - `listener-bus` (LiveListenerBus): SparkListener events to the listeners;
//! - `dag-scheduler` (DAGScheduler's event loop): jobs, stages, the map output tracker;
//! - `driver-endpoint` (DriverEndpoint): executors, offers, task launches, status updates;
//! - `yarn-scheduler-endpoint` (YarnSchedulerEndpoint): the AM's side of the driver;
//! - `revive-timer`: ReviveOffers every `spark.scheduler.revive.interval`;
//! - `heartbeat-receiver` (HeartbeatReceiver): executors' heartbeats; expires the silent;
//! - `speculation-timer` (with `spark.speculation=true`): checkSpeculatableTasks every
//!   `spark.speculation.interval`;
//! - `executor-allocation-manager` (with `spark.dynamicAllocation.enabled=true`): the
//!   ExecutorAllocationManager's schedule loop;
//! - `barrier-coordinator` (BarrierCoordinator): the global sync of barrier tasks;
//! - `console-progress-bar` (ConsoleProgressBar, with `spark.ui.showConsoleProgress=true`
//!   in client mode when stderr is a terminal): the stages' progress on the console.
//!
//! The bus starts with the driver's own listeners: the HeartbeatReceiver's, the
//! BarrierCoordinator's and, with dynamic allocation, the ExecutorAllocationManager's (its
//! listener and ExecutorMonitor).
//!
//! `<parent>` is the AM's supervisor in cluster mode and `/submit` in client mode. State
//! that must outlive a restart is kept by the child specs, each for the one actor that owns
//! it: the DriverEndpoint's executor map, TaskSchedulerImpl and inbox of task-scheduler
//! commands (the DAGScheduler posts there), the DAGScheduler's core, waiters and event
//! inbox (the DriverEndpoint posts there), the bus's listeners and event inbox. The
//! DriverEndpoint publishes a view of its active executors, which the DAGScheduler and the
//! ExecutorAllocationManager's listener read. All of the driver's actors run on its
//! supervisor's arbiter.

use std::sync::Arc;
use std::time::Duration;

use crate::conf::{self, SparkConf};
use crate::runtime::supervisor::TerminateChild;
use crate::runtime::SupervisorProtocol;
use crate::runtime::{
    ActorPath, ChildSpec, Cluster, DurableInbox, Kept, Publisher, Strategy, SupervisorSpec,
};
use crate::scheduler::barrier_coordinator::{
    BarrierCoordinator, BarrierCoordinatorListener, BarrierEpochs, BARRIER_COORDINATOR_SEGMENT,
};
use crate::scheduler::console_progress_bar::{
    terminal_width, ConsoleProgressBar, ProgressBarCore, ProgressBarSettings,
};
use crate::scheduler::dag_scheduler::DagSchedulerProtocol;
use crate::scheduler::dag_scheduler::{DAGScheduler, DagInbox, DagState};
use crate::scheduler::dag_scheduler::{DAGSchedulerCore, DagConfig};
use crate::scheduler::driver_endpoint::{
    ActiveExecutors, DriverEndpoint, DriverKept, DriverLinks, DriverState, TaskSchedulerProtocol,
};
use crate::scheduler::executor_allocation_manager::{
    AllocationConfig, AllocationMessage, ExecutorAllocationListener, ExecutorAllocationManager,
    ExecutorAllocationManagerCore, EXECUTOR_ALLOCATION_MANAGER_SEGMENT, SCHEDULE_INTERVAL,
};
use crate::scheduler::heartbeat_receiver::{
    HeartbeatConfig, HeartbeatListener, HeartbeatReceiver, HeartbeatState, HEARTBEAT_RECEIVER_SEGMENT,
};
use crate::scheduler::listener_bus::ListenerBusProtocol;
use crate::scheduler::listener_bus::{
    BusCounters, BusInbox, BusState, ListenerBusRef, LiveListenerBus, SparkListener, StopBus,
};
use crate::scheduler::messages::DriverProtocol;
use crate::scheduler::messages::YarnSchedulerProtocol;
use crate::scheduler::messages::{RequestExecutors, StopExecutors};
use crate::scheduler::revive_timer::ReviveTimer;
use crate::scheduler::speculation_timer::SpeculationTimer;
use crate::scheduler::task_scheduler::{RackResolver, TaskSchedulerConfig, TaskSchedulerImpl};
use crate::scheduler::task_set_manager::SpeculationConfig;
use crate::scheduler::yarn_scheduler_endpoint::YarnSchedulerEndpoint;

/// The driver supervisor's path segment.
pub const DRIVER_SEGMENT: &str = "driver";

/// The console progress bar's path segment under the driver.
pub const CONSOLE_PROGRESS_BAR_SEGMENT: &str = "console-progress-bar";

/// Whether the driver shows the ConsoleProgressBar, and with what settings: with
/// `spark.ui.showConsoleProgress=true`, in client mode (in cluster mode the driver's stderr
/// is its container's log), when stderr is a terminal. `columns` is `COLUMNS`.
pub fn progress_bar_settings(
    conf: &SparkConf,
    client_mode: bool,
    stderr_is_terminal: bool,
    columns: Option<&str>,
) -> Option<ProgressBarSettings> {
    if !conf.get(&conf::UI_SHOW_CONSOLE_PROGRESS).unwrap_or(false) {
        return None;
    }
    if !client_mode {
        tracing::info!(
            "spark.ui.showConsoleProgress=true: no console progress bar in cluster mode (the driver's stderr is its container's log)"
        );
        return None;
    }
    if !stderr_is_terminal {
        tracing::info!(
            "spark.ui.showConsoleProgress=true: no console progress bar, stderr is not a terminal"
        );
        return None;
    }
    Some(ProgressBarSettings {
        update_interval: conf
            .get(&conf::UI_CONSOLE_PROGRESS_UPDATE_INTERVAL)
            .unwrap_or(Duration::from_millis(200)),
        width: terminal_width(columns),
    })
}

/// The speculation timer's path segment under the driver.
pub const SPECULATION_TIMER_SEGMENT: &str = "speculation-timer";

/// Where a driver's actors are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DriverPaths {
    pub parent: ActorPath,
    pub driver: ActorPath,
    pub listener_bus: ActorPath,
    pub dag_scheduler: ActorPath,
    pub driver_endpoint: ActorPath,
    pub yarn_scheduler: ActorPath,
    pub revive_timer: ActorPath,
    pub heartbeat_receiver: ActorPath,
    pub speculation_timer: ActorPath,
    pub executor_allocation_manager: ActorPath,
    pub barrier_coordinator: ActorPath,
    pub console_progress_bar: ActorPath,
}

impl DriverPaths {
    /// The paths of a driver started under `parent`.
    pub fn under(parent: &ActorPath) -> DriverPaths {
        let driver =
            ActorPath::parse(&format!("{parent}/{DRIVER_SEGMENT}")).unwrap_or_else(|_| parent.clone());
        let child =
            |seg: &str| ActorPath::parse(&format!("{driver}/{seg}")).unwrap_or_else(|_| driver.clone());
        DriverPaths {
            parent: parent.clone(),
            listener_bus: child("listener-bus"),
            dag_scheduler: child("dag-scheduler"),
            driver_endpoint: child("driver-endpoint"),
            yarn_scheduler: child("yarn-scheduler-endpoint"),
            revive_timer: child("revive-timer"),
            heartbeat_receiver: child(HEARTBEAT_RECEIVER_SEGMENT),
            speculation_timer: child(SPECULATION_TIMER_SEGMENT),
            executor_allocation_manager: child(EXECUTOR_ALLOCATION_MANAGER_SEGMENT),
            barrier_coordinator: child(BARRIER_COORDINATOR_SEGMENT),
            console_progress_bar: child(CONSOLE_PROGRESS_BAR_SEGMENT),
            driver,
        }
    }
}

/// The TaskSchedulerImpl's settings from the configuration (Spark's defaults where unset).
pub fn task_scheduler_config(conf: &SparkConf) -> TaskSchedulerConfig {
    let d = TaskSchedulerConfig::default();
    let s = SpeculationConfig::default();
    let ms = |e: &conf::TimeEntry, dflt: u64| conf.get(e).map(|v| v.as_millis() as u64).unwrap_or(dflt);
    TaskSchedulerConfig {
        max_task_failures: conf.get(&conf::TASK_MAX_FAILURES).unwrap_or(d.max_task_failures),
        cpus_per_task: conf.get(&conf::CPUS_PER_TASK).unwrap_or(d.cpus_per_task),
        locality_wait_process_ms: ms(&conf::LOCALITY_WAIT_PROCESS, d.locality_wait_process_ms),
        locality_wait_node_ms: ms(&conf::LOCALITY_WAIT_NODE, d.locality_wait_node_ms),
        locality_wait_rack_ms: ms(&conf::LOCALITY_WAIT_RACK, d.locality_wait_rack_ms),
        legacy_locality_reset: conf
            .get(&conf::LEGACY_LOCALITY_WAIT_RESET)
            .unwrap_or(d.legacy_locality_reset),
        max_result_size: conf.get(&conf::MAX_RESULT_SIZE).unwrap_or(d.max_result_size),
        speculation: SpeculationConfig {
            enabled: conf.get(&conf::SPECULATION_ENABLED).unwrap_or(s.enabled),
            interval_ms: ms(&conf::SPECULATION_INTERVAL, s.interval_ms),
            multiplier: conf.get(&conf::SPECULATION_MULTIPLIER).unwrap_or(s.multiplier),
            quantile: conf.get(&conf::SPECULATION_QUANTILE).unwrap_or(s.quantile),
            min_task_runtime_ms: ms(&conf::SPECULATION_MIN_THRESHOLD, s.min_task_runtime_ms),
            duration_threshold_ms: conf
                .get(&conf::SPECULATION_TASK_DURATION_THRESHOLD)
                .ok()
                .flatten()
                .map(|d| d.as_millis() as u64),
            efficiency_enabled: conf
                .get(&conf::SPECULATION_EFFICIENCY_ENABLE)
                .unwrap_or(s.efficiency_enabled),
            process_rate_multiplier: conf
                .get(&conf::SPECULATION_EFFICIENCY_TASK_PROCESS_RATE_MULTIPLIER)
                .unwrap_or(s.process_rate_multiplier),
            long_run_task_factor: conf
                .get(&conf::SPECULATION_EFFICIENCY_TASK_DURATION_FACTOR)
                .unwrap_or(s.long_run_task_factor),
        },
        executor_cores: conf
            .get_str("spark.executor.cores")
            .and(conf.get(&conf::EXECUTOR_CORES).ok()),
        external_shuffle_service: conf.get(&conf::SHUFFLE_SERVICE_ENABLED).unwrap_or(false),
        starvation_timeout_ms: ms(&conf::STARVATION_TIMEOUT, d.starvation_timeout_ms),
        executor_decommission_kill_interval_ms: conf
            .get(&conf::EXECUTOR_DECOMMISSION_KILL_INTERVAL)
            .ok()
            .flatten()
            .map(|d| d.as_millis() as u64),
    }
}

/// The rack of each host the configuration names (`yarn.sparkyard.nodemanager.<host>`).
fn rack_resolver(conf: &SparkConf) -> RackResolver {
    let racks: std::collections::HashMap<String, String> = conf::node_managers(conf)
        .map(|nodes| nodes.into_iter().map(|n| (n.host, n.rack)).collect())
        .unwrap_or_default();
    Box::new(move |host: &str| racks.get(host).cloned())
}

/// The child spec of the driver supervisor, and the handle the SparkContext posts its own
/// listener events through. With `progress_bar`, the driver has a ConsoleProgressBar.
pub fn driver_spec(
    conf: &Arc<SparkConf>,
    paths: &DriverPaths,
    cluster: &Cluster,
    progress_bar: Option<ProgressBarSettings>,
) -> (ChildSpec, ListenerBusRef) {
    let supervision = crate::conf::supervision(conf).unwrap_or_default();
    let ask_timeout = conf
        .get(&conf::RPC_ASK_TIMEOUT)
        .unwrap_or(Duration::from_secs(120));
    let revive_interval = conf
        .get(&conf::SCHEDULER_REVIVE_INTERVAL)
        .unwrap_or(Duration::from_secs(1));
    let capacity = conf
        .get(&conf::LISTENER_BUS_EVENT_QUEUE_CAPACITY)
        .unwrap_or(10_000) as usize;
    let counters = Arc::new(BusCounters::default());
    let bus_inbox = BusInbox::bounded(capacity);
    let bus = ListenerBusRef::new(
        cluster,
        &paths.listener_bus,
        counters.clone(),
        &bus_inbox,
        capacity,
    );
    let ts_config = task_scheduler_config(conf);
    let speculation = ts_config
        .speculation
        .enabled
        .then(|| Duration::from_millis(ts_config.speculation.interval_ms.max(1)));
    let seed = cluster.clock().epoch_millis();
    let dag_inbox = DagInbox::unbounded();
    let links = DriverLinks {
        yarn_scheduler: paths.yarn_scheduler.clone(),
        dag_scheduler: paths.dag_scheduler.clone(),
        dag: dag_inbox.sender_to::<DagSchedulerProtocol>(cluster, &paths.dag_scheduler),
        bus: bus.clone(),
    };
    let driver_kept = DriverKept {
        state: Kept::new(DriverState::default()),
        task_scheduler: Kept::new(TaskSchedulerImpl::new(ts_config, rack_resolver(conf), seed)),
        commands: DurableInbox::unbounded(),
        executors: Publisher::new(ActiveExecutors::default()),
    };
    let task_scheduler_commands = driver_kept
        .commands
        .sender_to::<TaskSchedulerProtocol>(cluster, &paths.driver_endpoint);
    let active_executors = driver_kept.executors.view();
    let mut dag_config = DagConfig::from_lookup(|k| conf.get_str(k));
    if let Ok(interval) = conf.get(&conf::BARRIER_MAX_CONCURRENT_TASKS_CHECK_INTERVAL) {
        dag_config.barrier_check_interval_ms = interval.as_millis() as u64;
    }
    let dag_state = Kept::new(DagState {
        core: DAGSchedulerCore::new(dag_config),
        waiters: Default::default(),
    });
    // The driver's own listeners, there from the first event.
    let heartbeats = Kept::new(HeartbeatState::default());
    let heartbeat_config = HeartbeatConfig::from_conf(conf);
    let mut listeners: Vec<Box<dyn SparkListener>> = vec![
        Box::new(HeartbeatListener::new(
            cluster.endpoint(&paths.heartbeat_receiver),
            cluster.clock().clone(),
        )),
        Box::new(BarrierCoordinatorListener::new(
            cluster.endpoint(&paths.barrier_coordinator),
        )),
    ];
    let barrier_epochs = Kept::new(BarrierEpochs::default());
    let barrier_timeout = conf
        .get(&conf::BARRIER_SYNC_TIMEOUT)
        .unwrap_or(Duration::from_secs(365 * 24 * 3600));
    let dynamic_allocation = conf.get(&conf::DYN_ALLOCATION_ENABLED).unwrap_or(false);
    let allocation_core = dynamic_allocation.then(|| {
        Kept::new(ExecutorAllocationManagerCore::new(AllocationConfig::from_conf(
            conf,
        )))
    });
    let allocation = dynamic_allocation.then(DurableInbox::<AllocationMessage>::unbounded);
    if let Some(inbox) = &allocation {
        listeners.push(Box::new(ExecutorAllocationListener::new(
            inbox.polled_sender(),
            active_executors.clone(),
            cluster.clock().clone(),
        )));
    }
    let bus_state = Kept::new(BusState::with_listeners(listeners));
    let progress_core = progress_bar.map(|s| Kept::new(ProgressBarCore::new(s.width)));
    let am = Kept::new(None);
    let (conf, paths) = (conf.clone(), paths.clone());
    let spec = ChildSpec::supervisor(DRIVER_SEGMENT, move || {
        let (bs, bc, bi) = (bus_state.clone(), counters.clone(), bus_inbox.clone());
        let (ds, di, tsc, ae, dbus) = (
            dag_state.clone(),
            dag_inbox.clone(),
            task_scheduler_commands.clone(),
            active_executors.clone(),
            links.bus.clone(),
        );
        let (c, l, dk) = (conf.clone(), links.clone(), driver_kept.clone());
        let (de2, am, alloc) = (
            paths.driver_endpoint.clone(),
            am.clone(),
            allocation.as_ref().map(DurableInbox::polled_sender),
        );
        let de3 = paths.driver_endpoint.clone();
        let de4 = paths.driver_endpoint.clone();
        let (hb, hbc, de5) = (
            heartbeats.clone(),
            heartbeat_config.clone(),
            paths.driver_endpoint.clone(),
        );
        let mut spec = SupervisorSpec::new(Strategy::OneForOne)
            .supervision(&supervision)
            .child(ChildSpec::worker("listener-bus", move |_, me| {
                LiveListenerBus::new(me, bs.clone(), bc.clone(), bi.clone())
            }))
            .child(ChildSpec::worker("dag-scheduler", move |_, me| {
                DAGScheduler::new(me, ds.clone(), di.clone(), tsc.clone(), ae.clone(), dbus.clone())
            }))
            .child(ChildSpec::worker("driver-endpoint", move |_, me| {
                DriverEndpoint::new(me, c.clone(), l.clone(), dk.clone())
            }))
            .child(ChildSpec::worker("yarn-scheduler-endpoint", move |_, me| {
                YarnSchedulerEndpoint::new(me, de2.clone(), am.clone(), alloc.clone(), ask_timeout)
            }))
            .child(ChildSpec::worker("revive-timer", move |_, me| {
                ReviveTimer::new(me, de3.clone(), revive_interval)
            }))
            .child(ChildSpec::worker(HEARTBEAT_RECEIVER_SEGMENT, move |_, me| {
                HeartbeatReceiver::new(me, hb.clone(), de5.clone(), hbc.clone(), ask_timeout)
            }));
        if let Some(interval) = speculation {
            spec = spec.child(ChildSpec::worker(SPECULATION_TIMER_SEGMENT, move |_, me| {
                SpeculationTimer::new(me, de4.clone(), interval)
            }));
        }
        let epochs = barrier_epochs.clone();
        spec = spec.child(ChildSpec::worker(BARRIER_COORDINATOR_SEGMENT, move |_, me| {
            BarrierCoordinator::new(me, epochs.clone(), barrier_timeout)
        }));
        if let (Some(settings), Some(core)) = (progress_bar, &progress_core) {
            let (core, de7) = (core.clone(), paths.driver_endpoint.clone());
            spec = spec.child(ChildSpec::worker(CONSOLE_PROGRESS_BAR_SEGMENT, move |_, me| {
                ConsoleProgressBar::new(me, core.clone(), de7.clone(), settings)
            }));
        }
        if let (Some(core), Some(inbox)) = (&allocation_core, &allocation) {
            let (core, inbox, de6) = (core.clone(), inbox.clone(), paths.driver_endpoint.clone());
            spec = spec.child(ChildSpec::worker(
                EXECUTOR_ALLOCATION_MANAGER_SEGMENT,
                move |_, me| {
                    ExecutorAllocationManager::new(
                        me,
                        core.clone(),
                        inbox.clone(),
                        de6.clone(),
                        SCHEDULE_INTERVAL,
                        ask_timeout,
                    )
                },
            ));
        }
        spec
    })
    .restart(crate::runtime::Restart::Temporary);
    (spec, bus)
}

/// SparkContext.stop's effect on the cluster side: the allocation manager stops, the
/// executor target goes to 0 (so the
/// AM cancels its requests and replaces nobody), every executor is told to stop, the
/// listener bus delivers what it holds and stops its listeners (the event log is renamed),
/// and the driver's subtree stops. Each step is bounded by `bound`; a step whose actor is
/// already gone is skipped.
pub async fn stop_driver(cluster: &Cluster, paths: &DriverPaths, bound: Duration) {
    // The allocation manager first, so it asks for nothing more (Spark stops it first too).
    let driver = cluster.endpoint::<SupervisorProtocol>(&paths.driver);
    if cluster.registry().contains(&paths.executor_allocation_manager) {
        let _ = driver
            .ask(
                TerminateChild(EXECUTOR_ALLOCATION_MANAGER_SEGMENT.to_string()),
                bound,
            )
            .await;
    }
    let yse = cluster.endpoint::<YarnSchedulerProtocol>(&paths.yarn_scheduler);
    let _ = yse.ask(RequestExecutors::default(), bound).await;
    let de = cluster.endpoint::<DriverProtocol>(&paths.driver_endpoint);
    let _ = de.ask(StopExecutors, bound).await;
    let bus = cluster.endpoint::<ListenerBusProtocol>(&paths.listener_bus);
    let _ = bus.ask(StopBus, bound).await;
    let sup = cluster.endpoint::<SupervisorProtocol>(&paths.parent);
    let _ = sup.ask(TerminateChild(DRIVER_SEGMENT.to_string()), bound).await;
}
