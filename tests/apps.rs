//! The built-in applications through the `sparkyard` binary, as a user runs them: MapCount,
//! SparkPi and JavaWordCount in client and cluster mode on the embedded cluster and in
//! cluster mode on a running `sparkyard node`; the event log a MapCount run writes checked
//! against the schema of the reference log Spark 4.3 wrote (../shared/reference/), with its
//! counts and ids from the run, and JavaWordCount's log with its two stages.

mod common;

use std::collections::{BTreeSet, HashMap};
use std::process::{Command, Output};

use common::apps::{check_pi, check_word_count, word_file};
use common::process::{config_dir, start_node, submit, Node, BIN};
use serde_json::Value;

/// `sparkyard submit` on the embedded cluster.
fn embedded(args: &[&str]) -> Output {
    let logs = tempfile::tempdir().unwrap();
    Command::new(BIN)
        .args([
            "submit",
            "--config-dir",
            &config_dir(),
            "--log-dir",
            logs.path().to_str().unwrap(),
        ])
        .args(["--conf", "spark.yarn.report.interval=100ms"])
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .unwrap()
}

fn on_node(node: &Node, args: &[&str]) -> Output {
    submit(node, &[&["--deploy-mode", "cluster"], args].concat())
        .output()
        .unwrap()
}

/// The run's stdout, after checking it exited 0.
fn ok(out: Output) -> String {
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "stdout:\n{stdout}\nstderr:\n{stderr}");
    stdout.into_owned()
}

const MAP_COUNT: &[&str] = &["--class", "sparkyard.examples.MapCount", "x.jar"];

fn check_map_count(stdout: &str) {
    let lines: Vec<&str> = stdout.lines().collect();
    let at = |l: &str| {
        lines
            .iter()
            .position(|x| *x == l)
            .unwrap_or_else(|| panic!("no line {l:?} in:\n{stdout}"))
    };
    let (p0, p1, count) = (
        at("RDD: 0, Partition: 0, Values: 1,2,3,4,5"),
        at("RDD: 0, Partition: 1, Values: 6,7,8,9,10"),
        at("Count: 10"),
    );
    assert!(p0 < p1 && p1 < count, "{stdout}");
}

#[test]
fn map_count_prints_its_partitions_and_count_in_both_deploy_modes() {
    check_map_count(&ok(embedded(MAP_COUNT)));
    check_map_count(&ok(embedded(
        &[&["--deploy-mode", "cluster"], MAP_COUNT].concat(),
    )));
}

#[test]
fn spark_pi_is_within_a_hundredth_of_pi_in_both_deploy_modes() {
    let args = [
        "--class",
        "org.apache.spark.examples.SparkPi",
        "spark-examples_2.13-4.0.0.jar",
        "100",
    ];
    check_pi(&ok(embedded(&args)));
    check_pi(&ok(embedded(
        &[&["--deploy-mode", "cluster"], &args[..]].concat(),
    )));
}

#[test]
fn java_word_count_agrees_with_a_plain_count_in_both_deploy_modes() {
    let (_dir, path, want) = word_file();
    let args = [
        "--class",
        "org.apache.spark.examples.JavaWordCount",
        "x.jar",
        &path,
    ];
    check_word_count(&ok(embedded(&args)), &want);
    check_word_count(
        &ok(embedded(&[&["--deploy-mode", "cluster"], &args[..]].concat())),
        &want,
    );
}

#[test]
fn the_applications_run_in_cluster_mode_on_a_running_node() {
    let node = start_node();
    check_map_count(&ok(on_node(&node, MAP_COUNT)));
    check_pi(&ok(on_node(
        &node,
        &["--class", "org.apache.spark.examples.SparkPi", "x.jar", "100"],
    )));
    let (_dir, path, want) = word_file();
    let wc = [
        "--class",
        "org.apache.spark.examples.JavaWordCount",
        "x.jar",
        &path,
    ];
    check_word_count(&ok(on_node(&node, &wc)), &want);
}

#[test]
fn a_bad_argument_fails_the_application_with_the_exception() {
    let out = embedded(&[
        "--deploy-mode",
        "cluster",
        "--class",
        "org.apache.spark.examples.SparkPi",
        "x.jar",
        "many",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("java.lang.NumberFormatException: For input string: \"many\""),
        "{stderr}"
    );
}

// ------------------------------------------------------------------ the event log

fn read_log(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// Fields whose keys are data (properties, URLs), not schema.
const DATA_MAPS: &[&str] = &[
    "Spark Properties",
    "System Properties",
    "Hadoop Properties",
    "Metrics Properties",
    "Classpath Entries",
    "Properties",
    "Log Urls",
    "Attributes",
    "Resources",
    "Executor Resource Requests",
    "Task Resource Requests",
    "JVM Information",
];

fn key_paths(v: &Value, prefix: &str, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                let path = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}/{k}")
                };
                out.insert(path.clone());
                if !DATA_MAPS.contains(&k.as_str()) {
                    key_paths(child, &path, out);
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                key_paths(item, &format!("{prefix}[]"), out);
            }
        }
        _ => {}
    }
}

/// Every event type of `ours` also in the reference has the reference's fields, and no
/// others, except the differences the event log documents.
fn check_schema(ours: &[Value]) {
    let reference = read_log(std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/reference/spark-4.3-eventlog-seed-local-cluster.jsonl"
    )));
    let paths_by_event = |log: &[Value]| {
        let mut m: HashMap<String, BTreeSet<String>> = HashMap::new();
        for e in log {
            let name = e["Event"].as_str().unwrap_or("").to_string();
            key_paths(e, "", m.entry(name).or_default());
        }
        m
    };
    let (ours_p, ref_p) = (paths_by_event(ours), paths_by_event(&reference));
    // A documented path covers itself and everything under it.
    let covers = |doc: &str, path: &str| {
        let doc = doc.trim_end_matches("/*");
        path.ends_with(doc) || path.contains(&format!("{doc}[]")) || path.contains(&format!("{doc}/"))
    };
    // The reference ran on local-cluster; on YARN in cluster mode Spark also writes the
    // attempt id.
    let by_mode = [("SparkListenerApplicationStart", "App Attempt ID")];
    let documented = |event: &str, path: &str| {
        by_mode.contains(&(event, path))
            || sparkyard::scheduler::event_log::DOCUMENTED_DIFFERENCES
                .iter()
                .any(|(e, p, _)| (*e == "*" || *e == event) && p.split(", ").any(|p| covers(p, path)))
    };
    let mut compared = 0;
    for (event, ours) in &ours_p {
        let Some(theirs) = ref_p.get(event) else { continue };
        compared += 1;
        let missing: Vec<&String> = theirs
            .difference(ours)
            .filter(|p| !documented(event, p))
            .collect();
        let extra: Vec<&String> = ours
            .difference(theirs)
            .filter(|p| !documented(event, p))
            .collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "{event}: missing {missing:?}, extra {extra:?}"
        );
    }
    assert!(compared >= 10, "only {compared} event types compared");
}

fn count(log: &[Value], event: &str) -> usize {
    log.iter().filter(|e| e["Event"] == event).count()
}

#[test]
fn the_event_log_of_map_count_has_sparks_schema_and_the_runs_counts() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let conf = |k: &str, v: &str| format!("{k}={v}");
    let (enabled, at) = (
        conf("spark.eventLog.enabled", "true"),
        conf("spark.eventLog.dir", d),
    );
    let stdout = ok(embedded(
        &[
            &["--deploy-mode", "cluster", "--conf", &enabled, "--conf", &at],
            MAP_COUNT,
        ]
        .concat(),
    ));
    check_map_count(&stdout);
    let files: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let name = files[0].file_name().unwrap().to_str().unwrap().to_string();
    assert!(
        name.starts_with("application_") && name.ends_with("_1"),
        "{name}: the app id and attempt 1"
    );
    let log = read_log(&files[0]);
    assert_eq!(log[0]["Event"], "SparkListenerLogStart");
    assert_eq!(log[0]["Spark Version"], "4.3.0");
    check_schema(&log);
    assert_eq!(count(&log, "SparkListenerJobStart"), 1);
    assert_eq!(count(&log, "SparkListenerStageSubmitted"), 1);
    assert_eq!(count(&log, "SparkListenerTaskStart"), 2);
    let ends: Vec<&Value> = log
        .iter()
        .filter(|e| e["Event"] == "SparkListenerTaskEnd")
        .collect();
    assert_eq!(ends.len(), 2);
    assert!(ends.iter().all(|e| e["Task End Reason"]["Reason"] == "Success"));
    let job_end = log.iter().find(|e| e["Event"] == "SparkListenerJobEnd").unwrap();
    assert_eq!(job_end["Job Result"]["Result"], "JobSucceeded");
    let start = log
        .iter()
        .find(|e| e["Event"] == "SparkListenerApplicationStart")
        .unwrap();
    assert_eq!(format!("{}_1", start["App ID"].as_str().unwrap()), name);
    assert_eq!(start["App Attempt ID"], "1");
    assert_eq!(count(&log, "SparkListenerApplicationEnd"), 1);
    assert!(count(&log, "SparkListenerExecutorAdded") >= 1);
}

#[test]
fn the_event_log_of_java_word_count_shows_two_stages() {
    let dir = tempfile::tempdir().unwrap();
    let (_words, path, want) = word_file();
    let at = format!("spark.eventLog.dir=file:{}", dir.path().to_str().unwrap());
    let stdout = ok(embedded(&[
        "--conf",
        "spark.eventLog.enabled=true",
        "--conf",
        &at,
        "--class",
        "org.apache.spark.examples.JavaWordCount",
        "x.jar",
        &path,
    ]));
    check_word_count(&stdout, &want);
    let file = std::fs::read_dir(dir.path())
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let log = read_log(&file);
    check_schema(&log);
    let completed: Vec<&Value> = log
        .iter()
        .filter(|e| e["Event"] == "SparkListenerStageCompleted")
        .collect();
    assert_eq!(completed.len(), 2);
    let job = log
        .iter()
        .find(|e| e["Event"] == "SparkListenerJobStart")
        .unwrap();
    assert_eq!(job["Stage IDs"], serde_json::json!([0, 1]));
}
