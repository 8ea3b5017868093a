//! Barrier execution mode end to end on the embedded four-node cluster: a barrier stage's
//! tasks launch together and pass every `allGather` together (BarrierSync); one failed task
//! fails and reruns the whole stage, up to `spark.stage.maxConsecutiveAttempts`; a task that
//! never syncs makes the others time out with the coordinator's message; and Spark's checks
//! refuse a barrier stage with more partitions than the cluster's slots (after its retries),
//! with dynamic allocation, or whose RDD chain computes fewer partitions (take). Every wait
//! is bounded.

mod common;

use common::inproc::{conf, dump, events, msgs, node, submit, succeeded, Node};
use sparkyard::context::{AppEnv, AppError, SparkContext};
use sparkyard::yarn::records::FinalApplicationStatus;

const BARRIER_SYNC: &str = "sparkyard.examples.BarrierSync";

/// Two executors of two cores: four slots.
fn four_slots(extra: &[(&str, &str)]) -> std::sync::Arc<sparkyard::conf::SparkConf> {
    let mut pairs = vec![("spark.executor.instances", "2"), ("spark.executor.cores", "2")];
    pairs.extend_from_slice(extra);
    conf(&pairs)
}

fn diagnostics(outcome: &sparkyard::deploy::client::ClientOutcome) -> String {
    let report = outcome.report.as_ref().expect("a final report");
    assert_eq!(
        report.final_status,
        FinalApplicationStatus::Failed,
        "{}",
        report.diagnostics
    );
    report.diagnostics.clone()
}

/// `take(1)` of a barrier RDD: a stage computing 1 of its 4 partitions.
fn barrier_take(env: &AppEnv) -> Result<(), AppError> {
    let sc = SparkContext::new(env)?;
    let first = sc
        .parallelize_range(0, 4, 1, Some(4))?
        .barrier()
        .map_partitions("identity", vec![])
        .take(1)?;
    env.println(format!("took {first:?}"));
    sc.stop();
    Ok(())
}

async fn barrier_node() -> Node {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| sparkyard::apps::register_application("test.BarrierTake", barrier_take));
    node().await
}

#[actix_rt::test]
async fn a_barrier_stage_launches_together_and_syncs_every_round() {
    let node = barrier_node().await;
    let (outcome, out) = submit(
        &node,
        BARRIER_SYNC,
        &["--tasks", "4", "--rounds", "3"],
        four_slots(&[]),
    )
    .await;
    dump(&node);
    succeeded(&outcome, &out);
    for r in 0..3 {
        assert!(
            out.contains(&format!("BarrierSync: round {r}: 4 tasks synchronised")),
            "{out}"
        );
    }
    let m = msgs(&node);
    // The four tasks started in one offer round, which then said so.
    let starts: Vec<usize> = m
        .iter()
        .enumerate()
        .filter(|(_, l)| l.starts_with("Starting task ") && l.contains(" in stage 0.0 "))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(starts.len(), 4);
    let scheduled = m
        .iter()
        .position(|l| l == "Successfully scheduled all the 4 tasks for barrier stage 0.")
        .expect("the barrier set was scheduled");
    assert!(starts.iter().all(|i| *i < scheduled));
    let syncs = events(&node, "barrier_sync");
    assert_eq!(syncs.len(), 3, "{syncs:#?}");
    for (epoch, s) in syncs.iter().enumerate() {
        assert_eq!(
            s["msg"],
            format!(
                "Barrier sync epoch {epoch} from Stage 0 (Stage Attempt 0) received all updates from tasks, finished successfully."
            )
        );
    }
    assert!(m.iter().any(|l| l
        .starts_with("Barrier sync epoch 2 from Stage 0 (Stage Attempt 0) received update from Task ")
        && l.ends_with(", current progress: 4/4.")));
    let passed = m
        .iter()
        .filter(|l| {
            l.contains("finished global sync successfully") && l.ends_with("current barrier epoch is 3.")
        })
        .count();
    assert_eq!(passed, 4, "each task passed its third sync");
}

#[actix_rt::test]
async fn one_failed_barrier_task_reruns_the_whole_stage() {
    let node = barrier_node().await;
    let (outcome, out) = submit(
        &node,
        BARRIER_SYNC,
        &["--tasks", "4", "--rounds", "2", "--fail-attempts", "1"],
        four_slots(&[]),
    )
    .await;
    dump(&node);
    succeeded(&outcome, &out);
    assert!(
        out.contains("BarrierSync: round 1: 4 tasks synchronised"),
        "{out}"
    );
    let m = msgs(&node);
    assert!(m
        .iter()
        .any(|l| l == "Marking 0 (mapPartitions at BarrierSync) as failed due to a barrier task failed."));
    assert!(m.iter().any(|l| l
        == "Resubmitting ShuffleMapStage 0 (mapPartitions at BarrierSync) due to barrier stage failure."));
    // The other tasks of the failed attempt were killed, and all four ran again together.
    assert!(m.iter().any(|l| l.contains("Task ShuffleMapTask(0, 0) from barrier stage ShuffleMapStage 0 (mapPartitions at BarrierSync) failed.")));
    let rounds = m
        .iter()
        .filter(|l| *l == "Successfully scheduled all the 4 tasks for barrier stage 0.")
        .count();
    assert_eq!(rounds, 2, "attempt 0, then attempt 1");
    assert!(m.iter().any(|l| l.starts_with("Starting task 3.0 in stage 0.1 ")));
    let failed = events(&node, "barrier_stage_failed");
    assert_eq!(failed.len(), 1, "{failed:#?}");
    assert_eq!(failed[0]["stage_attempt"], 0);
}

#[actix_rt::test]
async fn a_barrier_stage_failing_every_attempt_aborts_the_job() {
    let node = barrier_node().await;
    let (outcome, _) = submit(
        &node,
        BARRIER_SYNC,
        &["--tasks", "2", "--rounds", "1", "--fail-attempts", "9"],
        four_slots(&[("spark.stage.maxConsecutiveAttempts", "2")]),
    )
    .await;
    dump(&node);
    let d = diagnostics(&outcome);
    assert!(
        d.contains("Job aborted due to stage failure: ShuffleMapStage 0 (mapPartitions at BarrierSync) has failed the maximum allowable number of times: 2. Most recent failure reason: Stage failed because barrier task ShuffleMapTask(0, 0) finished unsuccessfully.\njava.lang.RuntimeException: BarrierSync: failing stage attempt 1 on purpose"),
        "{d}"
    );
}

#[actix_rt::test]
async fn a_task_that_never_syncs_makes_the_others_time_out() {
    let node = barrier_node().await;
    let (outcome, _) = submit(
        &node,
        BARRIER_SYNC,
        &["--tasks", "3", "--rounds", "1", "--skip-barrier", "1"],
        four_slots(&[
            ("spark.barrier.sync.timeout", "1s"),
            ("spark.stage.maxConsecutiveAttempts", "1"),
        ]),
    )
    .await;
    dump(&node);
    let d = diagnostics(&outcome);
    assert!(
        d.contains("has failed the maximum allowable number of times: 1. Most recent failure reason: Stage failed because barrier task ShuffleMapTask(0, "),
        "{d}"
    );
    assert!(
        d.contains("org.apache.spark.SparkException: The coordinator didn't get all barrier sync requests for barrier epoch 0 from Stage 0 (Stage Attempt 0) within 1 second(s)."),
        "{d}"
    );
    assert_eq!(events(&node, "barrier_sync_timeout").len(), 1);
}

#[actix_rt::test]
async fn a_barrier_stage_with_more_partitions_than_slots_fails_after_its_checks() {
    let node = barrier_node().await;
    let (outcome, _) = submit(
        &node,
        BARRIER_SYNC,
        &["--tasks", "5"],
        four_slots(&[
            ("spark.scheduler.barrier.maxConcurrentTasksCheck.maxFailures", "1"),
            (
                "spark.scheduler.barrier.maxConcurrentTasksCheck.interval",
                "100ms",
            ),
        ]),
    )
    .await;
    dump(&node);
    let d = diagnostics(&outcome);
    assert!(
        d.contains("org.apache.spark.scheduler.BarrierJobSlotsNumberCheckFailed: [SPARK-24819]: Barrier execution mode does not allow run a barrier stage that requires more slots than the total number of slots in the cluster currently."),
        "{d}"
    );
    let m = msgs(&node);
    assert!(m
        .iter()
        .any(|l| l == "Barrier stage in job 0 requires 5 slots, but only 4 are available. Will retry up to 1 more times"));
    assert!(m
        .iter()
        .any(|l| l == "Barrier stage in job 0 requires 5 slots, but only 4 are available. Will retry up to 0 more times"));
    assert!(!m.iter().any(|l| l.starts_with("Starting task")), "nothing ran");
}

#[actix_rt::test]
async fn barrier_stages_are_refused_with_dynamic_allocation() {
    let node = barrier_node().await;
    let (outcome, _) = submit(
        &node,
        BARRIER_SYNC,
        &["--tasks", "2"],
        conf(&[
            ("spark.dynamicAllocation.enabled", "true"),
            ("spark.dynamicAllocation.initialExecutors", "1"),
            ("spark.dynamicAllocation.shuffleTracking.enabled", "true"),
        ]),
    )
    .await;
    let d = diagnostics(&outcome);
    assert!(
        d.contains("org.apache.spark.scheduler.BarrierJobRunWithDynamicAllocationException: [SPARK-24942]: Barrier execution mode does not support dynamic resource allocation for now. You can disable dynamic resource allocation by setting Spark conf \"spark.dynamicAllocation.enabled\" to \"false\"."),
        "{d}"
    );
}

#[actix_rt::test]
async fn take_of_a_barrier_rdd_is_refused_for_its_rdd_chain() {
    let node = barrier_node().await;
    let (outcome, _) = submit(&node, "test.BarrierTake", &[], four_slots(&[])).await;
    let d = diagnostics(&outcome);
    assert!(
        d.contains("org.apache.spark.scheduler.BarrierJobUnsupportedRDDChainException: [SPARK-24820][SPARK-24821]: Barrier execution mode does not allow the following pattern of RDD chain within a barrier stage:"),
        "{d}"
    );
}
