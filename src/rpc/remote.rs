//! Actors across processes: the TCP link behind a cluster's routes, and the server that
//! delivers what other processes send to this one's actors. Rpc layer: it carries the
//! runtime's [`RemoteMessage`]s over the generic transport of [`super::tcp`] and hands each
//! to the runtime ([`deliver`]); it knows no protocol of its own beyond that envelope.
//!
//! A process that hosts actors others address serves them ([`serve_actors`]); a process that
//! addresses them adds a route (`Cluster::add_route(prefix, TcpLink::new(addr))`), and its
//! `EndpointRef`s under that prefix then reach them by the same `tell` and `ask`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;

use super::tcp::{self, handler_fn, ClientConnection, LimitKeys, ServerLimits, WireProtocol};
use crate::runtime::remote::{deliver, RemoteLink, RemoteMessage, RemoteReply, ReplyFuture};
use crate::runtime::Cluster;

/// How long a tell waits for the other process to take it (an ask waits its own limit).
pub const TELL_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a link waits to connect and greet.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Idle connections a link keeps for its next messages.
const POOL: usize = 8;

/// Actor messages as the TCP transport carries them.
pub struct ActorWire;

impl WireProtocol for ActorWire {
    type Request = RemoteMessage;
    type Response = RemoteReply;
    const VERSION: u8 = 1;
    const SERVER: &'static str = "actor endpoint";
    const CONNECT_HINT: &'static str = "is the process serving these actors running?";
    const NAME: &'static str = "actor protocol";
    /// Spark's keys for the same limits (the network time-out, the largest RPC message).
    const LIMIT_KEYS: LimitKeys = LimitKeys {
        idle_timeout: "spark.network.timeout",
        max_frame: "spark.rpc.message.maxSize",
        max_buffered: "spark.rpc.message.maxSize",
    };

    fn request_name(_: &RemoteMessage) -> &'static str {
        "actor message"
    }

    fn failure(reason: String) -> RemoteReply {
        Err(reason)
    }
}

/// Serves `cluster`'s actors to other processes on `listener` until `stop` flips: every
/// message is delivered to the actor its path names, through the protocol it names. Runs
/// on the current thread (inside the actix system).
pub async fn serve_actors(
    cluster: Cluster,
    listener: TcpListener,
    stop: watch::Receiver<bool>,
    limits: ServerLimits,
) {
    let handler =
        handler_fn::<ActorWire, _, _>(move |message: RemoteMessage| deliver(cluster.registry(), message));
    tcp::serve_limited::<ActorWire>(listener, handler, stop, limits).await
}

/// A link to the process serving actors at `addr`: each message takes an idle connection
/// of its pool or opens one, so a slow ask does not hold up the others.
pub struct TcpLink {
    addr: String,
    idle: Arc<Mutex<Vec<ClientConnection<ActorWire>>>>,
}

impl TcpLink {
    pub fn new(addr: &str) -> Arc<TcpLink> {
        Arc::new(TcpLink {
            addr: addr.to_string(),
            idle: Arc::default(),
        })
    }
}

impl RemoteLink for TcpLink {
    fn send(&self, message: RemoteMessage) -> ReplyFuture {
        let (addr, idle) = (self.addr.clone(), self.idle.clone());
        Box::pin(async move {
            let limit = message.ask.unwrap_or(TELL_TIMEOUT);
            let pooled = idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
            let mut connection = match pooled {
                Some(c) => c,
                None => ClientConnection::<ActorWire>::connect(&addr, CONNECT_TIMEOUT)
                    .await
                    .map_err(|e| e.to_string())?,
            };
            let reply = connection.call(message, limit).await.map_err(|e| e.to_string())?;
            let mut idle = idle.lock().unwrap_or_else(|p| p.into_inner());
            if idle.len() < POOL {
                idle.push(connection);
            }
            reply
        })
    }

    fn peer(&self) -> String {
        self.addr.clone()
    }
}
