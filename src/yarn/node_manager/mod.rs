//! NodeManager, at `/node/nm-<host>/node-manager`: starts and stops the containers of one
//! node and reports how they ended.
//!
//! Layer: yarn. [`core`] holds the node's container records and decides ([`NodeManagerCore`],
//! tested without actors); [`actor`] is the actix actor that runs the containers through
//! the launcher registry and talks to the ResourceManager.
//!
//! StartContainer starts the container's launch command through the launcher registry the
//! node was assembled with ([`super::launcher`]), as a real NodeManager execs a command
//! line: the launcher of the command's program builds the container's process, and the
//! NodeManager starts it as a subtree under the node's supervisor:
//! `/node/nm-<host>/<container_id>` is a supervisor whose significant child is the process
//! (for sparkyard's roles, `am` for an ApplicationMaster, `executor-<id>` for an executor
//! backend), so the container ends when its process does, with its exit status. The
//! NodeManager knows nothing of what runs inside. A command the registry cannot start (an
//! unknown program, arguments its launcher refuses) is a process that fails at once: the
//! container completes with exit status 1 and the launcher's message as its diagnostics.
//! StopContainer stops the
//! subtree; the container then completes with the requester's YARN exit status (-105 by
//! the ApplicationMaster, -106 by the ResourceManager, -107 after the application
//! completed). Every completion goes to the ResourceManager at once (NodeStatusUpdate, an
//! ask): a status stays in the NodeManager's list until the RM has taken it, and is sent
//! again after a failure and with every registration, so none is lost while the RM
//! restarts. The NodeManager keeps each container's stdout, which the ResourceManager can
//! fetch.
//!
//! Registration ([`super::protocol::RegisterNode`], Hadoop's RegisterNodeManagerRequest with its container
//! statuses) names the containers running here and the completed statuses not yet taken;
//! the RM completes every container it placed here that the node does not name as lost
//! (exit status -100, "Container released on a *lost* node") and answers their ids, and
//! this NodeManager then refuses to start them. Nothing else is handled until the
//! registration is answered. It registers when it starts and again when a restarted RM asks
//! it to ([`super::protocol::Resync`], YARN's NodeAction.RESYNC). Once registered it sends a
//! heartbeat ([`super::protocol::NodeHeartbeat`]) every
//! `yarn.resourcemanager.nodemanagers.heartbeat-interval-ms` with its running containers and
//! the statuses not yet taken; an answer of RESYNC makes it register again (the RM expired
//! it), SHUTDOWN (decommissioned) or a refused registration (another protocol version or
//! cluster) makes it log the RM's line and stop heartbeating, without retrying.
//!
//! What survives a restart of the NodeManager actor is its [`NodeManagerCore`], held by the node's
//! supervisor: the containers (which keep running next to it), their outputs, the statuses
//! not yet taken and the ids refused; the node's supervisor records each container's
//! incarnation there the moment it starts it, so a container that starts and ends while the
//! NodeManager restarts is still reported with its exit status. A new incarnation first asks the node's supervisor
//! for its children (so a container whose start was still on its way is counted), watches
//! the running containers again and completes those that ended while it was down with the
//! exit status their incarnation recorded (YARN's recovered exit-code file; 154, YARN's
//! LOST, if there is none) — one whose start died with the old incarnation before the node
//! ran it is forgotten, since its starter asks again — then registers. When the whole node (`/node/nm-<host>`) dies,
//! its containers die with it and its new NodeManager starts with an empty state: it
//! registers naming no container, and the RM reports every container it had here lost.
//! A container that ends because its node is going down (shut down or aborted while the
//! NodeManager did not stop it) is therefore not reported by this NodeManager.

pub mod actor;
pub mod core;

pub use actor::{node_manager_path, NmConfig, NodeManager, ShutdownHook};
pub use core::{NodeManagerCore, EXIT_CODE_LOST, LOST_CONTAINER};
