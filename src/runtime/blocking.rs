//! Calling actors from plain threads.
//!
//! Layer: runtime (above logs, under everything else).
//!
//! The user's application code runs on its own thread (Spark's "Driver" thread), and task
//! bodies run on worker threads; neither is an actor, and neither may block an actor's
//! thread. [`block_on`] runs a future (an ask, usually) on the cluster's arbiter and waits
//! for its result on the calling thread, for at most a real-time bound, so nothing waits
//! forever even if the cluster stops underneath it.

use std::fmt;
use std::future::Future;
use std::sync::mpsc;
use std::time::Duration;

use super::cluster::Cluster;

/// Why a blocking call got no result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlockingError {
    /// No result within the bound.
    TimedOut(Duration),
    /// The cluster's arbiter stopped before the future completed.
    ClusterStopped,
    /// Called from a thread that runs actors: waiting there would stop them.
    OnActorThread,
}

impl fmt::Display for BlockingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BlockingError::TimedOut(d) => write!(f, "no answer within {}", humantime::format_duration(*d)),
            BlockingError::ClusterStopped => f.write_str("the cluster stopped before answering"),
            BlockingError::OnActorThread => {
                f.write_str("a blocking call was made on an actor's thread (use ask and await instead)")
            }
        }
    }
}

impl std::error::Error for BlockingError {}

/// Runs `fut` on the cluster's arbiter and waits up to `limit` of real time for its output.
pub fn block_on<T, F>(cluster: &Cluster, fut: F, limit: Duration) -> Result<T, BlockingError>
where
    T: Send + 'static,
    F: Future<Output = T> + Send + 'static,
{
    if tokio::runtime::Handle::try_current().is_ok() {
        return Err(BlockingError::OnActorThread);
    }
    let (tx, rx) = mpsc::sync_channel(1);
    cluster.spawn_task(async move {
        let _ = tx.send(fut.await);
    });
    match rx.recv_timeout(limit) {
        Ok(v) => Ok(v),
        Err(mpsc::RecvTimeoutError::Timeout) => Err(BlockingError::TimedOut(limit)),
        Err(mpsc::RecvTimeoutError::Disconnected) => Err(BlockingError::ClusterStopped),
    }
}
