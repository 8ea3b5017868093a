//! The DAGScheduler's event loop (Spark's DAGSchedulerEventProcessLoop) as an actor at
//! `<driver>/dag-scheduler`. Layer: scheduler. The core ([`DAGSchedulerCore`]) decides; this
//! actor feeds it job submissions and the TaskScheduler's events and carries out its
//! actions: task sets,
//! kills and cancels go to the TaskScheduler's owner, the DriverEndpoint, as
//! [`TaskSchedulerCommand`]s (the DriverEndpoint revives offers after a submission), listener
//! events go to the listener bus, the 200 ms resubmit timer runs here, and a finished job
//! completes its JobWaiter (a channel the application's thread waits on).
//!
//! Its event queue (Spark's event loop's queue) is not the mailbox but a [`DurableInbox`]
//! kept by the driver's supervisor: the DriverEndpoint posts the TaskScheduler's events
//! there (a task's completion carries its result), and the actor handles them in order, in
//! batches. The cluster's task slots (Spark's `sc.maxNumConcurrentTasks`, read when a job is
//! submitted, for barrier stages) come from the view the DriverEndpoint publishes.
//!
//! Restart: the core (jobs, stages, the map output tracker), the job waiters and the event
//! queue are kept by the supervisor, so a new incarnation loses nothing: it drains the
//! events that arrived while it was down, re-arms the resubmit timer if failed stages wait
//! for it, and the running jobs go on. A SubmitJob ask that was queued in the dead mailbox
//! fails with `Died` and the SparkContext submits it again (it was never registered).

use std::collections::HashMap;
use std::sync::mpsc::SyncSender;
use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, AsyncContext, Context, Handler};

use super::{DAGSchedulerCore, DagAction, DagEvent};
use crate::rdd::{Lineage, RddId, ResultFunc, Value};
use crate::runtime::timers::run_later;
use crate::runtime::{DurableInbox, InboxSender, Kept, Me, View, WakeInbox};
use crate::scheduler::driver_endpoint::ActiveExecutors;
use crate::scheduler::listener_bus::ListenerBusRef;
use crate::scheduler::task_scheduler::TaskSchedulerCommand;

/// What a job's waiter receives: one value per requested partition, or Spark's error.
pub type JobOutcome = Result<Vec<Value>, String>;

/// A DAGSchedulerEvent handled at once (tests and tools; the scheduler's own posters use
/// the inbox, [`DagEventSender`]).
#[derive(actix::Message)]
#[rtype(result = "()")]
pub struct DagSchedulerEvent(pub DagEvent);

/// How many events one wake handles before letting other messages in.
const DRAIN_BATCH: usize = 256;

/// The DAGScheduler's event queue, kept by the driver's supervisor so that events posted
/// while the actor restarts (or queued when it failed) are not lost.
pub type DagInbox = DurableInbox<DagEvent>;

/// Where DAGSchedulerEvents are posted (the TaskScheduler's owner holds one).
pub type DagEventSender = InboxSender<DagEvent>;

/// What the TaskScheduler is asked (the DriverEndpoint's inbox for it).
pub type TaskSchedulerSender = InboxSender<TaskSchedulerCommand>;

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
    pub core: DAGSchedulerCore,
    pub waiters: HashMap<u32, SyncSender<JobOutcome>>,
}

impl std::fmt::Debug for DagState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DagState(active jobs {:?})", self.core.active_job_ids())
    }
}

/// The DAGScheduler actor; see the module docs.
pub struct DAGScheduler {
    me: Me,
    state: Kept<DagState>,
    inbox: DagInbox,
    task_scheduler: TaskSchedulerSender,
    /// The DriverEndpoint's active executors and task slots.
    executors: View<ActiveExecutors>,
    bus: ListenerBusRef,
    resubmit_armed: bool,
}

impl DAGScheduler {
    pub fn new(
        me: Me,
        state: Kept<DagState>,
        inbox: DagInbox,
        task_scheduler: TaskSchedulerSender,
        executors: View<ActiveExecutors>,
        bus: ListenerBusRef,
    ) -> Self {
        DAGScheduler {
            me,
            state,
            inbox,
            task_scheduler,
            executors,
            bus,
            resubmit_armed: false,
        }
    }

    /// Handles up to a batch of queued events; asks for another round if more remain.
    fn drain(&mut self, ctx: &mut Context<Self>) {
        let inbox = self.inbox.clone();
        if inbox.drain(DRAIN_BATCH, |event| self.handle_event(event, ctx)) {
            ctx.notify(WakeInbox::new());
        }
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

    /// Feeds one event to the core and carries out everything it asks. A job submission
    /// first tells the core the cluster's task slots (for barrier stages).
    fn handle_event(&mut self, event: DagEvent, ctx: &mut Context<Self>) {
        let now = self.now();
        let slots = matches!(
            event,
            DagEvent::JobSubmitted { .. } | DagEvent::ResubmitBarrierJob { .. }
        )
        .then(|| self.executors.get().task_slots);
        let actions = {
            let mut st = self.state.lock();
            if let Some(slots) = slots {
                st.core.set_max_concurrent_tasks(slots);
            }
            st.core.handle(event, now);
            st.core.take_actions()
        };
        self.perform(actions, ctx);
    }

    fn perform(&mut self, actions: Vec<DagAction>, ctx: &mut Context<Self>) {
        for action in actions {
            match action {
                DagAction::SubmitTasks(task_set) => {
                    self.tell_task_scheduler(TaskSchedulerCommand::SubmitTasks(task_set))
                }
                DagAction::KillAllTaskAttempts { stage_id, reason } => {
                    self.tell_task_scheduler(TaskSchedulerCommand::KillAllTaskAttempts { stage_id, reason })
                }
                DagAction::CancelTasks { stage_id, reason } => {
                    self.tell_task_scheduler(TaskSchedulerCommand::CancelTasks { stage_id, reason })
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

    /// Posts to the TaskScheduler's owner; its inbox outlives the owner's restarts, so
    /// nothing asked is lost.
    fn tell_task_scheduler(&self, command: TaskSchedulerCommand) {
        // Unbounded: a post is never refused.
        let _ = self.task_scheduler.send(command);
    }
}

impl Actor for DAGScheduler {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        // A wake sent to the previous incarnation died with its mailbox.
        let queued = self.inbox.restarted();
        ctx.notify(WakeInbox::new());
        if self.me.incarnation() <= 1 {
            return;
        }
        let (active, failed) = {
            let st = self.state.lock();
            (st.core.active_job_ids(), st.core.failed_stage_ids())
        };
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
            self.arm_resubmit(Duration::from_millis(super::RESUBMIT_TIMEOUT_MS), ctx);
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
    }
}

impl Handler<WakeInbox<DagEvent>> for DAGScheduler {
    type Result = ();

    fn handle(&mut self, _: WakeInbox<DagEvent>, ctx: &mut Context<Self>) {
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
        DAGSchedulerCore::check_partitions(&msg.lineage, msg.rdd, &msg.partitions)?;
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

/// The wake of the DAGScheduler's durable inbox.
pub type DagWake = WakeInbox<DagEvent>;

crate::protocol! {
    /// What the DAGScheduler's event loop receives (DAGSchedulerEventProcessLoop): jobs,
    /// cancellations, and the wake of its durable inbox (the events themselves).
    pub DagSchedulerProtocol { SubmitJob, CancelJobs, DagWake }
}

crate::speaks!(DAGScheduler: DagSchedulerProtocol);
