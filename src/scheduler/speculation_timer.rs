//! The speculation timer (TaskSchedulerImpl's `task-scheduler-speculation` thread): with
//! `spark.speculation=true`, every `spark.speculation.interval` (100 ms, fixed delay, the
//! first after one interval) it runs the TaskSchedulerImpl's checkSpeculatableTasks. The
//! TaskSetManagers mark the tasks that ran too long (a `task_speculatable` record each);
//! each mark goes to the DAGScheduler as SpeculativeTaskSubmitted (posted on the bus, where
//! the ExecutorAllocationManager counts it), and if any was found the DriverEndpoint is told
//! to ReviveOffers so the copies launch at once. Its own actor with its own timer, so it can
//! be killed and restarted alone; the timer is registered in `started()`.

use std::time::Duration;

use actix::{Actor, Context};

use super::dag_scheduler::{to_dag_event, BackendEvent, DagQueueRef};
use super::task::ReviveOffers;
use super::task_scheduler::TaskSchedulerImpl;
use crate::runtime::timers::run_with_fixed_delay;
use crate::runtime::{ActorPath, Kept, Me};
use crate::scheduler::messages::DriverProtocol;

/// The speculation timer actor; see the module docs.
pub struct SpeculationTimer {
    me: Me,
    task_scheduler: Kept<TaskSchedulerImpl>,
    dag_queue: DagQueueRef,
    driver_endpoint: ActorPath,
    interval: Duration,
}

impl SpeculationTimer {
    pub fn new(
        me: Me,
        task_scheduler: Kept<TaskSchedulerImpl>,
        dag_queue: DagQueueRef,
        driver_endpoint: ActorPath,
        interval: Duration,
    ) -> Self {
        let dag_queue = dag_queue.from_actor(&me);
        SpeculationTimer {
            me,
            task_scheduler,
            dag_queue,
            driver_endpoint,
            interval,
        }
    }

    /// One round of checkSpeculatableTasks and the delivery of what it decided.
    fn check(&mut self) {
        let now = self.me.clock().epoch_millis();
        let events = {
            let mut ts = self.task_scheduler.lock();
            if !ts.check_speculatable_tasks(now) {
                return;
            }
            ts.take_events()
        };
        let driver = self.me.endpoint::<DriverProtocol>(&self.driver_endpoint);
        let mut no_result = None;
        for ev in events {
            match to_dag_event(ev, &mut no_result) {
                Ok(e) => self.dag_queue.post(e),
                Err(BackendEvent::Kill(kill)) => {
                    let _ = driver.tell(kill);
                }
                Err(BackendEvent::Revive) => {
                    let _ = driver.tell(ReviveOffers);
                }
            }
        }
    }
}

impl Actor for SpeculationTimer {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        tracing::info!(
            interval_ms = self.interval.as_millis() as u64,
            "Checking for speculatable tasks every {}",
            humantime::format_duration(self.interval)
        );
        let clock = self.me.clock().clone();
        run_with_fixed_delay(ctx, &clock, self.interval, self.interval, |act: &mut Self, _| {
            act.check()
        });
    }
}

crate::speaks!(SpeculationTimer);
