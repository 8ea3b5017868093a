//! Node liveness on the cluster clock (paused: it moves only when the test advances it): a
//! NodeManager cut off from the ResourceManager by a drop partition stops being heard; after
//! `yarn.nm.liveness-monitor.expiry-interval-ms` the RM expires its node (LOST), the AM
//! container it ran completes as lost (-100) and a new attempt, not counted against the
//! maximum, starts on the other node. Once the partition heals, the node's next heartbeat is
//! answered RESYNC, it registers again as a new node, and the container it still ran is
//! stopped. A Spark job whose executor's whole node is cut off the network (real clock, short
//! intervals) completes: the lost container is reported -100 and replaced. Every wait is
//! bounded: by clock steps, or seconds of real time for the actors.

mod common;

use std::time::Duration;

use actix::{Actor, AsyncContext, Context};
use common::eventually;
use serde_json::Value as Json;
use sparkyard::conf::{NodeSpec, SparkConf};
use sparkyard::runtime::{ChildSpec, Clock, Cluster, Me, PartitionMode, Restart};
use sparkyard::yarn::launcher::{Launch, LauncherRegistry, Process};
use sparkyard::yarn::node::{container_path, rm_path, start_node, wait_ready};
use sparkyard::yarn::protocol::{
    ApplicationClientProtocol, GetApplicationReport, GetClusterNodes, GetNewApplication, ListNodes,
    ResourceManagerAdministrationProtocol, SubmitApplication,
};
use sparkyard::yarn::records::{
    ApplicationId, ApplicationReport, ApplicationSubmissionContext, ContainerLaunchContext, NodeReport,
    NodeState, Resource, YarnApplicationState,
};

const WAIT: Duration = Duration::from_secs(5);
const EXPIRY_MS: u64 = 9_000;
const HEARTBEAT_MS: u64 = 1_000;

/// A process that runs until it is stopped.
struct Sleeps {
    _me: Me,
}

sparkyard::speaks!(Sleeps);

impl Actor for Sleeps {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        // Nothing to do but to stay up until stopped.
        ctx.spawn(actix::fut::wrap_future(std::future::pending::<()>()));
    }
}

fn sleep_program(_: &Launch<'_>) -> Result<Process, String> {
    let spec = ChildSpec::worker("sleep", |_, me| Sleeps { _me: me })
        .restart(Restart::Temporary)
        .significant(true);
    Ok(Process::new(spec))
}

/// Two NodeManagers on a paused clock, both registered.
async fn paused_node() -> Cluster {
    sparkyard::logs::init_for_tests();
    let cluster = Cluster::builder()
        .clock(Clock::manual())
        .capture_logs(true)
        .node("rmhost")
        .build()
        .unwrap();
    let mut conf = SparkConf::new();
    conf.set(
        "yarn.nm.liveness-monitor.expiry-interval-ms",
        EXPIRY_MS.to_string(),
    )
    .set(
        "yarn.resourcemanager.nodemanagers.heartbeat-interval-ms",
        HEARTBEAT_MS.to_string(),
    );
    let nodes: Vec<NodeSpec> = ["host1", "host2"]
        .iter()
        .map(|h| NodeSpec {
            host: h.to_string(),
            rack: "/rack1".into(),
            memory_mb: 8192,
            vcores: 8,
        })
        .collect();
    let launchers = LauncherRegistry::new().register("sleep", sleep_program);
    start_node(&cluster, &conf, &nodes, &launchers, "rmhost", None).unwrap();
    wait_ready(&cluster, 2, WAIT).await.unwrap();
    cluster
}

async fn submit_sleeping_am(cluster: &Cluster) -> ApplicationId {
    let rm = cluster.endpoint::<ApplicationClientProtocol>(&rm_path());
    let app = rm.ask(GetNewApplication, WAIT).await.unwrap().unwrap().app_id;
    let submission = ApplicationSubmissionContext {
        app_id: app,
        name: "sleeper".into(),
        queue: "default".into(),
        app_type: "YARN".into(),
        user: "tester".into(),
        max_app_attempts: Some(2),
        tags: Vec::new(),
        resource: Resource::new(1024, 1),
        am_container_spec: ContainerLaunchContext {
            command: vec!["sleep".into()],
            ..Default::default()
        },
        acls: Default::default(),
    };
    rm.ask(SubmitApplication(submission), WAIT)
        .await
        .unwrap()
        .unwrap();
    app
}

async fn report(cluster: &Cluster, app: ApplicationId) -> ApplicationReport {
    let rm = cluster.endpoint::<ApplicationClientProtocol>(&rm_path());
    rm.ask(
        GetApplicationReport {
            app_id: app,
            wait: None,
        },
        WAIT,
    )
    .await
    .unwrap()
    .unwrap()
}

async fn all_nodes(cluster: &Cluster) -> Vec<NodeReport> {
    let rm = cluster.endpoint::<ResourceManagerAdministrationProtocol>(&rm_path());
    rm.ask(ListNodes, WAIT).await.unwrap()
}

fn state_of(nodes: &[NodeReport], host: &str) -> Option<NodeState> {
    nodes.iter().find(|n| n.host == host).map(|n| n.state)
}

/// Advances the paused clock one heartbeat at a time, at most `max_steps` times, until
/// `done` holds; answers how many steps it took.
async fn advance_until(cluster: &Cluster, what: &str, max_steps: u32, mut done: impl FnMut() -> bool) -> u32 {
    for step in 0..=max_steps {
        sparkyard::runtime::clock::settle().await;
        if done() {
            return step;
        }
        cluster.clock().advance(Duration::from_millis(HEARTBEAT_MS)).await;
    }
    panic!("{what}: not after {max_steps} heartbeat intervals");
}

fn msgs(cluster: &Cluster) -> Vec<String> {
    cluster
        .logs()
        .records()
        .iter()
        .filter_map(|r| r["msg"].as_str().map(str::to_string))
        .collect()
}

#[actix_rt::test]
async fn a_node_cut_off_from_the_rm_is_expired_its_containers_lost_and_it_rejoins_after_a_resync() {
    let cluster = paused_node().await;
    let app = submit_sleeping_am(&cluster).await;
    // The AM container runs on one of the nodes.
    let mut am = None;
    eventually("the AM container runs", || {
        am = cluster
            .logs()
            .records()
            .iter()
            .filter_map(|r| r["msg"].as_str())
            .find_map(|m| m.strip_prefix("Allocated AM container "))
            .map(|rest| {
                let mut words = rest.split_whitespace();
                let id = words.next().unwrap().to_string();
                let host = words.nth(1).unwrap().to_string();
                (id, host)
            });
        am.as_ref().is_some_and(|(id, host)| {
            let path = container_path(host, &id.parse().unwrap());
            cluster.registry().incarnation(&path).is_some()
        })
    })
    .await;
    let (am_id, am_host) = am.unwrap();
    let other = if am_host == "host1" { "host2" } else { "host1" };
    let container = am_id.parse().unwrap();

    // Heartbeats flow for a while: nothing expires.
    for _ in 0..12 {
        cluster.clock().advance(Duration::from_millis(HEARTBEAT_MS)).await;
    }
    assert!(
        cluster.logs().events("node_expired").is_empty(),
        "a heartbeating node is not expired"
    );

    // Cut the AM's NodeManager off: its heartbeats are dropped.
    let nm = format!("/node/nm-{am_host}/node-manager");
    cluster
        .partition(&nm, PartitionMode::Drop, Duration::from_secs(3600), "test")
        .unwrap();
    let cut_at = cluster.clock().now();
    let steps = advance_until(&cluster, "the silent node is expired", 20, || {
        !cluster.logs().events("node_expired").is_empty()
    })
    .await;
    let expired = cluster.logs().events("node_expired");
    assert_eq!(expired.len(), 1, "{expired:?}");
    let record = &expired[0];
    assert_eq!(record["host"], Json::from(am_host.as_str()));
    let silence = record["silence_ms"].as_u64().unwrap();
    // Silent for the whole interval, found within a third of it after (the check period),
    // the last heartbeat having been at most one interval before the cut.
    assert!(
        (EXPIRY_MS..EXPIRY_MS + EXPIRY_MS / 3 + HEARTBEAT_MS).contains(&silence),
        "silence {silence} ms"
    );
    let waited = cluster.clock().now() - cut_at;
    assert!(
        waited <= Duration::from_millis(EXPIRY_MS + EXPIRY_MS / 3 + HEARTBEAT_MS),
        "{waited:?} ({steps} steps)"
    );

    // LOST, no longer a live node; the AM container completed as lost; the attempt failed
    // without counting, and the next one runs on the other node.
    let nodes = all_nodes(&cluster).await;
    assert_eq!(state_of(&nodes, &am_host), Some(NodeState::Lost), "{nodes:?}");
    assert_eq!(state_of(&nodes, other), Some(NodeState::Running));
    let rm = cluster.endpoint::<ApplicationClientProtocol>(&rm_path());
    let live = rm.ask(GetClusterNodes, WAIT).await.unwrap();
    assert_eq!(
        live.iter().map(|n| n.host.as_str()).collect::<Vec<_>>(),
        vec![other]
    );
    assert!(
        msgs(&cluster).contains(&format!(
            "Container {am_id} completed with exit status -100 (0 container(s) of the attempt running)"
        )),
        "the AM container completes as lost"
    );
    let report = report(&cluster, app).await;
    assert_eq!(report.state, YarnApplicationState::Accepted, "{report:?}");
    assert_eq!(report.current_attempt.map(|a| a.attempt), Some(2));
    assert!(
        report.diagnostics.contains("Container released on a *lost* node"),
        "{}",
        report.diagnostics
    );
    let second = report.am_container.unwrap();
    assert!(msgs(&cluster).contains(&format!(
        "Allocated AM container {second} on {other} (<memory:1024, vCores:1>) for {}",
        second.attempt
    )));

    // The partition heals: the node's next heartbeat is told to resync, it registers again
    // as a new node, and the old AM container it still runs is stopped.
    cluster.heal_partitions();
    advance_until(&cluster, "the node rejoins", 40, || {
        cluster
            .registry()
            .incarnation(&container_path(&am_host, &container))
            .is_none()
            && !cluster.logs().events("node_resync").is_empty()
    })
    .await;
    let resync = cluster.logs().events("node_resync");
    assert_eq!(
        resync[0]["diagnostics"],
        Json::from(format!("Node not found resyncing {am_host}"))
    );
    let nodes = all_nodes(&cluster).await;
    assert_eq!(state_of(&nodes, &am_host), Some(NodeState::Running), "{nodes:?}");
    assert_eq!(rm.ask(GetClusterNodes, WAIT).await.unwrap().len(), 2);
    // Back for good: more heartbeats, no second expiry.
    for _ in 0..(2 * EXPIRY_MS / HEARTBEAT_MS) {
        cluster.clock().advance(Duration::from_millis(HEARTBEAT_MS)).await;
    }
    assert_eq!(cluster.logs().events("node_expired").len(), 1);
    cluster.shutdown(WAIT).await;
}

#[actix_rt::test]
async fn a_node_manager_of_another_cluster_is_refused_once_and_stops() {
    use sparkyard::runtime::Kept;
    use sparkyard::yarn::node_manager::{NmConfig, NodeManager, NodeManagerCore};
    use std::sync::{Arc, Mutex};

    let cluster = paused_node().await;
    // A NodeManager configured for another cluster joins this RM.
    let heard = Arc::new(Mutex::new(Vec::<String>::new()));
    let hook = heard.clone();
    let spec = NodeSpec {
        host: "stray".into(),
        rack: "/rack9".into(),
        memory_mb: 4096,
        vcores: 4,
    };
    let config = NmConfig {
        cluster_id: "elsewhere".into(),
        ..NmConfig::default()
    };
    cluster
        .start_root_worker("stray", move |_, me| {
            let hook = hook.clone();
            NodeManager::new(
                me,
                spec,
                config,
                rm_path(),
                Kept::new(NodeManagerCore::default()),
                LauncherRegistry::new(),
            )
            .on_shutdown(Arc::new(move |line: &str| {
                hook.lock().unwrap().push(line.to_string())
            }))
        })
        .unwrap();
    let line = "Disallowed NodeManager from stray: it joins cluster 'elsewhere' (yarn.resourcemanager.cluster-id) but this ResourceManager runs cluster 'sparkyard', sending SHUTDOWN signal to the NodeManager.";
    let nm_line = format!("Received SHUTDOWN signal from Resourcemanager, Registration of NodeManager failed, Message from ResourceManager: {line}");
    eventually("the NodeManager is refused", || !heard.lock().unwrap().is_empty()).await;
    assert_eq!(*heard.lock().unwrap(), vec![nm_line.clone()]);
    // One line on each side, naming both values.
    let rm_side = cluster.logs().events("node_registration_refused");
    assert_eq!(rm_side.len(), 1);
    assert_eq!(rm_side[0]["msg"], Json::from(line));
    let nm_side = cluster.logs().events("node_manager_shutdown");
    assert_eq!(nm_side.len(), 1);
    assert_eq!(nm_side[0]["msg"], Json::from(nm_line));
    // It does not try again, nor heartbeat: the RM never hears of it.
    for _ in 0..20 {
        cluster.clock().advance(Duration::from_millis(HEARTBEAT_MS)).await;
    }
    let registering = msgs(&cluster)
        .iter()
        .filter(|m| m.starts_with("NodeManager stray (/rack9) registering"))
        .count();
    assert_eq!(registering, 1);
    assert_eq!(cluster.logs().events("node_registration_refused").len(), 1);
    assert_eq!(heard.lock().unwrap().len(), 1);
    let nodes = all_nodes(&cluster).await;
    assert!(state_of(&nodes, "stray").is_none(), "{nodes:?}");
    cluster.shutdown(WAIT).await;
}

#[actix_rt::test]
async fn a_decommissioned_node_is_told_to_shut_down_and_heartbeats_again_once_recommissioned() {
    use sparkyard::yarn::protocol::RefreshNodes;

    let cluster = paused_node().await;
    let admin = cluster.endpoint::<ResourceManagerAdministrationProtocol>(&rm_path());
    let refresh = |decommission: &[&str], recommission: &[&str]| RefreshNodes {
        decommission: decommission.iter().map(|h| h.to_string()).collect(),
        recommission: recommission.iter().map(|h| h.to_string()).collect(),
        graceful_timeout: Some(Duration::from_secs(60)),
    };
    // Nothing runs on host2: it is decommissioned at once, and its next heartbeat is
    // answered SHUTDOWN.
    let nodes = admin.ask(refresh(&["host2"], &[]), WAIT).await.unwrap().unwrap();
    assert_eq!(state_of(&nodes, "host2"), Some(NodeState::Decommissioned));
    advance_until(&cluster, "host2 is told to shut down", 3, || {
        !cluster.logs().events("node_manager_shutdown").is_empty()
    })
    .await;
    let shutdown = cluster.logs().events("node_manager_shutdown");
    assert_eq!(
        shutdown[0]["msg"],
        Json::from(
            "Received SHUTDOWN signal from Resourcemanager as part of heartbeat, hence shutting down. Message from ResourceManager: Disallowed NodeManager nodeId: host2 hostname: host2"
        )
    );
    // Well past the expiry interval: a decommissioned node is not expired, and host1,
    // heartbeating, neither.
    for _ in 0..(2 * EXPIRY_MS / HEARTBEAT_MS) {
        cluster.clock().advance(Duration::from_millis(HEARTBEAT_MS)).await;
    }
    assert_eq!(
        cluster.logs().events("node_manager_shutdown").len(),
        1,
        "told once, then silent"
    );
    assert!(cluster.logs().events("node_expired").is_empty());

    // Recommissioned: asked to register, it runs again and keeps heartbeating.
    admin.ask(refresh(&[], &["host2"]), WAIT).await.unwrap().unwrap();
    let mut running = false;
    for _ in 0..3 {
        cluster.clock().advance(Duration::from_millis(HEARTBEAT_MS)).await;
        running = state_of(&all_nodes(&cluster).await, "host2") == Some(NodeState::Running);
        if running {
            break;
        }
    }
    assert!(running, "{:?}", all_nodes(&cluster).await);
    for _ in 0..(2 * EXPIRY_MS / HEARTBEAT_MS) {
        cluster.clock().advance(Duration::from_millis(HEARTBEAT_MS)).await;
    }
    assert!(cluster.logs().events("node_expired").is_empty());
    assert_eq!(
        state_of(&all_nodes(&cluster).await, "host2"),
        Some(NodeState::Running)
    );
    cluster.shutdown(WAIT).await;
}

/// An executor (id, host) that has started a task on a host other than the AM's.
fn busy_executor_off_the_am(records: &[Json]) -> Option<(String, String)> {
    let s = |r: &Json, k: &str| r[k].as_str().unwrap_or_default().to_string();
    let am_host = records
        .iter()
        .filter_map(|r| r["msg"].as_str())
        .find_map(|m| m.strip_prefix("Allocated AM container "))
        .and_then(|rest| rest.split_whitespace().nth(2))?
        .to_string();
    records
        .iter()
        .filter(|r| s(r, "msg").starts_with("Starting task "))
        .find(|r| s(r, "host") != am_host)
        .map(|r| (s(r, "executor_id"), s(r, "host")))
}

#[actix_rt::test]
async fn a_spark_job_survives_a_node_cut_off_the_network_as_yarn_expires_it() {
    use common::inproc::{conf, nodes, submit, succeeded, Node};

    // Real time, short intervals: heartbeats every 100 ms, a node lost after 1 s of silence.
    let mut node_conf = SparkConf::new();
    node_conf
        .set("yarn.nm.liveness-monitor.expiry-interval-ms", "1000")
        .set("yarn.resourcemanager.nodemanagers.heartbeat-interval-ms", "100");
    let (cluster, rm) = common::embedded_node_with(&nodes(), &node_conf).await;
    let node = Node { cluster, rm };
    let c = conf(&[
        ("spark.executor.instances", "2"),
        ("spark.yarn.scheduler.heartbeat.interval-ms", "50ms"),
    ]);
    let job = submit(
        &node,
        "sparkyard.examples.SleepTasks",
        &["--tasks", "24", "--ms", "150"],
        c,
    );
    // Once an executor off the AM's node runs a task, its whole node (NodeManager and
    // containers) is cut off the network.
    let cut = async {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(found) = busy_executor_off_the_am(&node.cluster.logs().records()) {
                let (_, host) = &found;
                node.cluster
                    .partition(
                        &format!("/node/nm-{host}*"),
                        PartitionMode::Drop,
                        Duration::from_secs(600),
                        "test",
                    )
                    .unwrap();
                return found;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no executor ran a task off the AM's node"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    let ((outcome, out), (_, host)) = tokio::join!(job, cut);
    succeeded(&outcome, &out);
    assert!(out.contains("SleepTasks: job 0: 24 tasks"), "{out}");

    let expired = node.cluster.logs().events("node_expired");
    assert_eq!(expired.len(), 1, "{expired:?}");
    assert_eq!(expired[0]["host"], Json::from(host.as_str()));
    assert!(expired[0]["lost_containers"].as_u64().unwrap() >= 1);
    let all = msgs(&node.cluster);
    // The AM heard its executor's container was lost (not the application's fault) and
    // got a replacement elsewhere.
    assert!(
        all.iter().any(|m| m.starts_with("Container marked as failed: ")
            && m.contains(&format!("on host: {host}. Exit status: -100."))),
        "the allocator hears of the lost container"
    );
    assert!(
        !all.iter().any(|m| m.contains("Container from a bad node")),
        "a lost node's containers are not executor failures"
    );
    // It asks for a replacement (which may or may not start before the job is done).
    let lost_at = all
        .iter()
        .position(|m| m.starts_with("Container marked as failed: ") && m.contains("Exit status: -100."))
        .unwrap();
    assert!(
        all[lost_at..]
            .iter()
            .any(|m| m.starts_with("Will request 1 executor container(s)")),
        "the allocator asks for a replacement"
    );
    node.cluster.shutdown(WAIT).await;
}
