//! A CapacityScheduler leaf queue's ApplicationMaster accounting (Hadoop's LeafQueue
//! `activateApplications`): a pure core of the YARN layer, owned by the ResourceManager.
//!
//! ApplicationMasters may hold at most `yarn.scheduler.capacity.maximum-am-resource-percent`
//! (default 0.1) of the queue's resources, so that AMs can never take the whole cluster and
//! leave none of them room for an executor. A submitted attempt is *pending*; an activation
//! pass (on a submission, when an attempt ends, when the cluster's resources change)
//! activates pending attempts in submission order (application id, oldest first) while their
//! AM resources fit under the limit, skipping one that does not fit to try the next. The
//! queue always lets at least one AM run: when no AM is active the limit is not enforced
//! (with YARN's warning). Only an active attempt gets its AM container placed; a pending
//! one stays ACCEPTED, with the diagnostics YARN shows for it.
//!
//! As YARN's default `DefaultResourceCalculator`, limits compare memory only; the limit is
//! the queue's resources times the percentage, rounded up to a multiple of the minimum
//! allocation, and shown with one vcore. sparkyard's queues have no capacities of their own:
//! each queue's resources are the whole cluster's. With one user per queue at the default
//! user limit, the user AM limit equals the queue's.

use std::collections::BTreeMap;

use super::records::{ApplicationAttemptId, Resource};

/// The node label partition of every sparkyard node (YARN's default partition).
pub const DEFAULT_PARTITION: &str = "<DEFAULT_PARTITION>";

/// Why a pass activated nothing for an attempt, or what it did (YARN's AMState texts).
pub const NOT_ACTIVATED: &str = "Application is added to the scheduler and is not yet activated. ";
pub const QUEUE_AM_LIMIT_EXCEEDED: &str = "Queue's AM resource limit exceeded. ";
pub const ACTIVATED: &str = "Application is Activated, waiting for resources to be assigned for AM. ";
pub const ASSIGNED: &str =
    "Scheduler has assigned a container for AM, waiting for AM container to be launched";
pub const CLUSTER_RESOURCE_EMPTY: &str = "Skipping AM assignment as cluster resource is empty. ";
pub const LAUNCHED: &str = "AM container is launched, waiting for AM container to Register with RM";

/// One pending attempt: whose it is and what its AM asks for.
#[derive(Clone, Debug)]
struct PendingAm {
    user: String,
    am: Resource,
}

/// The AM accounting of one leaf queue.
#[derive(Clone, Debug)]
pub struct LeafQueue {
    name: String,
    /// `maximum-am-resource-percent`, as a fraction (0.1 is ten per cent).
    max_am_percent: f64,
    /// The minimum allocation: the limit is rounded up to a multiple of it.
    minimum: Resource,
    /// Submitted attempts not activated yet, in submission order.
    pending: BTreeMap<ApplicationAttemptId, PendingAm>,
    /// Activated attempts and the AM resource each holds against the limit.
    active: BTreeMap<ApplicationAttemptId, Resource>,
    /// The sum of `active`'s resources.
    am_used: Resource,
}

/// What one pass decided for one attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Activated now: its AM container may be placed. `above_limit`: it went over the
    /// limit as the only AM of the queue (the limit is too low for even one).
    Activated {
        user: String,
        details: Details,
        above_limit: bool,
    },
    /// Still pending because the queue's AM limit is reached.
    LimitReached { details: Details },
}

/// The figures YARN's diagnostics of a waiting attempt show.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Details {
    pub am_request: Resource,
    pub queue_am_limit: Resource,
    pub user_am_limit: Resource,
    pub queue_am_used: Resource,
}

impl Details {
    /// " Details : AM Partition = ...; ..." as YARN appends it to an attempt's diagnostics.
    pub fn render(&self) -> String {
        format!(
            " Details : AM Partition = {DEFAULT_PARTITION}; AM Resource Request = {}; Queue Resource Limit for AM = {}; User AM Resource Limit of the queue = {}; Queue AM Resource Usage = {}; ",
            self.am_request,
            shown(&self.queue_am_limit),
            shown(&self.user_am_limit),
            self.queue_am_used
        )
    }
}

/// A memory-only resource as YARN prints it (one vcore when it has memory, none otherwise).
fn shown(r: &Resource) -> Resource {
    Resource::new(r.memory_mb, u32::from(r.memory_mb > 0))
}

impl LeafQueue {
    pub fn new(name: &str, max_am_percent: f64, minimum: Resource) -> LeafQueue {
        LeafQueue {
            name: name.to_string(),
            max_am_percent,
            minimum,
            pending: BTreeMap::new(),
            active: BTreeMap::new(),
            am_used: Resource::default(),
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// An attempt was submitted to the queue; it waits for an activation pass.
    pub fn submit(&mut self, attempt: ApplicationAttemptId, user: &str, am: Resource) {
        if !self.active.contains_key(&attempt) {
            self.pending.insert(
                attempt,
                PendingAm {
                    user: user.to_string(),
                    am,
                },
            );
        }
    }

    /// An attempt ended (or its application was killed): what it held is free. Returns
    /// whether it was in the queue (ending one twice is harmless).
    pub fn finish(&mut self, attempt: &ApplicationAttemptId) -> bool {
        if let Some(am) = self.active.remove(attempt) {
            self.am_used = self.am_used.minus(&am);
            return true;
        }
        self.pending.remove(attempt).is_some()
    }

    pub fn is_active(&self, attempt: &ApplicationAttemptId) -> bool {
        self.active.contains_key(attempt)
    }

    /// The active attempts, oldest first.
    pub fn active(&self) -> impl Iterator<Item = &ApplicationAttemptId> {
        self.active.keys()
    }

    /// The pending attempts, oldest first.
    pub fn pending(&self) -> impl Iterator<Item = &ApplicationAttemptId> {
        self.pending.keys()
    }

    pub fn num_pending(&self) -> usize {
        self.pending.len()
    }

    pub fn num_active(&self) -> usize {
        self.active.len()
    }

    pub fn am_used(&self) -> Resource {
        self.am_used
    }

    /// The most memory AMs may hold in the queue, given the cluster's resources:
    /// CapacityScheduler's `multiplyAndNormalizeUp(cluster, percent, minimum)` on memory.
    pub fn am_limit(&self, cluster: &Resource) -> Resource {
        // As YARN computes it: the product in float, rounded up, then up to a multiple of
        // the minimum allocation. The float cast saturates, so no input overflows.
        let raw = ((cluster.memory_mb as f64 * self.max_am_percent) as f32).ceil();
        let memory = if raw.is_finite() && raw > 0.0 {
            raw as u64
        } else {
            0
        };
        let step = self.minimum.memory_mb.max(1);
        let memory = memory
            .div_ceil(step)
            .checked_mul(step)
            .unwrap_or(u64::MAX / step * step);
        Resource::new(memory, u32::from(memory > 0))
    }

    /// One activation pass against `cluster`'s resources: pending attempts in submission
    /// order are activated while their AMs fit under the limit (always one when no AM is
    /// active). Returns a decision for every attempt it looked at; `None` when the cluster
    /// has no resources (no node registered), in which case nothing is activated.
    pub fn activate(&mut self, cluster: &Resource) -> Option<Vec<(ApplicationAttemptId, Decision)>> {
        if cluster.memory_mb == 0 {
            return if self.pending.is_empty() {
                Some(Vec::new())
            } else {
                None
            };
        }
        let limit = self.am_limit(cluster);
        let mut decisions = Vec::new();
        let waiting: Vec<ApplicationAttemptId> = self.pending.keys().copied().collect();
        for attempt in waiting {
            let Some(pending) = self.pending.get(&attempt) else {
                continue;
            };
            let am = pending.am;
            let above_limit = self.am_used.plus(&am).memory_mb > limit.memory_mb;
            if above_limit && !self.active.is_empty() && self.am_used.memory_mb > 0 {
                decisions.push((
                    attempt,
                    Decision::LimitReached {
                        details: self.details(am, limit),
                    },
                ));
                continue;
            }
            let Some(pending) = self.pending.remove(&attempt) else {
                continue;
            };
            self.active.insert(attempt, am);
            self.am_used = self.am_used.plus(&am);
            let details = self.details(am, limit);
            decisions.push((
                attempt,
                Decision::Activated {
                    user: pending.user,
                    details,
                    above_limit,
                },
            ));
        }
        Some(decisions)
    }

    fn details(&self, am: Resource, limit: Resource) -> Details {
        Details {
            am_request: am,
            queue_am_limit: limit,
            user_am_limit: limit,
            queue_am_used: self.am_used,
        }
    }
}

/// The time stamp YARN puts before an attempt's AM launch diagnostics:
/// `[Tue Nov 24 10:00:00 +0000 2026] ` (FastDateFormat "EEE MMM dd HH:mm:ss Z yyyy", UTC).
pub fn diagnostics_stamp(epoch_millis: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let secs = epoch_millis / 1000;
    let time = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs);
    // "YYYY-MM-DDTHH:MM:SSZ"
    let iso = humantime::format_rfc3339_seconds(time).to_string();
    let month = iso
        .get(5..7)
        .and_then(|m| m.parse::<usize>().ok())
        .and_then(|m| MONTHS.get(m.wrapping_sub(1)))
        .copied()
        .unwrap_or("Jan");
    let weekday = DAYS[((secs / 86_400) % 7) as usize];
    format!(
        "[{weekday} {month} {} {} +0000 {}] ",
        iso.get(8..10).unwrap_or("01"),
        iso.get(11..19).unwrap_or("00:00:00"),
        iso.get(0..4).unwrap_or("1970")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yarn::records::ApplicationId;

    fn attempt(app: u32, attempt: u32) -> ApplicationAttemptId {
        ApplicationAttemptId {
            app: ApplicationId {
                cluster_timestamp: 1,
                id: app,
            },
            attempt,
        }
    }

    fn queue() -> LeafQueue {
        LeafQueue::new("default", 0.1, Resource::new(1024, 1))
    }

    fn activated(d: &[(ApplicationAttemptId, Decision)]) -> Vec<ApplicationAttemptId> {
        d.iter()
            .filter(|(_, d)| matches!(d, Decision::Activated { .. }))
            .map(|(a, _)| *a)
            .collect()
    }

    const CLUSTER: Resource = Resource {
        memory_mb: 3 * 8192,
        vcores: 24,
    };

    #[test]
    fn the_limit_is_the_percentage_rounded_up_to_the_minimum_allocation() {
        // 0.1 × 24576 = 2457.6 → 2458 → 3072, as YARN shows for three 8 GB nodes.
        assert_eq!(queue().am_limit(&CLUSTER), Resource::new(3072, 1));
        assert_eq!(queue().am_limit(&Resource::new(8192, 8)), Resource::new(1024, 1));
        let half = LeafQueue::new("q", 0.5, Resource::new(512, 1));
        assert_eq!(half.am_limit(&Resource::new(10000, 8)), Resource::new(5120, 1));
        assert_eq!(queue().am_limit(&Resource::default()), Resource::new(0, 0));
        // Degenerate inputs do not panic.
        let all = LeafQueue::new("q", 1.0, Resource::new(0, 0));
        assert_eq!(all.am_limit(&Resource::new(u64::MAX, 1)).vcores, 1);
    }

    #[test]
    fn ams_are_activated_in_submission_order_up_to_the_limit() {
        let mut q = queue();
        for app in 1..=5 {
            q.submit(attempt(app, 1), "alice", Resource::new(2048, 1));
        }
        let d = q.activate(&CLUSTER).expect("cluster has resources");
        // The first always starts; a second (2048 + 2048 > 3072) does not fit.
        assert_eq!(activated(&d), [attempt(1, 1)]);
        assert_eq!(d.len(), 5);
        let Decision::LimitReached { details } = &d[1].1 else {
            panic!("{d:?}")
        };
        assert_eq!(
            details.render(),
            " Details : AM Partition = <DEFAULT_PARTITION>; AM Resource Request = <memory:2048, vCores:1>; Queue Resource Limit for AM = <memory:3072, vCores:1>; User AM Resource Limit of the queue = <memory:3072, vCores:1>; Queue AM Resource Usage = <memory:2048, vCores:1>; "
        );
        assert_eq!((q.num_active(), q.num_pending()), (1, 4));

        // The active one ends: the next in order starts.
        assert!(q.finish(&attempt(1, 1)));
        let d = q.activate(&CLUSTER).expect("resources");
        assert_eq!(activated(&d), [attempt(2, 1)]);
        assert_eq!(q.am_used(), Resource::new(2048, 1));
    }

    #[test]
    fn smaller_ams_fill_the_room_a_larger_one_cannot_use() {
        let mut q = queue();
        q.submit(attempt(1, 1), "a", Resource::new(1024, 1));
        q.submit(attempt(2, 1), "a", Resource::new(4096, 1));
        q.submit(attempt(3, 1), "a", Resource::new(1024, 1));
        q.submit(attempt(4, 1), "a", Resource::new(1024, 1));
        let d = q.activate(&CLUSTER).expect("resources");
        assert_eq!(activated(&d), [attempt(1, 1), attempt(3, 1), attempt(4, 1)]);
        assert_eq!(q.am_used(), Resource::new(3072, 3));
    }

    #[test]
    fn one_am_always_runs_even_above_the_limit() {
        let mut q = LeafQueue::new("default", 0.01, Resource::new(1024, 1));
        q.submit(attempt(1, 1), "a", Resource::new(4096, 1));
        q.submit(attempt(2, 1), "a", Resource::new(1024, 1));
        let d = q.activate(&Resource::new(8192, 8)).expect("resources");
        assert_eq!(activated(&d), [attempt(1, 1)]);
        assert!(matches!(
            d[0].1,
            Decision::Activated {
                above_limit: true,
                ..
            }
        ));
        assert!(matches!(d[1].1, Decision::LimitReached { .. }));
    }

    #[test]
    fn a_retried_attempt_of_an_older_application_goes_first() {
        let mut q = queue();
        q.submit(attempt(1, 1), "a", Resource::new(2048, 1));
        q.activate(&CLUSTER);
        q.submit(attempt(2, 1), "a", Resource::new(2048, 1));
        q.activate(&CLUSTER);
        // Attempt 1 of app 1 fails; its second attempt is older than app 2.
        q.finish(&attempt(1, 1));
        q.submit(attempt(1, 2), "a", Resource::new(2048, 1));
        let d = q.activate(&CLUSTER).expect("resources");
        assert_eq!(activated(&d), [attempt(1, 2)]);
    }

    #[test]
    fn diagnostics_are_stamped_as_yarn_stamps_them() {
        assert_eq!(diagnostics_stamp(0), "[Thu Jan 01 00:00:00 +0000 1970] ");
        // 2026-11-24T10:11:12Z, a Tuesday.
        assert_eq!(
            diagnostics_stamp(1_795_515_072_000),
            "[Tue Nov 24 10:11:12 +0000 2026] "
        );
    }

    #[test]
    fn nothing_is_activated_without_cluster_resources() {
        let mut q = queue();
        q.submit(attempt(1, 1), "a", Resource::new(1024, 1));
        assert_eq!(q.activate(&Resource::default()), None);
        assert_eq!(q.num_pending(), 1);
        assert!(!q.finish(&attempt(9, 1)));
        assert!(q.finish(&attempt(1, 1)));
        assert_eq!(q.activate(&Resource::default()), Some(Vec::new()));
    }
}
