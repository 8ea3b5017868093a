//! The fault-injection suite, the submit side: SparkSubmit (`/submit/spark-submit`) and the
//! YARN Client (`/submit/client`) run in the submitting process, so they are killed through
//! the binary with `spark.sparkyard.chaos.plan` (after the k-th finished task of the job).
//!
//! Killed once, each restarts in place with the state its supervisor keeps: the application
//! still ends SUCCEEDED, the exact result is printed (as in a clean run), exit 0, and the
//! records show the injection, the failure, the restart and a task finishing after the kill;
//! there is one application, never a second submission. Killed beyond `/submit`'s restart
//! intensity, the command ends with one line saying the submit side gave up, exit 1. And the
//! Client follows its application through ResourceManager restarts (its asks are retried).

mod common;

use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

use common::process::{config_dir, run_to_end, Out, BIN};
use common::suite::{position_from, result_lines};
use serde_json::Value as Json;

/// SparkPi over 40 slices: a result that is a pure function of the slices, and enough tasks
/// after the 5th for a kill to land while the job runs.
const PI: &[&str] = &["--class", "org.apache.spark.examples.SparkPi", "x.jar", "40"];

/// `sparkyard submit` on the embedded cluster with `conf` and `app`; at most 20 s.
fn submit(log_dir: &Path, deploy_mode: &str, conf: &[&str], app: &[&str]) -> Out {
    let mut cmd = Command::new(BIN);
    cmd.args(["submit", "--config-dir", &config_dir()])
        .args(["--log-dir", log_dir.to_str().unwrap()])
        .args(["--deploy-mode", deploy_mode])
        .args(["--conf", "spark.yarn.report.interval=100ms"]);
    for c in conf {
        cmd.args(["--conf", c]);
    }
    cmd.args(app);
    run_to_end(cmd)
}

/// The clean run's output, once per deploy mode.
fn clean(deploy_mode: &str) -> &'static str {
    static CLUSTER: OnceLock<String> = OnceLock::new();
    static CLIENT: OnceLock<String> = OnceLock::new();
    let cell = if deploy_mode == "cluster" {
        &CLUSTER
    } else {
        &CLIENT
    };
    cell.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let o = submit(dir.path(), deploy_mode, &[], PI);
        assert_eq!(o.code, 0, "{}", o.stderr);
        assert!(o.stdout.contains("Pi is roughly"), "{}", o.stdout);
        o.stdout
    })
}

/// Every record of the log directory, merged in time order by `sparkyard logs --json`.
fn records(log_dir: &Path, extra: &[&str]) -> Vec<Json> {
    let out = Command::new(BIN)
        .args(["logs", "--log-dir", log_dir.to_str().unwrap(), "--json"])
        .args(extra)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Finds the first record from `from` on that satisfies `pred`.
fn find(records: &[Json], from: usize, what: &str, pred: impl Fn(&Json) -> bool) -> usize {
    position_from(records, from, pred).unwrap_or_else(|| panic!("no {what} after record {from}"))
}

/// The story of one kill of `path` in the records: injected, failed with the kill's reason,
/// restarted as incarnation 2, and a task finished after the kill.
fn assert_killed_and_restarted(records: &[Json], path: &str) {
    let at = |e: &'static str| move |r: &Json| r["event"] == e && r["actor"] == path;
    let injected = find(records, 0, "fault_injected", at("fault_injected"));
    let failed = find(records, injected, "actor_failed", at("actor_failed"));
    let reason = records[failed]["reason"].as_str().unwrap_or("");
    assert!(
        reason.starts_with("killed by") || reason.starts_with("panic:"),
        "{reason}"
    );
    let restarted = find(records, failed, "actor_restarted", at("actor_restarted"));
    assert_eq!(records[restarted]["incarnation"], 2);
    find(records, injected, "a task finished after the kill", |r| {
        r["msg"]
            .as_str()
            .is_some_and(|m| m.starts_with("Finished task") && m.contains(" ms on "))
    });
}

/// One application, submitted once.
fn assert_one_submission(log_dir: &Path, records: &[Json]) {
    let apps: Vec<_> = std::fs::read_dir(log_dir.join("apps")).unwrap().collect();
    assert_eq!(apps.len(), 1, "one application");
    let submissions = records
        .iter()
        .filter(|r| {
            r["msg"]
                .as_str()
                .is_some_and(|m| m.starts_with("Submitting application"))
        })
        .count();
    assert_eq!(submissions, 1);
}

fn killed_once(deploy_mode: &str, plan: &str, path: &str) {
    let dir = tempfile::tempdir().unwrap();
    let o = submit(
        dir.path(),
        deploy_mode,
        &[&format!("spark.sparkyard.chaos.plan={plan}")],
        PI,
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(result_lines(&o.stdout), result_lines(clean(deploy_mode)));
    assert!(
        o.stderr.contains(&format!(
            "sparkyard submit: chaos: killed (stop) {path} (incarnation 1) after 5 finished tasks"
        )) || o.stderr.contains(&format!(
            "sparkyard submit: chaos: killed (panic) {path} (incarnation 1) after 5 finished tasks"
        )),
        "{}",
        o.stderr
    );
    let recs = records(dir.path(), &[]);
    assert_killed_and_restarted(&recs, path);
    assert_one_submission(dir.path(), &recs);
    let final_report = recs
        .iter()
        .rev()
        .find(|r| r["msg"].as_str().is_some_and(|m| m.starts_with("Final report")))
        .expect("a final report");
    assert_eq!(final_report["final_status"], "SUCCEEDED");
    // The story, told by the supervision view of the application's logs.
    let app = final_report["app_id"].as_str().unwrap();
    let story = records(dir.path(), &["--app", app, "--supervision"]);
    let events: Vec<&str> = story
        .iter()
        .filter(|r| r["actor"] == path)
        .filter_map(|r| r["event"].as_str())
        .filter(|e| ["fault_injected", "actor_failed", "actor_restarted"].contains(e))
        .collect();
    assert_eq!(
        events,
        ["fault_injected", "actor_failed", "actor_restarted"],
        "{story:?}"
    );
}

#[test]
fn client_killed_once_follows_the_same_application_to_the_right_result() {
    killed_once("cluster", "/submit/client@5", "/submit/client");
}

#[test]
fn client_panicking_once_follows_the_same_application_to_the_right_result() {
    killed_once("cluster", "/submit/client@5:panic", "/submit/client");
}

#[test]
fn spark_submit_killed_once_in_cluster_mode_reconciles_with_its_client() {
    killed_once("cluster", "/submit/spark-submit@5:panic", "/submit/spark-submit");
}

#[test]
fn spark_submit_killed_once_in_client_mode_keeps_the_driver_running() {
    killed_once("client", "/submit/spark-submit@5", "/submit/spark-submit");
}

/// In client mode the driver runs in the submitting process and the AM (ExecutorLauncher)
/// watches its YarnSchedulerEndpoint: a restart of that endpoint is not the driver's end.
#[test]
fn yarn_scheduler_endpoint_killed_once_in_client_mode_is_waited_for_by_the_executor_launcher() {
    killed_once(
        "client",
        "*/driver/yarn-scheduler-endpoint@5",
        "/submit/driver/yarn-scheduler-endpoint",
    );
}

#[test]
fn driver_endpoint_killed_once_in_client_mode_reconciles_with_its_executors() {
    killed_once(
        "client",
        "*/driver/driver-endpoint@5:panic",
        "/submit/driver/driver-endpoint",
    );
}

fn killed_beyond_intensity(deploy_mode: &str, path: &str) {
    let dir = tempfile::tempdir().unwrap();
    let plan = format!("spark.sparkyard.chaos.plan={path}@3,{path}@6");
    let o = submit(
        dir.path(),
        deploy_mode,
        &[
            "spark.sparkyard.supervisor.maxRestarts=1",
            "spark.sparkyard.supervisor.restartPeriod=1min",
            &plan,
        ],
        PI,
    );
    assert_eq!(o.code, 1, "{}", o.stderr);
    let last = o.stderr.lines().last().unwrap_or("");
    assert!(
        last.starts_with("sparkyard submit: error: the submit side gave up: /submit reached maximum restart intensity: more than 1 restarts within 1m"),
        "{last}"
    );
    assert!(
        last.contains(&format!("child {}", path.trim_start_matches("/submit/"))),
        "{last}"
    );
    let recs = records(dir.path(), &[]);
    let escalated = find(&recs, 0, "supervisor_escalated", |r| {
        r["event"] == "supervisor_escalated" && r["actor"] == "/submit"
    });
    let second = find(&recs, 0, "the second failure", |r| {
        r["event"] == "actor_failed" && r["actor"] == path && r["incarnation"] == 2
    });
    assert!(second < escalated);
}

#[test]
fn client_killed_beyond_intensity_ends_submit_with_one_line() {
    killed_beyond_intensity("cluster", "/submit/client");
}

#[test]
fn spark_submit_killed_beyond_intensity_ends_submit_with_one_line() {
    killed_beyond_intensity("cluster", "/submit/spark-submit");
}

#[test]
fn the_client_follows_its_application_through_resource_manager_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let o = submit(
        dir.path(),
        "cluster",
        &["spark.sparkyard.chaos.plan=/node/rm@5,/node/rm@10:panic"],
        PI,
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(result_lines(&o.stdout), result_lines(clean("cluster")));
    for line in [
        "sparkyard submit: chaos: killed (stop) /node/rm (incarnation 1) after 5 finished tasks",
        "sparkyard submit: chaos: killed (panic) /node/rm (incarnation 2) after 10 finished tasks",
    ] {
        assert!(o.stderr.contains(line), "{line}: {}", o.stderr);
    }
    let recs = records(dir.path(), &[]);
    // The Client itself was never restarted: the RM's restarts cost it retries only.
    assert!(!recs
        .iter()
        .any(|r| r["actor"] == "/submit/client" && r["event"] == "actor_failed"));
    assert_one_submission(dir.path(), &recs);
}
