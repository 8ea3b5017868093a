//! BarrierCoordinator (Spark's `barrierSync` endpoint), at `<driver>/barrier-coordinator`:
//! the global sync of a barrier stage's tasks.
//!
//! Layer: scheduler (the Spark side: the driver's schedulers, above rdd).
//!
//! A barrier task's `BarrierTaskContext.barrier()` or `allGather(message)` asks
//! [`RequestToSync`] with the stage attempt, its partition, its barrier epoch (how many
//! syncs it has passed) and its message, and waits. The coordinator keeps, per stage
//! attempt ([`ContextBarrierId`]), the requests of the current epoch: once every task of the
//! attempt asked, each gets every task's message in partition order and the epoch moves on.
//! The first request of an epoch starts a timer of `spark.barrier.sync.timeout` (365 days):
//! if not every task asked by then, every waiting task gets Spark's failure ("The
//! coordinator didn't get all barrier sync requests for barrier epoch N from Stage S (Stage
//! Attempt A) within T second(s).") and the attempt's state is dropped, so the tasks fail and
//! the stage attempt fails with them. A request of a stale epoch ("... has already finished.
//! Maybe task T is not properly killed."), or mixing `barrier()` with `allGather()` in one
//! epoch, fails too, with Spark's messages. When a stage attempt completes (the listener
//! bus's StageCompleted, through [`BarrierCoordinatorListener`]) its state is dropped.
//!
//! Restart: the epoch of every stage attempt is kept by the driver's supervisor
//! ([`BarrierEpochs`]); the requests waiting die with the incarnation (their asks fail, or
//! are answered `ask_again`), and the tasks ask the new incarnation again, so a sync in
//! progress completes. A completed stage attempt's waiting requests are answered
//! `ask_again` too: Spark leaves them waiting, and its tasks are being killed anyway.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use actix::{Actor, Context, Handler, ResponseFuture};
use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;

use super::events::SparkListenerEvent;
use super::listener_bus::SparkListener;
use crate::rdd::BarrierMethod;
use crate::rpc::EndpointRef;
use crate::runtime::timers::run_later;
use crate::runtime::{Kept, Me};

/// The coordinator's path segment under the driver.
pub const BARRIER_COORDINATOR_SEGMENT: &str = "barrier-coordinator";

/// A barrier stage attempt (Spark's ContextBarrierId).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ContextBarrierId {
    pub stage_id: u32,
    pub stage_attempt_id: u32,
}

impl fmt::Display for ContextBarrierId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Stage {} (Stage Attempt {})",
            self.stage_id, self.stage_attempt_id
        )
    }
}

/// Why a sync failed: the exception the task throws, by class name and message. With
/// `ask_again` the request went unanswered (the coordinator's incarnation ended, or the
/// stage attempt's state was dropped) and the task asks again.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BarrierSyncError {
    pub class_name: String,
    pub message: String,
    #[serde(default)]
    pub ask_again: bool,
}

impl BarrierSyncError {
    fn spark(message: String) -> Self {
        BarrierSyncError {
            class_name: "org.apache.spark.SparkException".into(),
            message,
            ask_again: false,
        }
    }
}

/// A barrier task's global sync (executor → driver): answered with every task's message
/// by partition once all `num_tasks` asked in the same epoch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "Result<Vec<String>, BarrierSyncError>")]
pub struct RequestToSync {
    pub num_tasks: u32,
    pub stage_id: u32,
    pub stage_attempt_id: u32,
    pub task_attempt_id: u64,
    pub barrier_epoch: u32,
    pub partition_id: u32,
    pub message: String,
    pub request_method: BarrierMethod,
}

/// A stage attempt completed: its sync state goes (waiting tasks are not answered: they
/// are killed with their stage attempt).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "()")]
pub struct CleanupBarrierStage {
    pub barrier_id: ContextBarrierId,
}

/// What survives a restart of the coordinator: each live stage attempt's task count and
/// barrier epoch.
#[derive(Debug, Default)]
pub struct BarrierEpochs {
    epochs: BTreeMap<ContextBarrierId, (u32, u32)>,
}

type Reply = oneshot::Sender<Result<Vec<String>, BarrierSyncError>>;

/// The requests of the current epoch of one stage attempt (Spark's ContextBarrierState).
struct Pending {
    method: BarrierMethod,
    requesters: Vec<(u64, Reply)>,
    messages: Vec<String>,
    /// Which timer is current (a completed or failed epoch makes older ones void).
    timer: u64,
}

/// The BarrierCoordinator actor; see the module docs.
pub struct BarrierCoordinator {
    me: Me,
    kept: Kept<BarrierEpochs>,
    timeout: Duration,
    pending: BTreeMap<ContextBarrierId, Pending>,
    next_timer: u64,
}

impl BarrierCoordinator {
    pub fn new(me: Me, kept: Kept<BarrierEpochs>, timeout: Duration) -> Self {
        BarrierCoordinator {
            me,
            kept,
            timeout,
            pending: BTreeMap::new(),
            next_timer: 0,
        }
    }

    /// cleanupBarrierStage: the attempt's waiting requests fail with `failure` (or are
    /// dropped without an answer) and its epoch is forgotten.
    fn cleanup(&mut self, id: ContextBarrierId, failure: Option<&str>) {
        if let Some(p) = self.pending.remove(&id) {
            if let Some(message) = failure {
                for (_, reply) in p.requesters {
                    let _ = reply.send(Err(BarrierSyncError::spark(message.to_string())));
                }
            }
        }
        self.kept.lock().epochs.remove(&id);
    }

    fn on_timeout(&mut self, id: ContextBarrierId, timer: u64) {
        let epoch = self.kept.lock().epochs.get(&id).map_or(0, |(_, e)| *e);
        let due = self
            .pending
            .get(&id)
            .is_some_and(|p| p.timer == timer && !p.requesters.is_empty());
        if !due {
            return;
        }
        let message = format!(
            "The coordinator didn't get all barrier sync requests for barrier epoch {epoch} from {id} within {} second(s).",
            self.timeout.as_secs()
        );
        tracing::warn!(
            event = "barrier_sync_timeout",
            stage_id = id.stage_id,
            stage_attempt = id.stage_attempt_id,
            barrier_epoch = epoch,
            "{message}"
        );
        self.cleanup(id, Some(&message));
    }

    fn handle_request(&mut self, msg: RequestToSync, reply: Reply, ctx: &mut Context<Self>) {
        let id = ContextBarrierId {
            stage_id: msg.stage_id,
            stage_attempt_id: msg.stage_attempt_id,
        };
        let task = msg.task_attempt_id;
        let (num_tasks, epoch) = *self.kept.lock().epochs.entry(id).or_insert((msg.num_tasks, 0));
        let pending = self.pending.entry(id).or_insert_with(|| Pending {
            method: msg.request_method,
            requesters: Vec::new(),
            messages: vec![String::new(); num_tasks as usize],
            timer: 0,
        });
        if pending.requesters.is_empty() {
            pending.method = msg.request_method;
        }
        if pending.method != msg.request_method {
            let message = format!(
                "{id} tried to use requestMethod `{}` during barrier epoch {epoch}, which does not match the current synchronized requestMethod `{}`",
                msg.request_method, pending.method
            );
            tracing::warn!(
                stage_id = id.stage_id,
                stage_attempt = id.stage_attempt_id,
                "{message}"
            );
            self.cleanup(id, Some(&message));
            // The attempt's state is gone (Spark's epoch -1): this request fails too.
            let _ = reply.send(Err(BarrierSyncError::spark(format!(
                "The request to sync of {id} with barrier epoch -1 has already finished. Maybe task {task} is not properly killed."
            ))));
            return;
        }
        if msg.num_tasks != num_tasks {
            let _ = reply.send(Err(BarrierSyncError {
                class_name: "java.lang.IllegalArgumentException".into(),
                message: format!(
                    "requirement failed: Number of tasks of {id} is {} from Task {task}, previously it was {num_tasks}.",
                    msg.num_tasks
                ),
                ask_again: false,
            }));
            return;
        }
        tracing::info!(
            stage_id = id.stage_id,
            stage_attempt = id.stage_attempt_id,
            "Current barrier epoch for {id} is {epoch}."
        );
        if msg.barrier_epoch != epoch {
            let _ = reply.send(Err(BarrierSyncError::spark(format!(
                "The request to sync of {id} with barrier epoch {epoch} has already finished. Maybe task {task} is not properly killed."
            ))));
            return;
        }
        if pending.requesters.is_empty() {
            self.next_timer += 1;
            pending.timer = self.next_timer;
            let (timer, clock) = (self.next_timer, self.me.clock().clone());
            run_later(ctx, &clock, self.timeout, move |act: &mut Self, _| {
                act.on_timeout(id, timer)
            });
        }
        if let Some(slot) = pending.messages.get_mut(msg.partition_id as usize) {
            *slot = msg.message;
        }
        pending.requesters.push((task, reply));
        let got = pending.requesters.len();
        tracing::info!(
            stage_id = id.stage_id,
            stage_attempt = id.stage_attempt_id,
            task_id = task,
            barrier_epoch = epoch,
            "Barrier sync epoch {epoch} from {id} received update from Task {task}, current progress: {got}/{num_tasks}."
        );
        if got < num_tasks as usize {
            return;
        }
        let messages = pending.messages.clone();
        for (_, reply) in std::mem::take(&mut pending.requesters) {
            let _ = reply.send(Ok(messages.clone()));
        }
        pending.method = BarrierMethod::Barrier;
        // The epoch's timer is void from now on.
        self.next_timer += 1;
        pending.timer = self.next_timer;
        if let Some((_, e)) = self.kept.lock().epochs.get_mut(&id) {
            *e += 1;
        }
        tracing::info!(
            event = "barrier_sync",
            stage_id = id.stage_id,
            stage_attempt = id.stage_attempt_id,
            barrier_epoch = epoch,
            tasks = num_tasks,
            "Barrier sync epoch {epoch} from {id} received all updates from tasks, finished successfully."
        );
    }
}

impl Actor for BarrierCoordinator {
    type Context = Context<Self>;

    fn started(&mut self, _: &mut Context<Self>) {
        let live = self.kept.lock().epochs.len();
        if self.me.incarnation() > 1 {
            tracing::info!(
                event = "reconciled",
                stage_attempts = live as u64,
                "BarrierCoordinator restarted with the epochs of {live} barrier stage attempt(s); waiting tasks ask again"
            );
        }
    }
}

impl Handler<RequestToSync> for BarrierCoordinator {
    type Result = ResponseFuture<Result<Vec<String>, BarrierSyncError>>;

    fn handle(&mut self, msg: RequestToSync, ctx: &mut Context<Self>) -> Self::Result {
        let (tx, rx) = oneshot::channel();
        let id = ContextBarrierId {
            stage_id: msg.stage_id,
            stage_attempt_id: msg.stage_attempt_id,
        };
        self.handle_request(msg, tx, ctx);
        Box::pin(async move {
            rx.await.unwrap_or_else(|_| {
                Err(BarrierSyncError {
                    ask_again: true,
                    ..BarrierSyncError::spark(format!("The barrier sync of {id} went unanswered"))
                })
            })
        })
    }
}

impl Handler<CleanupBarrierStage> for BarrierCoordinator {
    type Result = ();

    fn handle(&mut self, msg: CleanupBarrierStage, _: &mut Context<Self>) {
        self.cleanup(msg.barrier_id, None);
    }
}

/// Spark's coordinator listener on the bus: a completed stage attempt's sync state goes.
pub struct BarrierCoordinatorListener {
    coordinator: EndpointRef<BarrierCoordinatorProtocol>,
}

impl BarrierCoordinatorListener {
    pub fn new(coordinator: EndpointRef<BarrierCoordinatorProtocol>) -> Self {
        BarrierCoordinatorListener { coordinator }
    }
}

impl SparkListener for BarrierCoordinatorListener {
    fn name(&self) -> &str {
        "BarrierCoordinatorListener"
    }

    fn on_event(&mut self, event: &SparkListenerEvent) {
        if let SparkListenerEvent::StageCompleted { stage_info } = event {
            let _ = self.coordinator.tell(CleanupBarrierStage {
                barrier_id: ContextBarrierId {
                    stage_id: stage_info.stage_id,
                    stage_attempt_id: stage_info.attempt_id,
                },
            });
        }
    }
}

crate::protocol! {
    /// What barrier tasks ask the BarrierCoordinator (Spark's BarrierCoordinatorMessage),
    /// and the DAGScheduler's cleanup of a finished stage.
    pub BarrierCoordinatorProtocol { RequestToSync, CleanupBarrierStage }
}

crate::speaks!(BarrierCoordinator: BarrierCoordinatorProtocol);
