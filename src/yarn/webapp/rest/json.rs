//! Hadoop's JSON shapes of the RM's web services (the JAXB classes AppInfo, AppsInfo,
//! AppAttemptInfo, NodeInfo, ClusterInfo, ClusterMetricsInfo, CapacitySchedulerInfo), built
//! from sparkyard's records. Jersey's JSON writes an empty list as `null`: `{"apps":null}`.
//!
//! Layer: yarn (above rpc; knows nothing of Spark).

use serde_json::{json, Value};

use crate::yarn::client_service::UNAVAILABLE;
use crate::yarn::protocol::{ApplicationAttemptReport, ApplicationListing, ClusterMetrics, QueueInfo};
use crate::yarn::records::{NodeReport, Resource, YarnApplicationState};

/// `{"<outer>":{"<inner>":[items]}}`, or `{"<outer>":null}` without items.
pub fn list(outer: &str, inner: &str, items: Vec<Value>) -> Value {
    let mut map = serde_json::Map::new();
    if items.is_empty() {
        map.insert(outer.to_string(), Value::Null);
    } else {
        map.insert(outer.to_string(), json!({ inner: items }));
    }
    Value::Object(map)
}

/// ResourceInfo: `{"memory":..,"vCores":..}`.
pub fn resource(r: &Resource) -> Value {
    json!({"memory": r.memory_mb, "vCores": r.vcores})
}

/// AppInfo.trackingUI: where the tracking URL leads.
fn tracking_ui(l: &ApplicationListing) -> &'static str {
    match &l.report.tracking_url {
        None => "UNASSIGNED",
        Some(u) if u == UNAVAILABLE => "UNASSIGNED",
        Some(_) if l.report.state.is_final() => "History",
        Some(_) => "ApplicationMaster",
    }
}

/// One application (AppInfo), `now` the web app's clock (epoch ms) for its elapsed time.
pub fn app_info(l: &ApplicationListing, now: u64) -> Value {
    let r = &l.report;
    let end = if r.finish_time > 0 { r.finish_time } else { now };
    let host = r.host.clone().unwrap_or_else(|| UNAVAILABLE.to_string());
    let rpc = match (&r.host, r.rpc_port) {
        (Some(h), Some(p)) if h != UNAVAILABLE && p >= 0 => format!("{h}:{p}"),
        _ => UNAVAILABLE.to_string(),
    };
    json!({
        "id": r.app_id.to_string(),
        "user": r.user,
        "name": r.name,
        "queue": r.queue,
        "state": r.state.to_string(),
        "finalStatus": r.final_status.to_string(),
        "progress": (l.progress.clamp(0.0, 1.0) * 100.0) as f64,
        "trackingUI": tracking_ui(l),
        "trackingUrl": r.tracking_url.clone().unwrap_or_else(|| UNAVAILABLE.to_string()),
        "diagnostics": r.diagnostics,
        "clusterId": r.app_id.cluster_timestamp,
        "applicationType": r.app_type,
        "applicationTags": "",
        "priority": 0,
        "startedTime": r.start_time,
        "launchTime": r.start_time,
        "finishedTime": r.finish_time,
        "elapsedTime": end.saturating_sub(r.start_time),
        "amHostHttpAddress": host,
        "amRPCAddress": rpc,
        "masterNodeId": r.host.clone().unwrap_or_default(),
        "amContainerId": r.am_container.map(|c| c.to_string()).unwrap_or_default(),
        "currentAttempt": r.current_attempt.map(|a| a.to_string()).unwrap_or_default(),
        "numAttempts": l.attempts.len(),
        "logAggregationStatus": "DISABLED",
        "unmanagedApplication": false,
        "amNodeLabelExpression": "",
    })
}

/// `{"apps":{"app":[...]}}` (AppsInfo).
pub fn apps_info(listed: &[ApplicationListing], now: u64) -> Value {
    list("apps", "app", listed.iter().map(|l| app_info(l, now)).collect())
}

/// One attempt (AppAttemptInfo).
pub fn app_attempt_info(a: &ApplicationAttemptReport) -> Value {
    let host = a.host.clone().unwrap_or_default();
    json!({
        "id": a.attempt_id.attempt,
        "appAttemptId": a.attempt_id.to_string(),
        "appAttemptState": a.state,
        "containerId": a.am_container.map(|c| c.to_string()).unwrap_or_default(),
        "nodeId": host,
        "nodeHttpAddress": "",
        "logsLink": "",
        "blacklistedNodes": "",
        "nodesBlacklistedBySystem": "",
        "diagnosticsInfo": a.diagnostics,
        "startTime": 0,
        "finishedTime": 0,
    })
}

/// `{"appAttempts":{"appAttempt":[...]}}` (AppAttemptsInfo).
pub fn app_attempts_info(attempts: &[ApplicationAttemptReport]) -> Value {
    list(
        "appAttempts",
        "appAttempt",
        attempts.iter().map(app_attempt_info).collect(),
    )
}

/// One node (NodeInfo); sparkyard's node id is its host (as `sparkyard node -list` shows).
pub fn node_info(n: &NodeReport) -> Value {
    let avail = n.capability.minus(&n.used);
    json!({
        "rack": n.rack,
        "state": n.state.to_string(),
        "id": n.host,
        "nodeHostName": n.host,
        "nodeHTTPAddress": "",
        "lastHealthUpdate": 0,
        "version": env!("CARGO_PKG_VERSION"),
        "healthReport": "",
        "numContainers": n.num_containers,
        "usedMemoryMB": n.used.memory_mb,
        "availMemoryMB": avail.memory_mb,
        "usedVirtualCores": n.used.vcores,
        "availableVirtualCores": avail.vcores,
        "usedResource": resource(&n.used),
        "availableResource": resource(&avail),
        "totalResource": resource(&n.capability),
    })
}

/// `{"nodes":{"node":[...]}}` (NodesInfo).
pub fn nodes_info(nodes: &[NodeReport]) -> Value {
    list("nodes", "node", nodes.iter().map(node_info).collect())
}

/// `{"clusterInfo":{...}}` (ClusterInfo): the RM started at `started_ms`.
pub fn cluster_info(started_ms: u64) -> Value {
    let version = env!("CARGO_PKG_VERSION");
    json!({
        "clusterInfo": {
            "id": started_ms,
            "startedOn": started_ms,
            "state": "STARTED",
            "haState": "ACTIVE",
            "rmStateStoreName": "sparkyard (in memory, kept across RM restarts)",
            "resourceManagerVersion": version,
            "resourceManagerBuildVersion": version,
            "resourceManagerVersionBuiltOn": "",
            "hadoopVersion": version,
            "hadoopBuildVersion": version,
            "hadoopVersionBuiltOn": "",
            "haZooKeeperConnectionState": "ResourceManager HA is not enabled.",
        }
    })
}

/// `{"clusterMetrics":{...}}` (ClusterMetricsInfo).
pub fn cluster_metrics(m: &ClusterMetrics) -> Value {
    let available = m.total.minus(&m.allocated);
    json!({
        "clusterMetrics": {
            "appsSubmitted": m.apps_submitted,
            "appsCompleted": m.apps_completed,
            "appsPending": m.apps_pending,
            "appsRunning": m.apps_running,
            "appsFailed": m.apps_failed,
            "appsKilled": m.apps_killed,
            "reservedMB": 0,
            "availableMB": available.memory_mb,
            "allocatedMB": m.allocated.memory_mb,
            "reservedVirtualCores": 0,
            "availableVirtualCores": available.vcores,
            "allocatedVirtualCores": m.allocated.vcores,
            "containersAllocated": m.containers_allocated,
            "containersReserved": 0,
            "containersPending": 0,
            "totalMB": m.total.memory_mb,
            "totalVirtualCores": m.total.vcores,
            "totalNodes": m.active_nodes + m.decommissioning_nodes,
            "lostNodes": m.lost_nodes,
            "unhealthyNodes": 0,
            "decommissioningNodes": m.decommissioning_nodes,
            "decommissionedNodes": m.decommissioned_nodes,
            "rebootedNodes": 0,
            "activeNodes": m.active_nodes,
            "shutdownNodes": 0,
        }
    })
}

/// A percentage of `part` in `whole` (0 when the whole is 0), as the scheduler reports it.
fn percent(part: u64, whole: f64) -> f64 {
    if whole > 0.0 {
        part as f64 * 100.0 / whole
    } else {
        0.0
    }
}

/// `{"scheduler":{"schedulerInfo":{...}}}` (CapacitySchedulerInfo): `root` and its leaf
/// queues, sharing the cluster equally (sparkyard's queues carry no configured capacity),
/// over a cluster of `total`.
pub fn scheduler_info(queues: &[QueueInfo], total: &Resource) -> Value {
    let share = if queues.is_empty() {
        0.0
    } else {
        100.0 / queues.len() as f64
    };
    let cluster_mb = total.memory_mb as f64;
    let used_mb: u64 = queues.iter().map(|q| q.used.memory_mb).sum();
    let leaves: Vec<Value> = queues
        .iter()
        .map(|q| {
            let queue_mb = cluster_mb * share / 100.0;
            json!({
                "type": "capacitySchedulerLeafQueueInfo",
                "queueName": q.name,
                "queuePath": format!("root.{}", q.name),
                "state": "RUNNING",
                "capacity": share,
                "usedCapacity": percent(q.used.memory_mb, queue_mb),
                "maxCapacity": 100.0,
                "absoluteCapacity": share,
                "absoluteMaxCapacity": 100.0,
                "absoluteUsedCapacity": percent(q.used.memory_mb, cluster_mb),
                "numApplications": q.num_applications,
                "numActiveApplications": q.num_active_applications,
                "numPendingApplications": q.num_pending_applications,
                "numContainers": q.num_containers,
                "resourcesUsed": resource(&q.used),
                "AMResourceLimit": resource(&q.am_limit),
                "usedAMResource": resource(&q.am_used),
                "maxAMResourcePercent": q.max_am_resource_percent,
                "maxApplications": 10000,
                "maxApplicationsPerUser": 10000,
                "userLimit": 100,
                "userLimitFactor": 1.0,
                "users": null,
                "preemptionDisabled": true,
                "nodeLabels": ["*"],
            })
        })
        .collect();
    json!({
        "scheduler": {
            "schedulerInfo": {
                "type": "capacityScheduler",
                "capacity": 100.0,
                "usedCapacity": percent(used_mb, cluster_mb),
                "maxCapacity": 100.0,
                "queueName": "root",
                "queues": list("queues", "queue", leaves)["queues"].clone(),
            }
        }
    })
}

/// AppState: `{"state":"RUNNING"}`.
pub fn app_state(state: YarnApplicationState) -> Value {
    json!({"state": state.to_string()})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yarn::records::*;

    fn listing(state: YarnApplicationState) -> ApplicationListing {
        let app_id = ApplicationId {
            cluster_timestamp: 1700000000000,
            id: 3,
        };
        ApplicationListing {
            report: ApplicationReport {
                app_id,
                current_attempt: Some(ApplicationAttemptId {
                    app: app_id,
                    attempt: 1,
                }),
                name: "pi".into(),
                queue: "default".into(),
                user: "alice".into(),
                app_type: "SPARK".into(),
                host: Some("host1".into()),
                rpc_port: Some(4040),
                tracking_url: Some("http://127.0.0.1:8088/cluster/app/application_1700000000000_0003".into()),
                state,
                final_status: FinalApplicationStatus::Undefined,
                diagnostics: String::new(),
                start_time: 1000,
                finish_time: 0,
                am_container: None,
                progress: 0.5,
            },
            progress: 0.5,
            attempts: vec![],
        }
    }

    #[test]
    fn empty_lists_are_null_as_jersey_writes_them() {
        assert_eq!(apps_info(&[], 0), json!({"apps": null}));
        assert_eq!(nodes_info(&[]), json!({"nodes": null}));
        assert_eq!(app_attempts_info(&[]), json!({"appAttempts": null}));
    }

    #[test]
    fn an_app_has_app_infos_fields() {
        let v = apps_info(&[listing(YarnApplicationState::Running)], 4000);
        let app = &v["apps"]["app"][0];
        assert_eq!(app["id"], "application_1700000000000_0003");
        assert_eq!(app["state"], "RUNNING");
        assert_eq!(app["finalStatus"], "UNDEFINED");
        assert_eq!(app["progress"], 50.0);
        assert_eq!(app["trackingUI"], "ApplicationMaster");
        assert_eq!(
            app["trackingUrl"],
            "http://127.0.0.1:8088/cluster/app/application_1700000000000_0003"
        );
        assert_eq!(app["applicationType"], "SPARK");
        assert_eq!(app["elapsedTime"], 3000);
        assert_eq!(app["amRPCAddress"], "host1:4040");
        assert_eq!(app["clusterId"], 1700000000000u64);
        let done = app_info(&listing(YarnApplicationState::Finished), 0);
        assert_eq!(done["trackingUI"], "History");
    }

    #[test]
    fn metrics_and_scheduler_have_hadoops_names() {
        let m = ClusterMetrics {
            apps_submitted: 2,
            apps_running: 1,
            apps_completed: 1,
            total: Resource::new(8192, 8),
            allocated: Resource::new(2048, 2),
            containers_allocated: 2,
            active_nodes: 2,
            ..ClusterMetrics::default()
        };
        let v = cluster_metrics(&m);
        assert_eq!(v["clusterMetrics"]["availableMB"], 6144);
        assert_eq!(v["clusterMetrics"]["totalNodes"], 2);
        assert_eq!(v["clusterMetrics"]["appsCompleted"], 1);
        let q = QueueInfo {
            name: "default".into(),
            used: Resource::new(2048, 2),
            num_containers: 2,
            ..QueueInfo::default()
        };
        let s = scheduler_info(&[q], &Resource::new(8192, 8));
        let info = &s["scheduler"]["schedulerInfo"];
        assert_eq!(info["type"], "capacityScheduler");
        assert_eq!(info["queueName"], "root");
        assert_eq!(info["usedCapacity"], 25.0);
        let leaf = &info["queues"]["queue"][0];
        assert_eq!(leaf["type"], "capacitySchedulerLeafQueueInfo");
        assert_eq!(leaf["queueName"], "default");
        assert_eq!(leaf["capacity"], 100.0);
        assert_eq!(leaf["resourcesUsed"], json!({"memory": 2048, "vCores": 2}));
    }
}
