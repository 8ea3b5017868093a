//! The driver's loops end to end, in-process on the embedded four-node cluster with short
//! configured intervals: speculation (one straggler gets exactly one copy, on another
//! executor, and the job ends with the first attempt to finish; none with speculation
//! off), dynamic allocation (a 200-task SleepTasks job ramps up 1, 2, 4, ... executors, caps
//! at maxExecutors and is released to minExecutors after the job), and executor liveness
//! (an executor whose messages are dropped is expired by the HeartbeatReceiver, killed
//! through the AM, and its tasks rerun elsewhere with the right result), and locality-aware
//! executor requests (a stage whose tasks prefer one host gets its executors there).

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::inproc::{conf, dump, events, msgs, node, records, submit, succeeded};
use serde_json::Value as Json;
use sparkyard::context::{AppEnv, AppError, SparkContext};
use sparkyard::rdd::Value;
use sparkyard::runtime::PartitionMode;

fn str_field(r: &Json, k: &str) -> String {
    match &r[k] {
        Json::String(s) => s.clone(),
        Json::Null => String::new(),
        other => other.to_string(),
    }
}

fn u64_field(r: &Json, k: &str) -> u64 {
    r[k].as_u64()
        .or_else(|| r[k].as_str().and_then(|s| s.parse().ok()))
        .unwrap_or_else(|| panic!("no number {k} in {r}"))
}

/// "Finished task 0.0 in stage 0.0 (TID 0) in 302 ms on host3 ..." → 302.
fn finished_ms(line: &str) -> Option<u64> {
    line.split(" in ").nth(2)?.split(" ms").next()?.parse().ok()
}

const SLEEP_TASKS: &str = "sparkyard.examples.SleepTasks";

#[actix_rt::test]
async fn a_straggler_gets_exactly_one_speculative_copy_on_another_executor() {
    let node = node().await;
    // Four tasks on 2 executors of 1 core: three of 100 ms, the last of 1500 ms. After 3 of
    // 4 succeeded (quantile 0.9 → floor(3.6) = 3) the threshold is max(3 × 100, 100) ms.
    let (outcome, out) = submit(
        &node,
        SLEEP_TASKS,
        &["--durations", "100,100,100,1500"],
        conf(&[("spark.executor.instances", "2"), ("spark.speculation", "true")]),
    )
    .await;
    dump(&node);
    succeeded(&outcome, &out);
    assert!(out.contains("SleepTasks: job 0: 4 tasks"), "{out}");

    let marked = events(&node, "task_speculatable");
    assert_eq!(marked.len(), 1, "{marked:#?}");
    assert_eq!(u64_field(&marked[0], "task_index"), 3);
    // The threshold is 3 × the median of the three finished tasks' durations.
    let mut durations: Vec<u64> = msgs(&node)
        .iter()
        .filter(|l| l.starts_with("Finished task") && l.contains(" in stage 0.0 "))
        .filter_map(|l| finished_ms(l))
        .take(3)
        .collect();
    durations.sort_unstable();
    assert_eq!(durations.len(), 3, "{durations:?}");
    let threshold = u64_field(&marked[0], "threshold_ms");
    assert_eq!(threshold, 3 * durations[1], "durations {durations:?}");
    assert!(threshold >= 300);
    assert!(u64_field(&marked[0], "runtime_ms") > threshold);

    let launched = events(&node, "speculative_launch");
    assert_eq!(launched.len(), 1, "{launched:#?}");
    assert_eq!(u64_field(&launched[0], "task_index"), 3);
    let copy_exec = str_field(&launched[0], "executor_id");
    // The original attempt (3.0) ran elsewhere.
    let m = msgs(&node);
    let original = m
        .iter()
        .find(|l| l.starts_with("Starting task 3.0 in stage 0.0"))
        .expect("task 3.0 started");
    assert!(
        !original.contains(&format!("executor {copy_exec},")),
        "copy on {copy_exec}, original: {original}"
    );
    // The original finished first; the copy was killed as "another attempt succeeded".
    assert!(
        m.iter().any(|l| l.starts_with("Killing attempt 1 for task 3.1")),
        "{:#?}",
        m.iter().filter(|l| l.contains("task 3.")).collect::<Vec<_>>()
    );
    assert!(m.iter().any(|l| l.starts_with("Finished task 3.0 in stage 0.0")));
    assert!(!m.iter().any(|l| l.starts_with("Finished task 3.1 in stage 0.0")));
}

#[actix_rt::test]
async fn without_speculation_no_copy_is_launched() {
    let node = node().await;
    let (outcome, out) = submit(
        &node,
        SLEEP_TASKS,
        &["--durations", "50,50,50,600"],
        conf(&[("spark.executor.instances", "2")]),
    )
    .await;
    succeeded(&outcome, &out);
    assert!(events(&node, "task_speculatable").is_empty());
    assert!(events(&node, "speculative_launch").is_empty());
    let execs: BTreeSet<String> = msgs(&node)
        .iter()
        .filter(|l| l.starts_with("Starting task 3."))
        .cloned()
        .collect();
    assert_eq!(execs.len(), 1, "{execs:#?}");
}

#[actix_rt::test]
async fn dynamic_allocation_ramps_up_caps_at_max_and_releases_idle_executors() {
    let node = node().await;
    let (outcome, out) = submit(
        &node,
        SLEEP_TASKS,
        &["--tasks", "200", "--ms", "25", "--linger", "1500ms"],
        conf(&[
            ("spark.dynamicAllocation.enabled", "true"),
            ("spark.dynamicAllocation.minExecutors", "0"),
            ("spark.dynamicAllocation.maxExecutors", "6"),
            ("spark.dynamicAllocation.schedulerBacklogTimeout", "100ms"),
            (
                "spark.dynamicAllocation.sustainedSchedulerBacklogTimeout",
                "100ms",
            ),
            ("spark.dynamicAllocation.executorIdleTimeout", "300ms"),
            // Releases reach YARN at the AM's next heartbeat (3 s by default).
            ("spark.yarn.scheduler.heartbeat.interval-ms", "100ms"),
        ]),
    )
    .await;
    dump(&node);
    succeeded(&outcome, &out);
    assert!(out.contains("SleepTasks: job 0: 200 tasks"), "{out}");

    // The target: 0 → 1 → 3 → 6 (1, 2, then 3 of the 4 the ramp-up would add, capped at
    // maxExecutors), then down to what the tasks need and to minExecutors 0 after the job.
    let targets: Vec<(u64, u64, String)> = events(&node, "executor_target")
        .iter()
        .map(|r| {
            (
                u64_field(r, "previous"),
                u64_field(r, "target"),
                str_field(r, "reason"),
            )
        })
        .collect();
    let ups: Vec<(u64, u64)> = targets
        .iter()
        .filter(|t| t.2 == "backlog")
        .map(|t| (t.0, t.1))
        .collect();
    assert_eq!(ups, vec![(0, 1), (1, 3), (3, 6)], "{targets:#?}");
    assert!(targets.iter().all(|t| t.1 <= 6));
    let last = targets.last().expect("targets");
    assert_eq!((last.1, last.2.as_str()), (0, "not needed"), "{targets:#?}");
    for r in events(&node, "executor_target")
        .iter()
        .filter(|r| str_field(r, "reason") == "backlog")
    {
        // Needed: ceil((pending + running) / 1 task per executor) ≥ the target asked for.
        let needed = u64_field(r, "needed");
        assert_eq!(
            needed,
            u64_field(r, "pending_tasks") + u64_field(r, "running_tasks")
        );
        assert!(needed >= u64_field(r, "target"), "{r}");
    }

    // Six executors came, and each one was released once idle.
    let m = msgs(&node);
    let registered = m.iter().filter(|l| l.starts_with("Registered executor")).count();
    assert_eq!(registered, 6, "{:#?}", targets);
    let removed: BTreeSet<String> = events(&node, "executor_idle_remove")
        .iter()
        .map(|r| {
            assert!(u64_field(r, "idle_ms") >= 300, "{r}");
            str_field(r, "executor_id")
        })
        .collect();
    assert_eq!(removed.len(), 6, "{removed:?}");

    // The ResourceManager's counts: at most the AM and 6 executors at once, and only the AM
    // left before the application ended.
    let rm_counts: Vec<u64> = records(&node)
        .iter()
        .filter(|r| r["actor"].as_str() == Some("/node/rm") && !r["running_containers"].is_null())
        .map(|r| u64_field(r, "running_containers"))
        .collect();
    assert_eq!(rm_counts.iter().max(), Some(&7), "{rm_counts:?}");
    let released_to_am_only = records(&node).iter().any(|r| {
        r["actor"].as_str() == Some("/node/rm")
            && r["running_containers"].as_u64() == Some(1)
            && str_field(r, "msg").contains("exit status -100")
    });
    assert!(released_to_am_only, "{rm_counts:?}");
}

#[actix_rt::test]
async fn an_executor_that_stops_heartbeating_is_expired_and_its_tasks_rerun_elsewhere() {
    let node = node().await;
    // Executor 1 is cut off once it runs a task: its heartbeats (and status updates) are
    // dropped, so after 400 ms of silence the HeartbeatReceiver expires it.
    let watcher = {
        let cluster = node.cluster.clone();
        actix_rt::spawn(async move {
            for _ in 0..2_000 {
                let running = cluster.logs().records().iter().any(|r| {
                    r["executor_id"].as_str() == Some("1")
                        && r["msg"].as_str().is_some_and(|m| m.starts_with("Running task"))
                });
                if running {
                    cluster
                        .partition(
                            "*/executor-1",
                            PartitionMode::Drop,
                            Duration::from_secs(20),
                            "test",
                        )
                        .expect("a valid glob");
                    return true;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            false
        })
    };
    let (outcome, out) = submit(
        &node,
        SLEEP_TASKS,
        &["--tasks", "8", "--ms", "300"],
        conf(&[
            ("spark.executor.instances", "2"),
            ("spark.executor.heartbeatInterval", "50ms"),
            ("spark.network.timeout", "400ms"),
            ("spark.network.timeoutInterval", "50ms"),
            ("spark.rpc.askTimeout", "30s"),
            ("spark.yarn.scheduler.heartbeat.interval-ms", "100ms"),
        ]),
    )
    .await;
    dump(&node);
    assert!(watcher.await.unwrap(), "executor 1 never ran a task");
    node.cluster.heal_partitions();
    succeeded(&outcome, &out);
    assert!(out.contains("SleepTasks: job 0: 8 tasks"), "{out}");

    let expired = events(&node, "executor_expired");
    assert_eq!(expired.len(), 1, "{expired:#?}");
    assert_eq!(str_field(&expired[0], "executor_id"), "1");
    assert_eq!(u64_field(&expired[0], "timeout_ms"), 400);
    assert!(u64_field(&expired[0], "silent_ms") > 400);
    assert!(str_field(&expired[0], "actor").ends_with("/driver/heartbeat-receiver"));

    let m = msgs(&node);
    assert!(
        m.iter()
            .any(|l| l.starts_with("Removed executor 1 on")
                && l.contains("Executor heartbeat timed out after")),
        "{:#?}",
        m.iter().filter(|l| l.contains("executor 1")).collect::<Vec<_>>()
    );
    // A task that was running on executor 1 ran again on another executor and finished.
    let lost: Vec<String> = records(&node)
        .iter()
        .filter(|r| {
            r["msg"].as_str().is_some_and(|m| m.starts_with("Starting task"))
                && r["msg"].as_str().is_some_and(|m| m.contains("executor 1,"))
        })
        .filter_map(|r| {
            let m = r["msg"].as_str()?;
            let name = m.strip_prefix("Starting task ")?.split(' ').next()?;
            Some(name.split('.').next()?.to_string())
        })
        .collect();
    assert!(!lost.is_empty());
    let rerun = lost.iter().any(|index| {
        m.iter().any(|l| {
            l.starts_with(&format!("Finished task {index}."))
                && !l.starts_with(&format!("Finished task {index}.0"))
        })
    });
    assert!(
        rerun,
        "{lost:?}: {:#?}",
        m.iter()
            .filter(|l| l.starts_with("Finished task"))
            .collect::<Vec<_>>()
    );
    // killAndReplaceExecutor: the target did not drop, so YARN gave a replacement.
    assert!(m
        .iter()
        .any(|l| l.starts_with("Registered executor") && l.contains("with ID 3")));
}

/// Four tasks of 300 ms whose partitions all prefer host4.
fn prefer_host4(env: &AppEnv) -> Result<(), AppError> {
    let sc = SparkContext::new(env)?;
    let n = sc
        .make_rdd(
            (0..4)
                .map(|i| (Value::I64(i), vec!["host4".to_string()]))
                .collect(),
        )
        .map("sleep_ms", vec![Value::I64(300)])
        .count()?;
    env.println(format!("count {n}"));
    sc.stop();
    Ok(())
}

#[actix_rt::test]
async fn a_stage_whose_tasks_prefer_a_host_gets_its_executors_on_that_host() {
    sparkyard::apps::register_application("test.PreferHost4", prefer_host4);
    let node = node().await;
    let (outcome, out) = submit(
        &node,
        "test.PreferHost4",
        &[],
        conf(&[
            ("spark.dynamicAllocation.enabled", "true"),
            ("spark.dynamicAllocation.minExecutors", "0"),
            ("spark.dynamicAllocation.maxExecutors", "4"),
            ("spark.dynamicAllocation.schedulerBacklogTimeout", "50ms"),
            ("spark.dynamicAllocation.sustainedSchedulerBacklogTimeout", "50ms"),
            ("spark.yarn.scheduler.heartbeat.interval-ms", "100ms"),
        ]),
    )
    .await;
    dump(&node);
    succeeded(&outcome, &out);
    assert!(out.contains("count 4"), "{out}");

    // Each raised target carried the stage's hints: 4 tasks with a preference, all for host4.
    let targets = events(&node, "executor_target");
    assert!(!targets.is_empty());
    for r in targets.iter().filter(|r| str_field(r, "reason") == "backlog") {
        assert_eq!(u64_field(r, "locality_aware_tasks"), 4, "{r}");
        assert_eq!(str_field(r, "host_to_local_task_count"), "host4:4", "{r}");
    }
    // The AM's placement strategy asked YARN for containers on host4, and got them there
    // (an any-host request would have gone to host2, the node with the most room).
    let m = msgs(&node);
    assert!(
        m.iter()
            .any(|l| l == "Submitted container request for host host4."),
        "{:#?}",
        m.iter()
            .filter(|l| l.contains("container request"))
            .collect::<Vec<_>>()
    );
    let hosts: Vec<String> = records(&node)
        .iter()
        .filter(|r| {
            r["msg"]
                .as_str()
                .is_some_and(|m| m.starts_with("Registered executor"))
        })
        .map(|r| str_field(r, "host"))
        .collect();
    assert!(!hosts.is_empty());
    assert!(hosts.iter().all(|h| h == "host4"), "{hosts:?}");
}
