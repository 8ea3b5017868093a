//! The speculation timer (TaskSchedulerImpl's `task-scheduler-speculation` thread): with
//! `spark.speculation=true`, every `spark.speculation.interval` (100 ms, fixed delay, the
//! first after one interval) it sends CheckSpeculatableTasks to the DriverEndpoint, which
//! owns the TaskSchedulerImpl and runs its checkSpeculatableTasks. The TaskSetManagers mark
//! the tasks that ran too long (a `task_speculatable` record each); each mark goes to the
//! DAGScheduler as SpeculativeTaskSubmitted (posted on the bus, where the
//! ExecutorAllocationManager counts it), and if any was found the DriverEndpoint revives
//! offers so the copies launch at once. Its own actor with its own timer, so it can be
//! killed and restarted alone; the timer is registered in `started()`. A tick lost while the
//! DriverEndpoint restarts is made up by the next one.
//!
//! Layer: scheduler (the Spark side: the driver's schedulers, above rdd).

use std::time::Duration;

use actix::{Actor, Context};

use super::driver_endpoint::{CheckSpeculatableTasks, TaskSchedulerProtocol};
use crate::runtime::timers::run_with_fixed_delay;
use crate::runtime::{ActorPath, Me};

/// The speculation timer actor; see the module docs.
pub struct SpeculationTimer {
    me: Me,
    driver_endpoint: ActorPath,
    interval: Duration,
}

impl SpeculationTimer {
    pub fn new(me: Me, driver_endpoint: ActorPath, interval: Duration) -> Self {
        SpeculationTimer {
            me,
            driver_endpoint,
            interval,
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
            let _ = act
                .me
                .endpoint::<TaskSchedulerProtocol>(&act.driver_endpoint)
                .tell(CheckSpeculatableTasks);
        });
    }
}

crate::speaks!(SpeculationTimer);
