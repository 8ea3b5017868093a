//! The all-in-one node: `/node`, a supervisor with the ResourceManager (`/node/rm`) and one
//! NodeManager subtree per node of the configuration (`/node/nm-<host>`, a supervisor whose
//! `node-manager` child starts containers next to itself, its state kept by that supervisor
//! across its restarts). `sparkyard node` runs it as a
//! long-running process; `sparkyard submit` with no master (or `local-cluster[N,C,M]`)
//! runs it embedded in the submitting process.

use std::sync::Arc;

use crate::conf::{NodeSpec, SparkConf};
use crate::logs::LogIds;
use crate::runtime::{ActorPath, ChildSpec, Cluster, Kept, Strategy, Supervision, SupervisorSpec};

use super::client_rm_service::ClientRmService;
use super::node_manager::{NmState, NodeManager};
use super::resource_manager::{ResourceManager, RmConfig, RmState};

/// The node's root segment.
pub const NODE_ROOT: &str = "node";

/// The ResourceManager's path.
pub fn rm_path() -> ActorPath {
    node_path("rm")
}

/// `/node/<segment>` (the segment is a constant or a validated host name).
pub fn node_path(segment: &str) -> ActorPath {
    ActorPath::from_trusted(format!("/{NODE_ROOT}/{segment}"))
}

/// Where a container's subtree runs: `/node/nm-<host>/<container_id>`.
pub fn container_path(host: &str, container: &crate::yarn::records::ContainerId) -> ActorPath {
    ActorPath::from_trusted(format!("/{NODE_ROOT}/nm-{host}/{container}"))
}

/// `local-cluster[N,C,M]`, as Spark means it: N executors of C cores and M MB each, with the
/// driver's resources besides them. On YARN the ApplicationMaster needs a container too (the
/// driver in cluster mode, the ExecutorLauncher in client mode), so each of the N
/// NodeManagers (`host1`…, one rack) offers room for one executor of C vcores whose heap is
/// M MB (its YARN overhead added) and, besides, room for the AM container of `conf`, both
/// rounded up to `yarn.scheduler.minimum-allocation-mb` as the scheduler rounds them:
/// wherever the AM lands, it never takes an executor's place.
pub fn local_cluster_nodes(n: u32, cores: u32, memory_mb: u64, conf: &SparkConf) -> Vec<NodeSpec> {
    let cluster_mode = conf.get(&crate::conf::SUBMIT_DEPLOY_MODE) == Ok("cluster");
    let (am_memory, am_cores) = crate::deploy::resources::am_container(conf, cluster_mode);
    let executor = crate::deploy::resources::executor_memory_of(conf, memory_mb);
    let step = conf
        .get(&crate::conf::RM_SCHEDULER_MINIMUM_ALLOCATION_MB)
        .unwrap_or(1024)
        .max(1);
    let rounded = |mb: u64| mb.div_ceil(step).saturating_mul(step);
    let node_memory = rounded(executor.total_mb()).saturating_add(rounded(am_memory.total_mb()));
    (1..=n)
        .map(|i| NodeSpec {
            host: format!("host{i}"),
            rack: crate::conf::DEFAULT_RACK.to_string(),
            memory_mb: node_memory,
            vcores: cores.saturating_add(am_cores),
        })
        .collect()
}

/// Starts `/node` in `cluster` with the RM and the NodeManagers of `nodes`; `rm_host` is the
/// `node` of the RM's records. With a `listener`, the RM's client port
/// (`/node/client-rm-service`) serves it; it is started last, so it stops first.
pub fn start_node(
    cluster: &Cluster,
    conf: &SparkConf,
    nodes: &[NodeSpec],
    rm_host: &str,
    listener: Option<Arc<std::net::TcpListener>>,
) -> Result<ActorPath, String> {
    let supervision = Supervision::from_conf(conf).map_err(|e| e.to_string())?;
    let rm_config = RmConfig::from_conf(conf);
    let rm_state = Kept::new(RmState::new(cluster.clock().epoch_millis(), &rm_config));
    let rm = rm_path();
    let mut spec = SupervisorSpec::new(Strategy::OneForOne)
        .supervision(&supervision)
        .child(
            ChildSpec::worker("rm", move |_, me| {
                ResourceManager::new(me, rm_config.clone(), rm_state.clone())
            })
            .ids(LogIds::default().node(rm_host)),
        );
    for node in nodes {
        let node = Arc::new(node.clone());
        let (n, rm) = (node.clone(), rm.clone());
        let nm = ChildSpec::supervisor(&format!("nm-{}", node.host), move || {
            let (n, rm) = (n.clone(), rm.clone());
            // Kept across restarts of the NodeManager actor, new with each start of the node:
            // a node that dies loses its containers and what its NodeManager knew.
            let state = Kept::new(NmState::default());
            SupervisorSpec::new(Strategy::OneForOne)
                .supervision(&supervision)
                .child(ChildSpec::worker("node-manager", move |_, me| {
                    NodeManager::new(me, (*n).clone(), rm.clone(), state.clone())
                }))
        })
        .ids(LogIds::default().node(&node.host));
        spec = spec.child(nm);
    }
    if let Some(listener) = listener {
        let rm = rm.clone();
        let limits = super::client_rm_service::client_port_limits(conf)?;
        spec = spec.child(
            ChildSpec::worker("client-rm-service", move |_, me| {
                ClientRmService::new(me, listener.clone(), rm.clone(), limits)
            })
            .ids(LogIds::default().node(rm_host)),
        );
    }
    cluster.start_root(NODE_ROOT, spec).map_err(|e| e.to_string())
}

/// Waits (real time, at most `limit`) until the ResourceManager runs and `nodes`
/// NodeManagers have registered with it.
pub async fn wait_ready(cluster: &Cluster, nodes: usize, limit: std::time::Duration) -> Result<(), String> {
    let rm = cluster.endpoint::<ResourceManager>(&rm_path());
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if let Ok(reports) = rm.ask(super::protocol::GetClusterNodes, limit).await {
            if reports.len() >= nodes {
                return Ok(());
            }
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(format!(
                "the node did not come up within {}",
                humantime::format_duration(limit)
            ));
        }
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_cluster_nodes_hold_an_executor_besides_the_am() {
        // Client mode: an executor of 2048 MB heap is 2432 MB, 3072 rounded; the
        // ExecutorLauncher's 896 MB, 1024 rounded; one vcore each.
        let conf = SparkConf::new();
        let nodes = local_cluster_nodes(2, 1, 2048, &conf);
        assert_eq!(nodes.len(), 2);
        for (i, n) in nodes.iter().enumerate() {
            assert_eq!(n.host, format!("host{}", i + 1));
            assert_eq!((n.memory_mb, n.vcores), (4096, 2));
        }
        // Cluster mode: the AM is the driver (1 GB + 384 MB, 2048 rounded; spark.driver.cores).
        let mut conf = SparkConf::new();
        conf.set("spark.submit.deployMode", "cluster")
            .set("spark.driver.cores", "2")
            .set("yarn.scheduler.minimum-allocation-mb", "512");
        let nodes = local_cluster_nodes(1, 4, 1024, &conf);
        assert_eq!((nodes[0].memory_mb, nodes[0].vcores), (1536 + 1536, 6));
    }
}
