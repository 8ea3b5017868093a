//! Lineage as data: values, RDD graphs, partitions, dependencies, registered operations,
//! how a task computes its partition, and the RDD API applications use.
//!
//! Layer: rdd (the Spark side's data model, above yarn; no actors).
//!
//! Closures cannot be shipped, so lineage is data and operations are registered by name in
//! the binary (as Spark ships a user's jar):
//! * [`value`] — the records ([`Value`]), with JVM hash codes and Scala-style display;
//! * [`lineage`] — RDD nodes, dependencies and the graph ([`Lineage`]): stage sub-graphs,
//!   shuffle dependencies, slices, preferred hosts;
//! * [`partitioner`] — `HashPartitioner` placement ([`Partitioner::get_partition`]) and
//!   Spark's `defaultPartitioner` rule;
//! * [`slice`](mod@slice) — ParallelCollectionRDD's slicing ([`slice_range`], [`slice_values`]);
//! * [`text`] — text files: Hadoop's split planning ([`text_file_splits`]) and line reading
//!   by byte range;
//! * [`ops`] — the operation registry ([`register`], [`lookup`], [`Op`], [`OpCtx`]) and the
//!   built-in operations;
//! * [`task`] — what a task computes ([`StageTask`], [`ResultFunc`]), the context an executor
//!   gives it ([`TaskContext`]) and [`run_task`]; [`compute`] holds how each RDD kind is
//!   computed, [`aomap`] Spark's `AppendOnlyMap` used for shuffle aggregation, [`fused`]
//!   the lineage shapes computed without a `Value` per record (word count's map side,
//!   an integer map reduced by `add` over a range), with the generic path's results, and
//!   `table` the zero-filled slot tables its counting uses (large ones with huge pages);
//! * [`api`] — the RDD API applications use ([`Rdd`], [`parallelize`], [`text_file`], ...)
//!   over a [`JobRunner`] the SparkContext implements;
//! * [`local`] — [`LocalRunner`], an in-process [`JobRunner`]: the reference evaluator.
//!
//! Everything that travels (lineage, stage tasks, outputs, failures) is serde and is encoded
//! with [`encode`] / [`decode`]: MessagePack in rmp-serde's compact form (structs as
//! arrays), byte strings as MessagePack binary.

pub mod aomap;
pub mod api;
pub mod compute;
pub mod fused;
pub mod lineage;
pub mod local;
pub mod ops;
pub mod partitioner;
pub mod slice;
mod table;
pub mod task;
pub mod text;
pub mod value;

pub use api::{
    make_rdd, parallelize, parallelize_range, text_file, JobError, JobRunner, PartitionInfo, Rdd, RddBarrier,
    TAKE_SCALE_UP_FACTOR,
};
pub use lineage::{
    Aggregator, Dependency, FileSplit, Lineage, OpCall, Partitioner, RddId, RddKind, RddNode, ShuffleDep,
    ShuffleId, Slice,
};
pub use local::LocalRunner;
pub use ops::{lookup, register, resolve, DriverContext, Op, OpCtx, Records};
pub use partitioner::{default_partitioner, non_negative_mod};
pub use slice::{slice_range, slice_values, Slices};
pub use task::{
    not_a_barrier_task, run_task, BarrierMethod, FetchFailure, ResultFunc, StageTask, TaskContext,
    TaskCounts, TaskError, TaskKind, TaskOutput, EMPTY_COLLECTION,
};
pub use text::text_file_splits;
pub use value::Value;

use serde::de::DeserializeOwned;
use serde::Serialize;

/// Encodes with rmp-serde's compact form (`rmp_serde::to_vec`).
pub fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>, String> {
    rmp_serde::to_vec(value).map_err(|e| format!("cannot encode: {e}"))
}

/// Decodes what [`encode`] produced; malformed bytes are an error, never a panic.
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    rmp_serde::from_slice(bytes).map_err(|e| format!("cannot decode: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_decode_round_trip() {
        let values = vec![
            Value::Null,
            Value::Bool(true),
            Value::I64(-42),
            Value::F64(f64::NAN),
            Value::F64(-0.0),
            Value::str("héllo"),
            Value::Bytes(vec![0, 1, 255]),
            Value::pair(
                "k",
                Value::List(vec![Value::I64(1), Value::pair(1.5, Value::Null)]),
            ),
        ];
        for v in &values {
            let back: Value = decode(&encode(v).unwrap()).unwrap();
            assert_eq!(&back, v);
        }
        // Bytes travel as MessagePack binary (0xc4 = bin 8), not as an array of integers.
        let enc = encode(&Value::Bytes(vec![7; 40])).unwrap();
        assert!(enc.windows(2).any(|w| w == [0xc4, 40]), "{enc:?}");
        // A lazily sliced range of ten million numbers costs a few bytes per slice.
        let slices = slice_range(1, 10_000_001, 1, 100).unwrap();
        let bytes = encode(&slices).unwrap();
        assert!(bytes.len() < 2_000, "{}", bytes.len());
        assert_eq!(decode::<Vec<Slice>>(&bytes).unwrap(), slices);
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(decode::<Value>(&[]).unwrap_err().starts_with("cannot decode"));
        assert!(decode::<Lineage>(&[0xc1]).is_err());
        assert!(decode::<StageTask>(&[0x92, 0xff, 0x00]).is_err());
        // A length prefix promising 4 billion elements with nothing behind it.
        assert!(decode::<Vec<Value>>(&[0xdd, 0xff, 0xff, 0xff, 0xff]).is_err());
        // Deep nesting is refused by rmp-serde's depth limit rather than overflowing the stack.
        let mut deep = vec![0x91u8; 100_000];
        deep.push(0xc0);
        assert!(decode::<Value>(&deep).is_err());
        // Every prefix and a sprinkling of bit flips of a real stage binary.
        let mut lineage = Lineage::default();
        lineage.insert(RddNode {
            id: 0,
            kind: RddKind::ParallelCollection {
                slices: slice_values(vec![Value::str("a b"), Value::pair(1, 2.5)], 2)
                    .unwrap()
                    .into(),
                locations: vec![vec!["h1".into()], vec![]],
            },
            num_partitions: 2,
            call_site: "parallelize at T".into(),
        });
        let st = StageTask {
            lineage,
            kind: TaskKind::Result {
                rdd: 0,
                func: ResultFunc::Reduce(OpCall::new("add", vec![Value::I64(1)])),
            },
        };
        let good = encode(&st).unwrap();
        assert_eq!(decode::<StageTask>(&good).unwrap(), st);
        for cut in 0..good.len() {
            let _ = decode::<StageTask>(&good[..cut]);
        }
        for i in 0..good.len() {
            for bit in [0x01u8, 0x10, 0x80] {
                let mut bad = good.clone();
                bad[i] ^= bit;
                let _ = decode::<StageTask>(&bad);
            }
        }
    }
}
