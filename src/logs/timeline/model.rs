//! The timeline's pure core: [`Timeline`] and the [`TimelineBuilder`] that folds an
//! application's structured records into it, one record at a time, in any file order.
//!
//! What each part comes from (the records the actors write, see `logs::HEADER_KEYS`):
//! - executor lanes: the DriverEndpoint's `executor_registered` (id and host) and
//!   `executor_removed` (with the loss reason); an executor's own records name its container;
//! - jobs: the DAGScheduler's "Got job N (call site) …" and "Job N finished/failed: …";
//! - stages: "Submitting N missing tasks from <stage> (…)" and "<stage> (name) finished in /
//!   failed in …";
//! - tasks: the TaskSetManager's "Starting task …", "Finished task …" and its lost-task
//!   records (each with `task_id`, `index`, `executor_id`); a lost task whose reason is
//!   `TaskKilled` is killed, any other failed;
//! - marks: the fault injector's kills and partitions, an incarnation's failure
//!   (`actor_failed`, an abnormal `actor_stopped`), restarts, supervisors' escalations, and
//!   executors lost or expired;
//! - actors: every lifecycle record (`actor_started`, `actor_failed`, `actor_restarted`,
//!   `actor_stopped`) with its `actor`, `actor_type` and `incarnation`;
//! - the end: the ResourceManager's record of the application reaching a final state.
//!
//! Application attempts run their own driver (cluster mode), whose job, stage, task and
//! executor ids start again at 0 and 1: every id is kept with its attempt.
//!
//! Layer: logs, the bottom layer.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;
use serde_json::Value;

use crate::logs::supervision::{abnormal_reason, is_rm_warning};

/// The most task bars a timeline keeps (the newest; older ones are counted).
pub const MAX_TASKS: usize = 50_000;
/// The most marks a timeline keeps (the newest; older ones are counted).
pub const MAX_MARKS: usize = 10_000;
/// The most actors in a timeline's supervision tree (later ones are counted).
pub const MAX_ACTORS: usize = 10_000;
/// The most executor lanes (later executors are counted).
pub const MAX_EXECUTORS: usize = 2_000;
/// The most jobs kept (the newest; older ones are counted).
pub const MAX_JOBS: usize = 10_000;
/// The most stages kept (the newest; older ones are counted).
pub const MAX_STAGES: usize = 20_000;

/// The longest text a mark or a name keeps, in characters.
const MAX_TEXT: usize = 400;

/// How a job, stage or task ended (or not yet).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Running,
    Succeeded,
    Failed,
    Killed,
}

impl Outcome {
    /// The CSS class the picture gives it.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Running => "running",
            Outcome::Succeeded => "success",
            Outcome::Failed => "failed",
            Outcome::Killed => "killed",
        }
    }
}

/// What a mark stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MarkKind {
    /// The fault injector killed (stopped or panicked) an actor.
    Kill,
    /// A planned kill that found no running actor to kill.
    KillSkipped,
    /// A network partition began.
    Partition,
    /// An incarnation ended abnormally (failed, or stopped for a reason that is not normal).
    Failure,
    /// A supervisor started a new incarnation.
    Restart,
    /// A supervisor gave up and passed the failure to its own parent.
    Escalation,
    /// The driver removed an executor (lost, expired, or its container exited).
    ExecutorLost,
    /// The ResourceManager failed an application attempt (its AM container exited).
    AttemptFailed,
}

impl MarkKind {
    /// The CSS class the picture gives it (`class="mark kill"`).
    pub fn as_str(self) -> &'static str {
        match self {
            MarkKind::Kill => "kill",
            MarkKind::KillSkipped => "kill-skipped",
            MarkKind::Partition => "partition",
            MarkKind::Failure => "failure",
            MarkKind::Restart => "restart",
            MarkKind::Escalation => "escalation",
            MarkKind::ExecutorLost => "executor-lost",
            MarkKind::AttemptFailed => "attempt-failed",
        }
    }
}

/// One executor of one application attempt: its lane on the picture.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExecutorLane {
    /// The application attempt whose driver registered it.
    pub attempt: u32,
    /// Spark's executor id ("1", "2", …).
    pub id: String,
    pub host: String,
    /// Its YARN container, once one of its records named it.
    pub container_id: Option<String>,
    /// When the driver registered it (ms since the epoch).
    pub added: Option<i64>,
    /// When the driver removed it.
    pub removed: Option<i64>,
    /// Why, as the driver said.
    pub removed_reason: Option<String>,
    /// Tasks started on it (dropped bars included).
    pub tasks: u64,
}

/// One job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JobSpan {
    pub attempt: u32,
    pub id: u64,
    /// The call site ("reduce at SparkPi.scala:38").
    pub name: String,
    pub start: i64,
    pub end: Option<i64>,
    pub outcome: Outcome,
}

/// One attempt of one stage.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StageSpan {
    pub attempt: u32,
    pub id: u64,
    pub stage_attempt: u64,
    pub job_id: Option<u64>,
    /// "ResultStage 0 (reduce at SparkPi.scala:38)".
    pub name: String,
    /// Tasks submitted for this stage attempt.
    pub tasks: u64,
    pub start: i64,
    pub end: Option<i64>,
    pub outcome: Outcome,
}

/// One task attempt: a bar in its executor's lane.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TaskBar {
    pub attempt: u32,
    /// Spark's task id (TID).
    pub id: u64,
    pub stage_id: u64,
    pub stage_attempt: u64,
    /// The partition index.
    pub index: u64,
    pub executor_id: String,
    pub host: String,
    pub start: i64,
    pub end: Option<i64>,
    pub outcome: Outcome,
    /// Why it did not succeed (the driver's line).
    pub reason: Option<String>,
}

/// Something that happened to an actor at one moment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Mark {
    pub at: i64,
    pub kind: MarkKind,
    /// The actor it concerns (the victim of a kill, the actor that failed or restarted, the
    /// supervisor that escalated, the DriverEndpoint for a lost executor).
    pub actor: String,
    /// What happened, as the record said it (its message, whitespace collapsed).
    pub text: String,
    pub incarnation: Option<u64>,
    /// The container the actor runs in, if any.
    pub container_id: Option<String>,
    /// The executor lane it belongs on, if any (the executor's own actors, a lost executor).
    pub executor_id: Option<String>,
    /// The application attempt of that executor.
    pub attempt: u32,
}

/// One actor of the supervision tree, as its last lifecycle record left it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ActorNode {
    /// Its path ("/node/nm-host1/container_…/executor-1").
    pub path: String,
    pub actor_type: String,
    /// Its latest incarnation (1 for the first).
    pub incarnation: u64,
    /// New incarnations its supervisor started.
    pub restarts: u32,
    /// Incarnations that ended abnormally.
    pub failures: u32,
    /// Whether its latest incarnation is running, as far as the records tell.
    pub alive: bool,
    pub container_id: Option<String>,
    /// Why its latest incarnation ended, when it did.
    pub ended: Option<String>,
}

/// An application's timeline. Times are milliseconds since the Unix epoch.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Timeline {
    pub app_id: String,
    /// The first record of the application (0 before any).
    pub start: i64,
    /// When the ResourceManager saw it reach a final state; `None` while it runs (or when
    /// the logs end before it did).
    pub end: Option<i64>,
    /// The latest record read: the right edge of a picture of a running application.
    pub last: i64,
    /// The final state YARN gave it (FINISHED, FAILED, KILLED), once known.
    pub final_state: Option<String>,
    /// The final status its ApplicationMaster unregistered with (SUCCEEDED, FAILED, …).
    pub final_status: Option<String>,
    /// Executors in the order they were registered.
    pub executors: Vec<ExecutorLane>,
    pub jobs: Vec<JobSpan>,
    pub stages: Vec<StageSpan>,
    /// Task bars in the order they started (the newest [`MAX_TASKS`]).
    pub tasks: Vec<TaskBar>,
    /// Marks in time order (the newest [`MAX_MARKS`]).
    pub marks: Vec<Mark>,
    /// The supervision tree, by path.
    pub actors: Vec<ActorNode>,
    /// Task bars left out to bound memory (the oldest).
    pub tasks_dropped: u64,
    /// Marks, jobs, stages, executors and actors left out to bound memory.
    pub marks_dropped: u64,
    pub jobs_dropped: u64,
    pub stages_dropped: u64,
    pub executors_dropped: u64,
    pub actors_dropped: u64,
    /// Records read so far.
    pub records: u64,
}

type TaskKey = (u32, u64);
type StageKey = (u32, u64, u64);

/// Folds records into a [`Timeline`]. Records may come in any order across files (each
/// file in its own order); the result does not depend on which file was read first.
#[derive(Debug, Default)]
pub struct TimelineBuilder {
    t: Timeline,
    /// Sequence number of `t.tasks[0]`; task `k` sits at `tasks[k - task_base]`.
    task_base: u64,
    task_seq: HashMap<TaskKey, u64>,
    /// Index into `t.jobs`, `t.stages`, `t.executors`.
    jobs: HashMap<TaskKey, usize>,
    stages: HashMap<StageKey, usize>,
    executors: HashMap<(u32, String), usize>,
    /// Container → (attempt, executor id), from the executors' own records.
    containers: HashMap<String, (u32, String)>,
    actors: BTreeMap<String, ActorState>,
    marks_dirty: bool,
    actors_dirty: bool,
}

/// An actor and the time of the lifecycle record its `alive` comes from.
#[derive(Debug)]
struct ActorState {
    node: ActorNode,
    state_at: i64,
}

/// The string field `key` of `record`.
pub(crate) fn field<'a>(record: &'a Value, key: &str) -> Option<&'a str> {
    record.get(key).and_then(Value::as_str)
}

/// A numeric field, also accepted as a string of digits.
fn num(record: &Value, key: &str) -> Option<u64> {
    match record.get(key)? {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

/// The container an actor path runs in (`…/container_…/…`).
fn container_of(path: &str) -> Option<&str> {
    path.split('/').find(|s| s.starts_with("container_"))
}

/// `text` with its whitespace collapsed, cut to [`MAX_TEXT`] characters.
fn clean(text: &str) -> String {
    let mut out = String::new();
    for (i, word) in text.split_whitespace().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(word);
        if out.chars().count() > MAX_TEXT {
            let cut: String = out.chars().take(MAX_TEXT).collect();
            return format!("{cut}…");
        }
    }
    out
}

/// Marks in time order; marks of the same moment in an order of their own (so that the
/// order does not depend on which file was read first).
fn mark_order(a: &Mark, b: &Mark) -> std::cmp::Ordering {
    (a.at, a.kind as u8, &a.actor, a.incarnation, &a.text).cmp(&(
        b.at,
        b.kind as u8,
        &b.actor,
        b.incarnation,
        &b.text,
    ))
}

/// Drops the oldest entries of `v` beyond `max` once it holds more than `max + slack`
/// (slack amortises the dropping while records are folded), counting them; answers how many
/// were dropped.
fn trim_front<T>(v: &mut Vec<T>, max: usize, slack: usize, dropped: &mut u64) -> usize {
    if v.len() <= max + slack {
        return 0;
    }
    let n = v.len() - max;
    v.drain(..n);
    *dropped += n as u64;
    n
}

impl TimelineBuilder {
    pub fn new(app_id: &str) -> TimelineBuilder {
        TimelineBuilder {
            t: Timeline {
                app_id: app_id.to_string(),
                ..Timeline::default()
            },
            ..TimelineBuilder::default()
        }
    }

    /// The timeline so far (the newest [`MAX_TASKS`] bars and [`MAX_MARKS`] marks at most).
    pub fn timeline(&mut self) -> &Timeline {
        self.trim_tasks(0);
        if self.marks_dirty {
            self.marks_dirty = false;
            self.t.marks.sort_by(mark_order);
        }
        trim_front(&mut self.t.marks, MAX_MARKS, 0, &mut self.t.marks_dropped);
        for m in &mut self.t.marks {
            if m.executor_id.is_none() {
                if let Some((attempt, exec)) = m.container_id.as_ref().and_then(|c| self.containers.get(c)) {
                    m.executor_id = Some(exec.clone());
                    m.attempt = *attempt;
                }
            }
        }
        if self.actors_dirty {
            self.actors_dirty = false;
            // Once the application has ended, nothing in its containers runs, whether or
            // not its end was recorded (a killed process writes nothing more).
            let ended = self.t.end.is_some();
            let prefix = format!(
                "container_{}_",
                self.t.app_id.strip_prefix("application_").unwrap_or("-")
            );
            self.t.actors = self
                .actors
                .values()
                .map(|a| {
                    let mut node = a.node.clone();
                    if ended
                        && node
                            .container_id
                            .as_deref()
                            .is_some_and(|c| c.starts_with(&prefix))
                    {
                        node.alive = false;
                    }
                    node
                })
                .collect();
        }
        &self.t
    }

    /// Folds one of the application's own records, written at `at` (ms since the epoch),
    /// into the timeline.
    pub fn push(&mut self, record: &Value, at: i64) {
        self.t.records += 1;
        if self.t.start == 0 || at < self.t.start {
            self.t.start = at;
        }
        self.t.last = self.t.last.max(at);
        self.fold(record, at);
    }

    /// Folds a record that concerns the application without being its own (a node-level
    /// actor's lifecycle or supervision record while it ran): it adds to the supervision
    /// tree and the marks but does not move the timeline's start or end.
    pub fn push_related(&mut self, record: &Value, at: i64) {
        self.t.records += 1;
        self.fold(record, at);
    }

    /// Folds a lifecycle record from before the application (a node-level actor's start or
    /// restart) into the supervision tree only.
    pub fn push_tree(&mut self, record: &Value, at: i64) {
        self.t.records += 1;
        self.lifecycle(record, at);
    }

    fn fold(&mut self, record: &Value, at: i64) {
        let attempt = num(record, "attempt").map_or(1, |a| a as u32);
        let msg = field(record, "msg").unwrap_or("");
        // An executor's own records name its container (the driver's records about an
        // executor carry the AM's container and the executor's id: they do not count).
        if let (Some(c), Some(e)) = (field(record, "container_id"), field(record, "executor_id")) {
            let actor = field(record, "actor").unwrap_or("");
            let own = field(record, "actor_type") == Some("CoarseGrainedExecutorBackend")
                || actor.strip_suffix(e).is_some_and(|a| a.ends_with("/executor-"));
            let room = self.containers.len() < MAX_EXECUTORS * 2;
            if own && room && !self.containers.contains_key(c) && container_of(actor) == Some(c) {
                self.containers.insert(c.to_string(), (attempt, e.to_string()));
                if let Some(&i) = self.executors.get(&(attempt, e.to_string())) {
                    self.t.executors[i]
                        .container_id
                        .get_or_insert_with(|| c.to_string());
                }
            }
        }
        self.lifecycle(record, at);
        self.mark(record, at, attempt);
        match field(record, "event") {
            Some("executor_registered") => self.executor_added(record, at, attempt),
            Some("executor_removed") => self.executor_removed(record, at, attempt),
            _ => {}
        }
        if record.get("task_id").is_some() && record.get("index").is_some() {
            self.task(record, msg, at, attempt);
        } else if let Some(stage) = num(record, "stage_id") {
            self.stage(record, msg, stage, at, attempt);
        } else if let Some(job) = num(record, "job_id") {
            self.job(msg, job, at, attempt);
        }
        self.app_end(record, msg, at);
    }

    fn executor_added(&mut self, record: &Value, at: i64, attempt: u32) {
        let Some(id) = field(record, "executor_id") else {
            return;
        };
        let host = field(record, "host").unwrap_or("");
        let i = self.lane(attempt, id, host);
        if let Some(i) = i {
            let lane = &mut self.t.executors[i];
            lane.added = Some(lane.added.map_or(at, |a| a.min(at)));
            if lane.host.is_empty() {
                lane.host = host.to_string();
            }
        }
    }

    fn executor_removed(&mut self, record: &Value, at: i64, attempt: u32) {
        let Some(id) = field(record, "executor_id") else {
            return;
        };
        if let Some(i) = self.lane(attempt, id, "") {
            let lane = &mut self.t.executors[i];
            lane.removed = Some(at);
            lane.removed_reason = field(record, "reason").map(clean);
        }
    }

    /// The lane of an executor, made on first sight (None past [`MAX_EXECUTORS`]).
    fn lane(&mut self, attempt: u32, id: &str, host: &str) -> Option<usize> {
        if let Some(&i) = self.executors.get(&(attempt, id.to_string())) {
            return Some(i);
        }
        if self.t.executors.len() >= MAX_EXECUTORS {
            self.t.executors_dropped += 1;
            return None;
        }
        let container_id = self
            .containers
            .iter()
            .find(|(_, (a, e))| *a == attempt && e == id)
            .map(|(c, _)| c.clone());
        self.t.executors.push(ExecutorLane {
            attempt,
            id: id.to_string(),
            host: host.to_string(),
            container_id,
            added: None,
            removed: None,
            removed_reason: None,
            tasks: 0,
        });
        let i = self.t.executors.len() - 1;
        self.executors.insert((attempt, id.to_string()), i);
        Some(i)
    }

    fn task(&mut self, record: &Value, msg: &str, at: i64, attempt: u32) {
        let (Some(tid), Some(exec)) = (num(record, "task_id"), field(record, "executor_id")) else {
            return;
        };
        let key = (attempt, tid);
        if msg.starts_with("Starting ") {
            if self.task_seq.contains_key(&key) {
                return;
            }
            let host = field(record, "host").unwrap_or("");
            if let Some(i) = self.lane(attempt, exec, host) {
                self.t.executors[i].tasks += 1;
            }
            let seq = self.task_base + self.t.tasks.len() as u64;
            self.t.tasks.push(TaskBar {
                attempt,
                id: tid,
                stage_id: num(record, "stage_id").unwrap_or(0),
                stage_attempt: num(record, "stage_attempt").unwrap_or(0),
                index: num(record, "index").unwrap_or(0),
                executor_id: exec.to_string(),
                host: host.to_string(),
                start: at,
                end: None,
                outcome: Outcome::Running,
                reason: None,
            });
            self.task_seq.insert(key, seq);
            self.trim_tasks(MAX_TASKS / 10);
            return;
        }
        let outcome = if msg.starts_with("Finished ") {
            Outcome::Succeeded
        } else if msg.contains("TaskKilled") {
            Outcome::Killed
        } else if msg.starts_with("Lost ")
            || msg.contains(" failed")
            || msg.contains("can not write")
            || msg.contains("not serializable")
        {
            Outcome::Failed
        } else {
            return;
        };
        let Some(&seq) = self.task_seq.get(&key) else {
            return;
        };
        let Some(bar) = self.t.tasks.get_mut((seq - self.task_base) as usize) else {
            return;
        };
        if bar.end.is_none() {
            bar.end = Some(at.max(bar.start));
            bar.outcome = outcome;
            if outcome != Outcome::Succeeded {
                bar.reason = Some(clean(msg));
            }
        }
    }

    /// Keeps the newest [`MAX_TASKS`] bars once there are more than that plus `slack`.
    fn trim_tasks(&mut self, slack: usize) {
        let n = trim_front(&mut self.t.tasks, MAX_TASKS, slack, &mut self.t.tasks_dropped);
        if n > 0 {
            let base = self.task_base + n as u64;
            self.task_seq.retain(|_, s| *s >= base);
            self.task_base = base;
        }
    }

    fn stage(&mut self, record: &Value, msg: &str, stage: u64, at: i64, attempt: u32) {
        let stage_attempt = num(record, "stage_attempt").unwrap_or(0);
        let key = (attempt, stage, stage_attempt);
        if let Some(rest) = msg.strip_prefix("Submitting ") {
            if self.stages.contains_key(&key) || !rest.contains(" missing tasks from ") {
                return;
            }
            let tasks = rest.split(' ').next().and_then(|n| n.parse().ok()).unwrap_or(0);
            let from = rest.split_once(" missing tasks from ").map_or("", |(_, f)| f);
            let name = from.split_once(" (").map_or(from, |(label, _)| label);
            let n = trim_front(
                &mut self.t.stages,
                MAX_STAGES,
                MAX_STAGES / 10,
                &mut self.t.stages_dropped,
            );
            if n > 0 {
                self.stages.retain(|_, i| *i >= n);
                self.stages.values_mut().for_each(|i| *i -= n);
            }
            self.t.stages.push(StageSpan {
                attempt,
                id: stage,
                stage_attempt,
                job_id: num(record, "job_id"),
                name: clean(name),
                tasks,
                start: at,
                end: None,
                outcome: Outcome::Running,
            });
            self.stages.insert(key, self.t.stages.len() - 1);
            return;
        }
        let (outcome, cut) = if let Some(i) = msg.rfind(") finished in ") {
            (Outcome::Succeeded, i)
        } else if let Some(i) = msg.find(") failed in ") {
            (Outcome::Failed, i)
        } else {
            return;
        };
        let Some(&i) = self.stages.get(&key) else { return };
        let span = &mut self.t.stages[i];
        if span.end.is_none() {
            span.end = Some(at.max(span.start));
            span.outcome = outcome;
            // "ResultStage 0 (reduce at SparkPi.scala:38) finished in 0.2 s": the full name.
            span.name = clean(msg.get(..cut + 1).unwrap_or(&span.name));
        }
    }

    fn job(&mut self, msg: &str, job: u64, at: i64, attempt: u32) {
        let key = (attempt, job);
        if let Some(rest) = msg.strip_prefix("Got job ") {
            if self.jobs.contains_key(&key) {
                return;
            }
            let name = rest
                .split_once(" (")
                .and_then(|(_, r)| r.rsplit_once(") with "))
                .map_or("", |(n, _)| n);
            let n = trim_front(
                &mut self.t.jobs,
                MAX_JOBS,
                MAX_JOBS / 10,
                &mut self.t.jobs_dropped,
            );
            if n > 0 {
                self.jobs.retain(|_, i| *i >= n);
                self.jobs.values_mut().for_each(|i| *i -= n);
            }
            self.t.jobs.push(JobSpan {
                attempt,
                id: job,
                name: clean(name),
                start: at,
                end: None,
                outcome: Outcome::Running,
            });
            self.jobs.insert(key, self.t.jobs.len() - 1);
            return;
        }
        let head = format!("Job {job} ");
        let Some(rest) = msg.strip_prefix(&head) else {
            return;
        };
        let outcome = if rest.starts_with("finished:") {
            Outcome::Succeeded
        } else if rest.starts_with("failed:") {
            Outcome::Failed
        } else {
            return;
        };
        if let Some(&i) = self.jobs.get(&key) {
            let span = &mut self.t.jobs[i];
            if span.end.is_none() {
                span.end = Some(at.max(span.start));
                span.outcome = outcome;
            }
        }
    }

    /// Lifecycle records update the supervision tree.
    fn lifecycle(&mut self, record: &Value, at: i64) {
        let event = field(record, "event").unwrap_or("");
        if !matches!(
            event,
            "actor_started" | "actor_restarted" | "actor_failed" | "actor_stopped"
        ) {
            return;
        }
        let Some(path) = field(record, "actor") else {
            return;
        };
        let incarnation = num(record, "incarnation").unwrap_or(1);
        if !self.actors.contains_key(path) {
            if self.actors.len() >= MAX_ACTORS {
                self.t.actors_dropped += 1;
                return;
            }
            self.actors.insert(
                path.to_string(),
                ActorState {
                    node: ActorNode {
                        path: path.to_string(),
                        actor_type: String::new(),
                        incarnation,
                        restarts: 0,
                        failures: 0,
                        alive: false,
                        container_id: container_of(path).map(str::to_string),
                        ended: None,
                    },
                    state_at: i64::MIN,
                },
            );
        }
        let Some(a) = self.actors.get_mut(path) else {
            return;
        };
        self.actors_dirty = true;
        if let Some(t) = field(record, "actor_type") {
            if a.node.actor_type.is_empty() {
                a.node.actor_type = t.to_string();
            }
        }
        let reason = field(record, "reason");
        match event {
            "actor_restarted" => a.node.restarts += 1,
            "actor_failed" => a.node.failures += 1,
            "actor_stopped" if reason.is_some_and(abnormal_reason) => a.node.failures += 1,
            _ => {}
        }
        // The latest record (by time, then incarnation, then an end after a start) says
        // whether it runs, in whatever order the records were read.
        let alive = matches!(event, "actor_started" | "actor_restarted");
        let newer = (at, incarnation, !alive) >= (a.state_at, a.node.incarnation, !a.node.alive);
        if newer {
            a.state_at = at;
            a.node.incarnation = incarnation;
            a.node.alive = alive;
            a.node.ended = if alive {
                None
            } else {
                Some(clean(reason.unwrap_or(event)))
            };
        }
    }

    /// Supervision records become marks.
    fn mark(&mut self, record: &Value, at: i64, attempt: u32) {
        let event = field(record, "event").unwrap_or("");
        let kind = match event {
            "fault_injected" => MarkKind::Kill,
            "fault_skipped" => MarkKind::KillSkipped,
            "partition_started" => MarkKind::Partition,
            "actor_failed" | "cleanup_panicked" => MarkKind::Failure,
            "actor_stopped" if field(record, "reason").is_some_and(abnormal_reason) => MarkKind::Failure,
            "actor_restarted" => MarkKind::Restart,
            "supervisor_escalated" => MarkKind::Escalation,
            "executor_removed" | "executor_expired" => MarkKind::ExecutorLost,
            "" if is_rm_warning(record) && field(record, "app_id") == Some(self.t.app_id.as_str()) => {
                MarkKind::AttemptFailed
            }
            _ => return,
        };
        let actor = field(record, "actor").unwrap_or("").to_string();
        let mut text = clean(field(record, "msg").unwrap_or(event));
        if let Some(by) = field(record, "by") {
            if !text.contains(by) {
                text.push_str(&format!(" (by {by})"));
            }
        }
        let container_id = field(record, "container_id")
            .or_else(|| container_of(&actor))
            .map(str::to_string);
        // A lost executor is drawn on its lane; an executor's own actors on theirs.
        let executor_id = match kind {
            MarkKind::ExecutorLost => field(record, "executor_id").map(str::to_string),
            _ => container_id
                .as_ref()
                .and_then(|c| self.containers.get(c))
                .map(|(_, e)| e.clone()),
        };
        let attempt = container_id
            .as_ref()
            .and_then(|c| self.containers.get(c))
            .map_or(attempt, |(a, _)| *a);
        self.t.marks.push(Mark {
            at,
            kind,
            actor,
            text,
            incarnation: num(record, "incarnation"),
            container_id,
            executor_id,
            attempt,
        });
        self.marks_dirty = true;
        if self.t.marks.len() > MAX_MARKS + MAX_MARKS / 10 {
            // Trimming keeps the newest by time.
            self.t.marks.sort_by(mark_order);
            self.marks_dirty = false;
            trim_front(&mut self.t.marks, MAX_MARKS, 0, &mut self.t.marks_dropped);
        }
    }

    /// The ResourceManager's record of the application reaching a final state.
    fn app_end(&mut self, record: &Value, msg: &str, at: i64) {
        if field(record, "app_id") != Some(self.t.app_id.as_str())
            || field(record, "actor_type") != Some("ResourceManager")
        {
            return;
        }
        // "application_… State change from RUNNING to FINISHED on event = ATTEMPT_FINISHED"
        if let Some((_, to)) = msg
            .split_once(" State change from ")
            .and_then(|(_, r)| r.split_once(" to "))
        {
            let state = to.split(' ').next().unwrap_or("");
            if matches!(state, "FINISHED" | "FAILED" | "KILLED") {
                self.actors_dirty = true;
                self.t.end = Some(self.t.end.map_or(at, |e| e.max(at)));
                self.t.final_state = Some(state.to_string());
            }
        }
        // "ApplicationMaster of appattempt_… unregistered with final status SUCCEEDED"
        if let Some((_, status)) = msg.split_once(" unregistered with final status ") {
            self.t.final_status = Some(clean(status));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const APP: &str = "application_1_0001";
    const AM: &str = "/node/nm-host1/container_1_0001_01_000001/am";
    const C2: &str = "container_1_0001_01_000002";

    fn driver(msg: &str, extra: Value) -> Value {
        let mut r = json!({"level": "INFO", "msg": msg, "cluster": "c1", "actor": format!("{AM}/driver/dag-scheduler"),
            "actor_type": "DAGScheduler", "incarnation": 1, "app_id": APP, "attempt": 1,
            "container_id": "container_1_0001_01_000001"});
        for (k, v) in extra.as_object().unwrap() {
            r[k] = v.clone();
        }
        r
    }

    fn lifecycle(actor: &str, event: &str, incarnation: u64, reason: Option<&str>) -> Value {
        let mut r = json!({"level": "INFO", "msg": format!("{event}"), "cluster": "c1", "actor": actor,
            "actor_type": "CoarseGrainedExecutorBackend", "incarnation": incarnation, "event": event});
        if let Some(reason) = reason {
            r["reason"] = json!(reason);
        }
        r
    }

    fn start_task(tid: u64, exec: &str) -> Value {
        driver(
            &format!("Starting task {tid}.0 in stage 0.0 (TID {tid}) (host2, executor {exec}, partition {tid}, PROCESS_LOCAL, 900 bytes) taskResourceAssignments Map()"),
            json!({"stage_id": 0, "stage_attempt": 0, "task_id": tid, "index": tid, "executor_id": exec, "host": "host2"}),
        )
    }

    fn end_task(tid: u64, exec: &str, msg: &str) -> Value {
        driver(
            msg,
            json!({"stage_id": 0, "stage_attempt": 0, "task_id": tid, "index": tid, "executor_id": exec, "host": "host2"}),
        )
    }

    /// A run: executor 1 registers, job 0 with stage 0 runs three tasks (one succeeds, one is
    /// lost with its executor, one killed), executor 1 is killed and its actor restarted.
    fn run() -> Vec<(Value, i64)> {
        let exec_actor = format!("/node/nm-host2/{C2}/executor-1");
        vec![
            (driver("Got job 0 (reduce at SparkPi) with 3 output partitions", json!({"job_id": 0})), 1_000),
            (driver("Submitting 3 missing tasks from ResultStage 0 (MapPartitionsRDD[1] at map at SparkPi) (first 15 tasks are for partitions Vector(0, 1, 2))", json!({"job_id": 0, "stage_id": 0, "stage_attempt": 0})), 1_001),
            (driver("Registered executor x (host2) with ID 1, ResourceProfileId 0", json!({"event": "executor_registered", "executor_id": "1", "host": "host2"})), 990),
            (lifecycle(&exec_actor, "actor_started", 1, None), 980),
            (json!({"msg": "Got assigned task 0", "cluster": "c1", "actor": exec_actor, "actor_type": "CoarseGrainedExecutorBackend",
                "app_id": APP, "attempt": 1, "container_id": C2, "executor_id": "1", "task_id": 0}), 1_010),
            (start_task(0, "1"), 1_005),
            (start_task(1, "1"), 1_006),
            (start_task(2, "1"), 1_007),
            (end_task(0, "1", "Finished task 0.0 in stage 0.0 (TID 0) in 20 ms on host2 (executor 1) (1/3)"), 1_025),
            (end_task(2, "1", "Lost task 2.0 in stage 0.0 (TID 2) (host2 executor 1): TaskKilled (another attempt succeeded)"), 1_030),
            ({ let mut r = lifecycle(&exec_actor, "fault_injected", 1, None); r["msg"] = json!("fault injection: stop it"); r["by"] = json!("chaos"); r["container_id"] = json!(C2); r }, 1_040),
            (lifecycle(&exec_actor, "actor_failed", 1, Some("killed by chaos")), 1_041),
            (lifecycle(&exec_actor, "actor_restarted", 2, None), 1_050),
            (driver("Removed executor 1 on host2: Container from a bad node", json!({"event": "executor_removed", "executor_id": "1", "reason": "Container from a bad node"})), 1_060),
            (end_task(1, "1", "Lost task 1.0 in stage 0.0 (TID 1) (host2 executor 1): ExecutorLostFailure (executor 1 exited)"), 1_061),
        ]
    }

    fn build(records: &[(Value, i64)]) -> Timeline {
        let mut b = TimelineBuilder::new(APP);
        for (r, at) in records {
            b.push(r, *at);
        }
        b.timeline().clone()
    }

    #[test]
    fn a_run_becomes_lanes_jobs_stages_bars_and_marks() {
        let t = build(&run());
        assert_eq!(t.start, 980);
        assert_eq!(t.last, 1_061);
        assert_eq!(t.end, None, "no final state recorded: the end is missing");
        assert_eq!(t.executors.len(), 1);
        let e = &t.executors[0];
        assert_eq!(
            (e.id.as_str(), e.host.as_str(), e.added, e.removed),
            ("1", "host2", Some(990), Some(1_060))
        );
        assert_eq!(e.container_id.as_deref(), Some(C2));
        assert_eq!(e.removed_reason.as_deref(), Some("Container from a bad node"));
        assert_eq!(e.tasks, 3);
        assert_eq!(t.jobs.len(), 1);
        assert_eq!(t.jobs[0].name, "reduce at SparkPi");
        assert_eq!(t.jobs[0].outcome, Outcome::Running);
        assert_eq!(t.stages.len(), 1);
        assert_eq!(
            (t.stages[0].name.as_str(), t.stages[0].tasks),
            ("ResultStage 0", 3)
        );
        let outcomes: Vec<(u64, Outcome, Option<i64>)> =
            t.tasks.iter().map(|b| (b.id, b.outcome, b.end)).collect();
        assert_eq!(
            outcomes,
            [
                (0, Outcome::Succeeded, Some(1_025)),
                (1, Outcome::Failed, Some(1_061)),
                (2, Outcome::Killed, Some(1_030))
            ]
        );
        assert!(t.tasks[1]
            .reason
            .as_deref()
            .unwrap()
            .contains("ExecutorLostFailure"));
        // Marks in time order, the executor's own on its lane.
        let marks: Vec<(MarkKind, i64, Option<&str>)> = t
            .marks
            .iter()
            .map(|m| (m.kind, m.at, m.executor_id.as_deref()))
            .collect();
        assert_eq!(
            marks,
            [
                (MarkKind::Kill, 1_040, Some("1")),
                (MarkKind::Failure, 1_041, Some("1")),
                (MarkKind::Restart, 1_050, Some("1")),
                (MarkKind::ExecutorLost, 1_060, Some("1"))
            ]
        );
        let kill = &t.marks[0];
        assert_eq!(kill.actor, format!("/node/nm-host2/{C2}/executor-1"));
        assert_eq!(kill.text, "fault injection: stop it (by chaos)");
        assert_eq!(kill.incarnation, Some(1));
    }

    #[test]
    fn restarts_and_incarnations_make_the_tree_in_any_order() {
        let records = run();
        let forward = build(&records);
        let mut reversed = records.clone();
        reversed.reverse();
        let backward = build(&reversed);
        assert_eq!(
            forward.actors, backward.actors,
            "the tree does not depend on reading order"
        );
        assert_eq!(forward.tasks.len(), 3);
        let a = &forward.actors[0];
        assert_eq!(a.path, format!("/node/nm-host2/{C2}/executor-1"));
        assert_eq!((a.incarnation, a.restarts, a.failures, a.alive), (2, 1, 1, true));
        assert_eq!(a.container_id.as_deref(), Some(C2));
        assert_eq!(a.actor_type, "CoarseGrainedExecutorBackend");
        // Its second incarnation stops normally: not a failure, not alive.
        let mut more = records;
        more.push((lifecycle(&a.path, "actor_stopped", 2, Some("shutdown")), 1_100));
        let t = build(&more);
        let a = &t.actors[0];
        assert_eq!((a.incarnation, a.failures, a.alive), (2, 1, false));
        assert_eq!(a.ended.as_deref(), Some("shutdown"));
        // An abnormal stop is a failure and a mark.
        more.push((
            lifecycle("/node/rm", "actor_stopped", 1, Some("killed by x")),
            1_101,
        ));
        let t = build(&more);
        let rm = t.actors.iter().find(|a| a.path == "/node/rm").unwrap();
        assert_eq!((rm.failures, rm.alive), (1, false));
        assert!(t
            .marks
            .iter()
            .any(|m| m.kind == MarkKind::Failure && m.actor == "/node/rm" && m.executor_id.is_none()));
    }

    #[test]
    fn the_end_is_the_resource_managers_final_state() {
        let mut records = run();
        let rm = |msg: &str| json!({"msg": msg, "actor": "/node/rm", "actor_type": "ResourceManager", "app_id": APP, "level": "INFO"});
        records.push((
            rm("ApplicationMaster of appattempt_1_0001_000001 unregistered with final status SUCCEEDED"),
            1_200,
        ));
        records.push((
            rm("application_1_0001 State change from RUNNING to FINISHED on event = ATTEMPT_FINISHED"),
            1_201,
        ));
        records.push((
            driver(
                "Job 0 finished: reduce at SparkPi, took 190.0 ms",
                json!({"job_id": 0}),
            ),
            1_190,
        ));
        records.push((
            driver(
                "ResultStage 0 (reduce at SparkPi) finished in 0.188 s",
                json!({"stage_id": 0, "stage_attempt": 0}),
            ),
            1_189,
        ));
        let t = build(&records);
        assert_eq!(t.end, Some(1_201));
        assert_eq!(t.final_state.as_deref(), Some("FINISHED"));
        // The restarted executor left no stop record; the application's end ended it.
        assert!(t.actors.iter().all(|a| !a.alive), "{:?}", t.actors);
        assert_eq!(t.final_status.as_deref(), Some("SUCCEEDED"));
        assert_eq!(
            (t.jobs[0].outcome, t.jobs[0].end),
            (Outcome::Succeeded, Some(1_190))
        );
        assert_eq!(t.stages[0].outcome, Outcome::Succeeded);
        assert_eq!(t.stages[0].name, "ResultStage 0 (reduce at SparkPi)");
        // A failed attempt's warning from the RM is a mark; another app's state is not an end.
        let mut other = run();
        other.push((
            json!({"msg": "application_1_0002 State change from RUNNING to FAILED on event = ATTEMPT_FAILED",
            "actor_type": "ResourceManager", "app_id": "application_1_0002"}),
            1_300,
        ));
        other.push((
            json!({"msg": "AM container exited", "level": "WARN", "actor": "/node/rm",
            "actor_type": "ResourceManager", "app_id": APP}),
            1_301,
        ));
        let t = build(&other);
        assert_eq!(t.end, None);
        assert!(t
            .marks
            .iter()
            .any(|m| m.kind == MarkKind::AttemptFailed && m.at == 1_301));
    }

    #[test]
    fn attempts_keep_their_own_ids() {
        let mut records = run();
        let mut second = start_task(0, "1");
        second["attempt"] = json!(2);
        records.push((second, 2_000));
        let t = build(&records);
        assert_eq!(t.tasks.len(), 4);
        assert_eq!(t.executors.len(), 2, "executor 1 of attempt 2 is another lane");
        assert_eq!((t.executors[1].attempt, t.executors[1].id.as_str()), (2, "1"));
        assert_eq!(t.tasks[3].outcome, Outcome::Running);
    }

    #[test]
    fn task_bars_are_bounded_and_the_oldest_are_counted() {
        let mut b = TimelineBuilder::new(APP);
        let n = MAX_TASKS as u64 + MAX_TASKS as u64 / 5;
        for tid in 0..n {
            b.push(&start_task(tid, "1"), tid as i64);
        }
        // The newest bars are kept, the first one's end is ignored, the last one's is taken.
        b.push(&end_task(0, "1", "Finished task 0.0"), n as i64);
        b.push(&end_task(n - 1, "1", "Finished task 0.0"), n as i64);
        let t = b.timeline();
        assert_eq!(t.tasks.len(), MAX_TASKS);
        assert_eq!(t.tasks.len() as u64 + t.tasks_dropped, n);
        assert_eq!(
            t.tasks.last().map(|b| (b.id, b.outcome)),
            Some((n - 1, Outcome::Succeeded))
        );
        assert_eq!(t.tasks[0].id, t.tasks_dropped);
        assert_eq!(t.executors[0].tasks, n);
    }

    #[test]
    fn marks_are_bounded_and_the_newest_kept_in_any_order() {
        let mut b = TimelineBuilder::new(APP);
        let n = (MAX_MARKS + MAX_MARKS / 5) as i64;
        // Two files' marks interleaved out of time order.
        for i in 0..n {
            let at = if i % 2 == 0 { i } else { n + i };
            b.push(&lifecycle("/node/rm", "actor_restarted", 2, None), at);
        }
        let t = b.timeline();
        assert_eq!(t.marks.len(), MAX_MARKS);
        assert_eq!(t.marks_dropped, n as u64 - MAX_MARKS as u64);
        assert!(t.marks.windows(2).all(|w| w[0].at <= w[1].at), "in time order");
        assert_eq!(t.marks.last().map(|m| m.at), Some(2 * n - 1));
        assert_eq!(t.actors[0].restarts as i64, n, "the tree counts every restart");
    }

    #[test]
    fn records_without_the_fields_change_nothing() {
        let mut b = TimelineBuilder::new(APP);
        for r in [
            json!({}),
            json!({"msg": 5, "task_id": "x", "index": []}),
            json!({"event": "executor_registered"}),
            json!({"event": "actor_failed"}),
            json!({"msg": "Job 7 finished: x", "job_id": 7}),
            json!({"msg": "ResultStage 3 (x) finished in 1 s", "stage_id": 3}),
        ] {
            b.push(&r, 5);
        }
        let t = b.timeline();
        assert!(t.executors.is_empty() && t.jobs.is_empty() && t.stages.is_empty() && t.tasks.is_empty());
        assert!(t.actors.is_empty());
        assert_eq!(t.marks.len(), 1, "a failure without an actor is still a mark");
    }
}
