//! Stages (Spark's `Stage`, `ShuffleMapStage`, `ResultStage`): a set of tasks computing one
//! RDD's partitions up to the shuffle boundaries, their attempts and what each attempt's
//! tasks were, and the StageInfo the listener events carry.
//!
//! Layer: scheduler (the Spark side: the driver's schedulers, above rdd).

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use crate::rdd::{Lineage, RddId, ResultFunc, ShuffleDep};
use crate::scheduler::events::{RddInfo, StageInfo};
use crate::scheduler::task_set::TaskLocation;

/// What one stage attempt's tasks were.
#[derive(Clone, Debug)]
pub(crate) struct AttemptMeta {
    pub attempt_id: u32,
    /// The map output tracker's epoch when the attempt's tasks were created (Spark's
    /// `Task.epoch`).
    pub epoch: u64,
    /// For a result stage: the job output id of each task index.
    pub output_ids: Vec<u32>,
}

/// The partitions of a map stage still to be computed (Spark's `pendingPartitions`), as a
/// bitmap with a count so that every update is O(1).
#[derive(Clone, Debug, Default)]
pub(crate) struct PendingSet {
    bits: Vec<bool>,
    len: usize,
}

impl PendingSet {
    pub fn with_capacity(n: u32) -> Self {
        PendingSet {
            bits: vec![false; n as usize],
            len: 0,
        }
    }
    pub fn insert(&mut self, p: u32) {
        if let Some(b) = self.bits.get_mut(p as usize) {
            if !*b {
                *b = true;
                self.len += 1;
            }
        }
    }
    pub fn remove(&mut self, p: u32) {
        if let Some(b) = self.bits.get_mut(p as usize) {
            if *b {
                *b = false;
                self.len -= 1;
            }
        }
    }
    pub fn clear(&mut self) {
        if self.len > 0 {
            self.bits.iter_mut().for_each(|b| *b = false);
            self.len = 0;
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// What kind of stage it is.
#[derive(Clone, Debug)]
pub(crate) enum StageKind {
    /// Computes `dep.parent`'s partitions and writes them out for shuffle `dep.shuffle_id`.
    ShuffleMap { dep: ShuffleDep, pending: PendingSet },
    /// Computes the job's partitions of the final RDD and applies `func`.
    Result {
        func: ResultFunc,
        /// The RDD partitions the job asked for (task output id → partition).
        partitions: Vec<u32>,
        active_job: Option<u32>,
    },
}

/// A stage.
#[derive(Clone, Debug)]
pub(crate) struct Stage {
    pub id: u32,
    pub rdd: RddId,
    /// The lineage of the job that created the stage.
    pub lineage: Arc<Lineage>,
    /// The RDD's partition count.
    pub num_partitions: u32,
    /// Parent stages (one per shuffle the stage reads), by id.
    pub parents: Vec<u32>,
    pub first_job_id: u32,
    pub job_ids: BTreeSet<u32>,
    /// Spark's `stage.name` (the call site's short form).
    pub name: String,
    /// `MapPartitionsRDD[1] at map at MapCount`, as Spark's `RDD.toString`.
    pub rdd_desc: String,
    pub rdd_infos: Vec<RddInfo>,
    pub next_attempt_id: u32,
    pub latest_info: StageInfo,
    /// Attempts that failed (fetch failures) since the stage last succeeded.
    pub failed_attempt_ids: BTreeSet<u32>,
    pub attempts: Vec<AttemptMeta>,
    pub kind: StageKind,
}

impl Stage {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        id: u32,
        rdd: RddId,
        lineage: Arc<Lineage>,
        // Map stage: the RDD's partitions; result stage: the job's partitions.
        num_tasks: u32,
        parents: Vec<u32>,
        first_job_id: u32,
        call_site: String,
        kind: StageKind,
    ) -> Stage {
        let num_partitions = lineage.num_partitions(rdd);
        let rdd_infos = rdd_infos(&lineage, rdd);
        let rdd_desc = rdd_desc(&lineage, rdd);
        let latest_info = StageInfo {
            stage_id: id,
            attempt_id: 0,
            name: call_site.clone(),
            num_tasks,
            rdd_infos: rdd_infos.clone(),
            parent_ids: parents.clone(),
            details: call_site.clone(),
            submission_time: None,
            completion_time: None,
            failure_reason: None,
            task_locality_preferences: Vec::new(),
        };
        Stage {
            id,
            rdd,
            lineage,
            num_partitions,
            parents,
            first_job_id,
            job_ids: BTreeSet::new(),
            name: call_site,
            rdd_desc,
            rdd_infos,
            next_attempt_id: 0,
            latest_info,
            failed_attempt_ids: BTreeSet::new(),
            attempts: Vec::new(),
            kind,
        }
    }

    pub fn is_shuffle_map(&self) -> bool {
        matches!(self.kind, StageKind::ShuffleMap { .. })
    }

    pub fn shuffle_id(&self) -> Option<u32> {
        match &self.kind {
            StageKind::ShuffleMap { dep, .. } => Some(dep.shuffle_id),
            StageKind::Result { .. } => None,
        }
    }

    /// The attempt number of the latest attempt (Spark's `latestInfo.attemptNumber`).
    pub fn latest_attempt(&self) -> u32 {
        self.latest_info.attempt_id
    }

    /// Spark's `makeNewStageAttempt`: a fresh StageInfo for the next attempt, with where each
    /// of its tasks would like to run.
    pub fn make_new_attempt(
        &mut self,
        num_tasks: u32,
        epoch: u64,
        output_ids: Vec<u32>,
        task_locality_preferences: Vec<Vec<TaskLocation>>,
    ) {
        let attempt_id = self.next_attempt_id;
        self.latest_info = StageInfo {
            stage_id: self.id,
            attempt_id,
            name: self.name.clone(),
            num_tasks,
            rdd_infos: self.rdd_infos.clone(),
            parent_ids: self.parents.clone(),
            details: self.name.clone(),
            submission_time: None,
            completion_time: None,
            failure_reason: None,
            task_locality_preferences,
        };
        self.next_attempt_id += 1;
        self.attempts.push(AttemptMeta {
            attempt_id,
            epoch,
            output_ids,
        });
    }

    /// Spark's `increaseAttemptIdOnFirstSkip`: a stage skipped before it ever ran counts as
    /// having had attempt 0.
    pub fn increase_attempt_id_on_first_skip(&mut self) {
        if self.next_attempt_id == 0 {
            self.next_attempt_id = 1;
        }
    }

    /// Spark's `stage.rdd.isBarrier()`: a barrier stage.
    pub fn is_barrier(&self) -> bool {
        self.lineage.is_barrier(self.rdd)
    }

    pub fn attempt(&self, attempt_id: u32) -> Option<&AttemptMeta> {
        self.attempts.iter().rev().find(|a| a.attempt_id == attempt_id)
    }
}

impl fmt::Display for Stage {
    /// `ShuffleMapStage 1` / `ResultStage 2`, as Spark's `toString`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            StageKind::ShuffleMap { .. } => write!(f, "ShuffleMapStage {}", self.id),
            StageKind::Result { .. } => write!(f, "ResultStage {}", self.id),
        }
    }
}

/// The RDDInfos of a stage: its RDD first, then its narrow ancestors.
pub(crate) fn rdd_infos(lineage: &Lineage, rdd: RddId) -> Vec<RddInfo> {
    lineage
        .stage_rdds(rdd)
        .into_iter()
        .map(|n| RddInfo {
            id: n.id,
            name: n.class_name().to_string(),
            callsite: n.call_site.clone(),
            parent_ids: n.parent_ids(),
            num_partitions: n.num_partitions,
        })
        .collect()
}

/// Spark's `RDD.toString`: `MapPartitionsRDD[1] at map at MapCount`.
pub(crate) fn rdd_desc(lineage: &Lineage, rdd: RddId) -> String {
    match lineage.node(rdd) {
        Some(n) => format!("{}[{}] at {}", n.class_name(), n.id, n.call_site),
        None => format!("RDD[{rdd}]"),
    }
}
