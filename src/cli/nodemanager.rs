//! `sparkyard nodemanager`: one NodeManager as its own process, as `yarn nodemanager` runs
//! one on each host of a cluster.
//!
//! Layer: cli (the top: parses commands and assembles processes).
//!
//! It serves its actors (`/node/nm-<host>`) on `--bind` (port 0), routes `/node` to the
//! ResourceManager's actor endpoint (`--rm`, what `sparkyard resourcemanager` or `sparkyard
//! node` prints after "NodeManagers join at"), waits for the ResourceManager to answer (YARN's
//! NodeManager retries for `yarn.resourcemanager.connect.max-wait.ms`, pausing up to
//! `yarn.resourcemanager.connect.retry-interval.ms`), then starts its NodeManager, which
//! registers and heartbeats as in the all-in-one node; its containers are processes. On one
//! machine, NodeManagers bound to 127.0.0.2, 127.0.0.3, … stand for hosts.
//!
//! Exit statuses: 0 after Ctrl-C or SIGTERM (its containers stopped first); 1 bad input, or
//! a ResourceManager it cannot reach (one line naming the address) or that refuses it; 70 a
//! NodeManager subtree that gave up (as `sparkyard node`).

use std::io::Write;
use std::time::Duration;

use super::node::{actor_limits, container_mode, gave_up_message, ContainerMode, Signals, EXIT_NODE_GAVE_UP};
use super::NodeManagerArgs;
use crate::conf::{self, NodeSpec, SparkConf};
use crate::logs::LogIds;
use crate::runtime::{ActorPath, Cluster, ExitReason};
use crate::yarn::node::{node_manager_root, node_manager_spec, rm_path, NODE_ROOT};
use crate::yarn::protocol::{ApplicationClientProtocol, GetClusterNodes};

/// How long one try to reach the ResourceManager waits for its answer.
const ASK: Duration = Duration::from_secs(5);

/// How long the NodeManager waits to see itself registered before it says it is ready.
const REGISTER_LIMIT: Duration = Duration::from_secs(30);

/// This NodeManager's node: the flags, else the configuration's defaults.
fn node_spec(args: &NodeManagerArgs, conf: &SparkConf) -> Result<NodeSpec, String> {
    let host = args.hostname.trim();
    if host.is_empty() || ActorPath::root(&format!("nm-{host}")).is_err() {
        return Err(format!(
            "--hostname '{}' is not a host name (letters, digits, '.', '-' and '_')",
            args.hostname
        ));
    }
    let rack = args.rack.clone().unwrap_or_else(|| "/default-rack".to_string());
    if !rack.starts_with('/') {
        return Err(format!("--rack '{rack}' must start with '/'"));
    }
    let memory_mb = match args.memory_mb {
        Some(0) => return Err("--memory-mb must be greater than 0".into()),
        Some(m) => m,
        None => conf.get(&conf::NM_PMEM_MB).map_err(|e| e.to_string())?,
    };
    let vcores = match args.vcores {
        Some(0) => return Err("--vcores must be greater than 0".into()),
        Some(v) => v,
        None => conf.get(&conf::NM_VCORES).map_err(|e| e.to_string())?,
    };
    Ok(NodeSpec {
        host: host.to_string(),
        rack,
        memory_mb,
        vcores,
    })
}

/// Runs the NodeManager; answers the exit status.
pub fn run(args: &NodeManagerArgs, conf: SparkConf) -> Result<i32, String> {
    let spec = node_spec(args, &conf)?;
    let rm_addr = args.rm.trim().to_string();
    if rm_addr
        .rsplit_once(':')
        .is_none_or(|(h, p)| h.is_empty() || p.parse::<u16>().is_err())
    {
        return Err(format!("--rm '{}' is not HOST:PORT", args.rm));
    }
    if args.bind.parse::<std::net::IpAddr>().is_err() {
        return Err(format!("--bind '{}' is not an IP address", args.bind));
    }
    let max_wait = conf.get(&conf::RM_CONNECT_MAX_WAIT).map_err(|e| e.to_string())?;
    let retry = conf
        .get(&conf::RM_CONNECT_RETRY_INTERVAL)
        .map_err(|e| e.to_string())?;
    let mode = container_mode(&conf, ContainerMode::Process)?;
    let supervision = conf::supervision(&conf).map_err(|e| e.to_string())?;
    let log_dir = crate::logs::reader::resolve_log_dir(args.log_dir.as_deref());
    let bind = args.bind.clone();
    let system = actix::System::new();
    system.block_on(async move {
        let cluster = Cluster::builder()
            .id(&super::process_cluster_id(&format!("nodemanager-{}", spec.host)))
            .log_dir(&log_dir)
            .node(&spec.host)
            .build()?;
        let signals = Signals::install().map_err(|e| format!("cannot install signal handlers: {e}"))?;
        let root = node_manager_root(&spec.host);
        let keyring = crate::yarn::security::node_keyring(&conf, crate::rpc::auth::AcceptApps::Any, false)?;
        let security = crate::yarn::security::daemon_security(keyring.clone(), false);
        let (actors, _serving) = crate::rpc::remote::serve_cluster_secured(
            &cluster,
            root.clone(),
            &format!("{bind}:0"),
            actor_limits(),
            security,
        )
        .await?;
        crate::yarn::client_service::offer_admin(&cluster, None);
        let node_root = ActorPath::root(NODE_ROOT).map_err(|e| e.to_string())?;
        cluster.route_to(node_root, &rm_addr)?;
        reach_rm(&cluster, &rm_addr, max_wait, retry).await?;
        let (refused_tx, mut refused_rx) = tokio::sync::mpsc::unbounded_channel::<String>();
        let launchers = match mode {
            ContainerMode::InProcess => super::roles::launchers(),
            ContainerMode::Process => {
                {
                    let mut containers = super::process_containers::ProcessContainers::from_conf(&conf, &actors, &bind, Some(log_dir.clone()))?;
                    containers.keyring = keyring.clone();
                    crate::yarn::client_service::offer_admin(&cluster, Some(containers.processes.clone()));
                    containers.launchers()
                }
            }
        };
        let root = cluster.start_root_at(
            &root,
            LogIds::default().node(&spec.host),
            node_manager_spec(
                &spec,
                &crate::yarn::node_manager::NmConfig::from_conf(&conf),
                &rm_path(),
                &launchers,
                &supervision,
                Some(refused_hook(refused_tx)),
            ),
        );
        let ended = cluster.root_ended(&root);
        tokio::pin!(ended);
        tokio::select! {
            registered = registered(&cluster, &spec.host) => registered?,
            reason = &mut ended => return Ok(gave_up(&cluster, reason).await),
            line = refused_rx.recv() => return Ok(refused(&cluster, line).await),
        }
        {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(
                out,
                "sparkyard nodemanager: NodeManager {} ({}, {} MB, {} vcores) registered with the ResourceManager at {rm_addr}; listening on {actors}; logs in {}",
                spec.host,
                spec.rack,
                spec.memory_mb,
                spec.vcores,
                log_dir.display()
            );
            let _ = out.flush();
        }
        tokio::select! {
            _ = signals.wait() => {}
            reason = &mut ended => return Ok(gave_up(&cluster, reason).await),
            line = refused_rx.recv() => return Ok(refused(&cluster, line).await),
        }
        tracing::info!("Stopping the NodeManager: containers first");
        cluster.shutdown(Duration::from_secs(30)).await;
        Ok(0)
    })
}

/// The NodeManager's shutdown hook: the ResourceManager refused it (another version or
/// cluster) or shut it down (decommissioned); the process exits with that line.
fn refused_hook(tx: tokio::sync::mpsc::UnboundedSender<String>) -> crate::yarn::node_manager::ShutdownHook {
    std::sync::Arc::new(move |line: &str| {
        let _ = tx.send(line.to_string());
    })
}

/// Stops the process after the ResourceManager refused or shut down its NodeManager.
async fn refused(cluster: &Cluster, line: Option<String>) -> i32 {
    let line = line.unwrap_or_else(|| "the ResourceManager shut this NodeManager down".into());
    cluster.shutdown(Duration::from_secs(30)).await;
    super::fail("sparkyard nodemanager", &line);
    super::EXIT_BAD_INPUT
}

/// Asks the ResourceManager until it answers, pausing a tenth of `retry` and doubling up to
/// `retry`, for at most `max_wait`; the error names the address and the last reason.
async fn reach_rm(cluster: &Cluster, addr: &str, max_wait: Duration, retry: Duration) -> Result<(), String> {
    let rm = cluster.endpoint::<ApplicationClientProtocol>(&rm_path());
    let deadline = tokio::time::Instant::now() + max_wait;
    let mut pause = (retry / 10).max(Duration::from_millis(10));
    let mut tries = 0u32;
    loop {
        tries += 1;
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let last = match rm
            .ask(GetClusterNodes, ASK.min(left.max(Duration::from_millis(1))))
            .await
        {
            Ok(_) => return Ok(()),
            Err(e) => e.to_string(),
        };
        if tries == 1 {
            tracing::warn!(
                rm = addr,
                "Cannot reach the ResourceManager at {addr} ({last}); retrying"
            );
        }
        // A refused secret is not a ResourceManager still starting: retrying cannot help.
        let refused = last.contains("authentication") || last.contains("does not authenticate");
        if refused || tokio::time::Instant::now() + pause >= deadline {
            return Err(format!(
                "cannot reach the ResourceManager at {addr} after {tries} tries in {} (yarn.resourcemanager.connect.max-wait.ms): {last}",
                humantime::format_duration(max_wait)
            ));
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(retry);
    }
}

/// Waits until the ResourceManager lists `host`.
async fn registered(cluster: &Cluster, host: &str) -> Result<(), String> {
    let rm = cluster.endpoint::<ApplicationClientProtocol>(&rm_path());
    let deadline = tokio::time::Instant::now() + REGISTER_LIMIT;
    loop {
        if let Ok(nodes) = rm.ask(GetClusterNodes, ASK).await {
            if nodes.iter().any(|n| n.host == host) {
                return Ok(());
            }
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(format!(
                "the ResourceManager did not list this node ({host}) within {}",
                humantime::format_duration(REGISTER_LIMIT)
            ));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The NodeManager's subtree ended on its own (it gave up, or the ResourceManager refused
/// it): logs it, prints the one line and answers the exit status.
async fn gave_up(cluster: &Cluster, reason: Option<ExitReason>) -> i32 {
    let reason = reason.unwrap_or(ExitReason::Aborted {
        message: "it is gone".to_string(),
    });
    let code = match reason {
        ExitReason::Escalated { .. } => EXIT_NODE_GAVE_UP,
        _ => super::EXIT_BAD_INPUT,
    };
    tracing::error!(event = "node_gave_up", reason = %reason, exit_code = code, "Exiting: the NodeManager ended ({reason})");
    cluster.shutdown(Duration::from_secs(5)).await;
    super::fail("sparkyard nodemanager", &gave_up_message(&reason));
    code
}
