//! Container processes: real OS processes (`/bin/sh`, `sleep`, `head`, `tail`) run by the
//! `ContainerProcess` actor under a container-like supervisor (auto-shutdown, the process
//! the significant child) in a cluster on the real clock. Exit statuses pass through, a stop
//! sends SIGTERM then SIGKILL to the process group, output lands in the log directory, a
//! program that cannot start ends with the launch diagnostics, the container monitor kills a
//! process tree beyond its memory with -104, what a process group leaves behind is
//! terminated then killed, and no process outlives its actor.

mod common;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;
use sparkyard::runtime::cell::CellShared;
use sparkyard::runtime::supervisor::TerminateChild;
use sparkyard::runtime::{Cluster, ExitReason, KillMode, Strategy, SupervisorProtocol, SupervisorSpec};
use sparkyard::yarn::container_executor::{ContainerExecutorConf, ContainerProcessSpec};
use sparkyard::yarn::container_monitor::group_has_live;
use sparkyard::yarn::container_process::{container_process_child, ContainerProcesses};
use sparkyard::yarn::records::{ApplicationAttemptId, ApplicationId, ContainerId};

/// A cluster on the real clock (processes run in real time) with captured records.
fn real_cluster() -> Cluster {
    sparkyard::logs::init_for_tests();
    Cluster::builder()
        .capture_logs(true)
        .build()
        .expect("inside an actix system")
}

/// Polls `cond` until it holds, for at most `limit` of real time.
async fn until(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn container(n: u64) -> ContainerId {
    ContainerId {
        attempt: ApplicationAttemptId {
            app: ApplicationId {
                cluster_timestamp: 1,
                id: 1,
            },
            attempt: 1,
        },
        id: n,
    }
}

fn shell(dir: &Path, n: u64, script: &str) -> ContainerProcessSpec {
    ContainerProcessSpec {
        container_id: container(n),
        program: "/bin/sh".into(),
        args: vec!["-c".into(), script.into()],
        env: vec![("GREETING".into(), "hello".into())],
        work_dir: dir.join(format!("work-{n}")),
        log_dir: dir.join(format!("logs-{n}")),
        memory_limit_bytes: 1 << 30,
    }
}

/// A started container: its supervisor's path and the process actor's incarnation.
struct Running {
    sup: String,
    cell: Arc<Mutex<Option<Arc<CellShared>>>>,
}

impl Running {
    /// How the process actor's incarnation ended, once it has (at most `limit`).
    async fn ended(&self, limit: Duration) -> ExitReason {
        let cell = self.cell.clone();
        until("the process actor to end", limit, || {
            cell.lock()
                .unwrap()
                .as_ref()
                .is_some_and(|c| c.final_reason().is_some())
        })
        .await;
        let reason = self.cell.lock().unwrap().as_ref().unwrap().final_reason();
        reason.unwrap()
    }
}

fn start(
    cluster: &Cluster,
    spec: ContainerProcessSpec,
    conf: ContainerExecutorConf,
    table: &ContainerProcesses,
) -> Running {
    let name = format!("c{}", spec.container_id.id);
    let cell = Arc::new(Mutex::new(None));
    let slot = cell.clone();
    let child = container_process_child(spec, conf, table.clone())
        .on_start(move |c| *slot.lock().unwrap() = Some(c.clone()));
    cluster
        .start_root(
            &name,
            SupervisorSpec::new(Strategy::OneForOne)
                .auto_shutdown(true)
                .child(child),
        )
        .unwrap();
    Running {
        sup: format!("/{name}"),
        cell,
    }
}

fn exit(reason: &ExitReason) -> (i32, &str) {
    match reason {
        ExitReason::Exit { code, message } => (*code, message.as_str()),
        other => panic!("expected an exit with a status, got {other}"),
    }
}

/// Records of `event` about container `n`.
fn records(cluster: &Cluster, event: &str, n: u64) -> Vec<Value> {
    let id = container(n).to_string();
    events(cluster, event)
        .into_iter()
        .filter(|r| r["container_id"] == id.as_str())
        .collect()
}

/// The signals a stop sent to container `n` (not the cleanup of what its group left).
fn stop_signals(cluster: &Cluster, n: u64) -> Vec<Value> {
    records(cluster, "container_process_signalled", n)
        .into_iter()
        .filter(|r| r["cause"] != "cleanup")
        .collect()
}

const BOUND: Duration = Duration::from_secs(10);

#[actix_rt::test]
async fn the_exit_code_passes_through_and_output_lands_in_the_log_dir() {
    let cluster = real_cluster();
    let dir = tempfile::tempdir().unwrap();
    let table = ContainerProcesses::new();
    let spec = shell(
        dir.path(),
        1,
        "echo $GREETING from $CONTAINER_ID; pwd; echo oops >&2; exit 7",
    );
    let (work, logs) = (spec.work_dir.clone(), spec.log_dir.clone());
    let running = start(&cluster, spec, ContainerExecutorConf::default(), &table);
    let reason = running.ended(BOUND).await;
    let (code, message) = exit(&reason);
    assert_eq!(code, 7);
    assert_eq!(
        message,
        "Error file: stderr.\nLast 4096 bytes of stderr :\noops\n"
    );
    let stdout = std::fs::read_to_string(logs.join("stdout")).unwrap();
    assert_eq!(
        stdout,
        format!(
            "hello from {}\n{}\n",
            container(1),
            work.parent()
                .unwrap()
                .canonicalize()
                .unwrap()
                .join(work.file_name().unwrap())
                .display()
        )
    );
    assert!(
        !work.exists(),
        "the working directory is deleted once the process exited"
    );
    assert_eq!(std::fs::read_to_string(logs.join("stderr")).unwrap(), "oops\n");
    assert!(table.list().is_empty(), "a reaped process leaves the table");

    let started = records(&cluster, "container_process_started", 1);
    assert_eq!(started.len(), 1);
    let pid = started[0]["pid"].as_u64().unwrap();
    let exited = records(&cluster, "container_process_exited", 1);
    assert_eq!(exited.len(), 1);
    assert_eq!(exited[0]["pid"].as_u64(), Some(pid));
    assert_eq!(exited[0]["exit_status"], 7);

    // A process that succeeds ends with status 0 and nothing to say.
    let running = start(
        &cluster,
        shell(dir.path(), 2, "exit 0"),
        ContainerExecutorConf::default(),
        &table,
    );
    assert_eq!(
        running.ended(BOUND).await,
        ExitReason::Exit {
            code: 0,
            message: String::new()
        }
    );
}

/// Starts `script` (which prints `ready` once it is set up), waits for `ready`, stops the
/// container through its supervisor and answers how the process ended and its pid.
async fn stop_after_ready(cluster: &Cluster, dir: &Path, n: u64, script: &str) -> (ExitReason, u32) {
    let table = ContainerProcesses::new();
    let conf = ContainerExecutorConf {
        sigkill_delay: Duration::from_millis(300),
        ..ContainerExecutorConf::default()
    };
    let spec = shell(dir, n, script);
    let stdout = spec.log_dir.join("stdout");
    let running = start(cluster, spec, conf, &table);
    until("the process to be ready", BOUND, || {
        std::fs::read_to_string(&stdout).is_ok_and(|s| s.contains("ready"))
    })
    .await;
    let pid = table.pid(&container(n)).expect("a running process");
    let sup = cluster.endpoint::<SupervisorProtocol>(&path(&running.sup));
    sup.ask(TerminateChild("process".into()), BOUND)
        .await
        .unwrap()
        .unwrap();
    let reason = running.ended(BOUND).await;
    (reason, pid)
}

#[actix_rt::test]
async fn a_stop_sends_term_and_a_process_that_exits_on_it_ends_143() {
    let cluster = real_cluster();
    let dir = tempfile::tempdir().unwrap();
    let (reason, pid) = stop_after_ready(&cluster, dir.path(), 3, "sleep 30 & echo ready; wait").await;
    assert_eq!(
        exit(&reason),
        (143, "Container killed on request. Exit code is 143")
    );
    let signals: Vec<Value> = stop_signals(&cluster, 3);
    assert_eq!(signals.len(), 1, "TERM was enough: {signals:?}");
    assert_eq!(signals[0]["signal"], "TERM");
    assert_eq!(signals[0]["pid"].as_u64(), Some(pid as u64));
    until("the background sleep went with its group", BOUND, || {
        !group_has_live(pid)
    })
    .await;
}

#[actix_rt::test]
async fn a_process_that_ignores_term_is_killed_after_the_delay_137() {
    let cluster = real_cluster();
    let dir = tempfile::tempdir().unwrap();
    let (reason, pid) = stop_after_ready(
        &cluster,
        dir.path(),
        4,
        "trap '' TERM; sleep 30 & echo ready; wait",
    )
    .await;
    assert_eq!(
        exit(&reason),
        (137, "Container killed on request. Exit code is 137")
    );
    let signals: Vec<String> = stop_signals(&cluster, 4)
        .iter()
        .map(|r| r["signal"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(signals, ["TERM", "KILL"]);
    until("no process of the group survives", BOUND, || !group_has_live(pid)).await;
}

#[actix_rt::test]
async fn a_program_that_cannot_start_ends_with_the_launch_diagnostics() {
    let cluster = real_cluster();
    let dir = tempfile::tempdir().unwrap();
    let table = ContainerProcesses::new();
    let mut spec = shell(dir.path(), 5, "");
    spec.program = dir.path().join("no-such-program");
    let missing = spec.program.display().to_string();
    let running = start(&cluster, spec.clone(), ContainerExecutorConf::default(), &table);
    let reason = running.ended(BOUND).await;
    assert_eq!(
        exit(&reason),
        (
            127,
            format!(
                "Error file: stderr.\nLast 4096 bytes of stderr :\n{missing}: No such file or directory\n"
            )
            .as_str()
        )
    );
    let failed = records(&cluster, "container_process_launch_failed", 5);
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["exit_status"], 127);

    // Not executable: bash's 126.
    let mut spec = shell(dir.path(), 6, "");
    spec.program = dir.path().join("not-executable");
    std::fs::write(&spec.program, "data").unwrap();
    let running = start(&cluster, spec, ContainerExecutorConf::default(), &table);
    let reason = running.ended(BOUND).await;
    let (code, message) = exit(&reason);
    assert_eq!(code, 126);
    assert!(
        message.ends_with("not-executable: Permission denied\n"),
        "{message}"
    );
    assert!(table.list().is_empty());
}

#[actix_rt::test]
async fn a_process_tree_beyond_its_memory_is_killed_with_minus_104() {
    let cluster = real_cluster();
    let dir = tempfile::tempdir().unwrap();
    let table = ContainerProcesses::new();
    let conf = ContainerExecutorConf {
        monitor_interval: Duration::from_millis(50),
        sigkill_delay: Duration::from_millis(200),
        ..ContainerExecutorConf::default()
    };
    // tail keeps the whole unterminated line in memory until its input ends.
    let mut spec = shell(dir.path(), 7, "(head -c 200M /dev/zero; sleep 30) | tail");
    spec.memory_limit_bytes = 32 << 20;
    let running = start(&cluster, spec, conf, &table);
    let reason = running.ended(Duration::from_secs(30)).await;
    let (code, message) = exit(&reason);
    assert_eq!(code, -104);
    let pid = records(&cluster, "container_process_started", 7)[0]["pid"]
        .as_u64()
        .unwrap() as u32;
    let id = container(7);
    assert!(
        message.starts_with(&format!("Container [pid={pid},containerID={id}] is running ")),
        "{message}"
    );
    assert!(
        message.contains("B beyond the 'PHYSICAL' memory limit. Current usage: "),
        "{message}"
    );
    assert!(message.contains(" of 32 MB physical memory used; "), "{message}");
    assert!(
        message
            .contains(" of 67.2 MB virtual memory used. Killing container.\nDump of the process-tree for "),
        "{message}"
    );
    assert!(message.contains("\t|- PID PPID PGRPID SESSID CMD_NAME USER_MODE_TIME(MILLIS) SYSTEM_TIME(MILLIS) VMEM_USAGE(BYTES) RSSMEM_USAGE(PAGES) FULL_CMD_LINE\n"), "{message}");
    assert!(
        message.contains(" (tail) "),
        "the tree shows the process using the memory: {message}"
    );
    assert!(
        message.ends_with(
            "\nContainer killed on request. Exit code is 143\nContainer exited with a non-zero exit code 143."
        ),
        "{message}"
    );
    let exceeded = records(&cluster, "container_memory_exceeded", 7);
    assert_eq!(exceeded.len(), 1);
    assert_eq!(exceeded[0]["exit_status"], -104);
    until("no process of the tree survives", BOUND, || !group_has_live(pid)).await;
}

#[actix_rt::test]
async fn an_actor_that_dies_abruptly_takes_its_process_group_with_it() {
    let cluster = real_cluster();
    let dir = tempfile::tempdir().unwrap();
    let table = ContainerProcesses::new();
    let spec = shell(dir.path(), 8, "trap '' TERM; sleep 30 & echo ready; wait");
    let stdout = spec.log_dir.join("stdout");
    let running = start(&cluster, spec, ContainerExecutorConf::default(), &table);
    until("the process to be ready", BOUND, || {
        std::fs::read_to_string(&stdout).is_ok_and(|s| s.contains("ready"))
    })
    .await;
    let pid = table.pid(&container(8)).unwrap();
    cluster
        .kill(&format!("{}/process", running.sup), KillMode::Panic, "test")
        .unwrap();
    let reason = running.ended(BOUND).await;
    assert!(matches!(reason, ExitReason::Panic { .. }), "{reason}");
    until("the process group to die", BOUND, || !group_has_live(pid)).await;
    assert!(table.pid(&container(8)).is_none());
    assert_eq!(records(&cluster, "container_process_orphan_killed", 8).len(), 1);
}

#[actix_rt::test]
async fn fault_injection_signals_a_container_by_id() {
    let cluster = real_cluster();
    let dir = tempfile::tempdir().unwrap();
    let table = ContainerProcesses::new();
    let spec = shell(dir.path(), 9, "echo ready; sleep 30");
    let stdout = spec.log_dir.join("stdout");
    let running = start(&cluster, spec, ContainerExecutorConf::default(), &table);
    until("the process to be ready", BOUND, || {
        std::fs::read_to_string(&stdout).is_ok_and(|s| s.contains("ready"))
    })
    .await;
    let pid = table.signal(&container(9), "KILL".parse().unwrap()).unwrap();
    let reason = running.ended(BOUND).await;
    assert_eq!(
        exit(&reason),
        (137, "Container killed on request. Exit code is 137")
    );
    until("the process group to die", BOUND, || !group_has_live(pid)).await;
    assert_eq!(
        table.signal(&container(9), "TERM".parse().unwrap()).unwrap_err(),
        format!("container {} has no running process on this node", container(9))
    );
}

#[actix_rt::test]
async fn what_the_group_leaves_behind_is_terminated_then_killed() {
    let cluster = real_cluster();
    let dir = tempfile::tempdir().unwrap();
    let table = ContainerProcesses::new();
    let conf = ContainerExecutorConf {
        sigkill_delay: Duration::from_millis(200),
        ..ContainerExecutorConf::default()
    };
    // The root exits at once; a background child that ignores SIGTERM stays in its group.
    let spec = shell(
        dir.path(),
        10,
        "(trap '' TERM; exec sleep 30) & echo ready; exit 0",
    );
    let running = start(&cluster, spec, conf, &table);
    assert_eq!(exit(&running.ended(BOUND).await), (0, ""));
    let pid = records(&cluster, "container_process_started", 10)[0]["pid"]
        .as_u64()
        .unwrap() as u32;
    until("the group's last process to be killed", BOUND, || {
        !group_has_live(pid)
    })
    .await;
    let cleanup: Vec<String> = records(&cluster, "container_process_signalled", 10)
        .iter()
        .filter(|r| r["cause"] == "cleanup")
        .map(|r| r["signal"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(cleanup, ["TERM", "KILL"]);
}
