//! The live node's controls against a running `sparkyard node`: `sparkyard actors` lists the
//! supervision tree; `sparkyard chaos kill` of the revive timer of a running application
//! prints what it killed and the application still ends SUCCEEDED; unknown paths and
//! malformed globs are one-line errors with exit 1; `chaos partition` and `chaos plan
//! --seed` act in the node; and `sparkyard logs --app <id> --supervision` tells the story.
//! Every wait is bounded.

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use common::process::{
    app_id_in, config_dir, lines, run_to_end as run, start_node, submit, wait_exit, wait_for, Node, Out, BIN,
};
use serde_json::Value as Json;

/// `sparkyard <args>` pointed at `node` (its address through `--conf`, as a user would).
fn control(node: &Node, args: &[&str]) -> Out {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .args(["--config-dir", &config_dir()])
        .args(["--conf", &format!("yarn.resourcemanager.address={}", node.addr)]);
    run(cmd)
}

fn logs(dir: &Path, args: &[&str]) -> Out {
    let mut cmd = Command::new(BIN);
    cmd.args(["logs", "--log-dir", dir.to_str().unwrap()]).args(args);
    run(cmd)
}

/// Polls `check` (at most 20 s) until it answers something.
fn eventually<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(v) = check() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A long SleepTasks application submitted to `node` in cluster mode (its records go to the
/// node's log directory too); answers the running submit and the application id.
fn long_app(node: &Node) -> (Child, Receiver<String>, String) {
    let mut child = submit(
        node,
        &[
            "--log-dir",
            node.logs.path().to_str().unwrap(),
            "--deploy-mode",
            "cluster",
            "--class",
            "sparkyard.examples.SleepTasks",
            "x.jar",
            "--tasks",
            "300",
            "--ms",
            "20",
        ],
    )
    .env("RUST_BACKTRACE", "0")
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let err = lines(child.stderr.take().unwrap());
    let line = wait_for(&err, "(state: RUNNING)", &mut Vec::new());
    (child, err, app_id_in(&line))
}

fn actors_json(node: &Node, app: Option<&str>) -> Vec<Json> {
    let mut args = vec!["actors", "--json"];
    if let Some(app) = app {
        args.extend(["--app", app]);
    }
    let o = control(node, &args);
    assert_eq!(o.code, 0, "{}", o.stderr);
    o.stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn actors_chaos_and_the_supervision_story_against_a_running_node() {
    let node = start_node();

    // The node's own tree, as a table.
    let o = control(&node, &["actors"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let table: Vec<&str> = o.stdout.lines().collect();
    assert_eq!(
        table[0].split_whitespace().collect::<Vec<_>>(),
        ["PATH", "TYPE", "INCARNATION", "RESTARTS", "STATUS"],
        "{}",
        o.stdout
    );
    let rm = table
        .iter()
        .find(|l| l.trim_start().starts_with("/node/rm "))
        .expect("the RM");
    assert!(rm.starts_with("  /node/rm"), "indented by depth: {rm}");
    let cols: Vec<&str> = rm.split_whitespace().collect();
    assert_eq!(cols, ["/node/rm", "ResourceManager", "1", "0", "running"]);
    assert!(o.stdout.contains("NodeManager") && o.stdout.contains("ClientRmService"));

    // Unknown paths and malformed globs: one line naming the pattern, exit 1.
    let o = control(&node, &["chaos", "kill", "/node/no-such-actor"]);
    assert_eq!(o.code, 1);
    assert_eq!(
        o.stderr.trim(),
        "sparkyard chaos: error: no running actor matches '/node/no-such-actor'"
    );
    let o = control(&node, &["chaos", "partition", "*/nothing-here", "--for", "1s"]);
    assert_eq!(o.code, 1);
    assert!(
        o.stderr.contains("no running actor matches '*/nothing-here'"),
        "{}",
        o.stderr
    );
    let o = control(&node, &["chaos", "kill", "node/rm"]);
    assert_eq!(o.code, 1);
    assert!(
        o.stderr
            .trim()
            .starts_with("sparkyard chaos: error: malformed actor path or glob 'node/rm'"),
        "{}",
        o.stderr
    );

    // An application runs: its actors, then a kill of its revive timer.
    let (mut running, err, app) = long_app(&node);
    let timer = eventually("the driver's revive timer", || {
        actors_json(&node, Some(&app)).into_iter().find(|a| {
            a["path"]
                .as_str()
                .is_some_and(|p| p.ends_with("/driver/revive-timer"))
        })
    });
    assert_eq!(timer["actor_type"], "ReviveTimer");
    assert_eq!(
        (timer["incarnation"].as_u64(), timer["restarts"].as_u64()),
        (Some(1), Some(0))
    );
    assert_eq!(timer["status"], "running");
    let timer_path = timer["path"].as_str().unwrap().to_string();
    // Executors run in their own container processes and may register after the driver's
    // timers are up: wait for one.
    let mine = eventually("an executor among the application's actors", || {
        let mine = actors_json(&node, Some(&app));
        mine.iter()
            .any(|a| a["actor_type"] == "CoarseGrainedExecutorBackend")
            .then_some(mine)
    });
    assert!(mine
        .iter()
        .all(|a| a["path"].as_str().unwrap().contains("container_")));

    let o = control(&node, &["chaos", "kill", "*/driver/revive-timer"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(
        o.stdout.trim(),
        format!("killed (stop) {timer_path} (incarnation 1, ReviveTimer)")
    );
    // A partition and a delay of the timer's messages: harmless for the job.
    let o = control(
        &node,
        &["chaos", "partition", "*/driver/revive-timer", "--for", "300ms"],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stdout.starts_with(
            "partitioned for 300ms: messages to and from */driver/revive-timer dropped; it matches now:"
        ),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout
            .contains(&format!("  {timer_path} (incarnation 2, ReviveTimer)")),
        "{}",
        o.stdout
    );
    let o = control(
        &node,
        &[
            "chaos",
            "partition",
            "*/driver/revive-timer",
            "--for",
            "300ms",
            "--delay",
            "5ms",
        ],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.contains("delayed by 5ms"), "{}", o.stdout);
    // A kill later: what it matches now is printed.
    let o = control(
        &node,
        &[
            "chaos",
            "kill",
            "*/driver/revive-timer",
            "--after",
            "50ms",
            "--panic",
        ],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stdout
            .starts_with("scheduled: panic */driver/revive-timer in 50ms; it matches now:"),
        "{}",
        o.stdout
    );

    assert_eq!(wait_exit(&mut running), 0, "the application ends SUCCEEDED");
    let mut seen = Vec::new();
    let report = wait_for(&err, "Final report for", &mut seen);
    assert!(
        report.contains("state FINISHED, final status SUCCEEDED"),
        "{report}"
    );

    // The story of the application: what was killed, what noticed, what came back.
    let story = eventually("the kills in the node's records", || {
        let o = logs(node.logs.path(), &["--app", &app, "--supervision"]);
        assert_eq!(o.code, 0, "{}", o.stderr);
        (o.stdout.matches("actor_restarted").count() >= 2).then_some(o.stdout)
    });
    let expect = [
        format!("fault_injected        {timer_path}#1 fault injection: stop"),
        format!("actor_failed          {timer_path}#1 failed: killed by sparkyard chaos kill"),
        "child revive-timer ended (killed by sparkyard chaos kill); one_for_one restarts revive-timer".to_string(),
        format!("actor_restarted       {timer_path}#2 restarted as incarnation 2"),
        "partition_started     - partition: messages to and from */driver/revive-timer dropped for 300ms (by sparkyard chaos partition)".to_string(),
        format!("fault_injected        {timer_path}#2 fault injection: panic"),
        format!("actor_restarted       {timer_path}#3 restarted as incarnation 3"),
    ];
    let mut at = 0;
    for e in &expect {
        let found = story[at..]
            .find(e.as_str())
            .unwrap_or_else(|| panic!("{e:?} (in order) in:\n{story}"));
        at += found + e.len();
    }
    let o = logs(node.logs.path(), &["--app", &app, "--supervision", "--json"]);
    let records: Vec<Json> = o
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(records
        .iter()
        .any(|r| r["event"] == "fault_injected" && r["actor"] == timer_path.as_str()));

    // A seeded plan: printed, the same for the same seed, and carried out in the node.
    let o = control(&node, &["chaos", "plan", "--seed", "3", "--for", "300ms"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let conf = sparkyard::conf::SparkConf::new();
    let plan = sparkyard::cli::control::node_plan(&conf, 3, Duration::from_millis(300)).unwrap();
    let printed: Vec<String> = o
        .stdout
        .lines()
        .skip(1)
        .take(plan.faults.len())
        .map(|l| l.trim().to_string())
        .collect();
    assert_eq!(printed, sparkyard::chaos::describe(&plan), "{}", o.stdout);
    assert!(
        o.stdout
            .starts_with("fault plan (seed 3, 3 kills over 300ms) running in the node at"),
        "{}",
        o.stdout
    );
    eventually("the plan's three kills, done or skipped", || {
        let o = logs(node.logs.path(), &["--supervision", "--json", "--grep", "seed 3"]);
        let fired = o
            .stdout
            .lines()
            .filter(|l| l.contains("\"fault_injected\"") || l.contains("\"fault_skipped\""))
            .count();
        (fired == 3).then_some(())
    });
    // The node is still there.
    let o = control(&node, &["actors"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
}
