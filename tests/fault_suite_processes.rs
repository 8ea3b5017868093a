//! The fault-injection suite with containers as processes: a `sparkyard resourcemanager` and
//! three `sparkyard nodemanager` processes (127.0.0.1–3) whose containers are OS processes,
//! every process writing its records into one log directory. While a short job runs, the
//! driver's actors and the ApplicationMaster's (in the AM's process), the executor backend
//! and a container's process (`<container>/process`, in the NodeManager's process), the
//! ApplicationMaster itself, and the ResourceManager and a NodeManager (in their own
//! processes) are killed with `sparkyard chaos kill <glob>` (a stop, or a panic with
//! `--panic`), which the node forwards to the process that holds the actor; the story is then
//! read back with `sparkyard logs --app <id> --json`.
//!
//! The checks are those of the in-process suite (tests/fault_suite_driver.rs and
//! tests/fault_suite_yarn.rs): a single kill heals (the actor comes back as incarnation 2 at
//! its path, or Spark replaces the executor, and the application ends SUCCEEDED with the
//! whole job's output); kills beyond the supervisor's restart intensity
//! (`spark.sparkyard.supervisor.maxRestarts=1`, killed twice) end the application as Spark
//! and YARN do: the driver's supervisor gives up and the AM exits 15; the AM's supervisor
//! gives up and its container exits 1; executors past `spark.executor.maxNumFailures` end it
//! with exit code 11.
//!
//! A kill cannot be timed by task count from outside the processes, so each waits for its
//! victim to run (`sparkyard actors --json --app`) and for tasks to have finished (the
//! records), then fires. Every glob names the application's containers, so it hits one run.

mod common;

use std::process::Child;
use std::sync::mpsc::Receiver;

use common::yarn_processes::{eventually, running, wait_long, Yarn};
use serde_json::Value as Json;

/// Tasks of the job every run submits, and how long each sleeps: about 1.2 s on two
/// single-core executors, long enough for two kills and for tasks to finish after them.
const TASKS: usize = 48;
const TASK_MS: &str = "50";

/// The settings of every run, as the in-process suite's: short intervals, two executors,
/// one attempt.
const SUITE_CONF: &[&str] = &[
    "spark.executor.instances=2",
    "spark.yarn.maxAppAttempts=1",
    "spark.yarn.scheduler.heartbeat.interval-ms=100ms",
    "spark.executor.heartbeatInterval=100ms",
    "spark.network.timeout=2s",
    "spark.network.timeoutInterval=200ms",
    "spark.rpc.askTimeout=5s",
    "spark.scheduler.revive.interval=100ms",
    "spark.scheduler.minRegisteredResourcesRatio=1.0",
    "spark.scheduler.maxRegisteredResourcesWaitingTime=3s",
];

/// Dynamic allocation (its backlog time-out is in whole seconds, as Spark reads it).
const DYNAMIC: &[&str] = &[
    "spark.dynamicAllocation.enabled=true",
    "spark.dynamicAllocation.schedulerBacklogTimeout=1s",
];

/// A running application: its `submit` process, that process's stderr lines, its id.
struct Job {
    submit: Child,
    _stderr: Receiver<String>,
    app: String,
}

/// How a run ended.
struct Ended {
    app: String,
    /// `submit`'s exit status.
    code: i32,
    /// `submit`'s stdout: the AM container's output in cluster mode.
    output: String,
    /// The Client's final report record (`final_status`, `diagnostics`).
    report: Json,
    records: Vec<Json>,
}

impl Ended {
    fn final_status(&self) -> &str {
        self.report["final_status"].as_str().unwrap_or("")
    }

    fn diagnostics(&self) -> &str {
        self.report["diagnostics"].as_str().unwrap_or("")
    }

    fn msgs(&self) -> Vec<&str> {
        self.records.iter().map(msg_of).collect()
    }

    fn events(&self, name: &str) -> Vec<&Json> {
        self.records.iter().filter(|r| r["event"] == name).collect()
    }

    /// Fails with the run's diagnostics and output unless the application SUCCEEDED and
    /// its job ran every task.
    fn assert_succeeded(&self) {
        assert_eq!(
            (self.code, self.final_status()),
            (0, "SUCCEEDED"),
            "{}: diagnostics: {}\noutput:\n{}",
            self.app,
            self.diagnostics(),
            self.output
        );
        let done = format!("SleepTasks: job 0: {TASKS} tasks of {TASK_MS} ms done in ");
        assert!(
            self.output.contains(&done),
            "{}: output:\n{}",
            self.app,
            self.output
        );
    }

    /// The story of one kill of the actor at `path`, in order: the injection, the
    /// incarnation's failure with the reason the kill gives, a new incarnation (2 or more) at
    /// the same path, a task finishing after the kill.
    fn assert_killed_and_restarted(&self, path: &str) {
        let r = &self.records;
        let at = |from: usize, what: &str, pred: &dyn Fn(&Json) -> bool| -> usize {
            r.iter()
                .enumerate()
                .skip(from)
                .find(|(_, rec)| pred(rec))
                .map(|(i, _)| i)
                .unwrap_or_else(|| panic!("{}: no {what} of {path} after record {from}", self.app))
        };
        let injected = at(0, "fault_injected", &|rec| {
            rec["event"] == "fault_injected" && actor_of(rec) == path
        });
        let failed = at(injected, "actor_failed", &|rec| {
            rec["event"] == "actor_failed" && actor_of(rec) == path
        });
        let reason = r[failed]["reason"].as_str().unwrap_or("");
        assert!(
            reason.starts_with("killed by sparkyard chaos kill")
                || reason.starts_with("panic: injected panic"),
            "the failure names the kill: {reason}"
        );
        let restarted = at(failed, "actor_restarted", &|rec| {
            rec["event"] == "actor_restarted" && actor_of(rec) == path
        });
        assert!(r[restarted]["incarnation"].as_u64().unwrap_or(0) >= 2);
        at(injected, "finished task", &|rec| is_finished_task(rec));
    }

    /// The records from the first kill of `path` on.
    fn after_kill(&self, path: &str) -> &[Json] {
        let at = self
            .records
            .iter()
            .position(|r| r["event"] == "fault_injected" && actor_of(r) == path)
            .unwrap_or_else(|| panic!("{}: no kill of {path}", self.app));
        &self.records[at..]
    }
}

fn msg_of(r: &Json) -> &str {
    r["msg"].as_str().unwrap_or("")
}

fn actor_of(r: &Json) -> &str {
    r["actor"].as_str().unwrap_or("")
}

fn is_finished_task(r: &Json) -> bool {
    let m = msg_of(r);
    m.starts_with("Finished task") && m.contains(" ms on ")
}

/// The first record in `records` whose message contains `text`.
fn find<'a>(records: &'a [Json], text: &str) -> &'a Json {
    records
        .iter()
        .find(|r| msg_of(r).contains(text))
        .unwrap_or_else(|| {
            let all: Vec<String> = records
                .iter()
                .map(|r| format!("{} {}", actor_of(r), msg_of(r)))
                .collect();
            panic!("no record '{text}' in:\n{}", all.join("\n"))
        })
}

/// Submits the suite's job (cluster mode) with `extra` settings and follows it until it
/// runs.
fn start(yarn: &Yarn, extra: &[&str]) -> Job {
    start_tasks(yarn, extra, TASKS)
}

/// [`start`] with a job of `tasks` tasks.
fn start_tasks(yarn: &Yarn, extra: &[&str], tasks: usize) -> Job {
    let tasks = tasks.to_string();
    let mut args: Vec<&str> = vec!["--deploy-mode", "cluster"];
    for c in SUITE_CONF.iter().chain(extra) {
        args.extend(["--conf", c]);
    }
    args.extend(["--class", "sparkyard.examples.SleepTasks", "x.jar"]);
    args.extend(["--tasks", &tasks, "--ms", TASK_MS]);
    let (submit, stderr, app) = running(yarn, &args);
    Job {
        submit,
        _stderr: stderr,
        app,
    }
}

/// A glob for the actors of `app` whose path ends with `suffix` (in any of its containers).
fn glob_of(app: &str, suffix: &str) -> String {
    format!(
        "/node/nm-*/container_{}_*{suffix}",
        app.trim_start_matches("application_")
    )
}

/// Waits until an actor of the job whose path ends with `suffix` runs as incarnation
/// `incarnation` (or later) and at least `tasks` tasks have finished; answers its path.
fn victim(yarn: &Yarn, job: &Job, suffix: &str, incarnation: u64, tasks: usize) -> String {
    let path = eventually(&format!("{suffix} (incarnation {incarnation}) running"), || {
        yarn.actors(&job.app).into_iter().find_map(|a| {
            let path = a["path"].as_str()?;
            (path.ends_with(suffix) && a["incarnation"].as_u64()? >= incarnation && a["status"] == "running")
                .then(|| path.to_string())
        })
    });
    eventually(&format!("{tasks} finished tasks"), || {
        let done = yarn
            .records(&job.app)
            .iter()
            .filter(|r| is_finished_task(r))
            .count();
        (done >= tasks).then_some(())
    });
    path
}

/// `sparkyard chaos kill <glob> [--panic]`: checks it killed something and answers what it
/// printed.
fn kill(yarn: &Yarn, glob: &str, panic: bool) -> String {
    let mut args = vec!["chaos", "kill", glob];
    if panic {
        args.push("--panic");
    }
    let o = yarn.control(&args);
    let said = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(
        o.status.code(),
        Some(0),
        "chaos kill {glob}: {}{said}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(said.starts_with("killed ("), "{said}");
    said
}

/// Follows the job to its end and reads its records, once the Client's final report and
/// the records `wanted` names are in them (processes write theirs as they end).
fn end(yarn: &Yarn, mut job: Job, wanted: &[&str]) -> Ended {
    let code = wait_long(&mut job.submit);
    let mut output = String::new();
    if let Some(mut out) = job.submit.stdout.take() {
        use std::io::Read;
        let _ = out.read_to_string(&mut output);
    }
    let mut records = eventually(&format!("{}'s final report", job.app), || {
        let records = yarn.records(&job.app);
        records
            .iter()
            .any(|r| msg_of(r).starts_with("Final report for"))
            .then_some(records)
    });
    // The processes of the application write their last records as they end.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let missing: Vec<&&str> = wanted
            .iter()
            .filter(|w| !records.iter().any(|r| msg_of(r).contains(**w)))
            .collect();
        if missing.is_empty() {
            break;
        }
        if std::time::Instant::now() > deadline {
            let story: Vec<String> = records
                .iter()
                .filter(|r| !msg_of(r).contains(" task ") && !msg_of(r).starts_with("Application report"))
                .map(|r| format!("{} {} {}", r["ts"], actor_of(r), msg_of(r)))
                .collect();
            panic!(
                "{}: no record {missing:?} (submit exited {code}); records:\n{}",
                job.app,
                story.join("\n")
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        records = yarn.records(&job.app);
    }
    let report = records
        .iter()
        .find(|r| msg_of(r).starts_with("Final report for"))
        .cloned()
        .unwrap_or_default();
    Ended {
        app: job.app,
        code,
        output,
        report,
        records,
    }
}

// ------------------------------------------------------------------ killed once

/// Kills the job's actor ending in `suffix` once (a panic or a stop) after 4 finished
/// tasks: it comes back as a new incarnation and the application SUCCEEDED with the whole
/// job. Each record of `recovered` must follow the kill.
fn killed_once(yarn: &Yarn, suffix: &str, panic: bool, extra: &[&str], recovered: &[&str]) -> Ended {
    let job = start(yarn, extra);
    let path = victim(yarn, &job, suffix, 1, 4);
    kill(yarn, &glob_of(&job.app, suffix), panic);
    let run = end(yarn, job, recovered);
    run.assert_succeeded();
    run.assert_killed_and_restarted(&path);
    let after = run.after_kill(&path);
    for text in recovered {
        find(after, text);
    }
    run
}

#[test]
fn driver_actors_killed_once_in_the_am_process_heal() {
    let yarn = Yarn::start(3, &[]);

    let r = killed_once(
        &yarn,
        "/am/driver/driver-endpoint",
        true,
        &[],
        &[
            "DriverEndpoint restarted: asking every executor",
            // The executors, in their own processes, wait for the new incarnation instead
            // of taking the failure for the driver's end.
            "is back; watching its new incarnation",
            "Reported again to the restarted driver endpoint",
        ],
    );
    drop(r);

    killed_once(
        &yarn,
        "/am/driver/dag-scheduler",
        false,
        &[],
        &["DAGScheduler restarted with 1 active job(s)"],
    );

    killed_once(&yarn, "/am/driver/yarn-scheduler-endpoint", true, &[], &[]);

    killed_once(&yarn, "/am/driver/revive-timer", true, &[], &[]);

    killed_once(
        &yarn,
        "/am/driver/speculation-timer",
        false,
        &["spark.speculation=true"],
        &[],
    );

    let r = killed_once(
        &yarn,
        "/am/driver/executor-allocation-manager",
        true,
        DYNAMIC,
        &["Dynamic allocation: requesting a total of"],
    );
    assert!(r
        .msgs()
        .iter()
        .any(|l| l.starts_with("Dynamic allocation: requesting a total of")
            && l.contains("re-sync after a restart")));

    let r = killed_once(&yarn, "/am/driver/heartbeat-receiver", false, &[], &[]);
    assert!(r.events("executor_expired").is_empty(), "no executor expired");

    // The event log, written by the AM's process, holds every task's end, the job's end and
    // the application's end.
    let dir = tempfile::tempdir().unwrap();
    let event_dir = format!("spark.eventLog.dir={}", dir.path().display());
    killed_once(
        &yarn,
        "/am/driver/listener-bus",
        true,
        &["spark.eventLog.enabled=true", &event_dir],
        &["Listener bus restarted with its"],
    );
    let file = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(Result::ok)
        .find(|e| !e.file_name().to_string_lossy().ends_with(".inprogress"))
        .expect("a finished event log");
    let text = std::fs::read_to_string(file.path()).unwrap();
    let count = |event: &str| {
        text.lines()
            .filter(|l| l.contains(&format!("\"Event\":\"{event}\"")))
            .count()
    };
    assert_eq!(count("SparkListenerTaskEnd"), TASKS);
    assert_eq!(count("SparkListenerJobEnd"), 1);
    assert_eq!(count("SparkListenerApplicationEnd"), 1);
}

#[test]
fn am_actors_killed_once_in_the_am_process_restart_in_place() {
    let yarn = Yarn::start(3, &[]);

    let r = killed_once(
        &yarn,
        "/am/allocator",
        true,
        &[],
        &["Allocator restarted with its state: 2 executor(s) running"],
    );
    assert!(
        !r.msgs().iter().any(|m| m.contains("for executor with ID 3")),
        "no replacement executor was launched"
    );

    killed_once(
        &yarn,
        "/am/reporter",
        false,
        &[],
        &["Started progress reporter thread"],
    );

    killed_once(
        &yarn,
        "/am/launcher",
        true,
        &[],
        &["Container launcher restarted"],
    );

    let r = killed_once(
        &yarn,
        "/am/am-endpoint",
        true,
        &[],
        &["Registering the AMEndpoint with the driver"],
    );
    assert!(
        !r.msgs().iter().any(|m| m.contains("Stale executor")),
        "the same AM's executors are not stale"
    );
}

/// The job's first executor container, killed once (its executor backend, or the
/// container's process: `kill_target` answers the glob for the container's id): its process
/// exits with `status` (143 after a stop, as SIGTERM; 50 after a panic of the backend, an
/// uncaught exception); its NodeManager and the RM say so, the allocator counts it and asks
/// for a replacement, the driver removes the executor and its running task runs again
/// elsewhere.
fn executor_container_killed_once(
    yarn: &Yarn,
    kill_target: impl Fn(&str) -> String,
    panic: bool,
    status: i32,
) {
    let job = start(yarn, &[]);
    let path = victim(yarn, &job, "/executor-1", 1, 4);
    let container = path.rsplit('/').nth(1).unwrap().to_string();
    let host = path
        .split('/')
        .nth(2)
        .unwrap()
        .trim_start_matches("nm-")
        .to_string();
    let target = kill_target(&container);
    let said = kill(yarn, &target, panic);
    let killed = said.split_whitespace().nth(2).unwrap_or_default().to_string();
    let bad_node = format!("Container from a bad node: {container} on host: {host}. Exit status: {status}.");
    let run = end(yarn, job, &[&bad_node]);
    run.assert_succeeded();
    let after = run.after_kill(&killed);
    if !(panic && killed.ends_with("/process")) {
        // The process ended and its actor saw it (a panic of that actor kills the process
        // group from its guard instead).
        find(after, &format!("Container {container}'s process"));
    }
    find(
        after,
        &format!("Container {container} transitioned from RUNNING to EXITED with exit code {status}"),
    );
    find(
        after,
        &format!("Container {container} completed with exit status {status}"),
    );
    find(after, &bad_node);
    find(after, &format!("Removed executor 1 on {host}"));
    find(after, "for executor with ID 3");
    assert!(after.iter().any(is_finished_task), "tasks finish after the kill");
}

#[test]
fn executor_backend_killed_once_in_its_process_exits_and_is_replaced() {
    let yarn = Yarn::start(3, &[]);
    let backend = |container: &str| format!("/node/nm-*/{container}/executor-*");
    executor_container_killed_once(&yarn, backend, false, 143);
    executor_container_killed_once(&yarn, backend, true, 50);
}

#[test]
fn container_process_killed_once_ends_its_container_and_the_executor_is_replaced() {
    // A stop of `<container>/process` is YARN's stop of a container: SIGTERM to its
    // process group; the process runs its shutdown and exits 143. A panic is the
    // NodeManager's side of the container failing: its guard kills the process group and
    // the container completes with the panic's 50.
    let yarn = Yarn::start(3, &[]);
    let process = |container: &str| {
        format!(
            "/node/nm-*/container_{}/process",
            container.trim_start_matches("container_")
        )
    };
    executor_container_killed_once(&yarn, process, false, 143);
    executor_container_killed_once(&yarn, process, true, 50);
}

// ------------------------------------------------------------------ beyond intensity

/// Kills the job's actor ending in `suffix` twice with at most one restart allowed: a
/// panic after 4 finished tasks, and `second` (a panic, or a stop) once the second
/// incarnation runs. Answers the run and the victim's path.
fn killed_twice(
    yarn: &Yarn,
    suffix: &str,
    second_panics: bool,
    extra: &[&str],
    wanted: &[&str],
) -> (Ended, String) {
    // One restart allowed within 30 s (not the default 5 s), so that a slow machine
    // between the two kills cannot let the first one age out of the period.
    let mut conf = vec![
        "spark.sparkyard.supervisor.maxRestarts=1",
        "spark.sparkyard.supervisor.restartPeriod=30s",
    ];
    conf.extend_from_slice(extra);
    // Four times the usual job: between the first kill and the second, the test waits for
    // the restarted incarnation and runs two `sparkyard` commands; on a loaded machine a job
    // of the usual length (dynamic allocation scaling it out) could end in that time, leaving
    // nothing to kill. The kills end the job early either way.
    let job = start_tasks(yarn, &conf, 4 * TASKS);
    let glob = glob_of(&job.app, suffix);
    let path = victim(yarn, &job, suffix, 1, 4);
    kill(yarn, &glob, true);
    victim(yarn, &job, suffix, 2, 4);
    kill(yarn, &glob, second_panics);
    (end(yarn, job, wanted), path)
}

/// The driver's actor ending in `suffix`, killed beyond its intensity: the driver's
/// supervisor gives up, the job is cancelled because the SparkContext was shut down, the
/// user class throws, the AM unregisters FAILED with exit code 15.
fn driver_actor_killed_beyond_intensity(yarn: &Yarn, suffix: &str, extra: &[&str]) {
    let (r, _) = killed_twice(
        yarn,
        suffix,
        false,
        extra,
        &["_01_000001 completed with exit status 15"],
    );
    assert_eq!(
        (r.code, r.final_status()),
        (1, "FAILED"),
        "{}: {}\n{}",
        r.app,
        r.diagnostics(),
        r.output
    );
    let escalated = r.events("supervisor_escalated");
    assert!(
        escalated.iter().any(|e| actor_of(e).ends_with("/am/driver")),
        "the driver's supervisor gives up: {escalated:#?}"
    );
    let d = r.diagnostics();
    assert!(
        d.contains("User class threw exception") && d.contains("SparkContext was shut down"),
        "diagnostics: {d}"
    );
    find(&r.records, "Final app status: FAILED, exitCode: 15");
    find(&r.records, "_01_000001 completed with exit status 15");
}

#[test]
fn driver_actors_killed_beyond_intensity_in_the_am_process_fail_the_application() {
    let yarn = Yarn::start(3, &[]);
    for suffix in [
        "/am/driver/driver-endpoint",
        "/am/driver/dag-scheduler",
        "/am/driver/yarn-scheduler-endpoint",
        "/am/driver/heartbeat-receiver",
        "/am/driver/listener-bus",
        "/am/driver/revive-timer",
    ] {
        driver_actor_killed_beyond_intensity(&yarn, suffix, &[]);
    }
    driver_actor_killed_beyond_intensity(&yarn, "/am/driver/speculation-timer", &["spark.speculation=true"]);
    driver_actor_killed_beyond_intensity(&yarn, "/am/driver/executor-allocation-manager", DYNAMIC);
}

/// The AM's actor `child`, killed twice with one restart allowed: the `am` supervisor
/// escalates, the AM container exits 1, and with one attempt allowed the application fails
/// with YARN's diagnostics.
fn am_actor_killed_beyond_intensity(yarn: &Yarn, child: &str) {
    let (r, path) = killed_twice(
        yarn,
        &format!("/am/{child}"),
        true,
        &[],
        &["_01_000001 completed with exit status 1 "],
    );
    assert_eq!(
        (r.code, r.final_status()),
        (1, "FAILED"),
        "{}: {}",
        r.app,
        r.diagnostics()
    );
    let diag = r.diagnostics();
    assert!(diag.starts_with("Application application_"), "{diag}");
    assert!(
        diag.contains("failed 1 times due to AM Container for appattempt_"),
        "{diag}"
    );
    assert!(diag.contains("_000001 exited with  exitCode: 1\n"), "{diag}");
    assert!(
        diag.contains(&format!(
            "escalated: reached maximum restart intensity: more than 1 restarts within 30s; last: child {child} ended with panic: injected panic"
        )),
        "{diag}"
    );
    assert!(diag.ends_with(". Failing the application."), "{diag}");
    let escalated = r.events("supervisor_escalated");
    let am = path.trim_end_matches(&format!("/{child}"));
    assert!(
        escalated.iter().any(|e| actor_of(e) == am && e["child"] == child),
        "the am supervisor gave up: {escalated:?}"
    );
}

#[test]
fn am_actors_killed_beyond_intensity_in_the_am_process_fail_the_attempt_with_exit_1() {
    let yarn = Yarn::start(3, &[]);
    for child in ["allocator", "reporter", "launcher", "am-endpoint"] {
        am_actor_killed_beyond_intensity(&yarn, child);
    }
}

#[test]
fn executors_killed_beyond_the_failure_cap_in_their_processes_end_the_application_with_exit_11() {
    // Spark's cap on executor failures is the intensity of executors: both killed at once
    // (one glob, two processes) with a cap of 2, and the AM gives up.
    let yarn = Yarn::start(3, &[]);
    let job = start(&yarn, &["spark.executor.maxNumFailures=2"]);
    victim(&yarn, &job, "/executor-1", 1, 4);
    victim(&yarn, &job, "/executor-2", 1, 0);
    let said = kill(&yarn, &glob_of(&job.app, "/executor-*"), true);
    assert_eq!(said.lines().count(), 2, "{said}");
    let r = end(&yarn, job, &["_01_000001 completed with exit status 11 "]);
    assert_eq!((r.code, r.final_status()), (1, "FAILED"), "{}", r.diagnostics());
    assert_eq!(r.diagnostics(), "Max number of executor failures (2) reached");
    find(&r.records, "Final app status: FAILED, exitCode: 11");
}

#[test]
fn container_processes_killed_beyond_the_failure_cap_end_the_application_with_exit_11() {
    // Each stop of an executor container's process is one executor failure: both, with a
    // cap of 2, and the AM gives up.
    let yarn = Yarn::start(3, &[]);
    let job = start(&yarn, &["spark.executor.maxNumFailures=2"]);
    victim(&yarn, &job, "/executor-1", 1, 4);
    victim(&yarn, &job, "/executor-2", 1, 0);
    let app = job.app.trim_start_matches("application_").to_string();
    for n in [2, 3] {
        kill(&yarn, &format!("/node/nm-*/container_{app}_*{n}/process"), false);
    }
    let r = end(&yarn, job, &["_01_000001 completed with exit status 11 "]);
    assert_eq!((r.code, r.final_status()), (1, "FAILED"), "{}", r.diagnostics());
    assert_eq!(r.diagnostics(), "Max number of executor failures (2) reached");
    find(&r.records, "Exit status: 143.");
    find(&r.records, "Final app status: FAILED, exitCode: 11");
}

// ------------------------------------------------------------------ the AM itself

/// A glob for the AM of the job's `attempt`.
fn am_glob(job: &Job, attempt: u32) -> String {
    format!(
        "/node/nm-*/container_{}_{attempt:02}_000001/am/application-master",
        job.app.trim_start_matches("application_")
    )
}

/// Waits until `n` tasks have finished on the driver of the job's `attempt`.
fn tasks_of_attempt(yarn: &Yarn, job: &Job, attempt: u32, n: usize) {
    let driver = format!("_{attempt:02}_000001/am/driver/");
    eventually(&format!("{n} finished tasks in attempt {attempt}"), || {
        let done = yarn
            .records(&job.app)
            .iter()
            .filter(|r| is_finished_task(r) && actor_of(r).contains(&driver))
            .count();
        (done >= n).then_some(())
    });
}

#[test]
fn application_master_killed_once_in_its_process_fails_its_attempt_and_the_second_succeeds() {
    let yarn = Yarn::start(3, &[]);
    // A panic is a crash: no shutdown hook, the AM's process exits 50; a stop is SIGTERM's
    // shutdown hook: FAILED with exit code 16, not the last attempt so no unregistering, and
    // the process exits 143. Either way YARN starts the second attempt, which succeeds.
    for (panic, status) in [(true, 50), (false, 143)] {
        let job = start(&yarn, &["spark.yarn.maxAppAttempts=2"]);
        let path = victim(&yarn, &job, "_01_000001/am/application-master", 1, 4);
        kill(&yarn, &am_glob(&job, 1), panic);
        let r = end(&yarn, job, &[]);
        r.assert_succeeded();
        let attempt = r.report["attempt_id"].as_str().unwrap_or("");
        assert!(attempt.ends_with("_000002"), "{attempt}");
        let after = r.after_kill(&path);
        let failed = find(after, "AM Container for appattempt_");
        let diag = msg_of(failed);
        assert!(
            diag.contains(&format!("_000001 exited with  exitCode: {status}")),
            "{diag}"
        );
        if panic {
            assert!(diag.contains("injected panic"), "{diag}");
        } else {
            let hook = find(
                after,
                "Final app status: FAILED, exitCode: 16, (reason: Shutdown hook called before final status was reported.)",
            );
            assert_eq!(actor_of(hook), path);
            find(after, "Not unregistering: the attempt failed and is not the last");
        }
        find(after, "Starting attempt appattempt_");
        assert!(
            after
                .iter()
                .any(|rec| is_finished_task(rec) && actor_of(rec).contains("_02_000001/")),
            "the second attempt runs the job"
        );
    }
}

#[test]
fn application_master_killed_beyond_its_attempts_in_its_process_unregisters_failed_from_its_shutdown_hook() {
    // Two attempts: the first AM panics (exit 50); the second is stopped on the last
    // attempt, so its shutdown hook unregisters FAILED with Spark's diagnostics: the
    // application is FINISHED, not failed by YARN.
    let yarn = Yarn::start(3, &[]);
    let job = start(&yarn, &["spark.yarn.maxAppAttempts=2"]);
    victim(&yarn, &job, "_01_000001/am/application-master", 1, 4);
    kill(&yarn, &am_glob(&job, 1), true);
    let second = victim(&yarn, &job, "_02_000001/am/application-master", 1, 0);
    tasks_of_attempt(&yarn, &job, 2, 4);
    kill(&yarn, &am_glob(&job, 2), false);
    let r = end(&yarn, job, &["_02_000001 completed with exit status"]);
    assert_eq!((r.code, r.final_status()), (1, "FAILED"), "{}", r.diagnostics());
    assert_eq!(
        r.diagnostics(),
        "Shutdown hook called before final status was reported."
    );
    assert_eq!(r.report["state"], "FINISHED");
    find(&r.records, "_000001 exited with  exitCode: 50");
    find(
        &r.records,
        "The number of failed attempts is 1. The max attempts is 2",
    );
    let after = r.after_kill(&second);
    find(
        after,
        "Final app status: FAILED, exitCode: 16, (reason: Shutdown hook called before final status was reported.)",
    );
    find(
        after,
        "Unregistering ApplicationMaster with FAILED (diag message: Shutdown hook called before final status was reported.)",
    );
    assert!(
        !r.msgs().iter().any(|m| m.contains("failed 2 times due to")),
        "YARN did not fail the application: the AM unregistered"
    );
}

// ------------------------------------------------------------------ the daemons

#[test]
fn resource_manager_and_node_manager_killed_once_in_their_processes_heal() {
    // The RM's process and the NodeManagers' are apart: a restarted RM asks every
    // NodeManager process to resynchronise, and they re-register over TCP; a restarted
    // NodeManager finds its container's process still running.
    let yarn = Yarn::start(3, &[]);
    for (target, recovered) in [
        (
            "/node/rm",
            [
                "ResourceManager restarted; asking 3 NodeManager(s) to resynchronise",
                "re-registered with capability",
            ],
        ),
        (
            "/node/nm-host2/node-manager",
            [
                "Recovered 1 running container(s) after a restart",
                "NodeManager from node host2",
            ],
        ),
    ] {
        let job = start(&yarn, &[]);
        victim(&yarn, &job, "/executor-1", 1, 4);
        kill(&yarn, target, true);
        let mut r = end(&yarn, job, &[]);
        r.assert_succeeded();
        // The daemons' records carry no application id: all of them, each target being
        // killed once in the cluster's life.
        r.records = yarn.all_records();
        r.assert_killed_and_restarted(target);
        let after = r.after_kill(target);
        for text in recovered {
            find(after, text);
        }
    }
}
