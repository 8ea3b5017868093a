//! The fault-injection suite, the driver's actors: each killed once in the middle of a
//! running job (after the k-th finished task) comes back as a new incarnation while the job
//! goes on to the exact result of a clean run and the application ends SUCCEEDED; each
//! killed beyond its supervisor's restart intensity takes the driver down, and the
//! application ends as Spark's does when its driver fails: the job is cancelled because the
//! SparkContext was shut down, the user class throws, the AM unregisters FAILED with exit
//! code 15.

mod common;

use common::suite::{clean_pi, kill_plan, kills_plan, result_lines, run, suite_conf, Run, PI};
use sparkyard::runtime::ActorPath;
use sparkyard::runtime::KillMode;
use sparkyard::yarn::records::FinalApplicationStatus;

/// Kills `glob` once after 6 finished tasks and checks the whole story.
async fn killed_once(glob: &str, suffix: &str, mode: KillMode, extra: &[(&str, &str)]) -> Run {
    let r = run(PI, suite_conf(extra), Some(kill_plan(glob, 6, mode))).await;
    r.assert_succeeded();
    r.assert_killed_and_restarted(suffix);
    assert_eq!(
        &result_lines(&r.output),
        clean_pi().await,
        "the result under the kill"
    );
    r
}

/// Kills `glob` twice (after 4 and 6 finished tasks) with at most one restart allowed: the
/// driver's supervisor gives up.
async fn killed_beyond_intensity(glob: &str, extra: &[(&str, &str)]) -> Run {
    let mut all = vec![("spark.sparkyard.supervisor.maxRestarts", "1")];
    all.extend_from_slice(extra);
    let plan = kills_plan(&[(glob, 4, KillMode::Panic), (glob, 6, KillMode::Stop)]);
    let r = run(PI, suite_conf(&all), Some(plan)).await;
    assert_eq!(
        r.final_status(),
        FinalApplicationStatus::Failed,
        "output:\n{}",
        r.output
    );
    let escalated = r.events("supervisor_escalated");
    assert!(
        escalated
            .iter()
            .any(|e| e["actor"].as_str().is_some_and(|a| a.ends_with("/am/driver"))),
        "the driver's supervisor gives up: {escalated:#?}"
    );
    let d = r.diagnostics();
    assert!(
        d.contains("User class threw exception") && d.contains("SparkContext was shut down"),
        "diagnostics: {d}"
    );
    let m = r.msgs();
    assert!(
        m.iter().any(|l| l.contains("exit code 15")
            || l.contains("exitCode: 15")
            || l.contains("(exit code: 15)")),
        "the AM finishes with exit code 15: {:#?}",
        m.iter().filter(|l| l.contains("exit")).collect::<Vec<_>>()
    );
    r
}

#[actix_rt::test]
async fn driver_endpoint_killed_once_reconciles_with_its_executors() {
    let r = killed_once(
        "*/driver/driver-endpoint",
        "/driver/driver-endpoint",
        KillMode::Panic,
        &[],
    )
    .await;
    assert!(
        r.msgs()
            .iter()
            .any(|l| l.starts_with("DriverEndpoint restarted: asking every executor")),
        "the new incarnation asks the executors"
    );
    assert!(r
        .msgs()
        .iter()
        .any(|l| l.starts_with("Reported again to the restarted driver endpoint")));
}

#[actix_rt::test]
async fn driver_endpoint_killed_beyond_intensity_fails_the_application() {
    killed_beyond_intensity("*/driver/driver-endpoint", &[]).await;
}

#[actix_rt::test]
async fn dag_scheduler_killed_once_loses_no_event() {
    let r = killed_once(
        "*/driver/dag-scheduler",
        "/driver/dag-scheduler",
        KillMode::Stop,
        &[],
    )
    .await;
    assert!(r
        .msgs()
        .iter()
        .any(|l| l.starts_with("DAGScheduler restarted with 1 active job(s)")));
}

#[actix_rt::test]
async fn dag_scheduler_killed_beyond_intensity_fails_the_application() {
    killed_beyond_intensity("*/driver/dag-scheduler", &[]).await;
}

#[actix_rt::test]
async fn yarn_scheduler_endpoint_killed_once_keeps_its_am() {
    killed_once(
        "*/driver/yarn-scheduler-endpoint",
        "/driver/yarn-scheduler-endpoint",
        KillMode::Panic,
        &[],
    )
    .await;
}

#[actix_rt::test]
async fn yarn_scheduler_endpoint_killed_beyond_intensity_fails_the_application() {
    killed_beyond_intensity("*/driver/yarn-scheduler-endpoint", &[]).await;
}

#[actix_rt::test]
async fn revive_timer_killed_once_restarts_in_place() {
    killed_once(
        "*/driver/revive-timer",
        "/driver/revive-timer",
        KillMode::Panic,
        &[],
    )
    .await;
}

#[actix_rt::test]
async fn revive_timer_killed_beyond_intensity_fails_the_application() {
    killed_beyond_intensity("*/driver/revive-timer", &[]).await;
}

#[actix_rt::test]
async fn speculation_timer_killed_once_restarts_in_place() {
    killed_once(
        "*/driver/speculation-timer",
        "/driver/speculation-timer",
        KillMode::Stop,
        &[("spark.speculation", "true")],
    )
    .await;
}

#[actix_rt::test]
async fn speculation_timer_killed_beyond_intensity_fails_the_application() {
    killed_beyond_intensity("*/driver/speculation-timer", &[("spark.speculation", "true")]).await;
}

const DYNAMIC: &[(&str, &str)] = &[
    ("spark.dynamicAllocation.enabled", "true"),
    ("spark.dynamicAllocation.schedulerBacklogTimeout", "50ms"),
];

#[actix_rt::test]
async fn allocation_manager_killed_once_keeps_its_target() {
    let r = killed_once(
        "*/driver/executor-allocation-manager",
        "/driver/executor-allocation-manager",
        KillMode::Panic,
        DYNAMIC,
    )
    .await;
    assert!(r
        .msgs()
        .iter()
        .any(|l| l.starts_with("Dynamic allocation: requesting a total of")
            && l.contains("re-sync after a restart")));
}

#[actix_rt::test]
async fn allocation_manager_killed_beyond_intensity_fails_the_application() {
    killed_beyond_intensity("*/driver/executor-allocation-manager", DYNAMIC).await;
}

#[actix_rt::test]
async fn heartbeat_receiver_killed_once_keeps_the_last_seen_times() {
    let r = killed_once(
        "*/driver/heartbeat-receiver",
        "/driver/heartbeat-receiver",
        KillMode::Stop,
        &[],
    )
    .await;
    assert!(r.events("executor_expired").is_empty(), "no executor expired");
}

#[actix_rt::test]
async fn heartbeat_receiver_killed_beyond_intensity_fails_the_application() {
    killed_beyond_intensity("*/driver/heartbeat-receiver", &[]).await;
}

#[actix_rt::test]
async fn listener_bus_killed_once_loses_no_event() {
    let dir = tempfile::tempdir().unwrap();
    let log_dir = dir.path().to_str().unwrap().to_string();
    let r = killed_once(
        "*/driver/listener-bus",
        "/driver/listener-bus",
        KillMode::Panic,
        &[
            ("spark.eventLog.enabled", "true"),
            ("spark.eventLog.dir", &log_dir),
        ],
    )
    .await;
    // The event log holds every task's end, the job's end and the application's end.
    let file = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(Result::ok)
        .find(|e| !e.file_name().to_string_lossy().ends_with(".inprogress"))
        .expect("a finished event log");
    let text = std::fs::read_to_string(file.path()).unwrap();
    let count = |event: &str| {
        text.lines()
            .filter(|l| l.contains(&format!("\"Event\":\"{event}\"")))
            .count()
    };
    let tasks: usize = PI.1[0].parse().unwrap();
    assert_eq!(
        count("SparkListenerTaskEnd"),
        tasks,
        "{} lines",
        text.lines().count()
    );
    assert_eq!(count("SparkListenerJobEnd"), 1);
    assert_eq!(count("SparkListenerApplicationEnd"), 1);
    assert!(r
        .msgs()
        .iter()
        .any(|l| l.starts_with("Listener bus restarted with its")));
}

#[actix_rt::test]
async fn listener_bus_killed_beyond_intensity_fails_the_application() {
    killed_beyond_intensity("*/driver/listener-bus", &[]).await;
}

#[actix_rt::test]
async fn barrier_coordinator_killed_once_mid_sync_lets_the_sync_complete() {
    // Four barrier tasks reach their first sync 300 ms apart: the coordinator is killed
    // while the first waits. The waiting task asks the new incarnation again; the sync
    // completes and the job ends with the clean run's output.
    let node = common::inproc::node().await;
    let conf = suite_conf(&[("spark.executor.cores", "2")]);
    let job = common::inproc::submit(
        &node,
        "sparkyard.examples.BarrierSync",
        &["--tasks", "4", "--rounds", "2", "--ms", "300"],
        conf,
    );
    let kill = async {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let path = loop {
            let waiting = common::inproc::records(&node).into_iter().find(|r| {
                r["msg"].as_str().is_some_and(|m| {
                    m.starts_with(
                        "Barrier sync epoch 0 from Stage 0 (Stage Attempt 0) received update from Task ",
                    ) && m.ends_with("current progress: 1/4.")
                })
            });
            if let Some(r) = waiting {
                break r["actor"].as_str().unwrap().to_string();
            }
            assert!(
                std::time::Instant::now() < deadline,
                "a task waits in the first sync"
            );
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        };
        assert!(path.ends_with("/driver/barrier-coordinator"), "{path}");
        node.cluster
            .kill("*/driver/barrier-coordinator", KillMode::Panic, "fault-suite")
            .expect("the coordinator runs");
        ActorPath::parse(&path).unwrap()
    };
    let ((outcome, out), path) = tokio::join!(job, kill);
    common::inproc::dump(&node);
    common::inproc::succeeded(&outcome, &out);
    assert!(
        out.contains("BarrierSync: round 0: 4 tasks synchronised"),
        "{out}"
    );
    assert!(
        out.contains("BarrierSync: round 1: 4 tasks synchronised"),
        "{out}"
    );
    let records = common::inproc::records(&node);
    assert!(records
        .iter()
        .any(|r| r["event"] == "actor_restarted" && r["actor"] == path.as_str()));
    let m = common::inproc::msgs(&node);
    assert!(
        m.iter()
            .any(|l| l
                .starts_with("BarrierCoordinator restarted with the epochs of 1 barrier stage attempt(s)"))
    );
    // No stage failed: the sync in progress was taken up by the new incarnation.
    assert!(common::inproc::events(&node, "barrier_stage_failed").is_empty());
    assert_eq!(common::inproc::events(&node, "barrier_sync").len(), 2);
}

#[actix_rt::test]
async fn barrier_coordinator_killed_beyond_intensity_fails_the_application() {
    killed_beyond_intensity("*/driver/barrier-coordinator", &[]).await;
}
