//! Spark's ExecutorFailureTracker: executor failures over time, globally and per host, with
//! their validity interval, and the cap on failures before the ApplicationMaster gives up.
//!
//! Layer: deploy (the AM's allocator), pure: every method takes `now`.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use super::core::SPARK_INT_MAX;

/// The cap on executor failures before the ApplicationMaster gives up (exit code 11), by
/// Spark's rule: an explicit `spark.executor.maxNumFailures` wins; otherwise twice the
/// effective executor count (dynamic allocation: its max executors; static: the configured
/// instances, 0 when unset), at least 3, and `Int.MaxValue` when doubling would overflow an
/// Int. For streaming dynamic allocation, pass its max executors as `max_executors`.
pub fn max_num_executor_failures(
    explicit: Option<u32>,
    dynamic_allocation: bool,
    max_executors: u32,
    instances: Option<u32>,
) -> u32 {
    if let Some(cap) = explicit {
        return cap;
    }
    let effective = if dynamic_allocation {
        max_executors
    } else {
        instances.unwrap_or(0)
    };
    let doubled = if effective > SPARK_INT_MAX / 2 {
        SPARK_INT_MAX
    } else {
        effective * 2
    };
    doubled.max(3)
}

/// Failure timestamps, globally and per host (ExecutorFailureTracker).
#[derive(Debug)]
pub(super) struct FailureTracker {
    pub(super) validity: Option<Duration>,
    pub(super) global: VecDeque<Duration>,
    pub(super) per_host: BTreeMap<String, VecDeque<Duration>>,
}

impl FailureTracker {
    /// Failures older than this no longer count (only with a positive validity interval).
    pub(super) fn cutoff(&self, now: Duration) -> Option<Duration> {
        match self.validity {
            Some(interval) if !interval.is_zero() => now.checked_sub(interval),
            _ => None,
        }
    }

    /// Spark drops expired entries from the head of the queue only; counting the same way.
    pub(super) fn live(queue: &VecDeque<Duration>, cutoff: Option<Duration>) -> u32 {
        let expired = match cutoff {
            Some(c) => queue.iter().take_while(|t| **t < c).count(),
            None => 0,
        };
        u32::try_from(queue.len() - expired).unwrap_or(u32::MAX)
    }

    pub(super) fn prune(queue: &mut VecDeque<Duration>, cutoff: Option<Duration>) {
        if let Some(c) = cutoff {
            while queue.front().is_some_and(|t| *t < c) {
                queue.pop_front();
            }
        }
    }

    pub(super) fn num_failed_executors(&self, now: Duration) -> u32 {
        Self::live(&self.global, self.cutoff(now))
    }

    pub(super) fn num_failures_on_host(&self, host: &str, now: Duration) -> u32 {
        self.per_host
            .get(host)
            .map_or(0, |queue| Self::live(queue, self.cutoff(now)))
    }

    pub(super) fn register_executor_failure(&mut self, now: Duration) {
        let cutoff = self.cutoff(now);
        Self::prune(&mut self.global, cutoff);
        self.global.push_back(now);
    }

    pub(super) fn register_failure_on_host(&mut self, host: &str, now: Duration) {
        self.register_executor_failure(now);
        let cutoff = self.cutoff(now);
        let queue = self.per_host.entry(host.to_string()).or_default();
        Self::prune(queue, cutoff);
        queue.push_back(now);
    }
}
