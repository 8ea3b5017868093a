//! The fault-injection suite, the YARN side and the ApplicationMaster's actors: each killed
//! once in the middle of a running job (after the k-th finished task) must be recovered
//! the way YARN and Spark recover it while the job goes on to the exact result and the
//! application ends SUCCEEDED; each killed beyond its supervisor's restart intensity must
//! end the application with the final status, exit code and diagnostics YARN would give.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::inproc;
use common::suite::{clean_pi, kill_plan, kills_plan, result_lines, run, run_on, suite_conf, Run, PI};
use serde_json::Value as Json;
use sparkyard::conf::SparkConf;
use sparkyard::runtime::fault::PlanRun;
use sparkyard::runtime::{FaultPlan, KillMode, PartitionMode};
use sparkyard::yarn::records::FinalApplicationStatus;

/// `suite::run` with the plan started before the node is handed over (the Client rides out
/// the ResourceManager's restarts: a report that fails is asked for again).
async fn run_through_rm_restarts(app: (&str, &[&str]), conf: Arc<SparkConf>, plan: FaultPlan) -> Run {
    sparkyard::apps::register_operations();
    let node = inproc::node().await;
    let running = node.cluster.run_plan(plan, "fault-suite");
    follow(node, app, conf, Some(running)).await
}

/// Submits `app` to a fresh node where messages to and from the actors matching
/// `delayed` take 100 ms each way for the first two seconds (so a request to them, or its
/// answer, stays in flight), and kills `target` the moment the run logs a record of an
/// actor whose path contains `actor` and whose message contains `text` — an event of the
/// run, not a moment in time.
async fn run_killing_on_record(
    app: (&str, &[&str]),
    delayed: &str,
    (actor, text): (&str, &str),
    target: &str,
) -> Run {
    sparkyard::apps::register_operations();
    let node = inproc::node().await;
    node.cluster
        .partition(
            delayed,
            PartitionMode::Delay(Duration::from_millis(100)),
            Duration::from_secs(2),
            "fault-suite",
        )
        .expect("a valid glob");
    let (cluster, actor, text, target) = (
        node.cluster.clone(),
        actor.to_string(),
        text.to_string(),
        target.to_string(),
    );
    actix_rt::spawn(async move {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        // Only the records since the last look: each record is read once, rather than all
        // of them copied at every look while the kill must land within the delay.
        let mut read = 0;
        while tokio::time::Instant::now() < deadline {
            let new = cluster.logs().records_since(read);
            read += new.len();
            let seen = new
                .iter()
                .any(|r| actor_of(r).contains(&actor) && msg_of(r).contains(&text));
            if seen {
                let _ = cluster.kill(&target, KillMode::Panic, "fault-suite (on a record)");
                return;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    });
    follow(node, app, suite_conf(&[]), None).await
}

/// Submits `app` and follows it to its end as the Client does (it rides out a restart of
/// the ResourceManager, and says "Failed to contact YARN" when no RM answers any more).
async fn follow(
    node: inproc::Node,
    app: (&str, &[&str]),
    conf: Arc<SparkConf>,
    plan: Option<PlanRun>,
) -> Run {
    run_on(node, app, conf, plan).await
}

/// The records after the first one that matches `pred`.
fn after(records: &[Json], pred: impl Fn(&Json) -> bool) -> &[Json] {
    match records.iter().position(pred) {
        Some(i) => &records[i + 1..],
        None => &[],
    }
}

fn msg_of(r: &Json) -> &str {
    r["msg"].as_str().unwrap_or("")
}

fn actor_of(r: &Json) -> &str {
    r["actor"].as_str().unwrap_or("")
}

/// Waits until some record after the kill of `path` has a message containing `text`: the
/// recovery may still be under way when the application ends (a restarted actor's asks go
/// through the same delays as everything else), and the node runs on while the test
/// awaits. Fails after 20 s of real time with the node's records since the kill.
async fn recovered_with(run: &Run, path: &str, text: &str) {
    let node_of = path.rsplit_once('/').map_or(path, |(node, _)| node);
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let records = run.records();
        let rest = after(&records, |r| {
            r["event"] == "fault_injected" && actor_of(r) == path
        });
        if rest.iter().any(|r| msg_of(r).contains(text)) {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no record '{text}' after the kill of {path} within 20 s; its node's records since:\n{}",
            rest.iter()
                .filter(|r| actor_of(r).starts_with(node_of))
                .map(|r| format!("{} {}", actor_of(r), msg_of(r)))
                .collect::<Vec<_>>()
                .join("\n")
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Kills `target` once after 5 tasks of SparkPi; the app must end SUCCEEDED with the clean
/// result and the victim must come back at its path. Returns the run and the victim's path.
async fn killed_once_restarts_in_place(target: &str, suffix: &str, mode: KillMode) -> (Run, String) {
    let clean = clean_pi().await;
    let r = run(PI, suite_conf(&[]), Some(kill_plan(target, 5, mode))).await;
    r.assert_succeeded();
    let path = r.assert_killed_and_restarted(suffix);
    assert_eq!(&result_lines(&r.output), clean);
    (r, path)
}

#[actix_rt::test]
async fn allocator_killed_once_restarts_with_its_state() {
    let (r, path) = killed_once_restarts_in_place("*/am/allocator", "/am/allocator", KillMode::Panic).await;
    recovered_with(
        &r,
        &path,
        "Allocator restarted with its state: 2 executor(s) running",
    )
    .await;
    // The executors it launched are still the application's: none was replaced.
    assert!(
        !r.msgs().iter().any(|m| m.contains("for executor with ID 3")),
        "no replacement executor was launched"
    );
}

#[actix_rt::test]
async fn reporter_killed_once_restarts_in_place() {
    let (r, path) = killed_once_restarts_in_place("*/am/reporter", "/am/reporter", KillMode::Stop).await;
    recovered_with(&r, &path, "Started progress reporter thread").await;
}

#[actix_rt::test]
async fn launcher_killed_once_restarts_and_asks_for_the_launches_in_flight() {
    let (r, path) = killed_once_restarts_in_place("*/am/launcher", "/am/launcher", KillMode::Panic).await;
    recovered_with(&r, &path, "Container launcher restarted").await;
}

#[actix_rt::test]
async fn am_endpoint_killed_once_registers_again_as_the_same_am() {
    let (r, path) =
        killed_once_restarts_in_place("*/am/am-endpoint", "/am/am-endpoint", KillMode::Panic).await;
    recovered_with(&r, &path, "Registering the AMEndpoint with the driver").await;
    assert!(
        !r.msgs().iter().any(|m| m.contains("Stale executor")),
        "the same AM's executors are not stale"
    );
}

#[actix_rt::test]
async fn resource_manager_killed_once_restarts_and_the_nodes_resynchronise() {
    let clean = clean_pi().await;
    let r = run_through_rm_restarts(PI, suite_conf(&[]), kill_plan("/node/rm", 5, KillMode::Panic)).await;
    r.assert_succeeded();
    let path = r.assert_killed_and_restarted("/node/rm");
    assert_eq!(&result_lines(&r.output), clean);
    recovered_with(
        &r,
        &path,
        "ResourceManager restarted; asking 4 NodeManager(s) to resynchronise",
    )
    .await;
    recovered_with(&r, &path, "re-registered with capability").await;
    // Asks that met the restart were sent again: the reporter saw no failure.
    assert!(
        !r.msgs().iter().any(|m| m.contains("Reporter thread fails")),
        "the reporter counted no failure"
    );
}

#[actix_rt::test]
async fn node_manager_killed_once_recovers_its_containers() {
    let (r, path) = killed_once_restarts_in_place(
        "/node/nm-host2/node-manager",
        "/node/nm-host2/node-manager",
        KillMode::Panic,
    )
    .await;
    recovered_with(&r, &path, "Recovered 1 running container(s) after a restart").await;
}

/// A text file for JavaWordCount (its map stage writes shuffle output on the executors).
fn word_file() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("words.txt");
    let words = [
        "spark", "yarn", "rdd", "stage", "task", "executor", "driver", "shuffle",
    ];
    let mut text = String::new();
    let mut x: u64 = 11;
    for line in 0..600 {
        let mut parts = Vec::new();
        for _ in 0..(line % 7) + 1 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            parts.push(words[(x >> 33) as usize % words.len()]);
        }
        text.push_str(&parts.join(" "));
        text.push('\n');
    }
    std::fs::write(&path, text).expect("the word file is written");
    let path = path.to_string_lossy().into_owned();
    (dir, path)
}

const WORD_COUNT: &str = "org.apache.spark.examples.JavaWordCount";

/// The records of `run` from the kill of a path ending in `suffix` on, and that path.
fn from_kill(run: &Run, suffix: &str) -> (Vec<Json>, String) {
    let records = run.records();
    let at = records
        .iter()
        .position(|r| r["event"] == "fault_injected" && actor_of(r).ends_with(suffix))
        .unwrap_or_else(|| panic!("no kill of {suffix}; plan {:?}", run.plan));
    let path = actor_of(&records[at]).to_string();
    (records[at..].to_vec(), path)
}

/// The first record in `records` whose message contains `text`.
fn find<'a>(records: &'a [Json], text: &str) -> &'a Json {
    records
        .iter()
        .find(|r| msg_of(r).contains(text))
        .unwrap_or_else(|| panic!("no record '{text}'"))
}

fn finished_tasks(records: &[Json]) -> usize {
    records
        .iter()
        .filter(|r| msg_of(r).starts_with("Finished task") && msg_of(r).contains(" ms on "))
        .count()
}

/// The container of the executor at `path` (`.../<container>/executor-N`).
fn container_of(path: &str) -> String {
    path.rsplit('/').nth(1).unwrap_or_default().to_string()
}

#[actix_rt::test]
async fn executor_panicking_exits_50_and_its_lost_shuffle_output_is_recomputed() {
    let (_dir, file) = word_file();
    let app = (WORD_COUNT, &[file.as_str()][..]);
    let clean = run(app, suite_conf(&[]), None).await;
    clean.assert_succeeded();
    // Once both map tasks finished (one on each executor), executor 1 holds map output
    // that the reduce stage needs.
    let r = run(
        app,
        suite_conf(&[]),
        Some(kill_plan("/node/nm-*/container_*/executor-1", 2, KillMode::Panic)),
    )
    .await;
    r.assert_succeeded();
    assert_eq!(result_lines(&r.output), result_lines(&clean.output));
    let (after, path) = from_kill(&r, "/executor-1");
    let container = container_of(&path);
    // A panic is an uncaught exception: the container exits 50 (SparkExitCode
    // UNCAUGHT_EXCEPTION); its NodeManager reports it and the RM completes it.
    find(
        &after,
        &format!("Container {container} transitioned from RUNNING to EXITED with exit code 50"),
    );
    find(
        &after,
        &format!("Container {container} completed with exit status 50"),
    );
    // The driver loses the executor's shuffle files and runs the map stage again.
    find(&after, "Shuffle files lost for executor: 1");
    find(&after, "Resubmitting ShuffleMapStage 0");
    find(&after, "in stage 0.1 (TID");
    assert!(finished_tasks(&after) > 0, "tasks finish after the kill");
}

#[actix_rt::test]
async fn executor_stopped_exits_143_is_counted_and_replaced() {
    let clean = clean_pi().await;
    let r = run(
        PI,
        suite_conf(&[]),
        Some(kill_plan("/node/nm-*/container_*/executor-1", 5, KillMode::Stop)),
    )
    .await;
    r.assert_succeeded();
    assert_eq!(&result_lines(&r.output), clean);
    let (after, path) = from_kill(&r, "/executor-1");
    let container = container_of(&path);
    // A stop kill is SIGTERM's 143: non-zero, so the container failed.
    find(
        &after,
        &format!("Container {container} transitioned from RUNNING to EXITED with exit code 143"),
    );
    find(
        &after,
        &format!("Container {container} completed with exit status 143"),
    );
    // The allocator counts it against the executor failures and asks for a replacement;
    // the driver removes the executor and its running task runs again elsewhere.
    find(
        &after,
        &format!("Container from a bad node: {container} on host: host2. Exit status: 143."),
    );
    find(&after, "Removed executor 1 on host2");
    find(&after, "for executor with ID 3");
    assert!(finished_tasks(&after) > 0, "tasks finish after the kill");
}

#[actix_rt::test]
async fn node_killed_loses_its_containers_as_yarn_reports_a_lost_node() {
    let clean = clean_pi().await;
    // host2 runs executor 1 (the AM is on host1).
    let r = run(
        PI,
        suite_conf(&[]),
        Some(kill_plan("/node/nm-host2", 5, KillMode::Panic)),
    )
    .await;
    r.assert_succeeded();
    assert_eq!(&result_lines(&r.output), clean);
    let (after, _) = from_kill(&r, "/node/nm-host2");
    assert!(
        after
            .iter()
            .any(|r| r["event"] == "actor_failed" && actor_of(r).ends_with("/executor-1")),
        "executor 1 died with its node"
    );
    find(&after, "NodeManager from node host2 re-registered");
    let lost = find(
        &after,
        "is not running on the node that registered: Container released on a *lost* node",
    );
    let container_id = lost["container_id"].as_str().unwrap_or_default().to_string();
    find(
        &after,
        &format!("Container {container_id} completed with exit status -100"),
    );
    // Not the application's fault: not counted, and its tasks are not failures either.
    find(
        &after,
        &format!("Container marked as failed: {container_id} on host: host2. Exit status: -100."),
    );
    assert!(
        !after
            .iter()
            .any(|r| msg_of(r).contains("Container from a bad node")),
        "a lost node's containers are not executor failures"
    );
    find(&after, "for executor with ID 3");
    assert!(finished_tasks(&after) > 0, "tasks finish after the kill");
}

#[actix_rt::test]
async fn application_master_killed_fails_its_attempt_and_the_second_succeeds() {
    let clean = clean_pi().await;
    let r = run(
        PI,
        suite_conf(&[("spark.yarn.maxAppAttempts", "2")]),
        Some(kill_plan("*/am/application-master", 5, KillMode::Panic)),
    )
    .await;
    r.assert_succeeded();
    assert_eq!(&result_lines(&r.output), clean);
    let (after, path) = from_kill(&r, "/am/application-master");
    assert!(path.contains("_01_000001/"), "the first attempt's AM: {path}");
    let failed = find(&after, "AM Container for appattempt_");
    let diag = msg_of(failed);
    assert!(diag.contains("_000001 exited with  exitCode: 50"), "{diag}");
    assert!(diag.contains("injected panic"), "{diag}");
    find(&after, "Starting attempt appattempt_");
    assert!(finished_tasks(&after) > 0, "tasks finish after the kill");
    assert_eq!(
        r.outcome
            .report
            .as_ref()
            .and_then(|rep| rep.current_attempt)
            .map(|a| a.attempt),
        Some(2)
    );
}

#[actix_rt::test]
async fn node_of_the_am_killed_fails_the_attempt_without_counting_it() {
    let clean = clean_pi().await;
    // host1 runs the AM; one attempt is allowed, yet a lost node's attempt does not count.
    // A stop kill: the node shuts its containers down in order, and its NodeManager leaves
    // them to the RM, which learns they were lost when the node registers again.
    let r = run(
        PI,
        suite_conf(&[]),
        Some(kill_plan("/node/nm-host1", 5, KillMode::Stop)),
    )
    .await;
    r.assert_succeeded();
    assert_eq!(&result_lines(&r.output), clean);
    let (after, _) = from_kill(&r, "/node/nm-host1");
    let failed = find(&after, "AM Container for appattempt_");
    assert!(
        msg_of(failed).contains("exited with  exitCode: -100"),
        "{}",
        msg_of(failed)
    );
    assert!(msg_of(failed).contains("Container released on a *lost* node"));
    find(
        &after,
        "The number of failed attempts is 0. The max attempts is 1",
    );
    find(&after, "_01_000001 ended with its node (shutdown); not reported");
    assert_eq!(
        r.outcome
            .report
            .as_ref()
            .and_then(|rep| rep.current_attempt)
            .map(|a| a.attempt),
        Some(2)
    );
}

/// Kills `target` twice with `spark.sparkyard.supervisor.maxRestarts=1`: the second kill
/// is more than the `am` supervisor allows, it escalates, the AM container exits 1, and
/// with one attempt allowed the application fails with YARN's diagnostics.
async fn am_actor_killed_beyond_intensity(target: &str, child: &str) {
    let r = run(
        PI,
        suite_conf(&[("spark.sparkyard.supervisor.maxRestarts", "1")]),
        Some(kills_plan(&[
            (target, 3, KillMode::Panic),
            (target, 6, KillMode::Panic),
        ])),
    )
    .await;
    assert_eq!(
        r.final_status(),
        FinalApplicationStatus::Failed,
        "{}",
        r.diagnostics()
    );
    assert!(r.outcome.verdict.is_err(), "spark-submit exits 1");
    let diag = r.diagnostics();
    assert!(diag.starts_with("Application application_"), "{diag}");
    assert!(
        diag.contains("failed 1 times due to AM Container for appattempt_"),
        "{diag}"
    );
    assert!(diag.contains("_000001 exited with  exitCode: 1\n"), "{diag}");
    assert!(
        diag.contains(&format!(
            "escalated: reached maximum restart intensity: more than 1 restarts within 5s; last: child {child} ended with panic: injected panic"
        )),
        "{diag}"
    );
    assert!(diag.ends_with(". Failing the application."), "{diag}");
    let escalated = r.events("supervisor_escalated");
    assert!(
        escalated
            .iter()
            .any(|e| actor_of(e).ends_with("/am") && e["child"] == child),
        "the am supervisor gave up: {escalated:?}"
    );
    find(&r.records(), "_01_000001 completed with exit status 1 ");
}

#[actix_rt::test]
async fn allocator_killed_beyond_intensity_fails_the_attempt_with_exit_1() {
    am_actor_killed_beyond_intensity("*/am/allocator", "allocator").await;
}

#[actix_rt::test]
async fn reporter_killed_beyond_intensity_fails_the_attempt_with_exit_1() {
    am_actor_killed_beyond_intensity("*/am/reporter", "reporter").await;
}

#[actix_rt::test]
async fn launcher_killed_beyond_intensity_fails_the_attempt_with_exit_1() {
    am_actor_killed_beyond_intensity("*/am/launcher", "launcher").await;
}

#[actix_rt::test]
async fn am_endpoint_killed_beyond_intensity_fails_the_attempt_with_exit_1() {
    am_actor_killed_beyond_intensity("*/am/am-endpoint", "am-endpoint").await;
}

#[actix_rt::test]
async fn application_master_stopped_before_its_last_attempt_is_retried() {
    let clean = clean_pi().await;
    // A stop (SIGTERM) runs Spark's shutdown hook: FAILED, exit code 16; not the last
    // attempt, so it does not unregister and YARN starts the next one, which succeeds.
    let r = run(
        PI,
        suite_conf(&[("spark.yarn.maxAppAttempts", "2")]),
        Some(kill_plan("*/am/application-master", 5, KillMode::Stop)),
    )
    .await;
    r.assert_succeeded();
    assert_eq!(&result_lines(&r.output), clean);
    let (after, path) = from_kill(&r, "/am/application-master");
    assert!(path.contains("_01_000001/"), "the first attempt's AM: {path}");
    let hook = find(
        &after,
        "Final app status: FAILED, exitCode: 16, (reason: Shutdown hook called before final status was reported.)",
    );
    assert_eq!(actor_of(hook), path);
    find(
        &after,
        "Not unregistering: the attempt failed and is not the last",
    );
    // The container exits as a JVM ending on SIGTERM does, and the attempt fails with it.
    let failed = find(&after, "AM Container for appattempt_");
    let diag = msg_of(failed);
    assert!(diag.contains("_000001 exited with  exitCode: 143"), "{diag}");
    assert!(diag.contains("killed by fault-suite"), "{diag}");
    assert!(
        !after
            .iter()
            .any(|r| msg_of(r).starts_with("Unregistering ApplicationMaster with FAILED")),
        "the first attempt did not unregister"
    );
    assert_eq!(
        r.outcome
            .report
            .as_ref()
            .and_then(|rep| rep.current_attempt)
            .map(|a| a.attempt),
        Some(2)
    );
}

#[actix_rt::test]
async fn application_master_killed_beyond_its_attempts_unregisters_failed_from_its_shutdown_hook() {
    // Two attempts: the first AM panics (a crash: no hook, the attempt fails with exit 50);
    // the second is stopped (SIGTERM) on the last attempt, so its shutdown hook unregisters
    // FAILED with Spark's diagnostics: the application is FINISHED, not failed by YARN.
    let r = run(
        PI,
        suite_conf(&[("spark.yarn.maxAppAttempts", "2")]),
        Some(kills_plan(&[
            ("*/am/application-master", 3, KillMode::Panic),
            ("*/am/application-master", 12, KillMode::Stop),
        ])),
    )
    .await;
    assert_eq!(
        r.final_status(),
        FinalApplicationStatus::Failed,
        "{}",
        r.diagnostics()
    );
    assert_eq!(
        r.diagnostics(),
        "Shutdown hook called before final status was reported."
    );
    assert_eq!(
        r.outcome.report.as_ref().map(|rep| rep.state),
        Some(sparkyard::yarn::records::YarnApplicationState::Finished)
    );
    assert_eq!(
        r.outcome.verdict,
        Err(format!(
            "Application {} finished with failed status",
            r.outcome.app_id
        ))
    );
    let records = r.records();
    let first = find(&records, "_000001 exited with  exitCode: 50");
    assert!(msg_of(first).contains("injected panic"));
    find(
        &records,
        "The number of failed attempts is 1. The max attempts is 2",
    );
    let second = records
        .iter()
        .position(|r| {
            r["event"] == "fault_injected" && actor_of(r).contains("_02_000001/am/application-master")
        })
        .unwrap_or_else(|| panic!("the second attempt's AM was not killed; plan {:?}", r.plan));
    let after = &records[second..];
    find(
        after,
        "Final app status: FAILED, exitCode: 16, (reason: Shutdown hook called before final status was reported.)",
    );
    find(
        after,
        "Unregistering ApplicationMaster with FAILED (diag message: Shutdown hook called before final status was reported.)",
    );
    assert!(
        !records
            .iter()
            .any(|r| msg_of(r).contains("failed 2 times due to")),
        "YARN did not fail the application: the AM unregistered"
    );
}

#[actix_rt::test]
async fn executors_killed_beyond_the_failure_cap_end_the_application_with_exit_11() {
    // Spark's cap on executor failures is the intensity of executors: both killed at once
    // with a cap of 2, and the AM gives up (EXIT_MAX_EXECUTOR_FAILURES).
    let r = run(
        PI,
        suite_conf(&[("spark.executor.maxNumFailures", "2")]),
        Some(kill_plan("/node/nm-*/container_*/executor-*", 5, KillMode::Panic)),
    )
    .await;
    assert_eq!(
        r.final_status(),
        FinalApplicationStatus::Failed,
        "{}",
        r.diagnostics()
    );
    assert_eq!(r.diagnostics(), "Max number of executor failures (2) reached");
    let records = r.records();
    find(&records, "Final app status: FAILED, exitCode: 11");
    find(&records, "_01_000001 completed with exit status 11 ");
}

#[actix_rt::test]
async fn node_manager_killed_beyond_intensity_takes_its_node_down_and_up() {
    let clean = clean_pi().await;
    // Four kills of host2's NodeManager in a row: its node supervisor gives up, /node
    // starts the node again, and executor 1's container is lost with it.
    let target = "/node/nm-host2/node-manager";
    let r = run(
        PI,
        suite_conf(&[]),
        Some(kills_plan(&[
            (target, 2, KillMode::Panic),
            (target, 4, KillMode::Panic),
            (target, 6, KillMode::Panic),
            (target, 8, KillMode::Panic),
        ])),
    )
    .await;
    r.assert_succeeded();
    assert_eq!(&result_lines(&r.output), clean);
    let escalated = r.events("supervisor_escalated");
    assert!(
        escalated
            .iter()
            .any(|e| actor_of(e) == "/node/nm-host2" && e["child"] == "node-manager"),
        "{escalated:?}"
    );
    let records = r.records();
    let after = after(&records, |rec| {
        rec["event"] == "supervisor_escalated" && actor_of(rec) == "/node/nm-host2"
    });
    find(after, "child nm-host2 ended (escalated");
    find(after, "NodeManager from node host2 re-registered");
    find(after, "completed with exit status -100");
    find(after, "for executor with ID 3");
    assert!(finished_tasks(after) > 0, "tasks finish after the node came back");
}

/// Kills `target` four times: /node allows three restarts in five seconds, so it gives up,
/// and the whole node ends: the application cannot end at the RM any more, and nothing
/// of it keeps running.
async fn node_root_gives_up(target: &str, child: &str) {
    let r = run_through_rm_restarts(
        PI,
        suite_conf(&[]),
        kills_plan(&[
            (target, 2, KillMode::Panic),
            (target, 4, KillMode::Panic),
            (target, 6, KillMode::Panic),
            (target, 8, KillMode::Panic),
        ]),
    )
    .await;
    assert_eq!(
        r.final_status(),
        FinalApplicationStatus::Failed,
        "{}",
        r.diagnostics()
    );
    assert!(r.outcome.verdict.is_err(), "spark-submit exits 1");
    assert!(
        r.diagnostics()
            .starts_with("Failed to contact YARN for application"),
        "{}",
        r.diagnostics()
    );
    let escalated = r.events("supervisor_escalated");
    assert!(
        escalated
            .iter()
            .any(|e| actor_of(e) == "/node" && e["child"] == child),
        "{escalated:?}"
    );
    let failed = r.events("actor_failed");
    assert!(
        failed
            .iter()
            .any(|e| actor_of(e) == "/node"
                && e["reason"].as_str().is_some_and(|m| m.starts_with("escalated:"))),
        "/node ended escalated"
    );
    let left: Vec<String> = r
        .node
        .cluster
        .actors()
        .into_iter()
        .map(|a| a.path.to_string())
        .filter(|p| p.starts_with("/node"))
        .collect();
    assert!(left.is_empty(), "nothing of the node keeps running: {left:?}");
}

#[actix_rt::test]
async fn resource_manager_killed_beyond_intensity_takes_the_node_down() {
    node_root_gives_up("/node/rm", "rm").await;
}

#[actix_rt::test]
async fn node_killed_beyond_intensity_takes_the_node_down() {
    node_root_gives_up("/node/nm-host4", "nm-host4").await;
}

// ---------------------------------------------------------------- kills inside a request

/// Asserts the run ended SUCCEEDED with the clean result on exactly the two executors it
/// asked for (nothing was lost, so nothing was replaced).
async fn succeeded_without_replacements(r: &Run) {
    r.assert_succeeded();
    assert_eq!(&result_lines(&r.output), clean_pi().await);
    assert!(
        !r.msgs().iter().any(|m| m.contains("for executor with ID 3")),
        "no executor was replaced"
    );
}

#[actix_rt::test]
async fn allocator_killed_with_its_allocate_answer_in_flight_gets_it_again() {
    // The RM grants the first Allocate's two containers, and the allocator dies while the
    // answer is on its way. The new incarnation repeats the response id, and the RM sends
    // the same answer again: the containers are not lost.
    let r = run_killing_on_record(
        PI,
        "/node/rm",
        ("/node/rm", "Allocated 2 container(s)"),
        "*/am/allocator",
    )
    .await;
    succeeded_without_replacements(&r).await;
    let path = r.assert_killed_and_restarted("/am/allocator");
    recovered_with(
        &r,
        &path,
        "Allocator restarted with its state: 0 executor(s) running, 2 container request(s) pending",
    )
    .await;
    recovered_with(
        &r,
        &path,
        "repeats response id 0: sending its answer again (2 container(s) granted",
    )
    .await;
}

#[actix_rt::test]
async fn launcher_killed_with_launches_in_flight_gets_them_again() {
    // A NodeManager started its container and the launcher dies while the answer is on its
    // way; the new launcher asks the allocator for the launches in flight and starts them
    // again, which the NodeManager answers as already started.
    let r = run_killing_on_record(
        PI,
        "/node/nm-*/node-manager",
        ("/node-manager", "_01_000002 by application"),
        "*/am/launcher",
    )
    .await;
    succeeded_without_replacements(&r).await;
    let path = r.assert_killed_and_restarted("/am/launcher");
    recovered_with(&r, &path, "Container launcher restarted").await;
    recovered_with(&r, &path, "launch(es) in flight to the container launcher again").await;
    recovered_with(&r, &path, "is already started").await;
}

#[actix_rt::test]
async fn allocator_killed_with_launches_in_flight_hands_them_over_again() {
    let r = run_killing_on_record(
        PI,
        "/node/nm-*/node-manager",
        ("/node-manager", "_01_000002 by application"),
        "*/am/allocator",
    )
    .await;
    succeeded_without_replacements(&r).await;
    let path = r.assert_killed_and_restarted("/am/allocator");
    recovered_with(&r, &path, "2 launch(es) in flight").await;
    recovered_with(
        &r,
        &path,
        "Handing 2 launch(es) in flight to the container launcher again",
    )
    .await;
    recovered_with(&r, &path, "is already started").await;
}

#[actix_rt::test]
async fn node_manager_killed_before_its_container_started_starts_it_once() {
    // host2's NodeManager dies with its request to start executor 1's container still on
    // its way to the node's supervisor: the container never ran, the new NodeManager
    // forgets it, and the launcher's repeated start runs it.
    let r = run_killing_on_record(
        PI,
        "/node/nm-host2",
        ("/node/nm-host2/node-manager", "Start request for container_"),
        "/node/nm-host2/node-manager",
    )
    .await;
    succeeded_without_replacements(&r).await;
    let path = r.assert_killed_and_restarted("/node/nm-host2/node-manager");
    recovered_with(&r, &path, "was never started; forgetting it").await;
    recovered_with(&r, &path, "Start request for container_").await;
}

#[actix_rt::test]
async fn node_manager_killed_while_starting_a_container_adopts_it() {
    // host2's node supervisor started executor 1's container and the NodeManager dies
    // before it hears so: the new NodeManager finds the container among the node's
    // children, and the launcher's repeated start is answered as already started.
    let r = run_killing_on_record(
        PI,
        "/node/nm-host2",
        ("/node/nm-host2/container_", "started"),
        "/node/nm-host2/node-manager",
    )
    .await;
    succeeded_without_replacements(&r).await;
    let path = r.assert_killed_and_restarted("/node/nm-host2/node-manager");
    recovered_with(&r, &path, "Recovered 1 running container(s) after a restart").await;
    // The launcher sends the start again only once its first ask fails (the NodeManager
    // died with it unanswered); on a fast machine the job can end first (seen: 270 ms after
    // the kill), and then nothing is sent again. If it is sent again, it is answered as
    // started.
    let records = r.records();
    let since_kill = after(&records, |rec| {
        rec["event"] == "fault_injected" && actor_of(rec) == path
    });
    if since_kill
        .iter()
        .any(|rec| actor_of(rec) == path && msg_of(rec).starts_with("Start request for container_"))
    {
        recovered_with(&r, &path, "is already started").await;
    }
}
