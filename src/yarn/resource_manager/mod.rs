//! ResourceManager, at `/node/rm`: applications, attempts and containers for the whole
//! node.
//!
//! Layer: yarn. [`core`] holds the rules as a pure state machine ([`ResourceManagerCore`] with YARN's
//! [`RMApp`] and [`RMAppAttempt`]), tested without actors; [`actor`] is the actix actor
//! that takes the protocols' messages, asks the core and carries out its [`Effect`]s.
//!
//! It hands out application ids (`application_<clusterTimestamp>_<seq>`), accepts
//! submissions (an unknown queue rejects the application with the CapacityScheduler's
//! diagnostics; an AM above the maximum allocation is refused with YARN's
//! InvalidResourceRequest), runs the application state machine (NEW → SUBMITTED →
//! ACCEPTED → RUNNING → FINISHED / FAILED / KILLED) with its final status, and launches the
//! AM container of each attempt on a NodeManager. It serves the AM protocol: registration,
//! the Allocate heartbeat (the attempt's outstanding requests are scheduled at once, with
//! locality, by [`super::scheduler::Scheduler`]; granted containers and completed container
//! statuses go back in the answer) and unregistration. When an AM container ends without
//! its attempt having unregistered, the attempt failed: the RM starts another, up to
//! `yarn.resourcemanager.am.max-attempts` (capped by the submission's `spark.yarn.maxAppAttempts`),
//! then fails the application with YARN's diagnostics; as in YARN, an attempt whose AM
//! container was preempted, aborted (its node lost), lost to a disk failure or killed by the
//! RM does not count towards that maximum.
//!
//! Each queue holds its ApplicationMasters to `maximum-am-resource-percent` of the cluster
//! ([`super::leaf_queue::LeafQueue`]): an attempt's AM container is placed only once its
//! queue activated it; the others wait ACCEPTED, in submission order, with YARN's
//! diagnostics, and start as attempts end. At most `max-completed-applications` finished
//! applications are kept; older ones are forgotten, oldest first.
//!
//! Nodes heartbeat ([`crate::yarn::protocol::NodeHeartbeat`]) and the RM answers each with a
//! node action: NORMAL (with the containers the node should clean up), RESYNC for a node it
//! does not know or expired, or whose response id is out of step, SHUTDOWN for a
//! decommissioned one. Its liveness monitor, every third of
//! `yarn.nm.liveness-monitor.expiry-interval-ms`, expires a node silent for the whole
//! interval: LOST, out of the scheduler, its containers completed as lost (-100), running
//! AMs told in their next Allocate. A registration of another protocol version
//! ([`crate::yarn::protocol::NODE_PROTOCOL_VERSION`]) or cluster
//! (`yarn.resourcemanager.cluster-id`) is refused with one line naming both values.
//!
//! Restarts: its applications, attempts and nodes are kept by its supervisor
//! ([`ResourceManagerCore`]), so a restarted RM still knows them; what was queued in its mailbox is lost
//! with it, and the peers make up for it. Report waiters are dropped (clients ask again).
//! A new incarnation asks every known NodeManager to register again
//! ([`crate::yarn::protocol::Resync`]); a registration ([`crate::yarn::protocol::RegisterNode`]) names the node's
//! running containers and the completed statuses the RM has not taken, and the RM completes
//! every container it placed on that node which the node does not name as lost (-100,
//! "Container released on a *lost* node") — so a NodeStatusUpdate lost in the dead mailbox
//! is sent again, and the containers of a node that died are reported as YARN reports a lost
//! node's. A container granted but not started yet is among those: the node refuses to
//! start it afterwards, and its AM asks for another (as YARN's NodeManager refuses a
//! container token from before its re-registration). Completions are idempotent; a
//! container its AM releases completes at once, and an ended attempt's containers are freed
//! at once, whatever their nodes report later (YARN's RMContainer on RELEASED and KILL). Allocate is too, as in YARN's ApplicationMasterService:
//! an Allocate carrying the response id of the last answer's request (its answer never
//! reached the AM: the allocator died meanwhile) gets that answer again, with the granted
//! containers and completed statuses it held. ApplicationMasters reach the RM through
//! [`ask_rm`], which retries while the RM cannot be reached (its mailbox died with the ask,
//! or its new incarnation is not registered yet), as Hadoop's RM proxy does on failover.

pub mod actor;
pub mod core;

pub use actor::{ask_rm, ResourceManager};
pub use core::{
    Effect, RMApp, RMAppAttempt, ReportKey, ResourceManagerCore, ResyncReason, RmConfig, RELEASED_CONTAINER,
};
