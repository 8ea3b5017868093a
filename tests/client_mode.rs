//! Client mode's YARN side and the embedded `local-cluster[N,C,M]`, through the binary: a
//! clean client-mode run logs no ERROR (the application state monitor is stopped before the
//! driver, so the end the driver's stop causes is expected); an application that ends while
//! the driver waits for executors stops the driver at once with Spark's messages;
//! `local-cluster[2,1,2048]` has room for both executors besides the AM; and a job no
//! executor can ever take gets Spark's starvation warning every `spark.starvation.timeout`.
//!
//! Each run waits for its end or the line it checks, bounded (a run that would wait out a
//! ten-minute setting fails the bound instead).

mod common;

use std::process::{Command, Stdio};

use common::process::{config_dir, interrupt, lines, run_to_end, wait_exit, wait_for, Out, BIN};

/// Longer than any bound of these tests: a run that finishes did not wait it out.
const NEVER: &str = "spark.scheduler.maxRegisteredResourcesWaitingTime=10min";

fn submit(log_dir: &std::path::Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(["submit", "--config-dir", &config_dir()])
        .args(["--log-dir", log_dir.to_str().unwrap()])
        .args(["--conf", "spark.yarn.report.interval=100ms"])
        .args(args);
    cmd
}

fn run(args: &[&str]) -> Out {
    let dir = tempfile::tempdir().unwrap();
    run_to_end(submit(dir.path(), args))
}

fn error_lines(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.contains(" ERROR ")).collect()
}

#[test]
fn clean_client_mode_runs_log_no_error() {
    let apps: [&[&str]; 2] = [
        &["--class", "sparkyard.examples.MapCount", "x.jar"],
        &["--class", "org.apache.spark.examples.SparkPi", "x.jar", "4"],
    ];
    for _ in 0..3 {
        for app in apps {
            let o = run(&[&["--deploy-mode", "client"], app].concat());
            assert_eq!(o.code, 0, "{}", o.stderr);
            assert_eq!(error_lines(&o.stderr), Vec::<&str>::new(), "{}", o.stderr);
        }
    }
}

#[test]
fn an_application_that_ends_early_stops_the_client_mode_driver_at_once() {
    // No container may have 64 vcores: each AM attempt fails at its first allocation, while
    // the driver waits for executors (and would wait ten minutes).
    let o = run(&[
        "--conf",
        NEVER,
        "--executor-cores",
        "64",
        "--class",
        "sparkyard.examples.MapCount",
        "x.jar",
    ]);
    assert_eq!(o.code, 1, "{}", o.stderr);
    for line in [
        "YARN application has exited unexpectedly with state FAILED! Check the YARN application logs for more details.",
        "Diagnostics message: Uncaught exception: Invalid resource request!",
        "Exception in thread \"main\" java.lang.IllegalStateException: Spark context stopped while waiting for backend",
    ] {
        assert!(o.stderr.contains(line), "no {line:?} in:\n{}", o.stderr);
    }
    assert!(!o.stdout.contains("Count:"), "{}", o.stdout);
}

/// Every line of every file under `dir`.
fn log_lines(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().map(Result::unwrap) {
        let path = entry.path();
        if path.is_dir() {
            out.extend(log_lines(&path));
        } else {
            out.extend(
                std::fs::read_to_string(&path)
                    .unwrap()
                    .lines()
                    .map(str::to_string),
            );
        }
    }
    out
}

#[test]
fn local_cluster_has_room_for_every_executor_besides_the_am() {
    for mode in ["client", "cluster"] {
        let dir = tempfile::tempdir().unwrap();
        let o = run_to_end(submit(
            dir.path(),
            &[
                "--master",
                "local-cluster[2,1,2048]",
                "--deploy-mode",
                mode,
                "--conf",
                NEVER,
                "--class",
                "sparkyard.examples.MapCount",
                "x.jar",
            ],
        ));
        assert_eq!(o.code, 0, "{mode}: {}", o.stderr);
        assert!(o.stdout.contains("Count: 10"), "{mode}: {}", o.stdout);
        let logs = log_lines(dir.path());
        assert!(
            logs.iter()
                .any(|l| l.contains("after reached minRegisteredResourcesRatio")),
            "{mode}: both executors registered"
        );
    }
}

#[test]
fn a_job_no_executor_can_take_gets_the_starvation_warning() {
    // One node of 2048 MB: the AM's 1024 MB leave no room for an executor's 2048 MB (1408
    // rounded up), which still fits the largest node, so YARN keeps the ask pending.
    let conf = tempfile::tempdir().unwrap();
    std::fs::write(
        conf.path().join("yarn-site.conf"),
        "yarn.sparkyard.nodemanager.host1  rack=/rack1,memory-mb=2048,vcores=2\n",
    )
    .unwrap();
    std::fs::write(conf.path().join("spark-defaults.conf"), "").unwrap();
    let logs = tempfile::tempdir().unwrap();
    let mut child = Command::new(BIN)
        .args(["submit", "--config-dir", conf.path().to_str().unwrap()])
        .args(["--log-dir", logs.path().to_str().unwrap()])
        .args(["--conf", "spark.starvation.timeout=100ms"])
        .args([
            "--conf",
            "spark.scheduler.maxRegisteredResourcesWaitingTime=100ms",
        ])
        .args(["--class", "sparkyard.examples.MapCount", "x.jar"])
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = lines(child.stderr.take().unwrap());
    let mut seen = Vec::new();
    let warning = wait_for(
        &err,
        "Initial job has not accepted any resources; check your cluster UI to ensure that workers are registered and have sufficient resources",
        &mut seen,
    );
    assert!(warning.contains(" WARN "), "{warning}");
    // It repeats while nothing launches.
    wait_for(&err, "Initial job has not accepted any resources", &mut seen);
    interrupt(&child);
    assert_eq!(wait_exit(&mut child), 130);
    let cancelled = wait_for(&err, "Exception in thread \"main\"", &mut seen);
    assert!(
        cancelled.contains("Job 0 cancelled because SparkContext was shut down"),
        "{cancelled}"
    );
}
