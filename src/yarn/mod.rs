//! The YARN side: the ResourceManager and its container scheduler, the NodeManagers and
//! their containers, YARN's records and protocols, and the all-in-one node that assembles
//! them.
//!
//! Layer: above the runtime, logs, conf and rpc; under the Spark side, of which it knows
//! nothing. A NodeManager starts a container's command through the launcher registry
//! ([`launcher`]) handed to the node by whoever assembles it, and the client protocol
//! ([`protocol::ClientProtocol`]) plugs into the generic TCP transport of `rpc::tcp`.

pub mod acls;
pub mod client_rm_service;
pub mod client_service;
pub mod container_executor;
pub mod container_monitor;
pub mod container_process;
pub mod launcher;
pub mod leaf_queue;
pub mod node;
pub mod node_manager;
pub mod protocol;
pub mod records;
pub mod resource_manager;
pub mod scheduler;
pub mod security;
pub mod webapp;
