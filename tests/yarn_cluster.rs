//! The YARN-side submission path end to end, in-process on an embedded cluster: the Client
//! submits `sparkyard.examples.DriverTest`, the ResourceManager launches its AM on a
//! NodeManager, the AM runs the driver, registers, allocates executors, the executors
//! register with the driver, and the application ends with the final status, exit codes and
//! diagnostics Spark and YARN give, on every path the issue names.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{eventually, within};
use serde_json::Value;
use sparkyard::conf::{NodeSpec, SparkConf};
use sparkyard::deploy::client::{follow_application, submit_application, ClientArgs, ClientOutcome};
use sparkyard::logs::ctx::Instrumented;
use sparkyard::rpc::EndpointRef;
use sparkyard::runtime::{ActorPath, KillMode, PartitionMode};
use sparkyard::scheduler::messages::RequestExecutors;
use sparkyard::scheduler::messages::YarnSchedulerProtocol;
use sparkyard::yarn::node::rm_path;
use sparkyard::yarn::protocol::ApplicationClientProtocol;
use sparkyard::yarn::records::{FinalApplicationStatus, YarnApplicationState};

use common::inproc::Node;

const DRIVER_TEST: &str = "sparkyard.examples.DriverTest";

fn three_nodes() -> Vec<NodeSpec> {
    let node = |h: &str, r: &str| NodeSpec {
        host: h.into(),
        rack: r.into(),
        memory_mb: 8192,
        vcores: 8,
    };
    vec![
        node("host1", "/rack1"),
        node("host2", "/rack1"),
        node("host3", "/rack2"),
    ]
}

async fn node(nodes: Vec<NodeSpec>) -> Node {
    let (cluster, rm) = common::embedded_node(&nodes).await;
    Node { cluster, rm }
}

/// Short intervals so that nothing waits on Spark's real-time defaults.
fn conf(extra: &[(&str, &str)]) -> Arc<SparkConf> {
    let mut c = SparkConf::new();
    c.set("spark.app.name", "DriverTest")
        .set("spark.yarn.report.interval", "50ms")
        .set("spark.scheduler.maxRegisteredResourcesWaitingTime", "2s");
    for (k, v) in extra {
        c.set(*k, *v);
    }
    Arc::new(c)
}

fn args(conf: Arc<SparkConf>, app_args: &[&str]) -> ClientArgs {
    ClientArgs {
        conf,
        main_class: DRIVER_TEST.into(),
        primary_resource: "spark-examples.jar".into(),
        app_args: app_args.iter().map(|s| s.to_string()).collect(),
        client_mode_driver: None,
    }
}

async fn run(node: &Node, args: ClientArgs) -> ClientOutcome {
    // The Client's records go to this cluster's capture, as if it were its /submit actor.
    let ctx = node.cluster.log_ctx().clone();
    let (rm, a) = (node.rm.clone(), args.clone());
    let submitted = Instrumented::new(async move { submit_application(&rm, &a).await }, ctx.clone()).await;
    let app = match submitted {
        Ok(id) => id,
        Err(e) => {
            return ClientOutcome {
                app_id: "application_0_0000".parse().unwrap(),
                report: None,
                verdict: Err(e),
            }
        }
    };
    let rm = node.rm.clone();
    within(Instrumented::new(
        async move { follow_application(&rm, &args, app).await },
        ctx,
    ))
    .await
}

async fn driver_output(node: &Node, outcome: &ClientOutcome) -> String {
    let container = outcome
        .report
        .as_ref()
        .and_then(|r| r.am_container)
        .expect("an AM container");
    node.rm.container_output(container).await.unwrap_or_default()
}

fn records(node: &Node) -> Vec<Value> {
    node.cluster.logs().records()
}

fn msgs(node: &Node) -> Vec<String> {
    records(node)
        .iter()
        .filter_map(|r| r["msg"].as_str().map(str::to_string))
        .collect()
}

/// The index of the first record whose message contains `text`, after `from`.
fn find_after(msgs: &[String], from: usize, text: &str) -> usize {
    match msgs.iter().skip(from).position(|m| m.contains(text)) {
        Some(i) => from + i,
        None => panic!("no record containing {text:?} after #{from}"),
    }
}

#[actix_rt::test]
async fn driver_test_registers_three_executors_and_the_logs_tell_the_path_in_order() {
    let node = node(three_nodes()).await;
    let outcome = run(&node, args(conf(&[("spark.executor.instances", "3")]), &[])).await;
    assert_eq!(outcome.verdict, Ok(()));
    let report = outcome.report.clone().unwrap();
    assert_eq!(report.state, YarnApplicationState::Finished);
    assert_eq!(report.final_status, FinalApplicationStatus::Succeeded);
    let out = driver_output(&node, &outcome).await;
    assert!(
        out.contains("DriverTest: 3 executors registered (requested 3)"),
        "{out}"
    );

    // The whole path, component by component, in order.
    let m = msgs(&node);
    let mut at = 0;
    for step in [
        "Requesting a new application from cluster with 3 NodeManagers",
        "Will allocate AM container, with 1408 MB memory including 384 MB overhead",
        "Submitting application",
        "State change from SUBMITTED to ACCEPTED",
        "Allocated AM container",
        "Start request for container_",
        "ApplicationAttemptId: appattempt_",
        "Starting the user application in a separate Thread",
        "Registering the ApplicationMaster",
        "State change from ACCEPTED to RUNNING",
        "Will request 3 executor container(s)",
        "Launching container",
        "resuming the driver",
        "SchedulerBackend is ready for scheduling",
        "Final app status: SUCCEEDED, exitCode: 0",
        "Unregistering ApplicationMaster with SUCCEEDED",
        "State change from RUNNING to FINISHED",
    ] {
        at = find_after(&m, at, step);
    }
    // Executors connect and register (racing the resume) before the backend is ready.
    let ready = find_after(&m, 0, "SchedulerBackend is ready for scheduling");
    let connect = find_after(&m, 0, "Connecting to driver");
    let registered = find_after(&m, connect, "Registered executor");
    find_after(&m, registered, "Successfully registered with driver");
    let third = m
        .iter()
        .enumerate()
        .filter(|(_, x)| x.starts_with("Registered executor"))
        .nth(2)
        .map(|(i, _)| i);
    assert!(
        third.is_some_and(|t| t < ready),
        "all three registered before the backend was ready"
    );
    // Every record of the AM carries the ids of its container.
    let am_records: Vec<&Value> = records(&node)
        .iter()
        .filter(|r| {
            r["actor"]
                .as_str()
                .is_some_and(|a| a.ends_with("/am/application-master"))
        })
        .cloned()
        .collect::<Vec<_>>()
        .leak()
        .iter()
        .collect();
    assert!(!am_records.is_empty());
    for r in am_records {
        assert_eq!(r["app_id"], report.app_id.to_string().as_str());
        assert!(r["container_id"].as_str().unwrap().ends_with("_01_000001"));
        assert_eq!(r["attempt"], 1);
    }
}

#[actix_rt::test]
async fn the_count_printed_is_the_drivers_when_the_cluster_fits_fewer_executors_than_asked() {
    // One node of 4 GB: the AM takes 2 GB (1408 MB rounded up), one executor the rest.
    let node = node(vec![NodeSpec {
        host: "host1".into(),
        rack: "/default-rack".into(),
        memory_mb: 4096,
        vcores: 4,
    }])
    .await;
    let outcome = run(
        &node,
        args(
            conf(&[
                ("spark.executor.instances", "3"),
                ("spark.scheduler.maxRegisteredResourcesWaitingTime", "300ms"),
            ]),
            &[],
        ),
    )
    .await;
    assert_eq!(outcome.verdict, Ok(()));
    let out = driver_output(&node, &outcome).await;
    assert!(
        out.contains("DriverTest: 1 executors registered (requested 3)"),
        "{out}"
    );
}

#[actix_rt::test]
async fn the_user_class_throwing_fails_each_attempt_with_exit_15() {
    let node = node(three_nodes()).await;
    let outcome = run(&node, args(conf(&[]), &["--throw"])).await;
    let report = outcome.report.clone().unwrap();
    // The last attempt unregisters FAILED: the application is FINISHED with final status FAILED.
    assert_eq!(
        (report.state, report.final_status),
        (YarnApplicationState::Finished, FinalApplicationStatus::Failed)
    );
    assert_eq!(report.current_attempt.unwrap().attempt, 2);
    assert!(
        report
            .diagnostics
            .starts_with("User class threw exception: java.lang.RuntimeException: DriverTest threw after"),
        "{}",
        report.diagnostics
    );
    assert_eq!(
        outcome.verdict,
        Err(format!(
            "Application {} finished with failed status",
            report.app_id
        ))
    );
    // The first attempt did not unregister, so YARN retried it; its AM exited 15.
    let m = msgs(&node);
    let first = find_after(&m, 0, "_000001 exited with  exitCode: 15");
    find_after(&m, first, "Final app status: FAILED, exitCode: 15");
}

#[actix_rt::test]
async fn throwing_before_the_context_is_exit_13() {
    let node = node(three_nodes()).await;
    let outcome = run(
        &node,
        args(
            conf(&[("spark.yarn.maxAppAttempts", "1")]),
            &["--throw-before-context"],
        ),
    )
    .await;
    let report = outcome.report.clone().unwrap();
    assert_eq!(
        (report.state, report.final_status),
        (YarnApplicationState::Failed, FinalApplicationStatus::Failed)
    );
    assert_eq!(
        report.current_attempt.unwrap().attempt,
        1,
        "maxAppAttempts=1 caps YARN's 2"
    );
    assert!(
        report.diagnostics.starts_with(&format!(
            "Application {} failed 1 times due to AM Container for appattempt_",
            report.app_id
        )),
        "{}",
        report.diagnostics
    );
    assert!(
        report
            .diagnostics
            .contains(" exited with  exitCode: 13\nFailing this attempt.Diagnostics: "),
        "{}",
        report.diagnostics
    );
    assert!(report.diagnostics.ends_with(". Failing the application."));
}

#[actix_rt::test]
async fn no_spark_context_in_time_is_exit_13_timed_out() {
    let node = node(three_nodes()).await;
    let outcome = run(
        &node,
        args(conf(&[("spark.yarn.am.waitTime", "200ms")]), &["--no-context"]),
    )
    .await;
    let report = outcome.report.clone().unwrap();
    assert_eq!(
        (report.state, report.final_status),
        (YarnApplicationState::Failed, FinalApplicationStatus::Failed)
    );
    assert!(
        report.diagnostics.contains("exited with  exitCode: 13"),
        "{}",
        report.diagnostics
    );
    assert!(
        report.diagnostics.contains("Timed out waiting for SparkContext."),
        "{}",
        report.diagnostics
    );
    assert_eq!(report.current_attempt.unwrap().attempt, 2);
}

#[actix_rt::test]
async fn a_first_attempt_that_fails_is_retried_and_the_second_succeeds() {
    let node = node(three_nodes()).await;
    let outcome = run(&node, args(conf(&[]), &["--fail-attempts", "1"])).await;
    assert_eq!(outcome.verdict, Ok(()));
    let report = outcome.report.clone().unwrap();
    assert_eq!(
        (report.state, report.final_status),
        (YarnApplicationState::Finished, FinalApplicationStatus::Succeeded)
    );
    assert_eq!(report.current_attempt.unwrap().attempt, 2);
    let out = driver_output(&node, &outcome).await;
    assert!(out.contains("on attempt 2"), "{out}");
    // Executor ids restart in the new attempt's driver.
    let m = msgs(&node);
    let second = find_after(&m, 0, "ApplicationAttemptId: appattempt_");
    let second = find_after(&m, second + 1, "ApplicationAttemptId: appattempt_");
    find_after(&m, second, "for executor with ID 1 ");
}

#[actix_rt::test]
async fn executor_failures_beyond_the_limit_end_the_application_with_exit_11() {
    let node = node(three_nodes()).await;
    // A bad JVM-style option in the executors' launch command: every executor container
    // exits 1 at once, as a JVM given a bad option does.
    let outcome = run(
        &node,
        args(
            conf(&[
                ("spark.executor.extraJavaOptions", "-XX:+Bogus"),
                ("spark.yarn.maxAppAttempts", "1"),
            ]),
            &[],
        ),
    )
    .await;
    let report = outcome.report.clone().unwrap();
    assert_eq!(
        (report.state, report.final_status),
        (YarnApplicationState::Finished, FinalApplicationStatus::Failed)
    );
    assert_eq!(report.diagnostics, "Max number of executor failures (3) reached");
    let m = msgs(&node);
    let at = find_after(&m, 0, "Container from a bad node: container_");
    find_after(&m, at, "Final app status: FAILED, exitCode: 11");
    let exits: Vec<Value> = records(&node)
        .into_iter()
        .filter(|r| {
            r["msg"]
                .as_str()
                .is_some_and(|s| s.contains("Unrecognized option: -XX:+Bogus"))
        })
        .collect();
    assert!(!exits.is_empty(), "the container's reason is logged");
    let rm_exit = records(&node).into_iter().find(|r| {
        r["actor"] == "/node/rm"
            && r["msg"]
                .as_str()
                .is_some_and(|s| s.contains("completed with exit status 1"))
    });
    assert!(
        rm_exit.is_some(),
        "a bad argument vector makes its container exit 1"
    );
}

#[actix_rt::test]
async fn an_unknown_queue_is_rejected_with_yarns_diagnostics() {
    let node = node(three_nodes()).await;
    let outcome = run(&node, args(conf(&[("spark.yarn.queue", "nope")]), &[])).await;
    let report = outcome.report.clone().unwrap();
    assert_eq!(
        (report.state, report.final_status),
        (YarnApplicationState::Failed, FinalApplicationStatus::Failed)
    );
    let user = sparkyard::deploy::client::current_user();
    assert_eq!(
        report.diagnostics,
        format!(
            "Application {} submitted by user {user} to unknown queue: nope",
            report.app_id
        )
    );
    assert_eq!(
        outcome.verdict,
        Err(format!(
            "Application {} finished with failed status",
            report.app_id
        ))
    );
}

#[actix_rt::test]
async fn memory_above_the_cluster_maximum_is_refused_with_sparks_message() {
    let node = node(three_nodes()).await;
    let outcome = run(&node, args(conf(&[("spark.executor.memory", "9g")]), &[])).await;
    assert_eq!(
        outcome.verdict,
        Err("Required executor memory (9216 MB), offHeap memory (0) MB, overhead (921 MB), and PySpark memory (0 MB) is above the max threshold (8192 MB) of this cluster! Please check the values of 'yarn.scheduler.maximum-allocation-mb' and/or 'yarn.nodemanager.resource.memory-mb'.".to_string())
    );
    let outcome = run(&node, args(conf(&[("spark.driver.memory", "8g")]), &[])).await;
    assert_eq!(
        outcome.verdict,
        Err("Required AM memory (8192+819 MB) is above the max threshold (8192 MB) of this cluster! Please check the values of 'yarn.scheduler.maximum-allocation-mb' and/or 'yarn.nodemanager.resource.memory-mb'.".to_string())
    );
}

#[actix_rt::test]
async fn new_executors_go_to_the_preferred_host() {
    let node = node(three_nodes()).await;
    let args = args(conf(&[("spark.executor.instances", "1")]), &["--sleep", "30s"]);
    let app = submit_application(&node.rm, &args).await.unwrap();
    // Wait for the first executor, then ask for two more, preferring host3.
    eventually("one executor registered", || {
        node.cluster.logs().records().iter().any(|r| {
            r["msg"]
                .as_str()
                .is_some_and(|m| m.starts_with("Registered executor"))
        })
    })
    .await;
    let yse = node
        .cluster
        .actors()
        .into_iter()
        .find(|a| a.path.as_str().ends_with("/driver/yarn-scheduler-endpoint"))
        .expect("the driver's YarnSchedulerEndpoint");
    let ep: EndpointRef<YarnSchedulerProtocol> = node.cluster.endpoint(&yse.path);
    let mut req = RequestExecutors::default();
    req.resource_profile_to_total_execs.insert(0, 3);
    req.num_locality_aware_tasks_per_resource_profile_id.insert(0, 20);
    req.host_to_local_task_count
        .insert(0, [("host3".to_string(), 20)].into_iter().collect());
    assert_eq!(ep.ask(req, Duration::from_secs(5)).await.unwrap(), Ok(true));
    eventually("three executors registered", || {
        node.cluster
            .logs()
            .records()
            .iter()
            .filter(|r| {
                r["msg"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("Registered executor"))
            })
            .count()
            == 3
    })
    .await;
    let hosts: Vec<String> = node
        .cluster
        .logs()
        .records()
        .iter()
        .filter(|r| {
            r["msg"]
                .as_str()
                .is_some_and(|m| m.starts_with("Registered executor"))
        })
        .map(|r| r["host"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(
        &hosts[1..],
        ["host3", "host3"],
        "the new executors follow the locality hints: {hosts:?}"
    );
    node.rm.kill(app, "test done").await.unwrap();
    let report = within(sparkyard::deploy::client::monitor_application(
        &node.rm,
        app,
        Duration::from_millis(50),
        false,
    ))
    .await;
    assert_eq!(report.state, YarnApplicationState::Killed);
    assert!(
        report.diagnostics.contains("was killed by user"),
        "{}",
        report.diagnostics
    );
    eventually("every container stopped", || {
        node.cluster
            .actors()
            .iter()
            .all(|a| !a.path.as_str().contains("/container_"))
    })
    .await;
}

#[actix_rt::test]
async fn client_mode_runs_the_driver_here_and_executors_in_the_cluster() {
    let node = node(three_nodes()).await;
    let conf = conf(&[]);
    let outcome = within(run_client_mode(&node, conf)).await;
    assert_eq!(outcome.0, Ok(()), "{:?}", outcome);
    let report = outcome.1.expect("a final report");
    assert_eq!(
        (report.state, report.final_status),
        (YarnApplicationState::Finished, FinalApplicationStatus::Succeeded)
    );
    let m = msgs(&node);
    let at = find_after(
        &m,
        0,
        "Connecting to the driver at /submit/driver/yarn-scheduler-endpoint",
    );
    find_after(&m, at, "Registered executor");
}

/// Starts DriverTest (with `app_args`) in client mode through SparkSubmit against the
/// embedded RM; the receiver gets spark-submit's exit status.
fn start_client_mode(
    node: &Node,
    conf: Arc<SparkConf>,
    app_args: &[&str],
) -> tokio::sync::oneshot::Receiver<i32> {
    use sparkyard::deploy::spark_submit::{SparkSubmit, SubmitPlan};
    use sparkyard::deploy::spark_submit_arguments::parse;
    use sparkyard::runtime::{ChildSpec, Restart, Strategy, SupervisorSpec};
    let mut argv: Vec<String> = ["--class", DRIVER_TEST, "x.jar"].map(String::from).to_vec();
    argv.extend(app_args.iter().map(|a| a.to_string()));
    let mut parsed = parse(&argv).unwrap();
    parsed.resolve(&[], &|_| None).unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let plan = Arc::new(SubmitPlan {
        args: parsed,
        conf,
        rm: node.rm.clone(),
        local_rm: Some(node.cluster.endpoint::<ApplicationClientProtocol>(&rm_path())),
        done: Arc::new(std::sync::Mutex::new(Some(tx))),
        applications: sparkyard::cli::roles::applications(),
    });
    let spec = SupervisorSpec::new(Strategy::OneForOne).child(
        ChildSpec::worker("spark-submit", move |_, me| SparkSubmit::new(me, plan.clone()))
            .restart(Restart::Temporary),
    );
    node.cluster.start_root("submit", spec).unwrap();
    rx
}

/// The application the run submitted (the first app id in the records).
fn app_of(node: &Node) -> Option<sparkyard::yarn::records::ApplicationId> {
    node.cluster
        .logs()
        .records()
        .iter()
        .find_map(|r| r["app_id"].as_str().map(str::to_string))
        .and_then(|a| a.parse().ok())
}

/// Runs DriverTest in client mode through SparkSubmit against the embedded RM.
async fn run_client_mode(
    node: &Node,
    conf: Arc<SparkConf>,
) -> (
    Result<(), String>,
    Option<sparkyard::yarn::records::ApplicationReport>,
) {
    let code = start_client_mode(node, conf, &[]).await.unwrap_or(-1);
    let report = match app_of(node) {
        Some(app) => node.rm.report(app, None).await.ok().and_then(|r| r.ok()),
        None => None,
    };
    (
        if code == 0 {
            Ok(())
        } else {
            Err(format!("exit {code}"))
        },
        report,
    )
}

/// Waits (bounded) until a record's message contains `text`; answers its index.
async fn record_with(node: &Node, text: &str) -> usize {
    record_after(node, 0, text).await
}

/// Waits (bounded) until a record from index `from` on has a message containing `text`;
/// answers its index.
async fn record_after(node: &Node, from: usize, text: &str) -> usize {
    let mut at = None;
    eventually(text, || {
        at = msgs(node)
            .iter()
            .skip(from)
            .position(|m| m.contains(text))
            .map(|i| from + i);
        at.is_some()
    })
    .await;
    at.unwrap_or_default()
}

#[actix_rt::test]
async fn an_allocation_for_an_attempt_the_rm_forgot_ends_the_am_with_exit_12() {
    let node = node(three_nodes()).await;
    let args = args(
        conf(&[
            ("spark.executor.instances", "1"),
            ("spark.yarn.maxAppAttempts", "1"),
            ("spark.yarn.scheduler.heartbeat.interval-ms", "50ms"),
        ]),
        &["--sleep", "30s"],
    );
    let app = submit_application(&node.rm, &args).await.unwrap();
    record_with(&node, "Registered executor").await;
    // The application is killed while the NodeManagers are slow to hear of it: the AM's
    // next allocation heartbeat reaches an RM that no longer runs its attempt
    // (ApplicationAttemptNotFoundException), before its container is stopped.
    node.cluster
        .partition(
            "*/node-manager",
            PartitionMode::Delay(Duration::from_secs(2)),
            Duration::from_secs(3),
            "test",
        )
        .unwrap();
    node.rm.kill(app, "").await.unwrap();
    let at = record_with(
        &node,
        "Final app status: FAILED, exitCode: 12, (reason: Application attempt appattempt_",
    )
    .await;
    let m = msgs(&node);
    assert!(
        m[at].ends_with("_000001 doesn't exist in ApplicationMasterService cache.)"),
        "{}",
        m[at]
    );
    // The AM ends with that exit code (its container's status).
    eventually("the AM ended with exit code 12", || {
        records(&node).iter().any(|r| {
            r["event"] == "actor_failed"
                && r["actor"]
                    .as_str()
                    .is_some_and(|a| a.ends_with("/am/application-master"))
                && r["reason"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("exit code 12: Application attempt"))
        })
    })
    .await;
    node.cluster.heal_partitions();
}

#[actix_rt::test]
async fn a_client_mode_driver_lost_with_treat_disconnect_as_failed_ends_the_am_with_exit_17() {
    let node = node(three_nodes()).await;
    let conf = conf(&[
        ("spark.executor.instances", "1"),
        ("spark.yarn.maxAppAttempts", "1"),
        ("spark.yarn.am.clientModeTreatDisconnectAsFailed", "true"),
    ]);
    let _done = start_client_mode(&node, conf, &["--sleep", "30s"]);
    record_with(&node, "Registered executor").await;
    // The driver goes away without telling the AM it is stopping.
    node.cluster
        .kill("/submit/driver", KillMode::Stop, "test")
        .unwrap();
    let lost = record_with(
        &node,
        "Application Master lost connection with driver! Shutting down.",
    )
    .await;
    let m = msgs(&node);
    find_after(&m, lost, "Final app status: FAILED, exitCode: 17");
    assert!(
        !m.iter()
            .any(|l| l.starts_with("Final app status: FAILED, exitCode: 17,")),
        "no reason given, as Spark's"
    );
    // The last attempt unregisters FAILED, with no diagnostics.
    let app = app_of(&node).expect("an application");
    let report = report_until(&node, app, "finished", |r| {
        r.state == YarnApplicationState::Finished
    })
    .await;
    assert_eq!(report.final_status, FinalApplicationStatus::Failed);
    assert_eq!(report.diagnostics, "");
}

#[actix_rt::test]
async fn a_client_mode_am_registering_for_a_new_attempt_resets_the_drivers_allocation() {
    let node = node(three_nodes()).await;
    let conf = conf(&[
        ("spark.dynamicAllocation.enabled", "true"),
        ("spark.dynamicAllocation.minExecutors", "1"),
        ("spark.dynamicAllocation.maxExecutors", "2"),
        ("spark.yarn.maxAppAttempts", "2"),
        ("spark.yarn.scheduler.heartbeat.interval-ms", "100ms"),
    ]);
    let _done = start_client_mode(&node, conf, &["--sleep", "30s"]);
    record_with(&node, "Registered executor").await;
    // The first attempt's ExecutorLauncher dies; YARN starts a second attempt, whose AM
    // registers with the same driver.
    node.cluster
        .kill("*_01_000001/am/application-master", KillMode::Panic, "test")
        .unwrap();
    let registered = record_with(&node, "_02_000001/am/am-endpoint").await;
    let m = msgs(&node);
    assert!(
        m[registered].starts_with("ApplicationMaster registered as /node/"),
        "{}",
        m[registered]
    );
    // reset(): the backend removes what it still knows as stale, the allocation manager
    // goes back to its initial target and forgets its executors.
    record_after(
        &node,
        registered,
        "Reset the executor allocation: target back to the initial 1 executor(s)",
    )
    .await;
    record_after(&node, registered, "Resetting the scheduler backend").await;
    // Executor 1 (of the first attempt) is gone, as stale or lost with its container
    // (whichever came first); the second attempt's executor registers and is the only one
    // the allocation manager counts.
    eventually("executor 1 removed", || {
        msgs(&node).iter().any(|l| l.starts_with("Removed executor 1 on"))
    })
    .await;
    record_with(&node, "New executor 2 has registered (new total is 1)").await;
    let app = app_of(&node).expect("an application");
    node.rm.kill(app, "test done").await.unwrap();
}

#[actix_rt::test]
async fn the_application_tree_while_running() {
    let node = node(three_nodes()).await;
    let args = args(conf(&[("spark.executor.instances", "2")]), &["--sleep", "30s"]);
    let app = submit_application(&node.rm, &args).await.unwrap();
    eventually("two executors registered", || {
        node.cluster
            .logs()
            .records()
            .iter()
            .filter(|r| {
                r["msg"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("Registered executor"))
            })
            .count()
            == 2
    })
    .await;
    let paths: Vec<String> = node
        .cluster
        .actors()
        .into_iter()
        .map(|a| a.path.to_string())
        .collect();
    let am = format!(
        "/node/nm-host1/container_{}_{:04}_01_000001/am",
        app.cluster_timestamp, app.id
    );
    for expected in [
        "/node".to_string(),
        "/node/rm".into(),
        "/node/nm-host1/node-manager".into(),
        am.clone(),
        format!("{am}/application-master"),
        format!("{am}/launcher"),
        format!("{am}/allocator"),
        format!("{am}/am-endpoint"),
        format!("{am}/reporter"),
        format!("{am}/driver"),
        format!("{am}/driver/driver-endpoint"),
        format!("{am}/driver/yarn-scheduler-endpoint"),
    ] {
        assert!(paths.contains(&expected), "{expected} missing from {paths:#?}");
    }
    assert_eq!(
        paths.iter().filter(|p| p.contains("/executor-")).count(),
        2,
        "{paths:#?}"
    );
    node.rm.kill(app, "").await.unwrap();
    let _ = within(sparkyard::deploy::client::monitor_application(
        &node.rm,
        app,
        Duration::from_millis(50),
        false,
    ))
    .await;
    let _ = ActorPath::parse("/node").unwrap();
}

#[actix_rt::test]
async fn an_executor_ask_above_the_maximum_vcores_is_refused_by_yarn_and_fails_the_attempt() {
    let node = node(three_nodes()).await;
    // The Client checks memory only (as Spark's does); YARN refuses the vcores in Allocate,
    // and the AM's first allocation throws: an uncaught exception, exit 10.
    let outcome = run(
        &node,
        args(
            conf(&[("spark.executor.cores", "5"), ("spark.yarn.maxAppAttempts", "1")]),
            &[],
        ),
    )
    .await;
    let report = outcome.report.clone().unwrap();
    assert_eq!(
        (report.state, report.final_status),
        (YarnApplicationState::Finished, FinalApplicationStatus::Failed)
    );
    assert!(
        report.diagnostics.starts_with("Uncaught exception: Invalid resource request! Cannot allocate containers as requested resource is greater than maximum allowed allocation. Requested resource type=[vcores], Requested resource=<memory:1408, vCores:5>, maximum allowed allocation=<memory:8192, vCores:4>"),
        "{}",
        report.diagnostics
    );
    let m = msgs(&node);
    find_after(&m, 0, "Final app status: FAILED, exitCode: 10");
}

/// Polls `app`'s report (at most 30 s) until `done` holds for it; answers that report.
async fn report_until(
    node: &Node,
    app: sparkyard::yarn::records::ApplicationId,
    what: &str,
    done: impl Fn(&sparkyard::yarn::records::ApplicationReport) -> bool,
) -> sparkyard::yarn::records::ApplicationReport {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(Ok(r)) = node.rm.report(app, None).await {
            if done(&r) {
                return r;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "timed out waiting for {app}: {what}; last report {r:?}"
            );
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn submitted(node: &Node, args: &ClientArgs) -> sparkyard::yarn::records::ApplicationId {
    let ctx = node.cluster.log_ctx().clone();
    let (rm, a) = (node.rm.clone(), args.clone());
    Instrumented::new(async move { submit_application(&rm, &a).await }, ctx)
        .await
        .expect("submitted")
}

#[actix_rt::test]
async fn an_application_waits_accepted_while_the_queues_am_limit_is_reached() {
    // Three 8 GB nodes: AMs may hold 0.1 × 24576 MB, rounded up to 3072 MB, so one 2 GB AM.
    let node = node(three_nodes()).await;
    let holder = ClientArgs {
        main_class: "sparkyard.examples.SleepTasks".into(),
        app_args: ["--tasks", "1", "--ms", "600000"].map(String::from).to_vec(),
        ..args(conf(&[]), &[])
    };
    let first = submitted(&node, &holder).await;
    report_until(&node, first, "RUNNING", |r| {
        r.state == YarnApplicationState::Running
    })
    .await;

    let waiting_args = args(conf(&[]), &[]);
    let waiting = submitted(&node, &waiting_args).await;
    let report = report_until(&node, waiting, "held back by the AM limit", |r| {
        r.diagnostics.contains("Queue's AM resource limit exceeded")
    })
    .await;
    assert_eq!(report.state, YarnApplicationState::Accepted);
    assert!(report.am_container.is_none(), "{report:?}");
    let d = &report.diagnostics;
    assert!(d.starts_with('[') && d.contains(" +0000 "), "{d}");
    assert!(
        d.contains(
            "] Application is added to the scheduler and is not yet activated. Queue's AM resource limit exceeded.  Details : AM Partition = <DEFAULT_PARTITION>; AM Resource Request = <memory:2048, vCores:1>; Queue Resource Limit for AM = <memory:3072, vCores:1>; User AM Resource Limit of the queue = <memory:3072, vCores:1>; Queue AM Resource Usage = <memory:2048, vCores:1>; "
        ),
        "{d}"
    );

    // The first ends: the waiting one is activated and runs to its end.
    node.rm.kill(first, "").await.expect("killed");
    let rm = node.rm.clone();
    let ctx = node.cluster.log_ctx().clone();
    let outcome = tokio::time::timeout(
        Duration::from_secs(30),
        Instrumented::new(
            async move { follow_application(&rm, &waiting_args, waiting).await },
            ctx,
        ),
    )
    .await
    .expect("the waiting application ends within 30 s");
    assert_eq!(outcome.verdict, Ok(()), "{:?}", outcome.report);
    let m = msgs(&node);
    let activated = |app: &str| format!("Application {app} from user: ");
    let first_at = find_after(&m, 0, &activated(&first.to_string()));
    find_after(&m, first_at, &activated(&waiting.to_string()));
}

#[actix_rt::test]
async fn concurrent_submissions_all_succeed_with_one_am_at_a_time() {
    let node = node(three_nodes()).await;
    let runs = (0..8).map(|_| run(&node, args(conf(&[]), &[])));
    let outcomes = tokio::time::timeout(Duration::from_secs(60), futures_util::future::join_all(runs))
        .await
        .expect("eight applications end within 60 s");
    for o in &outcomes {
        assert_eq!(o.verdict, Ok(()), "{} {:?}", o.app_id, o.report);
    }
    // Whatever the order, no activation ever took AMs beyond the limit: one 2 GB AM.
    let activations: Vec<Value> = records(&node)
        .into_iter()
        .filter(|r| {
            r["msg"]
                .as_str()
                .is_some_and(|m| m.contains(" activated in queue: default"))
        })
        .collect();
    assert_eq!(activations.len(), 8);
    for a in &activations {
        assert_eq!(a["am_used"], "<memory:2048, vCores:1>", "{a}");
        assert_eq!(a["am_limit"], "<memory:3072, vCores:1>", "{a}");
    }
}

#[actix_rt::test]
async fn only_the_most_recent_completed_applications_are_kept() {
    let mut yarn = SparkConf::new();
    yarn.set("yarn.resourcemanager.max-completed-applications", "2");
    let (cluster, rm) = common::embedded_node_with(&three_nodes(), &yarn).await;
    let node = Node { cluster, rm };
    let mut ids = Vec::new();
    for _ in 0..3 {
        let outcome = run(&node, args(conf(&[]), &[])).await;
        assert_eq!(outcome.verdict, Ok(()));
        ids.push(outcome.app_id);
    }
    // The oldest is forgotten, as YARN's RMAppManager forgets it.
    match node.rm.report(ids[0], None).await {
        Ok(Err(e)) => assert!(e.to_string().contains(&ids[0].to_string()), "{e}"),
        other => panic!("{} should be forgotten: {other:?}", ids[0]),
    }
    for id in &ids[1..] {
        let r = node.rm.report(*id, None).await.expect("answered").expect("kept");
        assert_eq!(r.final_status, FinalApplicationStatus::Succeeded);
    }
    assert!(msgs(&node)
        .iter()
        .any(|m| m.contains(&format!("Application {} removed", ids[0]))));
}
