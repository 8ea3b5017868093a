//! The live node's controls: `sparkyard actors`, `sparkyard chaos` and `sparkyard rmadmin`.
//!
//! Layer: cli (the top: parses commands and assembles processes).
//!
//! Both talk to a running `sparkyard node` over its client port, found as `submit --master
//! yarn` finds it (`yarn.resourcemanager.address` from `--config-dir` and `--conf`), with
//! sparkyard's admin calls ([`AdminRequest`]) next to YARN's client protocol:
//!
//! - `actors [--app <id>] [--json]`: the live supervision tree, one actor a line, indented
//!   by depth: path, actor type, incarnation, restarts (incarnation − 1: every new
//!   incarnation at a path replaced a failed or stopped one) and status;
//! - `chaos kill <path-or-glob> [--panic] [--after <duration>]`: kills what matches, now
//!   (printing each actor killed) or later on the node's clock (printing what it matches
//!   now; what it matches when the time comes is killed, or a `fault_skipped` record says
//!   nothing did);
//! - `chaos partition <path-or-glob> --for <duration> [--delay <duration>]`: drops (or
//!   delays) every message to and from matching actors for that long;
//! - `chaos plan --seed <n> --for <duration>`: a seeded random plan of
//!   `spark.sparkyard.chaos.kills` kills spread over the duration, of actors drawn from
//!   `spark.sparkyard.chaos.targets` (default: every killable actor of a node, that is
//!   [`crate::chaos::KILLABLE`] without the submit side, which lives in the submitting
//!   process), run in the node; the plan is a pure function of these settings;
//! - `chaos heal [<path-or-glob>]`: ends the partitions in force now, those given with that
//!   target or every one (refused when none is).
//!
//! Every call carries its caller (`HADOOP_USER_NAME`, else the OS user); with
//! `yarn.acl.enable` on the node, only its admins (`yarn.admin.acl`) may make these calls.
//!
//! - `rmadmin decommission <host>... [--timeout <duration>]`, `rmadmin recommission
//!   <host>...`, `rmadmin nodes`: YARN's graceful decommission of NodeManagers
//!   (`yarn rmadmin -refreshNodes -g`) and the node list (`yarn node -list -all`), served by
//!   the ResourceManager; each prints every node with its state.
//!
//! A malformed pattern is refused before anything is sent; a pattern that matches no running
//! actor, or a host the node does not have, is refused by the node. Both are one line
//! naming the pattern or host and exit status 1.

use std::io::Write;
use std::time::Duration;

use crate::conf::{self, SparkConf};
use crate::runtime::fault::Killed;
use crate::runtime::registry::ActorInfo;
use crate::runtime::{FaultPlan, KillMode, PartitionMode, PathGlob, Span};
use crate::yarn::protocol::{
    AdminRequest, AdminResponse, ClientCall, ClientConnection, ClientRequest, ClientResponse, RefreshNodes,
    SignalTarget,
};
use crate::yarn::records::{ApplicationId, NodeReport};

/// How long a control waits to connect and for its answer.
pub const CONTROL_TIMEOUT: Duration = Duration::from_secs(10);

/// What `sparkyard chaos` was asked to do.
#[derive(Clone, Debug, PartialEq)]
pub enum ChaosCommand {
    Kill {
        target: String,
        panic: bool,
        after: Option<Duration>,
    },
    Partition {
        target: String,
        duration: Duration,
        delay: Option<Duration>,
    },
    Plan {
        seed: u64,
        duration: Duration,
    },
    /// A real signal to container processes or a NodeManager's process.
    Signal {
        signal: String,
        target: ProcessTarget,
    },
    /// End the partitions in force (those of `target`, or every one) now.
    Heal {
        target: Option<String>,
    },
}

/// Which processes `sparkyard chaos signal` reaches.
#[derive(Clone, Debug, PartialEq)]
pub enum ProcessTarget {
    /// Container processes by container id or glob.
    Containers(String),
    /// The container process of an executor (of `app`, when given).
    Executor { id: String, app: Option<String> },
    /// The process of the NodeManager of a host.
    Host(String),
}

/// The container id of the running executor `id` (of `app`, when given), from the node's
/// actors; the error names what is missing or ambiguous.
fn executor_container(addr: &NodeAddress, id: &str, app: Option<&str>) -> Result<String, String> {
    let app_id = app
        .map(|a| {
            a.parse::<ApplicationId>()
                .map_err(|e| format!("--app '{a}': {e}"))
        })
        .transpose()?;
    let actors = match call(addr, AdminRequest::ListActors { app: app_id })? {
        AdminResponse::Actors(a) => a,
        other => return Err(format!("unexpected answer from the node at {addr}: {other:?}")),
    };
    let suffix = format!("/executor-{id}");
    let mut containers: Vec<String> = actors
        .iter()
        .filter(|a| a.path.as_str().ends_with(&suffix))
        .filter_map(|a| {
            a.path
                .as_str()
                .split('/')
                .find(|seg| seg.starts_with("container_"))
                .map(str::to_string)
        })
        .collect();
    containers.sort();
    containers.dedup();
    match containers.len() {
        0 => Err(format!(
            "no running executor {id}{}",
            app.map(|a| format!(" in {a}")).unwrap_or_default()
        )),
        1 => Ok(containers.remove(0)),
        n => Err(format!(
            "executor {id} runs in {n} applications ({}); name one with --app",
            containers.join(", ")
        )),
    }
}

/// What `sparkyard rmadmin` was asked to do.
#[derive(Clone, Debug, PartialEq)]
pub enum RmadminCommand {
    Decommission {
        hosts: Vec<String>,
        timeout: Option<Duration>,
    },
    Recommission {
        hosts: Vec<String>,
    },
    Nodes,
}

/// The nodes as a table (`yarn node -list -all`): host, rack, state, running containers,
/// memory and vcores used of the node's capability.
pub fn format_nodes(nodes: &[NodeReport]) -> String {
    let host_w = nodes.iter().map(|n| n.host.len()).max().unwrap_or(0).max(4);
    let rack_w = nodes.iter().map(|n| n.rack.len()).max().unwrap_or(0).max(4);
    let mut text = format!(
        "Total Nodes:{}\n{:<host_w$}  {:<rack_w$}  {:<15}  CONTAINERS  MEMORY-USED/TOTAL  VCORES-USED/TOTAL\n",
        nodes.len(),
        "HOST",
        "RACK",
        "STATE"
    );
    for n in nodes {
        let memory = format!("{}/{} MB", n.used.memory_mb, n.capability.memory_mb);
        let vcores = format!("{}/{}", n.used.vcores, n.capability.vcores);
        text.push_str(&format!(
            "{:<host_w$}  {:<rack_w$}  {:<15}  {:<10}  {memory:<17}  {vcores}\n",
            n.host,
            n.rack,
            n.state.to_string(),
            n.num_containers,
        ));
    }
    text
}

/// `sparkyard rmadmin`: decommissions, recommissions or lists the node's NodeManagers and
/// prints the nodes with their states on `out`.
pub fn rmadmin(conf: &SparkConf, command: RmadminCommand, out: &mut dyn Write) -> Result<(), String> {
    let request = match command {
        RmadminCommand::Decommission { hosts, timeout } => AdminRequest::RefreshNodes(RefreshNodes {
            decommission: hosts,
            recommission: Vec::new(),
            graceful_timeout: timeout,
        }),
        RmadminCommand::Recommission { hosts } => AdminRequest::RefreshNodes(RefreshNodes {
            decommission: Vec::new(),
            recommission: hosts,
            graceful_timeout: None,
        }),
        RmadminCommand::Nodes => AdminRequest::ListNodes,
    };
    let addr = node_address(conf)?;
    let nodes = match call(&addr, request)? {
        AdminResponse::Nodes(nodes) => nodes,
        other => return Err(format!("unexpected answer from the node at {addr}: {other:?}")),
    };
    out.write_all(format_nodes(&nodes).as_bytes())
        .map_err(|e| format!("cannot write output: {e}"))
}

/// A node as a control command reaches it: its client port and the node's secret to prove
/// there (`spark.authenticate`).
pub struct NodeAddress {
    pub addr: String,
    pub keyring: std::sync::Arc<crate::rpc::auth::Keyring>,
}

impl std::fmt::Display for NodeAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.addr)
    }
}

/// The node's client port (`host:port`) and secret from the configuration.
pub fn node_address(conf: &SparkConf) -> Result<NodeAddress, String> {
    Ok(NodeAddress {
        addr: node_port(conf)?,
        keyring: crate::yarn::security::node_keyring(conf, crate::rpc::auth::AcceptApps::NoApps, false)?,
    })
}

/// The node's address (`host:port`) from the configuration.
pub fn node_port(conf: &SparkConf) -> Result<String, String> {
    let addr = conf.get(&conf::RM_ADDRESS).map_err(|e| e.to_string())?;
    if addr.port == 0 {
        return Err(format!(
            "{} has port 0, which only a node can use (to pick a free port); give the address the node printed, e.g. --conf {}=127.0.0.1:8032",
            conf::RM_ADDRESS.name(),
            conf::RM_ADDRESS.name()
        ));
    }
    Ok(format!("{}:{}", addr.host, addr.port))
}

/// One admin call to the node at `addr`: connect, ask, answer (or one line saying why not).
pub fn call(addr: &NodeAddress, request: AdminRequest) -> Result<AdminResponse, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the client's runtime: {e}"))?;
    runtime.block_on(async move {
        let mut conn = ClientConnection::connect_secured(&addr.addr, CONTROL_TIMEOUT, addr.keyring.clone())
            .await
            .map_err(|e| e.to_string())?;
        match conn
            .call(
                ClientCall::current(ClientRequest::Admin(request)),
                CONTROL_TIMEOUT,
            )
            .await
            .map_err(|e| e.to_string())?
        {
            ClientResponse::Admin(AdminResponse::Refused(why)) => Err(why),
            ClientResponse::Admin(answer) => Ok(answer),
            ClientResponse::Failed(why) | ClientResponse::Denied(why) => Err(why),
            other => Err(format!("unexpected answer from the node at {addr}: {other:?}")),
        }
    })
}

/// `sparkyard actors`: prints the tree on `out`.
pub fn actors(conf: &SparkConf, app: Option<&str>, json: bool, out: &mut dyn Write) -> Result<(), String> {
    let app = app
        .map(|a| a.parse::<ApplicationId>().map_err(|e| format!("--app: {e}")))
        .transpose()?;
    let addr = node_address(conf)?;
    let actors = match call(&addr, AdminRequest::ListActors { app })? {
        AdminResponse::Actors(a) => a,
        other => return Err(format!("unexpected answer from the node at {addr}: {other:?}")),
    };
    if actors.is_empty() {
        return Err(match app {
            Some(app) => format!(
                "no running actor belongs to {app} in the node at {addr} (it may have ended; see sparkyard logs --app {app})"
            ),
            None => format!("the node at {addr} runs no actors"),
        });
    }
    let text = if json {
        actors
            .iter()
            .map(|a| serde_json::to_string(a).unwrap_or_default() + "\n")
            .collect()
    } else {
        format_tree(&actors)
    };
    out.write_all(text.as_bytes())
        .map_err(|e| format!("cannot write output: {e}"))
}

/// The tree as a table: each path indented by its depth (relative to the shallowest shown).
pub fn format_tree(actors: &[ActorInfo]) -> String {
    let top = actors.iter().map(|a| a.path.depth()).min().unwrap_or(1);
    let shown: Vec<String> = actors
        .iter()
        .map(|a| format!("{}{}", "  ".repeat(a.path.depth() - top), a.path))
        .collect();
    let path_w = shown.iter().map(String::len).max().unwrap_or(0).max(4);
    let type_w = actors
        .iter()
        .map(|a| a.actor_type.len())
        .max()
        .unwrap_or(0)
        .max(4);
    let mut text = format!(
        "{:<path_w$}  {:<type_w$}  INCARNATION  RESTARTS  STATUS\n",
        "PATH", "TYPE"
    );
    for (a, path) in actors.iter().zip(&shown) {
        text.push_str(&format!(
            "{path:<path_w$}  {:<type_w$}  {:<11}  {:<8}  {}\n",
            a.actor_type, a.incarnation, a.restarts, a.status
        ));
    }
    text
}

fn killed_line(k: &Killed) -> String {
    format!("{} (incarnation {}, {})", k.path, k.incarnation, k.actor_type)
}

fn matching_lines(matching: &[ActorInfo]) -> String {
    matching
        .iter()
        .map(|a| format!("  {} (incarnation {}, {})\n", a.path, a.incarnation, a.actor_type))
        .collect()
}

/// The targets of `chaos plan`: `spark.sparkyard.chaos.targets`, else every killable actor
/// of a node.
pub fn node_plan_targets(conf: &SparkConf) -> Result<Vec<String>, String> {
    match conf.get(&conf::CHAOS_TARGETS).map_err(|e| e.to_string())? {
        Some(list) if !list.is_empty() => Ok(list),
        _ => Ok(crate::chaos::killable_globs()
            .into_iter()
            .filter(|g| !g.starts_with("/submit"))
            .map(str::to_string)
            .collect()),
    }
}

/// The seeded plan `chaos plan --seed <seed> --for <duration>` runs with `conf`.
pub fn node_plan(conf: &SparkConf, seed: u64, duration: Duration) -> Result<FaultPlan, String> {
    let kills = conf.get(&conf::CHAOS_KILLS).map_err(|e| e.to_string())?;
    let targets = node_plan_targets(conf)?;
    let refs: Vec<&str> = targets.iter().map(String::as_str).collect();
    FaultPlan::seeded(seed, &refs, kills as usize, Span::Time(duration)).map_err(|e| {
        format!(
            "invalid value '{}' for {}: {e}",
            targets.join(","),
            conf::CHAOS_TARGETS.name()
        )
    })
}

/// `sparkyard chaos`: does `command` in the node and prints what happened on `out`.
pub fn chaos(conf: &SparkConf, command: ChaosCommand, out: &mut dyn Write) -> Result<(), String> {
    if let ChaosCommand::Kill { target, .. }
    | ChaosCommand::Partition { target, .. }
    | ChaosCommand::Heal { target: Some(target) } = &command
    {
        PathGlob::parse(target).map_err(|e| e.to_string())?;
    }
    let addr = node_address(conf)?;
    let text = match command {
        ChaosCommand::Kill { target, panic, after } => {
            let mode = if panic { KillMode::Panic } else { KillMode::Stop };
            let by = "sparkyard chaos kill".to_string();
            match call(
                &addr,
                AdminRequest::Kill {
                    target: target.clone(),
                    mode,
                    after,
                    by,
                },
            )? {
                AdminResponse::Killed(killed) => killed
                    .iter()
                    .map(|k| format!("killed ({mode}) {}\n", killed_line(k)))
                    .collect::<String>(),
                AdminResponse::KillScheduled { after, matching } => format!(
                    "scheduled: {mode} {target} in {}; it matches now:\n{}",
                    humantime::format_duration(after),
                    matching_lines(&matching)
                ),
                other => return Err(format!("unexpected answer from the node at {addr}: {other:?}")),
            }
        }
        ChaosCommand::Partition {
            target,
            duration,
            delay,
        } => {
            let mode = match delay {
                Some(d) => PartitionMode::Delay(d),
                None => PartitionMode::Drop,
            };
            let by = "sparkyard chaos partition".to_string();
            let request = AdminRequest::Partition {
                target: target.clone(),
                mode,
                duration,
                by,
            };
            match call(&addr, request)? {
                AdminResponse::Partitioned { duration, matching } => format!(
                    "partitioned for {}: messages to and from {target} {}; it matches now:\n{}",
                    humantime::format_duration(duration),
                    match delay {
                        Some(d) => format!("delayed by {}", humantime::format_duration(d)),
                        None => "dropped".to_string(),
                    },
                    matching_lines(&matching)
                ),
                other => return Err(format!("unexpected answer from the node at {addr}: {other:?}")),
            }
        }
        ChaosCommand::Signal { signal, target } => {
            let by = "sparkyard chaos signal".to_string();
            let sig = signal.parse::<crate::yarn::container_executor::ProcessSignal>()?;
            let target = match target {
                ProcessTarget::Containers(glob) => SignalTarget::Containers(glob),
                ProcessTarget::Host(host) => SignalTarget::NodeManager(host),
                ProcessTarget::Executor { id, app } => {
                    SignalTarget::Containers(executor_container(&addr, &id, app.as_deref())?)
                }
            };
            match call(&addr, AdminRequest::Signal { target, signal, by })? {
                AdminResponse::Signalled(sent) => sent
                    .iter()
                    .map(|s| format!("sent SIG{sig} to {} (pid {})\n", s.what, s.pid))
                    .collect::<String>(),
                other => return Err(format!("unexpected answer from the node at {addr}: {other:?}")),
            }
        }
        ChaosCommand::Heal { target } => {
            let by = "sparkyard chaos heal".to_string();
            match call(
                &addr,
                AdminRequest::Heal {
                    target: target.clone(),
                    by,
                },
            )? {
                AdminResponse::Healed(healed) if healed.is_empty() => {
                    return Err(match target {
                        Some(t) => format!("no partition of '{t}' is in force in the node at {addr}"),
                        None => format!("no partition is in force in the node at {addr}"),
                    })
                }
                AdminResponse::Healed(healed) => healed
                    .iter()
                    .map(|t| format!("healed: messages to and from {t} flow again\n"))
                    .collect::<String>(),
                other => return Err(format!("unexpected answer from the node at {addr}: {other:?}")),
            }
        }
        ChaosCommand::Plan { seed, duration } => {
            let plan = node_plan(conf, seed, duration)?;
            let by = format!("sparkyard chaos plan (seed {seed})");
            match call(&addr, AdminRequest::RunPlan { plan, by })? {
                AdminResponse::PlanStarted(plan) => {
                    let mut text = format!(
                        "fault plan (seed {seed}, {} kill{} over {}) running in the node at {addr}:\n",
                        plan.faults.len(),
                        if plan.faults.len() == 1 { "" } else { "s" },
                        humantime::format_duration(duration)
                    );
                    for line in crate::chaos::describe(&plan) {
                        text.push_str(&format!("  {line}\n"));
                    }
                    text.push_str(
                        "(a kill that matches no running actor when it fires is recorded as fault_skipped; see sparkyard logs --supervision)\n",
                    );
                    text
                }
                other => return Err(format!("unexpected answer from the node at {addr}: {other:?}")),
            }
        }
    };
    out.write_all(text.as_bytes())
        .map_err(|e| format!("cannot write output: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::ActorPath;
    use crate::runtime::ChildKind;

    fn info(path: &str, t: &str, incarnation: u64) -> ActorInfo {
        ActorInfo {
            path: ActorPath::parse(path).unwrap(),
            actor_type: t.into(),
            incarnation,
            restarts: incarnation - 1,
            kind: ChildKind::Worker,
            node: None,
            status: "running".into(),
        }
    }

    #[test]
    fn the_tree_is_indented_by_depth() {
        let text = format_tree(&[
            info("/node", "Supervisor", 1),
            info("/node/rm", "ResourceManager", 3),
        ]);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("PATH "), "{text}");
        assert!(lines[1].starts_with("/node "), "{text}");
        assert!(lines[2].starts_with("  /node/rm "), "{text}");
        assert!(
            lines[2].contains("ResourceManager  3            2         running"),
            "{text}"
        );
    }

    #[test]
    fn node_plans_leave_the_submit_side_out_and_replay() {
        let mut c = SparkConf::new();
        let targets = node_plan_targets(&c).unwrap();
        assert!(targets.iter().all(|t| !t.starts_with("/submit")));
        assert!(targets.iter().any(|t| t == "/node/rm"));
        let a = node_plan(&c, 7, Duration::from_secs(10)).unwrap();
        assert_eq!(a, node_plan(&c, 7, Duration::from_secs(10)).unwrap());
        assert_eq!(a.faults.len(), 3);
        c.set("spark.sparkyard.chaos.targets", "nope");
        assert!(node_plan(&c, 7, Duration::from_secs(1))
            .unwrap_err()
            .contains("spark.sparkyard.chaos.targets"));
    }

    #[test]
    fn port_zero_is_not_an_address_to_call() {
        let mut c = SparkConf::new();
        c.set("yarn.resourcemanager.address", "127.0.0.1:0");
        assert!(node_port(&c).unwrap_err().contains("port 0"));
        c.set("yarn.resourcemanager.address", "127.0.0.1:9999");
        assert_eq!(node_port(&c).unwrap(), "127.0.0.1:9999");
    }
}
