//! Spark's console progress bar, through the binary on a pseudo-terminal: a 40-task job in
//! client mode with `spark.ui.showConsoleProgress=true` and stderr on a terminal shows
//! `[Stage 0:===>   (n + m) / 40]` advancing and erases it when the job ends; with stderr
//! a file there is no bar; without the setting there is none either (Spark's default in
//! spark-submit). In cluster mode, `submit` on a terminal draws the application's progress
//! from its YARN reports (the AM reports its stages' finished share).
//!
//! Each run waits for the terminal text it checks or for the process's end, bounded; the
//! terminal is read on a thread as the process writes it.

mod common;

use std::fs::File;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use common::process::{config_dir, lines, wait_exit_within, BIN};
use rustix::fs::{Mode, OFlags};
use rustix::pty::{grantpt, openpt, ptsname, unlockpt, OpenptFlags};

/// How long one run may take at most (a 40-task job of 150 ms tasks on 2 cores takes about
/// 3 s; the machine is shared).
const RUN_BOUND: Duration = Duration::from_secs(120);

/// A pseudo-terminal: the master side (read by the test) and the slave side (the child's
/// stderr).
fn pty() -> (File, OwnedFd) {
    let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC).expect("openpt");
    grantpt(&master).expect("grantpt");
    unlockpt(&master).expect("unlockpt");
    let name = ptsname(&master, Vec::new()).expect("ptsname");
    let slave = rustix::fs::open(
        name.as_c_str(),
        OFlags::RDWR | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .expect("open the pty's slave side");
    (File::from(master), slave)
}

/// What the terminal shows, in chunks as they come, read on a thread until the slave side
/// is closed by every process that had it.
fn terminal_chunks(mut master: File) -> Receiver<String> {
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        loop {
            match master.read(&mut buf) {
                // EIO once no process holds the slave side any more.
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if tx.send(String::from_utf8_lossy(&buf[..n]).into_owned()).is_err() {
                        break;
                    }
                }
            }
        }
    });
    rx
}

fn submit(log_dir: &std::path::Path, conf: &[&str]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(["submit", "--config-dir", &config_dir()])
        .args(["--log-dir", log_dir.to_str().unwrap()])
        .args(["--deploy-mode", "client"]);
    for c in conf {
        cmd.args(["--conf", c]);
    }
    cmd.args([
        "--class",
        "sparkyard.examples.SleepTasks",
        "x.jar",
        "--tasks",
        "40",
        "--ms",
        "150",
    ])
    .env_remove("RUST_LOG")
    .env("RUST_BACKTRACE", "0")
    .env("COLUMNS", "80")
    .stdin(Stdio::null());
    cmd
}

/// The "(finished + running) / 40" counts of every bar drawn in `text`, in order.
fn counts(text: &str) -> Vec<(u32, u32)> {
    let re = regex::Regex::new(r"\[Stage 0:[=> ]*\((\d+) \+ (\d+)\) / 40\]").unwrap();
    re.captures_iter(text)
        .map(|c| (c[1].parse().unwrap(), c[2].parse().unwrap()))
        .collect()
}

/// Runs `child` with the terminal read from `rx`: waits (bounded) until the terminal has
/// shown two different counts, then for the end; answers everything the terminal showed
/// and the exit code.
fn watch(mut child: Child, rx: Receiver<String>) -> (String, i32) {
    let deadline = Instant::now() + RUN_BOUND;
    let mut text = String::new();
    loop {
        let mut distinct = counts(&text);
        distinct.dedup();
        if distinct.len() >= 2 {
            break;
        }
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(chunk) => text.push_str(&chunk),
            Err(RecvTimeoutError::Timeout) => {
                let _ = child.kill();
                panic!("no advancing bar within {RUN_BOUND:?}; the terminal showed:\n{text:?}")
            }
            // The process ended (and closed the terminal) before the bar advanced.
            Err(RecvTimeoutError::Disconnected) => {
                let code = wait_exit_within(&mut child, RUN_BOUND);
                panic!("the run ended ({code}) without an advancing bar; the terminal showed:\n{text:?}")
            }
        }
    }
    // The rest, until the process ends and the terminal closes.
    loop {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(chunk) => text.push_str(&chunk),
            Err(RecvTimeoutError::Disconnected) => break,
            Err(RecvTimeoutError::Timeout) => {
                let _ = child.kill();
                panic!("the run did not end within {RUN_BOUND:?}; the terminal showed:\n{text:?}")
            }
        }
    }
    let code = wait_exit_within(&mut child, RUN_BOUND);
    (text, code)
}

#[test]
fn a_40_task_job_on_a_terminal_shows_the_bar_advancing_then_erases_it() {
    let dir = tempfile::tempdir().unwrap();
    let (master, slave) = pty();
    let mut cmd = submit(dir.path(), &["spark.ui.showConsoleProgress=true"]);
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::from(slave))
        .spawn()
        .unwrap();
    // The test's own copy of the slave side went into the Command, which is dropped here,
    // so the terminal closes when the child exits.
    drop(cmd);
    let mut child = child;
    let stdout = lines(child.stdout.take().unwrap());
    let rx = terminal_chunks(master);
    let (text, code) = watch(child, rx);
    assert_eq!(code, 0, "the terminal showed:\n{text}");
    let seen = counts(&text);
    let mut distinct = seen.clone();
    distinct.dedup();
    assert!(distinct.len() >= 2, "{seen:?}");
    // It advances: the finished count never goes back, and it moved.
    assert!(seen.windows(2).all(|w| w[0].0 <= w[1].0), "{seen:?}");
    assert!(seen.last().unwrap().0 > seen[0].0, "{seen:?}");
    // Each bar is Spark's line, 80 columns, drawn with carriage returns around it.
    let re = regex::Regex::new(r"\r(\[Stage 0:[=> ]*\(\d+ \+ \d+\) / 40\])\r").unwrap();
    let drawn: Vec<&str> = re
        .captures_iter(&text)
        .map(|c| c.get(1).unwrap().as_str())
        .collect();
    assert!(!drawn.is_empty(), "{text:?}");
    assert!(drawn.iter().all(|d| d.len() == 80), "{drawn:?}");
    // Erased when the job ended: a line of spaces after the last bar.
    let erase = format!("\r{}\r", " ".repeat(80));
    let last_bar = text.rfind("[Stage 0:").unwrap();
    let erased_at = text.rfind(&erase).expect("the bar erased");
    assert!(erased_at > last_bar, "{text:?}");
    // While the job runs, client mode's application monitor writes nothing over the bar
    // (Spark's MonitorThread follows the application with logApplicationReport = false).
    let first_bar = text.find("[Stage 0:").unwrap();
    assert!(
        !text[first_bar..last_bar].contains("Application report for"),
        "{text:?}"
    );
    let out: Vec<String> = stdout.try_iter().collect();
    assert!(
        out.iter().any(|l| l.contains("SleepTasks: job 0: 40 tasks")),
        "{out:?}"
    );
}

#[test]
fn a_killed_bar_restarts_draws_on_and_still_erases_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let (master, slave) = pty();
    let mut cmd = submit(
        dir.path(),
        &[
            "spark.ui.showConsoleProgress=true",
            "spark.sparkyard.chaos.plan=*/driver/console-progress-bar@10:panic",
        ],
    );
    let child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::from(slave))
        .spawn()
        .unwrap();
    drop(cmd);
    let (text, code) = watch(child, terminal_chunks(master));
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("killed (panic) /submit/driver/console-progress-bar"),
        "the kill was not carried out:\n{text}"
    );
    // Where it happened (the report of the plan comes at the end).
    let killed = text
        .find("fault injection: panic /submit/driver/console-progress-bar")
        .unwrap_or_else(|| panic!("no record of the kill:\n{text}"));
    // The next incarnation draws again (the job goes on past the 10th task) ...
    let after = counts(&text[killed..]);
    assert!(after.iter().any(|(done, _)| *done > 10), "{after:?}\n{text:?}");
    // ... and erases the line its predecessor's kept state says is drawn.
    let erase = format!("\r{}\r", " ".repeat(80));
    let last_bar = text.rfind("[Stage 0:").unwrap();
    assert!(text.rfind(&erase).is_some_and(|at| at > last_bar), "{text:?}");
}

#[test]
fn no_bar_when_stderr_is_a_file_or_the_setting_is_off() {
    // stderr a file, the setting on: no bar.
    let dir = tempfile::tempdir().unwrap();
    let err_path = dir.path().join("stderr.txt");
    let mut child = submit(dir.path(), &["spark.ui.showConsoleProgress=true"])
        .stdout(Stdio::null())
        .stderr(File::create(&err_path).unwrap())
        .spawn()
        .unwrap();
    let code = wait_exit_within(&mut child, RUN_BOUND);
    let err = std::fs::read_to_string(&err_path).unwrap();
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("[Stage"), "{err}");
    // The driver said why, in its log.
    let logs = all_log_text(dir.path());
    assert!(
        logs.contains("no console progress bar, stderr is not a terminal"),
        "{logs}"
    );

    // A terminal without the setting (spark-submit's default): no bar either.
    let dir = tempfile::tempdir().unwrap();
    let (master, slave) = pty();
    let mut cmd = submit(dir.path(), &[]);
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::from(slave))
        .spawn()
        .unwrap();
    drop(cmd);
    let rx = terminal_chunks(master);
    let deadline = Instant::now() + RUN_BOUND;
    let mut text = String::new();
    loop {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(chunk) => text.push_str(&chunk),
            Err(RecvTimeoutError::Disconnected) => break,
            Err(RecvTimeoutError::Timeout) => {
                let _ = child.kill();
                panic!("the run did not end within {RUN_BOUND:?}:\n{text}")
            }
        }
    }
    let code = wait_exit_within(&mut child, RUN_BOUND);
    assert_eq!(code, 0, "{text}");
    assert!(!text.contains("[Stage"), "{text}");
}

#[test]
fn cluster_mode_submit_on_a_terminal_shows_the_application_s_progress_from_its_reports() {
    let dir = tempfile::tempdir().unwrap();
    let (master, slave) = pty();
    let mut cmd = Command::new(BIN);
    cmd.args(["submit", "--config-dir", &config_dir()])
        .args(["--log-dir", dir.path().to_str().unwrap()])
        .args(["--deploy-mode", "cluster"])
        .args(["--conf", "spark.yarn.report.interval=100ms"])
        .args(["--conf", "spark.yarn.scheduler.heartbeat.interval-ms=100"])
        // On, but the driver is in the AM's container: no stage bar on this terminal.
        .args(["--conf", "spark.ui.showConsoleProgress=true"])
        .args(["--class", "sparkyard.examples.SleepTasks", "x.jar"])
        .args(["--tasks", "40", "--ms", "150"])
        .env_remove("RUST_LOG")
        .env("RUST_BACKTRACE", "0")
        .env("COLUMNS", "80")
        .stdin(Stdio::null());
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::from(slave))
        .spawn()
        .unwrap();
    drop(cmd);
    let rx = terminal_chunks(master);
    let re = regex::Regex::new(r"\r(\[application_\d+_\d+:[=> ]*\((\d+)%\)\])\r").unwrap();
    let deadline = Instant::now() + RUN_BOUND;
    let mut text = String::new();
    // Until two different percentages have been drawn, one of them strictly between Spark's
    // constant 10% and 100% (the AM reports its stages' finished share), bounded.
    loop {
        let mut percents: Vec<u32> = re.captures_iter(&text).map(|c| c[2].parse().unwrap()).collect();
        let midway = percents.iter().any(|p| (11..100).contains(p));
        percents.dedup();
        if percents.len() >= 2 && midway {
            break;
        }
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(chunk) => text.push_str(&chunk),
            Err(e) => {
                let _ = child.kill();
                panic!("no moving progress line ({e:?}); the terminal showed:\n{text:?}")
            }
        }
    }
    loop {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(chunk) => text.push_str(&chunk),
            Err(RecvTimeoutError::Disconnected) => break,
            Err(RecvTimeoutError::Timeout) => {
                let _ = child.kill();
                panic!("the run did not end within {RUN_BOUND:?}:\n{text:?}")
            }
        }
    }
    let code = wait_exit_within(&mut child, RUN_BOUND);
    assert_eq!(code, 0, "{text}");
    let drawn: Vec<&str> = re
        .captures_iter(&text)
        .map(|c| c.get(1).unwrap().as_str())
        .collect();
    assert!(drawn.iter().all(|d| d.len() == 80), "{drawn:?}");
    let percents: Vec<u32> = re.captures_iter(&text).map(|c| c[2].parse().unwrap()).collect();
    assert!(percents.iter().all(|p| *p <= 100), "{percents:?}");
    // Erased at the end, before the final report.
    let erase = format!("\r{}\r", " ".repeat(80));
    let last = text.rfind("[application_").unwrap();
    assert!(text.rfind(&erase).is_some_and(|at| at > last), "{text:?}");
    // The driver's own bar is not drawn in cluster mode (no stage line on this terminal).
    assert!(!text.contains("[Stage"), "{text:?}");
}

#[test]
fn a_bad_progress_setting_is_one_line_naming_it_and_exit_1() {
    for (conf, key) in [
        (
            "spark.ui.consoleProgress.update.interval=0",
            "spark.ui.consoleProgress.update.interval",
        ),
        (
            "spark.ui.showConsoleProgress=maybe",
            "spark.ui.showConsoleProgress",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let out = common::process::run_to_end(submit(dir.path(), &[conf]));
        assert_eq!(out.code, 1, "{conf}: {}", out.stderr);
        let lines: Vec<&str> = out.stderr.lines().filter(|l| l.contains(key)).collect();
        assert_eq!(lines.len(), 1, "{conf}: {}", out.stderr);
        assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    }
}

/// Every log file's text under `dir`.
fn all_log_text(dir: &std::path::Path) -> String {
    let mut text = String::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().map(Result::unwrap) {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(t) = std::fs::read_to_string(&p) {
                text.push_str(&t);
            }
        }
    }
    text
}
