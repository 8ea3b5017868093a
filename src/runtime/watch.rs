//! Death watch: an actor watches another by path and receives [`Terminated`] with the
//! watched incarnation's exit reason when it ends.
//!
//! A watch covers one incarnation, as an Erlang monitor covers one process: after a restart
//! the watcher watches again if it still cares. Watching a path where nothing runs delivers
//! `Terminated` with [`ExitReason::NoProc`] at once. A watcher that is itself restarted
//! loses its watches (its new incarnation sets them up in `started()`).

use serde::{Deserialize, Serialize};

use super::exit::ExitReason;
use super::path::ActorPath;

/// The watched actor's incarnation ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, actix::Message)]
#[rtype(result = "()")]
pub struct Terminated {
    pub path: ActorPath,
    pub incarnation: u64,
    pub reason: ExitReason,
}
