//! ClientRMService, at `/node/client-rm-service`: the ResourceManager's client port.
//!
//! It serves ApplicationClientProtocol over TCP at `yarn.resourcemanager.address` for
//! `sparkyard submit --master yarn` (and its `--status` and `--kill`): length-prefixed
//! rmp-serde frames, a bounded writer per connection, each request forwarded to the
//! ResourceManager (see [`crate::rpc::tcp`] and [`super::client_service`]). The same port
//! serves sparkyard's admin calls (`sparkyard actors`, `sparkyard chaos`) with the node's
//! cluster: its registry and its fault injection. A malformed,
//! truncated or oversized frame closes that connection with a logged reason; the node goes
//! on. The listening socket is bound once by the node and handed to each incarnation, so a
//! restarted service listens on the same address.

use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, AsyncContext, Context, WrapFuture};
use tokio::sync::watch;

use super::client_service;
use super::protocol::{AdminRequest, ClientRequest, ClientResponse};
use super::resource_manager::ResourceManager;
use crate::logs::ctx::in_scope;
use crate::rpc::tcp::{serve, RequestHandler};
use crate::rpc::EndpointRef;
use crate::runtime::{ActorPath, ExitReason, Me};

/// How long one client call may wait for the ResourceManager.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// The ClientRMService actor; see the module docs.
pub struct ClientRmService {
    me: Me,
    listener: Arc<std::net::TcpListener>,
    rm: ActorPath,
    stop: Option<watch::Sender<bool>>,
}

impl ClientRmService {
    pub fn new(me: Me, listener: Arc<std::net::TcpListener>, rm: ActorPath) -> Self {
        ClientRmService {
            me,
            listener,
            rm,
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
        tracing::info!(address = addr.as_str(), "ClientRMService listening on {addr}");
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
                        ClientResponse::Admin(client_service::serve_admin(me.cluster(), admin))
                    }
                    other => client_service::serve(&rm, other, CALL_TIMEOUT).await,
                }
            })
        });
        let (tx, rx) = watch::channel(false);
        self.stop = Some(tx);
        ctx.spawn(serve(listener, handler, rx).into_actor(self));
    }

    fn stopped(&mut self, _: &mut Context<Self>) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(true);
        }
    }
}
