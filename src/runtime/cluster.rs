//! A cluster instance: everything the runtime keeps per cluster.
//!
//! Layer: runtime (above logs, under everything else).
//!
//! Registry, fault injector, clock and log routing belong to one [`Cluster`], and every log
//! record carries its `cluster` id, so several clusters run side by side in one process
//! (parallel tests) without colliding. A cluster is made inside an actix system; its
//! top-level actors ("roots", usually supervisors) are started with
//! [`Cluster::start_root`] and stopped in reverse order by [`Cluster::shutdown`].

use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::{ArbiterHandle, Context};

use super::cell::{self, CellShared, ExitNotify, Me, SpawnArgs, DEFAULT_MAILBOX};
use super::clock::Clock;
use super::endpoint::EndpointRef;
use super::exit::ExitReason;
use super::fault::{FaultState, Progress};
use super::panic::install_quiet_hook;
use super::path::{ActorPath, PathError};
use super::protocol::{Endpoint, Protocol};
use super::registry::{ActorInfo, Registry};
use super::remote::{Connect, Origin, RemoteLink, Routes, Service, Serving};
use super::supervisor::{ChildKind, Supervisor, SupervisorSpec};
use crate::logs::ctx::{in_scope, Instrumented, LogCtx, LogIds};
use crate::logs::sink::{self, LogSink};

struct Inner {
    id: Arc<str>,
    registry: Registry,
    clock: Clock,
    faults: FaultState,
    progress: Progress,
    log: Arc<LogCtx>,
    sink: Arc<LogSink>,
    arbiter: ArbiterHandle,
    roots: Mutex<Vec<Arc<CellShared>>>,
    ended: tokio::sync::Notify,
    /// Path prefixes served by other processes, and whether there are any (the fast path of
    /// every local message reads only the flag).
    routes: Routes,
    has_routes: std::sync::atomic::AtomicBool,
    /// What this process serves to others, once it does (set once, read on every remote
    /// message).
    serving: std::sync::OnceLock<Serving>,
    /// The process's services by protocol name (see [`Service`]).
    services: dashmap::DashMap<String, Service>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        sink::unregister(&self.id);
    }
}

/// One cluster instance; cheap to clone.
#[derive(Clone)]
pub struct Cluster {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Cluster({})", self.inner.id)
    }
}

/// A cluster held without keeping it alive (what the cluster's own services hold).
#[derive(Clone)]
pub struct WeakCluster(std::sync::Weak<Inner>);

impl WeakCluster {
    /// The cluster, while it lives.
    pub fn upgrade(&self) -> Option<Cluster> {
        self.0.upgrade().map(|inner| Cluster { inner })
    }
}

/// Builds a [`Cluster`].
#[derive(Default)]
pub struct ClusterBuilder {
    id: Option<String>,
    clock: Option<Clock>,
    log_dir: Option<PathBuf>,
    capture: bool,
    node: Option<String>,
}

impl ClusterBuilder {
    /// The cluster id in every record (default `cluster-<n>`, unique in the process).
    pub fn id(mut self, id: &str) -> Self {
        self.id = Some(id.to_string());
        self
    }
    /// The clock (default: real).
    pub fn clock(mut self, clock: Clock) -> Self {
        self.clock = Some(clock);
        self
    }
    /// Writes records under this directory (see `logs::sink` for the layout).
    pub fn log_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.log_dir = Some(dir.into());
        self
    }
    /// Keeps every record in memory too, for tests to assert on.
    pub fn capture_logs(mut self, capture: bool) -> Self {
        self.capture = capture;
        self
    }
    /// The default `node` of records (subtrees may set their own).
    pub fn node(mut self, node: &str) -> Self {
        self.node = Some(node.to_string());
        self
    }

    /// Makes the cluster. Must run inside an actix system (its arbiter carries the
    /// cluster's own tasks: delayed kills, plans, delayed messages).
    pub fn build(self) -> Result<Cluster, String> {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        install_quiet_hook();
        let arbiter = actix::Arbiter::try_current()
            .ok_or_else(|| "a cluster must be made inside a running actix system".to_string())?;
        let id: Arc<str> = match self.id {
            Some(id) => Arc::from(id),
            None => Arc::from(format!("cluster-{}", NEXT.fetch_add(1, Ordering::Relaxed))),
        };
        let clock = self.clock.unwrap_or_else(Clock::real);
        let mut log = LogCtx::cluster(&id);
        log.node = Some(Arc::from(self.node.as_deref().unwrap_or("local")));
        let wall = clock.clone();
        let sink = Arc::new(LogSink::new(
            self.log_dir,
            self.capture,
            Arc::new(move || wall.wall()),
        ));
        LogSink::start_flusher(&sink);
        sink::register(id.clone(), sink.clone());
        Ok(Cluster {
            inner: Arc::new(Inner {
                id,
                registry: Registry::default(),
                clock,
                faults: FaultState::default(),
                progress: Progress::default(),
                log: Arc::new(log),
                sink,
                arbiter,
                roots: Mutex::new(Vec::new()),
                ended: tokio::sync::Notify::new(),
                routes: Routes::default(),
                has_routes: std::sync::atomic::AtomicBool::new(false),
                serving: std::sync::OnceLock::new(),
                services: dashmap::DashMap::new(),
            }),
        })
    }
}

#[cfg(test)]
impl Cluster {
    /// A unit test's cluster, built inside its actix system: a manual clock (time moves only
    /// when the test moves it) and its records captured.
    pub(crate) fn for_unit_test() -> Cluster {
        crate::logs::init_for_tests();
        Cluster::builder()
            .clock(Clock::manual())
            .capture_logs(true)
            .build()
            .expect("inside an actix system")
    }
}

impl Cluster {
    pub fn builder() -> ClusterBuilder {
        ClusterBuilder::default()
    }

    pub fn id(&self) -> &str {
        &self.inner.id
    }
    pub fn clock(&self) -> &Clock {
        &self.inner.clock
    }
    pub fn registry(&self) -> &Registry {
        &self.inner.registry
    }
    /// This cluster's log sink (captured records, log directory).
    pub fn logs(&self) -> &Arc<LogSink> {
        &self.inner.sink
    }
    /// The cluster-level log context (records not about any actor).
    pub fn log_ctx(&self) -> &Arc<LogCtx> {
        &self.inner.log
    }
    pub(crate) fn faults(&self) -> &FaultState {
        &self.inner.faults
    }
    /// Job progress (tasks finished), which fault plans can be triggered by.
    pub fn progress(&self) -> &Progress {
        &self.inner.progress
    }

    /// Runs a future on the cluster's arbiter, in the cluster's log context.
    pub(crate) fn spawn_task(&self, fut: impl Future<Output = ()> + Send + 'static) {
        let fut = Instrumented::new(fut, self.inner.log.clone());
        if !self.inner.arbiter.spawn(fut) {
            // The arbiter only stops with its actix system, which the process stops on its
            // way out (a clean end, or a root supervisor that gave up): a timer firing then
            // has nothing left to act on, so this is a record of the shutdown, not an error.
            in_scope(&self.inner.log, || {
                tracing::debug!(
                    event = "task_lost",
                    "the cluster's arbiter has stopped (the process is ending); a timed task was dropped"
                )
            });
        }
    }

    /// A reference to the actor of type `A` at `path`, sending from outside any actor.
    pub fn endpoint<P: Protocol>(&self, path: &ActorPath) -> EndpointRef<P> {
        EndpointRef::new(self.clone(), path.clone(), None)
    }

    /// Routes the paths under `prefix` to another process over `link`: a ref to such a path
    /// that no local actor holds sends its messages there (see [`super::remote`]).
    pub fn add_route(&self, prefix: ActorPath, link: Arc<dyn RemoteLink>) {
        self.route(prefix, link, None, false);
    }

    fn route(&self, prefix: ActorPath, link: Arc<dyn RemoteLink>, addr: Option<String>, learned: bool) {
        tracing::info!(
            event = "route_added",
            prefix = prefix.as_str(),
            peer = link.peer(),
            "paths under {prefix} are served by {}",
            link.peer()
        );
        self.inner.routes.add(prefix, link, addr, learned);
        self.inner.has_routes.store(true, Ordering::Release);
    }

    /// Says that this process serves the actors under `root` to other processes at `addr`,
    /// and how it reaches a process by address (`connect`, the transport's): its messages
    /// then carry that origin, and it learns the origins of those it receives as routes.
    /// Only the first call counts.
    pub fn serve_at(&self, root: ActorPath, addr: &str, connect: Connect) -> Result<(), String> {
        let serving = Serving {
            origin: Origin {
                root: root.as_str().to_string(),
                addr: addr.to_string(),
            },
            root,
            connect,
        };
        self.inner
            .serving
            .set(serving)
            .map_err(|_| "this cluster already serves its actors".to_string())
    }

    /// The origin this process's messages carry, once it serves its actors.
    pub(crate) fn origin(&self) -> Option<&Origin> {
        self.inner.serving.get().map(|s| &s.origin)
    }

    /// The address this process serves its actors at, once it does.
    pub fn served_addr(&self) -> Option<&str> {
        self.origin().map(|o| o.addr.as_str())
    }

    /// Learns the route to the process a message came from (nothing for this process's own
    /// root, or a route known already).
    pub(crate) fn learn_route(&self, origin: &Origin) {
        let Some(serving) = self.inner.serving.get() else {
            return;
        };
        if origin.root == serving.origin.root || origin.addr == serving.origin.addr {
            return;
        }
        let Ok(prefix) = ActorPath::parse(&origin.root) else {
            return;
        };
        if self.inner.routes.has(&prefix, &origin.addr) {
            return;
        }
        let link = self
            .inner
            .routes
            .link_to(&origin.addr)
            .unwrap_or_else(|| (serving.connect)(&origin.addr, &prefix));
        self.route(prefix, link, Some(origin.addr.clone()), true);
    }

    /// Waits (real time, at most `limit`) until what this process sent to others has been
    /// written out: a process about to exit calls it, so its last messages (an executor's
    /// StopExecutor, a final status) are not lost with it.
    pub async fn flush_links(&self, limit: Duration) {
        let deadline = tokio::time::Instant::now() + limit;
        while !self.inner.routes.links().iter().all(|l| l.written()) {
            if tokio::time::Instant::now() >= deadline {
                return;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    /// This cluster, held weakly.
    pub fn downgrade(&self) -> WeakCluster {
        WeakCluster(Arc::downgrade(&self.inner))
    }

    /// Offers `service` to other processes under the protocol name `name` (a second offer
    /// replaces the first).
    pub fn offer(&self, name: &str, service: Service) {
        self.inner.services.insert(name.to_string(), service);
    }

    pub(crate) fn service(&self, name: &str) -> Option<Service> {
        self.inner.services.get(name).map(|s| s.clone())
    }

    /// Whether `path` is the root this process serves.
    pub fn is_own_root(&self, path: &ActorPath) -> bool {
        self.inner.serving.get().is_some_and(|s| s.root == *path)
    }

    /// The processes this one reaches that hold paths under its own root (its containers,
    /// the NodeManagers that joined it), each by its root and link, leaving out one whose
    /// root lies under another's (that one reaches it). Empty while it serves nothing.
    pub fn processes_below(&self) -> Vec<(ActorPath, Arc<dyn RemoteLink>)> {
        let Some(serving) = self.inner.serving.get() else {
            return Vec::new();
        };
        let below = self.inner.routes.learned_under(&serving.root);
        below
            .iter()
            .filter(|(p, _)| !below.iter().any(|(q, _)| q.is_ancestor_of(p)))
            .cloned()
            .collect()
    }

    /// What a link of this process calls with the origin of the process it reached: learns
    /// it as a route, while the cluster lives (it holds the cluster weakly, as the cluster
    /// holds its links).
    pub fn learner(&self) -> Arc<dyn Fn(&Origin) + Send + Sync> {
        let weak = Arc::downgrade(&self.inner);
        Arc::new(move |origin: &Origin| {
            if let Some(inner) = weak.upgrade() {
                Cluster { inner }.learn_route(origin);
            }
        })
    }

    /// What a link of this process calls when nothing listens at an address any more: the
    /// routes learned to that address are forgotten (the process ended), so they neither
    /// pile up nor take part in what is asked of every process.
    pub fn forgetter(&self) -> Arc<dyn Fn(&str) + Send + Sync> {
        let weak = Arc::downgrade(&self.inner);
        Arc::new(move |addr: &str| {
            if let Some(inner) = weak.upgrade() {
                for prefix in inner.routes.forget_addr(addr) {
                    in_scope(&inner.log, || {
                        tracing::info!(
                            event = "route_removed",
                            prefix = prefix.as_str(),
                            peer = addr,
                            "paths under {prefix} are no longer routed: nothing listens at {addr}"
                        )
                    });
                }
            }
        })
    }

    /// Forgets the learned routes of `prefix` (its process ended).
    pub fn forget_route(&self, prefix: &ActorPath) {
        if self.inner.routes.forget_prefix(prefix) {
            tracing::info!(
                event = "route_removed",
                prefix = prefix.as_str(),
                "paths under {prefix} are no longer routed"
            );
        }
    }

    /// Routes the paths under `prefix` to the process serving at `addr`, through the
    /// transport this process serves with (see [`Cluster::serve_at`]).
    pub fn route_to(&self, prefix: ActorPath, addr: &str) -> Result<(), String> {
        let Some(serving) = self.inner.serving.get() else {
            return Err(format!(
                "cannot route {prefix} to {addr}: this process serves no actors"
            ));
        };
        let link = self
            .inner
            .routes
            .link_to(addr)
            .unwrap_or_else(|| (serving.connect)(addr, &prefix));
        // Connected at once: the other process learns this one (its hello) before anything
        // is sent, so it can reach this process's actors from the start.
        link.open();
        self.route(prefix, link, Some(addr.to_string()), false);
        Ok(())
    }

    /// The path of an actor URL (`sparkyard://HOST:PORT/path`, or a bare path), routing it to
    /// the process at HOST:PORT when it names one and no local actor holds it (that process's
    /// hello then teaches the rest of its paths).
    pub fn resolve_url(&self, url: &str) -> Result<ActorPath, String> {
        let (addr, path) = super::remote::parse_actor_url(url)?;
        if let Some(addr) = addr {
            if !self.inner.registry.contains(&path) && self.served_addr() != Some(addr.as_str()) {
                self.route_to(path.clone(), &addr)?;
            }
        }
        Ok(path)
    }

    /// The URL other processes reach the actor at `path` by: the address of this process
    /// when it holds the actor, of the process a route with an address sends it to when
    /// another does, or the bare path when neither is known.
    pub fn url_of(&self, path: &ActorPath) -> String {
        if self.inner.registry.contains(path) {
            return super::remote::actor_url(self.served_addr(), path);
        }
        let addr = self.inner.routes.addr_for(path);
        super::remote::actor_url(addr.as_deref(), path)
    }

    /// The link to the process serving `path`, when no local actor holds it and a route
    /// covers it (never one back under this process's own root).
    pub(crate) fn remote_link(&self, path: &ActorPath) -> Option<Arc<dyn RemoteLink>> {
        if !self.inner.has_routes.load(Ordering::Acquire) || self.inner.registry.contains(path) {
            return None;
        }
        let own = self.inner.serving.get().map(|s| &s.root);
        self.inner.routes.link_for(path, own)
    }

    /// Every live actor, sorted by path.
    pub fn actors(&self) -> Vec<ActorInfo> {
        self.inner.registry.snapshot()
    }

    /// Starts a top-level supervisor at `/<name>`.
    pub fn start_root(&self, name: &str, spec: SupervisorSpec) -> Result<ActorPath, PathError> {
        self.start_root_with(
            name,
            ChildKind::Supervisor,
            LogIds::default(),
            None,
            move |_, me| Ok(Supervisor::new(me, spec)),
        )
    }

    /// Starts a top-level supervisor at `path`, which may be deep (a container process holds
    /// its container's path, `/node/nm-<host>/<container_id>`, as its root).
    pub fn start_root_at(&self, path: &ActorPath, ids: LogIds, spec: SupervisorSpec) -> ActorPath {
        self.start_root_path(path.clone(), ChildKind::Supervisor, ids, None, move |_, me| {
            Ok(Supervisor::new(me, spec))
        })
    }

    /// Starts a top-level actor at `/<name>` built by `make` (no supervisor above it: when it
    /// ends, it stays ended).
    pub fn start_root_worker<A, F>(&self, name: &str, make: F) -> Result<ActorPath, PathError>
    where
        A: Endpoint,
        F: FnOnce(&mut Context<A>, Me) -> A + Send + 'static,
    {
        self.start_root_with(
            name,
            ChildKind::Worker,
            LogIds::default(),
            None,
            move |ctx, me| Ok(make(ctx, me)),
        )
    }

    fn start_root_with<A, F>(
        &self,
        name: &str,
        kind: ChildKind,
        ids: LogIds,
        on_exit: Option<ExitNotify>,
        make: F,
    ) -> Result<ActorPath, PathError>
    where
        A: Endpoint,
        F: FnOnce(&mut Context<A>, Me) -> Result<A, String> + Send + 'static,
    {
        let path = ActorPath::root(name)?;
        Ok(self.start_root_path(path, kind, ids, on_exit, make))
    }

    fn start_root_path<A, F>(
        &self,
        path: ActorPath,
        kind: ChildKind,
        ids: LogIds,
        on_exit: Option<ExitNotify>,
        make: F,
    ) -> ActorPath
    where
        A: Endpoint,
        F: FnOnce(&mut Context<A>, Me) -> Result<A, String> + Send + 'static,
    {
        let args = SpawnArgs {
            path: path.clone(),
            kind,
            parent_log: self.inner.log.clone(),
            parent_cancel: None,
            ids,
            arbiter: None,
            mailbox: DEFAULT_MAILBOX,
            on_exit,
            restart: false,
            ends_parent: false,
        };
        let shared = cell::spawn(self, args, make);
        self.inner
            .roots
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(shared);
        path
    }

    /// The end of an incarnation: called once by its cell, whatever ended it.
    pub(crate) fn incarnation_ended(&self, shared: &Arc<CellShared>, reason: &ExitReason) {
        let registry = &self.inner.registry;
        if shared.ends_parent {
            // Its supervisor is about to stop: say so before this one leaves the registry,
            // so nothing sees the siblings as running in between (fault injection).
            if let Some(parent) = shared.path.parent().and_then(|p| registry.shared(&p)) {
                parent.doomed.store(true, std::sync::atomic::Ordering::Release);
            }
        }
        registry.remove_if(&shared.path, shared.incarnation);
        for orphan in registry.descendants(&shared.path) {
            if !orphan.is_done() {
                orphan.abort(&format!("its ancestor {} ended", shared.path));
            }
        }
        in_scope(&shared.log, || {
            let lived_ms = self
                .inner
                .clock
                .now()
                .saturating_sub(shared.started_at)
                .as_millis() as u64;
            match reason {
                ExitReason::Normal | ExitReason::Shutdown => tracing::info!(
                    event = "actor_stopped",
                    reason = %reason,
                    lived_ms,
                    "stopped ({reason})"
                ),
                ExitReason::Exit { code: 0, .. } => tracing::info!(
                    event = "actor_stopped",
                    reason = %reason,
                    exit_code = 0,
                    lived_ms,
                    "stopped ({reason})"
                ),
                ExitReason::Panic { .. } => tracing::error!(
                    event = "actor_failed",
                    reason = %reason,
                    exit_code = reason.exit_code(),
                    lived_ms,
                    "failed: {reason}"
                ),
                _ => tracing::warn!(
                    event = "actor_failed",
                    reason = %reason,
                    exit_code = reason.exit_code(),
                    lived_ms,
                    "failed: {reason}"
                ),
            }
        });
        registry.notify_watchers(&shared.path, shared.incarnation, reason);
        self.inner.ended.notify_waiters();
    }

    /// Waits (on real time, at most `limit`) until the incarnation now running at `path`
    /// ends, and returns how it ended; `None` if nothing runs there or the limit passed.
    pub async fn wait_ended(&self, path: &ActorPath, limit: Duration) -> Option<ExitReason> {
        let shared = self.inner.registry.shared(path)?;
        self.final_reason_of(&shared, Some(tokio::time::Instant::now() + limit))
            .await
    }

    /// How `shared` ended, once it has; `None` if `deadline` passes first.
    async fn final_reason_of(
        &self,
        shared: &CellShared,
        deadline: Option<tokio::time::Instant>,
    ) -> Option<ExitReason> {
        loop {
            let notified = self.inner.ended.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Some(reason) = shared.final_reason() {
                return Some(reason);
            }
            match deadline {
                Some(deadline) => {
                    if tokio::time::timeout_at(deadline, notified).await.is_err() {
                        return shared.final_reason();
                    }
                }
                None => notified.await,
            }
        }
    }

    /// Waits until the root at `path` (started with [`Cluster::start_root`]) ends, however
    /// long that takes, and answers how it ended; at once if it already has. `None` if no
    /// root was started there (or the cluster was shut down). Race it against whatever else
    /// may end the wait: a process's main loop waits on this and its signals.
    pub async fn root_ended(&self, path: &ActorPath) -> Option<ExitReason> {
        let shared = self
            .inner
            .roots
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .find(|r| &r.path == path)
            .cloned()?;
        self.final_reason_of(&shared, None).await
    }

    /// Stops every root gracefully, newest first, each within `limit` of real time (what
    /// is still running after that is aborted). Timers and clocks play no part, so this
    /// ends even on a manual clock that nobody advances.
    pub async fn shutdown(&self, limit: Duration) {
        let roots: Vec<Arc<CellShared>> = self
            .inner
            .roots
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain(..)
            .collect();
        for root in roots.iter().rev() {
            if root.is_done() {
                continue;
            }
            root.request_stop(ExitReason::Shutdown);
            let deadline = tokio::time::Instant::now() + limit;
            while !root.is_done() {
                let notified = self.inner.ended.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                if root.is_done() {
                    break;
                }
                if tokio::time::timeout_at(deadline, notified).await.is_err() {
                    for d in self.inner.registry.descendants(&root.path) {
                        d.abort("cluster shutdown time-out");
                    }
                    root.abort("cluster shutdown time-out");
                    break;
                }
            }
        }
        self.inner.sink.flush();
    }
}
