//! The cell: what runs one incarnation of an actor.
//!
//! Layer: runtime (above logs, under everything else).
//!
//! actix's own `Supervisor` restarts an actor only when it stops itself; a panic in a handler
//! kills the actor for good and throws its mailbox away. So every sparkyard actor runs inside
//! a [`Cell`], a future that polls the actor's actix context inside [`catch`]: a panic in a
//! handler, a timer closure, a spawned actor future, `started()` or `stopped()` ends the
//! incarnation with [`ExitReason::Panic`] and its message. Whatever the ending (panic, stop,
//! kill, abort, or the arbiter going away), the cell removes the incarnation from the
//! registry, aborts any orphaned descendants, logs the exit, tells the watchers and then the
//! parent supervisor. Nothing dies silently.
//!
//! A restart is a new incarnation: a fresh actor value built by the child spec's factory,
//! with a new mailbox registered under the same path. Messages still queued in the old
//! mailbox are dropped with it (as an Erlang process's are); senders by path reach the new
//! incarnation as soon as it is registered. State that must survive is held by the
//! supervisor's child spec and handed to each new incarnation (see `supervisor::Kept`).
//!
//! The cell also carries the control channel that fault injection and supervisors use:
//! a graceful stop (the actor's `stopping()`/`stopped()` run), an injected panic (raised
//! inside the cell, so it is a real panic), or an abort (the actor is dropped).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use actix::dev::channel;
use actix::dev::ContextFut;
use actix::{Actor, ActorContext, Addr, ArbiterHandle, AsyncContext, Context, Handler};
use futures_util::task::AtomicWaker;

use super::cancel::CancelToken;
use super::clock::Clock;
use super::cluster::Cluster;
use super::endpoint::EndpointRef;
use super::exit::ExitReason;
use super::panic::catch;
use super::path::{short_type_name, ActorPath};
use super::protocol::{Endpoint, Protocol};
use super::registry::Watcher;
use super::supervisor::ChildKind;
use super::watch::Terminated;
use crate::logs::ctx::{LogCtx, LogIds, LogScope};

const CMD_NONE: u8 = 0;
const CMD_STOP: u8 = 1;
const CMD_PANIC: u8 = 2;
const CMD_ABORT: u8 = 3;

/// Default mailbox capacity for `ask` (actix's default; `tell` is unbounded, as Spark's
/// inboxes are).
pub const DEFAULT_MAILBOX: usize = 16;

/// The part of an incarnation shared with the registry, its parent and the fault injector.
pub struct CellShared {
    pub(crate) path: ActorPath,
    pub(crate) incarnation: u64,
    pub(crate) actor_type: &'static str,
    pub(crate) kind: ChildKind,
    /// Its end ends its parent: a significant child, never restarted, of a supervisor with
    /// `auto_shutdown` (an ApplicationMaster, an executor backend, a container's role).
    /// Fault injection reads it to know what an ending actor takes down with it.
    pub(crate) ends_parent: bool,
    /// A child whose end ends this one has ended: its supervisor is about to stop it.
    pub(crate) doomed: AtomicBool,
    pub(crate) log: Arc<LogCtx>,
    pub(crate) started_at: Duration,
    /// Fires when this incarnation ends; the tokens of its children (and of work it starts,
    /// such as task threads) derive from it, so stopping a container cancels everything
    /// running inside it.
    pub(crate) cancel: CancelToken,
    command: AtomicU8,
    waker: AtomicWaker,
    exit_request: Mutex<Option<ExitReason>>,
    panic_by: Mutex<Option<String>>,
    final_reason: Mutex<Option<ExitReason>>,
    /// A stop, kill or abort has been asked for.
    stopping: AtomicBool,
    done: AtomicBool,
}

impl std::fmt::Debug for CellShared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Cell({}#{})", self.path, self.incarnation)
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl CellShared {
    pub fn path(&self) -> &ActorPath {
        &self.path
    }
    pub fn incarnation(&self) -> u64 {
        self.incarnation
    }
    pub fn actor_type(&self) -> &'static str {
        self.actor_type
    }
    pub fn log_ctx(&self) -> &Arc<LogCtx> {
        &self.log
    }

    /// How this incarnation ended, once it has.
    pub fn final_reason(&self) -> Option<ExitReason> {
        lock(&self.final_reason).clone()
    }

    /// Whether this incarnation has ended.
    pub fn is_done(&self) -> bool {
        self.done.load(Ordering::Acquire)
    }

    /// Whether this incarnation has ended or been asked to (a stop, kill or abort is under
    /// way).
    pub(crate) fn is_ending(&self) -> bool {
        self.stopping.load(Ordering::Acquire) || self.is_done()
    }

    pub(crate) fn status(&self) -> &'static str {
        if self.is_done() {
            "stopped"
        } else if self.stopping.load(Ordering::Acquire) {
            "stopping"
        } else {
            "running"
        }
    }

    fn set_exit_reason(&self, reason: ExitReason, overwrite: bool) {
        let mut slot = lock(&self.exit_request);
        if overwrite || slot.is_none() {
            *slot = Some(reason);
        }
    }

    fn signal(&self, cmd: u8) {
        self.stopping.store(true, Ordering::Release);
        self.command.fetch_max(cmd, Ordering::AcqRel);
        self.waker.wake();
    }

    /// Asks the actor to stop gracefully (`stopping()`/`stopped()` run); it exits with
    /// `reason` unless an earlier request already set one.
    pub(crate) fn request_stop(&self, reason: ExitReason) {
        self.set_exit_reason(reason, false);
        self.signal(CMD_STOP);
    }

    /// Raises a panic inside the actor's cell, as if a handler had panicked.
    pub(crate) fn request_panic(&self, by: &str) {
        *lock(&self.panic_by) = Some(by.to_string());
        self.signal(CMD_PANIC);
    }

    /// Drops the actor at its next poll without waiting for anything.
    pub(crate) fn abort(&self, message: &str) {
        self.set_exit_reason(
            ExitReason::Aborted {
                message: message.to_string(),
            },
            true,
        );
        self.signal(CMD_ABORT);
    }
}

/// Called once with the exit reason when an incarnation ends (the parent link).
pub(crate) type ExitNotify = Box<dyn FnOnce(&Arc<CellShared>, &ExitReason) + Send>;

/// The future that runs one incarnation; see the module docs.
pub(crate) struct Cell<A: Actor<Context = Context<A>>> {
    fut: Option<ContextFut<A, Context<A>>>,
    shared: Arc<CellShared>,
    cluster: Cluster,
    on_exit: Option<ExitNotify>,
}

impl<A: Actor<Context = Context<A>>> Cell<A> {
    fn terminate(&mut self, mut reason: ExitReason) -> Poll<()> {
        if let Some(fut) = self.fut.take() {
            // Dropping a live context runs stopping()/stopped(); a panic there is caught too.
            if let Err(message) = catch(move || drop(fut)) {
                if reason.is_abnormal() {
                    tracing::warn!(event = "cleanup_panicked", reason = %message, "panic while stopping after failure");
                } else {
                    reason = ExitReason::Panic { message };
                }
            }
        }
        self.finish(reason);
        Poll::Ready(())
    }

    fn finish(&mut self, reason: ExitReason) {
        finish_incarnation(&self.cluster, &self.shared, &reason, self.on_exit.take());
    }
}

/// The end of an incarnation, wherever it ended: registry, orphans, log, watchers, parent.
fn finish_incarnation(
    cluster: &Cluster,
    shared: &Arc<CellShared>,
    reason: &ExitReason,
    on_exit: Option<ExitNotify>,
) {
    if shared.done.swap(true, Ordering::AcqRel) {
        return;
    }
    *lock(&shared.final_reason) = Some(reason.clone());
    shared.cancel.cancel(format!("{} ended: {reason}", shared.path));
    cluster.incarnation_ended(shared, reason);
    if let Some(notify) = on_exit {
        notify(shared, reason);
    }
}

impl<A: Actor<Context = Context<A>>> Future for Cell<A> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<()> {
        let this = self.get_mut();
        let _scope = LogScope::enter(&this.shared.log);
        this.shared.waker.register(cx.waker());
        match this.shared.command.swap(CMD_NONE, Ordering::AcqRel) {
            CMD_ABORT => {
                let reason = lock(&this.shared.exit_request)
                    .take()
                    .unwrap_or(ExitReason::Aborted {
                        message: "aborted".into(),
                    });
                // Abort means: the actor's stopping()/stopped() do not run. Terminating the
                // context first makes dropping it skip them; the actor value itself is still
                // dropped, so what it owns is released.
                if let Some(mut fut) = this.fut.take() {
                    fut.ctx().terminate();
                    if let Err(message) = catch(move || drop(fut)) {
                        tracing::warn!(event = "cleanup_panicked", reason = %message, "panic while dropping an aborted actor");
                    }
                }
                this.finish(reason);
                return Poll::Ready(());
            }
            CMD_PANIC => {
                let by = lock(&this.shared.panic_by)
                    .take()
                    .unwrap_or_else(|| "unknown".into());
                // A real panic inside the cell, so the path is the one a handler's panic takes;
                // the reason leaves out the location, which would only point here.
                let message = format!("injected panic (fault injection by {by})");
                let _ = catch(|| -> () { panic!("{message}") });
                return this.terminate(ExitReason::Panic { message });
            }
            CMD_STOP => {
                if let Some(fut) = this.fut.as_mut() {
                    fut.ctx().stop();
                }
            }
            _ => {}
        }
        let Some(fut) = this.fut.as_mut() else {
            return Poll::Ready(());
        };
        match catch(|| Pin::new(fut).poll(cx)) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(())) => {
                let reason = lock(&this.shared.exit_request)
                    .take()
                    .unwrap_or(ExitReason::Normal);
                this.terminate(reason)
            }
            Err(message) => this.terminate(ExitReason::Panic { message }),
        }
    }
}

impl<A: Actor<Context = Context<A>>> Drop for Cell<A> {
    fn drop(&mut self) {
        if self.shared.is_done() {
            return;
        }
        let reason = ExitReason::Aborted {
            message: "its arbiter stopped".into(),
        };
        if std::thread::panicking() {
            // Never run actor hooks while unwinding: a second panic would abort the process.
            if let Some(fut) = self.fut.take() {
                std::mem::forget(fut);
            }
            let on_exit = self.on_exit.take();
            let _ = catch(|| finish_incarnation(&self.cluster, &self.shared, &reason, on_exit));
        } else {
            let _ = catch(|| self.terminate(reason));
        }
    }
}

/// Where and how to start one incarnation.
pub(crate) struct SpawnArgs {
    pub path: ActorPath,
    pub kind: ChildKind,
    pub parent_log: Arc<LogCtx>,
    /// The parent's cancellation token (None for a root).
    pub parent_cancel: Option<CancelToken>,
    pub ids: LogIds,
    pub arbiter: Option<ArbiterHandle>,
    pub mailbox: usize,
    pub on_exit: Option<ExitNotify>,
    pub restart: bool,
    /// See [`CellShared::ends_parent`].
    pub ends_parent: bool,
}

/// Starts one incarnation of `A` at `args.path`: registers it, then builds the actor with
/// `make` (on the target arbiter) and runs it in a [`Cell`]. A `make` that fails or panics
/// ends the incarnation at once with that reason.
pub(crate) fn spawn<A, F>(cluster: &Cluster, args: SpawnArgs, make: F) -> Arc<CellShared>
where
    A: Endpoint,
    F: FnOnce(&mut Context<A>, Me) -> Result<A, String> + Send + 'static,
{
    let incarnation = cluster.registry().next_incarnation(&args.path);
    let actor_type = short_type_name::<A>();
    let log = Arc::new(
        args.parent_log
            .for_actor(args.path.as_arc(), actor_type, incarnation, &args.ids),
    );
    let shared = Arc::new(CellShared {
        path: args.path,
        incarnation,
        actor_type,
        kind: args.kind,
        ends_parent: args.ends_parent,
        doomed: AtomicBool::new(false),
        log,
        started_at: cluster.clock().now(),
        cancel: args
            .parent_cancel
            .as_ref()
            .map(CancelToken::child)
            .unwrap_or_default(),
        command: AtomicU8::new(CMD_NONE),
        waker: AtomicWaker::new(),
        exit_request: Mutex::new(None),
        panic_by: Mutex::new(None),
        final_reason: Mutex::new(None),
        stopping: AtomicBool::new(false),
        done: AtomicBool::new(false),
    });
    let (tx, rx) = channel::channel::<A>(args.mailbox.max(1));
    cluster
        .registry()
        .insert(shared.clone(), A::protocols(&Addr::<A>::new(tx)));
    {
        let _scope = LogScope::enter(&shared.log);
        if args.restart {
            tracing::info!(
                event = "actor_restarted",
                incarnation,
                "restarted as incarnation {incarnation}"
            );
        } else {
            tracing::info!(event = "actor_started", "started");
        }
    }
    let (c, s, on_exit) = (cluster.clone(), shared.clone(), args.on_exit);
    let start = move || {
        let _scope = LogScope::enter(&s.log);
        let mut ctx = Context::with_receiver(rx);
        let me = Me {
            shared: s.clone(),
            cluster: c.clone(),
        };
        let built = catch(|| make(&mut ctx, me));
        let reason = match built {
            Ok(Ok(actor)) => {
                let cell = Cell {
                    fut: Some(ctx.into_future(actor)),
                    shared: s,
                    cluster: c,
                    on_exit,
                };
                actix::spawn(cell);
                return;
            }
            Ok(Err(message)) => ExitReason::Exit {
                code: 1,
                message: format!("failed to start: {message}"),
            },
            Err(message) => ExitReason::Panic {
                message: format!("while starting: {message}"),
            },
        };
        finish_incarnation(&c, &s, &reason, on_exit);
    };
    match args.arbiter {
        Some(arbiter) => {
            let sent = arbiter.spawn_fn(start);
            if !sent {
                let reason = ExitReason::Aborted {
                    message: "its arbiter is not running".into(),
                };
                finish_incarnation(cluster, &shared, &reason, None);
            }
        }
        None => start(),
    }
    shared
}

/// An actor's handle to the runtime: its own path and incarnation, the cluster, the clock,
/// endpoint refs to peers, its exit, and death watch.
#[derive(Clone)]
pub struct Me {
    shared: Arc<CellShared>,
    cluster: Cluster,
}

impl std::fmt::Debug for Me {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Me({}#{})", self.shared.path, self.shared.incarnation)
    }
}

impl Me {
    pub fn path(&self) -> &ActorPath {
        &self.shared.path
    }
    pub fn incarnation(&self) -> u64 {
        self.shared.incarnation
    }
    pub fn cluster(&self) -> &Cluster {
        &self.cluster
    }
    pub fn clock(&self) -> &Clock {
        self.cluster.clock()
    }
    pub fn log_ctx(&self) -> &Arc<LogCtx> {
        &self.shared.log
    }

    /// This incarnation's cancellation token: it fires when the incarnation ends (or an
    /// ancestor's does). Hand a child of it to blocking work this actor starts.
    pub fn cancel_token(&self) -> &CancelToken {
        &self.shared.cancel
    }

    /// A reference to the actor of type `B` at `path`, sending as this actor.
    pub fn endpoint<P: Protocol>(&self, path: &ActorPath) -> EndpointRef<P> {
        EndpointRef::new(self.cluster.clone(), path.clone(), Some(self.shared.path.clone()))
    }

    /// Why a graceful stop of the actor running at `path` (this one included) was asked for
    /// from outside, if it was: `Killed` by fault injection's stop, or `Shutdown` by its
    /// supervisor or the cluster (what a process sees as SIGTERM). Not a panic, an abort or
    /// the actor's own `exit`. An actor whose `stopping()` returns `Running::Continue` may
    /// finish its work first; it ends with the stop's reason when it then stops.
    pub fn stop_request_at(&self, path: &ActorPath) -> Option<ExitReason> {
        let shared = self.cluster.registry().shared(path)?;
        let request = lock(&shared.exit_request).clone();
        request.filter(|r| matches!(r, ExitReason::Killed { .. } | ExitReason::Shutdown))
    }

    /// Whether the actor at `path` is being stopped (a stop, kill or abort is under way) or
    /// has ended.
    pub fn is_ending(&self, path: &ActorPath) -> bool {
        self.cluster.registry().shared(path).is_none_or(|s| s.is_ending())
    }

    /// Stops this actor; its incarnation ends with `reason` (an `Exit` with a code, as a
    /// process's exit status).
    pub fn exit<A: Actor<Context = Context<A>>>(&self, ctx: &mut Context<A>, reason: ExitReason) {
        self.shared.set_exit_reason(reason, true);
        ctx.stop();
    }

    /// Watches the incarnation now running at `target`; `Terminated` arrives when it ends
    /// (at once with `NoProc` if nothing runs there).
    pub fn watch<A>(&self, ctx: &mut Context<A>, target: &ActorPath)
    where
        A: Actor<Context = Context<A>> + Handler<Terminated>,
    {
        let recipient = ctx.address().recipient::<Terminated>();
        let registry = self.cluster.registry();
        match registry.shared(target) {
            Some(t) => {
                registry.add_watcher(
                    target,
                    Watcher {
                        target_incarnation: t.incarnation,
                        watcher: self.shared.path.clone(),
                        watcher_incarnation: self.shared.incarnation,
                        recipient,
                    },
                );
                // It may have ended between the lookup and the subscription.
                if t.is_done() {
                    let reason = t.final_reason().unwrap_or(ExitReason::Aborted {
                        message: "ended".into(),
                    });
                    registry.notify_watchers(target, t.incarnation, &reason);
                }
            }
            None => match self.cluster.remote_link(target) {
                Some(link) => self.watch_remote(link, target.clone(), recipient),
                None => recipient.do_send(Terminated {
                    path: target.clone(),
                    incarnation: 0,
                    reason: ExitReason::NoProc,
                }),
            },
        }
    }

    /// Watches an actor of another process: an ask its process answers when the actor ends
    /// (asked again while it runs); a link that breaks ends the watch with the loss of that
    /// process, as Spark's RPC layer reports a disconnected endpoint. The watch ends with
    /// this incarnation.
    fn watch_remote(
        &self,
        link: Arc<dyn super::remote::RemoteLink>,
        target: ActorPath,
        recipient: actix::Recipient<Terminated>,
    ) {
        use super::remote::{RemoteMessage, WatchEnded, WATCH};
        /// How long one watch ask waits before it is asked again.
        const WATCH_ASK: Duration = Duration::from_secs(3600);
        let (cancel, origin) = (self.shared.cancel.clone(), self.cluster.origin().cloned());
        let watcher = self.shared.path.as_str().to_string();
        self.cluster.spawn_task(async move {
            let ended = loop {
                let ask = RemoteMessage {
                    to: target.as_str().to_string(),
                    from: Some(watcher.clone()),
                    protocol: WATCH.to_string(),
                    message: "Watch".to_string(),
                    body: Vec::new(),
                    ask: Some(WATCH_ASK),
                    origin: origin.clone(),
                    hops: 0,
                };
                let answer = tokio::select! {
                    _ = cancel.cancelled() => return,
                    answer = link.send(ask) => answer,
                };
                match answer {
                    Ok(bytes) => match rmp_serde::from_slice::<WatchEnded>(&bytes) {
                        Ok(ended) => break ended,
                        Err(e) => {
                            break WatchEnded {
                                incarnation: 0,
                                reason: ExitReason::Aborted {
                                    message: format!("its end could not be read: {e}"),
                                },
                            }
                        }
                    },
                    Err(still) if still.ends_with("still runs") => continue,
                    Err(lost) => {
                        break WatchEnded {
                            incarnation: 0,
                            reason: ExitReason::Aborted {
                                message: format!("its process at {} is gone: {lost}", link.peer()),
                            },
                        }
                    }
                }
            };
            recipient.do_send(Terminated {
                path: target,
                incarnation: ended.incarnation,
                reason: ended.reason,
            });
        });
    }
}
