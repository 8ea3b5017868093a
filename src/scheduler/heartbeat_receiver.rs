//! HeartbeatReceiver (Spark's `HeartbeatReceiver` endpoint), at `<driver>/heartbeat-receiver`:
//! the driver's view of which executors are alive.
//!
//! Executors send `Heartbeat` every `spark.executor.heartbeatInterval` (10 s); each one
//! from a known executor records when it was last seen. The receiver learns executors from
//! the listener bus (its [`HeartbeatListener`]: ExecutorAdded starts the clock,
//! ExecutorRemoved forgets), as Spark's does. Every `spark.network.timeoutInterval` (60 s),
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

use std::collections::BTreeMap;
use std::time::Duration;

use actix::{Actor, AsyncContext, Context, Handler, Message, MessageResponse, WrapFuture};
use serde::{Deserialize, Serialize};

use super::events::SparkListenerEvent;
use super::listener_bus::SparkListener;
use super::loss_reason::ExecutorLossReason;
use super::messages::{ClientKillExecutors, RemoveExecutor};
use crate::conf::{self, SparkConf};
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
        }
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

/// The receiver's listener on the bus: executors added and removed, the application's end.
pub struct HeartbeatListener {
    state: Kept<HeartbeatState>,
    clock: Clock,
}

impl HeartbeatListener {
    pub fn new(state: Kept<HeartbeatState>, clock: Clock) -> Self {
        HeartbeatListener { state, clock }
    }
}

impl SparkListener for HeartbeatListener {
    fn name(&self) -> &str {
        "HeartbeatReceiver"
    }

    fn on_event(&mut self, event: &SparkListenerEvent) {
        match event {
            SparkListenerEvent::ExecutorAdded { executor_id, .. } => {
                let now = self.clock.epoch_millis();
                self.state.lock().executor_registered(executor_id, now);
            }
            SparkListenerEvent::ExecutorRemoved { executor_id, .. } => {
                self.state.lock().executor_removed(executor_id);
            }
            SparkListenerEvent::ApplicationEnd { .. } => self.state.lock().stopped = true,
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

crate::speaks!(HeartbeatReceiver: HeartbeatProtocol);

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
}
