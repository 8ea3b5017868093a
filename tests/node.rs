//! `sparkyard node` as a process and `sparkyard submit --master yarn` talking to it over TCP:
//! a submission that registers three executors, `--status`, `--kill`, a malformed frame
//! that closes only its own connection, client mode refused, and Ctrl-C on `submit` (the
//! application ends KILLED) and on the node (a clean stop); a node whose supervision tree
//! gives up (four ResourceManager kills within the restart period, or `chaos kill /node`)
//! exits with status 70 and one line saying why; `--status` and `--kill` into a closed
//! stdout (`| head -1`) end quietly with status 0. Every wait is bounded.

mod common;

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::process::{
    app_id_in, config_dir, drain, interrupt, lines, run_to_end, start_node, start_node_with, submit,
    submit_sleeping, wait_exit, wait_for, Node, Out, BIN,
};

#[test]
fn submit_over_tcp_registers_three_executors_then_status_and_malformed_frames() {
    let node = start_node();
    let out = submit(
        &node,
        &[
            "--deploy-mode",
            "cluster",
            "--class",
            "sparkyard.examples.DriverTest",
            "--num-executors",
            "3",
            "x.jar",
        ],
    )
    .output()
    .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stdout.contains("DriverTest: 3 executors registered (requested 3)"),
        "{stdout}"
    );
    let final_line = stderr
        .lines()
        .find(|l| l.contains("Final report for"))
        .expect("a final report");
    assert!(
        final_line.contains("state FINISHED, final status SUCCEEDED"),
        "{final_line}"
    );
    let app = app_id_in(final_line);

    // A malformed frame closes that connection only.
    let mut raw = std::net::TcpStream::connect(&node.addr).unwrap();
    raw.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    raw.write_all(
        &<sparkyard::yarn::protocol::ClientProtocol as sparkyard::rpc::tcp::WireProtocol>::GREETING,
    )
    .unwrap();
    raw.write_all(b"\x00\x00\x00\x05garbage").unwrap();
    let mut buf = Vec::new();
    let _ = raw.read_to_end(&mut buf);
    assert!(
        buf.len() <= 5,
        "the server closed the connection after its greeting: {buf:?}"
    );

    let out = submit(&node, &["--status", &app]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(&format!("Application report for {app} (state: FINISHED)")),
        "{stdout}"
    );
    assert!(stdout.contains("final status: SUCCEEDED"), "{stdout}");

    // Client mode: the driver runs here, its AM and executors in the node's container
    // processes, talking to it over TCP.
    let out = submit(&node, &["--class", "sparkyard.examples.DriverTest", "x.jar"])
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stdout.contains("DriverTest: done"), "{stdout}");
    assert!(
        stderr.contains("Successfully started service 'sparkDriver' on 127.0.0.1:"),
        "{stderr}"
    );
}

#[test]
fn kill_ends_a_running_application_killed() {
    let node = start_node();
    let (mut running, err, mut seen, app) = submit_sleeping(&node);
    let out = submit(&node, &["--kill", &app]).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("Application {app} is KILLED")));
    assert_eq!(wait_exit(&mut running), 1);
    let verdict = wait_for(&err, "Exception in thread", &mut seen);
    assert!(
        verdict.contains(&format!("Application {app} is killed")),
        "{verdict}"
    );
}

#[test]
fn ctrl_c_on_submit_kills_the_application_and_on_the_node_stops_it_cleanly() {
    let logs = tempfile::tempdir().unwrap();
    let mut submit = Command::new(BIN)
        .args([
            "submit",
            "--config-dir",
            &config_dir(),
            "--log-dir",
            logs.path().to_str().unwrap(),
        ])
        .args([
            "--deploy-mode",
            "cluster",
            "--conf",
            "spark.yarn.report.interval=100ms",
        ])
        .args([
            "--class",
            "sparkyard.examples.DriverTest",
            "x.jar",
            "--sleep",
            "60s",
        ])
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = lines(submit.stderr.take().unwrap());
    let mut seen = Vec::new();
    wait_for(&err, "(state: RUNNING)", &mut seen);
    interrupt(&submit);
    assert_eq!(wait_exit(&mut submit), 130);
    let report = wait_for(&err, "Final report for", &mut seen);
    assert!(report.contains("state KILLED, final status KILLED"), "{report}");

    let mut node = start_node();
    interrupt(&node.child);
    assert_eq!(wait_exit(&mut node.child), 0);
}

/// `sparkyard chaos kill <target>` against `node`.
fn chaos_kill(node: &Node, target: &str) -> Out {
    let mut cmd = Command::new(BIN);
    cmd.args(["chaos", "kill", target, "--config-dir", &config_dir()])
        .args(["--conf", &format!("yarn.resourcemanager.address={}", node.addr)]);
    run_to_end(cmd)
}

/// Waits (bounded) for `node` to exit on its own; answers its status and its stderr.
fn node_exit(mut node: Node, err: std::sync::mpsc::Receiver<String>) -> (i32, String) {
    let code = wait_exit(&mut node.child);
    (code, drain(err))
}

fn assert_gave_up(code: i32, stderr: &str, why: &str) {
    assert_eq!(code, 70, "{stderr}");
    let last = stderr.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("sparkyard node: error: the node's supervision tree ")
            && last.contains(why)
            && last.contains("so a service manager can restart it"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn a_node_whose_resource_manager_fails_beyond_its_intensity_exits_70() {
    // Restarts are counted over an hour, so the four kills escalate however slowly they come.
    let (node, err) = start_node_with(&["spark.sparkyard.supervisor.restartPeriod=1h"], Stdio::piped());
    let mut kills = 0;
    let mut tries = 0;
    while kills < 4 {
        tries += 1;
        assert!(tries < 200, "could not kill the ResourceManager four times");
        let o = chaos_kill(&node, "/node/rm");
        if o.code == 0 {
            kills += 1;
        } else if o.stderr.contains("no running actor matches") {
            // Between an incarnation's end and its successor nothing matches: kill again.
        } else {
            // The fourth kill takes the client port down with the node: its answer may be lost.
            assert_eq!(kills, 3, "{}", o.stderr);
            break;
        }
    }
    let (code, stderr) = node_exit(node, err.unwrap());
    assert_gave_up(code, &stderr, "gave up");
    assert!(stderr.contains("/node/rm"), "{stderr}");
}

#[test]
fn a_node_killed_at_its_root_exits_70() {
    let (node, err) = start_node_with(&[], Stdio::piped());
    // The kill takes the client port down with the node: its answer may not come back.
    let o = chaos_kill(&node, "/node");
    assert!(o.code == 0 || o.code == 1, "{}", o.stderr);
    let (code, stderr) = node_exit(node, err.unwrap());
    assert_gave_up(code, &stderr, "ended: killed by sparkyard chaos kill");
}

/// `cmd` with its stdout a pipe whose reading end is already closed (what `| head -1` leaves
/// once head has its line): every write to it fails with a broken pipe.
fn with_closed_stdout(mut cmd: Command) -> Out {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let mut child = cmd
        .env("RUST_BACKTRACE", "0")
        .stdout(writer)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(cmd);
    let err = lines(child.stderr.take().unwrap());
    let code = wait_exit(&mut child);
    Out {
        code,
        stdout: String::new(),
        stderr: drain(err),
    }
}

#[test]
fn status_and_kill_into_a_closed_stdout_end_quietly_with_status_0() {
    let node = start_node();
    let out = submit(
        &node,
        &[
            "--deploy-mode",
            "cluster",
            "--class",
            "sparkyard.examples.DriverTest",
            "x.jar",
        ],
    )
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let app = app_id_in(stderr.lines().find(|l| l.contains("Final report for")).unwrap());

    // Piped into a reader that is gone: no panic, no restart of SparkSubmit, status 0.
    for action in ["--status", "--kill"] {
        let o = with_closed_stdout(submit(&node, &[action, &app]));
        assert_eq!(o.code, 0, "{action}: {}", o.stderr);
        for bad in ["panicked", "failed:", "restart", "Error"] {
            assert!(!o.stderr.contains(bad), "{action}: {}", o.stderr);
        }
    }

    // The same through a shell and head, as a user types it.
    for action in ["--status", "--kill"] {
        let line = format!(
            "{BIN} submit --config-dir {} --master yarn --conf yarn.resourcemanager.address={} {action} {app} | head -1; exit ${{PIPESTATUS[0]}}",
            config_dir(),
            node.addr
        );
        let mut cmd = Command::new("bash");
        cmd.args(["-c", &line]);
        let o = run_to_end(cmd);
        assert_eq!(o.code, 0, "{action}: {}", o.stderr);
        assert_eq!(o.stdout.lines().count(), 1, "{action}: {}", o.stdout);
        assert!(o.stdout.contains(&app), "{action}: {}", o.stdout);
        assert!(!o.stderr.contains("panicked"), "{action}: {}", o.stderr);
    }
}
