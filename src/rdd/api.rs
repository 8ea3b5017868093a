//! The RDD API applications use: creating RDDs ([`parallelize`], [`parallelize_range`],
//! [`make_rdd`], [`text_file`]), transformations and actions on an [`Rdd`], over a
//! [`JobRunner`] that the SparkContext implements (and [`LocalRunner`](super::LocalRunner)
//! in-process).
//!
//! Layer: rdd (the Spark side's data model, above yarn; no actors).
//!
//! Names, call sites and ids follow Spark: every RDD gets the next id of its context when
//! it is created, `textFile` creates a HadoopRDD and a MapPartitionsRDD (two ids, as Spark's
//! `hadoopFile(...).map(_._2.toString)` does), call sites read `"<method> at <App>"` with the
//! application's short name where Spark would show `file:line`. Transformations are lazy
//! and cheap: an [`Rdd`] holds its node and its parents; the [`Lineage`] a job needs is
//! built once per RDD, on its first action.
//!
//! Choices that follow Spark's rules:
//! * `parallelize` slices as `ParallelCollectionRDD.slice` ([`super::slice`]); fewer than one
//!   slice is `IllegalArgumentException: Positive number of partitions required` (raised at
//!   creation here; Spark raises it when the partitions are first computed);
//! * `textFile(path, minPartitions)` defaults `minPartitions` to `min(defaultParallelism,
//!   2)` and plans splits as Hadoop does ([`super::text`]); a missing file is
//!   `InvalidInputException: Input path does not exist: file:/...` (at creation here, at the
//!   first action in Spark);
//! * `reduceByKey` / `groupByKey` without a partition count use Spark's
//!   `Partitioner.defaultPartitioner` ([`default_partitioner`]): the parent's partitioner
//!   when it has an eligible one, else `spark.default.parallelism` when it is set
//!   ([`JobRunner::default_parallelism_set`]), else the parent's partition count. When the
//!   parent is already partitioned that way there is no shuffle: the values are combined
//!   within each partition (a MapPartitionsRDD), as `combineByKeyWithClassTag` does;
//! * `filter` and the by-key operations without shuffle preserve partitioning, `map`,
//!   `flatMap` and `mapPartitions` do not (an RDD's [`Rdd::partitioner`] follows from that);
//! * `take(n)` scans partition 0 first, then more partitions per job as `RDD.take` does
//!   (`spark.rdd.limit.scaleUpFactor` = [`TAKE_SCALE_UP_FACTOR`]); `first()` is `take(1)`;
//! * `sum()` answers a `Double` (Spark's `DoubleRDDFunctions.sum`, a fold from 0.0); Spark
//!   would first map an RDD of `Int`s to `Double`s (one more RDD id); no extra RDD here;
//! * shuffle ids are taken when the shuffled RDD is created (Spark takes one when the
//!   dependency is first asked for, usually at the first job).
//!
//! A transformation names a registered operation; the operation's kind (Map, Filter, ...)
//! decides what the node does, so `map` with a Filter operation filters. An unknown name
//! fails the job's tasks (`ClassNotFoundException: operation 'x' is not registered`).

use std::fmt;
use std::sync::{Arc, OnceLock};

use super::lineage::{
    Aggregator, FileSplit, Lineage, OpCall, Partitioner, RddId, RddKind, RddNode, ShuffleId, Slice,
};
use super::partitioner::default_partitioner;
use super::slice::{slice_values, Slices};
use super::task::{ResultFunc, EMPTY_COLLECTION};
use super::text::text_file_splits;
use super::value::Value;

/// Spark's `spark.rdd.limit.scaleUpFactor` default.
pub const TAKE_SCALE_UP_FACTOR: u64 = 4;

/// What the RDD API needs from the SparkContext.
pub trait JobRunner: Send + Sync {
    fn new_rdd_id(&self) -> RddId;
    fn new_shuffle_id(&self) -> ShuffleId;
    fn default_parallelism(&self) -> u32;
    /// `spark.default.parallelism` when it is set in the configuration (Spark's
    /// `defaultPartitioner` then uses it instead of the upstream partition count).
    fn default_parallelism_set(&self) -> Option<u32> {
        None
    }
    /// The short name used in call sites ("count at MapCount").
    fn app_short_name(&self) -> String;
    /// Runs a job computing `func` over `partitions` of `rdd`; answers one value per partition, in order.
    /// `lineage` is the RDD's own (shared with the job, never copied).
    fn run_job(
        &self,
        lineage: &Arc<Lineage>,
        rdd: RddId,
        partitions: &[u32],
        func: &ResultFunc,
        call_site: &str,
    ) -> Result<Vec<Value>, JobError>;
}

/// Why an action failed: the exception Spark would throw, by class name and message (for
/// example `org.apache.spark.SparkException` / `Job aborted due to stage failure: ...`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobError {
    pub class_name: String,
    pub message: String,
}

impl JobError {
    /// An `org.apache.spark.SparkException`.
    pub fn new(message: impl Into<String>) -> JobError {
        JobError::with_class("org.apache.spark.SparkException", message)
    }

    pub fn with_class(class_name: impl Into<String>, message: impl Into<String>) -> JobError {
        JobError {
            class_name: class_name.into(),
            message: message.into(),
        }
    }

    /// `Job aborted due to stage failure: <reason>`.
    pub fn stage_failure(reason: impl fmt::Display) -> JobError {
        JobError::new(format!("Job aborted due to stage failure: {reason}"))
    }

    /// `UnsupportedOperationException: empty collection` (reduce or first of nothing).
    pub fn empty_collection() -> JobError {
        JobError::with_class("java.lang.UnsupportedOperationException", EMPTY_COLLECTION)
    }
}

/// `class: message`, as a JVM prints an exception.
impl fmt::Display for JobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.class_name, self.message)
    }
}

impl std::error::Error for JobError {}

/// A partition as the driver sees it without running a job: which RDD's partition object
/// it is (a MapPartitionsRDD's partitions are its parent's, so `rdd_id` is the parent's, as
/// seed 002 prints `RDD: 0` for the mapped RDD), its index, and what is known of its data.
#[derive(Clone, Debug, PartialEq)]
pub struct PartitionInfo {
    pub rdd_id: RddId,
    pub index: u32,
    /// A parallelized collection's slice.
    pub slice: Option<Slice>,
    /// A text file's byte range.
    pub split: Option<FileSplit>,
}

impl PartitionInfo {
    /// The slice's values (a range is materialised), if this is a parallelized collection's.
    pub fn values(&self) -> Option<Vec<Value>> {
        self.slice.as_ref().map(Slice::to_values)
    }
}

struct RddInner {
    node: RddNode,
    parents: Vec<Arc<RddInner>>,
    partitioner: Option<Partitioner>,
    lineage: OnceLock<Arc<Lineage>>,
}

/// An RDD: a node of the lineage with its ancestors, and the context that runs its jobs.
/// Cloning is cheap.
#[derive(Clone)]
pub struct Rdd {
    runner: Arc<dyn JobRunner>,
    inner: Arc<RddInner>,
}

impl fmt::Debug for Rdd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}[{}] at {}",
            self.inner.node.class_name(),
            self.id(),
            self.inner.node.call_site
        )
    }
}

fn call_site(runner: &dyn JobRunner, method: &str) -> String {
    format!("{method} at {}", runner.app_short_name())
}

fn new_rdd(
    runner: &Arc<dyn JobRunner>,
    id: RddId,
    kind: RddKind,
    num_partitions: u32,
    call_site: String,
    parents: Vec<Arc<RddInner>>,
    partitioner: Option<Partitioner>,
) -> Rdd {
    Rdd {
        runner: runner.clone(),
        inner: Arc::new(RddInner {
            node: RddNode {
                id,
                kind,
                num_partitions,
                call_site,
            },
            parents,
            partitioner,
            lineage: OnceLock::new(),
        }),
    }
}

fn illegal_argument(message: impl Into<String>) -> JobError {
    JobError::with_class("java.lang.IllegalArgumentException", message)
}

/// An RDD in barrier mode (Spark's `RDDBarrier`), from [`Rdd::barrier`].
#[derive(Clone, Debug)]
pub struct RddBarrier {
    rdd: Rdd,
}

impl RddBarrier {
    /// `rdd.barrier().mapPartitions(f)` (`preservesPartitioning = false`): a barrier stage.
    pub fn map_partitions(&self, op: &str, args: Vec<Value>) -> Rdd {
        self.map_partitions_with(op, args, false)
    }

    /// `rdd.barrier().mapPartitions(f, preservesPartitioning)`.
    pub fn map_partitions_with(&self, op: &str, args: Vec<Value>, preserves_partitioning: bool) -> Rdd {
        self.rdd.map_partitions_node_in(
            OpCall::new(op, args),
            preserves_partitioning,
            true,
            "mapPartitions",
        )
    }
}

/// `sc.parallelize(values, numSlices)`: `num_slices` defaults to the default parallelism.
pub fn parallelize(
    runner: &Arc<dyn JobRunner>,
    values: Vec<Value>,
    num_slices: Option<u32>,
) -> Result<Rdd, JobError> {
    let id = runner.new_rdd_id();
    let n = num_slices.unwrap_or_else(|| runner.default_parallelism());
    let slices = slice_values(values, n).map_err(illegal_argument)?;
    Ok(parallel_collection(
        runner,
        id,
        slices.into(),
        vec![],
        "parallelize",
    ))
}

/// `sc.parallelize(start until end_exclusive by step, numSlices)`: slices stay ranges, each
/// computed from the range when it is asked for (nothing is held per slice). Scala's `a to b`
/// is `a until b + 1`.
pub fn parallelize_range(
    runner: &Arc<dyn JobRunner>,
    start: i64,
    end_exclusive: i64,
    step: i64,
    num_slices: Option<u32>,
) -> Result<Rdd, JobError> {
    let id = runner.new_rdd_id();
    let n = num_slices.unwrap_or_else(|| runner.default_parallelism());
    let slices = Slices::range(start, end_exclusive, step, n).map_err(illegal_argument)?;
    Ok(parallel_collection(runner, id, slices, vec![], "parallelize"))
}

/// `sc.makeRDD(seq: Seq[(T, Seq[String])])`: one partition per value (at least one), each
/// preferring its hosts.
pub fn make_rdd(runner: &Arc<dyn JobRunner>, values: Vec<(Value, Vec<String>)>) -> Rdd {
    let id = runner.new_rdd_id();
    let (slices, locations): (Vec<Slice>, Vec<Vec<String>>) = values
        .into_iter()
        .map(|(v, hosts)| (Slice::Values(vec![v]), hosts))
        .unzip();
    let slices = if slices.is_empty() {
        vec![Slice::Values(vec![])]
    } else {
        slices
    };
    parallel_collection(runner, id, slices.into(), locations, "makeRDD")
}

fn parallel_collection(
    runner: &Arc<dyn JobRunner>,
    id: RddId,
    slices: Slices,
    locations: Vec<Vec<String>>,
    method: &str,
) -> Rdd {
    let n = slices.len() as u32;
    new_rdd(
        runner,
        id,
        RddKind::ParallelCollection { slices, locations },
        n,
        call_site(runner.as_ref(), method),
        vec![],
        None,
    )
}

/// `sc.textFile(path, minPartitions)`: a HadoopRDD of the file's lines mapped to strings (two
/// RDDs, as in Spark). `min_partitions` defaults to `min(defaultParallelism, 2)`.
pub fn text_file(
    runner: &Arc<dyn JobRunner>,
    path: &str,
    min_partitions: Option<u32>,
) -> Result<Rdd, JobError> {
    let hadoop_id = runner.new_rdd_id();
    let mapped_id = runner.new_rdd_id();
    let min = min_partitions.unwrap_or_else(|| runner.default_parallelism().min(2));
    let splits = text_file_splits(path, min).map_err(|m| {
        let class = if m.starts_with("Input path does not exist") {
            "org.apache.hadoop.mapred.InvalidInputException"
        } else if m.starts_with("No FileSystem for scheme") {
            "org.apache.hadoop.fs.UnsupportedFileSystemException"
        } else {
            "java.io.IOException"
        };
        JobError::with_class(class, m)
    })?;
    let local = super::text::local_path(path).map_err(|m| JobError::with_class("java.io.IOException", m))?;
    let site = call_site(runner.as_ref(), "textFile");
    let n = splits.len() as u32;
    let hadoop = new_rdd(
        runner,
        hadoop_id,
        RddKind::TextFile {
            path: local.to_string_lossy().into_owned(),
            splits,
        },
        n,
        site.clone(),
        vec![],
        None,
    );
    Ok(hadoop.child(
        mapped_id,
        RddKind::MapPartitions {
            parent: hadoop_id,
            op: OpCall::new("identity", vec![]),
            preserves_partitioning: false,
            is_from_barrier: false,
        },
        n,
        site,
        None,
    ))
}

impl Rdd {
    pub fn id(&self) -> RddId {
        self.inner.node.id
    }

    pub fn num_partitions(&self) -> u32 {
        self.inner.node.num_partitions
    }

    /// Where it was created (`map at MapCount`).
    pub fn call_site(&self) -> &str {
        &self.inner.node.call_site
    }

    /// Spark's class name (`ParallelCollectionRDD`, `MapPartitionsRDD`, ...).
    pub fn class_name(&self) -> &'static str {
        self.inner.node.class_name()
    }

    pub fn node(&self) -> &RddNode {
        &self.inner.node
    }

    pub fn runner(&self) -> &Arc<dyn JobRunner> {
        &self.runner
    }

    /// How its records are partitioned by key, if known (Spark's `rdd.partitioner`).
    pub fn partitioner(&self) -> Option<&Partitioner> {
        self.inner.partitioner.as_ref()
    }

    /// The lineage of this RDD: it and every RDD it derives from (built on first use).
    pub fn lineage(&self) -> Arc<Lineage> {
        self.inner
            .lineage
            .get_or_init(|| {
                let mut l = Lineage::default();
                let mut stack: Vec<&RddInner> = vec![&self.inner];
                while let Some(r) = stack.pop() {
                    if l.nodes.contains_key(&r.node.id) {
                        continue;
                    }
                    l.insert(r.node.clone());
                    stack.extend(r.parents.iter().map(|p| p.as_ref()));
                }
                Arc::new(l)
            })
            .clone()
    }

    /// The partitions the driver knows without a job (see [`PartitionInfo`]).
    pub fn partitions(&self) -> Vec<PartitionInfo> {
        let mut r: &RddInner = &self.inner;
        loop {
            match &r.node.kind {
                RddKind::MapPartitions { .. } => match r.parents.first() {
                    Some(p) => r = p,
                    None => return vec![],
                },
                RddKind::ParallelCollection { slices, .. } => {
                    return (0u32..)
                        .zip(slices.iter())
                        .map(|(index, s)| PartitionInfo {
                            rdd_id: r.node.id,
                            index,
                            slice: Some(s.into_owned()),
                            split: None,
                        })
                        .collect()
                }
                RddKind::TextFile { splits, .. } => {
                    return (0u32..)
                        .zip(splits)
                        .map(|(index, s)| PartitionInfo {
                            rdd_id: r.node.id,
                            index,
                            slice: None,
                            split: Some(s.clone()),
                        })
                        .collect()
                }
                RddKind::Shuffled { .. } => {
                    return (0..r.node.num_partitions)
                        .map(|index| PartitionInfo {
                            rdd_id: r.node.id,
                            index,
                            slice: None,
                            split: None,
                        })
                        .collect()
                }
            }
        }
    }

    fn child(
        &self,
        id: RddId,
        kind: RddKind,
        n: u32,
        call_site: String,
        partitioner: Option<Partitioner>,
    ) -> Rdd {
        new_rdd(
            &self.runner,
            id,
            kind,
            n,
            call_site,
            vec![self.inner.clone()],
            partitioner,
        )
    }

    fn map_partitions_node(&self, op: OpCall, preserves_partitioning: bool, method: &str) -> Rdd {
        self.map_partitions_node_in(op, preserves_partitioning, false, method)
    }

    fn map_partitions_node_in(
        &self,
        op: OpCall,
        preserves_partitioning: bool,
        is_from_barrier: bool,
        method: &str,
    ) -> Rdd {
        let id = self.runner.new_rdd_id();
        let partitioner = if preserves_partitioning {
            self.inner.partitioner.clone()
        } else {
            None
        };
        self.child(
            id,
            RddKind::MapPartitions {
                parent: self.id(),
                op,
                preserves_partitioning,
                is_from_barrier,
            },
            self.num_partitions(),
            call_site(self.runner.as_ref(), method),
            partitioner,
        )
    }

    /// `rdd.barrier()`: the RDD in barrier mode; its `mapPartitions` makes a barrier stage,
    /// whose tasks all launch together and can synchronise with `BarrierTaskContext`'s
    /// `barrier()` / `allGather()` ([`super::OpCtx::barrier`]).
    pub fn barrier(&self) -> RddBarrier {
        RddBarrier { rdd: self.clone() }
    }

    /// Spark's `rdd.isBarrier()`: computed in a barrier stage.
    pub fn is_barrier(&self) -> bool {
        self.lineage().is_barrier(self.id())
    }

    /// `rdd.map(f)` with the registered operation `op` (captured values in `args`).
    pub fn map(&self, op: &str, args: Vec<Value>) -> Rdd {
        self.map_partitions_node(OpCall::new(op, args), false, "map")
    }

    /// `rdd.filter(f)` (preserves partitioning).
    pub fn filter(&self, op: &str, args: Vec<Value>) -> Rdd {
        self.map_partitions_node(OpCall::new(op, args), true, "filter")
    }

    /// `rdd.flatMap(f)`.
    pub fn flat_map(&self, op: &str, args: Vec<Value>) -> Rdd {
        self.map_partitions_node(OpCall::new(op, args), false, "flatMap")
    }

    /// `rdd.mapPartitions(f)` (`preservesPartitioning = false`).
    pub fn map_partitions(&self, op: &str, args: Vec<Value>) -> Rdd {
        self.map_partitions_node(OpCall::new(op, args), false, "mapPartitions")
    }

    /// `rdd.mapPartitions(f, preservesPartitioning)`.
    pub fn map_partitions_with(&self, op: &str, args: Vec<Value>, preserves_partitioning: bool) -> Rdd {
        self.map_partitions_node(OpCall::new(op, args), preserves_partitioning, "mapPartitions")
    }

    fn by_key_partitioner(&self, num_partitions: Option<u32>) -> Partitioner {
        match num_partitions {
            Some(partitions) => Partitioner::Hash { partitions },
            None => default_partitioner(
                &[(self.num_partitions(), self.inner.partitioner.clone())],
                self.runner.default_parallelism_set(),
            ),
        }
    }

    fn shuffled(
        &self,
        partitioner: Partitioner,
        aggregator: Option<Aggregator>,
        combine: bool,
        method: &str,
    ) -> Rdd {
        let id = self.runner.new_rdd_id();
        let shuffle_id = self.runner.new_shuffle_id();
        let n = partitioner.num_partitions();
        self.child(
            id,
            RddKind::Shuffled {
                parent: self.id(),
                shuffle_id,
                partitioner: partitioner.clone(),
                aggregator,
                map_side_combine: combine,
            },
            n,
            call_site(self.runner.as_ref(), method),
            Some(partitioner),
        )
    }

    /// `rdd.reduceByKey(f)` / `reduceByKey(f, numPartitions)` with the registered Reduce
    /// operation `op`: map-side combine, then a shuffle (none when already partitioned so).
    pub fn reduce_by_key(&self, op: &str, num_partitions: Option<u32>) -> Rdd {
        let partitioner = self.by_key_partitioner(num_partitions);
        if self.inner.partitioner.as_ref() == Some(&partitioner) {
            let args = vec![Value::str(op), Value::List(vec![])];
            return self.map_partitions_node(OpCall::new("combine_values_by_key", args), true, "reduceByKey");
        }
        let agg = Aggregator::Reduce(OpCall::new(op, vec![]));
        self.shuffled(partitioner, Some(agg), true, "reduceByKey")
    }

    /// `rdd.groupByKey()` / `groupByKey(numPartitions)`: values gathered into a `List` per key
    /// (no map-side combine, as in Spark).
    pub fn group_by_key(&self, num_partitions: Option<u32>) -> Rdd {
        let partitioner = self.by_key_partitioner(num_partitions);
        if self.inner.partitioner.as_ref() == Some(&partitioner) {
            return self.map_partitions_node(OpCall::new("group_values_by_key", vec![]), true, "groupByKey");
        }
        self.shuffled(partitioner, Some(Aggregator::Group), false, "groupByKey")
    }

    /// `rdd.partitionBy(new HashPartitioner(n))`: the same RDD when already partitioned so.
    pub fn partition_by(&self, num_partitions: u32) -> Rdd {
        let partitioner = Partitioner::Hash {
            partitions: num_partitions,
        };
        if self.inner.partitioner.as_ref() == Some(&partitioner) {
            return self.clone();
        }
        self.shuffled(partitioner, None, false, "partitionBy")
    }

    fn run(&self, partitions: &[u32], func: &ResultFunc, method: &str) -> Result<Vec<Value>, JobError> {
        let lineage = self.lineage();
        let site = call_site(self.runner.as_ref(), method);
        let results = self
            .runner
            .run_job(&lineage, self.id(), partitions, func, &site)?;
        if results.len() != partitions.len() {
            return Err(JobError::new(format!(
                "job at {site} answered {} results for {} partitions",
                results.len(),
                partitions.len()
            )));
        }
        Ok(results)
    }

    fn run_all(&self, func: &ResultFunc, method: &str) -> Result<Value, JobError> {
        let all: Vec<u32> = (0..self.num_partitions()).collect();
        let results = self.run(&all, func, method)?;
        func.merge(results).map_err(|m| {
            if m == EMPTY_COLLECTION {
                JobError::empty_collection()
            } else {
                JobError::new(m)
            }
        })
    }

    /// `rdd.count()`.
    pub fn count(&self) -> Result<u64, JobError> {
        let v = self.run_all(&ResultFunc::Count, "count")?;
        v.as_i64()
            .and_then(|n| u64::try_from(n).ok())
            .ok_or_else(|| JobError::new(format!("count answered {v}")))
    }

    /// `rdd.collect()`: every record, in partition order.
    pub fn collect(&self) -> Result<Vec<Value>, JobError> {
        self.run_all(&ResultFunc::Collect, "collect")?
            .into_list()
            .map_err(|v| JobError::new(format!("collect answered {v}")))
    }

    /// `rdd.glom().collect()`: every partition's records, in one job (call site `collect`).
    pub fn collect_partitions(&self) -> Result<Vec<Vec<Value>>, JobError> {
        let all: Vec<u32> = (0..self.num_partitions()).collect();
        self.run(&all, &ResultFunc::Collect, "collect")?
            .into_iter()
            .map(|v| {
                v.into_list()
                    .map_err(|v| JobError::new(format!("collect answered {v}")))
            })
            .collect()
    }

    /// `rdd.reduce(f)` with the registered Reduce operation `op`; an RDD without records is
    /// `UnsupportedOperationException: empty collection`.
    pub fn reduce(&self, op: &str) -> Result<Value, JobError> {
        self.run_all(&ResultFunc::Reduce(OpCall::new(op, vec![])), "reduce")
    }

    /// `rdd.sum()`: the records as doubles, added.
    pub fn sum(&self) -> Result<f64, JobError> {
        let v = self.run_all(&ResultFunc::Sum, "sum")?;
        v.as_f64()
            .ok_or_else(|| JobError::new(format!("sum answered {v}")))
    }

    /// `rdd.take(n)`: the first `n` records, scanning as few partitions as Spark would.
    pub fn take(&self, n: u32) -> Result<Vec<Value>, JobError> {
        self.take_at(n, "take")
    }

    /// `rdd.first()`.
    pub fn first(&self) -> Result<Value, JobError> {
        self.take_at(1, "first")?
            .into_iter()
            .next()
            .ok_or_else(JobError::empty_collection)
    }

    fn take_at(&self, num: u32, method: &str) -> Result<Vec<Value>, JobError> {
        let num = num as usize;
        let total = u64::from(self.num_partitions());
        let mut buf: Vec<Value> = Vec::new();
        let mut scanned: u64 = 0;
        while buf.len() < num && scanned < total {
            let left = num - buf.len();
            let mut to_try: u64 = 1;
            if scanned > 0 {
                if buf.is_empty() {
                    to_try = scanned * TAKE_SCALE_UP_FACTOR;
                } else {
                    let estimate = (1.5 * left as f64 * scanned as f64 / buf.len() as f64).ceil() as u64;
                    to_try = estimate.min(scanned * TAKE_SCALE_UP_FACTOR);
                }
            }
            let end = scanned.saturating_add(to_try).min(total);
            let parts: Vec<u32> = (scanned..end).filter_map(|p| u32::try_from(p).ok()).collect();
            let left_u32 = u32::try_from(left).unwrap_or(u32::MAX);
            for v in self.run(&parts, &ResultFunc::Take(left_u32), method)? {
                let xs = v
                    .into_list()
                    .map_err(|v| JobError::new(format!("take answered {v}")))?;
                let room = num - buf.len();
                buf.extend(xs.into_iter().take(room));
            }
            scanned = end;
        }
        Ok(buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rdd::local::LocalRunner;
    use crate::rdd::ops::{register, Op};
    use crate::rdd::task::TaskError;

    fn runner(name: &str, parallelism: u32) -> (Arc<LocalRunner>, Arc<dyn JobRunner>) {
        let local = Arc::new(LocalRunner::new(name, parallelism));
        let dynamic: Arc<dyn JobRunner> = local.clone();
        (local, dynamic)
    }

    fn ints(xs: impl IntoIterator<Item = i64>) -> Vec<Value> {
        xs.into_iter().map(Value::I64).collect()
    }

    fn show(vs: &[Value]) -> String {
        vs.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(",")
    }

    #[test]
    fn seed_002_parallelize_map_count() {
        // sc.parallelize(Seq(1,2,3,4,5,6,7,8,9,10), 2).map(_ + "th value").count()
        let (local, sc) = runner("MapCount", 2);
        let parallelized = parallelize(&sc, ints(1..=10), Some(2)).unwrap();
        let transformed = parallelized.map("append", vec![Value::str("th value")]);
        assert_eq!((parallelized.id(), transformed.id()), (0, 1));
        assert_eq!(parallelized.class_name(), "ParallelCollectionRDD");
        assert_eq!(transformed.class_name(), "MapPartitionsRDD");
        assert_eq!(parallelized.call_site(), "parallelize at MapCount");
        assert_eq!(transformed.call_site(), "map at MapCount");
        // The driver-side view: "RDD: 0, Partition: 0, Values: 1,2,3,4,5" for both RDDs.
        for rdd in [&parallelized, &transformed] {
            let lines: Vec<String> = rdd
                .partitions()
                .iter()
                .map(|p| {
                    format!(
                        "RDD: {}, Partition: {}, Values: {}",
                        p.rdd_id,
                        p.index,
                        show(&p.values().unwrap())
                    )
                })
                .collect();
            assert_eq!(
                lines,
                vec![
                    "RDD: 0, Partition: 0, Values: 1,2,3,4,5",
                    "RDD: 0, Partition: 1, Values: 6,7,8,9,10"
                ]
            );
        }
        assert_eq!(parallelized.partitions(), transformed.partitions());
        assert_eq!(transformed.count().unwrap(), 10);
        assert_eq!(
            local.job_log(),
            vec![("count at MapCount".to_string(), vec![0, 1])]
        );
        assert_eq!(
            transformed.take(2).unwrap(),
            vec![Value::str("1th value"), Value::str("2th value")]
        );
        let lineage = transformed.lineage();
        assert_eq!(lineage.nodes.len(), 2);
        assert_eq!(lineage.stage_rdds(1).len(), 2);
        // `1 to 10` as a lazy range slices the same way.
        let range = parallelize_range(&sc, 1, 11, 1, Some(2)).unwrap();
        let values: Vec<String> = range
            .partitions()
            .iter()
            .map(|p| show(&p.values().unwrap()))
            .collect();
        assert_eq!(values, vec!["1,2,3,4,5", "6,7,8,9,10"]);
        assert_eq!(range.id(), 2);
    }

    #[test]
    fn actions() {
        let (_, sc) = runner("Actions", 3);
        let rdd = parallelize_range(&sc, 1, 11, 1, None).unwrap();
        assert_eq!(rdd.num_partitions(), 3);
        assert_eq!(rdd.collect().unwrap(), ints(1..=10));
        assert_eq!(rdd.reduce("add").unwrap(), Value::I64(55));
        assert_eq!(rdd.reduce("max").unwrap(), Value::I64(10));
        assert_eq!(rdd.sum().unwrap(), 55.0);
        assert_eq!(rdd.first().unwrap(), Value::I64(1));
        assert_eq!(rdd.take(0).unwrap(), vec![]);
        assert_eq!(rdd.take(100).unwrap(), ints(1..=10));
        let parts = rdd.collect_partitions().unwrap();
        assert_eq!(parts, vec![ints(1..=3), ints(4..=6), ints(7..=10)]);
        let doubles = parallelize(&sc, vec![0.1.into(), 0.2.into(), 0.3.into()], Some(2)).unwrap();
        // Spark 4.3 answers 0.6 (partitions [0.1] and [0.2, 0.3] folded from 0.0, then added),
        // not 0.1 + 0.2 + 0.3 = 0.6000000000000001.
        assert_eq!(doubles.sum().unwrap(), 0.6);
        // Nothing to reduce: Spark's UnsupportedOperationException.
        let empty = parallelize(&sc, vec![], Some(2)).unwrap();
        assert_eq!(empty.count().unwrap(), 0);
        assert_eq!(empty.sum().unwrap(), 0.0);
        assert_eq!(empty.reduce("add").unwrap_err(), JobError::empty_collection());
        let e = empty.first().unwrap_err();
        assert_eq!(
            e.to_string(),
            "java.lang.UnsupportedOperationException: empty collection"
        );
        let e = parallelize(&sc, vec![Value::str("x")], Some(1))
            .unwrap()
            .sum()
            .unwrap_err();
        assert!(
            e.message
                .contains("ClassCastException: sum needs numbers, got Str x"),
            "{e}"
        );
    }

    #[test]
    fn a_range_of_a_million_partitions_is_held_once_and_small() {
        let (_, sc) = runner("Range", 2);
        let rdd = parallelize_range(&sc, 0, 1_000_000, 1, Some(1_000_000)).unwrap();
        let lineage = rdd.lineage();
        // The lineage is built once and shared (a job gets the same one, not a copy).
        assert!(Arc::ptr_eq(&lineage, &rdd.lineage()));
        // Its slices are the range, not a million listed slices.
        assert!(crate::rdd::encode(&*lineage).unwrap().len() < 100);
        assert_eq!(
            lineage.slice(rdd.id(), 123_456).as_deref(),
            Some(&Slice::Range {
                start: 123_456,
                end: 123_457,
                step: 1
            })
        );
        assert_eq!(rdd.partitions().len(), 1_000_000);
        let mapped = rdd.map("identity", vec![]);
        assert_eq!(
            mapped.partitions()[999_999].slice,
            Some(Slice::Range {
                start: 999_999,
                end: 1_000_000,
                step: 1
            })
        );
        // A job computes each partition's slice from the range.
        let small = parallelize_range(&sc, 10, 0, -3, Some(5)).unwrap();
        let sizes: Vec<u64> = small
            .partitions()
            .iter()
            .map(|p| p.slice.as_ref().map_or(0, Slice::len))
            .collect();
        assert_eq!(sizes, vec![0, 1, 1, 1, 1]);
        assert_eq!(
            small.collect().unwrap(),
            vec![Value::I64(10), Value::I64(7), Value::I64(4), Value::I64(1)]
        );
    }

    #[test]
    fn take_scans_partitions_like_spark() {
        let (local, sc) = runner("Take", 2);
        register(
            "test.api.at_least_50",
            Op::filter(|_, v| Ok(v.as_i64().is_some_and(|x| x >= 50))),
        );
        let rdd = parallelize_range(&sc, 0, 100, 1, Some(10))
            .unwrap()
            .filter("test.api.at_least_50", vec![]);
        assert_eq!(rdd.take(5).unwrap(), ints(50..55));
        // Partition 0; nothing found: 1 * 4 more; still nothing: 5 * 4 more (capped at 10).
        let parts: Vec<Vec<u32>> = local.job_log().into_iter().map(|(_, p)| p).collect();
        assert_eq!(parts, vec![vec![0], vec![1, 2, 3, 4], vec![5, 6, 7, 8, 9]]);
        assert!(local.job_log().iter().all(|(site, _)| site == "take at Take"));
        // 10 found in one partition, 5 left: ceil(1.5 * 5 * 1 / 10) = 1 more partition.
        let all = parallelize_range(&sc, 0, 100, 1, Some(10)).unwrap();
        assert_eq!(all.take(15).unwrap(), ints(0..15));
        let parts: Vec<Vec<u32>> = local.job_log().into_iter().skip(3).map(|(_, p)| p).collect();
        assert_eq!(parts, vec![vec![0], vec![1]]);
        assert_eq!(all.first().unwrap(), Value::I64(0));
        assert_eq!(
            local.job_log().last().map(|(s, _)| s.as_str()),
            Some("first at Take")
        );
    }

    #[test]
    fn by_key_operations_and_partitioners() {
        let (_, sc) = runner("ByKey", 4);
        let pairs = vec![
            Value::pair("a", 1),
            Value::pair("b", 2),
            Value::pair("a", 3),
            Value::pair("c", 4),
        ];
        let rdd = parallelize(&sc, pairs, Some(2)).unwrap();
        // Default partitioner: the parent's partition count (spark.default.parallelism unset).
        let grouped = rdd.group_by_key(None);
        assert_eq!(grouped.num_partitions(), 2);
        assert_eq!(grouped.class_name(), "ShuffledRDD");
        assert_eq!(grouped.call_site(), "groupByKey at ByKey");
        let mut got = grouped.collect().unwrap();
        got.sort();
        assert_eq!(
            got,
            vec![
                Value::pair("a", Value::List(ints([1, 3]))),
                Value::pair("b", Value::List(ints([2]))),
                Value::pair("c", Value::List(ints([4]))),
            ]
        );
        let summed = rdd.reduce_by_key("add", Some(3));
        assert_eq!(summed.partitioner(), Some(&Partitioner::Hash { partitions: 3 }));
        // Already partitioned by HashPartitioner(3): no shuffle, combined in place.
        let again = summed.reduce_by_key("add", None);
        assert_eq!(again.class_name(), "MapPartitionsRDD");
        assert_eq!(again.partitioner(), summed.partitioner());
        let mut got = again.collect().unwrap();
        got.sort();
        assert_eq!(
            got,
            vec![Value::pair("a", 4), Value::pair("b", 2), Value::pair("c", 4)]
        );
        let regrouped = summed.filter("identity", vec![]).group_by_key(Some(3));
        assert_eq!(regrouped.class_name(), "MapPartitionsRDD");
        assert_eq!(regrouped.collect().unwrap().len(), 3);
        // map forgets the partitioner: a shuffle again.
        assert_eq!(
            summed
                .map("identity", vec![])
                .reduce_by_key("add", None)
                .class_name(),
            "ShuffledRDD"
        );
        assert!(Arc::ptr_eq(&summed.partition_by(3).inner, &summed.inner));
        assert_eq!(summed.partition_by(2).class_name(), "ShuffledRDD");
        // spark.default.parallelism set: it decides.
        let conf: Arc<dyn JobRunner> = Arc::new(LocalRunner::new("Conf", 2).with_configured_parallelism(5));
        let rdd = parallelize(&conf, vec![Value::pair(1, 1)], Some(2)).unwrap();
        assert_eq!(rdd.reduce_by_key("add", None).num_partitions(), 5);
        let shuffled = rdd.reduce_by_key("add", None);
        assert_eq!(
            (shuffled.class_name(), shuffled.num_partitions()),
            ("ShuffledRDD", 5)
        );
    }

    #[test]
    fn text_files() {
        let (local, sc) = runner("Text", 4);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("in.txt");
        std::fs::write(&path, "a b\r\nc\n\nd e f\n").unwrap();
        let path = path.to_string_lossy().into_owned();
        let lines = text_file(&sc, &path, None).unwrap();
        // Two RDDs, as Spark's hadoopFile(...).map(_._2.toString).
        assert_eq!(lines.id(), 1);
        let lineage = lines.lineage();
        assert_eq!(lineage.node(0).map(|n| n.class_name()), Some("HadoopRDD"));
        assert_eq!(
            lineage.node(0).map(|n| n.call_site.as_str()),
            Some("textFile at Text")
        );
        assert_eq!(lines.call_site(), "textFile at Text");
        // minPartitions = min(defaultParallelism, 2).
        assert_eq!(lines.num_partitions(), 2);
        assert_eq!(
            lines.partitions().iter().map(|p| p.rdd_id).collect::<Vec<_>>(),
            vec![0, 0]
        );
        assert_eq!(
            lines.collect().unwrap(),
            vec!["a b".into(), "c".into(), "".into(), Value::str("d e f")]
        );
        assert_eq!(lines.count().unwrap(), 4);
        assert_eq!(local.total_counts().records_read, 8);
        let words = lines
            .flat_map("split", vec![])
            .filter("test.api.non_empty", vec![]);
        register(
            "test.api.non_empty",
            Op::filter(|_, v| Ok(v.as_str().is_some_and(|s| !s.is_empty()))),
        );
        assert_eq!(words.count().unwrap(), 6);
        // An empty file has no partitions; a missing one is Spark's InvalidInputException.
        let empty = dir.path().join("empty.txt");
        std::fs::write(&empty, "").unwrap();
        let rdd = text_file(&sc, &empty.to_string_lossy(), Some(3)).unwrap();
        assert_eq!((rdd.num_partitions(), rdd.count().unwrap()), (0, 0));
        assert_eq!(rdd.take(3).unwrap(), vec![]);
        let e = text_file(&sc, "hdfs://nn:8020/in.txt", None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "org.apache.hadoop.fs.UnsupportedFileSystemException: No FileSystem for scheme \"hdfs\""
        );
        let missing = dir.path().join("missing.txt");
        let e = text_file(&sc, &missing.to_string_lossy(), None).unwrap_err();
        assert_eq!(e.class_name, "org.apache.hadoop.mapred.InvalidInputException");
        assert_eq!(
            e.message,
            format!("Input path does not exist: file:{}", missing.display())
        );
        // The file vanishing after planning fails the tasks.
        std::fs::remove_file(&path).unwrap();
        let e = lines.count().unwrap_err();
        assert!(
            e.message.ends_with(&format!(
                "java.io.FileNotFoundException: File file:{path} does not exist"
            )),
            "{e}"
        );
    }

    #[test]
    fn rdds_and_errors_travel_between_threads() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<Rdd>();
        send_sync::<JobError>();
        let (_, sc) = runner("Threads", 2);
        let rdd = parallelize_range(&sc, 0, 1000, 1, None).unwrap();
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let rdd = rdd.clone();
                std::thread::spawn(move || rdd.count())
            })
            .collect();
        for h in handles {
            assert_eq!(h.join().unwrap(), Ok(1000));
        }
    }

    #[test]
    fn barrier_mode_marks_its_stage_and_tasks_outside_it_cannot_sync() {
        let (local, sc) = runner("Barrier", 2);
        let base = parallelize_range(&sc, 0, 4, 1, Some(2)).unwrap();
        assert!(!base.is_barrier());
        let barrier = base.barrier().map_partitions("identity", vec![]);
        assert!(barrier.is_barrier());
        assert_eq!(barrier.call_site(), "mapPartitions at Barrier");
        assert!(matches!(
            barrier.node().kind,
            RddKind::MapPartitions {
                is_from_barrier: true,
                ..
            }
        ));
        // Narrow children are in the barrier stage; a shuffle ends it.
        assert!(barrier.map("identity", vec![]).is_barrier());
        assert!(!barrier.partition_by(2).is_barrier());
        // An operation calling barrier() outside a barrier stage throws Spark's cast error.
        register(
            "api.tests.sync",
            Op::map(|ctx, v| {
                ctx.barrier()?;
                Ok(v)
            }),
        );
        let err = base.map("api.tests.sync", vec![]).count().unwrap_err();
        assert!(
            err.message.contains(
                "java.lang.ClassCastException: class org.apache.spark.TaskContextImpl cannot be cast to class org.apache.spark.BarrierTaskContext"
            ),
            "{err}"
        );
        drop(local);
    }

    #[test]
    fn make_rdd_and_errors() {
        let (_, sc) = runner("Make", 2);
        let rdd = make_rdd(
            &sc,
            vec![
                (1.into(), vec!["host1".into()]),
                (2.into(), vec!["host2".into(), "host3".into()]),
            ],
        );
        assert_eq!(rdd.num_partitions(), 2);
        assert_eq!(rdd.call_site(), "makeRDD at Make");
        let lineage = rdd.lineage();
        assert_eq!(
            lineage.preferred_hosts(rdd.id(), 1),
            vec!["host2".to_string(), "host3".to_string()]
        );
        assert_eq!(rdd.collect().unwrap(), ints([1, 2]));
        assert_eq!(make_rdd(&sc, vec![]).num_partitions(), 1);
        let e = parallelize(&sc, ints([1]), Some(0)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "java.lang.IllegalArgumentException: Positive number of partitions required"
        );
        assert!(parallelize_range(&sc, 0, 10, 0, Some(2))
            .unwrap_err()
            .message
            .contains("step cannot be 0"));
        let failing = rdd.map("test.api.explode", vec![]);
        register(
            "test.api.explode",
            Op::map(|_, _| Err(TaskError::exception("java.lang.ArithmeticException", "/ by zero"))),
        );
        let e = failing.collect().unwrap_err();
        assert!(
            e.message
                .starts_with("Job aborted due to stage failure: Task 0 in stage"),
            "{e}"
        );
        assert!(
            e.message.ends_with("java.lang.ArithmeticException: / by zero"),
            "{e}"
        );
        assert_eq!(format!("{rdd:?}"), "ParallelCollectionRDD[0] at makeRDD at Make");
    }
}
