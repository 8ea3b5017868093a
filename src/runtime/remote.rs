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
//!
//! A process that serves its actors says so ([`Cluster::serve_at`](super::Cluster::serve_at)):
//! the prefix it holds (its *root*: `/node`, a container's path, `/submit`) and the address
//! other processes reach it at. Each message it sends carries that [`Origin`], and a process
//! that receives one learns a route to it, so after the first message two processes talk
//! directly even when the first went through a hub. A process forwards a message for a path
//! it does not hold to the route that covers it (a node forwards to its containers, a
//! container to its node), never back under its own root, and at most [`MAX_HOPS`] times.
//!
//! Death watch crosses too: watching an actor of another process is an ask ([`WATCH`]) that
//! the other process answers when that actor ends; a link that breaks (the process died)
//! ends the watch with the process's loss, as Spark's RPC layer reports a disconnect.
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::exit::ExitReason;
use super::path::ActorPath;
use super::Cluster;

/// How many processes a message may pass through before it is refused (a node, then a
/// NodeManager, then the container: a route loop cannot spin).
pub const MAX_HOPS: u8 = 4;

/// The protocol name of a remote death watch: an ask to the process of the watched actor,
/// answered with its [`WatchEnded`] when it ends.
pub const WATCH: &str = "sparkyard.watch";

/// The process a message comes from: it serves the paths under `root` at `addr`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Origin {
    pub root: String,
    pub addr: String,
}

/// How a remotely watched incarnation ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WatchEnded {
    pub incarnation: u64,
    pub reason: ExitReason,
}

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
    /// How long the sender waits for the reply; `None` for a tell (no reply is sent back).
    pub ask: Option<Duration>,
    /// The process that sent it, so the receiver can answer it directly next time.
    #[serde(default)]
    pub origin: Option<Origin>,
    /// How many processes forwarded it so far.
    #[serde(default)]
    pub hops: u8,
}

/// The answer to a [`RemoteMessage`]: the encoded reply (empty for a tell), or why it was
/// not delivered or not answered, in one line.
pub type RemoteReply = Result<Vec<u8>, String>;

/// A future of a [`RemoteReply`] that a link or a dispatch returns.
pub type ReplyFuture = Pin<Box<dyn Future<Output = RemoteReply> + Send>>;

/// A link to another process. Implemented by the transport (`rpc::remote::TcpLink`).
/// Messages sent over one link arrive in the order they were sent, as Spark's do between
/// two endpoints.
pub trait RemoteLink: Send + Sync + 'static {
    /// Sends the ask `message`; the future resolves to the reply, or to why there is none,
    /// within the message's own time limit.
    fn send(&self, message: RemoteMessage) -> ReplyFuture;
    /// Sends the tell `message` without waiting; an error says the link is known to be
    /// broken (a message lost on the way is not seen by its sender, as on a network).
    fn tell(&self, message: RemoteMessage) -> Result<(), String>;
    /// [`tell`](Self::tell), left unwritten until this thread's next send on the link or
    /// its next [`flush_deferred`](super::deferred::flush_deferred) (see
    /// [`super::deferred`]). A link that writes nothing later sends at once.
    fn tell_deferred(&self, message: RemoteMessage) -> Result<(), String> {
        self.tell(message)
    }
    /// The other end, as errors name it (`127.0.0.1:7077`).
    fn peer(&self) -> String;
    /// Whether everything sent over it has been written out (or can no longer be): a
    /// process that is about to exit waits for this, as a JVM's RPC layer drains its outbox.
    fn written(&self) -> bool {
        true
    }
    /// Connects now rather than at the first message, so the other process learns this one
    /// at once (a container process announces itself to its node).
    fn open(&self) {}
}

/// A service of a whole process (not of one actor), reached by its protocol name with the
/// process's root as the target: what `sparkyard actors` and `sparkyard chaos` ask of every
/// process of a node.
pub type Service = Arc<dyn Fn(RemoteMessage) -> ReplyFuture + Send + Sync>;

/// Makes a link to the process at an address (the transport's, handed to
/// [`Cluster::serve_at`](super::Cluster::serve_at)).
/// Its arguments: the address, and the root of the paths the link will carry (a transport
/// that authenticates offers the secret that root's process accepts).
pub type Connect = Arc<dyn Fn(&str, &ActorPath) -> Arc<dyn RemoteLink> + Send + Sync>;

/// What this process serves and how it reaches others by address.
pub(crate) struct Serving {
    pub(crate) origin: Origin,
    pub(crate) root: ActorPath,
    pub(crate) connect: Connect,
}

/// A cluster's routes: path prefixes served by other processes.
#[derive(Default)]
pub(crate) struct Routes(std::sync::RwLock<Vec<Route>>);

/// One route: a prefix, the link, the address the link reaches (when known), and whether
/// it was learned from a message (and is forgotten when nothing listens there any more)
/// rather than configured.
struct Route {
    prefix: ActorPath,
    link: Arc<dyn RemoteLink>,
    addr: Option<String>,
    learned: bool,
}

impl Routes {
    pub(crate) fn add(
        &self,
        prefix: ActorPath,
        link: Arc<dyn RemoteLink>,
        addr: Option<String>,
        learned: bool,
    ) {
        let mut routes = self.0.write().unwrap_or_else(|p| p.into_inner());
        routes.retain(|r| r.prefix != prefix);
        routes.push(Route {
            prefix,
            link,
            addr,
            learned,
        });
    }

    /// Whether `prefix` is routed to `addr` already.
    pub(crate) fn has(&self, prefix: &ActorPath, addr: &str) -> bool {
        let routes = self.0.read().unwrap_or_else(|p| p.into_inner());
        routes
            .iter()
            .any(|r| r.prefix == *prefix && r.addr.as_deref() == Some(addr))
    }

    /// The link of a route to `addr`, if any (one connection per process it reaches).
    pub(crate) fn link_to(&self, addr: &str) -> Option<Arc<dyn RemoteLink>> {
        let routes = self.0.read().unwrap_or_else(|p| p.into_inner());
        routes
            .iter()
            .find(|r| r.addr.as_deref() == Some(addr))
            .map(|r| r.link.clone())
    }

    /// Drops the routes learned to `addr`; answers their prefixes.
    pub(crate) fn forget_addr(&self, addr: &str) -> Vec<ActorPath> {
        let mut routes = self.0.write().unwrap_or_else(|p| p.into_inner());
        let gone: Vec<ActorPath> = routes
            .iter()
            .filter(|r| r.learned && r.addr.as_deref() == Some(addr))
            .map(|r| r.prefix.clone())
            .collect();
        routes.retain(|r| !(r.learned && r.addr.as_deref() == Some(addr)));
        gone
    }

    /// Drops the route of `prefix` if it has an address (a learned one); whether it did.
    pub(crate) fn forget_prefix(&self, prefix: &ActorPath) -> bool {
        let mut routes = self.0.write().unwrap_or_else(|p| p.into_inner());
        let before = routes.len();
        routes.retain(|r| !(r.prefix == *prefix && r.learned));
        routes.len() != before
    }

    /// Every route's link.
    pub(crate) fn links(&self) -> Vec<Arc<dyn RemoteLink>> {
        let routes = self.0.read().unwrap_or_else(|p| p.into_inner());
        routes.iter().map(|r| r.link.clone()).collect()
    }

    /// The learned routes whose prefix lies strictly under `root`.
    pub(crate) fn learned_under(&self, root: &ActorPath) -> Vec<(ActorPath, Arc<dyn RemoteLink>)> {
        let routes = self.0.read().unwrap_or_else(|p| p.into_inner());
        routes
            .iter()
            .filter(|r| r.learned && root.is_ancestor_of(&r.prefix))
            .map(|r| (r.prefix.clone(), r.link.clone()))
            .collect()
    }

    /// The address of the longest route `path` lies under, when that route names one.
    pub(crate) fn addr_for(&self, path: &ActorPath) -> Option<String> {
        let routes = self.0.read().unwrap_or_else(|p| p.into_inner());
        routes
            .iter()
            .filter(|r| r.prefix == *path || r.prefix.is_ancestor_of(path))
            .max_by_key(|r| r.prefix.as_str().len())
            .and_then(|r| r.addr.clone())
    }

    /// The link of the longest route prefix `path` lies under. Under `own` (the root this
    /// process serves) only a route more specific than `own` counts: what this process
    /// should hold and does not is not sent back where it came from.
    pub(crate) fn link_for(&self, path: &ActorPath, own: Option<&ActorPath>) -> Option<Arc<dyn RemoteLink>> {
        let floor = own
            .filter(|own| *own == path || own.is_ancestor_of(path))
            .map(|own| own.as_str().len());
        let routes = self.0.read().unwrap_or_else(|p| p.into_inner());
        routes
            .iter()
            .filter(|r| r.prefix == *path || r.prefix.is_ancestor_of(path))
            .filter(|r| floor.is_none_or(|f| r.prefix.as_str().len() > f))
            .max_by_key(|r| r.prefix.as_str().len())
            .map(|r| r.link.clone())
    }
}

/// Delivers a message received from another process to the local actor it names: decodes it
/// as the protocol's message and sends or asks it; a message for a path another process
/// holds is forwarded over the route that covers it. The answer is the encoded reply (empty
/// for a tell), or one line naming what failed (no such actor, a protocol it does not speak
/// or that cannot cross, an undecodable body, no answer in time). The sender's origin is
/// learned as a route first.
pub fn deliver(cluster: &Cluster, mut message: RemoteMessage) -> ReplyFuture {
    if let Some(origin) = &message.origin {
        cluster.learn_route(origin);
    }
    let path = match ActorPath::parse(&message.to) {
        Ok(p) => p,
        Err(e) => return Box::pin(async move { Err(format!("bad target path: {e}")) }),
    };
    if message.protocol == WATCH {
        return watch_local(cluster, path, message);
    }
    // A process service is addressed to the process's root; actor messages (nearly all)
    // skip the service lookup.
    if cluster.is_own_root(&path) {
        if let Some(service) = cluster.service(&message.protocol) {
            return service(message);
        }
    }
    if let Some(link) = cluster.remote_link(&path) {
        if message.hops >= MAX_HOPS {
            let hops = message.hops;
            return Box::pin(async move {
                Err(format!(
                    "{path} was not reached after {hops} processes forwarded the message (a route loop?)"
                ))
            });
        }
        message.hops += 1;
        return match message.ask {
            Some(_) => link.send(message),
            None => {
                let sent = link.tell(message);
                Box::pin(async move { sent.map(|()| Vec::new()) })
            }
        };
    }
    match cluster.registry().dispatch(&path, &message) {
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

/// A remote watch of a local actor: answered with how its incarnation ended, within the
/// ask's limit (the watcher asks again when the limit passes first).
fn watch_local(cluster: &Cluster, path: ActorPath, message: RemoteMessage) -> ReplyFuture {
    let cluster = cluster.clone();
    let limit = message.ask.unwrap_or(Duration::ZERO);
    Box::pin(async move {
        let ended = match cluster.registry().incarnation(&path) {
            None => WatchEnded {
                incarnation: 0,
                reason: ExitReason::NoProc,
            },
            Some(incarnation) => match cluster.wait_ended(&path, limit).await {
                Some(reason) => WatchEnded { incarnation, reason },
                None if cluster.registry().incarnation(&path) == Some(incarnation) => {
                    return Err(format!("{path} still runs"))
                }
                None => WatchEnded {
                    incarnation,
                    reason: ExitReason::Aborted {
                        message: "ended".into(),
                    },
                },
            },
        };
        rmp_serde::to_vec(&ended).map_err(|e| format!("cannot encode the end of {path}: {e}"))
    })
}

/// The scheme of an actor URL: `sparkyard://HOST:PORT/path`, an actor of another process
/// with the address of that process's actor endpoint (Spark's `spark://Name@host:port`).
pub const URL_SCHEME: &str = "sparkyard://";

/// An actor's URL: its path alone when its process serves no actors (only local peers can
/// reach it), else the address of its process and its path.
pub fn actor_url(addr: Option<&str>, path: &ActorPath) -> String {
    match addr {
        Some(addr) => format!("{URL_SCHEME}{addr}{path}"),
        None => path.as_str().to_string(),
    }
}

/// Splits an actor URL (or a bare path) into the address of its process, if it names one,
/// and the actor's path; the error names what is wrong.
pub fn parse_actor_url(url: &str) -> Result<(Option<String>, ActorPath), String> {
    let Some(rest) = url.strip_prefix(URL_SCHEME) else {
        return ActorPath::parse(url).map(|p| (None, p)).map_err(|e| {
            format!("'{url}' is neither an actor path nor a {URL_SCHEME}HOST:PORT/path URL: {e}")
        });
    };
    let Some(slash) = rest.find('/') else {
        return Err(format!("'{url}' names no actor path after its address"));
    };
    let (addr, path) = rest.split_at(slash);
    let port_ok = addr
        .rsplit_once(':')
        .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
    if !port_ok {
        return Err(format!("'{url}': '{addr}' is not HOST:PORT"));
    }
    let path = ActorPath::parse(path).map_err(|e| format!("'{url}': {e}"))?;
    Ok((Some(addr.to_string()), path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actor_urls_round_trip_and_bad_ones_say_why() {
        let path = ActorPath::parse("/submit/driver/driver-endpoint").unwrap();
        let url = actor_url(Some("127.0.0.1:4040"), &path);
        assert_eq!(url, "sparkyard://127.0.0.1:4040/submit/driver/driver-endpoint");
        assert_eq!(
            parse_actor_url(&url),
            Ok((Some("127.0.0.1:4040".into()), path.clone()))
        );
        assert_eq!(parse_actor_url(path.as_str()), Ok((None, path.clone())));
        assert_eq!(actor_url(None, &path), path.as_str());
        assert!(parse_actor_url("sparkyard://h:1")
            .unwrap_err()
            .contains("names no actor path"));
        assert!(parse_actor_url("sparkyard://h/x")
            .unwrap_err()
            .contains("is not HOST:PORT"));
        assert!(parse_actor_url("sparkyard://h:99999/x")
            .unwrap_err()
            .contains("is not HOST:PORT"));
        assert!(parse_actor_url("spark://d:1")
            .unwrap_err()
            .contains("neither an actor path"));
    }
}
