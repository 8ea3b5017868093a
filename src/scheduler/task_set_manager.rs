//! The TaskSetManager: one stage attempt's tasks as a plain, synchronous, deterministic state
//! machine (Spark's `TaskSetManager`). It keeps the pending lists used for delay scheduling,
//! picks a task for each resource offer, tracks attempts, retries, speculation, result-size
//! accounting and executor loss.
//!
//! Layer: scheduler (the Spark side: the driver's schedulers, above rdd).
//!
//! It reads no clock and sends nothing: every call that needs the time takes `now_ms`
//! (milliseconds since the Unix epoch), the cluster is seen through [`ClusterView`], and what
//! Spark's TaskSetManager tells the DAGScheduler and the backend (`taskStarted`, `taskEnded`,
//! `taskSetFailed`, `speculativeTaskSubmitted`, `killTask`) is appended, in Spark's order, to
//! the caller's `Vec<SchedulerEvent>`. Calls also answer with a small outcome record. The
//! [`super::task_scheduler::TaskSchedulerImpl`] owns one manager per stage attempt.
//!
//! Costs follow Spark's: the pending lists are stacks cleaned lazily (an index is pushed once
//! per list it belongs to and popped at most once), so an offer or a status update never scans
//! the tasks of the set. Only an executor loss walks that executor's attempts, the
//! speculation check walks the running attempts, and inspection helpers such as
//! [`TaskSetManager::pending_task_indices`] scan everything.
//!
//! Differences from Spark, all deliberate:
//! - the task index is the task's position in `TaskSet::tasks`;
//! - no excludeOnFailure (health tracker), no HDFS-cache locations, a single resource
//!   profile; a decommissioned executor's map outputs are never migrated
//!   (no block manager), so its loss always resubmits them;
//! - a lost executor resubmits only attempts that themselves succeeded (Spark checks only that
//!   the index is successful, so a failed attempt on the lost executor could undo another
//!   executor's output);
//! - the speculation efficiency rule uses the process rates the caller feeds in
//!   ([`TaskSetManager::handle_successful_task_with_metrics`],
//!   [`TaskSetManager::update_running_task_process_rate`]); with none fed, Spark's defaults
//!   apply unchanged (average `f64::MAX`, running rate 0), so a task over the threshold counts
//!   as inefficient and is speculated, exactly as Spark does without metrics.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use super::dag_scheduler::{CompletionEvent, DagEvent};
use super::events::{TaskEndReason, TaskInfo, TaskLocality};
use super::loss_reason::ExecutorLossReason;
use super::task::{KillTask, TaskResult};
use super::task_set::{SchedulerEvent, TaskBinary, TaskLaunch, TaskLocation, TaskSet};

/// The reason given to `KillTask` for the other running attempts once one attempt succeeded.
pub const KILL_REASON_ANOTHER_ATTEMPT_SUCCEEDED: &str = "another attempt succeeded";
/// A success reported by an attempt that was killed because another attempt won is turned
/// into `TaskKilled` with this reason.
pub const KILLED_DID_NOT_COMMIT: &str = "Finish but did not commit due to another attempt succeeded";
/// A success whose result would exceed `spark.driver.maxResultSize` becomes `TaskKilled`
/// with this reason.
pub const KILLED_RESULT_TOO_BIG: &str = "Tasks result size has exceeded maxResultSize";
/// The configuration key named in the result-size abort message.
pub const MAX_RESULT_SIZE_KEY: &str = "spark.driver.maxResultSize";
/// Spark warns once per task set about a task bigger than this (`TASK_SIZE_TO_WARN_KIB`).
pub const TASK_SIZE_TO_WARN_KIB: usize = 1000;
/// How often a repeated exception is logged in full (`spark.logging.exceptionPrintInterval`).
pub const EXCEPTION_PRINT_INTERVAL_MS: u64 = 10_000;
/// How often a barrier task set that could launch only part of its tasks says so
/// (`TaskSetManager.BARRIER_LOGGING_INTERVAL`).
pub const BARRIER_LOGGING_INTERVAL_MS: u64 = 60_000;

const NOT_SERIALIZABLE_CLASS: &str = "java.io.NotSerializableException";
const OUTPUT_EXISTS_CLASS: &str = "org.apache.spark.TaskOutputFileAlreadyExistException";

// ----- fast hashing ------------------------------------------------------------------------

/// A small, fast, deterministic hasher (the Fx hash of rustc) for the scheduler's task-id and
/// executor-id maps; std's SipHash costs several times more per lookup.
#[derive(Clone, Copy, Debug, Default)]
pub struct FxHasher {
    hash: u64,
}

const FX_SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(FX_SEED);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(word) ^ ((rest.len() as u64) << 56));
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.hash
    }
}

/// `HashMap` with [`FxHasher`].
pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;
/// `HashSet` with [`FxHasher`].
pub type FastSet<K> = HashSet<K, BuildHasherDefault<FxHasher>>;

// ----- configuration, cluster view, outcomes -----------------------------------------------

/// What the manager needs to know about the cluster (the TaskScheduler's executor, host and
/// rack maps).
pub trait ClusterView {
    fn is_executor_alive(&self, exec: &str) -> bool;
    fn has_executors_alive_on_host(&self, host: &str) -> bool;
    fn rack_for_host(&self, host: &str) -> Option<String>;
    fn has_hosts_alive_on_rack(&self, rack: &str) -> bool;
    /// Cores per executor, if known (`spark.executor.cores`).
    fn executor_cores(&self) -> Option<u32>;
    /// When the executor started decommissioning, if it is (Spark's
    /// `getExecutorDecommissionState(exec).startTime`).
    fn decommission_start(&self, _exec: &str) -> Option<u64> {
        None
    }
}

/// `spark.speculation.*`.
#[derive(Clone, Debug, PartialEq)]
pub struct SpeculationConfig {
    /// `spark.speculation` (false).
    pub enabled: bool,
    /// `spark.speculation.interval` (100 ms): how often the caller should run the check.
    pub interval_ms: u64,
    /// `spark.speculation.multiplier` (3).
    pub multiplier: f64,
    /// `spark.speculation.quantile` (0.9).
    pub quantile: f64,
    /// `spark.speculation.minTaskRuntime` (100 ms).
    pub min_task_runtime_ms: u64,
    /// `spark.speculation.task.duration.threshold` (unset).
    pub duration_threshold_ms: Option<u64>,
    /// `spark.speculation.efficiency.enabled` (true).
    pub efficiency_enabled: bool,
    /// `spark.speculation.efficiency.processRateMultiplier` (0.75).
    pub process_rate_multiplier: f64,
    /// `spark.speculation.efficiency.longRunTaskFactor` (2).
    pub long_run_task_factor: f64,
}

impl Default for SpeculationConfig {
    fn default() -> Self {
        SpeculationConfig {
            enabled: false,
            interval_ms: 100,
            multiplier: 3.0,
            quantile: 0.9,
            min_task_runtime_ms: 100,
            duration_threshold_ms: None,
            efficiency_enabled: true,
            process_rate_multiplier: 0.75,
            long_run_task_factor: 2.0,
        }
    }
}

/// The settings a TaskSetManager reads (the TaskScheduler derives them from its own config).
#[derive(Clone, Debug, PartialEq)]
pub struct TsmConfig {
    /// `spark.task.maxFailures` (4).
    pub max_task_failures: u32,
    /// `spark.locality.wait.process` (3 s).
    pub locality_wait_process_ms: u64,
    /// `spark.locality.wait.node` (3 s).
    pub locality_wait_node_ms: u64,
    /// `spark.locality.wait.rack` (3 s).
    pub locality_wait_rack_ms: u64,
    /// `spark.locality.wait.legacyResetOnTaskLaunch` (false).
    pub legacy_locality_wait_reset: bool,
    pub speculation: SpeculationConfig,
    /// `spark.driver.maxResultSize` in bytes (1 GiB); 0 = unlimited.
    pub max_result_size: u64,
    /// `spark.shuffle.service.enabled` (false): map outputs survive their executor.
    pub external_shuffle_service: bool,
    /// `spark.executor.decommission.killInterval` (unset): how long after its decommission
    /// an executor is expected to be killed from outside; a task likely to outlive it is
    /// speculated.
    pub executor_decommission_kill_interval_ms: Option<u64>,
}

impl Default for TsmConfig {
    fn default() -> Self {
        TsmConfig {
            max_task_failures: 4,
            locality_wait_process_ms: 3000,
            locality_wait_node_ms: 3000,
            locality_wait_rack_ms: 3000,
            legacy_locality_wait_reset: false,
            speculation: SpeculationConfig::default(),
            max_result_size: 1 << 30,
            external_shuffle_service: false,
            executor_decommission_kill_interval_ms: None,
        }
    }
}

/// How an unsuccessful attempt ended (Spark's TaskState FAILED, KILLED or LOST). Only
/// `TaskInfo.failed` / `TaskInfo.killed` depend on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailedState {
    Failed,
    Killed,
    Lost,
}

impl FailedState {
    pub fn as_str(self) -> &'static str {
        match self {
            FailedState::Failed => "FAILED",
            FailedState::Killed => "KILLED",
            FailedState::Lost => "LOST",
        }
    }
}

/// What a call needs from its caller besides its own arguments: the cluster, the event sink
/// and the time.
pub struct Ctx<'a> {
    pub view: &'a dyn ClusterView,
    pub events: &'a mut Vec<SchedulerEvent>,
    pub now_ms: u64,
}

/// The answer to a successful task end.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SuccessOutcome {
    /// Other running attempts of the same index asked to stop (`KillTask` events, interrupt,
    /// reason [`KILL_REASON_ANOTHER_ATTEMPT_SUCCEEDED`]), newest attempt first: (tid, executor).
    pub kill_other_attempts: Vec<(u64, String)>,
    /// This attempt is the first success of its index.
    pub first_success: bool,
    /// The set just became zombie with nothing running (reported once per manager).
    pub finished_task_set: bool,
    /// The set was aborted (result size over `spark.driver.maxResultSize`).
    pub aborted: Option<String>,
    /// What the task's `TaskEnded` event says: `Success`, or `TaskKilled` when the result was
    /// refused; `None` when the update was ignored (unknown task or attempt already ended).
    pub end_reason: Option<TaskEndReason>,
}

/// The answer to a failed (or killed, or lost) task end.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FailureOutcome {
    /// The set was aborted with this message.
    pub aborted: Option<String>,
    /// The index was put back in the pending lists (it will run again).
    pub resubmitted: bool,
    /// See [`SuccessOutcome::finished_task_set`].
    pub finished_task_set: bool,
    /// The failure counted towards `spark.task.maxFailures`.
    pub counted: bool,
    /// Spark's `Lost task ... (<host> executor <id>): <reason>` line (empty when ignored).
    pub failure_reason: String,
    /// The update was ignored (unknown task or attempt already ended); no event was emitted.
    pub ignored: bool,
}

/// The answer to an executor loss.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LostOutcome {
    /// Finished map outputs lost with the executor, pending again (`Resubmitted` events):
    /// (index, tid of the attempt that had produced it).
    pub resubmitted: Vec<(u32, u64)>,
    /// The running attempts failed with `ExecutorLostFailure`, in task-id order.
    pub failed_running: Vec<(u64, TaskEndReason)>,
    /// The first abort among those failures.
    pub aborted: Option<String>,
    /// Some failure finished the set.
    pub finished_task_set: bool,
}

/// A running task the speculation check marked speculatable (a `SpeculativeTaskSubmitted`
/// event was emitted for its index).
#[derive(Clone, Debug, PartialEq)]
pub struct SpeculatableTask {
    pub index: u32,
    pub task_id: u64,
    pub runtime_ms: u64,
    pub threshold_ms: f64,
}

// ----- internal records --------------------------------------------------------------------

/// The task id an index has before its first attempt (the scheduler counts task ids up
/// from 0 and never reaches it).
const NO_ATTEMPT: u64 = u64::MAX;

/// Per index: copies running, whether some attempt succeeded, failures counted and its
/// first attempt (16 bytes an index; the later attempts of the few indices that run again
/// are in [`AttemptTable::later`]).
#[derive(Debug)]
struct IndexState {
    /// The first attempt's task id, or [`NO_ATTEMPT`].
    first_attempt: u64,
    num_failures: u32,
    copies_running: u16,
    successful: bool,
}

impl Default for IndexState {
    fn default() -> Self {
        IndexState {
            first_attempt: NO_ATTEMPT,
            num_failures: 0,
            copies_running: 0,
            successful: false,
        }
    }
}

impl IndexState {
    fn needs_launch(&self) -> bool {
        self.copies_running == 0 && !self.successful
    }
}

/// One attempt (Spark's TaskInfo, compact: the executor is a slot of the manager's executor
/// table; the TaskInfo record is built when an event needs it).
#[derive(Debug)]
struct Attempt {
    index: u32,
    attempt: u32,
    exec: u32,
    launch_time: u64,
    finish_time: u64,
    locality: TaskLocality,
    speculative: bool,
    failed: bool,
    killed: bool,
    finished: bool,
    /// The attempt itself ended in success.
    succeeded: bool,
    /// No RUNNING status update yet (Spark's `TaskInfo.launching`).
    launching: bool,
}

/// The manager's attempts by task id, in launch order: a vector of attempts and the runs of
/// consecutive task ids they were launched with. The scheduler hands out task ids counting
/// up, so a task set running alone has one run, and one interleaved with others a run per
/// stretch of launches: a lookup is a binary search over the runs, an insert an append, and
/// an attempt costs its own size (a hash map of a million attempts held about 120 MB at its
/// peak, its control bytes and free buckets included, twice that while it grew). A task id
/// that does not count up from the last one (only a caller numbering by hand does that) is
/// kept in a map beside.
#[derive(Debug, Default)]
struct AttemptTable {
    slots: Vec<Attempt>,
    /// (first task id, first slot, length) of each run, by first task id.
    runs: Vec<(u64, u32, u32)>,
    /// Task ids out of order, by task id; looked at first, so a repeated id answers with its
    /// latest attempt.
    out_of_order: FastMap<u64, u32>,
    /// Task ids of the attempts after the first, oldest first, by index.
    later: FastMap<u32, Vec<u64>>,
}

impl AttemptTable {
    /// Task ids of `index`'s attempts, oldest first (`first`: its first attempt's id).
    fn ids_of(&self, first: u64, index: u32) -> impl DoubleEndedIterator<Item = u64> + '_ {
        (first != NO_ATTEMPT)
            .then_some(first)
            .into_iter()
            .chain(self.later.get(&index).into_iter().flatten().copied())
    }

    fn slot_of(&self, tid: u64) -> Option<usize> {
        if let Some(&slot) = self.out_of_order.get(&tid) {
            return Some(slot as usize);
        }
        let pos = self.runs.partition_point(|&(first, _, _)| first <= tid);
        let &(first, slot, len) = self.runs.get(pos.checked_sub(1)?)?;
        let offset = tid - first;
        (offset < u64::from(len)).then(|| slot as usize + offset as usize)
    }

    fn get(&self, tid: &u64) -> Option<&Attempt> {
        self.slot_of(*tid).and_then(|s| self.slots.get(s))
    }

    fn get_mut(&mut self, tid: &u64) -> Option<&mut Attempt> {
        self.slot_of(*tid).and_then(|s| self.slots.get_mut(s))
    }

    fn insert(&mut self, tid: u64, attempt: Attempt) {
        let Ok(slot) = u32::try_from(self.slots.len()) else {
            return;
        };
        self.slots.push(attempt);
        match self.runs.last_mut() {
            Some((first, start, len)) => {
                let end = first.saturating_add(u64::from(*len));
                if tid == end && *start + *len == slot {
                    *len += 1;
                } else if tid >= end {
                    self.runs.push((tid, slot, 1));
                } else {
                    self.out_of_order.insert(tid, slot);
                }
            }
            None => self.runs.push((tid, slot, 1)),
        }
    }
}

/// An executor this manager launched on, and its attempts in launch order.
#[derive(Debug)]
struct ExecSlot {
    id: String,
    host: String,
    tids: Vec<u64>,
}

/// A stack of pending task indices (top = end, duplicates allowed, cleaned lazily) whose
/// bottom may be the range `start..end` pushed in reverse, as a new task set pushes all its
/// indices: the whole set costs nothing per task until it is popped (the list is, bottom to
/// top, `end - 1, ..., start`, then `stack`). Only the top of the range is ever taken: the
/// regular lists are only popped, and the speculative lists, whose dequeue skips entries,
/// never start with a range.
#[derive(Debug, Default)]
struct IndexStack {
    range: std::ops::Range<u32>,
    stack: Vec<u32>,
}

impl IndexStack {
    /// `end - 1, ..., 1, 0` (0 on top), as pushing `0..end` in reverse order makes.
    fn reversed_range(end: u32) -> Self {
        IndexStack {
            range: 0..end,
            stack: Vec::new(),
        }
    }

    fn is_empty(&self) -> bool {
        self.stack.is_empty() && self.range.is_empty()
    }

    fn push(&mut self, index: u32) {
        self.stack.push(index);
    }

    fn last(&self) -> Option<u32> {
        match self.stack.last() {
            Some(&i) => Some(i),
            None => (!self.range.is_empty()).then_some(self.range.start),
        }
    }

    fn pop(&mut self) -> Option<u32> {
        self.stack.pop().or_else(|| self.range.next())
    }

    /// Bottom to top (for tests).
    #[cfg(test)]
    fn to_vec(&self) -> Vec<u32> {
        self.range
            .clone()
            .rev()
            .chain(self.stack.iter().copied())
            .collect()
    }
}

/// Pending task indices by locality, each list an [`IndexStack`].
#[derive(Debug, Default)]
struct PendingTasks {
    for_executor: BTreeMap<String, IndexStack>,
    for_host: BTreeMap<String, IndexStack>,
    no_prefs: IndexStack,
    for_rack: BTreeMap<String, IndexStack>,
    all: IndexStack,
}

/// Pushes `index` on `map[key]` without allocating a key that already exists.
fn push_keyed(map: &mut BTreeMap<String, IndexStack>, key: &str, index: u32) {
    match map.get_mut(key) {
        Some(list) => list.push(index),
        None => {
            map.insert(
                key.to_string(),
                IndexStack {
                    range: 0..0,
                    stack: vec![index],
                },
            );
        }
    }
}

/// The median of successful durations (Spark's PercentileHeap at 0.5: the element at
/// position `len / 2` of the sorted values).
#[derive(Debug, Default)]
struct MedianHeap {
    below: BinaryHeap<u64>,
    above: BinaryHeap<Reverse<u64>>,
}

impl MedianHeap {
    fn len(&self) -> usize {
        self.below.len() + self.above.len()
    }

    fn median(&self) -> Option<u64> {
        self.above.peek().map(|r| r.0)
    }

    fn insert(&mut self, x: u64) {
        let Some(p) = self.median() else {
            self.above.push(Reverse(x));
            return;
        };
        // floor((len + 1) * 0.5) == ceil(len / 2)
        let grow_below = self.len().div_ceil(2) > self.below.len();
        if grow_below {
            if x < p {
                self.below.push(x);
            } else {
                self.above.push(Reverse(x));
                if let Some(Reverse(m)) = self.above.pop() {
                    self.below.push(m);
                }
            }
        } else if x < p {
            self.below.push(x);
            if let Some(m) = self.below.pop() {
                self.above.push(Reverse(m));
            }
        } else {
            self.above.push(Reverse(x));
        }
    }
}

/// Records-per-second bookkeeping for the speculation efficiency rule.
#[derive(Debug)]
struct ProcessRates {
    total_records: u64,
    total_run_time_ms: u64,
    average: f64,
    running: FastMap<u64, f64>,
}

impl ProcessRates {
    fn new() -> Self {
        ProcessRates {
            total_records: 0,
            total_run_time_ms: 0,
            average: f64::MAX,
            running: FastMap::default(),
        }
    }
}

/// Spark's task process rate: records per second of executor run time (0 when unknown).
fn process_rate(records: u64, run_time_ms: u64) -> f64 {
    if records > 0 && run_time_ms > 0 {
        records as f64 / (run_time_ms as f64 / 1000.0)
    } else {
        0.0
    }
}

/// Spark's `Utils.bytesToString`: binary units, one decimal, the unit chosen at twice its size.
pub fn bytes_to_string(size: u64) -> String {
    const UNITS: [(u32, &str); 6] = [
        (60, "EiB"),
        (50, "PiB"),
        (40, "TiB"),
        (30, "GiB"),
        (20, "MiB"),
        (10, "KiB"),
    ];
    let size = u128::from(size);
    for (shift, name) in UNITS {
        let unit = 1u128 << shift;
        if size >= 2 * unit {
            // One decimal, rounded half up.
            let tenths = (size * 20 + unit) / (2 * unit);
            return format!("{}.{} {}", tenths / 10, tenths % 10, name);
        }
    }
    format!("{size}.0 B")
}

/// Pops indices that no longer need a launch off the top of `list`; true if one remains.
fn list_has_launchable(list: &mut IndexStack, tasks: &[IndexState], work: &mut u64) -> bool {
    while let Some(i) = list.last() {
        *work += 1;
        if tasks.get(i as usize).is_some_and(IndexState::needs_launch) {
            return true;
        }
        list.pop();
    }
    false
}

/// Spark's `moreTasksToRunIn`: whether some list of the map still has a launchable task;
/// lists found empty on the way are dropped.
fn map_has_launchable(map: &mut BTreeMap<String, IndexStack>, tasks: &[IndexState], work: &mut u64) -> bool {
    let mut empty = Vec::new();
    let mut found = false;
    for (key, list) in map.iter_mut() {
        if list_has_launchable(list, tasks, work) {
            found = true;
            break;
        }
        empty.push(key.clone());
    }
    for key in empty {
        map.remove(&key);
    }
    found
}

/// What dequeuing from one list needs to see.
struct DequeueCtx<'a> {
    tasks: &'a [IndexState],
    /// Barrier tasks already picked in this round.
    barrier_pending: &'a FastSet<u32>,
    attempts: &'a AttemptTable,
    execs: &'a [ExecSlot],
    host: &'a str,
    speculative: bool,
}

impl DequeueCtx<'_> {
    fn attempted_on_host(&self, index: u32) -> bool {
        self.tasks.get(index as usize).is_some_and(|t| {
            self.attempts.ids_of(t.first_attempt, index).any(|tid| {
                self.attempts
                    .get(&tid)
                    .and_then(|a| self.execs.get(a.exec as usize))
                    .is_some_and(|e| e.host == self.host)
            })
        })
    }

    /// Takes the topmost usable index off `list`, dropping stale entries on the way. A
    /// speculative copy skips (and keeps) indices that already ran on the offered host.
    fn dequeue(&self, list: &mut IndexStack, work: &mut u64) -> Option<u32> {
        if self.speculative {
            // Skipped entries stay, so only an explicit stack will do: the speculative lists
            // are only ever pushed on.
            debug_assert!(list.range.is_empty());
            let mut pos = list.stack.len();
            while pos > 0 {
                pos -= 1;
                *work += 1;
                let Some(&index) = list.stack.get(pos) else {
                    continue;
                };
                if self.attempted_on_host(index) {
                    continue;
                }
                list.stack.remove(pos);
                if self.usable(index) {
                    return Some(index);
                }
            }
            return None;
        }
        while let Some(index) = list.pop() {
            *work += 1;
            if self.usable(index) {
                return Some(index);
            }
        }
        None
    }

    fn usable(&self, index: u32) -> bool {
        self.tasks.get(index as usize).is_some_and(|t| {
            !t.successful
                && ((t.copies_running == 0 && !self.barrier_pending.contains(&index))
                    || (self.speculative && t.copies_running == 1))
        })
    }
}

/// The valid locality levels of a task set, most local first, always ending with ANY.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LocalityLevels {
    levels: [TaskLocality; 5],
    len: usize,
}

impl LocalityLevels {
    fn any_only() -> Self {
        LocalityLevels {
            levels: [TaskLocality::Any; 5],
            len: 1,
        }
    }

    fn push(&mut self, level: TaskLocality) {
        if self.len < self.levels.len() {
            self.levels[self.len] = level;
            self.len += 1;
        }
    }

    pub fn as_slice(&self) -> &[TaskLocality] {
        &self.levels[..self.len]
    }
}

fn levels_to_string(levels: &[TaskLocality]) -> String {
    levels.iter().map(|l| l.as_str()).collect::<Vec<_>>().join(", ")
}

/// Each task index's RDD partition: the index itself (a job over all partitions, the common
/// case, costs nothing per task), or a list with its inverse sorted by partition (8 bytes a
/// task instead of a hash map's 16 to 18).
#[derive(Debug)]
enum PartitionIds {
    Identity(u32),
    List {
        by_index: Vec<u32>,
        /// (partition, index), sorted; a partition listed twice answers with its last index.
        sorted: Vec<(u32, u32)>,
    },
}

impl PartitionIds {
    fn new(ids: impl ExactSizeIterator<Item = u32> + Clone) -> Self {
        let n = ids.len() as u32;
        if ids.clone().enumerate().all(|(i, p)| p == i as u32) {
            return PartitionIds::Identity(n);
        }
        let by_index: Vec<u32> = ids.collect();
        let mut sorted: Vec<(u32, u32)> = by_index.iter().enumerate().map(|(i, &p)| (p, i as u32)).collect();
        sorted.sort_unstable();
        PartitionIds::List { by_index, sorted }
    }

    /// The partition of `index` (the index itself when out of range).
    fn partition_of(&self, index: u32) -> u32 {
        match self {
            PartitionIds::Identity(_) => index,
            PartitionIds::List { by_index, .. } => by_index.get(index as usize).copied().unwrap_or(index),
        }
    }

    /// The (last) index that computes `partition`.
    fn index_of(&self, partition: u32) -> Option<u32> {
        match self {
            PartitionIds::Identity(n) => (partition < *n).then_some(partition),
            PartitionIds::List { sorted, .. } => {
                let pos = sorted.partition_point(|&(p, _)| p <= partition);
                let &(p, index) = sorted.get(pos.checked_sub(1)?)?;
                (p == partition).then_some(index)
            }
        }
    }
}

// ----- the manager -------------------------------------------------------------------------

/// Spark's TaskSetManager for one stage attempt. See the module documentation.
pub struct TaskSetManager {
    stage_id: u32,
    stage_attempt: u32,
    job_id: u32,
    is_shuffle_map: bool,
    /// A barrier stage: its tasks launch together in one round of offers or not at all.
    is_barrier: bool,
    /// Barrier tasks picked in the current round of offers, not launched yet
    /// (`barrierPendingLaunchTasks`).
    barrier_pending: FastSet<u32>,
    /// When the "only partial tasks can be launched" line was last logged.
    last_resource_offer_fail_log_time: u64,
    config: TsmConfig,

    /// Each index's RDD partition.
    partitions: PartitionIds,
    /// Each index's preferred locations; empty when no task has any.
    prefs: Vec<Box<[TaskLocation]>>,
    binary: Arc<TaskBinary>,
    tasks: Vec<IndexState>,
    /// Rack of each preferred host, resolved once at construction.
    host_racks: FastMap<String, String>,
    attempts: AttemptTable,
    /// When attempts started fetching their results (the few that do), by task id.
    getting_result_times: FastMap<u64, u64>,
    /// The executors launched on (attempts refer to them by position).
    execs: Vec<ExecSlot>,
    exec_slots: FastMap<String, u32>,
    running: BTreeSet<u64>,
    killed_by_other_attempt: FastSet<u64>,
    tasks_successful: usize,
    /// Indices not successful with no copy running.
    unlaunched: usize,

    zombie: bool,
    abort_message: Option<String>,
    finish_reported: bool,

    pending: PendingTasks,
    pending_speculative: PendingTasks,
    speculatable: BTreeSet<u32>,
    durations: MedianHeap,
    rates: Option<ProcessRates>,
    min_finished_for_speculation: usize,
    tasks_fit_one_executor: bool,
    recent_exceptions: FastMap<String, (u32, u64)>,
    emitted_task_size_warning: bool,

    total_result_size: u64,
    calculated_tasks: u64,

    locality_levels: LocalityLevels,
    locality_waits: [u64; 5],
    current_locality_index: usize,
    last_locality_wait_reset: u64,

    /// Pending-list entries and map keys looked at (for the bounded-work test).
    work: u64,
    /// When the set was submitted (the stage attempt's submission time).
    submitted_ms: u64,
}

impl TaskSetManager {
    /// Builds the manager for `task_set`. All tasks go to the pending lists in reverse index
    /// order so the lowest index is taken first, and the valid locality levels are computed.
    pub fn new(task_set: TaskSet, config: TsmConfig, view: &dyn ClusterView, now_ms: u64) -> Self {
        let TaskSet {
            stage_id,
            stage_attempt_id,
            job_id,
            is_shuffle_map,
            is_barrier,
            mut tasks,
            binary,
            properties: _,
        } = task_set;
        tasks.truncate(u32::MAX as usize);
        let num_tasks = tasks.len();
        let partitions = PartitionIds::new(tasks.iter().map(|t| t.partition_id));
        let mut host_racks = FastMap::default();
        let mut no_rack = FastSet::default();
        for t in &tasks {
            for loc in &t.preferred_locations {
                let host = loc.host();
                if !host_racks.contains_key(host) && !no_rack.contains(host) {
                    match view.rack_for_host(host) {
                        Some(rack) => {
                            host_racks.insert(host.to_string(), rack);
                        }
                        None => {
                            no_rack.insert(host.to_string());
                        }
                    }
                }
            }
        }
        let prefs: Vec<Box<[TaskLocation]>> = if tasks.iter().any(|t| !t.preferred_locations.is_empty()) {
            tasks
                .into_iter()
                .map(|t| t.preferred_locations.into_boxed_slice())
                .collect()
        } else {
            Vec::new()
        };
        let spec = &config.speculation;
        let min_finished = ((spec.quantile * num_tasks as f64).floor() as usize).max(1);
        let slots = view.executor_cores().map_or(1, |c| c as usize);
        let rates = (spec.enabled && spec.efficiency_enabled).then(ProcessRates::new);
        let mut tsm = TaskSetManager {
            stage_id,
            stage_attempt: stage_attempt_id,
            job_id,
            is_shuffle_map,
            is_barrier,
            barrier_pending: FastSet::default(),
            last_resource_offer_fail_log_time: now_ms,
            config,
            partitions,
            prefs,
            binary,
            tasks: (0..num_tasks).map(|_| IndexState::default()).collect(),
            host_racks,
            // Room for each task's first attempt at once: grown by doubling, the table was
            // copied and its new pages faulted in on the driver's thread as the set launched
            // (4% of that thread at 100,000 tiny tasks a job, records at WARN); its final
            // size is the same.
            attempts: AttemptTable {
                slots: Vec::with_capacity(num_tasks),
                ..AttemptTable::default()
            },
            getting_result_times: FastMap::default(),
            execs: Vec::new(),
            exec_slots: FastMap::default(),
            running: BTreeSet::new(),
            killed_by_other_attempt: FastSet::default(),
            tasks_successful: 0,
            unlaunched: num_tasks,
            zombie: false,
            abort_message: None,
            finish_reported: false,
            pending: PendingTasks::default(),
            pending_speculative: PendingTasks::default(),
            speculatable: BTreeSet::new(),
            durations: MedianHeap::default(),
            rates,
            min_finished_for_speculation: min_finished,
            tasks_fit_one_executor: num_tasks <= slots,
            recent_exceptions: FastMap::default(),
            emitted_task_size_warning: false,
            total_result_size: 0,
            calculated_tasks: 0,
            locality_levels: LocalityLevels::any_only(),
            locality_waits: [0; 5],
            current_locality_index: 0,
            last_locality_wait_reset: now_ms,
            work: 0,
            submitted_ms: now_ms,
        };
        // Every index, pushed in reverse order so the lowest is taken first: ALL (and NO_PREF
        // when no task has a preference) as ranges, the keyed lists one push each.
        let n = num_tasks as u32;
        tsm.pending.all = IndexStack::reversed_range(n);
        if tsm.prefs.is_empty() {
            tsm.pending.no_prefs = IndexStack::reversed_range(n);
        } else {
            for i in (0..n).rev() {
                tsm.add_pending_task_locations(i, false);
            }
        }
        tsm.set_locality_levels(view);
        tsm
    }

    // ----- queries -------------------------------------------------------------------------

    pub fn stage_id(&self) -> u32 {
        self.stage_id
    }

    pub fn stage_attempt(&self) -> u32 {
        self.stage_attempt
    }

    /// The job that submitted the set: the FIFO priority.
    pub fn job_id(&self) -> u32 {
        self.job_id
    }

    /// FIFO order between task sets: priority (job id), then stage id.
    pub fn fifo_key(&self) -> (u32, u32) {
        (self.job_id, self.stage_id)
    }

    /// `<stage>.<attempt>`, as Spark names the task set in its logs.
    pub fn task_set_id(&self) -> String {
        format!("{}.{}", self.stage_id, self.stage_attempt)
    }

    pub fn is_shuffle_map(&self) -> bool {
        self.is_shuffle_map
    }

    /// A barrier stage's task set (Spark's `isBarrier`).
    pub fn is_barrier(&self) -> bool {
        self.is_barrier
    }

    pub fn num_tasks(&self) -> usize {
        self.tasks.len()
    }

    pub fn tasks_successful(&self) -> usize {
        self.tasks_successful
    }

    pub fn running_tasks(&self) -> usize {
        self.running.len()
    }

    /// When the set was submitted (milliseconds since the epoch).
    pub fn submission_time_ms(&self) -> u64 {
        self.submitted_ms
    }

    /// Running attempts, in task-id order.
    pub fn running_task_ids(&self) -> Vec<u64> {
        self.running.iter().copied().collect()
    }

    pub fn is_zombie(&self) -> bool {
        self.zombie
    }

    /// Zombie with nothing running: the scheduler can drop it (`taskSetFinished`).
    pub fn is_finished(&self) -> bool {
        self.zombie && self.running.is_empty()
    }

    /// The first abort message, if the set was aborted.
    pub fn abort_message(&self) -> Option<&str> {
        self.abort_message.as_deref()
    }

    /// Exact: some index still needs a launch, or a speculatable index still runs a single
    /// copy and has not succeeded (never for a zombie). Costs O(speculatable indices).
    pub fn has_pending_tasks(&self) -> bool {
        !self.zombie
            && (self.unlaunched > 0
                || self.speculatable.iter().any(|i| {
                    self.tasks
                        .get(*i as usize)
                        .is_some_and(|t| !t.successful && t.copies_running == 1)
                }))
    }

    /// Indices that still need a launch (not counting speculative copies).
    pub fn num_pending_tasks(&self) -> usize {
        if self.zombie {
            0
        } else {
            self.unlaunched
        }
    }

    /// Spark's `isSchedulable`: not zombie and the (lazily cleaned) pending lists are not empty.
    pub fn is_schedulable(&self) -> bool {
        !self.zombie && (!self.pending.all.is_empty() || !self.pending_speculative.all.is_empty())
    }

    /// Indices that still need a launch, ascending (scans all tasks: for inspection only).
    pub fn pending_task_indices(&self) -> Vec<u32> {
        if self.zombie {
            return Vec::new();
        }
        (0..self.tasks.len() as u32)
            .filter(|i| self.tasks.get(*i as usize).is_some_and(IndexState::needs_launch))
            .collect()
    }

    /// Indices currently marked speculatable and not yet copied.
    pub fn speculatable_indices(&self) -> Vec<u32> {
        self.speculatable.iter().copied().collect()
    }

    /// Whether some attempt of `index` succeeded (or it ended with a fetch failure).
    pub fn is_index_successful(&self, index: u32) -> bool {
        self.tasks.get(index as usize).is_some_and(|t| t.successful)
    }

    /// Spark's `someAttemptSucceeded(tid)`: the attempt's index is successful.
    pub fn some_attempt_succeeded(&self, tid: u64) -> bool {
        self.attempts
            .get(&tid)
            .is_some_and(|a| self.is_index_successful(a.index))
    }

    /// The valid locality levels, most local first; always ends with ANY.
    pub fn locality_levels(&self) -> LocalityLevels {
        self.locality_levels
    }

    /// The valid locality levels as a slice.
    pub fn my_locality_levels(&self) -> &[TaskLocality] {
        self.locality_levels.as_slice()
    }

    /// The wait (ms) at each of [`Self::my_locality_levels`].
    pub fn locality_waits(&self) -> &[u64] {
        &self.locality_waits[..self.locality_levels.len]
    }

    /// The level delay scheduling currently sits at.
    pub fn current_locality_level(&self) -> TaskLocality {
        self.level_at(self.current_locality_index)
    }

    /// The attempt's TaskInfo as it would be reported now.
    pub fn task_info(&self, tid: u64) -> Option<TaskInfo> {
        self.attempts.get(&tid).map(|a| self.info_of(tid, a))
    }

    /// `task <index>.<attempt> in stage <stage>.<attempt> (TID <tid>)`.
    pub fn task_name(&self, tid: u64) -> Option<String> {
        self.attempts.get(&tid).map(|a| self.name_of(tid, a).to_string())
    }

    /// Total bytes of results accepted so far and the number of results counted.
    pub fn result_size_accounting(&self) -> (u64, u64) {
        (self.total_result_size, self.calculated_tasks)
    }

    /// Pending-list entries and map keys examined so far (a cost counter for tests).
    pub fn work_counter(&self) -> u64 {
        self.work
    }

    // ----- locality --------------------------------------------------------------------------

    /// Recomputes the valid locality levels (after executors came or went), keeping the
    /// current level where possible and moving to a newly valid more-local level
    /// (SPARK-31837). A zombie keeps its levels.
    pub fn recompute_locality(&mut self, view: &dyn ClusterView) {
        if self.zombie {
            return;
        }
        let previous_index = self.current_locality_index;
        let previous_level = self.level_at(previous_index);
        let previous_levels = self.locality_levels;
        self.set_locality_levels(view);
        self.current_locality_index = self.locality_index(previous_level);
        if self.current_locality_index > previous_index {
            if let Some(new_level) = self
                .locality_levels
                .as_slice()
                .iter()
                .find(|l| !previous_levels.as_slice().contains(l))
                .copied()
            {
                self.current_locality_index = self.locality_index(new_level);
            }
        }
    }

    /// An executor joined the cluster (the scheduler's `newExecAvail`).
    pub fn executor_added(&mut self, view: &dyn ClusterView) {
        self.recompute_locality(view);
    }

    /// An executor started decommissioning: it no longer counts for locality.
    pub fn executor_decommission(&mut self, view: &dyn ClusterView) {
        self.recompute_locality(view);
    }

    /// Restarts the locality wait at `now_ms` and, given the most local level launched in the
    /// last round, moves back to it (the scheduler's non-legacy reset rule).
    pub fn reset_delay_schedule_timer(&mut self, min_locality: Option<TaskLocality>, now_ms: u64) {
        self.last_locality_wait_reset = now_ms;
        if let Some(level) = min_locality {
            self.current_locality_index = self.locality_index(level);
        }
    }

    // ----- offers ----------------------------------------------------------------------------

    /// Spark's `resourceOffer`: offers one executor slot of `cpus` cores. `max_locality` is
    /// the level the scheduler is trying (NO_PREF bypasses delay scheduling); `next_task_id`
    /// is the scheduler's task-id counter, advanced on launch. At most one task is launched
    /// (a `TaskStarted` event goes to `ctx.events`). The flag is Spark's delay-schedule reject:
    /// nothing launched although the offer allowed ANY and tasks are pending.
    pub fn resource_offer(
        &mut self,
        exec_id: &str,
        host: &str,
        max_locality: TaskLocality,
        cpus: u32,
        next_task_id: &mut u64,
        ctx: &mut Ctx<'_>,
    ) -> (Option<TaskLaunch>, bool) {
        if self.zombie {
            return (None, false);
        }
        let now_ms = ctx.now_ms;
        let allowed = if max_locality == TaskLocality::NoPref {
            max_locality
        } else {
            self.allowed_locality_level(now_ms).min(max_locality)
        };
        let launched = match self.dequeue_task(exec_id, host, allowed, ctx.view) {
            Some((index, locality, speculative)) => {
                if self.config.legacy_locality_wait_reset && max_locality != TaskLocality::NoPref {
                    self.reset_delay_schedule_timer(Some(locality), now_ms);
                }
                Some(self.prepare_launching_task(
                    exec_id,
                    host,
                    (index, locality, speculative),
                    cpus,
                    next_task_id,
                    ctx,
                ))
            }
            None => None,
        };
        let has_pending = !self.pending.all.is_empty() || !self.pending_speculative.all.is_empty();
        let delay_rejected = launched.is_none() && max_locality == TaskLocality::Any && has_pending;
        (launched, delay_rejected)
    }

    /// Spark's `resourceOffer` for a barrier task set: the task found for the offer is not
    /// launched but noted (`barrierPendingLaunchTasks`); the scheduler launches them all once
    /// every task of the set has one in the same round ([`Self::launch_barrier_task`]), or
    /// puts them back ([`Self::revert_barrier_tasks`]). Answers the index and its locality,
    /// and the delay-schedule reject flag.
    pub fn barrier_resource_offer(
        &mut self,
        exec_id: &str,
        host: &str,
        max_locality: TaskLocality,
        view: &dyn ClusterView,
        now_ms: u64,
    ) -> (Option<(u32, TaskLocality)>, bool) {
        if self.zombie {
            return (None, false);
        }
        let allowed = if max_locality == TaskLocality::NoPref {
            max_locality
        } else {
            self.allowed_locality_level(now_ms).min(max_locality)
        };
        let picked = self
            .dequeue_task(exec_id, host, allowed, view)
            .map(|(index, locality, _)| {
                if self.config.legacy_locality_wait_reset && max_locality != TaskLocality::NoPref {
                    self.reset_delay_schedule_timer(Some(locality), now_ms);
                }
                self.barrier_pending.insert(index);
                (index, locality)
            });
        let has_pending = !self.pending.all.is_empty() || !self.pending_speculative.all.is_empty();
        let delay_rejected = picked.is_none() && max_locality == TaskLocality::Any && has_pending;
        (picked, delay_rejected)
    }

    /// Launches a barrier task picked in this round (every task of the set was).
    pub fn launch_barrier_task(
        &mut self,
        exec_id: &str,
        host: &str,
        (index, locality): (u32, TaskLocality),
        cpus: u32,
        next_task_id: &mut u64,
        ctx: &mut Ctx<'_>,
    ) -> TaskLaunch {
        self.barrier_pending.remove(&index);
        self.prepare_launching_task(exec_id, host, (index, locality, false), cpus, next_task_id, ctx)
    }

    /// Not every barrier task got an offer this round: the picked ones go back to the
    /// pending lists (logged at most once a minute, from the set's creation on).
    pub fn revert_barrier_tasks(&mut self, now_ms: u64) {
        if now_ms.saturating_sub(self.last_resource_offer_fail_log_time) > BARRIER_LOGGING_INTERVAL_MS {
            tracing::info!(
                stage_id = self.stage_id,
                stage_attempt = self.stage_attempt,
                "Releasing the assigned resource offers since only partial tasks can be launched. Waiting for later round resource offers."
            );
            self.last_resource_offer_fail_log_time = now_ms;
        }
        let picked: Vec<u32> = self.barrier_pending.drain().collect();
        let mut picked = picked;
        picked.sort_unstable();
        for index in picked.into_iter().rev() {
            self.add_pending_task(index, false);
        }
    }

    /// Forgets the barrier tasks picked this round (after an abort).
    pub fn clear_barrier_pending(&mut self) {
        self.barrier_pending.clear();
    }

    /// The executor reported the attempt RUNNING (Spark's `launchSucceeded`): from now on an
    /// executor loss blamed on the app counts against it.
    pub fn mark_task_running(&mut self, tid: u64) {
        if let Some(a) = self.attempts.get_mut(&tid) {
            a.launching = false;
        }
    }

    /// The result of the attempt is being fetched from a block manager.
    pub fn task_getting_result(&mut self, tid: u64, now_ms: u64) {
        if self.attempts.get(&tid).is_some() {
            self.getting_result_times.insert(tid, now_ms);
        }
    }

    /// A running attempt's progress from an executor heartbeat (records read and run time),
    /// for the speculation efficiency rule.
    pub fn update_running_task_process_rate(&mut self, tid: u64, records_read: u64, run_time_ms: u64) {
        if let Some(rates) = self.rates.as_mut() {
            rates.running.insert(tid, process_rate(records_read, run_time_ms));
        }
    }

    // ----- task ends -------------------------------------------------------------------------

    /// An attempt finished successfully with a result of `result_size` bytes (Spark's
    /// `canFetchMoreResults` then `handleSuccessfulTask`); its CompletionEvent carries
    /// `result`.
    pub fn handle_successful_task(
        &mut self,
        tid: u64,
        result_size: u64,
        result: Option<TaskResult>,
        ctx: &mut Ctx<'_>,
    ) -> SuccessOutcome {
        self.handle_successful_task_with_metrics(tid, result_size, result, 0, 0, ctx)
    }

    /// As [`Self::handle_successful_task`], with the attempt's records read and executor run
    /// time for the speculation efficiency rule's average process rate.
    pub fn handle_successful_task_with_metrics(
        &mut self,
        tid: u64,
        result_size: u64,
        result: Option<TaskResult>,
        records_read: u64,
        run_time_ms: u64,
        ctx: &mut Ctx<'_>,
    ) -> SuccessOutcome {
        let (index, launch_time, already_finished) = match self.attempts.get(&tid) {
            Some(a) => (a.index, a.launch_time, a.finished),
            None => return SuccessOutcome::default(),
        };
        if already_finished {
            return SuccessOutcome::default();
        }
        // The status update took it off the running set before the result was looked at.
        self.running.remove(&tid);

        // canFetchMoreResults
        self.total_result_size = self.total_result_size.saturating_add(result_size);
        self.calculated_tasks = self.calculated_tasks.saturating_add(1);
        let limit = self.config.max_result_size;
        if !self.is_shuffle_map && limit > 0 && self.total_result_size > limit {
            let message = format!(
                "Total size of serialized results of {} tasks ({}) is bigger than {} ({})",
                self.calculated_tasks,
                bytes_to_string(self.total_result_size),
                MAX_RESULT_SIZE_KEY,
                bytes_to_string(limit)
            );
            tracing::error!(
                stage_id = self.stage_id,
                stage_attempt = self.stage_attempt,
                "{message}"
            );
            let mut finished = self.abort_internal(message.clone(), ctx.events);
            let reason = TaskEndReason::TaskKilled {
                reason: KILLED_RESULT_TOO_BIG.into(),
            };
            let failed = self.handle_failed_task(tid, FailedState::Killed, reason.clone(), ctx);
            finished |= failed.finished_task_set;
            return SuccessOutcome {
                kill_other_attempts: Vec::new(),
                first_success: false,
                finished_task_set: finished,
                aborted: Some(message),
                end_reason: Some(reason),
            };
        }

        let index_successful = self.is_index_successful(index);
        if index_successful && self.killed_by_other_attempt.contains(&tid) {
            // Undo the accounting: this result is discarded.
            self.calculated_tasks = self.calculated_tasks.saturating_sub(1);
            self.total_result_size = self.total_result_size.saturating_sub(result_size);
            let reason = TaskEndReason::TaskKilled {
                reason: KILLED_DID_NOT_COMMIT.into(),
            };
            let failed = self.handle_failed_task(tid, FailedState::Killed, reason.clone(), ctx);
            return SuccessOutcome {
                kill_other_attempts: Vec::new(),
                first_success: false,
                finished_task_set: failed.finished_task_set,
                aborted: failed.aborted,
                end_reason: Some(reason),
            };
        }

        let now_ms = ctx.now_ms;
        if let Some(a) = self.attempts.get_mut(&tid) {
            a.finished = true;
            a.succeeded = true;
            a.finish_time = now_ms;
        }
        if self.config.speculation.enabled {
            self.durations.insert(now_ms.saturating_sub(launch_time));
            if let Some(rates) = self.rates.as_mut() {
                rates.total_records = rates.total_records.saturating_add(records_read);
                rates.total_run_time_ms = rates.total_run_time_ms.saturating_add(run_time_ms);
                if rates.total_records > 0 && rates.total_run_time_ms > 0 {
                    rates.average = process_rate(rates.total_records, rates.total_run_time_ms);
                }
                rates.running.remove(&tid);
            }
        }

        // Kill the other running attempts of the index, newest first.
        let mut kill_other_attempts = Vec::new();
        if let Some(t) = self.tasks.get(index as usize) {
            for other in self.attempts.ids_of(t.first_attempt, index).rev() {
                if let Some(a) = self.attempts.get(&other) {
                    if !a.finished {
                        kill_other_attempts.push((other, self.exec_of(a).0.to_string()));
                    }
                }
            }
        }
        if !kill_other_attempts.is_empty() {
            let (winner_attempt, winner_host) = self
                .attempts
                .get(&tid)
                .map(|a| (a.attempt, self.exec_of(a).1.to_string()))
                .unwrap_or_default();
            for (other, exec) in &kill_other_attempts {
                self.killed_by_other_attempt.insert(*other);
                if let Some(a) = self.attempts.get(other) {
                    let (_, host) = self.exec_of(a);
                    tracing::info!(
                        stage_id = self.stage_id,
                        stage_attempt = self.stage_attempt,
                        task_id = *other,
                        index,
                        executor_id = %exec,
                        host,
                        "Killing attempt {} for {} on {} as the attempt {} succeeded on {}",
                        a.attempt,
                        self.name_of(*other, a),
                        host,
                        winner_attempt,
                        winner_host
                    );
                }
                ctx.events.push(SchedulerEvent::KillTask(KillTask {
                    task_id: *other,
                    executor_id: exec.clone(),
                    interrupt_thread: true,
                    reason: KILL_REASON_ANOTHER_ATTEMPT_SUCCEEDED.into(),
                }));
            }
        }

        let first_success = !index_successful;
        if first_success {
            self.update_index(index, |t| {
                t.successful = true;
                t.num_failures = 0;
            });
            self.tasks_successful += 1;
            if let Some(a) = self.attempts.get(&tid) {
                let (exec, host) = self.exec_of(a);
                tracing::info!(
                    stage_id = self.stage_id,
                    stage_attempt = self.stage_attempt,
                    task_id = tid,
                    index,
                    executor_id = exec,
                    host,
                    "Finished {} in {} ms on {host} (executor {exec}) ({}/{})",
                    self.name_of(tid, a),
                    now_ms.saturating_sub(launch_time),
                    self.tasks_successful,
                    self.tasks.len()
                );
            }
            if self.tasks_successful == self.tasks.len() {
                self.zombie = true;
            }
        } else if let Some(a) = self.attempts.get(&tid) {
            tracing::info!(
                stage_id = self.stage_id,
                stage_attempt = self.stage_attempt,
                task_id = tid,
                index,
                "Ignoring task-finished event for {} because it has already completed successfully",
                self.name_of(tid, a)
            );
        }
        self.emit_task_ended(tid, TaskEndReason::Success, result, ctx.events);
        SuccessOutcome {
            kill_other_attempts,
            first_success,
            finished_task_set: self.maybe_finish_task_set(),
            aborted: None,
            end_reason: Some(TaskEndReason::Success),
        }
    }

    /// Spark's `handleFailedTask`: an attempt ended without success. Counts the failure when
    /// the reason does, aborts the set at `max_task_failures`, and otherwise puts the index
    /// back in the pending lists unless another attempt succeeded.
    pub fn handle_failed_task(
        &mut self,
        tid: u64,
        state: FailedState,
        reason: TaskEndReason,
        ctx: &mut Ctx<'_>,
    ) -> FailureOutcome {
        let ignored = FailureOutcome {
            ignored: true,
            ..FailureOutcome::default()
        };
        let Some(a) = self.attempts.get_mut(&tid) else {
            return ignored;
        };
        if a.finished {
            return ignored;
        }
        a.finished = true;
        a.finish_time = ctx.now_ms;
        match state {
            FailedState::Failed => a.failed = true,
            FailedState::Killed => a.killed = true,
            FailedState::Lost => {}
        }
        let index = a.index;
        self.running.remove(&tid);
        if let Some(rates) = self.rates.as_mut() {
            rates.running.remove(&tid);
        }
        self.update_index(index, |t| t.copies_running = t.copies_running.saturating_sub(1));

        let (task_name, host, exec, attempt) = match self.attempts.get(&tid) {
            Some(a) => {
                let (exec, host) = self.exec_of(a);
                (
                    self.name_of(tid, a),
                    host.to_string(),
                    exec.to_string(),
                    a.attempt,
                )
            }
            None => return ignored,
        };
        let failure_reason = format!(
            "Lost {task_name} ({host} executor {exec}): {}",
            reason.error_string()
        );
        let mut outcome = FailureOutcome {
            failure_reason: failure_reason.clone(),
            ..FailureOutcome::default()
        };
        let counts = reason.counts_towards_task_failures();

        macro_rules! log_lost {
            ($lvl:ident, $($arg:tt)+) => {
                tracing::$lvl!(
                    stage_id = self.stage_id,
                    stage_attempt = self.stage_attempt,
                    task_id = tid,
                    index,
                    executor_id = %exec,
                    host = %host,
                    $($arg)+
                )
            };
        }

        let mut no_retry = None;
        match &reason {
            TaskEndReason::FetchFailed { .. } => {
                log_lost!(warn, "{failure_reason}");
                if !self.is_index_successful(index) {
                    self.update_index(index, |t| t.successful = true);
                    self.tasks_successful += 1;
                }
                self.zombie = true;
            }
            TaskEndReason::ExceptionFailure {
                class_name,
                description,
                ..
            } => {
                if class_name == NOT_SERIALIZABLE_CLASS {
                    log_lost!(
                        error,
                        "{task_name} had a not serializable result: {description}; not retrying"
                    );
                    no_retry = Some(format!(
                        "{task_name} had a not serializable result: {description}"
                    ));
                } else if class_name == OUTPUT_EXISTS_CLASS {
                    log_lost!(
                        error,
                        "Task {index}.{attempt} in stage {}.{} (TID {tid}) can not write to output file: \
                         {description}; not retrying",
                        self.stage_id,
                        self.stage_attempt
                    );
                    no_retry = Some(format!(
                        "Task {index}.{attempt} in stage {}.{} (TID {tid}) can not write to output file: \
                         {description}",
                        self.stage_id, self.stage_attempt
                    ));
                } else {
                    // Repeated exceptions are printed in full at most every interval.
                    let now = ctx.now_ms;
                    let (print_full, dup_count) = match self.recent_exceptions.get_mut(description.as_str()) {
                        Some((count, printed)) => {
                            if now.saturating_sub(*printed) > EXCEPTION_PRINT_INTERVAL_MS {
                                *count = 0;
                                *printed = now;
                                (true, 0)
                            } else {
                                *count += 1;
                                (false, *count)
                            }
                        }
                        None => {
                            self.recent_exceptions.insert(description.clone(), (0, now));
                            (true, 0)
                        }
                    };
                    if print_full {
                        log_lost!(warn, "{failure_reason}");
                    } else {
                        log_lost!(
                            info,
                            "Lost {task_name} on {host}, executor {exec}: {class_name} ({description}) \
                             [duplicate {dup_count}]"
                        );
                    }
                }
            }
            TaskEndReason::ExecutorLostFailure {
                exit_caused_by_app: false,
                ..
            } => {
                log_lost!(
                    info,
                    "{task_name} failed because while it was being computed, its executor exited for a \
                     reason unrelated to the task. Not counting this failure towards the maximum number \
                     of failures for the task."
                );
            }
            _ => log_lost!(warn, "{failure_reason}"),
        }

        // One failed task fails a barrier stage attempt: none of its tasks runs again here
        // (the DAGScheduler retries the whole stage).
        if self.is_barrier {
            self.zombie = true;
        }

        self.emit_task_ended(tid, reason, None, ctx.events);

        if let Some(message) = no_retry {
            outcome.finished_task_set = self.abort_internal(message.clone(), ctx.events);
            outcome.aborted = Some(message);
            return outcome;
        }

        if !self.zombie && counts {
            outcome.counted = true;
            let mut failures = 0;
            self.update_index(index, |t| {
                t.num_failures = t.num_failures.saturating_add(1);
                failures = t.num_failures;
            });
            if failures >= self.config.max_task_failures {
                tracing::error!(
                    stage_id = self.stage_id,
                    stage_attempt = self.stage_attempt,
                    index,
                    "Task {index} in stage {}.{} failed {} times; aborting job",
                    self.stage_id,
                    self.stage_attempt,
                    self.config.max_task_failures
                );
                let message = format!(
                    "Task {index} in stage {}.{} failed {} times, most recent failure: {failure_reason}\n\
                     Driver stacktrace:",
                    self.stage_id, self.stage_attempt, self.config.max_task_failures
                );
                outcome.finished_task_set = self.abort_internal(message.clone(), ctx.events);
                outcome.aborted = Some(message);
                return outcome;
            }
        }

        if self.is_index_successful(index) {
            tracing::info!(
                stage_id = self.stage_id,
                stage_attempt = self.stage_attempt,
                task_id = tid,
                index,
                "{task_name} failed, but the task will not be re-executed (either because the task failed \
                 with a shuffle data fetch failure, so the previous stage needs to be re-run, or because a \
                 different copy of the task has already succeeded)."
            );
        } else if !self.zombie {
            self.add_pending_task(index, false);
            outcome.resubmitted = true;
        }
        outcome.finished_task_set = self.maybe_finish_task_set();
        outcome
    }

    /// Another attempt of this stage finished `partition`: count it as successful here.
    /// Returns whether the set finished.
    pub fn mark_partition_completed(&mut self, partition: u32) -> bool {
        let Some(index) = self.partitions.index_of(partition) else {
            return false;
        };
        if self.is_index_successful(index) {
            return false;
        }
        self.update_index(index, |t| {
            t.successful = true;
            t.num_failures = 0;
        });
        self.tasks_successful += 1;
        if self.tasks_successful == self.tasks.len() {
            self.zombie = true;
        }
        self.maybe_finish_task_set()
    }

    /// Spark's `abort`: no more launches; a `TaskSetFailed` event carries `message`.
    /// Returns whether the set finished (nothing left running).
    pub fn abort(&mut self, message: &str, events: &mut Vec<SchedulerEvent>) -> bool {
        self.abort_internal(message.to_string(), events)
    }

    /// Stops launching without reporting a failure (Spark's `suspend`, used when the
    /// DAGScheduler already knows). Returns whether the set finished.
    pub fn suspend(&mut self) -> bool {
        self.zombie = true;
        self.maybe_finish_task_set()
    }

    /// A newer attempt of the stage was submitted: this one launches nothing more (Spark sets
    /// `isZombie` directly, without finishing the set).
    pub fn mark_zombie(&mut self) {
        self.zombie = true;
    }

    /// Spark's `executorLost` (the scheduler never passes `LossReasonPending`: task sets hear
    /// of a loss only once its reason is known).
    ///
    /// For a shuffle-map set without an external shuffle service (or on a decommission) and
    /// not zombie, every successful finished attempt on the executor is undone and its index
    /// pending again (a `TaskEnded(Resubmitted)` event each). Every running attempt there
    /// fails with `ExecutorLostFailure`, blamed on the app when the reason is and the attempt
    /// had reported RUNNING. Then the locality levels are recomputed.
    pub fn executor_lost(
        &mut self,
        exec_id: &str,
        _host: &str,
        reason: &ExecutorLossReason,
        ctx: &mut Ctx<'_>,
    ) -> LostOutcome {
        let mut outcome = LostOutcome::default();
        if *reason == ExecutorLossReason::LossReasonPending {
            return outcome;
        }
        let tids = match self.exec_slots.get(exec_id) {
            Some(&slot) => self
                .execs
                .get_mut(slot as usize)
                .map(|e| std::mem::take(&mut e.tids))
                .unwrap_or_default(),
            None => Vec::new(),
        };
        let decommission = matches!(reason, ExecutorLossReason::ExecutorDecommission { .. });
        let maybe_output_loss =
            self.is_shuffle_map && (decommission || !self.config.external_shuffle_service);

        if maybe_output_loss && !self.zombie {
            for &tid in &tids {
                self.work += 1;
                let Some(a) = self.attempts.get(&tid) else {
                    continue;
                };
                let index = a.index;
                if a.succeeded
                    && self.is_index_successful(index)
                    && !self.killed_by_other_attempt.contains(&tid)
                {
                    self.update_index(index, |t| {
                        t.successful = false;
                        t.copies_running = t.copies_running.saturating_sub(1);
                    });
                    self.tasks_successful = self.tasks_successful.saturating_sub(1);
                    self.add_pending_task(index, false);
                    self.emit_task_ended(tid, TaskEndReason::Resubmitted, None, ctx.events);
                    outcome.resubmitted.push((index, tid));
                }
            }
        }

        let caused_by_app = reason.caused_by_app();
        let reason_text = reason.to_string();
        for &tid in &tids {
            let Some(a) = self.attempts.get(&tid) else {
                continue;
            };
            if a.finished {
                continue;
            }
            let end = TaskEndReason::ExecutorLostFailure {
                executor_id: self.exec_of(a).0.to_string(),
                exit_caused_by_app: caused_by_app && !a.launching,
                reason: Some(reason_text.clone()),
            };
            let failed = self.handle_failed_task(tid, FailedState::Failed, end.clone(), ctx);
            if outcome.aborted.is_none() {
                outcome.aborted.clone_from(&failed.aborted);
            }
            outcome.finished_task_set |= failed.finished_task_set;
            outcome.failed_running.push((tid, end));
        }
        self.recompute_locality(ctx.view);
        outcome
    }

    // ----- speculation -----------------------------------------------------------------------

    /// The periodic speculation check (every `spark.speculation.interval`); `min_time_ms` is
    /// `spark.speculation.minTaskRuntime`. Marks slow running tasks speculatable (a
    /// `SpeculativeTaskSubmitted` event each) so an offer on another host can launch a copy.
    /// Nothing happens unless speculation is enabled.
    pub fn check_speculatable_tasks(&mut self, min_time_ms: u64, ctx: &mut Ctx<'_>) -> Vec<SpeculatableTask> {
        let spec = &self.config.speculation;
        let threshold_ms = spec.duration_threshold_ms.filter(|t| *t > 0);
        if !spec.enabled
            || self.zombie
            || self.is_barrier
            || (self.tasks.len() == 1 && threshold_ms.is_none())
        {
            return Vec::new();
        }
        if self.durations.len() >= self.min_finished_for_speculation {
            let median = self.durations.median().unwrap_or(0) as f64;
            let threshold = (spec.multiplier * median).max(min_time_ms as f64);
            self.mark_speculatable(threshold, false, ctx)
        } else if let (Some(threshold), true) = (threshold_ms, self.tasks_fit_one_executor) {
            self.mark_speculatable(threshold as f64, true, ctx)
        } else {
            Vec::new()
        }
    }

    fn mark_speculatable(
        &mut self,
        threshold: f64,
        customized: bool,
        ctx: &mut Ctx<'_>,
    ) -> Vec<SpeculatableTask> {
        let long_run_factor = self.config.speculation.long_run_task_factor;
        let rate_multiplier = self.config.speculation.process_rate_multiplier;
        let mut found = Vec::new();
        let running: Vec<u64> = self.running.iter().copied().collect();
        for tid in running {
            self.work += 1;
            let Some(a) = self.attempts.get(&tid) else {
                continue;
            };
            let index = a.index;
            let launch_time = a.launch_time;
            let Some(t) = self.tasks.get(index as usize) else {
                continue;
            };
            if t.successful || t.copies_running != 1 || self.speculatable.contains(&index) {
                continue;
            }
            let runtime = ctx.now_ms.saturating_sub(launch_time);
            let may_speculate = match (&self.rates, customized) {
                (Some(rates), false) => {
                    let running_rate = rates.running.get(&tid).copied().unwrap_or(0.0);
                    runtime as f64 > long_run_factor * threshold
                        || running_rate < rates.average * rate_multiplier
                }
                _ => true,
            };
            // A task on a decommissioning executor that would, at the median duration, end
            // after the executor is expected to be killed is copied at once.
            let outlives_decommission = !customized
                && match (
                    self.config.executor_decommission_kill_interval_ms,
                    self.durations.median(),
                    ctx.view.decommission_start(self.exec_of(a).0),
                ) {
                    (Some(kill_interval), Some(median), Some(start)) => {
                        start.saturating_add(kill_interval) < launch_time.saturating_add(median)
                    }
                    _ => false,
                };
            if (runtime as f64 > threshold && may_speculate) || outlives_decommission {
                let host = self.exec_of(a).1.to_string();
                self.add_pending_task(index, true);
                tracing::info!(
                    event = "task_speculatable",
                    stage_id = self.stage_id,
                    stage_attempt = self.stage_attempt,
                    task_index = index,
                    task_id = tid,
                    runtime_ms = runtime,
                    threshold_ms = threshold as u64,
                    host = %host,
                    "Marking task {index} in stage {}.{} (on {host}) as speculatable because it ran more than \
                     {threshold:.0} ms({} speculatable tasks in this taskset now)",
                    self.stage_id,
                    self.stage_attempt,
                    self.speculatable.len() + 1
                );
                self.speculatable.insert(index);
                ctx.events
                    .push(SchedulerEvent::Dag(DagEvent::SpeculativeTaskSubmitted {
                        stage_id: self.stage_id,
                        stage_attempt_id: self.stage_attempt,
                        index,
                    }));
                found.push(SpeculatableTask {
                    index,
                    task_id: tid,
                    runtime_ms: runtime,
                    threshold_ms: threshold,
                });
            }
        }
        found
    }

    // ----- internals -------------------------------------------------------------------------

    /// The attempt's name as Spark's records give it, formatted where it is written (a
    /// record's message) rather than into a string of its own.
    fn name_of(&self, tid: u64, a: &Attempt) -> TaskName {
        TaskName {
            index: a.index,
            attempt: a.attempt,
            stage: self.stage_id,
            stage_attempt: self.stage_attempt,
            tid,
        }
    }

    /// The attempt's executor id and host.
    fn exec_of(&self, a: &Attempt) -> (&str, &str) {
        self.execs
            .get(a.exec as usize)
            .map_or(("", ""), |e| (e.id.as_str(), e.host.as_str()))
    }

    fn partition_of(&self, index: u32) -> u32 {
        self.partitions.partition_of(index)
    }

    /// Spark's TaskInfo for the attempt, as it stands.
    fn info_of(&self, tid: u64, a: &Attempt) -> TaskInfo {
        let (exec, host) = self.exec_of(a);
        TaskInfo {
            task_id: tid,
            index: a.index,
            attempt: a.attempt,
            partition_id: self.partition_of(a.index),
            launch_time: a.launch_time,
            executor_id: exec.to_string(),
            host: host.to_string(),
            locality: a.locality,
            speculative: a.speculative,
            getting_result_time: self.getting_result_times.get(&tid).copied().unwrap_or(0),
            finish_time: a.finish_time,
            failed: a.failed,
            killed: a.killed,
        }
    }

    /// dagScheduler.taskEnded: the attempt's CompletionEvent, with its result if it
    /// succeeded.
    fn emit_task_ended(
        &self,
        tid: u64,
        reason: TaskEndReason,
        result: Option<TaskResult>,
        events: &mut Vec<SchedulerEvent>,
    ) {
        if let Some(a) = self.attempts.get(&tid) {
            events.push(SchedulerEvent::Dag(DagEvent::CompletionEvent(CompletionEvent {
                task_id: tid,
                stage_id: self.stage_id,
                stage_attempt_id: self.stage_attempt,
                index: a.index,
                partition_id: self.partition_of(a.index),
                is_shuffle_map: self.is_shuffle_map,
                reason,
                task_info: self.info_of(tid, a),
                result,
                fetch_source_decommissioned: false,
            })));
        }
    }

    /// The slot of executor `exec_id` on `host` in the executor table (added if new).
    fn exec_slot(&mut self, exec_id: &str, host: &str) -> u32 {
        if let Some(&slot) = self.exec_slots.get(exec_id) {
            if self.execs.get(slot as usize).is_some_and(|e| e.host == host) {
                return slot;
            }
        }
        let slot = u32::try_from(self.execs.len()).unwrap_or(u32::MAX);
        self.execs.push(ExecSlot {
            id: exec_id.to_string(),
            host: host.to_string(),
            tids: Vec::new(),
        });
        self.exec_slots.insert(exec_id.to_string(), slot);
        slot
    }

    fn level_at(&self, i: usize) -> TaskLocality {
        self.locality_levels
            .as_slice()
            .get(i)
            .copied()
            .unwrap_or(TaskLocality::Any)
    }

    fn locality_wait(&self, level: TaskLocality) -> u64 {
        if self.config.legacy_locality_wait_reset && self.is_barrier {
            return 0;
        }
        match level {
            TaskLocality::ProcessLocal => self.config.locality_wait_process_ms,
            TaskLocality::NodeLocal => self.config.locality_wait_node_ms,
            TaskLocality::RackLocal => self.config.locality_wait_rack_ms,
            TaskLocality::NoPref | TaskLocality::Any => 0,
        }
    }

    /// The position of the first valid level at least as far as `level` (ANY if none).
    fn locality_index(&self, level: TaskLocality) -> usize {
        let levels = self.locality_levels.as_slice();
        levels
            .iter()
            .position(|l| level <= *l)
            .unwrap_or(levels.len().saturating_sub(1))
    }

    /// Spark's `computeValidLocalityLevels` and the waits that go with them.
    fn set_locality_levels(&mut self, view: &dyn ClusterView) {
        let p = &self.pending;
        let mut levels = LocalityLevels {
            levels: [TaskLocality::Any; 5],
            len: 0,
        };
        self.work += (p.for_executor.len() + p.for_host.len() + p.for_rack.len()) as u64;
        if p.for_executor.keys().any(|e| view.is_executor_alive(e)) {
            levels.push(TaskLocality::ProcessLocal);
        }
        if p.for_host.keys().any(|h| view.has_executors_alive_on_host(h)) {
            levels.push(TaskLocality::NodeLocal);
        }
        if !p.no_prefs.is_empty() {
            levels.push(TaskLocality::NoPref);
        }
        if p.for_rack.keys().any(|r| view.has_hosts_alive_on_rack(r)) {
            levels.push(TaskLocality::RackLocal);
        }
        levels.push(TaskLocality::Any);
        self.locality_levels = levels;
        for (i, level) in levels.as_slice().iter().enumerate() {
            self.locality_waits[i] = self.locality_wait(*level);
        }
        tracing::debug!(
            stage_id = self.stage_id,
            stage_attempt = self.stage_attempt,
            "Valid locality levels for TaskSet {}.{}: {}",
            self.stage_id,
            self.stage_attempt,
            levels_to_string(levels.as_slice())
        );
    }

    /// Spark's `getAllowedLocalityLevel`: moves past levels with nothing left to launch at
    /// once, and past the others when their wait since the last reset has run out.
    fn allowed_locality_level(&mut self, now_ms: u64) -> TaskLocality {
        while self.current_locality_index + 1 < self.locality_levels.len {
            let level = self.level_at(self.current_locality_index);
            let more = match level {
                TaskLocality::ProcessLocal => {
                    map_has_launchable(&mut self.pending.for_executor, &self.tasks, &mut self.work)
                }
                TaskLocality::NodeLocal => {
                    map_has_launchable(&mut self.pending.for_host, &self.tasks, &mut self.work)
                }
                TaskLocality::NoPref => !self.pending.no_prefs.is_empty(),
                TaskLocality::RackLocal => {
                    map_has_launchable(&mut self.pending.for_rack, &self.tasks, &mut self.work)
                }
                TaskLocality::Any => true,
            };
            let wait = self
                .locality_waits
                .get(self.current_locality_index)
                .copied()
                .unwrap_or(0);
            let next = self.level_at(self.current_locality_index + 1);
            if !more {
                self.last_locality_wait_reset = now_ms;
                self.current_locality_index += 1;
                tracing::debug!(
                    stage_id = self.stage_id,
                    stage_attempt = self.stage_attempt,
                    "No tasks for locality level {level}, so moving to locality level {next}"
                );
            } else if now_ms.saturating_sub(self.last_locality_wait_reset) >= wait {
                self.last_locality_wait_reset = self.last_locality_wait_reset.saturating_add(wait);
                self.current_locality_index += 1;
                tracing::debug!(
                    stage_id = self.stage_id,
                    stage_attempt = self.stage_attempt,
                    "Moving to {next} after waiting for {wait}ms"
                );
            } else {
                return level;
            }
        }
        self.level_at(self.current_locality_index)
    }

    fn dequeue_task(
        &mut self,
        exec_id: &str,
        host: &str,
        max_locality: TaskLocality,
        view: &dyn ClusterView,
    ) -> Option<(u32, TaskLocality, bool)> {
        if let Some((i, l)) = self.dequeue_from(exec_id, host, max_locality, false, view) {
            return Some((i, l, false));
        }
        self.dequeue_from(exec_id, host, max_locality, true, view)
            .map(|(i, l)| (i, l, true))
    }

    /// Searches executor, host, no-prefs (reported PROCESS_LOCAL), rack, then all, each
    /// only when `max_locality` allows it.
    fn dequeue_from(
        &mut self,
        exec_id: &str,
        host: &str,
        max_locality: TaskLocality,
        speculative: bool,
        view: &dyn ClusterView,
    ) -> Option<(u32, TaskLocality)> {
        if speculative && self.speculatable.is_empty() {
            return None;
        }
        let TaskSetManager {
            pending,
            pending_speculative,
            tasks,
            attempts,
            execs,
            work,
            barrier_pending,
            ..
        } = self;
        let lists = if speculative { pending_speculative } else { pending };
        let ctx = DequeueCtx {
            tasks,
            barrier_pending,
            attempts,
            execs,
            host,
            speculative,
        };
        let mut found = None;
        if !lists.for_executor.is_empty() {
            if let Some(list) = lists.for_executor.get_mut(exec_id) {
                found = ctx.dequeue(list, work).map(|i| (i, TaskLocality::ProcessLocal));
            }
        }
        if found.is_none() && max_locality >= TaskLocality::NodeLocal && !lists.for_host.is_empty() {
            if let Some(list) = lists.for_host.get_mut(host) {
                found = ctx.dequeue(list, work).map(|i| (i, TaskLocality::NodeLocal));
            }
        }
        if found.is_none() && max_locality >= TaskLocality::NoPref {
            found = ctx
                .dequeue(&mut lists.no_prefs, work)
                .map(|i| (i, TaskLocality::ProcessLocal));
        }
        if found.is_none() && max_locality >= TaskLocality::RackLocal && !lists.for_rack.is_empty() {
            if let Some(list) = view.rack_for_host(host).and_then(|r| lists.for_rack.get_mut(&r)) {
                found = ctx.dequeue(list, work).map(|i| (i, TaskLocality::RackLocal));
            }
        }
        if found.is_none() && max_locality >= TaskLocality::Any {
            found = ctx.dequeue(&mut lists.all, work).map(|i| (i, TaskLocality::Any));
        }
        if speculative {
            if let Some((i, _)) = found {
                self.speculatable.remove(&i);
            }
        }
        found
    }

    /// Spark's `prepareLaunchingTask`: bookkeeping, the "Starting task" line, a
    /// `TaskStarted` event and the launch description.
    fn prepare_launching_task(
        &mut self,
        exec_id: &str,
        host: &str,
        (index, locality, speculative): (u32, TaskLocality, bool),
        cpus: u32,
        next_task_id: &mut u64,
        ctx: &mut Ctx<'_>,
    ) -> TaskLaunch {
        let now_ms = ctx.now_ms;
        let task_id = *next_task_id;
        *next_task_id = next_task_id.wrapping_add(1);
        let mut first_attempt = NO_ATTEMPT;
        self.update_index(index, |t| {
            t.copies_running = t.copies_running.saturating_add(1);
            if t.first_attempt == NO_ATTEMPT {
                t.first_attempt = task_id;
            } else {
                first_attempt = t.first_attempt;
            }
        });
        let attempt_number = if first_attempt == NO_ATTEMPT {
            0
        } else {
            let later = self.attempts.later.entry(index).or_default();
            later.push(task_id);
            u32::try_from(later.len()).unwrap_or(u32::MAX)
        };
        let partition = self.partition_of(index);
        let exec = self.exec_slot(exec_id, host);
        let attempt = Attempt {
            index,
            attempt: attempt_number,
            exec,
            launch_time: now_ms,
            finish_time: 0,
            locality,
            speculative,
            failed: false,
            killed: false,
            finished: false,
            succeeded: false,
            launching: true,
        };
        let name = self.name_of(task_id, &attempt).to_string();
        let slice = self.binary.slices.encoded(index as usize);
        let size = self.binary.stage_bytes.len() + slice.as_ref().map_or(0, Vec::len);
        if size > TASK_SIZE_TO_WARN_KIB * 1024 && !self.emitted_task_size_warning {
            self.emitted_task_size_warning = true;
            tracing::warn!(
                stage_id = self.stage_id,
                stage_attempt = self.stage_attempt,
                "Stage {} contains a task of very large size ({} KiB). The maximum recommended task size is \
                 {} KiB.",
                self.stage_id,
                size / 1024,
                TASK_SIZE_TO_WARN_KIB
            );
        }
        tracing::info!(
            stage_id = self.stage_id,
            stage_attempt = self.stage_attempt,
            task_id,
            index,
            executor_id = exec_id,
            host,
            locality = locality.as_str(),
            "Starting {name} ({host}, executor {exec_id}, partition {partition}, {locality}, {size} bytes) \
             taskResourceAssignments Map()"
        );
        if speculative {
            tracing::info!(
                event = "speculative_launch",
                stage_id = self.stage_id,
                stage_attempt = self.stage_attempt,
                task_index = index,
                task_id,
                executor_id = exec_id,
                host,
                "Launching speculative copy {name} on executor {exec_id} ({host}); the first attempt to \
                 succeed wins"
            );
        }
        ctx.events.push(SchedulerEvent::Dag(DagEvent::BeginEvent {
            stage_id: self.stage_id,
            stage_attempt_id: self.stage_attempt,
            task_info: self.info_of(task_id, &attempt),
        }));
        self.attempts.insert(task_id, attempt);
        if let Some(e) = self.execs.get_mut(exec as usize) {
            e.tids.push(task_id);
        }
        self.running.insert(task_id);
        TaskLaunch {
            task_id,
            executor_id: exec_id.to_string(),
            host: host.to_string(),
            stage_id: self.stage_id,
            stage_attempt_id: self.stage_attempt,
            job_id: self.job_id,
            index,
            partition_id: partition,
            attempt_number,
            locality,
            speculative,
            cpus,
            name,
            binary: Arc::clone(&self.binary),
            slice,
        }
    }

    /// Pushes `index` on every pending list it belongs to (the regular or the speculative
    /// set). A zombie adds nothing.
    fn add_pending_task(&mut self, index: u32, speculatable: bool) {
        if self.zombie || index as usize >= self.tasks.len() {
            return;
        }
        self.add_pending_task_locations(index, speculatable);
        let lists = if speculatable {
            &mut self.pending_speculative
        } else {
            &mut self.pending
        };
        lists.all.push(index);
    }

    /// Pushes `index` on the lists of its preferred locations, or on NO_PREF (all but ALL).
    fn add_pending_task_locations(&mut self, index: u32, speculatable: bool) {
        let prefs = self.prefs.get(index as usize).map_or(&[][..], |p| &p[..]);
        let lists = if speculatable {
            &mut self.pending_speculative
        } else {
            &mut self.pending
        };
        for loc in prefs {
            if let TaskLocation::Executor { executor_id, .. } = loc {
                push_keyed(&mut lists.for_executor, executor_id, index);
            }
            push_keyed(&mut lists.for_host, loc.host(), index);
            if let Some(rack) = self.host_racks.get(loc.host()) {
                push_keyed(&mut lists.for_rack, rack, index);
            }
        }
        if prefs.is_empty() {
            lists.no_prefs.push(index);
        }
    }

    /// Applies `f` to the index's state, keeping the count of unlaunched indices right.
    fn update_index(&mut self, index: u32, f: impl FnOnce(&mut IndexState)) {
        let Some(t) = self.tasks.get_mut(index as usize) else {
            return;
        };
        let before = t.needs_launch();
        f(t);
        let after = t.needs_launch();
        if before && !after {
            self.unlaunched = self.unlaunched.saturating_sub(1);
        } else if after && !before {
            self.unlaunched += 1;
        }
    }

    fn abort_internal(&mut self, message: String, events: &mut Vec<SchedulerEvent>) -> bool {
        events.push(SchedulerEvent::Dag(DagEvent::TaskSetFailed {
            stage_id: self.stage_id,
            stage_attempt_id: self.stage_attempt,
            message: message.clone(),
        }));
        if self.abort_message.is_none() {
            self.abort_message = Some(message);
        }
        self.zombie = true;
        self.maybe_finish_task_set()
    }

    /// Zombie and nothing running: finished, reported the first time only.
    fn maybe_finish_task_set(&mut self) -> bool {
        if self.zombie && self.running.is_empty() && !self.finish_reported {
            self.finish_reported = true;
            true
        } else {
            false
        }
    }
}

/// `task 3.0 in stage 1.0 (TID 42)`.
#[derive(Clone, Copy)]
struct TaskName {
    index: u32,
    attempt: u32,
    stage: u32,
    stage_attempt: u32,
    tid: u64,
}

impl std::fmt::Display for TaskName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "task {}.{} in stage {}.{} (TID {})",
            self.index, self.attempt, self.stage, self.stage_attempt, self.tid
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduler::task_set::TaskSpec;

    /// A fixed cluster: executors by host, racks by host.
    #[derive(Default)]
    struct FakeView {
        execs: BTreeMap<String, String>,
        racks: BTreeMap<String, String>,
        cores: Option<u32>,
    }

    impl FakeView {
        fn with(execs: &[(&str, &str)]) -> Self {
            FakeView {
                execs: execs
                    .iter()
                    .map(|(e, h)| (e.to_string(), h.to_string()))
                    .collect(),
                ..FakeView::default()
            }
        }
    }

    impl ClusterView for FakeView {
        fn is_executor_alive(&self, exec: &str) -> bool {
            self.execs.contains_key(exec)
        }
        fn has_executors_alive_on_host(&self, host: &str) -> bool {
            self.execs.values().any(|h| h == host)
        }
        fn rack_for_host(&self, host: &str) -> Option<String> {
            self.racks.get(host).cloned()
        }
        fn has_hosts_alive_on_rack(&self, rack: &str) -> bool {
            let hosts: BTreeSet<&String> = self.execs.values().collect();
            self.racks.iter().any(|(h, r)| r == rack && hosts.contains(h))
        }
        fn executor_cores(&self) -> Option<u32> {
            self.cores
        }
    }

    /// The view, the event sink and the task-id counter a scheduler would hold.
    struct H {
        view: FakeView,
        events: Vec<SchedulerEvent>,
        next: u64,
    }

    impl H {
        fn new(execs: &[(&str, &str)]) -> Self {
            H {
                view: FakeView::with(execs),
                events: Vec::new(),
                next: 0,
            }
        }

        fn tsm(
            &self,
            stage: u32,
            attempt: u32,
            tasks: Vec<TaskSpec>,
            result: bool,
            c: TsmConfig,
        ) -> TaskSetManager {
            self.tsm_at(stage, attempt, tasks, result, c, 0)
        }

        fn tsm_at(
            &self,
            stage: u32,
            attempt: u32,
            tasks: Vec<TaskSpec>,
            result: bool,
            c: TsmConfig,
            now: u64,
        ) -> TaskSetManager {
            let ts = TaskSet {
                stage_id: stage,
                stage_attempt_id: attempt,
                job_id: 0,
                is_shuffle_map: !result,
                is_barrier: false,
                tasks,
                binary: Arc::new(TaskBinary {
                    stage_bytes: vec![0; 100],
                    slices: Default::default(),
                }),
                properties: vec![],
            };
            TaskSetManager::new(ts, c, &self.view, now)
        }

        fn offer(
            &mut self,
            tsm: &mut TaskSetManager,
            exec: &str,
            host: &str,
            max: TaskLocality,
            now: u64,
        ) -> (Option<TaskLaunch>, bool) {
            let mut ctx = Ctx {
                view: &self.view,
                events: &mut self.events,
                now_ms: now,
            };
            tsm.resource_offer(exec, host, max, 1, &mut self.next, &mut ctx)
        }

        fn launch(&mut self, tsm: &mut TaskSetManager, exec: &str, host: &str, now: u64) -> TaskLaunch {
            self.offer(tsm, exec, host, TaskLocality::Any, now)
                .0
                .expect("a task should launch")
        }

        fn ok(&mut self, tsm: &mut TaskSetManager, tid: u64, size: u64, now: u64) -> SuccessOutcome {
            let mut ctx = Ctx {
                view: &self.view,
                events: &mut self.events,
                now_ms: now,
            };
            tsm.handle_successful_task(tid, size, None, &mut ctx)
        }

        fn fail(
            &mut self,
            tsm: &mut TaskSetManager,
            tid: u64,
            reason: TaskEndReason,
            now: u64,
        ) -> FailureOutcome {
            let state = if matches!(reason, TaskEndReason::TaskKilled { .. }) {
                FailedState::Killed
            } else {
                FailedState::Failed
            };
            let mut ctx = Ctx {
                view: &self.view,
                events: &mut self.events,
                now_ms: now,
            };
            tsm.handle_failed_task(tid, state, reason, &mut ctx)
        }

        fn lost(
            &mut self,
            tsm: &mut TaskSetManager,
            exec: &str,
            host: &str,
            reason: &ExecutorLossReason,
            now: u64,
        ) -> LostOutcome {
            let mut ctx = Ctx {
                view: &self.view,
                events: &mut self.events,
                now_ms: now,
            };
            tsm.executor_lost(exec, host, reason, &mut ctx)
        }

        fn spec(&mut self, tsm: &mut TaskSetManager, min: u64, now: u64) -> Vec<SpeculatableTask> {
            let mut ctx = Ctx {
                view: &self.view,
                events: &mut self.events,
                now_ms: now,
            };
            tsm.check_speculatable_tasks(min, &mut ctx)
        }

        fn take(&mut self) -> Vec<SchedulerEvent> {
            std::mem::take(&mut self.events)
        }
    }

    fn spec(i: u32, prefs: Vec<TaskLocation>) -> TaskSpec {
        TaskSpec {
            index: i,
            partition_id: i,
            preferred_locations: prefs,
        }
    }

    fn no_pref(n: u32) -> Vec<TaskSpec> {
        (0..n).map(|i| spec(i, vec![])).collect()
    }

    fn on_host(n: u32, host: &str) -> Vec<TaskSpec> {
        (0..n)
            .map(|i| spec(i, vec![TaskLocation::Host(host.into())]))
            .collect()
    }

    fn on_exec(host: &str, exec: &str) -> TaskLocation {
        TaskLocation::Executor {
            host: host.into(),
            executor_id: exec.into(),
        }
    }

    fn boom() -> TaskEndReason {
        TaskEndReason::ExceptionFailure {
            class_name: "java.lang.RuntimeException".into(),
            description: "boom".into(),
            stack_trace: vec![],
        }
    }

    fn ended(events: &[SchedulerEvent]) -> Vec<(u64, TaskEndReason)> {
        events
            .iter()
            .filter_map(|e| match e {
                SchedulerEvent::Dag(DagEvent::CompletionEvent(c)) => Some((c.task_id, c.reason.clone())),
                _ => None,
            })
            .collect()
    }

    fn failed_sets(events: &[SchedulerEvent]) -> Vec<String> {
        events
            .iter()
            .filter_map(|e| match e {
                SchedulerEvent::Dag(DagEvent::TaskSetFailed { message, .. }) => Some(message.clone()),
                _ => None,
            })
            .collect()
    }

    use TaskLocality::*;

    #[test]
    fn lowest_index_first_and_task_ids_from_counter() {
        let mut h = H::new(&[("1", "h1")]);
        let mut tsm = h.tsm(3, 0, no_pref(3), true, TsmConfig::default());
        h.next = 10;
        let got: Vec<(u64, u32, TaskLocality)> = (0..3)
            .map(|_| {
                let t = h.launch(&mut tsm, "1", "h1", 5);
                (t.task_id, t.index, t.locality)
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (10, 0, ProcessLocal),
                (11, 1, ProcessLocal),
                (12, 2, ProcessLocal)
            ]
        );
        assert_eq!(h.next, 13);
        let (none, rejected) = h.offer(&mut tsm, "1", "h1", Any, 5);
        assert!(none.is_none() && !rejected);
        let info = tsm.task_info(11).expect("info");
        assert_eq!(
            (info.index, info.attempt, info.launch_time, info.finish_time),
            (1, 0, 5, 0)
        );
        assert_eq!(
            tsm.task_name(11).as_deref(),
            Some("task 1.0 in stage 3.0 (TID 11)")
        );
        assert_eq!(tsm.running_task_ids(), vec![10, 11, 12]);
        assert!(!tsm.has_pending_tasks());
        let events = h.take();
        assert_eq!(events.len(), 3);
        assert!(matches!(
            &events[0],
            SchedulerEvent::Dag(DagEvent::BeginEvent { stage_id: 3, stage_attempt_id: 0, task_info })
                if task_info.task_id == 10 && task_info.executor_id == "1" && task_info.host == "h1"
        ));
    }

    #[test]
    fn launch_description_names_the_attempt() {
        let mut h = H::new(&[("7", "h7")]);
        let mut tsm = h.tsm(
            2,
            1,
            vec![spec(0, vec![]), spec(1, vec![])],
            true,
            TsmConfig::default(),
        );
        let t = h.launch(&mut tsm, "7", "h7", 0);
        assert_eq!(t.name, "task 0.0 in stage 2.1 (TID 0)");
        assert_eq!(
            (
                t.stage_id,
                t.stage_attempt_id,
                t.job_id,
                t.partition_id,
                t.cpus,
                t.speculative
            ),
            (2, 1, 0, 0, 1, false)
        );
        assert_eq!(t.binary.stage_bytes.len(), 100);
    }

    #[test]
    fn locality_levels_follow_preferences_and_liveness() {
        let mut h = H::new(&[("1", "h1"), ("2", "h2")]);
        h.view.racks.insert("h1".into(), "r1".into());
        h.view.racks.insert("h3".into(), "r1".into());
        let tasks = vec![
            spec(0, vec![on_exec("h1", "1")]),
            spec(1, vec![TaskLocation::Host("h3".into())]),
            spec(2, vec![]),
        ];
        let tsm = h.tsm(0, 0, tasks.clone(), false, TsmConfig::default());
        assert_eq!(
            tsm.my_locality_levels(),
            &[ProcessLocal, NodeLocal, NoPref, RackLocal, Any]
        );
        assert_eq!(tsm.locality_waits(), &[3000, 3000, 0, 3000, 0]);

        // Executor 1 gone, h1 empty: neither it, the hosts nor their rack are live.
        let mut h2 = H::new(&[("2", "h2")]);
        h2.view.racks = h.view.racks.clone();
        let tsm2 = h2.tsm(0, 0, tasks.clone(), false, TsmConfig::default());
        assert_eq!(tsm2.my_locality_levels(), &[NoPref, Any]);

        let only_host = h.tsm(0, 0, on_host(2, "h2"), false, TsmConfig::default());
        assert_eq!(only_host.my_locality_levels(), &[NodeLocal, Any]);
        let only_none = h.tsm(0, 0, no_pref(2), false, TsmConfig::default());
        assert_eq!(only_none.my_locality_levels(), &[NoPref, Any]);

        // An executor appearing on h1 later adds levels; recompute moves to the new level.
        let mut tsm3 = h2.tsm(0, 0, tasks, false, TsmConfig::default());
        tsm3.executor_added(&h.view);
        assert_eq!(
            tsm3.my_locality_levels(),
            &[ProcessLocal, NodeLocal, NoPref, RackLocal, Any]
        );
        assert_eq!(tsm3.current_locality_level(), ProcessLocal);
    }

    #[test]
    fn delay_scheduling_waits_then_accepts_at_any() {
        let mut h = H::new(&[("1", "h1"), ("2", "h2")]);
        let mut tsm = h.tsm_at(1, 0, on_host(2, "h1"), true, TsmConfig::default(), 1000);
        // A non-preferred host is held back while the NODE_LOCAL wait runs.
        for t in [1000, 2500, 3999] {
            let (launched, rejected) = h.offer(&mut tsm, "2", "h2", Any, t);
            assert!(launched.is_none());
            assert!(rejected, "at {t}");
        }
        // An offer at a smaller max level is not a delay reject.
        let (none, rejected) = h.offer(&mut tsm, "2", "h2", NodeLocal, 3999);
        assert!(none.is_none() && !rejected);
        // The preferred host is served at once, NODE_LOCAL.
        let local = h.launch(&mut tsm, "1", "h1", 3999);
        assert_eq!((local.index, local.locality), (0, NodeLocal));
        // 3 s after the start the wait expires and h2 gets the other task at ANY.
        let (launched, rejected) = h.offer(&mut tsm, "2", "h2", Any, 4000);
        let t = launched.expect("launched");
        assert_eq!((t.index, t.locality, t.task_id), (1, Any, 1));
        assert!(!rejected);
        assert_eq!(tsm.current_locality_level(), Any);
    }

    #[test]
    fn delay_scheduling_skips_levels_without_pending_tasks() {
        let mut h = H::new(&[("1", "h1"), ("3", "h3")]);
        let tasks = vec![
            spec(0, vec![on_exec("h1", "1")]),
            spec(1, vec![TaskLocation::Host("h1".into())]),
        ];
        let mut tsm = h.tsm(0, 0, tasks, false, TsmConfig::default());
        assert_eq!(tsm.my_locality_levels(), &[ProcessLocal, NodeLocal, Any]);
        let t = h
            .offer(&mut tsm, "1", "h1", ProcessLocal, 0)
            .0
            .expect("process-local");
        assert_eq!((t.index, t.locality), (0, ProcessLocal));
        // Nothing is left at PROCESS_LOCAL: at t=100 the level advances at once and the
        // NODE_LOCAL wait starts from 100.
        let (launched, rejected) = h.offer(&mut tsm, "3", "h3", Any, 100);
        assert!(launched.is_none() && rejected);
        assert_eq!(tsm.current_locality_level(), NodeLocal);
        assert!(h.offer(&mut tsm, "3", "h3", Any, 3099).0.is_none());
        let t = h.launch(&mut tsm, "3", "h3", 3100);
        assert_eq!((t.index, t.locality), (1, Any));
    }

    #[test]
    fn rack_local_after_the_node_wait_and_any_after_the_rack_wait() {
        let mut h = H::new(&[("1", "h1"), ("2", "h2"), ("3", "h3")]);
        h.view.racks.insert("h1".into(), "r1".into());
        h.view.racks.insert("h2".into(), "r1".into());
        h.view.racks.insert("h3".into(), "r2".into());
        let mut tsm = h.tsm(0, 0, on_host(3, "h1"), false, TsmConfig::default());
        assert_eq!(tsm.my_locality_levels(), &[NodeLocal, RackLocal, Any]);
        assert!(h.offer(&mut tsm, "2", "h2", Any, 2999).0.is_none());
        let t = h.launch(&mut tsm, "2", "h2", 3000);
        assert_eq!((t.index, t.locality), (0, RackLocal));
        // Another rack waits for the rack-level wait too.
        assert!(h.offer(&mut tsm, "3", "h3", Any, 5999).0.is_none());
        let t = h.launch(&mut tsm, "3", "h3", 6000);
        assert_eq!((t.index, t.locality), (1, Any));
    }

    #[test]
    fn reset_rules_move_back_to_the_launched_level() {
        let mut h = H::new(&[("1", "h1"), ("2", "h2")]);
        let mut tsm = h.tsm(0, 0, on_host(3, "h1"), false, TsmConfig::default());
        h.launch(&mut tsm, "2", "h2", 3000);
        assert_eq!(tsm.current_locality_level(), Any);
        // The scheduler's per-round reset puts it back to NODE_LOCAL with a fresh wait.
        tsm.reset_delay_schedule_timer(Some(NodeLocal), 3500);
        assert_eq!(tsm.current_locality_level(), NodeLocal);
        let (launched, rejected) = h.offer(&mut tsm, "2", "h2", Any, 6499);
        assert!(launched.is_none() && rejected);
        assert!(h.offer(&mut tsm, "2", "h2", Any, 6500).0.is_some());

        // Legacy mode resets on each launch to the launched locality.
        let config = TsmConfig {
            legacy_locality_wait_reset: true,
            ..TsmConfig::default()
        };
        let mut legacy = h.tsm(0, 0, on_host(3, "h1"), false, config);
        h.launch(&mut legacy, "2", "h2", 3000);
        h.launch(&mut legacy, "1", "h1", 3200);
        assert_eq!(legacy.current_locality_level(), NodeLocal);
        assert!(h.offer(&mut legacy, "2", "h2", Any, 6199).0.is_none());
        assert!(h.offer(&mut legacy, "2", "h2", Any, 6200).0.is_some());
    }

    #[test]
    fn retries_up_to_max_failures_then_aborts_with_sparks_message() {
        let mut h = H::new(&[("1", "h1")]);
        let mut tsm = h.tsm(1, 0, no_pref(2), true, TsmConfig::default());
        let first = h.launch(&mut tsm, "1", "h1", 0);
        assert_eq!(first.index, 0);
        let mut last = FailureOutcome::default();
        for attempt in 0..4u32 {
            // Retried index 0 is on top of the stack again.
            let t = if attempt == 0 {
                first.clone()
            } else {
                h.launch(&mut tsm, "1", "h1", 10)
            };
            assert_eq!((t.index, t.attempt_number), (0, attempt));
            last = h.fail(&mut tsm, t.task_id, boom(), 20);
            assert!(last.counted);
            if attempt < 3 {
                assert!(last.resubmitted && last.aborted.is_none());
                assert_eq!(tsm.pending_task_indices(), vec![0, 1]);
            }
        }
        let expected = "Task 0 in stage 1.0 failed 4 times, most recent failure: Lost task 0.3 in stage 1.0 \
                        (TID 3) (h1 executor 1): java.lang.RuntimeException: boom\nDriver stacktrace:";
        assert_eq!(
            last.failure_reason,
            "Lost task 0.3 in stage 1.0 (TID 3) (h1 executor 1): java.lang.RuntimeException: boom"
        );
        assert_eq!(last.aborted.as_deref(), Some(expected));
        assert!(!last.resubmitted && last.finished_task_set);
        assert!(tsm.is_zombie() && tsm.is_finished());
        let info = tsm.task_info(3).expect("info");
        assert!(info.failed && !info.killed && info.finish_time == 20);
        let events = h.take();
        assert_eq!(failed_sets(&events), vec![expected.to_string()]);
        // The TaskEnded of the last attempt precedes the abort, as in Spark.
        let last_two: Vec<&SchedulerEvent> = events.iter().rev().take(2).collect();
        assert!(matches!(
            last_two[0],
            SchedulerEvent::Dag(DagEvent::TaskSetFailed { .. })
        ));
        assert!(matches!(
            last_two[1],
            SchedulerEvent::Dag(DagEvent::CompletionEvent(c)) if c.task_id == 3
        ));
    }

    #[test]
    fn killed_and_unrelated_executor_loss_do_not_count() {
        let mut h = H::new(&[("1", "h1")]);
        let mut tsm = h.tsm(0, 0, no_pref(1), true, TsmConfig::default());
        for i in 0..6 {
            let t = h.launch(&mut tsm, "1", "h1", i);
            let reason = if i % 2 == 0 {
                TaskEndReason::TaskKilled {
                    reason: "stage cancelled".into(),
                }
            } else {
                TaskEndReason::ExecutorLostFailure {
                    executor_id: "1".into(),
                    exit_caused_by_app: false,
                    reason: Some("Container preempted".into()),
                }
            };
            let out = h.fail(&mut tsm, t.task_id, reason, i + 1);
            assert!(!out.counted && out.resubmitted && out.aborted.is_none());
        }
        assert!(tsm.task_info(0).is_some_and(|i| i.killed && !i.failed));
        // Caused by the app: counts.
        let t = h.launch(&mut tsm, "1", "h1", 10);
        let out = h.fail(
            &mut tsm,
            t.task_id,
            TaskEndReason::ExecutorLostFailure {
                executor_id: "1".into(),
                exit_caused_by_app: true,
                reason: None,
            },
            11,
        );
        assert!(out.counted && out.resubmitted);
        // A duplicate end for the same attempt is ignored, as is an unknown task.
        let before = h.take().len();
        assert!(before > 0);
        assert!(h.fail(&mut tsm, t.task_id, boom(), 12).ignored);
        assert!(h.fail(&mut tsm, 999, boom(), 12).ignored);
        assert_eq!(h.ok(&mut tsm, 999, 1, 12), SuccessOutcome::default());
        assert!(h.take().is_empty());
    }

    #[test]
    fn fetch_failure_makes_the_set_a_zombie() {
        let mut h = H::new(&[("1", "h1")]);
        let mut tsm = h.tsm(2, 1, no_pref(3), true, TsmConfig::default());
        let a = h.launch(&mut tsm, "1", "h1", 0);
        let b = h.launch(&mut tsm, "1", "h1", 0);
        let ff = TaskEndReason::FetchFailed {
            executor_id: Some("5".into()),
            host: Some("h5".into()),
            shuffle_id: 0,
            map_id: 3,
            map_index: 1,
            reduce_id: 0,
            message: "gone".into(),
        };
        let out = h.fail(&mut tsm, a.task_id, ff.clone(), 5);
        assert!(tsm.is_zombie() && tsm.is_index_successful(0));
        assert!(!out.counted && !out.resubmitted && out.aborted.is_none() && !out.finished_task_set);
        assert_eq!(tsm.tasks_successful(), 1);
        assert!(!tsm.has_pending_tasks());
        assert!(h.offer(&mut tsm, "1", "h1", Any, 6).0.is_none());
        assert!(!tsm.is_finished());
        let out = h.fail(&mut tsm, b.task_id, boom(), 7);
        assert!(!out.counted && !out.resubmitted && out.finished_task_set);
        assert!(tsm.is_finished());
        let events = h.take();
        assert!(ended(&events).contains(&(a.task_id, ff)));
        assert!(
            failed_sets(&events).is_empty(),
            "a fetch failure is the DAGScheduler's to handle"
        );
    }

    fn speculation_config() -> TsmConfig {
        TsmConfig {
            speculation: SpeculationConfig {
                enabled: true,
                quantile: 0.75,
                ..SpeculationConfig::default()
            },
            ..TsmConfig::default()
        }
    }

    #[test]
    fn speculation_threshold_boundaries() {
        let mut h = H::new(&[("1", "h1"), ("2", "h2")]);
        let mut tsm = h.tsm(0, 0, no_pref(4), false, speculation_config());
        let tasks: Vec<TaskLaunch> = (0..4).map(|_| h.launch(&mut tsm, "1", "h1", 0)).collect();
        // 2 of 4 done: below floor(0.75 * 4) = 3, nothing to check.
        h.ok(&mut tsm, tasks[0].task_id, 10, 100);
        h.ok(&mut tsm, tasks[1].task_id, 10, 300);
        assert!(h.spec(&mut tsm, 100, 100_000).is_empty());
        h.ok(&mut tsm, tasks[2].task_id, 10, 200);
        // Durations 100, 300, 200: median 200, threshold 3 x 200 = 600 ms.
        assert!(h.spec(&mut tsm, 100, 600).is_empty());
        h.take();
        let found = h.spec(&mut tsm, 100, 601);
        assert_eq!(
            found,
            vec![SpeculatableTask {
                index: 3,
                task_id: 3,
                runtime_ms: 601,
                threshold_ms: 600.0
            }]
        );
        assert_eq!(
            h.take(),
            vec![SchedulerEvent::Dag(DagEvent::SpeculativeTaskSubmitted {
                stage_id: 0,
                stage_attempt_id: 0,
                index: 3
            })]
        );
        assert_eq!(tsm.speculatable_indices(), vec![3]);
        assert!(h.spec(&mut tsm, 100, 700).is_empty(), "marked once");
        assert!(tsm.has_pending_tasks());
        // The original finishes first: no copy is wanted any more.
        let done = h.ok(&mut tsm, tasks[3].task_id, 10, 800);
        assert!(done.first_success && done.finished_task_set && done.kill_other_attempts.is_empty());
        assert!(!tsm.has_pending_tasks());

        // A short median is floored by the minimum runtime.
        let mut fast = h.tsm(0, 0, no_pref(4), false, speculation_config());
        let tasks: Vec<TaskLaunch> = (0..4).map(|_| h.launch(&mut fast, "1", "h1", 0)).collect();
        for (t, d) in tasks.iter().zip([10, 20, 30]) {
            h.ok(&mut fast, t.task_id, 1, d);
        }
        assert!(h.spec(&mut fast, 100, 100).is_empty());
        assert_eq!(h.spec(&mut fast, 100, 101).len(), 1);
    }

    #[test]
    fn speculation_duration_threshold_for_sets_that_fit_one_executor() {
        let mut h = H::new(&[("1", "h1"), ("2", "h2")]);
        h.view.cores = Some(4);
        let config = TsmConfig {
            speculation: SpeculationConfig {
                enabled: true,
                duration_threshold_ms: Some(500),
                ..SpeculationConfig::default()
            },
            ..TsmConfig::default()
        };
        let mut tsm = h.tsm(0, 0, no_pref(1), false, config.clone());
        h.launch(&mut tsm, "1", "h1", 0);
        assert!(h.spec(&mut tsm, 100, 500).is_empty());
        assert_eq!(
            h.spec(&mut tsm, 100, 501).len(),
            1,
            "the customized threshold skips efficiency"
        );
        // More tasks than one executor's slots: the threshold rule does not apply.
        let mut big = h.tsm(0, 0, no_pref(5), false, config);
        h.launch(&mut big, "1", "h1", 0);
        assert!(h.spec(&mut big, 100, 10_000).is_empty());
    }

    #[test]
    fn speculation_quantile_one_leaves_only_the_duration_threshold() {
        // Spark accepts spark.speculation.quantile = 1: all n tasks must have succeeded
        // before the median rule looks, so it never finds one still running; the absolute
        // threshold still speculates task sets that fit one executor.
        let mut h = H::new(&[("1", "h1"), ("2", "h2")]);
        h.view.cores = Some(4);
        let quantile_one = TsmConfig {
            speculation: SpeculationConfig {
                enabled: true,
                quantile: 1.0,
                ..SpeculationConfig::default()
            },
            ..TsmConfig::default()
        };
        let mut tsm = h.tsm(0, 0, no_pref(4), false, quantile_one.clone());
        let tasks: Vec<TaskLaunch> = (0..4).map(|_| h.launch(&mut tsm, "1", "h1", 0)).collect();
        for t in &tasks[..3] {
            h.ok(&mut tsm, t.task_id, 10, 100);
        }
        // 3 of 4 succeeded in 100 ms; the last has run 10,000 times the median.
        assert!(h.spec(&mut tsm, 100, 1_000_000).is_empty());

        let mut with_threshold = quantile_one;
        with_threshold.speculation.duration_threshold_ms = Some(500);
        let mut tsm = h.tsm(1, 0, no_pref(4), false, with_threshold);
        let tasks: Vec<TaskLaunch> = (0..4).map(|_| h.launch(&mut tsm, "1", "h1", 0)).collect();
        for t in &tasks[..3] {
            h.ok(&mut tsm, t.task_id, 10, 100);
        }
        assert!(h.spec(&mut tsm, 100, 500).is_empty());
        let found = h.spec(&mut tsm, 100, 501);
        assert_eq!(found.len(), 1);
        assert_eq!((found[0].index, found[0].threshold_ms), (3, 500.0));
    }

    #[test]
    fn speculation_off_or_efficient_tasks_are_not_copied() {
        let mut h = H::new(&[("1", "h1")]);
        let mut off = h.tsm(0, 0, no_pref(2), false, TsmConfig::default());
        let a = h.launch(&mut off, "1", "h1", 0);
        h.launch(&mut off, "1", "h1", 0);
        h.ok(&mut off, a.task_id, 1, 10);
        assert!(h.spec(&mut off, 100, 1_000_000).is_empty());

        // With the efficiency rule, a running task processing records fast enough waits
        // until it runs longer than longRunTaskFactor x threshold.
        let mut tsm = h.tsm(0, 0, no_pref(2), false, speculation_config());
        let a = h.launch(&mut tsm, "1", "h1", 0);
        let b = h.launch(&mut tsm, "1", "h1", 0);
        // 1000 records in 1 s: 1000 records/s on average.
        let mut ctx = Ctx {
            view: &h.view,
            events: &mut h.events,
            now_ms: 1000,
        };
        tsm.handle_successful_task_with_metrics(a.task_id, 1, None, 1000, 1000, &mut ctx);
        tsm.update_running_task_process_rate(b.task_id, 800, 1000);
        // Threshold 3000 ms; 800 >= 0.75 x 1000 so it is efficient until 6000 ms.
        assert!(h.spec(&mut tsm, 100, 3001).is_empty());
        assert!(h.spec(&mut tsm, 100, 6000).is_empty());
        assert_eq!(h.spec(&mut tsm, 100, 6001).len(), 1);
    }

    #[test]
    fn speculative_copy_runs_elsewhere_and_the_winner_kills_the_other() {
        let mut h = H::new(&[("1", "h1"), ("2", "h2")]);
        let mut tsm = h.tsm(0, 0, no_pref(2), true, speculation_config());
        let a = h.launch(&mut tsm, "1", "h1", 0);
        let b = h.launch(&mut tsm, "1", "h1", 0);
        h.ok(&mut tsm, a.task_id, 1, 100);
        assert_eq!(h.spec(&mut tsm, 100, 301).len(), 1);
        assert!(tsm.has_pending_tasks());
        // Not on the original's host.
        assert!(h.offer(&mut tsm, "1", "h1", Any, 302).0.is_none());
        let copy = h.offer(&mut tsm, "2", "h2", Any, 303).0.expect("copy");
        assert_eq!((copy.index, copy.attempt_number, copy.speculative), (1, 1, true));
        assert_eq!(copy.name, "task 1.1 in stage 0.0 (TID 2)");
        assert!(!tsm.has_pending_tasks());
        h.take();

        // The copy wins: the original is killed.
        let won = h.ok(&mut tsm, copy.task_id, 5, 400);
        assert!(won.first_success && !won.finished_task_set);
        assert_eq!(won.kill_other_attempts, vec![(b.task_id, "1".to_string())]);
        assert_eq!(won.end_reason, Some(TaskEndReason::Success));
        let events = h.take();
        assert_eq!(
            events[0],
            SchedulerEvent::KillTask(KillTask {
                task_id: b.task_id,
                executor_id: "1".into(),
                interrupt_thread: true,
                reason: "another attempt succeeded".into()
            })
        );
        assert_eq!(ended(&events), vec![(copy.task_id, TaskEndReason::Success)]);
        assert!(tsm.is_zombie() && !tsm.is_finished());
        assert_eq!(tsm.result_size_accounting(), (6, 2));
        // The killed original reports success anyway: treated as killed, result discarded.
        let late = h.ok(&mut tsm, b.task_id, 7, 410);
        assert!(!late.first_success && late.finished_task_set);
        let killed = TaskEndReason::TaskKilled {
            reason: KILLED_DID_NOT_COMMIT.into(),
        };
        assert_eq!(late.end_reason, Some(killed.clone()));
        assert_eq!(ended(&h.take()), vec![(b.task_id, killed)]);
        assert_eq!(tsm.result_size_accounting(), (6, 2));
        assert_eq!(tsm.tasks_successful(), 2);
        assert!(tsm.is_finished());
        // Duplicates are ignored.
        assert_eq!(h.ok(&mut tsm, copy.task_id, 5, 420), SuccessOutcome::default());
    }

    #[test]
    fn executor_loss_fails_running_and_resubmits_lost_map_outputs() {
        let mut h = H::new(&[("1", "h1"), ("2", "h2")]);
        let mut tsm = h.tsm(0, 0, no_pref(3), false, TsmConfig::default());
        let a = h.launch(&mut tsm, "1", "h1", 0);
        let b = h.launch(&mut tsm, "1", "h1", 0);
        let c = h.launch(&mut tsm, "2", "h2", 0);
        h.ok(&mut tsm, a.task_id, 1, 10);
        h.ok(&mut tsm, c.task_id, 1, 10);
        tsm.mark_task_running(b.task_id);
        assert_eq!(tsm.tasks_successful(), 2);
        h.take();

        // Pending reason: nothing happens.
        let out = h.lost(&mut tsm, "1", "h1", &ExecutorLossReason::LossReasonPending, 20);
        assert_eq!(out, LostOutcome::default());

        h.view.execs.remove("1");
        let reason = ExecutorLossReason::ExecutorExited {
            exit_code: 137,
            exit_caused_by_app: true,
            reason: "Container killed".into(),
        };
        let out = h.lost(&mut tsm, "1", "h1", &reason, 20);
        assert_eq!(out.resubmitted, vec![(0, a.task_id)]);
        let expected = TaskEndReason::ExecutorLostFailure {
            executor_id: "1".into(),
            exit_caused_by_app: true,
            reason: Some("Container killed".into()),
        };
        assert_eq!(out.failed_running, vec![(b.task_id, expected.clone())]);
        assert_eq!(
            ended(&h.take()),
            vec![(a.task_id, TaskEndReason::Resubmitted), (b.task_id, expected)]
        );
        assert_eq!(tsm.tasks_successful(), 1);
        assert_eq!(tsm.pending_task_indices(), vec![0, 1]);
        // The retried failure was pushed last, so it comes first.
        let t = h.launch(&mut tsm, "2", "h2", 30);
        assert_eq!((t.index, t.attempt_number), (1, 1));
        let t = h.launch(&mut tsm, "2", "h2", 30);
        assert_eq!((t.index, t.attempt_number), (0, 1));
    }

    #[test]
    fn executor_loss_keeps_results_and_external_shuffle_outputs() {
        let mut h = H::new(&[("1", "h1")]);
        for (result_stage, external) in [(true, false), (false, true)] {
            let config = TsmConfig {
                external_shuffle_service: external,
                ..TsmConfig::default()
            };
            let mut tsm = h.tsm(0, 0, no_pref(2), result_stage, config);
            let a = h.launch(&mut tsm, "1", "h1", 0);
            let b = h.launch(&mut tsm, "1", "h1", 0);
            h.ok(&mut tsm, a.task_id, 1, 10);
            // Still LAUNCHING: a loss blamed on the app does not count against the task.
            let out = h.lost(&mut tsm, "1", "h1", &ExecutorLossReason::process_lost("lost"), 20);
            assert!(out.resubmitted.is_empty());
            assert_eq!(
                out.failed_running,
                vec![(
                    b.task_id,
                    TaskEndReason::ExecutorLostFailure {
                        executor_id: "1".into(),
                        exit_caused_by_app: false,
                        reason: Some("lost".into())
                    }
                )]
            );
            assert_eq!(tsm.tasks_successful(), 1);
            assert_eq!(tsm.pending_task_indices(), vec![1]);
        }
    }

    #[test]
    fn only_attempts_that_succeeded_on_the_lost_executor_are_resubmitted() {
        let mut h = H::new(&[("1", "h1"), ("2", "h2")]);
        let mut tsm = h.tsm(0, 0, no_pref(2), false, TsmConfig::default());
        let a = h.launch(&mut tsm, "1", "h1", 0);
        h.fail(&mut tsm, a.task_id, boom(), 1);
        let retry = h.launch(&mut tsm, "2", "h2", 2);
        assert_eq!(retry.index, 0);
        h.ok(&mut tsm, retry.task_id, 1, 3);
        let out = h.lost(&mut tsm, "1", "h1", &ExecutorLossReason::ExecutorKilled, 4);
        assert!(out.resubmitted.is_empty() && out.failed_running.is_empty());
        assert!(tsm.is_index_successful(0));
    }

    #[test]
    fn max_result_size_aborts_result_stages_only() {
        let mut h = H::new(&[("1", "h1")]);
        let mib = 1u64 << 20;
        let mut tsm = h.tsm(4, 0, no_pref(3), true, TsmConfig::default());
        let t: Vec<TaskLaunch> = (0..3).map(|_| h.launch(&mut tsm, "1", "h1", 0)).collect();
        assert!(h.ok(&mut tsm, t[0].task_id, 600 * mib, 5).aborted.is_none());
        h.take();
        let out = h.ok(&mut tsm, t[1].task_id, 600 * mib, 6);
        let message = "Total size of serialized results of 2 tasks (1200.0 MiB) is bigger than \
                       spark.driver.maxResultSize (1024.0 MiB)";
        assert_eq!(out.aborted.as_deref(), Some(message));
        let killed = TaskEndReason::TaskKilled {
            reason: KILLED_RESULT_TOO_BIG.into(),
        };
        assert_eq!(out.end_reason, Some(killed.clone()));
        let events = h.take();
        assert_eq!(failed_sets(&events), vec![message.to_string()]);
        assert_eq!(ended(&events), vec![(t[1].task_id, killed)]);
        assert!(!out.finished_task_set && tsm.is_zombie());
        assert_eq!(tsm.abort_message(), Some(message));
        assert!(tsm.task_info(t[1].task_id).is_some_and(|i| i.killed));
        let last = h.fail(&mut tsm, t[2].task_id, boom(), 7);
        assert!(last.finished_task_set && !last.counted && tsm.is_finished());

        let mut map = h.tsm(4, 0, no_pref(2), false, TsmConfig::default());
        let t: Vec<TaskLaunch> = (0..2).map(|_| h.launch(&mut map, "1", "h1", 0)).collect();
        for x in &t {
            assert!(h.ok(&mut map, x.task_id, 800 * mib, 5).aborted.is_none());
        }
        assert!(map.is_finished() && map.tasks_successful() == 2);
    }

    #[test]
    fn finished_only_when_zombie_and_nothing_runs() {
        let mut h = H::new(&[("1", "h1")]);
        let mut tsm = h.tsm(0, 0, no_pref(3), true, TsmConfig::default());
        let a = h.launch(&mut tsm, "1", "h1", 0);
        assert!(!tsm.is_finished());
        assert!(!tsm.abort("Job 0 cancelled", &mut h.events));
        assert!(tsm.is_zombie() && !tsm.is_finished() && !tsm.has_pending_tasks());
        assert!(h.offer(&mut tsm, "1", "h1", Any, 1).0.is_none());
        let out = h.fail(
            &mut tsm,
            a.task_id,
            TaskEndReason::TaskKilled { reason: "x".into() },
            2,
        );
        assert!(out.finished_task_set && !out.resubmitted);
        assert!(tsm.is_finished());
        // Reported once.
        assert!(!tsm.abort("again", &mut h.events));
        assert_eq!(tsm.abort_message(), Some("Job 0 cancelled"));
    }

    #[test]
    fn partitions_completed_elsewhere_count_as_successful() {
        let mut h = H::new(&[("1", "h1")]);
        let tasks = vec![
            TaskSpec {
                index: 0,
                partition_id: 7,
                preferred_locations: vec![],
            },
            TaskSpec {
                index: 1,
                partition_id: 9,
                preferred_locations: vec![],
            },
        ];
        let mut tsm = h.tsm(0, 1, tasks, false, TsmConfig::default());
        assert!(!tsm.mark_partition_completed(9));
        assert!(!tsm.mark_partition_completed(3));
        assert_eq!(tsm.pending_task_indices(), vec![0]);
        let t = h.launch(&mut tsm, "1", "h1", 0);
        assert_eq!((t.index, t.partition_id), (0, 7));
        assert!(h.offer(&mut tsm, "1", "h1", Any, 0).0.is_none());
        assert!(h.ok(&mut tsm, t.task_id, 1, 3).finished_task_set);
    }

    #[test]
    fn not_serializable_results_abort_without_retry() {
        let mut h = H::new(&[("1", "h1")]);
        let mut tsm = h.tsm(5, 2, no_pref(1), true, TsmConfig::default());
        let t = h.launch(&mut tsm, "1", "h1", 0);
        let out = h.fail(
            &mut tsm,
            t.task_id,
            TaskEndReason::ExceptionFailure {
                class_name: "java.io.NotSerializableException".into(),
                description: "Foo".into(),
                stack_trace: vec![],
            },
            1,
        );
        assert_eq!(
            out.aborted.as_deref(),
            Some("task 0.0 in stage 5.2 (TID 0) had a not serializable result: Foo")
        );
        assert!(out.finished_task_set && !out.resubmitted);
    }

    #[test]
    fn bytes_are_printed_like_spark() {
        assert_eq!(bytes_to_string(0), "0.0 B");
        assert_eq!(bytes_to_string(2047), "2047.0 B");
        assert_eq!(bytes_to_string(2048), "2.0 KiB");
        assert_eq!(bytes_to_string(1 << 30), "1024.0 MiB");
        assert_eq!(bytes_to_string(3 * (1 << 30) + (1 << 29)), "3.5 GiB");
        assert_eq!(bytes_to_string(u64::MAX), "16.0 EiB");
    }

    #[test]
    fn fx_hashing_spreads_sequential_ids() {
        let mut set: FastSet<u64> = FastSet::default();
        set.extend(0..10_000u64);
        assert_eq!(set.len(), 10_000);
        let mut m: FastMap<String, u32> = FastMap::default();
        m.insert("executor-1".into(), 1);
        assert_eq!(m.get("executor-1"), Some(&1));
        assert_eq!(m.get("executor-2"), None);
    }

    fn attempt_of(index: u32) -> Attempt {
        Attempt {
            index,
            attempt: 0,
            exec: 0,
            launch_time: 0,
            finish_time: 0,
            locality: Any,
            speculative: false,
            failed: false,
            killed: false,
            finished: false,
            succeeded: false,
            launching: true,
        }
    }

    #[test]
    fn attempt_table_finds_attempts_in_runs_and_out_of_order() {
        let mut t = AttemptTable::default();
        assert!(t.get(&0).is_none());
        // Two runs (10..13, 20..22), then ids that do not count up.
        for (tid, index) in [
            (10, 0),
            (11, 1),
            (12, 2),
            (20, 3),
            (21, 4),
            (5, 5),
            (11, 6),
            (22, 7),
        ] {
            t.insert(tid, attempt_of(index));
        }
        let found = |t: &AttemptTable, tid: u64| t.get(&tid).map(|a| a.index);
        assert_eq!(found(&t, 10), Some(0));
        assert_eq!(found(&t, 12), Some(2));
        assert_eq!(found(&t, 20), Some(3));
        assert_eq!(found(&t, 21), Some(4));
        assert_eq!(found(&t, 5), Some(5));
        assert_eq!(
            found(&t, 11),
            Some(6),
            "a repeated id answers with its latest attempt"
        );
        assert_eq!(found(&t, 22), Some(7));
        for absent in [0, 4, 9, 13, 19, 23, u64::MAX] {
            assert_eq!(found(&t, absent), None, "tid {absent}");
        }
        t.get_mut(&21).expect("attempt").finished = true;
        assert!(t.get(&21).is_some_and(|a| a.finished));
        assert_eq!(
            t.runs.len(),
            3,
            "10..13, 20..22 and 22 after the out-of-order slots"
        );
    }

    #[test]
    fn partition_ids_map_both_ways() {
        let identity = PartitionIds::new([0u32, 1, 2].into_iter());
        assert!(matches!(identity, PartitionIds::Identity(3)));
        assert_eq!(identity.partition_of(2), 2);
        assert_eq!(identity.index_of(2), Some(2));
        assert_eq!(identity.index_of(3), None);
        let list = PartitionIds::new([7u32, 3, 9, 3].into_iter());
        assert_eq!(
            (0..4).map(|i| list.partition_of(i)).collect::<Vec<_>>(),
            vec![7, 3, 9, 3]
        );
        assert_eq!(list.index_of(7), Some(0));
        assert_eq!(list.index_of(9), Some(2));
        assert_eq!(
            list.index_of(3),
            Some(3),
            "a partition listed twice: its last index"
        );
        assert_eq!(list.index_of(0), None);
        assert_eq!(list.index_of(8), None);
        assert_eq!(list.index_of(u32::MAX), None);
    }

    #[test]
    fn task_sets_launching_in_turn_keep_their_attempts_apart() {
        let mut h = H::new(&[("1", "h1")]);
        let mut a = h.tsm(1, 0, no_pref(4), true, TsmConfig::default());
        let mut b = h.tsm(2, 0, no_pref(4), true, TsmConfig::default());
        // Task ids alternate between the sets: 0, 2, 4, 6 for a; 1, 3, 5, 7 for b.
        let mut launched = Vec::new();
        for _ in 0..4 {
            launched.push((1, h.launch(&mut a, "1", "h1", 5)));
            launched.push((2, h.launch(&mut b, "1", "h1", 5)));
        }
        for (stage, t) in &launched {
            let (mine, other) = if *stage == 1 { (&a, &b) } else { (&b, &a) };
            let info = mine.task_info(t.task_id).expect("its own attempt");
            assert_eq!((info.task_id, info.index), (t.task_id, t.index));
            assert!(
                other.task_info(t.task_id).is_none(),
                "TID {} is not the other set's",
                t.task_id
            );
        }
        // Ending b's attempts in reverse order finds each one.
        for (_, t) in launched.iter().rev().filter(|(s, _)| *s == 2) {
            assert_eq!(
                h.ok(&mut b, t.task_id, 1, 9).end_reason,
                Some(TaskEndReason::Success)
            );
        }
        assert!(b.is_finished());
        assert_eq!(a.running_task_ids(), vec![0, 2, 4, 6]);
        assert!(
            h.ok(&mut a, 3, 1, 9).end_reason.is_none(),
            "TID 3 is b's, unknown to a"
        );
    }

    #[test]
    fn tasks_with_and_without_preferences_keep_their_order() {
        let mut h = H::new(&[("1", "h1"), ("2", "h2")]);
        // Even indices prefer h1; odd ones have no preference; partitions are not indices.
        let tasks: Vec<TaskSpec> = (0..6)
            .map(|i| TaskSpec {
                index: i,
                partition_id: 100 - i,
                preferred_locations: if i % 2 == 0 {
                    vec![TaskLocation::Host("h1".into())]
                } else {
                    vec![]
                },
            })
            .collect();
        let mut tsm = h.tsm(4, 0, tasks, true, TsmConfig::default());
        assert_eq!(tsm.my_locality_levels(), &[NodeLocal, NoPref, Any]);
        let on_h1: Vec<(u32, u32, TaskLocality)> = (0..3)
            .map(|_| {
                let t = h.launch(&mut tsm, "1", "h1", 0);
                (t.index, t.partition_id, t.locality)
            })
            .collect();
        assert_eq!(
            on_h1,
            vec![(0, 100, NodeLocal), (2, 98, NodeLocal), (4, 96, NodeLocal)]
        );
        let (none, _) = h.offer(&mut tsm, "2", "h2", NodeLocal, 0);
        assert!(none.is_none(), "h2 is nobody's preference");
        let rest: Vec<(u32, u32)> = (0..3)
            .map(|_| {
                let t = h
                    .offer(&mut tsm, "2", "h2", NoPref, 0)
                    .0
                    .expect("a no-preference task");
                (t.index, t.partition_id)
            })
            .collect();
        assert_eq!(rest, vec![(1, 99), (3, 97), (5, 95)]);
        assert!(!tsm.mark_partition_completed(96), "five tasks to go");
        assert!(
            tsm.is_index_successful(4) && !tsm.is_index_successful(2),
            "partition 96 is index 4"
        );
    }

    #[test]
    fn index_stack_is_its_range_pushed_in_reverse_then_its_pushes() {
        let mut s = IndexStack::reversed_range(3);
        assert_eq!(s.to_vec(), vec![2, 1, 0]);
        s.push(7);
        assert_eq!(s.to_vec(), vec![2, 1, 0, 7]);
        assert_eq!(s.last(), Some(7));
        let popped: Vec<u32> = std::iter::from_fn(|| s.pop()).collect();
        assert_eq!(popped, vec![7, 0, 1, 2]);
        assert!(s.is_empty() && s.last().is_none());
    }

    #[test]
    fn a_new_set_pends_every_index_lowest_on_top() {
        let h = H::new(&[("1", "h1")]);
        let tsm = h.tsm(1, 0, no_pref(4), true, TsmConfig::default());
        assert_eq!(tsm.pending.all.to_vec(), vec![3, 2, 1, 0]);
        assert_eq!(tsm.pending.no_prefs.to_vec(), vec![3, 2, 1, 0]);
        assert!(tsm.pending.for_host.is_empty());
        let h1 = || vec![TaskLocation::Host("h1".into())];
        let tsm = h.tsm(
            1,
            0,
            vec![spec(0, h1()), spec(1, vec![]), spec(2, h1()), spec(3, vec![])],
            true,
            TsmConfig::default(),
        );
        assert_eq!(tsm.pending.all.to_vec(), vec![3, 2, 1, 0]);
        assert_eq!(tsm.pending.no_prefs.to_vec(), vec![3, 1]);
        assert_eq!(
            tsm.pending.for_host.get("h1").map(IndexStack::to_vec),
            Some(vec![2, 0])
        );
    }
}
