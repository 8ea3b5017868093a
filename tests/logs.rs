//! Structured logs end to end: a cluster writes its records under a log directory (per node
//! and per container), and `sparkyard logs` reads that directory back and filters it.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::*;
use serde_json::Value;
use sparkyard::logs::LogIds;
use sparkyard::runtime::{ChildSpec, Clock, Cluster, KillMode, Strategy, SupervisorSpec};

const APP: &str = "application_1700000000000_0001";
const AM_CONTAINER: &str = "container_1700000000000_0001_01_000001";

/// Runs a small tree shaped like a node with one container, crashes the allocator inside
/// the container, and shuts down; the records land under `dir`.
async fn write_run(dir: &Path) -> String {
    sparkyard::logs::init_for_tests();
    let cluster = Cluster::builder()
        .clock(Clock::manual())
        .log_dir(dir)
        .capture_logs(true)
        .node("host0")
        .build()
        .unwrap();
    let journal = Journal::default();
    let j = journal.clone();
    let container = ChildSpec::supervisor(AM_CONTAINER, move || {
        SupervisorSpec::new(Strategy::OneForOne)
            .child(probe_spec("am", &j))
            .child(probe_spec("allocator", &j))
    })
    .ids(LogIds::default().app(APP).attempt(1).container(AM_CONTAINER));
    let j = journal.clone();
    let nm = ChildSpec::supervisor("nm-host1", move || {
        SupervisorSpec::new(Strategy::OneForOne).child(container.clone())
    })
    .ids(LogIds::default().node("host1"));
    let spec = SupervisorSpec::new(Strategy::OneForOne)
        .child(probe_spec("rm", &j))
        .child(nm);
    cluster.start_root("node", spec).unwrap();
    eventually("all started", || journal.lines().len() == 3).await;
    let allocator = format!("/node/nm-host1/{AM_CONTAINER}/allocator");
    cluster.kill(&allocator, KillMode::Panic, "logs-test").unwrap();
    eventually("allocator restarted", || {
        cluster.registry().incarnation(&path(&allocator)) == Some(2)
    })
    .await;
    cluster.shutdown(Duration::from_secs(5)).await;
    cluster.id().to_string()
}

fn read_jsonl(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{}: bad line {l}: {e}", path.display())))
        .collect()
}

#[actix_rt::test]
async fn records_are_written_per_node_and_per_container() {
    let dir = tempfile::tempdir().unwrap();
    let cluster_id = write_run(dir.path()).await;

    let node0 = read_jsonl(&dir.path().join("nodes/host0.jsonl"));
    let node1 = read_jsonl(&dir.path().join("nodes/host1.jsonl"));
    let container = read_jsonl(
        &dir.path()
            .join("apps")
            .join(APP)
            .join(AM_CONTAINER)
            .join("sparkyard.jsonl"),
    );
    assert!(node0
        .iter()
        .any(|r| r["actor"] == "/node/rm" && r["event"] == "actor_started"));
    assert!(node1.iter().all(|r| r["node"] == "host1"));
    assert!(node1.iter().any(|r| r["actor"] == "/node/nm-host1"));
    // Inside the container every record carries the app, attempt and container ids.
    for r in &container {
        assert_eq!(r["app_id"], APP);
        assert_eq!(r["attempt"], 1);
        assert_eq!(r["container_id"], AM_CONTAINER);
        assert_eq!(r["node"], "host1");
        assert_eq!(r["cluster"], cluster_id.as_str());
    }
    // The schema's key order.
    let first = container[0].as_object().unwrap();
    let keys: Vec<&str> = first.keys().map(String::as_str).take(8).collect();
    assert_eq!(
        keys,
        [
            "ts",
            "level",
            "msg",
            "cluster",
            "node",
            "actor",
            "actor_type",
            "incarnation"
        ]
    );
    // The story of the kill is in the container's file, in order.
    let allocator = format!("/node/nm-host1/{AM_CONTAINER}/allocator");
    let story: Vec<String> = container
        .iter()
        .filter(|r| r["actor"] == allocator.as_str())
        .filter_map(|r| r["event"].as_str().map(|e| format!("{e}#{}", r["incarnation"])))
        .collect();
    assert_eq!(
        story,
        [
            "actor_started#1",
            "fault_injected#1",
            "actor_failed#1",
            "actor_restarted#2",
            "actor_stopped#2"
        ]
    );
    let ts = container[0]["ts"].as_str().unwrap();
    assert!(humantime::parse_rfc3339(ts).is_ok(), "ts {ts} is RFC 3339");
}

fn sparkyard(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_sparkyard"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[actix_rt::test]
async fn sparkyard_logs_reads_and_filters_a_run() {
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path()).await;
    let d = dir.path().to_str().unwrap();

    let (code, out, err) = sparkyard(&["logs", "--log-dir", d, "--app", APP]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(&format!("Container: {AM_CONTAINER} on host1")),
        "{out}"
    );
    assert!(out.contains("LogType:sparkyard.jsonl"));
    assert!(
        out.contains("injected panic (fault injection by logs-test)"),
        "{out}"
    );
    assert!(
        !out.contains("/node/rm#"),
        "the RM's records are not the app's: {out}"
    );

    let (code, out, _) = sparkyard(&["logs", "--log-dir", d, "--actor", "*/allocator", "--json"]);
    assert_eq!(code, 0);
    let records: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(records.len(), 5);
    assert!(records
        .iter()
        .all(|r| r["actor"].as_str().unwrap().ends_with("/allocator")));

    let (_, out, _) = sparkyard(&["logs", "--log-dir", d, "--level", "warn", "--json"]);
    let levels: Vec<String> = out
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["level"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(levels, ["WARN", "ERROR"], "the injection and the failure");

    let (_, out, _) = sparkyard(&["logs", "--log-dir", d, "--grep", "restarted as incarnation 2"]);
    assert_eq!(out.matches("restarted as incarnation 2").count(), 1, "{out}");

    let (code, _, err) = sparkyard(&["logs", "--log-dir", d, "--level", "loud"]);
    assert_eq!(code, 1);
    assert_eq!(err.lines().count(), 1, "{err}");

    // A line that is not JSON is reported with file and line, and skipped.
    let node_file = dir.path().join("nodes/host0.jsonl");
    let mut text = std::fs::read_to_string(&node_file).unwrap();
    text.push_str("this is not json\n");
    std::fs::write(&node_file, text).unwrap();
    let (code, out, err) = sparkyard(&["logs", "--log-dir", d]);
    assert_eq!(code, 0);
    assert!(out.contains("Node: host0"));
    assert!(
        err.contains("host0.jsonl:") && err.contains("skipped: not a JSON record"),
        "{err}"
    );
}

/// (The two writers below use the real clock: the records' times order the story.)
///
/// A second process sharing the log directory: its own cluster id, a submit side whose
/// client is killed; none of it concerns the first run's application.
async fn write_other_submit(dir: &Path) {
    let cluster = Cluster::builder()
        .id("submit-other")
        .log_dir(dir)
        .node("host0")
        .build()
        .unwrap();
    let journal = Journal::default();
    let spec = SupervisorSpec::new(Strategy::OneForOne).child(probe_spec("client", &journal));
    cluster.start_root("submit", spec).unwrap();
    eventually("client started", || journal.lines().len() == 1).await;
    cluster
        .kill("/submit/client", KillMode::Stop, "other-test")
        .unwrap();
    eventually("client restarted", || {
        cluster.registry().incarnation(&path("/submit/client")) == Some(2)
    })
    .await;
    cluster.shutdown(Duration::from_secs(5)).await;
}

/// The run of [`write_run`] with a submit side in the same process (cluster) whose client
/// is killed too, and a kill of the RM while the application runs.
async fn write_supervision_run(dir: &Path) {
    sparkyard::logs::init_for_tests();
    let cluster = Cluster::builder()
        .id("submit-same")
        .log_dir(dir)
        .node("host0")
        .build()
        .unwrap();
    let journal = Journal::default();
    let j = journal.clone();
    let container = ChildSpec::supervisor(AM_CONTAINER, move || {
        SupervisorSpec::new(Strategy::OneForOne).child(probe_spec("allocator", &j))
    })
    .ids(LogIds::default().app(APP).attempt(1).container(AM_CONTAINER));
    let spec = SupervisorSpec::new(Strategy::OneForOne)
        .child(probe_spec("rm", &journal))
        .child(container);
    cluster.start_root("node", spec).unwrap();
    let submit = SupervisorSpec::new(Strategy::OneForOne).child(probe_spec("client", &journal));
    cluster.start_root("submit", submit).unwrap();
    eventually("all started", || journal.lines().len() == 3).await;
    let steps = [
        (format!("/node/{AM_CONTAINER}/allocator"), KillMode::Panic),
        ("/node/rm".to_string(), KillMode::Stop),
        ("/submit/client".to_string(), KillMode::Stop),
    ];
    for (victim, mode) in &steps {
        cluster.kill(victim, *mode, "supervision-test").unwrap();
        eventually("restarted", || {
            cluster.registry().incarnation(&path(victim)) == Some(2)
        })
        .await;
    }
    cluster.shutdown(Duration::from_secs(5)).await;
}

#[actix_rt::test]
async fn supervision_tells_what_was_killed_what_noticed_and_what_came_back() {
    let dir = tempfile::tempdir().unwrap();
    write_supervision_run(dir.path()).await;
    write_other_submit(dir.path()).await;
    let d = dir.path().to_str().unwrap();
    let allocator = format!("/node/{AM_CONTAINER}/allocator");

    // Everything, in time order, one readable line each.
    let (code, out, err) = sparkyard(&["logs", "--log-dir", d, "--supervision"]);
    assert_eq!(code, 0, "{err}");
    let words: Vec<(String, String)> = out
        .lines()
        .map(|l| {
            let mut w = l.split_whitespace().skip(1);
            (w.next().unwrap().to_string(), w.next().unwrap().to_string())
        })
        .collect();
    let expected = |a: &str| {
        vec![
            ("fault_injected".to_string(), format!("{a}#1")),
            ("actor_failed".to_string(), format!("{a}#1")),
            (
                "supervisor_decision".to_string(),
                format!("{}#1", a.rsplit_once('/').unwrap().0),
            ),
            ("actor_restarted".to_string(), format!("{a}#2")),
        ]
    };
    let mut all = expected(&allocator);
    all.extend(expected("/node/rm"));
    all.extend(expected("/submit/client"));
    all.extend(expected("/submit/client"));
    assert_eq!(words, all, "{out}");
    assert!(
        out.contains("failed: panic: injected panic (fault injection by supervision-test)"),
        "{out}"
    );
    assert!(
        out.contains("child allocator ended (panic: injected panic"),
        "{out}"
    );

    // One application: its own records, the node's while it ran, its submit side; not the
    // other process's submit side.
    let (code, out, err) = sparkyard(&["logs", "--log-dir", d, "--app", APP, "--supervision", "--json"]);
    assert_eq!(code, 0, "{err}");
    let records: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(records.len(), 12, "{out}");
    assert!(records.iter().all(|r| r["cluster"] == "submit-same"), "{out}");
    for actor in [allocator.as_str(), "/node/rm", "/submit/client"] {
        assert!(
            records
                .iter()
                .any(|r| r["event"] == "actor_restarted" && r["actor"] == actor),
            "{actor}: {out}"
        );
    }
    let times: Vec<&str> = records.iter().map(|r| r["ts"].as_str().unwrap()).collect();
    let mut sorted = times.clone();
    sorted.sort();
    assert_eq!(times, sorted);

    // --actor narrows it; --follow does not go with it; an unknown application is an error.
    let (_, out, _) = sparkyard(&["logs", "--log-dir", d, "--supervision", "--actor", "/node/rm"]);
    assert_eq!(out.lines().count(), 3, "{out}");
    let (code, _, err) = sparkyard(&["logs", "--log-dir", d, "--supervision", "--follow"]);
    assert_eq!(code, 1);
    assert_eq!(err.lines().count(), 1, "{err}");
    let (code, _, err) = sparkyard(&[
        "logs",
        "--log-dir",
        d,
        "--supervision",
        "--app",
        "application_1700000000000_0099",
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("no logs for application"), "{err}");
}
