//! The ExecutorAllocationManager actor at `<driver>/executor-allocation-manager`, and its
//! listener on the bus (ExecutorAllocationListener + ExecutorMonitor).
//!
//! Layer: scheduler (the Spark side: the driver's schedulers, above rdd).
//!
//! The rules live in [`super::core::ExecutorAllocationManagerCore`], kept by the driver's
//! supervisor (`Kept`) for this actor alone, so its counts survive a restart. What others
//! tell it comes through its durable inbox ([`DurableInbox`] of [`AllocationMessage`], polled), kept beside
//! the core so nothing posted while the actor restarts is lost: the listener
//! ([`ExecutorAllocationListener`], on the bus's actor) posts every stage, task, executor
//! and speculative-task event with its time, and the YarnSchedulerEndpoint posts the reset
//! when a new AM registers. The actor applies what waits, in order, before each round of
//! `schedule()` and before each step of a round that reads the core (Spark's listener
//! updates the manager's synchronized state at once; here the updates land before the next
//! decision that could see them). For a task start the listener reads whether the backend
//! has the executor active (Spark's ExecutorAllocationClient.isExecutorActive, a
//! synchronized read of CoarseGrainedSchedulerBackend) from the view of active executors
//! the DriverEndpoint publishes, and posts the answer with the event.
//!
//! The actor is the schedule loop: on start it sends the initial request (Spark's start();
//! before the AM has registered it is answered `false`, which is harmless), then every
//! 100 ms (fixed delay, the first at once) it runs `schedule()` and carries out the round:
//! a new target goes to the DriverEndpoint as requestTotalExecutors (→ YarnSchedulerEndpoint
//! → AMEndpoint → the allocator, which changes its target and asks for or cancels
//! containers), and idle executors go as killExecutors (→ AMEndpoint → the allocator
//! releases their containers) or, with `spark.decommission.enabled`, as
//! decommissionExecutors ("spark scale down": they finish their tasks and exit), followed
//! by the current target again (SPARK-21834). Answers
//! come back to the core (acknowledged or rolled back; killed or selectable again). While a
//! request is in flight the core issues no other target change. The timer is registered in
//! `started()`, so a restarted actor ticks again and re-sends the current target.

use std::collections::BTreeMap;
use std::time::Duration;

use actix::{Actor, AsyncContext, Context, WrapFuture};

use super::core::{AllocationMessage, ExecutorAllocationManagerCore, Round, TargetRequest};
use crate::rpc::EndpointRef;
use crate::runtime::timers::run_with_fixed_delay;
use crate::runtime::{ActorPath, Clock, DurableInbox, InboxSender, Kept, Me, View};
use crate::scheduler::driver_endpoint::ActiveExecutors;
use crate::scheduler::events::SparkListenerEvent;
use crate::scheduler::listener_bus::SparkListener;
use crate::scheduler::messages::DriverProtocol;
use crate::scheduler::messages::{
    ClientDecommissionExecutors, ClientKillExecutors, ClientRequestTotalExecutors, ExecutorDecommissionInfo,
};

/// The actor's path segment under the driver.
pub const EXECUTOR_ALLOCATION_MANAGER_SEGMENT: &str = "executor-allocation-manager";

/// Spark's fixed schedule interval (`intervalMillis`, 100 ms).
pub const SCHEDULE_INTERVAL: Duration = Duration::from_millis(100);

/// The ExecutorAllocationManager actor; see the module docs.
pub struct ExecutorAllocationManager {
    me: Me,
    core: Kept<ExecutorAllocationManagerCore>,
    inbox: DurableInbox<AllocationMessage>,
    driver_endpoint: ActorPath,
    interval: Duration,
    ask_timeout: Duration,
}

/// requestTotalExecutors for the default profile, with the placement hints.
fn total_request(req: &TargetRequest) -> ClientRequestTotalExecutors {
    ClientRequestTotalExecutors {
        resource_profile_to_total_execs: BTreeMap::from([(0, req.total)]),
        num_locality_aware_tasks_per_resource_profile_id: BTreeMap::from([(0, req.locality_aware_tasks)]),
        host_to_local_task_count: BTreeMap::from([(0, req.host_to_local_task_count.clone())]),
    }
}

/// The core with everything its inbox holds applied, in order.
fn updated<'a>(
    core: &'a Kept<ExecutorAllocationManagerCore>,
    inbox: &DurableInbox<AllocationMessage>,
) -> std::sync::MutexGuard<'a, ExecutorAllocationManagerCore> {
    let mut c = core.lock();
    for msg in inbox.take_all() {
        c.apply(msg);
    }
    c
}

impl ExecutorAllocationManager {
    pub fn new(
        me: Me,
        core: Kept<ExecutorAllocationManagerCore>,
        inbox: DurableInbox<AllocationMessage>,
        driver_endpoint: ActorPath,
        interval: Duration,
        ask_timeout: Duration,
    ) -> Self {
        ExecutorAllocationManager {
            me,
            core,
            inbox,
            driver_endpoint,
            interval,
            ask_timeout,
        }
    }

    fn driver(&self) -> EndpointRef<DriverProtocol> {
        self.me.endpoint(&self.driver_endpoint)
    }

    /// Carries out a round, one request after the other as Spark's synchronous calls do:
    /// the new target (requestTotalExecutors), then the idle executors chosen once it is
    /// answered (killExecutors, without replacing them and without counting failures),
    /// then the current target again (SPARK-21834: a kill may have lowered the backend's
    /// totals). The core waits for the round to end before it starts another.
    fn carry_out(&self, round: Round, ctx: &mut Context<Self>) {
        let (driver, core, timeout) = (self.driver(), self.core.clone(), self.ask_timeout);
        let inbox = self.inbox.clone();
        let job = async move {
            if let Some(req) = &round.request {
                let acknowledged = matches!(driver.ask(total_request(req), timeout).await, Ok(true));
                updated(&core, &inbox).request_answered(req, acknowledged);
            }
            if !round.expired.is_empty() {
                let (chosen, decommission) = {
                    let mut c = updated(&core, &inbox);
                    (c.select_removals(&round.expired), c.config().decommission_enabled)
                };
                if !chosen.is_empty() {
                    let killed = if decommission {
                        let decommission = ClientDecommissionExecutors {
                            executors: chosen
                                .iter()
                                .map(|id| (id.clone(), ExecutorDecommissionInfo::new("spark scale down")))
                                .collect(),
                            adjust_target_num_executors: false,
                            triggered_by_executor: false,
                        };
                        driver.ask(decommission, timeout).await.unwrap_or_default()
                    } else {
                        let kill = ClientKillExecutors {
                            executor_ids: chosen.clone(),
                            adjust_target_num_executors: false,
                            count_failures: false,
                            force: false,
                        };
                        driver.ask(kill, timeout).await.unwrap_or_default()
                    };
                    let resync = {
                        let mut c = updated(&core, &inbox);
                        c.kill_answered(&chosen, &killed);
                        c.current_request("re-sync after a kill")
                    };
                    if !matches!(driver.ask(total_request(&resync), timeout).await, Ok(true)) {
                        tracing::warn!(
                            target = resync.total,
                            "Unable to reach the cluster manager to re-sync the target of {} executors",
                            resync.total
                        );
                    }
                }
            }
            updated(&core, &inbox).round_done();
        };
        ctx.spawn(job.into_actor(self));
    }

    /// One round of schedule().
    fn schedule(&mut self, ctx: &mut Context<Self>) {
        let now = self.me.clock().epoch_millis();
        let round = updated(&self.core, &self.inbox).schedule(now);
        if !round.is_empty() {
            self.carry_out(round, ctx);
        }
    }
}

impl Actor for ExecutorAllocationManager {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let req = {
            let mut core = updated(&self.core, &self.inbox);
            // A round in flight died with the previous incarnation.
            core.round_done();
            if self.me.incarnation() > 1 {
                core.current_request("re-sync after a restart")
            } else {
                core.initial_request()
            }
        };
        tracing::info!(
            target = req.total,
            interval_ms = self.interval.as_millis() as u64,
            "Dynamic allocation: requesting a total of {} executor(s) ({}); scheduling every {}",
            req.total,
            req.reason,
            humantime::format_duration(self.interval)
        );
        // Before the AM registers this is answered false, which is harmless: the AM starts
        // from the same initial target.
        let (driver, timeout) = (self.driver(), self.ask_timeout);
        ctx.spawn(
            async move {
                if !matches!(driver.ask(total_request(&req), timeout).await, Ok(true)) {
                    tracing::debug!(
                        total = req.total,
                        "the cluster manager did not take the target yet"
                    );
                }
            }
            .into_actor(self),
        );
        let clock = self.me.clock().clone();
        run_with_fixed_delay(
            ctx,
            &clock,
            Duration::ZERO,
            self.interval,
            |act: &mut Self, ctx| act.schedule(ctx),
        );
    }
}

/// ExecutorAllocationListener and ExecutorMonitor on the bus: every event goes to the
/// manager's inbox; it keeps nothing of its own.
pub struct ExecutorAllocationListener {
    inbox: InboxSender<AllocationMessage>,
    /// The DriverEndpoint's active executors (isExecutorActive), as it publishes them.
    backend: View<ActiveExecutors>,
    clock: Clock,
}

impl ExecutorAllocationListener {
    pub fn new(inbox: InboxSender<AllocationMessage>, backend: View<ActiveExecutors>, clock: Clock) -> Self {
        ExecutorAllocationListener {
            inbox,
            backend,
            clock,
        }
    }
}

impl SparkListener for ExecutorAllocationListener {
    fn name(&self) -> &str {
        "ExecutorAllocationListener"
    }

    fn on_event(&mut self, event: &SparkListenerEvent) {
        let now = self.clock.epoch_millis();
        let active = match event {
            SparkListenerEvent::TaskStart { task_info, .. } => {
                self.backend.get().is_active(&task_info.executor_id)
            }
            _ => false,
        };
        // Unbounded: a post is never refused.
        let _ = self.inbox.send(AllocationMessage::Event {
            event: Box::new(event.clone()),
            time: now,
            executor_active: active,
        });
    }
}

crate::speaks!(ExecutorAllocationManager);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conf::SparkConf;
    use crate::scheduler::events::StageInfo;

    fn stage_submitted(num_tasks: u32) -> SparkListenerEvent {
        SparkListenerEvent::StageSubmitted {
            stage_info: StageInfo {
                stage_id: 0,
                attempt_id: 0,
                name: "count at Test".into(),
                num_tasks,
                rdd_infos: vec![],
                parent_ids: vec![],
                details: String::new(),
                submission_time: Some(0),
                completion_time: None,
                failure_reason: None,
                task_locality_preferences: vec![],
            },
            properties: vec![],
        }
    }

    /// The listener and the YarnSchedulerEndpoint only post; the core changes when the
    /// manager takes what waits, in the order posted, whichever incarnation takes it.
    #[test]
    fn what_others_post_waits_in_the_inbox_until_the_manager_applies_it_in_order() {
        let conf = SparkConf::new();
        let core = Kept::new(ExecutorAllocationManagerCore::new(
            super::super::AllocationConfig::from_conf(&conf),
        ));
        let inbox = DurableInbox::unbounded();
        let mut listener = ExecutorAllocationListener::new(
            inbox.polled_sender(),
            crate::runtime::Publisher::new(ActiveExecutors::default()).view(),
            Clock::manual(),
        );
        listener.on_event(&stage_submitted(3));
        assert_eq!(
            core.lock().pending_tasks(),
            0,
            "the listener does not touch the core"
        );
        assert_eq!(inbox.len(), 1);
        let backlogged = updated(&core, &inbox).add_time();
        assert_eq!(core.lock().pending_tasks(), 3);
        assert_ne!(backlogged, Some(0));
        // The backend's reset, posted after the event, lands after it.
        inbox.polled_sender().send(AllocationMessage::Reset).unwrap();
        listener.on_event(&stage_submitted(5));
        let c = updated(&core, &inbox);
        assert!(inbox.is_empty());
        assert_eq!(
            c.pending_tasks(),
            5,
            "the stage attempt, submitted again after the reset"
        );
        assert_eq!(c.target(), c.config().initial_executors);
    }
}
