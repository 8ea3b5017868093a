//! Remote delivery: how an [`EndpointRef`](super::endpoint::EndpointRef) reaches an actor of
//! another process by the same `tell` and `ask`. Runtime layer: it defines what a link to
//! another process must do ([`RemoteLink`]) and how a message received from one is delivered
//! ([`deliver`]); the transport that implements the link and serves the other end is the rpc
//! layer's (`rpc::remote`), so the runtime imports no transport.
//!
//! A cluster holds *routes*: a path prefix (`/node`) and the link to the process where the
//! actors under it live. A ref whose path is not in the local registry and lies under a
//! route goes over that route's link, as one [`RemoteMessage`]: the target's path, the
//! protocol's and the message's names, and the message encoded with rmp-serde. Only a
//! protocol declared `remote` (its messages and replies derive serde) can cross; any other
//! refuses at the call, naming the protocol.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::path::ActorPath;
use super::registry::Registry;

/// One message on its way to an actor of another process.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteMessage {
    /// The target's path in the other process.
    pub to: String,
    /// The sender's path, for the receiver's records.
    pub from: Option<String>,
    /// The protocol's name ([`Protocol::NAME`](super::protocol::Protocol::NAME)).
    pub protocol: String,
    /// The message's type name, as the protocol lists it.
    pub message: String,
    /// The message, rmp-serde encoded.
    #[serde(with = "serde_bytes")]
    pub body: Vec<u8>,
    /// How long the sender waits for the reply; `None` for a tell (no reply is sent back
    /// beyond the delivery's acknowledgement).
    pub ask: Option<Duration>,
}

/// The answer to a [`RemoteMessage`]: the encoded reply (empty for a tell), or why it was
/// not delivered or not answered, in one line.
pub type RemoteReply = Result<Vec<u8>, String>;

/// A future of a [`RemoteReply`] that a link or a dispatch returns.
pub type ReplyFuture = Pin<Box<dyn Future<Output = RemoteReply> + Send>>;

/// A link to another process: sends one message and resolves to its reply. Implemented by
/// the transport (`rpc::remote::TcpLink`).
pub trait RemoteLink: Send + Sync + 'static {
    /// Sends `message`; the future resolves to the reply, or to why there is none, within
    /// the message's own time limit (a tell's within the link's).
    fn send(&self, message: RemoteMessage) -> ReplyFuture;
    /// The other end, as errors name it (`127.0.0.1:7077`).
    fn peer(&self) -> String;
}

/// A cluster's routes: path prefixes served by other processes.
#[derive(Default)]
pub(crate) struct Routes(std::sync::RwLock<Vec<(ActorPath, Arc<dyn RemoteLink>)>>);

impl Routes {
    pub(crate) fn add(&self, prefix: ActorPath, link: Arc<dyn RemoteLink>) {
        let mut routes = self.0.write().unwrap_or_else(|p| p.into_inner());
        routes.retain(|(p, _)| *p != prefix);
        routes.push((prefix, link));
    }

    /// The link of the longest route prefix `path` lies under.
    pub(crate) fn link_for(&self, path: &ActorPath) -> Option<Arc<dyn RemoteLink>> {
        let routes = self.0.read().unwrap_or_else(|p| p.into_inner());
        routes
            .iter()
            .filter(|(prefix, _)| prefix == path || prefix.is_ancestor_of(path))
            .max_by_key(|(prefix, _)| prefix.as_str().len())
            .map(|(_, link)| link.clone())
    }
}

/// Delivers a message received from another process to the local actor it names: decodes it
/// as the protocol's message and sends or asks it. The answer is the encoded reply, or one
/// line naming what failed (no such actor, a protocol it does not speak or that cannot
/// cross, an undecodable body, no answer in time).
pub fn deliver(registry: &Registry, message: RemoteMessage) -> ReplyFuture {
    let path = match ActorPath::parse(&message.to) {
        Ok(p) => p,
        Err(e) => return Box::pin(async move { Err(format!("bad target path: {e}")) }),
    };
    match registry.dispatch(&path, &message) {
        Ok(Some(fut)) => fut,
        Ok(None) => {
            let protocol = message.protocol.clone();
            Box::pin(async move {
                Err(format!(
                    "{protocol} is local only: its messages cannot cross a process"
                ))
            })
        }
        Err(e) => Box::pin(async move { Err(e) }),
    }
}
