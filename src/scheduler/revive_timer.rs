//! The revive timer (CoarseGrainedSchedulerBackend's `driver-revive-thread`): sends
//! ReviveOffers to the DriverEndpoint every `spark.scheduler.revive.interval` (1 s), the
//! first at once, so task sets that found no free cores get offers again. Its own actor so
//! it can be killed and restarted on its own; the timer is registered in `started()`, so
//! every incarnation ticks again.
//!
//! Layer: scheduler (the Spark side: the driver's schedulers, above rdd).

use std::time::Duration;

use actix::{Actor, Context};

use super::task::ReviveOffers;
use crate::runtime::timers::run_at_fixed_rate;
use crate::runtime::{ActorPath, Me};
use crate::scheduler::messages::DriverProtocol;

/// The revive timer actor; see the module docs.
pub struct ReviveTimer {
    me: Me,
    driver_endpoint: ActorPath,
    interval: Duration,
}

impl ReviveTimer {
    pub fn new(me: Me, driver_endpoint: ActorPath, interval: Duration) -> Self {
        ReviveTimer {
            me,
            driver_endpoint,
            interval,
        }
    }
}

impl Actor for ReviveTimer {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        tracing::info!(
            interval_ms = self.interval.as_millis() as u64,
            "Reviving offers every {}",
            humantime::format_duration(self.interval)
        );
        let clock = self.me.clock().clone();
        run_at_fixed_rate(ctx, &clock, Duration::ZERO, self.interval, |act: &mut Self, _| {
            let _ = act
                .me
                .endpoint::<DriverProtocol>(&act.driver_endpoint)
                .tell(ReviveOffers);
        });
    }
}

crate::speaks!(ReviveTimer);
