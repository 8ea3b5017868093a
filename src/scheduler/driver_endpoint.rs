//! DriverEndpoint (CoarseGrainedSchedulerBackend.DriverEndpoint, Spark's
//! `CoarseGrainedScheduler`): where executors register.
//!
//! It keeps the executor map: an executor registers with zero free cores and gets its cores
//! when it reports LaunchedExecutor; a duplicate id is refused with Spark's message. It
//! watches every registered executor, which stands for Spark's RPC disconnect: when one
//! ends, the YARN rule applies (YarnDriverEndpoint.onDisconnected): the executor is
//! disabled (its loss reason pending) and the YarnSchedulerEndpoint asks the AM why it was
//! lost, then sends RemoveExecutor back here. The executor map is kept by the supervisor
//! (a restarted endpoint keeps knowing its executors).
//! Task offers (ReviveOffers, LaunchTask, StatusUpdate) come with the driver-side
//! milestone; until then LaunchedExecutor only frees the cores.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use actix::{Actor, Context, Handler, MessageResult};

use super::loss_reason::ExecutorLossReason;
use super::messages::*;
use super::yarn_scheduler_endpoint::{ExecutorDisconnected, YarnSchedulerEndpoint};
use crate::conf::SparkConf;
use crate::executor::backend::CoarseGrainedExecutorBackend;
use crate::runtime::{ActorPath, Kept, Me, Terminated};

/// What the driver knows of one executor (Spark's ExecutorData).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExecutorData {
    pub executor_ref: ActorPath,
    pub host: String,
    pub total_cores: u32,
    pub free_cores: u32,
    pub resource_profile_id: u32,
    /// Milliseconds since the epoch.
    pub registration_ts: u64,
}

/// The backend state that outlives a restart of the endpoint.
#[derive(Debug, Default)]
pub struct DriverState {
    pub executors: BTreeMap<String, ExecutorData>,
    pub total_core_count: u32,
    pub total_registered_executors: u32,
    /// The highest numeric executor id ever registered.
    pub current_executor_id_counter: u64,
    /// Executors whose loss is known but whose reason is awaited from the AM.
    pub pending_loss_reason: BTreeSet<String>,
}

/// The DriverEndpoint actor; see the module docs.
pub struct DriverEndpoint {
    me: Me,
    conf: Arc<SparkConf>,
    yarn_scheduler: ActorPath,
    state: Kept<DriverState>,
    stopping: bool,
}

impl DriverEndpoint {
    pub fn new(me: Me, conf: Arc<SparkConf>, yarn_scheduler: ActorPath, state: Kept<DriverState>) -> Self {
        DriverEndpoint {
            me,
            conf,
            yarn_scheduler,
            state,
            stopping: false,
        }
    }

    fn executor(&self, executor_ref: &ActorPath) -> crate::rpc::EndpointRef<CoarseGrainedExecutorBackend> {
        self.me.endpoint(executor_ref)
    }

    fn remove_executor(&mut self, executor_id: &str, reason: &ExecutorLossReason) {
        let removed = {
            let mut st = self.state.lock();
            st.pending_loss_reason.remove(executor_id);
            let data = st.executors.remove(executor_id);
            if let Some(d) = &data {
                st.total_core_count = st.total_core_count.saturating_sub(d.total_cores);
                st.total_registered_executors = st.total_registered_executors.saturating_sub(1);
            }
            data
        };
        match removed {
            Some(data) => {
                let _ = self.executor(&data.executor_ref).tell(StopExecutor);
                tracing::info!(
                    executor_id,
                    reason = %reason,
                    caused_by_app = reason.caused_by_app(),
                    "Removed executor {executor_id} on {}: {reason}",
                    data.host
                );
            }
            None => {
                tracing::info!(executor_id, reason = %reason, "Asked to remove non-existent executor {executor_id}")
            }
        }
    }
}

impl Actor for DriverEndpoint {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        // A restarted endpoint watches the executors it already knows again.
        let known: Vec<ActorPath> = self
            .state
            .lock()
            .executors
            .values()
            .map(|d| d.executor_ref.clone())
            .collect();
        let me = self.me.clone();
        for path in known {
            me.watch(ctx, &path);
        }
    }
}

impl Handler<RegisterExecutor> for DriverEndpoint {
    type Result = Result<bool, String>;

    fn handle(&mut self, msg: RegisterExecutor, ctx: &mut Context<Self>) -> Result<bool, String> {
        let mut st = self.state.lock();
        if st.executors.contains_key(&msg.executor_id) {
            tracing::error!(
                executor_id = msg.executor_id.as_str(),
                "Duplicate executor ID: {}",
                msg.executor_id
            );
            return Err(format!("Duplicate executor ID: {}", msg.executor_id));
        }
        st.total_core_count += msg.cores;
        st.total_registered_executors += 1;
        if let Ok(n) = msg.executor_id.parse::<u64>() {
            st.current_executor_id_counter = st.current_executor_id_counter.max(n);
        }
        st.executors.insert(
            msg.executor_id.clone(),
            ExecutorData {
                executor_ref: msg.executor_ref.clone(),
                host: msg.hostname.clone(),
                total_cores: msg.cores,
                free_cores: 0,
                resource_profile_id: msg.resource_profile_id,
                registration_ts: self.me.clock().epoch_millis(),
            },
        );
        let registered = st.total_registered_executors;
        drop(st);
        tracing::info!(
            executor_id = msg.executor_id.as_str(),
            host = msg.hostname.as_str(),
            cores = msg.cores,
            registered,
            "Registered executor {} ({}) with ID {}, ResourceProfileId {}",
            msg.executor_ref,
            msg.hostname,
            msg.executor_id,
            msg.resource_profile_id
        );
        let me = self.me.clone();
        me.watch(ctx, &msg.executor_ref);
        Ok(true)
    }
}

impl Handler<LaunchedExecutor> for DriverEndpoint {
    type Result = ();

    fn handle(&mut self, msg: LaunchedExecutor, _: &mut Context<Self>) {
        let mut st = self.state.lock();
        match st.executors.get_mut(&msg.executor_id) {
            Some(data) => {
                data.free_cores = data.total_cores;
                tracing::info!(
                    executor_id = msg.executor_id.as_str(),
                    free_cores = data.free_cores,
                    "executor {} launched; {} cores free",
                    msg.executor_id,
                    data.free_cores
                );
            }
            None => tracing::warn!(
                executor_id = msg.executor_id.as_str(),
                "LaunchedExecutor from unknown executor {}",
                msg.executor_id
            ),
        }
    }
}

impl Handler<RemoveExecutor> for DriverEndpoint {
    type Result = ();

    fn handle(&mut self, msg: RemoveExecutor, _: &mut Context<Self>) {
        self.remove_executor(&msg.executor_id, &msg.reason);
    }
}

impl Handler<Terminated> for DriverEndpoint {
    type Result = ();

    /// An executor's RPC connection dropped (it ended). YarnDriverEndpoint.onDisconnected:
    /// disable it and let the AM say why.
    fn handle(&mut self, msg: Terminated, _: &mut Context<Self>) {
        let found = {
            let mut st = self.state.lock();
            let id = st
                .executors
                .iter()
                .find(|(_, d)| d.executor_ref == msg.path)
                .map(|(id, _)| id.clone());
            if let Some(id) = &id {
                st.pending_loss_reason.insert(id.clone());
                if let Some(d) = st.executors.get_mut(id) {
                    d.free_cores = 0;
                }
            }
            id
        };
        let Some(executor_id) = found else { return };
        if self.stopping {
            return;
        }
        tracing::info!(
            executor_id = executor_id.as_str(),
            "executor {executor_id} disconnected ({}); asking for its loss reason",
            msg.reason
        );
        let _ = self
            .me
            .endpoint::<YarnSchedulerEndpoint>(&self.yarn_scheduler)
            .tell(ExecutorDisconnected { executor_id });
    }
}

impl Handler<StopExecutors> for DriverEndpoint {
    type Result = bool;

    fn handle(&mut self, _: StopExecutors, _: &mut Context<Self>) -> bool {
        self.stopping = true;
        let refs: Vec<ActorPath> = self
            .state
            .lock()
            .executors
            .values()
            .map(|d| d.executor_ref.clone())
            .collect();
        tracing::info!(executors = refs.len() as u64, "Asking each executor to shut down");
        for r in refs {
            let _ = self.executor(&r).tell(StopExecutor);
        }
        true
    }
}

impl Handler<StopDriver> for DriverEndpoint {
    type Result = bool;

    fn handle(&mut self, _: StopDriver, _: &mut Context<Self>) -> bool {
        self.stopping = true;
        true
    }
}

impl Handler<RetrieveSparkAppConfig> for DriverEndpoint {
    type Result = SparkAppConfig;

    fn handle(&mut self, _: RetrieveSparkAppConfig, _: &mut Context<Self>) -> SparkAppConfig {
        SparkAppConfig {
            spark_properties: self
                .conf
                .iter()
                .filter(|(k, _)| k.starts_with("spark."))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            log_level: None,
        }
    }
}

impl Handler<RetrieveLastAllocatedExecutorId> for DriverEndpoint {
    type Result = u64;

    fn handle(&mut self, _: RetrieveLastAllocatedExecutorId, _: &mut Context<Self>) -> u64 {
        self.state.lock().current_executor_id_counter
    }
}

impl Handler<GetExecutors> for DriverEndpoint {
    type Result = MessageResult<GetExecutors>;

    fn handle(&mut self, _: GetExecutors, _: &mut Context<Self>) -> MessageResult<GetExecutors> {
        let st = self.state.lock();
        MessageResult(
            st.executors
                .iter()
                .filter(|(id, _)| !st.pending_loss_reason.contains(*id))
                .map(|(id, d)| ExecutorSummary {
                    executor_id: id.clone(),
                    host: d.host.clone(),
                    total_cores: d.total_cores,
                    free_cores: d.free_cores,
                    executor_ref: d.executor_ref.clone(),
                })
                .collect(),
        )
    }
}
