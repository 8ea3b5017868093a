//! Lineage as data: RDDs as nodes of a graph (`Lineage`), their partitions and their
//! dependencies. Closures cannot be shipped, so every RDD is described by what it is (a
//! parallelized collection, a text file, a map-partitions with a registered operation, a
//! shuffled RDD with a partitioner and an aggregator); a task carries the part of the
//! lineage it needs, encoded with rmp-serde.
//!
//! Layer: rdd (the Spark side's data model, above yarn; no actors).
//!
//! Stage boundaries are shuffle dependencies: [`Lineage::shuffle_dependencies`] gives the
//! ones a stage reads, [`Lineage::for_stage`] the sub-graph one stage computes.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::slice::Slices;
use super::value::Value;

/// An RDD's id, unique within its SparkContext.
pub type RddId = u32;
/// A shuffle's id, unique within its SparkContext.
pub type ShuffleId = u32;

/// A call of a registered operation: its name and the values it was given (what a Scala
/// closure would have captured).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpCall {
    pub name: String,
    pub args: Vec<Value>,
}

impl OpCall {
    pub fn new(name: impl Into<String>, args: Vec<Value>) -> OpCall {
        OpCall {
            name: name.into(),
            args,
        }
    }
}

/// How keys are assigned to reduce partitions (Spark's HashPartitioner: the key's Java
/// hashCode, non-negative modulo the partition count).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Partitioner {
    Hash { partitions: u32 },
}

impl Partitioner {
    pub fn num_partitions(&self) -> u32 {
        match self {
            Partitioner::Hash { partitions } => *partitions,
        }
    }
}

/// How values of one key are combined across a shuffle (Spark's Aggregator).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Aggregator {
    /// reduceByKey: values merged with a registered reduce operation.
    Reduce(OpCall),
    /// groupByKey: values gathered into a list, in arrival order.
    Group,
}

/// A parallelized collection's slice: its values, or a range computed where it runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Slice {
    Values(Vec<Value>),
    /// Integers `start`, `start + step`, ... up to `end` exclusive.
    Range {
        start: i64,
        end: i64,
        step: i64,
    },
}

/// A byte range of a text file (a Hadoop FileSplit): lines starting in it belong to it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileSplit {
    pub start: u64,
    pub length: u64,
}

/// What an RDD is.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum RddKind {
    /// ParallelCollectionRDD. `slices` is empty in a lineage that travels with a task (each
    /// task carries only its own slice); a range's slices are computed when asked for;
    /// `locations` are preferred hosts per slice.
    ParallelCollection {
        slices: Slices,
        locations: Vec<Vec<String>>,
    },
    /// HadoopRDD over a local text file, one partition per split, yielding the lines as
    /// strings (Spark's `(offset, line)` records are not materialised; `textFile` adds the
    /// MapPartitionsRDD Spark adds, as an `identity` map). `path` is absolute.
    TextFile { path: String, splits: Vec<FileSplit> },
    /// MapPartitionsRDD: a registered operation applied to each partition of `parent`.
    /// `is_from_barrier`: made by `rdd.barrier().mapPartitions(...)` (the stage computing it
    /// is a barrier stage).
    MapPartitions {
        parent: RddId,
        op: OpCall,
        preserves_partitioning: bool,
        #[serde(default)]
        is_from_barrier: bool,
    },
    /// ShuffledRDD: `parent`'s key-value records redistributed by `partitioner`.
    Shuffled {
        parent: RddId,
        shuffle_id: ShuffleId,
        partitioner: Partitioner,
        aggregator: Option<Aggregator>,
        map_side_combine: bool,
    },
}

/// One RDD of a lineage.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RddNode {
    pub id: RddId,
    pub kind: RddKind,
    pub num_partitions: u32,
    /// Where it was created, as Spark's call sites read (`parallelize at MapCount`).
    pub call_site: String,
}

impl RddNode {
    /// Spark's class name for this RDD (`ParallelCollectionRDD`, ...), as RDDInfo shows it.
    pub fn class_name(&self) -> &'static str {
        match self.kind {
            RddKind::ParallelCollection { .. } => "ParallelCollectionRDD",
            RddKind::TextFile { .. } => "HadoopRDD",
            RddKind::MapPartitions { .. } => "MapPartitionsRDD",
            RddKind::Shuffled { .. } => "ShuffledRDD",
        }
    }

    /// Its parents' ids (narrow or shuffle).
    pub fn parent_ids(&self) -> Vec<RddId> {
        match &self.kind {
            RddKind::ParallelCollection { .. } | RddKind::TextFile { .. } => vec![],
            RddKind::MapPartitions { parent, .. } | RddKind::Shuffled { parent, .. } => vec![*parent],
        }
    }
}

/// A shuffle dependency: the map side's RDD and how its output is partitioned.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShuffleDep {
    pub shuffle_id: ShuffleId,
    /// The RDD whose partitions the map tasks compute.
    pub parent: RddId,
    /// How many map tasks (the parent's partitions).
    pub num_maps: u32,
    pub partitioner: Partitioner,
    pub aggregator: Option<Aggregator>,
    pub map_side_combine: bool,
}

/// A dependency of an RDD on its parent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Dependency {
    /// Partition i of the child reads partition i of the parent.
    OneToOne {
        parent: RddId,
    },
    Shuffle(ShuffleDep),
}

/// An RDD graph: every RDD an RDD was derived from, by id.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Lineage {
    pub nodes: BTreeMap<RddId, RddNode>,
}

impl Lineage {
    pub fn node(&self, id: RddId) -> Option<&RddNode> {
        self.nodes.get(&id)
    }

    pub fn insert(&mut self, node: RddNode) {
        self.nodes.insert(node.id, node);
    }

    pub fn num_partitions(&self, id: RddId) -> u32 {
        self.node(id).map(|n| n.num_partitions).unwrap_or(0)
    }

    /// The RDD's dependencies on its parents.
    pub fn dependencies(&self, id: RddId) -> Vec<Dependency> {
        let Some(node) = self.node(id) else { return vec![] };
        match &node.kind {
            RddKind::ParallelCollection { .. } | RddKind::TextFile { .. } => vec![],
            RddKind::MapPartitions { parent, .. } => vec![Dependency::OneToOne { parent: *parent }],
            RddKind::Shuffled {
                parent,
                shuffle_id,
                partitioner,
                aggregator,
                map_side_combine,
            } => vec![Dependency::Shuffle(ShuffleDep {
                shuffle_id: *shuffle_id,
                parent: *parent,
                num_maps: self.num_partitions(*parent),
                partitioner: partitioner.clone(),
                aggregator: aggregator.clone(),
                map_side_combine: *map_side_combine,
            })],
        }
    }

    /// The RDDs one stage computes for `id`: `id` first, then its ancestors reached through
    /// narrow dependencies (a shuffled RDD is included, its parents are not).
    pub fn stage_rdds(&self, id: RddId) -> Vec<&RddNode> {
        let mut out = Vec::new();
        let mut stack = vec![id];
        while let Some(r) = stack.pop() {
            let Some(node) = self.node(r) else { continue };
            if out.iter().any(|n: &&RddNode| n.id == r) {
                continue;
            }
            out.push(node);
            for dep in self.dependencies(r) {
                if let Dependency::OneToOne { parent } = dep {
                    stack.push(parent);
                }
            }
        }
        out
    }

    /// The shuffle dependencies a stage computing `id` reads directly (reached through
    /// narrow dependencies only), in the order met (Spark's getShuffleDependencies).
    pub fn shuffle_dependencies(&self, id: RddId) -> Vec<ShuffleDep> {
        let mut out = Vec::new();
        for node in self.stage_rdds(id) {
            for dep in self.dependencies(node.id) {
                if let Dependency::Shuffle(s) = dep {
                    if !out.iter().any(|d: &ShuffleDep| d.shuffle_id == s.shuffle_id) {
                        out.push(s);
                    }
                }
            }
        }
        out
    }

    /// The sub-graph a task of the stage computing `id` needs ([`Lineage::stage_rdds`]),
    /// with parallelized collections' slices left out (each task carries its own slice:
    /// [`Lineage::slice`]).
    pub fn for_stage(&self, id: RddId) -> Lineage {
        let mut out = Lineage::default();
        for node in self.stage_rdds(id) {
            let mut node = node.clone();
            if let RddKind::ParallelCollection { slices, .. } = &mut node.kind {
                slices.clear();
            }
            out.insert(node);
        }
        out
    }

    /// Spark's `rdd.isBarrier()`: the RDD, or an RDD it depends on through narrow
    /// dependencies (within its stage), was made in barrier mode.
    pub fn is_barrier(&self, id: RddId) -> bool {
        self.stage_rdds(id).into_iter().any(|n| {
            matches!(
                n.kind,
                RddKind::MapPartitions {
                    is_from_barrier: true,
                    ..
                }
            )
        })
    }

    /// Spark's check of a barrier stage's RDD chain: every RDD the stage computes has
    /// `num_tasks` partitions (and depends on at most one barrier RDD, which a lineage of
    /// single-parent RDDs always does).
    pub fn barrier_chain_ok(&self, id: RddId, num_tasks: u32) -> bool {
        self.stage_rdds(id)
            .into_iter()
            .all(|n| n.num_partitions == num_tasks)
    }

    /// The slice of partition `partition` of the parallelized collection a stage computing
    /// `id` starts from, if it starts from one (borrowed, or computed for a range).
    pub fn slice(&self, id: RddId, partition: u32) -> Option<Cow<'_, Slice>> {
        self.stage_rdds(id).into_iter().find_map(|n| match &n.kind {
            RddKind::ParallelCollection { slices, .. } => slices.get(partition as usize),
            _ => None,
        })
    }

    /// Preferred hosts of partition `partition` of `id` known from the lineage itself (a
    /// parallelized collection's location preferences, through narrow dependencies);
    /// shuffle outputs' locations are the DAGScheduler's to add.
    pub fn preferred_hosts(&self, id: RddId, partition: u32) -> Vec<String> {
        self.stage_rdds(id)
            .into_iter()
            .find_map(|n| match &n.kind {
                RddKind::ParallelCollection { locations, .. } => {
                    Some(locations.get(partition as usize).cloned().unwrap_or_default())
                }
                _ => None,
            })
            .unwrap_or_default()
    }
}
