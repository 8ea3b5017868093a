//! Applications submitted in-process to an embedded four-node, two-rack cluster (cluster
//! mode), with the logs captured: the node, a configuration with short intervals, submit,
//! and readers of what the run logged.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value as Json;
use sparkyard::conf::{NodeSpec, SparkConf};
use sparkyard::deploy::client::{
    follow_application, submit_application, ClientArgs, ClientOutcome, RmConnection,
};
use sparkyard::logs::ctx::Instrumented;
use sparkyard::runtime::Cluster;
use sparkyard::yarn::records::FinalApplicationStatus;

pub struct Node {
    pub cluster: Cluster,
    pub rm: RmConnection,
}

pub fn nodes() -> Vec<NodeSpec> {
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
        node("host4", "/rack2"),
    ]
}

pub async fn node() -> Node {
    let (cluster, rm) = super::embedded_node(&nodes()).await;
    Node { cluster, rm }
}

/// Short intervals so nothing waits on Spark's real-time defaults; the driver knows the
/// racks of the nodes (as YARN's topology would tell it).
pub fn conf(extra: &[(&str, &str)]) -> Arc<SparkConf> {
    let mut c = SparkConf::new();
    c.set("spark.yarn.report.interval", "50ms")
        .set("spark.scheduler.maxRegisteredResourcesWaitingTime", "3s")
        .set("spark.scheduler.minRegisteredResourcesRatio", "1.0")
        .set("spark.yarn.maxAppAttempts", "1");
    for n in nodes() {
        c.set(
            format!("yarn.sparkyard.nodemanager.{}", n.host),
            format!("rack={}", n.rack),
        );
    }
    for (k, v) in extra {
        c.set(*k, *v);
    }
    Arc::new(c)
}

/// Submits `class` in cluster mode and follows it to its end (at most 30 s); answers the
/// outcome and the AM container's output.
pub async fn submit(
    node: &Node,
    class: &str,
    app_args: &[&str],
    conf: Arc<SparkConf>,
) -> (ClientOutcome, String) {
    submit_within(node, class, app_args, conf, Duration::from_secs(30)).await
}

/// [`submit`] with its own bound on the whole run.
pub async fn submit_within(
    node: &Node,
    class: &str,
    app_args: &[&str],
    conf: Arc<SparkConf>,
    bound: Duration,
) -> (ClientOutcome, String) {
    let args = ClientArgs {
        conf,
        main_class: class.into(),
        primary_resource: "tests.jar".into(),
        app_args: app_args.iter().map(|s| s.to_string()).collect(),
        client_mode_driver: None,
    };
    let ctx = node.cluster.log_ctx().clone();
    let (rm, a) = (node.rm.clone(), args.clone());
    let app = Instrumented::new(async move { submit_application(&rm, &a).await }, ctx.clone())
        .await
        .expect("submitted");
    let rm = node.rm.clone();
    let outcome = tokio::time::timeout(
        bound,
        Instrumented::new(async move { follow_application(&rm, &args, app).await }, ctx),
    )
    .await
    .unwrap_or_else(|_| {
        panic!(
            "the application ends within {}",
            humantime::format_duration(bound)
        )
    });
    let output = match outcome.report.as_ref().and_then(|r| r.am_container) {
        Some(container) => node.rm.container_output(container).await.unwrap_or_default(),
        None => String::new(),
    };
    (outcome, output)
}

pub fn succeeded(outcome: &ClientOutcome, output: &str) {
    let report = outcome.report.as_ref().expect("a final report");
    assert_eq!(
        report.final_status,
        FinalApplicationStatus::Succeeded,
        "diagnostics: {} output:\n{output}",
        report.diagnostics
    );
}

/// Every captured record's message.
pub fn msgs(node: &Node) -> Vec<String> {
    records(node)
        .iter()
        .filter_map(|r| r["msg"].as_str().map(str::to_string))
        .collect()
}

/// With `SPARKYARD_DUMP=<text>`, prints the records whose message contains the text (to
/// read what a test's run did).
pub fn dump(node: &Node) {
    if let Ok(filter) = std::env::var("SPARKYARD_DUMP") {
        for r in records(node) {
            let msg = r["msg"].as_str().unwrap_or("");
            if msg.contains(&filter) {
                eprintln!(
                    "{} {} {msg}",
                    r["ts"].as_str().unwrap_or(""),
                    r["actor"].as_str().unwrap_or("-")
                );
            }
        }
    }
}

pub fn records(node: &Node) -> Vec<Json> {
    node.cluster.logs().records()
}

/// The captured records with `event` set to `name`.
pub fn events(node: &Node, name: &str) -> Vec<Json> {
    records(node)
        .into_iter()
        .filter(|r| r["event"].as_str() == Some(name))
        .collect()
}
