//! [`LocalRunner`]: a [`JobRunner`] that runs jobs in the calling thread with the same
//! [`run_task`] executors use — the reference evaluator the distributed engine's answers are
//! compared with, and what this module's tests run on.
//!
//! Layer: rdd (the Spark side's data model, above yarn; no actors).
//!
//! A job is split into stages at shuffle dependencies; missing map stages run first (parents
//! before children), every task of a stage in partition order, one attempt each. Map
//! outputs stay in memory for the runner's life, so a later job reading the same shuffle
//! skips its map stage (Spark's "skipped" stages). A failed task aborts the job with
//! Spark's local-mode message (`Job aborted due to stage failure: Task 1 in stage 0.0
//! failed 1 times, most recent failure: Lost task 1.0 in stage 0.0 (TID 1) (localhost
//! executor driver): java.lang.RuntimeException: boom`). [`LocalRunner::cancel`] makes
//! running tasks see themselves killed at their next check.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::api::{JobError, JobRunner};
use super::lineage::{Lineage, RddId, ShuffleDep, ShuffleId};
use super::task::{
    run_task, ResultFunc, StageTask, TaskContext, TaskCounts, TaskError, TaskKind, TaskOutput,
};
use super::value::Value;

/// One map output: its buckets, by reduce partition.
type MapOutput = Vec<Vec<u8>>;

#[derive(Default)]
struct State {
    next_stage: u32,
    next_task: u64,
    next_job: u32,
    outputs: HashMap<ShuffleId, Arc<Vec<MapOutput>>>,
    jobs: Vec<(String, Vec<u32>)>,
    tasks: u64,
    counts: TaskCounts,
}

/// An in-process SparkContext back end.
pub struct LocalRunner {
    app_name: String,
    default_parallelism: u32,
    configured_parallelism: Option<u32>,
    next_rdd: AtomicU32,
    next_shuffle: AtomicU32,
    cancelled: AtomicBool,
    state: Mutex<State>,
}

impl LocalRunner {
    /// A runner whose call sites read `<method> at <app_short_name>`.
    pub fn new(app_short_name: impl Into<String>, default_parallelism: u32) -> LocalRunner {
        LocalRunner {
            app_name: app_short_name.into(),
            default_parallelism,
            configured_parallelism: None,
            next_rdd: AtomicU32::new(0),
            next_shuffle: AtomicU32::new(0),
            cancelled: AtomicBool::new(false),
            state: Mutex::new(State::default()),
        }
    }

    /// As if `spark.default.parallelism` were set to `n` (it is then the default parallelism
    /// and what `reduceByKey` without a count uses).
    pub fn with_configured_parallelism(mut self, n: u32) -> LocalRunner {
        self.default_parallelism = n;
        self.configured_parallelism = Some(n);
        self
    }

    /// Makes running tasks fail as killed at their next cancellation check; the job fails.
    /// The next job starts afresh.
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::SeqCst);
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Every job run so far: its call site and the partitions it computed.
    pub fn job_log(&self) -> Vec<(String, Vec<u32>)> {
        self.state().jobs.clone()
    }

    /// How many tasks ran so far (map and result).
    pub fn tasks_run(&self) -> u64 {
        self.state().tasks
    }

    /// The counts of every task so far, added up.
    pub fn total_counts(&self) -> TaskCounts {
        self.state().counts.clone()
    }

    /// Runs every task of one stage attempt; answers the outputs in partition order.
    fn run_stage(
        &self,
        lineage: &Lineage,
        stage_rdd: RddId,
        kind: TaskKind,
        partitions: &[u32],
    ) -> Result<Vec<TaskOutput>, JobError> {
        let stage = StageTask {
            lineage: lineage.for_stage(stage_rdd),
            kind,
        };
        let (stage_id, outputs) = {
            let mut st = self.state();
            let id = st.next_stage;
            st.next_stage += 1;
            (id, st.outputs.clone())
        };
        let mut results = Vec::with_capacity(partitions.len());
        for &p in partitions {
            let task_id = {
                let mut st = self.state();
                let id = st.next_task;
                st.next_task += 1;
                st.tasks += 1;
                id
            };
            let ctx = LocalTaskContext {
                stage_id,
                partition: p,
                task_id,
                outputs: &outputs,
                cancelled: &self.cancelled,
            };
            let slice = lineage.slice(stage_rdd, p).map(Cow::into_owned);
            match run_task(&stage, p, slice, &ctx) {
                Ok((out, counts)) => {
                    add_counts(&mut self.state().counts, &counts);
                    results.push(out);
                }
                Err(TaskError::Killed { reason }) => {
                    return Err(JobError::new(format!(
                        "Job aborted due to stage failure: Task {p} in stage {stage_id}.0 was killed ({reason})"
                    )));
                }
                Err(e) => {
                    return Err(JobError::stage_failure(format!(
                        "Task {p} in stage {stage_id}.0 failed 1 times, most recent failure: Lost task {p}.0 in \
                         stage {stage_id}.0 (TID {task_id}) (localhost executor driver): {e}"
                    )));
                }
            }
        }
        Ok(results)
    }

    /// Runs the map stage of `dep` (and the ones it needs) unless its outputs exist.
    fn ensure_shuffle(&self, lineage: &Lineage, dep: &ShuffleDep, depth: u32) -> Result<(), JobError> {
        if self.state().outputs.contains_key(&dep.shuffle_id) {
            return Ok(());
        }
        if depth > 10_000 {
            return Err(JobError::new(
                "lineage too deep: more than 10000 chained shuffles",
            ));
        }
        for parent in lineage.shuffle_dependencies(dep.parent) {
            self.ensure_shuffle(lineage, &parent, depth + 1)?;
        }
        let maps: Vec<u32> = (0..dep.num_maps).collect();
        let kind = TaskKind::ShuffleMap { dep: dep.clone() };
        let mut outputs = Vec::with_capacity(maps.len());
        for out in self.run_stage(lineage, dep.parent, kind, &maps)? {
            match out {
                TaskOutput::MapOutput { buckets } => outputs.push(buckets),
                TaskOutput::Value(v) => {
                    return Err(JobError::new(format!(
                        "a map task of shuffle {} answered a value: {v}",
                        dep.shuffle_id
                    )))
                }
            }
        }
        self.state().outputs.insert(dep.shuffle_id, Arc::new(outputs));
        Ok(())
    }
}

fn add_counts(total: &mut TaskCounts, c: &TaskCounts) {
    total.records_read += c.records_read;
    total.shuffle_records_written += c.shuffle_records_written;
    total.shuffle_bytes_written += c.shuffle_bytes_written;
    total.shuffle_records_read += c.shuffle_records_read;
    total.shuffle_bytes_read += c.shuffle_bytes_read;
}

impl JobRunner for LocalRunner {
    fn new_rdd_id(&self) -> RddId {
        self.next_rdd.fetch_add(1, Ordering::SeqCst)
    }

    fn new_shuffle_id(&self) -> ShuffleId {
        self.next_shuffle.fetch_add(1, Ordering::SeqCst)
    }

    fn default_parallelism(&self) -> u32 {
        self.default_parallelism
    }

    fn default_parallelism_set(&self) -> Option<u32> {
        self.configured_parallelism
    }

    fn app_short_name(&self) -> String {
        self.app_name.clone()
    }

    fn run_job(
        &self,
        lineage: &Arc<Lineage>,
        rdd: RddId,
        partitions: &[u32],
        func: &ResultFunc,
        call_site: &str,
    ) -> Result<Vec<Value>, JobError> {
        let Some(node) = lineage.node(rdd) else {
            return Err(JobError::new(format!("RDD {rdd} is not in the job's lineage")));
        };
        let total = node.num_partitions;
        if let Some(p) = partitions.iter().find(|p| **p >= total) {
            return Err(JobError::with_class(
                "java.lang.IllegalArgumentException",
                format!(
                    "Attempting to access a non-existent partition: {p}. Total number of partitions: {total}"
                ),
            ));
        }
        {
            let mut st = self.state();
            st.next_job += 1;
            st.jobs.push((call_site.to_string(), partitions.to_vec()));
        }
        self.cancelled.store(false, Ordering::SeqCst);
        if partitions.is_empty() {
            return Ok(vec![]);
        }
        for dep in lineage.shuffle_dependencies(rdd) {
            self.ensure_shuffle(lineage, &dep, 0)?;
        }
        let kind = TaskKind::Result {
            rdd,
            func: func.clone(),
        };
        self.run_stage(lineage, rdd, kind, partitions)?
            .into_iter()
            .map(|out| match out {
                TaskOutput::Value(v) => Ok(v),
                TaskOutput::MapOutput { .. } => Err(JobError::new("a result task answered map output")),
            })
            .collect()
    }
}

/// The context of a task run by the [`LocalRunner`].
struct LocalTaskContext<'a> {
    stage_id: u32,
    partition: u32,
    task_id: u64,
    outputs: &'a HashMap<ShuffleId, Arc<Vec<MapOutput>>>,
    cancelled: &'a AtomicBool,
}

impl TaskContext for LocalTaskContext<'_> {
    fn stage_id(&self) -> u32 {
        self.stage_id
    }
    fn partition_id(&self) -> u32 {
        self.partition
    }
    fn attempt_number(&self) -> u32 {
        0
    }
    fn task_id(&self) -> u64 {
        self.task_id
    }
    fn check_cancelled(&self) -> Result<(), TaskError> {
        if self.cancelled.load(Ordering::SeqCst) {
            Err(TaskError::Killed {
                reason: "Stage cancelled".into(),
            })
        } else {
            Ok(())
        }
    }
    fn sleep(&self, d: Duration) -> Result<(), TaskError> {
        // Sleep in slices so a cancel is noticed.
        let step = Duration::from_millis(10);
        let mut left = d;
        while !left.is_zero() {
            self.check_cancelled()?;
            let now = left.min(step);
            std::thread::sleep(now);
            left -= now;
        }
        self.check_cancelled()
    }
    fn fetch_shuffle(&self, shuffle_id: ShuffleId, reduce_id: u32) -> Result<Vec<Vec<u8>>, TaskError> {
        let Some(maps) = self.outputs.get(&shuffle_id) else {
            return Err(TaskError::FetchFailed(super::task::FetchFailure {
                executor_id: None,
                host: None,
                shuffle_id,
                map_id: 0,
                map_index: 0,
                reduce_id,
                message: format!("Missing an output location for shuffle {shuffle_id} partition {reduce_id}"),
            }));
        };
        Ok(maps
            .iter()
            .map(|buckets| buckets.get(reduce_id as usize).cloned().unwrap_or_default())
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Arc;

    use super::*;
    use crate::rdd::api::{parallelize, parallelize_range, text_file, Rdd};
    use crate::rdd::ops::{register, Op};

    fn runner(name: &str, parallelism: u32) -> (Arc<LocalRunner>, Arc<dyn JobRunner>) {
        let local = Arc::new(LocalRunner::new(name, parallelism));
        let dynamic: Arc<dyn JobRunner> = local.clone();
        (local, dynamic)
    }

    fn int_op(name: &str, f: fn(i64) -> Value) {
        register(
            name,
            Op::map(move |_, v| match v {
                Value::I64(x) => Ok(f(x)),
                other => Err(TaskError::exception(
                    "java.lang.ClassCastException",
                    other.to_string(),
                )),
            }),
        );
    }

    /// Spark's `glom().collect()` rendering: one `[a b c]` line per partition.
    fn glom(rdd: &Rdd) -> String {
        rdd.collect_partitions()
            .unwrap()
            .iter()
            .map(|p| {
                format!(
                    "[{}]",
                    p.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(" ")
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    const WORDS: &str = include_str!("testdata/words.txt");

    /// The word-count input Spark read, written to a temporary file.
    fn words_file() -> (tempfile::TempDir, String) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("words.txt");
        std::fs::write(&path, WORDS).unwrap();
        let path = path.to_string_lossy().into_owned();
        (dir, path)
    }

    fn fixture(name: &str) -> &'static str {
        match name {
            "wc" => include_str!("testdata/spark_wc.txt"),
            "gb" => include_str!("testdata/spark_gb.txt"),
            "rb" => include_str!("testdata/spark_rb.txt"),
            "tk" => include_str!("testdata/spark_tk.txt"),
            "lk" => include_str!("testdata/spark_lk.txt"),
            "dk" => include_str!("testdata/spark_dk.txt"),
            "pb" => include_str!("testdata/spark_pb.txt"),
            _ => "",
        }
    }

    #[test]
    fn word_count_matches_spark_and_a_plain_count() {
        // Spark 4.3 (local[2]): sc.textFile(words, 3).flatMap(_.split(" ")).map((_, 1))
        //   .reduceByKey(_ + _).glom().collect()
        let (_, sc) = runner("WordCount", 2);
        let (_dir, path) = words_file();
        let lines = text_file(&sc, &path, Some(3)).unwrap();
        assert_eq!(lines.num_partitions(), 3);
        let counts = lines
            .flat_map("split", vec![])
            .map("pair_with_one", vec![])
            .reduce_by_key("add", None);
        assert_eq!(counts.num_partitions(), 3);
        assert_eq!(glom(&counts), fixture("wc"));
        // The same counts as a plain HashMap over the file.
        let mut expected: HashMap<String, i64> = HashMap::new();
        for line in WORDS.lines() {
            let mut words = Vec::new();
            crate::rdd::ops::java_split_into(line, " ", &mut words);
            for w in words {
                *expected
                    .entry(w.as_str().unwrap_or_default().to_string())
                    .or_default() += 1;
            }
        }
        let got: HashMap<String, i64> = counts
            .collect()
            .unwrap()
            .into_iter()
            .map(|v| {
                let (k, n) = v.into_pair().unwrap();
                (k.as_str().unwrap().to_string(), n.as_i64().unwrap())
            })
            .collect();
        assert_eq!(got, expected);
    }

    #[test]
    fn shuffles_come_out_in_sparks_order() {
        let (_, sc) = runner("Order", 2);
        int_op("test.local.mod131", |x| Value::pair(x % 131 - 60, x));
        int_op("test.local.scatter", |x| Value::pair((x * 7919) % 1000 - 500, 1));
        int_op("test.local.tuple_key", |x| {
            Value::pair(Value::pair(x % 7, (x % 5).to_string()), x)
        });
        int_op("test.local.long_key", |x| {
            Value::pair(x * 3_000_000_000 - 600_000_000_000, x)
        });
        int_op("test.local.double_key", |x| Value::pair(x as f64 / 8.0, 1));
        int_op("test.local.mod6", |x| Value::pair(x % 6, x));
        let range = |start, end, n| parallelize_range(&sc, start, end, 1, Some(n)).unwrap();
        // groupByKey(3) of (x % 131 - 60, x) for 1 to 600 in 4: values in arrival order.
        let gb = range(1, 601, 4)
            .map("test.local.mod131", vec![])
            .group_by_key(Some(3));
        assert_eq!(glom(&gb), fixture("gb"));
        // reduceByKey(_ + _, 3) of Int keys -500..499 (map-side combine, table growth).
        let rb = range(1, 5001, 4)
            .map("test.local.scatter", vec![])
            .reduce_by_key("add", Some(3));
        assert_eq!(glom(&rb), fixture("rb"));
        // Tuple keys ((x % 7, (x % 5).toString)).
        let tk = range(1, 301, 2)
            .map("test.local.tuple_key", vec![])
            .reduce_by_key("add", Some(2));
        assert_eq!(glom(&tk), fixture("tk"));
        // Long keys beyond Int range.
        let lk = range(1, 401, 3)
            .map("test.local.long_key", vec![])
            .reduce_by_key("add", Some(4));
        assert_eq!(glom(&lk), fixture("lk"));
        // Double keys.
        let dk = range(1, 301, 2)
            .map("test.local.double_key", vec![])
            .reduce_by_key("add", Some(3));
        assert_eq!(glom(&dk), fixture("dk"));
        // partitionBy: no aggregator, records in arrival order.
        let pb = range(1, 41, 3).map("test.local.mod6", vec![]).partition_by(2);
        assert_eq!(glom(&pb), fixture("pb"));
    }

    #[test]
    fn map_outputs_are_reused_across_jobs() {
        let (local, sc) = runner("Reuse", 2);
        let counts = parallelize(&sc, vec!["a".into(), "b".into(), "a".into()], Some(2))
            .unwrap()
            .map("pair_with_one", vec![])
            .reduce_by_key("add", None);
        assert_eq!(counts.count().unwrap(), 2);
        assert_eq!(local.tasks_run(), 4, "2 map tasks and 2 result tasks");
        let mut all = counts.collect().unwrap();
        all.sort();
        assert_eq!(all, vec![Value::pair("a", 2), Value::pair("b", 1)]);
        assert_eq!(local.tasks_run(), 6, "the map stage is skipped the second time");
        let c = local.total_counts();
        assert_eq!(
            c.shuffle_records_written, 3,
            "no combining across the two map tasks' distinct keys"
        );
        assert_eq!(c.shuffle_records_read, 6);
        assert!(c.shuffle_bytes_written > 0 && c.shuffle_bytes_read == 2 * c.shuffle_bytes_written);
    }

    #[test]
    fn chained_shuffles_and_empty_jobs() {
        let (local, sc) = runner("Chain", 3);
        int_op("test.local.by_parity", |x| Value::pair(x % 2, x));
        register(
            "test.local.count_as_key",
            Op::map(|_, v| match v.into_pair() {
                Ok((_, n)) => Ok(Value::pair(n, 1)),
                Err(v) => Err(TaskError::exception("E", v.to_string())),
            }),
        );
        // sum of evens and odds of 1..=100, then how many parities have each sum.
        let sums = parallelize_range(&sc, 1, 101, 1, None)
            .unwrap()
            .map("test.local.by_parity", vec![])
            .reduce_by_key("add", Some(2));
        let hist = sums
            .map("test.local.count_as_key", vec![])
            .reduce_by_key("add", Some(3));
        let mut got = hist.collect().unwrap();
        got.sort();
        assert_eq!(got, vec![Value::pair(2500, 1), Value::pair(2550, 1)]);
        assert_eq!(local.job_log().len(), 1);
        // A job over no partitions runs nothing.
        let empty = parallelize(&sc, vec![], Some(1)).unwrap();
        let before = local.tasks_run();
        let l = empty.lineage();
        assert_eq!(
            sc.run_job(&l, empty.id(), &[], &ResultFunc::Count, "count at Chain")
                .unwrap(),
            vec![]
        );
        assert_eq!(local.tasks_run(), before);
        let e = sc
            .run_job(&l, empty.id(), &[1], &ResultFunc::Count, "count at Chain")
            .unwrap_err();
        assert_eq!(
            e.message,
            "Attempting to access a non-existent partition: 1. Total number of partitions: 1"
        );
    }

    #[test]
    fn failures_abort_the_job_with_sparks_message() {
        let (_, sc) = runner("Fails", 2);
        let rdd = parallelize_range(&sc, 1, 11, 1, Some(2))
            .unwrap()
            .map("fail", vec![Value::str("boom")]);
        let e = rdd.count().unwrap_err();
        assert_eq!(e.class_name, "org.apache.spark.SparkException");
        assert_eq!(
            e.message,
            "Job aborted due to stage failure: Task 0 in stage 0.0 failed 1 times, most recent failure: Lost task \
             0.0 in stage 0.0 (TID 0) (localhost executor driver): java.lang.RuntimeException: boom"
        );
        let e = parallelize_range(&sc, 1, 11, 1, Some(2))
            .unwrap()
            .map("no.such.op", vec![])
            .collect()
            .unwrap_err();
        assert!(
            e.message
                .ends_with("java.lang.ClassNotFoundException: operation 'no.such.op' is not registered"),
            "{e}"
        );
    }

    #[test]
    fn cancel_kills_running_tasks() {
        let local = Arc::new(LocalRunner::new("Cancel", 1));
        let sc: Arc<dyn JobRunner> = local.clone();
        let rdd = parallelize_range(&sc, 0, 100, 1, Some(1))
            .unwrap()
            .map("sleep_ms", vec![Value::I64(20)]);
        let canceller = {
            let local = local.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(60));
                local.cancel();
            })
        };
        let started = std::time::Instant::now();
        let e = rdd.count().unwrap_err();
        let _ = canceller.join();
        assert!(e.message.contains("was killed (Stage cancelled)"), "{e}");
        assert!(started.elapsed() < Duration::from_secs(1));
        // The next job runs normally.
        assert_eq!(
            parallelize_range(&sc, 0, 5, 1, Some(1)).unwrap().count().unwrap(),
            5
        );
    }
}
