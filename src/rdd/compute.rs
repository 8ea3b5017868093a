//! How a task computes its partition (what `RDD.compute` and the shuffle reader/writer do
//! in Spark), behind [`run_task`](super::task::run_task).
//!
//! Layer: rdd (the Spark side's data model, above yarn; no actors).
//!
//! Records stream through boxed iterators of `Result<Value, TaskError>`, pulled by the
//! task's consumer (the action's function or the shuffle writer); the first error ends the
//! task. Per RDD kind:
//! * ParallelCollectionRDD: the task's slice (values moved out, a range counted lazily);
//! * HadoopRDD (text file): the lines of the partition's split ([`super::text`]); each line
//!   counts as an input record (Spark's `recordsRead`; parallelized collections count none,
//!   as in Spark);
//! * MapPartitionsRDD: the registered operation applied to the parent's records, by its
//!   kind (Map, Filter, FlatMap, MapPartitions; a Reduce operation cannot be);
//! * ShuffledRDD: this reduce partition's bucket of every map output, fetched through the
//!   task context in map-index order and decoded; with a `Reduce` aggregator values (or the
//!   map side's combiners) are merged per key, with `Group` gathered into a `List` per key,
//!   both in Spark's `AppendOnlyMap` ([`super::aomap`]) so keys come out in Spark's order;
//!   without an aggregator records pass through.
//!
//! Sources (slices, lines, shuffle reads) call `check_cancelled` every
//! [`CANCEL_CHECK_INTERVAL`] records, so a killed task stops within that many records of
//! whatever it is doing; operations that sleep go through the context's clock.
//!
//! Three shapes skip the record-at-a-time path and give the same output
//! ([`super::fused`]): word count's map side (text file, `split`, `pair_with_one`,
//! map-side `add`), whose buckets are written from bytes; the reduce side of a `Reduce` by
//! `add` whose buckets hold only string keys and integer values (merged by bytes, any other
//! bucket taking the generic path); and an integer Map operation with a fused form reduced
//! by `add` over a range slice (SparkPi).
//!
//! A shuffle map task partitions its records with the dependency's partitioner on the
//! pair's key (a record that is not a pair fails the task, naming the RDD and the record).
//! With map-side combine (reduceByKey) values are first merged per (partition, key) in a
//! `PartitionedAppendOnlyMap` and written sorted by partition then key hash code, as
//! Spark's `ExternalSorter` writes them; otherwise records keep their order. Each bucket is
//! a flat MessagePack array of keys and values in a compact form ([`encode_bucket`]); an
//! empty bucket is zero bytes, as Spark writes nothing for an empty partition.

use std::borrow::Cow;
use std::cell::Cell;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::aomap::{AppendOnlyMap, PartitionedKey};
use super::fused;
use super::lineage::{Aggregator, Lineage, OpCall, RddId, RddKind, ShuffleDep, ShuffleId, Slice};
use super::ops::{self, short, Op, OpCtx, Records};
use super::slice::RangeIter;
use super::task::{ResultFunc, StageTask, TaskContext, TaskCounts, TaskError, TaskKind, TaskOutput};
use super::text;
use super::value::{Value, MAX_DECODE_DEPTH};
use super::{decode, encode};

/// How many records a source yields between two `check_cancelled` calls.
pub const CANCEL_CHECK_INTERVAL: u32 = 1024;
/// The most reduce partitions a shuffle map task writes buckets for.
pub const MAX_REDUCE_PARTITIONS: u32 = 1 << 24;

/// Encodes one shuffle bucket: its `(key, value)` records as one flat MessagePack array
/// `[k1, v1, k2, v2, ...]` in a compact value form (a value is its plain MessagePack
/// counterpart: nil, bool, int, float, str, bin; a list is an array, a pair a one-entry map),
/// so a `(word, 1)` record costs the word plus three bytes. No records is zero bytes.
pub fn encode_bucket(records: &[(Value, Value)]) -> Result<Vec<u8>, String> {
    if records.is_empty() {
        return Ok(Vec::new());
    }
    encode(&BucketRef(records))
}

/// Decodes what [`encode_bucket`] wrote (zero bytes is an empty bucket); malformed bytes are
/// an error, never a panic.
pub fn decode_bucket(bytes: &[u8]) -> Result<Vec<(Value, Value)>, String> {
    if bytes.is_empty() {
        return Ok(Vec::new());
    }
    decode::<Bucket>(bytes).map(|b| b.0)
}

struct BucketRef<'a>(&'a [(Value, Value)]);

impl Serialize for BucketRef<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len() * 2))?;
        for (k, v) in self.0 {
            seq.serialize_element(&CompactRef(k))?;
            seq.serialize_element(&CompactRef(v))?;
        }
        seq.end()
    }
}

struct CompactRef<'a>(&'a Value);

impl Serialize for CompactRef<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Null => s.serialize_unit(),
            Value::Bool(b) => s.serialize_bool(*b),
            Value::I64(v) => s.serialize_i64(*v),
            Value::F64(d) => s.serialize_f64(*d),
            Value::Str(x) => s.serialize_str(x),
            Value::Bytes(b) => s.serialize_bytes(b),
            Value::Pair(p) => {
                let mut m = s.serialize_map(Some(1))?;
                m.serialize_entry(&CompactRef(&p.0), &CompactRef(&p.1))?;
                m.end()
            }
            Value::List(xs) => {
                let mut seq = s.serialize_seq(Some(xs.len()))?;
                for x in xs {
                    seq.serialize_element(&CompactRef(x))?;
                }
                seq.end()
            }
        }
    }
}

struct Bucket(Vec<(Value, Value)>);

impl<'de> Deserialize<'de> for Bucket {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Bucket;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an array of keys and values")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Bucket, A::Error> {
                let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(8192) / 2);
                let top = CompactSeed { depth: 0 };
                while let Some(k) = seq.next_element_seed(top)? {
                    let Some(v) = seq.next_element_seed(top)? else {
                        return Err(de::Error::custom("a key without a value"));
                    };
                    out.push((k, v));
                }
                Ok(Bucket(out))
            }
        }
        d.deserialize_seq(V)
    }
}

/// Decodes one value of the compact form, refusing nesting deeper than
/// [`MAX_DECODE_DEPTH`].
#[derive(Clone, Copy)]
struct CompactSeed {
    depth: u32,
}

impl CompactSeed {
    fn deeper<E: de::Error>(self) -> Result<CompactSeed, E> {
        if self.depth >= MAX_DECODE_DEPTH {
            return Err(E::custom(format!(
                "value nested more than {MAX_DECODE_DEPTH} levels deep"
            )));
        }
        Ok(CompactSeed {
            depth: self.depth + 1,
        })
    }
}

impl<'de> DeserializeSeed<'de> for CompactSeed {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for CompactSeed {
    type Value = Value;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a value")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::I64(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        i64::try_from(v)
            .map(Value::I64)
            .map_err(|_| E::custom(format!("integer {v} out of range")))
    }
    fn visit_f32<E: de::Error>(self, v: f32) -> Result<Value, E> {
        Ok(Value::F64(f64::from(v)))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Ok(Value::F64(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::Str(v.to_string()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::Str(v))
    }
    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Value, E> {
        Ok(Value::Bytes(v.to_vec()))
    }
    fn visit_byte_buf<E: de::Error>(self, v: Vec<u8>) -> Result<Value, E> {
        Ok(Value::Bytes(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let inner = self.deeper()?;
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(x) = seq.next_element_seed(inner)? {
            out.push(x);
        }
        Ok(Value::List(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let inner = self.deeper()?;
        let Some(k) = map.next_key_seed(inner)? else {
            return Err(de::Error::custom("an empty map is not a pair"));
        };
        let v = map.next_value_seed(inner)?;
        if map.next_key_seed(inner)?.is_some() {
            return Err(de::Error::custom("a map of more than one entry is not a pair"));
        }
        Ok(Value::pair(k, v))
    }
}

/// Counts kept while the records stream.
#[derive(Default)]
struct Counters {
    records_read: Cell<u64>,
    shuffle_records_read: Cell<u64>,
    shuffle_bytes_read: Cell<u64>,
}

#[derive(Clone, Copy)]
struct Env<'a> {
    lineage: &'a Lineage,
    ctx: &'a dyn TaskContext,
    counters: &'a Counters,
}

fn internal(message: String) -> TaskError {
    TaskError::exception("java.lang.IllegalStateException", message)
}

/// The body of [`run_task`](super::task::run_task).
pub(crate) fn run_stage_task(
    stage: &StageTask,
    partition: u32,
    slice: Option<Slice>,
    ctx: &dyn TaskContext,
) -> Result<(TaskOutput, TaskCounts), TaskError> {
    ctx.check_cancelled()?;
    let counters = Counters::default();
    let env = Env {
        lineage: &stage.lineage,
        ctx,
        counters: &counters,
    };
    let mut slice = slice;
    let mut counts = TaskCounts::default();
    let range_sum = match &stage.kind {
        TaskKind::Result {
            rdd,
            func: ResultFunc::Reduce(call),
        } => fused::range_sum_plan(&stage.lineage, *rdd, call, partition, slice.as_ref()),
        _ => None,
    };
    let output = match (&stage.kind, &range_sum) {
        (_, Some(plan)) => TaskOutput::Value(fused::range_sum(plan, ctx)?),
        (TaskKind::Result { rdd, func }, None) => {
            let records = compute(env, *rdd, partition, &mut slice)?;
            TaskOutput::Value(apply_result_func(env, func, records)?)
        }
        (TaskKind::ShuffleMap { dep }, None) => {
            let buckets = match fused::word_count_plan(&stage.lineage, dep, partition) {
                Some(plan) => {
                    let (buckets, records) =
                        fused::word_count_map_encoded(&plan, ctx, &counters.records_read)?;
                    counts.shuffle_records_written += records;
                    counts.shuffle_bytes_written += buckets.iter().map(|b| b.len() as u64).sum::<u64>();
                    buckets
                }
                None => {
                    let records = compute(env, dep.parent, partition, &mut slice)?;
                    encode_buckets(dep, &partition_records(env, dep, records)?, &mut counts)?
                }
            };
            TaskOutput::MapOutput { buckets }
        }
    };
    counts.records_read = counters.records_read.get();
    counts.shuffle_records_read = counters.shuffle_records_read.get();
    counts.shuffle_bytes_read = counters.shuffle_bytes_read.get();
    Ok((output, counts))
}

/// A source of records: checks for cancellation every [`CANCEL_CHECK_INTERVAL`] records,
/// counts them when asked, and ends after an error.
struct Source<'a, I> {
    inner: I,
    ctx: &'a dyn TaskContext,
    counter: Option<&'a Cell<u64>>,
    since_check: u32,
    done: bool,
}

impl<'a, I> Source<'a, I> {
    fn new(inner: I, ctx: &'a dyn TaskContext, counter: Option<&'a Cell<u64>>) -> Self {
        Source {
            inner,
            ctx,
            counter,
            since_check: 0,
            done: false,
        }
    }
}

impl<I: Iterator<Item = Result<Value, TaskError>>> Iterator for Source<'_, I> {
    type Item = Result<Value, TaskError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        self.since_check += 1;
        if self.since_check >= CANCEL_CHECK_INTERVAL {
            self.since_check = 0;
            if let Err(e) = self.ctx.check_cancelled() {
                self.done = true;
                return Some(Err(e));
            }
        }
        match self.inner.next() {
            Some(Ok(v)) => {
                if let Some(c) = self.counter {
                    c.set(c.get() + 1);
                }
                Some(Ok(v))
            }
            Some(Err(e)) => {
                self.done = true;
                Some(Err(e))
            }
            None => {
                self.done = true;
                None
            }
        }
    }
}

/// The records of partition `partition` of `id` (`slice` is taken by the parallelized
/// collection the stage starts from).
fn compute<'a>(
    env: Env<'a>,
    id: RddId,
    partition: u32,
    slice: &mut Option<Slice>,
) -> Result<Records<'a>, TaskError> {
    let node = env
        .lineage
        .node(id)
        .ok_or_else(|| internal(format!("RDD {id} is not in the stage's lineage")))?;
    match &node.kind {
        RddKind::ParallelCollection { .. } => {
            let s = match slice.take() {
                Some(s) => s,
                None => env
                    .lineage
                    .slice(id, partition)
                    .map(Cow::into_owned)
                    .ok_or_else(|| {
                        internal(format!(
                            "no slice for partition {partition} of ParallelCollectionRDD {id}"
                        ))
                    })?,
            };
            Ok(match s {
                Slice::Values(vs) => Box::new(Source::new(vs.into_iter().map(Ok), env.ctx, None)),
                Slice::Range { start, end, step } => Box::new(Source::new(
                    RangeIter::new(start, end, step).map(|i| Ok(Value::I64(i))),
                    env.ctx,
                    None,
                )),
            })
        }
        RddKind::TextFile { path, splits } => {
            let split = splits.get(partition as usize).ok_or_else(|| {
                internal(format!(
                    "partition {partition} of HadoopRDD {id} does not exist ({} splits)",
                    splits.len()
                ))
            })?;
            let lines = text::open_split(path, split)?.map(|r| r.map(Value::Str));
            Ok(Box::new(Source::new(
                lines,
                env.ctx,
                Some(&env.counters.records_read),
            )))
        }
        RddKind::MapPartitions { parent, op, .. } => {
            let input = compute(env, *parent, partition, slice)?;
            apply_op(env, op, input)
        }
        RddKind::Shuffled {
            shuffle_id,
            aggregator,
            map_side_combine,
            ..
        } => read_shuffle(
            env,
            id,
            *shuffle_id,
            partition,
            aggregator.as_ref(),
            *map_side_combine,
        ),
    }
}

/// `MapPartitionsRDD.compute`: the registered operation over the parent's records.
fn apply_op<'a>(env: Env<'a>, call: &'a OpCall, input: Records<'a>) -> Result<Records<'a>, TaskError> {
    let octx = OpCtx::new(&call.args, env.ctx);
    Ok(match ops::resolve(&call.name)? {
        Op::Map(f) => Box::new(input.map(move |r| r.and_then(|v| f(&octx, v)))),
        Op::Filter(f) => Box::new(input.filter_map(move |r| match r {
            Ok(v) => match f(&octx, &v) {
                Ok(true) => Some(Ok(v)),
                Ok(false) => None,
                Err(e) => Some(Err(e)),
            },
            Err(e) => Some(Err(e)),
        })),
        Op::FlatMap(f) => Box::new(FlatMapIter {
            input,
            f,
            octx,
            buf: Vec::new(),
        }),
        Op::MapPartitions(f) => f(octx, input)?,
        Op::Reduce(_) => {
            return Err(TaskError::exception(
                "java.lang.IllegalArgumentException",
                format!(
                    "operation '{}' is a Reduce operation; it cannot be applied to a partition",
                    call.name
                ),
            ))
        }
    })
}

struct FlatMapIter<'a> {
    input: Records<'a>,
    f: ops::FlatMapFn,
    octx: OpCtx<'a>,
    /// The current record's outputs, reversed (popped from the end).
    buf: Vec<Value>,
}

impl Iterator for FlatMapIter<'_> {
    type Item = Result<Value, TaskError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(v) = self.buf.pop() {
                return Some(Ok(v));
            }
            match self.input.next()? {
                Ok(v) => {
                    if let Err(e) = (self.f)(&self.octx, v, &mut self.buf) {
                        self.buf.clear();
                        return Some(Err(e));
                    }
                    self.buf.reverse();
                }
                Err(e) => return Some(Err(e)),
            }
        }
    }
}

fn decode_failure(shuffle_id: ShuffleId, reduce_id: u32, map_index: usize, e: String) -> TaskError {
    TaskError::exception(
        "java.io.IOException",
        format!(
            "cannot decode the output of map {map_index} of shuffle {shuffle_id} for reduce partition \
             {reduce_id}: {e}"
        ),
    )
}

/// Calls `check_cancelled` every [`CANCEL_CHECK_INTERVAL`] ticks.
struct Ticker<'a> {
    ctx: &'a dyn TaskContext,
    n: u32,
}

impl Ticker<'_> {
    fn tick(&mut self) -> Result<(), TaskError> {
        self.n += 1;
        if self.n >= CANCEL_CHECK_INTERVAL {
            self.n = 0;
            self.ctx.check_cancelled()?;
        }
        Ok(())
    }
}

/// `ShuffledRDD.compute` (Spark's `BlockStoreShuffleReader.read`).
fn read_shuffle<'a>(
    env: Env<'a>,
    id: RddId,
    shuffle_id: ShuffleId,
    reduce_id: u32,
    aggregator: Option<&'a Aggregator>,
    map_side_combine: bool,
) -> Result<Records<'a>, TaskError> {
    let buckets = env.ctx.fetch_shuffle(shuffle_id, reduce_id)?;
    let bytes: u64 = buckets.iter().map(|b| b.len() as u64).sum();
    let c = &env.counters.shuffle_bytes_read;
    c.set(c.get() + bytes);
    let records_read = &env.counters.shuffle_records_read;
    let mut ticker = Ticker { ctx: env.ctx, n: 0 };
    match aggregator {
        None => {
            // Decode bucket by bucket as the records are pulled.
            let records = buckets
                .into_iter()
                .enumerate()
                .flat_map(move |(map_index, bytes)| {
                    let decoded = decode_bucket(&bytes)
                        .map_err(|e| decode_failure(shuffle_id, reduce_id, map_index, e));
                    let (ok, err) = match decoded {
                        Ok(recs) => (Some(recs.into_iter().map(|(k, v)| Ok(Value::pair(k, v)))), None),
                        Err(e) => (None, Some(Err(e))),
                    };
                    ok.into_iter().flatten().chain(err)
                });
            Ok(Box::new(Source::new(records, env.ctx, Some(records_read))))
        }
        Some(Aggregator::Reduce(call)) => {
            if fused::is_builtin_add(call) {
                if let Some(records) = fused::merge_word_counts(&buckets, env.ctx, records_read)? {
                    return Ok(Box::new(records.into_iter().map(|(k, v)| Ok(Value::pair(k, v)))));
                }
            }
            let f = ops::resolve_reduce(&call.name)?;
            let octx = OpCtx::new(&call.args, env.ctx);
            let mut map: AppendOnlyMap<Value, Value> = AppendOnlyMap::new();
            for (map_index, bytes) in buckets.iter().enumerate() {
                let recs =
                    decode_bucket(bytes).map_err(|e| decode_failure(shuffle_id, reduce_id, map_index, e))?;
                records_read.set(records_read.get() + recs.len() as u64);
                for (k, v) in recs {
                    ticker.tick()?;
                    map.change_value(k, |old| match old {
                        Some(o) => f(&octx, o, v),
                        None => Ok(v),
                    })?;
                }
            }
            Ok(Box::new(map.into_entries().map(|(k, v)| Ok(Value::pair(k, v)))))
        }
        Some(Aggregator::Group) => {
            let mut map: AppendOnlyMap<Value, Vec<Value>> = AppendOnlyMap::new();
            for (map_index, bytes) in buckets.iter().enumerate() {
                let recs =
                    decode_bucket(bytes).map_err(|e| decode_failure(shuffle_id, reduce_id, map_index, e))?;
                records_read.set(records_read.get() + recs.len() as u64);
                for (k, v) in recs {
                    ticker.tick()?;
                    map.change_value(k, |old| {
                        let mut buf = old.unwrap_or_default();
                        if map_side_combine {
                            // The map side's combiners are lists already.
                            match v {
                                Value::List(xs) => buf.extend(xs),
                                other => {
                                    return Err(internal(format!(
                                        "ShuffledRDD {id}: a groupByKey combiner is {}, not a List",
                                        short(&other)
                                    )))
                                }
                            }
                        } else {
                            buf.push(v);
                        }
                        Ok(buf)
                    })?;
                }
            }
            Ok(Box::new(
                map.into_entries()
                    .map(|(k, vs)| Ok(Value::pair(k, Value::List(vs)))),
            ))
        }
    }
}

fn not_a_pair(dep: &ShuffleDep, v: &Value) -> TaskError {
    TaskError::exception(
        "java.lang.ClassCastException",
        format!(
            "shuffle {} needs (key, value) records, but RDD {} produced {}",
            dep.shuffle_id,
            dep.parent,
            short(v)
        ),
    )
}

/// A shuffle map task's records by reduce partition, in the order they are written (Spark's
/// `SortShuffleWriter` / `BypassMergeSortShuffleWriter`).
fn partition_records(
    env: Env<'_>,
    dep: &ShuffleDep,
    records: Records<'_>,
) -> Result<Vec<Vec<(Value, Value)>>, TaskError> {
    let partitioner = &dep.partitioner;
    let n = partitioner.num_partitions();
    if n > MAX_REDUCE_PARTITIONS {
        return Err(TaskError::exception(
            "java.lang.IllegalArgumentException",
            format!(
                "shuffle {} has {n} reduce partitions, more than {MAX_REDUCE_PARTITIONS}",
                dep.shuffle_id
            ),
        ));
    }
    let divide_by_zero = || TaskError::exception("java.lang.ArithmeticException", "/ by zero");
    let mut buckets: Vec<Vec<(Value, Value)>> = Vec::new();
    buckets.resize_with(n as usize, Vec::new);
    let combiner = match (&dep.aggregator, dep.map_side_combine) {
        (Some(agg), true) => Some(agg),
        _ => None,
    };
    match combiner {
        None => {
            for r in records {
                let (k, v) = r?.into_pair().map_err(|v| not_a_pair(dep, &v))?;
                let p = partitioner.get_partition(&k);
                buckets
                    .get_mut(p as usize)
                    .ok_or_else(divide_by_zero)?
                    .push((k, v));
            }
        }
        Some(agg) => {
            let mut ticker = Ticker { ctx: env.ctx, n: 0 };
            let mut map: AppendOnlyMap<PartitionedKey, Value> = AppendOnlyMap::new();
            match agg {
                Aggregator::Reduce(call) => {
                    let f = ops::resolve_reduce(&call.name)?;
                    let octx = OpCtx::new(&call.args, env.ctx);
                    for r in records {
                        ticker.tick()?;
                        let (key, v) = r?.into_pair().map_err(|v| not_a_pair(dep, &v))?;
                        if n == 0 {
                            return Err(divide_by_zero());
                        }
                        let partition = partitioner.get_partition(&key);
                        map.change_value(PartitionedKey { partition, key }, |old| match old {
                            Some(o) => f(&octx, o, v),
                            None => Ok(v),
                        })?;
                    }
                }
                Aggregator::Group => {
                    for r in records {
                        ticker.tick()?;
                        let (key, v) = r?.into_pair().map_err(|v| not_a_pair(dep, &v))?;
                        if n == 0 {
                            return Err(divide_by_zero());
                        }
                        let partition = partitioner.get_partition(&key);
                        map.change_value(PartitionedKey { partition, key }, |old| {
                            Ok::<_, TaskError>(match old {
                                Some(Value::List(mut xs)) => {
                                    xs.push(v);
                                    Value::List(xs)
                                }
                                _ => Value::List(vec![v]),
                            })
                        })?;
                    }
                }
            }
            // ExternalSorter's order: by partition, then by the key's hashCode, stable.
            let (_, sorted) = map.into_sorted_by(|k| (k.partition, k.key.java_hash_code()));
            for (k, v) in sorted {
                buckets
                    .get_mut(k.partition as usize)
                    .ok_or_else(divide_by_zero)?
                    .push((k.key, v));
            }
        }
    }
    Ok(buckets)
}

/// A shuffle map task's output: one encoded bucket per reduce partition.
fn encode_buckets(
    dep: &ShuffleDep,
    buckets: &[Vec<(Value, Value)>],
    counts: &mut TaskCounts,
) -> Result<Vec<Vec<u8>>, TaskError> {
    let mut out = Vec::with_capacity(buckets.len());
    for (reduce_id, bucket) in buckets.iter().enumerate() {
        counts.shuffle_records_written += bucket.len() as u64;
        let bytes = encode_bucket(bucket).map_err(|e| {
            TaskError::exception(
                "java.io.NotSerializableException",
                format!(
                    "cannot encode bucket {reduce_id} of shuffle {}: {e}",
                    dep.shuffle_id
                ),
            )
        })?;
        counts.shuffle_bytes_written += bytes.len() as u64;
        out.push(bytes);
    }
    Ok(out)
}

/// What a result task answers from its records.
fn apply_result_func(env: Env<'_>, func: &ResultFunc, records: Records<'_>) -> Result<Value, TaskError> {
    Ok(match func {
        ResultFunc::Count => {
            let mut n: i64 = 0;
            for r in records {
                r?;
                n += 1;
            }
            Value::I64(n)
        }
        ResultFunc::Collect => Value::List(records.collect::<Result<Vec<_>, _>>()?),
        ResultFunc::Take(n) => Value::List(records.take(*n as usize).collect::<Result<Vec<_>, _>>()?),
        ResultFunc::Sum => {
            let mut total = 0.0f64;
            for r in records {
                let v = r?;
                total += v.as_f64().ok_or_else(|| {
                    TaskError::exception(
                        "java.lang.ClassCastException",
                        format!("sum needs numbers, got {}", short(&v)),
                    )
                })?;
            }
            Value::F64(total)
        }
        ResultFunc::Reduce(call) => {
            let f = ops::resolve_reduce(&call.name)?;
            let octx = OpCtx::new(&call.args, env.ctx);
            let mut acc: Option<Value> = None;
            for r in records {
                let v = r?;
                acc = Some(match acc {
                    None => v,
                    Some(a) => f(&octx, a, v)?,
                });
            }
            acc.unwrap_or(Value::Null)
        }
    })
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::collections::HashMap;
    use std::time::Duration;

    use super::*;
    use crate::rdd::lineage::{FileSplit, Partitioner, RddNode};
    use crate::rdd::ops::{register, Op};
    use crate::rdd::task::{run_task, FetchFailure};

    /// A task context for tests: shuffle outputs by (shuffle, map), killed after
    /// `kill_after_checks` cancellation checks.
    #[derive(Default)]
    struct TestContext {
        outputs: HashMap<ShuffleId, Vec<Vec<Vec<u8>>>>,
        kill_after_checks: Option<u32>,
        checks: Cell<u32>,
        fetch_error: Option<TaskError>,
        slept: RefCell<Vec<Duration>>,
    }

    impl TaskContext for TestContext {
        fn stage_id(&self) -> u32 {
            3
        }
        fn partition_id(&self) -> u32 {
            0
        }
        fn attempt_number(&self) -> u32 {
            0
        }
        fn task_id(&self) -> u64 {
            9
        }
        fn check_cancelled(&self) -> Result<(), TaskError> {
            self.checks.set(self.checks.get() + 1);
            match self.kill_after_checks {
                Some(n) if self.checks.get() > n => Err(TaskError::Killed {
                    reason: "stage cancelled".into(),
                }),
                _ => Ok(()),
            }
        }
        fn sleep(&self, d: Duration) -> Result<(), TaskError> {
            self.slept.borrow_mut().push(d);
            self.check_cancelled()
        }
        fn fetch_shuffle(&self, shuffle_id: ShuffleId, reduce_id: u32) -> Result<Vec<Vec<u8>>, TaskError> {
            if let Some(e) = &self.fetch_error {
                return Err(e.clone());
            }
            Ok(self
                .outputs
                .get(&shuffle_id)
                .map(|maps| {
                    maps.iter()
                        .map(|b| b.get(reduce_id as usize).cloned().unwrap_or_default())
                        .collect()
                })
                .unwrap_or_default())
        }
    }

    fn node(id: RddId, kind: RddKind, n: u32) -> RddNode {
        RddNode {
            id,
            kind,
            num_partitions: n,
            call_site: format!("rdd {id}"),
        }
    }

    fn source(n: u32) -> RddNode {
        node(
            0,
            RddKind::ParallelCollection {
                slices: Default::default(),
                locations: vec![],
            },
            n,
        )
    }

    fn mapped(id: RddId, parent: RddId, op: &str, args: Vec<Value>) -> RddNode {
        node(
            id,
            RddKind::MapPartitions {
                parent,
                op: OpCall::new(op, args),
                preserves_partitioning: false,
                is_from_barrier: false,
            },
            1,
        )
    }

    fn lineage(nodes: Vec<RddNode>) -> Lineage {
        let mut l = Lineage::default();
        for n in nodes {
            l.insert(n);
        }
        l
    }

    fn result(l: Lineage, rdd: RddId, func: ResultFunc) -> StageTask {
        StageTask {
            lineage: l,
            kind: TaskKind::Result { rdd, func },
        }
    }

    fn value(out: Result<(TaskOutput, TaskCounts), TaskError>) -> Result<Value, TaskError> {
        match out? {
            (TaskOutput::Value(v), _) => Ok(v),
            (other, _) => panic!("{other:?}"),
        }
    }

    fn range(start: i64, end: i64) -> Option<Slice> {
        Some(Slice::Range { start, end, step: 1 })
    }

    fn range_step(start: i64, end: i64, step: i64) -> Option<Slice> {
        Some(Slice::Range { start, end, step })
    }

    fn ints(xs: impl IntoIterator<Item = i64>) -> Vec<Value> {
        xs.into_iter().map(Value::I64).collect()
    }

    #[test]
    fn result_functions() {
        let ctx = TestContext::default();
        let l = lineage(vec![source(1)]);
        let run = |func: ResultFunc| value(run_task(&result(l.clone(), 0, func), 0, range(1, 11), &ctx));
        assert_eq!(run(ResultFunc::Count), Ok(Value::I64(10)));
        assert_eq!(run(ResultFunc::Collect), Ok(Value::List(ints(1..=10))));
        assert_eq!(run(ResultFunc::Take(3)), Ok(Value::List(ints(1..=3))));
        assert_eq!(run(ResultFunc::Sum), Ok(Value::F64(55.0)));
        assert_eq!(
            run(ResultFunc::Reduce(OpCall::new("add", vec![]))),
            Ok(Value::I64(55))
        );
        let empty = value(run_task(
            &result(l.clone(), 0, ResultFunc::Reduce(OpCall::new("add", vec![]))),
            0,
            range(1, 1),
            &ctx,
        ));
        assert_eq!(empty, Ok(Value::Null));
        // Values slices, and a lineage that still holds its slices.
        let with_slices = lineage(vec![node(
            0,
            RddKind::ParallelCollection {
                slices: vec![
                    Slice::Values(vec!["x".into()]),
                    Slice::Values(vec!["y".into(), "z".into()]),
                ]
                .into(),
                locations: vec![],
            },
            2,
        )]);
        let st = result(with_slices, 0, ResultFunc::Collect);
        assert_eq!(
            value(run_task(&st, 1, None, &ctx)),
            Ok(Value::List(vec!["y".into(), "z".into()]))
        );
        let given = Some(Slice::Values(vec![Value::Null]));
        assert_eq!(
            value(run_task(&st, 1, given, &ctx)),
            Ok(Value::List(vec![Value::Null]))
        );
    }

    #[test]
    fn narrow_ops_stream_lazily() {
        use std::sync::atomic::{AtomicU32, Ordering};
        static CALLS: AtomicU32 = AtomicU32::new(0);
        register(
            "test.compute.counting",
            Op::map(|_, v| {
                CALLS.fetch_add(1, Ordering::SeqCst);
                Ok(v)
            }),
        );
        register(
            "test.compute.odd",
            Op::filter(|_, v| Ok(v.as_i64().is_some_and(|x| x % 2 == 1))),
        );
        register(
            "test.compute.dup",
            Op::flat_map(|_, v| Ok(vec![v.clone(), Value::pair(v, "again")])),
        );
        register(
            "test.compute.partition_size",
            Op::map_partitions(|ctx, records| {
                let n = records.count() as i64;
                let tag = ctx.args.first().cloned().unwrap_or(Value::Null);
                Ok(Box::new(std::iter::once(Ok(Value::pair(tag, n)))))
            }),
        );
        let ctx = TestContext::default();
        let l = lineage(vec![
            source(1),
            mapped(1, 0, "test.compute.counting", vec![]),
            mapped(2, 1, "test.compute.odd", vec![]),
            mapped(3, 2, "test.compute.dup", vec![]),
            mapped(4, 3, "test.compute.partition_size", vec![Value::str("size")]),
        ]);
        // take(3) pulls only what it needs: 1, (1,again), 3 — three source records.
        let got = value(run_task(
            &result(l.clone(), 3, ResultFunc::Take(3)),
            0,
            range(1, 1_000_000),
            &ctx,
        ));
        assert_eq!(
            got,
            Ok(Value::List(vec![1.into(), Value::pair(1, "again"), 3.into()]))
        );
        assert_eq!(CALLS.load(Ordering::SeqCst), 3);
        let got = value(run_task(
            &result(l, 4, ResultFunc::Collect),
            0,
            range(1, 11),
            &ctx,
        ));
        assert_eq!(got, Ok(Value::List(vec![Value::pair("size", 10)])));
    }

    #[test]
    fn cancellation_stops_a_long_partition() {
        let ctx = TestContext {
            kill_after_checks: Some(3),
            ..Default::default()
        };
        let st = result(lineage(vec![source(1)]), 0, ResultFunc::Count);
        let e = run_task(&st, 0, range(0, 1_000_000_000), &ctx).unwrap_err();
        assert_eq!(
            e,
            TaskError::Killed {
                reason: "stage cancelled".into()
            }
        );
        // One check at the start, then one per CANCEL_CHECK_INTERVAL records.
        assert_eq!(ctx.checks.get(), 4);
        // Killed before starting.
        let dead = TestContext {
            kill_after_checks: Some(0),
            ..Default::default()
        };
        assert!(run_task(&st, 0, range(0, 10), &dead).unwrap_err().is_killed());
        // A sleeping operation is interrupted through the context.
        let l = lineage(vec![source(1), mapped(1, 0, "sleep_ms", vec![Value::I64(5)])]);
        let sleepy = TestContext {
            kill_after_checks: Some(3),
            ..Default::default()
        };
        let e = run_task(&result(l, 1, ResultFunc::Count), 0, range(0, 100), &sleepy).unwrap_err();
        assert!(e.is_killed());
        assert_eq!(sleepy.slept.borrow().len(), 3);
    }

    #[test]
    fn bad_operations_fail_cleanly() {
        let ctx = TestContext::default();
        let l = lineage(vec![source(1), mapped(1, 0, "test.compute.missing", vec![])]);
        let e = run_task(&result(l, 1, ResultFunc::Count), 0, range(0, 3), &ctx).unwrap_err();
        assert_eq!(
            e,
            TaskError::exception(
                "java.lang.ClassNotFoundException",
                "operation 'test.compute.missing' is not registered"
            )
        );
        let l = lineage(vec![source(1), mapped(1, 0, "add", vec![])]);
        let e = run_task(&result(l, 1, ResultFunc::Count), 0, range(0, 3), &ctx).unwrap_err();
        assert!(e.to_string().contains("'add' is a Reduce operation"), "{e}");
        let l = lineage(vec![source(1)]);
        let e = run_task(
            &result(l.clone(), 0, ResultFunc::Reduce(OpCall::new("nope", vec![]))),
            0,
            range(0, 3),
            &ctx,
        );
        assert!(e
            .unwrap_err()
            .to_string()
            .contains("operation 'nope' is not registered"));
        let e = run_task(&result(l.clone(), 0, ResultFunc::Count), 0, None, &ctx).unwrap_err();
        assert_eq!(
            e,
            TaskError::exception(
                "java.lang.IllegalStateException",
                "no slice for partition 0 of ParallelCollectionRDD 0"
            )
        );
        let e = run_task(&result(l, 7, ResultFunc::Count), 0, None, &ctx).unwrap_err();
        assert!(e.to_string().contains("RDD 7 is not in the stage's lineage"));
        let text = lineage(vec![node(
            0,
            RddKind::TextFile {
                path: "/nonexistent/sparkyard/in.txt".into(),
                splits: vec![FileSplit { start: 0, length: 10 }],
            },
            1,
        )]);
        let st = result(text, 0, ResultFunc::Count);
        let e = run_task(&st, 0, None, &ctx).unwrap_err();
        assert_eq!(
            e,
            TaskError::exception(
                "java.io.FileNotFoundException",
                "File file:/nonexistent/sparkyard/in.txt does not exist"
            )
        );
        assert!(run_task(&st, 1, None, &ctx)
            .unwrap_err()
            .to_string()
            .contains("does not exist (1 splits)"));
    }

    fn map_stage(l: Lineage, dep: ShuffleDep) -> StageTask {
        StageTask {
            lineage: l,
            kind: TaskKind::ShuffleMap { dep },
        }
    }

    fn dep(aggregator: Option<Aggregator>, combine: bool, partitions: u32) -> ShuffleDep {
        ShuffleDep {
            shuffle_id: 5,
            parent: 1,
            num_maps: 2,
            partitioner: Partitioner::Hash { partitions },
            aggregator,
            map_side_combine: combine,
        }
    }

    fn buckets(out: Result<(TaskOutput, TaskCounts), TaskError>) -> (Vec<Vec<u8>>, TaskCounts) {
        match out.unwrap() {
            (TaskOutput::MapOutput { buckets }, c) => (buckets, c),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn shuffle_write_and_read() {
        register(
            "test.compute.word_pairs",
            Op::map(|_, v| {
                Ok(Value::pair(
                    ["a", "b", "c"][v.as_i64().unwrap_or(0) as usize % 3],
                    1,
                ))
            }),
        );
        let ctx = TestContext::default();
        let l = lineage(vec![source(2), mapped(1, 0, "test.compute.word_pairs", vec![])]);
        let add = Aggregator::Reduce(OpCall::new("add", vec![]));
        // Map-side combine: 3 distinct keys of 9 records.
        let d = dep(Some(add.clone()), true, 2);
        let (b0, c0) = buckets(run_task(&map_stage(l.clone(), d.clone()), 0, range(0, 9), &ctx));
        let (b1, c1) = buckets(run_task(&map_stage(l.clone(), d.clone()), 1, range(0, 3), &ctx));
        assert_eq!(
            (b0.len(), c0.shuffle_records_written, c1.shuffle_records_written),
            (2, 3, 3)
        );
        assert_eq!(
            c0.shuffle_bytes_written,
            b0.iter().map(|b| b.len() as u64).sum::<u64>()
        );
        // "a" (97) and "c" (99) go to partition 1, "b" to 0.
        assert_eq!(
            decode_bucket(&b0[0]).unwrap(),
            vec![(Value::str("b"), Value::I64(3))]
        );
        assert_eq!(
            decode_bucket(&b0[1]).unwrap(),
            vec![(Value::str("a"), Value::I64(3)), (Value::str("c"), Value::I64(3))]
        );
        // Reduce side: merge both map outputs.
        let reduce_l = lineage(vec![node(
            2,
            RddKind::Shuffled {
                parent: 1,
                shuffle_id: 5,
                partitioner: d.partitioner.clone(),
                aggregator: Some(add),
                map_side_combine: true,
            },
            2,
        )]);
        let ctx = TestContext {
            outputs: HashMap::from([(5, vec![b0.clone(), b1.clone()])]),
            ..Default::default()
        };
        let (out, counts) =
            run_task(&result(reduce_l.clone(), 2, ResultFunc::Collect), 1, None, &ctx).unwrap();
        assert_eq!(
            out,
            TaskOutput::Value(Value::List(vec![Value::pair("a", 4), Value::pair("c", 4)]))
        );
        assert_eq!(counts.shuffle_records_read, 4);
        assert_eq!(counts.shuffle_bytes_read, (b0[1].len() + b1[1].len()) as u64);
        // A fetch failure is the task's failure as is.
        let failure = TaskError::FetchFailed(FetchFailure {
            executor_id: Some("1".into()),
            host: Some("host1".into()),
            shuffle_id: 5,
            map_id: 17,
            map_index: 1,
            reduce_id: 1,
            message: "lost".into(),
        });
        let failing = TestContext {
            fetch_error: Some(failure.clone()),
            ..Default::default()
        };
        assert_eq!(
            run_task(&result(reduce_l.clone(), 2, ResultFunc::Count), 1, None, &failing),
            Err(failure)
        );
        // Garbage instead of a bucket: an IOException, not a panic.
        let garbage = TestContext {
            outputs: HashMap::from([(5, vec![vec![vec![], vec![0x93, 0xc1, 0xff]]])]),
            ..Default::default()
        };
        let e = run_task(&result(reduce_l, 2, ResultFunc::Count), 1, None, &garbage).unwrap_err();
        let TaskError::Exception { class_name, message } = e else {
            panic!()
        };
        assert_eq!(class_name, "java.io.IOException");
        assert!(message.starts_with("cannot decode the output of map 0 of shuffle 5 for reduce partition 1"));
    }

    /// The reduce side of `reduceByKey(add)` as the generic path merges it.
    fn generic_merge(buckets: &[Vec<u8>]) -> Vec<Value> {
        let mut map: AppendOnlyMap<Value, Value> = AppendOnlyMap::new();
        for b in buckets {
            for (k, v) in decode_bucket(b).unwrap() {
                map.change_value(k, |old| match old {
                    Some(o) => o.numeric_add(v),
                    None => Ok::<_, String>(v),
                })
                .unwrap();
            }
        }
        map.into_entries().map(|(k, v)| Value::pair(k, v)).collect()
    }

    /// A shuffle reduce task collecting `reduceByKey(add)` of the given map outputs.
    fn collect_reduced(outputs: Vec<Vec<Vec<u8>>>) -> (Value, TaskCounts) {
        let reduce_l = lineage(vec![node(
            2,
            RddKind::Shuffled {
                parent: 1,
                shuffle_id: 5,
                partitioner: Partitioner::Hash { partitions: 1 },
                aggregator: Some(Aggregator::Reduce(OpCall::new("add", vec![]))),
                map_side_combine: true,
            },
            1,
        )]);
        let ctx = TestContext {
            outputs: HashMap::from([(5, outputs)]),
            ..Default::default()
        };
        match run_task(&result(reduce_l, 2, ResultFunc::Collect), 0, None, &ctx).unwrap() {
            (TaskOutput::Value(v), c) => (v, c),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn fused_reduce_gives_the_generic_merge() {
        let counts = [
            1i64,
            127,
            128,
            255,
            256,
            65_535,
            65_536,
            1 << 32,
            -1,
            -32,
            -33,
            -129,
            -40_000,
            i64::from(i32::MIN) - 1,
            i64::MAX,
            i64::MIN,
        ];
        let mut words: Vec<String> = ["", "Aa", "BB", "AaAa", "BBBB", "AaBB", "héllo", "→😀", "\u{0}"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        words.push("x".repeat(31));
        words.push("x".repeat(32));
        words.push("y".repeat(300));
        words.push("z".repeat(70_000));
        for i in 0..3000 {
            words.push(format!("w{i}"));
        }
        // Four map outputs, each word in some of them, in different orders.
        let buckets: Vec<Vec<u8>> = (0..4usize)
            .map(|m| {
                let records: Vec<(Value, Value)> = words
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| (i + m) % 3 != 0)
                    .map(|(i, w)| {
                        (
                            Value::str(w.as_str()),
                            Value::I64(counts[(i * 7 + m) % counts.len()]),
                        )
                    })
                    .collect();
                let mut records = records;
                if m % 2 == 1 {
                    records.reverse();
                }
                encode_bucket(&records).unwrap()
            })
            .collect();
        let want = generic_merge(&buckets);
        let outputs: Vec<Vec<Vec<u8>>> = buckets.iter().map(|b| vec![b.clone()]).collect();
        let (got, c) = collect_reduced(outputs.clone());
        assert_eq!(got, Value::List(want.clone()));
        let records: u64 = buckets
            .iter()
            .map(|b| decode_bucket(b).unwrap().len() as u64)
            .sum();
        assert_eq!(c.shuffle_records_read, records);
        assert_eq!(
            c.shuffle_bytes_read,
            buckets.iter().map(|b| b.len() as u64).sum::<u64>()
        );
        // An empty map output among them changes nothing.
        let mut with_empty = outputs;
        with_empty.insert(1, vec![vec![]]);
        assert_eq!(collect_reduced(with_empty).0, Value::List(want));
        // Values or keys of other types take the generic path, with its results.
        let others: Vec<Vec<(Value, Value)>> = vec![
            vec![
                (Value::str("a"), Value::I64(1)),
                (Value::str("b"), Value::F64(0.5)),
            ],
            vec![
                (Value::str("a"), Value::F64(2.5)),
                (Value::Bytes(vec![1, 2]), Value::I64(3)),
            ],
            vec![(Value::I64(7), Value::I64(1)), (Value::str("a"), Value::I64(4))],
        ];
        for records in others {
            let b = vec![encode_bucket(&records).unwrap(), encode_bucket(&records).unwrap()];
            let (got, _) = collect_reduced(b.iter().map(|x| vec![x.clone()]).collect());
            assert_eq!(got, Value::List(generic_merge(&b)), "{records:?}");
        }
    }

    #[test]
    fn shuffle_without_combine_and_group() {
        let ctx = TestContext::default();
        register(
            "test.compute.mod3",
            Op::map(|_, v| Ok(Value::pair(v.as_i64().unwrap_or(0) % 3, v))),
        );
        let l = lineage(vec![source(1), mapped(1, 0, "test.compute.mod3", vec![])]);
        let (b, c) = buckets(run_task(
            &map_stage(l.clone(), dep(Some(Aggregator::Group), false, 1)),
            0,
            range(0, 7),
            &ctx,
        ));
        assert_eq!(c.shuffle_records_written, 7);
        let reduce = |aggregator: Option<Aggregator>, combine: bool, b: Vec<Vec<u8>>| {
            let l = lineage(vec![node(
                2,
                RddKind::Shuffled {
                    parent: 1,
                    shuffle_id: 5,
                    partitioner: Partitioner::Hash { partitions: 1 },
                    aggregator,
                    map_side_combine: combine,
                },
                1,
            )]);
            let ctx = TestContext {
                outputs: HashMap::from([(5, vec![b.clone(), b])]),
                ..Default::default()
            };
            value(run_task(&result(l, 2, ResultFunc::Collect), 0, None, &ctx)).unwrap()
        };
        let grouped = reduce(Some(Aggregator::Group), false, b.clone());
        assert_eq!(
            grouped,
            Value::List(vec![
                Value::pair(0, Value::List(ints([0, 3, 6, 0, 3, 6]))),
                Value::pair(1, Value::List(ints([1, 4, 1, 4]))),
                Value::pair(2, Value::List(ints([2, 5, 2, 5]))),
            ])
        );
        let plain = reduce(None, false, b);
        assert_eq!(plain.as_list().map(|l| l.len()), Some(14));
        // Group with map-side combine ships lists.
        let (b, c) = buckets(run_task(
            &map_stage(l.clone(), dep(Some(Aggregator::Group), true, 1)),
            0,
            range(0, 7),
            &ctx,
        ));
        assert_eq!(c.shuffle_records_written, 3);
        let grouped_combined = reduce(Some(Aggregator::Group), true, b);
        assert_eq!(grouped_combined, grouped);
        // Not pairs: a clear failure naming the shuffle and the RDD.
        let bad = lineage(vec![source(1), mapped(1, 0, "identity", vec![])]);
        let e = run_task(&map_stage(bad, dep(None, false, 2)), 0, range(0, 3), &ctx).unwrap_err();
        assert_eq!(
            e,
            TaskError::exception(
                "java.lang.ClassCastException",
                "shuffle 5 needs (key, value) records, but RDD 1 produced I64 0"
            )
        );
        // Zero reduce partitions with records: Spark's / by zero.
        let e = run_task(&map_stage(l, dep(None, false, 0)), 0, range(0, 3), &ctx).unwrap_err();
        assert_eq!(
            e,
            TaskError::exception("java.lang.ArithmeticException", "/ by zero")
        );
    }

    #[test]
    fn bucket_codec() {
        let records = vec![
            (Value::str("hello"), Value::I64(1)),
            (
                Value::Null,
                Value::List(vec![Value::F64(1.5), Value::Bool(true), Value::Bytes(vec![1, 2])]),
            ),
            (
                Value::pair(1, "x"),
                Value::pair(Value::pair(2, 3), Value::F64(f64::NAN)),
            ),
            (Value::I64(i64::MIN), Value::List(vec![])),
        ];
        let bytes = encode_bucket(&records).unwrap();
        assert_eq!(decode_bucket(&bytes).unwrap(), records);
        // ("hello", 1): array header, the string (1 + 5 bytes) and the integer (1 byte).
        assert_eq!(encode_bucket(&records[..1]).unwrap().len(), 8);
        assert_eq!(encode_bucket(&[]).unwrap(), Vec::<u8>::new());
        assert_eq!(decode_bucket(&[]).unwrap(), vec![]);
        // Malformed: an odd number of values, a two-entry map, an unsigned overflow,
        // truncation, deep nesting, a huge length with nothing behind it.
        assert!(decode_bucket(&[0x91, 0x01])
            .unwrap_err()
            .contains("a key without a value"));
        assert!(decode_bucket(&[0x92, 0x82, 1, 2, 3, 4, 5]).is_err());
        assert!(decode_bucket(&[0x92, 0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]).is_err());
        assert!(decode_bucket(&bytes[..bytes.len() - 1]).is_err());
        let mut deep = vec![0x92u8];
        deep.extend(std::iter::repeat_n(0x91u8, 200_000));
        assert!(decode_bucket(&deep).is_err());
        assert!(decode_bucket(&[0xdd, 0xff, 0xff, 0xff, 0xff]).is_err());
        for i in 0..bytes.len() {
            for bit in [0x01u8, 0x20, 0x80] {
                let mut bad = bytes.clone();
                bad[i] ^= bit;
                let _ = decode_bucket(&bad);
            }
        }
    }

    /// The generic path's buckets and lines read for a shuffle map task (no fused path).
    fn generic_map(st: &StageTask, partition: u32, ctx: &dyn TaskContext) -> (Vec<Vec<(Value, Value)>>, u64) {
        let TaskKind::ShuffleMap { dep } = &st.kind else {
            panic!("not a map stage")
        };
        let counters = Counters::default();
        let env = Env {
            lineage: &st.lineage,
            ctx,
            counters: &counters,
        };
        let records = compute(env, dep.parent, partition, &mut None).unwrap();
        let buckets = partition_records(env, dep, records).unwrap();
        (buckets, counters.records_read.get())
    }

    /// Word count's map stage as `text_file(..).flat_map("split", ..).map("pair_with_one")
    /// .reduce_by_key("add")` builds it (the text file under an `identity` map).
    fn word_count_stage(path: &str, splits: Vec<FileSplit>, sep: Option<&str>, partitions: u32) -> StageTask {
        let n = splits.len() as u32;
        let args = sep.map(|s| vec![Value::str(s)]).unwrap_or_default();
        let mut lines = mapped(3, 0, "identity", vec![]);
        lines.num_partitions = n;
        let mut words = mapped(1, 3, "split", args);
        words.num_partitions = n;
        let mut pairs = mapped(2, 1, "pair_with_one", vec![]);
        pairs.num_partitions = n;
        let l = lineage(vec![
            node(
                0,
                RddKind::TextFile {
                    path: path.into(),
                    splits,
                },
                n,
            ),
            lines,
            words,
            pairs,
        ]);
        map_stage(
            l,
            ShuffleDep {
                shuffle_id: 5,
                parent: 2,
                num_maps: n,
                partitioner: Partitioner::Hash { partitions },
                aggregator: Some(Aggregator::Reduce(OpCall::new("add", vec![]))),
                map_side_combine: true,
            },
        )
    }

    /// A text exercising what word count must keep: non-ASCII words (surrogate pairs too),
    /// invalid UTF-8, empty lines, doubled, leading and trailing spaces, CRLF and lone CR,
    /// a byte order mark, colliding hash codes ("Aa"/"BB"), enough distinct words to grow the
    /// table several times, and long lines.
    fn tricky_text() -> Vec<u8> {
        let mut t: Vec<u8> = vec![0xEF, 0xBB, 0xBF];
        t.extend_from_slice("héllo wörld héllo →😀 Aa BB AaAa BBBB AaBB\n".as_bytes());
        t.extend_from_slice(b"\n\n  double  spaces  here  \r\n lone\rcr\r\n");
        t.extend_from_slice(b"bad \xff\xfe utf8 \xc3( end\n   \n \n");
        for i in 0..3000u32 {
            t.extend_from_slice(format!("w{} x{} w{}", i % 700, i % 13, i).as_bytes());
            t.extend_from_slice(if i % 5 == 0 { b"\r\n" } else { b"\n" });
        }
        t.extend_from_slice("a".repeat(5000).as_bytes());
        t.extend_from_slice(b" tail\r");
        t.extend_from_slice(b"last line without terminator");
        t
    }

    #[test]
    fn fused_word_count_gives_the_generic_buckets() {
        let dir = tempfile::tempdir().unwrap();
        let text = tricky_text();
        let path = dir.path().join("words.txt");
        std::fs::write(&path, &text).unwrap();
        let path = path.to_string_lossy().into_owned();
        let ctx = TestContext::default();
        let len = text.len() as u64;
        let plans: Vec<Vec<FileSplit>> = vec![
            vec![FileSplit {
                start: 0,
                length: len,
            }],
            crate::rdd::text::hadoop_splits(len, 3, u64::MAX).unwrap(),
            // Splits that start inside a CRLF, on a CR, on the BOM, mid-character.
            (0..len)
                .step_by(997)
                .map(|s| FileSplit {
                    start: s,
                    length: 997.min(len - s),
                })
                .collect(),
            vec![
                FileSplit { start: 0, length: 1 },
                FileSplit { start: 1, length: 70 },
                FileSplit {
                    start: 71,
                    length: len - 71,
                },
            ],
        ];
        for splits in plans {
            for partitions in [1, 2, 7] {
                for sep in [None, Some(" "), Some("w")] {
                    let st = word_count_stage(&path, splits.clone(), sep, partitions);
                    let TaskKind::ShuffleMap { dep } = &st.kind else {
                        unreachable!()
                    };
                    let mut total_lines = 0;
                    for p in 0..splits.len() as u32 {
                        let plan = fused::word_count_plan(&st.lineage, dep, p).expect("the fused shape");
                        let read = Cell::new(0);
                        let fast = fused::word_count_map(&plan, &ctx, &read).unwrap();
                        let (slow, slow_read) = generic_map(&st, p, &ctx);
                        assert_eq!(
                            fast, slow,
                            "split {p} of {splits:?}, {partitions} partitions, {sep:?}"
                        );
                        assert_eq!(read.get(), slow_read);
                        total_lines += read.get();
                        // And through run_task, counts included.
                        let (out, counts) = run_task(&st, p, None, &ctx).unwrap();
                        let mut c = TaskCounts::default();
                        let want = encode_buckets(dep, &slow, &mut c).unwrap();
                        assert_eq!(out, TaskOutput::MapOutput { buckets: want });
                        c.records_read = slow_read;
                        assert_eq!(counts, c);
                    }
                    let whole = crate::rdd::text::read_split_lines(
                        &path,
                        &FileSplit {
                            start: 0,
                            length: len,
                        },
                    )
                    .unwrap();
                    assert_eq!(total_lines, whole.len() as u64);
                }
            }
        }
        // The non-ASCII words hash as Java's String.hashCode (UTF-16 code units).
        let st = word_count_stage(
            &path,
            vec![FileSplit {
                start: 0,
                length: len,
            }],
            None,
            1,
        );
        let TaskKind::ShuffleMap { dep } = &st.kind else {
            unreachable!()
        };
        let plan = fused::word_count_plan(&st.lineage, dep, 0).unwrap();
        let buckets = fused::word_count_map(&plan, &ctx, &Cell::new(0)).unwrap();
        let get = |w: &str| {
            buckets[0]
                .iter()
                .find(|(k, _)| k == &Value::str(w))
                .map(|(_, v)| v.clone())
        };
        assert_eq!(get("héllo"), Some(Value::I64(2)));
        assert_eq!(get("→😀"), Some(Value::I64(1)));
        assert_eq!(get("\u{fffd}\u{fffd}"), Some(Value::I64(1)));
        // Empty strings between doubled spaces and from empty lines are words.
        assert!(get("").is_some_and(|n| n.as_i64().unwrap() > 5));
    }

    /// Lines, words, a CRLF, a lone CR, a non-ASCII character and invalid UTF-8 across the
    /// edges of the fused reader's blocks: the fused map gives the generic path's buckets.
    #[test]
    fn fused_word_count_across_block_edges() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = TestContext::default();
        let block = fused::BLOCK;
        let edge_pieces: [&[u8]; 6] = [
            b"straddling words  here\r\nnext",
            b"lone\rcr then words",
            "h\u{e9}llo w\u{f6}rld \u{2192}\u{1f600}".as_bytes(),
            b"bad \xff\xfe utf8 \xc3",
            b"   \n \n\n",
            b"abcdefghijklmnopqrstuvwxyz0123456789 abcdefghijklmnopqrstuvwxyz0123456789",
        ];
        for (v, piece) in edge_pieces.iter().enumerate() {
            for before in [0usize, 1, 5, 9, 17] {
                let mut t: Vec<u8> = Vec::new();
                let mut i = 0u32;
                // Fill up to just before the first block's end, then the piece across it.
                while t.len() + 90 < block - before {
                    t.extend_from_slice(format!("w{} x{} w{}\n", i % 97, i % 7, i).as_bytes());
                    i += 1;
                }
                t.resize(block - before, b'f');
                t.extend_from_slice(piece);
                while t.len() < block + 3000 {
                    t.extend_from_slice(
                        format!("z{} {}\n", i % 89, "q".repeat((i % 40) as usize)).as_bytes(),
                    );
                    i += 1;
                }
                let path = dir.path().join(format!("edge-{v}-{before}.txt"));
                std::fs::write(&path, &t).unwrap();
                let path = path.to_string_lossy().into_owned();
                let len = t.len() as u64;
                // The whole file; and two splits cut inside the piece, the first one's last
                // line read across the block's end.
                let cut = (block - before + 3) as u64;
                let plans = [
                    vec![FileSplit {
                        start: 0,
                        length: len,
                    }],
                    vec![
                        FileSplit {
                            start: 0,
                            length: cut,
                        },
                        FileSplit {
                            start: cut,
                            length: len - cut,
                        },
                    ],
                ];
                for splits in plans {
                    let n = splits.len() as u32;
                    let st = word_count_stage(&path, splits, None, 3);
                    let TaskKind::ShuffleMap { dep } = &st.kind else {
                        unreachable!()
                    };
                    for p in 0..n {
                        let plan = fused::word_count_plan(&st.lineage, dep, p).expect("the fused shape");
                        let read = Cell::new(0);
                        let fast = fused::word_count_map(&plan, &ctx, &read).unwrap();
                        let (slow, slow_read) = generic_map(&st, p, &ctx);
                        assert_eq!(fast, slow, "piece {v}, {before} bytes before the edge, split {p}");
                        assert_eq!(read.get(), slow_read);
                    }
                }
            }
        }
    }

    #[test]
    fn fused_paths_only_take_their_shapes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.txt");
        std::fs::write(&path, b"a b\n").unwrap();
        let path = path.to_string_lossy().into_owned();
        let split = vec![FileSplit { start: 0, length: 4 }];
        let shape = |st: &StageTask, p: u32| {
            let TaskKind::ShuffleMap { dep } = &st.kind else {
                unreachable!()
            };
            fused::word_count_plan(&st.lineage, dep, p).is_some()
        };
        assert!(shape(&word_count_stage(&path, split.clone(), None, 2), 0));
        // The text file straight under the split; another map between split and pairs.
        let mut st = word_count_stage(&path, split.clone(), None, 2);
        st.lineage.insert(mapped(1, 0, "split", vec![]));
        assert!(shape(&st, 0));
        let mut st = word_count_stage(&path, split.clone(), None, 2);
        st.lineage.insert(mapped(2, 3, "pair_with_one", vec![]));
        st.lineage.insert(mapped(3, 1, "identity", vec![]));
        st.lineage.insert(mapped(1, 4, "split", vec![]));
        st.lineage.insert(mapped(4, 0, "identity", vec![]));
        assert!(!shape(&st, 0));
        // No such partition, no reduce partitions, a separator of two bytes or non-ASCII.
        assert!(!shape(&word_count_stage(&path, split.clone(), None, 2), 1));
        assert!(!shape(&word_count_stage(&path, split.clone(), None, 0), 0));
        assert!(!shape(&word_count_stage(&path, split.clone(), Some("ab"), 2), 0));
        assert!(!shape(&word_count_stage(&path, split.clone(), Some("é"), 2), 0));
        // Another reduce function, no map-side combine.
        let mut st = word_count_stage(&path, split.clone(), None, 2);
        if let TaskKind::ShuffleMap { dep } = &mut st.kind {
            dep.aggregator = Some(Aggregator::Reduce(OpCall::new("max", vec![])));
        }
        assert!(!shape(&st, 0));
        let mut st = word_count_stage(&path, split, None, 2);
        if let TaskKind::ShuffleMap { dep } = &mut st.kind {
            dep.map_side_combine = false;
        }
        assert!(!shape(&st, 0));
        // A Map operation without a fused form, and one registered again without it.
        let pi = |op: &str| {
            let l = lineage(vec![source(1), mapped(1, 0, op, vec![])]);
            let slice = Slice::Range {
                start: 0,
                end: 10,
                step: 1,
            };
            fused::range_sum_plan(&l, 1, &OpCall::new("add", vec![]), 0, Some(&slice)).is_some()
        };
        assert!(!pi("identity"));
        ops::register_with_range_sum(
            "test.compute.fused_then_plain",
            Op::map(|_, v| Ok(v)),
            std::sync::Arc::new(|_, _, _| 0),
        );
        assert!(pi("test.compute.fused_then_plain"));
        register("test.compute.fused_then_plain", Op::map(|_, v| Ok(v)));
        assert!(!pi("test.compute.fused_then_plain"));
    }

    #[test]
    fn fused_range_sum_gives_the_generic_reduce() {
        register(
            "test.compute.mod7",
            Op::map(|_, v| Ok(Value::I64(v.as_i64().unwrap_or(0).rem_euclid(7)))),
        );
        ops::register_with_range_sum(
            "test.compute.mod7_fused",
            Op::map(|_, v| Ok(Value::I64(v.as_i64().unwrap_or(0).rem_euclid(7)))),
            std::sync::Arc::new(|first, count, step| {
                (0..count as i64).map(|k| (first + k * step).rem_euclid(7)).sum()
            }),
        );
        crate::apps::spark_pi::register_ops();
        let ctx = TestContext::default();
        let ranges = [
            (0, 0, 1),
            (1, 2, 1),
            (-5000, 5000, 3),
            (9000, -10, -7),
            (1, 100_001, 1),
            (0, 10, 0),
        ];
        for (plain, fused_op) in [
            ("test.compute.mod7", "test.compute.mod7_fused"),
            (crate::apps::spark_pi::SAMPLE_OP, crate::apps::spark_pi::SAMPLE_OP),
        ] {
            for (start, end, step) in ranges {
                let run = |op: &str| {
                    let l = lineage(vec![source(1), mapped(1, 0, op, vec![])]);
                    let st = result(l, 1, ResultFunc::Reduce(OpCall::new("add", vec![])));
                    value(run_task(&st, 0, range_step(start, end, step), &ctx))
                };
                let want = run(plain);
                assert_eq!(run(fused_op), want, "{fused_op} over {start}..{end} by {step}");
                if plain == crate::apps::spark_pi::SAMPLE_OP {
                    // The generic path, one record at a time.
                    let l = lineage(vec![source(1), mapped(1, 0, plain, vec![])]);
                    let counters = Counters::default();
                    let env = Env {
                        lineage: &l,
                        ctx: &ctx,
                        counters: &counters,
                    };
                    let mut slice = range_step(start, end, step);
                    let records = compute(env, 1, 0, &mut slice).unwrap();
                    let generic =
                        apply_result_func(env, &ResultFunc::Reduce(OpCall::new("add", vec![])), records)
                            .unwrap();
                    assert_eq!(want, Ok(generic));
                }
            }
        }
        // A kill stops the loop within a block.
        let killed = TestContext {
            kill_after_checks: Some(2),
            ..Default::default()
        };
        let l = lineage(vec![source(1), mapped(1, 0, "test.compute.mod7_fused", vec![])]);
        let st = result(l, 1, ResultFunc::Reduce(OpCall::new("add", vec![])));
        assert!(run_task(&st, 0, range(0, 1_000_000), &killed)
            .unwrap_err()
            .is_killed());
        assert_eq!(killed.checks.get(), 3);
    }
}
