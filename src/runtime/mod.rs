//! The supervision runtime on actix.
//!
//! What actix does not give and sparkyard needs, with the semantics of Erlang/OTP:
//! supervisors with child specs, strategies, restart types, restart intensity and
//! escalation ([`supervisor`]); panics caught in every handler, timer and hook and turned
//! into failures ([`cell`], [`panic`]); actor paths and globs ([`path`]); a registry that
//! resolves a path to the live incarnation ([`registry`]); death watch ([`watch`]); fault
//! injection by path or glob, partitions and seeded plans ([`fault`]); one clock, real or
//! manual ([`clock`], [`timers`]); cooperative cancellation ([`cancel`]); endpoint refs by
//! path, checked against partitions on the way ([`endpoint`]); queues that outlive an
//! actor's incarnations ([`inbox`]); facts one actor publishes for others ([`view`]); and
//! all of it per [`cluster`] instance.
//!
//! Layer: just above [`crate::logs`] (every actor's records carry its log context), under
//! everything else. It reads no configuration: callers hand it plain values (a
//! [`Supervision`], limits, durations).

pub mod blocking;
pub mod cancel;
pub mod cell;
pub mod clock;
pub mod cluster;
pub mod deferred;
pub mod endpoint;
pub mod exit;
pub mod fault;
pub mod host;
pub mod inbox;
pub mod panic;
pub mod path;
pub mod protocol;
pub mod registry;
pub mod remote;
pub mod supervisor;
pub mod timers;
pub mod view;
pub mod watch;

pub use cancel::{CancelToken, Cancelled};
pub use cell::Me;
pub use clock::Clock;
pub use cluster::{Cluster, WeakCluster};
pub use exit::ExitReason;
pub use fault::{FaultError, FaultPlan, KillMode, PartitionMode, PlannedFault, Progress, Span, Trigger};
pub use inbox::{DurableInbox, InboxSender, WakeInbox};
pub use path::{ActorPath, PathGlob};
pub use protocol::{Endpoint, Protocol};
pub use supervisor::{
    Backoff, ChildKind, ChildSpec, Kept, Restart, Shutdown, Strategy, Supervision, Supervisor,
    SupervisorProtocol, SupervisorSpec,
};
pub use view::{Publisher, View};
pub use watch::Terminated;
