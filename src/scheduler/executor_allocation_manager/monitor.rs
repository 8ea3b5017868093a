//! ExecutorMonitor (pure): which executors are idle and for how long, for the
//! ExecutorAllocationManager's idle removal.
//!
//! Layer: scheduler (the Spark side: the driver's schedulers, above rdd).
//!
//! Every executor the driver registered has a tracker: how many tasks run on it, since when
//! it has been idle, and whether it holds shuffle output. A task start can reach the monitor
//! before its executor's registration does (Spark's SPARK-4951): if the backend has the
//! executor active, the task start creates the tracker (ensureExecutorIsTracked) and counts,
//! so the executor is busy when it registers; a task start for an executor the backend no
//! longer has (a late event, SPARK-26927) is ignored. An executor becomes idle when its
//! last task ends (or when it registers idle); its idle deadline is then
//! `idle start + spark.dynamicAllocation.executorIdleTimeout`, or, when it holds shuffle
//! output and shuffle tracking is on, `+ spark.dynamicAllocation.shuffleTracking.timeout`
//! (infinite by default: map output must stay where reducers will fetch it). While a task
//! runs on it, it has no deadline. An executor holding output of a shuffle that an active
//! job uses is never timed out (`hasActiveShuffle`), nor is one already being removed.
//!
//! sparkyard has one shuffle per map stage, so the map stage's id stands for its shuffle id;
//! a job's shuffles are the map stages its JobStart lists.

use std::collections::{BTreeMap, BTreeSet};

/// A deadline that never comes.
pub const NEVER: u64 = u64::MAX;

/// The resource profile of an executor tracked before its registration told it (Spark's
/// `UNKNOWN_RESOURCE_PROFILE_ID`, -1).
pub const UNKNOWN_RESOURCE_PROFILE_ID: u32 = u32::MAX;

/// The monitor's settings (milliseconds).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MonitorConfig {
    pub idle_timeout_ms: u64,
    pub shuffle_tracking: bool,
    pub shuffle_timeout_ms: u64,
}

/// One executor's tracker (Spark's ExecutorMonitor.Tracker).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tracker {
    pub resource_profile_id: u32,
    pub running_tasks: u32,
    /// Since when it has run nothing (None while busy).
    pub idle_start: Option<u64>,
    /// When it times out ([`NEVER`] while busy or holding shuffle output forever).
    pub timeout_at: u64,
    /// The driver was asked to kill it.
    pub pending_removal: bool,
    /// Map stages (shuffles) whose output it holds.
    pub shuffles: BTreeSet<u32>,
    /// It holds output of a shuffle an active job reads.
    pub has_active_shuffle: bool,
}

/// The ExecutorMonitor; see the module docs.
#[derive(Clone, Debug)]
pub struct ExecutorMonitor {
    config: MonitorConfig,
    executors: BTreeMap<String, Tracker>,
    /// Active jobs and the map stages (shuffles) each of them involves.
    active_jobs: BTreeMap<u32, BTreeSet<u32>>,
}

impl ExecutorMonitor {
    pub fn new(config: MonitorConfig) -> Self {
        ExecutorMonitor {
            config,
            executors: BTreeMap::new(),
            active_jobs: BTreeMap::new(),
        }
    }

    pub fn config(&self) -> &MonitorConfig {
        &self.config
    }

    /// How many executors are known (Spark's executorCount).
    pub fn executor_count(&self) -> u32 {
        self.executors.len() as u32
    }

    /// How many of them are being removed.
    pub fn pending_removal_count(&self) -> u32 {
        self.executors.values().filter(|t| t.pending_removal).count() as u32
    }

    pub fn tracker(&self, executor_id: &str) -> Option<&Tracker> {
        self.executors.get(executor_id)
    }

    /// ensureExecutorIsTracked: the executor's tracker, created if it has none; a known
    /// resource profile replaces an unknown one.
    fn ensure_tracked(&mut self, executor_id: &str, resource_profile_id: u32) -> &mut Tracker {
        let t = self
            .executors
            .entry(executor_id.to_string())
            .or_insert_with(|| Tracker {
                resource_profile_id,
                running_tasks: 0,
                idle_start: None,
                timeout_at: NEVER,
                pending_removal: false,
                shuffles: BTreeSet::new(),
                has_active_shuffle: false,
            });
        if t.resource_profile_id == UNKNOWN_RESOURCE_PROFILE_ID {
            t.resource_profile_id = resource_profile_id;
        }
        t
    }

    /// onExecutorAdded: tracked (idle from now unless a task already runs on it).
    pub fn executor_added(&mut self, executor_id: &str, resource_profile_id: u32, now: u64) {
        let config = self.config.clone();
        let t = self.ensure_tracked(executor_id, resource_profile_id);
        update_running(t, 0, now, &config);
    }

    /// onExecutorRemoved: forgotten.
    pub fn executor_removed(&mut self, executor_id: &str) -> bool {
        self.executors.remove(executor_id).is_some()
    }

    /// onTaskStart: busy. `active` is the backend's answer for the executor
    /// (isExecutorActive): registered and not being removed. An active executor not tracked
    /// yet (its registration has not reached the monitor) is tracked from this task on; a
    /// task start for an executor the backend does not have active is ignored.
    pub fn task_started(&mut self, executor_id: &str, active: bool, now: u64) {
        if !active {
            return;
        }
        let config = self.config.clone();
        let t = self.ensure_tracked(executor_id, UNKNOWN_RESOURCE_PROFILE_ID);
        update_running(t, 1, now, &config);
    }

    /// onTaskEnd: one task fewer; a successful map task leaves shuffle output behind.
    pub fn task_ended(&mut self, executor_id: &str, map_output_of: Option<u32>, now: u64) {
        let config = self.config.clone();
        let active = self.active_shuffles();
        if let Some(t) = self.executors.get_mut(executor_id) {
            if let (true, Some(stage)) = (config.shuffle_tracking, map_output_of) {
                t.shuffles.insert(stage);
                t.has_active_shuffle |= active.contains(&stage);
            }
            update_running(t, -1, now, &config);
        }
    }

    /// onJobStart: the job's map stages are active shuffles.
    pub fn job_started(&mut self, job_id: u32, map_stages: BTreeSet<u32>) {
        self.active_jobs.insert(job_id, map_stages);
        self.update_active_shuffles();
    }

    /// onJobEnd: its shuffles are active only if another active job uses them.
    pub fn job_ended(&mut self, job_id: u32) {
        if self.active_jobs.remove(&job_id).is_some() {
            self.update_active_shuffles();
        }
    }

    fn active_shuffles(&self) -> BTreeSet<u32> {
        self.active_jobs.values().flatten().copied().collect()
    }

    fn update_active_shuffles(&mut self) {
        let active = self.active_shuffles();
        for t in self.executors.values_mut() {
            t.has_active_shuffle = t.shuffles.iter().any(|s| active.contains(s));
        }
    }

    /// timedOutExecutors: executors past their idle deadline, not being removed, holding no
    /// active shuffle; with how long each has been idle. Ordered by executor id.
    pub fn timed_out_executors(&self, now: u64) -> Vec<(String, u64)> {
        self.executors
            .iter()
            .filter(|(_, t)| !t.pending_removal && !t.has_active_shuffle && t.timeout_at <= now)
            .map(|(id, t)| (id.clone(), now.saturating_sub(t.idle_start.unwrap_or(now))))
            .collect()
    }

    /// reset (the cluster manager re-registered): every executor is forgotten, with its idle
    /// clock and whether it was being removed; the active jobs stay.
    pub fn reset(&mut self) {
        self.executors.clear();
    }

    /// executorsKilled: these are being removed (never chosen again).
    pub fn executors_killed(&mut self, ids: &[String]) {
        for id in ids {
            if let Some(t) = self.executors.get_mut(id) {
                t.pending_removal = true;
            }
        }
    }
}

/// updateRunningTasks and updateTimeout: idle from now when nothing runs on it.
fn update_running(t: &mut Tracker, delta: i32, now: u64, config: &MonitorConfig) {
    t.running_tasks = t.running_tasks.saturating_add_signed(delta);
    t.idle_start = (t.running_tasks == 0).then_some(now);
    t.timeout_at = match t.idle_start {
        None => NEVER,
        Some(start) => {
            let timeout = if !t.shuffles.is_empty() {
                config.shuffle_timeout_ms
            } else {
                config.idle_timeout_ms
            };
            start.saturating_add(timeout)
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn monitor(tracking: bool) -> ExecutorMonitor {
        ExecutorMonitor::new(MonitorConfig {
            idle_timeout_ms: 60_000,
            shuffle_tracking: tracking,
            shuffle_timeout_ms: NEVER,
        })
    }

    #[test]
    fn an_executor_times_out_exactly_at_idle_start_plus_the_timeout() {
        let mut m = monitor(true);
        m.executor_added("1", 0, 1_000);
        assert!(m.timed_out_executors(60_999).is_empty());
        assert_eq!(m.timed_out_executors(61_000), vec![("1".to_string(), 60_000)]);
        // A task makes it busy: no deadline however long it runs.
        m.task_started("1", true, 61_500);
        assert!(m.timed_out_executors(1_000_000).is_empty());
        // Idle again from the end of its last task.
        m.task_started("1", true, 61_600);
        m.task_ended("1", None, 70_000);
        assert!(m.timed_out_executors(200_000).is_empty(), "one task still runs");
        m.task_ended("1", None, 80_000);
        assert!(m.timed_out_executors(139_999).is_empty());
        assert_eq!(m.timed_out_executors(140_000), vec![("1".to_string(), 60_000)]);
    }

    #[test]
    fn killed_and_unknown_executors_are_not_chosen() {
        let mut m = monitor(true);
        m.executor_added("1", 0, 0);
        m.executor_added("2", 0, 0);
        m.executors_killed(&["1".to_string()]);
        assert_eq!(m.pending_removal_count(), 1);
        assert_eq!(m.timed_out_executors(60_000), vec![("2".to_string(), 60_000)]);
        // Executor 9 is not active in the backend: its events are ignored.
        m.task_started("9", false, 10);
        m.task_ended("9", None, 20);
        assert_eq!(m.executor_count(), 2);
        assert!(m.executor_removed("1"));
        assert!(!m.executor_removed("1"));
    }

    #[test]
    fn a_task_start_before_the_registration_keeps_the_executor_busy() {
        // SPARK-4951: the task start reaches the monitor before the executor's registration.
        let mut m = monitor(false);
        m.task_started("1", true, 1_000);
        assert_eq!(m.executor_count(), 1);
        let t = m.tracker("1").unwrap();
        assert_eq!((t.running_tasks, t.timeout_at), (1, NEVER));
        assert_eq!(t.resource_profile_id, UNKNOWN_RESOURCE_PROFILE_ID);
        // The registration comes later: still one executor, still busy, its profile known.
        m.executor_added("1", 0, 2_000);
        assert_eq!(m.executor_count(), 1);
        let t = m.tracker("1").unwrap();
        assert_eq!(
            (t.running_tasks, t.timeout_at, t.resource_profile_id),
            (1, NEVER, 0)
        );
        assert!(
            m.timed_out_executors(1_000_000).is_empty(),
            "busy: no idle deadline"
        );
        // Idle from the end of that task, timed out a full timeout later.
        m.task_ended("1", None, 5_000);
        assert!(m.timed_out_executors(64_999).is_empty());
        assert_eq!(m.timed_out_executors(65_000), vec![("1".to_string(), 60_000)]);

        // SPARK-26927: a late task start for an executor the backend no longer has active
        // does not bring it back.
        m.executor_added("2", 0, 6_000);
        assert!(m.executor_removed("2"));
        m.task_started("2", false, 7_000);
        assert_eq!(m.executor_count(), 1);
        assert!(m.tracker("2").is_none());
    }

    #[test]
    fn reset_forgets_every_executor_and_its_removal() {
        let mut m = monitor(false);
        m.executor_added("1", 0, 0);
        m.executor_added("2", 0, 0);
        m.executors_killed(&["1".to_string()]);
        m.reset();
        assert_eq!((m.executor_count(), m.pending_removal_count()), (0, 0));
        assert!(m.timed_out_executors(u64::MAX - 1).is_empty());
        // An executor that registers again is tracked afresh, not pending removal.
        m.executor_added("1", 0, 100);
        assert_eq!(m.pending_removal_count(), 0);
        assert_eq!(m.timed_out_executors(60_100), vec![("1".to_string(), 60_000)]);
    }

    #[test]
    fn shuffle_output_keeps_an_executor_while_tracking_is_on() {
        let mut m = monitor(true);
        m.executor_added("1", 0, 0);
        m.job_started(0, BTreeSet::from([0]));
        m.task_started("1", true, 10);
        m.task_ended("1", Some(0), 20);
        let t = m.tracker("1").unwrap();
        assert!(t.has_active_shuffle);
        assert_eq!(t.timeout_at, NEVER);
        m.job_ended(0);
        assert!(!m.tracker("1").unwrap().has_active_shuffle);
        // shuffleTracking.timeout is infinite by default: still never idle-removed.
        assert!(m.timed_out_executors(u64::MAX - 1).is_empty());

        // Without tracking the output does not count.
        let mut m = monitor(false);
        m.executor_added("1", 0, 0);
        m.task_started("1", true, 10);
        m.task_ended("1", Some(0), 20);
        assert_eq!(m.timed_out_executors(60_020).len(), 1);
    }
}
