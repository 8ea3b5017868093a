//! Death watch: an actor watches another by path and receives [`Terminated`] with the
//! watched incarnation's exit reason when it ends.
//!
//! Layer: runtime (above logs, under everything else).
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

/// Whether a watched actor that ended with `reason` failed (a panic, a kill, a non-zero
/// exit), so that a permanent or transient supervisor is about to restart it at the same
/// path, rather than being shut down.
pub fn ended_by_failure(reason: &ExitReason) -> bool {
    match reason {
        ExitReason::Panic { .. } | ExitReason::Killed { .. } => true,
        ExitReason::Exit { code, .. } => *code != 0,
        _ => false,
    }
}

/// Waits, at most `bound` on the cluster clock, for a new incarnation at `path` after the
/// watched one failed; gives up at once when `path`'s parent (its supervisor) is gone, or,
/// for an actor of another process, when that process is ([`back_at_remote`]). Answers
/// whether one is running (the caller then watches it again).
pub async fn back_at(cluster: &super::Cluster, path: &ActorPath, bound: std::time::Duration) -> bool {
    if let Some(link) = cluster.remote_link(path) {
        return back_at_remote(cluster, link, path, bound).await;
    }
    let clock = cluster.clock().clone();
    let deadline = clock.now() + bound;
    let parent = path.parent();
    loop {
        if cluster.registry().contains(path) {
            return true;
        }
        let parent_alive = parent.as_ref().is_some_and(|p| cluster.registry().contains(p));
        if !parent_alive || clock.now() >= deadline {
            return false;
        }
        clock.sleep(std::time::Duration::from_millis(5)).await;
    }
}

/// [`back_at`] for an actor of another process: its process is asked to watch `path` for a
/// moment, every 5 ms, until it says an incarnation runs there ("still runs") or `bound`
/// passes; nothing running yet (`NoProc`) or one that ended meanwhile waits on. A link that
/// fails (that process is gone, and the path's supervisor with it) ends the wait at once.
async fn back_at_remote(
    cluster: &super::Cluster,
    link: std::sync::Arc<dyn super::remote::RemoteLink>,
    path: &ActorPath,
    bound: std::time::Duration,
) -> bool {
    use super::remote::{RemoteMessage, WATCH};
    let clock = cluster.clock().clone();
    let deadline = clock.now() + bound;
    loop {
        let probe = RemoteMessage {
            to: path.as_str().to_string(),
            from: None,
            protocol: WATCH.to_string(),
            message: "Watch".to_string(),
            body: Vec::new(),
            ask: Some(std::time::Duration::from_millis(1)),
            origin: cluster.origin().cloned(),
            hops: 0,
        };
        match link.send(probe).await {
            Err(still) if still.ends_with("still runs") => return true,
            Err(_) => return false,
            Ok(_) => {}
        }
        if clock.now() >= deadline {
            return false;
        }
        clock.sleep(std::time::Duration::from_millis(5)).await;
    }
}
