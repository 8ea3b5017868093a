//! RMWebApp, at `/node/webapp`: the ResourceManager's web application on
//! `yarn.resourcemanager.webapp.address`, serving YARN's REST API ([`rest`], RMWebServices'
//! `/ws/v1/cluster/...`) and the web UI ([`ui`]).
//!
//! Layer: yarn (above rpc; knows nothing of Spark).
//!
//! An actix-web server on the node's actix runtime, with one worker. Every page and call
//! asks the ResourceManager through its client protocol, as the client port does, under the
//! same ACLs ([`WebState`]). The listening socket is bound once by whoever starts the node
//! and handed to each incarnation, so a restarted web app serves the same address; the
//! server stops with the actor. The server's own records (a request refused, a handler's
//! decisions) carry this actor's path and node.

pub mod rest;
pub mod ui;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, ActorFutureExt, AsyncContext, Context, WrapFuture};

use super::acls::AclsManager;
use crate::logs::ctx::LogCtx;
use crate::rpc::EndpointRef;
use crate::runtime::{ActorPath, Cluster, ExitReason, Me};
use crate::yarn::protocol::ApplicationClientProtocol;

/// How long one web request may wait for the ResourceManager.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// Connections the web app holds at once; beyond them new ones wait in the kernel's backlog.
pub const MAX_CONNECTIONS: usize = 256;

/// What every handler of the web app shares.
pub struct WebState {
    /// The ResourceManager's client protocol: reports, lists, kills.
    pub rm: EndpointRef<ApplicationClientProtocol>,
    /// Who may view and modify which application (the client port's ACLs).
    pub acls: Arc<AclsManager>,
    /// The node's cluster: its live actors, for the supervision tree.
    pub cluster: Cluster,
    /// The node's log directory, where the applications' structured records are (the UI's
    /// timelines read them); `None` when the node logs to the console only.
    pub log_dir: Option<PathBuf>,
    /// `host:port` served, for links and tracking URLs.
    pub address: String,
    /// When the ResourceManager started (epoch ms): YARN's `clusterTimestamp`.
    pub started_ms: u64,
    /// The web app's log context, entered by every request.
    pub log_ctx: Arc<LogCtx>,
    /// The web UI's own state (its timeline readers).
    pub ui: ui::UiState,
}

/// The web app's address as a URL prefix: `http://host:port`.
pub fn base_url(address: &str) -> String {
    format!("http://{address}")
}

/// The tracking URL of `app` on the web app at `address`: its application page, which YARN's
/// RM gives once an application has no proxy to reach.
pub fn tracking_url(address: &str, app: &str) -> String {
    format!("{}/cluster/app/{app}", base_url(address))
}

/// The RMWebApp actor; see the module docs.
pub struct RmWebApp {
    me: Me,
    listener: Arc<std::net::TcpListener>,
    rm: ActorPath,
    acls: Arc<AclsManager>,
    log_dir: Option<PathBuf>,
    started_ms: u64,
    server: Option<actix_web::dev::ServerHandle>,
}

impl RmWebApp {
    pub fn new(me: Me, listener: Arc<std::net::TcpListener>, rm: ActorPath, started_ms: u64) -> Self {
        RmWebApp {
            me,
            listener,
            rm,
            acls: Arc::new(AclsManager::default()),
            log_dir: None,
            started_ms,
            server: None,
        }
    }

    /// Who may see and kill which application (default: ACLs off).
    pub fn acls(mut self, acls: Arc<AclsManager>) -> Self {
        self.acls = acls;
        self
    }

    /// The server on this incarnation's copy of the listener, and the address it serves.
    fn serve(&self) -> Result<(actix_web::dev::Server, String), String> {
        let listener = self
            .listener
            .try_clone()
            .map_err(|e| format!("cannot listen: {e}"))?;
        let address = listener.local_addr().map(|a| a.to_string()).unwrap_or_default();
        let state = actix_web::web::Data::new(WebState {
            rm: self.me.endpoint(&self.rm),
            acls: self.acls.clone(),
            cluster: self.me.cluster().clone(),
            log_dir: self.log_dir.clone(),
            address: address.clone(),
            started_ms: self.started_ms,
            log_ctx: self.me.log_ctx().clone(),
            ui: ui::UiState::default(),
        });
        let server = actix_web::HttpServer::new(move || {
            actix_web::App::new()
                .app_data(state.clone())
                .configure(rest::configure)
                .configure(ui::configure)
        })
        .workers(1)
        .max_connections(MAX_CONNECTIONS)
        .disable_signals()
        .shutdown_timeout(1)
        .listen(listener)
        .map_err(|e| format!("cannot serve on {address}: {e}"))?;
        Ok((server.run(), address))
    }

    /// Where the applications' structured records are.
    pub fn log_dir(mut self, dir: Option<PathBuf>) -> Self {
        self.log_dir = dir;
        self
    }
}

impl Actor for RmWebApp {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let (server, address) = match self.serve() {
            Ok(serving) => serving,
            Err(message) => {
                let me = self.me.clone();
                me.exit(ctx, ExitReason::Exit { code: 1, message });
                return;
            }
        };
        tracing::info!(
            address = address.as_str(),
            acls_enabled = self.acls.enabled(),
            "Web app started at {}: REST API at /ws/v1/cluster, web UI at /cluster",
            base_url(&address)
        );
        self.server = Some(server.handle());
        // Spawned in the actor's context: the server lives as long as the actor, and a server
        // that ends on its own ends the actor (its supervisor restarts it).
        ctx.spawn(server.into_actor(self).map(|ended, act, ctx| {
            let message = match ended {
                Ok(()) => "the web server stopped".to_string(),
                Err(e) => format!("the web server failed: {e}"),
            };
            act.server = None;
            let me = act.me.clone();
            me.exit(ctx, ExitReason::Exit { code: 1, message });
        }));
    }

    fn stopped(&mut self, _: &mut Context<Self>) {
        if let Some(server) = self.server.take() {
            actix::spawn(server.stop(false));
        }
    }
}

crate::speaks!(RmWebApp);
