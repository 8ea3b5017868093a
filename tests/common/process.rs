//! Test support for the `sparkyard` binary as a process: a running `sparkyard node`, a
//! `submit` command against it, lines of a child's output read on a thread, and bounded
//! waits for a line or an exit.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_sparkyard");

pub fn config_dir() -> String {
    format!("{}/config", env!("CARGO_MANIFEST_DIR"))
}

/// Lines of a child's stream, read on a thread.
pub fn lines(stream: impl Read + Send + 'static) -> Receiver<String> {
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
pub fn wait_for(rx: &Receiver<String>, text: &str, seen: &mut Vec<String>) -> String {
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
pub fn wait_exit(child: &mut Child) -> i32 {
    wait_exit_within(child, Duration::from_secs(20))
}

/// Waits (at most `limit`) for a child to exit; kills it and fails otherwise.
pub fn wait_exit_within(child: &mut Child, limit: Duration) -> i32 {
    let deadline = Instant::now() + limit;
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

pub fn interrupt(child: &Child) {
    let ok = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
}

pub struct Node {
    pub child: Child,
    pub addr: String,
    /// The node's actor endpoint (where NodeManagers join).
    pub actors: String,
    /// The ResourceManager's web app (`host:port` of its REST API and UI).
    pub web: String,
    pub logs: tempfile::TempDir,
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn start_node() -> Node {
    start_node_with(&[], Stdio::null()).0
}

/// A node with extra `--conf key=value` settings; with `stderr` piped, its stderr lines too
/// (read on a thread until the node exits, so the pipe never fills).
pub fn start_node_with(conf: &[&str], stderr: Stdio) -> (Node, Option<Receiver<String>>) {
    start_node_env(conf, stderr, &[])
}

/// [`start_node_with`] with extra environment variables (e.g. `HADOOP_USER_NAME`, the user
/// the node runs as).
pub fn start_node_env(
    conf: &[&str],
    stderr: Stdio,
    env: &[(&str, &str)],
) -> (Node, Option<Receiver<String>>) {
    let logs = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(BIN);
    cmd.args([
        "node",
        "--config-dir",
        &config_dir(),
        "--conf",
        "yarn.resourcemanager.address=127.0.0.1:0",
        "--conf",
        "yarn.resourcemanager.resource-tracker.address=127.0.0.1:0",
        "--conf",
        "yarn.resourcemanager.webapp.address=127.0.0.1:0",
    ]);
    for pair in conf {
        cmd.args(["--conf", pair]);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd
        .args(["--log-dir", logs.path().to_str().unwrap()])
        .env_remove("RUST_LOG")
        .env("RUST_BACKTRACE", "0")
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .unwrap();
    let err = child.stderr.take().map(lines);
    let out = lines(child.stdout.take().unwrap());
    let ready = wait_for(&out, "ResourceManager listening on", &mut Vec::new());
    let addr = ready
        .split_whitespace()
        .find(|w| w.starts_with("127.0.0.1:"))
        .expect("an address in the readiness line")
        .to_string();
    let actors = ready
        .split("join at ")
        .nth(1)
        .and_then(|rest| rest.split([';', ' ']).next())
        .expect("the actor endpoint in the readiness line")
        .to_string();
    let web = web_address(&ready);
    (
        Node {
            child,
            addr,
            actors,
            web,
            logs,
        },
        err,
    )
}

/// The web app's `host:port` in a node's readiness line ("web UI at http://host:port/").
pub fn web_address(ready: &str) -> String {
    ready
        .split("web UI at http://")
        .nth(1)
        .and_then(|rest| rest.split(['/', ';', ' ']).next())
        .expect("the web UI's address in the readiness line")
        .to_string()
}

pub fn submit(node: &Node, args: &[&str]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(["submit", "--config-dir", &config_dir(), "--master", "yarn"])
        .args(["--conf", &format!("yarn.resourcemanager.address={}", node.addr)])
        .args(["--conf", "spark.yarn.report.interval=100ms"])
        .args(args)
        .env_remove("RUST_LOG");
    cmd
}

/// What a finished command gave.
pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// The lines a reader thread collected, until none comes for 10 s.
pub fn drain(rx: Receiver<String>) -> String {
    let mut text = String::new();
    while let Ok(line) = rx.recv_timeout(Duration::from_secs(10)) {
        text.push_str(&line);
        text.push('\n');
    }
    text
}

/// Runs `cmd` to its end (bounded by [`wait_exit`]) without `RUST_LOG` and backtraces, and
/// collects its exit status and outputs.
pub fn run_to_end(mut cmd: Command) -> Out {
    let mut child = cmd
        .env_remove("RUST_LOG")
        .env("RUST_BACKTRACE", "0")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (out, err) = (
        lines(child.stdout.take().unwrap()),
        lines(child.stderr.take().unwrap()),
    );
    let code = wait_exit(&mut child);
    Out {
        code,
        stdout: drain(out),
        stderr: drain(err),
    }
}

/// The application id in a line of `submit`'s output.
pub fn app_id_in(line: &str) -> String {
    line.split_whitespace()
        .find(|w| w.starts_with("application_"))
        .expect("an application id")
        .trim_end_matches(|c: char| !c.is_ascii_digit())
        .to_string()
}

/// A cluster-mode DriverTest that sleeps 60 s, submitted to `node` and followed until it
/// runs: the submit process, its stderr lines, those seen so far and the application id.
pub fn submit_sleeping(node: &Node) -> (Child, Receiver<String>, Vec<String>, String) {
    let mut running = submit(
        node,
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
    .expect("submit starts");
    let err = lines(running.stderr.take().expect("piped stderr"));
    let mut seen = Vec::new();
    let line = wait_for(&err, "(state: RUNNING)", &mut seen);
    let app = app_id_in(&line);
    (running, err, seen, app)
}
