//! Tests of the DAGScheduler core: lineages built by hand, events pushed in, actions checked.
//!
//! Layer: scheduler (the Spark side: the driver's schedulers, above rdd).

use std::sync::Arc;

use super::*;
use crate::rdd::{
    Lineage, OpCall, Partitioner, RddId, RddKind, RddNode, ResultFunc, Slice, Slices, TaskKind, Value,
};
use crate::scheduler::events::{
    JobResult, SparkListenerEvent, TaskEndReason, TaskInfo, TaskLocality, TaskMetrics,
};
use crate::scheduler::loss_reason::ExecutorLossReason;
use crate::scheduler::task::{MapStatus, StageBinary, TaskResult};
use crate::scheduler::task_set::{TaskLocation, TaskSet};

// ---- lineage builders ---------------------------------------------------------------------

fn parallelize(id: RddId, n: u32, locations: Vec<Vec<String>>) -> RddNode {
    RddNode {
        id,
        kind: RddKind::ParallelCollection {
            slices: Slices::Listed(
                (0..n)
                    .map(|i| Slice::Values(vec![Value::I64(i as i64)]))
                    .collect(),
            ),
            locations,
        },
        num_partitions: n,
        call_site: "parallelize at MapCount".into(),
    }
}

fn map(id: RddId, parent: RddId, n: u32) -> RddNode {
    RddNode {
        id,
        kind: RddKind::MapPartitions {
            parent,
            op: OpCall::new("identity", vec![]),
            preserves_partitioning: false,
            is_from_barrier: false,
        },
        num_partitions: n,
        call_site: "map at MapCount".into(),
    }
}

fn shuffled(id: RddId, parent: RddId, shuffle_id: u32, n: u32) -> RddNode {
    RddNode {
        id,
        kind: RddKind::Shuffled {
            parent,
            shuffle_id,
            partitioner: Partitioner::Hash { partitions: n },
            aggregator: None,
            map_side_combine: false,
        },
        num_partitions: n,
        call_site: "reduceByKey at MapCount".into(),
    }
}

fn lineage(nodes: Vec<RddNode>) -> Arc<Lineage> {
    let mut l = Lineage::default();
    for n in nodes {
        l.insert(n);
    }
    Arc::new(l)
}

/// parallelize(2) → map → count.
fn narrow_lineage() -> Arc<Lineage> {
    lineage(vec![
        parallelize(0, 2, vec![vec!["hostA".into()], vec!["hostB".into()]]),
        map(1, 0, 2),
    ])
}

/// parallelize(2) → map → shuffle 0 (3 partitions) → map.
fn one_shuffle_lineage() -> Arc<Lineage> {
    lineage(vec![
        parallelize(0, 2, vec![]),
        map(1, 0, 2),
        shuffled(2, 1, 0, 3),
        map(3, 2, 3),
    ])
}

/// parallelize(2) → shuffle 0 (3) → map → shuffle 1 (2).
fn two_shuffle_lineage() -> Arc<Lineage> {
    lineage(vec![
        parallelize(0, 2, vec![]),
        shuffled(1, 0, 0, 3),
        map(2, 1, 3),
        shuffled(3, 2, 1, 2),
    ])
}

// ---- harness ------------------------------------------------------------------------------

struct H {
    dag: DAGSchedulerCore,
    now: u64,
    next_tid: u64,
    /// What the next completion events say of their fetch failure's executor.
    fetch_source_decommissioned: bool,
}

impl H {
    fn new() -> H {
        H::with(DagConfig::default())
    }

    fn with(config: DagConfig) -> H {
        H {
            dag: DAGSchedulerCore::new(config),
            now: 1_000,
            next_tid: 0,
            fetch_source_decommissioned: false,
        }
    }

    fn send(&mut self, e: DagEvent) -> Vec<DagAction> {
        self.now += 10;
        self.dag.handle(e, self.now);
        self.dag.take_actions()
    }

    fn submit(&mut self, l: &Arc<Lineage>, rdd: RddId, partitions: Vec<u32>) -> (u32, Vec<DagAction>) {
        let job_id = self.dag.next_job_id();
        let actions = self.send(DagEvent::JobSubmitted {
            job_id,
            lineage: l.clone(),
            rdd,
            partitions,
            func: ResultFunc::Count,
            call_site: "count at MapCount".into(),
            properties: vec![("spark.scheduler.pool".into(), "default".into())],
        });
        (job_id, actions)
    }

    fn info(&mut self, index: u32, partition: u32, exec: &str) -> TaskInfo {
        self.next_tid += 1;
        TaskInfo {
            task_id: self.next_tid,
            index,
            attempt: 0,
            partition_id: partition,
            launch_time: self.now,
            executor_id: exec.into(),
            host: host_of(exec),
            locality: TaskLocality::ProcessLocal,
            speculative: false,
            getting_result_time: 0,
            finish_time: self.now,
            failed: false,
            killed: false,
        }
    }

    fn begin(&mut self, ts: &TaskSet, index: u32, exec: &str) -> Vec<DagAction> {
        let info = self.info(index, ts.tasks[index as usize].partition_id, exec);
        self.send(DagEvent::BeginEvent {
            stage_id: ts.stage_id,
            stage_attempt_id: ts.stage_attempt_id,
            task_info: info,
        })
    }

    fn end(
        &mut self,
        ts: &TaskSet,
        index: u32,
        exec: &str,
        reason: TaskEndReason,
        result: Option<TaskResult>,
    ) -> Vec<DagAction> {
        let partition_id = ts.tasks[index as usize].partition_id;
        let info = self.info(index, partition_id, exec);
        self.send(DagEvent::CompletionEvent(CompletionEvent {
            task_id: info.task_id,
            stage_id: ts.stage_id,
            stage_attempt_id: ts.stage_attempt_id,
            index,
            partition_id,
            is_shuffle_map: ts.is_shuffle_map,
            reason,
            task_info: info,
            result,
            fetch_source_decommissioned: self.fetch_source_decommissioned,
        }))
    }

    /// A map task succeeds on `exec`, writing `sizes` bytes per reduce partition.
    fn map_ok(&mut self, ts: &TaskSet, index: u32, exec: &str, sizes: Vec<u64>) -> Vec<DagAction> {
        let partition_id = ts.tasks[index as usize].partition_id;
        let status = MapStatus {
            executor_id: exec.into(),
            host: host_of(exec),
            executor_ref: format!("akka://exec-{exec}"),
            map_id: 100 + partition_id as u64,
            sizes,
        };
        self.end(
            ts,
            index,
            exec,
            TaskEndReason::Success,
            Some(TaskResult::MapStatus {
                status,
                metrics: TaskMetrics::default(),
            }),
        )
    }

    fn result_ok(&mut self, ts: &TaskSet, index: u32, value: i64) -> Vec<DagAction> {
        self.end(
            ts,
            index,
            "1",
            TaskEndReason::Success,
            Some(TaskResult::Value {
                value: Value::I64(value),
                metrics: TaskMetrics {
                    records_read: 5,
                    ..TaskMetrics::default()
                },
            }),
        )
    }

    fn fetch_fail(
        &mut self,
        ts: &TaskSet,
        index: u32,
        shuffle_id: u32,
        map_index: u32,
        exec: &str,
    ) -> Vec<DagAction> {
        let reason = TaskEndReason::FetchFailed {
            executor_id: Some(exec.into()),
            host: Some(host_of(exec)),
            shuffle_id,
            map_id: 100 + map_index as u64,
            map_index,
            reduce_id: ts.tasks[index as usize].partition_id,
            message: "org.apache.spark.shuffle.FetchFailedException: connection refused".into(),
        };
        self.end(ts, index, "2", reason, None)
    }
}

fn host_of(exec: &str) -> String {
    format!("host{exec}")
}

fn task_sets(actions: &[DagAction]) -> Vec<TaskSet> {
    actions
        .iter()
        .filter_map(|a| match a {
            DagAction::SubmitTasks(ts) => Some(ts.clone()),
            _ => None,
        })
        .collect()
}

fn one_task_set(actions: &[DagAction]) -> TaskSet {
    let sets = task_sets(actions);
    assert_eq!(sets.len(), 1, "expected one task set in {actions:#?}");
    sets.into_iter().next().unwrap()
}

fn job_ended(actions: &[DagAction]) -> Option<(u32, Result<Vec<Value>, String>)> {
    actions.iter().find_map(|a| match a {
        DagAction::JobEnded { job_id, result } => Some((*job_id, result.clone())),
        _ => None,
    })
}

fn posts(actions: &[DagAction]) -> Vec<&SparkListenerEvent> {
    actions
        .iter()
        .filter_map(|a| match a {
            DagAction::Post(e) => Some(e),
            _ => None,
        })
        .collect()
}

fn names(actions: &[DagAction]) -> Vec<&'static str> {
    posts(actions).iter().map(|e| e.name()).collect()
}

fn decode(ts: &TaskSet) -> StageBinary {
    rmp_serde::from_slice(&ts.binary.stage_bytes).expect("stage binary decodes")
}

fn stage_completed_failure(actions: &[DagAction], stage_id: u32) -> Option<Option<String>> {
    posts(actions).into_iter().find_map(|e| match e {
        SparkListenerEvent::StageCompleted { stage_info } if stage_info.stage_id == stage_id => {
            Some(stage_info.failure_reason.clone())
        }
        _ => None,
    })
}

/// Runs every task of a map task set to success, spreading them over executors 1 and 2.
fn finish_map_stage(h: &mut H, ts: &TaskSet, reducers: usize) -> Vec<DagAction> {
    let mut out = Vec::new();
    for i in 0..ts.tasks.len() as u32 {
        let exec = if i % 2 == 0 { "1" } else { "2" };
        out = h.map_ok(ts, i, exec, vec![10; reducers]);
    }
    out
}

// ---- tests --------------------------------------------------------------------------------

#[test]
fn narrow_job_is_one_result_stage_with_locality_and_slices() {
    let mut h = H::new();
    let l = narrow_lineage();
    let (job, actions) = h.submit(&l, 1, vec![0, 1]);
    assert_eq!(job, 0);
    assert_eq!(h.dag.stage_ids_for_job(0), vec![0]);
    assert_eq!(h.dag.stage_parents(0), Some(vec![]));
    assert_eq!(
        names(&actions),
        vec!["SparkListenerJobStart", "SparkListenerStageSubmitted"]
    );
    let ts = one_task_set(&actions);
    assert_eq!(
        (ts.stage_id, ts.stage_attempt_id, ts.job_id, ts.is_shuffle_map),
        (0, 0, 0, false)
    );
    assert_eq!(ts.tasks.len(), 2);
    assert_eq!(ts.tasks[1].partition_id, 1);
    assert_eq!(
        ts.tasks[0].preferred_locations,
        vec![TaskLocation::Host("hostA".into())]
    );
    assert_eq!(
        ts.tasks[1].preferred_locations,
        vec![TaskLocation::Host("hostB".into())]
    );
    assert_eq!(
        ts.properties,
        vec![("spark.scheduler.pool".to_string(), "default".to_string())]
    );
    let binary = decode(&ts);
    assert!(binary.shuffle_inputs.is_empty());
    assert_eq!(
        binary.stage.kind,
        TaskKind::Result {
            rdd: 1,
            func: ResultFunc::Count
        }
    );
    assert_eq!(binary.stage.lineage.nodes.len(), 2);
    match &binary.stage.lineage.node(0).unwrap().kind {
        RddKind::ParallelCollection { slices, .. } => assert!(slices.is_empty()),
        other => panic!("unexpected {other:?}"),
    }
    let slice: Slice = rmp_serde::from_slice(&ts.binary.slices.encoded(1).unwrap()).unwrap();
    assert_eq!(slice, Slice::Values(vec![Value::I64(1)]));
    match posts(&actions)[1] {
        SparkListenerEvent::StageSubmitted {
            stage_info,
            properties,
        } => {
            assert_eq!(stage_info.name, "count at MapCount");
            assert_eq!(stage_info.details, "count at MapCount");
            assert_eq!(stage_info.num_tasks, 2);
            assert_eq!(stage_info.submission_time, Some(h.now));
            let rdds: Vec<(u32, &str)> = stage_info
                .rdd_infos
                .iter()
                .map(|r| (r.id, r.name.as_str()))
                .collect();
            assert_eq!(rdds, vec![(1, "MapPartitionsRDD"), (0, "ParallelCollectionRDD")]);
            assert_eq!(stage_info.rdd_infos[0].parent_ids, vec![0]);
            assert_eq!(properties.len(), 1);
            // The tasks' preferences travel with the stage (the allocation manager's hints).
            assert_eq!(
                stage_info.task_locality_preferences,
                vec![
                    vec![TaskLocation::Host("hostA".into())],
                    vec![TaskLocation::Host("hostB".into())]
                ]
            );
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn two_shuffle_chain_makes_three_stages() {
    let mut h = H::new();
    let l = two_shuffle_lineage();
    let (_, actions) = h.submit(&l, 3, vec![0, 1]);
    assert_eq!(h.dag.stage_ids_for_job(0), vec![0, 1, 2]);
    assert_eq!(h.dag.stage_parents(0), Some(vec![]));
    assert_eq!(h.dag.stage_parents(1), Some(vec![0]));
    assert_eq!(h.dag.stage_parents(2), Some(vec![1]));
    assert_eq!(h.dag.shuffle_map_stage(0), Some(0));
    assert_eq!(h.dag.shuffle_map_stage(1), Some(1));
    // Names: the map stages' RDD call sites, the result stage's job call site.
    assert_eq!(h.dag.stage_info(0).unwrap().name, "parallelize at MapCount");
    assert_eq!(h.dag.stage_info(1).unwrap().name, "map at MapCount");
    assert_eq!(h.dag.stage_info(2).unwrap().name, "count at MapCount");
    assert_eq!(h.dag.stage_info(1).unwrap().num_tasks, 3);
    match posts(&actions)[0] {
        SparkListenerEvent::JobStart { stage_infos, .. } => {
            let ids: Vec<u32> = stage_infos.iter().map(|s| s.stage_id).collect();
            assert_eq!(ids, vec![0, 1, 2]);
            assert_eq!(stage_infos[2].parent_ids, vec![1]);
        }
        other => panic!("unexpected {other:?}"),
    }
    let ts = one_task_set(&actions);
    assert_eq!((ts.stage_id, ts.is_shuffle_map, ts.tasks.len()), (0, true, 2));
    assert_eq!(h.dag.waiting_stage_ids(), vec![1, 2]);
    assert_eq!(h.dag.running_stage_ids(), vec![0]);
    assert_eq!(h.dag.map_output_tracker().num_maps(0), Some(2));
    assert_eq!(h.dag.map_output_tracker().num_maps(1), Some(3));

    // Run the whole chain: 2 map tasks, 3 map tasks, 2 result tasks.
    let a = finish_map_stage(&mut h, &ts, 3);
    let ts1 = one_task_set(&a);
    assert_eq!((ts1.stage_id, ts1.tasks.len()), (1, 3));
    assert_eq!(decode(&ts1).shuffle_inputs[0].shuffle_id, 0);
    let a = finish_map_stage(&mut h, &ts1, 2);
    let ts2 = one_task_set(&a);
    assert_eq!((ts2.stage_id, ts2.is_shuffle_map), (2, false));
    h.result_ok(&ts2, 1, 7);
    let a = h.result_ok(&ts2, 0, 3);
    assert_eq!(job_ended(&a), Some((0, Ok(vec![Value::I64(3), Value::I64(7)]))));
    assert!(h.dag.stage_ids().is_empty());
    assert!(h.dag.active_job_ids().is_empty());
}

#[test]
fn two_stage_shuffle_job_completes_with_locations_in_the_binary() {
    let mut h = H::new();
    let l = one_shuffle_lineage();
    let (_, actions) = h.submit(&l, 3, vec![0, 1, 2]);
    let ts0 = one_task_set(&actions);
    assert_eq!(ts0.stage_id, 0);
    assert_eq!(
        decode(&ts0).stage.kind,
        TaskKind::ShuffleMap {
            dep: l
                .dependencies(2)
                .into_iter()
                .find_map(|d| match d {
                    crate::rdd::Dependency::Shuffle(s) => Some(s),
                    _ => None,
                })
                .unwrap()
        }
    );

    // Map 0 on exec 1 writes mostly to reducers 0 and 1, map 1 on exec 2 mostly to reducer 2.
    let a = h.map_ok(&ts0, 0, "1", vec![100, 100, 1]);
    assert_eq!(names(&a), vec!["SparkListenerTaskEnd"]);
    assert!(task_sets(&a).is_empty());
    let a = h.map_ok(&ts0, 1, "2", vec![1, 1, 100]);
    assert_eq!(
        names(&a),
        vec![
            "SparkListenerTaskEnd",
            "SparkListenerStageCompleted",
            "SparkListenerStageSubmitted"
        ]
    );
    assert_eq!(stage_completed_failure(&a, 0), Some(None));
    let ts1 = one_task_set(&a);
    assert_eq!(
        (
            ts1.stage_id,
            ts1.stage_attempt_id,
            ts1.is_shuffle_map,
            ts1.tasks.len()
        ),
        (1, 0, false, 3)
    );
    assert_eq!(
        ts1.tasks[0].preferred_locations,
        vec![TaskLocation::Host("host1".into())]
    );
    assert_eq!(
        ts1.tasks[2].preferred_locations,
        vec![TaskLocation::Host("host2".into())]
    );
    assert!(ts1.binary.slices.is_empty());
    let binary = decode(&ts1);
    assert_eq!(binary.shuffle_inputs.len(), 1);
    let outputs = &binary.shuffle_inputs[0].outputs;
    assert_eq!(outputs.len(), 2);
    let o1 = outputs[1].as_ref().unwrap();
    assert_eq!(
        (o1.map_index, o1.map_id, o1.executor_id.as_str(), o1.host.as_str()),
        (1, 101, "2", "host2")
    );
    assert_eq!(o1.executor_ref, "akka://exec-2");
    assert_eq!(
        binary.stage.lineage.nodes.keys().copied().collect::<Vec<_>>(),
        vec![2, 3]
    );

    h.result_ok(&ts1, 0, 1);
    h.result_ok(&ts1, 2, 3);
    // A duplicate (speculative) success of an output already done changes nothing.
    let dup = h.result_ok(&ts1, 2, 99);
    assert_eq!(names(&dup), vec!["SparkListenerTaskEnd"]);
    let a = h.result_ok(&ts1, 1, 2);
    assert_eq!(
        names(&a),
        vec![
            "SparkListenerTaskEnd",
            "SparkListenerStageCompleted",
            "SparkListenerJobEnd"
        ]
    );
    assert!(
        matches!(&a[2], DagAction::KillAllTaskAttempts { stage_id: 1, reason } if reason == "Stage finished")
    );
    assert_eq!(
        job_ended(&a),
        Some((0, Ok(vec![Value::I64(1), Value::I64(2), Value::I64(3)])))
    );
    // JobEnded comes last.
    assert!(matches!(a.last(), Some(DagAction::JobEnded { .. })));
    // A late task of the finished stage only produces its TaskEnd.
    let late = h.result_ok(&ts1, 0, 5);
    assert_eq!(names(&late), vec!["SparkListenerTaskEnd"]);
    assert_eq!(late.len(), 1);
}

#[test]
fn listener_events_in_order_for_a_simple_job() {
    let mut h = H::new();
    let l = narrow_lineage();
    let mut all = Vec::new();
    let (_, a) = h.submit(&l, 1, vec![0, 1]);
    let ts = one_task_set(&a);
    all.extend(a);
    all.extend(h.begin(&ts, 0, "1"));
    all.extend(h.begin(&ts, 1, "2"));
    all.extend(h.result_ok(&ts, 0, 5));
    all.extend(h.result_ok(&ts, 1, 5));
    assert_eq!(
        names(&all),
        vec![
            "SparkListenerJobStart",
            "SparkListenerStageSubmitted",
            "SparkListenerTaskStart",
            "SparkListenerTaskStart",
            "SparkListenerTaskEnd",
            "SparkListenerTaskEnd",
            "SparkListenerStageCompleted",
            "SparkListenerJobEnd",
        ]
    );
    let ev = posts(&all);
    match ev[4] {
        SparkListenerEvent::TaskEnd {
            task_type,
            metrics,
            reason,
            ..
        } => {
            assert_eq!(task_type, "ResultTask");
            assert_eq!(metrics.as_ref().unwrap().records_read, 5);
            assert_eq!(*reason, TaskEndReason::Success);
        }
        other => panic!("unexpected {other:?}"),
    }
    match ev[6] {
        SparkListenerEvent::StageCompleted { stage_info } => {
            assert!(stage_info.completion_time.is_some());
            assert!(stage_info.failure_reason.is_none());
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(matches!(
        ev[7],
        SparkListenerEvent::JobEnd {
            job_id: 0,
            result: JobResult::JobSucceeded,
            ..
        }
    ));
}

#[test]
fn zero_partitions_job_ends_at_once() {
    let mut h = H::new();
    let l = narrow_lineage();
    let (job, a) = h.submit(&l, 1, vec![]);
    assert_eq!(names(&a), vec!["SparkListenerJobStart", "SparkListenerJobEnd"]);
    match posts(&a)[0] {
        SparkListenerEvent::JobStart {
            stage_infos,
            properties,
            ..
        } => {
            assert!(stage_infos.is_empty());
            assert!(properties.contains(&(
                "spark.job.description".to_string(),
                "count at MapCount".to_string()
            )));
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(job_ended(&a), Some((job, Ok(vec![]))));
    assert!(h.dag.stage_ids().is_empty());
    assert_eq!(h.dag.next_job_id(), 1);
}

#[test]
fn invalid_partition_is_rejected() {
    let l = narrow_lineage();
    assert_eq!(
        DAGSchedulerCore::check_partitions(&l, 1, &[0, 5, 7]),
        Err("Attempting to access a non-existent partition: 5. Total number of partitions: 2".to_string())
    );
    assert_eq!(DAGSchedulerCore::check_partitions(&l, 1, &[1, 0]), Ok(()));
    assert!(DAGSchedulerCore::check_partitions(&l, 9, &[0]).is_err());
    // Submitting anyway fails the job without starting it.
    let mut h = H::new();
    let (job, a) = h.submit(&l, 1, vec![2]);
    assert!(posts(&a).is_empty());
    assert_eq!(
        job_ended(&a),
        Some((
            job,
            Err("Attempting to access a non-existent partition: 2. Total number of partitions: 2".into())
        ))
    );
}

#[test]
fn fetch_failure_resubmits_the_map_stage_and_the_job_completes() {
    let mut h = H::new();
    let l = one_shuffle_lineage();
    let (_, a) = h.submit(&l, 3, vec![0, 1, 2]);
    let ts0 = one_task_set(&a);
    h.map_ok(&ts0, 0, "1", vec![5, 5, 5]);
    let a = h.map_ok(&ts0, 1, "2", vec![5, 5, 5]);
    let ts1 = one_task_set(&a);
    h.result_ok(&ts1, 0, 10);

    // Reducer 1 cannot read map output 0 from executor 1.
    let a = h.fetch_fail(&ts1, 1, 0, 0, "1");
    assert_eq!(
        names(&a),
        vec!["SparkListenerTaskEnd", "SparkListenerStageCompleted"]
    );
    assert_eq!(
        stage_completed_failure(&a, 1),
        Some(Some(
            "org.apache.spark.shuffle.FetchFailedException: connection refused".into()
        ))
    );
    assert!(a
        .iter()
        .any(|x| matches!(x, DagAction::ScheduleResubmit { delay_ms: 200 })));
    assert_eq!(h.dag.failed_stage_ids(), vec![0, 1]);
    assert!(!h.dag.map_output_tracker().is_available(0));
    // Executor 1's outputs are all gone (no external shuffle service).
    assert_eq!(
        h.dag.map_output_tracker().find_missing_partitions(0),
        Some(vec![0])
    );

    // A second fetch failure of the same attempt does not schedule another resubmit.
    let a = h.fetch_fail(&ts1, 2, 0, 0, "1");
    assert_eq!(names(&a), vec!["SparkListenerTaskEnd"]);
    assert!(!a.iter().any(|x| matches!(x, DagAction::ScheduleResubmit { .. })));

    let a = h.send(DagEvent::ResubmitFailedStages);
    let ts0b = one_task_set(&a);
    assert_eq!(
        (ts0b.stage_id, ts0b.stage_attempt_id, ts0b.tasks.len()),
        (0, 1, 1)
    );
    assert_eq!(ts0b.tasks[0].partition_id, 0);
    assert_eq!(h.dag.waiting_stage_ids(), vec![1]);
    // A stale completion from the old reduce attempt is ignored (no new failure counted).
    let a = h.map_ok(&ts0b, 0, "3", vec![5, 5, 5]);
    let ts1b = one_task_set(&a);
    assert_eq!((ts1b.stage_id, ts1b.stage_attempt_id), (1, 1));
    // Only the outputs still missing are recomputed.
    let parts: Vec<u32> = ts1b.tasks.iter().map(|t| t.partition_id).collect();
    assert_eq!(parts, vec![1, 2]);
    let stale = h.fetch_fail(&ts1, 0, 0, 1, "2");
    assert_eq!(names(&stale), vec!["SparkListenerTaskEnd"]);
    assert!(h.dag.map_output_tracker().is_available(0));

    h.result_ok(&ts1b, 0, 11);
    let a = h.result_ok(&ts1b, 1, 12);
    assert_eq!(
        job_ended(&a),
        Some((0, Ok(vec![Value::I64(10), Value::I64(11), Value::I64(12)])))
    );
}

#[test]
fn consecutive_fetch_failures_abort_with_sparks_message() {
    let mut h = H::new();
    let l = one_shuffle_lineage();
    let (_, a) = h.submit(&l, 3, vec![0]);
    let mut map_ts = one_task_set(&a);
    let mut last = Vec::new();
    for attempt in 0..4u32 {
        let a = finish_map_stage(&mut h, &map_ts, 3);
        let reduce_ts = one_task_set(&a);
        assert_eq!(reduce_ts.stage_attempt_id, attempt);
        last = h.fetch_fail(&reduce_ts, 0, 0, 0, "1");
        if attempt < 3 {
            assert!(job_ended(&last).is_none());
            let a = h.send(DagEvent::ResubmitFailedStages);
            map_ts = one_task_set(&a);
            assert_eq!(map_ts.stage_attempt_id, attempt + 1);
        }
    }
    let reason = "ResultStage 1 (count at MapCount) has failed the maximum allowable number of times: 4. \
                  Most recent failure reason:\norg.apache.spark.shuffle.FetchFailedException: connection refused";
    assert_eq!(
        job_ended(&last),
        Some((0, Err(format!("Job aborted due to stage failure: {reason}"))))
    );
    assert!(!last
        .iter()
        .any(|x| matches!(x, DagAction::ScheduleResubmit { .. })));
    match posts(&last).last().unwrap() {
        SparkListenerEvent::JobEnd {
            result: JobResult::JobFailed { message },
            ..
        } => {
            assert!(message.starts_with("Job aborted due to stage failure: ResultStage 1 (count at MapCount)"))
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(h.dag.stage_ids().is_empty());
    assert!(h.dag.failed_stage_ids().is_empty());
}

#[test]
fn a_success_in_between_resets_the_consecutive_failure_count() {
    let config = DagConfig {
        max_consecutive_attempts: 2,
        ..DagConfig::default()
    };
    let mut h = H::with(config);
    // Map stage 0 of shuffle 0 fails fetching nothing itself; the count on stage 1 matters.
    let l = two_shuffle_lineage();
    let (_, a) = h.submit(&l, 3, vec![0]);
    let ts0 = one_task_set(&a);
    let a = finish_map_stage(&mut h, &ts0, 3);
    let ts1 = one_task_set(&a);
    // Stage 1 (map of shuffle 1) fetch-fails once, then succeeds.
    h.fetch_fail(&ts1, 0, 0, 0, "1");
    let a = h.send(DagEvent::ResubmitFailedStages);
    let ts0b = one_task_set(&a);
    let a = finish_map_stage(&mut h, &ts0b, 3);
    let ts1b = one_task_set(&a);
    assert_eq!(ts1b.stage_attempt_id, 1);
    let a = finish_map_stage(&mut h, &ts1b, 1);
    let ts2 = one_task_set(&a);
    assert_eq!(ts2.stage_id, 2);
    // The result stage fails once: with only one consecutive failure it is retried.
    let a = h.fetch_fail(&ts2, 0, 1, 0, "1");
    assert!(job_ended(&a).is_none());
    assert!(a.iter().any(|x| matches!(x, DagAction::ScheduleResubmit { .. })));
}

#[test]
fn executor_lost_during_map_stage_reruns_the_lost_output() {
    let mut h = H::new();
    let l = one_shuffle_lineage();
    let (_, a) = h.submit(&l, 3, vec![0, 1, 2]);
    let ts0 = one_task_set(&a);
    h.map_ok(&ts0, 0, "1", vec![1, 1, 1]);
    let a = h.send(DagEvent::ExecutorLost {
        executor_id: "1".into(),
        reason: ExecutorLossReason::process_lost("Executor Process Lost"),
    });
    assert!(a.is_empty());
    assert_eq!(h.dag.map_output_tracker().num_available_outputs(0), 0);
    // The last pending task finishes: the stage is done but not available → resubmitted.
    let a = h.map_ok(&ts0, 1, "2", vec![1, 1, 1]);
    assert_eq!(
        names(&a),
        vec![
            "SparkListenerTaskEnd",
            "SparkListenerStageCompleted",
            "SparkListenerStageSubmitted"
        ]
    );
    let rerun = one_task_set(&a);
    assert_eq!(
        (rerun.stage_id, rerun.stage_attempt_id, rerun.tasks.len()),
        (0, 1, 1)
    );
    assert_eq!(rerun.tasks[0].partition_id, 0);
    let a = h.map_ok(&rerun, 0, "3", vec![1, 1, 1]);
    let ts1 = one_task_set(&a);
    assert_eq!(ts1.stage_id, 1);
    let outputs = &decode(&ts1).shuffle_inputs[0].outputs;
    assert_eq!(outputs[0].as_ref().unwrap().executor_id, "3");
    assert_eq!(outputs[1].as_ref().unwrap().executor_id, "2");
}

#[test]
fn executor_lost_after_map_stage_with_resubmitted_tasks_and_fetch_failure() {
    let mut h = H::new();
    let l = one_shuffle_lineage();
    let (_, a) = h.submit(&l, 3, vec![0, 1, 2]);
    let ts0 = one_task_set(&a);
    h.map_ok(&ts0, 0, "1", vec![1, 1, 1]);
    // Executor 1 is lost while the map stage still runs; its TaskSetManager resubmits task 0.
    h.send(DagEvent::ExecutorLost {
        executor_id: "1".into(),
        reason: ExecutorLossReason::ExecutorKilled,
    });
    let a = h.end(&ts0, 0, "1", TaskEndReason::Resubmitted, None);
    assert_eq!(names(&a), vec!["SparkListenerTaskEnd"]);
    // Task 1 finishing does not finish the stage: partition 0 is pending again.
    let a = h.map_ok(&ts0, 1, "2", vec![1, 1, 1]);
    assert_eq!(names(&a), vec!["SparkListenerTaskEnd"]);
    // The rerun of task 0 in the same attempt finishes it.
    let a = h.map_ok(&ts0, 0, "3", vec![1, 1, 1]);
    let ts1 = one_task_set(&a);
    assert_eq!(ts1.stage_id, 1);

    // Now the map stage is done; executor 2 is lost and a reducer fails to fetch from it.
    h.send(DagEvent::ExecutorLost {
        executor_id: "2".into(),
        reason: ExecutorLossReason::process_lost("Executor heartbeat timed out"),
    });
    assert_eq!(
        h.dag.map_output_tracker().find_missing_partitions(0),
        Some(vec![1])
    );
    let a = h.fetch_fail(&ts1, 0, 0, 1, "2");
    assert!(a.iter().any(|x| matches!(x, DagAction::ScheduleResubmit { .. })));
    let a = h.send(DagEvent::ResubmitFailedStages);
    let rerun = one_task_set(&a);
    assert_eq!(
        (
            rerun.stage_id,
            rerun.stage_attempt_id,
            rerun.tasks[0].partition_id
        ),
        (0, 1, 1)
    );
    // Executor 2 comes back: its outputs count again.
    h.send(DagEvent::ExecutorAdded {
        executor_id: "2".into(),
        host: "host2".into(),
    });
    let a = h.map_ok(&rerun, 0, "2", vec![1, 1, 1]);
    let ts1b = one_task_set(&a);
    assert_eq!(
        (ts1b.stage_id, ts1b.stage_attempt_id, ts1b.tasks.len()),
        (1, 1, 3)
    );
    for i in 0..3 {
        h.result_ok(&ts1b, i, i as i64);
    }
    assert!(h.dag.active_job_ids().is_empty());
}

#[test]
fn possibly_bogus_output_and_max_stage_attempts() {
    let config = DagConfig {
        max_consecutive_attempts: 1,
        max_stage_attempts: 2,
        ..DagConfig::default()
    };
    let mut h = H::with(config);
    let l = one_shuffle_lineage();
    let (_, a) = h.submit(&l, 3, vec![0]);
    let ts0 = one_task_set(&a);
    h.map_ok(&ts0, 0, "1", vec![1, 1, 1]);
    h.send(DagEvent::ExecutorLost {
        executor_id: "1".into(),
        reason: ExecutorLossReason::ExecutorKilled,
    });
    let a = h.map_ok(&ts0, 1, "2", vec![1, 1, 1]);
    let rerun = one_task_set(&a);
    assert_eq!(rerun.stage_attempt_id, 1);
    // Executor 3 is lost while running the rerun; its late success is possibly bogus.
    h.send(DagEvent::ExecutorLost {
        executor_id: "3".into(),
        reason: ExecutorLossReason::ExecutorKilled,
    });
    let a = h.map_ok(&rerun, 0, "3", vec![1, 1, 1]);
    assert!(!h.dag.map_output_tracker().is_available(0));
    let (job, result) = job_ended(&a).expect("job aborted");
    assert_eq!(job, 0);
    assert_eq!(
        result,
        Err("Job aborted due to stage failure: ShuffleMapStage 0 (name=map at MapCount) has been resubmitted \
             for the maximum allowable number of times: 2, which is the max value of config `spark.stage.maxAttempts` \
             and `spark.stage.maxConsecutiveAttempts`."
            .into())
    );
}

#[test]
fn task_set_failed_fails_the_job() {
    let mut h = H::new();
    let l = one_shuffle_lineage();
    let (_, a) = h.submit(&l, 3, vec![0, 1]);
    let ts0 = one_task_set(&a);
    let msg = "Task 1 in stage 0.0 failed 4 times, most recent failure: Lost task 1.3 in stage 0.0 \
               (TID 7) (host1 executor 1): java.lang.RuntimeException: boom";
    let a = h.send(DagEvent::TaskSetFailed {
        stage_id: ts0.stage_id,
        stage_attempt_id: 0,
        message: msg.into(),
    });
    let expected = format!("Job aborted due to stage failure: {msg}");
    assert!(matches!(&a[0], DagAction::CancelTasks { stage_id: 0, reason } if *reason == expected));
    assert_eq!(stage_completed_failure(&a, 0), Some(Some(expected.clone())));
    assert_eq!(
        names(&a),
        vec!["SparkListenerStageCompleted", "SparkListenerJobEnd"]
    );
    match posts(&a)[1] {
        SparkListenerEvent::JobEnd { result, .. } => {
            assert_eq!(
                *result,
                JobResult::JobFailed {
                    message: expected.clone()
                }
            )
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(job_ended(&a), Some((0, Err(expected))));
    assert!(matches!(a.last(), Some(DagAction::JobEnded { .. })));
    assert!(h.dag.stage_ids().is_empty());
    // Events for the gone stage only produce their TaskEnd.
    let late = h.map_ok(&ts0, 0, "1", vec![1, 1, 1]);
    assert_eq!(names(&late), vec!["SparkListenerTaskEnd"]);
    let again = h.send(DagEvent::TaskSetFailed {
        stage_id: 0,
        stage_attempt_id: 0,
        message: "x".into(),
    });
    assert!(again.is_empty());
}

#[test]
fn finished_shuffle_is_skipped_by_a_later_job() {
    let mut h = H::new();
    let l = one_shuffle_lineage();
    let (_, a) = h.submit(&l, 3, vec![0, 1, 2]);
    let ts0 = one_task_set(&a);
    let a = finish_map_stage(&mut h, &ts0, 3);
    let ts1 = one_task_set(&a);
    for i in 0..3 {
        h.result_ok(&ts1, i, 1);
    }
    assert!(h.dag.stage_ids().is_empty());
    assert!(h.dag.map_output_tracker().is_available(0));

    // Job 1 over the same shuffle: a new map stage id, skipped; only the result stage runs.
    let (job, a) = h.submit(&l, 3, vec![1]);
    assert_eq!(job, 1);
    assert_eq!(h.dag.stage_ids_for_job(1), vec![2, 3]);
    assert_eq!(
        names(&a),
        vec!["SparkListenerJobStart", "SparkListenerStageSubmitted"]
    );
    let ts = one_task_set(&a);
    assert_eq!(
        (
            ts.stage_id,
            ts.stage_attempt_id,
            ts.tasks.len(),
            ts.tasks[0].partition_id
        ),
        (3, 0, 1, 1)
    );
    match posts(&a)[0] {
        SparkListenerEvent::JobStart { stage_infos, .. } => {
            assert_eq!(stage_infos.len(), 2);
            assert!(stage_infos[0].submission_time.is_none());
        }
        other => panic!("unexpected {other:?}"),
    }
    let a = h.result_ok(&ts, 0, 42);
    assert_eq!(job_ended(&a), Some((1, Ok(vec![Value::I64(42)]))));
}

#[test]
fn concurrent_jobs_share_the_running_map_stage() {
    let mut h = H::new();
    let l = one_shuffle_lineage();
    let (_, a) = h.submit(&l, 3, vec![0]);
    let ts0 = one_task_set(&a);
    let (_, a) = h.submit(&l, 3, vec![2]);
    // The map stage is already running for job 0: nothing new to run.
    assert!(task_sets(&a).is_empty());
    assert_eq!(h.dag.stage_ids_for_job(1), vec![0, 2]);
    let a = finish_map_stage(&mut h, &ts0, 3);
    let sets = task_sets(&a);
    assert_eq!(
        sets.iter().map(|t| (t.stage_id, t.job_id)).collect::<Vec<_>>(),
        vec![(1, 0), (2, 1)]
    );
    // Cancelling job 0 cancels its result stage only; the shared map stage is kept for job 1.
    let a = h.send(DagEvent::JobCancelled {
        job_id: 0,
        reason: Some("by test".into()),
    });
    assert!(matches!(&a[0], DagAction::CancelTasks { stage_id: 1, .. }));
    assert_eq!(job_ended(&a), Some((0, Err("Job 0 cancelled by test".into()))));
    assert_eq!(h.dag.stage_ids(), vec![0, 2]);
    let a = h.result_ok(&sets[1], 0, 9);
    assert_eq!(job_ended(&a), Some((1, Ok(vec![Value::I64(9)]))));
    assert!(h.dag.stage_ids().is_empty());
}

#[test]
fn job_cancel_and_cancel_all() {
    let mut h = H::new();
    let l = narrow_lineage();
    let (_, a) = h.submit(&l, 1, vec![0, 1]);
    let ts = one_task_set(&a);
    let a = h.send(DagEvent::JobCancelled {
        job_id: 0,
        reason: None,
    });
    assert!(matches!(&a[0], DagAction::CancelTasks { stage_id: 0, reason } if reason == "Job 0 cancelled "));
    assert_eq!(
        stage_completed_failure(&a, 0),
        Some(Some("Job 0 cancelled ".into()))
    );
    assert_eq!(
        names(&a),
        vec!["SparkListenerStageCompleted", "SparkListenerJobEnd"]
    );
    assert_eq!(job_ended(&a), Some((0, Err("Job 0 cancelled ".into()))));
    // Unknown or finished jobs: nothing.
    assert!(h
        .send(DagEvent::JobCancelled {
            job_id: 0,
            reason: None
        })
        .is_empty());
    let late = h.result_ok(&ts, 0, 1);
    assert_eq!(names(&late), vec!["SparkListenerTaskEnd"]);

    let (j1, _) = h.submit(&l, 1, vec![0]);
    let l2 = one_shuffle_lineage();
    let (j2, _) = h.submit(&l2, 3, vec![0]);
    let a = h.send(DagEvent::AllJobsCancelled { reason: None });
    let ended: Vec<(u32, Result<Vec<Value>, String>)> = a
        .iter()
        .filter_map(|x| match x {
            DagAction::JobEnded { job_id, result } => Some((*job_id, result.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        ended,
        vec![
            (
                j1,
                Err(format!("Job {j1} cancelled as part of cancellation of all jobs"))
            ),
            (
                j2,
                Err(format!("Job {j2} cancelled as part of cancellation of all jobs"))
            ),
        ]
    );
    assert!(h.dag.stage_ids().is_empty());
    assert!(h.dag.active_job_ids().is_empty());
}

#[test]
fn resubmitted_for_a_result_stage_and_speculation_events() {
    let mut h = H::new();
    let l = narrow_lineage();
    let (_, a) = h.submit(&l, 1, vec![0, 1]);
    let ts = one_task_set(&a);
    let a = h.end(&ts, 0, "1", TaskEndReason::Resubmitted, None);
    assert_eq!(names(&a), vec!["SparkListenerTaskEnd"]);
    let a = h.send(DagEvent::SpeculativeTaskSubmitted {
        stage_id: 0,
        stage_attempt_id: 0,
        index: 1,
    });
    assert!(matches!(
        posts(&a)[0],
        SparkListenerEvent::SpeculativeTaskSubmitted {
            stage_id: 0,
            stage_attempt_id: 0,
            task_index: 1
        }
    ));
    // Failures the TaskSetManager handles do nothing here.
    let a = h.end(
        &ts,
        1,
        "1",
        TaskEndReason::ExceptionFailure {
            class_name: "java.lang.RuntimeException".into(),
            description: "boom".into(),
            stack_trace: vec![],
        },
        None,
    );
    assert_eq!(a.len(), 1);
    h.result_ok(&ts, 0, 1);
    let a = h.result_ok(&ts, 1, 2);
    assert_eq!(job_ended(&a), Some((0, Ok(vec![Value::I64(1), Value::I64(2)]))));
}

#[test]
fn cyclic_or_broken_lineage_fails_the_job_without_panicking() {
    let mut h = H::new();
    // RDD 1 shuffles RDD 2 which shuffles RDD 1.
    let l = lineage(vec![shuffled(1, 2, 0, 2), shuffled(2, 1, 1, 2), map(3, 1, 2)]);
    let (job, a) = h.submit(&l, 3, vec![0]);
    match job_ended(&a) {
        Some((j, Err(msg))) => {
            assert_eq!(j, job);
            assert!(msg.contains("depends on the shuffle itself"), "{msg}");
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(h.dag.stage_ids().is_empty());
    assert!(h.dag.active_job_ids().is_empty());
    // The RDD is not in the lineage.
    let (_, a) = h.submit(&narrow_lineage(), 9, vec![]);
    assert!(matches!(job_ended(&a), Some((_, Ok(_)))));
    let (_, a) = h.submit(&narrow_lineage(), 9, vec![0]);
    assert!(matches!(job_ended(&a), Some((_, Err(_)))));
    // A shuffle registered with another map count (its first job is gone, the tracker
    // still knows the shuffle).
    let (j, a) = h.submit(&one_shuffle_lineage(), 3, vec![0]);
    assert_eq!(task_sets(&a).len(), 1);
    h.send(DagEvent::JobCancelled {
        job_id: j,
        reason: None,
    });
    assert!(h.dag.map_output_tracker().contains_shuffle(0));
    let other = lineage(vec![parallelize(10, 5, vec![]), shuffled(11, 10, 0, 3)]);
    let (_, a) = h.submit(&other, 11, vec![0]);
    assert!(matches!(job_ended(&a), Some((_, Err(m))) if m.contains("registered with 2 map outputs")));
}

#[test]
fn garbage_events_do_not_panic() {
    let mut h = H::new();
    let l = one_shuffle_lineage();
    let (_, a) = h.submit(&l, 3, vec![0, 1, 2]);
    let ts0 = one_task_set(&a);
    let info = h.info(0, 0, "1");
    let events = vec![
        DagEvent::CompletionEvent(CompletionEvent {
            task_id: 1,
            stage_id: 0,
            stage_attempt_id: 7,
            index: 99,
            partition_id: 99,
            is_shuffle_map: false,
            reason: TaskEndReason::Success,
            task_info: info.clone(),
            result: Some(TaskResult::Value {
                value: Value::Null,
                metrics: TaskMetrics::default(),
            }),
            fetch_source_decommissioned: false,
        }),
        DagEvent::CompletionEvent(CompletionEvent {
            task_id: 2,
            stage_id: 55,
            stage_attempt_id: 0,
            index: 0,
            partition_id: 0,
            is_shuffle_map: true,
            reason: TaskEndReason::Success,
            task_info: info.clone(),
            result: None,
            fetch_source_decommissioned: false,
        }),
        DagEvent::CompletionEvent(CompletionEvent {
            task_id: 3,
            stage_id: 0,
            stage_attempt_id: 0,
            index: 0,
            partition_id: 0,
            is_shuffle_map: true,
            reason: TaskEndReason::FetchFailed {
                executor_id: None,
                host: None,
                shuffle_id: 77,
                map_id: 0,
                map_index: 5,
                reduce_id: 0,
                message: "?".into(),
            },
            task_info: info.clone(),
            result: None,
            fetch_source_decommissioned: false,
        }),
        DagEvent::BeginEvent {
            stage_id: 99,
            stage_attempt_id: 0,
            task_info: info,
        },
        DagEvent::ExecutorLost {
            executor_id: "nope".into(),
            reason: ExecutorLossReason::ExecutorDecommission {
                worker_host: Some("hostX".into()),
                reason: "x".into(),
            },
        },
        DagEvent::ExecutorAdded {
            executor_id: "nope".into(),
            host: "hostX".into(),
        },
        DagEvent::ResubmitFailedStages,
        DagEvent::ResubmitFailedStages,
        DagEvent::JobCancelled {
            job_id: 42,
            reason: None,
        },
        DagEvent::TaskSetFailed {
            stage_id: 42,
            stage_attempt_id: 0,
            message: "x".into(),
        },
    ];
    for e in events {
        h.send(e);
    }
    // The fetch failure above failed map stage 0 itself (attempt 0) and the resubmit started
    // attempt 1. Late attempt-0 successes still count: one without a status registers
    // nothing, so when the last pending partition finishes the stage is resubmitted for
    // partition 0 alone.
    let a = h.end(&ts0, 0, "1", TaskEndReason::Success, None);
    assert_eq!(names(&a), vec!["SparkListenerTaskEnd"]);
    let a = h.map_ok(&ts0, 1, "2", vec![1, 1, 1]);
    let rerun = one_task_set(&a);
    assert_eq!(
        (rerun.stage_id, rerun.stage_attempt_id, rerun.tasks.len()),
        (0, 2, 1)
    );
    assert_eq!(rerun.tasks[0].partition_id, 0);
}

#[test]
fn many_tasks_are_handled_in_constant_time_each() {
    let mut h = H::new();
    let n = 20_000u32;
    let l = lineage(vec![parallelize(0, n, vec![]), map(1, 0, n)]);
    let (_, a) = h.submit(&l, 1, (0..n).collect());
    let ts = one_task_set(&a);
    assert_eq!(ts.tasks.len(), n as usize);
    assert_eq!(ts.binary.slices.len(), n as usize);
    let start = std::time::Instant::now();
    let mut last = Vec::new();
    for i in 0..n {
        h.begin(&ts, i, "1");
        last = h.result_ok(&ts, i, 1);
    }
    assert_eq!(
        job_ended(&last).map(|(_, r)| r.map(|v| v.len())),
        Some(Ok(n as usize))
    );
    // Generous bound even for debug builds: quadratic work would take far longer.
    assert!(
        start.elapsed() < std::time::Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
}

// ---- logs ---------------------------------------------------------------------------------

/// A log record: its message and its other fields.
type Record = (String, Vec<(String, String)>);

/// A minimal tracing subscriber that keeps each event's message and fields.
#[derive(Clone, Default)]
struct Capture(Arc<std::sync::Mutex<Vec<Record>>>);

struct Fields {
    message: String,
    fields: Vec<(String, String)>,
}

impl tracing::field::Visit for Fields {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.message = format!("{value:?}");
        } else {
            self.fields.push((field.name().to_string(), format!("{value:?}")));
        }
    }
}

impl tracing::Subscriber for Capture {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut f = Fields {
            message: String::new(),
            fields: Vec::new(),
        };
        event.record(&mut f);
        if let Ok(mut v) = self.0.lock() {
            v.push((f.message, f.fields));
        }
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

impl Capture {
    fn messages(&self) -> Vec<String> {
        self.0
            .lock()
            .map(|v| v.iter().map(|(m, _)| m.clone()).collect())
            .unwrap_or_default()
    }
    fn fields_of(&self, message: &str) -> Vec<(String, String)> {
        self.0
            .lock()
            .ok()
            .and_then(|v| v.iter().find(|(m, _)| m == message).map(|(_, f)| f.clone()))
            .unwrap_or_default()
    }
}

#[test]
fn logs_sparks_lines() {
    let capture = Capture::default();
    // With a single registered dispatcher tracing computes a callsite's interest from the
    // registering thread's default, so a callsite first hit by a test running in parallel
    // (without a subscriber) would be cached as disabled. A second, idle dispatcher makes
    // tracing ask every registered one.
    let _second = tracing::Dispatch::new(Capture::default());
    tracing::subscriber::with_default(capture.clone(), || {
        tracing::callsite::rebuild_interest_cache();
        let mut h = H::new();
        let l = narrow_lineage();
        let (_, a) = h.submit(&l, 1, vec![0, 1]);
        let ts = one_task_set(&a);
        h.result_ok(&ts, 0, 1);
        h.result_ok(&ts, 1, 1);

        let l = one_shuffle_lineage();
        let (_, a) = h.submit(&l, 3, vec![0]);
        let ts0 = one_task_set(&a);
        let a = finish_map_stage(&mut h, &ts0, 3);
        let ts1 = one_task_set(&a);
        h.fetch_fail(&ts1, 0, 0, 0, "1");
        h.send(DagEvent::ResubmitFailedStages);
        h.send(DagEvent::JobCancelled {
            job_id: 1,
            reason: Some("by test".into()),
        });
    });
    let logs = capture.messages();
    let expected = [
        "Got job 0 (count at MapCount) with 2 output partitions",
        "Final stage: ResultStage 0 (count at MapCount)",
        "Parents of final stage: List()",
        "Missing parents: List()",
        "Submitting ResultStage 0 (MapPartitionsRDD[1] at map at MapCount), which has no missing parents",
        "Submitting 2 missing tasks from ResultStage 0 (MapPartitionsRDD[1] at map at MapCount) \
         (first 15 tasks are for partitions Vector(0, 1))",
        "ResultStage 0 (count at MapCount) finished in 0.020 s",
        "Job 0 is finished. Cancelling potential speculative or zombie tasks for this job",
        "Job 0 finished: count at MapCount, took 20.0 ms",
        "Registering RDD 1 (map at MapCount) as input to shuffle 0",
        "Final stage: ResultStage 2 (count at MapCount)",
        "Parents of final stage: List(ShuffleMapStage 1)",
        "Missing parents: List(ShuffleMapStage 1)",
        "Submitting ShuffleMapStage 1 (MapPartitionsRDD[1] at map at MapCount), which has no missing parents",
        "ShuffleMapStage 1 (map at MapCount) finished in 0.020 s",
        "looking for newly runnable stages",
        "running: HashSet()",
        "waiting: HashSet(ResultStage 2)",
        "failed: HashSet()",
        "Marking ResultStage 2 (count at MapCount) as failed due to a fetch failure from \
         ShuffleMapStage 1 (map at MapCount)",
        "Resubmitting ShuffleMapStage 1 (map at MapCount) and ResultStage 2 (count at MapCount) \
         due to fetch failure",
        "Executor lost: 1 (epoch 1)",
        "Shuffle files lost for executor: 1 (epoch 1)",
        "Resubmitting failed stages",
        "Job 1 failed: count at MapCount, took 50.0 ms",
    ];
    for line in expected {
        assert!(
            logs.iter().any(|l| l == line),
            "missing log line {line:?} in {logs:#?}"
        );
    }
    assert!(logs
        .iter()
        .any(|l| l.starts_with("ResultStage 2 (count at MapCount) failed in 0.010 s due to ")));
    let fields = capture.fields_of("Got job 0 (count at MapCount) with 2 output partitions");
    assert_eq!(fields, vec![("job_id".to_string(), "0".to_string())]);
    let fields = capture.fields_of(
        "Submitting 2 missing tasks from ResultStage 0 (MapPartitionsRDD[1] at map at MapCount) \
         (first 15 tasks are for partitions Vector(0, 1))",
    );
    let keys: Vec<&str> = fields.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, vec!["job_id", "stage_id", "stage_attempt"]);
}

// ---- barrier stages -----------------------------------------------------------------------

fn barrier_map(id: RddId, parent: RddId, n: u32) -> RddNode {
    RddNode {
        id,
        kind: RddKind::MapPartitions {
            parent,
            op: OpCall::new("identity", vec![]),
            preserves_partitioning: false,
            is_from_barrier: true,
        },
        num_partitions: n,
        call_site: "mapPartitions at BarrierSync".into(),
    }
}

/// parallelize(3) → barrier mapPartitions → shuffle 0 (1 partition) → map.
fn barrier_map_stage_lineage() -> Arc<Lineage> {
    lineage(vec![
        parallelize(0, 3, vec![]),
        barrier_map(1, 0, 3),
        shuffled(2, 1, 0, 1),
        map(3, 2, 1),
    ])
}

fn barrier_h(slots: u32) -> H {
    let mut h = H::new();
    h.dag.set_max_concurrent_tasks(slots);
    h
}

fn boom() -> TaskEndReason {
    TaskEndReason::ExceptionFailure {
        class_name: "java.lang.RuntimeException".into(),
        description: "boom".into(),
        stack_trace: vec![],
    }
}

fn kills(actions: &[DagAction]) -> Vec<(u32, String)> {
    actions
        .iter()
        .filter_map(|a| match a {
            DagAction::KillAllTaskAttempts { stage_id, reason } => Some((*stage_id, reason.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn a_barrier_stage_is_submitted_as_a_barrier_task_set() {
    let mut h = barrier_h(8);
    let l = barrier_map_stage_lineage();
    let (_, a) = h.submit(&l, 3, vec![0]);
    let ts = one_task_set(&a);
    assert!(ts.is_barrier && ts.is_shuffle_map);
    assert_eq!(ts.tasks.len(), 3);
    // Its child, reading the shuffle, is not a barrier stage.
    let a = finish_map_stage(&mut h, &ts, 1);
    let reduce = one_task_set(&a);
    assert!(!reduce.is_barrier);
}

#[test]
fn barrier_stages_are_refused_with_dynamic_allocation_and_broken_rdd_chains() {
    let mut h = H::with(DagConfig {
        dynamic_allocation_enabled: true,
        ..DagConfig::default()
    });
    let l = barrier_map_stage_lineage();
    let (job, a) = h.submit(&l, 3, vec![0]);
    assert_eq!(
        job_ended(&a),
        Some((job, Err(BARRIER_DYN_ALLOCATION_MESSAGE.to_string())))
    );
    assert!(task_sets(&a).is_empty());
    assert_eq!(
        barrier_exception_class(BARRIER_DYN_ALLOCATION_MESSAGE),
        Some("org.apache.spark.scheduler.BarrierJobRunWithDynamicAllocationException")
    );

    // take(1) of a 3-partition barrier RDD: the stage computes 1 partition of 3.
    let mut h = barrier_h(8);
    let l = lineage(vec![parallelize(0, 3, vec![]), barrier_map(1, 0, 3)]);
    let (job, a) = h.submit(&l, 1, vec![0]);
    assert_eq!(
        job_ended(&a),
        Some((job, Err(BARRIER_RDD_CHAIN_MESSAGE.to_string())))
    );
    assert!(BARRIER_RDD_CHAIN_MESSAGE.starts_with(
        "[SPARK-24820][SPARK-24821]: Barrier execution mode does not allow the following pattern of RDD chain within a barrier stage:\n1. Ancestor RDDs that have different number of partitions from the resulting RDD"
    ));
    // All of them is fine.
    let (_, a) = h.submit(&l, 1, vec![0, 1, 2]);
    assert!(one_task_set(&a).is_barrier);
    // A barrier RDD whose ancestor in the stage has another partition count (a shuffled
    // RDD read by the barrier map with more partitions than it) is refused too.
    let mut h = barrier_h(8);
    let l = lineage(vec![
        parallelize(0, 2, vec![]),
        shuffled(1, 0, 0, 4),
        RddNode {
            num_partitions: 2,
            ..barrier_map(2, 1, 2)
        },
    ]);
    let (job, a) = h.submit(&l, 2, vec![0, 1]);
    assert_eq!(
        job_ended(&a),
        Some((job, Err(BARRIER_RDD_CHAIN_MESSAGE.to_string())))
    );
}

#[test]
fn a_barrier_stage_needing_more_slots_than_the_cluster_has_is_retried_then_fails() {
    let mut h = H::with(DagConfig {
        barrier_check_max_failures: 2,
        barrier_check_interval_ms: 500,
        ..DagConfig::default()
    });
    h.dag.set_max_concurrent_tasks(2);
    let l = barrier_map_stage_lineage();
    let (job, a) = h.submit(&l, 3, vec![0]);
    assert!(job_ended(&a).is_none(), "not failed yet: {a:#?}");
    assert!(task_sets(&a).is_empty());
    assert!(a.iter().any(
        |x| matches!(x, DagAction::ScheduleBarrierJobResubmit { job_id, delay_ms: 500 } if *job_id == job)
    ));
    assert_eq!(h.dag.pending_barrier_job_resubmits(), vec![job]);
    assert!(
        h.dag.active_job_ids().is_empty(),
        "no stage or job is kept meanwhile"
    );
    // Second failure: retried once more.
    let a = h.send(DagEvent::ResubmitBarrierJob { job_id: job });
    assert!(a
        .iter()
        .any(|x| matches!(x, DagAction::ScheduleBarrierJobResubmit { .. })));
    // Third: over the limit, the job fails with Spark's message.
    let a = h.send(DagEvent::ResubmitBarrierJob { job_id: job });
    assert_eq!(job_ended(&a), Some((job, Err(BARRIER_SLOTS_MESSAGE.to_string()))));
    assert!(h.dag.pending_barrier_job_resubmits().is_empty());
    assert_eq!(
        barrier_exception_class(BARRIER_SLOTS_MESSAGE),
        Some("org.apache.spark.scheduler.BarrierJobSlotsNumberCheckFailed")
    );

    // With the slots there at the retry, the job runs.
    let mut h = barrier_h(2);
    let (job, _) = h.submit(&l, 3, vec![0]);
    h.dag.set_max_concurrent_tasks(4);
    let a = h.send(DagEvent::ResubmitBarrierJob { job_id: job });
    let ts = one_task_set(&a);
    assert!(ts.is_barrier);
    assert_eq!(h.dag.active_job_ids(), vec![job]);
}

#[test]
fn a_failed_barrier_task_fails_and_resubmits_the_whole_map_stage() {
    let mut h = barrier_h(8);
    let l = barrier_map_stage_lineage();
    let (_, a) = h.submit(&l, 3, vec![0]);
    let ts = one_task_set(&a);
    // Task 0 succeeded, then task 1 failed.
    h.map_ok(&ts, 0, "1", vec![10]);
    let a = h.end(&ts, 1, "2", boom(), None);
    assert_eq!(
        kills(&a),
        vec![(
            0,
            "Task ShuffleMapTask(0, 1) from barrier stage ShuffleMapStage 0 (mapPartitions at BarrierSync) failed."
                .to_string()
        )]
    );
    assert_eq!(
        stage_completed_failure(&a, 0),
        Some(Some(
            "Stage failed because barrier task ShuffleMapTask(0, 1) finished unsuccessfully.\njava.lang.RuntimeException: boom"
                .to_string()
        ))
    );
    assert!(a
        .iter()
        .any(|x| matches!(x, DagAction::ScheduleResubmit { delay_ms } if *delay_ms == RESUBMIT_TIMEOUT_MS)));
    // Every map output went, the finished one too.
    assert_eq!(
        h.dag.map_output_tracker().find_missing_partitions(0),
        Some(vec![0, 1, 2])
    );
    // The killed task's end does not fail the attempt again.
    let a = h.end(
        &ts,
        2,
        "1",
        TaskEndReason::TaskKilled {
            reason: "Task ShuffleMapTask(0, 1) from barrier stage ShuffleMapStage 0 (mapPartitions at BarrierSync) failed.".into(),
        },
        None,
    );
    assert!(
        kills(&a).is_empty() && stage_completed_failure(&a, 0).is_none(),
        "{a:#?}"
    );
    // The resubmission runs all three tasks again, as attempt 1.
    let a = h.send(DagEvent::ResubmitFailedStages);
    let retry = one_task_set(&a);
    assert_eq!(
        (retry.stage_id, retry.stage_attempt_id, retry.tasks.len()),
        (0, 1, 3)
    );
    assert!(retry.is_barrier);
    // A late failure from attempt 0 is ignored.
    let a = h.end(&ts, 0, "1", boom(), None);
    assert!(kills(&a).is_empty());
    // The retry succeeds and the job goes on.
    let a = finish_map_stage(&mut h, &retry, 1);
    let reduce = one_task_set(&a);
    let a = h.result_ok(&reduce, 0, 3);
    assert_eq!(job_ended(&a).map(|(_, r)| r.is_ok()), Some(true));
}

#[test]
fn a_barrier_stage_failing_max_consecutive_attempts_aborts_the_job() {
    let mut h = H::with(DagConfig {
        max_consecutive_attempts: 2,
        ..DagConfig::default()
    });
    h.dag.set_max_concurrent_tasks(8);
    let l = barrier_map_stage_lineage();
    let (job, a) = h.submit(&l, 3, vec![0]);
    let ts = one_task_set(&a);
    h.end(&ts, 0, "1", boom(), None);
    let a = h.send(DagEvent::ResubmitFailedStages);
    let retry = one_task_set(&a);
    let a = h.end(&retry, 2, "1", boom(), None);
    let expected = "Job aborted due to stage failure: ShuffleMapStage 0 (mapPartitions at BarrierSync) has failed the maximum allowable number of times: 2. Most recent failure reason: Stage failed because barrier task ShuffleMapTask(0, 2) finished unsuccessfully.\njava.lang.RuntimeException: boom";
    assert_eq!(job_ended(&a), Some((job, Err(expected.to_string()))));
}

#[test]
fn a_failed_barrier_result_stage_cannot_be_recovered() {
    let mut h = barrier_h(8);
    let l = lineage(vec![parallelize(0, 2, vec![]), barrier_map(1, 0, 2)]);
    let (job, a) = h.submit(&l, 1, vec![0, 1]);
    let ts = one_task_set(&a);
    assert!(ts.is_barrier && !ts.is_shuffle_map);
    let a = h.end(&ts, 1, "1", boom(), None);
    assert_eq!(kills(&a).len(), 1);
    let expected = "Job aborted due to stage failure: Could not recover from a failed barrier ResultStage. Most recent failure reason: Stage failed because barrier task ResultTask(0, 1) finished unsuccessfully.\njava.lang.RuntimeException: boom";
    assert_eq!(job_ended(&a), Some((job, Err(expected.to_string()))));
}

#[test]
fn a_fetch_failure_from_a_barrier_map_stage_drops_all_its_outputs() {
    let mut h = barrier_h(8);
    let l = barrier_map_stage_lineage();
    let (_, a) = h.submit(&l, 3, vec![0]);
    let ts = one_task_set(&a);
    let a = finish_map_stage(&mut h, &ts, 1);
    let reduce = one_task_set(&a);
    h.fetch_fail(&reduce, 0, 0, 1, "2");
    assert_eq!(
        h.dag.map_output_tracker().find_missing_partitions(0),
        Some(vec![0, 1, 2]),
        "a barrier map stage reruns all its tasks"
    );
}

#[test]
fn a_barrier_task_succeeding_after_its_attempt_failed_does_not_shrink_the_retry() {
    let mut h = barrier_h(8);
    let l = barrier_map_stage_lineage();
    let (_, a) = h.submit(&l, 3, vec![0]);
    let ts = one_task_set(&a);
    // Task 0 fails; task 1's success (same attempt) arrives after the failure.
    h.end(&ts, 0, "1", boom(), None);
    h.map_ok(&ts, 1, "2", vec![10]);
    let a = h.send(DagEvent::ResubmitFailedStages);
    let retry = one_task_set(&a);
    assert_eq!(retry.tasks.len(), 3, "every task of the barrier stage runs again");
    // A success of attempt 0 arriving during attempt 1 is not used.
    h.map_ok(&ts, 2, "1", vec![10]);
    assert_eq!(
        h.dag.map_output_tracker().find_missing_partitions(0),
        Some(vec![0, 1, 2])
    );
}

#[test]
fn fetch_failures_from_a_decommissioning_executor_do_not_count_when_asked() {
    // maxConsecutiveAttempts 2: two fetch failures abort, unless they come from a
    // decommissioning executor with spark.stage.ignoreDecommissionFetchFailure.
    let run = |ignore: bool, decommissioned: bool| {
        let mut h = H::with(DagConfig {
            max_consecutive_attempts: 2,
            ignore_decommission_fetch_failure: ignore,
            ..DagConfig::default()
        });
        let l = one_shuffle_lineage();
        let (_, a) = h.submit(&l, 3, vec![0]);
        let mut map_ts = one_task_set(&a);
        let mut ended = None;
        for _ in 0..2 {
            let a = finish_map_stage(&mut h, &map_ts, 3);
            let reduce_ts = one_task_set(&a);
            h.fetch_source_decommissioned = decommissioned;
            let last = h.fetch_fail(&reduce_ts, 0, 0, 0, "1");
            ended = job_ended(&last);
            if ended.is_some() {
                break;
            }
            let a = h.send(DagEvent::ResubmitFailedStages);
            map_ts = one_task_set(&a);
        }
        ended
    };
    assert!(
        run(false, true).is_some_and(|(_, r)| r.is_err()),
        "counted without the setting"
    );
    assert!(
        run(true, false).is_some_and(|(_, r)| r.is_err()),
        "counted from a live executor"
    );
    assert_eq!(run(true, true), None, "ignored: the stage goes on");
}
