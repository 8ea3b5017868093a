//! `sparkyard logs --app <id> --timeline out.svg` on an application of the fault suite: a
//! SparkPi run on a four-node cluster writing its records under a log directory, whose
//! executor 1 is killed (stopped) after five tasks and replaced, and whose AM's allocator is
//! killed (panics) after eight and restarted in place. The picture parses as XML, has one
//! lane per executor the run had, and marks each kill with the killed actor's path: the
//! executor's on its lane, the allocator's (and its restart) on the allocator's row.

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::inproc::{nodes, Node};
use common::suite::{kills_plan, run_on, suite_conf, Run, PI};
use sparkyard::logs::timeline::{xml, MarkKind, TimelineReader};
use sparkyard::runtime::{Cluster, KillMode};
use sparkyard::yarn::protocol::ApplicationClientProtocol;

/// The embedded node of the fault suite, its records written under `dir`.
async fn node_logging_to(dir: &Path) -> Node {
    use sparkyard::yarn::node::{rm_path, start_node, wait_ready};
    sparkyard::logs::init_for_tests();
    let cluster = Cluster::builder()
        .log_dir(dir)
        .capture_logs(true)
        .node("rmhost")
        .build()
        .unwrap();
    let specs = nodes();
    start_node(
        &cluster,
        &sparkyard::conf::SparkConf::new(),
        &specs,
        &sparkyard::cli::roles::launchers(),
        "rmhost",
        None,
    )
    .unwrap();
    wait_ready(&cluster, specs.len(), Duration::from_secs(5))
        .await
        .unwrap();
    let rm = sparkyard::deploy::client::RmConnection::Local(
        cluster.endpoint::<ApplicationClientProtocol>(&rm_path()),
    );
    Node { cluster, rm }
}

/// SparkPi with executor 1 stopped once five tasks finished and the allocator panicked once
/// eight had; the node shut down after it, so every record is in the files.
async fn killed_executor_run(dir: &Path) -> (Run, String) {
    let node = node_logging_to(dir).await;
    let plan = node.cluster.run_plan(
        kills_plan(&[
            ("/node/nm-*/container_*/executor-1", 5, KillMode::Stop),
            ("*/am/allocator", 8, KillMode::Panic),
        ]),
        "timeline-test",
    );
    let r = run_on(node, PI, suite_conf(&[]), Some(plan)).await;
    r.assert_succeeded();
    let app = r.outcome.app_id.to_string();
    r.node.cluster.shutdown(Duration::from_secs(10)).await;
    (r, app)
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

/// The values of attribute `name` on the elements whose class list holds every class of
/// `classes`.
fn attrs_of<'a>(doc: &'a xml::Element, classes: &[&str], name: &str) -> Vec<&'a str> {
    doc.descendants()
        .into_iter()
        .filter(|e| {
            let have: Vec<&str> = e.attr("class").unwrap_or("").split_whitespace().collect();
            classes.iter().all(|c| have.contains(c))
        })
        .map(|e| e.attr(name).unwrap_or(""))
        .collect()
}

#[actix_rt::test]
async fn the_timeline_of_a_run_with_a_killed_executor_has_its_lanes_and_the_kill() {
    let dir = tempfile::tempdir().unwrap();
    let (run, app) = killed_executor_run(dir.path()).await;
    let d = dir.path().to_str().unwrap();

    // The executors the run had, and the kill, as the records tell them.
    let records = run.records();
    let executors: BTreeSet<String> = records
        .iter()
        .filter(|r| r["event"] == "executor_registered")
        .filter_map(|r| r["executor_id"].as_str().map(str::to_string))
        .collect();
    assert!(executors.len() >= 3, "executor 1 was replaced: {executors:?}");
    let victims: Vec<String> = records
        .iter()
        .filter(|r| r["event"] == "fault_injected")
        .filter_map(|r| r["actor"].as_str().map(str::to_string))
        .collect();
    let find = |suffix: &str| {
        victims
            .iter()
            .find(|v| v.ends_with(suffix))
            .unwrap_or_else(|| panic!("no kill of {suffix}: {victims:?}"))
            .clone()
    };
    let killed = find("/executor-1");
    let allocator = find("/am/allocator");

    // The reader's model agrees.
    let mut reader = TimelineReader::new(dir.path(), &app);
    let t = reader.refresh().expect("the application's logs").clone();
    let lanes: BTreeSet<String> = t.executors.iter().map(|e| e.id.clone()).collect();
    assert_eq!(lanes, executors);
    assert!(
        t.executors.iter().all(|e| !e.host.is_empty()),
        "{:?}",
        t.executors
    );
    assert!(t.end.is_some(), "the application ended");
    assert!(t
        .marks
        .iter()
        .any(|m| m.kind == MarkKind::Kill && m.actor == killed && m.executor_id.as_deref() == Some("1")));
    assert!(t
        .marks
        .iter()
        .any(|m| m.kind == MarkKind::Kill && m.actor == allocator && m.executor_id.is_none()));
    let node = t
        .actors
        .iter()
        .find(|a| a.path == allocator)
        .expect("the allocator is in the tree");
    assert_eq!(
        (node.incarnation, node.restarts, node.failures),
        (2, 1, 1),
        "{node:?}"
    );
    assert_eq!(node.actor_type, "YarnAllocator");
    assert!(
        t.tasks.iter().all(|b| b.end.is_some_and(|e| e >= b.start)),
        "every task ended"
    );
    assert!(t.tasks.len() >= 24, "{} task bars", t.tasks.len());
    // Nothing appended: a second refresh reads nothing and gives the same timeline.
    assert_eq!(reader.refresh().unwrap(), &t);

    // The command writes the picture and says where and how much.
    let out_file = dir.path().join("out.svg");
    let out_path = out_file.to_str().unwrap();
    let (code, out, err) = sparkyard(&["logs", "--log-dir", d, "--app", &app, "--timeline", out_path]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(out.contains(out_path), "{out}");
    assert!(
        out.contains(&format!("{} executor lanes", executors.len())),
        "{out}"
    );
    let svg = std::fs::read_to_string(&out_file).unwrap();
    let doc = xml::parse(&svg).unwrap_or_else(|e| panic!("not well-formed XML: {e}"));
    assert_eq!(doc.name, "svg");
    let drawn: BTreeSet<String> = attrs_of(&doc, &["lane"], "data-executor")
        .into_iter()
        .map(str::to_string)
        .collect();
    assert_eq!(drawn, executors, "one lane per executor");
    assert_eq!(attrs_of(&doc, &["lane"], "data-executor").len(), executors.len());
    let kills = attrs_of(&doc, &["mark", "kill"], "data-actor");
    assert!(
        kills.contains(&killed.as_str()),
        "a kill mark names {killed}: {kills:?}"
    );
    let tooltips: Vec<String> = doc
        .descendants()
        .into_iter()
        .filter(|e| {
            e.attr("class")
                .is_some_and(|c| c.split_whitespace().any(|w| w == "kill"))
        })
        .flat_map(|e| {
            e.children
                .iter()
                .filter(|c| c.name == "title")
                .map(|c| c.text.clone())
        })
        .collect();
    assert!(
        tooltips.iter().any(|t| t.contains(&killed)),
        "the kill's tooltip names the actor: {tooltips:?}"
    );
    // The allocator's kill and restart are on its own row, not on a lane.
    let row = doc
        .descendants()
        .into_iter()
        .find(|e| e.attr("class") == Some("actor-row") && e.attr("data-actor") == Some(allocator.as_str()))
        .unwrap_or_else(|| panic!("no row for {allocator}"));
    let kinds: BTreeSet<&str> = row.children.iter().filter_map(|e| e.attr("data-kind")).collect();
    assert!(kinds.contains("kill") && kinds.contains("restart"), "{kinds:?}");
    // YARN's spelling of the same command.
    let again = dir.path().join("again.svg");
    let (code, _, err) = sparkyard(&[
        "logs",
        "--log-dir",
        d,
        "-applicationId",
        &app,
        "--timeline",
        again.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(again.is_file());
}

/// The web UI's use: a reader refreshed while the application runs (each refresh reading
/// only what was appended) ends with the very timeline a reader of the finished logs gets,
/// and what it showed on the way only grew.
#[actix_rt::test]
async fn a_reader_refreshed_while_the_application_runs_ends_where_a_fresh_one_does() {
    use std::cell::{Cell, RefCell};
    let dir = tempfile::tempdir().unwrap();
    let node = node_logging_to(dir.path()).await;
    let plan = node.cluster.run_plan(
        kills_plan(&[("/node/nm-*/container_*/executor-1", 5, KillMode::Stop)]),
        "timeline-test",
    );
    let done = Cell::new(false);
    let live: RefCell<Option<TimelineReader>> = RefCell::new(None);
    let seen = RefCell::new(Vec::<(u64, usize, bool)>::new());
    let watch = async {
        // Polls until the run is over (bounded by the run's own 60 s bound).
        while !done.get() {
            let apps = dir.path().join("apps");
            if live.borrow().is_none() {
                if let Some(app) = std::fs::read_dir(&apps)
                    .ok()
                    .and_then(|mut d| d.next())
                    .and_then(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                {
                    *live.borrow_mut() = Some(TimelineReader::new(dir.path(), &app));
                }
            }
            if let Some(r) = live.borrow_mut().as_mut() {
                if let Ok(t) = r.refresh() {
                    seen.borrow_mut()
                        .push((t.records, t.tasks.len(), t.end.is_some()));
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let run = async {
        let r = run_on(node, PI, suite_conf(&[]), Some(plan)).await;
        done.set(true);
        r
    };
    let (r, ()) = tokio::join!(run, watch);
    r.assert_succeeded();
    r.node.cluster.shutdown(Duration::from_secs(10)).await;
    let app = r.outcome.app_id.to_string();
    let mut live = live
        .into_inner()
        .expect("the application's directory appeared while it ran");
    let live_end = live.refresh().unwrap().clone();
    let fresh = TimelineReader::new(dir.path(), &app).refresh().unwrap().clone();
    assert_eq!(live_end, fresh);
    assert!(fresh.end.is_some() && fresh.tasks.len() >= 24);
    let seen = seen.into_inner();
    assert!(!seen.is_empty());
    assert!(
        seen.windows(2)
            .all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1 && (!w[0].2 || w[1].2)),
        "records and bars only grow, an end stays: {seen:?}"
    );
}

#[test]
fn a_timeline_of_an_unknown_application_or_to_an_unwritable_file_is_one_line_and_an_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("nodes")).unwrap();
    let d = dir.path().to_str().unwrap();
    let out = dir.path().join("out.svg");
    let (code, out_text, err) = sparkyard(&[
        "logs",
        "--log-dir",
        d,
        "--app",
        "application_1_0001",
        "--timeline",
        out.to_str().unwrap(),
    ]);
    assert_ne!(code, 0);
    assert!(out_text.is_empty(), "{out_text}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("no logs for application application_1_0001"),
        "{err}"
    );
    assert!(!out.exists());

    // An application that left records, drawn into a directory that does not exist.
    let app_dir = dir
        .path()
        .join("apps/application_1_0002/container_1_0002_01_000001");
    std::fs::create_dir_all(&app_dir).unwrap();
    std::fs::write(
        app_dir.join("sparkyard.jsonl"),
        "{\"ts\":\"2026-01-01T00:00:00Z\",\"level\":\"INFO\",\"msg\":\"hi\",\"app_id\":\"application_1_0002\"}\n",
    )
    .unwrap();
    let bad = dir.path().join("no/such/dir/out.svg");
    let (code, _, err) = sparkyard(&[
        "logs",
        "--log-dir",
        d,
        "--app",
        "application_1_0002",
        "--timeline",
        bad.to_str().unwrap(),
    ]);
    assert_ne!(code, 0);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("cannot write the timeline to"), "{err}");
    assert!(err.contains("no/such/dir/out.svg"), "{err}");

    // --timeline needs --app.
    let (code, _, err) = sparkyard(&["logs", "--log-dir", d, "--timeline", out.to_str().unwrap()]);
    assert_ne!(code, 0);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--app"), "{err}");
}
