//! `sparkyard node` as a process and `sparkyard submit --master yarn` talking to it over TCP:
//! a submission that registers three executors, `--status`, `--kill`, a malformed frame
//! that closes only its own connection, client mode refused, and Ctrl-C on `submit` (the
//! application ends KILLED) and on the node (a clean stop). Every wait is bounded.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_sparkyard");

fn config_dir() -> String {
    format!("{}/config", env!("CARGO_MANIFEST_DIR"))
}

/// Lines of a child's stream, read on a thread.
fn lines(stream: impl Read + Send + 'static) -> Receiver<String> {
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// Waits (at most 20 s) for a line containing `text`; returns it.
fn wait_for(rx: &Receiver<String>, text: &str, seen: &mut Vec<String>) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => {
                seen.push(line.clone());
                if line.contains(text) {
                    return line;
                }
            }
            Err(_) => panic!("no line containing {text:?}; saw:\n{}", seen.join("\n")),
        }
    }
}

/// Waits (at most 20 s) for a child to exit; kills it and fails otherwise.
fn wait_exit(child: &mut Child) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return status.code().unwrap_or(-1);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the process did not exit in time");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn interrupt(child: &Child) {
    let ok = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
}

struct Node {
    child: Child,
    addr: String,
    _logs: tempfile::TempDir,
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_node() -> Node {
    let logs = tempfile::tempdir().unwrap();
    let mut child = Command::new(BIN)
        .args([
            "node",
            "--config-dir",
            &config_dir(),
            "--conf",
            "yarn.resourcemanager.address=127.0.0.1:0",
        ])
        .args(["--log-dir", logs.path().to_str().unwrap()])
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = lines(child.stdout.take().unwrap());
    let ready = wait_for(&out, "ResourceManager listening on", &mut Vec::new());
    let addr = ready
        .split_whitespace()
        .find(|w| w.starts_with("127.0.0.1:"))
        .expect("an address in the readiness line")
        .to_string();
    Node {
        child,
        addr,
        _logs: logs,
    }
}

fn submit(node: &Node, args: &[&str]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(["submit", "--config-dir", &config_dir(), "--master", "yarn"])
        .args(["--conf", &format!("yarn.resourcemanager.address={}", node.addr)])
        .args(["--conf", "spark.yarn.report.interval=100ms"])
        .args(args)
        .env_remove("RUST_LOG");
    cmd
}

fn app_id_in(line: &str) -> String {
    line.split_whitespace()
        .find(|w| w.starts_with("application_"))
        .expect("an application id")
        .trim_end_matches(|c: char| !c.is_ascii_digit())
        .to_string()
}

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
    raw.write_all(b"SPKY\x01\x00\x00\x00\x05garbage").unwrap();
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

    // Client mode needs cross-process driver messaging: refused with a reason.
    let out = submit(&node, &["--class", "sparkyard.examples.DriverTest", "x.jar"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr.contains("client mode against a running node is not supported yet"),
        "{stderr}"
    );
}

#[test]
fn kill_ends_a_running_application_killed() {
    let node = start_node();
    let mut running = submit(
        &node,
        &[
            "--deploy-mode",
            "cluster",
            "--class",
            "sparkyard.examples.DriverTest",
            "x.jar",
            "--sleep",
            "60s",
        ],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let err = lines(running.stderr.take().unwrap());
    let mut seen = Vec::new();
    let line = wait_for(&err, "(state: RUNNING)", &mut seen);
    let app = app_id_in(&line);
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
