//! Executor decommissioning and YARN's graceful node decommission, end to end on the
//! embedded four-node cluster: a node put into DECOMMISSIONING gets no new container, and
//! with `spark.decommission.enabled` the driver decommissions its executors (they finish
//! their running task, take no new one and exit "Finished decommissioning"; their loss is
//! `ExecutorDecommission`, nothing counts as a failure) and the node is DECOMMISSIONED once
//! the application is done; without it the node drains until its timeout kills what still
//! runs there, and the tasks rerun elsewhere. The driver's KillExecutorsOnHost, the
//! executor's own decommission signal, `spark.executor.decommission.forceKillTimeout` and
//! dynamic allocation's decommissioning of idle executors. Every wait is bounded.

mod common;

use std::time::{Duration, Instant};

use common::inproc::{conf, dump, events, msgs, node, records, submit, succeeded, Node};
use serde_json::Value as Json;
use sparkyard::runtime::ActorPath;
use sparkyard::scheduler::messages::{DriverProtocol, ExecutorProtocol};
use sparkyard::scheduler::messages::{ExecutorDecommissionSigReceived, KillExecutorsOnHost};
use sparkyard::yarn::node::{list_nodes, refresh_nodes};
use sparkyard::yarn::protocol::RefreshNodes;
use sparkyard::yarn::records::NodeState;

const SLEEP_TASKS: &str = "sparkyard.examples.SleepTasks";
const BOUND: Duration = Duration::from_secs(30);

fn s(r: &Json, k: &str) -> String {
    match &r[k] {
        Json::String(s) => s.clone(),
        Json::Null => String::new(),
        other => other.to_string(),
    }
}

/// Polls `check` over the captured records (at most [`BOUND`] of real time) until it answers.
async fn wait_for<T>(node: &Node, what: &str, mut check: impl FnMut(&[Json]) -> Option<T>) -> T {
    let deadline = Instant::now() + BOUND;
    loop {
        if let Some(v) = check(&records(node)) {
            return v;
        }
        if Instant::now() > deadline {
            dump(node);
            panic!("timed out waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The host of the AM container.
fn am_host(recs: &[Json]) -> Option<String> {
    recs.iter()
        .filter_map(|r| r["msg"].as_str())
        .find(|m| m.starts_with("Allocated AM container "))
        .and_then(|m| m.split(" on ").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .map(str::to_string)
}

/// An executor (id, host, backend path) that has started a task, on a host other than the
/// AM's.
fn busy_executor(recs: &[Json]) -> Option<(String, String, String)> {
    let am = am_host(recs)?;
    let started = recs
        .iter()
        .filter(|r| s(r, "msg").starts_with("Starting task "))
        .find(|r| s(r, "host") != am)?;
    let (exec, host) = (s(started, "executor_id"), s(started, "host"));
    let path = recs
        .iter()
        .find(|r| r["event"] == "executor_registered" && s(r, "executor_id") == exec)
        .map(|r| s(r, "executor_ref"))?;
    Some((exec, host, path))
}

/// Position of the first record matching `pred`.
fn position(recs: &[Json], pred: impl Fn(&Json) -> bool) -> Option<usize> {
    recs.iter().position(pred)
}

fn decommission(host: &str, timeout: Duration) -> RefreshNodes {
    RefreshNodes {
        decommission: vec![host.to_string()],
        recommission: vec![],
        graceful_timeout: Some(timeout),
    }
}

#[actix_rt::test]
async fn a_decommissioning_node_drains_its_executors_gracefully_with_spark_decommission() {
    let node = node().await;
    let c = conf(&[
        ("spark.executor.instances", "2"),
        ("spark.decommission.enabled", "true"),
        ("spark.test.executor.decommission.initial.sleep.millis", "0"),
        ("spark.yarn.scheduler.heartbeat.interval-ms", "50ms"),
    ]);
    let job = submit(&node, SLEEP_TASKS, &["--tasks", "24", "--ms", "150"], c);
    let decommissioned = async {
        let (exec, host, _) = wait_for(&node, "an executor running a task", busy_executor).await;
        let nodes = refresh_nodes(&node.cluster, decommission(&host, BOUND), BOUND)
            .await
            .unwrap();
        let state = nodes.iter().find(|n| n.host == host).map(|n| n.state);
        assert_eq!(state, Some(NodeState::Decommissioning), "{nodes:?}");
        (exec, host)
    };
    let ((outcome, out), (exec, host)) = tokio::join!(job, decommissioned);
    dump(&node);
    succeeded(&outcome, &out);
    assert!(out.contains("SleepTasks: job 0: 24 tasks"), "{out}");

    let recs = records(&node);
    let put = position(&recs, |r| {
        r["event"] == "node_decommissioning" && s(r, "host") == host
    })
    .expect("the RM put the node in DECOMMISSIONING");
    // The driver decommissioned the executor(s) of that host, told by the allocator.
    let driver_decom = position(&recs, |r| {
        r["event"] == "executor_decommission"
            && s(r, "actor").ends_with("/driver-endpoint")
            && s(r, "executors").split(',').any(|e| e == exec)
    })
    .expect("the driver decommissioned the executor");
    assert!(put < driver_decom);
    let m = msgs(&node);
    assert!(
        m.iter().any(|l| l
            == &format!("Node {host} is DECOMMISSIONING: asking the driver to decommission its executors")),
        "the allocator saw the updated node"
    );
    assert!(m
        .iter()
        .any(|l| l == &format!("Notify executor {exec} to decommissioning.")));
    assert!(m.iter().any(|l| l == &format!("Decommission executor {exec}.")));
    // It finished its task, took none after, and exited on its own.
    assert!(
        !recs[driver_decom..]
            .iter()
            .any(|r| s(r, "msg").starts_with("Starting task ") && s(r, "executor_id") == exec),
        "no task offered to a decommissioning executor"
    );
    let removed = recs
        .iter()
        .find(|r| r["event"] == "executor_removed" && s(r, "executor_id") == exec)
        .expect("the executor was removed");
    assert_eq!(
        s(removed, "reason"),
        format!("Executor decommission: Decommissioning all executors on {host}.")
    );
    assert_eq!(removed["caused_by_app"], false);
    assert!(m
        .iter()
        .any(|l| l == "Executor self-exiting: Finished decommissioning"));
    // Nothing failed: no task was lost, no executor failure counted.
    assert!(!m.iter().any(|l| l.starts_with("Lost task")), "no task failed");
    assert!(!m.iter().any(|l| l.contains("Container from a bad node")));
    // YARN placed nothing more on the host.
    assert!(
        !recs[put..]
            .iter()
            .any(|r| s(r, "msg").starts_with("Launching container ")
                && s(r, "msg").contains(&format!(" on host {host} "))),
        "no container on a decommissioning node"
    );
    // Once the application is over the node is DECOMMISSIONED.
    let deadline = Instant::now() + BOUND;
    loop {
        let nodes = list_nodes(&node.cluster, BOUND).await.unwrap();
        if nodes
            .iter()
            .any(|n| n.host == host && n.state == NodeState::Decommissioned)
        {
            break;
        }
        assert!(Instant::now() < deadline, "the node is decommissioned: {nodes:?}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let done = events(&node, "node_decommissioned");
    assert_eq!(done.len(), 1, "{done:#?}");
    assert_eq!(done[0]["timed_out"], false);
    assert_eq!(done[0]["killed_containers"], 0);
}

#[actix_rt::test]
async fn without_spark_decommission_the_timeout_kills_what_still_runs_and_tasks_rerun() {
    let node = node().await;
    let c = conf(&[
        ("spark.executor.instances", "2"),
        ("spark.yarn.scheduler.heartbeat.interval-ms", "50ms"),
    ]);
    let job = submit(&node, SLEEP_TASKS, &["--tasks", "12", "--ms", "200"], c);
    let decommissioned = async {
        let (exec, host, _) = wait_for(&node, "an executor running a task", busy_executor).await;
        refresh_nodes(
            &node.cluster,
            decommission(&host, Duration::from_millis(300)),
            BOUND,
        )
        .await
        .unwrap();
        (exec, host)
    };
    let ((outcome, out), (exec, host)) = tokio::join!(job, decommissioned);
    dump(&node);
    succeeded(&outcome, &out);
    assert!(out.contains("SleepTasks: job 0: 12 tasks"), "{out}");

    let done = events(&node, "node_decommissioned");
    assert_eq!(done.len(), 1, "{done:#?}");
    assert_eq!(
        (s(&done[0], "host"), done[0]["timed_out"].clone()),
        (host.clone(), Json::Bool(true))
    );
    assert!(done[0]["killed_containers"].as_u64().unwrap() >= 1, "{done:#?}");
    let m = msgs(&node);
    assert!(m.iter().any(|l| l == &format!("DECOMMISSIONING {host} timeout")));
    // No Spark decommission: the executor was lost with its container, not decommissioned.
    assert!(events(&node, "executor_decommission").is_empty());
    let removed = events(&node, "executor_removed")
        .into_iter()
        .find(|r| s(r, "executor_id") == exec)
        .expect("the executor was removed");
    assert!(
        s(&removed, "reason").contains("Container released on a *lost* node"),
        "{removed}"
    );
    assert_eq!(removed["caused_by_app"], false);
    // A task it was running failed without counting (and ran again elsewhere).
    assert!(
        !m.iter().any(|l| l.contains("caused by one of the running tasks")),
        "{:#?}",
        m.iter()
            .filter(|l| l.starts_with("Lost task"))
            .collect::<Vec<_>>()
    );
    let nodes = list_nodes(&node.cluster, BOUND).await.unwrap();
    assert_eq!(
        nodes.iter().find(|n| n.host == host).map(|n| n.state),
        Some(NodeState::Decommissioned)
    );
}

#[actix_rt::test]
async fn kill_executors_on_host_kills_them_as_killed_by_the_driver() {
    let node = node().await;
    let c = conf(&[
        ("spark.executor.instances", "2"),
        ("spark.yarn.scheduler.heartbeat.interval-ms", "50ms"),
    ]);
    let job = submit(
        &node,
        SLEEP_TASKS,
        &["--tasks", "12", "--ms", "150", "--linger", "1s"],
        c,
    );
    let killed = async {
        let (exec, host, path) = wait_for(&node, "an executor running a task", busy_executor).await;
        // The DriverEndpoint is next to the executor's --driver-url target.
        let driver = wait_for(&node, "the driver endpoint", |recs| {
            recs.iter()
                .map(|r| s(r, "actor"))
                .find(|a| a.ends_with("/driver/driver-endpoint"))
        })
        .await;
        let de = node
            .cluster
            .endpoint::<DriverProtocol>(&ActorPath::parse(&driver).unwrap());
        de.tell(KillExecutorsOnHost { host: host.clone() }).unwrap();
        // Not a target adjustment: YARN gives a replacement (the driver lingers for it).
        wait_for(&node, "a replacement executor", |recs| {
            (recs
                .iter()
                .filter(|r| r["event"] == "executor_registered")
                .count()
                >= 3)
                .then_some(())
        })
        .await;
        (exec, host, path)
    };
    let ((outcome, out), (exec, host, _)) = tokio::join!(job, killed);
    dump(&node);
    succeeded(&outcome, &out);
    let m = msgs(&node);
    assert!(
        m.iter()
            .any(|l| l.starts_with(&format!("Killing all executors on host {host}: ")) && l.contains(&exec)),
        "{:#?}",
        m.iter().filter(|l| l.contains("Killing")).collect::<Vec<_>>()
    );
    let removed = events(&node, "executor_removed")
        .into_iter()
        .find(|r| s(r, "executor_id") == exec)
        .expect("the executor was removed");
    assert_eq!(s(&removed, "reason"), "Executor killed by driver.");
    // Not decommissioned, and not counted as a failure.
    assert!(events(&node, "executor_decommission").is_empty());
    assert!(!m.iter().any(|l| l.contains("Container from a bad node")));
    assert!(!m.iter().any(|l| l.contains("caused by one of the running tasks")));
}

#[actix_rt::test]
async fn an_executor_decommissioning_itself_tells_the_driver_and_exits_when_idle() {
    let node = node().await;
    let c = conf(&[
        ("spark.executor.instances", "2"),
        ("spark.decommission.enabled", "true"),
        ("spark.test.executor.decommission.initial.sleep.millis", "0"),
    ]);
    let job = submit(&node, SLEEP_TASKS, &["--tasks", "12", "--ms", "150"], c);
    let signalled = async {
        let (exec, _, path) = wait_for(&node, "an executor running a task", busy_executor).await;
        let backend = node
            .cluster
            .endpoint::<ExecutorProtocol>(&ActorPath::parse(&path).unwrap());
        let answer = backend
            .ask(ExecutorDecommissionSigReceived, BOUND)
            .await
            .expect("the executor answers");
        (exec, answer)
    };
    let ((outcome, out), (exec, answer)) = tokio::join!(job, signalled);
    dump(&node);
    succeeded(&outcome, &out);
    assert!(answer, "the executor decommissioned itself");
    let m = msgs(&node);
    assert!(m
        .iter()
        .any(|l| l == &format!("Received executor {exec} decommissioned message")));
    assert!(m.iter().any(|l| l == &format!("Decommission executor {exec}.")));
    // Triggered by the executor: the driver does not tell it again.
    assert!(!m
        .iter()
        .any(|l| l == &format!("Notify executor {exec} to decommissioning.")));
    let removed = events(&node, "executor_removed")
        .into_iter()
        .find(|r| s(r, "executor_id") == exec)
        .expect("the executor was removed");
    assert_eq!(
        s(&removed, "reason"),
        format!("Executor decommission: Executor {exec} is decommissioned.")
    );
    assert!(!m.iter().any(|l| l.starts_with("Lost task")), "no task failed");
}

#[actix_rt::test]
async fn decommission_without_spark_decommission_enabled_is_refused_by_the_executor() {
    let node = node().await;
    let c = conf(&[("spark.executor.instances", "1")]);
    let job = submit(&node, SLEEP_TASKS, &["--tasks", "6", "--ms", "100"], c);
    let signalled = async {
        let (_, _, path) = wait_for(&node, "an executor running a task", busy_executor).await;
        let backend = node
            .cluster
            .endpoint::<ExecutorProtocol>(&ActorPath::parse(&path).unwrap());
        backend.ask(ExecutorDecommissionSigReceived, BOUND).await.unwrap()
    };
    let ((outcome, out), answer) = tokio::join!(job, signalled);
    succeeded(&outcome, &out);
    assert!(!answer);
    assert!(msgs(&node)
        .iter()
        .any(|l| l == "Receive decommission request, but decommission feature is disabled."));
    assert!(events(&node, "executor_removed")
        .iter()
        .all(|r| !s(r, "reason").starts_with("Executor decommission")));
}

#[actix_rt::test]
async fn a_decommissioning_executor_that_does_not_finish_is_killed_after_the_force_kill_timeout() {
    let node = node().await;
    let c = conf(&[
        ("spark.executor.instances", "2"),
        ("spark.decommission.enabled", "true"),
        ("spark.executor.decommission.forceKillTimeout", "1s"),
        ("spark.test.executor.decommission.initial.sleep.millis", "0"),
        ("spark.yarn.scheduler.heartbeat.interval-ms", "50ms"),
    ]);
    // Task 0 runs 2.5 s, well past the force-kill timeout.
    let job = submit(&node, SLEEP_TASKS, &["--durations", "2500,50,50,50,50,50"], c);
    let decommissioned = async {
        let started = wait_for(&node, "task 0 started", |recs| {
            recs.iter()
                .find(|r| s(r, "msg").starts_with("Starting task 0.0 in stage 0.0"))
                .map(|r| (s(r, "executor_id"), s(r, "host")))
        })
        .await;
        refresh_nodes(&node.cluster, decommission(&started.1, BOUND), BOUND)
            .await
            .unwrap();
        started
    };
    let ((outcome, out), (exec, _host)) = tokio::join!(job, decommissioned);
    dump(&node);
    succeeded(&outcome, &out);
    let forced = events(&node, "executor_decommission_force_kill");
    assert_eq!(forced.len(), 1, "{forced:#?}");
    assert_eq!(
        s(&forced[0], "msg"),
        format!("List({exec}) failed to decommission in 1, killing.")
    );
    // Killed by the driver: its task is not counted and runs again elsewhere.
    let removed = events(&node, "executor_removed")
        .into_iter()
        .find(|r| s(r, "executor_id") == exec)
        .expect("the executor was removed");
    assert_eq!(s(&removed, "reason"), "Executor killed by driver.");
    let m = msgs(&node);
    assert!(
        m.iter().any(|l| l.starts_with("Starting task 0.1 in stage 0.0")),
        "task 0 ran again"
    );
}

#[actix_rt::test]
async fn dynamic_allocation_decommissions_idle_executors_when_decommission_is_enabled() {
    let node = node().await;
    let (outcome, out) = submit(
        &node,
        SLEEP_TASKS,
        &["--tasks", "4", "--ms", "50", "--linger", "1500ms"],
        conf(&[
            ("spark.dynamicAllocation.enabled", "true"),
            ("spark.dynamicAllocation.minExecutors", "0"),
            ("spark.dynamicAllocation.initialExecutors", "2"),
            ("spark.dynamicAllocation.executorIdleTimeout", "200ms"),
            ("spark.decommission.enabled", "true"),
            ("spark.test.executor.decommission.initial.sleep.millis", "0"),
            ("spark.yarn.scheduler.heartbeat.interval-ms", "100ms"),
        ]),
    )
    .await;
    dump(&node);
    succeeded(&outcome, &out);
    let idle = events(&node, "executor_idle_remove");
    assert!(!idle.is_empty(), "some executor went idle");
    let removed: Vec<Json> = events(&node, "executor_removed")
        .into_iter()
        .filter(|r| s(r, "reason") == "Executor decommission: spark scale down")
        .collect();
    assert!(!removed.is_empty(), "{:#?}", events(&node, "executor_removed"));
    let m = msgs(&node);
    assert!(m
        .iter()
        .any(|l| l.starts_with("Executors ") && l.ends_with(" removed due to idle timeout.")));
    assert!(m
        .iter()
        .any(|l| l == "Executor self-exiting: Finished decommissioning"));
    // Decommissioned, not killed: the AM was never asked to kill them.
    assert!(!m
        .iter()
        .any(|l| l.starts_with("Actual list of executor(s) to be killed is ")
            && l.len() > "Actual list of executor(s) to be killed is ".len()));
}

/// `sparkyard rmadmin <args>` against a running node (its address through `--conf`).
fn rmadmin(node: &common::process::Node, args: &[&str]) -> common::process::Out {
    let mut cmd = std::process::Command::new(common::process::BIN);
    cmd.arg("rmadmin")
        .args(args)
        .args(["--config-dir", &common::process::config_dir()])
        .args(["--conf", &format!("yarn.resourcemanager.address={}", node.addr)]);
    common::process::run_to_end(cmd)
}

/// The state column of `host` in an `rmadmin` node table.
fn state_of(table: &str, host: &str) -> String {
    table
        .lines()
        .find(|l| l.split_whitespace().next() == Some(host))
        .and_then(|l| l.split_whitespace().nth(2))
        .unwrap_or_else(|| panic!("no {host} in\n{table}"))
        .to_string()
}

#[test]
fn rmadmin_decommissions_recommissions_and_lists_the_nodes_of_a_running_node() {
    let node = common::process::start_node();
    let o = rmadmin(&node, &["nodes"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let lines: Vec<&str> = o.stdout.lines().collect();
    assert_eq!(lines[0], "Total Nodes:3", "{}", o.stdout);
    assert_eq!(
        lines[1].split_whitespace().collect::<Vec<_>>(),
        [
            "HOST",
            "RACK",
            "STATE",
            "CONTAINERS",
            "MEMORY-USED/TOTAL",
            "VCORES-USED/TOTAL"
        ]
    );
    assert_eq!(state_of(&o.stdout, "host2"), "RUNNING");

    // A host the node does not have: one line naming it, exit 1.
    let o = rmadmin(&node, &["decommission", "host9"]);
    assert_eq!(o.code, 1);
    assert_eq!(
        o.stderr.trim(),
        "sparkyard rmadmin: error: no NodeManager on host 'host9' (the nodes are host1, host2, host3)"
    );
    let o = rmadmin(&node, &["decommission"]);
    assert_eq!(o.code, 1);
    assert_eq!(o.stderr.lines().count(), 1, "{}", o.stderr);
    let o = rmadmin(&node, &["decommission", "host2", "--timeout", "soon"]);
    assert_eq!(o.code, 1);
    assert!(o.stderr.contains("'soon' is not a duration"), "{}", o.stderr);

    // An idle node is decommissioned at once: nothing runs there and no application ran.
    let o = rmadmin(&node, &["decommission", "host2", "--timeout", "1m"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(state_of(&o.stdout, "host2"), "DECOMMISSIONED", "{}", o.stdout);
    assert_eq!(state_of(&o.stdout, "host1"), "RUNNING");
    // Recommissioned, its NodeManager registers again and it runs.
    let o = rmadmin(&node, &["recommission", "host2"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let deadline = Instant::now() + BOUND;
    loop {
        let o = rmadmin(&node, &["nodes"]);
        assert_eq!(o.code, 0, "{}", o.stderr);
        if state_of(&o.stdout, "host2") == "RUNNING" {
            break;
        }
        assert!(Instant::now() < deadline, "host2 runs again:\n{}", o.stdout);
        std::thread::sleep(Duration::from_millis(20));
    }
}
