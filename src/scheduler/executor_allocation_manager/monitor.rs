//! ExecutorMonitor (pure): which executors are idle and for how long, for the
//! ExecutorAllocationManager's idle removal.
//!
//! Every executor the driver registered has a tracker: how many tasks run on it, since when
//! it has been idle, and whether it holds shuffle output. An executor becomes idle when its
//! last task ends (or when it registers); its idle deadline is then
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

    /// onExecutorAdded: tracked, idle from now.
    pub fn executor_added(&mut self, executor_id: &str, resource_profile_id: u32, now: u64) {
        let config = self.config.clone();
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
        t.resource_profile_id = resource_profile_id;
        update_running(t, 0, now, &config);
    }

    /// onExecutorRemoved: forgotten.
    pub fn executor_removed(&mut self, executor_id: &str) -> bool {
        self.executors.remove(executor_id).is_some()
    }

    /// onTaskStart: busy. Events for executors not (or no longer) known are ignored.
    pub fn task_started(&mut self, executor_id: &str, now: u64) {
        let config = self.config.clone();
        if let Some(t) = self.executors.get_mut(executor_id) {
            update_running(t, 1, now, &config);
        }
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

    /// executorsKilled: these are being removed (never chosen again).
    pub fn executors_killed(&mut self, ids: &[String]) {
        for id in ids {
            if let Some(t) = self.executors.get_mut(id) {
                t.pending_removal = true;
            }
        }
    }
}

/// updateRunningTasks and updateTimeout.
fn update_running(t: &mut Tracker, delta: i32, now: u64, config: &MonitorConfig) {
    t.running_tasks = t.running_tasks.saturating_add_signed(delta);
    if t.running_tasks == 0 {
        if t.idle_start.is_none() || delta != 0 {
            t.idle_start = Some(now);
        }
    } else {
        t.idle_start = None;
    }
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
        m.task_started("1", 61_500);
        assert!(m.timed_out_executors(1_000_000).is_empty());
        // Idle again from the end of its last task.
        m.task_started("1", 61_600);
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
        m.task_started("9", 10);
        m.task_ended("9", None, 20);
        assert_eq!(m.executor_count(), 2);
        assert!(m.executor_removed("1"));
        assert!(!m.executor_removed("1"));
    }

    #[test]
    fn shuffle_output_keeps_an_executor_while_tracking_is_on() {
        let mut m = monitor(true);
        m.executor_added("1", 0, 0);
        m.job_started(0, BTreeSet::from([0]));
        m.task_started("1", 10);
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
        m.task_started("1", 10);
        m.task_ended("1", Some(0), 20);
        assert_eq!(m.timed_out_executors(60_020).len(), 1);
    }
}
