//! Files only their owners read (issue 15): after real runs, an embedded submit and a
//! `sparkyard node` whose containers are processes, every directory under the log directory
//! is 0750 and every file 0640 (YARN's container log layout), the containers' working
//! directories are 0750 and their launch files 0600, event logs are 0660; and a secret given
//! in the configuration (`spark.authenticate.secret`, an executor's and the AM's environment
//! variables named like a password or token) appears in no log file, no event log, no launch file and no
//! console output, nor on any command line a container runs with.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::process::{config_dir, drain, lines, run_to_end, start_node_with, submit, wait_for, BIN};
use common::yarn_processes::eventually;

const SECRET: &str = "s3cr3t-marker-7f1e";
const PASSWORD: &str = "pa55-marker-91c2";

/// Every path under `dir` (not following links), `dir` first.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut all = vec![dir.to_path_buf()];
    let mut i = 0;
    while i < all.len() {
        let p = all[i].clone();
        // Tolerates what goes meanwhile (a finished container's directory).
        if std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_dir()) {
            let mut entries: Vec<PathBuf> = std::fs::read_dir(&p)
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.path())
                .collect();
            entries.sort();
            all.extend(entries);
        }
        i += 1;
    }
    all
}

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
}

/// The log directory's layout: directories 0750, files 0640 (the root too when the process
/// made it; one that existed keeps its own); answers how many files there were.
fn check_log_modes(root: &Path, made_root: bool) -> usize {
    let mut files = 0;
    for p in walk(root).into_iter().skip(usize::from(!made_root)) {
        let meta = std::fs::symlink_metadata(&p).unwrap();
        if meta.is_dir() {
            assert_eq!(mode(&p), 0o750, "directory {}", p.display());
        } else {
            assert_eq!(mode(&p), 0o640, "file {}", p.display());
            files += 1;
        }
    }
    files
}

/// No file under `root` contains a marker.
fn check_no_marker(root: &Path) {
    for p in walk(root) {
        if std::fs::symlink_metadata(&p).unwrap().is_file() {
            let text = String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned();
            for marker in [SECRET, PASSWORD] {
                assert!(
                    !text.contains(marker),
                    "{} holds the secret {marker}:\n{text}",
                    p.display()
                );
            }
        }
    }
}

fn check_no_marker_in(what: &str, text: &str) {
    for marker in [SECRET, PASSWORD] {
        assert!(
            !text.contains(marker),
            "{what} holds the secret {marker}:\n{text}"
        );
    }
}

/// The settings that carry the markers, plus the event log in `events`.
fn secret_args(events: &Path) -> Vec<String> {
    [
        format!("spark.authenticate.secret={SECRET}"),
        format!("spark.executorEnv.X_PASSWORD={PASSWORD}"),
        format!("spark.yarn.appMasterEnv.Y_TOKEN={PASSWORD}"),
        "spark.eventLog.enabled=true".to_string(),
        format!("spark.eventLog.dir={}", events.display()),
    ]
    .into_iter()
    .flat_map(|c| ["--conf".to_string(), c])
    .collect()
}

fn check_event_logs(events: &Path) {
    let logs: Vec<PathBuf> = walk(events).into_iter().skip(1).collect();
    assert!(!logs.is_empty(), "no event log in {}", events.display());
    for p in &logs {
        assert_eq!(mode(p), 0o660, "event log {}", p.display());
    }
    check_no_marker(events);
}

#[test]
fn an_embedded_submit_leaves_owner_only_logs_and_no_secret_anywhere() {
    let tmp = tempfile::tempdir().unwrap();
    let logs = tmp.path().join("logs");
    let events = tmp.path().join("events");
    std::fs::create_dir(&events).unwrap();
    let mut cmd = Command::new(BIN);
    // At DEBUG: the launch contexts the Client, the AM and the NodeManagers record too.
    cmd.args([
        "submit",
        "--config-dir",
        &config_dir(),
        "-v",
        "--log-level",
        "debug",
        "--log-dir",
    ])
    .arg(&logs)
    .args(secret_args(&events))
    .args(["--class", "org.apache.spark.examples.SparkPi", "x.jar", "4"]);
    let out = run_to_end(cmd);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("Pi is roughly"), "{}", out.stdout);
    // `-v` printed the configuration, with the secrets redacted.
    assert!(
        out.stdout.contains("spark.authenticate.secret") || out.stderr.contains("spark.authenticate.secret")
    );
    check_no_marker_in("submit's stdout", &out.stdout);
    check_no_marker_in("submit's stderr", &out.stderr);
    assert!(
        check_log_modes(&logs, true) > 0,
        "no log file in {}",
        logs.display()
    );
    check_no_marker(&logs);
    check_event_logs(&events);
}

#[test]
fn a_node_with_process_containers_leaves_owner_only_files_and_no_secret_anywhere() {
    let local = tempfile::tempdir().unwrap();
    let events = tempfile::tempdir().unwrap();
    let local_conf = format!("yarn.nodemanager.local-dirs={}", local.path().display());
    let (node, err) = start_node_with(
        &["spark.sparkyard.containers=process", &local_conf],
        Stdio::piped(),
    );
    let mut running = submit(&node, &["--deploy-mode", "cluster", "-v", "--log-level", "debug"])
        .args(secret_args(events.path()))
        .args([
            "--class",
            "sparkyard.examples.DriverTest",
            "x.jar",
            "--sleep",
            "3s",
        ])
        .env("RUST_BACKTRACE", "0")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let submit_out = lines(running.stdout.take().unwrap());
    let submit_err = lines(running.stderr.take().unwrap());
    let mut seen = Vec::new();
    wait_for(&submit_err, "state: RUNNING", &mut seen);
    // The working directories and their launch files, as the LinuxContainerExecutor makes
    // them (checked while the containers run: a finished container's directory goes).
    let launch_files = eventually("the AM's and an executor's launch files", || {
        let files: Vec<PathBuf> = walk(local.path())
            .into_iter()
            .filter(|p| p.file_name().is_some_and(|n| n == "launch_container.json"))
            .collect();
        (files.len() >= 2).then_some(files)
    });
    for file in &launch_files {
        assert_eq!(mode(file), 0o600, "{}", file.display());
        // usercache/<user>/appcache/<app>/<container>/launch_container.json
        let dirs: Vec<&Path> = file.ancestors().skip(1).take(5).collect();
        assert!(dirs[4].ends_with("usercache"), "{}", file.display());
        for d in &dirs[..4] {
            assert_eq!(mode(d), 0o750, "working directory {}", d.display());
        }
    }
    // While it runs: the executor's environment carries the password (as Spark hands
    // spark.executorEnv.* to executors), but no command line carries a marker.
    let commands: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        // The containers' (the submit's own carries what its user typed).
        .filter(|c| c.starts_with(BIN) && !c.starts_with(&format!("{BIN} submit")))
        .collect();
    assert!(commands.iter().any(|c| c.contains("container")), "{commands:?}");
    for c in &commands {
        check_no_marker_in("a command line", c);
    }
    let code = common::process::wait_exit(&mut running);
    let (out, errs) = (drain(submit_out), seen.join("\n") + "\n" + &drain(submit_err));
    assert_eq!(code, 0, "{out}\n{errs}");
    check_no_marker_in("submit's stdout", &out);
    check_no_marker_in("submit's stderr", &errs);

    let logs = node.logs.path().to_path_buf();
    let stderr_files = walk(&logs)
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n == "stderr"))
        .count();
    assert!(stderr_files >= 2, "the containers' stderr files");
    check_log_modes(&logs, false);
    check_no_marker(&logs);
    check_event_logs(events.path());
    // Its log directory goes with it.
    drop(node);
    let node_err = drain(err.unwrap());
    check_no_marker_in("the node's console", &node_err);
}
