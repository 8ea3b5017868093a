//! Containers as processes and NodeManagers apart: a `sparkyard resourcemanager` and three
//! `sparkyard nodemanager` processes bound to 127.0.0.1, 127.0.0.2 and 127.0.0.3 (three hosts
//! on one machine), whose containers are OS processes. The applications run in both deploy
//! modes with the results the embedded cluster gives; `kill -9` (through `sparkyard chaos
//! signal`) of an executor's process, of the AM's process and of a NodeManager's process each
//! heal; a container over its memory is killed with -104.

mod common;

use std::process::{Command, Stdio};

use common::apps::{check_word_count, word_file};
use common::process::{app_id_in, config_dir, wait_exit, wait_for, BIN};
use common::yarn_processes::{eventually, host_of, long_app, ok, wait_long, Yarn};

/// SparkPi's line on the embedded cluster (in process): the estimate a run gives.
fn embedded_pi(slices: &str) -> String {
    let logs = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(["submit", "--config-dir", &config_dir(), "--log-dir"])
        .arg(logs.path())
        .args(["--class", "org.apache.spark.examples.SparkPi", "x.jar", slices])
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    pi_line(&ok(out))
}

fn pi_line(stdout: &str) -> String {
    stdout
        .lines()
        .find(|l| l.starts_with("Pi is roughly "))
        .unwrap_or_else(|| panic!("no Pi line in:\n{stdout}"))
        .to_string()
}

#[test]
fn three_nodemanager_processes_run_the_applications_in_both_modes_with_the_embedded_results() {
    let want_pi = embedded_pi("10");
    let yarn = Yarn::start(3, &[]);
    let pi = ["--class", "org.apache.spark.examples.SparkPi", "x.jar", "10"];
    for mode in ["cluster", "client"] {
        let out = ok(yarn
            .submit(&[&["--deploy-mode", mode][..], &pi[..]].concat())
            .output()
            .unwrap());
        assert_eq!(pi_line(&out), want_pi, "SparkPi in {mode} mode");
    }
    let (_dir, path, want) = word_file();
    let wc = [
        "--class",
        "org.apache.spark.examples.JavaWordCount",
        "x.jar",
        &path,
    ];
    for mode in ["cluster", "client"] {
        let out = ok(yarn
            .submit(&[&["--deploy-mode", mode][..], &wc[..]].concat())
            .output()
            .unwrap());
        check_word_count(&out, &want);
    }
    // Every container was a process of its own, with its output in the NodeManager's log
    // directory as YARN keeps it.
    let stdouts = std::fs::read_dir(yarn.logs.path().join("apps"))
        .unwrap()
        .flat_map(|app| std::fs::read_dir(app.unwrap().path()).unwrap())
        .filter(|c| c.as_ref().unwrap().path().join("stdout").is_file())
        .count();
    assert!(
        stdouts >= 4 * 3,
        "{stdouts} container stdout files for four applications"
    );
}

#[test]
fn kill_9_of_an_executor_process_and_of_the_am_process_heal() {
    let yarn = Yarn::start(3, &[]);

    // An executor's process, killed mid-job: its tasks run again elsewhere.
    let (mut running, _err, app) = long_app(&yarn, &[]);
    eventually("an executor", || {
        yarn.actors(&app)
            .iter()
            .any(|a| a["path"].as_str().is_some_and(|p| p.ends_with("/executor-1")))
            .then_some(())
    });
    let o = yarn.control(&["chaos", "signal", "KILL", "--executor", "1", "--app", &app]);
    let said = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(said.starts_with("sent SIGKILL to container_"), "{said}");
    assert_eq!(wait_long(&mut running), 0, "the job heals");
    let records = eventually("the lost executor in the records", || {
        let r = yarn.app_logs(&app);
        r.contains("Exit status: 137").then_some(r)
    });
    // Spark's words for an exit status that is neither YARN's nor a known Spark one.
    assert!(
        records.contains("Container from a bad node: container_"),
        "{records}"
    );
    assert!(records.contains("Lost executor 1 on host"), "{records}");

    // The AM's process, killed: the attempt fails and the next one runs the application.
    let (mut running, err, app) = long_app(&yarn, &[]);
    let am_host = host_of(&yarn, &app, "/am/application-master");
    assert!(am_host.starts_with("host"), "{am_host}");
    let o = yarn.control(&["chaos", "signal", "KILL", "--container", "container_*_01_000001"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(wait_long(&mut running), 0, "the second attempt succeeds");
    let mut seen = Vec::new();
    let report = wait_for(&err, "Final report for", &mut seen);
    assert!(
        report.contains("state FINISHED, final status SUCCEEDED"),
        "{report}"
    );
    assert!(
        report.contains("attempt appattempt_") && report.contains("_000002"),
        "{report}"
    );
}

#[test]
fn kill_9_of_a_nodemanager_process_loses_its_node_and_the_job_heals() {
    let yarn = Yarn::start(3, &["yarn.nm.liveness-monitor.expiry-interval-ms=1500"]);
    let (mut running, _err, app) = long_app(&yarn, &[]);
    let am_host = host_of(&yarn, &app, "/am/application-master");
    let victim = eventually("an executor on a host without the AM", || {
        yarn.actors(&app).into_iter().find_map(|a| {
            let path = a["path"].as_str()?.to_string();
            let host = path.split('/').nth(2)?.strip_prefix("nm-")?.to_string();
            (path.contains("/executor-") && host != am_host).then_some(host)
        })
    });
    let o = yarn.control(&["chaos", "signal", "KILL", "--host", &victim]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).starts_with(&format!("sent SIGKILL to NodeManager {victim}")));
    assert_eq!(wait_long(&mut running), 0, "the job heals");
    let nodes = yarn.control(&["rmadmin", "nodes"]);
    let nodes = String::from_utf8_lossy(&nodes.stdout);
    assert!(
        nodes.lines().any(|l| l.contains(&victim) && l.contains("LOST")),
        "{nodes}"
    );
    let records = yarn.app_logs(&app);
    assert!(records.contains("lost* node"), "{records}");
}

#[test]
fn a_container_beyond_its_memory_is_killed_with_minus_104() {
    // An executor container of 2 MB: its process is over it at the first check.
    let yarn = Yarn::start(
        1,
        &[
            "yarn.scheduler.minimum-allocation-mb=1",
            "yarn.nodemanager.container-monitor.interval-ms=100",
        ],
    );
    let out = yarn
        .submit(&[
            "--deploy-mode",
            "cluster",
            "--conf",
            "spark.executor.memory=1m",
            "--conf",
            "spark.executor.memoryOverhead=1m",
            "--conf",
            "spark.yarn.max.executor.failures=2",
            "--class",
            "sparkyard.examples.SleepTasks",
            "x.jar",
            "--tasks",
            "20",
            "--ms",
            "500",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let app = app_id_in(
        stderr
            .lines()
            .find(|l| l.contains("Application report for"))
            .unwrap_or_else(|| panic!("an application report in:\n{stderr}")),
    );
    let records = eventually("the memory kill in the records", || {
        let r = yarn.app_logs(&app);
        r.contains("beyond the 'PHYSICAL' memory limit").then_some(r)
    });
    assert!(records.contains("exit status: -104"), "{records}");
    assert!(
        records.contains("Container killed by YARN for exceeding physical memory limits"),
        "{records}"
    );
}

#[test]
fn the_embedded_cluster_runs_containers_as_processes_when_asked() {
    let want_pi = embedded_pi("10");
    let logs = tempfile::tempdir().unwrap();
    for mode in ["client", "cluster"] {
        let out = Command::new(BIN)
            .args(["submit", "--config-dir", &config_dir(), "--log-dir"])
            .arg(logs.path())
            .args([
                "--conf",
                "spark.sparkyard.containers=process",
                "--deploy-mode",
                mode,
            ])
            .args(["--class", "org.apache.spark.examples.SparkPi", "x.jar", "10"])
            .env_remove("RUST_LOG")
            .output()
            .unwrap();
        assert_eq!(pi_line(&ok(out)), want_pi, "{mode} mode");
    }
    let stderr_files = std::fs::read_dir(logs.path().join("apps"))
        .unwrap()
        .flat_map(|app| std::fs::read_dir(app.unwrap().path()).unwrap())
        .filter(|c| c.as_ref().unwrap().path().join("stderr").is_file())
        .count();
    assert!(
        stderr_files >= 5,
        "{stderr_files} container processes' stderr files"
    );
}

#[test]
fn a_nodemanager_that_cannot_join_says_why_in_one_line() {
    let nm = |args: &[&str]| {
        let out = Command::new(BIN)
            .args(["nodemanager", "--config-dir", &config_dir()])
            .args(args)
            .env_remove("RUST_LOG")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = out;
        let code = wait_exit(&mut out);
        let mut err = String::new();
        std::io::Read::read_to_string(&mut out.stderr.take().unwrap(), &mut err).unwrap();
        (code, err)
    };
    // Nothing listens at the address: bounded retries, then one line naming it.
    let (code, err) = nm(&[
        "--rm",
        "127.0.0.1:1",
        "--hostname",
        "h",
        "--conf",
        "yarn.resourcemanager.connect.max-wait.ms=300",
        "--conf",
        "yarn.resourcemanager.connect.retry-interval.ms=100",
    ]);
    assert_eq!(code, 1, "{err}");
    let last = err.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("sparkyard nodemanager: error: cannot reach the ResourceManager at 127.0.0.1:1"),
        "{err}"
    );
    // Bad flags.
    let (code, err) = nm(&["--rm", "nowhere", "--hostname", "h"]);
    assert_eq!(
        (code, err.trim()),
        (1, "sparkyard nodemanager: error: --rm 'nowhere' is not HOST:PORT")
    );
    let (code, err) = nm(&["--rm", "127.0.0.1:1", "--hostname", "h", "--bind", "here"]);
    assert_eq!(
        (code, err.trim()),
        (
            1,
            "sparkyard nodemanager: error: --bind 'here' is not an IP address"
        )
    );
    let (code, err) = nm(&["--rm", "127.0.0.1:1", "--hostname", "a/b"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("--hostname 'a/b' is not a host name"), "{err}");

    // A NodeManager of another cluster: refused, with one line on each side.
    let yarn = Yarn::start(0, &[]);
    let (code, err) = nm(&[
        "--rm",
        &yarn.tracker,
        "--hostname",
        "stranger",
        "--bind",
        "127.0.0.9",
        "--conf",
        "yarn.resourcemanager.cluster-id=elsewhere",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("elsewhere"), "{err}");
    let rm_side = eventually("the refusal in the RM's records", || {
        let o = Command::new(BIN)
            .args(["logs", "--log-dir", yarn.logs.path().to_str().unwrap()])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        text.contains("elsewhere").then_some(text)
    });
    assert!(rm_side.contains("stranger"), "{rm_side}");
}
