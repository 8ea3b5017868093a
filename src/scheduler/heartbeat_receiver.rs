//! HeartbeatReceiver (Spark's `HeartbeatReceiver` endpoint), at `<driver>/heartbeat-receiver`:
//! the driver's view of which executors are alive.
//!
//! Layer: scheduler (the Spark side: the driver's schedulers, above rdd).
//!
//! Executors send `Heartbeat` every `spark.executor.heartbeatInterval` (10 s); each one
//! from a known executor records when it was last seen. The receiver learns executors from
//! the listener bus: its [`HeartbeatListener`] sends it [`ExecutorRegistered`] on
//! ExecutorAdded (the clock starts at the event) and [`ExecutorRemoved`] on ExecutorRemoved
//! (it forgets), as Spark's HeartbeatReceiver, itself the listener, posts both to its own
//! endpoint. The last-seen times belong to the receiver alone; the listener only sends. Every `spark.network.timeoutInterval` (60 s),
//! the first after the executor time-out, `expireDeadHosts` looks for executors silent for
//! strictly longer than the executor time-out (`spark.storage.blockManagerHeartbeatTimeoutMs`
//! if set, else `spark.network.timeout`, 120 s). Each is logged as an `executor_expired`
//! record, then killed through the cluster manager without lowering the target, so YARN
//! gives a replacement (Spark's killAndReplaceExecutor: killExecutors with
//! countFailures = true and force = true), then removed with
//! `ExecutorProcessLost("Executor heartbeat timed out after N ms")`, which fails its running
//! tasks so they run elsewhere.
//!
//! The last-seen times are kept by the driver's supervisor, so a restarted receiver goes on
//! from them; an expiry that was in flight when it died is made again by the next check.
//! What the listener sent while no incarnation was there to receive it is lost, so a
//! restarted receiver reconciles with the DriverEndpoint (GetExecutors): an executor the
//! driver has and it does not know starts its clock then; one it knows and the driver no
//! longer has (removed, or its loss being decided) is forgotten; an executor a message
//! registered or removed while the question was out is left as the message put it.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use actix::{Actor, AsyncContext, Context, Handler, Message, MessageResponse, WrapFuture};
use serde::{Deserialize, Serialize};

use super::events::SparkListenerEvent;
use super::listener_bus::SparkListener;
use super::loss_reason::ExecutorLossReason;
use super::messages::{ClientKillExecutors, GetExecutors, RemoveExecutor};
use crate::conf::{self, SparkConf};
use crate::rpc::EndpointRef;
use crate::runtime::protocol::Carries;
use crate::runtime::timers::run_at_fixed_rate;
use crate::runtime::{ActorPath, Clock, Kept, Me};
use crate::scheduler::messages::DriverProtocol;

/// The receiver's path segment under the driver (executors find it next to the
/// DriverEndpoint their `--driver-url` names).
pub const HEARTBEAT_RECEIVER_SEGMENT: &str = "heartbeat-receiver";

/// An executor is alive (executor → HeartbeatReceiver, an ask). Spark's also carries the
/// running tasks' accumulator updates and the executor's metrics; sparkyard sends the
/// running task ids.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Message)]
#[rtype(result = "HeartbeatResponse")]
pub struct Heartbeat {
    pub executor_id: String,
    pub host: String,
    pub running_tasks: Vec<u64>,
}

/// The answer to [`Heartbeat`]: whether the executor should register its block manager
/// again (the driver does not know it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, MessageResponse)]
pub struct HeartbeatResponse {
    pub reregister_block_manager: bool,
}

/// An executor was added (listener → receiver, Spark's `ExecutorRegistered`): its clock
/// starts at `time`, the event's.
#[derive(Clone, Debug, PartialEq, Eq, Message)]
#[rtype(result = "()")]
pub struct ExecutorRegistered {
    pub executor_id: String,
    pub time: u64,
}

/// An executor was removed (listener → receiver, Spark's `ExecutorRemoved`): forgotten.
#[derive(Clone, Debug, PartialEq, Eq, Message)]
#[rtype(result = "()")]
pub struct ExecutorRemoved {
    pub executor_id: String,
}

/// The application ended (listener → receiver): a heartbeat from an unknown executor no
/// longer asks it to register again (Spark's `!sc.isStopped`).
#[derive(Clone, Debug, PartialEq, Eq, Message)]
#[rtype(result = "()")]
pub struct ApplicationEnded;

/// The DriverEndpoint's executors, as a restarted receiver asked for them.
#[derive(Debug, Message)]
#[rtype(result = "()")]
struct Reconcile {
    executors: Vec<String>,
}

/// The receiver's times (milliseconds).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeartbeatConfig {
    pub executor_timeout_ms: u64,
    pub check_interval_ms: u64,
}

impl HeartbeatConfig {
    pub fn from_conf(conf: &SparkConf) -> Self {
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        let network = conf
            .get(&conf::NETWORK_TIMEOUT)
            .unwrap_or(Duration::from_secs(120));
        let timeout = conf
            .get(&conf::STORAGE_BLOCKMANAGER_HEARTBEAT_TIMEOUT)
            .ok()
            .flatten()
            .unwrap_or(network);
        HeartbeatConfig {
            executor_timeout_ms: ms(timeout),
            check_interval_ms: ms(conf
                .get(&conf::NETWORK_TIMEOUT_INTERVAL)
                .unwrap_or(Duration::from_secs(60)))
            .max(1),
        }
    }
}

/// What the receiver knows of one executor.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Seen {
    last_seen: u64,
    /// Its expiry is being carried out (kill, then removal).
    expiring: bool,
}

/// The last-seen times (Spark's `executorLastSeen`), kept across restarts.
#[derive(Clone, Debug, Default)]
pub struct HeartbeatState {
    executors: BTreeMap<String, Seen>,
    stopped: bool,
}

/// An executor found silent for too long.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expired {
    pub executor_id: String,
    pub silent_ms: u64,
}

impl HeartbeatState {
    /// ExecutorRegistered: the clock starts now.
    pub fn executor_registered(&mut self, executor_id: &str, now: u64) {
        self.executors.insert(
            executor_id.to_string(),
            Seen {
                last_seen: now,
                expiring: false,
            },
        );
    }

    /// ExecutorRemoved: forgotten.
    pub fn executor_removed(&mut self, executor_id: &str) {
        self.executors.remove(executor_id);
    }

    /// A heartbeat: answers whether the executor is known (and records it if so).
    pub fn heartbeat(&mut self, executor_id: &str, now: u64) -> bool {
        match self.executors.get_mut(executor_id) {
            Some(s) => {
                s.last_seen = s.last_seen.max(now);
                true
            }
            None => false,
        }
    }

    pub fn last_seen(&self, executor_id: &str) -> Option<u64> {
        self.executors.get(executor_id).map(|s| s.last_seen)
    }

    /// expireDeadHosts' test: executors silent for strictly longer than `timeout_ms` and not
    /// already being expired; they are marked as being expired.
    pub fn expire(&mut self, now: u64, timeout_ms: u64) -> Vec<Expired> {
        let mut out = Vec::new();
        for (id, s) in self.executors.iter_mut() {
            let silent = now.saturating_sub(s.last_seen);
            if !s.expiring && silent > timeout_ms {
                s.expiring = true;
                out.push(Expired {
                    executor_id: id.clone(),
                    silent_ms: silent,
                });
            }
        }
        out
    }

    /// The expiry was carried out: the executor is forgotten.
    pub fn expired(&mut self, executor_id: &str) {
        self.executors.remove(executor_id);
    }

    /// A restarted receiver learns the driver's executors (`driver`): those it does not know
    /// start their clock at `now`; those it knows and the driver does not have are forgotten.
    /// The executors in `touched` (registered or removed by a message since the question was
    /// asked) are left as those messages put them, for they may be newer than the answer.
    /// Answers how many were added and forgotten.
    pub fn reconcile(&mut self, driver: &[String], touched: &BTreeSet<String>, now: u64) -> (usize, usize) {
        let before = self.executors.len();
        self.executors
            .retain(|id, _| touched.contains(id) || driver.iter().any(|d| d == id));
        let forgotten = before - self.executors.len();
        let mut added = 0;
        for id in driver {
            if !touched.contains(id) && !self.executors.contains_key(id) {
                self.executor_registered(id, now);
                added += 1;
            }
        }
        (added, forgotten)
    }

    /// A new incarnation: expiries that were in flight are made again.
    fn restarted(&mut self) {
        for s in self.executors.values_mut() {
            s.expiring = false;
        }
    }
}

/// The HeartbeatReceiver actor; see the module docs.
pub struct HeartbeatReceiver {
    me: Me,
    state: Kept<HeartbeatState>,
    driver_endpoint: ActorPath,
    config: HeartbeatConfig,
    ask_timeout: Duration,
    /// A restarted incarnation's reconciliation is under way: the executors a message
    /// registered or removed since it began (left as the messages put them).
    reconciling: Option<BTreeSet<String>>,
}

impl HeartbeatReceiver {
    pub fn new(
        me: Me,
        state: Kept<HeartbeatState>,
        driver_endpoint: ActorPath,
        config: HeartbeatConfig,
        ask_timeout: Duration,
    ) -> Self {
        HeartbeatReceiver {
            me,
            state,
            driver_endpoint,
            config,
            ask_timeout,
            reconciling: None,
        }
    }

    /// A restarted receiver asks the DriverEndpoint for its executors (what the listener
    /// sent while no incarnation was there is lost).
    fn reconcile(&mut self, ctx: &mut Context<Self>) {
        self.reconciling = Some(BTreeSet::new());
        let driver = self.me.endpoint::<DriverProtocol>(&self.driver_endpoint);
        let me: EndpointRef<ReconcileProtocol> = self.me.endpoint(self.me.path());
        let ask_timeout = self.ask_timeout;
        let job = async move {
            match driver.ask(GetExecutors, ask_timeout).await {
                Ok(executors) => {
                    let executors = executors.into_iter().map(|e| e.executor_id).collect();
                    let _ = me.tell(Reconcile { executors });
                }
                Err(e) => tracing::warn!(
                    "Cannot ask the driver for its executors ({e}); going on with the last-seen times kept"
                ),
            }
        };
        ctx.spawn(job.into_actor(self));
    }

    fn expire_dead_hosts(&mut self, ctx: &mut Context<Self>) {
        let now = self.me.clock().epoch_millis();
        let timeout = self.config.executor_timeout_ms;
        let expired = self.state.lock().expire(now, timeout);
        for e in expired {
            let id = e.executor_id;
            tracing::warn!(
                event = "executor_expired",
                executor_id = id.as_str(),
                silent_ms = e.silent_ms,
                timeout_ms = timeout,
                "Removing executor {id} with no recent heartbeats: {} ms exceeds timeout {timeout} ms",
                e.silent_ms
            );
            // killAndReplaceExecutor first (while the driver still knows the executor, so its
            // container is released and a replacement asked for), then the removal.
            let driver = self.me.endpoint::<DriverProtocol>(&self.driver_endpoint);
            let (state, ask_timeout) = (self.state.clone(), self.ask_timeout);
            let job = async move {
                let kill = ClientKillExecutors {
                    executor_ids: vec![id.clone()],
                    adjust_target_num_executors: false,
                    count_failures: true,
                    force: true,
                };
                match driver.ask(kill, ask_timeout).await {
                    Ok(killed) if killed.contains(&id) => {}
                    Ok(_) => tracing::warn!(
                        executor_id = id.as_str(),
                        "The cluster manager did not kill executor {id}; removing it anyway"
                    ),
                    Err(e) => tracing::warn!(
                        executor_id = id.as_str(),
                        "Cannot ask the driver to kill executor {id} ({e}); removing it anyway"
                    ),
                }
                let reason = ExecutorLossReason::process_lost(format!(
                    "Executor heartbeat timed out after {} ms",
                    e.silent_ms
                ));
                if let Err(err) = driver.tell(RemoveExecutor {
                    executor_id: id.clone(),
                    reason,
                }) {
                    tracing::warn!(executor_id = id.as_str(), "Cannot remove executor {id}: {err}");
                }
                state.lock().expired(&id);
            };
            ctx.spawn(job.into_actor(self));
        }
    }
}

impl Actor for HeartbeatReceiver {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        self.state.lock().restarted();
        if self.me.incarnation() > 1 {
            self.reconcile(ctx);
        }
        let (timeout, interval) = (self.config.executor_timeout_ms, self.config.check_interval_ms);
        tracing::info!(
            timeout_ms = timeout,
            interval_ms = interval,
            "Expiring executors silent for more than {timeout} ms, checking every {interval} ms"
        );
        let clock = self.me.clock().clone();
        run_at_fixed_rate(
            ctx,
            &clock,
            Duration::from_millis(timeout),
            Duration::from_millis(interval),
            |act: &mut Self, ctx| act.expire_dead_hosts(ctx),
        );
    }
}

impl Handler<Heartbeat> for HeartbeatReceiver {
    type Result = HeartbeatResponse;

    fn handle(&mut self, msg: Heartbeat, _: &mut Context<Self>) -> HeartbeatResponse {
        let now = self.me.clock().epoch_millis();
        let mut st = self.state.lock();
        let reregister = !st.stopped;
        if st.heartbeat(&msg.executor_id, now) {
            tracing::trace!(
                executor_id = msg.executor_id.as_str(),
                running_tasks = msg.running_tasks.len() as u64,
                "Heartbeat from executor {}",
                msg.executor_id
            );
            HeartbeatResponse {
                reregister_block_manager: false,
            }
        } else {
            tracing::debug!(
                executor_id = msg.executor_id.as_str(),
                "Received heartbeat from unknown executor {}",
                msg.executor_id
            );
            HeartbeatResponse {
                reregister_block_manager: reregister,
            }
        }
    }
}

impl Handler<ExecutorRegistered> for HeartbeatReceiver {
    type Result = ();

    fn handle(&mut self, msg: ExecutorRegistered, _: &mut Context<Self>) {
        if let Some(touched) = &mut self.reconciling {
            touched.insert(msg.executor_id.clone());
        }
        self.state.lock().executor_registered(&msg.executor_id, msg.time);
    }
}

impl Handler<ExecutorRemoved> for HeartbeatReceiver {
    type Result = ();

    fn handle(&mut self, msg: ExecutorRemoved, _: &mut Context<Self>) {
        if let Some(touched) = &mut self.reconciling {
            touched.insert(msg.executor_id.clone());
        }
        self.state.lock().executor_removed(&msg.executor_id);
    }
}

impl Handler<ApplicationEnded> for HeartbeatReceiver {
    type Result = ();

    fn handle(&mut self, _: ApplicationEnded, _: &mut Context<Self>) {
        self.state.lock().stopped = true;
    }
}

impl Handler<Reconcile> for HeartbeatReceiver {
    type Result = ();

    fn handle(&mut self, msg: Reconcile, _: &mut Context<Self>) {
        let touched = self.reconciling.take().unwrap_or_default();
        let now = self.me.clock().epoch_millis();
        let (added, forgotten) = self.state.lock().reconcile(&msg.executors, &touched, now);
        tracing::info!(
            executors = msg.executors.len() as u64,
            added = added as u64,
            forgotten = forgotten as u64,
            "Reconciled with the driver's {} executor(s): {added} added, {forgotten} forgotten",
            msg.executors.len()
        );
    }
}

/// The receiver's listener on the bus: sends the receiver the executors added and removed,
/// and the application's end; it keeps nothing of its own.
pub struct HeartbeatListener {
    receiver: EndpointRef<HeartbeatListenerProtocol>,
    clock: Clock,
}

impl HeartbeatListener {
    pub fn new(receiver: EndpointRef<HeartbeatListenerProtocol>, clock: Clock) -> Self {
        HeartbeatListener { receiver, clock }
    }

    fn send<M>(&self, msg: M)
    where
        M: Message<Result = ()> + Send + 'static,
        HeartbeatListenerProtocol: Carries<M>,
    {
        if let Err(e) = self.receiver.tell(msg) {
            // A restarting receiver reconciles with the DriverEndpoint when it starts.
            tracing::debug!("The HeartbeatReceiver is not there ({e}); it reconciles when it starts");
        }
    }
}

impl SparkListener for HeartbeatListener {
    fn name(&self) -> &str {
        "HeartbeatReceiver"
    }

    fn on_event(&mut self, event: &SparkListenerEvent) {
        match event {
            SparkListenerEvent::ExecutorAdded { executor_id, .. } => self.send(ExecutorRegistered {
                executor_id: executor_id.clone(),
                time: self.clock.epoch_millis(),
            }),
            SparkListenerEvent::ExecutorRemoved { executor_id, .. } => self.send(ExecutorRemoved {
                executor_id: executor_id.clone(),
            }),
            SparkListenerEvent::ApplicationEnd { .. } => self.send(ApplicationEnded),
            _ => {}
        }
    }

    fn only_executor_events(&self) -> bool {
        true
    }
}

crate::protocol! {
    /// The heartbeat conversation: executors report their running tasks' metrics and learn
    /// whether the driver still knows them (Spark's HeartbeatReceiver).
    remote pub HeartbeatProtocol { Heartbeat }
}

crate::protocol! {
    /// What the driver's listener on the bus tells the HeartbeatReceiver (Spark's
    /// HeartbeatReceiver is itself that listener and posts these to its own endpoint).
    pub HeartbeatListenerProtocol { ExecutorRegistered, ExecutorRemoved, ApplicationEnded }
}

crate::protocol! {
    /// The receiver's own answer from the DriverEndpoint, after a restart.
    ReconcileProtocol { Reconcile }
}

crate::speaks!(HeartbeatReceiver: HeartbeatProtocol, HeartbeatListenerProtocol, ReconcileProtocol);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_executor_expires_only_when_silent_strictly_longer_than_the_timeout() {
        let mut st = HeartbeatState::default();
        st.executor_registered("1", 1_000);
        st.executor_registered("2", 1_000);
        assert!(st.heartbeat("2", 50_000));
        // Silent exactly 120,000 ms: not yet.
        assert!(st.expire(121_000, 120_000).is_empty());
        assert_eq!(
            st.expire(121_001, 120_000),
            vec![Expired {
                executor_id: "1".into(),
                silent_ms: 120_001
            }]
        );
        // Being expired: not reported twice.
        assert!(st.expire(170_000, 120_000).is_empty());
        st.expired("1");
        assert_eq!(st.last_seen("1"), None);
        assert_eq!(
            st.expire(170_001, 120_000).len(),
            1,
            "executor 2, last seen at 50,000"
        );
    }

    #[test]
    fn unknown_executors_are_not_recorded_and_restarts_retry_expiries() {
        let mut st = HeartbeatState::default();
        assert!(!st.heartbeat("9", 10));
        assert_eq!(st.last_seen("9"), None);
        st.executor_registered("1", 0);
        assert_eq!(st.expire(11, 10).len(), 1);
        st.restarted();
        assert_eq!(st.expire(12, 10).len(), 1, "the expiry in flight is made again");
        st.executor_removed("1");
        assert!(st.expire(100, 10).is_empty());
    }

    #[test]
    fn the_timeout_is_the_block_manager_timeout_else_the_network_timeout() {
        let mut c = SparkConf::new();
        assert_eq!(
            HeartbeatConfig::from_conf(&c),
            HeartbeatConfig {
                executor_timeout_ms: 120_000,
                check_interval_ms: 60_000
            }
        );
        c.set("spark.network.timeout", "30s")
            .set("spark.network.timeoutInterval", "5s");
        assert_eq!(HeartbeatConfig::from_conf(&c).executor_timeout_ms, 30_000);
        assert_eq!(HeartbeatConfig::from_conf(&c).check_interval_ms, 5_000);
        c.set("spark.storage.blockManagerHeartbeatTimeoutMs", "45s");
        assert_eq!(HeartbeatConfig::from_conf(&c).executor_timeout_ms, 45_000);
    }

    #[test]
    fn a_restarted_receiver_takes_the_drivers_executors_but_leaves_what_messages_changed() {
        let mut st = HeartbeatState::default();
        st.executor_registered("1", 0);
        st.executor_registered("2", 0);
        st.executor_registered("5", 40);
        let driver: Vec<String> = ["1", "3", "4"].map(String::from).to_vec();
        // 5 was registered and 4 removed by messages while the question was out.
        st.executor_removed("4");
        let touched: BTreeSet<String> = ["4", "5"].map(String::from).into();
        assert_eq!(st.reconcile(&driver, &touched, 50), (1, 1));
        assert_eq!(st.last_seen("1"), Some(0), "known: its time stays");
        assert_eq!(st.last_seen("2"), None, "gone from the driver: forgotten");
        assert_eq!(st.last_seen("3"), Some(50), "unknown: its clock starts now");
        assert_eq!(st.last_seen("4"), None, "removed by a newer message");
        assert_eq!(st.last_seen("5"), Some(40), "registered by a newer message");
    }

    fn executor_added(id: &str) -> SparkListenerEvent {
        SparkListenerEvent::ExecutorAdded {
            time: 0,
            executor_id: id.into(),
            host: "host1".into(),
            total_cores: 1,
            resource_profile_id: 0,
        }
    }

    /// The listener keeps nothing: what the receiver knows comes from its messages.
    #[actix_rt::test]
    async fn the_listener_tells_the_receiver_which_keeps_the_times_alone() {
        let cluster = crate::runtime::Cluster::builder().build().unwrap();
        let state = Kept::new(HeartbeatState::default());
        let kept = state.clone();
        let config = HeartbeatConfig {
            executor_timeout_ms: 120_000,
            check_interval_ms: 60_000,
        };
        let driver = ActorPath::parse("/driver/driver-endpoint").unwrap();
        let path = cluster
            .start_root_worker("heartbeat-receiver", move |_, me| {
                HeartbeatReceiver::new(me, kept, driver, config, Duration::from_secs(5))
            })
            .unwrap();
        let listened: EndpointRef<HeartbeatListenerProtocol> = cluster.endpoint(&path);
        let receiver: EndpointRef<HeartbeatProtocol> = listened.speaking();
        let beat = |id: &str| Heartbeat {
            executor_id: id.into(),
            host: "host1".into(),
            running_tasks: vec![],
        };
        let bound = Duration::from_secs(5);
        let unknown = receiver
            .ask_while_restarting(beat("1"), bound, 100, Duration::from_millis(10))
            .await
            .unwrap();
        assert!(
            unknown.reregister_block_manager,
            "unknown before the listener says"
        );
        let mut listener = HeartbeatListener::new(cluster.endpoint(&path), cluster.clock().clone());
        listener.on_event(&executor_added("1"));
        let known = receiver.ask(beat("1"), bound).await.unwrap();
        assert!(!known.reregister_block_manager);
        assert!(state.lock().last_seen("1").is_some());
        listener.on_event(&SparkListenerEvent::ExecutorRemoved {
            time: 0,
            executor_id: "1".into(),
            reason: "gone".into(),
        });
        assert!(
            receiver
                .ask(beat("1"), bound)
                .await
                .unwrap()
                .reregister_block_manager
        );
        listener.on_event(&SparkListenerEvent::ApplicationEnd {
            time: 0,
            exit_code: None,
        });
        assert!(
            !receiver
                .ask(beat("1"), bound)
                .await
                .unwrap()
                .reregister_block_manager,
            "the application ended: no new registration"
        );
    }
}
