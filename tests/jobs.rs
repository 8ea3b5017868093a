//! The driver side end to end, in-process on an embedded three-rack cluster: applications
//! written against the SparkContext API (registered here, as a user's program registers
//! its own) run in cluster mode, and the tests check what Spark's schedulers would do:
//! stages split at shuffles, a two-stage shuffle's result, retries up to
//! `spark.task.maxFailures` and the job failure after them, an oversized task, a job on
//! zero partitions, delay scheduling's locality levels, executor loss with tasks in flight
//! and a fetch failure after an executor is lost (the map stage runs again).

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::inproc::{conf, dump, msgs, submit, succeeded, Node};
use common::{inproc, within};
use sparkyard::context::{AppEnv, AppError, SparkContext};
use sparkyard::rdd::local::LocalRunner;
use sparkyard::rdd::ops::{self, Op};
use sparkyard::rdd::{api, Value};
use sparkyard::runtime::KillMode;
use sparkyard::scheduler::events::{SparkListenerEvent, TaskLocality};
use sparkyard::scheduler::listener_bus::CollectingListener;

async fn node() -> Node {
    register();
    inproc::node().await
}

// ------------------------------------------------------------------ the test applications

fn register() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        use sparkyard::apps::register_application as app;
        app("test.StageSplit", stage_split);
        app("test.ShuffleSum", shuffle_sum);
        app("test.AlwaysFails", always_fails);
        app("test.FailsTwice", fails_twice);
        app("test.Oversized", oversized);
        app("test.ZeroPartitions", zero_partitions);
        app("test.Locality", locality);
        app("test.SlowShuffle", slow_shuffle);
        app("test.SleepingTasks", sleeping_tasks);
        app("test.AbortKillsRunning", abort_kills_running);
        ops::register(
            "test.fail_first_sleep_others",
            Op::map(|ctx, v| {
                if ctx.task.partition_id() == 0 {
                    return Err(sparkyard::rdd::TaskError::exception(
                        "java.lang.RuntimeException",
                        "first fails",
                    ));
                }
                ctx.sleep(Duration::from_secs(20))?;
                Ok(v)
            }),
        );
        // The README's example of a user's own application.
        ops::register(
            "even",
            Op::filter(|_, v| Ok(v.as_i64().is_some_and(|i| i % 2 == 0))),
        );
        app("my.EvenCount", even_count);
        ops::register(
            "test.mod_pair",
            Op::map(|ctx, v| {
                let m = ctx.args.first().and_then(Value::as_i64).unwrap_or(3);
                let n = v.as_i64().unwrap_or(0);
                Ok(Value::pair(Value::I64(n % m), Value::I64(n)))
            }),
        );
    });
}

fn fail(e: impl std::fmt::Display) -> AppError {
    AppError::Exception(e.to_string())
}

/// Prints each stage the job submitted: `stage <id> parents <ids> tasks <n>`.
fn stage_split(env: &AppEnv) -> Result<(), AppError> {
    let sc = SparkContext::new(env)?;
    let listener = CollectingListener::new();
    sc.add_spark_listener(Box::new(listener.clone()))?;
    let out = sc
        .parallelize((0..12).map(Value::I64).collect(), Some(3))?
        .map("test.mod_pair", vec![Value::I64(4)])
        .reduce_by_key("add", Some(2))
        .map("swap", vec![])
        .group_by_key(Some(2))
        .collect()?;
    env.println(format!("records {}", out.len()));
    sc.stop();
    for e in listener.events() {
        if let SparkListenerEvent::StageSubmitted { stage_info, .. } = e {
            env.println(format!(
                "stage {} parents {:?} tasks {} name {}",
                stage_info.stage_id, stage_info.parent_ids, stage_info.num_tasks, stage_info.name
            ));
        }
    }
    Ok(())
}

/// reduceByKey across 4 map and 3 reduce partitions, compared with the in-process evaluator.
fn shuffle_sum(env: &AppEnv) -> Result<(), AppError> {
    let values: Vec<Value> = (1..=1000).map(Value::I64).collect();
    let sc = SparkContext::new(env)?;
    let mut got = sc
        .parallelize(values.clone(), Some(4))?
        .map("test.mod_pair", vec![Value::I64(7)])
        .reduce_by_key("add", Some(3))
        .collect()?;
    sc.stop();
    let local: Arc<dyn api::JobRunner> = Arc::new(LocalRunner::new("ShuffleSum", 2));
    let mut want = api::parallelize(&local, values, Some(4))
        .map_err(fail)?
        .map("test.mod_pair", vec![Value::I64(7)])
        .reduce_by_key("add", Some(3))
        .collect()
        .map_err(fail)?;
    got.sort();
    want.sort();
    env.println(format!("same as local: {}", got == want));
    env.println(format!("records: {got:?}"));
    Ok(())
}

fn always_fails(env: &AppEnv) -> Result<(), AppError> {
    let sc = SparkContext::new(env)?;
    let r = sc
        .parallelize(vec![Value::I64(1)], Some(1))?
        .map("fail", vec![Value::Str("deliberate failure".into())])
        .count();
    match r {
        Ok(n) => env.println(format!("unexpected count {n}")),
        Err(e) => env.println(format!("job failed: {e}")),
    }
    sc.stop();
    Ok(())
}

fn fails_twice(env: &AppEnv) -> Result<(), AppError> {
    let sc = SparkContext::new(env)?;
    let n = sc
        .parallelize((0..4).map(Value::I64).collect(), Some(2))?
        .map("fail_attempts_below", vec![Value::I64(2)])
        .count()?;
    env.println(format!("count {n}"));
    sc.stop();
    Ok(())
}

fn oversized(env: &AppEnv) -> Result<(), AppError> {
    let sc = SparkContext::new(env)?;
    let big = Value::Str("x".repeat(2 * 1024 * 1024));
    match sc.parallelize(vec![big], Some(1))?.count() {
        Ok(n) => env.println(format!("unexpected count {n}")),
        Err(e) => env.println(format!("job failed: {e}")),
    }
    // The application goes on: a small job still runs.
    let n = sc
        .parallelize(vec![Value::I64(1), Value::I64(2)], Some(2))?
        .count()?;
    env.println(format!("then count {n}"));
    sc.stop();
    Ok(())
}

fn zero_partitions(env: &AppEnv) -> Result<(), AppError> {
    let file = env.args().first().cloned().unwrap_or_default();
    let sc = SparkContext::new(env)?;
    let listener = CollectingListener::new();
    sc.add_spark_listener(Box::new(listener.clone()))?;
    let rdd = sc.text_file(&file, None)?;
    env.println(format!("partitions {}", rdd.num_partitions()));
    env.println(format!("count {}", rdd.count()?));
    sc.stop();
    let names: Vec<&str> = listener
        .events()
        .iter()
        .map(|e| e.name())
        .filter(|n| n.contains("Job") || n.contains("Stage") || n.contains("Task"))
        .map(|n| match n {
            "SparkListenerJobStart" => "JobStart",
            "SparkListenerJobEnd" => "JobEnd",
            other => other,
        })
        .collect();
    env.println(format!("events {names:?}"));
    Ok(())
}

/// Tasks preferring an executor's host, a host without executors in an executor's rack,
/// a host outside the cluster, and nothing; prints each task's locality.
fn locality(env: &AppEnv) -> Result<(), AppError> {
    let sc = SparkContext::new(env)?;
    let listener = CollectingListener::new();
    sc.add_spark_listener(Box::new(listener.clone()))?;
    let execs = sc.executors()?;
    let exec_hosts: Vec<String> = execs.iter().map(|e| e.host.clone()).collect();
    let rack = |h: &str| match h {
        "host1" | "host2" => "/rack1",
        _ => "/rack2",
    };
    let node_local = exec_hosts[0].clone();
    let rack_local = ["host1", "host2", "host3", "host4"]
        .into_iter()
        .find(|h| !exec_hosts.iter().any(|e| e == h) && exec_hosts.iter().any(|e| rack(e) == rack(h)))
        .ok_or_else(|| fail("no host for a rack-local preference"))?
        .to_string();
    env.println(format!(
        "executors on {exec_hosts:?}; node-local {node_local}; rack-local {rack_local}"
    ));
    let rdd = sc.make_rdd(vec![
        (Value::I64(0), vec![node_local]),
        (Value::I64(1), vec![rack_local]),
        (Value::I64(2), vec!["elsewhere".into()]),
        (Value::I64(3), vec![]),
    ]);
    let n = rdd.count()?;
    env.println(format!("count {n}"));
    sc.stop();
    for e in listener.events() {
        if let SparkListenerEvent::TaskStart { task_info, .. } = e {
            env.println(format!("task {} {}", task_info.index, task_info.locality));
        }
    }
    Ok(())
}

/// A shuffle whose reduce tasks are slow and outnumber the cores, so some start after the
/// test has killed an executor holding map outputs.
fn slow_shuffle(env: &AppEnv) -> Result<(), AppError> {
    let values: Vec<Value> = (0..40).map(Value::I64).collect();
    let sc = SparkContext::new(env)?;
    let mut got = sc
        .parallelize(values.clone(), Some(4))?
        .map("sleep_ms", vec![Value::I64(10)])
        .map("test.mod_pair", vec![Value::I64(8)])
        .reduce_by_key("add", Some(6))
        .map("sleep_ms", vec![Value::I64(300)])
        .collect()?;
    sc.stop();
    let local: Arc<dyn api::JobRunner> = Arc::new(LocalRunner::new("SlowShuffle", 2));
    let mut want = api::parallelize(&local, values, Some(4))
        .map_err(fail)?
        .map("test.mod_pair", vec![Value::I64(8)])
        .reduce_by_key("add", Some(6))
        .collect()
        .map_err(fail)?;
    got.sort();
    want.sort();
    env.println(format!("same as local: {}", got == want));
    Ok(())
}

fn sleeping_tasks(env: &AppEnv) -> Result<(), AppError> {
    let sc = SparkContext::new(env)?;
    let n = sc
        .parallelize((0..6).map(Value::I64).collect(), Some(6))?
        .map("sleep_ms", vec![Value::I64(400)])
        .count()?;
    env.println(format!("count {n}"));
    sc.stop();
    Ok(())
}

/// A job whose first task fails for good while the others sleep: the abort kills them.
fn abort_kills_running(env: &AppEnv) -> Result<(), AppError> {
    let sc = SparkContext::new(env)?;
    let r = sc
        .parallelize((0..3).map(Value::I64).collect(), Some(3))?
        .map("test.fail_first_sleep_others", vec![])
        .count();
    env.println(format!("job: {r:?}"));
    sc.stop();
    Ok(())
}

/// The README's example application, verbatim.
fn even_count(env: &AppEnv) -> Result<(), AppError> {
    let sc = SparkContext::new(env)?;
    let n = sc
        .parallelize_range(0, 1000, 1, Some(4))?
        .filter("even", vec![])
        .count()?;
    env.println(format!("{n} even numbers"));
    sc.stop();
    Ok(())
}

// ------------------------------------------------------------------ the tests

#[actix_rt::test]
async fn an_aborted_job_kills_its_running_tasks_through_their_executors() {
    let node = node().await;
    let (outcome, out) = submit(
        &node,
        "test.AbortKillsRunning",
        &[],
        conf(&[("spark.task.maxFailures", "1"), ("spark.executor.cores", "2")]),
    )
    .await;
    succeeded(&outcome, &out);
    assert!(out.contains("Task 0 in stage 0.0 failed 1 times"), "{out}");
    dump(&node);
    let m = msgs(&node);
    // Every sleeping task (20 s) launched before the abort is killed through its executor,
    // not waited for: its executor is asked to kill it, and it never finishes. Whether
    // task 2 was launched depends on whether the second executor's cores were free in
    // time; whether a task's thread reports the kill ("Executor killed task") or its
    // executor is shut down first depends on which comes first, as in Spark.
    let mut launched = 0;
    for index in [1, 2] {
        let Some(start) = m
            .iter()
            .find(|l| l.starts_with(&format!("Starting task {index}.0 in stage 0.0")))
        else {
            continue;
        };
        let tid = start
            .split("(TID ")
            .nth(1)
            .and_then(|rest| rest.split(')').next())
            .expect("a TID");
        assert!(
            m.iter()
                .any(|l| l.starts_with(&format!("Executor is trying to kill TID {tid},"))),
            "task {index} (TID {tid}) was not killed through its executor: {m:#?}"
        );
        assert!(
            !m.iter()
                .any(|l| l.starts_with(&format!("Finished task {index}.0 in stage 0.0"))),
            "task {index} ran to its end: {m:#?}"
        );
        launched += 1;
    }
    assert!(launched >= 1, "no sleeping task ran: {m:#?}");
}

#[actix_rt::test]
async fn the_readmes_own_application_runs() {
    let node = node().await;
    let (outcome, out) = submit(&node, "my.EvenCount", &[], conf(&[])).await;
    succeeded(&outcome, &out);
    assert!(out.contains("500 even numbers"), "{out}");
}

#[actix_rt::test]
async fn stages_split_at_shuffle_boundaries() {
    let node = node().await;
    let (outcome, out) = submit(&node, "test.StageSplit", &[], conf(&[])).await;
    succeeded(&outcome, &out);
    // parallelize → map → reduceByKey | → map → groupByKey | → collect: three stages, the
    // result stage's parent the second map stage, whose parent the first.
    assert!(out.contains("records 4"), "{out}");
    assert!(out.contains("stage 0 parents [] tasks 3"), "{out}");
    assert!(out.contains("stage 1 parents [0] tasks 2"), "{out}");
    assert!(
        out.contains("stage 2 parents [1] tasks 2 name collect at StageSplit"),
        "{out}"
    );
}

#[actix_rt::test]
async fn a_two_stage_shuffle_gives_the_reference_result() {
    let node = node().await;
    let (outcome, out) = submit(&node, "test.ShuffleSum", &[], conf(&[])).await;
    succeeded(&outcome, &out);
    assert!(out.contains("same as local: true"), "{out}");
    let m = msgs(&node);
    assert!(
        m.iter()
            .any(|l| l.starts_with("Job 0 finished: collect at ShuffleSum, took ")),
        "{m:#?}"
    );
    assert!(
        m.iter()
            .any(|l| l.contains("Submitting 3 missing tasks from ResultStage 1")),
        "{m:#?}"
    );
}

#[actix_rt::test]
async fn a_task_failing_every_attempt_fails_the_job_after_max_failures() {
    let node = node().await;
    let (outcome, out) = submit(
        &node,
        "test.AlwaysFails",
        &[],
        conf(&[("spark.task.maxFailures", "3")]),
    )
    .await;
    succeeded(&outcome, &out);
    assert!(
        out.contains(
            "job failed: org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 0.0 failed 3 times, most recent failure: Lost task 0.2 in stage 0.0 (TID 2) ("
        ),
        "{out}"
    );
    assert!(
        out.contains("java.lang.RuntimeException: deliberate failure\nDriver stacktrace:"),
        "{out}"
    );
    let m = msgs(&node);
    let lost = m.iter().filter(|l| l.starts_with("Lost task 0.")).count();
    assert_eq!(lost, 3, "{m:#?}");
    assert!(
        m.iter()
            .any(|l| l.starts_with("Job 0 failed: count at AlwaysFails, took ")),
        "{m:#?}"
    );
}

#[actix_rt::test]
async fn failed_attempts_are_retried_and_the_job_succeeds() {
    let node = node().await;
    let (outcome, out) = submit(&node, "test.FailsTwice", &[], conf(&[])).await;
    succeeded(&outcome, &out);
    assert!(out.contains("count 4"), "{out}");
    let m = msgs(&node);
    // Each of the two tasks fails on attempts 0 and 1, succeeds on attempt 2.
    assert_eq!(
        m.iter().filter(|l| l.starts_with("Lost task ")).count(),
        4,
        "{m:#?}"
    );
    assert!(
        m.iter().any(|l| l.starts_with("Starting task 0.2 in stage 0.0")),
        "{m:#?}"
    );
}

#[actix_rt::test]
async fn an_oversized_task_aborts_its_task_set_with_sparks_message() {
    let node = node().await;
    let (outcome, out) = submit(
        &node,
        "test.Oversized",
        &[],
        conf(&[("spark.rpc.message.maxSize", "1")]),
    )
    .await;
    succeeded(&outcome, &out);
    let want = "job failed: org.apache.spark.SparkException: Job aborted due to stage failure: Serialized task 0:0 was ";
    assert!(out.contains(want), "{out}");
    assert!(
        out.contains(
            "bytes, which exceeds max allowed: spark.rpc.message.maxSize (1048576 bytes). Consider increasing spark.rpc.message.maxSize or using broadcast variables for large values."
        ),
        "{out}"
    );
    assert!(out.contains("then count 2"), "{out}");
}

#[actix_rt::test]
async fn a_job_on_zero_partitions_ends_at_once() {
    let node = node().await;
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.txt");
    std::fs::write(&empty, "").unwrap();
    let (outcome, out) = submit(
        &node,
        "test.ZeroPartitions",
        &[empty.to_str().unwrap()],
        conf(&[]),
    )
    .await;
    succeeded(&outcome, &out);
    assert!(out.contains("partitions 0"), "{out}");
    assert!(out.contains("count 0"), "{out}");
    assert!(out.contains(r#"events ["JobStart", "JobEnd"]"#), "{out}");
}

#[actix_rt::test]
async fn delay_scheduling_walks_the_locality_levels() {
    let node = node().await;
    let (outcome, out) = submit(
        &node,
        "test.Locality",
        &[],
        conf(&[
            ("spark.locality.wait", "200ms"),
            ("spark.executor.instances", "2"),
        ]),
    )
    .await;
    succeeded(&outcome, &out);
    assert!(out.contains("count 4"), "{out}");
    for (task, level) in [
        (0, TaskLocality::NodeLocal),
        (1, TaskLocality::RackLocal),
        (2, TaskLocality::Any),
        (3, TaskLocality::ProcessLocal),
    ] {
        assert!(
            out.contains(&format!("task {task} {level}")),
            "task {task} should run {level}:\n{out}"
        );
    }
}

/// Kills the executor at `glob` once a log record says `when`.
async fn kill_when(node: &Node, when: &str, glob: &str) {
    common::eventually(when, || msgs(node).iter().any(|m| m.contains(when))).await;
    node.cluster
        .kill(glob, KillMode::Stop, "test")
        .expect("an executor to kill");
}

#[actix_rt::test]
async fn an_executor_lost_with_tasks_in_flight_has_them_retried() {
    let node = node().await;
    let cluster_node = Arc::new(node);
    let n2 = cluster_node.clone();
    let killer = actix_rt::spawn(async move {
        kill_when(&n2, "Running task 0.0 in stage 0.0", "*/executor-2").await;
    });
    let (outcome, out) = submit(
        &cluster_node,
        "test.SleepingTasks",
        &[],
        conf(&[("spark.executor.instances", "2"), ("spark.executor.cores", "2")]),
    )
    .await;
    within(killer).await.unwrap();
    succeeded(&outcome, &out);
    assert!(out.contains("count 6"), "{out}");
    let m = msgs(&cluster_node);
    // Executor 2's tasks fail with its loss: as Spark logs it for a task the driver knew to
    // be running ("Lost task ... ExecutorLostFailure"), or, when the kill came before their
    // RUNNING status reached the driver (the trigger may be a task of executor 1), as a
    // launching task's loss that is not counted against it. Either way they run again.
    assert!(
        m.iter().any(|l| {
            (l.starts_with("Lost task ") && l.contains("ExecutorLostFailure (executor 2 exited"))
                || l.contains("its executor exited for a reason unrelated to the task")
        }),
        "{m:#?}"
    );
    assert!(
        m.iter()
            .any(|l| l.starts_with("Starting task ") && l.contains(".1 in stage 0.0")),
        "{m:#?}"
    );
}

#[actix_rt::test]
async fn a_fetch_failure_after_an_executor_is_lost_reruns_the_map_stage() {
    let node = Arc::new(node().await);
    let n2 = node.clone();
    let killer = actix_rt::spawn(async move {
        kill_when(&n2, "Running task 0.0 in stage 1.0", "*/executor-2").await;
    });
    let (outcome, out) = submit(
        &node,
        "test.SlowShuffle",
        &[],
        conf(&[("spark.executor.instances", "2"), ("spark.executor.cores", "1")]),
    )
    .await;
    within(killer).await.unwrap();
    dump(&node);
    succeeded(&outcome, &out);
    assert!(out.contains("same as local: true"), "{out}");
    let m = msgs(&node);
    assert!(m.iter().any(|l| l.contains("FetchFailed(")), "{m:#?}");
    assert!(
        m.iter().any(|l| l.starts_with("Resubmitting ShuffleMapStage 0")),
        "{m:#?}"
    );
}
