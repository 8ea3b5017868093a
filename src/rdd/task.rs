//! What a task computes and how it runs where it is sent: the stage binary (the lineage of
//! one stage and what to do with a partition), the task context the executor provides
//! (cancellation, sleeping on the cluster clock, shuffle fetches), and the outcome.
//!
//! Layer: rdd (the Spark side's data model, above yarn; no actors).

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::lineage::{Lineage, OpCall, RddId, ShuffleDep, ShuffleId, Slice};
use super::ops::{self, DriverContext, OpCtx};
use super::value::Value;

/// What a result task computes from its partition's records (the function of an action).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ResultFunc {
    /// The number of records (`Int`).
    Count,
    /// Every record, in order (`List`).
    Collect,
    /// The records merged with a registered reduce operation (`Null` for an empty partition).
    Reduce(OpCall),
    /// The numeric sum (`Double`).
    Sum,
    /// The first n records (`List`).
    Take(u32),
}

/// The message of `reduce`/`first` over an RDD without records (Spark's
/// `UnsupportedOperationException: empty collection`).
pub const EMPTY_COLLECTION: &str = "empty collection";

impl ResultFunc {
    /// Spark's name of the action (`count`, `collect`, `reduce`, `sum`, `take`).
    pub fn action_name(&self) -> &'static str {
        match self {
            ResultFunc::Count => "count",
            ResultFunc::Collect => "collect",
            ResultFunc::Reduce(_) => "reduce",
            ResultFunc::Sum => "sum",
            ResultFunc::Take(_) => "take",
        }
    }

    /// The driver's side of the action: the job's answer from one result per partition, in
    /// partition order. `Count` sums (`I64`), `Collect` concatenates (`List`), `Reduce`
    /// merges the non-`Null` results with the operation (all `Null`: [`EMPTY_COLLECTION`]),
    /// `Sum` adds (`F64`), `Take(n)` concatenates and keeps the first `n`.
    pub fn merge(&self, per_partition: Vec<Value>) -> Result<Value, String> {
        let not = |what: &str, v: &Value| {
            format!(
                "{} result is not {what}: {} {v}",
                self.action_name(),
                v.type_name()
            )
        };
        match self {
            ResultFunc::Count => {
                let mut total: i64 = 0;
                for v in &per_partition {
                    total = total.saturating_add(v.as_i64().ok_or_else(|| not("an integer", v))?);
                }
                Ok(Value::I64(total))
            }
            ResultFunc::Collect | ResultFunc::Take(_) => {
                let limit = match self {
                    ResultFunc::Take(n) => *n as usize,
                    _ => usize::MAX,
                };
                let mut all = Vec::new();
                for v in per_partition {
                    if all.len() >= limit {
                        break;
                    }
                    let xs = v.into_list().map_err(|v| not("a list", &v))?;
                    let room = limit - all.len();
                    all.extend(xs.into_iter().take(room));
                }
                Ok(Value::List(all))
            }
            ResultFunc::Reduce(call) => {
                let f = ops::resolve_reduce(&call.name).map_err(|e| e.to_string())?;
                let driver = DriverContext;
                let octx = OpCtx::new(&call.args, &driver);
                let mut acc: Option<Value> = None;
                for v in per_partition.into_iter().filter(|v| !v.is_null()) {
                    acc = Some(match acc {
                        None => v,
                        Some(a) => f(&octx, a, v).map_err(|e| e.to_string())?,
                    });
                }
                acc.ok_or_else(|| EMPTY_COLLECTION.to_string())
            }
            ResultFunc::Sum => {
                let mut total = 0.0f64;
                for v in &per_partition {
                    total += v.as_f64().ok_or_else(|| not("a number", v))?;
                }
                Ok(Value::F64(total))
            }
        }
    }
}

/// What a task does with its partition.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum TaskKind {
    /// Compute `dep.parent`'s partition and write it out by `dep.partitioner`.
    ShuffleMap { dep: ShuffleDep },
    /// Compute `rdd`'s partition and apply `func`.
    Result { rdd: RddId, func: ResultFunc },
}

/// The stage binary: everything the tasks of one stage attempt share (Spark broadcasts it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StageTask {
    /// `Lineage::for_stage` of the stage's RDD.
    pub lineage: Lineage,
    pub kind: TaskKind,
}

/// Why a reduce task could not read a map output.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FetchFailure {
    /// The executor and host the output was expected on (None if no location was known).
    pub executor_id: Option<String>,
    pub host: Option<String>,
    pub shuffle_id: ShuffleId,
    pub map_id: u64,
    pub map_index: u32,
    pub reduce_id: u32,
    pub message: String,
}

/// How a task failed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum TaskError {
    /// The task's code failed (Spark's ExceptionFailure): a Java-style class name and message.
    Exception {
        class_name: String,
        message: String,
    },
    FetchFailed(FetchFailure),
    /// The task was killed (its token was cancelled).
    Killed {
        reason: String,
    },
}

impl TaskError {
    /// A failure of the task's code: a Java-style class name and a message.
    pub fn exception(class_name: impl Into<String>, message: impl Into<String>) -> TaskError {
        TaskError::Exception {
            class_name: class_name.into(),
            message: message.into(),
        }
    }

    /// Whether the task was killed.
    pub fn is_killed(&self) -> bool {
        matches!(self, TaskError::Killed { .. })
    }
}

/// Spark's `toErrorString` of the failure: `java.lang.RuntimeException: boom`,
/// `FetchFailed(...)`, `TaskKilled (reason)`.
impl fmt::Display for TaskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TaskError::Exception { class_name, message } => write!(f, "{class_name}: {message}"),
            TaskError::FetchFailed(ff) => {
                let at = match (&ff.executor_id, &ff.host) {
                    (Some(e), Some(h)) => format!("BlockManagerId({e}, {h})"),
                    _ => "null".to_string(),
                };
                write!(
                    f,
                    "FetchFailed({at}, shuffleId={}, mapIndex={}, mapId={}, reduceId={}, message=\n{}\n)",
                    ff.shuffle_id, ff.map_index, ff.map_id, ff.reduce_id, ff.message
                )
            }
            TaskError::Killed { reason } => write!(f, "TaskKilled ({reason})"),
        }
    }
}

impl std::error::Error for TaskError {}

/// How a barrier task synchronises with the others (Spark's `RequestMethod`): a plain
/// `barrier()` or an `allGather(message)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum BarrierMethod {
    Barrier,
    AllGather,
}

impl fmt::Display for BarrierMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BarrierMethod::Barrier => "BARRIER",
            BarrierMethod::AllGather => "ALL_GATHER",
        })
    }
}

/// What a task outside a barrier stage gets from `BarrierTaskContext` (Spark's
/// `BarrierTaskContext.get()` casts the task's context).
pub fn not_a_barrier_task() -> TaskError {
    TaskError::exception(
        "java.lang.ClassCastException",
        "class org.apache.spark.TaskContextImpl cannot be cast to class org.apache.spark.BarrierTaskContext",
    )
}

/// What the executor gives a running task.
pub trait TaskContext {
    fn stage_id(&self) -> u32;
    fn partition_id(&self) -> u32;
    fn attempt_number(&self) -> u32;
    fn task_id(&self) -> u64;
    /// `Err(Killed)` once the task was told to stop; long loops call it now and then.
    fn check_cancelled(&self) -> Result<(), TaskError>;
    /// Sleeps on the cluster clock; `Err(Killed)` if killed meanwhile.
    fn sleep(&self, d: Duration) -> Result<(), TaskError>;
    /// The encoded buckets for reduce partition `reduce_id` of every map output of
    /// `shuffle_id` (one entry per map output, in map index order).
    fn fetch_shuffle(&self, shuffle_id: ShuffleId, reduce_id: u32) -> Result<Vec<Vec<u8>>, TaskError>;
    /// The attempt of the task's stage (`stageAttemptNumber`).
    fn stage_attempt_number(&self) -> u32 {
        0
    }
    /// BarrierTaskContext's global sync: blocks until every task of the barrier stage
    /// attempt made the same call, then answers every task's message by partition (empty
    /// strings for `barrier()`). A failed sync (time-out, a task killed) is a
    /// `SparkException`; a task outside a barrier stage gets [`not_a_barrier_task`].
    fn barrier_sync(&self, _method: BarrierMethod, _message: &str) -> Result<Vec<String>, TaskError> {
        Err(not_a_barrier_task())
    }
}

/// Counts a task reports.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskCounts {
    pub records_read: u64,
    pub shuffle_records_written: u64,
    pub shuffle_bytes_written: u64,
    pub shuffle_records_read: u64,
    pub shuffle_bytes_read: u64,
}

/// What a task produced.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum TaskOutput {
    /// A result task's value.
    Value(Value),
    /// A shuffle map task's output: one encoded bucket per reduce partition.
    MapOutput { buckets: Vec<Vec<u8>> },
}

/// Runs one task: partition `partition` of the stage, with `slice` the partition's slice
/// when the stage starts from a parallelized collection (when `None`, the slice is looked up
/// in the stage's lineage, for lineages that still hold their slices). See
/// [`super::compute`] for how each kind of RDD is computed; never panics on bad input.
pub fn run_task(
    stage: &StageTask,
    partition: u32,
    slice: Option<Slice>,
    ctx: &dyn TaskContext,
) -> Result<(TaskOutput, TaskCounts), TaskError> {
    super::compute::run_stage_task(stage, partition, slice, ctx)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ints(xs: &[i64]) -> Vec<Value> {
        xs.iter().map(|x| Value::I64(*x)).collect()
    }

    #[test]
    fn merge_rules() {
        assert_eq!(ResultFunc::Count.merge(ints(&[3, 0, 5])), Ok(Value::I64(8)));
        assert_eq!(ResultFunc::Count.merge(vec![]), Ok(Value::I64(0)));
        let lists = vec![
            Value::List(ints(&[1, 2])),
            Value::List(vec![]),
            Value::List(ints(&[5])),
        ];
        assert_eq!(
            ResultFunc::Collect.merge(lists.clone()),
            Ok(Value::List(ints(&[1, 2, 5])))
        );
        assert_eq!(
            ResultFunc::Take(2).merge(lists.clone()),
            Ok(Value::List(ints(&[1, 2])))
        );
        assert_eq!(
            ResultFunc::Take(9).merge(lists),
            Ok(Value::List(ints(&[1, 2, 5])))
        );
        let add = ResultFunc::Reduce(OpCall::new("add", vec![]));
        assert_eq!(
            add.merge(vec![Value::I64(4), Value::Null, Value::I64(6)]),
            Ok(Value::I64(10))
        );
        assert_eq!(
            add.merge(vec![Value::Null, Value::Null]),
            Err(EMPTY_COLLECTION.to_string())
        );
        assert_eq!(add.merge(vec![]), Err(EMPTY_COLLECTION.to_string()));
        let unknown = ResultFunc::Reduce(OpCall::new("task.tests.nothing", vec![]));
        let e = unknown.merge(ints(&[1, 2])).unwrap_err();
        assert_eq!(
            e,
            "java.lang.ClassNotFoundException: operation 'task.tests.nothing' is not registered"
        );
        assert_eq!(
            ResultFunc::Sum.merge(vec![Value::F64(0.5), Value::I64(2)]),
            Ok(Value::F64(2.5))
        );
        assert_eq!(ResultFunc::Sum.merge(vec![]), Ok(Value::F64(0.0)));
        assert_eq!(
            ResultFunc::Count.merge(vec![Value::str("x")]),
            Err("count result is not an integer: Str x".into())
        );
        assert!(ResultFunc::Collect.merge(ints(&[1])).is_err());
        assert!(ResultFunc::Sum.merge(vec![Value::Null]).is_err());
    }

    #[test]
    fn task_errors_read_like_sparks() {
        let e = TaskError::exception("java.lang.RuntimeException", "boom");
        assert_eq!(e.to_string(), "java.lang.RuntimeException: boom");
        assert!(!e.is_killed());
        let k = TaskError::Killed {
            reason: "Stage cancelled".into(),
        };
        assert_eq!(k.to_string(), "TaskKilled (Stage cancelled)");
        assert!(k.is_killed());
        let f = TaskError::FetchFailed(FetchFailure {
            executor_id: Some("2".into()),
            host: Some("host2".into()),
            shuffle_id: 0,
            map_id: 3,
            map_index: 1,
            reduce_id: 4,
            message: "gone".into(),
        });
        assert_eq!(
            f.to_string(),
            "FetchFailed(BlockManagerId(2, host2), shuffleId=0, mapIndex=1, mapId=3, reduceId=4, message=\ngone\n)"
        );
    }
}
