//! ClientRMService, at `/node/client-rm-service`: the ResourceManager's client port.
//!
//! It serves ApplicationClientProtocol over TCP at `yarn.resourcemanager.address` for
//! `sparkyard submit --master yarn` (and its `--status` and `--kill`): length-prefixed
//! rmp-serde frames, a bounded writer per connection, each request forwarded to the
//! ResourceManager (see [`crate::rpc::tcp`] and [`super::client_service`]). The same port
//! serves sparkyard's admin calls (`sparkyard actors`, `sparkyard chaos`) with the node's
//! cluster: its registry and its fault injection. A malformed,
//! truncated or oversized frame closes that connection with a logged reason; the node goes
//! on. The port is bounded by `yarn.sparkyard.client-port.*` ([`client_port_limits`]): the
//! connections it holds, how long one may idle, the largest request frame and the bytes of
//! frames in progress across all connections, so no client can make the node's memory or
//! descriptors grow without bound. The listening socket is bound once by the node and handed
//! to each incarnation, so a restarted service listens on the same address.

use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, AsyncContext, Context, WrapFuture};
use tokio::sync::watch;

use super::client_service;
use super::protocol::{AdminRequest, ClientRequest, ClientResponse};
use super::resource_manager::ResourceManager;
use crate::conf::{self, SparkConf};
use crate::logs::ctx::in_scope;
use crate::rpc::tcp::{serve_limited, RequestHandler, ServerLimits, SMALL_FRAME_BYTES};
use crate::rpc::EndpointRef;
use crate::runtime::{ActorPath, ExitReason, Me};

/// How long one client call may wait for the ResourceManager.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// The client port's bounds from `yarn.sparkyard.client-port.*`, checked together: a
/// frame the buffer budget cannot hold could never be read.
pub fn client_port_limits(conf: &SparkConf) -> Result<ServerLimits, String> {
    let get_size = |entry: &conf::SizeEntry| {
        conf.get(entry)
            .map_err(|e| e.to_string())
            .map(|b| usize::try_from(b).unwrap_or(usize::MAX))
    };
    let max_connections = conf
        .get(&conf::CLIENT_PORT_MAX_CONNECTIONS)
        .map_err(|e| e.to_string())?;
    let idle_timeout = conf
        .get(&conf::CLIENT_PORT_IDLE_TIMEOUT)
        .map_err(|e| e.to_string())?;
    let max_frame = get_size(&conf::CLIENT_PORT_MAX_FRAME_SIZE)?;
    let max_buffered = get_size(&conf::CLIENT_PORT_MAX_BUFFERED)?;
    if max_frame.saturating_add(4) > max_buffered.saturating_add(SMALL_FRAME_BYTES) {
        return Err(format!(
            "{} ({max_frame} bytes) must fit in {} ({max_buffered} bytes): a frame the client port cannot buffer could never be read",
            conf::CLIENT_PORT_MAX_FRAME_SIZE.name(),
            conf::CLIENT_PORT_MAX_BUFFERED.name()
        ));
    }
    Ok(ServerLimits {
        max_connections: max_connections as usize,
        idle_timeout,
        max_frame,
        max_buffered,
        ..ServerLimits::default()
    })
}

/// The ClientRMService actor; see the module docs.
pub struct ClientRmService {
    me: Me,
    listener: Arc<std::net::TcpListener>,
    rm: ActorPath,
    limits: ServerLimits,
    stop: Option<watch::Sender<bool>>,
}

impl ClientRmService {
    pub fn new(me: Me, listener: Arc<std::net::TcpListener>, rm: ActorPath, limits: ServerLimits) -> Self {
        ClientRmService {
            me,
            listener,
            rm,
            limits,
            stop: None,
        }
    }
}

impl Actor for ClientRmService {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let listener = self
            .listener
            .try_clone()
            .and_then(|l| l.set_nonblocking(true).map(|_| l))
            .and_then(tokio::net::TcpListener::from_std);
        let listener = match listener {
            Ok(l) => l,
            Err(e) => {
                let me = self.me.clone();
                me.exit(
                    ctx,
                    ExitReason::Exit {
                        code: 1,
                        message: format!("cannot listen: {e}"),
                    },
                );
                return;
            }
        };
        let addr = listener.local_addr().map(|a| a.to_string()).unwrap_or_default();
        let limits = self.limits;
        tracing::info!(
            address = addr.as_str(),
            max_connections = limits.max_connections,
            idle_timeout_ms = limits.idle_timeout.as_millis() as u64,
            max_frame = limits.max_frame,
            max_buffered = limits.max_buffered,
            "ClientRMService listening on {addr} (at most {} connections, idle {}, frames up to {} bytes)",
            limits.max_connections,
            humantime::format_duration(limits.idle_timeout),
            limits.max_frame
        );
        let rm: EndpointRef<ResourceManager> = self.me.endpoint(&self.rm);
        let me = self.me.clone();
        let handler: RequestHandler = Rc::new(move |request| {
            let (rm, me) = (rm.clone(), me.clone());
            Box::pin(async move {
                match request {
                    ClientRequest::Admin(admin) => {
                        if !matches!(admin, AdminRequest::ListActors { .. }) {
                            in_scope(me.log_ctx(), || {
                                tracing::info!(msg_type = admin.name(), "admin call: {admin:?}")
                            });
                        }
                        if admin.is_rm_admin() {
                            ClientResponse::Admin(
                                client_service::serve_rm_admin(&rm, admin, CALL_TIMEOUT).await,
                            )
                        } else {
                            ClientResponse::Admin(client_service::serve_admin(me.cluster(), admin))
                        }
                    }
                    other => client_service::serve(&rm, other, CALL_TIMEOUT).await,
                }
            })
        });
        let (tx, rx) = watch::channel(false);
        self.stop = Some(tx);
        ctx.spawn(serve_limited(listener, handler, rx, limits).into_actor(self));
    }

    fn stopped(&mut self, _: &mut Context<Self>) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(true);
        }
    }
}
