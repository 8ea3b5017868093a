//! ClientRMService, at `/node/client-rm-service`: the ResourceManager's client port.
//!
//! Layer: yarn (above rpc; knows nothing of Spark).
//!
//! It serves ApplicationClientProtocol over TCP at `yarn.resourcemanager.address` for
//! `sparkyard submit --master yarn` (and its `--status` and `--kill`): length-prefixed
//! rmp-serde frames, a bounded writer per connection, each request forwarded to the
//! ResourceManager (the generic transport of [`crate::rpc::tcp`] carrying
//! [`super::protocol::ClientProtocol`], and [`super::client_service`]). The same port
//! serves sparkyard's admin calls (`sparkyard actors`, `sparkyard chaos`) with the node's
//! cluster: its registry and its fault injection. A malformed,
//! truncated or oversized frame closes that connection with a logged reason; the node goes
//! on. The port is bounded by `yarn.sparkyard.client-port.*` ([`client_port_limits`]): the
//! connections it holds, how long one may idle, the largest request frame and the bytes of
//! frames in progress across all connections, so no client can make the node's memory or
//! descriptors grow without bound. The listening socket is bound once by the node and handed
//! to each incarnation, so a restarted service listens on the same address.

use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, AsyncContext, Context, WrapFuture};
use tokio::sync::watch;

use super::acls::{audit_failure, AclsManager};
use super::client_service;
use super::protocol::{
    AdminRequest, AdminResponse, ClientCall, ClientProtocol, ClientRequest, ClientResponse,
};
use crate::conf::{self, SparkConf};
use crate::logs::ctx::in_scope;
use crate::rpc::tcp::{serve_secured, RequestHandler, ServerLimits, SMALL_FRAME_BYTES};
use crate::rpc::EndpointRef;
use crate::runtime::{ActorPath, ExitReason, Me};
use crate::yarn::protocol::ApplicationClientProtocol;

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
    acls: Arc<AclsManager>,
    stop: Option<watch::Sender<bool>>,
    /// The secrets a client must prove (an open keyring: anyone).
    keyring: Arc<crate::rpc::auth::Keyring>,
}

impl ClientRmService {
    pub fn new(me: Me, listener: Arc<std::net::TcpListener>, rm: ActorPath, limits: ServerLimits) -> Self {
        ClientRmService {
            me,
            listener,
            rm,
            limits,
            acls: Arc::new(AclsManager::default()),
            stop: None,
            keyring: crate::rpc::auth::Keyring::open(),
        }
    }

    /// The port proves and asks for the node's secret (`spark.authenticate`): only holders of
    /// the node's secret (its clients and daemons) connect, never an application's container.
    pub fn secured(mut self, keyring: Arc<crate::rpc::auth::Keyring>) -> Self {
        self.keyring = keyring.accepting(crate::rpc::auth::AcceptApps::NoApps);
        self
    }

    /// Who may do what on this port (default: ACLs off).
    pub fn acls(mut self, acls: Arc<AclsManager>) -> Self {
        self.acls = acls;
        self
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
        let rm: EndpointRef<ApplicationClientProtocol> = self.me.endpoint(&self.rm);
        let me = self.me.clone();
        let acls = self.acls.clone();
        tracing::info!(
            acls_enabled = acls.enabled(),
            "ClientRMService ACLs {}",
            if acls.enabled() {
                "enabled (yarn.acl.enable)"
            } else {
                "disabled"
            }
        );
        let handler = RequestHandler::<ClientProtocol>::new(move |call| {
            let (rm, me, acls) = (rm.clone(), me.clone(), acls.clone());
            Box::pin(async move {
                let ClientCall { caller, request } = call;
                let peer = crate::rpc::tcp::request_peer();
                if let Err(why) = acls.authorize_proxy(&caller, peer.map(|p| p.ip())) {
                    in_scope(me.log_ctx(), || {
                        audit_failure(
                            caller.real_user.as_deref().unwrap_or(&caller.user),
                            request.name(),
                            "ClientRMService",
                            &why,
                            None,
                        )
                    });
                    return ClientResponse::Denied(why);
                }
                match request {
                    ClientRequest::Admin(admin) if !acls.is_admin(&caller.user) => {
                        let why = AclsManager::admin_refusal(&caller.user, admin.name());
                        in_scope(me.log_ctx(), || {
                            audit_failure(
                                &caller.user,
                                admin.name(),
                                if admin.is_rm_admin() {
                                    "AdminService"
                                } else {
                                    "ClientRMService"
                                },
                                &why,
                                None,
                            )
                        });
                        ClientResponse::Admin(AdminResponse::Refused(why))
                    }
                    ClientRequest::Admin(admin) => {
                        if !matches!(admin, AdminRequest::ListActors { .. }) {
                            in_scope(me.log_ctx(), || {
                                tracing::info!(msg_type = admin.name(), "admin call: {admin:?}")
                            });
                        }
                        if admin.is_rm_admin() {
                            ClientResponse::Admin(
                                client_service::serve_rm_admin(&rm.speaking(), admin, CALL_TIMEOUT).await,
                            )
                        } else {
                            ClientResponse::Admin(client_service::serve_admin(me.cluster(), admin).await)
                        }
                    }
                    other => {
                        let call = ClientCall::new(caller, other);
                        crate::logs::ctx::Instrumented::new(
                            client_service::serve(&rm, call, &acls, CALL_TIMEOUT),
                            me.log_ctx().clone(),
                        )
                        .await
                    }
                }
            })
        });
        let (tx, rx) = watch::channel(false);
        self.stop = Some(tx);
        // The port's records (a refused connection) carry this actor's path and node.
        let serving = crate::logs::ctx::Instrumented::new(
            serve_secured(listener, handler, rx, limits, self.keyring.clone()),
            self.me.log_ctx().clone(),
        );
        ctx.spawn(serving.into_actor(self));
    }

    fn stopped(&mut self, _: &mut Context<Self>) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(true);
        }
    }
}

crate::speaks!(ClientRmService);

#[cfg(test)]
mod tests {
    //! The transport with YARN's client protocol plugged in: how its errors name the
    //! ResourceManager and its calls, and how its records name the port's
    //! `yarn.sparkyard.client-port.*` keys.

    use std::net::SocketAddr;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    use super::*;
    use crate::rpc::tcp::testkit::*;
    use crate::rpc::tcp::{
        encode_frame, handler_fn, read_frame, RequestFrame, ResponseFrame, TransportError, WireProtocol,
        DEFAULT_MAX_REQUEST_FRAME, MAX_FRAME_BYTES,
    };
    use crate::yarn::protocol::{
        ClientConnection, GetClusterNodes, GetContainerOutput, GetNewApplication, KillApplication,
        NewApplication, YarnError,
    };
    use crate::yarn::records::{ApplicationAttemptId, ApplicationId, ContainerId, NodeReport, Resource};

    type P = ClientProtocol;

    // ---- fixtures

    fn node(host: &str) -> NodeReport {
        NodeReport {
            host: host.to_string(),
            rack: "/default-rack".to_string(),
            capability: Resource::new(8192, 8),
            used: Resource::new(1024, 1),
            num_containers: 1,
            state: Default::default(),
        }
    }

    fn app(id: u32) -> ApplicationId {
        ApplicationId {
            cluster_timestamp: 1_700_000_000_000,
            id,
        }
    }

    fn container(id: u64) -> ContainerId {
        ContainerId {
            attempt: ApplicationAttemptId {
                app: app(1),
                attempt: 1,
            },
            id,
        }
    }

    fn call(request: ClientRequest) -> ClientCall {
        ClientCall::current(request)
    }

    fn output_request(id: u64) -> ClientRequest {
        ClientRequest::GetContainerOutput(GetContainerOutput {
            container_id: container(id),
        })
    }

    /// Answers cluster nodes and "application not found"; anything else fails.
    fn fixed_handler() -> RequestHandler<P> {
        handler_fn::<P, _, _>(|call: ClientCall| async move {
            match call.request {
                ClientRequest::GetClusterNodes(_) => {
                    ClientResponse::ClusterNodes(vec![node("n1"), node("n2")])
                }
                ClientRequest::GetApplicationReport(r) => {
                    ClientResponse::ApplicationReport(Err(YarnError::ApplicationNotFound(r.app_id)))
                }
                other => ClientResponse::Failed(format!("unexpected {}", other.name())),
            }
        })
    }

    /// A fresh client still gets answers.
    async fn assert_serving(addr: SocketAddr) {
        let mut client = ClientConnection::connect(&addr.to_string(), WAIT).await.unwrap();
        let response = client
            .call(call(ClientRequest::GetClusterNodes(GetClusterNodes)), WAIT)
            .await
            .unwrap();
        assert_eq!(
            response,
            ClientResponse::ClusterNodes(vec![node("n1"), node("n2")])
        );
    }

    // ---- the port's bounds, named by their keys

    #[actix_rt::test]
    async fn an_oversized_length_prefix_closes_the_connection_with_its_reason() {
        let capture = Capture::default();
        let _guard = tracing::subscriber::set_default(capture.clone());
        let server = start(fixed_handler(), ServerLimits::default()).await;

        let max = DEFAULT_MAX_REQUEST_FRAME;
        let mut stream = raw_connect::<P>(server.addr).await;
        stream.write_all(&(max as u32 + 1).to_be_bytes()).await.unwrap();
        expect_closed(&mut stream).await;
        capture
            .closed_warning(&format!(
                "a frame of {} bytes is over the limit of {max} bytes (yarn.sparkyard.client-port.max-frame-size)",
                max + 1
            ))
            .await;

        assert_serving(server.addr).await;
        server.stop.send_replace(true);
    }

    #[actix_rt::test]
    async fn an_answer_over_the_frame_limit_becomes_a_failure() {
        let handler =
            handler_fn::<P, _, _>(|_| async { ClientResponse::ContainerOutput(Ok("x".repeat(500))) });
        let limits = ServerLimits {
            max_answer: 200,
            ..ServerLimits::default()
        };
        let server = start(handler, limits).await;
        let mut client = ClientConnection::connect(&server.addr.to_string(), WAIT)
            .await
            .unwrap();
        match client.call(call(output_request(1)), WAIT).await.unwrap() {
            ClientResponse::Failed(text) => assert!(
                text.starts_with("the answer to GetContainerOutput cannot be sent: a frame of "),
                "{text}"
            ),
            other => panic!("expected Failed, got {other:?}"),
        }
        server.stop.send_replace(true);
    }

    #[actix_rt::test]
    async fn large_frames_in_progress_share_one_bounded_budget() {
        let capture = Capture::default();
        let _guard = tracing::subscriber::set_default(capture.clone());
        let limits = ServerLimits {
            max_frame: 1 << 20,
            max_buffered: 1 << 20,
            idle_timeout: Duration::from_millis(300),
            ..ServerLimits::default()
        };
        let server = start(fixed_handler(), limits).await;
        // Two senders of 600 KiB frames that stall: only one fits in the budget.
        let mut senders = Vec::new();
        for _ in 0..2 {
            let mut s = raw_connect::<P>(server.addr).await;
            s.write_all(&(600u32 << 10).to_be_bytes()).await.unwrap();
            s.write_all(&[0; 100]).await.unwrap();
            senders.push(s);
        }
        for s in &mut senders {
            expect_closed(s).await;
        }
        capture
            .closed_warning("does not fit: frames in progress on this port hold 614404 of the 1048576 bytes it buffers (yarn.sparkyard.client-port.max-buffered-bytes)")
            .await;
        capture
            .closed_warning("a frame did not arrive within 300ms")
            .await;

        // The budget is back: a frame as large goes through whole.
        let mut whole = raw_connect::<P>(server.addr).await;
        let request = RequestFrame {
            id: 7,
            request: call(ClientRequest::KillApplication(KillApplication {
                app_id: app(1),
                diagnostics: "x".repeat(600 << 10),
            })),
        };
        whole.write_all(&encode_frame(&request).unwrap()).await.unwrap();
        assert_eq!(read_response::<ClientResponse>(&mut whole).await.id, 7);
        server.stop.send_replace(true);
    }

    // ---- the client, naming the ResourceManager

    #[actix_rt::test]
    async fn the_client_refuses_a_server_that_does_not_greet_as_sparkyard() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let fake = actix_rt::spawn(async move {
            // The first client gets an HTTP answer, the second silence.
            let (mut first, _) = listener.accept().await.unwrap();
            first
                .write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n")
                .await
                .unwrap();
            let (_second, _) = listener.accept().await.unwrap();
            std::future::pending::<()>().await;
        });
        let err = ClientConnection::connect(&addr, WAIT).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "cannot talk to the ResourceManager at {addr}: it is not a sparkyard ResourceManager (it sent \"HTTP/\")"
            )
        );
        let err = ClientConnection::connect(&addr, Duration::from_millis(200))
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("cannot talk to the ResourceManager at {addr}: no greeting within 200ms")
        );
        fake.abort();
    }

    #[actix_rt::test]
    async fn connecting_to_a_closed_port_names_the_address() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        drop(listener);
        let err = ClientConnection::connect(&addr, WAIT).await.unwrap_err();
        assert!(matches!(err, TransportError::Connect { .. }), "{err:?}");
        assert_eq!(
            err.to_string(),
            format!(
                "cannot connect to the ResourceManager at {addr}: Connection refused (is 'sparkyard node' running?)"
            )
        );
        assert!(std::error::Error::source(&err).is_some());
    }

    #[actix_rt::test]
    async fn a_call_without_an_answer_times_out_and_its_late_answer_is_skipped() {
        let (handler, mut arrivals) = controlled_handler::<P>();
        let server = start(handler, ServerLimits::default()).await;
        let addr = server.addr.to_string();
        let mut client = ClientConnection::connect(&addr, WAIT).await.unwrap();

        let err = client
            .call(
                call(ClientRequest::GetNewApplication(GetNewApplication)),
                Duration::from_millis(200),
            )
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("no answer from the ResourceManager at {addr} to GetNewApplication within 200ms")
        );

        // The late answer arrives; the next call skips it and gets its own.
        let (_, late) = within("the first request", arrivals.recv()).await.unwrap();
        late.send(ClientResponse::NewApplication(Ok(NewApplication {
            app_id: app(1),
            maximum_capability: Resource::new(8192, 4),
            num_node_managers: 2,
        })))
        .unwrap();
        let (response, ()) = tokio::join!(
            client.call(call(ClientRequest::GetClusterNodes(GetClusterNodes)), WAIT),
            async {
                let (request, answer) = within("the second request", arrivals.recv()).await.unwrap();
                assert_eq!(request.request, ClientRequest::GetClusterNodes(GetClusterNodes));
                answer
                    .send(ClientResponse::ClusterNodes(vec![node("n1")]))
                    .unwrap();
            }
        );
        assert_eq!(response.unwrap(), ClientResponse::ClusterNodes(vec![node("n1")]));
        server.stop.send_replace(true);
    }

    #[actix_rt::test]
    async fn an_unexpected_id_or_a_close_fails_the_call_and_the_connection() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let fake = actix_rt::spawn(async move {
            // Answers the first request with a future id, then hangs up on the second client.
            let (mut first, _) = listener.accept().await.unwrap();
            first.write_all(&P::GREETING).await.unwrap();
            let mut greeting = [0u8; 5];
            first.read_exact(&mut greeting).await.unwrap();
            let _: Option<crate::rpc::auth::Handshake> = read_frame(&mut first, 4096).await.unwrap();
            first.write_all(&crate::rpc::auth::plain_answer()).await.unwrap();
            let request: RequestFrame<ClientCall> =
                read_frame(&mut first, MAX_FRAME_BYTES).await.unwrap().unwrap();
            let wrong = ResponseFrame {
                id: request.id + 5,
                response: ClientResponse::ClusterNodes(Vec::new()),
            };
            first.write_all(&encode_frame(&wrong).unwrap()).await.unwrap();
            let (mut second, _) = listener.accept().await.unwrap();
            second.write_all(&P::GREETING).await.unwrap();
            second.read_exact(&mut greeting).await.unwrap();
            let _: Option<crate::rpc::auth::Handshake> = read_frame(&mut second, 4096).await.unwrap();
            second.write_all(&crate::rpc::auth::plain_answer()).await.unwrap();
            let _: Option<RequestFrame<ClientCall>> = read_frame(&mut second, MAX_FRAME_BYTES).await.unwrap();
            drop(second);
            std::future::pending::<()>().await;
        });

        let mut client = ClientConnection::connect(&addr, WAIT).await.unwrap();
        let err = client
            .call(call(ClientRequest::GetClusterNodes(GetClusterNodes)), WAIT)
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("the ResourceManager at {addr} answered request 6 while request 1 was pending")
        );
        let err = client
            .call(call(ClientRequest::GetClusterNodes(GetClusterNodes)), WAIT)
            .await
            .unwrap_err();
        assert!(matches!(err, TransportError::Unusable { .. }), "{err:?}");

        let mut client = ClientConnection::connect(&addr, WAIT).await.unwrap();
        let err = client
            .call(call(ClientRequest::GetClusterNodes(GetClusterNodes)), WAIT)
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("the ResourceManager at {addr} closed the connection")
        );
        fake.abort();
    }

    #[test]
    fn the_client_protocol_greets_with_version_5() {
        assert_eq!(P::GREETING, [b'S', b'P', b'K', b'Y', 5]);
    }
}
