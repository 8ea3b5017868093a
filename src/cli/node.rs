//! `sparkyard node`: the all-in-one node as a long-running process.
//!
//! Layer: cli (the top: parses commands and assembles processes).
//!
//! It binds `yarn.resourcemanager.address` (loopback by default, since the port has no
//! authentication yet; port 0 picks a free one), starts the ResourceManager, the
//! NodeManagers of the configuration and the client port, prints one readiness line with
//! the bound address on stdout, and runs until Ctrl-C (or SIGTERM), when it stops cleanly:
//! the client port first, then each NodeManager's containers and the NodeManager, then the
//! ResourceManager.
//!
//! If `/node` itself ends (its restart intensity was exceeded: the ResourceManager or a
//! NodeManager subtree failed more often than `spark.sparkyard.supervisor.maxRestarts`
//! within the period; or it was killed with `sparkyard chaos kill /node`), nothing is left
//! to serve: the process prints one line saying why and exits with
//! [`EXIT_NODE_GAVE_UP`], so a service manager restarts it.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::conf::{self, SparkConf};
use crate::runtime::{Cluster, ExitReason};
use crate::yarn::node::{start_node_serving, wait_ready, Serving};

/// The exit status of a node whose supervision tree gave up (sysexits' EX_SOFTWARE: an
/// internal failure, not bad input; a service manager should restart it).
pub const EXIT_NODE_GAVE_UP: i32 = 70;

/// The one line for a node whose root ended.
pub fn gave_up_message(reason: &ExitReason) -> String {
    let why = match reason {
        ExitReason::Escalated { message } => format!("gave up: {message}"),
        other => format!("ended: {other}"),
    };
    format!("the node's supervision tree {why}; nothing is left to serve, exiting (status {EXIT_NODE_GAVE_UP}) so a service manager can restart it")
}

/// Which daemon a node process runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Daemon {
    /// `sparkyard node`: the ResourceManager and the NodeManagers of the configuration.
    Node,
    /// `sparkyard resourcemanager`: the ResourceManager alone; NodeManagers join it.
    ResourceManager,
}

/// How a node runs its containers (`spark.sparkyard.containers`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ContainerMode {
    Process,
    InProcess,
}

/// The container mode of `conf`, `default` when unset; a bad value names the key.
pub fn container_mode(conf: &SparkConf, default: ContainerMode) -> Result<ContainerMode, String> {
    match conf.get(&conf::CONTAINERS).map_err(|e| e.to_string())?.as_deref() {
        None => Ok(default),
        Some("process") => Ok(ContainerMode::Process),
        Some("in-process") => Ok(ContainerMode::InProcess),
        Some(other) => Err(format!(
            "{}: '{other}' is not a container mode (expected process or in-process)",
            conf::CONTAINERS.name()
        )),
    }
}

/// Runs the node; answers the exit status.
pub fn run(conf: SparkConf, log_dir: Option<&Path>) -> Result<i32, String> {
    run_daemon(Daemon::Node, conf, log_dir)
}

/// Runs `daemon`; answers the exit status.
pub fn run_daemon(daemon: Daemon, conf: SparkConf, log_dir: Option<&Path>) -> Result<i32, String> {
    let nodes = match daemon {
        Daemon::Node => conf::node_managers(&conf).map_err(|e| e.to_string())?,
        Daemon::ResourceManager => Vec::new(),
    };
    let mode = container_mode(&conf, ContainerMode::Process)?;
    let addr = conf.get(&conf::RM_ADDRESS).map_err(|e| e.to_string())?;
    let tracker = conf
        .get(&conf::RM_RESOURCE_TRACKER_ADDRESS)
        .map_err(|e| e.to_string())?;
    let tracker = format!("{}:{}", tracker.host, tracker.port);
    let wanted = format!("{}:{}", addr.host, addr.port);
    let listener =
        std::net::TcpListener::bind(&wanted).map_err(|e| format!("cannot listen on {wanted}: {e}"))?;
    let bound = listener.local_addr().map(|a| a.to_string()).unwrap_or(wanted);
    let web = conf.get(&conf::RM_WEBAPP_ADDRESS).map_err(|e| e.to_string())?;
    let web_wanted = format!("{}:{}", web.host, web.port);
    let web = std::net::TcpListener::bind(&web_wanted).map_err(|e| {
        format!(
            "cannot listen on {web_wanted} ({}): {e}",
            conf::RM_WEBAPP_ADDRESS.name()
        )
    })?;
    let web_bound = web.local_addr().map(|a| a.to_string()).unwrap_or(web_wanted);
    let log_dir = crate::logs::reader::resolve_log_dir(log_dir);
    let hostname = super::local_hostname();
    let system = actix::System::new();
    system.block_on(async move {
        let cluster = Cluster::builder()
            .id(&super::process_cluster_id(match daemon {
                Daemon::Node => "node",
                Daemon::ResourceManager => "resourcemanager",
            }))
            .log_dir(&log_dir)
            .node(&hostname)
            .build()?;
        // Handle Ctrl-C and SIGTERM from before the readiness line on.
        let signals = Signals::install().map_err(|e| format!("cannot install signal handlers: {e}"))?;
        let node_root = crate::runtime::ActorPath::root(crate::yarn::node::NODE_ROOT).map_err(|e| e.to_string())?;
        let keyring = crate::yarn::security::node_keyring(&conf, crate::rpc::auth::AcceptApps::Any, false)?;
        let security = crate::yarn::security::daemon_security(keyring.clone(), false);
        let (actors, _serving) =
            crate::rpc::remote::serve_cluster_secured(&cluster, node_root, &tracker, actor_limits(), security).await?;
        crate::yarn::client_service::offer_admin(&cluster, None);
        let launchers = match mode {
            ContainerMode::InProcess => super::roles::launchers(),
            ContainerMode::Process => {
                let bind = actors.rsplit_once(':').map(|(h, _)| h.to_string()).unwrap_or_default();
                {
                    let mut containers = super::process_containers::ProcessContainers::from_conf(&conf, &actors, &bind, Some(log_dir.clone()))?;
                    containers.keyring = keyring.clone();
                    crate::yarn::client_service::offer_admin(&cluster, Some(containers.processes.clone()));
                    containers.launchers()
                }
            }
        };
        let serving = Serving {
            client: Some(Arc::new(listener)),
            web: Some(Arc::new(web)),
            log_dir: Some(log_dir.clone()),
        };
        let root = start_node_serving(&cluster, &conf, &nodes, &launchers, &hostname, serving)?;
        // Polled from the start: the node can give up while it comes up too.
        let ended = cluster.root_ended(&root);
        tokio::pin!(ended);
        let ready = tokio::select! {
            ready = wait_ready(&cluster, nodes.len(), Duration::from_secs(10)) => ready,
            reason = &mut ended => return Ok(gave_up(&cluster, reason).await),
        };
        ready?;
        let hosts: Vec<&str> = nodes.iter().map(|n| n.host.as_str()).collect();
        {
            let mut out = std::io::stdout().lock();
            let containers = match mode {
                ContainerMode::Process => "processes",
                ContainerMode::InProcess => "in-process",
            };
            let _ = writeln!(
                out,
                "sparkyard {}: ResourceManager listening on {bound} with {} NodeManagers ({}); containers {containers}; NodeManagers join at {actors}; web UI at http://{web_bound}/; logs in {}",
                match daemon {
                    Daemon::Node => "node",
                    Daemon::ResourceManager => "resourcemanager",
                },
                nodes.len(),
                hosts.join(", "),
                log_dir.display()
            );
            let _ = out.flush();
        }
        tokio::select! {
            _ = signals.wait() => {}
            reason = &mut ended => return Ok(gave_up(&cluster, reason).await),
        }
        tracing::info!("Stopping the node: containers first, then the NodeManagers and the ResourceManager");
        cluster.shutdown(Duration::from_secs(30)).await;
        Ok(0)
    })
}

/// The bounds of a process's actor endpoint: the transport's defaults (its peers are the
/// cluster's own processes), with frames up to Spark's largest RPC message
/// (`spark.rpc.message.maxSize`, 128 MiB: a task's result or a shuffle block travels in one).
pub fn actor_limits() -> crate::rpc::tcp::ServerLimits {
    crate::rpc::tcp::ServerLimits {
        max_frame: crate::rpc::remote::MAX_FRAME,
        ..crate::rpc::tcp::ServerLimits::default()
    }
}

/// `/node` ended on its own: logs it, lets the records reach their files, prints the one
/// line and answers [`EXIT_NODE_GAVE_UP`].
async fn gave_up(cluster: &Cluster, reason: Option<ExitReason>) -> i32 {
    let reason = reason.unwrap_or(ExitReason::Aborted {
        message: "it is gone".to_string(),
    });
    let message = gave_up_message(&reason);
    tracing::error!(event = "node_gave_up", reason = %reason, exit_code = EXIT_NODE_GAVE_UP, "Exiting: /node ended ({reason})");
    // /node is gone already, so this only stops what is left and flushes the records.
    cluster.shutdown(Duration::from_secs(5)).await;
    super::fail("sparkyard node", &message);
    EXIT_NODE_GAVE_UP
}

/// Ctrl-C and SIGTERM, registered at once (a signal that arrives before anyone waits is
/// kept, not lost to the default action).
pub struct Signals {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
}

impl Signals {
    pub fn install() -> std::io::Result<Signals> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(Signals {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
        })
    }

    /// Waits for the next of the two.
    pub async fn recv(&mut self) {
        tokio::select! {
            _ = self.interrupt.recv() => {}
            _ = self.terminate.recv() => {}
        }
    }

    /// Waits for the first of the two.
    pub async fn wait(mut self) {
        self.recv().await
    }
}
