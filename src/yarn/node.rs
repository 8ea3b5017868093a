//! The all-in-one node: `/node`, a supervisor with the ResourceManager (`/node/rm`) and one
//! NodeManager subtree per node of the configuration (`/node/nm-<host>`, a supervisor whose
//! `node-manager` child starts containers next to itself, its state kept by that supervisor
//! across its restarts). `sparkyard node` runs it as a
//! long-running process; `sparkyard submit` with no master (or `local-cluster[N,C,M]`)
//! runs it embedded in the submitting process. Each hands it the launcher registry of the
//! programs its containers run (`cli::roles::launchers`: this binary in its roles).
//!
//! Layer: yarn (above rpc; knows nothing of Spark).

use std::sync::Arc;

use crate::conf::{NodeSpec, SparkConf};
use crate::logs::LogIds;
use crate::runtime::{ActorPath, ChildSpec, Cluster, Kept, Strategy, SupervisorSpec};

use super::client_rm_service::ClientRmService;
use super::launcher::LauncherRegistry;
use super::node_manager::{NmConfig, NodeManager, NodeManagerCore};
use super::resource_manager::{ResourceManager, ResourceManagerCore, RmConfig};
use super::webapp::RmWebApp;
use crate::yarn::protocol::{ApplicationClientProtocol, ResourceManagerAdministrationProtocol};

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

/// Starts `/node` in `cluster` with the RM and the NodeManagers of `nodes`, whose containers
/// run the programs of `launchers`; `rm_host` is the `node` of the RM's records. With a
/// `listener`, the RM's client port (`/node/client-rm-service`) serves it; it is started
/// last, so it stops first.
pub fn start_node(
    cluster: &Cluster,
    conf: &SparkConf,
    nodes: &[NodeSpec],
    launchers: &LauncherRegistry,
    rm_host: &str,
    listener: Option<Arc<std::net::TcpListener>>,
) -> Result<ActorPath, String> {
    let serving = Serving {
        client: listener,
        ..Serving::default()
    };
    start_node_serving(cluster, conf, nodes, launchers, rm_host, serving)
}

/// The ports a node serves besides its actors, each bound by whoever starts it (so a
/// restarted service listens on the same address).
#[derive(Default)]
pub struct Serving {
    /// The RM's client port (`/node/client-rm-service`, `yarn.resourcemanager.address`).
    pub client: Option<Arc<std::net::TcpListener>>,
    /// The RM's web app (`/node/webapp`, `yarn.resourcemanager.webapp.address`).
    pub web: Option<Arc<std::net::TcpListener>>,
    /// The node's log directory, which the web UI reads the applications' records from.
    pub log_dir: Option<std::path::PathBuf>,
}

/// [`start_node`] with the ports of `serving`: the client port and the web app are started
/// last, so they stop first.
pub fn start_node_serving(
    cluster: &Cluster,
    conf: &SparkConf,
    nodes: &[NodeSpec],
    launchers: &LauncherRegistry,
    rm_host: &str,
    serving: Serving,
) -> Result<ActorPath, String> {
    let Serving {
        client: listener,
        web,
        log_dir,
    } = serving;
    let started_ms = cluster.clock().epoch_millis();
    let supervision = crate::conf::supervision(conf).map_err(|e| e.to_string())?;
    let mut rm_config = RmConfig::from_conf(conf);
    rm_config.web_address = match &web {
        Some(listener) => Some(
            listener
                .local_addr()
                .map_err(|e| format!("cannot read the web app's address: {e}"))?
                .to_string(),
        ),
        None => None,
    };
    let nm_config = NmConfig::from_conf(conf);
    let rm_state = Kept::new(ResourceManagerCore::new(started_ms, &rm_config));
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
        let (n, rm, launchers, nm_config) = (node.clone(), rm.clone(), launchers.clone(), nm_config.clone());
        let nm = ChildSpec::supervisor(&format!("nm-{}", node.host), move || {
            node_manager_spec(&n, &nm_config, &rm, &launchers, &supervision, None)
        })
        .ids(LogIds::default().node(&node.host));
        spec = spec.child(nm);
    }
    if let Some(listener) = listener {
        let rm = rm.clone();
        let limits = super::client_rm_service::client_port_limits(conf)?;
        let keyring = super::security::node_keyring(conf, crate::rpc::auth::AcceptApps::NoApps, false)?;
        let acls = Arc::new(super::acls::AclsManager::from_conf(
            conf,
            &super::acls::login_user(),
        )?);
        spec = spec.child(
            ChildSpec::worker("client-rm-service", move |_, me| {
                ClientRmService::new(me, listener.clone(), rm.clone(), limits)
                    .secured(keyring.clone())
                    .acls(acls.clone())
            })
            .ids(LogIds::default().node(rm_host)),
        );
    }
    if let Some(web) = web {
        let rm = rm.clone();
        let acls = Arc::new(super::acls::AclsManager::from_conf(
            conf,
            &super::acls::login_user(),
        )?);
        spec = spec.child(
            ChildSpec::worker("webapp", move |_, me| {
                RmWebApp::new(me, web.clone(), rm.clone(), started_ms)
                    .acls(acls.clone())
                    .log_dir(log_dir.clone())
            })
            .ids(LogIds::default().node(rm_host)),
        );
    }
    cluster.start_root(NODE_ROOT, spec).map_err(|e| e.to_string())
}

/// A NodeManager's subtree (`nm-<host>`): a supervisor whose `node-manager` child starts
/// containers next to itself. Its state is new with each start of the subtree (a node that
/// dies loses its containers and what its NodeManager knew) and kept across restarts of
/// the NodeManager actor.
pub fn node_manager_spec(
    node: &NodeSpec,
    nm_config: &NmConfig,
    rm: &ActorPath,
    launchers: &LauncherRegistry,
    supervision: &crate::runtime::Supervision,
    on_shutdown: Option<super::node_manager::ShutdownHook>,
) -> SupervisorSpec {
    let (n, rm, launchers, nm_config) = (
        Arc::new(node.clone()),
        rm.clone(),
        launchers.clone(),
        nm_config.clone(),
    );
    let state = Kept::new(NodeManagerCore::default());
    SupervisorSpec::new(Strategy::OneForOne)
        .supervision(supervision)
        .child(ChildSpec::worker("node-manager", move |_, me| {
            let nm = NodeManager::new(
                me,
                (*n).clone(),
                nm_config.clone(),
                rm.clone(),
                state.clone(),
                launchers.clone(),
            );
            match &on_shutdown {
                Some(hook) => nm.on_shutdown(hook.clone()),
                None => nm,
            }
        }))
}

/// The path of a NodeManager's subtree: `/node/nm-<host>`.
pub fn node_manager_root(host: &str) -> ActorPath {
    node_path(&format!("nm-{host}"))
}

/// Waits (real time, at most `limit`) until the ResourceManager runs and `nodes`
/// NodeManagers have registered with it.
pub async fn wait_ready(cluster: &Cluster, nodes: usize, limit: std::time::Duration) -> Result<(), String> {
    let rm = cluster.endpoint::<ApplicationClientProtocol>(&rm_path());
    let deadline = tokio::time::Instant::now() + limit;
    let mut asked = 0u32;
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
        asked += 1;
        match ready_pause(asked) {
            None => tokio::task::yield_now().await,
            Some(pause) => tokio::time::sleep(pause).await,
        }
    }
}

/// How many times [`wait_ready`] asks again at once (after letting the other actors of its
/// thread run) before it asks once a millisecond.
const READY_ASKS_AT_ONCE: u32 = 64;

/// What [`wait_ready`] waits before its ask number `asked + 1`: nothing but a turn of the
/// other actors (`None`) for the first [`READY_ASKS_AT_ONCE`], then a millisecond. The
/// NodeManagers' registrations are usually queued behind the first ask, on the same thread:
/// a timer tick there cost every submit to the embedded cluster a millisecond or two.
fn ready_pause(asked: u32) -> Option<std::time::Duration> {
    (asked > READY_ASKS_AT_ONCE).then_some(std::time::Duration::from_millis(1))
}

/// The node admin on an embedded cluster (what `sparkyard rmadmin` does to a running node):
/// graceful decommission and recommission of NodeManagers through the ResourceManager.
/// Answers every node with its state, or the RM's one-line refusal.
pub async fn refresh_nodes(
    cluster: &Cluster,
    request: super::protocol::RefreshNodes,
    limit: std::time::Duration,
) -> Result<Vec<crate::yarn::records::NodeReport>, String> {
    let rm = cluster.endpoint::<ResourceManagerAdministrationProtocol>(&rm_path());
    match rm.ask(request, limit).await {
        Ok(answer) => answer.map_err(|e| e.to_string()),
        Err(e) => Err(format!("the ResourceManager did not answer: {e}")),
    }
}

/// Every node of an embedded cluster with its state, decommissioned ones included.
pub async fn list_nodes(
    cluster: &Cluster,
    limit: std::time::Duration,
) -> Result<Vec<crate::yarn::records::NodeReport>, String> {
    let rm = cluster.endpoint::<ResourceManagerAdministrationProtocol>(&rm_path());
    rm.ask(super::protocol::ListNodes, limit)
        .await
        .map_err(|e| format!("the ResourceManager did not answer: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_cluster_is_asked_again_at_once_before_any_timer() {
        // The first asks follow each other with only a turn of the other actors between
        // them (the NodeManagers register meanwhile), not a timer tick each.
        for asked in 1..=READY_ASKS_AT_ONCE {
            assert_eq!(ready_pause(asked), None, "ask {asked}");
        }
        // A node slower than that (a NodeManager retrying its registration) is asked once a
        // millisecond, not in a busy loop.
        assert_eq!(
            ready_pause(READY_ASKS_AT_ONCE + 1),
            Some(std::time::Duration::from_millis(1))
        );
        assert_eq!(ready_pause(u32::MAX), Some(std::time::Duration::from_millis(1)));
    }
}
