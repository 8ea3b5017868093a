//! The DAGScheduler's event loop (Spark's DAGSchedulerEventProcessLoop) as an actor at
//! `<driver>/dag-scheduler`. The core (`dag::DagScheduler`) decides; this actor feeds it
//! job submissions and the TaskScheduler's callbacks (DagSchedulerEvent, sent by the
//! DriverEndpoint) and carries out its actions: task sets go to the shared
//! TaskSchedulerImpl followed by ReviveOffers to the DriverEndpoint, kills go to the
//! DriverEndpoint, listener events to the listener bus, the 200 ms resubmit timer runs
//! here, and a finished job completes its JobWaiter (a channel the application's thread
//! waits on).
//!
//! The TaskSchedulerImpl's starvation timer runs here too, since this actor submits the task
//! sets: from the first one on, every `spark.starvation.timeout` (15 s) it warns "Initial
//! job has not accepted any resources; check your cluster UI to ensure that workers are
//! registered and have sufficient resources" until a task has launched, then it stops.
//!
//! Its event queue (Spark's event loop's queue) is not the mailbox: posters push
//! DAGSchedulerEvents into a [`DagEventQueue`] kept by the driver's supervisor and wake the
//! actor with one `DrainEvents` message, which handles them in order, in batches.
//!
//! Restart: the core (jobs, stages, the map output tracker), the job waiters and the event
//! queue are kept by the supervisor, so a new incarnation loses nothing: it drains the
//! events that arrived while it was down, re-arms the resubmit timer if failed stages wait
//! for it and the starvation timer if no task has launched yet, and the running jobs go on. A SubmitJob ask that was queued in the dead mailbox
//! fails with `Died` and the SparkContext submits it again (it was never registered).

use std::collections::{HashMap, VecDeque};
use std::sync::mpsc::SyncSender;
use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, AsyncContext, Context, Handler, SpawnHandle};

use super::dag::{DagAction, DagEvent, DagScheduler};
use super::driver_endpoint::DriverState;
use super::listener_bus::ListenerBusRef;
use super::task::{KillTask, ReviveOffers, TaskResult};
use super::task_scheduler::TaskSchedulerImpl;
use super::task_set::SchedulerEvent;
use crate::rdd::{Lineage, RddId, ResultFunc, Value};
use crate::runtime::timers::{run_at_fixed_rate, run_later};
use crate::runtime::{ActorPath, Kept, Me};
use crate::scheduler::messages::DriverProtocol;

/// What a job's waiter receives: one value per requested partition, or Spark's error.
pub type JobOutcome = Result<Vec<Value>, String>;

/// A DAGSchedulerEvent handled at once (tests and tools; the scheduler's own posters use
/// the kept queue, [`DagQueueRef::post`]).
#[derive(actix::Message)]
#[rtype(result = "()")]
pub struct DagSchedulerEvent(pub DagEvent);

/// Wakes the DAGScheduler to handle what its queue holds.
#[derive(actix::Message)]
#[rtype(result = "()")]
pub struct DrainEvents;

/// How many events one `DrainEvents` handles before letting other messages in.
const DRAIN_BATCH: usize = 256;

/// The DAGScheduler's event queue, kept by the driver's supervisor so that events posted
/// while the actor restarts (or queued when it failed) are not lost.
#[derive(Default)]
pub struct DagEventQueue {
    events: VecDeque<DagEvent>,
    /// A `DrainEvents` is on its way (cleared when the queue is found empty).
    wake_sent: bool,
}

impl std::fmt::Debug for DagEventQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DagEventQueue({} queued)", self.events.len())
    }
}

/// Where DAGSchedulerEvents are posted: the kept queue, and the actor to wake.
#[derive(Clone)]
pub struct DagQueueRef {
    queue: Kept<DagEventQueue>,
    dag: crate::rpc::EndpointRef<DagSchedulerProtocol>,
}

impl DagQueueRef {
    pub fn new(queue: Kept<DagEventQueue>, dag: crate::rpc::EndpointRef<DagSchedulerProtocol>) -> Self {
        DagQueueRef { queue, dag }
    }

    /// The same queue, waking the actor as `me` (a poster's own path on the message).
    pub fn from_actor(&self, me: &Me) -> Self {
        DagQueueRef {
            queue: self.queue.clone(),
            dag: me.endpoint(self.dag.path()),
        }
    }

    /// Queues `event`; wakes the DAGScheduler unless a wake is on its way. If it is not
    /// running, its next incarnation drains the queue when it starts.
    pub fn post(&self, event: DagEvent) {
        let wake = {
            let mut q = self.queue.lock();
            q.events.push_back(event);
            !std::mem::replace(&mut q.wake_sent, true)
        };
        if wake && self.dag.tell(DrainEvents).is_err() {
            self.queue.lock().wake_sent = false;
        }
    }
}

/// submitJob: answers the job id (or the reason the job is refused, e.g. a partition that
/// does not exist); the outcome goes to `waiter` when the job ends.
#[derive(actix::Message)]
#[rtype(result = "Result<u32, String>")]
pub struct SubmitJob {
    pub lineage: Arc<Lineage>,
    pub rdd: RddId,
    pub partitions: Vec<u32>,
    pub func: ResultFunc,
    pub call_site: String,
    pub properties: Vec<(String, String)>,
    pub waiter: SyncSender<JobOutcome>,
}

/// cancelJob / cancelAllJobs (answers once the jobs have failed).
#[derive(actix::Message)]
#[rtype(result = "()")]
pub struct CancelJobs {
    /// `None`: every active job.
    pub job_id: Option<u32>,
    pub reason: Option<String>,
}

/// What the DAGScheduler keeps across restarts.
pub struct DagState {
    pub core: DagScheduler,
    pub waiters: HashMap<u32, SyncSender<JobOutcome>>,
}

impl std::fmt::Debug for DagState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DagState(active jobs {:?})", self.core.active_job_ids())
    }
}

/// A TaskScheduler event that is the backend's business, not the DAGScheduler's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BackendEvent {
    /// Send KillTask to the task's executor.
    Kill(KillTask),
    /// Offer the executors' free cores again.
    Revive,
}

/// Turns a TaskScheduler event into the DAGSchedulerEvent it stands for; KillTask and
/// ReviveOffers are the backend's and come back as `Err`. `result` is the decoded result of
/// the task whose FINISHED update produced the events, if any.
pub fn to_dag_event(
    ev: SchedulerEvent,
    result: &mut Option<(u64, TaskResult)>,
) -> Result<DagEvent, BackendEvent> {
    Ok(match ev {
        SchedulerEvent::ExecutorAdded { executor_id, host } => DagEvent::ExecutorAdded { executor_id, host },
        SchedulerEvent::ExecutorLost { executor_id, reason } => {
            DagEvent::ExecutorLost { executor_id, reason }
        }
        SchedulerEvent::TaskStarted {
            stage_id,
            stage_attempt_id,
            task_info,
        } => DagEvent::BeginEvent {
            stage_id,
            stage_attempt_id,
            task_info,
        },
        SchedulerEvent::TaskEnded {
            task_id,
            stage_id,
            stage_attempt_id,
            index,
            partition_id,
            is_shuffle_map,
            reason,
            task_info,
        } => {
            let res = match result {
                Some((tid, _)) if *tid == task_id && reason == super::events::TaskEndReason::Success => {
                    result.take().map(|(_, r)| r)
                }
                _ => None,
            };
            DagEvent::CompletionEvent {
                task_id,
                stage_id,
                stage_attempt_id,
                index,
                partition_id,
                is_shuffle_map,
                reason,
                task_info,
                result: res,
            }
        }
        SchedulerEvent::TaskSetFailed {
            stage_id,
            stage_attempt_id,
            message,
        } => DagEvent::TaskSetFailed {
            stage_id,
            stage_attempt_id,
            message,
        },
        SchedulerEvent::SpeculativeTaskSubmitted {
            stage_id,
            stage_attempt_id,
            index,
        } => DagEvent::SpeculativeTaskSubmitted {
            stage_id,
            stage_attempt_id,
            index,
        },
        SchedulerEvent::KillTask {
            task_id,
            executor_id,
            interrupt_thread,
            reason,
        } => {
            return Err(BackendEvent::Kill(KillTask {
                task_id,
                executor_id,
                interrupt_thread,
                reason,
            }))
        }
        SchedulerEvent::ReviveOffers => return Err(BackendEvent::Revive),
    })
}

/// The DAGScheduler actor; see the module docs.
pub struct DAGScheduler {
    me: Me,
    state: Kept<DagState>,
    queue: Kept<DagEventQueue>,
    task_scheduler: Kept<TaskSchedulerImpl>,
    /// The DriverEndpoint's executors (read for the cluster's task slots).
    executors: Kept<DriverState>,
    driver_endpoint: ActorPath,
    bus: ListenerBusRef,
    resubmit_armed: bool,
    /// The starvation timer, while it runs.
    starvation_timer: Option<SpawnHandle>,
}

/// TaskSchedulerImpl's starvation warning.
const STARVATION_WARNING: &str = "Initial job has not accepted any resources; check your cluster UI to ensure that workers are registered and have sufficient resources";

impl DAGScheduler {
    pub fn new(
        me: Me,
        state: Kept<DagState>,
        queue: Kept<DagEventQueue>,
        task_scheduler: Kept<TaskSchedulerImpl>,
        executors: Kept<DriverState>,
        driver_endpoint: ActorPath,
        bus: ListenerBusRef,
    ) -> Self {
        DAGScheduler {
            me,
            state,
            queue,
            task_scheduler,
            executors,
            driver_endpoint,
            bus,
            resubmit_armed: false,
            starvation_timer: None,
        }
    }

    /// The starvation timer (TaskSchedulerImpl.submitTasks on the first task set): warns
    /// every `spark.starvation.timeout` while no task has launched, then stops itself.
    fn arm_starvation_timer(&mut self, ctx: &mut Context<Self>) {
        if self.starvation_timer.is_some() {
            return;
        }
        let (period, pending) = {
            let ts = self.task_scheduler.lock();
            (
                Duration::from_millis(ts.config().starvation_timeout_ms.max(1)),
                ts.num_pending_tasks(),
            )
        };
        tracing::debug!(
            timeout_ms = period.as_millis() as u64,
            pending_tasks = pending as u64,
            "Starvation timer started"
        );
        let clock = self.me.clock().clone();
        let handle = run_at_fixed_rate(ctx, &clock, period, period, |act: &mut Self, ctx| {
            let (starving, pending) = {
                let ts = act.task_scheduler.lock();
                (ts.is_starving(), ts.num_pending_tasks())
            };
            if starving {
                tracing::warn!(
                    event = "starvation",
                    pending_tasks = pending as u64,
                    "{STARVATION_WARNING}"
                );
            } else if let Some(handle) = act.starvation_timer.take() {
                ctx.cancel_future(handle);
            }
        });
        self.starvation_timer = Some(handle);
    }

    /// Handles up to a batch of queued events; asks for another round if more remain.
    fn drain(&mut self, ctx: &mut Context<Self>) {
        for _ in 0..DRAIN_BATCH {
            let next = {
                let mut q = self.queue.lock();
                let e = q.events.pop_front();
                if e.is_none() {
                    q.wake_sent = false;
                }
                e
            };
            match next {
                Some(event) => self.handle_event(event, ctx),
                None => return,
            }
        }
        ctx.notify(DrainEvents);
    }

    fn arm_resubmit(&mut self, delay: Duration, ctx: &mut Context<Self>) {
        if self.resubmit_armed {
            return;
        }
        self.resubmit_armed = true;
        let clock = self.me.clock().clone();
        run_later(ctx, &clock, delay, |act: &mut Self, ctx| {
            act.resubmit_armed = false;
            act.handle_event(DagEvent::ResubmitFailedStages, ctx);
        });
    }

    /// Submits a job again after a failed barrier slot check.
    fn arm_barrier_job_resubmit(&mut self, job_id: u32, delay: Duration, ctx: &mut Context<Self>) {
        let clock = self.me.clock().clone();
        run_later(ctx, &clock, delay, move |act: &mut Self, ctx| {
            act.handle_event(DagEvent::ResubmitBarrierJob { job_id }, ctx);
        });
    }

    fn now(&self) -> u64 {
        self.me.clock().epoch_millis()
    }

    fn driver(&self) -> crate::rpc::EndpointRef<DriverProtocol> {
        self.me.endpoint(&self.driver_endpoint)
    }

    /// Feeds one event to the core and carries out everything it asks. A job submission
    /// first tells the core the cluster's task slots (for barrier stages).
    fn handle_event(&mut self, event: DagEvent, ctx: &mut Context<Self>) {
        let now = self.now();
        let slots = matches!(
            event,
            DagEvent::JobSubmitted { .. } | DagEvent::ResubmitBarrierJob { .. }
        )
        .then(|| {
            let cpus_per_task = self.task_scheduler.lock().config().cpus_per_task;
            self.executors.lock().max_num_concurrent_tasks(cpus_per_task)
        });
        // A fetch failure from a decommissioning executor (Spark asks the TaskScheduler).
        let fetch_source_decommissioned = match &event {
            DagEvent::CompletionEvent {
                reason:
                    super::events::TaskEndReason::FetchFailed {
                        executor_id: Some(exec),
                        ..
                    },
                ..
            } => self
                .task_scheduler
                .lock()
                .executor_decommission_state(exec)
                .is_some(),
            _ => false,
        };
        let actions = {
            let mut st = self.state.lock();
            if let Some(slots) = slots {
                st.core.set_max_concurrent_tasks(slots);
            }
            st.core
                .set_fetch_source_decommissioned(fetch_source_decommissioned);
            st.core.handle(event, now);
            st.core.take_actions()
        };
        self.perform(actions, ctx);
    }

    fn perform(&mut self, actions: Vec<DagAction>, ctx: &mut Context<Self>) {
        for action in actions {
            match action {
                DagAction::SubmitTasks(task_set) => {
                    let now = self.now();
                    let (first, events) = {
                        let mut ts = self.task_scheduler.lock();
                        let first = !ts.has_received_task();
                        ts.submit_tasks(task_set, now);
                        (first, ts.take_events())
                    };
                    if first {
                        self.arm_starvation_timer(ctx);
                    }
                    self.route(events, ctx);
                }
                DagAction::KillAllTaskAttempts { stage_id, reason } => {
                    let events = {
                        let mut ts = self.task_scheduler.lock();
                        ts.kill_all_task_attempts(stage_id, &reason);
                        ts.take_events()
                    };
                    self.route(events, ctx);
                }
                DagAction::CancelTasks { stage_id, reason } => {
                    let events = {
                        let mut ts = self.task_scheduler.lock();
                        ts.cancel_tasks(stage_id, &reason);
                        ts.take_events()
                    };
                    self.route(events, ctx);
                }
                DagAction::Post(event) => self.bus.post(event),
                DagAction::ScheduleResubmit { delay_ms } => {
                    self.arm_resubmit(Duration::from_millis(delay_ms), ctx);
                }
                DagAction::ScheduleBarrierJobResubmit { job_id, delay_ms } => {
                    self.arm_barrier_job_resubmit(job_id, Duration::from_millis(delay_ms), ctx);
                }
                DagAction::JobEnded { job_id, result } => {
                    let waiter = self.state.lock().waiters.remove(&job_id);
                    match waiter {
                        Some(w) => {
                            let _ = w.try_send(result);
                        }
                        None => tracing::warn!(job_id, "Job {job_id} ended but nobody waits for it"),
                    }
                }
            }
        }
    }

    /// What the TaskScheduler said while the DAGScheduler called it.
    fn route(&mut self, events: Vec<SchedulerEvent>, ctx: &mut Context<Self>) {
        let mut revive = false;
        let mut none = None;
        for ev in events {
            match to_dag_event(ev, &mut none) {
                Ok(dag_event) => {
                    // Behind what is already queued, as Spark's event loop posts it.
                    self.queue.lock().events.push_back(dag_event);
                    self.wake(ctx);
                }
                Err(BackendEvent::Revive) => revive = true,
                Err(BackendEvent::Kill(kill)) => {
                    let _ = self.driver().tell(kill);
                }
            }
        }
        if revive {
            let _ = self.driver().tell(ReviveOffers);
        }
    }
}

impl DAGScheduler {
    /// Makes sure a `DrainEvents` will come.
    fn wake(&mut self, ctx: &mut Context<Self>) {
        let mut q = self.queue.lock();
        if !q.wake_sent {
            q.wake_sent = true;
            ctx.notify(DrainEvents);
        }
    }
}

impl Actor for DAGScheduler {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        // A wake sent to the previous incarnation died with its mailbox.
        self.queue.lock().wake_sent = false;
        if self.me.incarnation() <= 1 {
            return;
        }
        if self.task_scheduler.lock().is_starving() {
            // The starvation timer died with the previous incarnation.
            self.arm_starvation_timer(ctx);
        }
        let (active, failed) = {
            let st = self.state.lock();
            (st.core.active_job_ids(), st.core.failed_stage_ids())
        };
        let queued = self.queue.lock().events.len();
        tracing::info!(
            event = "reconciled",
            jobs = ?active,
            queued_events = queued as u64,
            failed_stages = ?failed,
            "DAGScheduler restarted with {} active job(s) and {queued} queued event(s); resuming",
            active.len()
        );
        if !failed.is_empty() {
            // The resubmit timer died with the previous incarnation.
            self.arm_resubmit(Duration::from_millis(super::dag::RESUBMIT_TIMEOUT_MS), ctx);
        }
        // So did the timers of jobs waiting for a barrier slot check.
        let (waiting, interval) = {
            let st = self.state.lock();
            (
                st.core.pending_barrier_job_resubmits(),
                st.core.config().barrier_check_interval_ms,
            )
        };
        for job_id in waiting {
            self.arm_barrier_job_resubmit(job_id, Duration::from_millis(interval), ctx);
        }
        self.wake(ctx);
    }
}

impl Handler<DrainEvents> for DAGScheduler {
    type Result = ();

    fn handle(&mut self, _: DrainEvents, ctx: &mut Context<Self>) {
        self.drain(ctx);
    }
}

impl Handler<DagSchedulerEvent> for DAGScheduler {
    type Result = ();

    fn handle(&mut self, msg: DagSchedulerEvent, ctx: &mut Context<Self>) {
        self.handle_event(msg.0, ctx);
    }
}

impl Handler<SubmitJob> for DAGScheduler {
    type Result = Result<u32, String>;

    fn handle(&mut self, msg: SubmitJob, ctx: &mut Context<Self>) -> Result<u32, String> {
        DagScheduler::check_partitions(&msg.lineage, msg.rdd, &msg.partitions)?;
        let job_id = {
            let mut st = self.state.lock();
            let id = st.core.next_job_id();
            st.waiters.insert(id, msg.waiter);
            id
        };
        self.handle_event(
            DagEvent::JobSubmitted {
                job_id,
                lineage: msg.lineage,
                rdd: msg.rdd,
                partitions: msg.partitions,
                func: msg.func,
                call_site: msg.call_site,
                properties: msg.properties,
            },
            ctx,
        );
        Ok(job_id)
    }
}

impl Handler<CancelJobs> for DAGScheduler {
    type Result = ();

    fn handle(&mut self, msg: CancelJobs, ctx: &mut Context<Self>) {
        let event = match msg.job_id {
            Some(job_id) => DagEvent::JobCancelled {
                job_id,
                reason: msg.reason,
            },
            None => DagEvent::AllJobsCancelled { reason: msg.reason },
        };
        self.handle_event(event, ctx);
    }
}

crate::protocol! {
    /// What the DAGScheduler's event loop receives (DAGSchedulerEventProcessLoop): jobs,
    /// cancellations, scheduler events, and a drain for a clean stop.
    pub DagSchedulerProtocol { SubmitJob, CancelJobs, DagSchedulerEvent, DrainEvents }
}

crate::speaks!(DAGScheduler: DagSchedulerProtocol);
