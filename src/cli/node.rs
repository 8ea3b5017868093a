//! `sparkyard node`: the all-in-one node as a long-running process.
//!
//! It binds `yarn.resourcemanager.address` (loopback by default, since the port has no
//! authentication yet; port 0 picks a free one), starts the ResourceManager, the
//! NodeManagers of the configuration and the client port, prints one readiness line with
//! the bound address on stdout, and runs until Ctrl-C (or SIGTERM), when it stops cleanly:
//! the client port first, then each NodeManager's containers and the NodeManager, then the
//! ResourceManager.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::conf::{self, SparkConf};
use crate::runtime::Cluster;
use crate::yarn::node::{start_node, wait_ready};

/// Runs the node; answers the exit status.
pub fn run(conf: SparkConf, log_dir: Option<&Path>) -> Result<i32, String> {
    let nodes = conf::node_managers(&conf).map_err(|e| e.to_string())?;
    let addr = conf.get(&conf::RM_ADDRESS).map_err(|e| e.to_string())?;
    let wanted = format!("{}:{}", addr.host, addr.port);
    let listener =
        std::net::TcpListener::bind(&wanted).map_err(|e| format!("cannot listen on {wanted}: {e}"))?;
    let bound = listener.local_addr().map(|a| a.to_string()).unwrap_or(wanted);
    let log_dir = crate::logs::reader::resolve_log_dir(log_dir);
    let hostname = super::local_hostname();
    let system = actix::System::new();
    system.block_on(async move {
        let cluster = Cluster::builder()
            .id(&super::process_cluster_id("node"))
            .log_dir(&log_dir)
            .node(&hostname)
            .build()?;
        // Handle Ctrl-C and SIGTERM from before the readiness line on.
        let signals = Signals::install().map_err(|e| format!("cannot install signal handlers: {e}"))?;
        start_node(&cluster, &conf, &nodes, &hostname, Some(Arc::new(listener)))?;
        wait_ready(&cluster, nodes.len(), Duration::from_secs(10)).await?;
        let hosts: Vec<&str> = nodes.iter().map(|n| n.host.as_str()).collect();
        {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(
                out,
                "sparkyard node: ResourceManager listening on {bound} with {} NodeManagers ({}); logs in {}",
                nodes.len(),
                hosts.join(", "),
                log_dir.display()
            );
            let _ = out.flush();
        }
        signals.wait().await;
        tracing::info!("Stopping the node: containers first, then the NodeManagers and the ResourceManager");
        cluster.shutdown(Duration::from_secs(30)).await;
        Ok(0)
    })
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
