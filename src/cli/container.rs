//! A container's process: what `sparkyard [-Dkey=value ...] <role> <arguments>` runs when a
//! NodeManager starts it as an OS process (YARN's `launch_container.sh` exec'ing the JVM).
//!
//! Layer: cli (the top: parses commands and assembles processes).
//!
//! The process reads [`LAUNCH_FILE`] from its working directory (its container, launch
//! context, host, and the actor endpoint of the NodeManager's process), serves its own actors
//! on the node's address, routes every other path to the NodeManager's process (which
//! forwards; peers it talks to are then learned and reached directly), and starts the role
//! its command names under its container's path, exactly as the NodeManager starts it in
//! process: the same actors, at the same paths, speaking the same protocols. It exits with
//! its role's exit status.
//!
//! SIGTERM (the NodeManager stopping the container) stops the tree gracefully, as a JVM's
//! shutdown hooks run, and the process exits 143. A process whose parent is gone (its
//! NodeManager died) stops the same way, as YARN's containers do when their NodeManager
//! kills their process group; it exits 154 (YARN's LOST).

use std::path::Path;
use std::time::Duration;

use crate::runtime::{ActorPath, Cluster, ExitReason};
use crate::yarn::launcher::{container_ids, container_supervisor, ContainerLaunchFile, Launch, LAUNCH_FILE};
use crate::yarn::records::ContainerLaunchContext;

/// The exit status after a SIGTERM (128 + 15, what a JVM exits with).
pub const EXIT_TERMINATED: i32 = 143;

/// The exit status when the NodeManager that started this process is gone (YARN's
/// `ExitCode.LOST`).
pub const EXIT_PARENT_GONE: i32 = 154;

/// How long a stop waits for the container's actors to end.
const STOP_LIMIT: Duration = Duration::from_secs(30);

/// How long an ending process waits for its last messages to be written out.
const FLUSH_LIMIT: Duration = Duration::from_secs(1);

/// How often the process checks that its parent still runs.
const PARENT_CHECK: Duration = Duration::from_millis(500);

/// Whether this process was started by a NodeManager as a container (its working directory
/// holds the launch file).
pub fn is_container() -> bool {
    Path::new(LAUNCH_FILE).is_file()
}

/// Runs the container's role; answers the process's exit status. `command` is the whole
/// launch command, program first.
pub fn run(command: Vec<String>) -> i32 {
    let who = "sparkyard container";
    let file = match read_launch_file() {
        Ok(f) => f,
        Err(e) => {
            super::fail(who, &e);
            return super::EXIT_BAD_INPUT;
        }
    };
    if let Err(e) = super::init_logs(None, &[]) {
        super::fail(who, &e);
        return super::EXIT_BAD_INPUT;
    }
    let system = actix::System::new();
    match system.block_on(serve(command, file)) {
        Ok(code) => code,
        Err(e) => {
            // The one line a failing container prints; its NodeManager puts it in the
            // container's diagnostics.
            super::fail(who, &e);
            super::EXIT_BAD_INPUT
        }
    }
}

fn read_launch_file() -> Result<ContainerLaunchFile, String> {
    let text = std::fs::read_to_string(LAUNCH_FILE)
        .map_err(|e| format!("cannot read {LAUNCH_FILE} in the container's working directory: {e}"))?;
    serde_json::from_str(&text).map_err(|e| format!("{LAUNCH_FILE}: {e}"))
}

async fn serve(command: Vec<String>, file: ContainerLaunchFile) -> Result<i32, String> {
    let parent = std::os::unix::process::parent_id();
    let root = crate::yarn::node::container_path(&file.host, &file.container.id);
    let mut builder = Cluster::builder()
        .id(&super::process_cluster_id(&format!(
            "container_{}",
            file.container.id
        )))
        .node(&file.host);
    if let Some(dir) = &file.log_dir {
        builder = builder.log_dir(dir);
    }
    let cluster = builder.build()?;
    let signals =
        super::node::Signals::install().map_err(|e| format!("cannot install signal handlers: {e}"))?;
    let limits = super::node::actor_limits();
    // It holds its application's secret only: it proves it to the node and accepts the
    // connections of its application's other processes (and of its node, which derives it).
    let keyring = crate::yarn::security::container_keyring(
        &file.container.id.attempt.app.to_string(),
        file.credentials.as_ref().map(|c| c.0.as_str()),
        file.encrypt,
    )
    .map_err(|e| format!("{LAUNCH_FILE}: credentials: {e}"))?;
    let security = crate::rpc::remote::Security { keyring, gate: None };
    let (addr, _serving) = crate::rpc::remote::serve_cluster_secured(
        &cluster,
        root.clone(),
        &format!("{}:0", file.bind),
        limits,
        security,
    )
    .await?;
    crate::yarn::client_service::offer_admin(&cluster, None);
    let node_root = ActorPath::root(crate::yarn::node::NODE_ROOT).map_err(|e| e.to_string())?;
    cluster.route_to(node_root, &file.node_actors)?;
    // A client-mode driver's actors (`/submit`) are reached through its URL; the node's
    // process forwards what comes without one (the embedded cluster holds them itself).
    let submit_root = ActorPath::root("submit").map_err(|e| e.to_string())?;
    cluster.route_to(submit_root, &file.node_actors)?;
    tracing::info!(
        event = "container_process_started",
        container_id = %file.container.id,
        pid = std::process::id(),
        addr = %addr,
        node_actors = %file.node_actors,
        "Container {} serves its actors at {addr}; the node's at {}",
        file.container.id,
        file.node_actors
    );
    let rm = ActorPath::parse(&file.rm).map_err(|e| format!("{LAUNCH_FILE}: rm: {e}"))?;
    let output = crate::logs::output::OutputSink::stdout();
    let launch = Launch {
        container: &file.container,
        context: &ContainerLaunchContext {
            command,
            ..file.context.clone()
        },
        host: &file.host,
        rm: &rm,
        output: &output,
    };
    let process = super::roles::launch(&launch, &super::roles::applications())?;
    let ids = container_ids(&file.container, &process.ids);
    let root = cluster.start_root_at(&root, ids, container_supervisor(process.spec));
    let ended = cluster.root_ended(&root);
    tokio::pin!(ended);
    let parent_gone = async {
        loop {
            tokio::time::sleep(PARENT_CHECK).await;
            if std::os::unix::process::parent_id() != parent {
                return;
            }
        }
    };
    let code = tokio::select! {
        reason = &mut ended => exit_status(reason),
        _ = signals.wait() => {
            tracing::info!(event = "container_terminated", "Received SIGTERM: stopping the container's actors");
            cluster.shutdown(STOP_LIMIT).await;
            cluster.flush_links(FLUSH_LIMIT).await;
            return Ok(EXIT_TERMINATED);
        }
        _ = parent_gone => {
            tracing::warn!(event = "container_orphaned", "The NodeManager that started this container is gone: stopping");
            cluster.shutdown(STOP_LIMIT).await;
            return Ok(EXIT_PARENT_GONE);
        }
    };
    cluster.shutdown(STOP_LIMIT).await;
    cluster.flush_links(FLUSH_LIMIT).await;
    Ok(code)
}

/// The process's exit status for its root's end: the role's exit code, within 0..=255.
fn exit_status(reason: Option<ExitReason>) -> i32 {
    let reason = reason.unwrap_or(ExitReason::Aborted {
        message: "it is gone".into(),
    });
    reason.exit_code().rem_euclid(256)
}
